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
 * row inserted. The tasks write the new rows as fragments; the driver deletes the old ones
 * by address and adds the new ones in one Update commit at the version read.
 */
final class LanceRowChanges implements SupportsDelta {
  private static final NamedReference ROW_ADDRESS = Expressions.column("_rowaddr");

  private final LanceTable table;
  private final RowLevelOperation.Command command;

  LanceRowChanges(LanceTable table, RowLevelOperation.Command command) {
    this.table = table;
    this.command = command;
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

  @Override
  public boolean representUpdateAsDeleteAndInsert() {
    return true;
  }

  @Override
  public DeltaWriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    String version = table.options().get("version");
    return new DeltaWriteBuilder() {
      @Override
      public DeltaWrite build() {
        return new LanceBatchWrite(table.options().get("path"), LanceTable.storageOptions(table.options()),
            Long.valueOf(version), LanceBatchWrite.Mode.ROW_CHANGES, true, info.schema(), java.util.Map.of(), null);
      }
    };
  }
}
