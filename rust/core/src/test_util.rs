//! Helpers shared by the crate's unit tests: tables in `memory://` stores, written and
//! read back whole.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arrow_array::RecordBatch;
use futures::TryStreamExt;

use crate::dataset::Dataset;
use crate::scan::{scan, ScanOptions};
use crate::write::{write_dataset, WriteMode, WriteOptions};

/// A predicate from SQL text (the writers take expressions).
pub fn sql(text: &str) -> crate::expr::Expr {
    crate::expr::parse(text).unwrap()
}

/// A fresh `memory://` table URI per call (memory stores are shared by name in a process).
pub fn uri() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "memory://unit-tests-{}/t.lance",
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Write `batch` to `uri` in `mode`, at most `rows_per_file` rows per data file.
pub async fn write(uri: &str, batch: RecordBatch, mode: WriteMode, rows_per_file: u64) -> Dataset {
    let opts = WriteOptions {
        mode,
        max_rows_per_file: rows_per_file,
        ..Default::default()
    };
    write_dataset(
        uri,
        batch.schema(),
        futures::stream::iter(vec![Ok(batch)]),
        opts,
    )
    .await
    .unwrap()
}

/// Every live row of `ds`, in scan order, as one batch.
pub async fn read(ds: &Dataset) -> RecordBatch {
    scan_all(ds, ScanOptions::default()).await
}

/// What a scan of `ds` with `options` returns, as one batch.
pub async fn scan_all(ds: &Dataset, options: ScanOptions) -> RecordBatch {
    let s = scan(Arc::new(ds.clone()), options).unwrap();
    let schema = s.schema.clone();
    let batches: Vec<RecordBatch> = s.batches.try_collect().await.unwrap();
    arrow_select::concat::concat_batches(&schema, &batches).unwrap()
}

/// Every object under the table's root but its manifests.
pub async fn files(ds: &crate::dataset::Dataset) -> Vec<String> {
    let mut out: Vec<String> = ds
        .storage()
        .list_all("")
        .await
        .unwrap()
        .into_iter()
        .map(|m| ds.storage().relative(&m.location).to_string())
        .filter(|p| !p.starts_with("_versions"))
        .collect();
    out.sort();
    out
}
