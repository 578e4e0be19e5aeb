//! BLOOMFILTER indices: the column's live rows cut into zones of `number_of_items` rows,
//! and per zone a split-block Bloom filter of its values (`bloom_filter_data`) and
//! whether it holds NULL, in `bloomfilter.lance`; plus the exact set of NULL rows, kept as
//! the global buffer the schema metadata `null_bitmap` names.
//!
//! The filter of a zone is blocks of eight little-endian u32 words. A value is hashed with
//! XXH64 (seed 0) over its bytes (integers and floats little-endian at their width, the
//! stored integer of dates and times, the bytes of strings and binaries); the high half of
//! the hash picks a block, and eight bits of the low half, one per word, are set or
//! tested. Equality and IN rule out the zones whose filters lack every value; the rows of
//! the others are candidates the filter is run on again.
use std::borrow::Cow;
use std::ops::Bound as Edge;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{Array, ArrayRef, BinaryArray, BooleanArray, RecordBatch, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use twox_hash::XxHash64;

use super::bitmap::{id_set_in_buffer, write_id_set};
use futures::future::BoxFuture;
use serde_json::Value;

use super::kind::{BuildParams, IndexFileData, ScalarIndexKind};
use super::selection::{Found, IdSet};
use super::zonemap::NULL_BITMAP_KEY;
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::expr::ranges::{compare, value_ranges};
use crate::expr::Expr;
use crate::table::index_segments::IndexSegment;

pub const FILE: &str = "bloomfilter.lance";
pub const DEFAULT_ITEMS: u64 = 8192;
pub const DEFAULT_PROBABILITY: f64 = 0.00057;
const ITEMS_KEY: &str = "bloomfilter_item";
const PROBABILITY_KEY: &str = "bloomfilter_probability";

const SALT: [u32; 8] = [
    0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31,
];

/// The bytes each value of an array is hashed over (prepared once per array).
enum ValueBytes<'a> {
    /// Fixed-width values: the array's value buffer, its first value's byte offset and
    /// the width.
    Fixed(arrow_buffer::Buffer, usize, usize),
    Strings(&'a arrow_array::StringArray),
    LargeStrings(&'a arrow_array::LargeStringArray),
    Binaries(&'a BinaryArray),
    LargeBinaries(&'a arrow_array::LargeBinaryArray),
}

impl<'a> ValueBytes<'a> {
    /// None for types the index does not take.
    fn of(values: &'a ArrayRef) -> Option<Self> {
        Some(match values.data_type() {
            DataType::Utf8 => ValueBytes::Strings(values.as_string::<i32>()),
            DataType::LargeUtf8 => ValueBytes::LargeStrings(values.as_string::<i64>()),
            DataType::Binary => ValueBytes::Binaries(values.as_binary::<i32>()),
            DataType::LargeBinary => ValueBytes::LargeBinaries(values.as_binary::<i64>()),
            dt if supports(dt) => {
                let width = dt.primitive_width()?;
                let data = values.to_data();
                let buffer = data.buffers().first()?.clone();
                if buffer.len() < (data.offset() + values.len()) * width {
                    return None;
                }
                ValueBytes::Fixed(buffer, data.offset() * width, width)
            }
            _ => return None,
        })
    }

    /// Value `i`'s bytes (integers and floats little-endian).
    fn get(&self, i: usize) -> Cow<'_, [u8]> {
        match self {
            ValueBytes::Fixed(buffer, start, width) => {
                let at = start + i * width;
                let v = &buffer.as_slice()[at..at + width];
                if cfg!(target_endian = "little") {
                    Cow::Borrowed(v)
                } else {
                    Cow::Owned(v.iter().rev().copied().collect())
                }
            }
            ValueBytes::Strings(a) => Cow::Borrowed(a.value(i).as_bytes()),
            ValueBytes::LargeStrings(a) => Cow::Borrowed(a.value(i).as_bytes()),
            ValueBytes::Binaries(a) => Cow::Borrowed(a.value(i)),
            ValueBytes::LargeBinaries(a) => Cow::Borrowed(a.value(i)),
        }
    }
}

/// Whether the index takes values of this type.
pub fn supports(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::UInt64
            | DataType::Float32
            | DataType::Float64
            | DataType::Date32
            | DataType::Date64
            | DataType::Time32(_)
            | DataType::Time64(_)
            | DataType::Timestamp(..)
    )
}

/// Where value hash `h` lives in a filter of `blocks` blocks: the block and its mask.
fn probe(h: u64, blocks: usize) -> (usize, [u32; 8]) {
    let block = (((h >> 32) * blocks as u64) >> 32) as usize;
    let x = h as u32;
    (block, SALT.map(|salt| 1u32 << (x.wrapping_mul(salt) >> 27)))
}

fn word(filter: &[u8], block: usize, j: usize) -> u32 {
    let at = block * 32 + j * 4;
    u32::from_le_bytes(filter[at..at + 4].try_into().expect("4 bytes"))
}

fn may_hold(filter: &[u8], bytes: &[u8]) -> bool {
    let blocks = filter.len() / 32;
    if blocks == 0 {
        return true;
    }
    let (block, mask) = probe(XxHash64::oneshot(0, bytes), blocks);
    (0..8).all(|j| word(filter, block, j) & mask[j] == mask[j])
}

fn insert(filter: &mut [u8], bytes: &[u8]) {
    let (block, mask) = probe(XxHash64::oneshot(0, bytes), filter.len() / 32);
    for (j, m) in mask.iter().enumerate() {
        let at = block * 32 + j * 4;
        let w = word(filter, block, j) | m;
        filter[at..at + 4].copy_from_slice(&w.to_le_bytes());
    }
}

/// The chance of a false match for `items` distinct values in a filter of 2^`log_bytes`
/// bytes (Putze et al.'s estimate for split-block filters).
fn false_positive_rate(items: u64, log_bytes: u32) -> f64 {
    if items == 0 {
        return 0.0;
    }
    let bits = 2f64.powi(log_bytes as i32) * 8.0;
    let items = items as f64;
    if items / bits > 2.0 {
        return 1.0;
    }
    let lambda = 256.0 / (bits / items);
    // ln(i!) for i up to 749.
    let mut ln_factorial = vec![0.0f64; 750];
    for i in 1..750 {
        ln_factorial[i] = ln_factorial[i - 1] + (i as f64).ln();
    }
    let mut sum = 0.0;
    for i in (1..750).rev() {
        let miss = 1.0 - (31.0f64 / 32.0).powi(i as i32);
        sum += (i as f64 * lambda.ln() - lambda - ln_factorial[i] + 8.0 * miss.ln()).exp();
    }
    sum.min(1.0)
}

/// Bytes per zone filter for `items` values at false-match chance `probability`.
fn filter_bytes(items: u64, probability: f64) -> usize {
    let (mut lo, mut hi) = (0u32, 64u32);
    while hi > lo + 1 {
        let mid = (lo + hi) / 2;
        if false_positive_rate(items, mid) <= probability {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    1usize << hi.clamp(5, 27)
}

pub struct BloomFilter {
    shown: String,
    fragments: UInt64Array,
    starts: UInt64Array,
    lengths: UInt64Array,
    has_null: BooleanArray,
    filters: BinaryArray,
    nulls: Option<IdSet>,
    items: u64,
    probability: f64,
}

impl BloomFilter {
    pub async fn load(ds: &Dataset, segment: &IndexSegment) -> Result<Arc<BloomFilter>> {
        super::load_whole(ds, segment, FILE, |whole| async move {
            let shown = &whole.shown;
            let nulls = id_set_in_buffer(&whole.file, NULL_BITMAP_KEY, shown).await?;
            let (c, metadata) = (whole.columns(), whole.metadata());
            let b = BloomFilter {
                fragments: c.primitive::<UInt64Type>("fragment_id")?,
                starts: c.primitive::<UInt64Type>("zone_start")?,
                lengths: c.primitive::<UInt64Type>("zone_length")?,
                has_null: c.boolean("has_null")?,
                filters: c.binary("bloom_filter_data")?,
                nulls,
                items: metadata
                    .get(ITEMS_KEY)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(DEFAULT_ITEMS),
                probability: metadata
                    .get(PROBABILITY_KEY)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(DEFAULT_PROBABILITY),
                shown: shown.clone(),
            };
            if let Some(bad) =
                (0..b.filters.len()).find(|&z| !b.filters.value(z).len().is_multiple_of(32))
            {
                return Err(Error::corrupt(
                    shown,
                    format!("the filter of zone {bad} is not whole 32-byte blocks"),
                ));
            }
            Ok(b)
        })
        .await
    }

    pub fn num_zones(&self) -> usize {
        self.fragments.len()
    }

    pub fn items(&self) -> u64 {
        self.items
    }

    pub fn probability(&self) -> f64 {
        self.probability
    }

    /// The addresses of the rows for which `condition` (equality or IN on column `name`,
    /// of type `value_type`) may be TRUE, or exactly those for `IS NULL`; None when the
    /// filters cannot tell.
    pub fn search(
        &self,
        name: &str,
        value_type: &DataType,
        condition: &Expr,
        nulls: bool,
    ) -> Result<Option<Found>> {
        let schema = Arc::new(Schema::new(vec![Field::new(
            name,
            value_type.clone(),
            true,
        )]));
        let Ok(bound) = crate::expr::bind_filter(condition, &schema) else {
            return Ok(None);
        };
        let Some(ranges) = value_ranges(&bound, 0) else {
            return Ok(None);
        };
        if !ranges.strict {
            return Ok(None);
        }
        if ranges.exact && ranges.intervals.is_empty() && ranges.nulls {
            if let Some(rows) = &self.nulls {
                return Ok(Some(Found {
                    yes: rows.clone(),
                    nulls: IdSet::default(),
                    exact: true,
                }));
            }
        }
        if nulls {
            return Ok(None);
        }
        // Only single values can be probed (an interval around zero holds both zeros).
        let mut probes: Vec<ArrayRef> = Vec::new();
        for (lo, hi) in &ranges.intervals {
            let (Edge::Included(lo), Edge::Included(hi)) = (lo, hi) else {
                return Ok(None);
            };
            if lo.data_type() != value_type || hi.data_type() != value_type {
                return Ok(None);
            }
            probes.push(lo.clone());
            if compare(lo, hi).is_ne() {
                if !is_zero(lo) || !is_zero(hi) {
                    return Ok(None);
                }
                probes.push(hi.clone());
            }
        }
        let Some(probes) = probes
            .iter()
            .map(|p| ValueBytes::of(p).map(|b| b.get(0).into_owned()))
            .collect::<Option<Vec<Vec<u8>>>>()
        else {
            return Ok(None);
        };
        let mut found = Found::default();
        for z in 0..self.num_zones() {
            let filter = self.filters.value(z);
            let candidate = (ranges.nulls && self.has_null.value(z))
                || probes.iter().any(|p| may_hold(filter, p));
            if candidate {
                super::zones::add_rows(
                    &mut found.yes,
                    self.fragments.value(z),
                    self.starts.value(z),
                    self.lengths.value(z),
                    &self.shown,
                )?;
            }
        }
        Ok(Some(found))
    }
}

/// Whether a one-value float array holds a zero of either sign.
fn is_zero(a: &ArrayRef) -> bool {
    use arrow_array::types::{Float32Type, Float64Type};
    match a.data_type() {
        DataType::Float64 => a.as_primitive::<Float64Type>().value(0) == 0.0,
        DataType::Float32 => a.as_primitive::<Float32Type>().value(0) == 0.0,
        _ => false,
    }
}

/// The file of a BLOOMFILTER over `values` and their rows' `addresses` (ascending within
/// each fragment), and the set of NULL rows to keep as global buffer 1.
pub fn build(
    values: &ArrayRef,
    addresses: &UInt64Array,
    items: u64,
    probability: f64,
) -> Result<(RecordBatch, Vec<u8>)> {
    if !(0.0..1.0).contains(&probability) {
        return Err(Error::invalid(format!(
            "a BLOOMFILTER's probability must be in [0, 1), not {probability}"
        )));
    }
    let bytes = filter_bytes(items, probability);
    let hashed = ValueBytes::of(values).ok_or_else(|| {
        Error::invalid(format!(
            "a BLOOMFILTER index cannot hold {} values",
            values.data_type()
        ))
    })?;
    let (mut fragments, mut starts, mut lengths) = (Vec::new(), Vec::new(), Vec::new());
    let mut has_null = Vec::new();
    let mut filters = arrow_array::builder::BinaryBuilder::new();
    let mut null_rows = Vec::new();
    for zone in super::zones::cut(addresses, items)? {
        let mut filter = vec![0u8; bytes];
        let mut nulls = false;
        for i in zone.rows.clone() {
            if values.is_null(i) {
                nulls = true;
                null_rows.push(addresses.value(i));
            } else {
                insert(&mut filter, &hashed.get(i));
            }
        }
        filters.append_value(&filter);
        has_null.push(nulls);
        fragments.push(zone.fragment);
        starts.push(zone.start);
        lengths.push(zone.length);
    }
    let metadata: std::collections::HashMap<String, String> = [
        (ITEMS_KEY.to_string(), items.to_string()),
        (PROBABILITY_KEY.to_string(), probability.to_string()),
        (NULL_BITMAP_KEY.to_string(), "1".to_string()),
    ]
    .into_iter()
    .collect();
    let schema = Schema::new_with_metadata(
        vec![
            Field::new("fragment_id", DataType::UInt64, false),
            Field::new("zone_start", DataType::UInt64, false),
            Field::new("zone_length", DataType::UInt64, false),
            Field::new("has_null", DataType::Boolean, false),
            Field::new("bloom_filter_data", DataType::Binary, false),
        ],
        metadata,
    );
    let columns: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from(fragments)),
        Arc::new(UInt64Array::from(starts)),
        Arc::new(UInt64Array::from(lengths)),
        Arc::new(BooleanArray::from(has_null)),
        Arc::new(filters.finish()),
    ];
    let mut nulls = IdSet::default();
    nulls.extend(null_rows);
    Ok((
        RecordBatch::try_new(Arc::new(schema), columns)?,
        write_id_set(&nulls),
    ))
}

/// BLOOMFILTER, as the registry lists it (`super::registry`).
#[derive(Debug)]
pub struct BloomFilterKind;

impl ScalarIndexKind for BloomFilterKind {
    fn name(&self) -> &'static str {
        "BloomFilter"
    }

    fn user_names(&self) -> &'static [&'static str] {
        &["BLOOMFILTER"]
    }

    fn type_url(&self) -> &'static str {
        "/lance.index.pb.BloomFilterIndexDetails"
    }

    /// Zones are ranges of row addresses, whatever the table's row ids.
    fn holds_row_ids(&self, _index_version: i32) -> bool {
        false
    }

    fn keyed_type<'a>(
        &self,
        column: &str,
        data_type: &'a DataType,
    ) -> std::result::Result<&'a DataType, String> {
        match supports(data_type) {
            true => Ok(data_type),
            false => Err(format!(
                "a BLOOMFILTER index cannot be built on column '{column}' of type {data_type}"
            )),
        }
    }

    fn params_names(&self) -> (Option<&'static str>, bool) {
        (Some("number_of_items"), true)
    }

    fn default_params(&self) -> BuildParams {
        BuildParams {
            page_rows: DEFAULT_ITEMS,
            probability: DEFAULT_PROBABILITY,
        }
    }

    fn params_of<'a>(
        &'a self,
        ds: &'a Dataset,
        segment: &'a IndexSegment,
    ) -> BoxFuture<'a, Result<BuildParams>> {
        Box::pin(async move {
            let b = BloomFilter::load(ds, segment).await?;
            Ok(BuildParams {
                page_rows: b.items(),
                probability: b.probability(),
            })
        })
    }

    fn build(
        &self,
        values: &ArrayRef,
        ids: &UInt64Array,
        params: &BuildParams,
    ) -> Result<Vec<IndexFileData>> {
        let (batch, nulls) = build(values, ids, params.page_rows, params.probability)?;
        Ok(vec![IndexFileData::with_buffer(FILE, batch, nulls)])
    }

    fn search<'a>(
        &'a self,
        ds: &'a Dataset,
        segment: &'a IndexSegment,
        column: &'a str,
        e: &'a Expr,
        nulls: bool,
    ) -> BoxFuture<'a, Result<Option<Found>>> {
        Box::pin(async move {
            let Some(value_type) = super::column_type(ds, column) else {
                return Ok(None);
            };
            BloomFilter::load(ds, segment)
                .await?
                .search(column, &value_type, e, nulls)
        })
    }

    fn statistics<'a>(
        &'a self,
        ds: &'a Dataset,
        segment: &'a IndexSegment,
    ) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            let bloom = BloomFilter::load(ds, segment).await?;
            Ok(serde_json::json!({
                "type": "BloomFilter",
                "num_blocks": bloom.num_zones(),
                "number_of_items": bloom.items(),
                "probability": bloom.probability(),
            }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_sizes_follow_the_estimate() {
        assert_eq!(filter_bytes(8192, 0.00057), 32768);
        assert_eq!(filter_bytes(64, 0.01), 128);
        assert_eq!(filter_bytes(5, 1e-7), 128);
        assert_eq!(filter_bytes(5, 0.5), 32);
        assert_eq!(XxHash64::oneshot(0, b""), 0xEF46DB3751D8E999);
    }

    #[test]
    fn inserted_values_are_found() {
        let mut filter = vec![0u8; 1024];
        for i in 0..50u64 {
            insert(&mut filter, &i.to_le_bytes());
        }
        assert!((0..50u64).all(|i| may_hold(&filter, &i.to_le_bytes())));
        let false_matches = (1000..2000u64)
            .filter(|i| may_hold(&filter, &i.to_le_bytes()))
            .count();
        assert!(false_matches < 20, "{false_matches}");
    }
}
