//! Constant pages: every value is the same scalar, or every value is null. Only the
//! levels are stored (raw u16, or block-compressed in 2.2), and the scalar either inline
//! in the layout or in a value buffer (`u32 count | u32 sizes | the scalar's buffers`).
//!
//! Buffers, by whether the scalar is inline: none → no levels; [rep, def]; or (scalar
//! not inline) [value] or [value, rep, def]. An empty rep or def buffer means none.
use arrow_buffer::ScalarBuffer;
use arrow_schema::DataType;
use bytes::Bytes;

use super::{
    finish_levels, layers_from_proto, level_builder, max_visible_def, DecodedPage, Layer,
    PageValues, UnitSizing,
};
use crate::encoding::bytes::{slice, u32_at, words};
use crate::encoding::compression::Codec;
use crate::encoding::values::ValuesBuilder;
use crate::error::{corrupt, Result};
use crate::proto::encodings21::{CompressiveEncoding, ConstantLayout};

/// Levels stored in `buf`: raw u16s, or `count` levels compressed by `codec` (at most
/// `max_count`, checked before any is decoded).
fn levels(
    buf: Option<&Bytes>,
    codec: &Option<CompressiveEncoding>,
    count: u64,
    max_count: u64,
) -> Result<Option<ScalarBuffer<u16>>> {
    let Some(buf) = buf.filter(|b| !b.is_empty()) else {
        return Ok(None);
    };
    match codec {
        Some(c) => {
            if count > max_count {
                return Err(corrupt(format!(
                    "constant page claims {count} levels (at most {max_count} fit it)"
                )));
            }
            let mut b = level_builder(count as usize);
            Codec::from_proto(c)?.decode_block(buf, count as usize, &mut b)?;
            Ok(Some(finish_levels(b)))
        }
        None => Ok(Some(words::<u16>(buf).into_owned().into())),
    }
}

/// The scalar of a value buffer: for fixed-width types its bytes, for strings the data
/// between its two offsets.
fn scalar_from_buffer(buf: &[u8]) -> Result<Vec<u8>> {
    let what = "constant value";
    let n = u32_at(buf, 0, what)? as usize;
    let mut sizes = Vec::with_capacity(n.min(16));
    for i in 0..n {
        sizes.push(u32_at(buf, 4 + 4 * i, what)? as usize);
    }
    let mut parts = Vec::with_capacity(n.min(16));
    let mut at = 4 + 4 * n;
    for s in sizes {
        parts.push(slice(buf, at, s, what)?);
        at += s;
    }
    match parts.as_slice() {
        [value] => Ok(value.to_vec()),
        [offsets, data] => {
            let (a, b) = match offsets.len() {
                8 => (
                    words::<i32>(offsets)[0] as usize,
                    words::<i32>(offsets)[1] as usize,
                ),
                16 => (
                    words::<i64>(offsets)[0] as usize,
                    words::<i64>(offsets)[1] as usize,
                ),
                l => {
                    return Err(corrupt(format!(
                        "constant string with {l} bytes of offsets"
                    )))
                }
            };
            Ok(data
                .get(a..b)
                .ok_or_else(|| corrupt("constant string offsets out of range"))?
                .to_vec())
        }
        _ => Err(corrupt(format!("constant value made of {n} buffers"))),
    }
}

/// Where the unit starting at row `start` of an `n`-row page ends: the first row at which
/// `sizing.should_cut` holds, or `n`.
fn next_cut(sizing: &UnitSizing, start: u64, n: u64) -> u64 {
    let target = sizing.target_rows.max(1);
    let first = start.saturating_add(target);
    if first >= n {
        return n;
    }
    let align = sizing.align_rows.max(1);
    let misaligned = (sizing.page_start % align + first % align) % align;
    let aligned = first.saturating_add((align - misaligned) % align);
    aligned
        .min(start.saturating_add(target.saturating_mul(2)))
        .min(n)
}

pub struct Plan {
    layers: Vec<Layer>,
    scalar: Option<Vec<u8>>,
    rep: Option<ScalarBuffer<u16>>,
    def: Option<ScalarBuffer<u16>>,
    /// First row of each unit (units only split pages without repetition).
    starts: Vec<u64>,
}

pub fn plan(
    c: &ConstantLayout,
    buffers: &[Bytes],
    num_rows: u64,
    _leaf_type: &DataType,
    sizing: &UnitSizing,
) -> Result<(Plan, Vec<u64>)> {
    let layers = layers_from_proto(&c.layers)?;
    let inline = c.inline_value.is_some();
    let (value_buf, rep_buf, def_buf) = match (inline, buffers.len()) {
        (_, 0) => (None, None, None),
        (false, 1) => (Some(&buffers[0]), None, None),
        (_, 2) => (None, Some(&buffers[0]), Some(&buffers[1])),
        (false, 3) => (Some(&buffers[0]), Some(&buffers[1]), Some(&buffers[2])),
        (_, n) => return Err(corrupt(format!("constant page with {n} buffers"))),
    };
    let scalar = match (&c.inline_value, value_buf) {
        (Some(v), _) => Some(v.clone()),
        (None, Some(b)) => Some(scalar_from_buffer(b)?),
        (None, None) => None,
    };
    // A row takes one level or more; past one per row, levels vary (a page whose levels
    // are all alike holds one per row), so compressed ones take a bit each at least.
    let has_rep = rep_buf.is_some_and(|b| !b.is_empty());
    let level_bytes = rep_buf.map_or(0, |b| b.len()) + def_buf.map_or(0, |b| b.len());
    let max_levels = if has_rep {
        num_rows.max(8 * level_bytes as u64)
    } else {
        num_rows
    };
    let rep = levels(rep_buf, &c.rep_compression, c.num_rep_values, max_levels)?;
    let def = levels(def_buf, &c.def_compression, c.num_def_values, max_levels)?;
    if scalar.is_none() && rep.is_none() && def.is_none() && layers != [Layer::NullableItem] {
        return Err(corrupt(format!(
            "all-null page without levels has layers {}",
            super::describe_layers(&layers)
        )));
    }
    if rep.is_none() {
        if let Some(d) = &def {
            if d.len() as u64 != num_rows {
                return Err(corrupt(format!(
                    "constant page has {} levels for {num_rows} rows",
                    d.len()
                )));
            }
        }
    }
    // Without repetition every row is one level, so rows split anywhere. Cuts are found
    // a unit at a time, not a row at a time: a page of many rows plans quickly.
    let mut starts = vec![0u64];
    let mut units = Vec::new();
    let mut start = 0u64;
    while start < num_rows {
        let end = match rep {
            Some(_) => num_rows,
            None => next_cut(sizing, start, num_rows),
        };
        units.push(end - start);
        starts.push(end);
        start = end;
    }
    if units.is_empty() {
        units.push(0);
    }
    Ok((
        Plan {
            layers,
            scalar,
            rep,
            def,
            starts,
        },
        units,
    ))
}

impl Plan {
    pub fn decode(&self, unit: usize, num_rows: u64, leaf_type: &DataType) -> Result<DecodedPage> {
        let (start, end) = (
            self.starts[unit] as usize,
            self.starts[unit] as usize + num_rows as usize,
        );
        let (rep, def) = match &self.rep {
            Some(r) => (Some(r.clone()), self.def.clone()),
            None => (None, self.def.as_ref().map(|d| d.slice(start, end - start))),
        };
        // Every row null with nothing stored: a single nullable layer.
        let def = match (&self.scalar, &rep, def) {
            (None, None, None) => Some(vec![1u16; num_rows as usize].into()),
            (_, _, d) => d,
        };
        let has_lists = self.layers.iter().any(|l| l.is_list());
        let visible = max_visible_def(&self.layers);
        let count = match (&def, &rep) {
            (Some(d), _) if has_lists => d.iter().filter(|&&x| x <= visible).count(),
            (Some(d), _) => d.len(),
            (None, Some(r)) => r.len(),
            (None, None) => num_rows as usize,
        };
        let values = match &self.scalar {
            None => PageValues::AllNull(count),
            Some(v) => {
                let mut b = ValuesBuilder::for_type(leaf_type, count)?;
                Codec::Constant {
                    value: Some(v.clone()),
                }
                .decode_block(&[], count, &mut b)?;
                PageValues::Built(b)
            }
        };
        Ok(DecodedPage {
            num_rows,
            layers: self.layers.clone(),
            rep,
            def,
            values,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::encode::proto;
    use crate::encoding::layout::{plan_page, PageLayout};
    use crate::proto::encodings21::page_layout::Layout;

    fn page(c: ConstantLayout) -> PageLayout {
        PageLayout {
            layout: Some(Layout::ConstantLayout(c)),
        }
    }

    #[test]
    fn many_rows_plan_a_unit_at_a_time() {
        // Planning walked every row: 2^50 rows of a constant page took forever.
        let c = ConstantLayout {
            layers: vec![Layer::AllValidItem.to_proto()],
            inline_value: Some(vec![1, 0, 0, 0]),
            ..Default::default()
        };
        let whole = plan_page(
            &page(c.clone()),
            vec![],
            1 << 50,
            &DataType::Int32,
            &UnitSizing::whole(),
        )
        .unwrap();
        assert_eq!(whole.unit_rows(), &[1 << 50]);
        let sizing = UnitSizing {
            target_rows: 10,
            align_rows: 8,
            page_start: 3,
            rows_share_chunks: false,
        };
        let plan = plan_page(&page(c), vec![], 45, &DataType::Int32, &sizing).unwrap();
        // Cuts where page_start + end is a multiple of 8 (13, 29, 45), units of >= 10 rows.
        assert_eq!(plan.unit_rows(), &[13, 16, 16]);
    }

    #[test]
    fn compressed_level_counts_must_fit_the_page() {
        // A stated 2^40 definition levels, bit-packed at width 0, decoded 2^40 zeros.
        let c = ConstantLayout {
            layers: vec![Layer::NullableItem.to_proto()],
            def_compression: Some(proto::out_of_line_bitpacking(16, 0)),
            num_def_values: 1 << 40,
            ..Default::default()
        };
        let buffers = vec![Bytes::new(), Bytes::from_static(&[0; 8])];
        let err = plan_page(
            &page(c),
            buffers,
            10,
            &DataType::Int32,
            &UnitSizing::whole(),
        )
        .map(|_| ())
        .unwrap_err();
        assert!(
            err.to_string().contains("claims 1099511627776 levels"),
            "{err}"
        );
    }
}
