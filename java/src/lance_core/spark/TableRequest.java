package lance_core.spark;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A request to the native library (JSON; see {@code rust/jni/src/tables.rs}): which table
 * (path, version, storage options) and how to read it (columns, blobs, nanoseconds). Scans
 * and partitions add to a copy.
 */
final class TableRequest {
  static final ObjectMapper JSON = new ObjectMapper();

  final ObjectNode body;

  private TableRequest(ObjectNode body) {
    this.body = body;
  }

  static TableRequest of(CaseInsensitiveStringMap options) {
    String path = options.get("path");
    if (path == null || path.isEmpty()) {
      throw new LanceException("the lance data source needs a path: .load(uri)");
    }
    ObjectNode body = JSON.createObjectNode();
    body.put("uri", path);
    String version = options.get("version");
    if (version != null && !version.trim().isEmpty()) {
      body.put("version", version.trim());
    }
    ObjectNode storage = body.putObject("storage_options");
    LanceTable.storageOptions(options.asCaseSensitiveMap()).forEach(storage::put);
    String columns = options.get("columns");
    if (columns != null && !columns.trim().isEmpty()) {
      ArrayNode names = body.putArray("columns");
      for (String c : columns.split(",")) {
        if (!c.trim().isEmpty()) {
          names.add(c.trim());
        }
      }
    }
    body.put("with_row_id", flag(options, "with_row_id", false));
    if (options.get("blob_handling") != null) {
      body.put("blob_handling", options.get("blob_handling"));
    }
    if (options.get("timestamp_nanos") != null) {
      body.put("timestamp_nanos", options.get("timestamp_nanos"));
    }
    return new TableRequest(body);
  }

  static boolean flag(CaseInsensitiveStringMap options, String key, boolean otherwise) {
    String v = options.get(key);
    if (v == null) {
      return otherwise;
    }
    v = v.trim().toLowerCase();
    return v.equals("true") || v.equals("1") || v.equals("yes");
  }

  String uri() {
    return body.get("uri").asText();
  }

  TableRequest copy() {
    return new TableRequest(body.deepCopy());
  }

  byte[] bytes() {
    try {
      return JSON.writeValueAsBytes(body);
    } catch (Exception e) {
      throw new LanceException("lance_core: cannot write a request: " + e);
    }
  }

  /** What planning needs: the version, the schema of the requested columns, the
   *  fragments, and the predicate for each filter (null where Spark filters itself). */
  Description describe(List<JsonNode> filters) {
    Native.load();
    TableRequest request = copy();
    if (filters != null) {
      request.body.putArray("filters").addAll(filters);
    }
    try {
      JsonNode reply = JSON.readTree(new String(Native.describe(request.bytes()), StandardCharsets.UTF_8));
      return new Description(reply);
    } catch (java.io.IOException e) {
      throw new LanceException("lance_core: the native library sent a reply that is not JSON: " + e);
    }
  }

  static final class Fragment {
    final long id;
    final long physicalRows;
    final long liveRows;
    final long bytes;

    Fragment(JsonNode f) {
      id = f.get("id").asLong();
      physicalRows = f.get("physical_rows").asLong();
      liveRows = f.get("live_rows").asLong();
      bytes = f.get("bytes").asLong();
    }
  }

  static final class Description {
    final long version;
    final StructType schema;
    final List<Fragment> fragments = new ArrayList<>();
    final List<String> predicates = new ArrayList<>();
    final java.util.Set<Long> withoutMatches = new java.util.HashSet<>();
    /** For each extreme asked for, {"value": v} when an index answered it, else null. */
    final List<JsonNode> extremes = new ArrayList<>();

    Description(JsonNode reply) {
      version = reply.get("version").asLong();
      schema = (StructType) DataType.fromJson(reply.get("schema").toString());
      for (JsonNode f : reply.get("fragments")) {
        fragments.add(new Fragment(f));
      }
      for (JsonNode p : reply.get("predicates")) {
        predicates.add(p.isNull() ? null : p.asText());
      }
      for (JsonNode id : reply.get("fragments_without_matches")) {
        withoutMatches.add(id.asLong());
      }
      for (JsonNode e : reply.get("extremes")) {
        extremes.add(e);
      }
    }

    /** The live rows of the version, from its fragments' metadata. */
    long liveRows() {
      long rows = 0;
      for (Fragment f : fragments) {
        rows += f.liveRows;
      }
      return rows;
    }
  }
}
