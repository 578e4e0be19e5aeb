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

use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::scan::take::take;
use crate::scan::{scan, Projection, ScanOptions};

/// Below this share of a fragment's rows passing, the other columns are taken for the
/// rows that passed; above it, the fragment is scanned whole. A take of 1% of the rows
/// of a wide table costs about a tenth of scanning it; near 3% they cost the same.
const TAKE_FRACTION: f64 = 0.02;
/// A limit without a filter up to this many rows reads them by random access.
pub const TAKE_LIMIT: u64 = 64 * 1024;
/// Rows taken at once, so that memory stays bounded when many rows pass.
const TAKE_BATCH: usize = 64 * 1024;

/// Whether a query is better served here than by the pipeline.
pub fn applies(ds: &Dataset, query: &super::Query) -> bool {
    let options = &query.scan;
    if !query.late_materialization || options.include_deleted {
        return false;
    }
    match &options.filter {
        // Rows an index finds are taken (also within a range of rows: a Spark task's).
        Some(f) if query.use_scalar_index && crate::index::search::may_help(ds, f) => true,
        _ if options.row_range.is_some() => false,
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

/// Start such a read; `schema` is the schema of the batches it returns. The read runs
/// in the consumer's own polls, not as a task of its own: these reads are short (a point
/// query is a fraction of a millisecond), and handing one to a runtime thread and waking
/// the consumer for its result costs about as much again. Fragments read ahead
/// (`Ahead`) still run as tasks.
/// `use_scalar_index`: whether indices may answer the filter.
pub fn start(
    ds: Arc<Dataset>,
    options: ScanOptions,
    use_scalar_index: bool,
) -> BoxStream<'static, Result<RecordBatch>> {
    let (tx, rx) = mpsc::channel::<Result<Option<RecordBatch>>>(2);
    let producer = async move {
        let run = std::panic::AssertUnwindSafe(run(ds, options, use_scalar_index, tx.clone()))
            .catch_unwind();
        let end = match run.await {
            Ok(Ok(())) => Ok(None),
            Ok(Err(e)) => Err(e),
            Err(panic) => Err(Error::corrupt(
                "",
                format!(
                    "internal error while reading: {}",
                    crate::threads::cpu::panic_message(panic.as_ref())
                ),
            )),
        };
        let _ = tx.send(end).await;
    }
    .boxed();
    futures::stream::unfold(Some((rx, Some(producer))), |state| async move {
        let (mut rx, mut producer) = state?;
        // Poll the producer while waiting for its next message; once it has finished,
        // its last messages are in the channel.
        let message = loop {
            match producer.as_mut() {
                Some(p) => {
                    tokio::select! {
                        biased;
                        m = rx.recv() => break m,
                        _ = p => producer = None,
                    }
                }
                None => break rx.recv().await,
            }
        };
        match message {
            Some(Ok(Some(batch))) => Some((Ok(batch), Some((rx, producer)))),
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

async fn run(
    ds: Arc<Dataset>,
    options: ScanOptions,
    use_scalar_index: bool,
    tx: Sender,
) -> Result<()> {
    let projection = options.projection();
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
        .map(|c| crate::scan::resolve_column(&ds, c, "filter"))
        .collect::<Result<Vec<_>>>()?;
    let selection = match use_scalar_index {
        true => crate::index::search::select(&ds, &filter)
            .await?
            .map(Arc::new),
        false => None,
    };
    // Fragments where the index finds few rows are read filter-first (the index is
    // the filter), never whole.
    let indexed_few = |id: u64| {
        let part = selection.as_ref().and_then(|s| s.part(id));
        part.is_some_and(|p| few(p.yes.len(), ds.fragment(id).map_or(0, |f| f.physical_rows)))
    };
    let mut skip = options.offset.unwrap_or(0);
    let mut left = options.limit.unwrap_or(u64::MAX);
    // Indices answered exactly for every fragment, and few rows pass: they are known
    // already, and are taken at once (a point query costs one take, no read per
    // fragment).
    if let Some(known) = selection
        .as_ref()
        .and_then(|s| known_rows(&ds, s, &fragments, options.row_range))
    {
        let s = (skip as usize).min(known.len());
        let t = (left.min(usize::MAX as u64) as usize).min(known.len() - s);
        if options.count_rows_scanned {
            crate::storage::counters::record_rows_scanned(t as u64);
        }
        for part in known[s..s + t].chunks(TAKE_BATCH) {
            let batch = take(ds.clone(), part, &projection).await?;
            if !send(&tx, batch, options.batch_size).await {
                break;
            }
        }
        return Ok(());
    }
    // Filter-first reads of the next fragments run ahead of the one being returned.
    let mut ahead = Ahead::new(&ds, &options, &filter, &filter_columns, &projection);
    ahead.selection = selection.clone();
    let mut small_start = small_files_first(&ds, &options, &fragments, ahead.cap, indexed_few);
    let mut filter_first = small_start == 0;
    let mut next = 0;
    while next < fragments.len() && left > 0 {
        if filter_first {
            let Some(read) = ahead.next(&fragments, next).await? else {
                break;
            };
            next += 1;
            let (mut addresses, mut first) = (read.addresses, read.first);
            filter_first = few(addresses.len() as u64, read.rows);
            if filter_first {
                // The filter's columns were read first; the others are taken for the rows
                // that passed (the first part already, ahead).
                let s = (skip as usize).min(addresses.len());
                skip -= s as u64;
                let t = (left.min(usize::MAX as u64) as usize).min(addresses.len() - s);
                left -= t as u64;
                let mut done = 0;
                if let Some(batch) = first.take() {
                    let (from, to) = (s.min(batch.num_rows()), (s + t).min(batch.num_rows()));
                    if !send(&tx, batch.slice(from, to - from), options.batch_size).await {
                        return Ok(());
                    }
                    done = batch.num_rows();
                }
                addresses.truncate(s + t);
                let rest = &addresses[done.max(s).min(addresses.len())..];
                for part in rest.chunks(TAKE_BATCH) {
                    let batch = take(ds.clone(), part, &projection).await?;
                    if !send(&tx, batch, options.batch_size).await {
                        return Ok(());
                    }
                }
                continue;
            }
            // Rows pass often here: what ran ahead is not wanted, read this fragment whole
            // (its read may have started already, ahead).
            ahead.clear();
            let batches = match read.rest {
                Some(rest) => rest,
                None => {
                    let span = span_of(&addresses);
                    whole_scan(&ds, &options, &[fragments[next - 1]], span, skip, left)?
                }
            };
            let Some(returned) = forward(batches, &tx).await? else {
                return Ok(());
            };
            let passed = addresses.len() as u64;
            skip -= passed.saturating_sub(returned).min(skip);
            left = left.saturating_sub(returned);
            continue;
        }
        // Rows pass often: read the next fragments whole through the pipeline, a few at a
        // time so that their reads overlap, and look at how many pass again after them.
        let width = match std::mem::take(&mut small_start) {
            0 => ahead.cap,
            n => n,
        };
        let run = &fragments[next..(next + width).min(fragments.len())];
        let run = &run[..run.iter().take_while(|&&id| !indexed_few(id)).count()];
        if run.is_empty() {
            filter_first = true;
            continue;
        }
        next += run.len();
        let mut rows = 0;
        for id in run {
            if let Some(frag) = ds.fragment(*id) {
                rows += ds.fragment_rows(frag).await?;
            }
        }
        let batches = whole_scan(&ds, &options, run, None, skip, left)?;
        let Some(returned) = forward(batches, &tx).await? else {
            return Ok(());
        };
        let passed = match skip {
            0 => returned,
            // What the offset skipped is not known here: count the matches.
            _ => ds_count(&ds, run, &filter, options.row_range).await?,
        };
        skip -= passed.saturating_sub(returned).min(skip);
        left = left.saturating_sub(returned);
        filter_first = few(passed, rows);
    }
    Ok(())
}

/// How many of the first `fragments` (at most `cap`) to read whole before looking at how
/// many rows pass. On an object store, a fragment whose files are small is read whole in
/// one round trip per file (the pipeline reads such files whole on open), where
/// filter-first costs two (the files' tails, then the filter's columns) and more for the
/// rows that pass; and a small file transfers in about the time of a round trip. What a
/// selective filter then reads in vain is bounded by the memory the scan gives files
/// read whole; after these fragments, the rows seen passing decide as everywhere else.
fn small_files_first(
    ds: &Dataset,
    options: &ScanOptions,
    fragments: &[u64],
    cap: usize,
    indexed_few: impl Fn(u64) -> bool,
) -> usize {
    if ds.storage().is_local() {
        return 0;
    }
    // As much as the pipeline reads whole (`WholeFiles`), so that these files are.
    let mut room = crate::scan::WholeFiles::share(options.memory_budget);
    let mut n = 0;
    for &id in fragments.iter().take(cap) {
        let Some(frag) = ds.fragment(id).filter(|_| !indexed_few(id)) else {
            break;
        };
        let size: Option<u64> = frag
            .files
            .iter()
            .map(crate::table::data_file::recorded_size)
            .sum();
        match size {
            Some(size) if size <= room => room -= size,
            _ => break,
        }
        n += 1;
    }
    n
}

/// A fragment read filter-first: its row count, the addresses of the rows that passed,
/// and (when few passed) the first part of them already taken, or (when many passed) its
/// whole read, if that could start ahead.
struct FilterFirst {
    rows: u64,
    addresses: Vec<u64>,
    first: Option<RecordBatch>,
    rest: Option<Batches>,
}

type Batches = BoxStream<'static, Result<RecordBatch>>;

type Pending = futures::future::BoxFuture<'static, Result<FilterFirst>>;

/// Filter-first reads of the fragments after the one being returned, in order, so that
/// their round trips overlap: as many as the store serves well (`Storage::io_parallelism`).
/// Where reading ahead may be wasted, it waits until a fragment has shown that few of its
/// rows pass (else fragments are read whole): on a local disk, where wasted reads cost
/// the CPU that decodes the others (an object store's round trips cost more than the
/// bytes), and under a limit, where it then doubles with each such fragment, so that a
/// limit reached early wastes little.
struct Ahead {
    ds: Arc<Dataset>,
    options: ScanOptions,
    filter: crate::expr::Expr,
    columns: Vec<String>,
    projection: Projection,
    /// Rows to take ahead per fragment: what the offset and limit could ever want.
    take_cap: usize,
    running: futures::stream::FuturesOrdered<Pending>,
    /// Index (in the fragment list) of the first fragment not started.
    started: usize,
    /// Reads in flight now, and at most.
    width: usize,
    cap: usize,
    limited: bool,
    /// What indices found: their rows stand for the filter's in the fragments they
    /// cover.
    selection: Option<Arc<crate::index::selection::Selection>>,
    /// The read's own memory budget, and room for one fragment's whole read started
    /// ahead (see `read`).
    whole_budget: usize,
    whole_ahead: Arc<tokio::sync::Semaphore>,
}

impl Ahead {
    fn new(
        ds: &Arc<Dataset>,
        options: &ScanOptions,
        filter: &crate::expr::Expr,
        columns: &[String],
        projection: &Projection,
    ) -> Self {
        let wanted = options
            .limit
            .map_or(u64::MAX, |l| l.saturating_add(options.offset.unwrap_or(0)));
        let cap = ds.storage().io_parallelism();
        let limited = options.limit.is_some();
        let whole_budget = options.memory_budget;
        // Each read ahead scans with a share of the memory budget.
        let options = ScanOptions {
            memory_budget: (options.memory_budget / cap).max(1 << 20),
            ..options.clone()
        };
        let local = ds.storage().is_local();
        Ahead {
            ds: ds.clone(),
            options,
            filter: filter.clone(),
            columns: columns.to_vec(),
            projection: projection.clone(),
            take_cap: wanted.min(TAKE_BATCH as u64) as usize,
            running: futures::stream::FuturesOrdered::new(),
            started: 0,
            width: if local || limited { 1 } else { cap },
            cap,
            limited,
            selection: None,
            whole_budget,
            whole_ahead: Arc::new(tokio::sync::Semaphore::new(1)),
        }
    }

    /// Forget what runs ahead (the read goes on another way).
    fn clear(&mut self) {
        self.running = futures::stream::FuturesOrdered::new();
    }

    /// The filter-first read of fragment `fragments[at]`, starting the ones after it.
    async fn next(&mut self, fragments: &[u64], at: usize) -> Result<Option<FilterFirst>> {
        if self.running.is_empty() {
            self.started = at;
        }
        self.fill(fragments);
        let read = self.running.next().await.transpose()?;
        if let Some(r) = &read {
            self.width = match few(r.addresses.len() as u64, r.rows) {
                true if self.limited => (self.width * 2).min(self.cap),
                true => self.cap,
                false => 1,
            };
            // Start the next reads now, while the caller returns this fragment's rows.
            self.fill(fragments);
        }
        Ok(read)
    }

    fn fill(&mut self, fragments: &[u64]) {
        while self.running.len() < self.width && self.started < fragments.len() {
            self.running.push_back(self.read(fragments[self.started]));
            self.started += 1;
        }
    }

    /// Start the filter-first read of fragment `id` as a task of its own, so that it
    /// runs while the caller is busy with earlier fragments; dropped, it stops. When many
    /// of its rows pass and no offset or limit makes what it returns depend on the
    /// fragments before it, its whole read starts at once, not when its turn comes: the
    /// reads of earlier fragments may answer later than its own. One such read at a time,
    /// with the read's memory budget.
    fn read(&self, id: u64) -> Pending {
        let whole = (self.options.offset.is_none() && self.options.limit.is_none()).then(|| {
            let options = ScanOptions {
                memory_budget: self.whole_budget,
                ..self.options.clone()
            };
            (options, self.whole_ahead.clone())
        });
        let (ds, options, filter, columns, projection) = (
            self.ds.clone(),
            self.options.clone(),
            self.filter.clone(),
            self.columns.clone(),
            self.projection.clone(),
        );
        let take_cap = self.take_cap;
        let selection = self.selection.clone();
        let read = async move {
            let rows = match ds.fragment(id) {
                Some(frag) => ds.fragment_rows(frag).await?,
                None => 0,
            };
            let addresses = match selection.as_ref().and_then(|s| s.part(id)) {
                Some(part) => {
                    let (start, end) = options.row_range.unwrap_or((0, u64::MAX));
                    let found = part.addresses(id, start..end);
                    if options.count_rows_scanned {
                        crate::storage::counters::record_rows_scanned(found.len() as u64);
                    }
                    match part.exact {
                        true => found,
                        false => recheck(&ds, &found, &filter).await?,
                    }
                }
                None => matching(&ds, id, &filter, &columns, &options).await?,
            };
            let few = few(addresses.len() as u64, rows);
            let first = match few && take_cap > 0 {
                true => {
                    let n = addresses.len().min(take_cap);
                    Some(take(ds.clone(), &addresses[..n], &projection).await?)
                }
                false => None,
            };
            let started = match whole {
                Some((options, room)) if !few => {
                    room.try_acquire_owned().ok().map(|r| (options, r))
                }
                _ => None,
            };
            let rest = match started {
                Some((options, room)) => {
                    let span = span_of(&addresses);
                    let batches = whole_scan(&ds, &options, &[id], span, 0, u64::MAX)?;
                    // The room is given back when the read is done or dropped.
                    Some(
                        batches
                            .inspect(move |_| {
                                let _held = &room;
                            })
                            .boxed(),
                    )
                }
                None => None,
            };
            Ok(FilterFirst {
                rows,
                addresses,
                first,
                rest,
            })
        };
        let task = tokio::spawn(read);
        let running = AbortOnDrop(task.abort_handle());
        async move {
            let _running = running;
            task.await.unwrap_or_else(|e| {
                Err(Error::corrupt(
                    "",
                    format!("internal error while reading ahead: {e}"),
                ))
            })
        }
        .boxed()
    }
}

/// Fragments `ids` read whole through the pipeline (filtered), skipping `skip` of the
/// rows that pass and returning at most `left`; only the rows of `span` (physical rows of
/// each fragment) when it is given.
fn whole_scan(
    ds: &Arc<Dataset>,
    options: &ScanOptions,
    ids: &[u64],
    span: Option<(u64, u64)>,
    skip: u64,
    left: u64,
) -> Result<Batches> {
    let inner = ScanOptions {
        fragment_ids: Some(ids.to_vec()),
        row_range: span.or(options.row_range),
        offset: Some(skip).filter(|&s| s > 0),
        limit: Some(left).filter(|&l| l != u64::MAX),
        ..options.clone()
    };
    Ok(scan(ds.clone(), inner)?.batches)
}

/// The physical rows from the first to the last of `addresses` (of one fragment): no row
/// outside passed the filter, so the whole read of the fragment reads only the pages of
/// these.
fn span_of(addresses: &[u64]) -> Option<(u64, u64)> {
    let offsets = addresses.iter().map(|a| a & u32::MAX as u64);
    Some((offsets.clone().min()?, offsets.max()? + 1))
}

/// Send on what `batches` return; the rows sent, or None when the reader went away.
async fn forward(mut batches: Batches, tx: &Sender) -> Result<Option<u64>> {
    let mut returned = 0u64;
    while let Some(batch) = batches.try_next().await? {
        returned += batch.num_rows() as u64;
        if tx.send(Ok(Some(batch))).await.is_err() {
            return Ok(None);
        }
    }
    Ok(Some(returned))
}

/// Whether `passed` rows of `rows` are few enough to take.
/// The addresses of the rows that pass in `fragments` (within `row_range` of each), in
/// order, when `selection` answers exactly for every one of them and they are few.
fn known_rows(
    ds: &Dataset,
    selection: &crate::index::selection::Selection,
    fragments: &[u64],
    row_range: Option<(u64, u64)>,
) -> Option<Vec<u64>> {
    let (start, end) = row_range.unwrap_or((0, u64::MAX));
    let mut rows = 0u64;
    let mut out = Vec::new();
    for &id in fragments {
        let part = selection.part(id).filter(|p| p.exact)?;
        rows += ds.fragment(id)?.physical_rows;
        out.extend(part.addresses(id, start..end));
    }
    few(out.len() as u64, rows).then_some(out)
}

fn few(passed: u64, rows: u64) -> bool {
    (passed as f64) <= TAKE_FRACTION * rows.max(1) as f64
}

/// Rows of fragments `ids` that pass `filter`.
async fn ds_count(
    ds: &Arc<Dataset>,
    ids: &[u64],
    filter: &crate::expr::Expr,
    row_range: Option<(u64, u64)>,
) -> Result<u64> {
    let inner = ScanOptions {
        columns: Some(vec![]),
        filter: Some(filter.clone()),
        fragment_ids: Some(ids.to_vec()),
        row_range,
        batch_size: 64 * 1024,
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
        ..options.clone()
    };
    let batches: Vec<RecordBatch> = scan(ds.clone(), inner)?.batches.try_collect().await?;
    let mut out = Vec::new();
    for b in batches {
        out.extend_from_slice(addresses_of(&b)?);
    }
    Ok(out)
}

/// Those of the rows at `addresses` (an index's candidates) that pass `filter`, reading
/// only the filter's columns for them.
pub(super) async fn recheck(
    ds: &Arc<Dataset>,
    addresses: &[u64],
    filter: &crate::expr::Expr,
) -> Result<Vec<u64>> {
    let projection = Projection {
        columns: Some(vec![]),
        with_row_address: true,
        ..Default::default()
    };
    let mut out = Vec::new();
    for part in addresses.chunks(TAKE_BATCH) {
        let b = crate::scan::take::take_where(ds.clone(), part, &projection, Some(filter)).await?;
        out.extend_from_slice(addresses_of(&b)?);
    }
    Ok(out)
}

/// The `_rowaddr` column of a batch read with it.
fn addresses_of(b: &RecordBatch) -> Result<&[u64]> {
    b.column_by_name(crate::scan::ROW_ADDRESS)
        .and_then(|a| a.as_any().downcast_ref::<arrow_array::UInt64Array>())
        .map(|a| a.values().as_ref())
        .ok_or_else(|| Error::corrupt("", "internal: no u64 row addresses were read"))
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
