package lance_core.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * The session extensions of lance_core ({@code spark.sql.extensions=lance_core.spark.LanceExtensions}):
 * the {@link AnsweredScanRule} in every session the JVM makes, which is how a Spark Connect
 * server gives it to its clients' sessions (a client has no JVM to install it from).
 */
public final class LanceExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectOptimizerRule(new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
      @Override
      public Rule<LogicalPlan> apply(SparkSession session) {
        return new AnsweredScanRule();
      }
    });
    return BoxedUnit.UNIT;
  }
}
