package lance_core.spark;

import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.parser.ParameterContext;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.parser.SqlStatementSplitResult;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.connector.catalog.CatalogManager;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/** Spark's parser, with the statements of {@link LanceStatements} in front: each becomes
 *  the CALL of a catalog procedure, which Spark's parser then parses. Everything else is
 *  Spark's. */
final class LanceSqlParser implements ParserInterface {
  private final org.apache.spark.sql.SparkSession session;
  private final ParserInterface spark;

  LanceSqlParser(org.apache.spark.sql.SparkSession session, ParserInterface spark) {
    this.session = session;
    this.spark = spark;
  }

  private String rewritten(String sql) {
    CatalogManager catalogs = ((org.apache.spark.sql.classic.SparkSession) session).sessionState().catalogManager();
    String call = LanceStatements.rewrite(sql, new LanceStatements.Catalogs() {
      @Override
      public boolean isCatalog(String name) {
        return catalogs.isCatalogRegistered(name);
      }

      @Override
      public String currentCatalog() {
        return catalogs.currentCatalog().name();
      }

      @Override
      public String[] currentNamespace() {
        return catalogs.currentNamespace();
      }
    });
    return call == null ? sql : call;
  }

  @Override
  public LogicalPlan parsePlan(String sql) throws ParseException {
    return spark.parsePlan(rewritten(sql));
  }

  @Override
  public LogicalPlan parsePlanWithParameters(String sql, ParameterContext parameters) throws ParseException {
    return spark.parsePlanWithParameters(rewritten(sql), parameters);
  }

  @Override
  public Expression parseExpression(String sql) throws ParseException {
    return spark.parseExpression(sql);
  }

  @Override
  public TableIdentifier parseTableIdentifier(String sql) throws ParseException {
    return spark.parseTableIdentifier(sql);
  }

  @Override
  public FunctionIdentifier parseFunctionIdentifier(String sql) throws ParseException {
    return spark.parseFunctionIdentifier(sql);
  }

  @Override
  public scala.collection.immutable.Seq<String> parseMultipartIdentifier(String sql) throws ParseException {
    return spark.parseMultipartIdentifier(sql);
  }

  @Override
  public org.apache.spark.sql.catalyst.parser.TemporalIdentifier parseTemporalTableIdentifier(String sql) throws ParseException {
    return spark.parseTemporalTableIdentifier(sql);
  }

  @Override
  public LogicalPlan parseQuery(String sql) throws ParseException {
    return spark.parseQuery(sql);
  }

  @Override
  public StructType parseRoutineParam(String sql) throws ParseException {
    return spark.parseRoutineParam(sql);
  }

  @Override
  public SqlStatementSplitResult splitStatements(String sql) {
    return spark.splitStatements(sql);
  }

  @Override
  public StructType parseTableSchema(String sql) throws ParseException {
    return spark.parseTableSchema(sql);
  }

  @Override
  public DataType parseDataType(String sql) throws ParseException {
    return spark.parseDataType(sql);
  }
}
