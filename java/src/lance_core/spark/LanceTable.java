package lance_core.spark;

import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.catalog.MetadataColumn;
import org.apache.spark.sql.connector.catalog.SupportsDelete;
import org.apache.spark.sql.connector.catalog.SupportsMetadataColumns;
import org.apache.spark.sql.connector.catalog.SupportsRowLevelOperations;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperation;
import org.apache.spark.sql.connector.write.RowLevelOperationBuilder;
import org.apache.spark.sql.connector.write.RowLevelOperationInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** A Lance table: batch reads here, on the JVM. A table of the data source is named by
 *  its options ({@code path}, ...), and hands writes and streams to the Python data
 *  source's table; a catalog's table carries the options it is read with and the
 *  properties it shows, and writes on the JVM ({@link LanceWriteBuilder}). */
class LanceTable implements SupportsRead, SupportsWrite, SupportsDelete, SupportsMetadataColumns,
    SupportsRowLevelOperations {
  /** The metadata columns a scan can add: the row id and the row address (fragment id in
   *  the high 32 bits, row offset in the low), Spark longs. */
  static final String[] ROW_LOCATORS = {"_rowid", "_rowaddr"};

  /** The name lance_core.spark registers its Python data source under when this jar is
   *  loaded (two sources cannot both be "lance"). */
  static final String PYTHON_SOURCE = "lance_python";

  private final StructType schema;
  private final Transform[] partitioning;
  /** What it is read and written with: path, version, storage options. */
  private final Map<String, String> options;
  private final String name;
  private final Map<String, String> properties;
  /** Batch writes on the JVM (a catalog's table), else by the Python data source. */
  private final boolean jvmWrites;
  private Table python;

  LanceTable(StructType schema, Transform[] partitioning, Map<String, String> options) {
    this(schema, partitioning, options, "lance:" + options.getOrDefault("path", ""), options, false);
  }

  LanceTable(StructType schema, Transform[] partitioning, Map<String, String> options, String name,
      Map<String, String> properties, boolean jvmWrites) {
    this.schema = schema;
    this.partitioning = partitioning;
    this.options = options;
    this.name = name;
    this.properties = properties;
    this.jvmWrites = jvmWrites;
  }

  /** The object store settings among the options ({@code storage.<key>}). */
  static Map<String, String> storageOptions(Map<String, String> options) {
    Map<String, String> out = new HashMap<>();
    options.forEach((k, v) -> {
      if (k.toLowerCase().startsWith("storage.")) {
        out.put(k.substring("storage.".length()), v);
      }
    });
    return out;
  }

  @Override
  public String name() {
    return name;
  }

  /** {@code given} (a query's options) over the table's own. */
  private CaseInsensitiveStringMap withOwn(CaseInsensitiveStringMap given) {
    Map<String, String> merged = new HashMap<>(options);
    merged.putAll(given.asCaseSensitiveMap());
    return new CaseInsensitiveStringMap(merged);
  }

  @Override
  @SuppressWarnings("deprecation")
  public StructType schema() {
    return schema;
  }

  @Override
  public Transform[] partitioning() {
    return partitioning;
  }

  @Override
  public Map<String, String> properties() {
    return properties;
  }

  @Override
  public Set<TableCapability> capabilities() {
    Set<TableCapability> out = EnumSet.of(TableCapability.BATCH_READ);
    if (jvmWrites) {
      out.addAll(EnumSet.of(TableCapability.BATCH_WRITE, TableCapability.TRUNCATE, TableCapability.OVERWRITE_DYNAMIC));
    } else if (pythonRegistered()) {
      out.addAll(python().capabilities());
    }
    return out;
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return new LanceScanBuilder(this, withOwn(options));
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    if (jvmWrites) {
      String version = options.get("version");
      return new LanceWriteBuilder(options.get("path"), storageOptions(options),
          version == null ? null : Long.valueOf(version), info.schema(), info.options().asCaseSensitiveMap());
    }
    // A write goes to the latest version: the version a catalog's table was read at is not
    // the writer's to know.
    CaseInsensitiveStringMap merged = withOwn(info.options());
    Map<String, String> writeOptions = new HashMap<>(merged.asCaseSensitiveMap());
    writeOptions.remove("version");
    CaseInsensitiveStringMap given = new CaseInsensitiveStringMap(writeOptions);
    return ((SupportsWrite) python()).newWriteBuilder(new LogicalWriteInfo() {
      @Override
      public CaseInsensitiveStringMap options() {
        return given;
      }

      @Override
      public String queryId() {
        return info.queryId();
      }

      @Override
      public StructType schema() {
        return info.schema();
      }

      @Override
      public java.util.Optional<StructType> rowIdSchema() {
        return info.rowIdSchema();
      }

      @Override
      public java.util.Optional<StructType> metadataSchema() {
        return info.metadataSchema();
      }
    });
  }

  @Override
  public MetadataColumn[] metadataColumns() {
    MetadataColumn[] out = new MetadataColumn[ROW_LOCATORS.length];
    for (int i = 0; i < out.length; i++) {
      String name = ROW_LOCATORS[i];
      out[i] = new MetadataColumn() {
        @Override
        public String name() {
          return name;
        }

        @Override
        public DataType dataType() {
          return DataTypes.LongType;
        }

        @Override
        public boolean isNullable() {
          return false;
        }
      };
    }
    return out;
  }

  /** SQL's UPDATE, MERGE INTO, and a DELETE whose condition Spark cannot hand over: Spark
   *  plans which rows change, and the write deletes the old rows by address and appends
   *  the new ones, one version (see {@link LanceRowChanges}). */
  @Override
  public RowLevelOperationBuilder newRowLevelOperationBuilder(RowLevelOperationInfo info) {
    if (!jvmWrites) {
      throw new UnsupportedOperationException("lance_core: row-level changes in SQL need a table of "
          + "lance_core.spark.LanceCatalog; use lance_core.spark.update / merge_insert on a path");
    }
    boolean stable = "true".equals(properties.get("enable_stable_row_ids"));
    return () -> new LanceRowChanges(this, info.command(), stable);
  }

  /** The table's read options; the version read, a number. */
  Map<String, String> options() {
    return options;
  }

  /** {@code DELETE FROM} a catalog's table, when Spark hands over the condition as
   *  filters that each have an exact predicate: deletion files at the latest version, no
   *  data file rewritten. */
  @Override
  public boolean canDeleteWhere(Filter[] filters) {
    if (!jvmWrites) {
      return false;
    }
    Native.load();
    return Native.canDeleteWhere(deleteRequest(filters)) == 1;
  }

  @Override
  public void deleteWhere(Filter[] filters) {
    Native.load();
    Native.deleteWhere(deleteRequest(filters));
  }

  private byte[] deleteRequest(Filter[] filters) {
    Map<String, String> latest = new HashMap<>(options);
    latest.remove("version");
    TableRequest request = TableRequest.of(new CaseInsensitiveStringMap(latest));
    com.fasterxml.jackson.databind.node.ArrayNode json = request.body.putArray("filters");
    for (Filter f : filters) {
      json.add(FilterJson.of(f));
    }
    return request.bytes();
  }

  private static boolean pythonRegistered() {
    try {
      return SparkSession.active().sessionState().dataSourceManager().dataSourceExists(PYTHON_SOURCE);
    } catch (IllegalStateException e) {
      return false; // no active session (an executor)
    }
  }

  /** The Python data source's table, for writes and streams. */
  synchronized Table python() {
    if (python == null) {
      if (!pythonRegistered()) {
        throw new LanceException("lance_core: writes and streams need its Python data source: call "
            + "lance_core.spark.register(spark) (or build the session with lance_core.spark.session)");
      }
      PythonDataSourceV2 source = new PythonDataSourceV2();
      source.setShortName(PYTHON_SOURCE);
      python = source.getTable(schema, partitioning, options);
    }
    return python;
  }
}
