//! Full-zip pages, for wide values (≥ 256 bytes: long strings, large vectors). Each item
//! is a control word (repetition and definition level packed together, 0/1/2/4 bytes),
//! then for a visible item either its fixed-width bytes or a length and its bytes; null
//! variable-width items and items hidden by an empty or null list have no value bytes.
//! Buffer 1 (row offsets) only serves random access; a full decode walks buffer 0.
use arrow_array::{make_array, ArrayRef};
use arrow_buffer::Buffer;
use arrow_data::ArrayDataBuilder;
use arrow_schema::DataType;
use bytes::Bytes;

use super::{layers_from_proto, max_visible_def, DecodedPage, PageValues};
use crate::encoding::bytes::slice;
use crate::encoding::compression::Codec;
use crate::encoding::values::ValuesBuilder;
use crate::error::{corrupt, Result};
use crate::proto::encodings21::{full_zip_layout::Details, FullZipLayout};

fn read_le(b: &[u8], at: usize, width: usize, what: &str) -> Result<u64> {
    let raw = slice(b, at, width, what)?;
    let mut v = 0u64;
    for (i, x) in raw.iter().enumerate() {
        v |= (*x as u64) << (8 * i);
    }
    Ok(v)
}

pub fn decode(f: &FullZipLayout, buffers: &[Bytes], num_rows: u64, leaf_type: &DataType) -> Result<DecodedPage> {
    let layers = layers_from_proto(&f.layers)?;
    let codec = Codec::from_proto(f.value_compression.as_ref().ok_or_else(|| corrupt("full-zip page without a value encoding"))?)?;
    let data = buffers.first().ok_or_else(|| corrupt("full-zip page without a data buffer"))?;
    let num_items = f.num_items as usize;
    let (bits_rep, bits_def) = (f.bits_rep, f.bits_def);
    if bits_rep + bits_def > 32 {
        return Err(corrupt(format!("control words of {} bits", bits_rep + bits_def)));
    }
    let cw_bytes = match bits_rep + bits_def {
        0 => 0,
        1..=8 => 1,
        9..=16 => 2,
        _ => 4,
    };
    let details = f.details.ok_or_else(|| corrupt("full-zip page says neither value width nor offset width"))?;

    if cw_bytes == 0 {
        if let Details::BitsPerValue(bits) = details {
            // No levels: the buffer is the values, back to back.
            let width = (bits / 8) as usize;
            if data.len() < width * num_items {
                return Err(corrupt(format!("{num_items} values of {width} bytes need {} bytes, have {}", width * num_items, data.len())));
            }
            let values = match zero_copy(&codec, data.slice(..width * num_items), num_items, leaf_type)? {
                Some(array) => PageValues::Array(array),
                None => {
                    let mut b = ValuesBuilder::for_type(leaf_type, num_items)?;
                    for v in data[..width * num_items].chunks_exact(width.max(1)) {
                        codec.decode_value(v, &mut b)?;
                    }
                    PageValues::Built(b)
                }
            };
            return Ok(DecodedPage { num_rows, layers, rep: None, def: None, values });
        }
    }

    let has_lists = layers.iter().any(|l| l.is_list());
    let visible_def = max_visible_def(&layers);
    let def_mask = (1u32 << bits_def) - 1;
    let mut rep = (bits_rep > 0).then(|| Vec::with_capacity(num_items));
    let mut def = (bits_def > 0).then(|| Vec::with_capacity(num_items));
    let mut values = ValuesBuilder::for_type(leaf_type, f.num_visible_items as usize)?;
    let mut pos = 0usize;
    for _ in 0..num_items {
        let cw = read_le(data, pos, cw_bytes, "full-zip control word")? as u32;
        pos += cw_bytes;
        let (r, d) = ((cw >> bits_def) as u16, (cw & def_mask) as u16);
        if let Some(v) = rep.as_mut() {
            v.push(r);
        }
        if let Some(v) = def.as_mut() {
            v.push(d);
        }
        if has_lists && d > visible_def {
            continue; // an empty or null list: no value slot
        }
        match details {
            Details::BitsPerValue(bits) => {
                let bytes = slice(data, pos, (bits / 8) as usize, "full-zip value")?;
                pos += bytes.len();
                codec.decode_value(bytes, &mut values)?;
            }
            Details::BitsPerOffset(bits) => {
                if d == 0 {
                    let len = read_le(data, pos, (bits / 8) as usize, "full-zip value length")? as usize;
                    pos += (bits / 8) as usize;
                    let bytes = slice(data, pos, len, "full-zip value")?;
                    pos += len;
                    codec.decode_value(bytes, &mut values)?;
                } else {
                    values.append_zeros(1)?;
                }
            }
        }
    }
    if values.len() != f.num_visible_items as usize {
        return Err(corrupt(format!("full-zip page decoded {} values, expected {}", values.len(), f.num_visible_items)));
    }
    Ok(DecodedPage {
        num_rows,
        layers,
        rep: rep.map(Into::into),
        def: def.map(Into::into),
        values: PageValues::Built(values),
    })
}

/// Fixed-width values with no levels can become an Arrow array without a copy: plain
/// values, or vectors whose items are plain values.
fn zero_copy(codec: &Codec, data: Bytes, n: usize, leaf_type: &DataType) -> Result<Option<ArrayRef>> {
    let buffer = Buffer::from(data);
    let array = match (codec, leaf_type) {
        (Codec::Flat { bits }, dt) if dt.primitive_width().map(|w| w as u64 * 8) == Some(*bits) => {
            ArrayDataBuilder::new(dt.clone()).len(n).add_buffer(buffer)
        }
        (Codec::Flat { bits }, dt @ DataType::FixedSizeBinary(w)) if *w as u64 * 8 == *bits => {
            ArrayDataBuilder::new(dt.clone()).len(n).add_buffer(buffer)
        }
        (Codec::FixedSizeList { dim, has_validity: false, inner }, dt @ DataType::FixedSizeList(item, d)) if *d as u64 == *dim => {
            let Codec::Flat { bits } = inner.as_ref() else { return Ok(None) };
            if item.data_type().primitive_width().map(|w| w as u64 * 8) != Some(*bits) {
                return Ok(None);
            }
            let child = ArrayDataBuilder::new(item.data_type().clone()).len(n * *dim as usize).add_buffer(buffer).align_buffers(true).build()?;
            ArrayDataBuilder::new(dt.clone()).len(n).add_child_data(child)
        }
        _ => return Ok(None),
    };
    Ok(Some(make_array(array.align_buffers(true).build()?)))
}
