//! Compaction, as pylance's `optimize.compact_files`: runs of small neighbouring fragments
//! are merged into fragments of about `target_rows_per_fragment` rows, and fragments that
//! lost many rows to deletes are rewritten without them. Rows keep their order and their
//! stable row ids (the new fragments' sequences list the old ids); one `Rewrite` commit.
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use futures::StreamExt;

use super::{commit, writable_version, write_fragments, ReadFrom, WriteOptions};
use crate::blob::BlobRead;
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::proto::table::DataFragment;
use crate::query::Query;
use crate::scan::ScanOptions;
use crate::table::transaction::{Operation, Staged};

#[derive(Clone, Debug)]
pub struct CompactionOptions {
    pub target_rows_per_fragment: u64,
    pub materialize_deletions: bool,
    /// A fragment with more than this share of its rows deleted is rewritten.
    pub materialize_deletions_threshold: f64,
    pub batch_size: usize,
    /// Start of new data files' names (a distributed job's token).
    pub file_prefix: String,
    /// New files are cut once this many bytes of them are out (None: the writer's default).
    pub max_bytes_per_file: Option<u64>,
}

impl Default for CompactionOptions {
    fn default() -> Self {
        CompactionOptions {
            target_rows_per_fragment: 1024 * 1024,
            materialize_deletions: true,
            materialize_deletions_threshold: 0.1,
            batch_size: 64 * 1024,
            file_prefix: String::new(),
            max_bytes_per_file: None,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactionMetrics {
    pub fragments_removed: u64,
    pub fragments_added: u64,
    pub files_removed: u64,
    pub files_added: u64,
}

/// Which fragments each index of `ds` covers (from its manifest file's index section).
async fn index_coverage(ds: &Dataset) -> Result<Vec<roaring::RoaringBitmap>> {
    if ds.manifest.index_section.is_none() {
        return Ok(vec![]);
    }
    let storage = ds.storage();
    let loc = crate::table::versions::locate_version(storage, ds.version()).await?;
    let bytes = storage.get(&loc.path).await?;
    let name = storage.display(&loc.path);
    let Some(section) = crate::table::manifest::index_section(&ds.manifest, &bytes, &name)? else {
        return Ok(vec![]);
    };
    section
        .indices
        .iter()
        .map(|i| match i.fragment_bitmap.is_empty() {
            true => Ok(roaring::RoaringBitmap::new()),
            false => roaring::RoaringBitmap::deserialize_from(&i.fragment_bitmap[..])
                .map_err(|e| Error::corrupt(&name, format!("an index's fragment bitmap: {e}"))),
        })
        .collect()
}

/// A fragment to rewrite: on its own (many rows deleted), or only with neighbours (small).
struct Candidate {
    fragment: DataFragment,
    alone_ok: bool,
    rows: u64,
}

/// Groups of neighbouring fragments to rewrite together, in manifest order, with the rows
/// they hold. The rules are pylance's, so both compact a dataset alike: a fragment is a
/// candidate when more than the threshold of its rows are deleted, or when it has fewer
/// physical rows than the target; runs of candidates are cut into groups of at least the
/// target's rows (the remainder joins the last group); a lone small fragment is left alone.
async fn plan(ds: &Dataset, opts: &CompactionOptions) -> Result<Vec<(Vec<DataFragment>, u64)>> {
    let coverage = index_coverage(ds).await?;
    let mut runs: Vec<Vec<Candidate>> = vec![Vec::new()];
    let mut run_indices: Option<Vec<usize>> = None;
    for frag in ds.fragments() {
        // Fragments covered by different indices are never merged (as in pylance): a new
        // fragment is covered by none, so merging would lose coverage for some rows only.
        let indices: Vec<usize> = coverage
            .iter()
            .enumerate()
            .filter(|(_, b)| b.contains(frag.id as u32))
            .map(|(i, _)| i)
            .collect();
        let physical = ds.physical_rows(frag).await?;
        let deleted = frag
            .deletion_file
            .as_ref()
            .map_or(0, |d| d.num_deleted_rows);
        let share = if physical > 0 {
            deleted as f64 / physical as f64
        } else {
            0.0
        };
        let alone_ok = opts.materialize_deletions && share > opts.materialize_deletions_threshold;
        if alone_ok || physical < opts.target_rows_per_fragment {
            let rows = physical.saturating_sub(deleted);
            if run_indices.as_ref().is_some_and(|r| *r != indices)
                && !runs.last().expect("never empty").is_empty()
            {
                runs.push(Vec::new());
            }
            run_indices = Some(indices);
            runs.last_mut().expect("never empty").push(Candidate {
                fragment: frag.clone(),
                alone_ok,
                rows,
            });
        } else if !runs.last().expect("never empty").is_empty() {
            runs.push(Vec::new());
        }
    }
    let target = opts.target_rows_per_fragment;
    let mut groups = Vec::new();
    for mut run in runs {
        if run.is_empty() || (run.len() == 1 && !run[0].alone_ok) {
            continue;
        }
        loop {
            let (mut len, mut rows) = (0, 0u64);
            while rows < target && len < run.len() {
                rows += run[len].rows;
                len += 1;
            }
            let rest: u64 = run[len..].iter().map(|c| c.rows).sum();
            if rest >= target {
                let group: Vec<Candidate> = run.drain(..len).collect();
                groups.push((group.into_iter().map(|c| c.fragment).collect(), rows));
            } else {
                let rows = rows + rest;
                groups.push((run.drain(..).map(|c| c.fragment).collect(), rows));
                break;
            }
        }
    }
    Ok(groups)
}

/// Rewrite one group: its visible rows, in order, into new fragments.
async fn rewrite(
    ds: &Arc<Dataset>,
    staged: &Staged,
    group: &[DataFragment],
    rows: u64,
    opts: &CompactionOptions,
) -> Result<Vec<DataFragment>> {
    let stable = ds.has_stable_row_ids();
    let query = Query {
        scan: ScanOptions {
            fragment_ids: Some(group.iter().map(|f| f.id).collect()),
            with_row_id: stable,
            with_row_address: stable,
            batch_size: opts.batch_size.max(1),
            ..Default::default()
        },
        blobs: BlobRead::Values,
        late_materialization: false,
        ..Default::default()
    };
    let s = crate::query::run(ds.clone(), query)?;
    let moved = Arc::new(std::sync::Mutex::new((
        Vec::<u64>::new(),
        Vec::<u64>::new(),
    )));
    let columns = ds.schema.fields.len();
    let collect = moved.clone();
    // The row ids and addresses are set aside; the data goes to the writer as the
    // dataset's columns.
    let batches = s.batches.map(move |b| {
        let b = b?;
        if stable {
            let col = |name| {
                b.column_by_name(name)
                    .expect("scanned")
                    .as_primitive::<UInt64Type>()
                    .values()
                    .clone()
            };
            let mut moved = collect.lock().unwrap_or_else(|e| e.into_inner());
            moved
                .0
                .extend(col(crate::scan::ROW_ADDRESS).iter().copied());
            moved.1.extend(col(crate::scan::ROW_ID).iter().copied());
            return Ok(b.project(&(0..columns).collect::<Vec<_>>())?);
        }
        Ok(b)
    });
    let version = writable_version(&ds.data_storage_version(), ds.uri())?;
    // As many files as whole targets fit in the group (at least one), rows spread evenly:
    // a group of 1.4 targets is one file, not a full one and a small one.
    let files = (rows / opts.target_rows_per_fragment.max(1)).max(1);
    let defaults = WriteOptions::default();
    let write = WriteOptions {
        max_rows_per_file: rows.div_ceil(files).max(1),
        max_bytes_per_file: opts
            .max_bytes_per_file
            .unwrap_or(defaults.max_bytes_per_file),
        file_prefix: opts.file_prefix.clone(),
        storage_options: ds.storage_options().clone(),
        blobs: super::blob_v2::BlobWriteOptions::of_table(ds),
        ..defaults
    };
    let mut fragments =
        write_fragments(staged, &ds.schema, version, Box::pin(batches), &write).await?;
    if stable {
        let (addresses, ids) =
            std::mem::take(&mut *moved.lock().unwrap_or_else(|e| e.into_inner()));
        super::rows::attach_moved_rows(ds, &mut fragments, &addresses, &ids, false).await?;
    }
    Ok(fragments)
}

/// One unit of compaction work: neighbouring fragments (by id) of the read version to
/// rewrite together, and the rows they hold. Plain data, so that it can be sent to a worker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactionTask {
    pub fragment_ids: Vec<u64>,
    pub rows: u64,
}

/// The tasks that compact `ds` at its version (none: nothing to do).
pub async fn plan_compaction(
    ds: &Dataset,
    opts: &CompactionOptions,
) -> Result<Vec<CompactionTask>> {
    Ok(plan(ds, opts)
        .await?
        .into_iter()
        .map(|(group, rows)| CompactionTask {
            fragment_ids: group.iter().map(|f| f.id).collect(),
            rows,
        })
        .collect())
}

/// Run one task on `ds` (at the task's read version): the new fragments, not committed;
/// their files are the caller's (a distributed job commits or aborts them).
pub async fn execute_task(
    ds: &Dataset,
    task: &CompactionTask,
    opts: &CompactionOptions,
) -> Result<Vec<DataFragment>> {
    let staged = Staged::new(ds.storage());
    let fragments = staged.guard(execute_into(ds, task, opts, &staged)).await?;
    staged.keep();
    Ok(fragments)
}

/// `execute_task`, staging the new files in `staged`.
async fn execute_into(
    ds: &Dataset,
    task: &CompactionTask,
    opts: &CompactionOptions,
    staged: &Staged,
) -> Result<Vec<DataFragment>> {
    let group: Vec<DataFragment> = task
        .fragment_ids
        .iter()
        .map(|id| {
            ds.fragment(*id).cloned().ok_or_else(|| {
                Error::invalid(format!(
                    "{}: fragment {id} of the compaction task is not in version {}",
                    ds.uri(),
                    ds.version()
                ))
            })
        })
        .collect::<Result<_>>()?;
    let ds = Arc::new(ds.clone());
    rewrite(&ds, staged, &group, task.rows, opts).await
}

/// Commit the results of tasks (fragment ids of `ds`'s version → new fragments) as one
/// `Rewrite`; on failure the new files are removed (the compaction may be planned again).
pub async fn commit_compaction(
    ds: &Dataset,
    results: Vec<(Vec<u64>, Vec<DataFragment>)>,
) -> Result<(Dataset, CompactionMetrics)> {
    // The tasks' files are this commit's from here on.
    let staged = Staged::new(ds.storage());
    for (_, new) in &results {
        staged.add_fragments(new);
    }
    commit_rewrite(ds, results, staged).await
}

/// The `Rewrite` of `results`, whose files are staged in `staged`, committed.
async fn commit_rewrite(
    ds: &Dataset,
    results: Vec<(Vec<u64>, Vec<DataFragment>)>,
    staged: Staged,
) -> Result<(Dataset, CompactionMetrics)> {
    let mut metrics = CompactionMetrics::default();
    let mut groups = Vec::with_capacity(results.len());
    for (ids, new) in results {
        let old: Result<Vec<DataFragment>> = ids
            .iter()
            .map(|id| {
                ds.fragment(*id).cloned().ok_or_else(|| {
                    Error::invalid(format!(
                        "{}: compacted fragment {id} is not in version {}",
                        ds.uri(),
                        ds.version()
                    ))
                })
            })
            .collect();
        let old = match old {
            Ok(old) => old,
            Err(e) => return staged.settle(Err(e)).await,
        };
        metrics.fragments_removed += old.len() as u64;
        // Deletion files go too (pylance counts them).
        metrics.files_removed += old
            .iter()
            .map(|f| f.files.len() as u64 + f.deletion_file.is_some() as u64)
            .sum::<u64>();
        metrics.fragments_added += new.len() as u64;
        metrics.files_added += new.iter().map(|f| f.files.len() as u64).sum::<u64>();
        groups.push((old, new));
    }
    if groups.is_empty() {
        return Ok((ds.clone(), metrics));
    }
    let (indices, reserved) = match move_indices(ds, &mut groups, &staged).await {
        Ok(done) => done,
        Err(e) => return staged.settle(Err(e)).await,
    };
    // The reservation was checked as this rewrite against everything committed before
    // it: the rewrite goes on from there.
    let op = Operation::Rewrite { groups, indices };
    let new = commit(ReadFrom::Version(&reserved), op, staged, Default::default()).await?;
    Ok((new, metrics))
}

/// Reserve the new fragments' ids (a commit of their own, as pylance does) and decide what
/// becomes of the indices over the fragments `groups` rewrite: those holding stable row
/// ids follow their rows; those holding addresses that can be remapped are rewritten for
/// the new addresses (which needs the new ids); the others (zones of rows) stop covering
/// them.
async fn move_indices(
    ds: &Dataset,
    groups: &mut [(Vec<DataFragment>, Vec<DataFragment>)],
    staged: &Staged,
) -> Result<(crate::table::transaction::IndicesMoved, Dataset)> {
    use super::index::{on_rewrite, OnRewrite};
    let mut moved = crate::table::transaction::IndicesMoved::default();
    let metadata = super::index_files::index_metadata(ds)?;
    let mut to_remap = Vec::new();
    for meta in &metadata {
        let segment = crate::table::index_segments::segment(meta)?;
        let covered = segment.live_fragments(ds.fragments());
        let touched = groups
            .iter()
            .any(|(old, _)| old.iter().all(|f| covered.contains(f.id as u32)));
        if !touched {
            continue;
        }
        match on_rewrite(&segment, ds.has_stable_row_ids()) {
            OnRewrite::FollowRows => {
                if let Some(u) = &meta.uuid {
                    moved.following_rows.push(u.uuid.clone());
                }
            }
            OnRewrite::Remap => to_remap.push(meta),
            OnRewrite::Uncover => {}
        }
    }
    // pylance reserves the new fragments' ids in a version of its own whatever the
    // indices: so do we, so that a compaction advances the version as it does there.
    let count: usize = groups.iter().map(|(_, new)| new.len()).sum();
    let count = u32::try_from(count)
        .map_err(|_| Error::invalid(format!("{}: too many new fragments", ds.uri())))?;
    // Checked as the rewrite it is for: a compaction that could not follow what was
    // committed meanwhile reserves nothing.
    let rewrite = Operation::Rewrite {
        groups: groups.to_vec(),
        indices: Default::default(),
    };
    let reserved = commit(
        ReadFrom::Version(ds),
        Operation::ReserveFragments {
            count,
            checked_as: Some(Box::new(rewrite)),
        },
        Staged::new(ds.storage()),
        Default::default(),
    )
    .await?;
    let last = reserved.manifest.max_fragment_id.unwrap_or(0) as u64;
    let mut next = last + 1 - count as u64;
    let mut map = crate::index::remap::AddressMap::default();
    for (_, new) in groups.iter_mut() {
        for f in new.iter_mut() {
            f.id = next;
            next += 1;
        }
    }
    moved.ids_reserved = true;
    if to_remap.is_empty() {
        return Ok((moved, reserved));
    }
    for (old, new) in groups.iter() {
        let mut from = Vec::with_capacity(old.len());
        for f in old.iter() {
            let deleted = ds
                .deletions(f)
                .await?
                .map(|d| (*d).clone())
                .unwrap_or_default();
            from.push((f.id as u32, ds.physical_rows(f).await?, deleted));
        }
        let to: Vec<(u32, u64)> = new.iter().map(|f| (f.id as u32, f.physical_rows)).collect();
        map.add_group(&from, &to)
            .map_err(|e| Error::invalid(format!("{}: {e}", ds.uri())))?;
    }
    let ds = Arc::new(ds.clone());
    for meta in to_remap {
        if let Some(r) = super::index::remap_segment(&ds, staged, meta, &map).await? {
            moved.rewritten.push(r);
        }
    }
    Ok((moved, reserved))
}

/// Compact `ds` (at its version) in this process; returns the dataset at the new version
/// and what changed. Nothing to do commits nothing.
pub async fn compact_files(
    ds: &Dataset,
    opts: &CompactionOptions,
) -> Result<(Dataset, CompactionMetrics)> {
    let tasks = plan_compaction(ds, opts).await?;
    let staged = Staged::new(ds.storage());
    let run = async {
        let mut results = Vec::with_capacity(tasks.len());
        for task in tasks {
            let new = execute_into(ds, &task, opts, &staged).await?;
            results.push((task.fragment_ids, new));
        }
        Ok(results)
    };
    let results = staged.guard(run).await?;
    commit_rewrite(ds, results, staged).await
}
