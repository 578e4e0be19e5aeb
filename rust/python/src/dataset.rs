//! `_Dataset`: a dataset at one version, as the Python facade sees it.
use crate::ivf_params::PyIvfParams;
use lance_core::write::vector_index;
use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::RecordBatchReader;
use lance_core::blob::BlobRead;
use lance_core::dataset::{Dataset, VersionRef};
use lance_core::query::order::ColumnOrdering;
use lance_core::scan::ScanOptions;
use lance_core::Query;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::arrow_export::{PyArrowBatch, PyArrowSchema, PyBatchIterator};
use crate::errors::{guard, IntoPyResult};
use crate::runtime::{block_on, runtime};
use crate::session::PySession;
use lance_core::scan::Projection;

/// (version, commit time in ns since the epoch, summary)
type VersionRow = (u64, i64, HashMap<String, String>);

/// A vector index as a plan names it: name, kind, metric, segment uuids.
type VectorIndexPlan = (String, String, String, Vec<String>);

#[pyclass(name = "_Dataset", module = "lance_core._lance_core", frozen)]
pub struct PyDataset {
    pub(crate) inner: Arc<Dataset>,
}

/// Named SQL expressions from Python, parsed.
fn parse_projection(
    exprs: Option<Vec<(String, String)>>,
) -> PyResult<Option<Vec<(String, lance_core::expr::Expr)>>> {
    exprs
        .map(|exprs| {
            exprs
                .into_iter()
                .map(|(name, sql)| Ok((name, lance_core::expr::parse_expression(&sql)?)))
                .collect::<lance_core::Result<Vec<_>>>()
        })
        .transpose()
        .py()
}

/// A version given from Python: an int is a version number, a str a tag name, a tuple
/// (branch or None, version or None) a branch's version (None: its latest).
fn version_ref(v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<VersionRef>> {
    let Some(v) = v.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    if let Ok(tag) = v.extract::<String>() {
        return Ok(Some(VersionRef::Tag(tag)));
    }
    if let Ok((branch, version)) = v.extract::<(Option<String>, Option<Bound<'_, PyAny>>)>() {
        let number = match version_ref(version.as_ref())? {
            Some(VersionRef::Number(n)) => Some(n),
            None => None,
            Some(_) => {
                return Err(crate::errors::raise(
                    v.py(),
                    "InvalidInputError",
                    "a (branch, version) reference takes a version number or None".to_string(),
                ))
            }
        };
        return Ok(Some(VersionRef::Branch(branch, number)));
    }
    // Detached versions use the top bit: a u64 first.
    if let Ok(n) = v.extract::<u64>() {
        return Ok(Some(VersionRef::Number(n)));
    }
    let n: i64 = v.extract()?;
    if n < 0 {
        return Err(crate::errors::raise(
            v.py(),
            "InvalidInputError",
            format!("version must be non-negative, got {n}"),
        ));
    }
    Ok(Some(VersionRef::Number(n as u64)))
}

impl From<Dataset> for PyDataset {
    fn from(ds: Dataset) -> Self {
        PyDataset {
            inner: Arc::new(ds),
        }
    }
}

impl PyDataset {
    /// The table's root store, where tags and branches are recorded.
    fn storage(&self) -> PyResult<lance_core::storage::Storage> {
        self.inner.root_storage().py()
    }
}

/// Run `fut` (an operation that opens or commits a dataset) with the GIL released, and
/// hand Python the dataset it returns.
fn dataset_of<F>(py: Python<'_>, fut: F) -> PyResult<PyDataset>
where
    F: std::future::Future<Output = lance_core::error::Result<Dataset>> + Send,
{
    Ok(PyDataset::from(block_on(py, fut).py()?))
}

/// Compaction metrics as Python gets them: fragments removed and added, files removed and
/// added.
fn metrics_tuple(m: &lance_core::write::compact::CompactionMetrics) -> (u64, u64, u64, u64) {
    (
        m.fragments_removed,
        m.fragments_added,
        m.files_removed,
        m.files_added,
    )
}

/// One alteration from Python: path, new name, nullable, and an Arrow schema whose only
/// field has the new type.
type PyAlteration<'py> = (
    String,
    Option<String>,
    Option<bool>,
    Option<Bound<'py, PyAny>>,
);

/// A cleanup's statistics: (bytes, versions, data files, transaction files, index files,
/// deletion files, failed deletes).
type CleanupStatsRow = (u64, u64, u64, u64, u64, u64, u64);
/// (read version, statistics, files as (path, kind, unverified, size), branches as
/// (name, version))
type CleanupExplanationRow = (
    u64,
    CleanupStatsRow,
    Vec<(String, &'static str, bool, u64)>,
    Vec<(String, u64)>,
);

/// ((inserted, updated, deleted), data files written, their bytes, deletion files written)
type MergeAnalysisRow = ((u64, u64, u64), u64, u64, u64);

/// A cleanup's choice of versions as Python's `_cleanup_args` gives it: (before, in ns
/// since the epoch; how many newest stay; delete_unverified; error_if_tagged_old_versions;
/// the versions that may go; deletes per second at most).
#[derive(FromPyObject)]
struct CleanupArgs(
    Option<i64>,
    Option<u64>,
    bool,
    bool,
    Option<Vec<u64>>,
    Option<u64>,
);

impl CleanupArgs {
    fn options(self) -> lance_core::table::cleanup::CleanupOptions {
        let CleanupArgs(
            before_nanos,
            retain_versions,
            delete_unverified,
            error_if_tagged,
            versions,
            delete_rate_limit,
        ) = self;
        lance_core::table::cleanup::CleanupOptions {
            before_nanos,
            retain_versions,
            delete_unverified,
            error_if_tagged_old_versions: error_if_tagged,
            versions: versions.map(|v| v.into_iter().collect()),
            delete_rate_limit,
        }
    }
}

/// Compaction options as Python's `optimize._options` gives them (a dict with keys
/// target_rows_per_fragment, materialize_deletions, materialize_deletions_threshold,
/// batch_size, max_bytes_per_file); None: not given.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct CompactionArgs {
    target_rows_per_fragment: u64,
    materialize_deletions: bool,
    materialize_deletions_threshold: f64,
    batch_size: Option<usize>,
    max_bytes_per_file: Option<u64>,
}

impl CompactionArgs {
    fn options(self) -> lance_core::write::compact::CompactionOptions {
        let defaults = lance_core::write::compact::CompactionOptions::default();
        lance_core::write::compact::CompactionOptions {
            target_rows_per_fragment: self.target_rows_per_fragment.max(1),
            materialize_deletions: self.materialize_deletions,
            materialize_deletions_threshold: self.materialize_deletions_threshold,
            batch_size: self.batch_size.map_or(defaults.batch_size, |b| b.max(1)),
            max_bytes_per_file: self.max_bytes_per_file.map(|b| b.max(1)),
            ..defaults
        }
    }
}

fn stats_row(s: &lance_core::table::cleanup::CleanupStats) -> CleanupStatsRow {
    (
        s.bytes_removed,
        s.old_versions,
        s.data_files_removed,
        s.transaction_files_removed,
        s.index_files_removed,
        s.deletion_files_removed,
        s.failed_deletes,
    )
}

#[pymethods]
impl PyDataset {
    #[staticmethod]
    #[pyo3(signature = (uri, version=None, storage_options=None, session=None))]
    fn open(
        py: Python<'_>,
        uri: String,
        version: Option<Bound<'_, PyAny>>,
        storage_options: Option<HashMap<String, String>>,
        session: Option<PyRef<'_, PySession>>,
    ) -> PyResult<Self> {
        guard(|| {
            let version = version_ref(version.as_ref())?;
            let ds = block_on(
                py,
                Dataset::open(&uri, version, storage_options.unwrap_or_default()),
            )
            .py()?;
            let ds = match session {
                Some(s) => ds.with_session(s.inner.clone()),
                None => ds,
            };
            Ok(PyDataset {
                inner: Arc::new(ds),
            })
        })
    }

    /// This version, using `session`'s caches.
    fn with_session(&self, session: PyRef<'_, PySession>) -> Self {
        let ds = (*self.inner).clone().with_session(session.inner.clone());
        PyDataset {
            inner: Arc::new(ds),
        }
    }

    /// The requests made through this dataset's store (shared with the versions reached
    /// from it): (read iops, read bytes, write iops, write bytes); `reset` starts the
    /// counts again from zero.
    fn io_stats(&self, reset: bool) -> (u64, u64, u64, u64) {
        let stats = self.inner.storage().io_stats();
        let c = if reset {
            stats.take()
        } else {
            stats.snapshot()
        };
        (c.read_iops, c.read_bytes, c.write_iops, c.write_bytes)
    }

    /// The session whose caches this dataset uses.
    fn session(&self) -> PySession {
        PySession {
            inner: self.inner.session().clone(),
        }
    }

    /// The Lance file `name` in directory `dir` as a table of one fragment (index files,
    /// standalone files).
    #[staticmethod]
    #[pyo3(signature = (dir, name, storage_options=None))]
    fn open_file(
        py: Python<'_>,
        dir: String,
        name: String,
        storage_options: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        guard(|| {
            let options = storage_options.unwrap_or_default();
            dataset_of(py, lance_core::file_table::open(&dir, &name, &options))
        })
    }

    #[getter]
    fn uri(&self) -> String {
        self.inner.uri().to_string()
    }

    #[getter]
    fn version(&self) -> u64 {
        self.inner.version()
    }

    /// Whether rows have stable ids (kept when rows move, as by update or compaction).
    #[getter]
    fn has_stable_row_ids(&self) -> bool {
        self.inner.has_stable_row_ids()
    }

    #[getter]
    fn data_storage_version(&self) -> String {
        self.inner.data_storage_version()
    }

    #[getter]
    fn schema(&self) -> PyArrowSchema {
        PyArrowSchema(self.inner.arrow_schema.clone())
    }

    /// This version's schema with its field ids (`lance_core.schema.LanceSchema`'s bytes).
    fn lance_schema(&self) -> Vec<u8> {
        crate::schema::encode(&self.inner.schema)
    }

    /// This version's schema with the fields of `schema` it lacks added, numbered as a
    /// Merge commit numbers them (what `merge_columns` hands back to commit).
    fn merged_schema(&self, schema: Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
        guard(|| {
            let schema = crate::arrow_import::import_schema(&schema)?;
            let merged = lance_core::write::columns::merged_schema(&self.inner, &schema).py()?;
            Ok(crate::schema::encode(&merged))
        })
    }

    /// The unenforced primary key's columns by dotted path, in key order (empty: none).
    fn primary_key(&self) -> Vec<String> {
        lance_core::table::primary_key::key_paths(&self.inner.schema)
    }

    /// Field ids by dotted field path ("a", "s.x", "l.item").
    fn field_ids(&self) -> Vec<(String, i32)> {
        fn walk(
            f: &lance_core::table::schema::LanceField,
            prefix: &str,
            out: &mut Vec<(String, i32)>,
        ) {
            let name = if prefix.is_empty() {
                f.name.clone()
            } else {
                format!("{prefix}.{}", f.name)
            };
            out.push((name.clone(), f.id));
            for c in &f.children {
                walk(c, &name, out);
            }
        }
        let mut out = vec![];
        for f in &self.inner.schema.fields {
            walk(f, "", &mut out);
        }
        out
    }

    fn latest_version(&self, py: Python<'_>) -> PyResult<u64> {
        guard(|| block_on(py, self.inner.latest_version()).py())
    }

    /// Check the version's fragments, files and indices hold together (`Dataset::validate`),
    /// or only fragment `fragment_id`'s files.
    #[pyo3(signature = (fragment_id=None))]
    fn validate(&self, py: Python<'_>, fragment_id: Option<u64>) -> PyResult<()> {
        guard(|| {
            let Some(id) = fragment_id else {
                return block_on(py, self.inner.validate()).py();
            };
            let ds = &self.inner;
            block_on(py, async move {
                ds.validate_fragment(ds.fragment_or_err(id)?).await
            })
            .py()
        })
    }

    /// Another version (a number or a tag), opened with this one's storage options.
    fn checkout(&self, py: Python<'_>, version: Bound<'_, PyAny>) -> PyResult<Self> {
        guard(|| {
            let Some(version) = version_ref(Some(&version))? else {
                return Ok(PyDataset {
                    inner: self.inner.clone(),
                });
            };
            Ok(PyDataset {
                inner: Arc::new(block_on(py, self.inner.checkout(version)).py()?),
            })
        })
    }

    /// How the indices answer `filter`: a line per condition an index answered, and the
    /// fragments left to scan.
    fn explain_filter(&self, py: Python<'_>, filter: String) -> PyResult<(Vec<String>, Vec<u64>)> {
        guard(|| {
            let ds = self.inner.clone();
            let filter = lance_core::expr::parse(&filter).py()?;
            block_on(py, async move {
                let (selection, lines) =
                    lance_core::index::search::select_explained(&ds, &filter).await?;
                let scanned = ds
                    .fragments()
                    .iter()
                    .map(|f| f.id)
                    .filter(|&id| selection.as_ref().and_then(|s| s.part(id)).is_none())
                    .collect();
                Ok((lines, scanned))
            })
            .py()
        })
    }

    /// The fragments where the indices find, exactly, that no row passes `filter` (a
    /// distributed read plans no task for them).
    fn fragments_without_matches(&self, py: Python<'_>, filter: String) -> PyResult<Vec<u64>> {
        guard(|| {
            let ds = self.inner.clone();
            let filter = lance_core::expr::parse(&filter).py()?;
            block_on(py, async move {
                lance_core::index::search::fragments_without_matches(&ds, &filter).await
            })
            .py()
        })
    }

    /// The index segments the manifest lists, one dict each (see `table::index_segments::IndexSegment`).
    fn index_segments<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        guard(|| {
            let ds = &self.inner;
            let name = ds.storage().display(&ds.location.path);
            let all = lance_core::table::index_segments::segments(
                &ds.manifest,
                &ds.manifest_bytes,
                &name,
            )
            .py()?;
            all.iter()
                .map(|s| {
                    let d = PyDict::new(py);
                    d.set_item("name", &s.name)?;
                    d.set_item("uuid", &s.uuid)?;
                    d.set_item("type", &s.kind)?;
                    d.set_item("type_url", &s.type_url)?;
                    d.set_item("fields", &s.fields)?;
                    let names: Vec<Option<String>> =
                        s.fields.iter().map(|&id| ds.schema.path_of(id)).collect();
                    d.set_item("field_names", names)?;
                    d.set_item("dataset_version", s.dataset_version)?;
                    let ids = s.fragments.as_ref().map(|f| f.iter().collect::<Vec<u32>>());
                    d.set_item("fragment_ids", ids)?;
                    let live: Vec<u32> = s.live_fragments(ds.fragments()).iter().collect();
                    d.set_item("live_fragment_ids", live)?;
                    d.set_item("index_version", s.index_version)?;
                    d.set_item("created_at_ms", s.created_at_ms)?;
                    d.set_item("base_id", s.base_id)?;
                    d.set_item("files", &s.files)?;
                    Ok(d)
                })
                .collect()
        })
    }

    /// [(version, timestamp in ns since the epoch, summary metadata)]
    fn versions(&self, py: Python<'_>) -> PyResult<Vec<VersionRow>> {
        guard(|| {
            let v = block_on(py, self.inner.versions()).py()?;
            Ok(v.into_iter()
                .map(|v| {
                    (
                        v.version,
                        v.timestamp_nanos,
                        v.metadata.into_iter().collect(),
                    )
                })
                .collect())
        })
    }

    /// The versions of this line, from a listing alone (no manifest is read).
    fn version_numbers(&self, py: Python<'_>) -> PyResult<Vec<u64>> {
        guard(|| block_on(py, self.inner.version_numbers()).py())
    }

    /// This version as one row of `versions()`, from the manifest already loaded.
    fn current_version(&self) -> VersionRow {
        let v = self.inner.version_info();
        (
            v.version,
            v.timestamp_nanos,
            v.metadata.into_iter().collect(),
        )
    }

    #[pyo3(signature = (fragment_id=None, filter=None))]
    fn count_rows(
        &self,
        py: Python<'_>,
        fragment_id: Option<u64>,
        filter: Option<String>,
    ) -> PyResult<u64> {
        guard(|| {
            let ds = self.inner.clone();
            let filter = filter
                .filter(|f| !f.trim().is_empty())
                .map(|f| lance_core::expr::parse(&f))
                .transpose()
                .py()?;
            block_on(py, lance_core::query::count_rows(ds, filter, fragment_id)).py()
        })
    }

    /// Delete the rows matching `predicate`; returns the dataset at the new version.
    /// Commit this version as the newest (pylance's `restore`); returns the new version.
    fn restore(&self, py: Python<'_>) -> PyResult<Self> {
        guard(|| {
            Ok(PyDataset::from(
                block_on(py, lance_core::write::restore(&self.inner)).py()?,
            ))
        })
    }

    /// A new table at `target` made from this version: shallow (referring to this
    /// table's files) or deep (with copies of them). Returns the clone.
    #[pyo3(signature = (target, shallow, storage_options=None, transaction_properties=None))]
    fn clone_to(
        &self,
        py: Python<'_>,
        target: String,
        shallow: bool,
        storage_options: Option<HashMap<String, String>>,
        transaction_properties: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        guard(|| {
            let options = storage_options.unwrap_or_else(|| self.inner.storage_options().clone());
            let clone = lance_core::write::clone::clone_dataset(
                &self.inner,
                &target,
                shallow,
                options,
                transaction_properties.unwrap_or_default(),
            );
            Ok(PyDataset::from(block_on(py, clone).py()?))
        })
    }

    /// Create branch `name` from `reference` (see `version_ref`; None: this version) and
    /// open it.
    #[pyo3(signature = (name, reference=None, transaction_properties=None))]
    fn create_branch(
        &self,
        py: Python<'_>,
        name: String,
        reference: Option<Bound<'_, PyAny>>,
        transaction_properties: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        guard(|| {
            let from = version_ref(reference.as_ref())?.unwrap_or_else(|| {
                let branch = self.inner.branch().map(str::to_string);
                VersionRef::Branch(branch, Some(self.inner.version()))
            });
            let ds = self.inner.clone();
            let props = transaction_properties.unwrap_or_default();
            dataset_of(py, async move {
                lance_core::write::clone::create_branch(&ds, &name, from, props).await
            })
        })
    }

    /// The branch this version is on (None: main).
    #[getter]
    fn branch(&self) -> Option<String> {
        self.inner.branch().map(str::to_string)
    }

    /// Branches: (name, parent branch, lineage, parent version, created (unix s),
    /// manifest size, metadata).
    #[allow(clippy::type_complexity)]
    fn branch_list(
        &self,
        py: Python<'_>,
    ) -> PyResult<
        Vec<(
            String,
            Option<String>,
            Vec<(u64, String)>,
            u64,
            u64,
            u64,
            Vec<(String, String)>,
        )>,
    > {
        guard(|| {
            let root = self.storage()?;
            let all = block_on(py, lance_core::table::branches::list_branches(&root)).py()?;
            Ok(all
                .into_iter()
                .map(|(name, c)| {
                    (
                        name,
                        c.parent_branch,
                        c.identifier.version_mapping,
                        c.parent_version,
                        c.create_at,
                        c.manifest_size,
                        c.metadata.into_iter().collect(),
                    )
                })
                .collect())
        })
    }

    /// Delete branch `name` (refused while branches made from it exist).
    fn branch_delete(&self, py: Python<'_>, name: String) -> PyResult<()> {
        guard(|| {
            let root = self.storage()?;
            block_on(py, async move {
                lance_core::table::branches::delete_branch(&root, &name).await
            })
            .py()
        })
    }

    /// Tags: name → (branch, version, created at, updated at, manifest size).
    #[allow(clippy::type_complexity)]
    fn tag_list(
        &self,
        py: Python<'_>,
    ) -> PyResult<
        Vec<(
            String,
            Option<String>,
            u64,
            Option<String>,
            Option<String>,
            Option<u64>,
            Vec<(String, String)>,
        )>,
    > {
        guard(|| {
            let storage = self.storage()?;
            let tags = block_on(py, lance_core::table::tags::list_tags(&storage)).py()?;
            Ok(tags
                .into_iter()
                .map(|(n, t)| {
                    (
                        n,
                        t.branch,
                        t.version,
                        t.created_at,
                        t.updated_at,
                        t.manifest_size,
                        t.metadata.into_iter().collect(),
                    )
                })
                .collect())
        })
    }

    /// Create (`update=false`) or move (`update=true`) tag `name` to `branch`'s (None:
    /// main's) `version`.
    #[pyo3(signature = (name, branch, version, update))]
    fn tag_set(
        &self,
        py: Python<'_>,
        name: String,
        branch: Option<String>,
        version: u64,
        update: bool,
    ) -> PyResult<()> {
        use lance_core::table::tags::{create_tag, update_tag};
        guard(|| {
            let storage = self.storage()?;
            block_on(py, async move {
                let branch = branch.as_deref();
                match update {
                    true => update_tag(&storage, &name, branch, version).await,
                    false => create_tag(&storage, &name, branch, version).await,
                }
            })
            .py()
        })
    }

    fn tag_delete(&self, py: Python<'_>, name: String) -> PyResult<()> {
        guard(|| {
            let storage = self.storage()?;
            block_on(py, async move {
                lance_core::table::tags::delete_tag(&storage, &name).await
            })
            .py()
        })
    }

    /// Remove old versions and the files only they reference; returns the statistics.
    fn cleanup_old_versions(&self, py: Python<'_>, args: CleanupArgs) -> PyResult<CleanupStatsRow> {
        use lance_core::table::cleanup::cleanup_old_versions;
        guard(|| {
            let storage = self.inner.storage().clone();
            let opts = args.options();
            let s = block_on(
                py,
                async move { cleanup_old_versions(&storage, &opts).await },
            )
            .py()?;
            Ok(stats_row(&s))
        })
    }

    /// What `cleanup_old_versions` would remove: (read version, statistics, the files as
    /// (path, kind, unverified, size), the branches kept as (name, version)).
    fn explain_cleanup(
        &self,
        py: Python<'_>,
        args: CleanupArgs,
    ) -> PyResult<CleanupExplanationRow> {
        use lance_core::table::cleanup::plan_cleanup;
        guard(|| {
            let storage = self.inner.storage().clone();
            let opts = args.options();
            let plan = block_on(py, async move { plan_cleanup(&storage, &opts).await }).py()?;
            let files = plan
                .files
                .iter()
                .chain(&plan.manifests)
                .map(|c| (c.path.to_string(), c.kind.name(), c.unverified, c.size))
                .collect();
            Ok((
                plan.read_version,
                stats_row(&plan.stats()),
                files,
                plan.referenced_branches,
            ))
        })
    }

    /// Compact this version's small fragments and those with many deletions (one commit).
    fn compact_files(
        &self,
        py: Python<'_>,
        options: CompactionArgs,
    ) -> PyResult<(Self, (u64, u64, u64, u64))> {
        use lance_core::write::compact::compact_files;
        guard(|| {
            let opts = options.options();
            let ds = self.inner.clone();
            let (new, m) = block_on(py, async move { compact_files(&ds, &opts).await }).py()?;
            Ok((PyDataset::from(new), metrics_tuple(&m)))
        })
    }

    /// The compaction tasks of this version: (fragment ids, rows) each.
    fn plan_compaction(
        &self,
        py: Python<'_>,
        options: CompactionArgs,
    ) -> PyResult<Vec<(Vec<u64>, u64)>> {
        use lance_core::write::compact::plan_compaction;
        guard(|| {
            let opts = options.options();
            let ds = self.inner.clone();
            let tasks = block_on(py, async move { plan_compaction(&ds, &opts).await }).py()?;
            Ok(tasks
                .into_iter()
                .map(|t| (t.fragment_ids, t.rows))
                .collect())
        })
    }

    /// Run one compaction task: the new fragments' metadata (protobuf bytes), not committed.
    #[pyo3(signature = (fragment_ids, rows, options, file_prefix=None))]
    fn execute_compaction_task(
        &self,
        py: Python<'_>,
        fragment_ids: Vec<u64>,
        rows: u64,
        options: CompactionArgs,
        file_prefix: Option<String>,
    ) -> PyResult<Vec<Vec<u8>>> {
        use lance_core::write::compact::{execute_task, CompactionTask};
        use prost::Message;
        guard(|| {
            let mut opts = options.options();
            opts.file_prefix = crate::write::checked_file_prefix(py, file_prefix)?;
            let task = CompactionTask { fragment_ids, rows };
            let ds = self.inner.clone();
            let new = block_on(py, async move { execute_task(&ds, &task, &opts).await }).py()?;
            Ok(new.iter().map(|f| f.encode_to_vec()).collect())
        })
    }

    /// Commit compaction results ((old fragment ids, new fragments' metadata) each) as one
    /// version; returns it and (fragments removed, added, files removed, added).
    fn commit_compaction(
        &self,
        py: Python<'_>,
        results: Vec<(Vec<u64>, Vec<Vec<u8>>)>,
    ) -> PyResult<(Self, (u64, u64, u64, u64))> {
        use lance_core::proto::table::DataFragment;
        use prost::Message;
        guard(|| {
            let mut decoded = Vec::with_capacity(results.len());
            for (ids, frags) in results {
                let frags = frags
                    .iter()
                    .map(|b| {
                        DataFragment::decode(&b[..]).map_err(|e| {
                            crate::errors::raise(
                                py,
                                "InvalidInputError",
                                format!("bad fragment metadata: {e}"),
                            )
                        })
                    })
                    .collect::<PyResult<Vec<_>>>()?;
                decoded.push((ids, frags));
            }
            let ds = self.inner.clone();
            let (new, m) = block_on(py, async move {
                lance_core::write::compact::commit_compaction(&ds, decoded).await
            })
            .py()?;
            Ok((PyDataset::from(new), metrics_tuple(&m)))
        })
    }

    /// Add all-null columns (an Arrow schema); metadata only. Returns the new version.
    fn add_null_columns(&self, py: Python<'_>, schema: Bound<'_, PyAny>) -> PyResult<Self> {
        guard(|| {
            let schema = crate::arrow_import::import_schema(&schema)?;
            Ok(PyDataset::from(
                block_on(
                    py,
                    lance_core::write::columns::add_null_columns(&self.inner, &schema),
                )
                .py()?,
            ))
        })
    }

    /// The table's config (the manifest's `config` map).
    fn config(&self) -> HashMap<String, String> {
        self.inner.manifest.config.clone()
    }

    /// The table's metadata (the manifest's `table_metadata` map).
    fn table_metadata(&self) -> HashMap<String, String> {
        self.inner.manifest.table_metadata.clone()
    }

    /// Change the config, the table's metadata, the schema's metadata and fields'
    /// metadata (by dotted path): each `(values, replace)`, a value of None removing its
    /// key. One version; returns it.
    #[pyo3(signature = (config=None, table_metadata=None, schema_metadata=None, fields=vec![], retries=10))]
    fn update_config(
        &self,
        py: Python<'_>,
        config: Option<MapValues>,
        table_metadata: Option<MapValues>,
        schema_metadata: Option<MapValues>,
        fields: Vec<(String, Entries, bool)>,
        retries: u32,
    ) -> PyResult<Self> {
        use lance_core::write::config::{update_config, ConfigChange, MapChange};
        let map = |(values, replace): (Vec<(String, Option<String>)>, bool)| MapChange {
            values,
            replace,
        };
        let change = ConfigChange {
            config: config.map(map),
            table_metadata: table_metadata.map(map),
            schema_metadata: schema_metadata.map(map),
            fields: fields
                .into_iter()
                .map(|(path, values, replace)| (path, MapChange { values, replace }))
                .collect(),
        };
        guard(|| {
            Ok(PyDataset::from(
                block_on(py, update_config(&self.inner, &change, retries)).py()?,
            ))
        })
    }

    /// Drop columns (nested ones by dotted path); metadata only. Returns the new version.
    fn drop_columns(&self, py: Python<'_>, paths: Vec<String>) -> PyResult<Self> {
        guard(|| {
            Ok(PyDataset::from(
                block_on(py, lance_core::write::drop_columns(&self.inner, &paths)).py()?,
            ))
        })
    }

    /// Rename columns, change their nullability or type: (path, new name, nullable, an
    /// Arrow schema whose only field has the new type) each. Returns the new version.
    fn alter_columns(&self, py: Python<'_>, alterations: Vec<PyAlteration<'_>>) -> PyResult<Self> {
        use lance_core::write::Alteration;
        guard(|| {
            let alterations = alterations
                .into_iter()
                .map(|(path, name, nullable, schema)| {
                    // A new type comes as the only field of an Arrow schema.
                    let data_type = match schema {
                        None => None,
                        Some(s) => Some(
                            crate::arrow_import::import_schema(&s)?
                                .field(0)
                                .data_type()
                                .clone(),
                        ),
                    };
                    Ok::<_, PyErr>(Alteration {
                        path,
                        name,
                        nullable,
                        data_type,
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(PyDataset::from(
                block_on(
                    py,
                    lance_core::write::alter_columns(&self.inner, &alterations),
                )
                .py()?,
            ))
        })
    }

    /// Set columns (path, SQL value) on the rows matching `predicate`; re-runs up to
    /// `retries` times when a concurrent commit changed the same fragments. Returns the new
    /// version and the number of rows updated.
    #[pyo3(signature = (updates, predicate=None, retries=10))]
    fn update(
        &self,
        py: Python<'_>,
        updates: Vec<(String, String)>,
        predicate: Option<String>,
        retries: u32,
    ) -> PyResult<(Self, u64)> {
        guard(|| {
            let ds = self.inner.clone();
            let (new, count) = block_on(py, async move {
                lance_core::write::update(&ds, &updates, predicate.as_deref(), retries).await
            })
            .py()?;
            Ok((PyDataset::from(new), count))
        })
    }

    /// Merge the rows of `data` (an Arrow stream) by the merge's `clauses`. Returns the new
    /// version and the inserted, updated and deleted counts.
    #[pyo3(signature = (data, clauses, retries))]
    fn merge_insert(
        &self,
        py: Python<'_>,
        data: Bound<'_, PyAny>,
        clauses: crate::row_changes::MergeClauses,
        retries: u32,
    ) -> PyResult<(Self, (u64, u64, u64))> {
        use lance_core::write::merge_insert::merge_insert;
        guard(|| {
            let params = clauses.params(py, retries)?;
            let reader = crate::arrow_import::import_stream(&data)?;
            let schema = reader.schema();
            let batches = crate::arrow_import::batch_stream(reader);
            let ds = self.inner.clone();
            let (new, stats) = block_on(py, async move {
                use futures::TryStreamExt;
                let source: Vec<_> = batches.try_collect().await?;
                merge_insert(&ds, source, schema, &params).await
            })
            .py()?;
            Ok((
                PyDataset::from(new),
                (stats.inserted, stats.updated, stats.deleted),
            ))
        })
    }

    /// Run a merge as `merge_insert` would without committing it (its files are removed):
    /// ((inserted, updated, deleted), data files written, their bytes, deletion files).
    fn analyze_merge(
        &self,
        py: Python<'_>,
        data: Bound<'_, PyAny>,
        clauses: crate::row_changes::MergeClauses,
    ) -> PyResult<MergeAnalysisRow> {
        use lance_core::write::merge_insert::analyze_merge;
        guard(|| {
            let params = clauses.params(py, 0)?;
            let reader = crate::arrow_import::import_stream(&data)?;
            let schema = reader.schema();
            let batches = crate::arrow_import::batch_stream(reader);
            let ds = self.inner.clone();
            let a = block_on(py, async move {
                use futures::TryStreamExt;
                let source: Vec<_> = batches.try_collect().await?;
                analyze_merge(&ds, source, schema, &params).await
            })
            .py()?;
            let s = a.stats;
            Ok((
                (s.inserted, s.updated, s.deleted),
                a.files_written,
                a.bytes_written,
                a.deletion_files_written,
            ))
        })
    }

    /// Delete the rows matching `predicate`: the new version and how many rows went.
    #[pyo3(signature = (predicate, retries=10))]
    fn delete(&self, py: Python<'_>, predicate: String, retries: u32) -> PyResult<(Self, u64)> {
        guard(|| {
            let (ds, count) = block_on(
                py,
                lance_core::write::delete_counted(&self.inner, &predicate, retries),
            )
            .py()?;
            Ok((PyDataset::from(ds), count))
        })
    }

    /// Build a scalar index (BTREE, BITMAP, LABEL_LIST, ZONEMAP, BLOOMFILTER, NGRAM) on
    /// `column` and commit it.
    #[pyo3(signature = (column, index_type, name=None, replace=true, page_rows=None, retries=10, probability=None))]
    #[allow(clippy::too_many_arguments)]
    fn create_scalar_index(
        &self,
        py: Python<'_>,
        column: String,
        index_type: String,
        name: Option<String>,
        replace: bool,
        page_rows: Option<u64>,
        retries: u32,
        probability: Option<f64>,
    ) -> PyResult<Self> {
        guard(|| {
            let kind = index_kind(&self.inner, &index_type).py()?;
            let params = lance_core::write::index::ScalarIndexParams {
                kind,
                name,
                replace,
                page_rows,
                probability,
            };
            dataset_of(
                py,
                lance_core::write::index::create_scalar_index(
                    &self.inner,
                    &column,
                    &params,
                    retries,
                ),
            )
        })
    }

    /// Build an IVF vector index (IVF_FLAT, IVF_PQ, IVF_SQ) on `column` and commit it.
    #[pyo3(signature = (column, name, replace, params, retries=10))]
    fn create_vector_index(
        &self,
        py: Python<'_>,
        column: String,
        name: Option<String>,
        replace: bool,
        params: PyIvfParams,
        retries: u32,
    ) -> PyResult<Self> {
        guard(|| {
            let params = params.into_params(self.inner.uri())?;
            dataset_of(
                py,
                vector_index::create_vector_index(
                    &self.inner,
                    &column,
                    name.as_deref(),
                    replace,
                    &params,
                    retries,
                ),
            )
        })
    }

    /// A vector index built on many workers, first step (the driver): train the model
    /// and write it under `_indices/<uuid>/`, uncommitted.
    fn stage_vector_model(
        &self,
        py: Python<'_>,
        column: String,
        params: PyIvfParams,
        uuid: String,
    ) -> PyResult<()> {
        guard(|| {
            let params = params.into_params(self.inner.uri())?;
            block_on(
                py,
                vector_index::stage_model(&self.inner, &column, &params, &uuid),
            )
            .py()
        })
    }

    /// Second step (a task): encode the vectors of `fragments` (physical rows
    /// `row_range` of each, when given) with the staged model, written beside it as part
    /// `part`.
    #[pyo3(signature = (column, uuid, fragments, row_range, part))]
    fn encode_vector_part(
        &self,
        py: Python<'_>,
        column: String,
        uuid: String,
        fragments: Vec<u64>,
        row_range: Option<(u64, u64)>,
        part: u32,
    ) -> PyResult<()> {
        guard(|| {
            block_on(
                py,
                vector_index::encode_part(&self.inner, &column, &uuid, &fragments, row_range, part),
            )
            .py()
        })
    }

    /// Last step (the driver): join the staged model and its `parts` into one segment
    /// of index `name`, and commit it.
    #[allow(clippy::too_many_arguments)]
    fn commit_vector_index(
        &self,
        py: Python<'_>,
        column: String,
        name: Option<String>,
        replace: bool,
        params: PyIvfParams,
        uuid: String,
        parts: u32,
    ) -> PyResult<Self> {
        guard(|| {
            let params = params.into_params(self.inner.uri())?;
            dataset_of(
                py,
                vector_index::commit_staged(
                    &self.inner,
                    &column,
                    name.as_deref(),
                    replace,
                    &params,
                    &uuid,
                    parts,
                ),
            )
        })
    }

    /// pylance's statistics of index `name`, as JSON text.
    fn index_statistics(&self, py: Python<'_>, name: String) -> PyResult<String> {
        guard(|| {
            let ds = self.inner.clone();
            let v = block_on(py, async move {
                lance_core::index::stats::index_statistics(&ds, &name).await
            })
            .py()?;
            Ok(v.to_string())
        })
    }

    /// The live rows each index segment covers, in `index_segments` order.
    fn index_rows_covered(&self, py: Python<'_>) -> PyResult<Vec<u64>> {
        guard(|| {
            let ds = self.inner.clone();
            block_on(py, async move {
                let mut out = Vec::new();
                for s in ds.index_segments()?.iter() {
                    out.push(lance_core::index::stats::rows_covered(&ds, s).await?);
                }
                Ok(out)
            })
            .py()
        })
    }

    /// Index the fragments added since each index was built (see
    /// `write::index::optimize_indices`).
    #[pyo3(signature = (names, merge))]
    fn optimize_indices(
        &self,
        py: Python<'_>,
        names: Option<Vec<String>>,
        merge: bool,
    ) -> PyResult<Self> {
        guard(|| {
            dataset_of(
                py,
                lance_core::write::index::optimize_indices(&self.inner, names.as_deref(), merge),
            )
        })
    }

    /// Remove index `name` from the table.
    fn drop_index(&self, py: Python<'_>, name: String) -> PyResult<Self> {
        guard(|| dataset_of(py, lance_core::write::index::drop_index(&self.inner, &name)))
    }

    /// Write new columns for fragment `fragment_id`: `data` (an Arrow stream) has one row
    /// per physical row, deleted ones included. Returns the fragment's metadata (protobuf
    /// bytes) with the new file added, to commit with a merge from this version.
    #[pyo3(signature = (data, fragment_id, file_prefix=None))]
    fn write_columns(
        &self,
        py: Python<'_>,
        data: Bound<'_, PyAny>,
        fragment_id: u64,
        file_prefix: Option<String>,
    ) -> PyResult<Vec<u8>> {
        use lance_core::write::columns::{new_columns, write_columns};
        use prost::Message;
        guard(|| {
            let file_prefix = crate::write::checked_file_prefix(py, file_prefix)?;
            let reader = crate::arrow_import::import_stream(&data)?;
            let schema = reader.schema();
            let batches = crate::arrow_import::batch_stream(reader);
            let ds = self.inner.clone();
            let fragment = block_on(py, async move {
                let added = new_columns(&ds, &schema)?;
                write_columns(&ds, fragment_id, &added, batches, &file_prefix).await
            })
            .py()?;
            Ok(fragment.encode_to_vec())
        })
    }

    /// pylance's `LanceFragment.update_columns`: the fragment with its new data file
    /// (protobuf bytes, not committed) and the updated fields' ids.
    fn update_columns(
        &self,
        py: Python<'_>,
        data: Bound<'_, PyAny>,
        fragment_id: u64,
        left_on: String,
        right_on: String,
    ) -> PyResult<(Vec<u8>, Vec<u32>)> {
        use prost::Message;
        guard(|| {
            let reader = crate::arrow_import::import_stream(&data)?;
            let schema = reader.schema();
            let batches = reader.collect::<Result<Vec<_>, _>>().map_err(|e| {
                crate::errors::raise(py, "InvalidInputError", format!("update_columns: {e}"))
            })?;
            let ds = self.inner.clone();
            let (fragment, fields) = block_on(py, async move {
                lance_core::write::columns::update_columns(
                    &ds,
                    fragment_id,
                    (schema, batches),
                    &left_on,
                    &right_on,
                )
                .await
            })
            .py()?;
            Ok((fragment.encode_to_vec(), fields))
        })
    }

    /// pylance's `DataFile.create`: the data file entry for a Lance file written with
    /// some of the dataset's columns: (path, fields, column indices, major, minor, size,
    /// base id, the file's rows).
    #[allow(clippy::type_complexity)]
    #[pyo3(signature = (path, base_id=None))]
    fn describe_data_file(
        &self,
        py: Python<'_>,
        path: String,
        base_id: Option<u32>,
    ) -> PyResult<(String, Vec<i32>, Vec<i32>, u32, u32, u64, Option<u32>, u64)> {
        guard(|| {
            let ds = self.inner.clone();
            let (f, rows) = block_on(py, async move {
                lance_core::file_table::describe_data_file(&ds, &path, base_id).await
            })
            .py()?;
            Ok((
                f.path,
                f.fields,
                f.column_indices,
                f.file_major_version,
                f.file_minor_version,
                f.file_size_bytes,
                f.base_id,
                rows,
            ))
        })
    }

    fn storage_options(&self) -> HashMap<String, String> {
        self.inner.storage_options().clone()
    }

    /// (top-level field id, bytes its columns take in the data files), in schema order.
    fn field_bytes_on_disk(&self, py: Python<'_>) -> PyResult<Vec<(i32, u64)>> {
        guard(|| {
            block_on(
                py,
                lance_core::dataset::data_stats::field_bytes(&self.inner),
            )
            .py()
        })
    }

    /// The table's base paths by id, as `lance_core.DatasetBasePath` objects (pylance's
    /// `_ds.base_paths()`).
    fn base_paths<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let class = py.import("lance_core.bases")?.getattr("DatasetBasePath")?;
        let out = PyDict::new(py);
        for arg in crate::bases::to_args(&self.inner.manifest.base_paths) {
            out.set_item(arg.0, class.call_method1("_from_arg", (arg,))?)?;
        }
        Ok(out)
    }

    /// Fragment `fragment_id` as committed (protobuf bytes).
    fn fragment_metadata(&self, py: Python<'_>, fragment_id: u64) -> PyResult<Vec<u8>> {
        use prost::Message;
        match self.inner.fragment(fragment_id) {
            Some(f) => Ok(f.encode_to_vec()),
            None => Err(crate::errors::raise(
                py,
                "InvalidInputError",
                format!("{}: no fragment {fragment_id}", self.inner.uri()),
            )),
        }
    }

    /// Delete the rows of one fragment matching `predicate`, or at physical `offsets`,
    /// without committing: the fragment's new metadata, or None when no row is left.
    #[pyo3(signature = (fragment_id, predicate=None, offsets=None))]
    fn delete_in_fragment(
        &self,
        py: Python<'_>,
        fragment_id: u64,
        predicate: Option<String>,
        offsets: Option<Vec<u64>>,
    ) -> PyResult<Option<Vec<u8>>> {
        use lance_core::write::{delete_offsets_uncommitted, delete_uncommitted};
        use prost::Message;
        guard(|| {
            let ds = self.inner.clone();
            let fragment = block_on(py, async move {
                match (predicate, offsets) {
                    (Some(p), None) => delete_uncommitted(&ds, fragment_id, &p).await,
                    (None, Some(o)) => delete_offsets_uncommitted(&ds, fragment_id, &o).await,
                    _ => Err(lance_core::Error::invalid(
                        "delete_in_fragment takes a predicate or offsets",
                    )),
                }
            })
            .py()?;
            Ok(fragment.map(|f| f.encode_to_vec()))
        })
    }

    /// One dict per fragment: id, physical_rows, num_deletions, files.
    fn fragments<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        guard(|| {
            let ds = self.inner.clone();
            // Rows come from the manifest; older writers left them unset, then the data file tells.
            let rows = block_on(py, async move {
                let counts = ds.fragments().iter().map(|f| async {
                    Ok::<_, lance_core::Error>((
                        ds.physical_rows(f).await?,
                        ds.num_deleted(f).await?,
                    ))
                });
                futures::future::try_join_all(counts).await
            })
            .py()?;
            let list = PyList::empty(py);
            for (f, (physical_rows, deleted)) in self.inner.fragments().iter().zip(rows) {
                let d = PyDict::new(py);
                d.set_item("id", f.id)?;
                d.set_item("physical_rows", physical_rows)?;
                d.set_item("num_deletions", deleted)?;
                d.set_item(
                    "files",
                    f.files.iter().map(|x| x.path.clone()).collect::<Vec<_>>(),
                )?;
                list.append(d)?;
            }
            Ok(list)
        })
    }

    /// The rows `ids`, in that order: row addresses (fragment id << 32 | row offset), or
    /// with `by="index"` offsets among the visible rows, or with `by="row_id"` row ids
    /// (ids no visible row has are left out).
    #[pyo3(signature = (ids, columns=None, projection=None, with_row_id=false, with_row_address=false, by="address"))]
    #[allow(clippy::too_many_arguments)]
    fn take(
        &self,
        py: Python<'_>,
        ids: Vec<u64>,
        columns: Option<Vec<String>>,
        projection: Option<Vec<(String, String)>>,
        with_row_id: bool,
        with_row_address: bool,
        by: &str,
    ) -> PyResult<PyArrowBatch> {
        guard(|| {
            let projection = Projection {
                columns,
                exprs: parse_projection(projection)?,
                with_row_id,
                with_row_address,
                ..Default::default()
            };
            let ds = self.inner.clone();
            let by = by.to_string();
            let batch = block_on(py, async move {
                // Ids to addresses and the take in one call: no round trip through Python.
                let addresses = match by.as_str() {
                    "index" => ds.addresses_of_indices(&ids).await?,
                    "row_id" => ds
                        .addresses_of_row_ids(&ids)
                        .await?
                        .into_iter()
                        .flatten()
                        .collect(),
                    _ => ids,
                };
                lance_core::scan::take::take(ds, &addresses, &projection).await
            })
            .py()?;
            Ok(PyArrowBatch(batch))
        })
    }

    /// The addresses of the dataset's visible rows `indices` (deleted rows skipped).
    fn addresses_of_indices(&self, py: Python<'_>, indices: Vec<u64>) -> PyResult<Vec<u64>> {
        guard(|| {
            let ds = self.inner.clone();
            block_on(py, async move { ds.addresses_of_indices(&indices).await }).py()
        })
    }

    /// The addresses of the visible rows `indices` of fragment `fragment_id`.
    fn fragment_addresses(
        &self,
        py: Python<'_>,
        fragment_id: u64,
        indices: Vec<u64>,
    ) -> PyResult<Vec<u64>> {
        guard(|| {
            let ds = self.inner.clone();
            block_on(py, async move {
                let frag = ds.fragment(fragment_id).ok_or_else(|| {
                    lance_core::Error::invalid(format!("{}: no fragment {fragment_id}", ds.uri()))
                })?;
                let offsets = ds.physical_offsets(frag, &indices).await?;
                Ok(offsets
                    .into_iter()
                    .map(|o| (fragment_id << 32) | o as u64)
                    .collect())
            })
            .py()
        })
    }

    /// The vector index a `nearest` search would go through, for plans: its name, kind,
    /// metric and segment uuids (None: the search is exhaustive).
    fn vector_index_for(
        &self,
        py: Python<'_>,
        nearest: crate::nearest::PyNearest,
    ) -> PyResult<Option<VectorIndexPlan>> {
        guard(|| {
            let nearest = nearest.into_query()?;
            let ds = self.inner.clone();
            let found = block_on(py, async move {
                lance_core::vector::indexed::usable(&ds, &nearest).await
            })
            .py()?;
            Ok(found.map(|(segments, metric)| {
                let (first, ivf) = &segments[0];
                (
                    first.name.clone(),
                    ivf.kind.clone(),
                    metric.name().to_string(),
                    segments.iter().map(|(s, _)| s.uuid.clone()).collect(),
                )
            }))
        })
    }

    /// The addresses of the rows with stable row ids `ids` (None: no visible row).
    fn addresses_of_row_ids(&self, py: Python<'_>, ids: Vec<u64>) -> PyResult<Vec<Option<u64>>> {
        guard(|| {
            let ds = self.inner.clone();
            block_on(py, async move { ds.addresses_of_row_ids(&ids).await }).py()
        })
    }

    #[pyo3(signature = (columns=None, batch_size=None, limit=None, offset=None, with_row_id=false, with_row_address=false, fragment_ids=None, io_buffer_size=None, filter=None, row_range=None, include_deleted=false, projection=None, late_materialization=true, use_scalar_index=true, nearest=None, blob_bytes=false, strict_batch_size=false, order_by=None))]
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &self,
        columns: Option<Vec<String>>,
        batch_size: Option<usize>,
        limit: Option<u64>,
        offset: Option<u64>,
        with_row_id: bool,
        with_row_address: bool,
        fragment_ids: Option<Vec<u64>>,
        io_buffer_size: Option<usize>,
        filter: Option<String>,
        row_range: Option<(u64, u64)>,
        include_deleted: bool,
        projection: Option<Vec<(String, String)>>,
        late_materialization: bool,
        use_scalar_index: bool,
        nearest: Option<crate::nearest::PyNearest>,
        blob_bytes: bool,
        strict_batch_size: bool,
        order_by: Option<Vec<(String, bool, bool)>>,
    ) -> PyResult<PyBatchIterator> {
        guard(|| {
            let nearest = nearest.map(|n| n.into_query()).transpose()?;
            let mut options = ScanOptions {
                columns,
                limit,
                offset,
                with_row_id,
                with_row_address,
                fragment_ids,
                row_range,
                include_deleted,
                strict_batch_size,
                count_rows_scanned: true,
                ..Default::default()
            };
            if let Some(b) = batch_size {
                options.batch_size = b;
            }
            if let Some(b) = io_buffer_size {
                options.memory_budget = b.max(1 << 20);
            }
            if let Some(f) = filter.filter(|f| !f.trim().is_empty()) {
                options.filter = Some(lance_core::expr::parse(&f).py()?);
            }
            options.projection = parse_projection(projection)?;
            let query = Query {
                scan: options,
                late_materialization,
                use_scalar_index,
                nearest,
                blobs: match blob_bytes {
                    true => BlobRead::Bytes,
                    false => BlobRead::Descriptors,
                },
                // (column, ascending, nulls first) per key, as `ColumnOrdering` holds them.
                order_by: order_by
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(column, ascending, nulls_first)| ColumnOrdering {
                        column,
                        ascending,
                        nulls_first,
                    })
                    .collect(),
            };
            let _enter = runtime().enter();
            let s = lance_core::query(self.inner.clone(), query).py()?;
            Ok(PyBatchIterator::new(s.schema, s.batches))
        })
    }

    /// Build one segment of a new index (as `create_scalar_index` names and sets it up)
    /// over `fragment_ids` without committing it, its files under `_indices/<index_uuid>/`
    /// (a new uuid when None). Returns its manifest entry (IndexMetadata protobuf bytes)
    /// for `commit_index_segments`.
    #[pyo3(signature = (column, index_type, name, fragment_ids, page_rows=None, probability=None, index_uuid=None))]
    #[allow(clippy::too_many_arguments)]
    fn build_index_segment(
        &self,
        py: Python<'_>,
        column: String,
        index_type: String,
        name: Option<String>,
        fragment_ids: Vec<u64>,
        page_rows: Option<u64>,
        probability: Option<f64>,
        index_uuid: Option<String>,
    ) -> PyResult<Vec<u8>> {
        use lance_core::write::index::{build_index_segment, ScalarIndexParams, SegmentSpec};
        use prost::Message;
        guard(|| {
            let params = ScalarIndexParams {
                kind: index_kind(&self.inner, &index_type).py()?,
                name,
                replace: true,
                page_rows,
                probability,
            };
            let ds = self.inner.clone();
            let segment = block_on(py, async move {
                let spec = SegmentSpec::new(&ds, &column, &params)?;
                build_index_segment(&ds, &spec, &fragment_ids, index_uuid.as_deref()).await
            })
            .py()?;
            Ok(segment.encode_to_vec())
        })
    }

    /// Check that an index of `index_type` can be built on `column` and that `name` (or
    /// `<column>_idx`) is free unless `replace`; returns the name. Reads no row.
    #[pyo3(signature = (column, index_type, name=None, replace=true))]
    fn check_new_index(
        &self,
        column: String,
        index_type: String,
        name: Option<String>,
        replace: bool,
    ) -> PyResult<String> {
        use lance_core::write::index::{replaced_segments, ScalarIndexParams, SegmentSpec};
        guard(|| {
            let params = ScalarIndexParams {
                kind: index_kind(&self.inner, &index_type).py()?,
                name,
                replace,
                page_rows: None,
                probability: None,
            };
            let spec = SegmentSpec::new(&self.inner, &column, &params).py()?;
            replaced_segments(&self.inner, &spec.name, replace).py()?;
            Ok(spec.name)
        })
    }

    /// The indices (those in `names`, else all) that miss fragments: (name, fragment ids).
    #[pyo3(signature = (names=None))]
    fn index_deltas(
        &self,
        py: Python<'_>,
        names: Option<Vec<String>>,
    ) -> PyResult<Vec<(String, Vec<u64>)>> {
        guard(|| {
            let ds = self.inner.clone();
            let deltas = block_on(py, async move {
                lance_core::write::index::index_deltas(&ds, names.as_deref()).await
            })
            .py()?;
            Ok(deltas
                .into_iter()
                .map(|d| (d.spec.name, d.fragments))
                .collect())
        })
    }

    /// Build a new segment of the existing index `name` over `fragment_ids` (set up as its
    /// other segments), without committing it; as `build_index_segment`.
    #[pyo3(signature = (name, fragment_ids, index_uuid=None))]
    fn build_index_delta(
        &self,
        py: Python<'_>,
        name: String,
        fragment_ids: Vec<u64>,
        index_uuid: Option<String>,
    ) -> PyResult<Vec<u8>> {
        use lance_core::write::index::{build_index_segment, SegmentSpec};
        use prost::Message;
        guard(|| {
            let ds = self.inner.clone();
            let segment = block_on(py, async move {
                let spec = SegmentSpec::of_index(&ds, &name).await?;
                build_index_segment(&ds, &spec, &fragment_ids, index_uuid.as_deref()).await
            })
            .py()?;
            Ok(segment.encode_to_vec())
        })
    }

    /// Commit index segments built from this version (IndexMetadata protobuf bytes) in one
    /// new version: with `name`, every segment of a new build of that index (replacing it
    /// when `replace`); without, new segments of existing indices.
    #[pyo3(signature = (segments, name=None, replace=true))]
    fn commit_index_segments(
        &self,
        py: Python<'_>,
        segments: Vec<Vec<u8>>,
        name: Option<String>,
        replace: bool,
    ) -> PyResult<Self> {
        use lance_core::write::index::{commit_index_segments, SegmentsCommit};
        use prost::Message;
        guard(|| {
            let segments = segments
                .iter()
                .map(|b| lance_core::proto::table::IndexMetadata::decode(b.as_slice()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| {
                    lance_core::Error::invalid(format!(
                        "{}: bad index segment metadata: {e}",
                        self.inner.uri()
                    ))
                })
                .py()?;
            let how = match &name {
                Some(name) => SegmentsCommit::Build { name, replace },
                None => SegmentsCommit::Extend,
            };
            dataset_of(py, commit_index_segments(&self.inner, segments, how))
        })
    }
}

/// Keys of a string map set (Some) or removed (None).
type Entries = Vec<(String, Option<String>)>;
/// A map's entries, and whether they replace it.
type MapValues = (Entries, bool);

/// The kind of scalar index a user names (any case), to build on `ds`.
fn index_kind(ds: &Dataset, index_type: &str) -> lance_core::Result<lance_core::index::Kind> {
    lance_core::index::kind_from_user(index_type).ok_or_else(|| {
        let built: Vec<&str> = lance_core::index::KINDS
            .iter()
            .map(|k| k.user_names()[0])
            .collect();
        lance_core::Error::invalid(format!(
            "{}: index type '{index_type}' is not built by lance_core (it builds {})",
            ds.uri(),
            built.join(", ")
        ))
    })
}
