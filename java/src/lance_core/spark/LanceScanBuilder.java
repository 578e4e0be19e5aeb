package lance_core.spark;

import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.spark.sql.connector.expressions.aggregate.AggregateFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.aggregate.CountStar;
import org.apache.spark.sql.connector.expressions.aggregate.Max;
import org.apache.spark.sql.connector.expressions.aggregate.Min;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownAggregates;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownLimit;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.SupportsPushDownTopN;
import org.apache.spark.sql.connector.expressions.NullOrdering;
import org.apache.spark.sql.connector.expressions.SortDirection;
import org.apache.spark.sql.connector.expressions.SortOrder;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** What Spark pushes into a scan: the columns it needs (struct fields too), the filters
 *  lance_core evaluates exactly, a limit or a top-N (a sort under a limit), {@code count(*)},
 *  and {@code min} / {@code max} where an index answers them. */
class LanceScanBuilder implements ScanBuilder, SupportsPushDownRequiredColumns, SupportsPushDownFilters,
    SupportsPushDownLimit, SupportsPushDownTopN, SupportsPushDownAggregates {
  private final LanceTable table;
  private final CaseInsensitiveStringMap options;
  private final TableRequest request;
  /** The latest version when the query is planned: every later step reads this one. */
  private final TableRequest.Description latest;
  private StructType required;
  /** The columns to read: top-level names, and dotted paths into pruned structs. */
  private final List<String> paths = new ArrayList<>();
  private boolean nestedPruned;
  private Filter[] pushed = new Filter[0];
  private final List<String> predicates = new ArrayList<>();
  private Integer limit;
  /** A top-N's sort keys ({column, ascending, nulls_first} each, the core's order_by), or null. */
  private ArrayNode order;
  private boolean countStar;
  private boolean aggregateAbove;
  /** The aggregates' values when min or max were answered from indices (else null). */
  private Object[] answers;
  private StructType answerSchema;

  LanceScanBuilder(LanceTable table, CaseInsensitiveStringMap options) {
    this.table = table;
    this.options = options;
    TableRequest request = TableRequest.of(options);
    this.latest = request.describe(null);
    request.body.put("version", latest.version);
    this.request = request;
    this.required = table.schema();
    for (StructField f : required.fields()) {
      paths.add(f.name());
    }
  }

  @Override
  public void pruneColumns(StructType requiredSchema) {
    // Spark's nested column pruning: a struct keeps only the fields the query uses, and
    // only those are read (the core keeps them inside their struct, with its nulls).
    List<StructField> kept = new ArrayList<>();
    paths.clear();
    nestedPruned = false;
    for (StructField f : table.schema().fields()) {
      if (requiredSchema.getFieldIndex(f.name()).isEmpty()) {
        continue;
      }
      DataType asked = requiredSchema.apply(f.name()).dataType();
      kept.add(f.copy(f.name(), prune(f.name(), f.dataType(), asked), f.nullable(), f.metadata()));
    }
    // The table's metadata columns a query (or a row-level change) asks for.
    for (String locator : LanceTable.ROW_LOCATORS) {
      if (requiredSchema.getFieldIndex(locator).isDefined() && table.schema().getFieldIndex(locator).isEmpty()) {
        kept.add(DataTypes.createStructField(locator, DataTypes.LongType, false));
        paths.add(locator);
      }
    }
    required = new StructType(kept.toArray(new StructField[0]));
  }

  /** {@code table} pruned to the fields of {@code asked} where both are structs, adding the
   *  dotted path of each field read whole to {@code paths}. A name with a dot in it (such
   *  as a column the {@code columns} option named by its path) is never split. */
  private DataType prune(String path, DataType table, DataType asked) {
    int before = paths.size();
    if (table instanceof StructType && asked instanceof StructType && splittable(path, (StructType) table)) {
      StructType t = (StructType) table;
      StructType a = (StructType) asked;
      List<StructField> kept = new ArrayList<>();
      for (StructField f : t.fields()) {
        if (a.getFieldIndex(f.name()).isDefined()) {
          DataType inner = prune(path + "." + f.name(), f.dataType(), a.apply(f.name()).dataType());
          kept.add(f.copy(f.name(), inner, f.nullable(), f.metadata()));
        }
      }
      StructType pruned = new StructType(kept.toArray(new StructField[0]));
      if (!kept.isEmpty() && !pruned.equals(t)) {
        nestedPruned = true;
        return pruned;
      }
      paths.subList(before, paths.size()).clear();
    }
    paths.add(path);
    return table;
  }

  /** Whether the fields of struct {@code t} at {@code path} can be named by dotted paths:
   *  no name on the way has a dot in it (a top-level column that the {@code columns}
   *  option named by its path, such as "s.c", is read whole). */
  private boolean splittable(String path, StructType t) {
    if (path.indexOf('.') >= 0 && table.schema().getFieldIndex(path).isDefined()) {
      return false;
    }
    for (StructField f : t.fields()) {
      if (f.name().indexOf('.') >= 0) {
        return false;
      }
    }
    return true;
  }

  @Override
  public Filter[] pushFilters(Filter[] filters) {
    if (!TableRequest.flag(options, "pushdown", true) || filters.length == 0) {
      return filters;
    }
    List<JsonNode> json = new ArrayList<>();
    for (Filter f : filters) {
      json.add(FilterJson.of(f));
    }
    List<String> translated = request.describe(json).predicates;
    List<Filter> taken = new ArrayList<>();
    List<Filter> rest = new ArrayList<>();
    for (int i = 0; i < filters.length; i++) {
      String p = translated.get(i);
      if (p == null) {
        rest.add(filters[i]);
      } else {
        taken.add(filters[i]);
        predicates.add(p);
      }
    }
    pushed = taken.toArray(new Filter[0]);
    return rest.toArray(new Filter[0]);
  }

  @Override
  public Filter[] pushedFilters() {
    return pushed;
  }

  @Override
  public boolean pushLimit(int limit) {
    this.limit = Math.max(0, limit);
    return true;
  }

  /** Each task returns the first {@code limit} rows of its partition in this order (the
   *  core sorts them, keeping only that many), and Spark sorts those few again across
   *  partitions ({@link #isPartiallyPushed}). Only top-level columns whose order the core
   *  and Spark agree on: not floats, where Spark orders NaN and -0.0 its own way. */
  @Override
  public boolean pushTopN(SortOrder[] orders, int limit) {
    ArrayNode keys = TableRequest.JSON.createArrayNode();
    for (SortOrder o : orders) {
      if (!(o.expression() instanceof NamedReference)) {
        return false;
      }
      String[] names = ((NamedReference) o.expression()).fieldNames();
      if (names.length != 1 || table.schema().getFieldIndex(names[0]).isEmpty()) {
        return false;
      }
      DataType t = table.schema().apply(names[0]).dataType();
      boolean ordered = t instanceof org.apache.spark.sql.types.IntegralType || t instanceof org.apache.spark.sql.types.StringType
          || t instanceof org.apache.spark.sql.types.DecimalType || t instanceof org.apache.spark.sql.types.DateType
          || t instanceof org.apache.spark.sql.types.TimestampType || t instanceof org.apache.spark.sql.types.TimestampNTZType
          || t instanceof org.apache.spark.sql.types.BooleanType || t instanceof org.apache.spark.sql.types.BinaryType;
      if (!ordered) {
        return false;
      }
      keys.addObject()
          .put("column", names[0])
          .put("ascending", o.direction() == SortDirection.ASCENDING)
          .put("nulls_first", o.nullOrdering() == NullOrdering.NULLS_FIRST);
    }
    this.order = keys;
    this.limit = Math.max(0, limit);
    return true;
  }

  @Override
  public boolean isPartiallyPushed() {
    return true;
  }

  @Override
  public boolean pushAggregation(Aggregation aggregation) {
    // An aggregate Spark computes runs a job anyway: reading the rows while planning
    // would save nothing.
    aggregateAbove = true;
    AggregateFunc[] functions = aggregation.aggregateExpressions();
    if (aggregation.groupByExpressions().length != 0 || functions.length == 0) {
      return false;
    }
    boolean onlyCounts = true;
    for (AggregateFunc f : functions) {
      onlyCounts &= f instanceof CountStar;
    }
    if (onlyCounts) {
      // count(*) is answered from the fragments' row counts (or a count of the rows the
      // pushed filters pass), without reading a column.
      countStar = true;
      return true;
    }
    // min and max come from the columns' indices, which know every row's value: only
    // without a filter, and only when every aggregate is answered.
    if (!predicates.isEmpty()) {
      return false;
    }
    TableRequest asking = request.copy();
    ArrayNode extremes = asking.body.putArray("extremes");
    StructField[] fields = new StructField[functions.length];
    for (int i = 0; i < functions.length; i++) {
      AggregateFunc f = functions[i];
      if (f instanceof CountStar) {
        fields[i] = DataTypes.createStructField("count(*)", DataTypes.LongType, false);
        continue;
      }
      org.apache.spark.sql.connector.expressions.Expression column =
          f instanceof Min ? ((Min) f).column() : f instanceof Max ? ((Max) f).column() : null;
      if (!(column instanceof NamedReference) || ((NamedReference) column).fieldNames().length != 1) {
        return false;
      }
      String name = ((NamedReference) column).fieldNames()[0];
      if (table.schema().getFieldIndex(name).isEmpty()) {
        return false;
      }
      String fn = f instanceof Min ? "min" : "max";
      extremes.addObject().put("fn", fn).put("column", name);
      fields[i] = DataTypes.createStructField(fn + "(" + name + ")", table.schema().apply(name).dataType(), true);
    }
    TableRequest.Description answered = asking.describe(null);
    Object[] values = new Object[functions.length];
    int next = 0;
    for (int i = 0; i < functions.length; i++) {
      if (functions[i] instanceof CountStar) {
        values[i] = answered.liveRows();
        continue;
      }
      JsonNode e = answered.extremes.get(next++);
      if (e.isNull()) {
        return false; // no index answers it: Spark reads the column
      }
      Object v = SparkValues.internal(fields[i].dataType(), e.get("value"));
      if (v == SparkValues.UNSUPPORTED) {
        return false;
      }
      values[i] = v;
    }
    answers = values;
    answerSchema = new StructType(fields);
    return true;
  }

  @Override
  public boolean supportCompletePushDown(Aggregation aggregation) {
    // The count comes whole, from one partition (or from planning): Spark need not add
    // the counts up.
    return true;
  }

  @Override
  public Scan build() {
    if (answers != null) {
      return new LanceScan.Answered("lance " + request.uri() + " version " + latest.version
          + ", " + answerSchema.fieldNames().length + " aggregates from metadata and indices "
          + java.util.Arrays.toString(answerSchema.fieldNames()), answerSchema, answers);
    }
    LanceScan scan = new LanceScan(table, options, request, latest, required, paths, nestedPruned, predicates, pushed, limit, order, countStar);
    // Without a predicate, count(*) is known when planning: no task is needed at all.
    if (countStar && predicates.isEmpty()) {
      return new LanceScan.Answered(scan.description(), scan.readSchema(), new Object[] {scan.liveRows()});
    }
    // Under filters, on a small enough table: counted now, or the rows read now if few pass.
    long counted = scan.smallCount();
    if (counted >= 0) {
      return new LanceScan.Answered(scan.description() + ", counted while planning", scan.readSchema(),
          new Object[] {counted});
    }
    org.apache.spark.sql.catalyst.InternalRow[] rows = aggregateAbove ? null : scan.smallResult();
    if (rows != null) {
      return new LanceScan.Answered(scan.description() + ", " + rows.length + " rows read while planning",
          scan.readSchema(), rows);
    }
    return scan;
  }
}
