package lance_core.spark;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** A Lance table: batch reads here, on the JVM; writes and streams by the Python data
 *  source's table, to which this one hands them. */
class LanceTable implements SupportsRead, SupportsWrite {
  /** The name lance_core.spark registers its Python data source under when this jar is
   *  loaded (two sources cannot both be "lance"). */
  static final String PYTHON_SOURCE = "lance_python";

  private final StructType schema;
  private final Transform[] partitioning;
  private final Map<String, String> properties;
  private Table python;

  LanceTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    this.schema = schema;
    this.partitioning = partitioning;
    this.properties = properties;
  }

  @Override
  public String name() {
    return "lance:" + properties.getOrDefault("path", "");
  }

  @Override
  @SuppressWarnings("deprecation")
  public StructType schema() {
    return schema;
  }

  @Override
  public Transform[] partitioning() {
    return partitioning;
  }

  @Override
  public Map<String, String> properties() {
    return properties;
  }

  @Override
  public Set<TableCapability> capabilities() {
    Set<TableCapability> out = EnumSet.of(TableCapability.BATCH_READ);
    if (pythonRegistered()) {
      out.addAll(python().capabilities());
    }
    return out;
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return new LanceScanBuilder(this, options);
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    return ((SupportsWrite) python()).newWriteBuilder(info);
  }

  private static boolean pythonRegistered() {
    try {
      return SparkSession.active().sessionState().dataSourceManager().dataSourceExists(PYTHON_SOURCE);
    } catch (IllegalStateException e) {
      return false; // no active session (an executor)
    }
  }

  /** The Python data source's table, for writes and streams. */
  synchronized Table python() {
    if (python == null) {
      if (!pythonRegistered()) {
        throw new LanceException("lance_core: writes and streams need its Python data source: call "
            + "lance_core.spark.register(spark) (or build the session with lance_core.spark.session)");
      }
      PythonDataSourceV2 source = new PythonDataSourceV2();
      source.setShortName(PYTHON_SOURCE);
      python = source.getTable(schema, partitioning, properties);
    }
    return python;
  }
}
