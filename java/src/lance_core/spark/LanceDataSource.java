package lance_core.spark;

import java.util.Map;

import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code spark.read.format("lance")} on the JVM: a DataSource V2 reader that calls
 * lance_core's Rust core through JNI and hands Spark columnar batches. Writes and
 * Structured Streaming go to lance_core's Python data source (registered as
 * {@code lance_python} by {@code lance_core.spark.register}), unchanged.
 *
 * <p>Options are the Python data source's: {@code path}, {@code version} (number or tag),
 * {@code columns}, {@code batch_size}, {@code with_row_id}, {@code rows_per_partition},
 * {@code pushdown}, {@code timestamp_nanos}, {@code blob_handling} and
 * {@code storage.<key>} for object store settings; and this reader's own
 * {@code local_result_rows} (see {@link LanceScan#PROBE_MAX_ROWS}).
 */
public class LanceDataSource implements TableProvider, DataSourceRegister {
  @Override
  public String shortName() {
    return "lance";
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return TableRequest.of(options).describe(null).schema;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new LanceTable(schema, partitioning, properties);
  }

  @Override
  public boolean supportsExternalMetadata() {
    // Writes pass the DataFrame's schema for a table that may not exist yet.
    return true;
  }
}
