//! The legacy data file (format 0.1, footer versions 0.0 to 0.2). A 16-byte footer
//! (metadata position, version, magic) points to a `lance.file.Metadata` message: the
//! rows of each batch ("row group"), and a page table of (position, element count) pairs
//! for every field id × batch. The table's size is not stored: the dataset's `DataFile`
//! names the ids the file holds. Each batch of a field is one page.
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use arrow_array::ArrayRef;
use prost::Message;

use super::{ColumnInfo, FileMetadata, FileVersion, Footer, PageEncoding, PageInfo};
use crate::error::{corrupt, Result};
use crate::proto::file::Metadata;

pub const FOOTER_LEN: usize = 16;

/// The version in a file's last 8 bytes, when it is a legacy one.
pub fn legacy_version(tail: &[u8]) -> Option<FileVersion> {
    let b = tail.get(tail.len().checked_sub(8)?..)?;
    let major = u16::from_le_bytes([b[0], b[1]]);
    let minor = u16::from_le_bytes([b[2], b[3]]);
    (&b[4..8] == super::MAGIC && major == 0 && minor < 3).then_some(FileVersion { major, minor })
}

/// What a legacy file holds besides its pages.
#[derive(Debug)]
pub struct LegacyLayout {
    /// Row offsets of the batches: `[0, n0, n0 + n1, ..., rows]`.
    pub batch_starts: Vec<u64>,
    pub page_table_position: u64,
    /// The manifest copy inside the file (0: none); its dictionaries point into this file.
    pub manifest_position: u64,
    /// Dictionaries decoded so far, by field id.
    pub dictionaries: Mutex<HashMap<i32, ArrayRef>>,
}

/// One page of a legacy file (a field in one batch): where it is, how many elements it
/// holds (values, or offsets for a list), and the rows of its batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LegacyPage {
    pub position: u64,
    pub length: u64,
    pub rows: u64,
}

/// Batches are small (1024 rows by default), so a scan reads them in groups of at least
/// this many rows, each group's pages fetched together.
pub const GROUP_ROWS: u64 = 64 * 1024;

impl LegacyLayout {
    pub fn num_batches(&self) -> usize {
        self.batch_starts.len().saturating_sub(1)
    }

    /// Rows of batch `b`.
    pub fn batch_rows(&self, b: usize) -> u64 {
        self.batch_starts[b + 1] - self.batch_starts[b]
    }
}

fn u32_at(b: &[u8], at: usize) -> Result<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes(s.try_into().unwrap()))
        .ok_or_else(|| corrupt("legacy metadata runs past the end of the file"))
}

/// A length-prefixed protobuf message at `at` within `bytes` (which start at file offset
/// `start`); None when the bytes do not reach back far enough.
pub fn message_at<M: Message + Default>(
    bytes: &[u8],
    start: u64,
    at: u64,
    what: &str,
) -> Result<Option<M>> {
    if at < start {
        return Ok(None);
    }
    let at = (at - start) as usize;
    let len = u32_at(bytes, at)? as usize;
    let body = bytes
        .get(at + 4..at + 4 + len)
        .ok_or_else(|| corrupt(format!("{what} runs past the end of the file")))?;
    M::decode(body)
        .map(Some)
        .map_err(|e| corrupt(format!("bad {what}: {e}")))
}

/// The metadata of a legacy file from its last bytes (`tail`, starting at file offset
/// `start`); None when `tail` does not reach back to the metadata message.
pub fn parse_metadata(
    tail: &[u8],
    start: u64,
    file_size: u64,
    version: FileVersion,
) -> Result<Option<FileMetadata>> {
    if file_size < FOOTER_LEN as u64 {
        return Err(corrupt(format!(
            "file is {file_size} bytes, too short for a Lance footer"
        )));
    }
    let end = tail.len();
    let position = u64::from_le_bytes(tail[end - 16..end - 8].try_into().unwrap());
    if position >= file_size - FOOTER_LEN as u64 {
        return Err(corrupt(format!(
            "metadata position {position} lies outside the file ({file_size} bytes)"
        )));
    }
    let Some(meta) = message_at::<Metadata>(tail, start, position, "legacy file metadata")? else {
        return Ok(None);
    };
    let mut batch_starts = Vec::with_capacity(meta.batch_offsets.len());
    for &o in &meta.batch_offsets {
        let o = u64::try_from(o).map_err(|_| corrupt("negative batch offset"))?;
        if batch_starts.last().is_some_and(|&l| o < l) {
            return Err(corrupt("batch offsets decrease"));
        }
        batch_starts.push(o);
    }
    if batch_starts.is_empty() {
        batch_starts.push(0);
    }
    let layout = LegacyLayout {
        batch_starts,
        page_table_position: meta.page_table_position,
        manifest_position: meta.manifest_position,
        dictionaries: Mutex::new(HashMap::new()),
    };
    let footer = Footer {
        column_meta_start: 0,
        cmo_table_start: 0,
        gbo_table_start: 0,
        num_global_buffers: 0,
        num_columns: 0,
        version,
    };
    Ok(Some(FileMetadata {
        footer,
        file_size,
        num_rows: *layout.batch_starts.last().unwrap(),
        schema: Default::default(),
        columns: vec![],
        global_buffers: vec![],
        legacy: Some(Arc::new(layout)),
    }))
}

/// The bytes of the page table for field ids `min_id..=max_id`.
pub fn page_table_range(
    layout: &LegacyLayout,
    min_id: i32,
    max_id: i32,
    file_size: u64,
) -> Result<Range<u64>> {
    let fields = field_count(min_id, max_id)? as u64;
    let len = fields
        .checked_mul(layout.num_batches() as u64)
        .and_then(|n| n.checked_mul(16));
    let start = layout.page_table_position;
    match len.and_then(|len| start.checked_add(len)) {
        Some(end) if end <= file_size => Ok(start..end),
        _ => Err(corrupt(format!(
            "page table of {fields} fields × {} batches at {start} lies outside the file ({file_size} bytes)",
            layout.num_batches()
        ))),
    }
}

/// Columns a file holds for field ids `min_id..=max_id`. Each is one entry of the
/// dataset's schema, so there are not millions of them.
fn field_count(min_id: i32, max_id: i32) -> Result<usize> {
    const MAX_FIELDS: i64 = 1 << 20;
    let n = (max_id as i64 - min_id as i64 + 1).max(0);
    if n > MAX_FIELDS {
        return Err(corrupt(format!(
            "a legacy file said to hold field ids {min_id} to {max_id}"
        )));
    }
    Ok(n as usize)
}

/// Columns for field ids `min_id..=max_id` (column `id - min_id`), from the bytes of the
/// page table. A column's pages are groups of consecutive batches (the same groups in
/// every column), so they line up by row; each lists the legacy pages of its batches.
pub fn columns_from_page_table(
    layout: &LegacyLayout,
    table: &[u8],
    min_id: i32,
    max_id: i32,
    file_size: u64,
) -> Result<Vec<ColumnInfo>> {
    let batches = layout.num_batches();
    let mut groups: Vec<Range<usize>> = Vec::new();
    let mut rows = 0;
    for b in 0..batches {
        match groups.last_mut() {
            Some(g) if rows < GROUP_ROWS => g.end = b + 1,
            _ => {
                groups.push(b..b + 1);
                rows = 0;
            }
        }
        rows += layout.batch_rows(b);
    }
    let fields = field_count(min_id, max_id)?;
    if table.len() / 16 / batches.max(1) < fields && batches > 0 {
        return Err(corrupt(format!(
            "page table of {} bytes for {fields} fields × {batches} batches",
            table.len()
        )));
    }
    let mut columns = Vec::new();
    for f in 0..fields {
        let mut pages = Vec::with_capacity(groups.len());
        for g in &groups {
            let mut group = Vec::with_capacity(g.len());
            for b in g.clone() {
                let at = 16 * (f * batches + b);
                let position = i64::from_le_bytes(table[at..at + 8].try_into().unwrap());
                let length = i64::from_le_bytes(table[at + 8..at + 16].try_into().unwrap());
                if position < 0 || length < 0 || position as u64 > file_size {
                    return Err(corrupt(format!(
                        "page table entry of field {} batch {b} is ({position}, {length})",
                        min_id + f as i32
                    )));
                }
                group.push(LegacyPage {
                    position: position as u64,
                    length: length as u64,
                    rows: layout.batch_rows(b),
                });
            }
            pages.push(PageInfo {
                buffers: vec![],
                num_rows: group.iter().map(|p| p.rows).sum(),
                encoding: PageEncoding::Legacy(group),
            });
        }
        columns.push(ColumnInfo {
            pages,
            buffers: vec![],
        });
    }
    Ok(columns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(batches: usize) -> LegacyLayout {
        LegacyLayout {
            batch_starts: (0..=batches as u64).map(|b| b * 10).collect(),
            page_table_position: 0,
            manifest_position: 0,
            dictionaries: Mutex::new(HashMap::new()),
        }
    }

    #[test]
    fn field_id_ranges_are_bounded() {
        // ids 0..=i32::MAX overflowed `max - min + 1`; with no batches they made 2^31
        // empty columns.
        assert!(page_table_range(&layout(3), 0, i32::MAX, 1 << 40).is_err());
        assert!(columns_from_page_table(&layout(0), &[], 0, i32::MAX, 100).is_err());
        // A table shorter than its fields × batches is an error, not an index panic.
        assert!(columns_from_page_table(&layout(2), &[0; 40], 0, 1, 100).is_err());
        assert_eq!(
            columns_from_page_table(&layout(0), &[], 3, 5, 100)
                .unwrap()
                .len(),
            3
        );
    }
}
