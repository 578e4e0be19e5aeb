//! Writing mini-block pages (the layout is described in `layout::miniblock`).
//!
//! Values are cut into chunks of a few KiB: 1024 values when bit-packed, otherwise a
//! power-of-two count that fits about 8 KiB (fixed width) or 4 KiB (variable width).
//! Each chunk carries the levels up to and including its last value; the levels of
//! empty or null lists after that go with the next chunk.
use std::collections::HashMap;

use arrow_buffer::{BooleanBuffer, Buffer};

use super::levels::LeafLevels;
use super::proto;
use super::values::Values;
use super::{EncodedPage, PageOptions};
use crate::encoding::compression::bitpacking::{
    encode_inline, encode_out_of_line, inline_size, width_of,
};
use crate::encoding::compression::Scheme;
use crate::error::{corrupt, Result};
use crate::proto::encodings21 as pb;

const FILL: u8 = 0xFE;
const FLAT_CHUNK_BYTES: usize = 8186;
const VARIABLE_CHUNK_BYTES: usize = 4096;
const MAX_CHUNK_VALUES: usize = 4096;

fn pad8(v: &mut Vec<u8>) {
    while !v.len().is_multiple_of(8) {
        v.push(FILL);
    }
}

/// How the values of the page are written.
enum Repr {
    /// Fixed width values, bit-packed per 1024 (`packed`) or as they are.
    Fixed {
        bytes: Buffer,
        width: usize,
        packed: bool,
    },
    Bool(BooleanBuffer),
    /// Variable-width values (possibly FSST codes) with absolute offsets.
    Variable {
        offsets: Vec<u64>,
        data: Buffer,
        large: bool,
    },
    FixedSizeList {
        dim: usize,
        item_width: usize,
        bytes: Buffer,
        validity: Option<BooleanBuffer>,
    },
}

impl Repr {
    fn len(&self) -> usize {
        match self {
            Repr::Fixed { bytes, width, .. } => bytes.len() / width,
            Repr::Bool(b) => b.len(),
            Repr::Variable { offsets, .. } => offsets.len() - 1,
            Repr::FixedSizeList {
                dim,
                item_width,
                bytes,
                ..
            } => bytes.len() / (dim * item_width),
        }
    }

    fn encoding(&self) -> pb::CompressiveEncoding {
        match self {
            Repr::Fixed {
                width,
                packed: true,
                ..
            } => proto::inline_bitpacking(*width as u64 * 8),
            Repr::Fixed { width, .. } => proto::flat(*width as u64 * 8),
            Repr::Bool(_) => proto::flat(1),
            Repr::Variable { large, .. } => proto::variable(if *large { 64 } else { 32 }),
            Repr::FixedSizeList {
                dim,
                item_width,
                validity,
                ..
            } => proto::fixed_size_list(
                *dim as u64,
                validity.is_some(),
                proto::flat(*item_width as u64 * 8),
            ),
        }
    }

    fn num_buffers(&self) -> usize {
        match self {
            Repr::FixedSizeList {
                validity: Some(_), ..
            } => 2,
            _ => 1,
        }
    }

    /// Cut the values into chunks (value ranges).
    fn chunks(&self) -> Vec<std::ops::Range<usize>> {
        let n = self.len();
        let fixed_step = |row_bytes: usize| {
            let mut k = 1usize;
            while k * 2 <= MAX_CHUNK_VALUES && k * 2 * row_bytes <= FLAT_CHUNK_BYTES {
                k *= 2;
            }
            k
        };
        let step = match self {
            Repr::Fixed { packed: true, .. } => 1024,
            Repr::Fixed { width, .. } => fixed_step(*width),
            Repr::Bool(_) => MAX_CHUNK_VALUES,
            Repr::FixedSizeList {
                dim,
                item_width,
                validity,
                ..
            } => fixed_step(dim * item_width + validity.as_ref().map_or(0, |_| dim.div_ceil(8))),
            Repr::Variable { offsets, large, .. } => {
                let w = if *large { 8 } else { 4 };
                let mut out = Vec::new();
                let mut start = 0;
                while start < n {
                    // The largest power of two of values whose offsets and bytes fit.
                    let (mut count, mut k) = (0usize, 1usize);
                    while start + count < n && count < MAX_CHUNK_VALUES {
                        let next = count + 1;
                        let bytes =
                            (offsets[start + next] - offsets[start]) as usize + w * (next + 1);
                        if bytes > VARIABLE_CHUNK_BYTES && count > 0 {
                            break;
                        }
                        count = next;
                    }
                    if start + count < n {
                        while k * 2 <= count {
                            k *= 2;
                        }
                        count = k;
                    }
                    out.push(start..start + count);
                    start += count;
                }
                return out;
            }
        };
        (0..n)
            .step_by(step.max(1))
            .map(|s| s..(s + step).min(n))
            .collect()
    }

    /// The value buffers of one chunk.
    fn chunk_buffers(&self, r: std::ops::Range<usize>) -> Vec<Vec<u8>> {
        match self {
            Repr::Fixed {
                bytes,
                width,
                packed,
            } => {
                let raw = &bytes[r.start * width..r.end * width];
                if !packed {
                    return vec![raw.to_vec()];
                }
                let mut out = Vec::with_capacity(raw.len() + 8);
                match width {
                    1 => encode_inline::<u8>(raw, &mut out),
                    2 => encode_inline::<u16>(&to_words(raw), &mut out),
                    4 => encode_inline::<u32>(&to_words(raw), &mut out),
                    _ => encode_inline::<u64>(&to_words(raw), &mut out),
                }
                vec![out]
            }
            Repr::Bool(bits) => vec![bits.slice(r.start, r.len()).sliced().as_slice().to_vec()],
            Repr::Variable {
                offsets,
                data,
                large,
            } => {
                let n = r.len();
                let w = if *large { 8 } else { 4 };
                let base = offsets[r.start];
                let header = (w * (n + 1)) as u64;
                let body = &data[base as usize..offsets[r.end] as usize];
                let mut out = Vec::with_capacity(header as usize + body.len() + 8);
                for &o in &offsets[r.start..=r.end] {
                    let v = o - base + header;
                    if *large {
                        out.extend_from_slice(&v.to_le_bytes());
                    } else {
                        out.extend_from_slice(&(v as u32).to_le_bytes());
                    }
                }
                out.extend_from_slice(body);
                while out.len() % w != 0 {
                    out.push(0);
                }
                vec![out]
            }
            Repr::FixedSizeList {
                dim,
                item_width,
                bytes,
                validity,
            } => {
                let row = dim * item_width;
                let mut bufs = Vec::with_capacity(2);
                if let Some(v) = validity {
                    bufs.push(
                        v.slice(r.start * dim, r.len() * dim)
                            .sliced()
                            .as_slice()
                            .to_vec(),
                    );
                }
                bufs.push(bytes[r.start * row..r.end * row].to_vec());
                bufs
            }
        }
    }
}

/// View little-endian bytes as words (borrowed when aligned, as page buffers are).
fn to_words<T: arrow_buffer::ArrowNativeType>(raw: &[u8]) -> std::borrow::Cow<'_, [T]> {
    crate::encoding::bytes::words::<T>(raw)
}

/// Whether bit packing the fixed-width values shrinks them.
fn packing_pays(bytes: &[u8], width: usize) -> bool {
    fn packed_size<T: arrow_buffer::ArrowNativeType + Into<u64>>(v: &[T]) -> usize {
        v.chunks(1024).map(inline_size).sum()
    }
    let packed = match width {
        1 => packed_size::<u8>(bytes),
        2 => packed_size::<u16>(&to_words(bytes)),
        4 => packed_size::<u32>(&to_words(bytes)),
        8 => packed_size::<u64>(&to_words(bytes)),
        _ => return false,
    };
    packed < bytes.len()
}

/// A page-wide dictionary: the indices of the values, and the distinct values (with
/// offsets when variable-width, `offsets` empty and `width` set when fixed-width).
struct Dictionary {
    indices: Vec<u32>,
    offsets: Vec<u64>,
    data: Vec<u8>,
    width: usize,
}

impl Dictionary {
    fn len(&self) -> usize {
        self.data
            .len()
            .checked_div(self.width)
            .unwrap_or(self.offsets.len() - 1)
    }
}

/// The dictionary of an Arrow dictionary array: its keys and its values as they are.
fn from_dictionary_array(array: &arrow_array::ArrayRef) -> Result<(Dictionary, bool)> {
    use arrow_array::cast::AsArray;
    use arrow_array::Array;
    let dict = array.as_any_dictionary();
    let keys = arrow_cast::cast(dict.keys(), &arrow_schema::DataType::UInt32)?;
    let keys = keys.as_primitive::<arrow_array::types::UInt32Type>();
    let indices = (0..keys.len())
        .map(|i| if keys.is_null(i) { 0 } else { keys.value(i) })
        .collect();
    let values = dict.values().clone();
    match Values::of(&values)? {
        Values::Variable {
            offsets,
            data,
            large,
        } => {
            let base = offsets[0];
            let data = data[base as usize..offsets[offsets.len() - 1] as usize].to_vec();
            let mut offsets: Vec<u64> = offsets.iter().map(|o| o - base).collect();
            if offsets.len() == 1 {
                offsets.push(0);
            }
            Ok((
                Dictionary {
                    indices,
                    offsets,
                    data,
                    width: 0,
                },
                large,
            ))
        }
        Values::Fixed { bytes, width, .. } => Ok((
            Dictionary {
                indices,
                offsets: vec![],
                data: bytes.to_vec(),
                width,
            },
            false,
        )),
        _ => Err(crate::error::unsupported(format!(
            "writing dictionaries of {}",
            values.data_type()
        ))),
    }
}

/// A dictionary for variable-width values, when it pays: at most half as many distinct
/// values as values, and a dictionary plus indices of at most 80% of the raw size. The
/// distinct values are estimated first, so unique values cost one hashing pass.
fn try_dictionary(values: &Values, nulls: Option<&arrow_buffer::NullBuffer>) -> Option<Dictionary> {
    let Values::Variable { offsets, data, .. } = values else {
        return None;
    };
    let n = offsets.len() - 1;
    if n < 100 {
        return None;
    }
    let raw = data.len().max(1) + 4 * n;
    let budget = n / 2;
    let value = |i: usize| &data[offsets[i] as usize..offsets[i + 1] as usize];
    let valid = |i: &usize| nulls.is_none_or(|m| m.is_valid(*i));
    let estimate = super::distinct::estimate((0..n).filter(valid).map(value));
    let avg = (offsets[n] - offsets[0]) as f64 / n as f64;
    // A 5% margin over the sketch's error: values near the limits get the exact check.
    if estimate > 1.05 * budget as f64 || estimate * avg * 10.0 > 1.05 * (raw * 8) as f64 {
        return None;
    }
    let mut ids: HashMap<&[u8], u32, _> =
        HashMap::with_capacity_and_hasher(estimate as usize + 16, super::distinct::hasher());
    let mut dict = Dictionary {
        indices: Vec::with_capacity(n),
        offsets: vec![0],
        data: Vec::new(),
        width: 0,
    };
    for i in 0..n {
        if !valid(&i) {
            dict.indices.push(0);
            continue;
        }
        let v = value(i);
        let next = ids.len() as u32;
        let id = *ids.entry(v).or_insert_with(|| {
            dict.data.extend_from_slice(v);
            dict.offsets.push(dict.data.len() as u64);
            next
        });
        if ids.len() > budget || dict.data.len() * 10 > raw * 8 {
            return None;
        }
        dict.indices.push(id);
    }
    if dict.offsets.len() == 1 {
        dict.offsets.push(0); // every value null: one empty entry for the placeholders
    }
    let bits = 32 - (dict.offsets.len() as u32 - 1).leading_zeros() as usize;
    let estimate = dict.data.len() + 4 * dict.offsets.len() + n * bits.max(1) / 8;
    (estimate * 10 < raw * 8).then_some(dict)
}

/// The dictionary as a block: for fixed-width values the values; otherwise the offset
/// width, where the bytes start, the offsets, the bytes.
fn dictionary_block(d: &Dictionary, large: bool) -> Vec<u8> {
    if d.width > 0 {
        return d.data.clone();
    }
    let n = d.offsets.len() - 1;
    let mut out = Vec::with_capacity(16 + 8 * (n + 1) + d.data.len());
    if large {
        out.extend_from_slice(&64u64.to_le_bytes());
        out.extend_from_slice(&(16 + 8 * (n as u64 + 1)).to_le_bytes());
        for o in &d.offsets {
            out.extend_from_slice(&o.to_le_bytes());
        }
    } else {
        out.extend_from_slice(&32u32.to_le_bytes());
        out.extend_from_slice(&(8 + 4 * (n as u32 + 1)).to_le_bytes());
        for o in &d.offsets {
            out.extend_from_slice(&(*o as u32).to_le_bytes());
        }
    }
    out.extend_from_slice(&d.data);
    out
}

/// FSST-compress variable-width values when the page is big enough for it to pay.
fn try_fsst(offsets: &[u64], data: &[u8]) -> Option<(Vec<u8>, Vec<u64>, Vec<u8>)> {
    let total = (offsets[offsets.len() - 1] - offsets[0]) as usize;
    if total < 32 * 1024 {
        return None;
    }
    let n = offsets.len() - 1;
    let value = |i: usize| &data[offsets[i] as usize..offsets[i + 1] as usize];
    // Train on a sample of about 64 KiB spread over the page.
    let stride = (total / (64 * 1024)).max(1);
    let sample: Vec<&[u8]> = (0..n).step_by(stride).map(value).collect();
    let compressor = fsst::Compressor::train(&sample);
    let (out, out_offsets) = super::fsst::compress(&compressor, data, offsets);
    if out.len() * 10 > total * 9 {
        return None;
    }
    // Lance's symbol table: header (magic, "encoded" switch, count), symbols, lengths.
    let symbols = compressor.symbol_table();
    let lengths = compressor.symbol_lengths();
    let k = symbols.len() as u64;
    let mut table = ((0x4653_5354u64 << 32) | (1 << 24) | k)
        .to_le_bytes()
        .to_vec();
    for s in symbols {
        table.extend_from_slice(&s.to_u64().to_le_bytes());
    }
    table.extend_from_slice(lengths);
    table.resize(8 + 256 * 8 + 256, 0);
    Some((table, out_offsets, out))
}

/// Encode a page of `levels` as mini-block chunks.
pub fn encode(levels: &LeafLevels, opts: &PageOptions) -> Result<EncodedPage> {
    let values = Values::of(&levels.values)?;
    let nulls = levels.values.nulls();
    let mut dictionary = None;
    let mut fsst_table = None;
    let dictionary_input = matches!(
        levels.values.data_type(),
        arrow_schema::DataType::Dictionary(..)
    );
    let repr = match values {
        _ if dictionary_input => {
            // The indices are stored at the key type's width, as readers expect.
            let (d, large) = from_dictionary_array(&levels.values)?;
            let width = match levels.values.data_type() {
                arrow_schema::DataType::Dictionary(k, _) => k.primitive_width().unwrap_or(4),
                _ => 4,
            };
            let bytes: Vec<u8> = d
                .indices
                .iter()
                .flat_map(|i| (*i as u64).to_le_bytes().into_iter().take(width))
                .collect();
            let packed = packing_pays(&bytes, width);
            dictionary = Some((d, large));
            Repr::Fixed {
                bytes: Buffer::from_vec(bytes),
                width,
                packed,
            }
        }
        Values::Variable { large, .. }
            if opts.allow_dictionary && {
                dictionary = try_dictionary(&values, nulls).map(|d| (d, large));
                dictionary.is_some()
            } =>
        {
            let d = &dictionary.as_ref().unwrap().0;
            let bytes: Vec<u8> = d.indices.iter().flat_map(|i| i.to_le_bytes()).collect();
            let packed = packing_pays(&bytes, 4);
            Repr::Fixed {
                bytes: Buffer::from_vec(bytes),
                width: 4,
                packed,
            }
        }
        Values::Variable {
            offsets,
            data,
            large,
        } => match try_fsst(&offsets, &data).filter(|_| opts.allow_fsst) {
            Some((table, offsets, data)) => {
                fsst_table = Some(table);
                Repr::Variable {
                    offsets,
                    data: Buffer::from_vec(data),
                    large,
                }
            }
            None => {
                let base = offsets[0];
                let data = data
                    .slice_with_length(base as usize, (offsets[offsets.len() - 1] - base) as usize);
                Repr::Variable {
                    offsets: offsets.iter().map(|o| o - base).collect(),
                    data,
                    large,
                }
            }
        },
        Values::Fixed { bytes, width, .. } => {
            let packed = opts.compression.is_none()
                && matches!(width, 1 | 2 | 4 | 8)
                && packing_pays(&bytes, width);
            Repr::Fixed {
                bytes,
                width,
                packed,
            }
        }
        Values::Bool { bits } => Repr::Bool(bits),
        Values::FixedSizeList {
            dim,
            item_width,
            bytes,
            item_validity,
            ..
        } => Repr::FixedSizeList {
            dim,
            item_width,
            bytes,
            validity: item_validity,
        },
    };

    let chunks = repr.chunks();
    let num_values = repr.len();
    // Levels: drop definition levels that are all 0; find where each chunk's levels end.
    let def = levels.def.as_ref().filter(|d| d.iter().any(|&x| x > 0));
    let rep = levels.rep.as_ref();
    let num_levels = rep.map_or(num_values, |r| r.len());
    let level_ends: Vec<usize> = match rep {
        None => chunks.iter().map(|c| c.end).collect(),
        Some(_) => {
            let max_visible: u16 = levels
                .layers
                .iter()
                .take_while(|l| !l.is_list())
                .map(|l| l.def_levels())
                .sum();
            let visible: Vec<usize> = (0..num_levels)
                .filter(|&i| def.is_none_or(|d| d[i] <= max_visible))
                .collect();
            if visible.len() != num_values {
                return Err(corrupt(format!(
                    "{} visible levels for {num_values} values",
                    visible.len()
                )));
            }
            let mut ends: Vec<usize> = chunks.iter().map(|c| visible[c.end - 1] + 1).collect();
            if let Some(last) = ends.last_mut() {
                *last = num_levels;
            }
            ends
        }
    };
    let width16 = |l: Option<&Vec<u16>>| l.map(|l| width_of(l).max(1) as u64);
    let (rep_bits, def_bits) = (width16(rep), width16(def));

    let general = opts
        .compression
        .filter(|_| matches!(repr, Repr::Fixed { .. } | Repr::Variable { .. }));
    let mut chunk_bytes = Vec::new();
    let mut words = Vec::with_capacity(chunks.len() * 4);
    let mut rep_index: Vec<(u64, u64)> = Vec::new();
    let mut level_start = 0usize;
    let mut raw_total = 0usize;
    let mut compressed_total = 0usize;
    let mut chunk_parts = Vec::with_capacity(chunks.len());
    for (c, r) in chunks.iter().enumerate() {
        let levels_range = level_start..level_ends[c];
        level_start = level_ends[c];
        let mut bufs = repr.chunk_buffers(r.clone());
        if let Some((scheme, level)) = general {
            raw_total += bufs[0].len();
            bufs[0] = scheme.compress(&bufs[0], level);
            compressed_total += bufs[0].len();
        }
        chunk_parts.push((levels_range, bufs, r.len()));
    }
    // General compression is only kept when it saved space overall.
    let general = match general {
        Some(g) if compressed_total < raw_total => Some(g),
        Some(_) => {
            for (c, r) in chunks.iter().enumerate() {
                chunk_parts[c].1 = repr.chunk_buffers(r.clone());
            }
            None
        }
        None => None,
    };
    let last = chunk_parts.len().saturating_sub(1);
    // Chunks are written straight into the page buffer; each is a multiple of 8 bytes, so
    // padding to 8 within the buffer is padding within the chunk.
    let payload: usize = chunk_parts
        .iter()
        .map(|(_, bufs, _)| bufs.iter().map(|b| b.len() + 8).sum::<usize>() + 16)
        .sum();
    chunk_bytes.reserve(payload + rep.map_or(0, |r| r.len()) + def.map_or(0, |d| d.len()));
    for (c, (lr, bufs, count)) in chunk_parts.into_iter().enumerate() {
        let n_levels = lr.len();
        let rep_bytes = rep.map(|l| pack_levels(&l[lr.clone()], rep_bits.unwrap()));
        let def_bytes = def.map(|l| pack_levels(&l[lr.clone()], def_bits.unwrap()));
        if n_levels > u16::MAX as usize {
            return Err(corrupt("too many levels in one chunk"));
        }
        let chunk_start = chunk_bytes.len();
        let chunk = &mut chunk_bytes;
        chunk.extend_from_slice(&(n_levels as u16).to_le_bytes());
        for b in [&rep_bytes, &def_bytes].into_iter().flatten() {
            let len =
                u16::try_from(b.len()).map_err(|_| corrupt("levels of one chunk exceed 64 KiB"))?;
            chunk.extend_from_slice(&len.to_le_bytes());
        }
        for b in &bufs {
            if opts.large_chunks {
                chunk.extend_from_slice(&(b.len() as u32).to_le_bytes());
            } else {
                let len =
                    u16::try_from(b.len()).map_err(|_| corrupt("a chunk buffer exceeds 64 KiB"))?;
                chunk.extend_from_slice(&len.to_le_bytes());
            }
        }
        pad8(chunk);
        for b in [rep_bytes, def_bytes].into_iter().flatten() {
            chunk.extend_from_slice(&b);
            pad8(chunk);
        }
        for b in &bufs {
            chunk.extend_from_slice(b);
            pad8(chunk);
        }
        let chunk_len = chunk.len() - chunk_start;
        let log2 = if c == last { 0 } else { count.trailing_zeros() };
        let word = (((chunk_len / 8 - 1) as u64) << 4) | log2 as u64;
        if opts.large_chunks {
            words.extend_from_slice(&(word as u32).to_le_bytes());
        } else {
            // Format 2.1 sizes chunks in 16 bits; pylance refuses such values there too.
            let w = u16::try_from(word).map_err(|_| {
                crate::error::Error::invalid(
                    "values too large for a mini-block page of format 2.1 (a chunk over 32 KiB): \
                     drop lance-encoding:structural-encoding=miniblock, or write format 2.2",
                )
            })?;
            words.extend_from_slice(&w.to_le_bytes());
        }
        if let Some(rep) = rep {
            push_rep_index(&mut rep_index, &rep[lr], c == last, levels.max_rep());
        }
    }

    let mut value_encoding = repr.encoding();
    if let Some((scheme, level)) = general {
        value_encoding = proto::general(scheme, level, value_encoding);
    }
    if let Some(table) = fsst_table {
        value_encoding = proto::fsst(table, value_encoding);
    }
    let mut buffers = vec![words, chunk_bytes];
    let mut dictionary_encoding = None;
    let mut num_dictionary_items = 0;
    if let Some((d, large)) = &dictionary {
        let block = dictionary_block(d, *large);
        let inner = if d.width > 0 {
            proto::flat(d.width as u64 * 8)
        } else {
            proto::variable(if *large { 64 } else { 32 })
        };
        num_dictionary_items = d.len() as u64;
        if opts.large_chunks {
            buffers.push(Scheme::Lz4.compress(&block, None));
            dictionary_encoding = Some(proto::general(Scheme::Lz4, None, inner));
        } else {
            buffers.push(block);
            dictionary_encoding = Some(inner);
        }
    }
    if rep.is_some() {
        buffers.push(
            rep_index
                .iter()
                .flat_map(|(a, b)| a.to_le_bytes().into_iter().chain(b.to_le_bytes()))
                .collect(),
        );
    }
    let layout = pb::MiniBlockLayout {
        rep_compression: rep_bits.map(|w| proto::out_of_line_bitpacking(16, w)),
        def_compression: def_bits.map(|w| proto::out_of_line_bitpacking(16, w)),
        value_compression: Some(value_encoding),
        dictionary: dictionary_encoding,
        num_dictionary_items,
        layers: levels.layers.iter().map(|l| l.to_proto()).collect(),
        num_buffers: repr.num_buffers() as u64,
        repetition_index_depth: rep.is_some() as u32,
        num_items: num_values as u64,
        has_large_chunk: opts.large_chunks,
    };
    Ok(EncodedPage {
        buffers,
        layout: pb::PageLayout {
            layout: Some(pb::page_layout::Layout::MiniBlockLayout(layout)),
        },
        num_rows: levels.num_rows as u64,
    })
}

/// Levels of one chunk, bit-packed at the page's width.
fn pack_levels(levels: &[u16], bits: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(levels.len() * bits as usize / 8 + 16);
    encode_out_of_line(levels, bits as usize, &mut out);
    out
}

/// The repetition index entry of a chunk: rows that end in it, and the levels of a row
/// that continues into the next chunk (0 when the next chunk starts a new row).
fn push_rep_index(index: &mut Vec<(u64, u64)>, rep: &[u16], last: bool, max_rep: u16) {
    let starts: Vec<usize> = (0..rep.len()).filter(|&i| rep[i] == max_rep).collect();
    let ends_here = starts.iter().filter(|&&i| i >= 1).count() as u64;
    if rep.first() == Some(&max_rep) {
        if let Some(prev) = index.last_mut() {
            if prev.1 != 0 {
                prev.0 += 1;
                prev.1 = 0;
            }
        }
    }
    if last {
        index.push((ends_here + 1, 0));
    } else {
        let partial = match starts.last() {
            Some(&s) => rep.len() - s,
            None => rep.len(),
        } as u64;
        index.push((ends_here, partial));
    }
}
