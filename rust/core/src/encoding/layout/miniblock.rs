//! Mini-block pages: values cut into small chunks (a few KiB), each holding its own slice
//! of repetition and definition levels.
//!
//! Buffers: 0 = one metadata word per chunk, 1 = the chunks, then the dictionary (when
//! dictionary-encoded) and the repetition index (when there are lists).
//! Metadata word: `(chunk_bytes / 8 - 1) << 4 | log2(values)`, u16, or u32 when the page
//! has large chunks; the last chunk's log2 is 0 and its count is what remains.
//! A chunk: u16 level count, u16 rep size (if rep), u16 def size (if def), one size per
//! value buffer (u16, or u32 with large chunks), padding to 8; then rep, def and value
//! buffers, each padded to 8.
//! Repetition index: per chunk, u64 rows ending in it and u64 levels of a row that
//! continues into the next chunk (0 when the next chunk starts a new row). Units are cut
//! only between chunks where no row continues.
use std::ops::Range;

use arrow_array::ArrayRef;
use arrow_schema::DataType;
use bytes::Bytes;

use super::{
    codec_value_bits, finish_levels, layers_from_proto, level_builder, DecodedPage, Layer,
    PageValues, UnitSizing,
};
use crate::encoding::bytes::{slice, u16_at, u32_at, u64_at};
use crate::encoding::compression::Codec;
use crate::encoding::values::{FixedBuilder, ValuesBuilder};
use crate::error::{corrupt, Result};
use crate::proto::encodings21::MiniBlockLayout;

const MAX_VALUE_BUFFERS: usize = 8;
/// A chunk's value count is a power of two of at most 15 bits; the last chunk holds what
/// remains, no more.
const MAX_CHUNK_VALUES: usize = 1 << 15;

fn pad8(n: usize) -> usize {
    n.div_ceil(8) * 8
}

fn codec(e: &Option<crate::proto::encodings21::CompressiveEncoding>) -> Result<Option<Codec>> {
    e.as_ref().map(Codec::from_proto).transpose()
}

/// Bytes of a plain fixed-width value under `codec` (flat values, or fixed-size lists of
/// them without item validity).
pub fn plain_width(codec: &Codec) -> Option<usize> {
    match codec {
        Codec::Flat { bits } if *bits > 0 && bits % 8 == 0 => Some(*bits as usize / 8),
        Codec::FixedSizeList {
            dim,
            has_validity: false,
            inner,
        } => match inner.as_ref() {
            Codec::Flat { bits } if *bits > 0 && bits % 8 == 0 => {
                Some(*dim as usize * *bits as usize / 8)
            }
            _ => None,
        },
        _ => None,
    }
}

struct Chunk {
    offset: usize,
    size: usize,
    values: usize,
}

pub struct Plan {
    layers: Vec<Layer>,
    values_codec: Codec,
    rep_codec: Option<Codec>,
    def_codec: Option<Codec>,
    /// Bit width of the dictionary indices and the page's dictionary.
    dictionary: Option<(u32, ArrayRef)>,
    has_large_chunk: bool,
    num_buffers: usize,
    chunks: Vec<Chunk>,
    /// The chunks of each unit.
    units: Vec<Range<usize>>,
    /// Per unit, what of its chunks' levels belongs to rows of other units.
    trims: Vec<Trim>,
}

/// Units that share chunks with their neighbours (`UnitSizing::rows_share_chunks`) hold
/// only some of their chunks' levels.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Trim {
    /// Chunks read before the first one a row of the unit ends in: the unit's first row
    /// starts at the last row start in them.
    lead_chunks: usize,
    /// The last chunk ends with the start of a row that ends in a later unit.
    drop_tail: bool,
}

/// Plan a page from its buffers; buffer 1 (the chunks) need not be there, only its
/// length `chunks_len` is used (a take reads just the chunks it needs later).
pub fn plan(
    m: &MiniBlockLayout,
    buffers: &[Bytes],
    chunks_len: usize,
    num_rows: u64,
    leaf_type: &DataType,
    sizing: &UnitSizing,
) -> Result<(Plan, Vec<u64>)> {
    let layers = layers_from_proto(&m.layers)?;
    let values_codec = codec(&m.value_compression)?
        .ok_or_else(|| corrupt("mini-block page without a value encoding"))?;
    let rep_codec = codec(&m.rep_compression)?;
    let def_codec = codec(&m.def_compression)?;
    let dict_codec = codec(&m.dictionary)?;
    let num_items = m.num_items as usize;
    // Without repetition every row is one item (a value slot, null or not).
    if rep_codec.is_none() && m.num_items != num_rows {
        return Err(corrupt(format!(
            "mini-block page of {num_rows} rows without lists holds {} values",
            m.num_items
        )));
    }
    let has_rep_index = m.repetition_index_depth > 0;
    let need = 2 + dict_codec.is_some() as usize + has_rep_index as usize;
    if buffers.len() < need {
        return Err(corrupt(format!(
            "mini-block page has {} buffers, needs {need}",
            buffers.len()
        )));
    }
    let meta = &buffers[0];
    // Value buffers per chunk: their sizes sit in a fixed header array.
    if m.num_buffers > MAX_VALUE_BUFFERS as u64 {
        return Err(corrupt(format!(
            "mini-block chunks with {} value buffers",
            m.num_buffers
        )));
    }

    // Chunk sizes and value counts from the metadata words.
    let word_size = if m.has_large_chunk { 4 } else { 2 };
    let num_chunks = meta.len() / word_size;
    let mut chunks = Vec::with_capacity(num_chunks);
    let (mut assigned, mut offset) = (0usize, 0usize);
    for i in 0..num_chunks {
        let w = if m.has_large_chunk {
            u32_at(meta, 4 * i, "chunk metadata")?
        } else {
            u16_at(meta, 2 * i, "chunk metadata")? as u32
        };
        let size = ((w >> 4) as usize + 1) * 8;
        let values = if i + 1 == num_chunks {
            num_items
                .checked_sub(assigned)
                .filter(|&v| v <= MAX_CHUNK_VALUES)
                .ok_or_else(|| {
                    corrupt(format!(
                        "{num_items} values do not fit {num_chunks} chunks of at most {MAX_CHUNK_VALUES}"
                    ))
                })?
        } else {
            1usize << (w & 0xF)
        };
        assigned += values;
        chunks.push(Chunk {
            offset,
            size,
            values,
        });
        offset += size;
    }
    if offset > chunks_len {
        return Err(corrupt(format!(
            "chunks need {offset} bytes, the page has {chunks_len}"
        )));
    }
    if num_chunks == 0 && num_items > 0 {
        return Err(corrupt(format!(
            "mini-block page of {num_items} values has no chunks"
        )));
    }

    // Rows per chunk, and where units may be cut.
    let mut rows: Vec<u64> = Vec::with_capacity(num_chunks);
    let mut cut_ok: Vec<bool> = Vec::with_capacity(num_chunks);
    if rep_codec.is_none() {
        rows.extend(chunks.iter().map(|c| c.values as u64));
        cut_ok.resize(num_chunks, true);
    } else if has_rep_index {
        let index = &buffers[buffers.len() - 1];
        let stride = (m.repetition_index_depth as usize + 1) * 8;
        for i in 0..num_chunks {
            rows.push(u64_at(index, i * stride, "repetition index")?);
            cut_ok.push(u64_at(index, i * stride + 8, "repetition index")? == 0);
        }
    }
    let total = rows.iter().try_fold(0u64, |a, &r| a.checked_add(r));
    let mut trims = Vec::new();
    let units = if rows.len() == num_chunks
        && total == Some(num_rows)
        && sizing.rows_share_chunks
        && rep_codec.is_some()
    {
        shared_units(&rows, &cut_ok, sizing, &mut trims)
    } else if rows.len() == num_chunks && total == Some(num_rows) {
        let mut units = Vec::new();
        let (mut first, mut acc, mut done) = (0usize, 0u64, 0u64);
        for i in 0..num_chunks {
            acc += rows[i];
            if i + 1 == num_chunks || (cut_ok[i] && sizing.should_cut(acc, done + acc)) {
                units.push((first..i + 1, acc));
                done += acc;
                first = i + 1;
                acc = 0;
            }
        }
        units
    } else {
        // No way to tell rows apart without decoding: one unit.
        vec![(0..num_chunks, num_rows)]
    };

    let dictionary = match dict_codec {
        Some(dc) => {
            let bits = codec_value_bits(&values_codec)
                .ok_or_else(|| corrupt("dictionary indices of a non-integer encoding"))?;
            let dict_type = match leaf_type {
                DataType::Dictionary(_, v) => v.as_ref().clone(),
                other => other.clone(),
            };
            // A page's dictionary holds the distinct values of its items, or, written from
            // an Arrow dictionary column, that column's whole dictionary (pylance writes it
            // whole). Either way each item takes at least a bit of the buffer read.
            let limit = num_items
                .saturating_add(1)
                .max(buffers[2].len().saturating_mul(8));
            let n = usize::try_from(m.num_dictionary_items)
                .ok()
                .filter(|&n| n <= limit)
                .ok_or_else(|| {
                    corrupt(format!(
                        "dictionary of {} items for {num_items} values",
                        m.num_dictionary_items
                    ))
                })?;
            let mut d = ValuesBuilder::for_type(&dict_type, n)?;
            dc.decode_block(&buffers[2], n, &mut d)
                .map_err(|e| e.context("dictionary"))?;
            Some((bits as u32, d.finish(&dict_type, None)?))
        }
        None => None,
    };
    trims.resize(units.len(), Trim::default());
    let unit_rows = units.iter().map(|u| u.1).collect();
    let plan = Plan {
        layers,
        values_codec,
        rep_codec,
        def_codec,
        dictionary,
        has_large_chunk: m.has_large_chunk,
        num_buffers: m.num_buffers as usize,
        chunks,
        units: units.into_iter().map(|u| u.0).collect(),
        trims,
    };
    Ok((plan, unit_rows))
}

/// Units of the rows that end in one or more consecutive chunks (chunk `i` ends `rows[i]`
/// rows; `cut_ok[i]`: no row continues past it), each reading back to the chunk where its
/// first row starts. A row spanning many chunks is read with exactly those chunks.
fn shared_units(
    rows: &[u64],
    cut_ok: &[bool],
    sizing: &UnitSizing,
    trims: &mut Vec<Trim>,
) -> Vec<(Range<usize>, u64)> {
    let mut units = Vec::new();
    let (mut first, mut acc, mut done) = (None::<usize>, 0u64, 0u64);
    for i in 0..rows.len() {
        if rows[i] == 0 {
            continue; // all of it belongs to a row that ends later
        }
        first.get_or_insert(i);
        acc += rows[i];
        if i + 1 == rows.len() || sizing.should_cut(acc, done + acc) {
            let f = first.take().unwrap_or(i);
            // Back from the first chunk to the one where its first row starts.
            let mut start = f;
            while start > 0 && !cut_ok[start - 1] {
                start -= 1;
                if rows[start] > 0 {
                    break;
                }
            }
            units.push((start..i + 1, acc));
            trims.push(Trim {
                lead_chunks: f - start,
                drop_tail: !cut_ok[i],
            });
            done += acc;
            acc = 0;
        }
    }
    units
}

impl Plan {
    /// Bytes of buffer 1 that unit `unit` decodes.
    pub fn unit_bytes(&self, unit: usize) -> Range<usize> {
        let r = &self.units[unit];
        if r.is_empty() {
            return 0..0;
        }
        let (first, last) = (&self.chunks[r.start], &self.chunks[r.end - 1]);
        first.offset..last.offset + last.size
    }

    /// For pages of plain fixed-width values (no levels, no dictionary, no compression,
    /// one chunk per unit): the width of a value and where unit `unit`'s values start in
    /// buffer 1, so that single values can be read on their own.
    pub fn plain_values(&self, unit: usize) -> Option<(usize, usize)> {
        if self.rep_codec.is_some() || self.def_codec.is_some() || self.dictionary.is_some() {
            return None;
        }
        let width = plain_width(&self.values_codec)?;
        let r = self.units.get(unit)?;
        if r.len() != 1 || self.num_buffers != 1 {
            return None;
        }
        let c = &self.chunks[r.start];
        // Header: level count (u16) and one buffer size (u16, or u32 in large chunks),
        // padded to 8; the values follow.
        let start = c.offset + 8;
        (c.size >= 8 + c.values * width).then_some((width, start))
    }

    /// A plan of units `units` only, each decoding from a buffer 1 that holds just its
    /// own bytes (its `unit_bytes`).
    pub fn select(&self, units: &[usize]) -> Plan {
        let mut chunks = Vec::new();
        let mut kept = Vec::with_capacity(units.len());
        for &u in units {
            let first = chunks.len();
            let mut at = 0usize;
            for c in &self.chunks[self.units[u].clone()] {
                chunks.push(Chunk {
                    offset: at,
                    size: c.size,
                    values: c.values,
                });
                at += c.size;
            }
            kept.push(first..chunks.len());
        }
        Plan {
            layers: self.layers.clone(),
            values_codec: self.values_codec.clone(),
            rep_codec: self.rep_codec.clone(),
            def_codec: self.def_codec.clone(),
            dictionary: self.dictionary.clone(),
            has_large_chunk: self.has_large_chunk,
            num_buffers: self.num_buffers,
            chunks,
            units: kept,
            trims: units.iter().map(|&u| self.trims[u]).collect(),
        }
    }

    pub fn decode(
        &self,
        buffers: &[Bytes],
        unit: usize,
        num_rows: u64,
        leaf_type: &DataType,
    ) -> Result<DecodedPage> {
        let range = self.units[unit].clone();
        let chunks = &self.chunks[range.clone()];
        let num_values: usize = chunks.iter().map(|c| c.values).sum();
        let mut values = match &self.dictionary {
            Some((bits, _)) => ValuesBuilder::Fixed(FixedBuilder::new(*bits, num_values)),
            None => ValuesBuilder::for_type(leaf_type, num_values)?,
        };
        // Strings: room for the unit's bytes at once (FSST values expand about threefold),
        // rather than growing (each regrowth copies, and faults in fresh memory).
        if let ValuesBuilder::Variable(v) = &mut values {
            let stored: usize = chunks.iter().map(|c| c.size).sum();
            let expand = if matches!(self.values_codec, Codec::Fsst { .. }) {
                3
            } else {
                1
            };
            v.data.reserve(stored.saturating_mul(expand).min(64 << 20));
        }
        let mut rep = self.rep_codec.as_ref().map(|_| level_builder(num_values));
        let mut def = self.def_codec.as_ref().map(|_| level_builder(num_values));
        let mut bufs: Vec<&[u8]> = Vec::with_capacity(self.num_buffers);
        let trim = self.trims.get(unit).copied().unwrap_or_default();
        let mut lead_levels = 0;
        for (k, (c, chunk)) in range.zip(chunks).enumerate() {
            if k == trim.lead_chunks {
                lead_levels = rep.as_ref().map_or(0, |r| r.len());
            }
            let chunk_bytes = slice(&buffers[1], chunk.offset, chunk.size, "mini-block chunk")?;
            self.decode_chunk(
                chunk_bytes,
                chunk.values,
                &mut rep,
                &mut def,
                &mut values,
                &mut bufs,
            )
            .map_err(|e| e.context(&format!("chunk {c}")))?;
        }
        let values = match &self.dictionary {
            Some((_, dictionary)) => {
                let ValuesBuilder::Fixed(indices) = values else {
                    unreachable!("dictionary indices are fixed-width")
                };
                PageValues::Dictionary {
                    indices,
                    dictionary: dictionary.clone(),
                }
            }
            None => PageValues::Built(values),
        };
        let page = DecodedPage {
            num_rows,
            layers: self.layers.clone(),
            rep: rep.map(finish_levels),
            def: def.map(finish_levels),
            values,
        };
        if trim == Trim::default() {
            return Ok(page);
        }
        // Only the levels of this unit's rows: from the last row start in the lead chunks
        // to the row start that opens the last chunk's unfinished row.
        let max_rep = self.layers.iter().filter(|l| l.is_list()).count() as u16;
        let Some(levels) = page.rep.as_ref() else {
            return Err(corrupt("internal: shared chunks in a page without lists"));
        };
        let last_start = |r: Range<usize>| {
            levels[r.clone()]
                .iter()
                .rposition(|&l| l == max_rep)
                .map(|p| r.start + p)
        };
        let start = match trim.lead_chunks {
            0 => 0,
            _ => last_start(0..lead_levels).ok_or_else(|| {
                corrupt(format!(
                    "unit {unit}: no row starts where the repetition index says one does"
                ))
            })?,
        };
        let end = match trim.drop_tail {
            false => levels.len(),
            true => last_start(lead_levels.max(start + 1).min(levels.len())..levels.len())
                .ok_or_else(|| {
                    corrupt(format!(
                        "unit {unit}: no row continues where the repetition index says one does"
                    ))
                })?,
        };
        page.keep_levels(start..end, num_rows, leaf_type)
    }

    /// Rows `rows` (increasing, relative to the unit) of unit `unit`, decoding only their
    /// values where the page allows it: no levels, and values the codec can
    /// pick out (strings). None when it cannot; then the whole unit is decoded.
    pub fn decode_selected(
        &self,
        buffers: &[Bytes],
        unit: usize,
        rows: &[usize],
        leaf_type: &DataType,
    ) -> Result<Option<DecodedPage>> {
        if self.rep_codec.is_some() || self.def_codec.is_some() {
            return Ok(None);
        }
        let range = self.units[unit].clone();
        // With a dictionary, the indices of the rows are decoded (and looked up later).
        let mut values = match &self.dictionary {
            Some((bits, _)) => ValuesBuilder::Fixed(FixedBuilder::new(*bits, rows.len())),
            None => ValuesBuilder::for_type(leaf_type, rows.len())?,
        };
        let mut bufs: Vec<&[u8]> = Vec::with_capacity(self.num_buffers);
        let (mut first, mut next) = (0usize, 0usize);
        for (c, chunk) in range.clone().zip(&self.chunks[range]) {
            let end = first + chunk.values;
            let take = rows[next..].partition_point(|&r| r < end);
            if take > 0 {
                let local: Vec<usize> = rows[next..next + take].iter().map(|r| r - first).collect();
                let bytes = slice(&buffers[1], chunk.offset, chunk.size, "mini-block chunk")?;
                self.chunk_values(bytes, &mut bufs)
                    .map_err(|e| e.context(&format!("chunk {c}")))?;
                let picked = self
                    .values_codec
                    .decode_miniblock_selected(&bufs, chunk.values, &local, &mut values)
                    .map_err(|e| e.context(&format!("chunk {c}")))?;
                if !picked {
                    // Byte-aligned fixed-width values (dictionary indices): the chunk's
                    // values decoded, those of the rows copied out.
                    let ValuesBuilder::Fixed(out) = &mut values else {
                        return Ok(None);
                    };
                    if out.bits % 8 != 0 {
                        return Ok(None);
                    }
                    let mut all = ValuesBuilder::Fixed(FixedBuilder::new(out.bits, chunk.values));
                    self.values_codec
                        .decode_miniblock(&bufs, chunk.values, &mut all)
                        .map_err(|e| e.context(&format!("chunk {c}")))?;
                    let ValuesBuilder::Fixed(all) = all else {
                        return Ok(None);
                    };
                    let w = out.byte_width();
                    for &i in &local {
                        let bytes = all.data.get(i * w..(i + 1) * w).ok_or_else(|| {
                            corrupt(format!("value {i} of a chunk of {}", chunk.values))
                        })?;
                        out.append_bytes(bytes, 1)?;
                    }
                }
                next += take;
            }
            first = end;
        }
        if next != rows.len() {
            return Err(corrupt(format!(
                "rows {:?} are not in unit {unit}",
                &rows[next..]
            )));
        }
        let values = match (&self.dictionary, values) {
            (Some((_, dictionary)), ValuesBuilder::Fixed(indices)) => PageValues::Dictionary {
                indices,
                dictionary: dictionary.clone(),
            },
            (None, values) => PageValues::Built(values),
            (Some(_), _) => return Ok(None),
        };
        Ok(Some(DecodedPage {
            num_rows: rows.len() as u64,
            layers: self.layers.clone(),
            rep: None,
            def: None,
            values,
        }))
    }

    /// The value buffers of a chunk without levels.
    fn chunk_values<'a>(&self, chunk: &'a [u8], bufs: &mut Vec<&'a [u8]>) -> Result<()> {
        let what = "mini-block chunk header";
        let mut h = 2;
        let mut sizes = [0usize; 8];
        if self.num_buffers > sizes.len() {
            return Err(corrupt(format!(
                "mini-block chunk with {} value buffers",
                self.num_buffers
            )));
        }
        for s in sizes.iter_mut().take(self.num_buffers) {
            if self.has_large_chunk {
                *s = u32_at(chunk, h, what)? as usize;
                h += 4;
            } else {
                *s = u16_at(chunk, h, what)? as usize;
                h += 2;
            }
        }
        let mut p = pad8(h);
        bufs.clear();
        for &s in &sizes[..self.num_buffers] {
            bufs.push(slice(chunk, p, s, "mini-block value buffer")?);
            p += pad8(s);
        }
        Ok(())
    }

    fn decode_chunk<'a>(
        &self,
        chunk: &'a [u8],
        count: usize,
        rep: &mut Option<ValuesBuilder>,
        def: &mut Option<ValuesBuilder>,
        values: &mut ValuesBuilder,
        bufs: &mut Vec<&'a [u8]>,
    ) -> Result<()> {
        let what = "mini-block chunk header";
        let num_levels = u16_at(chunk, 0, what)? as usize;
        let mut h = 2;
        let next_u16 = |h: &mut usize| -> Result<usize> {
            *h += 2;
            Ok(u16_at(chunk, *h - 2, what)? as usize)
        };
        let rep_size = if rep.is_some() { next_u16(&mut h)? } else { 0 };
        let def_size = if def.is_some() { next_u16(&mut h)? } else { 0 };
        let mut sizes = [0usize; MAX_VALUE_BUFFERS];
        for s in sizes.iter_mut().take(self.num_buffers) {
            if self.has_large_chunk {
                *s = u32_at(chunk, h, what)? as usize;
                h += 4;
            } else {
                *s = u16_at(chunk, h, what)? as usize;
                h += 2;
            }
        }
        let mut p = pad8(h);
        if let (Some(b), Some(codec)) = (rep.as_mut(), self.rep_codec.as_ref()) {
            codec.decode_block(
                slice(chunk, p, rep_size, "repetition levels")?,
                num_levels,
                b,
            )?;
            p += pad8(rep_size);
        }
        if let (Some(b), Some(codec)) = (def.as_mut(), self.def_codec.as_ref()) {
            codec.decode_block(
                slice(chunk, p, def_size, "definition levels")?,
                num_levels,
                b,
            )?;
            p += pad8(def_size);
        }
        bufs.clear();
        for &s in &sizes[..self.num_buffers] {
            bufs.push(slice(chunk, p, s, "mini-block value buffer")?);
            p += pad8(s);
        }
        self.values_codec.decode_miniblock(bufs, count, values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::encode::proto;
    use crate::proto::encodings21::{page_layout::Layout, PageLayout};

    fn page(m: MiniBlockLayout) -> PageLayout {
        PageLayout {
            layout: Some(Layout::MiniBlockLayout(m)),
        }
    }

    #[test]
    fn value_buffer_count_is_checked_before_use() {
        // Found by fuzzing: a stated count of 2^60 value buffers sized an allocation.
        let m = MiniBlockLayout {
            value_compression: Some(proto::flat(32)),
            layers: vec![Layer::AllValidItem.to_proto()],
            num_buffers: 1 << 60,
            num_items: 1,
            ..Default::default()
        };
        let buffers = vec![Bytes::from_static(&[0, 0]), Bytes::from(vec![0u8; 8])];
        let err = crate::encoding::layout::plan_page(
            &page(m),
            buffers,
            1,
            &DataType::Int32,
            &UnitSizing::whole(),
        )
        .map(|_| ())
        .unwrap_err();
        assert!(err.to_string().contains("value buffers"), "{err}");
    }

    #[test]
    fn stated_value_and_dictionary_counts_must_fit_the_chunks() {
        // The last chunk holds what remains of `num_items`: a corrupt 2^40 made a constant
        // chunk expand to 2^40 values; a dictionary of 2^40 items was decoded likewise.
        let constant = crate::proto::encodings21::CompressiveEncoding {
            compression: Some(
                crate::proto::encodings21::compressive_encoding::Compression::Constant(
                    crate::proto::encodings21::Constant {
                        value: Some(vec![1, 0, 0, 0]),
                    },
                ),
            ),
        };
        let m = MiniBlockLayout {
            value_compression: Some(constant.clone()),
            layers: vec![Layer::AllValidItem.to_proto()],
            num_items: 1 << 40,
            ..Default::default()
        };
        let buffers = vec![Bytes::from_static(&[0, 0]), Bytes::from(vec![0u8; 8])];
        let plan = |m: MiniBlockLayout, b: Vec<Bytes>| {
            let rows = m.num_items;
            crate::encoding::layout::plan_page(
                &page(m),
                b,
                rows,
                &DataType::Int32,
                &UnitSizing::whole(),
            )
            .map(|_| ())
            .unwrap_err()
            .to_string()
        };
        assert!(plan(m.clone(), buffers.clone()).contains("do not fit"));
        let m = MiniBlockLayout {
            value_compression: Some(proto::flat(32)),
            dictionary: Some(constant),
            num_dictionary_items: 1 << 40,
            num_items: 1,
            ..m
        };
        let mut with_dict = buffers;
        with_dict.push(Bytes::new());
        assert!(plan(m, with_dict).contains("dictionary of 1099511627776 items"));
    }

    #[test]
    fn values_must_match_rows_without_lists() {
        // pylance rejects a page whose item count disagrees with its rows; we returned data.
        let m = MiniBlockLayout {
            value_compression: Some(proto::flat(32)),
            layers: vec![Layer::AllValidItem.to_proto()],
            num_buffers: 1,
            num_items: 3,
            ..Default::default()
        };
        let buffers = vec![Bytes::from_static(&[0, 0]), Bytes::from(vec![0u8; 24])];
        let err = crate::encoding::layout::plan_page(
            &page(m),
            buffers,
            5,
            &DataType::Int32,
            &UnitSizing::whole(),
        )
        .map(|_| ())
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("5 rows without lists holds 3 values"),
            "{err}"
        );
    }
}
