package lance_core.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractFunction2;
import scala.runtime.BoxedUnit;

/**
 * The session extensions of lance_core ({@code spark.sql.extensions=lance_core.spark.LanceExtensions}),
 * in every session the JVM makes (which is how a Spark Connect server gives them to its
 * clients' sessions): the {@link AnsweredScanRule}, and the SQL statements Spark's parser
 * lacks ({@link LanceSqlParser}: OPTIMIZE, VACUUM, tags, SHOW INDEXES, DROP INDEX), and the
 * {@code VECTOR_SEARCH} table function ({@link VectorSearch}).
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
    extensions.injectParser(new AbstractFunction2<SparkSession, ParserInterface, ParserInterface>() {
      @Override
      public ParserInterface apply(SparkSession session, ParserInterface spark) {
        return new LanceSqlParser(session, spark);
      }
    });
    extensions.injectTableFunction(VectorSearch.description());
    return BoxedUnit.UNIT;
  }
}
