package lance_core.spark;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.connector.write.DeltaBatchWrite;
import org.apache.spark.sql.connector.write.DeltaWrite;
import org.apache.spark.sql.connector.write.DeltaWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructType;

/**
 * One Spark write job into a Lance table, on the driver: each task writes its rows as
 * uncommitted fragments ({@link LanceDataWriter}), and the driver commits them all as one
 * new version (an Append, an Overwrite, or for a row-level change an Update that also
 * deletes the rows the tasks report by address), planned against the version the table was
 * read at, through the core's commit (conflicts with other writers resolved there). A job
 * that fails or does not commit leaves no file behind: its files carry the job's prefix
 * and the core's {@code JobFiles} removes them ({@code rust/jni/src/writer.rs}).
 */
final class LanceBatchWrite implements DeltaWrite, DeltaBatchWrite {
  /** What the job does to the table. */
  enum Mode {
    APPEND("append"),
    /** Replace its rows (and, unless the schema is kept, its schema). */
    OVERWRITE("overwrite"),
    /** Delete rows by address and append new ones (UPDATE, MERGE INTO, DELETE). */
    ROW_CHANGES("update");

    final String wire;

    Mode(String wire) {
      this.wire = wire;
    }
  }

  /** The request every call of this job sends (JSON: see rust/jni/src/writer.rs). */
  private final ObjectNode request;
  /** The Arrow schema rows are written with when the table's own is not kept. */
  private final byte[] schema;
  private final StructType sparkSchema;
  private final String timeZone;
  /** Called once the job's version is committed. */
  private final Runnable committed;
  /** A row-level change on a table with stable row ids: updated rows keep theirs. */
  private boolean keepRowIds;

  /**
   * @param readVersion the version the write was planned on, null for a new table
   * @param keepSchema the rows take the table's schema (else an overwrite's new schema is
   *     the data's)
   * @param settings pylance's write arguments (data_storage_version, max_rows_per_file,
   *     enable_stable_row_ids, a new table's primary_key); a new table's other properties
   *     go to its config
   */
  LanceBatchWrite(String uri, Map<String, String> storageOptions, Long readVersion, Mode mode,
      boolean keepSchema, StructType sparkSchema, Map<String, String> settings, Runnable committed) {
    request = TableRequest.JSON.createObjectNode();
    request.put("uri", uri);
    ObjectNode storage = request.putObject("storage_options");
    storageOptions.forEach(storage::put);
    if (readVersion != null) {
      request.put("read_version", readVersion);
    }
    request.put("mode", mode.wire);
    request.put("keep_schema", keepSchema);
    request.put("prefix", "spark-" + UUID.randomUUID().toString().replace("-", "").substring(0, 16) + "-");
    // Read by the core (lance_core::spark::table_properties), as a table's properties are.
    ObjectNode props = request.putObject("settings");
    settings.forEach(props::put);
    this.sparkSchema = sparkSchema;
    this.timeZone = SQLConf.get().sessionLocalTimeZone();
    this.schema = keepSchema && readVersion != null ? null : ArrowSchemas.ipc(sparkSchema);
    this.committed = committed;
  }

  /** Updated rows keep their row ids (a table with stable row ids): the tasks write them
   *  apart, with their old addresses and ids, and the commit gives the ids back. */
  LanceBatchWrite keepingRowIds() {
    keepRowIds = true;
    return this;
  }

  @Override
  public String description() {
    return "lance:" + request.get("uri").asText();
  }

  @Override
  public DeltaBatchWrite toBatch() {
    return this;
  }

  @Override
  public DeltaWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
    return new LanceDataWriter.Factory(bytes(request), schema, sparkSchema, timeZone, keepRowIds);
  }

  @Override
  public void commit(WriterCommitMessage[] messages) {
    Native.load();
    Native.commitWrite(bytes(withFragments(messages)), schema);
    if (committed != null) {
      committed.run();
    }
  }

  /** Spark calls this when a task or the commit failed: the job's files are removed,
   *  unless the latest version may refer to them (a commit whose answer was lost). */
  @Override
  public void abort(WriterCommitMessage[] messages) {
    Native.load();
    Native.abortWrite(bytes(withFragments(messages)));
  }

  private ObjectNode withFragments(WriterCommitMessage[] messages) {
    ObjectNode out = request.deepCopy();
    ArrayNode fragments = out.putArray("fragments");
    ArrayNode deleted = out.putArray("deleted");
    ArrayNode moved = out.putArray("moved");
    for (WriterCommitMessage m : messages) {
      if (m instanceof LanceDataWriter.Written) {
        LanceDataWriter.Written w = (LanceDataWriter.Written) m;
        w.fragments.forEach(fragments::add);
        for (long address : w.deleted) {
          deleted.add(address);
        }
        if (!w.moved.isEmpty()) {
          ObjectNode group = moved.addObject();
          w.moved.forEach(group.putArray("fragments")::add);
          ArrayNode addresses = group.putArray("addresses");
          for (long a : w.movedAddresses) {
            addresses.add(a);
          }
          ArrayNode ids = group.putArray("ids");
          for (long id : w.movedIds) {
            ids.add(id);
          }
        }
      }
    }
    return out;
  }

  static byte[] bytes(JsonNode json) {
    try {
      return TableRequest.JSON.writeValueAsBytes(json);
    } catch (java.io.IOException e) {
      throw new LanceException("lance_core: cannot write a request: " + e);
    }
  }

  static JsonNode parse(byte[] reply) {
    try {
      return TableRequest.JSON.readTree(new String(reply, StandardCharsets.UTF_8));
    } catch (java.io.IOException e) {
      throw new LanceException("lance_core: the native library sent a reply that is not JSON: " + e);
    }
  }
}
