package lance_core.spark;

import java.nio.charset.StandardCharsets;

import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.unsafe.Platform;

/**
 * A partition's batches, read by the native library and seen in place (CDataColumns). A
 * batch lives until the next call to {@code next()} or {@code close()}, which release it:
 * Spark is done with a batch when it asks for the next one.
 */
final class LanceBatchReader implements PartitionReader<ColumnarBatch> {
  private static final long ARRAY_STRUCT_BYTES = 80;
  private static final long SCHEMA_STRUCT_BYTES = 72;

  private final StructType schema;
  private long reader;
  private long arrayStruct;
  private long schemaStruct;
  private ColumnarBatch batch;

  LanceBatchReader(StructType schema, String request) {
    this.schema = schema;
    Native.load();
    this.arrayStruct = Platform.allocateMemory(ARRAY_STRUCT_BYTES);
    this.schemaStruct = Platform.allocateMemory(SCHEMA_STRUCT_BYTES);
    // Zeroed structs have no release callback: releasing them does nothing.
    Platform.setMemory(arrayStruct, (byte) 0, ARRAY_STRUCT_BYTES);
    Platform.setMemory(schemaStruct, (byte) 0, SCHEMA_STRUCT_BYTES);
    try {
      this.reader = Native.openReader(request.getBytes(StandardCharsets.UTF_8));
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  @Override
  public boolean next() {
    release();
    long rows = Native.nextBatch(reader, arrayStruct, schemaStruct);
    if (rows < 0) {
      return false;
    }
    StructField[] fields = schema.fields();
    ColumnVector[] columns = new ColumnVector[fields.length];
    for (int i = 0; i < fields.length; i++) {
      columns[i] = CDataColumns.of(fields[i].dataType(), CDataColumns.child(arrayStruct, i),
          CDataColumns.schemaChild(schemaStruct, i), 0);
    }
    batch = new ColumnarBatch(columns, (int) rows);
    return true;
  }

  @Override
  public ColumnarBatch get() {
    return batch;
  }

  private void release() {
    batch = null;
    if (arrayStruct != 0) {
      Native.releaseBatch(arrayStruct, schemaStruct);
    }
  }

  @Override
  public void close() {
    if (arrayStruct != 0) {
      release();
      Platform.freeMemory(arrayStruct);
      Platform.freeMemory(schemaStruct);
      arrayStruct = 0;
      schemaStruct = 0;
    }
    if (reader != 0) {
      Native.closeReader(reader);
      reader = 0;
    }
  }
}
