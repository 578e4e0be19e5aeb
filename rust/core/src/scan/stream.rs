//! The scan pipeline. A driver task walks the fragments in order, opens their files and
//! starts one task per page (read, then decode on the CPU pool). Page tasks take permits
//! from a semaphore sized to the memory budget before reading, in row order, and the
//! decoded page keeps its permits until the consumer has used all of its rows; so memory
//! stays bounded and the pages needed next are always the ones being worked on.
//! The consumer cuts batches of rows from the decoded pages, rebuilds the requested
//! fields, drops deleted rows and adds `_rowid` / `_rowaddr`.
use std::collections::HashMap;
use std::collections::VecDeque;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions};
use arrow_schema::SchemaRef;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use roaring::RoaringBitmap;
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};
use tokio::task::AbortHandle;

use super::fragment::{
    decode_unit, estimated_bytes, open_leaf_sources, read_page, PageWork, WholeFiles,
};
use super::output::Output;
use super::plan::{assemble, ScanPlan};
use super::ScanOptions;
use crate::dataset::Dataset;
use crate::encoding::levels::items_per_row;
use crate::error::{Error, Result};
use crate::proto::table::DataFragment;

/// Permits are KiB of page data read ahead.
const PERMIT_BYTES: u64 = 1024;
/// Units of a page decoded ahead of the one being consumed, per leaf.
const LOOKAHEAD: usize = 2;
/// Fragments whose files are opened, and whose pages may be started, ahead of the one
/// being consumed (more on an object store: see `Storage::io_parallelism`). The memory
/// budget bounds the pages read ahead however many fragments that spans.
fn fragments_ahead(ds: &Dataset, options: &ScanOptions) -> usize {
    match (options.filter.is_some(), options.limit) {
        // A scan stopped by a limit opens only the fragment it needs next.
        (false, Some(_)) => 1,
        _ => ds.storage().io_parallelism(),
    }
}

type PageResult = Result<(Arc<PageWork>, OwnedSemaphorePermit)>;

struct PendingPage {
    start: u64,
    rows: u64,
    result: oneshot::Receiver<PageResult>,
}

enum Unit {
    NotStarted,
    Decoding(oneshot::Receiver<Result<ArrayRef>>),
    Ready(ArrayRef),
    Done,
}

/// A page being consumed: its units, decoded a few at a time ahead of the reader.
struct LoadedPage {
    start: u64,
    work: Arc<PageWork>,
    /// First row (within the page) of each unit, and the page's row count at the end.
    unit_starts: Vec<u64>,
    units: Vec<Unit>,
    _permit: OwnedSemaphorePermit,
}

impl LoadedPage {
    fn new(start: u64, work: Arc<PageWork>, permit: OwnedSemaphorePermit) -> Self {
        let mut unit_starts = vec![0u64];
        for r in work.unit_rows() {
            unit_starts.push(unit_starts.last().unwrap() + r);
        }
        let units = work
            .plan
            .unit_rows()
            .iter()
            .map(|_| Unit::NotStarted)
            .collect();
        LoadedPage {
            start,
            work,
            unit_starts,
            units,
            _permit: permit,
        }
    }

    fn end(&self) -> u64 {
        self.start + *self.unit_starts.last().unwrap()
    }

    /// Start decoding units `from..from + n` that have not started (a small page's are
    /// decoded when wanted, on the consumer's thread: see `crate::threads::cpu::INLINE_CPU_BYTES`).
    fn start_units(&mut self, from: usize, n: usize) {
        if self.work.stored_bytes < crate::threads::cpu::INLINE_CPU_BYTES {
            return;
        }
        for u in from..(from + n).min(self.units.len()) {
            if let Unit::NotStarted = self.units[u] {
                let (tx, rx) = oneshot::channel();
                let work = self.work.clone();
                crate::threads::spawn(move || {
                    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        decode_unit(&work, u)
                    }))
                    .unwrap_or_else(|panic| {
                        let message = crate::threads::cpu::panic_message(panic.as_ref());
                        Err(Error::corrupt(
                            &work.name,
                            format!("internal error while decoding: {message}"),
                        ))
                    });
                    let _ = tx.send(out);
                });
                self.units[u] = Unit::Decoding(rx);
            }
        }
    }

    /// The array of the unit holding page row `row` (relative to the dataset fragment),
    /// and that unit's first row.
    async fn unit_at(&mut self, row: u64) -> Result<(u64, ArrayRef)> {
        let rel = row - self.start;
        let u = self.unit_starts.partition_point(|&s| s <= rel) - 1;
        // Units before this one are no longer needed.
        for done in self.units[..u].iter_mut() {
            *done = Unit::Done;
        }
        self.start_units(u, LOOKAHEAD + 1);
        if let Unit::NotStarted = self.units[u] {
            let work = &self.work;
            let array = crate::threads::cpu::catch_panic(&work.name, || decode_unit(work, u))?;
            self.units[u] = Unit::Ready(array);
        }
        if let Unit::Decoding(rx) = &mut self.units[u] {
            let array = rx
                .await
                .map_err(|_| Error::corrupt(&self.work.name, "decoding task was lost"))??;
            self.units[u] = Unit::Ready(array);
        }
        match &self.units[u] {
            Unit::Ready(a) => Ok((self.start + self.unit_starts[u], a.clone())),
            _ => Err(Error::corrupt(
                &self.work.name,
                "internal: unit consumed twice",
            )),
        }
    }
}

/// The pages of one leaf column in one fragment, consumed in row order.
#[derive(Default)]
struct LeafCursor {
    pending: VecDeque<PendingPage>,
    current: Option<LoadedPage>,
}

impl LeafCursor {
    async fn load_next(&mut self, at: u64) -> Result<()> {
        loop {
            let next = self
                .pending
                .pop_front()
                .ok_or_else(|| Error::corrupt("", format!("column has no data for row {at}")))?;
            if next.start + next.rows <= at {
                continue; // a page before the rows wanted (skipped by offset)
            }
            let (work, permit) = next
                .result
                .await
                .map_err(|_| Error::corrupt("", "page task was lost"))??;
            let page = LoadedPage::new(next.start, work, permit);
            self.current = Some(page);
            return Ok(());
        }
    }

    /// Rows `row..row + n` of this leaf.
    async fn take(&mut self, row: u64, n: u64) -> Result<ArrayRef> {
        let end = row + n;
        let mut parts: Vec<ArrayRef> = Vec::with_capacity(1);
        let mut at = row;
        while at < end {
            if self.current.as_ref().is_none_or(|c| c.end() <= at) {
                self.load_next(at).await?;
                continue;
            }
            let page = self.current.as_mut().unwrap();
            let (unit_start, array) = page.unit_at(at).await?;
            let off = (at - unit_start) as usize;
            let len = (end.min(unit_start + array.len() as u64) - at) as usize;
            parts.push(array.slice(off, len));
            at += len as u64;
        }
        match parts.len() {
            1 => Ok(parts.pop().unwrap()),
            _ => {
                let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
                Ok(arrow_select::concat::concat(&refs)?)
            }
        }
    }
}

/// Aborts the page tasks of a fragment when the consumer no longer needs them.
#[derive(Default)]
struct Tasks(std::sync::Mutex<Vec<AbortHandle>>);
impl Tasks {
    fn push(&self, h: AbortHandle) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(h);
    }
}
impl Drop for Tasks {
    fn drop(&mut self) {
        for t in self.0.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            t.abort();
        }
    }
}

/// One fragment, ready to be consumed.
struct FragmentWork {
    /// The physical rows to read: `first_row..end_row`.
    first_row: u64,
    end_row: u64,
    deletions: Option<Arc<RoaringBitmap>>,
    /// What the plan's system columns are made from.
    system: super::system::FragmentSystem,
    /// Visible rows to skip, then to return.
    skip: u64,
    take: u64,
    leaves: Vec<Option<LeafCursor>>,
    _tasks: Arc<Tasks>,
}

pub fn start(
    dataset: Arc<Dataset>,
    plan: Arc<ScanPlan>,
    options: ScanOptions,
    read_schema: SchemaRef,
    output: Arc<Output>,
) -> BoxStream<'static, Result<RecordBatch>> {
    let (tx, rx) =
        mpsc::channel::<Result<Option<FragmentWork>>>(fragments_ahead(&dataset, &options));
    // Every leaf must be able to hold a page at once (a row needs them all), however
    // small the budget and however many columns.
    // On an object store, a share of the budget is for files read whole (`WholeFiles`).
    let remote = !dataset.storage().is_local();
    let whole_share = if remote {
        WholeFiles::share(options.memory_budget)
    } else {
        0
    };
    let page_bytes = options.memory_budget as u64 - whole_share;
    let whole = remote.then(|| WholeFiles::new(options.memory_budget));
    let budget = (page_bytes / PERMIT_BYTES).max(2 * plan.leaves.len() as u64 + 2);
    let semaphore = Arc::new(Semaphore::new(budget as usize));
    let driver = tokio::spawn({
        let work = drive(
            dataset,
            plan.clone(),
            options.clone(),
            semaphore,
            budget,
            whole,
            tx.clone(),
        );
        async move {
            // A panic while opening fragments must end the stream with an error, never
            // look like its end.
            if let Err(panic) = std::panic::AssertUnwindSafe(work).catch_unwind().await {
                let message = crate::threads::cpu::panic_message(panic.as_ref());
                let _ = tx
                    .send(Err(Error::corrupt(
                        "",
                        format!("internal error while planning the scan: {message}"),
                    )))
                    .await;
            }
        }
    });
    let (post_skip, post_take) = match options.filter {
        Some(_) => (
            options.offset.unwrap_or(0),
            options.limit.unwrap_or(u64::MAX),
        ),
        None => (0, u64::MAX),
    };
    let filtered = options.filter.is_some();
    let state = Consumer {
        rx,
        plan,
        options,
        read_schema,
        output: output.clone(),
        raw: filtered,
        _driver: Tasks(std::sync::Mutex::new(vec![driver.abort_handle()])),
    };
    let batches = futures::stream::unfold(Some((state, None::<Batches>)), |st| async move {
        let (mut c, mut batches) = st?;
        loop {
            if batches.is_none() {
                match c.rx.recv().await {
                    Some(Ok(None)) => return None,
                    Some(Err(e)) => return Some((Err(e), None)),
                    Some(Ok(Some(work))) => {
                        let row = work.first_row;
                        batches = Some(Batches { work, row })
                    }
                    // The driver went away without saying it was done.
                    None => {
                        let e = Error::corrupt("", "internal error: the scan stopped unexpectedly");
                        return Some((Err(e), None));
                    }
                }
            }
            match c.next_batch(batches.as_mut().unwrap()).await {
                Ok(Some(batch)) => {
                    if batch.0.num_rows() > 0 {
                        return Some((Ok(batch), Some((c, batches))));
                    }
                }
                Ok(None) => batches = None,
                Err(e) => return Some((Err(e), None)),
            }
        }
    });
    if !filtered {
        return batches.map(|r| r.map(|(b, _)| b)).boxed();
    }
    filter_on_workers(batches.boxed(), output, post_skip, post_take)
}

/// Batches read for a filtered scan, with the rows they lost to deletions, as the
/// consumer hands them on (`Consumer::raw`).
type RawBatch = (RecordBatch, Option<BooleanArray>);

/// Filter the batches of a filtered scan on the CPU workers, two at a time and in order
/// (the filter, deletions and the output expressions run beside the decoding instead of
/// after it on the reading thread), then apply the offset and limit to the rows that
/// passed, stopping once the limit is reached.
fn filter_on_workers(
    raw: BoxStream<'static, Result<RawBatch>>,
    output: Arc<Output>,
    post_skip: u64,
    post_take: u64,
) -> BoxStream<'static, Result<RecordBatch>> {
    raw.map(move |r| {
        let output = output.clone();
        async move {
            let (batch, keep) = r?;
            crate::threads::cpu::spawn_cpu("filtering a batch".into(), move || {
                let mask = output.mask(&batch, keep)?;
                let batch = match mask {
                    Some(m) => arrow_select::filter::filter_record_batch(&batch, &m)?,
                    None => batch,
                };
                output.finish(batch)
            })
            .await
        }
    })
    .buffered(2)
    .scan((post_skip, post_take), |(skip, take), r| {
        let out = match r {
            _ if *take == 0 => None,
            Err(e) => {
                *take = 0;
                Some(Err(e))
            }
            Ok(batch) => {
                // Offset and limit count filtered rows.
                let s = (*skip).min(batch.num_rows() as u64) as usize;
                *skip -= s as u64;
                let t = (*take).min((batch.num_rows() - s) as u64) as usize;
                *take -= t as u64;
                Some(Ok(batch.slice(s, t)))
            }
        };
        futures::future::ready(out)
    })
    .filter(|r| futures::future::ready(r.as_ref().map_or(true, |b| b.num_rows() > 0)))
    .boxed()
}

/// Open fragments in order and start their page tasks; stop early once `limit` rows are
/// covered; skip whole fragments covered by `offset`.
async fn drive(
    ds: Arc<Dataset>,
    plan: Arc<ScanPlan>,
    options: ScanOptions,
    semaphore: Arc<Semaphore>,
    budget: u64,
    whole: Option<WholeFiles>,
    tx: mpsc::Sender<Result<Option<FragmentWork>>>,
) {
    let fragments: Vec<DataFragment> = match &options.fragment_ids {
        None => ds.fragments().to_vec(),
        Some(ids) => ids
            .iter()
            .filter_map(|id| ds.fragment(*id).cloned())
            .collect(),
    };
    // Without a filter, offset and limit are known in rows and whole fragments can be
    // skipped; with one, the consumer applies them to the filtered rows.
    let filtered = options.filter.is_some();
    let mut to_skip = if filtered {
        0
    } else {
        options.offset.unwrap_or(0)
    };
    let mut to_take = if filtered {
        u64::MAX
    } else {
        options.limit.unwrap_or(u64::MAX)
    };
    let ahead = fragments_ahead(&ds, &options);
    let bases = match plan
        .system
        .contains(&super::system::SystemColumn::RowOffset)
    {
        true => match super::system::offset_bases(&ds).await {
            Ok(b) => Some(b),
            Err(e) => {
                let _ = tx.send(Err(e)).await;
                return;
            }
        },
        false => None,
    };
    let mut opened = futures::stream::iter(fragments)
        .map(|frag| {
            let (ds, plan, options, bases, whole) = (
                ds.clone(),
                plan.clone(),
                options.clone(),
                bases.clone(),
                whole.clone(),
            );
            async move {
                let bases = bases.as_deref();
                read_fragment(&ds, &plan, &options, &frag, bases, whole.as_ref()).await
            }
        })
        .buffered(ahead);
    while let Some(opened) = opened.next().await {
        if to_take == 0 {
            break;
        }
        let work =
            opened.and_then(|o| start_fragment(&plan, &options, o, &mut to_skip, &mut to_take));
        match work {
            Ok(None) => continue,
            Ok(Some((w, pages))) => {
                let tasks = w._tasks.clone();
                if tx.send(Ok(Some(w))).await.is_err() {
                    return;
                }
                // Budget permits are taken here, one page after the other in row order,
                // so the page the consumer needs next is never starved by later ones.
                // A page costs at most a share of the budget that leaves room for the next
                // page while every leaf holds the page it is being read from.
                let cap = (budget / (plan.leaves.len() as u64 + 1)).max(1);
                for p in pages {
                    if p.result.is_closed() {
                        continue; // the consumer stopped early
                    }
                    let permit = match semaphore
                        .clone()
                        .acquire_many_owned(p.cost.min(cap) as u32)
                        .await
                    {
                        Ok(permit) => permit,
                        Err(_) => return,
                    };
                    let PageTask {
                        source,
                        page,
                        start,
                        leaf,
                        result,
                        ..
                    } = p;
                    let batch_size = options.batch_size as u64;
                    let handle = tokio::spawn(async move {
                        let units = super::fragment::Units::Scan { batch_size };
                        let read = read_page(&source, page, start, &leaf, units);
                        let out = match std::panic::AssertUnwindSafe(read).catch_unwind().await {
                            Ok(r) => r.map(|a| (a, permit)),
                            Err(panic) => Err(Error::corrupt(
                                source.file.name(),
                                format!(
                                    "internal error while reading column {} page {page}: {}",
                                    source.column,
                                    crate::threads::cpu::panic_message(panic.as_ref())
                                ),
                            )),
                        };
                        let _ = result.send(out);
                    });
                    tasks.push(handle.abort_handle());
                }
            }
            Err(e) => {
                let _ = tx.send(Err(e)).await;
                return;
            }
        }
    }
    let _ = tx.send(Ok(None)).await;
}

/// A page to read, once the driver has its budget permits.
struct PageTask {
    source: super::fragment::LeafSource,
    page: usize,
    start: u64,
    leaf: super::plan::LeafPlan,
    cost: u64,
    result: oneshot::Sender<PageResult>,
}

/// What starting a fragment needs read first: its row count, deletions, stable row ids
/// and the files of the leaves read. Read for a few fragments ahead of the one started,
/// so that their requests overlap.
struct OpenedFragment {
    physical_rows: u64,
    deletions: Option<Arc<RoaringBitmap>>,
    system: super::system::FragmentSystem,
    sources: Vec<Option<super::fragment::LeafSource>>,
}

async fn read_fragment(
    ds: &Dataset,
    plan: &ScanPlan,
    options: &ScanOptions,
    frag: &DataFragment,
    offset_bases: Option<&HashMap<u64, u64>>,
    whole: Option<&WholeFiles>,
) -> Result<OpenedFragment> {
    let physical_rows = ds.physical_rows(frag).await?;
    let deletions = if options.include_deleted {
        None
    } else {
        ds.deletions(frag).await?
    };
    let system = super::system::FragmentSystem::load(
        ds,
        frag,
        &plan.system,
        offset_bases,
        deletions.clone(),
    )
    .await?;
    let system = match options.include_deleted {
        true => system.showing_deleted(ds.deletions(frag).await?),
        false => system,
    };
    let sources = open_leaf_sources(ds, frag, &plan.leaves, whole).await?;
    Ok(OpenedFragment {
        physical_rows,
        deletions,
        system,
        sources,
    })
}

/// Start an opened fragment: the work for the consumer, and its page tasks in row order;
/// None when `offset` skips all of it.
fn start_fragment(
    plan: &ScanPlan,
    options: &ScanOptions,
    opened: OpenedFragment,
    to_skip: &mut u64,
    to_take: &mut u64,
) -> Result<Option<(FragmentWork, Vec<PageTask>)>> {
    let OpenedFragment {
        physical_rows,
        deletions,
        system,
        sources,
    } = opened;
    let (first_row, end_row) = match options.row_range {
        Some((lo, hi)) => (
            lo.min(physical_rows),
            hi.clamp(lo.min(physical_rows), physical_rows),
        ),
        None => (0, physical_rows),
    };
    let deleted = deletions
        .as_ref()
        .filter(|_| end_row > first_row)
        .map(|d| d.range_cardinality(first_row as u32..=(end_row - 1) as u32))
        .unwrap_or(0);
    let visible = (end_row - first_row).saturating_sub(deleted);
    if *to_skip >= visible {
        *to_skip -= visible;
        return Ok(None);
    }
    let skip = std::mem::take(to_skip);
    let take = (*to_take).min(visible - skip);
    *to_take -= take;

    // Every page of every leaf, ordered by first row so tasks run in the order needed.
    let mut pages = Vec::new();
    let mut leaves: Vec<Option<LeafCursor>> = Vec::with_capacity(sources.len());
    for (li, source) in sources.iter().enumerate() {
        let Some(src) = source else {
            leaves.push(None);
            continue;
        };
        let col = &src.file.metadata.columns[src.column];
        // Pages of leaves inside fixed-size lists of structs count items.
        let per_row = items_per_row(&plan.leaves[li].path);
        let mut start = 0u64;
        for (pi, p) in col.pages.iter().enumerate() {
            if p.num_rows % per_row != 0 {
                return Err(Error::corrupt(
                    src.file.name(),
                    format!(
                        "column {} page {pi} holds {} items, not whole rows of {per_row}",
                        src.column, p.num_rows
                    ),
                ));
            }
            let rows = p.num_rows / per_row;
            // Only pages overlapping the rows wanted are read.
            if start < end_row && start + rows > first_row {
                pages.push((start, li, pi, rows));
            }
            start += rows;
        }
        if start != physical_rows {
            return Err(Error::corrupt(
                src.file.name(),
                format!(
                    "column {} has {start} rows, the fragment has {physical_rows}",
                    src.column
                ),
            ));
        }
        leaves.push(Some(LeafCursor::default()));
    }
    pages.sort_by_key(|p| (p.0, p.1));
    let mut tasks = Vec::with_capacity(pages.len());
    for (start, li, pi, rows) in pages {
        let (tx, rx) = oneshot::channel();
        let source = sources[li].clone().unwrap();
        let leaf = plan.leaves[li].clone();
        let info = &source.file.metadata.columns[source.column].pages[pi];
        let Some(crate::encoding::levels::PathStep::Leaf(lf)) = leaf.path.last() else {
            unreachable!()
        };
        let cost = estimated_bytes(info, lf.data_type()) / PERMIT_BYTES + 1;
        tasks.push(PageTask {
            source,
            page: pi,
            start,
            leaf,
            cost,
            result: tx,
        });
        leaves[li].as_mut().unwrap().pending.push_back(PendingPage {
            start,
            rows,
            result: rx,
        });
    }
    let work = FragmentWork {
        first_row,
        end_row,
        deletions,
        system,
        skip,
        take,
        leaves,
        _tasks: Arc::new(Tasks::default()),
    };
    Ok(Some((work, tasks)))
}

struct Consumer {
    rx: mpsc::Receiver<Result<Option<FragmentWork>>>,
    plan: Arc<ScanPlan>,
    options: ScanOptions,
    /// The columns read (the plan's, then the row id columns).
    read_schema: SchemaRef,
    /// The filter, and what is returned of each batch read.
    output: Arc<Output>,
    /// Filtered scans: hand batches on unfiltered, with the rows deletions leave
    /// (`filter_on_workers` does the rest).
    raw: bool,
    _driver: Tasks,
}

struct Batches {
    work: FragmentWork,
    row: u64,
}

impl Consumer {
    /// The next batch of the current fragment, or None when it is done.
    async fn next_batch(&mut self, b: &mut Batches) -> Result<Option<RawBatch>> {
        let w = &mut b.work;
        if b.row >= w.end_row || w.take == 0 {
            return Ok(None);
        }
        let start = b.row;
        let n = (self.options.batch_size as u64).min(w.end_row - start);
        b.row += n;

        // Rows of this range that survive deletion, and how many of them to skip / keep.
        let deleted_here = w
            .deletions
            .as_ref()
            .map(|d| d.range(start as u32..(start + n) as u32).count() as u64)
            .unwrap_or(0);
        let visible_here = n - deleted_here;
        if w.skip >= visible_here {
            w.skip -= visible_here;
            // Nothing wanted here; still advance the leaf cursors past these rows lazily.
            return Ok(Some((
                RecordBatch::new_empty(self.output.schema.clone()),
                None,
            )));
        }

        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.plan.fields.len() + 2);
        for fp in &self.plan.fields {
            let mut parts = Vec::new();
            for li in fp.leaves() {
                if let Some(cursor) = w.leaves[li].as_mut() {
                    parts.push((li, cursor.take(start, n).await?));
                }
            }
            columns.push(assemble(fp, parts, n as usize)?);
        }
        columns.extend(w.system.columns_in(&self.plan.system, start, start + n));
        if self.options.count_rows_scanned {
            crate::storage::counters::record_rows_scanned(n);
        }
        let opts = RecordBatchOptions::new().with_row_count(Some(n as usize));
        let mut batch =
            RecordBatch::try_new_with_options(self.read_schema.clone(), columns, &opts)?;
        let mut keep = None;
        if let Some(d) = w.deletions.as_ref().filter(|_| deleted_here > 0) {
            let mut k = vec![true; n as usize];
            for r in d.range(start as u32..(start + n) as u32) {
                k[(r as u64 - start) as usize] = false;
            }
            keep = Some(BooleanArray::from(k));
        }
        if self.raw {
            return Ok(Some((batch, keep)));
        }
        if let Some(keep) = keep {
            batch = arrow_select::filter::filter_record_batch(&batch, &keep)?;
        }
        if w.skip > 0 {
            let s = w.skip as usize;
            batch = batch.slice(s, batch.num_rows() - s);
            w.skip = 0;
        }
        if batch.num_rows() as u64 > w.take {
            batch = batch.slice(0, w.take as usize);
        }
        w.take -= batch.num_rows() as u64;
        Ok(Some((self.output.finish(batch)?, None)))
    }
}
