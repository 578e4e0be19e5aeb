//! Reads that go through random access instead of the streaming pipeline:
//!
//! - Filtered scans materialize late: per fragment, the filter's columns are scanned
//!   first, and the other columns are then taken for the rows that passed. Where most
//!   rows pass, taking costs more than scanning, so the selectivity seen in a fragment
//!   decides how the next one is read (the whole fragment through the pipeline once
//!   rows pass often, filter-first again once they pass rarely).
//! - A small `limit` without a filter takes the rows it covers instead of reading whole
//!   pages of every column.
//!
//! Both yield exactly what the pipeline would: the same schema, rows and order.
use std::sync::Arc;

use arrow_array::RecordBatch;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt, TryStreamExt};
use tokio::sync::mpsc;

use super::take::take;
use super::{scan, Projection, ScanOptions};
use crate::dataset::Dataset;
use crate::error::{Error, Result};

/// Below this share of a fragment's rows passing, the other columns are taken for the
/// rows that passed; above it, the fragment is scanned whole. A take of 1% of the rows
/// of a wide table costs about a tenth of scanning it; near 3% they cost the same.
const TAKE_FRACTION: f64 = 0.02;
/// A limit without a filter up to this many rows reads them by random access.
pub const TAKE_LIMIT: u64 = 64 * 1024;
/// Rows taken at once, so that memory stays bounded when many rows pass.
const TAKE_BATCH: usize = 64 * 1024;

/// Whether a scan is better served here than by the pipeline.
pub fn applies(ds: &Dataset, options: &ScanOptions) -> bool {
    if !options.late_materialization || options.include_deleted || options.row_range.is_some() {
        return false;
    }
    match &options.filter {
        // Filter-first pays only when the filter does not read every column asked for.
        Some(f) => {
            let needed: Vec<String> = f.columns().into_iter().collect();
            let asked = match (&options.projection, &options.columns) {
                (Some(exprs), _) => exprs.iter().flat_map(|(_, e)| e.columns()).collect(),
                (None, Some(cols)) => cols.clone(),
                (None, None) => ds.schema.fields.iter().map(|f| f.name.clone()).collect(),
            };
            asked
                .iter()
                .any(|c| !needed.iter().any(|n| n.eq_ignore_ascii_case(c)))
        }
        None => options
            .limit
            .is_some_and(|l| l.saturating_add(options.offset.unwrap_or(0)) <= TAKE_LIMIT),
    }
}

/// Start such a read; `schema` is the schema of the batches it returns.
pub fn start(ds: Arc<Dataset>, options: ScanOptions) -> BoxStream<'static, Result<RecordBatch>> {
    let (tx, rx) = mpsc::channel::<Result<Option<RecordBatch>>>(2);
    let task = tokio::spawn({
        let tx = tx.clone();
        async move {
            let run = std::panic::AssertUnwindSafe(run(ds, options, tx.clone())).catch_unwind();
            let end = match run.await {
                Ok(Ok(())) => Ok(None),
                Ok(Err(e)) => Err(e),
                Err(panic) => Err(Error::corrupt(
                    "",
                    format!(
                        "internal error while reading: {}",
                        super::cpu::panic_message(panic.as_ref())
                    ),
                )),
            };
            let _ = tx.send(end).await;
        }
    });
    let abort = AbortOnDrop(task.abort_handle());
    futures::stream::unfold(Some((rx, abort)), |state| async move {
        let (mut rx, abort) = state?;
        match rx.recv().await {
            Some(Ok(Some(batch))) => Some((Ok(batch), Some((rx, abort)))),
            Some(Ok(None)) => None,
            Some(Err(e)) => Some((Err(e), None)),
            None => Some((
                Err(Error::corrupt(
                    "",
                    "internal error: the read stopped unexpectedly",
                )),
                None,
            )),
        }
    })
    .boxed()
}

struct AbortOnDrop(tokio::task::AbortHandle);
impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

type Sender = mpsc::Sender<Result<Option<RecordBatch>>>;

/// Send `batch` in pieces of the batch size; false when the reader is gone.
async fn send(tx: &Sender, batch: RecordBatch, batch_size: usize) -> bool {
    let mut at = 0;
    while at < batch.num_rows() {
        let n = batch_size.min(batch.num_rows() - at);
        if tx.send(Ok(Some(batch.slice(at, n)))).await.is_err() {
            return false;
        }
        at += n;
    }
    true
}

async fn run(ds: Arc<Dataset>, options: ScanOptions, tx: Sender) -> Result<()> {
    let projection = Projection {
        columns: options.columns.clone(),
        exprs: options.projection.clone(),
        with_row_id: options.with_row_id,
        with_row_address: options.with_row_address,
    };
    let Some(filter) = options.filter.clone() else {
        // A small limit: take the rows it covers.
        let offset = options.offset.unwrap_or(0);
        let total = match &options.fragment_ids {
            None => ds.count_rows().await?,
            Some(_) => u64::MAX,
        };
        let end = (offset + options.limit.unwrap_or(0)).min(total);
        let indices: Vec<u64> = (offset..end).collect();
        let addresses = match &options.fragment_ids {
            None => ds.addresses_of_indices(&indices).await?,
            Some(ids) => addresses_in(&ds, ids, &indices).await?,
        };
        let batch = take(ds.clone(), &addresses, &projection).await?;
        send(&tx, batch, options.batch_size).await;
        return Ok(());
    };
    let fragments: Vec<u64> = match &options.fragment_ids {
        None => ds.fragments().iter().map(|f| f.id).collect(),
        Some(ids) => ids.clone(),
    };
    let filter_columns = filter
        .columns()
        .iter()
        .map(|c| super::resolve_column(&ds, c, "filter"))
        .collect::<Result<Vec<_>>>()?;
    let mut skip = options.offset.unwrap_or(0);
    let mut left = options.limit.unwrap_or(u64::MAX);
    let mut filter_first = true;
    for id in fragments {
        if left == 0 {
            break;
        }
        let Some(frag) = ds.fragment(id) else {
            continue;
        };
        let rows = ds.fragment_rows(frag).await?;
        let mut known = None;
        if filter_first {
            // The filter's columns first; then the others for the rows that passed, when
            // few did.
            let mut addresses = matching(&ds, id, &filter, &filter_columns, &options).await?;
            filter_first = few(addresses.len() as u64, rows);
            known = Some(addresses.len() as u64);
            if filter_first {
                let s = (skip as usize).min(addresses.len());
                skip -= s as u64;
                addresses.drain(..s);
                addresses.truncate(left.min(usize::MAX as u64) as usize);
                left -= addresses.len() as u64;
                for part in addresses.chunks(TAKE_BATCH) {
                    let batch = take(ds.clone(), part, &projection).await?;
                    if !send(&tx, batch, options.batch_size).await {
                        return Ok(());
                    }
                }
                continue;
            }
        }
        // Rows pass often here: read the fragment whole through the pipeline.
        let inner = ScanOptions {
            fragment_ids: Some(vec![id]),
            offset: Some(skip).filter(|&s| s > 0),
            limit: Some(left).filter(|&l| l != u64::MAX),
            late_materialization: false,
            ..options.clone()
        };
        let mut batches = scan(ds.clone(), inner)?.batches;
        let mut returned = 0u64;
        while let Some(batch) = batches.try_next().await? {
            returned += batch.num_rows() as u64;
            if tx.send(Ok(Some(batch))).await.is_err() {
                return Ok(());
            }
        }
        if skip > 0 {
            // What the offset skipped is not known here: count this fragment's matches.
            let passed = match known {
                Some(n) => n,
                None => ds_count(&ds, id, &filter).await?,
            };
            let skipped = passed.saturating_sub(returned).min(skip);
            skip -= skipped;
            filter_first = few(passed, rows);
        } else {
            filter_first = few(returned, rows);
        }
        left = left.saturating_sub(returned);
    }
    Ok(())
}

/// Whether `passed` rows of `rows` are few enough to take.
fn few(passed: u64, rows: u64) -> bool {
    (passed as f64) <= TAKE_FRACTION * rows.max(1) as f64
}

/// Rows of fragment `id` that pass `filter`.
async fn ds_count(ds: &Arc<Dataset>, id: u64, filter: &crate::expr::Expr) -> Result<u64> {
    let inner = ScanOptions {
        columns: Some(vec![]),
        filter: Some(filter.clone()),
        fragment_ids: Some(vec![id]),
        batch_size: 64 * 1024,
        late_materialization: false,
        ..Default::default()
    };
    let batches: Vec<RecordBatch> = scan(ds.clone(), inner)?.batches.try_collect().await?;
    Ok(batches.iter().map(|b| b.num_rows() as u64).sum())
}

/// The addresses of the rows of fragment `id` that pass `filter`, reading only the
/// filter's columns.
async fn matching(
    ds: &Arc<Dataset>,
    id: u64,
    filter: &crate::expr::Expr,
    columns: &[String],
    options: &ScanOptions,
) -> Result<Vec<u64>> {
    let inner = ScanOptions {
        columns: Some(columns.to_vec()),
        projection: None,
        filter: Some(filter.clone()),
        fragment_ids: Some(vec![id]),
        with_row_id: false,
        with_row_address: true,
        offset: None,
        limit: None,
        batch_size: 64 * 1024,
        late_materialization: false,
        ..options.clone()
    };
    let batches: Vec<RecordBatch> = scan(ds.clone(), inner)?.batches.try_collect().await?;
    let mut out = Vec::new();
    for b in batches {
        let a = b.column(b.num_columns() - 1);
        let a = a
            .as_any()
            .downcast_ref::<arrow_array::UInt64Array>()
            .ok_or_else(|| Error::corrupt("", "internal: row addresses are not u64"))?;
        out.extend_from_slice(a.values());
    }
    Ok(out)
}

/// The addresses of visible rows `indices` counted over fragments `ids`, in that order.
async fn addresses_in(ds: &Dataset, ids: &[u64], indices: &[u64]) -> Result<Vec<u64>> {
    let mut out = Vec::with_capacity(indices.len());
    let mut start = 0u64;
    let mut wanted = indices.iter().copied().peekable();
    for &id in ids {
        let Some(frag) = ds.fragment(id) else {
            continue;
        };
        let rows = ds.fragment_rows(frag).await?;
        let mine: Vec<u64> = std::iter::from_fn(|| wanted.next_if(|&i| i < start + rows))
            .map(|i| i - start)
            .collect();
        let offsets = ds.physical_offsets(frag, &mine).await?;
        out.extend(offsets.into_iter().map(|o| (id << 32) | o as u64));
        start += rows;
    }
    Ok(out)
}
