package lance_core.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.optimizer.ConvertToLocalRelation$;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;
import scala.Option;
import scala.collection.Iterator;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * An optimizer rule that turns aggregates the reader answered while planning
 * ({@link LanceScan.Answered}: {@code count(*)}, {@code min}, {@code max}) into a local
 * relation, folding the projection Spark puts above a pushed aggregate into it: the query
 * then runs no Spark job at all. It runs after the scan pushdowns, as one of the session's
 * extra optimizations ({@link #install}).
 */
public final class AnsweredScanRule extends Rule<LogicalPlan> {
  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (plan instanceof DataSourceV2ScanRelation
        && ((DataSourceV2ScanRelation) plan).scan() instanceof LanceScan.Answered) {
      DataSourceV2ScanRelation relation = (DataSourceV2ScanRelation) plan;
      InternalRow[] rows = ((LanceScan.Answered) relation.scan()).rows();
      @SuppressWarnings({"unchecked", "rawtypes"})
      Seq output = (Seq) relation.output();
      Seq<InternalRow> data = CollectionConverters.asScala(java.util.Arrays.asList(rows)).toSeq();
      return new LocalRelation(output, data, false, Option.empty());
    }
    LogicalPlan rewritten = plan.mapChildren(new AbstractFunction1<LogicalPlan, LogicalPlan>() {
      @Override
      public LogicalPlan apply(LogicalPlan child) {
        return AnsweredScanRule.this.apply(child);
      }
    });
    return rewritten == plan ? plan : ConvertToLocalRelation$.MODULE$.apply(rewritten);
  }

  /** Add the rule to `session`'s extra optimizations (once). */
  public static void install(org.apache.spark.sql.classic.SparkSession session) {
    java.util.List<Rule<LogicalPlan>> rules = new java.util.ArrayList<>();
    for (Iterator<Rule<LogicalPlan>> it = session.experimental().extraOptimizations().iterator(); it.hasNext(); ) {
      Rule<LogicalPlan> rule = it.next();
      if (rule instanceof AnsweredScanRule) {
        return;
      }
      rules.add(rule);
    }
    rules.add(new AnsweredScanRule());
    session.experimental().extraOptimizations_$eq(CollectionConverters.asScala(rules).toSeq());
  }
}
