package lance_core.spark;

import java.util.Map;

import org.apache.spark.sql.connector.write.SupportsDynamicOverwrite;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;

/** A batch write into a Lance table: an append, or (truncate, and a dynamic overwrite of
 *  a table without partitions, which is all of it) an overwrite that keeps the table's
 *  schema. */
final class LanceWriteBuilder implements WriteBuilder, SupportsTruncate, SupportsDynamicOverwrite {
  private final String uri;
  private final Map<String, String> storageOptions;
  private final Long readVersion;
  private final StructType schema;
  private final Map<String, String> settings;
  private boolean overwrite;

  LanceWriteBuilder(String uri, Map<String, String> storageOptions, Long readVersion, StructType schema,
      Map<String, String> settings) {
    this.uri = uri;
    this.storageOptions = storageOptions;
    this.readVersion = readVersion;
    this.schema = schema;
    this.settings = settings;
  }

  @Override
  public WriteBuilder truncate() {
    overwrite = true;
    return this;
  }

  @Override
  public WriteBuilder overwriteDynamicPartitions() {
    overwrite = true;
    return this;
  }

  @Override
  public Write build() {
    return new LanceBatchWrite(uri, storageOptions, readVersion,
        overwrite ? LanceBatchWrite.Mode.OVERWRITE : LanceBatchWrite.Mode.APPEND, true, schema, settings, null);
  }
}
