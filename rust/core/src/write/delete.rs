//! Deleting rows: find the rows a predicate matches, merge them with each fragment's
//! existing deletions into a new deletion file, and commit. A fragment whose rows are all
//! deleted leaves the manifest.
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use futures::TryStreamExt;

use super::rows::{add_address, delete_rows, RowsByFragment};
use super::{commit, ReadFrom};
use crate::dataset::Dataset;
use crate::error::Result;
use crate::expr::Expr;
use crate::proto::table::DataFragment;
use crate::scan::ScanOptions;
use crate::table::transaction::{Operation, Staged};

/// Row offsets, by fragment, of the rows of `ds` (of `fragment_ids` when given) matching
/// `predicate` (deleted rows aside).
pub async fn matching_rows(
    ds: &Arc<Dataset>,
    predicate: &Expr,
    fragment_ids: Option<Vec<u64>>,
) -> Result<RowsByFragment> {
    let options = ScanOptions {
        columns: Some(vec![]),
        with_row_address: true,
        filter: Some(predicate.clone()),
        batch_size: 64 * 1024,
        fragment_ids,
        ..Default::default()
    };
    let s = crate::query::run(ds.clone(), options.into())?;
    let mut rows = RowsByFragment::new();
    let mut batches = s.batches;
    while let Some(b) = batches.try_next().await? {
        let addrs = b.column(b.num_columns() - 1).as_primitive::<UInt64Type>();
        for &a in addrs.values() {
            add_address(&mut rows, a);
        }
    }
    Ok(rows)
}

/// Delete the rows matching `predicate`; returns the dataset at the new version. A commit
/// that loses to one changing the same fragments is re-run against the new version, up to
/// `retries` times (as pylance's delete).
pub async fn delete(ds: &Dataset, predicate: &Expr, retries: u32) -> Result<Dataset> {
    Ok(delete_counted(ds, predicate, retries).await?.0)
}

/// `delete`, also returning how many rows it deleted (pylance's `num_deleted_rows`).
pub async fn delete_counted(
    ds: &Dataset,
    predicate: &Expr,
    retries: u32,
) -> Result<(Dataset, u64)> {
    super::with_conflict_retries(ds, retries, |ds| async move {
        let ds = Arc::new(ds);
        let rows = matching_rows(&ds, predicate, None).await?;
        let count: u64 = rows.values().map(|r| r.len()).sum();
        let staged = Staged::new(ds.storage());
        let removal = staged.guard(delete_rows(&ds, &rows, &staged)).await?;
        let op = Operation::Delete {
            updated: removal.updated,
            deleted_ids: removal.removed_ids,
            // The transaction records the predicate as SQL (printing reads back as the
            // same expression).
            predicate: predicate.to_string(),
        };
        let done = commit(ReadFrom::Version(&ds), op, staged, Default::default()).await?;
        Ok((done, count))
    })
    .await
}

/// Delete the rows of fragment `fragment_id` matching `predicate` without committing
/// (pylance's `LanceFragment.delete`): the fragment with its new deletion file (unchanged
/// when no row matches), or None when no row is left. The deletion file written is the
/// caller's, to commit with a Delete or Update operation.
pub async fn delete_uncommitted(
    ds: &Dataset,
    fragment_id: u64,
    predicate: &Expr,
) -> Result<Option<DataFragment>> {
    let fragment = ds.fragment_or_err(fragment_id)?;
    let ds = Arc::new(ds.clone());
    let rows = matching_rows(&ds, predicate, Some(vec![fragment_id])).await?;
    stage_deletion(&ds, fragment, &rows).await
}

/// Delete rows `offsets` (physical offsets within the fragment) of fragment `fragment_id`
/// without committing (pylance's `LanceFragment.delete_rows`), as `delete_uncommitted`.
/// An offset past the fragment's rows is an error; one already deleted changes nothing.
pub async fn delete_offsets_uncommitted(
    ds: &Dataset,
    fragment_id: u64,
    offsets: &[u64],
) -> Result<Option<DataFragment>> {
    let fragment = ds.fragment_or_err(fragment_id)?;
    let rows = ds.physical_rows(fragment).await?;
    if let Some(bad) = offsets.iter().find(|&&o| o >= rows) {
        return Err(crate::error::Error::invalid(format!(
            "{}: fragment {fragment_id} has {rows} rows; offset {bad} is past its end",
            ds.uri()
        )));
    }
    let selected: RowsByFragment =
        [(fragment_id, offsets.iter().map(|&o| o as u32).collect())].into();
    stage_deletion(ds, fragment, &selected).await
}

/// Write the deletion file of `fragment` with `rows` added, left for the caller to commit.
async fn stage_deletion(
    ds: &Dataset,
    fragment: &DataFragment,
    rows: &RowsByFragment,
) -> Result<Option<DataFragment>> {
    if rows.values().all(|r| r.is_empty()) {
        return Ok(Some(fragment.clone()));
    }
    let staged = Staged::new(ds.storage());
    let removal = staged.guard(delete_rows(ds, rows, &staged)).await?;
    staged.keep();
    Ok(removal.updated.into_iter().next())
}
