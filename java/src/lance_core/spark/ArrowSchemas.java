package lance_core.spark;

import java.io.ByteArrayOutputStream;
import java.nio.channels.Channels;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;

/** Spark schemas as the Arrow schemas Spark itself converts them to (the types its Arrow
 *  batches carry, so a table created from a schema takes the rows Spark writes into it),
 *  sent to the native library as an Arrow IPC stream of no batches. */
final class ArrowSchemas {
  private ArrowSchemas() {}

  static Schema arrow(StructType schema) {
    return ArrowUtils.toArrowSchema(schema, SQLConf.get().sessionLocalTimeZone(), true);
  }

  static byte[] ipc(StructType schema) {
    try (BufferAllocator allocator = ArrowUtils.rootAllocator().newChildAllocator("lance_core schema", 0, Long.MAX_VALUE);
         VectorSchemaRoot root = VectorSchemaRoot.create(arrow(schema), allocator)) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      try (ArrowStreamWriter writer = new ArrowStreamWriter(root, null, Channels.newChannel(out))) {
        writer.start();
        writer.end();
      }
      return out.toByteArray();
    } catch (java.io.IOException e) {
      throw new LanceException("lance_core: cannot write the Arrow schema of " + schema.simpleString() + ": " + e);
    } catch (UnsupportedOperationException e) {
      throw new LanceException("lance_core: a Lance table cannot hold " + schema.simpleString() + ": " + e.getMessage());
    }
  }
}
