package lance_core.spark;

import java.util.Set;

import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** A catalog table's metadata as a table, as Iceberg names them: {@code db.t.versions},
 *  {@code .tags}, {@code .branches}, {@code .indices}, {@code .fragments} (columns: see
 *  {@code rust/core/src/query/metadata_tables.rs}), at the version the table is read at.
 *  Its few rows are read when it is loaded and answered as a local scan. */
final class MetadataTable implements SupportsRead {
  static final Set<String> NAMES = Set.of("versions", "tags", "branches", "indices", "fragments");

  private final String name;
  private final ArrowRows rows;

  MetadataTable(LanceTable table, String which) {
    this.name = table.name() + "." + which;
    this.rows = ArrowRows.of(TableRequest.of(new CaseInsensitiveStringMap(table.options())), which, r -> { });
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  @SuppressWarnings("deprecation")
  public StructType schema() {
    return rows.schema;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return Set.of(TableCapability.BATCH_READ);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return () -> rows;
  }
}
