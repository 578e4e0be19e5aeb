//! Entry points for fuzzing: each runs decoders on arbitrary bytes and drops what they
//! return. Whatever the bytes, a decoder must return (an error is fine): no panic, no
//! abort, no hang, no allocation out of proportion to what it was given. The cargo-fuzz
//! targets in `fuzz/` and the bounded smoke test (`fuzzing/smoke.rs`) call `run`; `seeds`
//! (test-only) builds valid inputs for every target with this crate's own writers.
//!
//! Whole-file targets take the file's bytes. The others take a frame (`Frame`): the leaf
//! type as a logical type string (or `struct:` and a comma-separated list of them), small
//! integers (counts, selectors), then length-prefixed sections (an encoding protobuf and
//! the page's buffers). Counts a fragment vouches for (rows, values) are capped at
//! `MAX_ROWS`: decoders may spend memory in proportion to them, the caller checks them.
use std::sync::Arc;

use arrow_array::{ArrayRef, Int32Array};
use arrow_schema::{DataType, Field};
use bytes::Bytes;
use prost::Message;

use crate::encoding::compression::Codec;
use crate::encoding::layout::{plan_page, DecodedPage, Layer, PageValues, UnitSizing};
use crate::encoding::levels::{unravel, PathStep};
use crate::encoding::values::ValuesBuilder;
use crate::encoding::{array20, legacy as legacy_enc};
use crate::file::{legacy as legacy_file, FileMetadata};
use crate::proto::encodings20::ArrayEncoding;
use crate::proto::encodings21::{page_layout::Layout as PbLayout, CompressiveEncoding, PageLayout};
use crate::proto::table::{
    data_fragment::RowIdSequence as RowIdSeq, deletion_file::DeletionFileType, DeletionFile,
};
use crate::table::schema::{parse_logical_type, LanceSchema};

/// Every target, by name.
pub const TARGETS: &[&str] = &[
    "manifest",
    "file_footer",
    "miniblock",
    "fullzip",
    "constant_blob",
    "compression",
    "array20",
    "legacy",
    "levels",
    "deletion_arrow",
    "deletion_roaring",
    "row_ids",
];

/// The largest row or value count a framed input may declare.
pub const MAX_ROWS: u64 = 1 << 16;
/// Bytes of one value of the leaf type, at most (a schema could say more; that is the
/// schema's problem, not the page decoder's).
const MAX_VALUE_BYTES: u64 = 1 << 10;
/// Units of a page decoded per input (a page may be cut into many).
const MAX_UNITS: usize = 64;

/// Run target `name` on `data`; true when every decoder it ran succeeded (seeds must).
pub fn run(name: &str, data: &[u8]) -> bool {
    let done = match name {
        "manifest" => manifest(data),
        "file_footer" => file_footer(data),
        "miniblock" => page(data, |l| matches!(l, PbLayout::MiniBlockLayout(_))),
        "fullzip" => page(data, |l| matches!(l, PbLayout::FullZipLayout(_))),
        "constant_blob" => page(data, |l| {
            matches!(l, PbLayout::ConstantLayout(_) | PbLayout::BlobLayout(_))
        }),
        "compression" => compression(data),
        "array20" => array20(data),
        "legacy" => legacy(data),
        "levels" => levels(data),
        "deletion_arrow" => deletion(data, DeletionFileType::ArrowArray),
        "deletion_roaring" => deletion(data, DeletionFileType::Bitmap),
        "row_ids" => row_ids(data),
        other => panic!("unknown fuzz target {other}"),
    };
    done.is_some()
}

/// A decoder's result, as the targets chain them.
fn ok<T>(r: crate::Result<T>) -> Option<T> {
    r.ok()
}

/// Reads a framed input; past the end every number is 0 and every section empty.
struct Input<'a>(&'a [u8]);

impl<'a> Input<'a> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }

    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    fn section(&mut self) -> &'a [u8] {
        let n = (self.u32() as usize).min(self.0.len());
        let (s, rest) = self.0.split_at(n);
        self.0 = rest;
        s
    }

    /// A count, or None past `MAX_ROWS`.
    fn count(&mut self) -> Option<usize> {
        let n = self.u32() as u64;
        (n <= MAX_ROWS).then_some(n as usize)
    }

    /// Up to 8 buffers, each a section (copied: unaligned, as page buffers can be).
    fn buffers(&mut self) -> Vec<Bytes> {
        let n = self.u8() % 9;
        (0..n)
            .map(|_| Bytes::copy_from_slice(self.section()))
            .collect()
    }

    fn leaf_type(&mut self) -> Option<DataType> {
        leaf_type(self.section())
    }
}

/// Builds a framed input (the inverse of `Input`).
#[derive(Default)]
pub struct Frame(Vec<u8>);

impl Frame {
    pub fn new(leaf_type: &str) -> Self {
        Frame::default().section(leaf_type.as_bytes())
    }
    pub fn u8(mut self, v: u8) -> Self {
        self.0.push(v);
        self
    }
    pub fn u32(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn section(mut self, s: &[u8]) -> Self {
        self = self.u32(s.len() as u32);
        self.0.extend_from_slice(s);
        self
    }
    pub fn buffers<B: AsRef<[u8]>>(mut self, buffers: &[B]) -> Self {
        self = self.u8(buffers.len() as u8);
        for b in buffers {
            self = self.section(b.as_ref());
        }
        self
    }
    pub fn finish(self) -> Vec<u8> {
        self.0
    }
}

/// The leaf type a frame names: a logical type, or `struct:` and the logical types of
/// its fields, separated by commas.
fn leaf_type(spec: &[u8]) -> Option<DataType> {
    let s = std::str::from_utf8(spec).ok()?;
    let dt = match s.strip_prefix("struct:") {
        Some(fields) => {
            let fields = fields
                .split(',')
                .enumerate()
                .map(|(i, lt)| {
                    let dt = parse_logical_type(lt).ok()?;
                    Some(Field::new(format!("f{i}"), dt, true))
                })
                .collect::<Option<Vec<_>>>()?;
            DataType::Struct(fields.into())
        }
        None => parse_logical_type(s).ok()?,
    };
    value_bytes(&dt)
        .filter(|&b| b <= MAX_VALUE_BYTES)
        .map(|_| dt)
}

/// Bytes one value of `dt` takes in memory (16 for variable-width values).
fn value_bytes(dt: &DataType) -> Option<u64> {
    match dt {
        DataType::FixedSizeList(item, n) => {
            value_bytes(item.data_type())?.checked_mul(u64::try_from(*n).ok()?)
        }
        DataType::FixedSizeBinary(n) => u64::try_from(*n).ok(),
        DataType::Struct(fields) => fields
            .iter()
            .try_fold(0u64, |acc, f| acc.checked_add(value_bytes(f.data_type())?)),
        DataType::Dictionary(k, v) => Some(value_bytes(k)?.max(value_bytes(v)?)),
        dt => Some(dt.primitive_width().map_or(16, |w| w as u64)),
    }
}

/// A path for the layers of a decoded page (inner-most first): the leaf, then a list
/// step for each list layer and a struct (or, by `fsl`'s bits, a fixed-size list of
/// structs) for each item layer.
fn path_for(layers: &[Layer], leaf: &DataType, fsl: u8) -> Vec<PathStep> {
    let field = |name: &str, dt: DataType| Arc::new(Field::new(name, dt, true));
    let mut path: Vec<PathStep> = layers
        .iter()
        .enumerate()
        .skip(1)
        .rev()
        .map(|(i, l)| {
            if l.is_list() {
                PathStep::List {
                    field: field("list", DataType::Null),
                    large: i % 2 == 0,
                }
            } else if fsl >> (i % 8) & 1 == 1 {
                PathStep::FixedSizeList {
                    field: field("fsl", DataType::Null),
                    dim: 1 + (fsl % 3) as i32,
                }
            } else {
                PathStep::Struct(field("struct", DataType::Null))
            }
        })
        .collect();
    path.push(PathStep::Leaf(field("leaf", leaf.clone())));
    path
}

/// A manifest file: the manifest, its schema, and what the fragments carry inline.
fn manifest(data: &[u8]) -> Option<()> {
    let bytes = Bytes::copy_from_slice(data);
    let m = ok(crate::table::manifest::decode_manifest(&bytes, "fuzz"))?;
    let _ = crate::table::manifest::timestamp_nanos(&m);
    let mut all = true;
    for f in &m.fragments {
        if let Some(d) = &f.deletion_file {
            let _ = crate::table::deletion::deletion_file_name(f.id, d);
        }
        if let Some(RowIdSeq::InlineRowIds(b)) = &f.row_id_sequence {
            all &= crate::table::rowids::decode_row_ids_bounded(b, MAX_ROWS).is_ok();
        }
    }
    let schema = ok(LanceSchema::from_proto(&m.fields, &m.schema_metadata))?;
    let _ = schema.field_ids();
    ok(schema.to_arrow())?;
    all.then_some(())
}

/// A data file's tail: footer, offset tables, schema and column metadata (v2), or the
/// legacy metadata and page table.
fn file_footer(data: &[u8]) -> Option<()> {
    let size = data.len() as u64;
    if let Some(version) = legacy_file::legacy_version(data) {
        let meta = ok(legacy_file::parse_metadata(data, 0, size, version))??;
        let layout = meta.legacy?;
        let mut all = true;
        for max_id in 0..4 {
            let r = legacy_file::page_table_range(&layout, 0, max_id, size);
            // The file holds ids 0 and 1; a wider range reads past its page table.
            let fits = r.is_ok_and(|r| {
                let table = &data[r.start as usize..r.end as usize];
                legacy_file::columns_from_page_table(&layout, table, 0, max_id, size).is_ok()
            });
            all &= fits || max_id > 1;
        }
        return (all || layout.num_batches() == 0).then_some(());
    }
    // A reader of a large file sees only its tail at first.
    let cut = data.len().saturating_sub(256);
    let _ = FileMetadata::parse(&data[cut..], cut as u64, size);
    let m = ok(FileMetadata::parse(data, 0, size))?;
    let s = ok(LanceSchema::from_proto(
        &m.schema.fields,
        &m.schema.metadata,
    ))?;
    ok(s.to_arrow()).map(|_| ())
}

/// A 2.1+ page of a layout `want` accepts: planned, cut into units, each decoded and
/// unravelled into its path.
fn page(data: &[u8], want: fn(&PbLayout) -> bool) -> Option<()> {
    let mut input = Input(data);
    let dt = input.leaf_type()?;
    let rows = input.count()?;
    let cut = input.u8();
    let fsl = input.u8();
    let layout = PageLayout::decode(input.section()).ok()?;
    if !layout.layout.as_ref().is_some_and(want) {
        return None;
    }
    let buffers = input.buffers();
    let sizing = match cut {
        0 => UnitSizing::whole(),
        c => UnitSizing {
            target_rows: c as u64,
            align_rows: (c % 5) as u64,
            page_start: (c % 3) as u64,
            rows_share_chunks: c % 2 == 1,
        },
    };
    let plan = ok(plan_page(&layout, buffers, rows as u64, &dt, &sizing))?;
    let mut all = true;
    for i in 0..plan.unit_rows().len().min(MAX_UNITS) {
        all &= plan.decode_unit(i).is_ok_and(|p| {
            let path = path_for(&p.layers, &dt, fsl);
            unravel(p, &path).is_ok()
        });
    }
    all.then_some(())
}

/// One compressive encoding in one of its three contexts: a mini-block chunk (the
/// sections are its value buffers), a block, or full-zip values (one section each).
fn compression(data: &[u8]) -> Option<()> {
    let mut input = Input(data);
    let dt = input.leaf_type()?;
    let mode = input.u8() % 3;
    let n = input.count()?;
    let enc = CompressiveEncoding::decode(input.section()).ok()?;
    let buffers = input.buffers();
    let codec = ok(Codec::from_proto(&enc))?;
    let mut out = ok(ValuesBuilder::for_type(&dt, n))?;
    let bufs: Vec<&[u8]> = buffers.iter().map(|b| b.as_ref()).collect();
    ok(match mode {
        0 => codec.decode_miniblock(&bufs, n, &mut out),
        1 => codec.decode_block(bufs.first().copied().unwrap_or_default(), n, &mut out),
        _ => bufs
            .iter()
            .try_for_each(|b| codec.decode_value(b, &mut out)),
    })?;
    ok(out.finish(&dt, None)).map(|_| ())
}

/// A 2.0 page: its array encoding decoded as the leaf type, or as a list's offsets.
fn array20(data: &[u8]) -> Option<()> {
    let mut input = Input(data);
    let dt = input.leaf_type()?;
    let n = input.count()?;
    let enc = ArrayEncoding::decode(input.section()).ok()?;
    let buffers = input.buffers();
    match array20::as_list(&enc) {
        Ok(list) => ok(array20::list_ends(list, &buffers, n)).map(|_| ()),
        Err(_) => ok(array20::decode(&enc, &buffers, n, &dt)).map(|_| ()),
    }
}

/// Legacy (0.1) pages: fixed-width values, offsets, strings, dictionaries.
fn legacy(data: &[u8]) -> Option<()> {
    let mut input = Input(data);
    let dt = input.leaf_type()?;
    let op = input.u8();
    let n = input.count()?;
    let bit = (input.u8() % 8) as usize;
    let first = Bytes::copy_from_slice(input.section());
    let second = Bytes::copy_from_slice(input.section());
    let nullable = op & 0x10 != 0;
    match op % 4 {
        0 => ok(legacy_enc::fixed_values(&dt, first, bit, n)).map(|_| ()),
        1 => {
            let width = if op & 0x20 != 0 { 8 } else { 4 };
            ok(legacy_enc::offsets(&first, width, n)).map(|_| ())
        }
        2 => {
            let positions = ok(legacy_enc::offsets(&first, 8, n + 1))?;
            ok(legacy_enc::var_binary(&positions, second, &dt, nullable)).map(|_| ())
        }
        _ => {
            let DataType::Dictionary(key, value) = &dt else {
                return None;
            };
            let keys = ok(legacy_enc::fixed_values(key, first, 0, n))?;
            let entries = (op >> 4) as usize;
            let values: ArrayRef = match value.as_ref() {
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary => {
                    let p = ok(legacy_enc::offsets(&second, 8, entries + 1))?;
                    let rest = second.slice(second.len().min(8 * p.len())..);
                    ok(legacy_enc::var_binary(&p, rest, value, true))?
                }
                v => ok(legacy_enc::fixed_values(v, second, 0, entries))?,
            };
            ok(legacy_enc::dictionary(keys, values, &dt)).map(|_| ())
        }
    }
}

/// Repetition and definition levels unravelled into lists, structs and fixed-size lists.
fn levels(data: &[u8]) -> Option<()> {
    let mut input = Input(data);
    let layers: Vec<Layer> = input
        .section()
        .iter()
        .take(8)
        .map(|b| Layer::from_proto((b % 6 + 1) as i32).unwrap_or(Layer::AllValidItem))
        .collect();
    let flags = input.u8();
    let fsl = input.u8();
    let n = input.count()?;
    let rows = input.count()?;
    let words = |s: &[u8]| -> Vec<u16> {
        s.chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect()
    };
    let rep = words(input.section());
    let def = words(input.section());
    if layers.is_empty() {
        return None;
    }
    let values = if flags & 4 != 0 {
        PageValues::AllNull(n)
    } else {
        PageValues::Array(Arc::new(Int32Array::from_iter_values(0..n as i32)))
    };
    let page = DecodedPage {
        num_rows: rows as u64,
        layers: layers.clone(),
        rep: (flags & 1 != 0).then(|| rep.into()),
        def: (flags & 2 != 0).then(|| def.into()),
        values,
    };
    ok(unravel(page, &path_for(&layers, &DataType::Int32, fsl))).map(|_| ())
}

fn deletion(data: &[u8], kind: DeletionFileType) -> Option<()> {
    let d = DeletionFile {
        file_type: kind as i32,
        ..Default::default()
    };
    let bytes = Bytes::copy_from_slice(data);
    ok(crate::table::deletion::decode_deletions(&bytes, &d, "fuzz")).map(|_| ())
}

fn row_ids(data: &[u8]) -> Option<()> {
    ok(crate::table::rowids::decode_row_ids_bounded(data, MAX_ROWS)).map(|_| ())
}

/// Valid inputs for target `name`, written by this crate's writers (or by hand where
/// it writes nothing of the kind). Test-only: the smoke test decodes them and writes the
/// fuzzers' corpus from them.
#[cfg(test)]
pub fn seeds(name: &str) -> Vec<Vec<u8>> {
    match name {
        "manifest" => seeds::manifests(),
        "file_footer" => seeds::files(),
        "miniblock" | "fullzip" | "constant_blob" => seeds::pages(name),
        "compression" => seeds::compression(),
        "array20" => seeds::array20(),
        "legacy" => seeds::legacy(),
        "levels" => seeds::levels(),
        "deletion_arrow" => seeds::deletions(false),
        "deletion_roaring" => seeds::deletions(true),
        "row_ids" => seeds::row_ids(),
        other => panic!("unknown fuzz target {other}"),
    }
}

#[cfg(test)]
mod seeds;
#[cfg(test)]
mod smoke;
