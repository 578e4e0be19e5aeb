//! Reading a leaf of a legacy (0.1) file, a group of batches at a time. Every field of a batch
//! has a page of its own: a list's page holds its offsets (restarting at 0 in each batch)
//! into its items' page of the same batch, so a leaf inside lists is read as a chain,
//! outer list first, like 2.0 lists (`lists20`), then wrapped into its path. Lists and
//! structs have no validity in legacy files.
use std::ops::Range;
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::DataType;

use super::lists20::{shape, Level};
use crate::encoding::legacy as enc;
use crate::encoding::levels::PathStep;
use crate::error::{corrupt, unsupported, Result};
use crate::file::legacy::{message_at, LegacyPage};
use crate::file::{FileReader, PageEncoding};
use crate::proto::table::Manifest;

/// The columns of a legacy leaf: the offsets column of each list on its path, outermost
/// first, and the leaf's own column (columns are field ids less the file's smallest id).
#[derive(Clone, Debug)]
pub struct LegacyChain {
    pub lists: Vec<usize>,
    pub leaf: usize,
    pub leaf_id: i32,
}

/// The legacy pages (one per batch) of page `page` (a group of batches) of `column`.
fn group(file: &FileReader, column: usize, page: usize) -> Result<&[LegacyPage]> {
    match file
        .metadata
        .columns
        .get(column)
        .and_then(|c| c.pages.get(page))
    {
        Some(p) => match &p.encoding {
            PageEncoding::Legacy(g) => Ok(g),
            _ => Err(corrupt("internal: not a legacy page")),
        },
        None => Err(corrupt(format!("no page {page} in column {column}"))),
    }
}

/// Elements `range` of a page must exist.
fn check(page: &LegacyPage, range: &Range<u64>, what: &str) -> Result<()> {
    if range.start > range.end || range.end > page.length {
        return Err(corrupt(format!(
            "{what} page holds {} elements, {}..{} wanted",
            page.length, range.start, range.end
        )));
    }
    Ok(())
}

fn concat(parts: Vec<ArrayRef>, dt: &DataType) -> Result<ArrayRef> {
    match parts.len() {
        0 => Ok(arrow_array::new_empty_array(dt)),
        1 => Ok(parts.into_iter().next().unwrap()),
        _ => {
            let refs: Vec<&dyn arrow_array::Array> = parts.iter().map(|a| a.as_ref()).collect();
            Ok(arrow_select::concat::concat(&refs)?)
        }
    }
}

/// Read the rows of page `page` (a group of batches) of the leaf at the end of `path`,
/// shaped like the path. The pages of all batches of the group are fetched together,
/// level by level.
pub async fn read_group(
    file: Arc<FileReader>,
    chain: &LegacyChain,
    path: &[PathStep],
    page: usize,
) -> Result<ArrayRef> {
    let leaf_pages = group(&file, chain.leaf, page)?.to_vec();
    let ranges: Vec<Range<u64>> = leaf_pages.iter().map(|p| 0..p.rows).collect();
    read_ranges(&file, chain, path, page, leaf_pages, ranges).await
}

/// Rows `rows` (increasing, relative to page `page`, a group of batches) of a leaf that is
/// in no list: only those elements are read. None for a leaf inside lists (read the
/// group).
pub async fn read_group_rows(
    file: Arc<FileReader>,
    chain: &LegacyChain,
    path: &[PathStep],
    page: usize,
    rows: &[u64],
) -> Result<Option<ArrayRef>> {
    if !chain.lists.is_empty() {
        return Ok(None);
    }
    let batches = group(&file, chain.leaf, page)?;
    // Runs of consecutive rows within one batch: its page, and the elements of the run.
    let mut pages = Vec::new();
    let mut ranges: Vec<Range<u64>> = Vec::new();
    let (mut b, mut first) = (0usize, 0u64);
    for &r in rows {
        while b < batches.len() && r >= first + batches[b].rows {
            first += batches[b].rows;
            b += 1;
        }
        let p = batches
            .get(b)
            .ok_or_else(|| corrupt(format!("row {r} is past the batches of page {page}")))?;
        let local = r - first;
        let extends = same(pages.last(), p) && ranges.last().is_some_and(|l| l.end == local);
        match ranges.last_mut() {
            Some(last) if extends => last.end += 1,
            _ => {
                pages.push(*p);
                ranges.push(local..local + 1);
            }
        }
    }
    read_ranges(&file, chain, path, page, pages, ranges)
        .await
        .map(Some)
}

fn same(a: Option<&LegacyPage>, b: &LegacyPage) -> bool {
    a.is_some_and(|a| a.position == b.position && a.rows == b.rows)
}

/// Elements `ranges[i]` of the leaf's batch pages `leaf_pages[i]` (and of the lists above
/// it), shaped like the path.
async fn read_ranges(
    file: &Arc<FileReader>,
    chain: &LegacyChain,
    path: &[PathStep],
    page: usize,
    leaf_pages: Vec<LegacyPage>,
    mut ranges: Vec<Range<u64>>,
) -> Result<ArrayRef> {
    let rows: u64 = ranges.iter().map(|r| r.end - r.start).sum();
    let file = file.clone();
    let larges = path.iter().filter_map(|s| match s {
        PathStep::List { large, .. } => Some(*large),
        _ => None,
    });
    let mut levels = Vec::with_capacity(chain.lists.len());
    for (&column, large) in chain.lists.iter().zip(larges) {
        let pages = group(&file, column, page)?;
        let width = if large { 8 } else { 4 };
        let mut byte_ranges = Vec::with_capacity(pages.len());
        for (p, r) in pages.iter().zip(&ranges) {
            check(p, &(r.start..r.end + 1), "list offsets")?;
            byte_ranges.push(p.position + width * r.start..p.position + width * (r.end + 1));
        }
        let bytes = file.read_ranges(&byte_ranges).await?;
        // Offsets restart in every batch; the group's lists run on from batch to batch.
        let mut offsets = vec![0i64];
        for (b, r) in bytes.iter().zip(ranges.iter_mut()) {
            let o = enc::offsets(b, width as usize, (r.end - r.start + 1) as usize)?;
            if o[0] < 0 || o.windows(2).any(|w| w[1] < w[0]) {
                return Err(corrupt(format!("list offsets of column {column} decrease")));
            }
            let base = *offsets.last().unwrap() - o[0];
            offsets.extend(o[1..].iter().map(|&v| base + v));
            *r = o[0] as u64..o[o.len() - 1] as u64;
        }
        levels.push(Level {
            offsets,
            nulls: None,
        });
    }
    let Some(PathStep::Leaf(leaf)) = path.last() else {
        return Err(corrupt("internal: a column path must end at a leaf"));
    };
    let (dt, nullable) = (leaf.data_type(), leaf.is_nullable());
    for (p, r) in leaf_pages.iter().zip(&ranges) {
        if *dt != DataType::Null {
            check(p, r, "value")?;
        }
    }
    let values = match dt {
        DataType::Null => enc::nulls(ranges.iter().map(|r| (r.end - r.start) as usize).sum()),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary => {
            let positions: Vec<u64> = leaf_pages.iter().map(|p| p.position).collect();
            var_binary(&file, &positions, &ranges, dt, nullable).await?
        }
        DataType::Dictionary(key, value) => {
            let keys = fixed(&file, &leaf_pages, &ranges, key).await?;
            let values = dictionary_values(&file, chain.leaf_id, value).await?;
            enc::dictionary(keys, values, dt)?
        }
        dt => fixed(&file, &leaf_pages, &ranges, dt).await?,
    };
    shape(values, path, levels, rows)
}

/// Elements `ranges[b]` of fixed-width pages `pages[b]`, concatenated.
async fn fixed(
    file: &FileReader,
    pages: &[LegacyPage],
    ranges: &[Range<u64>],
    dt: &DataType,
) -> Result<ArrayRef> {
    let bits = enc::value_bits(dt)?;
    let byte_ranges: Vec<Range<u64>> = pages
        .iter()
        .zip(ranges)
        .map(|(p, r)| p.position + r.start * bits / 8..p.position + (r.end * bits).div_ceil(8))
        .collect();
    let bytes = file.read_ranges(&byte_ranges).await?;
    let parts = bytes
        .into_iter()
        .zip(ranges)
        .map(|(b, r)| {
            enc::fixed_values(
                dt,
                b,
                ((r.start * bits) % 8) as usize,
                (r.end - r.start) as usize,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    concat(parts, dt)
}

/// Strings `ranges[b]` of string pages whose positions start at `positions[b]`: their
/// positions first, then the bytes between them.
async fn var_binary(
    file: &FileReader,
    positions: &[u64],
    ranges: &[Range<u64>],
    dt: &DataType,
    nullable: bool,
) -> Result<ArrayRef> {
    let byte_ranges: Vec<Range<u64>> = positions
        .iter()
        .zip(ranges)
        .map(|(&p, r)| p + 8 * r.start..p + 8 * (r.end + 1))
        .collect();
    let raw = file.read_ranges(&byte_ranges).await?;
    let mut all = Vec::with_capacity(raw.len());
    let mut data_ranges = Vec::with_capacity(raw.len());
    for (b, r) in raw.iter().zip(ranges) {
        let p = enc::offsets(b, 8, (r.end - r.start + 1) as usize)?;
        let (from, to) = (p[0], p[p.len() - 1]);
        if from < 0 || to < from || to as u64 > file.metadata.file_size {
            return Err(corrupt(format!(
                "string positions {from}..{to} lie outside the file"
            )));
        }
        data_ranges.push(from as u64..to as u64);
        all.push(p);
    }
    let data = file.read_ranges(&data_ranges).await?;
    let parts = all
        .iter()
        .zip(data)
        .map(|(p, d)| enc::var_binary(p, d, dt, nullable))
        .collect::<Result<Vec<_>>>()?;
    concat(parts, dt)
}

/// The dictionary of field `id`, from the manifest copy inside the file (its positions
/// are in this file); decoded once per file.
// One page holds the whole dictionary: slices of one range.
#[allow(clippy::single_range_in_vec_init)]
async fn dictionary_values(file: &FileReader, id: i32, value_type: &DataType) -> Result<ArrayRef> {
    let layout = file
        .metadata
        .legacy
        .clone()
        .ok_or_else(|| corrupt("internal: not a legacy file"))?;
    if let Some(d) = layout
        .dictionaries
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&id)
    {
        return Ok(d.clone());
    }
    let at = layout.manifest_position;
    if at == 0 {
        return Err(unsupported(
            "a dictionary field in a legacy file without its manifest copy",
        ));
    }
    let len = file.read_range(at..at + 4).await?;
    let len = u32::from_le_bytes(
        len[..4]
            .try_into()
            .map_err(|_| corrupt("truncated manifest"))?,
    );
    let bytes = file.read_range(at..at + 4 + len as u64).await?;
    let manifest = message_at::<Manifest>(&bytes, at, at, "manifest inside the legacy file")?
        .ok_or_else(|| corrupt("no manifest inside the legacy file"))?;
    let field = manifest
        .fields
        .iter()
        .find(|f| f.id == id)
        .ok_or_else(|| corrupt(format!("the file's manifest has no field {id}")))?;
    let dict = field
        .dictionary
        .as_ref()
        .ok_or_else(|| corrupt(format!("dictionary field {id} has no dictionary")))?;
    let (offset, length) = (
        u64::try_from(dict.offset).map_err(|_| corrupt("negative dictionary offset"))?,
        u64::try_from(dict.length).map_err(|_| corrupt("negative dictionary length"))?,
    );
    let values = match value_type {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary => {
            // Dictionary strings are read as nullable, as pylance reads them.
            var_binary(file, &[offset], &[0..length], value_type, true).await?
        }
        dt if dt.is_integer() => {
            let p = LegacyPage {
                position: offset,
                length,
                rows: length,
            };
            fixed(file, &[p], &[0..length], dt).await?
        }
        dt => return Err(unsupported(format!("legacy dictionaries of {dt}"))),
    };
    layout
        .dictionaries
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id, values.clone());
    Ok(values)
}
