//! Deleting rows: find the rows a predicate matches, merge them with each fragment's
//! existing deletions into a new deletion file, and commit. A fragment whose rows are all
//! deleted leaves the manifest.
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use futures::TryStreamExt;

use super::commit_on;
use super::rows::{add_address, delete_rows, discard_removal, RowsByFragment};
use crate::dataset::Dataset;
use crate::error::Result;
use crate::scan::{scan, ScanOptions};
use crate::table::transaction::Operation;

/// Row offsets, by fragment, of the rows of `ds` matching `predicate` (deleted rows aside).
pub async fn matching_rows(
    ds: &Arc<Dataset>,
    predicate: &crate::expr::Expr,
) -> Result<RowsByFragment> {
    let options = ScanOptions {
        columns: Some(vec![]),
        with_row_address: true,
        filter: Some(predicate.clone()),
        batch_size: 64 * 1024,
        ..Default::default()
    };
    let s = scan(ds.clone(), options)?;
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

/// Delete the rows matching `predicate` (SQL text); returns the dataset at the new version.
/// A commit that loses to one changing the same fragments is re-run against the new
/// version, up to `retries` times (as pylance's delete).
pub async fn delete(ds: &Dataset, predicate: &str, retries: u32) -> Result<Dataset> {
    let expr = crate::expr::parse(predicate)?;
    super::with_conflict_retries(ds, retries, |ds| {
        let expr = expr.clone();
        async move {
            let ds = Arc::new(ds);
            let rows = matching_rows(&ds, &expr).await?;
            let removal = delete_rows(&ds, &rows).await?;
            let op = Operation::Delete {
                updated: removal.updated.clone(),
                deleted_ids: removal.removed_ids.clone(),
                predicate: predicate.to_string(),
            };
            let committed = commit_on(&ds, op).await;
            if committed.is_err() {
                discard_removal(&ds, &removal).await;
            }
            committed
        }
    })
    .await
}
