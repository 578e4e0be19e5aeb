//! The scan pipeline. A driver task walks the fragments in order, opens their files and
//! starts one task per page (read, then decode on the CPU pool). Page tasks take permits
//! from a semaphore sized to the memory budget before reading, in row order, and the
//! decoded page keeps its permits until the consumer has used all of its rows; so memory
//! stays bounded and the pages needed next are always the ones being worked on.
//! The consumer cuts batches of rows from the decoded pages, rebuilds the requested
//! fields, drops deleted rows and adds `_rowid` / `_rowaddr`.
use std::collections::VecDeque;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions, UInt64Array};
use arrow_schema::SchemaRef;
use futures::stream::BoxStream;
use futures::StreamExt;
use roaring::RoaringBitmap;
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};
use tokio::task::AbortHandle;

use super::fragment::{estimated_bytes, open_leaf_sources, read_page};
use super::plan::{assemble, ScanPlan};
use super::ScanOptions;
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::proto::table::DataFragment;

/// Permits are KiB of decoded data.
const PERMIT_BYTES: u64 = 1024;

type PageResult = Result<(ArrayRef, OwnedSemaphorePermit)>;

struct PendingPage {
    start: u64,
    rows: u64,
    result: oneshot::Receiver<PageResult>,
}

struct LoadedPage {
    start: u64,
    array: ArrayRef,
    _permit: OwnedSemaphorePermit,
}

/// The pages of one leaf column in one fragment, consumed in row order.
#[derive(Default)]
struct LeafCursor {
    pending: VecDeque<PendingPage>,
    current: Option<LoadedPage>,
}

impl LeafCursor {
    /// Rows `row..row + n` of this leaf.
    async fn take(&mut self, row: u64, n: u64) -> Result<ArrayRef> {
        let end = row + n;
        let mut parts: Vec<ArrayRef> = Vec::with_capacity(1);
        let mut at = row;
        while at < end {
            let cur_end = self.current.as_ref().map(|c| c.start + c.array.len() as u64);
            if cur_end.is_none_or(|e| e <= at) {
                let next = self.pending.pop_front().ok_or_else(|| Error::corrupt("", format!("column has no data for row {at}")))?;
                if next.start + next.rows <= at {
                    continue; // a page before the rows wanted (skipped by offset)
                }
                let (array, permit) = next.result.await.map_err(|_| Error::corrupt("", "page task was lost"))??;
                self.current = Some(LoadedPage { start: next.start, array, _permit: permit });
                continue;
            }
            let cur = self.current.as_ref().unwrap();
            let off = (at - cur.start) as usize;
            let len = (end.min(cur.start + cur.array.len() as u64) - at) as usize;
            parts.push(cur.array.slice(off, len));
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
struct Tasks(Vec<AbortHandle>);
impl Drop for Tasks {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}

/// One fragment, ready to be consumed.
struct FragmentWork {
    fragment_id: u64,
    physical_rows: u64,
    deletions: Option<RoaringBitmap>,
    row_ids: Option<Arc<Vec<u64>>>,
    /// Visible rows to skip, then to return.
    skip: u64,
    take: u64,
    leaves: Vec<Option<LeafCursor>>,
    _tasks: Tasks,
}

pub fn start(dataset: Arc<Dataset>, plan: Arc<ScanPlan>, options: ScanOptions, schema: SchemaRef) -> BoxStream<'static, Result<RecordBatch>> {
    let (tx, rx) = mpsc::channel::<Result<FragmentWork>>(1);
    let budget = (options.memory_budget as u64 / PERMIT_BYTES).max(1);
    let semaphore = Arc::new(Semaphore::new(budget as usize));
    let driver = tokio::spawn(drive(dataset, plan.clone(), options.clone(), semaphore, budget, tx));
    let state = Consumer { rx, plan, options, schema, _driver: Tasks(vec![driver.abort_handle()]) };
    futures::stream::unfold(Some((state, None::<Batches>)), |st| async move {
        let (mut c, mut batches) = st?;
        loop {
            if batches.is_none() {
                match c.rx.recv().await {
                    None => return None,
                    Some(Err(e)) => return Some((Err(e), None)),
                    Some(Ok(work)) => batches = Some(Batches { work, row: 0 }),
                }
            }
            match c.next_batch(batches.as_mut().unwrap()).await {
                Ok(Some(batch)) => {
                    if batch.num_rows() > 0 {
                        return Some((Ok(batch), Some((c, batches))));
                    }
                }
                Ok(None) => batches = None,
                Err(e) => return Some((Err(e), None)),
            }
        }
    })
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
    tx: mpsc::Sender<Result<FragmentWork>>,
) {
    let fragments: Vec<DataFragment> = match &options.fragment_ids {
        None => ds.fragments().to_vec(),
        Some(ids) => ids.iter().filter_map(|id| ds.fragment(*id).cloned()).collect(),
    };
    let mut to_skip = options.offset.unwrap_or(0);
    let mut to_take = options.limit.unwrap_or(u64::MAX);
    for frag in fragments {
        if to_take == 0 {
            break;
        }
        let work = open_fragment(&ds, &plan, &options, &frag, &semaphore, budget, &mut to_skip, &mut to_take).await;
        match work {
            Ok(None) => continue,
            Ok(Some(w)) => {
                if tx.send(Ok(w)).await.is_err() {
                    return;
                }
            }
            Err(e) => {
                let _ = tx.send(Err(e)).await;
                return;
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn open_fragment(
    ds: &Dataset,
    plan: &ScanPlan,
    options: &ScanOptions,
    frag: &DataFragment,
    semaphore: &Arc<Semaphore>,
    budget: u64,
    to_skip: &mut u64,
    to_take: &mut u64,
) -> Result<Option<FragmentWork>> {
    let physical_rows = ds.physical_rows(frag).await?;
    let deletions = ds.deletions(frag).await?;
    let visible = physical_rows - deletions.as_ref().map(|d| d.len().min(physical_rows)).unwrap_or(0);
    if *to_skip >= visible {
        *to_skip -= visible;
        return Ok(None);
    }
    let skip = std::mem::take(to_skip);
    let take = (*to_take).min(visible - skip);
    *to_take -= take;
    let row_ids = if options.with_row_id && ds.has_stable_row_ids() {
        let ids = ds.row_ids(frag).await?.unwrap_or_default();
        if ids.len() as u64 != physical_rows {
            return Err(Error::corrupt(ds.uri(), format!("fragment {} has {} row ids for {physical_rows} rows", frag.id, ids.len())));
        }
        Some(Arc::new(ids))
    } else {
        None
    };
    let sources = open_leaf_sources(ds, frag, &plan.leaves).await?;

    // Every page of every leaf, ordered by first row so tasks run in the order needed.
    let mut pages = Vec::new();
    let mut leaves: Vec<Option<LeafCursor>> = Vec::with_capacity(sources.len());
    for (li, source) in sources.iter().enumerate() {
        let Some(src) = source else {
            leaves.push(None);
            continue;
        };
        let col = &src.file.metadata.columns[src.column];
        let mut start = 0u64;
        for (pi, p) in col.pages.iter().enumerate() {
            pages.push((start, li, pi, p.num_rows));
            start += p.num_rows;
        }
        if start != physical_rows {
            return Err(Error::corrupt(src.file.name(), format!("column {} has {start} rows, the fragment has {physical_rows}", src.column)));
        }
        leaves.push(Some(LeafCursor::default()));
    }
    pages.sort_by_key(|p| (p.0, p.1));
    let mut tasks = Vec::with_capacity(pages.len());
    for (start, li, pi, rows) in pages {
        let (tx, rx) = oneshot::channel();
        let src = sources[li].clone().unwrap();
        let leaf = plan.leaves[li].clone();
        let info = &src.file.metadata.columns[src.column].pages[pi];
        let Some(crate::encoding::levels::PathStep::Leaf(lf)) = leaf.path.last() else { unreachable!() };
        let cost = (estimated_bytes(info, lf.data_type()) / PERMIT_BYTES + 1).min(budget) as u32;
        let sem = semaphore.clone();
        let handle = tokio::spawn(async move {
            let permit = match sem.acquire_many_owned(cost).await {
                Ok(p) => p,
                Err(_) => return,
            };
            let out = read_page(&src, pi, &leaf).await.map(|a| (a, permit));
            let _ = tx.send(out);
        });
        tasks.push(handle.abort_handle());
        leaves[li].as_mut().unwrap().pending.push_back(PendingPage { start, rows, result: rx });
    }
    Ok(Some(FragmentWork {
        fragment_id: frag.id,
        physical_rows,
        deletions,
        row_ids,
        skip,
        take,
        leaves,
        _tasks: Tasks(tasks),
    }))
}

struct Consumer {
    rx: mpsc::Receiver<Result<FragmentWork>>,
    plan: Arc<ScanPlan>,
    options: ScanOptions,
    schema: SchemaRef,
    _driver: Tasks,
}

struct Batches {
    work: FragmentWork,
    row: u64,
}

impl Consumer {
    /// The next batch of the current fragment, or None when it is done.
    async fn next_batch(&mut self, b: &mut Batches) -> Result<Option<RecordBatch>> {
        let w = &mut b.work;
        if b.row >= w.physical_rows || w.take == 0 {
            return Ok(None);
        }
        let start = b.row;
        let n = (self.options.batch_size as u64).min(w.physical_rows - start);
        b.row += n;

        // Rows of this range that survive deletion, and how many of them to skip / keep.
        let deleted_here = w.deletions.as_ref().map(|d| d.range(start as u32..(start + n) as u32).count() as u64).unwrap_or(0);
        let visible_here = n - deleted_here;
        if w.skip >= visible_here {
            w.skip -= visible_here;
            // Nothing wanted here; still advance the leaf cursors past these rows lazily.
            return Ok(Some(RecordBatch::new_empty(self.schema.clone())));
        }

        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.schema.fields().len());
        for fp in &self.plan.fields {
            let mut parts = Vec::new();
            for li in fp.leaves() {
                if let Some(cursor) = w.leaves[li].as_mut() {
                    parts.push((li, cursor.take(start, n).await?));
                }
            }
            columns.push(assemble(fp, parts, n as usize)?);
        }
        let addrs = (start..start + n).map(|o| (w.fragment_id << 32) | o);
        if self.options.with_row_id {
            let ids: UInt64Array = match &w.row_ids {
                Some(ids) => ids[start as usize..(start + n) as usize].iter().copied().collect(),
                None => addrs.clone().collect(),
            };
            columns.push(Arc::new(ids));
        }
        if self.options.with_row_address {
            columns.push(Arc::new(addrs.collect::<UInt64Array>()));
        }
        let opts = RecordBatchOptions::new().with_row_count(Some(n as usize));
        let mut batch = RecordBatch::try_new_with_options(self.schema.clone(), columns, &opts)?;
        if let Some(d) = w.deletions.as_ref().filter(|_| deleted_here > 0) {
            let mut keep = vec![true; n as usize];
            for r in d.range(start as u32..(start + n) as u32) {
                keep[(r as u64 - start) as usize] = false;
            }
            batch = arrow_select::filter::filter_record_batch(&batch, &BooleanArray::from(keep))?;
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
        Ok(Some(batch))
    }
}
