package lance_core.spark;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.catalyst.analysis.NamespaceAlreadyExistsException;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.NonEmptyNamespaceException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.ProcedureCatalog;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.catalog.NamespaceChange;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.StagingTableCatalog;
import org.apache.spark.sql.connector.catalog.SupportsNamespaces;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.catalog.TableInfo;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A Spark catalog of Lance tables kept in a directory namespace laid out as pylance's
 * {@code lance.namespace.DirectoryNamespace} lays it out (its {@code __manifest} table and
 * the tables' directories), so that tables made here are pylance's and LanceDB's too:
 *
 * <pre>
 *   spark.sql.catalog.lance = lance_core.spark.LanceCatalog
 *   spark.sql.catalog.lance.root = /data/lake          (a directory or object store URI)
 *   spark.sql.catalog.lance.storage.&lt;key&gt; = ...       (the store's options)
 * </pre>
 *
 * Other settings are the namespace's own (pylance's names: {@code manifest_enabled},
 * {@code dir_listing_enabled}, ...). With {@code impl = rest} and {@code uri = http://host:port}
 * the catalog is a client of a Lance namespace REST server (pylance's {@code RestNamespace};
 * {@code header.<Name>} settings are sent with each request, {@code delimiter} is the ids'). Every rule of the namespace is the core's
 * ({@code rust/core/src/namespace}), reached through {@link Native#namespace}; this class
 * only turns Spark's calls into its requests and its refusals into Spark's exceptions.
 *
 * <p>As in lance-spark, {@code DROP TABLE} forgets a table and keeps its data;
 * {@code DROP TABLE ... PURGE} deletes it. Table properties given at creation are
 * pylance's {@code write_dataset} arguments ({@code data_storage_version},
 * {@code enable_stable_row_ids}, {@code primary_key}, ...); any other is kept in the
 * table's config.
 */
public class LanceCatalog implements StagingTableCatalog, SupportsNamespaces, ProcedureCatalog {
  /** Table properties Spark sets itself, which are not the table's to keep. */
  private static final Set<String> SPARK_OWN = Set.of(TableCatalog.PROP_LOCATION, TableCatalog.PROP_PROVIDER, TableCatalog.PROP_OWNER,
      TableCatalog.PROP_EXTERNAL, TableCatalog.PROP_IS_MANAGED_LOCATION, TableCatalog.PROP_TABLE_TYPE, TableCatalog.PROP_COMMENT, TableCatalog.PROP_COLLATION);

  private String name;
  /** The namespace's properties, as pylance's DirectoryNamespace takes them. */
  private final Map<String, String> properties = new LinkedHashMap<>();

  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    this.name = name;
    properties.putAll(options.asCaseSensitiveMap());
    String impl = options.getOrDefault("impl", "dir").trim().toLowerCase(java.util.Locale.ROOT);
    if (impl.equals("rest")) {
      if (options.get("uri") == null || options.get("uri").isEmpty()) {
        throw new LanceException("lance_core: catalog " + name + " (impl=rest) needs its server: spark.sql.catalog."
            + name + ".uri = http://host:port");
      }
    } else if (!impl.equals("dir") && !impl.equals("directory")) {
      throw new LanceException("lance_core: catalog " + name + ": impl '" + impl
          + "' is not supported (dir: a directory namespace, rest: a namespace REST server)");
    } else if (options.get("root") == null || options.get("root").isEmpty()) {
      throw new LanceException("lance_core: catalog " + name + " needs its root: spark.sql.catalog."
          + name + ".root = <directory or object store URI>");
    }
  }

  @Override
  public String name() {
    return name;
  }

  // -- namespaces ------------------------------------------------------------------------

  @Override
  public String[][] listNamespaces() throws NoSuchNamespaceException {
    return listNamespaces(new String[0]);
  }

  @Override
  public String[][] listNamespaces(String[] namespace) throws NoSuchNamespaceException {
    if (namespace.length > 0) {
      loadNamespaceMetadata(namespace);
    }
    List<String[]> out = new ArrayList<>();
    for (JsonNode child : call("list_namespaces", namespace).ok()) {
      String[] id = Arrays.copyOf(namespace, namespace.length + 1);
      id[namespace.length] = child.asText();
      out.add(id);
    }
    return out.toArray(new String[0][]);
  }

  @Override
  public Map<String, String> loadNamespaceMetadata(String[] namespace) throws NoSuchNamespaceException {
    Reply reply = call("describe_namespace", namespace);
    if (reply.refused("NamespaceNotFound")) {
      throw new NoSuchNamespaceException(namespace);
    }
    return strings(reply.ok());
  }

  @Override
  public void createNamespace(String[] namespace, Map<String, String> metadata) throws NamespaceAlreadyExistsException {
    Reply reply = call("create_namespace", namespace, r -> {
      ObjectNode props = r.putObject("namespace_properties");
      metadata.forEach(props::put);
    }, null);
    if (reply.refused("NamespaceAlreadyExists")) {
      throw new NamespaceAlreadyExistsException(namespace);
    }
    reply.ok();
  }

  @Override
  public void alterNamespace(String[] namespace, NamespaceChange... changes) {
    throw new UnsupportedOperationException("lance_core: a directory namespace's properties cannot be changed "
        + "once it is created (pylance's DirectoryNamespace keeps them as given)");
  }

  /** With {@code cascade}, the tables in it are forgotten (their data kept, as
   *  {@code DROP TABLE}) and its namespaces dropped, before it is. */
  @Override
  public boolean dropNamespace(String[] namespace, boolean cascade)
      throws NoSuchNamespaceException, NonEmptyNamespaceException {
    if (cascade) {
      for (Identifier table : listTables(namespace)) {
        dropTable(table);
      }
      for (String[] child : listNamespaces(namespace)) {
        dropNamespace(child, true);
      }
    }
    Reply reply = call("drop_namespace", namespace);
    if (reply.refused("NamespaceNotFound")) {
      return false;
    }
    if (reply.refused("NamespaceNotEmpty")) {
      throw new NonEmptyNamespaceException(namespace, reply.message(), scala.Option.empty());
    }
    reply.ok();
    return true;
  }

  // -- tables ----------------------------------------------------------------------------

  @Override
  public Identifier[] listTables(String[] namespace) throws NoSuchNamespaceException {
    if (namespace.length > 0) {
      loadNamespaceMetadata(namespace);
    }
    List<Identifier> out = new ArrayList<>();
    for (JsonNode table : call("list_tables", namespace).ok()) {
      out.add(Identifier.of(namespace, table.asText()));
    }
    return out.toArray(new Identifier[0]);
  }

  @Override
  public Table loadTable(Identifier ident) throws NoSuchTableException {
    return load(ident, r -> { });
  }

  /** {@code VERSION AS OF}: a version number or a tag. */
  @Override
  public Table loadTable(Identifier ident, String version) throws NoSuchTableException {
    return load(ident, r -> r.put("version", version));
  }

  /** {@code TIMESTAMP AS OF}: the last version committed at or before it. */
  @Override
  public Table loadTable(Identifier ident, long timestampMicros) throws NoSuchTableException {
    return load(ident, r -> r.put("timestamp_micros", timestampMicros));
  }

  /** Branches as Iceberg names them: {@code db.t.branch_<name>}. */
  private static final String BRANCH_PREFIX = "branch_";

  private Table load(Identifier ident, java.util.function.Consumer<ObjectNode> at) throws NoSuchTableException {
    return load(ident, ident, at);
  }

  /** Table {@code ident}, named {@code named} (a branch's table is loaded as the branch). */
  private Table load(Identifier named, Identifier ident, java.util.function.Consumer<ObjectNode> at)
      throws NoSuchTableException {
    Reply reply = call("describe_table", id(ident), at, null);
    if (reply.refused("TableNotFound") || reply.refused("NamespaceNotFound")) {
      String[] ns = ident.namespace();
      String lower = ident.name().toLowerCase(java.util.Locale.ROOT);
      // db.t.branch_x: branch x of db.t, read and written as a table of its own (a table
      // named so comes first).
      if (ns.length > 0 && named == ident && lower.startsWith(BRANCH_PREFIX) && lower.length() > BRANCH_PREFIX.length()) {
        Identifier table = Identifier.of(Arrays.copyOf(ns, ns.length - 1), ns[ns.length - 1]);
        String branch = ident.name().substring(BRANCH_PREFIX.length());
        return load(ident, table, r -> {
          at.accept(r);
          r.put("branch", branch);
        });
      }
      // db.t.versions: a metadata table of db.t (a table named so comes first).
      if (ns.length > 0 && MetadataTable.NAMES.contains(lower)) {
        Identifier table = Identifier.of(Arrays.copyOf(ns, ns.length - 1), ns[ns.length - 1]);
        Table parent;
        try {
          parent = load(table, at);
        } catch (NoSuchTableException e) {
          throw new NoSuchTableException(ident);
        }
        if (!(parent instanceof LanceTable)) {
          throw new NoSuchTableException(ident);
        }
        return new MetadataTable((LanceTable) parent, lower);
      }
      throw new NoSuchTableException(named);
    }
    JsonNode table = reply.ok();
    Map<String, String> options = new HashMap<>();
    options.put("path", table.get("location").asText());
    options.put("version", table.get("version").asText());
    for (Map.Entry<String, JsonNode> e : table.get("storage_options").properties()) {
      options.put("storage." + e.getKey(), e.getValue().asText());
    }
    Map<String, String> shown = new LinkedHashMap<>();
    shown.put(TableCatalog.PROP_PROVIDER, "lance");
    shown.put(TableCatalog.PROP_LOCATION, table.get("location").asText());
    shown.put("version", table.get("version").asText());
    shown.put("data_storage_version", table.get("data_storage_version").asText());
    shown.put("enable_stable_row_ids", table.get("enable_stable_row_ids").asText());
    List<String> key = new ArrayList<>();
    table.get("primary_key").forEach(k -> key.add(k.asText()));
    if (!key.isEmpty()) {
      shown.put("primary_key", String.join(",", key));
    }
    shown.putAll(strings(table.get("config")));
    CaseInsensitiveStringMap read = new CaseInsensitiveStringMap(options);
    StructType schema = TableRequest.of(read).describe(null).schema;
    return new LanceTable(schema, new Transform[0], options, named.toString(), shown, true);
  }

  @Override
  public Table createTable(Identifier ident, TableInfo info)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    StructType schema = checkedForCreate(ident, info);
    Map<String, String> props = info.properties();
    Reply reply = call("create_table", id(ident), r -> r.set("write", settings(props)), ArrowSchemas.ipc(schema));
    if (reply.refused("TableAlreadyExists")) {
      throw new TableAlreadyExistsException(ident);
    }
    reply.ok();
    try {
      return loadTable(ident);
    } catch (NoSuchTableException e) {
      throw new LanceException("lance_core: table " + ident + " was created but is not found: " + e.getMessage());
    }
  }

  /** {@code CREATE TABLE ... AS SELECT}: the table's directory is declared, the query's
   *  rows written there as its first version; a failed statement drops it again. */
  @Override
  public StagedTable stageCreate(Identifier ident, TableInfo info)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    StructType schema = checkedForCreate(ident, info);
    Map<String, String> props = info.properties();
    Reply reply = call("declare_table", id(ident));
    if (reply.refused("TableAlreadyExists")) {
      throw new TableAlreadyExistsException(ident);
    }
    String location = reply.ok().asText();
    return new StagedLanceTable(ident.toString(), location, storageOptions(), null, schema, strings(settings(props)),
        new StagedLanceTable.Ending() {
          @Override
          public void withoutRows() {
            call("create_table", id(ident), r -> r.set("write", settings(props)), ArrowSchemas.ipc(schema)).ok();
          }

          @Override
          public void aborted() {
            purgeTable(ident);
          }
        });
  }

  /** {@code REPLACE TABLE [AS SELECT]}: one new version of the same table, with the new
   *  schema and rows (none without a query), as lance-spark's Overwrite commit. */
  @Override
  public StagedTable stageReplace(Identifier ident, TableInfo info)
      throws NoSuchNamespaceException, NoSuchTableException {
    checkPartsAndLocation(info);
    StructType schema = info.schema();
    Map<String, String> props = info.properties();
    Reply reply = call("describe_table", id(ident));
    if (reply.refused("TableNotFound") || reply.refused("NamespaceNotFound")) {
      throw new NoSuchTableException(ident);
    }
    JsonNode table = reply.ok();
    return new StagedLanceTable(ident.toString(), table.get("location").asText(), storageOptions(),
        table.get("version").asLong(), schema, strings(settings(props)), new StagedLanceTable.Ending() {
          @Override
          public void withoutRows() {
            call("replace_table", id(ident), r -> r.set("write", settings(props)), ArrowSchemas.ipc(schema)).ok();
          }

          @Override
          public void aborted() {
            // Nothing was committed: the table is as it was.
          }
        });
  }

  @Override
  public StagedTable stageCreateOrReplace(Identifier ident, TableInfo info) throws NoSuchNamespaceException {
    try {
      return stageReplace(ident, info);
    } catch (NoSuchTableException e) {
      try {
        return stageCreate(ident, info);
      } catch (TableAlreadyExistsException raced) {
        throw new LanceException("lance_core: table " + ident + " was created by another writer meanwhile");
      }
    }
  }

  /** A new table's Spark schema, once what Lance tables cannot be is refused and its
   *  namespace is known to exist (Spark's contract, though pylance's namespace would
   *  create a table anywhere). */
  private StructType checkedForCreate(Identifier ident, TableInfo info) throws NoSuchNamespaceException {
    checkPartsAndLocation(info);
    if (ident.namespace().length > 0) {
      loadNamespaceMetadata(ident.namespace());
    }
    return info.schema();
  }

  private static void checkPartsAndLocation(TableInfo info) {
    Transform[] partitions = info.partitions();
    Map<String, String> props = info.properties();
    if (partitions.length > 0) {
      throw new UnsupportedOperationException("lance_core: Lance tables are not partitioned (PARTITIONED BY "
          + Arrays.toString(partitions) + ")");
    }
    if (props.containsKey(TableCatalog.PROP_LOCATION) && !"true".equals(props.get(TableCatalog.PROP_IS_MANAGED_LOCATION))) {
      throw new UnsupportedOperationException("lance_core: the namespace places its tables itself; "
          + "CREATE TABLE ... LOCATION is not supported (write the table with format(\"lance\") there instead)");
    }
  }

  /** The table properties that are the table's (pylance's write arguments, and any
   *  other, kept in its config), without those Spark sets itself. */
  private static ObjectNode settings(Map<String, String> props) {
    ObjectNode write = TableRequest.JSON.createObjectNode();
    props.forEach((k, v) -> {
      if (!SPARK_OWN.contains(k) && !k.startsWith(TableCatalog.OPTION_PREFIX)) {
        write.put(k, v);
      }
    });
    return write;
  }

  /** The namespace's object store settings, which its tables are written with. */
  private Map<String, String> storageOptions() {
    return LanceTable.storageOptions(properties);
  }

  /**
   * {@code ALTER TABLE}: columns added (nullable, all null; no data written), dropped,
   * renamed, made nullable ({@code DROP NOT NULL}), cast to a new type
   * (only that column rewritten), and {@code SET/UNSET TBLPROPERTIES} (the table's config).
   * Changes of one kind in a statement are one version.
   */
  @Override
  public Table alterTable(Identifier ident, TableChange... changes) throws NoSuchTableException {
    LanceTable table = (LanceTable) loadTable(ident);
    List<StructField> added = new ArrayList<>();
    ArrayNode dropped = TableRequest.JSON.createArrayNode();
    ArrayNode alterations = TableRequest.JSON.createArrayNode();
    List<StructField> newTypes = new ArrayList<>();
    ObjectNode upsert = TableRequest.JSON.createObjectNode();
    ArrayNode unset = TableRequest.JSON.createArrayNode();
    for (TableChange c : changes) {
      if (c instanceof TableChange.AddColumn) {
        TableChange.AddColumn a = (TableChange.AddColumn) c;
        if (a.fieldNames().length != 1 || a.position() != null || a.defaultValue() != null) {
          throw new UnsupportedOperationException("lance_core: ADD COLUMNS takes top-level columns at the end, "
              + "without defaults (" + String.join(".", a.fieldNames()) + ")");
        }
        added.add(new StructField(a.fieldNames()[0], a.dataType(), a.isNullable(), Metadata.empty()));
      } else if (c instanceof TableChange.DeleteColumn) {
        dropped.add(String.join(".", ((TableChange.DeleteColumn) c).fieldNames()));
      } else if (c instanceof TableChange.RenameColumn) {
        TableChange.RenameColumn r = (TableChange.RenameColumn) c;
        alterations.addObject().put("path", String.join(".", r.fieldNames())).put("name", r.newName());
      } else if (c instanceof TableChange.UpdateColumnNullability) {
        TableChange.UpdateColumnNullability n = (TableChange.UpdateColumnNullability) c;
        alterations.addObject().put("path", String.join(".", n.fieldNames())).put("nullable", n.nullable());
      } else if (c instanceof TableChange.UpdateColumnType) {
        TableChange.UpdateColumnType t = (TableChange.UpdateColumnType) c;
        alterations.addObject().put("path", String.join(".", t.fieldNames())).put("type", newTypes.size());
        newTypes.add(new StructField("type" + newTypes.size(), t.newDataType(), true, Metadata.empty()));
      } else if (c instanceof TableChange.SetProperty) {
        upsert.put(((TableChange.SetProperty) c).property(), ((TableChange.SetProperty) c).value());
      } else if (c instanceof TableChange.RemoveProperty) {
        unset.add(((TableChange.RemoveProperty) c).property());
      } else {
        throw new UnsupportedOperationException("lance_core: ALTER TABLE cannot make this change to a Lance "
            + "table yet: " + c);
      }
    }
    if (!added.isEmpty()) {
      alter(table, "add_columns", r -> { }, ArrowSchemas.ipc(new StructType(added.toArray(new StructField[0]))));
    }
    if (!dropped.isEmpty()) {
      alter(table, "drop_columns", r -> r.set("paths", dropped), null);
    }
    if (!alterations.isEmpty()) {
      byte[] types = newTypes.isEmpty() ? null : ArrowSchemas.ipc(new StructType(newTypes.toArray(new StructField[0])));
      alter(table, "alter_columns", r -> r.set("alterations", alterations), types);
    }
    if (!upsert.isEmpty() || !unset.isEmpty()) {
      alter(table, "update_config", r -> {
        r.set("upsert", upsert);
        r.set("delete", unset);
      }, null);
    }
    return loadTable(ident);
  }

  /** One ALTER TABLE change at the table's latest version. */
  private static void alter(LanceTable table, String op, java.util.function.Consumer<ObjectNode> fill, byte[] schema) {
    Map<String, String> latest = new HashMap<>(table.options());
    latest.remove("version");
    TableRequest request = TableRequest.of(new CaseInsensitiveStringMap(latest));
    request.body.put("op", op);
    fill.accept(request.body);
    Native.load();
    Native.alterTable(request.bytes(), schema);
  }

  /** Forgets the table; its data stays where it is (as lance-spark's DROP TABLE). */
  @Override
  public boolean dropTable(Identifier ident) {
    return removed("deregister_table", ident);
  }

  /** Forgets the table and deletes its directory. */
  @Override
  public boolean purgeTable(Identifier ident) {
    return removed("drop_table", ident);
  }

  /** Whether {@code op} removed the table (false: there was none). */
  private boolean removed(String op, Identifier ident) {
    Reply reply = call(op, id(ident));
    if (reply.refused("TableNotFound") || reply.refused("NamespaceNotFound")) {
      return false;
    }
    reply.ok();
    return true;
  }

  @Override
  public void renameTable(Identifier from, Identifier to) {
    throw new UnsupportedOperationException("lance_core: a directory namespace cannot rename tables "
        + "(pylance's has no such operation)");
  }

  // -- procedures: the SQL extension's statements (LanceSqlParser, LanceProcedures) --------

  @Override
  public UnboundProcedure loadProcedure(Identifier ident) {
    UnboundProcedure p = ident.namespace().length == 1 && ident.namespace()[0].equalsIgnoreCase(LanceProcedures.NAMESPACE)
        ? LanceProcedures.load(this, ident.name()) : null;
    if (p == null) {
      throw new LanceException("lance_core: catalog " + name + " has no procedure " + ident
          + " (it has system." + String.join(", system.", LanceProcedures.names()) + ")");
    }
    return p;
  }

  @Override
  public Identifier[] listProcedures(String[] namespace) {
    if (namespace.length != 1 || !namespace[0].equalsIgnoreCase(LanceProcedures.NAMESPACE)) {
      return new Identifier[0];
    }
    return Arrays.stream(LanceProcedures.names()).map(n -> Identifier.of(namespace, n)).toArray(Identifier[]::new);
  }

  // -- calls -----------------------------------------------------------------------------

  private static String[] id(Identifier ident) {
    String[] out = Arrays.copyOf(ident.namespace(), ident.namespace().length + 1);
    out[ident.namespace().length] = ident.name();
    return out;
  }

  private Reply call(String op, String[] id) {
    return call(op, id, r -> { }, null);
  }

  private Reply call(String op, String[] id, java.util.function.Consumer<ObjectNode> fill, byte[] schema) {
    Native.load();
    ObjectNode request = TableRequest.JSON.createObjectNode();
    request.put("op", op);
    ObjectNode props = request.putObject("properties");
    properties.forEach(props::put);
    ArrayNode parts = request.putArray("id");
    for (String p : id) {
      parts.add(p);
    }
    fill.accept(request);
    try {
      byte[] reply = Native.namespace(TableRequest.JSON.writeValueAsBytes(request), schema);
      return new Reply(op, TableRequest.JSON.readTree(new String(reply, StandardCharsets.UTF_8)));
    } catch (java.io.IOException e) {
      throw new LanceException("lance_core: catalog " + name + ": a request or reply that is not JSON: " + e);
    }
  }

  private static Map<String, String> strings(JsonNode object) {
    Map<String, String> out = new LinkedHashMap<>();
    if (object != null) {
      for (Map.Entry<String, JsonNode> e : object.properties()) {
        out.put(e.getKey(), e.getValue().asText());
      }
    }
    return out;
  }

  /** The namespace's answer: a value, or one of the protocol's refusals. */
  private static final class Reply {
    private final String op;
    private final JsonNode body;

    Reply(String op, JsonNode body) {
      this.op = op;
      this.body = body;
    }

    boolean refused(String kind) {
      JsonNode r = body.get("refused");
      return r != null && kind.equals(r.get("kind").asText());
    }

    String message() {
      JsonNode r = body.get("refused");
      return r == null ? "" : r.get("message").asText();
    }

    /** The value; a refusal not handled by the caller is raised with its message. */
    JsonNode ok() {
      if (body.has("refused")) {
        throw new LanceException("lance_core: " + op + ": " + message());
      }
      return body.get("ok");
    }
  }
}
