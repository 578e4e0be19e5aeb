package lance_core.spark;

import java.nio.charset.StandardCharsets;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** Readers on the executors: columnar batches for row partitions, one row for a count. */
class LanceReaderFactory implements PartitionReaderFactory {
  private static final long serialVersionUID = 1L;
  private final StructType schema;

  LanceReaderFactory(StructType schema) {
    this.schema = schema;
  }

  @Override
  public boolean supportColumnarReads(InputPartition partition) {
    return !((LancePartition) partition).count;
  }

  @Override
  public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
    return new LanceBatchReader(schema, ((LancePartition) partition).request);
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    LancePartition p = (LancePartition) partition;
    return new PartitionReader<InternalRow>() {
      private boolean done;

      @Override
      public boolean next() {
        if (done) {
          return false;
        }
        done = true;
        return true;
      }

      @Override
      public InternalRow get() {
        long n = p.knownCount;
        if (n < 0) {
          Native.load();
          n = Native.countRows(p.request.getBytes(StandardCharsets.UTF_8));
        }
        return new GenericInternalRow(new Object[] {n});
      }

      @Override
      public void close() {}
    };
  }
}
