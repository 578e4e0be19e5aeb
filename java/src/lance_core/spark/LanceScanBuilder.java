package lance_core.spark;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.connector.expressions.aggregate.AggregateFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.aggregate.CountStar;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownAggregates;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownLimit;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** What Spark pushes into a scan: the columns it needs, the filters lance_core evaluates
 *  exactly, a limit, and {@code count(*)}. */
class LanceScanBuilder implements ScanBuilder, SupportsPushDownRequiredColumns, SupportsPushDownFilters,
    SupportsPushDownLimit, SupportsPushDownAggregates {
  private final LanceTable table;
  private final CaseInsensitiveStringMap options;
  private final TableRequest request;
  /** The latest version when the query is planned: every later step reads this one. */
  private final TableRequest.Description latest;
  private StructType required;
  private Filter[] pushed = new Filter[0];
  private final List<String> predicates = new ArrayList<>();
  private Integer limit;
  private boolean countStar;

  LanceScanBuilder(LanceTable table, CaseInsensitiveStringMap options) {
    this.table = table;
    this.options = options;
    TableRequest request = TableRequest.of(options);
    this.latest = request.describe(null);
    request.body.put("version", latest.version);
    this.request = request;
    this.required = table.schema();
  }

  @Override
  public void pruneColumns(StructType requiredSchema) {
    // Top-level columns: a struct is read whole, and Spark drops the fields it does not need.
    Set<String> wanted = new HashSet<>();
    for (StructField f : requiredSchema.fields()) {
      wanted.add(f.name());
    }
    List<StructField> kept = new ArrayList<>();
    for (StructField f : table.schema().fields()) {
      if (wanted.contains(f.name())) {
        kept.add(f);
      }
    }
    required = new StructType(kept.toArray(new StructField[0]));
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

  @Override
  public boolean pushAggregation(Aggregation aggregation) {
    // count(*) is answered from the fragments' row counts (or a count of the rows the
    // pushed filters pass), without reading a column.
    if (aggregation.groupByExpressions().length != 0) {
      return false;
    }
    for (AggregateFunc f : aggregation.aggregateExpressions()) {
      if (!(f instanceof CountStar)) {
        return false;
      }
    }
    countStar = aggregation.aggregateExpressions().length > 0;
    return countStar;
  }

  @Override
  public boolean supportCompletePushDown(Aggregation aggregation) {
    // The count comes whole, from one partition (or from planning): Spark need not add
    // the counts up.
    return true;
  }

  @Override
  public Scan build() {
    LanceScan scan = new LanceScan(table, options, request, latest, required, predicates, pushed, limit, countStar);
    // Without a predicate, count(*) is known when planning: no task is needed at all.
    return countStar && predicates.isEmpty() ? new LanceScan.Counted(scan) : scan;
  }
}
