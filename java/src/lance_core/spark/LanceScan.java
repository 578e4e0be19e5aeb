package lance_core.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;

import com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * One query's read of one version (fixed when the scan is built): a partition per fragment,
 * or per row range of a large one, as the Python data source plans them.
 */
class LanceScan implements Scan, Batch, SupportsReportStatistics {
  /** A partition has at most this many rows, fewer when that gives every core one
   *  partition; a fragment is never cut into ranges smaller than MIN_SPLIT_ROWS. (One per
   *  core, where the Python reader plans two: here every task shares one process and one
   *  decoding pool, and a task costs Spark more than our decoding of its rows.) */
  static final long MAX_ROWS_PER_PARTITION = 1L << 20;
  static final long MIN_SPLIT_ROWS = 128 * 1024;

  private final LanceTable table;
  private final CaseInsensitiveStringMap options;
  private final StructType required;
  private final List<String> predicates;
  private final Filter[] pushed;
  private final Integer limit;
  /** A top-N's sort keys (with {@code limit}), or null. */
  private final ArrayNode order;
  private final boolean countStar;
  private final TableRequest.Description description;
  private final TableRequest request;

  LanceScan(LanceTable table, CaseInsensitiveStringMap options, TableRequest base, TableRequest.Description pinned,
      StructType required, List<String> columns, boolean nestedPruned, List<String> predicates, Filter[] pushed,
      Integer limit, ArrayNode order, boolean countStar) {
    this.table = table;
    this.options = options;
    this.predicates = predicates;
    this.pushed = pushed;
    this.limit = limit;
    this.order = order;
    this.countStar = countStar;
    // `base` names the version the query was planned on (`pinned`): every task reads it.
    TableRequest planned = base.copy();
    ArrayNode names = planned.body.putArray("columns");
    for (String c : columns) {
      names.add(c);
    }
    planned.body.put("keep_structs", nestedPruned);
    if (!predicates.isEmpty()) {
      // Described again for the fragments the table's indices rule out.
      planned.body.put("predicate", "(" + String.join(") AND (", predicates) + ")");
    }
    this.description = predicates.isEmpty() && !nestedPruned ? pinned : planned.describe(null);
    // Pruned structs as the core reads them (a packed struct or a blob is read whole).
    this.required = nestedPruned ? description.schema : required;
    this.request = planned;
    String batchSize = options.get("batch_size");
    request.body.put("batch_size", batchSize == null ? 64 * 1024 : Long.parseLong(batchSize.trim()));
    if (limit != null) {
      request.body.put("limit", limit);
    }
    if (order != null) {
      request.body.set("order_by", order);
    }
  }

  @Override
  public StructType readSchema() {
    if (countStar) {
      return new StructType(new StructField[] {DataTypes.createStructField("count(*)", DataTypes.LongType, false)});
    }
    return required;
  }

  @Override
  public String description() {
    StringBuilder out = new StringBuilder("lance ").append(request.uri()).append(" version ").append(description.version);
    if (pushed.length > 0) {
      out.append(", pushed filters ").append(java.util.Arrays.toString(pushed));
    }
    if (limit != null) {
      out.append(order != null ? ", top " : ", limit ").append(limit);
    }
    if (order != null) {
      out.append(" by ").append(order);
    }
    if (countStar) {
      out.append(", count(*)");
    } else {
      out.append(", ReadSchema: ").append(required.simpleString());
    }
    return out.toString();
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
    return ((org.apache.spark.sql.connector.catalog.SupportsRead) table.python()).newScanBuilder(options).build().toMicroBatchStream(checkpointLocation);
  }

  @Override
  public InputPartition[] planInputPartitions() {
    if (countStar) {
      return new InputPartition[] {LancePartition.count(request, predicates.isEmpty() ? liveRows() : -1)};
    }
    long total = 0;
    for (TableRequest.Fragment f : description.fragments) {
      total += f.physicalRows;
    }
    String given = options.get("rows_per_partition");
    long perPartition = given != null && Long.parseLong(given.trim()) > 0 ? Long.parseLong(given.trim())
        : defaultRowsPerPartition(total);
    List<InputPartition> out = new ArrayList<>();
    long rows = 0;
    for (TableRequest.Fragment f : fragmentsToVisit()) {
      long parts = Math.max(1, ceil(f.physicalRows, Math.max(perPartition, MIN_SPLIT_ROWS)));
      long step = f.physicalRows == 0 ? 0 : ceil(f.physicalRows, parts);
      for (long p = 0; p < parts; p++) {
        long start = p * step;
        long end = Math.min(f.physicalRows, (p + 1) * step);
        if (end > start || f.physicalRows == 0) {
          // (A top-N needs every partition: the first rows read are not the first in order.)
          if (limit != null && order == null && predicates.isEmpty() && rows >= limit && !out.isEmpty()) {
            return out.toArray(new InputPartition[0]);
          }
          out.add(LancePartition.rows(request, f.id, start, end));
          // Rows of the partition surely not deleted (exact for a whole fragment).
          rows += Math.max(0, (end - start) - (f.physicalRows - f.liveRows));
        }
      }
    }
    return out.toArray(new InputPartition[0]);
  }

  /** A filtered read is first tried while planning on tables of at most this many rows
   *  (decoding their filter columns costs about what a Spark job does); it is answered
   *  there, with no job, when at most {@code local_result_rows} rows (default 16,384) of
   *  at most LOCAL_RESULT_BYTES pass. A read that more rows pass stops at the one past the
   *  limit and runs as tasks: the larger the limit, the more a failed try reads. */
  static final long PROBE_MAX_ROWS = 16L << 20;
  static final long LOCAL_RESULT_ROWS = 1L << 14;
  static final long LOCAL_RESULT_BYTES = 16L << 20;

  /** The fragments a read visits: all but those where the table's indices prove that no
   *  row passes the filters. */
  private List<TableRequest.Fragment> fragmentsToVisit() {
    List<TableRequest.Fragment> out = new ArrayList<>();
    for (TableRequest.Fragment f : description.fragments) {
      if (!description.withoutMatches.contains(f.id)) {
        out.add(f);
      }
    }
    return out;
  }

  /** The physical rows of the fragments a read visits. */
  private long rowsToVisit() {
    long rows = 0;
    for (TableRequest.Fragment f : fragmentsToVisit()) {
      rows += f.physicalRows;
    }
    return rows;
  }

  /** Whether the pushed filters make a read small enough to try while planning. */
  private boolean probeWorthIt() {
    return !predicates.isEmpty() && localResultRows() > 0 && rowsToVisit() <= PROBE_MAX_ROWS;
  }

  private long localResultRows() {
    String given = options.get("local_result_rows");
    return given == null ? LOCAL_RESULT_ROWS : Long.parseLong(given.trim());
  }

  /** The scan's rows when few pass its filters (see PROBE_MAX_ROWS), read now; else null
   *  (nested types included: their rows are not copied out of the batches). */
  InternalRow[] smallResult() {
    if (countStar || !probeWorthIt()) {
      return null;
    }
    for (StructField f : required.fields()) {
      DataType t = f.dataType();
      if (t instanceof StructType || t instanceof ArrayType || t instanceof MapType) {
        return null;
      }
    }
    long most = localResultRows();
    TableRequest probe = request.copy();
    ArrayNode ids = probe.body.putArray("fragment_ids");
    for (TableRequest.Fragment f : fragmentsToVisit()) {
      ids.add(f.id);
    }
    probe.body.put("limit", limit == null ? most + 1 : Math.min(limit, most + 1));
    List<InternalRow> rows = new ArrayList<>();
    long bytes = 0;
    LanceBatchReader reader = new LanceBatchReader(required, probe.body.toString());
    try {
      while (reader.next()) {
        java.util.Iterator<InternalRow> it = reader.get().rowIterator();
        while (it.hasNext()) {
          InternalRow row = it.next().copy();
          rows.add(row);
          bytes += rowBytes(row);
          if (rows.size() > most || bytes > LOCAL_RESULT_BYTES) {
            return null;
          }
        }
      }
    } finally {
      reader.close();
    }
    return rows.toArray(new InternalRow[0]);
  }

  /** {@code count(*)} under the pushed filters, counted now when the table is small
   *  enough (see PROBE_MAX_ROWS); else -1 (a task counts). */
  long smallCount() {
    if (!countStar || !probeWorthIt()) {
      return -1;
    }
    Native.load();
    return Native.countRows(request.bytes());
  }

  private long rowBytes(InternalRow row) {
    long bytes = 16;
    StructField[] fields = required.fields();
    for (int i = 0; i < fields.length; i++) {
      bytes += 8;
      if (!row.isNullAt(i) && fields[i].dataType() instanceof org.apache.spark.sql.types.StringType) {
        bytes += row.getUTF8String(i).numBytes();
      } else if (!row.isNullAt(i) && fields[i].dataType() instanceof org.apache.spark.sql.types.BinaryType) {
        bytes += row.getBinary(i).length;
      }
    }
    return bytes;
  }

  /** The live rows of the version read, from its fragments' metadata. */
  long liveRows() {
    return description.liveRows();
  }

  /** A read answered while planning, as a local scan (Spark runs no job for it):
   *  {@code count(*)} from the manifest (or counted now under filters on a small table),
   *  {@code min} and {@code max} from the table's indices, or the few rows that pass the
   *  filters (see {@link #smallResult}). */
  static final class Answered implements LocalScan {
    private final String description;
    private final StructType schema;
    private final InternalRow[] rows;

    Answered(String description, StructType schema, Object[] values) {
      this(description, schema, new InternalRow[] {new GenericInternalRow(values)});
    }

    Answered(String description, StructType schema, InternalRow[] rows) {
      this.description = description;
      this.schema = schema;
      this.rows = rows;
    }

    @Override
    public StructType readSchema() {
      return schema;
    }

    @Override
    public String description() {
      return description;
    }

    @Override
    public InternalRow[] rows() {
      return rows;
    }
  }

  private static long ceil(long a, long b) {
    return (a + b - 1) / b;
  }

  static long defaultRowsPerPartition(long totalRows) {
    long cores;
    try {
      cores = org.apache.spark.sql.classic.SparkSession.active().sparkContext().defaultParallelism();
    } catch (IllegalStateException e) {
      cores = Runtime.getRuntime().availableProcessors();
    }
    return Math.max(MIN_SPLIT_ROWS, Math.min(MAX_ROWS_PER_PARTITION, ceil(totalRows, Math.max(1, cores))));
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new LanceReaderFactory(readSchema());
  }

  @Override
  public Statistics estimateStatistics() {
    long rows = liveRows();
    long bytes = 0;
    for (TableRequest.Fragment f : description.fragments) {
      bytes += f.bytes;
    }
    int all = Math.max(1, table.schema().fields().length);
    long share = bytes * Math.max(1, required.fields().length) / all;
    final long numRows = rows;
    final long size = countStar ? 8 : Math.max(1, share);
    return new Statistics() {
      @Override
      public OptionalLong sizeInBytes() {
        return OptionalLong.of(size);
      }

      @Override
      public OptionalLong numRows() {
        return OptionalLong.of(countStar ? 1 : numRows);
      }
    };
  }
}
