package lance_core.spark;

import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.DeltaWrite;
import org.apache.spark.sql.connector.write.DeltaWriteBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperation;
import org.apache.spark.sql.connector.write.SupportsDelta;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A row-level change of a catalog's table planned by Spark (UPDATE, MERGE INTO, DELETE):
 * Spark reads the table at the version it was loaded at, with each row's address
 * ({@code _rowaddr}, the row id Spark tracks), decides which rows go and which rows are new,
 * and hands both to the tasks' writers: a changed row is its old row deleted and its new
 * row inserted (on a table with stable row ids, an updated row keeps its id: Spark reads
 * {@code _rowid} too, and the new row is given it back). The tasks write the new rows as
 * fragments; the driver deletes the old ones by address and adds the new ones in one Update
 * commit at the version read.
 */
final class LanceRowChanges implements SupportsDelta {
  private static final NamedReference ROW_ADDRESS = Expressions.column("_rowaddr");

  private static final NamedReference ROW_ID = Expressions.column("_rowid");

  private final LanceTable table;
  private final RowLevelOperation.Command command;
  /** The table's row ids are stable: an updated row keeps its id. */
  private final boolean stableRowIds;

  LanceRowChanges(LanceTable table, RowLevelOperation.Command command, boolean stableRowIds) {
    this.table = table;
    this.command = command;
    this.stableRowIds = stableRowIds;
  }

  @Override
  public RowLevelOperation.Command command() {
    return command;
  }

  @Override
  public String description() {
    return command + " " + table.name();
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return table.newScanBuilder(options);
  }

  @Override
  public NamedReference[] rowId() {
    return new NamedReference[] {ROW_ADDRESS};
  }

  /** With stable row ids Spark hands over an updated row as an update, beside the old
   *  row's {@code _rowid}, which the new row keeps. */
  @Override
  public boolean representUpdateAsDeleteAndInsert() {
    return !stableRowIds;
  }

  @Override
  public NamedReference[] requiredMetadataAttributes() {
    return stableRowIds ? new NamedReference[] {ROW_ID} : new NamedReference[0];
  }

  @Override
  public DeltaWriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    String version = table.options().get("version");
    return new DeltaWriteBuilder() {
      @Override
      public DeltaWrite build() {
        LanceBatchWrite write = new LanceBatchWrite(table.options().get("path"), LanceTable.storageOptions(table.options()),
            Long.valueOf(version), LanceBatchWrite.Mode.ROW_CHANGES, true, info.schema(), java.util.Map.of(), null);
        return stableRowIds ? write.keepingRowIds() : write;
      }
    };
  }
}
