package lance_core.spark;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.ExpressionInfo;
import org.apache.spark.sql.catalyst.expressions.NamedArgumentExpression;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.catalog.CatalogManager;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.unsafe.types.UTF8String;
import scala.Option;
import scala.Tuple3;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * {@code VECTOR_SEARCH(table => ..., query_vector => ..., ...)}, lance-spark's table function
 * for a nearest-neighbour search (its argument names; the core checks them and builds the
 * query: {@code rust/core/src/spark/vector_search.rs}). While the statement is analyzed the
 * arguments are evaluated (they must be constants), the table is resolved (a catalog table,
 * or a table's path) and its version pinned; the search itself runs in one task, through
 * the table's vector index where one covers the column, and its rows come back through the
 * columnar reader every scan uses.
 */
final class VectorSearch extends AbstractFunction1<Seq<Expression>, LogicalPlan> {
  static final String NAME = "vector_search";

  /** What {@code injectTableFunction} takes. */
  static Tuple3<FunctionIdentifier, ExpressionInfo, scala.Function1<Seq<Expression>, LogicalPlan>> description() {
    ExpressionInfo info = new ExpressionInfo(VectorSearch.class.getName(), null, NAME,
        "VECTOR_SEARCH(table, query_vector[, num_results], [vector_column => ..., ...]) - the rows of a Lance "
            + "table nearest to a query vector (or to each of several), with _distance",
        "", "", "", "table_funcs", "", "", "java_udf");
    return new Tuple3<>(FunctionIdentifier.apply(NAME), info, new VectorSearch());
  }

  @Override
  public LogicalPlan apply(Seq<Expression> given) {
    Native.load();
    ArrayNode arguments = TableRequest.JSON.createArrayNode();
    int position = 0;
    for (Expression e : CollectionConverters.asJava(given)) {
      position++;
      String name = null;
      if (e instanceof NamedArgumentExpression) {
        name = ((NamedArgumentExpression) e).key();
        e = ((NamedArgumentExpression) e).value();
      }
      if (!e.foldable()) {
        throw new LanceException("VECTOR_SEARCH: argument " + (name != null ? name : String.valueOf(position))
            + " must be a constant, not " + e.sql());
      }
      ArrayNode pair = arguments.addArray();
      pair.add(name);
      pair.add(json(e.eval(null), e.dataType()));
    }
    ObjectNode ask = TableRequest.JSON.createObjectNode();
    ask.set("arguments", arguments);
    JsonNode named = reply(Native.searchArguments(bytes(ask))).get("arguments");

    String tableName = named.get("table").asText();
    TableRequest request = resolve(tableName);
    JsonNode version = named.get("version");
    if (version != null && !version.isNull()) {
      request.body.put("version", version.asLong());
    }
    request.body.remove("columns");
    request.body.set("search", named);
    TableRequest.Description description;
    try {
      description = request.describe(null);
    } catch (LanceException e) {
      throw new LanceException("VECTOR_SEARCH(" + tableName + "): " + e.getMessage(), e);
    }
    // Pinned: the rows found are those of the version analyzed.
    request.body.put("version", description.version);
    Table table = new Result("VECTOR_SEARCH(" + tableName + ")", description.schema, request);
    return DataSourceV2Relation.create(table, Option.empty(), Option.empty(), CaseInsensitiveStringMap.empty(),
        Option.empty());
  }

  /** The table a name or path means: a path (it has a '/') is read as the data source
   *  reads one; a name is looked up as Spark looks up {@code SELECT ... FROM name}. */
  private static TableRequest resolve(String name) {
    if (name.contains("/")) {
      return TableRequest.of(new CaseInsensitiveStringMap(Map.of("path", name)));
    }
    SparkSession session = (SparkSession) org.apache.spark.sql.SparkSession.active();
    String[] parts;
    try {
      parts = CollectionConverters.asJava(session.sessionState().sqlParser().parseMultipartIdentifier(name))
          .toArray(new String[0]);
    } catch (ParseException e) {
      throw new LanceException("VECTOR_SEARCH: table '" + name + "' is not a table's name or path: " + e.getMessage());
    }
    CatalogManager catalogs = session.sessionState().catalogManager();
    CatalogPlugin catalog;
    String[] rest;
    if (parts.length > 1 && catalogs.isCatalogRegistered(parts[0])) {
      catalog = catalogs.catalog(parts[0]);
      rest = java.util.Arrays.copyOfRange(parts, 1, parts.length);
    } else {
      catalog = catalogs.currentCatalog();
      rest = parts.length > 1 ? parts : concat(catalogs.currentNamespace(), parts[0]);
    }
    if (!(catalog instanceof TableCatalog)) {
      throw new LanceException("VECTOR_SEARCH: " + name + ": catalog " + catalog.name() + " has no tables");
    }
    Identifier ident = Identifier.of(java.util.Arrays.copyOf(rest, rest.length - 1), rest[rest.length - 1]);
    Table table;
    try {
      table = ((TableCatalog) catalog).loadTable(ident);
    } catch (NoSuchTableException e) {
      throw new LanceException("VECTOR_SEARCH: there is no table " + name + " (catalog " + catalog.name() + ")");
    }
    if (!(table instanceof LanceTable)) {
      throw new LanceException("VECTOR_SEARCH: " + name + " is not a Lance table");
    }
    return TableRequest.of(new CaseInsensitiveStringMap(((LanceTable) table).options()));
  }

  private static String[] concat(String[] namespace, String last) {
    String[] out = java.util.Arrays.copyOf(namespace, namespace.length + 1);
    out[namespace.length] = last;
    return out;
  }

  /** A constant as JSON: strings, numbers, booleans, arrays of them. */
  private static JsonNode json(Object value, DataType type) {
    JsonNodeFactory f = JsonNodeFactory.instance;
    if (value == null) {
      return f.nullNode();
    } else if (value instanceof UTF8String) {
      return f.textNode(value.toString());
    } else if (value instanceof Boolean) {
      return f.booleanNode((Boolean) value);
    } else if (value instanceof Decimal) {
      return f.numberNode(((Decimal) value).toJavaBigDecimal());
    } else if (value instanceof Double || value instanceof Float) {
      return f.numberNode(((Number) value).doubleValue());
    } else if (value instanceof Number) {
      return f.numberNode(((Number) value).longValue());
    } else if (value instanceof ArrayData && type instanceof ArrayType) {
      DataType element = ((ArrayType) type).elementType();
      ArrayData array = (ArrayData) value;
      ArrayNode out = f.arrayNode();
      for (int i = 0; i < array.numElements(); i++) {
        out.add(json(array.isNullAt(i) ? null : array.get(i, element), element));
      }
      return out;
    }
    throw new LanceException("VECTOR_SEARCH: an argument of type " + type.simpleString()
        + " (strings, numbers, booleans and arrays of them are taken)");
  }

  private static byte[] bytes(JsonNode node) {
    return node.toString().getBytes(StandardCharsets.UTF_8);
  }

  private static JsonNode reply(byte[] bytes) {
    try {
      return TableRequest.JSON.readTree(new String(bytes, StandardCharsets.UTF_8));
    } catch (java.io.IOException e) {
      throw new LanceException("lance_core: the native library sent a reply that is not JSON: " + e);
    }
  }

  /** The search's rows as a table of one partition, read by the columnar reader. */
  private static final class Result implements SupportsRead, ScanBuilder, Scan, Batch {
    private final String name;
    private final StructType schema;
    private final TableRequest request;

    Result(String name, StructType schema, TableRequest request) {
      this.name = name;
      this.schema = schema;
      this.request = request;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    @SuppressWarnings("deprecation")
    public StructType schema() {
      return schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
      return Set.of(TableCapability.BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
      return this;
    }

    @Override
    public Scan build() {
      return this;
    }

    @Override
    public StructType readSchema() {
      return schema;
    }

    @Override
    public String description() {
      return name;
    }

    @Override
    public Batch toBatch() {
      return this;
    }

    @Override
    public InputPartition[] planInputPartitions() {
      return new InputPartition[] {LancePartition.whole(request)};
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
      return new LanceReaderFactory(schema);
    }
  }
}
