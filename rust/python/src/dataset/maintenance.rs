//! `_Dataset`'s upkeep: compaction (whole, or planned and run as tasks) and the cleanup of
//! old versions.

use pyo3::prelude::*;

use super::PyDataset;
use crate::errors::{guard, IntoPyResult};
use crate::runtime::block_on;

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
}
