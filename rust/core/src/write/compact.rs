//! Compaction, as pylance's `optimize.compact_files`: runs of small neighbouring fragments
//! are merged into fragments of about `target_rows_per_fragment` rows, and fragments that
//! lost many rows to deletes are rewritten without them. Rows keep their order and their
//! stable row ids (the new fragments' sequences list the old ids); one `Rewrite` commit.
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use futures::StreamExt;

use super::{commit_operation, writable_version, write_fragments, WriteOptions};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::proto::table::data_fragment::RowIdSequence as RowIdSeq;
use crate::proto::table::DataFragment;
use crate::scan::{scan, ScanOptions};
use crate::storage::Storage;
use crate::table::commit::Operation;

#[derive(Clone, Debug)]
pub struct CompactionOptions {
    pub target_rows_per_fragment: u64,
    pub materialize_deletions: bool,
    /// A fragment with more than this share of its rows deleted is rewritten.
    pub materialize_deletions_threshold: f64,
    pub batch_size: usize,
}

impl Default for CompactionOptions {
    fn default() -> Self {
        CompactionOptions {
            target_rows_per_fragment: 1024 * 1024,
            materialize_deletions: true,
            materialize_deletions_threshold: 0.1,
            batch_size: 64 * 1024,
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
    let mut runs: Vec<Vec<Candidate>> = vec![Vec::new()];
    for frag in ds.fragments() {
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
    storage: &Storage,
    group: &[DataFragment],
    rows: u64,
    opts: &CompactionOptions,
) -> Result<Vec<DataFragment>> {
    let stable = ds.has_stable_row_ids();
    let options = ScanOptions {
        fragment_ids: Some(group.iter().map(|f| f.id).collect()),
        with_row_id: stable,
        batch_size: opts.batch_size.max(1),
        late_materialization: false,
        ..Default::default()
    };
    let s = scan(ds.clone(), options)?;
    let ids = Arc::new(std::sync::Mutex::new(Vec::<u64>::new()));
    let columns = ds.schema.fields.len();
    let collect = ids.clone();
    // The row ids are set aside; the data goes to the writer as the dataset's columns.
    let batches = s.batches.map(move |b| {
        let b = b?;
        if stable {
            let col = b.column(columns).as_primitive::<UInt64Type>();
            collect
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend(col.values().iter().copied());
            return Ok(b.project(&(0..columns).collect::<Vec<_>>())?);
        }
        Ok(b)
    });
    let version = writable_version(&ds.data_storage_version(), ds.uri())?;
    // As many files as whole targets fit in the group (at least one), rows spread evenly:
    // a group of 1.4 targets is one file, not a full one and a small one.
    let files = (rows / opts.target_rows_per_fragment.max(1)).max(1);
    let write = WriteOptions {
        max_rows_per_file: rows.div_ceil(files).max(1),
        storage_options: ds.storage_options().clone(),
        ..Default::default()
    };
    let mut fragments =
        write_fragments(storage, &ds.schema, version, Box::pin(batches), &write).await?;
    if stable {
        let ids = ids.lock().unwrap_or_else(|e| e.into_inner());
        let mut at = 0usize;
        for f in fragments.iter_mut() {
            let n = f.physical_rows as usize;
            let slice = ids.get(at..at + n).ok_or_else(|| {
                Error::corrupt(ds.uri(), "compaction read fewer row ids than rows")
            })?;
            f.row_id_sequence = Some(RowIdSeq::InlineRowIds(
                crate::table::rowids::encode_row_ids(slice),
            ));
            at += n;
        }
    }
    Ok(fragments)
}

/// Compact `ds` (at its version); returns the dataset at the new version and what changed.
/// Nothing to do commits nothing.
pub async fn compact_files(
    ds: &Dataset,
    opts: &CompactionOptions,
) -> Result<(Dataset, CompactionMetrics)> {
    if ds.manifest.index_section.is_some() {
        return Err(Error::unsupported(
            ds.uri(),
            "compacting a dataset with indices (their fragment lists are not updated yet)",
        ));
    }
    let ds = Arc::new(ds.clone());
    let storage = Storage::open(ds.uri(), ds.storage_options())?;
    let groups = plan(&ds, opts).await?;
    let mut metrics = CompactionMetrics::default();
    if groups.is_empty() {
        return Ok(((*ds).clone(), metrics));
    }
    let mut rewritten = Vec::with_capacity(groups.len());
    for (group, rows) in groups {
        let new = match rewrite(&ds, &storage, &group, rows, opts).await {
            Ok(new) => new,
            Err(e) => {
                // Leave no files of this attempt behind.
                for f in rewritten
                    .iter()
                    .flat_map(|(_, n): &(Vec<DataFragment>, Vec<DataFragment>)| n.iter())
                {
                    for d in &f.files {
                        let _ = storage
                            .delete(&storage.path(&format!("data/{}", d.path)))
                            .await;
                    }
                }
                return Err(e);
            }
        };
        metrics.fragments_removed += group.len() as u64;
        // Deletion files go too (pylance counts them).
        metrics.files_removed += group
            .iter()
            .map(|f| f.files.len() as u64 + f.deletion_file.is_some() as u64)
            .sum::<u64>();
        metrics.fragments_added += new.len() as u64;
        metrics.files_added += new.iter().map(|f| f.files.len() as u64).sum::<u64>();
        rewritten.push((group, new));
    }
    let written: Vec<String> = rewritten
        .iter()
        .flat_map(|(_, new)| {
            new.iter()
                .flat_map(|f| f.files.iter().map(|d| d.path.clone()))
        })
        .collect();
    let op = Operation::Rewrite { groups: rewritten };
    match commit_operation(
        ds.uri(),
        op,
        Some(ds.version()),
        ds.storage_options().clone(),
    )
    .await
    {
        Ok(new) => Ok((new, metrics)),
        Err(e) => {
            // A conflict: the new files are nobody's; remove them, the caller may retry.
            for path in written {
                let _ = storage.delete(&storage.path(&format!("data/{path}"))).await;
            }
            Err(e)
        }
    }
}
