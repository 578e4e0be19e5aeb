//! Page layouts: how a page's buffers hold its repetition levels, definition levels and
//! values. Each layout decodes a whole page into a `DecodedPage`; `levels` then turns
//! the levels into Arrow structure.
mod blob;
mod constant;
mod fullzip;
mod miniblock;
#[cfg(test)]
mod selection_tests;

use arrow_array::{Array, ArrayRef, UInt32Array};
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_schema::DataType;
use bytes::Bytes;

use crate::encoding::compression::Codec;
use crate::encoding::values::{FixedBuilder, ValuesBuilder};
use crate::error::{corrupt, unsupported, Result};
use crate::proto::encodings20::ArrayEncoding;
use crate::proto::encodings21::{page_layout::Layout as PbLayout, PageLayout, RepDefLayer};

/// One structural level above the values of a page, inner-most first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    AllValidItem,
    NullableItem,
    AllValidList,
    NullableList,
    EmptyableList,
    NullAndEmptyList,
}

impl Layer {
    pub fn from_proto(v: i32) -> Result<Self> {
        Ok(match RepDefLayer::try_from(v) {
            Ok(RepDefLayer::RepdefAllValidItem) => Layer::AllValidItem,
            Ok(RepDefLayer::RepdefNullableItem) => Layer::NullableItem,
            Ok(RepDefLayer::RepdefAllValidList) => Layer::AllValidList,
            Ok(RepDefLayer::RepdefNullableList) => Layer::NullableList,
            Ok(RepDefLayer::RepdefEmptyableList) => Layer::EmptyableList,
            Ok(RepDefLayer::RepdefNullAndEmptyList) => Layer::NullAndEmptyList,
            _ => return Err(unsupported(format!("structural layer {v}"))),
        })
    }

    pub fn to_proto(self) -> i32 {
        (match self {
            Layer::AllValidItem => RepDefLayer::RepdefAllValidItem,
            Layer::NullableItem => RepDefLayer::RepdefNullableItem,
            Layer::AllValidList => RepDefLayer::RepdefAllValidList,
            Layer::NullableList => RepDefLayer::RepdefNullableList,
            Layer::EmptyableList => RepDefLayer::RepdefEmptyableList,
            Layer::NullAndEmptyList => RepDefLayer::RepdefNullAndEmptyList,
        }) as i32
    }

    pub fn is_list(self) -> bool {
        matches!(
            self,
            Layer::AllValidList
                | Layer::NullableList
                | Layer::EmptyableList
                | Layer::NullAndEmptyList
        )
    }

    /// Definition levels this layer uses.
    pub fn def_levels(self) -> u16 {
        match self {
            Layer::AllValidItem | Layer::AllValidList => 0,
            Layer::NullableItem | Layer::NullableList | Layer::EmptyableList => 1,
            Layer::NullAndEmptyList => 2,
        }
    }
}

/// How errors name a layer.
impl std::fmt::Display for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Layer::AllValidItem => "values without nulls",
            Layer::NullableItem => "nullable values",
            Layer::AllValidList => "lists without nulls or empty lists",
            Layer::NullableList => "nullable lists",
            Layer::EmptyableList => "lists that may be empty",
            Layer::NullAndEmptyList => "nullable lists that may be empty",
        })
    }
}

/// Layers as words, outermost last (as stored).
pub fn describe_layers(layers: &[Layer]) -> String {
    layers
        .iter()
        .map(|l| l.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn layers_from_proto(v: &[i32]) -> Result<Vec<Layer>> {
    if v.is_empty() {
        return Err(corrupt("page has no structural layers"));
    }
    v.iter().map(|l| Layer::from_proto(*l)).collect()
}

/// The highest definition level that still has a value slot: levels used by the layers
/// below the first list. Levels above it mark empty or null lists, which have no value.
pub fn max_visible_def(layers: &[Layer]) -> u16 {
    layers
        .iter()
        .take_while(|l| !l.is_list())
        .map(|l| l.def_levels())
        .sum()
}

/// The values of a page, before the leaf's validity is applied.
pub enum PageValues {
    /// Decoded values.
    Built(ValuesBuilder),
    /// Values that were already an Arrow array (zero-copy buffers).
    Array(ArrayRef),
    /// Dictionary indices (u8..u64 as decoded) and the page's dictionary.
    Dictionary {
        indices: FixedBuilder,
        dictionary: ArrayRef,
    },
    /// `n` values, all null.
    AllNull(usize),
}

/// A page split into levels and values.
pub struct DecodedPage {
    pub num_rows: u64,
    pub layers: Vec<Layer>,
    pub rep: Option<ScalarBuffer<u16>>,
    pub def: Option<ScalarBuffer<u16>>,
    pub values: PageValues,
}

/// How big the units a page is cut into should be.
#[derive(Clone, Copy, Debug)]
pub struct UnitSizing {
    /// Aim for units of about this many rows...
    pub target_rows: u64,
    /// ...preferably ending where `page_start + rows` is a multiple of `align_rows` (the
    /// batch size), so batches rarely straddle two units.
    pub align_rows: u64,
    pub page_start: u64,
    /// Mini-block pages with lists: let units share the chunk where a row continues into
    /// the next one, a unit per chunk holding the rows that end in it (read from the chunk
    /// where the first of them starts). Takes want this, so that a row read costs the
    /// chunks it spans; scans do not (a shared chunk would be decoded twice).
    pub rows_share_chunks: bool,
}

impl UnitSizing {
    /// One unit for the whole page.
    pub fn whole() -> Self {
        UnitSizing {
            target_rows: u64::MAX,
            align_rows: 1,
            page_start: 0,
            rows_share_chunks: false,
        }
    }

    /// Whether a unit of `rows` rows, ending at page row `end`, is big enough to cut.
    pub fn should_cut(&self, rows: u64, end: u64) -> bool {
        rows >= self.target_rows
            && ((self.page_start + end).is_multiple_of(self.align_rows.max(1))
                || rows >= 2 * self.target_rows)
    }
}

enum PlanKind {
    MiniBlock(miniblock::Plan),
    FullZip(fullzip::Plan),
    Constant(constant::Plan),
    /// Decoded in one piece (blob pages).
    Whole(PageLayout),
    /// A format 2.0 page, decoded in one piece; `depth` is the length of its leaf's path
    /// (2.0 structs have no validity, so every level above the values is all valid).
    Array20 {
        encoding: ArrayEncoding,
        depth: usize,
    },
    /// Rows already decoded into the shape of their leaf's path (2.0 leaves in lists).
    Shaped(ArrayRef),
}

/// A page cut into units of rows that decode independently (groups of mini-block chunks,
/// row ranges of full-zip and constant pages). Page-wide state (the dictionary, the FSST
/// table, a constant's levels) is decoded once, here.
pub struct PagePlan {
    kind: PlanKind,
    buffers: Vec<Bytes>,
    leaf_type: DataType,
    num_rows: u64,
    unit_rows: Vec<u64>,
    /// For a plan of some units (`select`): which buffer each unit reads from its own
    /// bytes, and those bytes, one per unit.
    parts: Option<(usize, Vec<Bytes>)>,
}

impl std::fmt::Debug for PagePlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PagePlan")
            .field("num_rows", &self.num_rows)
            .field("units", &self.unit_rows.len())
            .finish()
    }
}

/// Plan the decoding of a page whose values are read as `leaf_type`.
pub fn plan_page(
    layout: &PageLayout,
    buffers: Vec<Bytes>,
    num_rows: u64,
    leaf_type: &DataType,
    sizing: &UnitSizing,
) -> Result<PagePlan> {
    plan_layout(layout, buffers, None, num_rows, leaf_type, sizing)
}

/// The buffer of a layout that holds the bulk of its data, cut into units (mini-block
/// chunks, full-zip rows); a take reads only the parts of it that it needs. The other
/// buffers are small (chunk sizes, dictionary, row index) and read whole.
pub fn bulk_buffer(layout: &PageLayout) -> Option<usize> {
    match layout.layout.as_ref()? {
        PbLayout::MiniBlockLayout(_) => Some(1),
        PbLayout::FullZipLayout(_) => Some(0),
        PbLayout::ConstantLayout(_) | PbLayout::BlobLayout(_) => None,
    }
}

/// Plan a page without its bulk buffer (`bulk_buffer`, left empty in `buffers`), which
/// is `bulk_len` bytes long: the units can then be chosen, read (`PagePlan::unit_bytes`)
/// and decoded (`PagePlan::select`) without the rest of the page.
pub fn plan_page_without_bulk(
    layout: &PageLayout,
    buffers: Vec<Bytes>,
    bulk_len: u64,
    num_rows: u64,
    leaf_type: &DataType,
    sizing: &UnitSizing,
) -> Result<PagePlan> {
    let len = usize::try_from(bulk_len).map_err(|_| corrupt("page buffer too large"))?;
    plan_layout(layout, buffers, Some(len), num_rows, leaf_type, sizing)
}

fn plan_layout(
    layout: &PageLayout,
    buffers: Vec<Bytes>,
    bulk_len: Option<usize>,
    num_rows: u64,
    leaf_type: &DataType,
    sizing: &UnitSizing,
) -> Result<PagePlan> {
    let (kind, unit_rows) = match layout
        .layout
        .as_ref()
        .ok_or_else(|| corrupt("page without a layout"))?
    {
        PbLayout::MiniBlockLayout(m) => {
            let len = bulk_len.unwrap_or_else(|| buffers.get(1).map_or(0, |b| b.len()));
            let (p, units) = miniblock::plan(m, &buffers, len, num_rows, leaf_type, sizing)?;
            (PlanKind::MiniBlock(p), units)
        }
        PbLayout::FullZipLayout(f) => {
            let len = bulk_len.unwrap_or_else(|| buffers.first().map_or(0, |b| b.len()));
            let (p, units) = fullzip::plan(f, &buffers, len, num_rows, sizing)?;
            (PlanKind::FullZip(p), units)
        }
        PbLayout::ConstantLayout(c) => {
            let (p, units) = constant::plan(c, &buffers, num_rows, leaf_type, sizing)?;
            (PlanKind::Constant(p), units)
        }
        PbLayout::BlobLayout(_) => (PlanKind::Whole(layout.clone()), vec![num_rows]),
    };
    if unit_rows.iter().sum::<u64>() != num_rows {
        return Err(corrupt(format!(
            "page units cover {} rows, the page has {num_rows}",
            unit_rows.iter().sum::<u64>()
        )));
    }
    Ok(PagePlan {
        kind,
        buffers,
        leaf_type: leaf_type.clone(),
        num_rows,
        unit_rows,
        parts: None,
    })
}

impl PagePlan {
    /// About how many bytes of memory the plan holds (the buffers it keeps).
    pub fn memory_size(&self) -> u64 {
        let parts = self
            .parts
            .as_ref()
            .map_or(0, |(_, p)| p.iter().map(|b| b.len()).sum::<usize>());
        let kept: usize = self.buffers.iter().map(|b| b.len()).sum();
        (256 + self.unit_rows.len() * 8 + kept + parts) as u64
    }

    /// Plan a format 2.0 page of a leaf whose path from the top level has `depth` steps.
    pub fn array20(
        encoding: ArrayEncoding,
        buffers: Vec<Bytes>,
        num_rows: u64,
        leaf_type: &DataType,
        depth: usize,
    ) -> Self {
        PagePlan {
            kind: PlanKind::Array20 { encoding, depth },
            buffers,
            leaf_type: leaf_type.clone(),
            num_rows,
            unit_rows: vec![num_rows],
            parts: None,
        }
    }

    /// A page of rows already decoded into the shape of their leaf's path.
    pub fn shaped(array: ArrayRef, leaf_type: &DataType) -> Self {
        let rows = array.len() as u64;
        PagePlan {
            kind: PlanKind::Shaped(array),
            buffers: vec![],
            leaf_type: leaf_type.clone(),
            num_rows: rows,
            unit_rows: vec![rows],
            parts: None,
        }
    }

    /// The rows of a page planned with `shaped`.
    pub fn shaped_rows(&self) -> Option<&ArrayRef> {
        match &self.kind {
            PlanKind::Shaped(a) => Some(a),
            _ => None,
        }
    }

    /// Rows of each unit, in order.
    pub fn unit_rows(&self) -> &[u64] {
        &self.unit_rows
    }

    /// The byte range of its bulk buffer (`bulk_buffer`) that unit `unit` decodes; None
    /// when the layout has no bulk buffer.
    pub fn unit_bytes(&self, unit: usize) -> Option<std::ops::Range<u64>> {
        let r = match &self.kind {
            PlanKind::MiniBlock(p) => p.unit_bytes(unit),
            PlanKind::FullZip(p) => p.unit_bytes(unit),
            _ => return None,
        };
        Some(r.start as u64..r.end as u64)
    }

    /// The buffers unit `i` decodes from: a unit read on its own (`select`) has its bytes in
    /// place of the bulk buffer.
    fn unit_buffers(&self, i: usize) -> std::borrow::Cow<'_, [Bytes]> {
        match &self.parts {
            Some((index, parts)) => {
                let mut b = self.buffers.clone();
                b[*index] = parts[i].clone();
                std::borrow::Cow::Owned(b)
            }
            None => std::borrow::Cow::Borrowed(&self.buffers),
        }
    }

    /// Rows `rows` (increasing, relative to the unit) of unit `i`, decoding only their
    /// values where the layout allows it; None when it does not (decode the unit).
    pub fn decode_unit_rows(&self, i: usize, rows: &[usize]) -> Result<Option<DecodedPage>> {
        let PlanKind::MiniBlock(p) = &self.kind else {
            return Ok(None);
        };
        let buffers = self.unit_buffers(i);
        p.decode_selected(&buffers, i, rows, &self.leaf_type)
    }

    /// For pages of plain fixed-width values: the width of a value and where the values
    /// of unit `unit` start in the bulk buffer (a take can read single values).
    pub fn plain_values(&self, unit: usize) -> Option<(usize, usize)> {
        match &self.kind {
            PlanKind::MiniBlock(p) => p.plain_values(unit),
            PlanKind::FullZip(p) => p.plain_values(unit),
            _ => None,
        }
    }

    /// A plan of units `units` only (increasing), each decoding from its own bytes
    /// (`parts[i]`: the `unit_bytes` of `units[i]`, as read). Only mini-block and full-zip
    /// pages are read in parts.
    pub fn select(&self, units: &[usize], parts: Vec<Bytes>) -> Result<PagePlan> {
        let (kind, index) = match &self.kind {
            PlanKind::MiniBlock(p) => (PlanKind::MiniBlock(p.select(units)), 1),
            PlanKind::FullZip(p) => (PlanKind::FullZip(p.select(units)), 0),
            _ => {
                return Err(corrupt(
                    "internal: only mini-block and full-zip pages are read in parts",
                ))
            }
        };
        if self.buffers.len() <= index || parts.len() != units.len() {
            return Err(corrupt("internal: a selection without its parts"));
        }
        let unit_rows: Vec<u64> = units.iter().map(|&u| self.unit_rows[u]).collect();
        Ok(PagePlan {
            kind,
            buffers: self.buffers.clone(),
            leaf_type: self.leaf_type.clone(),
            num_rows: unit_rows.iter().sum(),
            unit_rows,
            parts: Some((index, parts)),
        })
    }

    pub fn num_rows(&self) -> u64 {
        self.num_rows
    }

    /// The Arrow type of the leaf's values.
    pub fn leaf_type(&self) -> &DataType {
        &self.leaf_type
    }

    /// Decode unit `i`: its levels and values.
    pub fn decode_unit(&self, i: usize) -> Result<DecodedPage> {
        let rows = *self
            .unit_rows
            .get(i)
            .ok_or_else(|| corrupt(format!("page has no unit {i}")))?;
        let buffers = self.unit_buffers(i);
        match &self.kind {
            PlanKind::MiniBlock(p) => p.decode(&buffers, i, rows, &self.leaf_type),
            PlanKind::FullZip(p) => p.decode(&buffers, i, rows, &self.leaf_type),
            PlanKind::Constant(p) => p.decode(i, rows, &self.leaf_type),
            PlanKind::Whole(layout) => match layout.layout.as_ref() {
                Some(PbLayout::BlobLayout(b)) => {
                    blob::decode(b, &self.buffers, rows, &self.leaf_type)
                }
                _ => Err(corrupt("internal: unexpected whole-page layout")),
            },
            PlanKind::Shaped(_) => Err(corrupt("internal: shaped rows have no levels")),
            PlanKind::Array20 { encoding, depth } => Ok(DecodedPage {
                num_rows: rows,
                layers: vec![Layer::AllValidItem; *depth],
                rep: None,
                def: None,
                // The array carries its own validity; with all-valid layers it is kept.
                values: PageValues::Array(crate::encoding::array20::decode(
                    encoding,
                    &self.buffers,
                    rows as usize,
                    &self.leaf_type,
                )?),
            }),
        }
    }
}

/// Decode a whole page at once.
pub fn decode_page(
    layout: &PageLayout,
    buffers: &[Bytes],
    num_rows: u64,
    leaf_type: &DataType,
) -> Result<DecodedPage> {
    let plan = plan_page(
        layout,
        buffers.to_vec(),
        num_rows,
        leaf_type,
        &UnitSizing::whole(),
    )?;
    if plan.unit_rows.len() != 1 {
        return Err(corrupt("internal: a whole-page plan has several units"));
    }
    plan.decode_unit(0)
}

impl PageValues {
    pub fn len(&self) -> usize {
        match self {
            PageValues::Built(b) => b.len(),
            PageValues::Array(a) => a.len(),
            PageValues::Dictionary { indices, .. } => indices.len,
            PageValues::AllNull(n) => *n,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The leaf array: the values as `data_type` with `nulls` applied.
    pub fn into_array(self, data_type: &DataType, nulls: Option<NullBuffer>) -> Result<ArrayRef> {
        match self {
            PageValues::Built(b) => b.finish(data_type, nulls),
            PageValues::Array(a) => super::values::with_nulls(a, nulls),
            PageValues::AllNull(n) => Ok(arrow_array::new_null_array(data_type, n)),
            PageValues::Dictionary {
                indices,
                dictionary,
            } => dictionary_values(indices, dictionary, data_type, nulls, None),
        }
    }

    /// Values `range` only, as an array (dictionary entries are looked up for those
    /// alone: a take of one row from a chunk decodes one row's values).
    fn range_into_array(
        self,
        data_type: &DataType,
        range: std::ops::Range<usize>,
    ) -> Result<ArrayRef> {
        match self {
            PageValues::Dictionary {
                indices,
                dictionary,
            } => dictionary_values(indices, dictionary, data_type, None, Some(range)),
            other => {
                let all = other.into_array(data_type, None)?;
                if range.end > all.len() {
                    return Err(corrupt(format!(
                        "{} values for value slots up to {}",
                        all.len(),
                        range.end
                    )));
                }
                Ok(all.slice(range.start, range.len()))
            }
        }
    }
}

impl DecodedPage {
    /// Rows `rows` of a page with lists only: the levels from the first of them up to
    /// the row after the last, with their values.
    pub fn keep_rows(
        self,
        rows: std::ops::Range<usize>,
        leaf_type: &DataType,
    ) -> Result<DecodedPage> {
        let max_rep = self.layers.iter().filter(|l| l.is_list()).count() as u16;
        let Some(rep) = &self.rep else {
            return Err(corrupt("internal: rows kept of a page without lists"));
        };
        let mut starts = rep
            .iter()
            .enumerate()
            .filter(|(_, &r)| r == max_rep)
            .map(|(i, _)| i);
        let first = starts
            .nth(rows.start)
            .ok_or_else(|| corrupt(format!("row {} is not in its unit", rows.start)))?;
        let end = match rows.len() {
            0 => first,
            n => starts.nth(n - 1).unwrap_or(rep.len()),
        };
        self.keep_levels(first..end, rows.len() as u64, leaf_type)
    }

    /// Levels `levels` of the page only (with their values): the page's rows that start
    /// in that range, which must hold `num_rows` whole rows.
    pub fn keep_levels(
        self,
        levels: std::ops::Range<usize>,
        num_rows: u64,
        leaf_type: &DataType,
    ) -> Result<DecodedPage> {
        let (Some(rep), max_rep) = (
            &self.rep,
            self.layers.iter().filter(|l| l.is_list()).count() as u16,
        ) else {
            return Err(corrupt("internal: levels kept of a page without lists"));
        };
        if levels.end > rep.len() || levels.start > levels.end {
            return Err(corrupt(format!(
                "levels {levels:?} of a page of {}",
                rep.len()
            )));
        }
        let starts = rep[levels.clone()]
            .iter()
            .filter(|&&r| r == max_rep)
            .count() as u64;
        if starts != num_rows || (levels.start < levels.end && rep[levels.start] != max_rep) {
            return Err(corrupt(format!(
                "a run of chunks should hold {num_rows} whole rows, its levels start {starts}"
            )));
        }
        // A level has a value slot unless it is a null or empty list above the values.
        let visible = max_visible_def(&self.layers);
        let slots = |r: std::ops::Range<usize>| match &self.def {
            Some(def) => def[r].iter().filter(|&&d| d <= visible).count(),
            None => r.len(),
        };
        let first = slots(0..levels.start);
        let count = slots(levels.clone());
        let values = self
            .values
            .range_into_array(leaf_type, first..first + count)?;
        Ok(DecodedPage {
            num_rows,
            layers: self.layers,
            rep: Some(rep.slice(levels.start, levels.len())),
            def: self.def.map(|d| d.slice(levels.start, levels.len())),
            values: PageValues::Array(values),
        })
    }
}

/// Look dictionary indices up: a dictionary array when the column is dictionary-typed,
/// the plain values otherwise.
fn dictionary_values(
    indices: FixedBuilder,
    dictionary: ArrayRef,
    data_type: &DataType,
    nulls: Option<NullBuffer>,
    range: Option<std::ops::Range<usize>>,
) -> Result<ArrayRef> {
    let index_type = match indices.bits {
        8 => DataType::UInt8,
        16 => DataType::UInt16,
        32 => DataType::UInt32,
        64 => DataType::UInt64,
        b => return Err(corrupt(format!("{b}-bit dictionary indices"))),
    };
    let raw = ValuesBuilder::Fixed(indices).finish(&index_type, None)?;
    let raw = match range {
        Some(r) if r.end > raw.len() => {
            return Err(corrupt(format!(
                "{} values for value slots up to {}",
                raw.len(),
                r.end
            )))
        }
        Some(r) => raw.slice(r.start, r.len()),
        None => raw,
    };
    let n = raw.len();
    let idx = arrow_cast::cast(&raw, &DataType::UInt32)?;
    let idx = idx
        .as_any()
        .downcast_ref::<UInt32Array>()
        .ok_or_else(|| corrupt("dictionary indices"))?;
    let size = dictionary.len() as u32;
    // Null slots hold placeholders; point them at entry 0 so the lookup stays in bounds.
    let mut keys: Vec<u32> = idx.values().to_vec();
    for (i, k) in keys.iter_mut().enumerate() {
        let is_null = nulls.as_ref().is_some_and(|m| m.is_null(i));
        if is_null {
            *k = 0;
        } else if *k >= size {
            return Err(corrupt(format!(
                "dictionary index {k} out of range for {size} entries"
            )));
        }
    }
    let keys = UInt32Array::new(keys.into(), nulls.clone());
    match data_type {
        DataType::Dictionary(key_type, _) => {
            let keys = arrow_cast::cast(&keys, key_type)?;
            let data = arrow_data::ArrayDataBuilder::new(data_type.clone())
                .len(n)
                .add_buffer(keys.to_data().buffers()[0].clone())
                .nulls(keys.nulls().cloned())
                .add_child_data(dictionary.to_data())
                .build()?;
            Ok(arrow_array::make_array(data))
        }
        _ => Ok(arrow_select::take::take(&dictionary, &keys, None)?),
    }
}

/// The bit width of the values a codec produces (for dictionary indices).
pub fn codec_value_bits(c: &Codec) -> Option<u64> {
    match c {
        Codec::Flat { bits }
        | Codec::InlineBitpacking { bits }
        | Codec::Rle { bits }
        | Codec::ByteStreamSplit { bits } => Some(*bits),
        Codec::OutOfLineBitpacking { bits, .. } => Some(*bits),
        Codec::General { inner, .. } => codec_value_bits(inner),
        _ => None,
    }
}

/// A level builder: u16 levels.
pub fn level_builder(capacity: usize) -> ValuesBuilder {
    ValuesBuilder::Fixed(FixedBuilder::new(16, capacity))
}

pub fn finish_levels(b: ValuesBuilder) -> ScalarBuffer<u16> {
    match b {
        ValuesBuilder::Fixed(f) => {
            let len = f.len;
            ScalarBuffer::new(f.data.into(), 0, len)
        }
        _ => unreachable!("level builders are fixed-width"),
    }
}
