package lance_core.spark;

import java.io.ByteArrayOutputStream;
import java.io.Serializable;
import java.nio.channels.Channels;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DeltaWriter;
import org.apache.spark.sql.connector.write.DeltaWriterFactory;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.execution.arrow.ArrowWriter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;

/**
 * A Spark task's writer: rows go into Arrow vectors by Spark's own {@code ArrowWriter}
 * (so the Arrow form of every Spark type is Spark's), each batch of them to the native
 * writer as the next part of an Arrow IPC stream, which converts them to the table's
 * types and writes data files; on commit the task reports its fragments (not committed:
 * the driver commits every task's at once). In a row-level change it also collects the
 * addresses of the rows Spark deletes (an updated row is deleted and inserted again); on a
 * table with stable row ids an updated row instead goes to fragments of its own, with its
 * old address and row id beside it, so that the commit gives it back its id.
 */
final class LanceDataWriter implements DeltaWriter<InternalRow> {
  /** Rows per batch handed over, and the bytes a batch may grow to before that. */
  private static final int BATCH_ROWS = 8192;
  private static final long BATCH_BYTES = 32L << 20;

  static final class Factory implements DeltaWriterFactory, Serializable {
    private static final long serialVersionUID = 1L;
    private final byte[] request;
    private final byte[] schema;
    private final StructType sparkSchema;
    private final String timeZone;
    /** Updated rows keep their row ids (Spark's metadata row holds the old {@code _rowid}). */
    private final boolean keepRowIds;

    Factory(byte[] request, byte[] schema, StructType sparkSchema, String timeZone, boolean keepRowIds) {
      this.request = request;
      this.schema = schema;
      this.sparkSchema = sparkSchema;
      this.timeZone = timeZone;
      this.keepRowIds = keepRowIds;
    }

    @Override
    public DeltaWriter<InternalRow> createWriter(int partitionId, long taskId) {
      return new LanceDataWriter(this);
    }
  }

  /** What a task wrote: its fragments, as pylance's fragment JSON, the addresses of the
   *  rows it deleted, and the fragments of the updated rows that keep their ids (with the
   *  old address and row id of each of their rows, in order). */
  static final class Written implements WriterCommitMessage {
    private static final long serialVersionUID = 1L;
    final List<String> fragments;
    final long[] deleted;
    final List<String> moved;
    final long[] movedAddresses;
    final long[] movedIds;

    Written(List<String> fragments, long[] deleted, List<String> moved, long[] movedAddresses, long[] movedIds) {
      this.fragments = fragments;
      this.deleted = deleted;
      this.moved = moved;
      this.movedAddresses = movedAddresses;
      this.movedIds = movedIds;
    }
  }

  /** A growing list of longs. */
  private static final class Longs {
    private long[] values = new long[0];
    private int size;

    void add(long v) {
      if (size == values.length) {
        values = java.util.Arrays.copyOf(values, Math.max(1024, values.length * 2));
      }
      values[size++] = v;
    }

    long[] toArray() {
      return java.util.Arrays.copyOf(values, size);
    }
  }

  /** One native writer and the Arrow buffers its rows go through. */
  private static final class Output {
    private final BufferAllocator allocator;
    private final VectorSchemaRoot root;
    private final ArrowWriter rows;
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private final ArrowStreamWriter stream;
    private long writer;
    private int buffered;

    Output(Factory f) {
      allocator = ArrowUtils.rootAllocator().newChildAllocator("lance_core task writer", 0, Long.MAX_VALUE);
      try {
        root = VectorSchemaRoot.create(ArrowUtils.toArrowSchema(f.sparkSchema, f.timeZone, true), allocator);
        rows = ArrowWriter.create(root);
        stream = new ArrowStreamWriter(root, null, Channels.newChannel(bytes));
        stream.start();
      } catch (java.io.IOException | RuntimeException e) {
        allocator.close();
        throw new LanceException("lance_core: cannot start a task's writer: " + e, e);
      }
      writer = Native.openWriter(f.request, f.schema);
    }

    void write(InternalRow row) {
      rows.write(row);
      buffered++;
      if (buffered >= BATCH_ROWS || allocator.getAllocatedMemory() >= BATCH_BYTES) {
        handOver();
      }
    }

    /** The rows buffered, as the stream's next batch, to the native writer. */
    private void handOver() {
      try {
        rows.finish();
        stream.writeBatch();
        rows.reset();
        buffered = 0;
      } catch (java.io.IOException e) {
        throw new LanceException("lance_core: cannot write a batch of rows as Arrow IPC: " + e, e);
      }
      send();
    }

    private void send() {
      if (bytes.size() > 0) {
        Native.writeBatch(writer, bytes.toByteArray());
        bytes.reset();
      }
    }

    /** The fragments written, in the order of their rows. */
    List<String> finish() {
      if (buffered > 0) {
        handOver();
      }
      try {
        stream.end();
      } catch (java.io.IOException e) {
        throw new LanceException("lance_core: cannot end the Arrow IPC stream of a task: " + e, e);
      }
      send();
      long w = writer;
      writer = 0;
      JsonNode reply = LanceBatchWrite.parse(Native.finishWriter(w));
      List<String> fragments = new ArrayList<>();
      reply.forEach(f -> fragments.add(f.asText()));
      return fragments;
    }

    void abort() {
      long w = writer;
      writer = 0;
      if (w != 0) {
        Native.abortWriter(w);
      }
    }

    void close() {
      abort(); // a writer neither finished nor aborted keeps nothing
      root.close();
      allocator.close();
    }
  }

  private final Factory factory;
  private final Output inserted;
  /** The updated rows that keep their ids (opened on the first). */
  private Output moved;
  private final Longs deleted = new Longs();
  private final Longs movedAddresses = new Longs();
  private final Longs movedIds = new Longs();

  private LanceDataWriter(Factory f) {
    Native.load();
    factory = f;
    inserted = new Output(f);
  }

  @Override
  public void insert(InternalRow row) {
    inserted.write(row);
  }

  /** A row of the version read goes: {@code id} holds its address. */
  @Override
  public void delete(InternalRow metadata, InternalRow id) {
    deleted.add(id.getLong(0));
  }

  @Override
  public void update(InternalRow metadata, InternalRow id, InternalRow row) {
    if (!factory.keepRowIds) {
      delete(metadata, id);
      insert(row);
      return;
    }
    if (moved == null) {
      moved = new Output(factory);
    }
    long address = id.getLong(0);
    deleted.add(address);
    movedAddresses.add(address);
    movedIds.add(metadata.getLong(0));
    moved.write(row);
  }

  @Override
  public WriterCommitMessage commit() {
    List<String> fragments = inserted.finish();
    List<String> movedFragments = moved == null ? new ArrayList<>() : moved.finish();
    return new Written(fragments, deleted.toArray(), movedFragments, movedAddresses.toArray(), movedIds.toArray());
  }

  @Override
  public void abort() {
    inserted.abort();
    if (moved != null) {
      moved.abort();
    }
  }

  @Override
  public void close() {
    inserted.close();
    if (moved != null) {
      moved.close();
    }
  }
}
