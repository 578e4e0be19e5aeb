//! Leaves inside lists, in format 2.0 files. There each list keeps its offsets in a column
//! of its own, and the pages of the column below it count items, not rows. So rows
//! `a..b` of such a leaf are read as a chain: the outer list's offsets for those rows give
//! a range of items, the next list's offsets for those items give the next range, and so
//! on down to the leaf's values; then the values are wrapped back into the lists (and the
//! structs, which have no validity in 2.0) of the leaf's path.
use std::ops::Range;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, StructArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Fields};
use bytes::Bytes;

use crate::encoding::array20;
use crate::encoding::levels::{list_array, with_type, PathStep};
use crate::error::{corrupt, unsupported, Result};
use crate::file::{FileReader, PageEncoding};
use crate::proto::encodings20::ArrayEncoding;

/// The columns of a 2.0 leaf inside lists: the offsets column of each list on its path,
/// outermost first, then the leaf's own column.
#[derive(Clone, Debug)]
pub struct ListChain {
    pub offsets: Vec<usize>,
    pub leaf: usize,
    /// The leaf is a string or binary stored as a list of bytes (pylance 0.10–0.13): the
    /// last offsets column is its own, and `leaf` holds the bytes.
    pub bytes_as_list: bool,
}

/// One list level of rows read: offsets from 0 and validity.
pub(super) struct Level {
    pub offsets: Vec<i64>,
    pub nulls: Option<NullBuffer>,
}

fn page_encoding(file: &FileReader, column: usize, page: usize) -> Result<&ArrayEncoding> {
    match &file.metadata.columns[column].pages[page].encoding {
        PageEncoding::Array(e) => Ok(e),
        PageEncoding::Layout(_) | PageEncoding::Legacy(_) => Err(corrupt(format!(
            "column {column} page {page} is not a 2.0 page"
        ))),
    }
}

/// The pages of `column` that hold values `range`, each with its first value.
fn pages_over(file: &FileReader, column: usize, range: &Range<u64>) -> Vec<(usize, u64)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (p, info) in file.metadata.columns[column].pages.iter().enumerate() {
        if start < range.end && start + info.num_rows > range.start {
            out.push((p, start));
        }
        start += info.num_rows;
    }
    out
}

/// Lists `rows` of offsets column `column`: their level and the range of items they cover.
async fn read_level(
    file: &FileReader,
    column: usize,
    rows: Range<u64>,
) -> Result<(Level, Range<u64>)> {
    // A page's items follow those of the pages before it.
    let mut bases = Vec::new();
    let mut base = 0;
    for p in 0..file.metadata.columns[column].pages.len() {
        bases.push(base);
        base += array20::as_list(page_encoding(file, column, p)?)?.num_items;
    }
    let mut offsets = vec![0i64];
    let mut valid = Vec::with_capacity((rows.end - rows.start) as usize);
    let mut first_item = None;
    let mut last_item = 0;
    for (p, start) in pages_over(file, column, &rows) {
        let list = array20::as_list(page_encoding(file, column, p)?)?;
        let n = file.metadata.columns[column].pages[p].num_rows;
        let data = file.read_page(column, p).await?;
        let (ends, ok) = array20::list_ends(list, &data.buffers, n as usize)?;
        let from = rows.start.max(start) - start;
        let to = rows.end.min(start + n) - start;
        let mut prev = if from == 0 {
            0
        } else {
            ends[from as usize - 1]
        };
        let item0 = *first_item.get_or_insert(bases[p] + prev);
        for i in from..to {
            let end = ends[i as usize];
            offsets.push((bases[p] + end - item0) as i64);
            valid.push(ok[i as usize]);
            prev = end;
        }
        last_item = bases[p] + prev;
    }
    if valid.len() as u64 != rows.end - rows.start {
        return Err(corrupt(format!(
            "offsets column {column} has no lists for rows {}..{}",
            rows.start, rows.end
        )));
    }
    let first = first_item.unwrap_or(0);
    let nulls = Some(NullBuffer::from(valid)).filter(|n| n.null_count() > 0);
    Ok((Level { offsets, nulls }, first..last_item))
}

/// Read rows `rows` of the leaf at the end of `path` (top-level rows of the outer list's
/// offsets column), as an array shaped like the path.
pub async fn read_rows(
    file: Arc<FileReader>,
    chain: &ListChain,
    path: Vec<PathStep>,
    rows: Range<u64>,
) -> Result<ArrayRef> {
    let mut levels = Vec::with_capacity(chain.offsets.len());
    let mut range = rows.clone();
    for &column in &chain.offsets {
        let (level, items) = read_level(&file, column, range).await?;
        levels.push(level);
        range = items;
    }
    let pages = pages_over(&file, chain.leaf, &range);
    let mut data = Vec::with_capacity(pages.len());
    for &(p, _) in &pages {
        data.push(file.read_page(chain.leaf, p).await?.buffers);
    }
    let leaf = chain.leaf;
    let name = format!("{} (column {leaf})", file.name());
    let bytes_as_list = chain.bytes_as_list;
    crate::threads::cpu::spawn_cpu(name, move || {
        if !bytes_as_list {
            let values = leaf_values(&file, leaf, &pages, data, &range, &path)?;
            return shape(values, &path, levels, rows.end - rows.start);
        }
        // The bytes are u8 items of the innermost list: rebuild the strings from them.
        let Some(PathStep::Leaf(f)) = path.last() else {
            return Err(corrupt("internal: a column path must end at a leaf"));
        };
        let mut byte_path = path.clone();
        *byte_path.last_mut().unwrap() = PathStep::Leaf(with_type(f, DataType::UInt8));
        let bytes = leaf_values(&file, leaf, &pages, data, &range, &byte_path)?;
        let own = levels
            .pop()
            .ok_or_else(|| corrupt("internal: no offsets for the string bytes"))?;
        let values = strings_from_bytes(f.data_type(), own, &bytes)?;
        shape(values, &path, levels, rows.end - rows.start)
    })
    .await
}

/// Strings (or binaries) from a list level over their bytes.
fn strings_from_bytes(dt: &DataType, level: Level, bytes: &ArrayRef) -> Result<ArrayRef> {
    use arrow_array::cast::AsArray;
    let bytes = bytes
        .as_primitive_opt::<arrow_array::types::UInt8Type>()
        .ok_or_else(|| corrupt("string bytes that are not bytes"))?;
    let ends: Vec<u64> = level.offsets.iter().map(|&o| o as u64).collect();
    let n = ends.len().saturating_sub(1);
    let valid = match &level.nulls {
        Some(nulls) => nulls.iter().collect(),
        None => vec![true; n],
    };
    let data = Bytes::copy_from_slice(bytes.values().inner().as_slice());
    let array = crate::encoding::values::variable_array(dt, &ends, data, valid)?;
    if matches!(dt, DataType::Utf8 | DataType::LargeUtf8) {
        // The bytes were stored as plain u8 items: check that they are UTF-8.
        array.to_data().validate_full()?;
    }
    Ok(array)
}

/// Values `range` of the leaf's column, from the pages that hold them.
fn leaf_values(
    file: &FileReader,
    column: usize,
    pages: &[(usize, u64)],
    data: Vec<Vec<Bytes>>,
    range: &Range<u64>,
    path: &[PathStep],
) -> Result<ArrayRef> {
    let Some(PathStep::Leaf(leaf)) = path.last() else {
        return Err(corrupt("internal: a column path must end at a leaf"));
    };
    let mut parts = Vec::with_capacity(pages.len());
    for (&(p, start), buffers) in pages.iter().zip(data) {
        let n = file.metadata.columns[column].pages[p].num_rows;
        let page = array20::decode(
            page_encoding(file, column, p)?,
            &buffers,
            n as usize,
            leaf.data_type(),
        )?;
        let from = range.start.max(start) - start;
        let to = range.end.min(start + n) - start;
        parts.push(page.slice(from as usize, (to - from) as usize));
    }
    let got: usize = parts.iter().map(|a| a.len()).sum();
    if got as u64 != range.end - range.start {
        return Err(corrupt(format!(
            "column {column} has {got} of items {}..{}",
            range.start, range.end
        )));
    }
    match parts.len() {
        0 => Ok(arrow_array::new_empty_array(leaf.data_type())),
        1 => Ok(parts.pop().unwrap()),
        _ => {
            let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
            Ok(arrow_select::concat::concat(&refs)?)
        }
    }
}

/// Wrap a leaf's values in the structs and lists of its path, innermost first.
pub(super) fn shape(
    values: ArrayRef,
    path: &[PathStep],
    mut levels: Vec<Level>,
    rows: u64,
) -> Result<ArrayRef> {
    let Some(PathStep::Leaf(leaf)) = path.last() else {
        return Err(corrupt("internal: a column path must end at a leaf"));
    };
    let mut field = with_type(leaf, values.data_type().clone());
    let mut array = values;
    for step in path[..path.len() - 1].iter().rev() {
        match step {
            PathStep::Struct(f) => {
                let fields = Fields::from(vec![field.clone()]);
                array = Arc::new(StructArray::try_new(fields.clone(), vec![array], None)?);
                field = with_type(f, DataType::Struct(fields));
            }
            PathStep::List { field: f, large } => {
                let level = levels.pop().ok_or_else(|| {
                    corrupt("internal: more lists on the path than offsets columns")
                })?;
                if *large {
                    array = list_array::<i64>(field.clone(), &level.offsets, array, level.nulls)?;
                    field = with_type(f, DataType::LargeList(field.clone()));
                } else {
                    array = list_array::<i32>(field.clone(), &level.offsets, array, level.nulls)?;
                    field = with_type(f, DataType::List(field.clone()));
                }
            }
            PathStep::FixedSizeList { .. } => {
                return Err(unsupported(
                    "fixed-size lists of structs in format 2.0 or 0.1 files (pylance writes them only in 2.2)",
                ))
            }
            PathStep::Leaf(_) => {
                return Err(corrupt("internal: a leaf in the middle of a column path"))
            }
        }
    }
    if array.len() as u64 != rows {
        return Err(corrupt(format!(
            "read {} rows, expected {rows}",
            array.len()
        )));
    }
    Ok(array)
}
