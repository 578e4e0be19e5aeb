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
import org.apache.spark.sql.types.DataTypes;
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
  private final boolean countStar;
  private final TableRequest.Description description;
  private final TableRequest request;

  LanceScan(LanceTable table, CaseInsensitiveStringMap options, TableRequest base, TableRequest.Description pinned,
      StructType required, List<String> predicates, Filter[] pushed, Integer limit, boolean countStar) {
    this.table = table;
    this.options = options;
    this.required = required;
    this.predicates = predicates;
    this.pushed = pushed;
    this.limit = limit;
    this.countStar = countStar;
    // `base` names the version the query was planned on (`pinned`): every task reads it.
    TableRequest planned = base.copy();
    if (!predicates.isEmpty()) {
      // Described again for the fragments the table's indices rule out.
      planned.body.put("predicate", "(" + String.join(") AND (", predicates) + ")");
      this.description = planned.describe(null);
    } else {
      this.description = pinned;
    }
    this.request = planned;
    ArrayNode columns = request.body.putArray("columns");
    for (StructField f : required.fields()) {
      columns.add(f.name());
    }
    String batchSize = options.get("batch_size");
    request.body.put("batch_size", batchSize == null ? 64 * 1024 : Long.parseLong(batchSize.trim()));
    if (limit != null) {
      request.body.put("limit", limit);
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
      out.append(", limit ").append(limit);
    }
    if (countStar) {
      out.append(", count(*)");
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
    for (TableRequest.Fragment f : description.fragments) {
      if (description.withoutMatches.contains(f.id)) {
        continue; // the table's indices prove no row here passes the filters
      }
      long parts = Math.max(1, ceil(f.physicalRows, Math.max(perPartition, MIN_SPLIT_ROWS)));
      long step = f.physicalRows == 0 ? 0 : ceil(f.physicalRows, parts);
      for (long p = 0; p < parts; p++) {
        long start = p * step;
        long end = Math.min(f.physicalRows, (p + 1) * step);
        if (end > start || f.physicalRows == 0) {
          if (limit != null && predicates.isEmpty() && rows >= limit && !out.isEmpty()) {
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

  /** The live rows of the version read, from its fragments' metadata. */
  long liveRows() {
    long rows = 0;
    for (TableRequest.Fragment f : description.fragments) {
      rows += f.liveRows;
    }
    return rows;
  }

  /** count(*) without a predicate: answered from the manifest while planning, as a local
   *  scan (Spark runs no job for it). */
  static final class Counted implements LocalScan {
    private final LanceScan scan;

    Counted(LanceScan scan) {
      this.scan = scan;
    }

    @Override
    public StructType readSchema() {
      return scan.readSchema();
    }

    @Override
    public String description() {
      return scan.description();
    }

    @Override
    public InternalRow[] rows() {
      return new InternalRow[] {new GenericInternalRow(new Object[] {scan.liveRows()})};
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
