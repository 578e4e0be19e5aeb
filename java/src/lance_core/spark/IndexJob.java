package lance_core.spark;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.Function;
import org.apache.spark.sql.connector.read.Scan;

/**
 * {@code ALTER TABLE t CREATE INDEX name USING method (column) [WITH (...)]} as a Spark job,
 * as lance-spark builds it: the driver checks the column, kind, options and name and groups
 * the fragments into about {@code defaultParallelism} tasks of equal rows; each task builds
 * one segment of a scalar index over its fragments, on an executor, and the driver commits
 * every segment as the index in one version (an index of the same name is replaced). For a
 * vector index the driver first trains the model (IVF centroids, PQ codebooks, SQ bounds)
 * and stages it, each task encodes its fragments' vectors with it, and the driver joins the
 * parts into one segment and commits it. A job that fails leaves no file behind. The steps are the core's ({@code rust/jni/src/commands.rs},
 * {@code rust/core/src/spark/commands.rs}).
 */
final class IndexJob {
  private IndexJob() {}

  static Scan run(LanceTable table, String name, String method, String[] columns, Map<String, String> options) {
    Native.load();
    TableRequest latest = LanceProcedures.request(table, true);
    SparkContext sc = SparkContext.getOrCreate();
    ObjectNode ask = latest.copy().body;
    ask.put("op", "plan");
    ask.put("name", name);
    ask.put("method", method);
    ArrayNode cols = ask.putArray("columns");
    for (String c : columns) {
      cols.add(c);
    }
    ObjectNode opts = ask.putObject("options");
    options.forEach(opts::put);
    ask.put("parallelism", sc.defaultParallelism());
    JsonNode plan = call(ask);

    String prefix = "spark-" + UUID.randomUUID().toString().replace("-", "").substring(0, 16) + "-";
    boolean vector = plan.path("vector").asBoolean(false);
    JsonNode model = plan.path("model");
    List<String> tasks = new ArrayList<>();
    ArrayNode uuids = TableRequest.JSON.createArrayNode();
    if (vector && !model.isNull()) {
      uuids.add(model.asText());  // the staged model, which the tasks write their parts beside
    }
    List<JsonNode> groups = new ArrayList<>();
    plan.get("tasks").forEach(groups::add);
    if (groups.isEmpty() && !vector) {
      groups.add(TableRequest.JSON.createArrayNode());  // a table without rows gets its empty index
    }
    for (JsonNode fragments : groups) {
      ObjectNode task = latest.copy().body;
      task.put("op", "build");
      task.put("version", plan.get("version").asLong());
      task.put("name", name);
      task.set("column", plan.get("column"));
      task.set("fragment_ids", fragments);
      task.put("prefix", prefix);
      if (vector) {
        task.put("vector", true);
        task.set("model", model);
        task.put("part", tasks.size());
      } else {
        task.set("method", plan.get("method"));
        task.set("page_rows", plan.get("page_rows"));
        task.set("probability", plan.get("probability"));
        String uuid = UUID.randomUUID().toString();
        task.put("uuid", uuid);
        uuids.add(uuid);
      }
      tasks.add(task.toString());
    }
    try {
      JavaSparkContext jsc = JavaSparkContext.fromSparkContext(sc);
      jsc.setJobDescription("lance_core: CREATE INDEX " + name + " on " + table.name());
      List<String> built = tasks.isEmpty() ? new ArrayList<>()
          : jsc.parallelize(tasks, tasks.size()).map(new BuildSegment()).collect();
      Map<String, String> at = new java.util.LinkedHashMap<>(table.options());
      at.put("version", plan.get("version").asText());
      TableRequest read = TableRequest.of(new org.apache.spark.sql.util.CaseInsensitiveStringMap(at));
      if (vector) {
        for (String reply : built) {
          if (parse(reply).path("part").isNull()) {
            throw new LanceException("lance_core: CREATE INDEX " + name + ": the job was aborted while a task ran");
          }
        }
        return ArrowRows.of(read, "commit_vector_index", r -> {
          r.put("name", name);
          r.set("column", plan.get("column"));
          r.put("method", method);
          r.set("options", opts);
          r.set("model", model);
          r.put("parts", built.size());
        });
      }
      return ArrowRows.of(read, "commit_index", r -> {
        r.put("name", name);
        ArrayNode segments = r.putArray("segments");
        for (String reply : built) {
          JsonNode segment = parse(reply).get("segment");
          if (segment == null || segment.isNull()) {
            throw new LanceException("lance_core: CREATE INDEX " + name + ": the job was aborted while a task ran");
          }
          segments.add(segment.asText());
        }
      });
    } catch (RuntimeException e) {
      ObjectNode abort = latest.copy().body;
      abort.put("op", "abort");
      abort.put("prefix", prefix);
      abort.set("index_uuids", uuids);
      try {
        call(abort);
      } catch (RuntimeException cleanup) {
        e.addSuppressed(cleanup);
      }
      throw e;
    }
  }

  private static JsonNode call(ObjectNode request) {
    return parse(new String(Native.indexJob(request.toString().getBytes(StandardCharsets.UTF_8)), StandardCharsets.UTF_8));
  }

  private static JsonNode parse(String json) {
    try {
      return TableRequest.JSON.readTree(json);
    } catch (java.io.IOException e) {
      throw new LanceException("lance_core: the native library sent a reply that is not JSON: " + e);
    }
  }

  /** A task: one segment built over its fragments; the native library's JSON reply. */
  static final class BuildSegment implements Function<String, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String call(String request) {
      Native.load();
      return new String(Native.indexJob(request.getBytes(StandardCharsets.UTF_8)), StandardCharsets.UTF_8);
    }
  }
}
