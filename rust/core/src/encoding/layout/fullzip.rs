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

/// Plan a page from its buffers; buffer 0 (the items) need not be there, only its length
/// `data_len` is used (a take reads just the rows it needs later).
pub fn plan(
    f: &FullZipLayout,
    buffers: &[Bytes],
    data_len: usize,
    num_rows: u64,
    sizing: &UnitSizing,
) -> Result<(Plan, Vec<u64>)> {
    let layers = layers_from_proto(&f.layers)?;
    let codec = Codec::from_proto(
        f.value_compression
            .as_ref()
            .ok_or_else(|| corrupt("full-zip page without a value encoding"))?,
    )?;
    if buffers.is_empty() {
        return Err(corrupt("full-zip page without a data buffer"));
    }
    // Levels are u16s: each takes 16 bits at most.
    if f.bits_rep > 16 || f.bits_def > 16 {
        return Err(corrupt(format!(
            "control words of {} repetition and {} definition bits",
            f.bits_rep, f.bits_def
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
    // Every item takes whole bytes, and at least one (control word, value or length), so
    // decoding always moves forward.
    match details {
        Details::BitsPerValue(b) if b % 8 == 0 && (b > 0 || cw_bytes > 0) => {}
        Details::BitsPerOffset(8 | 16 | 32 | 64) => {}
        Details::BitsPerValue(b) => {
            return Err(corrupt(format!("full-zip items of {b} bits each")))
        }
        Details::BitsPerOffset(b) => {
            return Err(corrupt(format!("full-zip items with {b}-bit lengths")))
        }
    }

    // Byte offset of row r: from the row index, or a fixed stride.
    let rows = usize::try_from(num_rows).map_err(|_| corrupt("full-zip page of too many rows"))?;
    let index = buffers.get(1).filter(|b| !b.is_empty());
    let offset_of: Box<dyn Fn(usize) -> Result<usize>> = match (index, details) {
        (Some(idx), _) => {
            let width = idx.len() / rows.saturating_add(1);
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
            if rows.checked_mul(stride).is_none_or(|n| n > data_len) {
                return Err(corrupt(format!(
                    "full-zip page of {rows} rows of {stride} bytes has {data_len} bytes"
                )));
            }
            Box::new(move |r| Ok(r * stride))
        }
        _ => Box::new(move |r| Ok(if r == 0 { 0 } else { data_len })),
    };
    let splittable =
        index.is_some() || matches!(details, Details::BitsPerValue(_)) && f.bits_rep == 0;
    let mut units = Vec::new();
    let mut unit_rows = Vec::new();
    let (mut start, mut acc) = (0usize, 0u64);
    if !splittable && rows > 0 {
        // One unit; its row count is checked against its items when it is decoded.
        units.push(0..data_len);
        unit_rows.push(num_rows);
    }
    // Splittable pages hold at least a byte per row (checked above), so this loop is
    // bounded by the page's bytes.
    let split_rows = if splittable { rows } else { 0 };
    // Plain fixed-width values (no levels) become Arrow arrays without a copy, so a
    // unit costs no decoding: in a scan, units that end where batches end let every
    // batch be a slice of one unit instead of a copy joining several.
    let plain = cw_bytes == 0
        && index.is_none()
        && matches!(details, Details::BitsPerValue(_))
        && sizing.align_rows > 1
        && sizing.target_rows != u64::MAX;
    let cut = |acc: u64, r: usize| match plain {
        true => (sizing.page_start + r as u64).is_multiple_of(sizing.align_rows),
        false => sizing.should_cut(acc, r as u64),
    };
    for r in 1..=split_rows {
        acc += 1;
        if r == rows || cut(acc, r) {
            let (a, b) = (offset_of(start)?, offset_of(r)?);
            if a > b || b > data_len {
                return Err(corrupt(format!(
                    "full-zip rows {start}..{r} at bytes {a}..{b} of a {data_len}-byte buffer"
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
    /// Bytes of buffer 0 that unit `unit` decodes.
    pub fn unit_bytes(&self, unit: usize) -> Range<usize> {
        self.units[unit].clone()
    }

    /// For pages of plain fixed-width values (no control words): the width of a value and
    /// where unit `unit`'s values start in buffer 0.
    pub fn plain_values(&self, unit: usize) -> Option<(usize, usize)> {
        if self.cw_bytes != 0 {
            return None;
        }
        let Details::BitsPerValue(bits) = self.details else {
            return None;
        };
        let width = super::miniblock::plain_width(&self.codec)?;
        (width as u64 * 8 == bits as u64)
            .then(|| (width, self.units.get(unit).map_or(0, |r| r.start)))
    }

    /// A plan of units `units` only, each decoding from a buffer 0 that holds just its
    /// own bytes (its `unit_bytes`).
    pub fn select(&self, units: &[usize]) -> Plan {
        let kept = units.iter().map(|&u| 0..self.units[u].len()).collect();
        Plan {
            layers: self.layers.clone(),
            codec: self.codec.clone(),
            bits_rep: self.bits_rep,
            bits_def: self.bits_def,
            cw_bytes: self.cw_bytes,
            details: self.details,
            units: kept,
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
        // Every item takes a byte at least: no more values than bytes.
        let mut values = ValuesBuilder::for_type(leaf_type, (num_rows as usize).min(data.len()))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::encode::proto;
    use crate::proto::encodings21::page_layout::Layout;
    use crate::proto::encodings21::PageLayout;

    fn layout(details: Details, bits_def: u32) -> PageLayout {
        PageLayout {
            layout: Some(Layout::FullZipLayout(FullZipLayout {
                bits_def,
                details: Some(details),
                value_compression: Some(proto::variable(32)),
                layers: vec![Layer::NullableItem.to_proto()],
                ..Default::default()
            })),
        }
    }

    #[test]
    fn plain_values_are_cut_where_batches_end() {
        // 10 int32 rows starting at fragment row 6, batches of 4 rows: units end at
        // fragment rows 8 and 12 (page rows 2 and 6), then at the page's end.
        let page = PageLayout {
            layout: Some(Layout::FullZipLayout(FullZipLayout {
                details: Some(Details::BitsPerValue(32)),
                value_compression: Some(proto::flat(32)),
                layers: vec![Layer::AllValidItem.to_proto()],
                ..Default::default()
            })),
        };
        let data = vec![Bytes::from((0..40u8).collect::<Vec<_>>())];
        let sizing = UnitSizing {
            target_rows: 1024,
            align_rows: 4,
            page_start: 6,
            rows_share_chunks: false,
        };
        let plan = super::super::plan_page(&page, data, 10, &DataType::Int32, &sizing).unwrap();
        assert_eq!(plan.unit_rows(), &[2, 4, 4]);
    }

    #[test]
    fn row_counts_the_bytes_cannot_hold_fail_fast() {
        // Found by fuzzing: the planner walked every row a page claimed (a hang for 2^40
        // rows), and `rows + 1` overflowed for u64::MAX.
        let data = vec![Bytes::from_static(&[0, 1, 0, 0, 0, b'x'])];
        let page = layout(Details::BitsPerOffset(32), 1);
        let plan = super::super::plan_page(
            &page,
            data.clone(),
            1 << 40,
            &DataType::Utf8,
            &UnitSizing::whole(),
        )
        .unwrap();
        // The one unit decodes what is there; its row count is checked as it is unravelled.
        let decoded = plan.decode_unit(0).unwrap();
        let leaf = crate::encoding::levels::PathStep::Leaf(std::sync::Arc::new(
            arrow_schema::Field::new("s", DataType::Utf8, true),
        ));
        let err = crate::encoding::levels::unravel(decoded, &[leaf]).unwrap_err();
        assert!(err.to_string().contains("decoded 1 rows"), "{err}");
        let with_index = vec![data[0].clone(), Bytes::from_static(&[0, 6])];
        assert!(super::super::plan_page(
            &page,
            with_index,
            u64::MAX,
            &DataType::Utf8,
            &UnitSizing::whole()
        )
        .is_err());
        // Fixed-width rows: the stride says how many fit.
        let fixed = layout(Details::BitsPerValue(32), 0);
        let err = super::super::plan_page(
            &fixed,
            data,
            1 << 40,
            &DataType::Int32,
            &UnitSizing::whole(),
        )
        .map(|_| ())
        .unwrap_err();
        assert!(err.to_string().contains("1099511627776 rows"), "{err}");
    }

    #[test]
    fn level_widths_fit_u16() {
        // Found by fuzzing: 32 definition bits overflowed the mask's shift (and the sum
        // of two widths could overflow u32).
        let data = vec![Bytes::from_static(&[0; 8])];
        for (rep, def) in [(0, 32), (17, 0), (u32::MAX, 1)] {
            let mut page = layout(Details::BitsPerValue(32), def);
            if let Some(Layout::FullZipLayout(f)) = page.layout.as_mut() {
                f.bits_rep = rep;
            }
            let r = super::super::plan_page(
                &page,
                data.clone(),
                1,
                &DataType::Int32,
                &UnitSizing::whole(),
            );
            assert!(r.is_err(), "{rep} {def}");
        }
    }

    #[test]
    fn items_must_take_whole_bytes() {
        // Zero-width items would never move the decoder forward.
        let data = vec![Bytes::from_static(&[0; 8])];
        for d in [
            Details::BitsPerValue(0),
            Details::BitsPerValue(12),
            Details::BitsPerOffset(72),
        ] {
            let page = layout(d, 0);
            assert!(
                super::super::plan_page(
                    &page,
                    data.clone(),
                    4,
                    &DataType::Int32,
                    &UnitSizing::whole()
                )
                .is_err(),
                "{d:?}"
            );
        }
    }
}
