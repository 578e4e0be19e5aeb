package lance_core.spark;

import java.io.ByteArrayInputStream;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** A few rows the native library answers as an Arrow IPC stream (a metadata table, a SQL
 *  statement's output), as Spark's rows: read through Spark's own Arrow column vectors and
 *  copied, so nothing stays tied to Arrow's memory once the stream is closed. */
final class ArrowRows implements LocalScan {
  final StructType schema;
  final InternalRow[] rows;

  private ArrowRows(StructType schema, InternalRow[] rows) {
    this.schema = schema;
    this.rows = rows;
  }

  /** The rows of {@code op} on the table {@code request} names (see
   *  {@code rust/jni/src/commands.rs}). */
  static ArrowRows of(TableRequest request, String op, java.util.function.Consumer<com.fasterxml.jackson.databind.node.ObjectNode> fill) {
    Native.load();
    TableRequest r = request.copy();
    r.body.put("op", op);
    fill.accept(r.body);
    return read(Native.tableCommand(r.bytes()), request.uri());
  }

  static ArrowRows read(byte[] ipc, String what) {
    try (BufferAllocator allocator = ArrowUtils.rootAllocator().newChildAllocator("lance_core rows", 0, Long.MAX_VALUE);
         ArrowStreamReader reader = new ArrowStreamReader(new ByteArrayInputStream(ipc), allocator)) {
      VectorSchemaRoot root = reader.getVectorSchemaRoot();
      StructType schema = ArrowUtils.fromArrowSchema(root.getSchema());
      List<InternalRow> rows = new ArrayList<>();
      while (reader.loadNextBatch()) {
        List<FieldVector> vectors = root.getFieldVectors();
        ColumnVector[] columns = new ColumnVector[vectors.size()];
        for (int i = 0; i < columns.length; i++) {
          columns[i] = new ArrowColumnVector(vectors.get(i));
        }
        ColumnarBatch batch = new ColumnarBatch(columns, root.getRowCount());
        for (Iterator<InternalRow> it = batch.rowIterator(); it.hasNext(); ) {
          rows.add(it.next().copy());
        }
      }
      return new ArrowRows(schema, rows.toArray(new InternalRow[0]));
    } catch (java.io.IOException e) {
      throw new LanceException("lance_core: " + what + ": the native library's rows are not Arrow IPC: " + e);
    }
  }

  @Override
  public StructType readSchema() {
    return schema;
  }

  @Override
  public InternalRow[] rows() {
    return rows;
  }
}
