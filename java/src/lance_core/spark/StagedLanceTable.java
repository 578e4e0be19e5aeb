package lance_core.spark;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;

/**
 * A table being created or replaced by {@code CREATE TABLE ... AS SELECT} or
 * {@code REPLACE TABLE}: its rows and new schema become the table's in one version (the
 * write's Overwrite commit, at the version the replaced table was read at), and until then
 * readers see the table as it was. A create's directory is declared in the namespace
 * first (pylance's {@code declare_table}) and dropped again when the statement fails.
 */
final class StagedLanceTable implements StagedTable, SupportsWrite {
  /** What the catalog does when the statement ends. */
  interface Ending {
    /** No rows were written (REPLACE TABLE without a query): make the table anyway. */
    void withoutRows();

    void aborted();
  }

  private final String name;
  private final String location;
  private final Map<String, String> storageOptions;
  private final Long readVersion;
  private final StructType schema;
  private final Map<String, String> settings;
  private final Ending ending;
  private volatile boolean written;

  StagedLanceTable(String name, String location, Map<String, String> storageOptions, Long readVersion,
      StructType schema, Map<String, String> settings, Ending ending) {
    this.name = name;
    this.location = location;
    this.storageOptions = storageOptions;
    this.readVersion = readVersion;
    this.schema = schema;
    this.settings = settings;
    this.ending = ending;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  @SuppressWarnings("deprecation")
  public StructType schema() {
    return schema;
  }

  @Override
  public Map<String, String> properties() {
    return settings;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.BATCH_WRITE, TableCapability.TRUNCATE);
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    // Always the whole table, as `REPLACE ... AS SELECT` asks (a truncate).
    return new SupportsTruncate() {
      @Override
      public WriteBuilder truncate() {
        return this;
      }

      @Override
      public org.apache.spark.sql.connector.write.Write build() {
        return new LanceBatchWrite(location, storageOptions, readVersion, LanceBatchWrite.Mode.OVERWRITE, false,
            info.schema(), settings,
            () -> written = true);
      }
    };
  }

  @Override
  public void commitStagedChanges() {
    if (!written) {
      ending.withoutRows();
    }
  }

  @Override
  public void abortStagedChanges() {
    ending.aborted();
  }
}
