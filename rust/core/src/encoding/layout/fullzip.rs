//! Full-zip pages, for wide values (≥ 256 bytes: long strings, large vectors). Each item
//! is a control word (repetition and definition level packed together, 0/1/2/4 bytes),
//! then for a visible item either its fixed-width bytes or a length and its bytes; null
//! variable-width items and items hidden by an empty or null list have no value bytes.
//! Buffer 1, when present, holds the byte offset of every row (rows + 1 entries, 1 to 8
//! bytes each); it lets a page be cut into row ranges. Without it rows have a fixed size.
use std::ops::Range;

use arrow_array::{make_array, ArrayRef};
use arrow_buffer::Buffer;
use arrow_data::ArrayDataBuilder;
use arrow_schema::DataType;
use bytes::Bytes;

use super::{layers_from_proto, max_visible_def, DecodedPage, Layer, PageValues, UnitSizing};
use crate::encoding::bytes::{slice, uint_at};
use crate::encoding::compression::Codec;
use crate::encoding::values::ValuesBuilder;
use crate::error::{corrupt, Result};
use crate::proto::encodings21::{full_zip_layout::Details, FullZipLayout};

pub struct Plan {
    layers: Vec<Layer>,
    codec: Codec,
    bits_rep: u32,
    bits_def: u32,
    cw_bytes: usize,
    details: Details,
    /// Byte range of each unit within buffer 0.
    units: Vec<Range<usize>>,
}

pub fn plan(
    f: &FullZipLayout,
    buffers: &[Bytes],
    num_rows: u64,
    sizing: &UnitSizing,
) -> Result<(Plan, Vec<u64>)> {
    let layers = layers_from_proto(&f.layers)?;
    let codec = Codec::from_proto(
        f.value_compression
            .as_ref()
            .ok_or_else(|| corrupt("full-zip page without a value encoding"))?,
    )?;
    let data = buffers
        .first()
        .ok_or_else(|| corrupt("full-zip page without a data buffer"))?;
    if f.bits_rep + f.bits_def > 32 {
        return Err(corrupt(format!(
            "control words of {} bits",
            f.bits_rep + f.bits_def
        )));
    }
    let cw_bytes = match f.bits_rep + f.bits_def {
        0 => 0,
        1..=8 => 1,
        9..=16 => 2,
        _ => 4,
    };
    let details = f
        .details
        .ok_or_else(|| corrupt("full-zip page says neither value width nor offset width"))?;

    // Byte offset of row r: from the row index, or a fixed stride.
    let rows = num_rows as usize;
    let index = buffers.get(1).filter(|b| !b.is_empty());
    let offset_of: Box<dyn Fn(usize) -> Result<usize>> = match (index, details) {
        (Some(idx), _) => {
            let width = idx.len() / (rows + 1);
            if !matches!(width, 1 | 2 | 4 | 8) || width * (rows + 1) != idx.len() {
                return Err(corrupt(format!(
                    "full-zip row index of {} bytes for {rows} rows",
                    idx.len()
                )));
            }
            let idx = idx.clone();
            Box::new(move |r| Ok(uint_at(&idx, r * width, width, "full-zip row index")? as usize))
        }
        (None, Details::BitsPerValue(bits)) if f.bits_rep == 0 => {
            let stride = cw_bytes + (bits / 8) as usize;
            Box::new(move |r| Ok(r * stride))
        }
        _ => {
            let len = data.len();
            Box::new(move |r| Ok(if r == 0 { 0 } else { len }))
        }
    };
    let splittable =
        index.is_some() || matches!(details, Details::BitsPerValue(_)) && f.bits_rep == 0;
    let mut units = Vec::new();
    let mut unit_rows = Vec::new();
    let (mut start, mut acc) = (0usize, 0u64);
    for r in 1..=rows {
        acc += 1;
        if r == rows || (splittable && sizing.should_cut(acc, r as u64)) {
            let (a, b) = (offset_of(start)?, offset_of(r)?);
            if a > b || b > data.len() {
                return Err(corrupt(format!(
                    "full-zip rows {start}..{r} at bytes {a}..{b} of a {}-byte buffer",
                    data.len()
                )));
            }
            units.push(a..b);
            unit_rows.push(acc);
            start = r;
            acc = 0;
        }
    }
    Ok((
        Plan {
            layers,
            codec,
            bits_rep: f.bits_rep,
            bits_def: f.bits_def,
            cw_bytes,
            details,
            units,
        },
        unit_rows,
    ))
}

impl Plan {
    pub fn decode(
        &self,
        buffers: &[Bytes],
        unit: usize,
        num_rows: u64,
        leaf_type: &DataType,
    ) -> Result<DecodedPage> {
        let range = self.units[unit].clone();
        let data = buffers[0].slice(range);
        let layers = self.layers.clone();
        if self.cw_bytes == 0 {
            if let Details::BitsPerValue(bits) = self.details {
                // No levels: the bytes are the values, back to back.
                let width = (bits / 8) as usize;
                let n = num_rows as usize;
                if data.len() != width * n {
                    return Err(corrupt(format!(
                        "{n} values of {width} bytes in {} bytes",
                        data.len()
                    )));
                }
                let values = match zero_copy(&self.codec, data.clone(), n, leaf_type)? {
                    Some(array) => PageValues::Array(array),
                    None => {
                        let mut b = ValuesBuilder::for_type(leaf_type, n)?;
                        for v in data.chunks_exact(width.max(1)) {
                            self.codec.decode_value(v, &mut b)?;
                        }
                        PageValues::Built(b)
                    }
                };
                return Ok(DecodedPage {
                    num_rows,
                    layers,
                    rep: None,
                    def: None,
                    values,
                });
            }
        }
        let has_lists = layers.iter().any(|l| l.is_list());
        let has_rep = self.bits_rep > 0;
        let has_def = self.bits_def > 0;
        let visible_def = max_visible_def(&layers);
        let def_mask = (1u32 << self.bits_def) - 1;
        let mut rep = has_rep.then(Vec::new);
        let mut def = has_def.then(Vec::new);
        let mut values = ValuesBuilder::for_type(leaf_type, num_rows as usize)?;
        let mut pos = 0usize;
        while pos < data.len() {
            let cw = uint_at(&data, pos, self.cw_bytes, "full-zip control word")? as u32;
            pos += self.cw_bytes;
            let (r, d) = ((cw >> self.bits_def) as u16, (cw & def_mask) as u16);
            if let Some(v) = rep.as_mut() {
                v.push(r);
            }
            if let Some(v) = def.as_mut() {
                v.push(d);
            }
            if has_lists && d > visible_def {
                continue; // an empty or null list: no value slot
            }
            match self.details {
                Details::BitsPerValue(bits) => {
                    let bytes = slice(&data, pos, (bits / 8) as usize, "full-zip value")?;
                    pos += bytes.len();
                    self.codec.decode_value(bytes, &mut values)?;
                }
                Details::BitsPerOffset(bits) => {
                    if d == 0 {
                        let w = (bits / 8) as usize;
                        let len = uint_at(&data, pos, w, "full-zip value length")? as usize;
                        let bytes = slice(&data, pos + w, len, "full-zip value")?;
                        pos += w + len;
                        self.codec.decode_value(bytes, &mut values)?;
                    } else {
                        values.append_zeros(1)?;
                    }
                }
            }
            if self.cw_bytes == 0 && values.len() as u64 == num_rows {
                break;
            }
        }
        Ok(DecodedPage {
            num_rows,
            layers,
            rep: rep.map(Into::into),
            def: def.map(Into::into),
            values: PageValues::Built(values),
        })
    }
}

/// Fixed-width values with no levels can become an Arrow array without a copy: plain
/// values, or vectors whose items are plain values.
fn zero_copy(
    codec: &Codec,
    data: Bytes,
    n: usize,
    leaf_type: &DataType,
) -> Result<Option<ArrayRef>> {
    let buffer = Buffer::from(data);
    let array = match (codec, leaf_type) {
        (Codec::Flat { bits }, dt) if dt.primitive_width().map(|w| w as u64 * 8) == Some(*bits) => {
            ArrayDataBuilder::new(dt.clone()).len(n).add_buffer(buffer)
        }
        (Codec::Flat { bits }, dt @ DataType::FixedSizeBinary(w)) if *w as u64 * 8 == *bits => {
            ArrayDataBuilder::new(dt.clone()).len(n).add_buffer(buffer)
        }
        (
            Codec::FixedSizeList {
                dim,
                has_validity: false,
                inner,
            },
            dt @ DataType::FixedSizeList(item, d),
        ) if *d as u64 == *dim => {
            let Codec::Flat { bits } = inner.as_ref() else {
                return Ok(None);
            };
            if item.data_type().primitive_width().map(|w| w as u64 * 8) != Some(*bits) {
                return Ok(None);
            }
            let child = ArrayDataBuilder::new(item.data_type().clone())
                .len(n * *dim as usize)
                .add_buffer(buffer)
                .align_buffers(true)
                .build()?;
            ArrayDataBuilder::new(dt.clone())
                .len(n)
                .add_child_data(child)
        }
        _ => return Ok(None),
    };
    Ok(Some(make_array(array.align_buffers(true).build()?)))
}
