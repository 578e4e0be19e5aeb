//! Random access: the rows at given row addresses (`fragment id << 32 | row offset`), in
//! the order asked, repeats included. Each fragment's wanted rows are read column by
//! column: only the pages that hold them, and within a page only the units (mini-block
//! chunks, a few full-zip rows) that hold them are decoded. The columns are put back
//! together with the scan's own plan, so a take returns exactly what a scan would.
use std::sync::Arc;

use arrow_array::{new_null_array, Array, ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use futures::StreamExt;

use arrow_buffer::Buffer;
use arrow_schema::DataType;
use bytes::Bytes;

use super::fragment::{
    decode_unit, decode_unit_rows, open_leaf_sources, read_page, Chain, LeafSource, PageWork,
    Units, WholeFiles,
};
use super::plan::{assemble, LeafPlan};
use super::system::{FragmentSystem, SystemColumn};
use super::{prepare, Projection, ScanOptions};
use crate::dataset::Dataset;
use crate::encoding::layout::{bulk_buffer, plan_page_without_bulk, UnitSizing};
use crate::encoding::levels::{items_per_row, PathStep};
use crate::error::{Error, Result};
use crate::file::PageEncoding;
use crate::proto::encodings21::PageLayout;
use crate::proto::table::DataFragment;

/// The rows at `addresses`, in that order, with the columns `projection` asks for.
pub async fn take(
    ds: Arc<Dataset>,
    addresses: &[u64],
    projection: &Projection,
) -> Result<RecordBatch> {
    take_where(ds, addresses, projection, None).await
}

/// Those of the rows at `addresses` (in that order) for which `filter` holds.
pub async fn take_where(
    ds: Arc<Dataset>,
    addresses: &[u64],
    projection: &Projection,
    filter: Option<&crate::expr::Expr>,
) -> Result<RecordBatch> {
    let p = prepare(&ds, projection, filter)?;
    let mut sorted = addresses.to_vec();
    sorted.sort_unstable();
    sorted.dedup();

    // The wanted rows of each fragment, in address order.
    let mut groups: Vec<(DataFragment, Vec<u32>)> = Vec::new();
    for run in sorted.chunk_by(|a, b| a >> 32 == b >> 32) {
        let id = run[0] >> 32;
        let frag = ds.fragment(id).ok_or_else(|| {
            Error::invalid(format!(
                "{}: row address {} is in fragment {id}, which this version does not have",
                ds.uri(),
                run[0]
            ))
        })?;
        groups.push((frag.clone(), run.iter().map(|a| *a as u32).collect()));
    }
    let bases = match p.plan.system.contains(&SystemColumn::RowOffset) {
        true => Some(super::system::offset_bases(&ds).await?),
        false => None,
    };
    // On an object store, files whose reads would span them anyway are read whole on
    // open, with the memory a scan with default options gives such files.
    let whole =
        (!ds.storage().is_local()).then(|| WholeFiles::new(ScanOptions::default().memory_budget));
    // Owned inputs for each fragment's read, so that the futures borrow nothing.
    let reads: Vec<_> = groups
        .iter()
        .map(|(frag, offsets)| {
            let (ds, plan, frag, offsets, bases) = (
                ds.clone(),
                p.plan.clone(),
                frag.clone(),
                offsets.clone(),
                bases.clone(),
            );
            let whole = whole.as_ref().map(|w| w.taking(offsets.len()));
            async move {
                let mut columns =
                    fragment_rows(&ds, &frag, &plan, &offsets, whole.as_ref()).await?;
                if !plan.system.is_empty() {
                    let system =
                        FragmentSystem::load(&ds, &frag, &plan.system, bases.as_deref(), None)
                            .await?;
                    let offsets: Vec<u64> = offsets.iter().map(|&o| o as u64).collect();
                    columns.extend(system.columns(&plan.system, &offsets));
                }
                Ok::<_, Error>(columns)
            }
        })
        .collect();
    let parts: Vec<Vec<ArrayRef>> = futures::stream::iter(reads)
        .buffered(ds.storage().io_parallelism())
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<_>>()?;

    // Each column read (data, then system) over all fragments, in address order.
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(p.read_schema.fields().len());
    for (f, field) in p.read_schema.fields().iter().enumerate() {
        let pieces: Vec<&dyn Array> = parts.iter().map(|c| c[f].as_ref()).collect();
        columns.push(match pieces.len() {
            0 => new_null_array(field.data_type(), 0),
            1 => parts[0][f].clone(),
            _ => arrow_select::concat::concat(&pieces)?,
        });
    }
    let opts = RecordBatchOptions::new().with_row_count(Some(sorted.len()));
    let batch = RecordBatch::try_new_with_options(p.read_schema.clone(), columns, &opts)?;
    // Back to the order asked, repeats included.
    let order: UInt32Array = addresses
        .iter()
        .map(|a| sorted.binary_search(a).map(|i| i as u32).ok())
        .collect();
    let batch = if order.len() == sorted.len()
        && order
            .values()
            .iter()
            .enumerate()
            .all(|(i, &v)| i as u32 == v)
    {
        batch
    } else {
        arrow_select::take::take_record_batch(&batch, &order)?
    };
    let batch = match p.output.mask(&batch, None)? {
        Some(keep) => arrow_select::filter::filter_record_batch(&batch, &keep)?,
        None => batch,
    };
    p.output.finish(batch)
}

/// Rows `offsets` (sorted, distinct) of a fragment: one array per field of the plan.
async fn fragment_rows(
    ds: &Dataset,
    frag: &DataFragment,
    plan: &super::plan::ScanPlan,
    offsets: &[u32],
    whole: Option<&WholeFiles>,
) -> Result<Vec<ArrayRef>> {
    let physical = ds.physical_rows(frag).await?;
    if let Some(&last) = offsets.last().filter(|&&o| o as u64 >= physical) {
        return Err(Error::invalid(format!(
            "{}: row {last} of fragment {} does not exist (it has {physical} rows)",
            ds.uri(),
            frag.id
        )));
    }
    let sources = open_leaf_sources(ds, frag, &plan.leaves, whole).await?;
    let reads = sources
        .iter()
        .zip(&plan.leaves)
        .map(|(source, leaf)| async move {
            match source {
                None => Ok(None),
                Some(src) => leaf_rows(ds, src, leaf, offsets, physical).await.map(Some),
            }
        });
    let leaves = futures::future::try_join_all(reads).await?;
    plan.fields
        .iter()
        .map(|fp| {
            let parts = fp
                .leaves()
                .filter_map(|li| leaves[li].clone().map(|a| (li, a)))
                .collect();
            assemble(fp, parts, offsets.len())
        })
        .collect()
}

/// Rows `offsets` of one leaf, shaped like its path (as a scan's units are).
async fn leaf_rows(
    ds: &Dataset,
    src: &LeafSource,
    leaf: &LeafPlan,
    offsets: &[u32],
    physical: u64,
) -> Result<ArrayRef> {
    let col = &src.file.metadata.columns[src.column];
    let per_row = items_per_row(&leaf.path);
    // First row of each page, and the end.
    let mut starts = Vec::with_capacity(col.pages.len() + 1);
    let mut at = 0u64;
    for p in &col.pages {
        starts.push(at);
        at += p.num_rows / per_row;
    }
    starts.push(at);
    if at != physical {
        return Err(Error::corrupt(
            src.file.name(),
            format!(
                "column {} has {at} rows, the fragment has {physical}",
                src.column
            ),
        ));
    }
    // The wanted rows of each page.
    let mut reads = Vec::new();
    let mut i = 0;
    while i < offsets.len() {
        let row = offsets[i] as u64;
        let page = starts.partition_point(|&s| s <= row) - 1;
        let end = starts[page + 1];
        let j = i + offsets[i..].partition_point(|&o| (o as u64) < end);
        reads.push(page_rows(ds, src, leaf, page, starts[page], &offsets[i..j]));
        i = j;
    }
    let parts = futures::future::try_join_all(reads).await?;
    match parts.len() {
        1 => Ok(parts.into_iter().next().unwrap()),
        _ => {
            let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
            Ok(arrow_select::concat::concat(&refs)?)
        }
    }
}

/// Rows `offsets` (fragment rows, all in this page) of one page of a leaf.
async fn page_rows(
    ds: &Dataset,
    src: &LeafSource,
    leaf: &LeafPlan,
    page: usize,
    page_start: u64,
    offsets: &[u32],
) -> Result<ArrayRef> {
    let rel: Vec<u64> = offsets.iter().map(|&o| o as u64 - page_start).collect();
    let info = &src.file.metadata.columns[src.column].pages[page];
    // Legacy leaves in no list: read just the elements wanted.
    if let Some(Chain::Legacy(chain)) = &src.chain {
        let read = super::legacy::read_group_rows(src.file.clone(), chain, &leaf.path, page, &rel);
        if let Some(rows) = read.await.map_err(|e| {
            e.context(&format!("column {} page {page}", src.column))
                .in_file(src.file.name())
        })? {
            return Ok(rows);
        }
    }
    // 2.0 pages of plain fixed-width values: read just the values wanted.
    if let (None, PageEncoding::Array(enc)) = (&src.chain, &info.encoding) {
        if let Some(rows) = plain_array20_rows(src, leaf, info, enc, &rel).await? {
            return Ok(rows);
        }
    }
    let partial = match (&src.chain, &info.encoding) {
        (None, PageEncoding::Layout(layout)) if items_per_row(&leaf.path) == 1 => {
            bulk_buffer(layout).map(|b| (layout, b))
        }
        _ => None,
    };
    let work = match partial {
        Some((layout, bulk)) => match read_units(ds, src, leaf, page, layout, bulk, &rel).await? {
            Read::Rows(rows) => return Ok(rows),
            Read::Units(work) => work,
        },
        None => read_page(src, page, page_start, leaf, Units::Take).await?,
    };
    // A few units (a take of some rows) decode here: the pool's wake-up would cost more.
    let (name, bytes) = (work.name.clone(), work.stored_bytes);
    crate::threads::cpu::run_cpu(name, bytes, move || rows_of_units(&work, &rel)).await
}

/// Rows `rel` of a 2.0 page of plain fixed-width values of a top-level leaf, read value
/// by value; None for other pages.
async fn plain_array20_rows(
    src: &LeafSource,
    leaf: &LeafPlan,
    info: &crate::file::PageInfo,
    enc: &crate::proto::encodings20::ArrayEncoding,
    rel: &[u64],
) -> Result<Option<ArrayRef>> {
    let Some(PathStep::Leaf(f)) = leaf.path.last() else {
        return Ok(None);
    };
    let dt = f.data_type();
    let width = match crate::encoding::values::fixed_width(dt) {
        Ok(w)
            if leaf.path.len() == 1
                && !matches!(dt, DataType::Boolean | DataType::Dictionary(..)) =>
        {
            w
        }
        _ => return Ok(None),
    };
    let Some((index, bits)) = crate::encoding::array20::plain_buffer(enc) else {
        return Ok(None);
    };
    let Some(buffer) = info.buffers.get(index).filter(|_| bits == 8 * width as u64) else {
        return Ok(None);
    };
    let mut ranges: Vec<std::ops::Range<u64>> = Vec::with_capacity(rel.len());
    for &r in rel {
        let at = buffer.start + r * width as u64;
        if at + width as u64 > buffer.end {
            return Err(Error::corrupt(
                src.file.name(),
                format!("row {r} lies outside its page"),
            ));
        }
        match ranges.last_mut() {
            Some(last) if last.end == at => last.end = at + width as u64,
            _ => ranges.push(at..at + width as u64),
        }
    }
    let parts = src.file.read_ranges(&ranges).await?;
    let mut bytes = Vec::with_capacity(rel.len() * width);
    for p in &parts {
        bytes.extend_from_slice(p);
    }
    crate::encoding::values::fixed_array(dt, rel.len(), Buffer::from_vec(bytes))
        .map(Some)
        .map_err(|e| e.in_file(src.file.name()))
}

/// What a partial read of a page gives: the rows themselves (plain values read one by
/// one), or the units that hold them, to decode.
enum Read {
    Rows(ArrayRef),
    Units(Arc<PageWork>),
}

/// The units of a page that hold page rows `rel` (sorted), read without the rest of the
/// page: the page is planned from its small buffers (kept for later takes), then only
/// the byte ranges of the wanted units are read. Returns a plan of those units.
async fn read_units(
    ds: &Dataset,
    src: &LeafSource,
    leaf: &LeafPlan,
    page: usize,
    layout: &PageLayout,
    bulk: usize,
    rel: &[u64],
) -> Result<Read> {
    let file = &src.file;
    let info = &file.metadata.columns[src.column].pages[page];
    let name = format!("{} (column {}, page {page})", file.name(), src.column);
    let Some(PathStep::Leaf(f)) = leaf.path.last() else {
        return Err(Error::corrupt(
            &name,
            "internal: a column path must end at a leaf",
        ));
    };
    let bulk_range = info
        .buffers
        .get(bulk)
        .cloned()
        .ok_or_else(|| Error::corrupt(&name, "page without its data buffer"))?;
    let plan = match ds.cached_page_plan(file.name(), src.column, page) {
        Some(plan) => plan,
        None => {
            let small: Vec<_> = (0..info.buffers.len()).filter(|&b| b != bulk).collect();
            let ranges: Vec<_> = small.iter().map(|&b| info.buffers[b].clone()).collect();
            let mut read = file.read_ranges(&ranges).await?.into_iter();
            let buffers: Vec<Bytes> = (0..info.buffers.len())
                .map(|b| {
                    if b == bulk {
                        Bytes::new()
                    } else {
                        read.next().unwrap_or_default()
                    }
                })
                .collect();
            let (layout, num_rows, dt) = (layout.clone(), info.num_rows, f.data_type().clone());
            let bulk_len = bulk_range.end - bulk_range.start;
            // Planning from a page's small buffers is quick: done here unless they are large.
            let small_bytes = buffers.iter().map(|b| b.len() as u64).sum();
            let plan = crate::threads::cpu::run_cpu(name.clone(), small_bytes, move || {
                let sizing = take_sizing(&layout);
                plan_page_without_bulk(&layout, buffers, bulk_len, num_rows, &dt, &sizing)
            })
            .await
            .map_err(|e| {
                e.context(&format!("column {} page {page}", src.column))
                    .in_file(file.name())
            })?;
            let plan = Arc::new(plan);
            ds.cache_page_plan(file.name(), src.column, page, plan.clone());
            plan
        }
    };
    // The units holding the rows, and their bytes.
    let mut starts = Vec::with_capacity(plan.unit_rows().len() + 1);
    starts.push(0u64);
    for r in plan.unit_rows() {
        starts.push(starts.last().unwrap() + r);
    }
    // The unit of each row (rows ascend, so one walk finds them all).
    let mut unit_of = Vec::with_capacity(rel.len());
    let mut u = 0usize;
    for &r in rel {
        if r < starts[u] {
            u = starts.partition_point(|&s| s <= r) - 1;
        }
        while u + 1 < starts.len() - 1 && starts[u + 1] <= r {
            u += 1;
        }
        unit_of.push(u);
    }
    let mut units = unit_of.clone();
    units.dedup();
    // Plain fixed-width values of a top-level column: read just the values asked for.
    let dt = f.data_type();
    let width = crate::encoding::values::fixed_width(dt).ok();
    let plain = leaf.path.len() == 1
        && !matches!(dt, DataType::Boolean | DataType::Dictionary(..))
        && units
            .iter()
            .all(|&u| plan.plain_values(u).is_some_and(|(w, _)| Some(w) == width));
    if plain {
        let mut ranges: Vec<std::ops::Range<u64>> = Vec::with_capacity(rel.len());
        for (&r, &u) in rel.iter().zip(&unit_of) {
            let (w, start) = plan.plain_values(u).expect("checked above");
            let at = bulk_range.start + (start as u64) + (r - starts[u]) * w as u64;
            if at + w as u64 > bulk_range.end {
                return Err(Error::corrupt(
                    &name,
                    format!("row {r} lies outside its page"),
                ));
            }
            // Neighbouring rows are one range (a run of rows is one read).
            match ranges.last_mut() {
                Some(last) if last.end == at => last.end = at + w as u64,
                _ => ranges.push(at..at + w as u64),
            }
        }
        let parts = file.read_ranges(&ranges).await?;
        let mut bytes = Vec::with_capacity(parts.iter().map(|p| p.len()).sum());
        for p in &parts {
            bytes.extend_from_slice(p);
        }
        let array = crate::encoding::values::fixed_array(dt, rel.len(), Buffer::from_vec(bytes))
            .map_err(|e| e.in_file(file.name()))?;
        return Ok(Read::Rows(array));
    }
    let mut ranges = Vec::with_capacity(units.len());
    for &u in &units {
        let r = plan
            .unit_bytes(u)
            .ok_or_else(|| Error::corrupt(&name, "internal: a unit without bytes"))?;
        if r.end > bulk_range.end - bulk_range.start {
            return Err(Error::corrupt(
                &name,
                format!("unit {u} lies outside its page"),
            ));
        }
        ranges.push(bulk_range.start + r.start..bulk_range.start + r.end);
    }
    // Each unit decodes from its own bytes: no copy into one buffer (nearby ranges are
    // read together by the store and handed out as slices).
    let parts = file.read_ranges(&ranges).await?;
    let stored_bytes = parts.iter().map(|b| b.len() as u64).sum();
    let selected = plan
        .select(&units, parts)
        .map_err(|e| e.in_file(file.name()))?;
    // Rows of the selected units start where the units do.
    let first_rows: Vec<u64> = units.iter().map(|&u| starts[u]).collect();
    Ok(Read::Units(Arc::new(PageWork {
        plan: selected,
        path: leaf.path.clone(),
        name,
        stored_bytes,
        first_rows: Some(first_rows),
    })))
}

/// Units of a page planned for takes: single mini-block chunks (or the few that a row
/// spans); full-zip rows in groups, so that the plan kept for later takes stays small
/// (a unit per row would cost a range per row of every page).
fn take_sizing(layout: &PageLayout) -> UnitSizing {
    let full_zip = matches!(
        layout.layout,
        Some(crate::proto::encodings21::page_layout::Layout::FullZipLayout(_))
    );
    UnitSizing {
        target_rows: if full_zip { 64 } else { 1 },
        align_rows: 1,
        page_start: 0,
        rows_share_chunks: true,
    }
}

/// Page rows `rel` (sorted) out of the decoded units of `work`.
fn rows_of_units(work: &PageWork, rel: &[u64]) -> Result<ArrayRef> {
    // First page row of each unit: given for a plan of selected units, else cumulative.
    let starts: Vec<u64> = match &work.first_rows {
        Some(f) => f.clone(),
        None => {
            let mut s = vec![0u64];
            for r in work.unit_rows() {
                s.push(s.last().unwrap() + r);
            }
            s.pop();
            s
        }
    };
    let rows = work.unit_rows();
    let mut parts: Vec<ArrayRef> = Vec::new();
    let mut i = 0;
    while i < rel.len() {
        let u = starts.partition_point(|&s| s <= rel[i]) - 1;
        let (first, end) = (starts[u], starts[u] + rows[u]);
        let j = i + rel[i..].partition_point(|&r| r < end);
        let rows: Vec<usize> = rel[i..j].iter().map(|&r| (r - first) as usize).collect();
        // A run of neighbouring rows (a BTREE page, a range of a fragment): the unit
        // decoded whole and sliced, rather than its rows picked one by one.
        let many = rows.len() >= 64 && rows.len() as u64 * 2 >= work.unit_rows()[u];
        let run = many && rows.windows(2).all(|w| w[1] == w[0] + 1);
        parts.push(match (run, rows.first()) {
            (true, Some(&lo)) => {
                let all = decode_unit(work, u)?;
                if lo + rows.len() > all.len() {
                    return Err(Error::corrupt(
                        &work.name,
                        format!("rows up to {} of a unit of {}", lo + rows.len(), all.len()),
                    ));
                }
                all.slice(lo, rows.len())
            }
            _ => decode_unit_rows(work, u, &rows)?,
        });
        i = j;
    }
    let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
    Ok(match refs.len() {
        1 => parts.pop().unwrap(),
        _ => arrow_select::concat::concat(&refs)?,
    })
}
