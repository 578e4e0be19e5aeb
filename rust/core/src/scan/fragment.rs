//! Reading one fragment: which data file and column hold each leaf, the pages of each
//! leaf column, and decoding one page into the array of its leaf's path.
use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::DataType;

use super::legacy::{read_group, LegacyChain};
use super::lists20::{read_rows, ListChain};
use super::plan::LeafPlan;
use crate::dataset::Dataset;
use crate::encoding::layout::{plan_page, PagePlan, UnitSizing};
use crate::encoding::levels::{items_per_row, unravel, PathStep};
use crate::error::{Error, Result};
use crate::file::{FileReader, FileVersion, PageEncoding, PageInfo};
use crate::proto::encodings20::ArrayEncoding;
use crate::proto::table::{DataFile, DataFragment};
use crate::table::data_file::{is_legacy, recorded_size};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Where a leaf's values are in a fragment.
#[derive(Clone, Debug)]
pub struct LeafSource {
    pub file: Arc<FileReader>,
    /// The column whose pages are the leaf's rows: the leaf's own, or for a 2.0 leaf
    /// inside lists the outer list's offsets column.
    pub column: usize,
    /// For a 2.0 leaf inside lists and any legacy leaf, the columns to read through.
    pub chain: Option<Chain>,
}

/// Leaves read through several columns at once, rows at a time.
#[derive(Clone, Debug)]
pub enum Chain {
    Lists20(ListChain),
    Legacy(LegacyChain),
}

/// Memory that remote files a read wants every column of may take when read whole on
/// open: one request per file instead of its tail and then its pages. Taken without
/// waiting (a file that does not fit now is opened by its tail as usual), and apart from
/// the pages' budget, so that pages read in row order never wait for files opened ahead.
#[derive(Clone, Debug)]
pub struct WholeFiles {
    memory: Arc<Semaphore>,
    /// For a take: the rows it wants of the fragment (see `largest`); None for a scan,
    /// which reads every row.
    rows: Option<u64>,
}

/// Larger files are read page by page, not in one request (object stores serve ranges of
/// about 8 MiB best).
const WHOLE_FILE_MAX: u64 = 8 << 20;

impl WholeFiles {
    /// The share of a read's memory budget for files read whole: half (the pages get the
    /// other half).
    pub fn share(memory_budget: usize) -> u64 {
        memory_budget as u64 / 2
    }

    /// Room for files read whole by a read with `memory_budget`.
    pub fn new(memory_budget: usize) -> Self {
        let bytes = Self::share(memory_budget);
        WholeFiles {
            memory: Arc::new(Semaphore::new((bytes / 1024) as usize)),
            rows: None,
        }
    }

    /// The same memory, for a take of `rows` rows of a fragment.
    pub fn taking(&self, rows: usize) -> Self {
        WholeFiles {
            memory: self.memory.clone(),
            rows: Some(rows as u64),
        }
    }

    /// The largest file of `columns` columns worth reading whole. A take reads a few
    /// ranges per row and column; the store joins ranges less than its coalescing gap
    /// apart into one request, so when a file is smaller than that gap times the ranges,
    /// the take's reads span about all of it anyway, after two round trips (tail, then
    /// page metadata) instead of none.
    fn largest(&self, columns: usize) -> u64 {
        let joined = object_store::OBJECT_STORE_COALESCE_DEFAULT;
        match self.rows {
            None => WHOLE_FILE_MAX,
            Some(rows) => {
                WHOLE_FILE_MAX.min(rows.saturating_mul(columns as u64).saturating_mul(joined))
            }
        }
    }

    /// The memory for a file of `bytes` and `columns` columns, if it is worth reading
    /// whole and free now.
    fn try_hold(&self, bytes: u64, columns: usize) -> Option<OwnedSemaphorePermit> {
        let kib = u32::try_from(bytes.div_ceil(1024)).ok()?;
        (bytes <= self.largest(columns))
            .then(|| self.memory.clone().try_acquire_many_owned(kib).ok())
            .flatten()
    }
}

/// The columns of `file` that `leaves` read, when they read every column it has.
fn reads_every_column(file: &DataFile, leaves: &[LeafPlan]) -> Option<usize> {
    let mut columns = file
        .fields
        .iter()
        .zip(&file.column_indices)
        .filter(|(_, &col)| col >= 0);
    let count = columns.clone().count();
    columns
        .all(|(&fid, _)| {
            leaves
                .iter()
                .any(|l| l.field_id == fid || l.list_ids.contains(&fid))
        })
        .then_some(count)
}

/// Find the file and column of every leaf (None: no data, read as nulls) and open the
/// files involved; with `whole`, files of which every column is read are read whole
/// while it has room.
pub async fn open_leaf_sources(
    ds: &Dataset,
    frag: &DataFragment,
    leaves: &[LeafPlan],
    whole: Option<&WholeFiles>,
) -> Result<Vec<Option<LeafSource>>> {
    let manifest_name = || format!("{} (fragment {})", ds.uri(), frag.id);
    // field id -> (file index, column index); the first file listing a field wins.
    let mut owner: HashMap<i32, (usize, usize)> = HashMap::new();
    // Legacy files: the smallest and largest id each holds (its page table's extent).
    let mut legacy_ids: HashMap<usize, (i32, i32)> = HashMap::new();
    for (fi, file) in frag.files.iter().enumerate() {
        if is_legacy(file) {
            // Columns are ids less the smallest one (dropped fields keep their ids here).
            let ids = file.fields.iter().copied().filter(|&f| f >= 0);
            let (Some(min), Some(max)) = (ids.clone().min(), ids.max()) else {
                continue;
            };
            legacy_ids.insert(fi, (min, max));
            for &fid in file.fields.iter().filter(|&&f| f >= 0) {
                owner.entry(fid).or_insert((fi, (fid - min) as usize));
            }
            continue;
        }
        for (k, &fid) in file.fields.iter().enumerate() {
            let Some(&col) = file.column_indices.get(k) else {
                return Err(Error::corrupt(
                    manifest_name(),
                    format!(
                        "data file {} lists more fields than column indices",
                        file.path
                    ),
                ));
            };
            if fid >= 0 && col >= 0 {
                owner.entry(fid).or_insert((fi, col as usize));
            }
        }
    }
    let mut needed: Vec<usize> = leaves
        .iter()
        .filter_map(|l| owner.get(&l.field_id).map(|o| o.0))
        .collect();
    needed.sort_unstable();
    needed.dedup();
    let legacy_ref = &legacy_ids;
    let opens = needed.iter().map(|&fi| {
        let file = &frag.files[fi];
        let held = whole.filter(|_| !is_legacy(file)).and_then(|w| {
            let columns = reads_every_column(file, leaves)?;
            w.try_hold(recorded_size(file)?, columns)
        });
        async move {
            let reader = match held {
                Some(held) => ds.open_file_whole(file, held).await?,
                None => ds.open_file(file, legacy_ref.get(&fi).copied()).await?,
            };
            Ok::<_, Error>((fi, reader))
        }
    });
    let readers: HashMap<usize, Arc<FileReader>> = futures::future::try_join_all(opens)
        .await?
        .into_iter()
        .collect();
    leaves
        .iter()
        .map(|l| match owner.get(&l.field_id) {
            None => Ok(None),
            Some(&(fi, col)) => {
                let file = readers[&fi].clone();
                if col >= file.num_columns() {
                    return Err(Error::corrupt(
                        file.name(),
                        format!(
                            "column {col} does not exist (the file has {})",
                            file.num_columns()
                        ),
                    ));
                }
                if let Some(&(min, _)) = legacy_ids.get(&fi) {
                    let lists: Vec<usize> =
                        l.list_ids.iter().map(|&id| (id - min) as usize).collect();
                    return Ok(Some(LeafSource {
                        column: lists.first().copied().unwrap_or(col),
                        chain: Some(Chain::Legacy(LegacyChain {
                            lists,
                            leaf: col,
                            leaf_id: l.field_id,
                        })),
                        file,
                    }));
                }
                // In 2.0 each list on the path has an offsets column of its own.
                let v2_0 = file.metadata.footer.version == FileVersion { major: 2, minor: 0 };
                let bytes_as_list = v2_0 && stored_as_byte_lists(&file, col, &l.path);
                if v2_0 && (!l.list_ids.is_empty() || bytes_as_list) {
                    let mut offsets = l
                        .list_ids
                        .iter()
                        .map(|id| match owner.get(id) {
                            Some(&(f, c)) if f == fi && c < file.num_columns() => Ok(c),
                            _ => Err(Error::corrupt(
                                file.name(),
                                format!("the offsets of list field {id} are not in this file"),
                            )),
                        })
                        .collect::<Result<Vec<_>>>()?;
                    let mut leaf = col;
                    if bytes_as_list {
                        // The string's own column holds its offsets, the next its bytes.
                        if col + 1 >= file.num_columns() {
                            return Err(Error::corrupt(
                                file.name(),
                                format!("the bytes of the strings in column {col} are missing"),
                            ));
                        }
                        offsets.push(col);
                        leaf = col + 1;
                    }
                    return Ok(Some(LeafSource {
                        file,
                        column: offsets[0],
                        chain: Some(Chain::Lists20(ListChain {
                            offsets,
                            leaf,
                            bytes_as_list,
                        })),
                    }));
                }
                Ok(Some(LeafSource {
                    file,
                    column: col,
                    chain: None,
                }))
            }
        })
        .collect()
}

/// Whether a 2.0 string or binary leaf is stored as a list of bytes over two columns (as
/// pylance 0.10–0.13 wrote them): its column's pages are lists.
fn stored_as_byte_lists(file: &FileReader, column: usize, path: &[PathStep]) -> bool {
    use crate::proto::encodings20::array_encoding::ArrayEncoding as Enc;
    let Some(PathStep::Leaf(f)) = path.last() else {
        return false;
    };
    let binary = matches!(
        f.data_type(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary
    );
    let first = file
        .metadata
        .columns
        .get(column)
        .and_then(|c| c.pages.first());
    binary
        && matches!(
            first.map(|p| &p.encoding),
            Some(PageEncoding::Array(ArrayEncoding {
                array_encoding: Some(Enc::List(_))
            }))
        )
}

/// What reading a page ahead costs in memory, for the scan's budget: its bytes (its
/// decoded units are few at a time and are not counted).
pub fn estimated_bytes(page: &PageInfo, leaf_type: &DataType) -> u64 {
    if let PageEncoding::Legacy(_) = page.encoding {
        // Legacy pages list no buffers: estimate from the rows (16 bytes for values
        // that are not fixed-width, such as strings).
        let width = crate::encoding::legacy::value_bits(leaf_type).map_or(16, |b| b.div_ceil(8));
        return (page.num_rows * width).max(1);
    }
    page.buffers
        .iter()
        .map(|r| r.end - r.start)
        .sum::<u64>()
        .max(1)
}

/// A page read and planned: its units decode independently.
pub struct PageWork {
    pub plan: PagePlan,
    pub path: Vec<PathStep>,
    /// "file (column c, page p)", for errors.
    pub name: String,
    /// The page's size as stored (small pages are decoded without leaving the thread).
    pub stored_bytes: u64,
    /// For a plan of some units of a page (a take): the page row each unit starts at.
    pub first_rows: Option<Vec<u64>>,
}

impl PageWork {
    /// Top-level rows of each unit (a unit of a leaf inside fixed-size lists of structs
    /// has `items_per_row` level entries per row).
    pub fn unit_rows(&self) -> Vec<u64> {
        let per_row = items_per_row(&self.path);
        self.plan.unit_rows().iter().map(|r| r / per_row).collect()
    }
}

/// Decoded bytes a unit aims for: small enough to stay in cache and keep memory low,
/// big enough that per-unit overhead does not show.
const UNIT_BYTES: u64 = 1 << 20;

/// What units a page is cut into.
#[derive(Clone, Copy, Debug)]
pub enum Units {
    /// About 1 MiB of decoded data each, ending on batch boundaries where possible.
    Scan { batch_size: u64 },
    /// As small as the layout allows (a mini-block chunk, a few full-zip rows), so that a
    /// take decodes little beyond the rows it wants.
    Take,
}

/// Rows a unit of a page read for a take aims for.
const TAKE_UNIT_ROWS: u64 = 64;

/// Read page `page` of a leaf and plan its units.
pub async fn read_page(
    source: &LeafSource,
    page: usize,
    page_start: u64,
    leaf: &LeafPlan,
    units: Units,
) -> Result<Arc<PageWork>> {
    if let Some(chain) = &source.chain {
        let rows = page_start
            ..page_start + source.file.metadata.columns[source.column].pages[page].num_rows;
        let name = format!(
            "{} (column {}, page {page})",
            source.file.name(),
            source.column
        );
        let file = source.file.clone();
        let array = match chain {
            Chain::Lists20(c) => read_rows(file, c, leaf.path.clone(), rows).await,
            Chain::Legacy(c) => read_group(file, c, &leaf.path, page).await,
        }
        .map_err(|e| {
            e.context(&format!("column {} page {page}", source.column))
                .in_file(source.file.name())
        })?;
        let Some(PathStep::Leaf(f)) = leaf.path.last() else {
            unreachable!("paths end at a leaf")
        };
        let plan = PagePlan::shaped(array, f.data_type());
        return Ok(Arc::new(PageWork {
            plan,
            path: leaf.path.clone(),
            name,
            // Decoded already: nothing left to hand to the pool.
            stored_bytes: 0,
            first_rows: None,
        }));
    }
    let data = source.file.read_page(source.column, page).await?;
    let file = source.file.clone();
    let (column, path) = (source.column, leaf.path.clone());
    let name = format!("{} (column {column}, page {page})", file.name());
    let stored_bytes = data.buffers.iter().map(|b| b.len() as u64).sum();
    crate::threads::cpu::run_cpu(name.clone(), stored_bytes, move || {
        let info = &file.metadata.columns[column].pages[page];
        let Some(PathStep::Leaf(f)) = path.last() else {
            unreachable!("paths end at a leaf")
        };
        let stored: u64 = info.buffers.iter().map(|r| r.end - r.start).sum();
        let width = f.data_type().primitive_width().unwrap_or(0) as u64;
        let per_row = (stored / info.num_rows.max(1)).max(width).max(1);
        let sizing = match units {
            // Units must hold whole rows; mini-block chunks need not, so one unit.
            _ if items_per_row(&path) > 1 => UnitSizing::whole(),
            Units::Scan { batch_size } => UnitSizing {
                target_rows: (UNIT_BYTES / per_row).max(1024),
                align_rows: batch_size,
                page_start,
                rows_share_chunks: false,
            },
            Units::Take => UnitSizing {
                target_rows: TAKE_UNIT_ROWS,
                align_rows: 1,
                page_start,
                rows_share_chunks: true,
            },
        };
        let plan = match &info.encoding {
            PageEncoding::Layout(layout) => {
                plan_page(layout, data.buffers, info.num_rows, f.data_type(), &sizing)
            }
            PageEncoding::Array(encoding) => array20_plan(encoding, data.buffers, info, &path),
            PageEncoding::Legacy(_) => Err(Error::corrupt(
                "",
                "internal: a legacy page read without its chain",
            )),
        }
        .map_err(|e| {
            e.context(&format!("column {column} page {page}"))
                .in_file(file.name())
        })?;
        Ok(Arc::new(PageWork {
            plan,
            path,
            name,
            stored_bytes,
            first_rows: None,
        }))
    })
    .await
}

/// A format 2.0 page of the leaf at the end of `path` (not inside a list: see
/// `open_leaf_sources`).
fn array20_plan(
    encoding: &ArrayEncoding,
    buffers: Vec<bytes::Bytes>,
    info: &PageInfo,
    path: &[PathStep],
) -> Result<PagePlan> {
    let Some(PathStep::Leaf(f)) = path.last() else {
        unreachable!("paths end at a leaf")
    };
    Ok(PagePlan::array20(
        encoding.clone(),
        buffers,
        info.num_rows,
        f.data_type(),
        path.len(),
    ))
}

/// Rows `rows` (increasing, relative to the unit) of unit `unit`, shaped like the leaf's
/// path: only those values decoded where the layout allows, else the unit then a take.
pub fn decode_unit_rows(work: &PageWork, unit: usize, rows: &[usize]) -> Result<ArrayRef> {
    if work.plan.shaped_rows().is_none() {
        let selected = work
            .plan
            .decode_unit_rows(unit, rows)
            .and_then(|p| p.map(|p| unravel(p, &work.path)).transpose())
            .map_err(|e| e.in_file(&work.name))?;
        if let Some(array) = selected {
            return Ok(array);
        }
    }
    // Lists (not inside fixed-size lists): only the rows from the first wanted to the
    // last become arrays (a take of one row of a chunk looks one row's values up).
    let lists = work.path.iter().any(|s| matches!(s, PathStep::List { .. }))
        && !work
            .path
            .iter()
            .any(|s| matches!(s, PathStep::FixedSizeList { .. }));
    let (all, first) = match (rows.first(), rows.last()) {
        (Some(&lo), Some(&hi)) if lists && work.plan.shaped_rows().is_none() => {
            let leaf_type = work.plan.leaf_type().clone();
            let shaped = work.plan.decode_unit(unit).and_then(|p| match p.rep {
                Some(_) => Ok((
                    unravel(p.keep_rows(lo..hi + 1, &leaf_type)?, &work.path)?,
                    lo,
                )),
                None => Ok((unravel(p, &work.path)?, 0)),
            });
            shaped.map_err(|e| named(work, e))?
        }
        _ => (decode_unit(work, unit)?, 0),
    };
    let idx = arrow_array::UInt32Array::from_iter_values(rows.iter().map(|&r| (r - first) as u32));
    Ok(arrow_select::take::take(&all, &idx, None)?)
}

/// Decode unit `unit` of a page into the array of its leaf's path.
pub fn decode_unit(work: &PageWork, unit: usize) -> Result<ArrayRef> {
    if let Some(rows) = work.plan.shaped_rows() {
        return Ok(rows.clone());
    }
    work.plan
        .decode_unit(unit)
        .and_then(|p| unravel(p, &work.path))
        .map_err(|e| named(work, e))
}

/// A decoding error, naming the page it came from.
fn named(work: &PageWork, e: Error) -> Error {
    match e {
        Error::Corrupt { path, message } if path.is_empty() => Error::corrupt(&work.name, message),
        Error::Unsupported { path, message } if path.is_empty() => {
            Error::unsupported(&work.name, message)
        }
        Error::Arrow(a) => {
            Error::corrupt(&work.name, format!("decoded data rejected by arrow: {a}"))
        }
        other => other,
    }
}
