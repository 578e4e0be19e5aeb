//! The Lance v2.x file container: a 40-byte footer at the end of the file points to two
//! offset tables (column metadata, global buffers); global buffer 0 holds the file's
//! schema; each column's metadata lists its pages and their buffers. This layer knows
//! where bytes are, not what they mean (that is `encoding`). Files of format 2.0 use the
//! same container; only their page encodings differ.
pub mod legacy;
mod reader;
mod writer;

use std::ops::Range;

use prost::Message;

use crate::error::{corrupt, unsupported, Result};
use crate::proto::encodings20::ArrayEncoding;
use crate::proto::encodings21::PageLayout;
use crate::proto::file::v2::{encoding, ColumnMetadata};
use crate::proto::file::FileDescriptor;

pub use reader::{FileReader, PageData};
pub use writer::FileWriter;

pub const FOOTER_LEN: usize = 40;
pub const MAGIC: &[u8; 4] = b"LANC";
const PAGE_LAYOUT_URL: &str = "/lance.encodings21.PageLayout";
const ARRAY_ENCODING_URL: &str = "/lance.encodings.ArrayEncoding";

/// The file format versions whose pages this reader decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct FileVersion {
    pub major: u16,
    pub minor: u16,
}

impl std::fmt::Display for FileVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

#[derive(Clone, Debug)]
pub struct Footer {
    pub column_meta_start: u64,
    pub cmo_table_start: u64,
    pub gbo_table_start: u64,
    pub num_global_buffers: u32,
    pub num_columns: u32,
    pub version: FileVersion,
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}

impl Footer {
    /// Parse the last 40 bytes of a file of `file_size` bytes and check that every offset
    /// it holds lies inside the file.
    pub fn parse(tail: &[u8], file_size: u64) -> Result<Self> {
        if tail.len() < FOOTER_LEN || file_size < FOOTER_LEN as u64 {
            return Err(corrupt(format!(
                "file is {file_size} bytes, too short for a Lance footer"
            )));
        }
        let b = &tail[tail.len() - FOOTER_LEN..];
        if &b[36..40] != MAGIC {
            return Err(corrupt("not a Lance file (no LANC magic at the end)"));
        }
        let major = u16_at(b, 32);
        let minor = u16_at(b, 34);
        // 2.0 files say 0.3 on disk; 0.1 and 0.2 are the legacy format.
        let version = match (major, minor) {
            (0, 3) => FileVersion { major: 2, minor: 0 },
            (m, n) => FileVersion { major: m, minor: n },
        };
        let footer = Footer {
            column_meta_start: u64_at(b, 0),
            cmo_table_start: u64_at(b, 8),
            gbo_table_start: u64_at(b, 16),
            num_global_buffers: u32_at(b, 24),
            num_columns: u32_at(b, 28),
            version,
        };
        let meta_end = file_size - FOOTER_LEN as u64;
        let cmo_end = footer
            .cmo_table_start
            .checked_add(16 * footer.num_columns as u64);
        let gbo_end = footer
            .gbo_table_start
            .checked_add(16 * footer.num_global_buffers as u64);
        if footer.column_meta_start > footer.cmo_table_start
            || cmo_end.is_none_or(|e| e > meta_end)
            || gbo_end.is_none_or(|e| e > meta_end)
        {
            return Err(corrupt(format!(
                "footer offsets out of range (column metadata at {}, tables at {} and {}, file size {file_size})",
                footer.column_meta_start, footer.cmo_table_start, footer.gbo_table_start
            )));
        }
        Ok(footer)
    }

    pub fn check_version(&self) -> Result<()> {
        match (self.version.major, self.version.minor) {
            (2, 0) | (2, 1) | (2, 2) => Ok(()),
            (0, _) => Err(unsupported(
                "legacy file format 0.1 is not supported yet (2.0, 2.1 and 2.2 are)",
            )),
            (m, n) => Err(unsupported(format!(
                "unknown file format version {m}.{n} (this reader knows 2.0, 2.1 and 2.2)"
            ))),
        }
    }
}

/// Read an offset table of `count` (position, size) pairs at `at` within `bytes`.
fn offset_table(
    bytes: &[u8],
    at: usize,
    count: usize,
    file_size: u64,
    what: &str,
) -> Result<Vec<Range<u64>>> {
    let end = at + 16 * count;
    if end > bytes.len() {
        return Err(corrupt(format!(
            "{what} table runs past the end of the metadata"
        )));
    }
    (0..count)
        .map(|i| {
            let pos = u64_at(bytes, at + 16 * i);
            let size = u64_at(bytes, at + 16 * i + 8);
            match pos.checked_add(size) {
                Some(e) if e <= file_size => Ok(pos..e),
                _ => Err(corrupt(format!(
                    "{what} {i} (at {pos}, {size} bytes) lies outside the file ({file_size} bytes)"
                ))),
            }
        })
        .collect()
}

/// One page of one column: where its buffers are and how it is laid out.
#[derive(Clone, Debug)]
pub struct PageInfo {
    pub buffers: Vec<Range<u64>>,
    pub num_rows: u64,
    pub encoding: PageEncoding,
}

/// How a page's buffers encode its values: 2.1+ pages have a structural layout (levels
/// and values), 2.0 pages a tree of array encodings.
#[derive(Clone, Debug)]
pub enum PageEncoding {
    Layout(PageLayout),
    Array(ArrayEncoding),
    /// Pages of a legacy (0.1) file, one per batch of a group of batches: their elements
    /// are laid out by the field's type.
    Legacy(Vec<legacy::LegacyPage>),
}

#[derive(Clone, Debug, Default)]
pub struct ColumnInfo {
    pub pages: Vec<PageInfo>,
    /// Buffers of the column as a whole (none in the files lance_core and pylance write
    /// today; 2.0 dictionaries could live here).
    pub buffers: Vec<Range<u64>>,
}

/// Everything a reader needs from a file's tail.
#[derive(Clone, Debug)]
pub struct FileMetadata {
    pub footer: Footer,
    pub file_size: u64,
    pub num_rows: u64,
    pub schema: crate::proto::file::Schema,
    pub columns: Vec<ColumnInfo>,
    /// Where each global buffer is (buffer 0 holds the schema); indices keep more.
    pub global_buffers: Vec<Range<u64>>,
    /// For a legacy (0.1) file, its batches and page table (its columns are filled in
    /// once the field ids it holds are known: `FileReader::with_field_ids`).
    pub legacy: Option<std::sync::Arc<legacy::LegacyLayout>>,
}

/// Decode a serialized `google.protobuf.Any` and check its type.
fn decode_any<M: Message + Default>(bytes: &[u8], expected_url: &str, what: &str) -> Result<M> {
    let any = prost_types::Any::decode(bytes)
        .map_err(|e| corrupt(format!("{what}: bad encoding message: {e}")))?;
    if any.type_url != expected_url {
        // e.g. a 2.0 array encoding in a file whose footer says 2.1, or the reverse
        return Err(unsupported(format!(
            "{what}: encoding type '{}' where the file's version needs '{expected_url}'",
            any.type_url
        )));
    }
    M::decode(any.value.as_slice()).map_err(|e| corrupt(format!("{what}: bad {expected_url}: {e}")))
}

impl FileMetadata {
    /// About how many bytes of memory this metadata takes (for the session's budget): a
    /// page's decoded description is a few hundred bytes, its buffer ranges 16 each.
    pub fn memory_size(&self) -> u64 {
        let pages: usize = self.columns.iter().map(|c| c.pages.len()).sum();
        let ranges: usize = self
            .columns
            .iter()
            .flat_map(|c| c.pages.iter().map(|p| p.buffers.len()))
            .sum();
        let schema = self.schema.fields.len() * 256;
        (512 + schema + self.columns.len() * 64 + pages * 256 + ranges * 16) as u64
    }

    /// Bytes of the file's parts as pylance reports them: data (pages; the global
    /// buffers are not counted in it wherever they lie), column metadata (with its offset
    /// table), global buffers.
    pub fn section_sizes(&self) -> (u64, u64, u64) {
        let buffers: u64 = self.global_buffers.iter().map(|r| r.end - r.start).sum();
        let data = self.footer.column_meta_start.saturating_sub(buffers);
        let column_meta = self
            .footer
            .gbo_table_start
            .saturating_sub(self.footer.column_meta_start);
        (data, column_meta, buffers)
    }

    /// Parse the metadata from `tail`, the last bytes of the file starting at file offset
    /// `tail_start`; it must reach back to the schema (global buffer 0) and the column
    /// metadata.
    pub fn parse(tail: &[u8], tail_start: u64, file_size: u64) -> Result<Self> {
        let footer = Footer::parse(tail, file_size)?;
        footer.check_version()?;
        let local = |pos: u64| -> Result<usize> {
            pos.checked_sub(tail_start)
                .map(|p| p as usize)
                .filter(|p| *p <= tail.len())
                .ok_or_else(|| corrupt("metadata lies before the bytes read for it"))
        };
        let gbo = offset_table(
            tail,
            local(footer.gbo_table_start)?,
            footer.num_global_buffers as usize,
            file_size,
            "global buffer",
        )?;
        if gbo.is_empty() {
            return Err(corrupt("file has no global buffers, so no schema"));
        }
        let schema_range = local(gbo[0].start)?..local(gbo[0].end)?;
        let descriptor = FileDescriptor::decode(&tail[schema_range])
            .map_err(|e| corrupt(format!("bad schema in global buffer 0: {e}")))?;
        let cmo = offset_table(
            tail,
            local(footer.cmo_table_start)?,
            footer.num_columns as usize,
            file_size,
            "column metadata",
        )?;
        let mut columns = Vec::with_capacity(cmo.len());
        for (i, r) in cmo.iter().enumerate() {
            let bytes = &tail[local(r.start)?..local(r.end)?];
            let meta = ColumnMetadata::decode(bytes)
                .map_err(|e| corrupt(format!("bad metadata of column {i}: {e}")))?;
            let column = parse_column(meta, i, file_size, footer.version)?;
            check_column_rows(&column, i, descriptor.length, footer.version)?;
            columns.push(column);
        }
        Ok(FileMetadata {
            file_size,
            num_rows: descriptor.length,
            schema: descriptor.schema.unwrap_or_default(),
            columns,
            footer,
            global_buffers: gbo,
            legacy: None,
        })
    }
}

/// Pages of 2.1+ files count top-level rows (or, below fixed-size lists of structs, a
/// whole number of items per row), so a column's pages add up to a multiple of the
/// file's rows. 2.0 list items count items, which nothing here can check.
fn check_column_rows(column: &ColumnInfo, i: usize, rows: u64, version: FileVersion) -> Result<()> {
    if version < (FileVersion { major: 2, minor: 1 }) {
        return Ok(());
    }
    let total = column
        .pages
        .iter()
        .try_fold(0u64, |a, p| a.checked_add(p.num_rows));
    let fits = match total {
        Some(0) => rows == 0 || column.pages.is_empty(),
        Some(t) => rows > 0 && t % rows == 0,
        None => false,
    };
    if !fits {
        return Err(corrupt(format!(
            "column {i}: pages hold {} rows, the file {rows}",
            total.map_or("too many".to_string(), |t| t.to_string())
        )));
    }
    Ok(())
}

fn parse_column(
    meta: ColumnMetadata,
    column: usize,
    file_size: u64,
    version: FileVersion,
) -> Result<ColumnInfo> {
    let legacy = version.major == 2 && version.minor == 0;
    let mut pages = Vec::with_capacity(meta.pages.len());
    for (p, page) in meta.pages.into_iter().enumerate() {
        let what = format!("column {column} page {p}");
        if legacy && page.length == 0 {
            continue; // 2.0 writers leave empty pages (an empty column's only page)
        }
        if page.buffer_offsets.len() != page.buffer_sizes.len() {
            return Err(corrupt(format!(
                "{what}: {} buffer offsets but {} sizes",
                page.buffer_offsets.len(),
                page.buffer_sizes.len()
            )));
        }
        let buffers = buffer_ranges(&page.buffer_offsets, &page.buffer_sizes, file_size, &what)?;
        let encoding = match page.encoding.and_then(|e| e.location) {
            Some(encoding::Location::Direct(d)) if legacy => {
                PageEncoding::Array(decode_any::<ArrayEncoding>(
                    &d.encoding,
                    ARRAY_ENCODING_URL,
                    &what,
                )?)
            }
            Some(encoding::Location::Direct(d)) => PageEncoding::Layout(decode_any::<PageLayout>(
                &d.encoding,
                PAGE_LAYOUT_URL,
                &what,
            )?),
            Some(encoding::Location::Indirect(_)) => {
                return Err(unsupported(format!("{what}: deferred page encodings")))
            }
            _ => return Err(corrupt(format!("{what}: page has no encoding"))),
        };
        pages.push(PageInfo {
            buffers,
            num_rows: page.length,
            encoding,
        });
    }
    let what = format!("column {column}");
    if meta.buffer_offsets.len() != meta.buffer_sizes.len() {
        return Err(corrupt(format!(
            "{what}: buffer offsets and sizes differ in number"
        )));
    }
    let buffers = buffer_ranges(&meta.buffer_offsets, &meta.buffer_sizes, file_size, &what)?;
    Ok(ColumnInfo { pages, buffers })
}

/// The byte ranges of buffers at `offsets` of `sizes`, each checked to lie in the file.
fn buffer_ranges(
    offsets: &[u64],
    sizes: &[u64],
    file_size: u64,
    what: &str,
) -> Result<Vec<Range<u64>>> {
    offsets
        .iter()
        .zip(sizes)
        .map(|(&o, &s)| match o.checked_add(s) {
            Some(e) if e <= file_size => Ok(o..e),
            _ => Err(corrupt(format!(
                "{what}: buffer at {o} of {s} bytes lies outside the file ({file_size} bytes)"
            ))),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn footer_bytes(major: u16, minor: u16, magic: &[u8; 4]) -> Vec<u8> {
        let mut b = Vec::new();
        for v in [100u64, 200, 216] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&major.to_le_bytes());
        b.extend_from_slice(&minor.to_le_bytes());
        b.extend_from_slice(magic);
        b
    }

    #[test]
    fn footer_round_trip_and_checks() {
        let f = Footer::parse(&footer_bytes(2, 2, MAGIC), 300).unwrap();
        assert_eq!(f.version, FileVersion { major: 2, minor: 2 });
        assert_eq!(f.cmo_table_start, 200);
        f.check_version().unwrap();
        assert!(Footer::parse(&footer_bytes(2, 2, b"PAR1"), 300)
            .unwrap_err()
            .to_string()
            .contains("magic"));
        // Offsets that point past the end of a (truncated) file.
        assert!(Footer::parse(&footer_bytes(2, 2, MAGIC), 220)
            .unwrap_err()
            .to_string()
            .contains("out of range"));
        // 2.0 files say 0.3 on disk; 0.2 is the legacy format.
        let v20 = Footer::parse(&footer_bytes(0, 3, MAGIC), 300).unwrap();
        assert_eq!(v20.version, FileVersion { major: 2, minor: 0 });
        v20.check_version().unwrap();
        let v02 = Footer::parse(&footer_bytes(0, 2, MAGIC), 300).unwrap();
        assert!(v02.check_version().unwrap_err().to_string().contains("0.1"));
        let v9 = Footer::parse(&footer_bytes(9, 1, MAGIC), 300).unwrap();
        assert!(v9
            .check_version()
            .unwrap_err()
            .to_string()
            .contains("unknown file format version 9.1"));
    }

    #[test]
    fn column_pages_must_add_up_to_the_file_rows() {
        let page = |rows| PageInfo {
            buffers: vec![],
            num_rows: rows,
            encoding: PageEncoding::Legacy(vec![]),
        };
        let column = |rows: &[u64]| ColumnInfo {
            pages: rows.iter().map(|&r| page(r)).collect(),
            buffers: vec![],
        };
        let v21 = FileVersion { major: 2, minor: 1 };
        check_column_rows(&column(&[10, 5]), 0, 15, v21).unwrap();
        // Fixed-size lists of structs count items: a whole number per row.
        check_column_rows(&column(&[20, 10]), 0, 15, v21).unwrap();
        check_column_rows(&column(&[]), 0, 0, v21).unwrap();
        for (pages, rows) in [
            (&[10u64, 4][..], 15),
            (&[1 << 40], 15),
            (&[u64::MAX, 2], 15),
            (&[3], 0),
        ] {
            let err = check_column_rows(&column(pages), 2, rows, v21).unwrap_err();
            assert!(err.to_string().contains("column 2: pages hold"), "{err}");
        }
        // 2.0 list items count items, not rows.
        check_column_rows(&column(&[7]), 0, 3, FileVersion { major: 2, minor: 0 }).unwrap();
    }
}
