//! Mini-block pages: values cut into small chunks (a few KiB), each holding its own slice
//! of repetition and definition levels.
//!
//! Buffers: 0 = one metadata word per chunk, 1 = the chunks, then the dictionary (when
//! dictionary-encoded) and the repetition index (only used for random access).
//! Metadata word: `(chunk_bytes / 8 - 1) << 4 | log2(values)`, u16, or u32 when the page
//! has large chunks; the last chunk's log2 is 0 and its count is what remains.
//! A chunk: u16 level count, u16 rep size (if rep), u16 def size (if def), one size per
//! value buffer (u16, or u32 with large chunks), padding to 8; then rep, def and value
//! buffers, each padded to 8.
use arrow_schema::DataType;
use bytes::Bytes;

use super::{codec_value_bits, finish_levels, layers_from_proto, level_builder, DecodedPage, PageValues};
use crate::encoding::bytes::{slice, u16_at, u32_at};
use crate::encoding::compression::Codec;
use crate::encoding::values::{FixedBuilder, ValuesBuilder};
use crate::error::{corrupt, Result};
use crate::proto::encodings21::MiniBlockLayout;

fn pad8(n: usize) -> usize {
    n.div_ceil(8) * 8
}

fn codec(e: &Option<crate::proto::encodings21::CompressiveEncoding>) -> Result<Option<Codec>> {
    e.as_ref().map(Codec::from_proto).transpose()
}

pub fn decode(m: &MiniBlockLayout, buffers: &[Bytes], num_rows: u64, leaf_type: &DataType) -> Result<DecodedPage> {
    let layers = layers_from_proto(&m.layers)?;
    let values_codec = codec(&m.value_compression)?.ok_or_else(|| corrupt("mini-block page without a value encoding"))?;
    let rep_codec = codec(&m.rep_compression)?;
    let def_codec = codec(&m.def_compression)?;
    let dict_codec = codec(&m.dictionary)?;
    let num_items = m.num_items as usize;
    let num_buffers = m.num_buffers as usize;
    let need = 2 + dict_codec.is_some() as usize + (m.repetition_index_depth > 0) as usize;
    if buffers.len() < need {
        return Err(corrupt(format!("mini-block page has {} buffers, needs {need}", buffers.len())));
    }
    let (meta, chunks) = (&buffers[0], &buffers[1]);

    // Chunk sizes and value counts from the metadata words.
    let word_size = if m.has_large_chunk { 4 } else { 2 };
    let num_chunks = meta.len() / word_size;
    let mut sizes = Vec::with_capacity(num_chunks);
    let mut counts = Vec::with_capacity(num_chunks);
    let mut assigned = 0usize;
    for i in 0..num_chunks {
        let w = if m.has_large_chunk { u32_at(meta, 4 * i, "chunk metadata")? } else { u16_at(meta, 2 * i, "chunk metadata")? as u32 };
        sizes.push(((w >> 4) as usize + 1) * 8);
        let count = if i + 1 == num_chunks {
            num_items.checked_sub(assigned).ok_or_else(|| corrupt("chunks hold more values than the page"))?
        } else {
            1usize << (w & 0xF)
        };
        assigned += count;
        counts.push(count);
    }
    if num_chunks == 0 && num_items > 0 {
        return Err(corrupt(format!("mini-block page of {num_items} values has no chunks")));
    }

    let mut values = match &dict_codec {
        Some(_) => {
            let bits = codec_value_bits(&values_codec).ok_or_else(|| corrupt("dictionary indices of a non-integer encoding"))?;
            ValuesBuilder::Fixed(FixedBuilder::new(bits as u32, num_items))
        }
        None => ValuesBuilder::for_type(leaf_type, num_items)?,
    };
    let mut rep = rep_codec.as_ref().map(|_| level_builder(num_items));
    let mut def = def_codec.as_ref().map(|_| level_builder(num_items));

    let mut at = 0usize;
    let mut bufs: Vec<&[u8]> = Vec::with_capacity(num_buffers);
    for (c, (&size, &count)) in sizes.iter().zip(&counts).enumerate() {
        let chunk = slice(chunks, at, size, "mini-block chunk")?;
        at += size;
        let what = "mini-block chunk header";
        let num_levels = u16_at(chunk, 0, what)? as usize;
        let mut h = 2;
        let rep_size = if rep.is_some() {
            h += 2;
            u16_at(chunk, h - 2, what)? as usize
        } else {
            0
        };
        let def_size = if def.is_some() {
            h += 2;
            u16_at(chunk, h - 2, what)? as usize
        } else {
            0
        };
        let mut buf_sizes = Vec::with_capacity(num_buffers);
        for _ in 0..num_buffers {
            if m.has_large_chunk {
                buf_sizes.push(u32_at(chunk, h, what)? as usize);
                h += 4;
            } else {
                buf_sizes.push(u16_at(chunk, h, what)? as usize);
                h += 2;
            }
        }
        let mut p = pad8(h);
        if let (Some(b), Some(codec)) = (rep.as_mut(), rep_codec.as_ref()) {
            codec.decode_block(slice(chunk, p, rep_size, "repetition levels")?, num_levels, b)?;
            p += pad8(rep_size);
        }
        if let (Some(b), Some(codec)) = (def.as_mut(), def_codec.as_ref()) {
            codec.decode_block(slice(chunk, p, def_size, "definition levels")?, num_levels, b)?;
            p += pad8(def_size);
        }
        bufs.clear();
        for &s in &buf_sizes {
            bufs.push(slice(chunk, p, s, "mini-block value buffer")?);
            p += pad8(s);
        }
        values_codec.decode_miniblock(&bufs, count, &mut values).map_err(|e| e.context(&format!("chunk {c}")))?;
    }

    let values = match dict_codec {
        Some(dc) => {
            let ValuesBuilder::Fixed(indices) = values else { unreachable!() };
            let dict_type = match leaf_type {
                DataType::Dictionary(_, v) => v.as_ref().clone(),
                other => other.clone(),
            };
            let n = m.num_dictionary_items as usize;
            let mut d = ValuesBuilder::for_type(&dict_type, n)?;
            dc.decode_block(&buffers[2], n, &mut d)?;
            PageValues::Dictionary { indices, dictionary: d.finish(&dict_type, None)? }
        }
        None => PageValues::Built(values),
    };
    Ok(DecodedPage { num_rows, layers, rep: rep.map(finish_levels), def: def.map(finish_levels), values })
}
