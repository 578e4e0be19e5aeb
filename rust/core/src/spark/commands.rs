//! The statements lance_core's Spark SQL extension adds, with lance-spark's names, options
//! and output columns, so that its SQL runs unchanged: `OPTIMIZE` (compaction), `VACUUM`
//! (cleanup of old versions), `ALTER TABLE ... CREATE/DROP TAG`, `CREATE/DROP BRANCH` and
//! `DROP INDEX`, each run on the table's latest version, answering its output rows as one
//! Arrow batch; and `ALTER TABLE ... CREATE INDEX`, a job of tasks the JVM side runs on the
//! executors (`plan_index`, `build_index_task`, `commit_index`). (`SHOW TAGS`, `SHOW
//! BRANCHES` and `SHOW INDEXES` are metadata tables: `crate::query::metadata_tables`.)
use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};

use crate::dataset::Dataset;
use crate::dataset::VersionRef;
use crate::error::{Error, Result};
use crate::proto::table::IndexMetadata;
use crate::storage::Storage;
use crate::table::branches::{branch_exists, delete_branch};
use crate::table::cleanup::{cleanup_old_versions, CleanupOptions};
use crate::table::tags::{create_tag as record_tag, delete_tag, read_tag};
use crate::vector::kind::IvfParams;
use crate::vector::registry::{
    kind_from_user, scalar_kind_to_build, vector_kind_to_build, IndexKind,
};
use crate::vector::Metric;
use crate::write::compact::{compact_files, CompactionOptions};
use crate::write::index::{
    build_index_segment, commit_index_segments, replaced_segments, ScalarIndexParams, SegmentSpec,
    SegmentsCommit,
};
use crate::write::vector_index::{commit_staged, encode_part, stage_model};

/// A statement's `WITH (key = value, ...)` options, as text; each read once, and any left
/// unread is refused by `finish` (a misspelt option must not be silently ignored).
pub struct Options {
    /// The statement and its table, which errors name.
    statement: String,
    values: BTreeMap<String, String>,
}

impl Options {
    pub fn new(statement: String, values: impl IntoIterator<Item = (String, String)>) -> Self {
        let values = values
            .into_iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect();
        Options { statement, values }
    }

    fn parsed<T: std::str::FromStr>(&mut self, key: &str, what: &str) -> Result<Option<T>> {
        let Some(text) = self.values.remove(key) else {
            return Ok(None);
        };
        text.trim().parse().map(Some).map_err(|_| {
            Error::invalid(format!(
                "{}: option {key} must be {what}, not '{text}'",
                self.statement
            ))
        })
    }

    fn count(&mut self, key: &str) -> Result<Option<u64>> {
        self.parsed(key, "a whole number")
    }

    fn flag(&mut self, key: &str) -> Result<Option<bool>> {
        let Some(text) = self.values.remove(key) else {
            return Ok(None);
        };
        match text.trim().to_ascii_lowercase().as_str() {
            "true" => Ok(Some(true)),
            "false" => Ok(Some(false)),
            _ => Err(Error::invalid(format!(
                "{}: option {key} must be TRUE or FALSE, not '{text}'",
                self.statement
            ))),
        }
    }

    fn finish(self) -> Result<()> {
        match self.values.keys().next() {
            None => Ok(()),
            Some(key) => Err(Error::invalid(format!(
                "{}: unknown option '{key}'",
                self.statement
            ))),
        }
    }
}

/// One output row: columns named `names`, holding `values` (longs or strings).
fn one_row<T>(
    names: &[&str],
    values: &[T],
    column: impl Fn(&T) -> ArrayRef,
) -> Result<RecordBatch> {
    let columns = names.iter().zip(values).map(|(n, v)| (*n, column(v)));
    Ok(RecordBatch::try_from_iter(columns)?)
}

fn longs(names: &[&str], values: &[u64]) -> Result<RecordBatch> {
    one_row(names, values, |&v| {
        Arc::new(Int64Array::from(vec![v as i64]))
    })
}

fn strings(names: &[&str], values: &[&str]) -> Result<RecordBatch> {
    one_row(names, values, |&v| Arc::new(StringArray::from(vec![v])))
}

/// `OPTIMIZE t [WITH (...)]`: compact the small fragments and those with many deleted rows,
/// one new version. Options: `target_rows_per_fragment`, `max_bytes_per_file`,
/// `materialize_deletions`, `materialize_deletions_threshold`, `batch_size`; and, accepted
/// as pylance accepts them without effect here, `max_rows_per_group` (Lance 2.x files have
/// no row groups) and `num_threads` (the core's pools decide). Rows: fragments_removed,
/// fragments_added, files_removed, files_added.
pub async fn optimize(ds: &Arc<Dataset>, mut options: Options) -> Result<RecordBatch> {
    let mut opts = CompactionOptions::default();
    if let Some(n) = options.count("target_rows_per_fragment")? {
        opts.target_rows_per_fragment = n.max(1);
    }
    if let Some(n) = options.count("max_bytes_per_file")? {
        opts.max_bytes_per_file = Some(n.max(1));
    }
    if let Some(b) = options.flag("materialize_deletions")? {
        opts.materialize_deletions = b;
    }
    if let Some(t) = options.parsed("materialize_deletions_threshold", "a number")? {
        opts.materialize_deletions_threshold = t;
    }
    if let Some(n) = options.count("batch_size")? {
        opts.batch_size = (n as usize).max(1);
    }
    options.count("max_rows_per_group")?;
    options.count("num_threads")?;
    options.finish()?;
    let (_, m) = compact_files(ds, &opts).await?;
    longs(
        &[
            "fragments_removed",
            "fragments_added",
            "files_removed",
            "files_added",
        ],
        &[
            m.fragments_removed,
            m.fragments_added,
            m.files_removed,
            m.files_added,
        ],
    )
}

/// How old a version must be for `VACUUM` without `before_*` options to remove it:
/// pylance's `cleanup_old_versions` default.
const DEFAULT_RETENTION_NANOS: i64 = 14 * 24 * 3600 * 1_000_000_000;

/// `VACUUM t [WITH (...)]`: remove old versions and the files only they reference.
/// Options: `before_version` (versions below it may go), `before_timestamp_millis`,
/// `delete_unverified`, `error_if_tagged_old_versions`; neither `before_*` given: versions
/// older than two weeks. Rows: bytes_removed, old_versions.
pub async fn vacuum(ds: &Arc<Dataset>, mut options: Options) -> Result<RecordBatch> {
    let before_version = options.count("before_version")?;
    let before_millis: Option<i64> = options.parsed("before_timestamp_millis", "a whole number")?;
    let delete_unverified = options.flag("delete_unverified")?.unwrap_or(false);
    let error_if_tagged = options
        .flag("error_if_tagged_old_versions")?
        .unwrap_or(false);
    options.finish()?;
    let before_nanos = match (before_version, before_millis) {
        (None, None) => Some(now_nanos() - DEFAULT_RETENTION_NANOS),
        (_, millis) => millis.map(|m| m.saturating_mul(1_000_000)),
    };
    let opts = CleanupOptions {
        before_nanos,
        versions: before_version.map(|v| (0..v).collect()),
        delete_unverified,
        error_if_tagged_old_versions: error_if_tagged,
        retain_versions: None,
        delete_rate_limit: None,
    };
    let stats = cleanup_old_versions(ds.storage(), &opts).await?;
    longs(
        &["bytes_removed", "old_versions"],
        &[stats.bytes_removed, stats.old_versions],
    )
}

fn now_nanos() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// What `CREATE TAG / BRANCH ... AS OF` names: a version of main, a branch's latest or
/// given version, or a tag (nothing: main's latest version).
#[derive(Clone, Debug, Default)]
pub struct AsOf {
    pub branch: Option<String>,
    pub version: Option<u64>,
    pub tag: Option<String>,
}

impl AsOf {
    fn version_ref(&self) -> VersionRef {
        match &self.tag {
            Some(tag) => VersionRef::Tag(tag.clone()),
            None => VersionRef::Branch(self.branch.clone(), self.version),
        }
    }
}

/// A named reference to a version: a tag, or a branch (which starts there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reference {
    Tag,
    Branch,
}

impl Reference {
    async fn exists(self, root: &Storage, name: &str) -> Result<bool> {
        match self {
            Reference::Branch => branch_exists(root, name).await,
            Reference::Tag => match read_tag(root, name).await {
                Ok(_) => Ok(true),
                Err(Error::NotFound { .. }) => Ok(false),
                Err(e) => Err(e),
            },
        }
    }
}

/// `ALTER TABLE t CREATE TAG|BRANCH [IF NOT EXISTS] name [AS OF ...]`: a tag names that
/// version; a branch starts there (no data file copied). Rows: name.
pub async fn create_reference(
    ds: &Arc<Dataset>,
    kind: Reference,
    name: &str,
    if_not_exists: bool,
    source: &AsOf,
) -> Result<RecordBatch> {
    let root = ds.root_storage()?;
    if !(if_not_exists && kind.exists(&root, name).await?) {
        let from = source.version_ref();
        match kind {
            Reference::Tag => {
                let start = ds.checkout(from).await?;
                record_tag(&root, name, start.branch(), start.version()).await?;
            }
            Reference::Branch => {
                crate::write::clone::create_branch(ds, name, from, Default::default()).await?;
            }
        }
    }
    strings(&["name"], &[name])
}

/// `ALTER TABLE t DROP TAG|BRANCH [IF EXISTS] name` (without IF EXISTS, a missing one is
/// the core's error). Rows: name.
pub async fn drop_reference(
    ds: &Arc<Dataset>,
    kind: Reference,
    name: &str,
    if_exists: bool,
) -> Result<RecordBatch> {
    let root = ds.root_storage()?;
    if !if_exists || kind.exists(&root, name).await? {
        match kind {
            Reference::Tag => delete_tag(&root, name).await?,
            Reference::Branch => delete_branch(&root, name).await?,
        }
    }
    strings(&["name"], &[name])
}

/// `ALTER TABLE t DROP INDEX name`: the index leaves the manifest (one new version); its
/// files stay for older versions until `VACUUM`. Rows: index_name, status.
pub async fn drop_index(ds: &Arc<Dataset>, name: &str) -> Result<RecordBatch> {
    crate::write::index::drop_index(ds, name).await?;
    strings(&["index_name", "status"], &[name, "dropped"])
}

/// `fragments` ((id, rows) pairs) in at most `n` groups of about equal rows, for the tasks
/// of a distributed build: largest first, each into the lightest group; never an empty
/// group; ids sorted in each.
pub fn balanced_groups(fragments: &[(u64, u64)], n: usize) -> Vec<Vec<u64>> {
    let n = n.clamp(1, fragments.len().max(1));
    let mut order = fragments.to_vec();
    order.sort_by_key(|&(id, rows)| (std::cmp::Reverse(rows), id));
    let mut groups: Vec<(u64, Vec<u64>)> = vec![(0, vec![]); n];
    for (id, rows) in order {
        // The lightest group; the first of equals, as a heap of (load, index) pops it.
        let lightest = (0..n).min_by_key(|&i| (groups[i].0, i)).unwrap_or(0);
        groups[lightest].0 += rows;
        groups[lightest].1.push(id);
    }
    groups
        .into_iter()
        .filter(|(_, g)| !g.is_empty())
        .map(|(_, mut g)| {
            g.sort_unstable();
            g
        })
        .collect()
}

/// An index build that `ALTER TABLE t CREATE INDEX name USING method (column) [WITH (...)]`
/// asks for, checked on the driver before any task runs: what each task builds (`build`,
/// on `column`) and the fragments of each task (`tasks`).
pub struct IndexJob {
    pub column: String,
    pub build: IndexBuild,
    pub tasks: Vec<Vec<u64>>,
}

/// What the tasks of a `CREATE INDEX` job build.
pub enum IndexBuild {
    /// Each task one segment of a scalar index over its fragments.
    Scalar(ScalarIndexParams),
    /// An IVF index: the model trained on the driver, staged under `_indices/<model>/`
    /// (None for a table without rows, whose index is no segment at all); each task
    /// encodes its fragments' vectors with it as one part, and the driver joins the parts
    /// into one segment (`commit_vector_index`).
    Vector {
        params: IvfParams,
        model: Option<String>,
    },
}

/// Plan `CREATE INDEX` over `parallelism` tasks. Methods: the kinds lance_core builds, on
/// one column; an index of the same name is replaced (as lance-spark). Options, by
/// lance-spark's and pylance's names: btree `zone_size` (and `build_mode = 'fragment'`, the
/// only mode), zonemap `rows_per_zone`, bloomfilter `number_of_items` and `probability`;
/// for ivf_flat, ivf_pq and ivf_sq (`vector_params`), `num_segments` (the tasks; default
/// `parallelism`), the model's options, and the model trained here.
pub async fn plan_index(
    ds: &Dataset,
    name: &str,
    method: &str,
    columns: &[String],
    mut options: Options,
    parallelism: usize,
) -> Result<IndexJob> {
    let uri = ds.uri();
    let vector = matches!(kind_from_user(method), Some(IndexKind::Vector(_)));
    let [column] = columns else {
        return Err(Error::invalid(format!(
            "{uri}: a {} index is on one column, not {}",
            match kind_from_user(method) {
                Some(IndexKind::Scalar(k)) => k.name(),
                Some(IndexKind::Vector(k)) => k.name(),
                None => method,
            },
            columns.len()
        )));
    };
    let mut fragments = Vec::new();
    for f in ds.fragments() {
        fragments.push((f.id, ds.physical_rows(f).await?));
    }
    if vector {
        let params = vector_params(ds, method, column, &mut options)?;
        let segments = options.count("num_segments")?.map(|n| n as usize);
        if segments == Some(0) {
            return Err(Error::invalid(format!(
                "{}: num_segments must be above 0",
                options.statement
            )));
        }
        options.finish()?;
        let tasks = balanced_groups(&fragments, segments.unwrap_or(parallelism));
        let rows: u64 = fragments.iter().map(|(_, r)| r).sum();
        let model = match rows {
            0 => None,
            _ => {
                let uuid = uuid::Uuid::new_v4().to_string();
                stage_model(ds, column, &params, &uuid).await?;
                Some(uuid)
            }
        };
        // A table without rows: no model, no task, no segment.
        let tasks = if model.is_some() { tasks } else { vec![] };
        return Ok(IndexJob {
            column: column.clone(),
            build: IndexBuild::Vector { params, model },
            tasks,
        });
    }
    let kind = scalar_kind_to_build(uri, method)?;
    let (size_option, takes_probability) = kind.params_names();
    let page_rows = match size_option {
        Some(option) => options.count(option)?,
        None => None,
    };
    let probability: Option<f64> = match takes_probability {
        true => options.parsed("probability", "a number")?,
        false => None,
    };
    // lance-spark's BTREE build modes: fragments indexed in parallel is the one here.
    if let Some(mode) = options.values.remove("build_mode") {
        if !mode.eq_ignore_ascii_case("fragment") {
            return Err(Error::invalid(format!(
                "{}: build_mode '{mode}' is not supported; fragments are indexed in \
                 parallel ('fragment')",
                options.statement
            )));
        }
    }
    options.finish()?;
    let params = ScalarIndexParams {
        kind,
        name: Some(name.to_string()),
        replace: true,
        page_rows,
        probability,
    };
    let spec = SegmentSpec::new(ds, column, &params)?;
    replaced_segments(ds, &spec.name, true)?;
    Ok(IndexJob {
        column: column.clone(),
        build: IndexBuild::Scalar(params),
        tasks: balanced_groups(&fragments, parallelism),
    })
}

/// An IVF build's parameters from `CREATE INDEX`'s options, by lance-spark's names:
/// `distance_type` (l2, cosine, dot; default l2), `num_partitions` (default pylance's:
/// about 8,192 rows each), `sample_rate`, `max_iters`, and for PQ `num_sub_vectors`
/// (default: dimension / 16, else / 8, as lance-spark) and `num_bits`, for SQ `num_bits`.
/// The same options give the same parameters, so the commit reads them again.
pub fn vector_params(
    ds: &Dataset,
    method: &str,
    column: &str,
    options: &mut Options,
) -> Result<IvfParams> {
    let kind = vector_kind_to_build(ds.uri(), method)?;
    let metric = match options.values.remove("distance_type") {
        Some(m) => Metric::parse(&m)
            .map_err(|e| Error::invalid(format!("{}: distance_type: {e}", options.statement)))?,
        None => Metric::L2,
    };
    let mut params = IvfParams::new(kind, metric);
    params.num_partitions = options.count("num_partitions")?.map(|n| n as usize);
    if let Some(n) = options.count("sample_rate")? {
        params.sample_rate = n as usize;
    }
    if let Some(n) = options.count("max_iters")? {
        params.max_iters = n as usize;
    }
    if let Some(n) = options.count("num_bits")? {
        params.num_bits = n as u32;
    }
    params.num_sub_vectors = options.count("num_sub_vectors")?.map(|n| n as usize);
    if kind.name().contains("PQ") && params.num_sub_vectors.is_none() {
        let dim = match ds
            .arrow_schema
            .field_with_name(column)
            .map(|f| f.data_type())
        {
            Ok(arrow_schema::DataType::FixedSizeList(_, d)) => *d as usize,
            _ => 0,
        };
        params.num_sub_vectors = [16, 8]
            .iter()
            .find(|&&d| dim > 0 && dim % d == 0)
            .map(|d| dim / d);
        if params.num_sub_vectors.is_none() && dim > 0 {
            return Err(Error::invalid(format!(
                "{}: num_sub_vectors is needed: the dimension {dim} divides by neither 16 nor 8",
                options.statement
            )));
        }
    }
    params.seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    Ok(params)
}

/// A task of a vector `CREATE INDEX` job: the vectors of `fragments` encoded with the
/// model staged under `_indices/<model>/`, written beside it as part `part`.
pub async fn encode_vector_task(
    ds: &Dataset,
    column: &str,
    model: &str,
    fragments: &[u64],
    part: u32,
) -> Result<()> {
    encode_part(ds, column, model, fragments, None, part).await
}

/// The driver's end of a vector `CREATE INDEX` job: the staged model and its `parts`
/// joined into one segment of index `name` (replacing one of that name), one version; a
/// table without rows gets none. Rows: fragments_indexed, index_name.
pub async fn commit_vector_index(
    ds: &Dataset,
    name: &str,
    column: &str,
    params: &IvfParams,
    model: Option<&str>,
    parts: u32,
) -> Result<RecordBatch> {
    let fragments = match model {
        None => 0,
        Some(model) => {
            commit_staged(ds, column, Some(name), true, params, model, parts).await?;
            ds.fragments().len() as u64
        }
    };
    index_job_rows(fragments, name)
}

/// One task of a `CREATE INDEX` job: the segment over `fragments`, written under
/// `_indices/<uuid>/`, not committed; its metadata.
pub async fn build_index_task(
    ds: &Dataset,
    column: &str,
    params: &ScalarIndexParams,
    fragments: &[u64],
    uuid: &str,
) -> Result<IndexMetadata> {
    let spec = SegmentSpec::new(ds, column, params)?;
    build_index_segment(ds, &spec, fragments, Some(uuid)).await
}

/// The driver's end of a `CREATE INDEX` job: every task's segment committed as index
/// `name` (replacing one of that name), one version. Rows: fragments_indexed, index_name.
pub async fn commit_index(
    ds: &Dataset,
    name: &str,
    segments: Vec<IndexMetadata>,
) -> Result<RecordBatch> {
    let fragments: u64 = segments
        .iter()
        .map(|s| {
            roaring::RoaringBitmap::deserialize_from(&s.fragment_bitmap[..]).map_or(0, |b| b.len())
        })
        .sum();
    commit_index_segments(
        ds,
        segments,
        SegmentsCommit::Build {
            name,
            replace: true,
        },
    )
    .await?;
    index_job_rows(fragments, name)
}

/// The output row of `CREATE INDEX`, lance-spark's columns.
fn index_job_rows(fragments: u64, name: &str) -> Result<RecordBatch> {
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "fragments_indexed",
            Arc::new(Int64Array::from(vec![fragments as i64])),
        ),
        ("index_name", Arc::new(StringArray::from(vec![name]))),
    ];
    Ok(RecordBatch::try_from_iter(columns)?)
}

#[cfg(test)]
mod tests {
    use super::Options;

    fn options(pairs: &[(&str, &str)]) -> Options {
        let values = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        Options::new("OPTIMIZE t".into(), values)
    }

    #[test]
    fn options_are_read_once_and_leftovers_refused() {
        let mut o = options(&[
            ("Target_Rows_Per_Fragment", "10"),
            ("materialize_deletions", "TRUE"),
        ]);
        assert_eq!(o.count("target_rows_per_fragment").unwrap(), Some(10));
        assert_eq!(o.flag("materialize_deletions").unwrap(), Some(true));
        assert_eq!(o.count("batch_size").unwrap(), None);
        o.finish().unwrap();

        let o = options(&[("target_rows", "10")]);
        let e = o.finish().unwrap_err().to_string();
        assert!(
            e.contains("OPTIMIZE t: unknown option 'target_rows'"),
            "{e}"
        );
    }

    #[test]
    fn groups_balance_rows_and_keep_every_fragment() {
        let frags = [(0, 10), (1, 50), (2, 30), (3, 30), (4, 5)];
        let groups = super::balanced_groups(&frags, 2);
        assert_eq!(groups, vec![vec![0, 1, 4], vec![2, 3]]);
        assert_eq!(super::balanced_groups(&frags[..1], 4), vec![vec![0]]);
        assert!(super::balanced_groups(&[], 3).is_empty());
    }

    #[test]
    fn bad_values_name_the_option_and_value() {
        let e = options(&[("batch_size", "many")])
            .count("batch_size")
            .unwrap_err();
        assert!(e
            .to_string()
            .contains("option batch_size must be a whole number, not 'many'"));
        let e = options(&[("materialize_deletions", "yes")])
            .flag("materialize_deletions")
            .unwrap_err();
        assert!(e.to_string().contains("must be TRUE or FALSE, not 'yes'"));
    }
}
