//! `merge_insert` (upsert): source rows are matched to the table's rows on key columns.
//! Matched rows are updated (written anew, deleted where they were) or deleted, source
//! rows without a match are inserted, table rows without a match may be deleted; one
//! `Update` transaction, as pylance writes it.
//!
//! Memory is bounded by the table's keys, not by the source or the rows: the table's key
//! columns are read and hashed (`keys.rs`), then the source is read as a stream, each
//! batch matched against them and its new rows written as it comes (`apply.rs`: whole
//! table rows are taken only where a condition or a partial source needs them, for that
//! batch). The addresses of the rows changed are kept, to delete them once the source
//! ends, with the unmatched rows `when_not_matched_by_source_delete` removes. A retry
//! after a conflict reads the source again from what was kept of it (`source.rs`).
//! Spark's merge joins on its side and hands each task its joined rows (`joined.rs`).
mod apply;
mod joined;
mod keys;
mod source;
#[cfg(test)]
mod tests;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::stream::BoxStream;
use roaring::RoaringTreemap;

pub use joined::{
    commit_merge_parts, merge_joined, MergePart, MergeParts, JOINED_ADDRESS, JOINED_BY_SOURCE,
    JOINED_FROM_SOURCE, JOINED_ROW_ID,
};
use source::{SourceBatches, SourceShape, KEEP_IN_MEMORY};

use super::rows::{commit_update, delete_rows, Removal, RowsByFragment};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::proto::table::DataFragment;
use crate::table::transaction::{InsertedKeys, Staged};

/// What happens to a table row whose key a source row has.
#[derive(Clone, Debug, PartialEq)]
pub enum WhenMatched {
    /// Keep the table row (and do not insert the source row).
    DoNothing,
    /// Replace the table row with the source row, where `condition` (over `source.x` and
    /// `target.x`) holds, or always.
    UpdateAll {
        condition: Option<Expr>,
    },
    Delete,
    /// A match is an error.
    Fail,
}

/// The clauses of a merge, as pylance's builder sets them.
#[derive(Clone, Debug)]
pub struct MergeInsert {
    pub on: Vec<String>,
    pub when_matched: WhenMatched,
    pub insert_not_matched: bool,
    /// Delete table rows no source row matches: None keeps them; Some(None) deletes all of
    /// them; Some(Some(predicate)) those where it holds.
    pub delete_not_matched_by_source: Option<Option<Expr>>,
    pub conflict_retries: u32,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MergeStats {
    pub inserted: u64,
    pub updated: u64,
    pub deleted: u64,
}

/// A merge's source: batches of one schema, read once, in order.
pub type SourceStream = BoxStream<'static, Result<RecordBatch>>;

/// Where a merge's source batches come from, which decides how they are kept for a
/// retry after a conflict (nothing is kept when no retry is allowed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceIs {
    /// The batches of a table in memory: kept as they are, which costs nothing more.
    InMemory,
    /// Read once from elsewhere (a file, a generator): kept in memory up to 64 MiB, the
    /// rest in a temporary file in the system's temporary directory.
    Streamed,
}

/// Run the merge of `source` (a stream of batches of `source_schema`) into `ds`. A
/// commit that loses to one touching the same fragments re-runs the match against the
/// new version, up to `conflict_retries` times, reading the source again from what the
/// first run kept of it (see `SourceIs`). Returns the dataset at the new version and the
/// counts.
pub async fn merge_insert(
    ds: &Dataset,
    source: SourceStream,
    source_schema: SchemaRef,
    source_is: SourceIs,
    params: &MergeInsert,
) -> Result<(Dataset, MergeStats)> {
    let keep = match source_is {
        _ if params.conflict_retries == 0 => None,
        SourceIs::InMemory => Some(usize::MAX),
        SourceIs::Streamed => Some(KEEP_IN_MEMORY),
    };
    merge_batches(ds, SourceBatches::new(source_schema, source, keep), params).await
}

async fn merge_batches(
    ds: &Dataset,
    source: SourceBatches,
    params: &MergeInsert,
) -> Result<(Dataset, MergeStats)> {
    check_clauses(ds, params)?;
    // Attempts run one after another; each reads the source from its start.
    let source = tokio::sync::Mutex::new(source);
    super::with_conflict_retries(ds, params.conflict_retries, |ds| {
        let source = &source;
        async move {
            let mut source = source.lock().await;
            source.rewind().await?;
            let m = stage_merge(&ds, &mut source, params).await?;
            let new = commit_update(
                &ds,
                m.removal,
                m.fragments,
                all_fields(&ds),
                m.keys,
                m.staged,
            )
            .await?;
            Ok((new, m.stats))
        }
    })
    .await
}

/// A merge must change something and have a key.
fn check_clauses(ds: &Dataset, params: &MergeInsert) -> Result<()> {
    let changes_nothing = params.when_matched == WhenMatched::DoNothing
        && !params.insert_not_matched
        && params.delete_not_matched_by_source.is_none();
    if changes_nothing {
        return Err(Error::invalid(format!(
            "{}: merge_insert has no clause that changes the table (when_matched_update_all, \
             when_matched_delete, when_not_matched_insert_all, when_not_matched_by_source_delete)",
            ds.uri()
        )));
    }
    if params.on.is_empty() {
        return Err(Error::invalid(format!(
            "{}: merge_insert needs at least one key column",
            ds.uri()
        )));
    }
    Ok(())
}

/// The by-source clause's predicate, when it has one.
fn by_source_expr(params: &MergeInsert) -> Option<&Expr> {
    params
        .delete_not_matched_by_source
        .as_ref()
        .and_then(|p| p.as_ref())
}

/// Every field of the table: a merge may change any column.
fn all_fields(ds: &Dataset) -> Vec<u32> {
    ds.schema
        .field_ids()
        .into_iter()
        .map(|i| i as u32)
        .collect()
}

/// A merge's files, written and staged but not committed (dropped, they are removed).
struct StagedMerge {
    fragments: Vec<DataFragment>,
    removal: Removal,
    keys: Option<InsertedKeys>,
    stats: MergeStats,
    staged: Staged,
}

/// The most rows of a source batch matched at once (a larger batch is matched in slices,
/// bounding the rows taken and built for it).
const SLICE_ROWS: usize = 32 * 1024;

/// Match the source against `ds` and write the updated and inserted rows and the deletion
/// files the merge needs.
async fn stage_merge(
    ds: &Dataset,
    source: &mut SourceBatches,
    params: &MergeInsert,
) -> Result<StagedMerge> {
    let shape = SourceShape::new(ds, source.schema(), &params.on)?;
    let by_source = by_source_expr(params);
    let staged = Staged::new(ds.storage());
    let work = async {
        let deleting = params
            .delete_not_matched_by_source
            .as_ref()
            .map(|_| by_source);
        let table = &keys::TableKeys::read(ds, &params.on, deleting).await?;
        let shape = &shape;
        let (fragments, done) = apply::run(
            ds,
            params,
            &shape.missing,
            "",
            &staged,
            |mut changes| async move {
                while let Some(batch) = source.next().await? {
                    super::blob_v2::check_new_references(ds, &batch)
                        .map_err(|e| e.in_file(ds.uri()))?;
                    let batch = shape.conform(&batch)?;
                    for start in (0..batch.num_rows()).step_by(SLICE_ROWS) {
                        let slice = batch.slice(start, SLICE_ROWS.min(batch.num_rows() - start));
                        let (pairs, unmatched) = table.matches(&slice, &params.on)?;
                        changes.apply(&slice, pairs, &unmatched).await?;
                    }
                }
                Ok(changes.finish())
            },
        )
        .await?;
        let mut stats = done.stats;
        let unmatched = &table.deletable - &done.matched;
        stats.deleted += unmatched.len();
        let removal = delete_rows(ds, &by_fragment(&(done.changed | unmatched)), &staged).await?;
        Ok((fragments, removal, done.inserted_keys, stats))
    };
    let (fragments, removal, keys, stats) = staged.guard(work).await?;
    Ok(StagedMerge {
        fragments,
        removal,
        keys,
        stats,
        staged,
    })
}

/// Row addresses as row offsets by fragment.
fn by_fragment(addresses: &RoaringTreemap) -> RowsByFragment {
    addresses
        .bitmaps()
        .map(|(fragment, offsets)| (fragment as u64, offsets.clone()))
        .collect()
}

/// What a merge did when run without committing (pylance's `analyze_plan` of a merge).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MergeAnalysis {
    pub stats: MergeStats,
    /// Data files written (updated and inserted rows).
    pub files_written: u64,
    /// Their bytes.
    pub bytes_written: u64,
    /// Fragments given a new deletion file.
    pub deletion_files_written: u64,
}

/// Run the merge of `source` into `ds` as `merge_insert` would, without committing: its
/// counts and what it wrote, then its files are removed.
pub async fn analyze_merge(
    ds: &Dataset,
    source: SourceStream,
    source_schema: SchemaRef,
    params: &MergeInsert,
) -> Result<MergeAnalysis> {
    check_clauses(ds, params)?;
    let mut source = SourceBatches::new(source_schema, source, None);
    let m = stage_merge(ds, &mut source, params).await?;
    let files = m.fragments.iter().flat_map(|f| &f.files);
    let analysis = MergeAnalysis {
        stats: m.stats,
        files_written: files.clone().count() as u64,
        bytes_written: files.map(|f| f.file_size_bytes).sum(),
        deletion_files_written: m.removal.updated.len() as u64,
    };
    m.staged.remove_all().await;
    Ok(analysis)
}

/// The field ids of the key columns `on`, in that order.
pub fn key_field_ids(ds: &Dataset, on: &[String]) -> Result<Vec<i32>> {
    on.iter()
        .map(|key| {
            ds.schema.field(key).map(|f| f.id).ok_or_else(|| {
                Error::invalid(format!(
                    "{}: merge_insert key column '{key}' does not exist",
                    ds.uri()
                ))
            })
        })
        .collect()
}
