package lance_core.spark;

import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.BiFunction;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.procedures.BoundProcedure;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The catalog's stored procedures ({@code CALL <catalog>.system.<name>(...)}), which the SQL
 * extension's statements become ({@link LanceSqlParser}): {@code optimize}, {@code vacuum},
 * {@code create_tag}, {@code drop_tag}, {@code create_branch}, {@code drop_branch},
 * {@code create_index} (a Spark job: {@link IndexJob}), {@code drop_index}, {@code show_tags},
 * {@code show_branches}, {@code show_indexes}. Each names its table by the parts of its identifier within the
 * catalog ({@code table => array('db', 't')}); the work and the output rows are the core's
 * ({@code rust/core/src/spark/commands.rs}, {@code query/metadata_tables.rs}).
 */
final class LanceProcedures {
  private LanceProcedures() {}

  static final String NAMESPACE = "system";

  private static final DataType STRINGS = DataTypes.createArrayType(DataTypes.StringType);
  private static final DataType OPTIONS = DataTypes.createMapType(DataTypes.StringType, DataTypes.StringType);

  /** A procedure: its parameters after {@code table}, and how its arguments fill the
   *  request of its table command. */
  private static final class Procedure implements UnboundProcedure, BoundProcedure {
    private final LanceCatalog catalog;
    private final String name;
    private final ProcedureParameter[] parameters;
    private final BiFunction<LanceTable, InternalRow, Scan> body;

    Procedure(LanceCatalog catalog, String name, ProcedureParameter[] rest, BiFunction<LanceTable, InternalRow, Scan> body) {
      this.catalog = catalog;
      this.name = name;
      this.parameters = new ProcedureParameter[rest.length + 1];
      this.parameters[0] = ProcedureParameter.in("table", STRINGS).build();
      System.arraycopy(rest, 0, this.parameters, 1, rest.length);
      this.body = body;
    }

    /** A table command's rows ({@code rust/jni/src/commands.rs}): at the latest version,
     *  or at the version the table was loaded at. */
    Procedure(LanceCatalog catalog, String name, String op, boolean atLatest, ProcedureParameter[] rest,
        BiFunction<InternalRow, ObjectNode, Void> fill) {
      this(catalog, name, rest, (table, input) -> ArrowRows.of(request(table, atLatest), op, r -> fill.apply(input, r)));
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public String description() {
      return "lance_core: " + name + " on a Lance table of catalog " + catalog.name();
    }

    @Override
    public BoundProcedure bind(StructType inputType) {
      return this;
    }

    @Override
    public ProcedureParameter[] parameters() {
      return parameters;
    }

    @Override
    public boolean isDeterministic() {
      return false;
    }

    @Override
    public Iterator<Scan> call(InternalRow input) {
      String[] id = strings(input, 0);
      if (id.length == 0) {
        throw new LanceException("lance_core: " + name + " needs its table");
      }
      Identifier ident = Identifier.of(Arrays.copyOf(id, id.length - 1), id[id.length - 1]);
      Table table;
      try {
        table = catalog.loadTable(ident);
      } catch (NoSuchTableException e) {
        throw new LanceException("lance_core: " + name + ": catalog " + catalog.name() + " has no table "
            + String.join(".", id));
      }
      if (!(table instanceof LanceTable)) {
        throw new LanceException("lance_core: " + name + ": " + String.join(".", id) + " is not a Lance table");
      }
      return Collections.singletonList(body.apply((LanceTable) table, input)).iterator();
    }
  }

  /** The table's request: at the version it was loaded at, or the latest one. */
  static TableRequest request(LanceTable table, boolean atLatest) {
    Map<String, String> options = new LinkedHashMap<>(table.options());
    if (atLatest) {
      options.remove("version");
    }
    return TableRequest.of(new CaseInsensitiveStringMap(options));
  }

  private static ProcedureParameter param(String name, DataType type, String defaultSql) {
    ProcedureParameter.Builder b = ProcedureParameter.in(name, type);
    return (defaultSql == null ? b : b.defaultValue(defaultSql)).build();
  }

  private static Map<String, String> optionsOf(InternalRow input, int i) {
    Map<String, String> out = new LinkedHashMap<>();
    if (!input.isNullAt(i)) {
      MapData map = input.getMap(i);
      ArrayData values = map.valueArray();
      for (int k = 0; k < map.numElements(); k++) {
        out.put(map.keyArray().getUTF8String(k).toString(), values.isNullAt(k) ? null : values.getUTF8String(k).toString());
      }
    }
    return out;
  }

  private static void putOptions(InternalRow input, int i, ObjectNode request) {
    ObjectNode out = request.putObject("options");
    optionsOf(input, i).forEach(out::put);
  }

  private static String[] strings(InternalRow input, int i) {
    if (input.isNullAt(i)) {
      return new String[0];
    }
    ArrayData parts = input.getArray(i);
    String[] out = new String[parts.numElements()];
    for (int k = 0; k < out.length; k++) {
      out[k] = parts.getUTF8String(k).toString();
    }
    return out;
  }

  private static String string(InternalRow input, int i) {
    return input.isNullAt(i) ? null : input.getUTF8String(i).toString();
  }

  private static boolean flag(InternalRow input, int i) {
    return !input.isNullAt(i) && input.getBoolean(i);
  }

  static String[] names() {
    return new String[] {"optimize", "vacuum", "create_tag", "drop_tag", "create_branch", "drop_branch", "create_index",
        "drop_index", "show_tags", "show_branches", "show_indexes"};
  }

  /** Procedure {@code name} of {@code catalog}, or null. */
  static UnboundProcedure load(LanceCatalog catalog, String name) {
    switch (name.toLowerCase(Locale.ROOT)) {
      case "optimize":
      case "vacuum": {
        String op = name.toLowerCase(Locale.ROOT);
        return new Procedure(catalog, op, op, true, new ProcedureParameter[] {param("options", OPTIONS, "map()")},
            (in, r) -> { putOptions(in, 1, r); return null; });
      }
      case "create_tag":
      case "create_branch": {
        String op = name.toLowerCase(Locale.ROOT);
        String what = op.substring("create_".length());
        return new Procedure(catalog, op, op, true, new ProcedureParameter[] {
            param(what, DataTypes.StringType, null), param("if_not_exists", DataTypes.BooleanType, "false"),
            param("source_branch", DataTypes.StringType, "NULL"), param("source_version", DataTypes.LongType, "NULL"),
            param("source_tag", DataTypes.StringType, "NULL")},
            (in, r) -> {
              r.put("name", string(in, 1));
              r.put("if_not_exists", flag(in, 2));
              ObjectNode source = r.putObject("source");
              source.put("branch", string(in, 3));
              if (!in.isNullAt(4)) {
                source.put("version", in.getLong(4));
              }
              source.put("tag", string(in, 5));
              return null;
            });
      }
      case "drop_tag":
      case "drop_branch": {
        String op = name.toLowerCase(Locale.ROOT);
        return new Procedure(catalog, op, op, true, new ProcedureParameter[] {
            param(op.substring("drop_".length()), DataTypes.StringType, null),
            param("if_exists", DataTypes.BooleanType, "false")},
            (in, r) -> { r.put("name", string(in, 1)); r.put("if_exists", flag(in, 2)); return null; });
      }
      case "drop_index":
        return new Procedure(catalog, "drop_index", "drop_index", true, new ProcedureParameter[] {
            param("name", DataTypes.StringType, null)},
            (in, r) -> { r.put("name", string(in, 1)); return null; });
      case "create_index":
        return new Procedure(catalog, "create_index", new ProcedureParameter[] {
            param("name", DataTypes.StringType, null), param("method", DataTypes.StringType, null),
            param("columns", STRINGS, null), param("options", OPTIONS, "map()")},
            (table, in) -> IndexJob.run(table, string(in, 1), string(in, 2), strings(in, 3), optionsOf(in, 4)));
      case "show_tags":
        return new Procedure(catalog, "show_tags", "tags", false, new ProcedureParameter[0], (in, r) -> null);
      case "show_branches":
        return new Procedure(catalog, "show_branches", "branches", false, new ProcedureParameter[0], (in, r) -> null);
      case "show_indexes":
        return new Procedure(catalog, "show_indexes", "indices", false, new ProcedureParameter[0], (in, r) -> null);
      default:
        return null;
    }
  }
}
