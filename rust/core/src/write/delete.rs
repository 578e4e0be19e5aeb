//! Deleting rows: find the rows a predicate matches in each fragment, merge them with the
//! fragment's existing deletions into a new deletion file, and commit. A fragment whose
//! rows are all deleted leaves the manifest.
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use futures::TryStreamExt;
use roaring::RoaringBitmap;

use super::commit_operation;
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::proto::table::{DataFragment, DeletionFile};
use crate::scan::{scan, ScanOptions};
use crate::table::commit::Operation;
use crate::table::deletion::{deletion_file_name, encode_deletions};

/// Row offsets of `frag` matching `predicate` (among rows not already deleted).
async fn matching_rows(
    ds: &Arc<Dataset>,
    frag: &DataFragment,
    predicate: &crate::expr::Expr,
) -> Result<RoaringBitmap> {
    let options = ScanOptions {
        columns: Some(vec![]),
        with_row_address: true,
        fragment_ids: Some(vec![frag.id]),
        filter: Some(predicate.clone()),
        batch_size: 64 * 1024,
        ..Default::default()
    };
    let s = scan(ds.clone(), options)?;
    let batches: Vec<_> = s.batches.try_collect().await?;
    let mut rows = RoaringBitmap::new();
    for b in batches {
        let addrs = b.column(b.num_columns() - 1).as_primitive::<UInt64Type>();
        rows.extend(addrs.values().iter().map(|a| (*a & 0xFFFF_FFFF) as u32));
    }
    Ok(rows)
}

/// Delete the rows matching `predicate` (SQL text); returns the dataset at the new version.
pub async fn delete(ds: &Dataset, predicate: &str) -> Result<Dataset> {
    let expr = crate::expr::parse(predicate)?;
    let ds = Arc::new(ds.clone());
    let storage = crate::storage::Storage::open(ds.uri(), ds.storage_options())?;
    let read_version = ds.version();
    let mut updated = Vec::new();
    let mut deleted_ids = Vec::new();
    for frag in ds.fragments() {
        let hits = matching_rows(&ds, frag, &expr).await?;
        if hits.is_empty() {
            continue;
        }
        let mut all = ds
            .deletions(frag)
            .await?
            .map(|d| (*d).clone())
            .unwrap_or_default();
        all |= hits;
        if all.len() >= ds.physical_rows(frag).await? {
            deleted_ids.push(frag.id);
            continue;
        }
        if frag
            .deletion_file
            .as_ref()
            .is_some_and(|d| d.base_id.is_some())
        {
            return Err(Error::unsupported(
                ds.uri(),
                "deleting from fragments whose deletions live under another base path",
            ));
        }
        let (kind, bytes) = encode_deletions(&all)?;
        let file = DeletionFile {
            file_type: kind as i32,
            read_version,
            id: rand_id(),
            num_deleted_rows: all.len(),
            base_id: None,
        };
        storage
            .put(
                &storage.path(&format!(
                    "_deletions/{}",
                    deletion_file_name(frag.id, &file)
                )),
                bytes,
            )
            .await?;
        let mut f = frag.clone();
        f.deletion_file = Some(file);
        updated.push(f);
    }
    let op = Operation::Delete {
        updated,
        deleted_ids,
        predicate: predicate.to_string(),
    };
    commit_operation(
        ds.uri(),
        op,
        Some(read_version),
        ds.storage_options().clone(),
    )
    .await
}

/// A random id for a deletion file name (collisions between concurrent writers must not happen).
fn rand_id() -> u64 {
    let u = uuid::Uuid::new_v4();
    u64::from_le_bytes(u.as_bytes()[..8].try_into().unwrap()) >> 1
}
