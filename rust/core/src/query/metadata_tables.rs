//! A table's metadata read as tables (what Iceberg calls metadata tables, and Spark SQL
//! reads as `catalog.db.t.versions`): `versions`, `tags`, `indices` and `fragments`, one
//! Arrow batch each; and `branches`. Their columns follow the names users already know:
//! pylance's `versions()` and `get_fragments()`, and lance-spark's `SHOW TAGS` / `SHOW
//! BRANCHES` / `SHOW INDEXES` (which answer with these tables).
use std::collections::BTreeSet;
use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Int32Builder, Int64Builder, ListBuilder, MapBuilder, StringBuilder,
    TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

use crate::dataset::Dataset;
use crate::error::Result;
use crate::table::branches::list_branches;
use crate::table::deletion::deletion_file_name;
use crate::table::tags::list_tags;

/// Which of a table's metadata tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetadataTable {
    /// Every version of the table's line: number, commit time, summary.
    Versions,
    /// Every tag: name, branch, version, times, manifest size.
    Tags,
    /// Every branch: name, where it starts (parent branch and version), time, manifest size.
    Branches,
    /// Every index (its segments taken together): columns, kind, what it covers.
    Indices,
    /// This version's fragments: rows, deletions, files.
    Fragments,
}

impl MetadataTable {
    pub const ALL: [MetadataTable; 5] = [
        Self::Versions,
        Self::Tags,
        Self::Branches,
        Self::Indices,
        Self::Fragments,
    ];

    /// The metadata table a name (any case) means, if any.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(name))
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Versions => "versions",
            Self::Tags => "tags",
            Self::Branches => "branches",
            Self::Indices => "indices",
            Self::Fragments => "fragments",
        }
    }

    pub fn schema(self) -> SchemaRef {
        let long = |n: &str| Field::new(n, DataType::Int64, false);
        let strings = |n: &str| {
            Field::new(
                n,
                DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
                false,
            )
        };
        let fields = match self {
            Self::Versions => vec![
                long("version"),
                Field::new(
                    "timestamp",
                    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                    false,
                ),
                Field::new_map(
                    "metadata",
                    "entries",
                    Field::new("key", DataType::Utf8, false),
                    Field::new("value", DataType::Utf8, true),
                    false,
                    false,
                ),
            ],
            Self::Tags => vec![
                Field::new("name", DataType::Utf8, false),
                Field::new("branch", DataType::Utf8, true),
                long("version"),
                Field::new("created_at", DataType::Int64, true),
                Field::new("updated_at", DataType::Int64, true),
                Field::new("manifest_size", DataType::Int32, true),
            ],
            Self::Branches => vec![
                Field::new("name", DataType::Utf8, false),
                Field::new("parent_branch", DataType::Utf8, true),
                long("parent_version"),
                long("created_at"),
                Field::new("manifest_size", DataType::Int32, true),
            ],
            Self::Indices => vec![
                Field::new("name", DataType::Utf8, false),
                strings("fields"),
                Field::new("index_type", DataType::Utf8, false),
                long("num_indexed_fragments"),
                long("num_indexed_rows"),
                long("num_unindexed_fragments"),
                long("num_unindexed_rows"),
            ],
            Self::Fragments => vec![
                long("id"),
                long("num_rows"),
                long("physical_rows"),
                long("num_deletions"),
                strings("data_files"),
                Field::new("deletion_file", DataType::Utf8, true),
                Field::new("has_row_ids", DataType::Boolean, false),
            ],
        };
        Arc::new(Schema::new(fields))
    }
}

/// The rows of metadata table `which` of `ds` (its version, its branch).
pub async fn read(ds: &Arc<Dataset>, which: MetadataTable) -> Result<RecordBatch> {
    let columns = match which {
        MetadataTable::Versions => versions(ds).await?,
        MetadataTable::Tags => tags(ds).await?,
        MetadataTable::Branches => branches(ds).await?,
        MetadataTable::Indices => indices(ds).await?,
        MetadataTable::Fragments => fragments(ds).await?,
    };
    Ok(RecordBatch::try_new(which.schema(), columns)?)
}

async fn versions(ds: &Dataset) -> Result<Vec<ArrayRef>> {
    let mut version = Int64Builder::new();
    let mut time = TimestampMicrosecondBuilder::new().with_timezone("UTC");
    // Arrow's default entry names, "key" and "value": Spark's Arrow reader looks for them.
    let mut metadata = MapBuilder::new(None, StringBuilder::new(), StringBuilder::new());
    for v in ds.versions().await? {
        version.append_value(v.version as i64);
        time.append_value(v.timestamp_nanos.div_euclid(1000));
        for (k, value) in &v.metadata {
            metadata.keys().append_value(k);
            metadata.values().append_value(value);
        }
        metadata.append(true)?;
    }
    Ok(vec![
        Arc::new(version.finish()),
        Arc::new(time.finish()),
        Arc::new(metadata.finish()),
    ])
}

/// Seconds since the epoch of a tag's RFC 3339 time (None when absent or unreadable: a
/// tag written without times is still listed).
fn epoch_seconds(stamp: Option<&str>) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(stamp?)
        .ok()
        .map(|t| t.timestamp())
}

async fn tags(ds: &Dataset) -> Result<Vec<ArrayRef>> {
    let (mut name, mut branch, mut version) = (
        StringBuilder::new(),
        StringBuilder::new(),
        Int64Builder::new(),
    );
    let (mut created, mut updated, mut size) = (
        Int64Builder::new(),
        Int64Builder::new(),
        Int32Builder::new(),
    );
    for (n, tag) in list_tags(&ds.root_storage()?).await? {
        name.append_value(n);
        branch.append_option(tag.branch.as_deref());
        version.append_value(tag.version as i64);
        created.append_option(epoch_seconds(tag.created_at.as_deref()));
        updated.append_option(epoch_seconds(tag.updated_at.as_deref()));
        size.append_option(tag.manifest_size.and_then(|s| i32::try_from(s).ok()));
    }
    Ok(vec![
        Arc::new(name.finish()),
        Arc::new(branch.finish()),
        Arc::new(version.finish()),
        Arc::new(created.finish()),
        Arc::new(updated.finish()),
        Arc::new(size.finish()),
    ])
}

async fn branches(ds: &Dataset) -> Result<Vec<ArrayRef>> {
    let (mut name, mut parent) = (StringBuilder::new(), StringBuilder::new());
    let (mut version, mut created) = (Int64Builder::new(), Int64Builder::new());
    let mut size = Int32Builder::new();
    for (n, b) in list_branches(&ds.root_storage()?).await? {
        name.append_value(n);
        parent.append_option(b.parent_branch.as_deref());
        version.append_value(b.parent_version as i64);
        created.append_value(b.create_at as i64);
        size.append_option(i32::try_from(b.manifest_size).ok());
    }
    Ok(vec![
        Arc::new(name.finish()),
        Arc::new(parent.finish()),
        Arc::new(version.finish()),
        Arc::new(created.finish()),
        Arc::new(size.finish()),
    ])
}

async fn indices(ds: &Arc<Dataset>) -> Result<Vec<ArrayRef>> {
    let segments = ds.index_segments()?;
    // Names in the order the manifest first lists them; an index is all its segments.
    let mut names: Vec<&str> = Vec::new();
    for s in segments.iter() {
        if !names.contains(&s.name.as_str()) {
            names.push(&s.name);
        }
    }
    let mut name = StringBuilder::new();
    let mut fields = ListBuilder::new(StringBuilder::new());
    let mut kind = StringBuilder::new();
    let mut counts: [Int64Builder; 4] = Default::default();
    for n in names {
        let parts: Vec<_> = segments.iter().filter(|s| s.name == n).collect();
        name.append_value(n);
        for &id in &parts[0].fields {
            fields.values().append_option(ds.schema.path_of(id));
        }
        fields.append(true);
        kind.append_value(parts[0].kind.to_ascii_lowercase());
        let mut covered = BTreeSet::new();
        let mut indexed_rows = 0;
        for s in &parts {
            covered.extend(s.live_fragments(ds.fragments()).iter().map(u64::from));
            indexed_rows += crate::index::stats::rows_covered(ds, s).await?;
        }
        let mut unindexed_rows = 0;
        let mut unindexed = 0;
        for f in ds.fragments().iter().filter(|f| !covered.contains(&f.id)) {
            unindexed += 1;
            unindexed_rows += ds.fragment_rows(f).await?;
        }
        for (b, v) in counts.iter_mut().zip([
            covered.len() as u64,
            indexed_rows,
            unindexed,
            unindexed_rows,
        ]) {
            b.append_value(v as i64);
        }
    }
    let mut out: Vec<ArrayRef> = vec![
        Arc::new(name.finish()),
        Arc::new(fields.finish()),
        Arc::new(kind.finish()),
    ];
    out.extend(counts.iter_mut().map(|b| Arc::new(b.finish()) as ArrayRef));
    Ok(out)
}

async fn fragments(ds: &Dataset) -> Result<Vec<ArrayRef>> {
    let mut id = Int64Builder::new();
    let (mut rows, mut physical, mut deleted) = (
        Int64Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
    );
    let mut files = ListBuilder::new(StringBuilder::new());
    let mut deletion = StringBuilder::new();
    let mut row_ids = BooleanBuilder::new();
    for f in ds.fragments() {
        let p = ds.physical_rows(f).await?;
        let d = ds.num_deleted(f).await?;
        id.append_value(f.id as i64);
        rows.append_value(p.saturating_sub(d) as i64);
        physical.append_value(p as i64);
        deleted.append_value(d as i64);
        for file in &f.files {
            files.values().append_value(&file.path);
        }
        files.append(true);
        deletion.append_option(
            f.deletion_file
                .as_ref()
                .map(|d| format!("_deletions/{}", deletion_file_name(f.id, d))),
        );
        row_ids.append_value(f.row_id_sequence.is_some());
    }
    Ok(vec![
        Arc::new(id.finish()),
        Arc::new(rows.finish()),
        Arc::new(physical.finish()),
        Arc::new(deleted.finish()),
        Arc::new(files.finish()),
        Arc::new(deletion.finish()),
        Arc::new(row_ids.finish()),
    ])
}

#[cfg(test)]
mod tests {
    use super::MetadataTable;

    #[test]
    fn names_any_case_and_schemas() {
        assert_eq!(
            MetadataTable::named("VERSIONS"),
            Some(MetadataTable::Versions)
        );
        assert_eq!(MetadataTable::named("snapshots"), None);
        assert_eq!(
            MetadataTable::named("branches"),
            Some(MetadataTable::Branches)
        );
        for t in MetadataTable::ALL {
            assert_eq!(MetadataTable::named(t.name()), Some(t));
            assert!(!t.schema().fields().is_empty());
        }
        let tags: Vec<_> = MetadataTable::Tags
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(
            tags,
            [
                "name",
                "branch",
                "version",
                "created_at",
                "updated_at",
                "manifest_size"
            ]
        );
    }
}
