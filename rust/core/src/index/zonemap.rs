//! ZONEMAP indices: each fragment's live rows cut into zones of `rows_per_zone` rows, and
//! per zone the smallest and largest value, the NULL and NaN counts and where the zone
//! lies (`fragment_id`, `zone_start`: offset of its first live row, `zone_length`: span
//! to its last, deleted rows included), in `zonemap.lance`; plus the exact set of rows
//! holding NULL, kept as the global buffer the schema metadata `null_bitmap` names.
//!
//! A condition on the column rules out the zones whose value range cannot meet it; the
//! rows of the others are candidates the filter is run on again. `IS NULL` is answered
//! exactly from the NULL rows. Zones are keyed by row address, stable row ids or not.
use std::ops::Bound as Edge;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};

use super::bitmap::{id_set_in_buffer, write_id_set};
use futures::future::BoxFuture;
use serde_json::Value;

use super::kind::{BuildParams, IndexFileData, ScalarIndexKind};
use super::selection::{Found, IdSet};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::expr::ranges::{compare, value_ranges, Interval};
use crate::expr::Expr;
use crate::table::index_segments::IndexSegment;

pub const FILE: &str = "zonemap.lance";
/// Live rows per zone when the user names none, as pylance.
pub const DEFAULT_ROWS_PER_ZONE: u64 = 8192;
/// The schema metadata naming the global buffer of the NULL rows.
pub const NULL_BITMAP_KEY: &str = "null_bitmap";
const ROWS_PER_ZONE_KEY: &str = "rows_per_zone";

pub struct ZoneMap {
    shown: String,
    mins: ArrayRef,
    maxs: ArrayRef,
    null_counts: UInt32Array,
    nan_counts: UInt32Array,
    fragments: UInt64Array,
    starts: UInt64Array,
    lengths: UInt64Array,
    /// The addresses of the NULL values; None in files written without them.
    nulls: Option<IdSet>,
    rows_per_zone: u64,
}

impl ZoneMap {
    pub async fn load(ds: &Dataset, segment: &IndexSegment) -> Result<Arc<ZoneMap>> {
        super::load_whole(ds, segment, FILE, |whole| async move {
            let shown = &whole.shown;
            let nulls = id_set_in_buffer(&whole.file, NULL_BITMAP_KEY, shown).await?;
            let rows_per_zone = whole
                .metadata()
                .get(ROWS_PER_ZONE_KEY)
                .and_then(|r| r.parse().ok())
                .unwrap_or(DEFAULT_ROWS_PER_ZONE);
            let c = whole.columns();
            let z = ZoneMap {
                mins: c.any("min")?,
                maxs: c.any("max")?,
                null_counts: c.primitive::<UInt32Type>("null_count")?,
                nan_counts: c.primitive::<UInt32Type>("nan_count")?,
                fragments: c.primitive::<UInt64Type>("fragment_id")?,
                starts: c.primitive::<UInt64Type>("zone_start")?,
                lengths: c.primitive::<UInt64Type>("zone_length")?,
                nulls,
                rows_per_zone,
                shown: shown.clone(),
            };
            if z.mins.data_type() != z.maxs.data_type() {
                return Err(Error::corrupt(shown, "'min' and 'max' differ in type"));
            }
            Ok(z)
        })
        .await
    }

    /// Each zone's smallest and largest value.
    pub fn bounds(&self) -> (&ArrayRef, &ArrayRef) {
        (&self.mins, &self.maxs)
    }

    pub fn num_zones(&self) -> usize {
        self.fragments.len()
    }

    pub fn rows_per_zone(&self) -> u64 {
        self.rows_per_zone
    }

    /// The addresses of the rows for which `condition` (on column `name`) may be TRUE,
    /// or exactly those for `IS NULL`; None when no zone can be ruled out (or `nulls`,
    /// the NULL rows, are wanted, which zones cannot tell).
    pub fn search(&self, name: &str, condition: &Expr, nulls: bool) -> Result<Option<Found>> {
        let value_type = self.mins.data_type().clone();
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
        let typed = ranges.intervals.iter().all(|(lo, hi)| {
            [lo, hi].into_iter().all(|e| match e {
                Edge::Included(v) | Edge::Excluded(v) => v.data_type() == &value_type,
                Edge::Unbounded => true,
            })
        });
        if !typed || !ranges.strict {
            return Ok(None);
        }
        if ranges.exact && ranges.intervals.is_empty() && ranges.nulls {
            // IS NULL, exactly (never NULL itself).
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
        let mut found = Found::default();
        for z in 0..self.num_zones() {
            let candidate = (ranges.nulls && self.null_counts.value(z) > 0)
                || self.nan_counts.value(z) > 0
                || ranges.intervals.iter().any(|i| self.meets(z, i));
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

    /// Whether zone `z`'s values can fall in `interval`.
    fn meets(&self, z: usize, (lo, hi): &Interval) -> bool {
        let (min, max) = (self.mins.slice(z, 1), self.maxs.slice(z, 1));
        if min.is_null(0) || max.is_null(0) {
            // No values, or (fixed-size binary, as pylance writes it) bounds not kept.
            return matches!(self.mins.data_type(), DataType::FixedSizeBinary(_))
                && self.null_counts.value(z) as u64 != self.lengths.value(z);
        }
        let above_lo = match lo {
            Edge::Unbounded => true,
            Edge::Included(v) => compare(&max, v).is_ge(),
            Edge::Excluded(v) => compare(&max, v).is_gt(),
        };
        let below_hi = match hi {
            Edge::Unbounded => true,
            Edge::Included(v) => compare(&min, v).is_le(),
            Edge::Excluded(v) => compare(&min, v).is_lt(),
        };
        above_lo && below_hi
    }
}

/// Whether value `i` of a float array is NaN.
fn nan_at(values: &ArrayRef, i: usize) -> bool {
    use arrow_array::types::{Float16Type, Float32Type, Float64Type};
    match values.data_type() {
        DataType::Float64 => values.as_primitive::<Float64Type>().value(i).is_nan(),
        DataType::Float32 => values.as_primitive::<Float32Type>().value(i).is_nan(),
        DataType::Float16 => values.as_primitive::<Float16Type>().value(i).is_nan(),
        _ => false,
    }
}

/// For integer and date columns, the rows of the smallest and largest non-NULL value
/// among `rows` (None inside when all are NULL), in a loop typed for the column: the
/// generic comparator costs a call per row and comparison. None for other types.
fn integer_extremes(
    values: &ArrayRef,
    rows: std::ops::Range<usize>,
) -> Option<Option<(usize, usize)>> {
    use arrow_array::types::*;
    use arrow_array::{ArrowPrimitiveType, PrimitiveArray};
    fn of<T: ArrowPrimitiveType>(
        a: &PrimitiveArray<T>,
        rows: std::ops::Range<usize>,
    ) -> Option<(usize, usize)>
    where
        T::Native: Ord,
    {
        let v = a.values();
        let mut found: Option<(usize, usize)> = None;
        for i in rows {
            if a.is_null(i) {
                continue;
            }
            found = Some(match found {
                None => (i, i),
                Some((lo, hi)) => (
                    if v[i] < v[lo] { i } else { lo },
                    if v[i] > v[hi] { i } else { hi },
                ),
            });
        }
        found
    }
    Some(match values.data_type() {
        DataType::Int8 => of(values.as_primitive::<Int8Type>(), rows),
        DataType::Int16 => of(values.as_primitive::<Int16Type>(), rows),
        DataType::Int32 => of(values.as_primitive::<Int32Type>(), rows),
        DataType::Int64 => of(values.as_primitive::<Int64Type>(), rows),
        DataType::UInt8 => of(values.as_primitive::<UInt8Type>(), rows),
        DataType::UInt16 => of(values.as_primitive::<UInt16Type>(), rows),
        DataType::UInt32 => of(values.as_primitive::<UInt32Type>(), rows),
        DataType::UInt64 => of(values.as_primitive::<UInt64Type>(), rows),
        DataType::Date32 => of(values.as_primitive::<Date32Type>(), rows),
        DataType::Date64 => of(values.as_primitive::<Date64Type>(), rows),
        _ => return None,
    })
}

/// The file of a ZONEMAP over `values` and their rows' `addresses` (ascending within
/// each fragment), and the set of NULL rows to keep as global buffer 1.
pub fn build(
    values: &ArrayRef,
    addresses: &UInt64Array,
    rows_per_zone: u64,
) -> Result<(RecordBatch, Vec<u8>)> {
    let floats = values.data_type().is_floating();
    // Fixed-size binaries get no bounds, as pylance writes them.
    let bounded = !matches!(values.data_type(), DataType::FixedSizeBinary(_));
    let order = arrow_ord::ord::make_comparator(
        values.as_ref(),
        values.as_ref(),
        arrow_schema::SortOptions::default(),
    )?;
    let (mut mins, mut maxs) = (Vec::<Option<u32>>::new(), Vec::<Option<u32>>::new());
    let (mut null_counts, mut nan_counts) = (Vec::new(), Vec::new());
    let (mut fragments, mut starts, mut lengths) = (Vec::new(), Vec::new(), Vec::new());
    let mut null_rows = Vec::new();
    for zone in super::zones::cut(addresses, rows_per_zone)? {
        let (mut min, mut max, mut nan) = (None::<usize>, None::<usize>, None::<usize>);
        let (mut n_null, mut n_nan) = (0u32, 0u32);
        let typed = match bounded {
            true => integer_extremes(values, zone.rows.clone()),
            false => None,
        };
        if let Some(extremes) = typed {
            (min, max) = (extremes.map(|e| e.0), extremes.map(|e| e.1));
        }
        // With the bounds found by the typed loop, only NULLs are left to count.
        let rows = match (typed.is_some(), values.null_count()) {
            (true, 0) => 0..0,
            _ => zone.rows.clone(),
        };
        for i in rows {
            if values.is_null(i) {
                n_null += 1;
                null_rows.push(addresses.value(i));
            } else if typed.is_some() {
                continue;
            } else if floats && nan_at(values, i) {
                n_nan += 1;
                nan.get_or_insert(i);
            } else if bounded {
                if min.is_none_or(|m| order(i, m).is_lt()) {
                    min = Some(i);
                }
                if max.is_none_or(|m| order(i, m).is_gt()) {
                    max = Some(i);
                }
            }
        }
        mins.push(min.map(|i| i as u32));
        // A zone holding NaN has NaN as its largest value.
        maxs.push(nan.or(max).map(|i| i as u32));
        null_counts.push(n_null);
        nan_counts.push(n_nan);
        fragments.push(zone.fragment);
        starts.push(zone.start);
        lengths.push(zone.length);
    }
    let take =
        |which: Vec<Option<u32>>| arrow_select::take::take(values, &UInt32Array::from(which), None);
    let columns: Vec<ArrayRef> = vec![
        take(mins)?,
        take(maxs)?,
        Arc::new(UInt32Array::from(null_counts)),
        Arc::new(UInt32Array::from(nan_counts)),
        Arc::new(UInt64Array::from(fragments)),
        Arc::new(UInt64Array::from(starts)),
        Arc::new(UInt64Array::from(lengths)),
    ];
    let metadata: std::collections::HashMap<String, String> = [
        (ROWS_PER_ZONE_KEY.to_string(), rows_per_zone.to_string()),
        (NULL_BITMAP_KEY.to_string(), "1".to_string()),
    ]
    .into_iter()
    .collect();
    let schema = Schema::new_with_metadata(
        vec![
            Field::new("min", values.data_type().clone(), true),
            Field::new("max", values.data_type().clone(), true),
            Field::new("null_count", DataType::UInt32, false),
            Field::new("nan_count", DataType::UInt32, false),
            Field::new("fragment_id", DataType::UInt64, false),
            Field::new("zone_start", DataType::UInt64, false),
            Field::new("zone_length", DataType::UInt64, false),
        ],
        metadata,
    );
    let mut nulls = IdSet::default();
    nulls.extend(null_rows);
    Ok((
        RecordBatch::try_new(Arc::new(schema), columns)?,
        write_id_set(&nulls),
    ))
}

/// Whether pylance embeds zone seeds in new data files for an index on this type (its
/// default for `use_seeds`).
pub fn seeds_by_default(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::Decimal128(..)
            | DataType::Decimal256(..)
    ) || matches!(dt, DataType::FixedSizeBinary(n) if *n > 8)
}

/// ZONEMAP, as the registry lists it (`super::registry`).
#[derive(Debug)]
pub struct ZoneMapKind;

impl ScalarIndexKind for ZoneMapKind {
    fn name(&self) -> &'static str {
        "ZoneMap"
    }

    fn user_names(&self) -> &'static [&'static str] {
        &["ZONEMAP"]
    }

    fn type_url(&self) -> &'static str {
        "/lance.table.ZoneMapIndexDetails"
    }

    /// Zones are ranges of row addresses, whatever the table's row ids.
    fn holds_row_ids(&self, _index_version: i32) -> bool {
        false
    }

    fn params_names(&self) -> (Option<&'static str>, bool) {
        (Some("rows_per_zone"), false)
    }

    fn default_params(&self) -> BuildParams {
        BuildParams {
            page_rows: DEFAULT_ROWS_PER_ZONE,
            probability: 0.0,
        }
    }

    fn params_of<'a>(
        &'a self,
        ds: &'a Dataset,
        segment: &'a IndexSegment,
    ) -> BoxFuture<'a, Result<BuildParams>> {
        Box::pin(async move {
            Ok(BuildParams {
                page_rows: ZoneMap::load(ds, segment).await?.rows_per_zone(),
                ..self.default_params()
            })
        })
    }

    fn details(&self, data_type: &DataType, params: &BuildParams) -> Vec<u8> {
        use prost::Message;
        crate::proto::table::ZoneMapIndexDetails {
            rows_per_zone: Some(params.page_rows),
            use_seeds: Some(seeds_by_default(data_type)),
            has_null_bitmap: Some(true),
        }
        .encode_to_vec()
    }

    fn build(
        &self,
        values: &ArrayRef,
        ids: &UInt64Array,
        params: &BuildParams,
    ) -> Result<Vec<IndexFileData>> {
        let (batch, nulls) = build(values, ids, params.page_rows)?;
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
        Box::pin(async move { ZoneMap::load(ds, segment).await?.search(column, e, nulls) })
    }

    fn value_bounds<'a>(
        &'a self,
        ds: &'a Dataset,
        segment: &'a IndexSegment,
    ) -> BoxFuture<'a, Result<Option<(ArrayRef, ArrayRef)>>> {
        Box::pin(async move {
            let zones = ZoneMap::load(ds, segment).await?;
            let (mins, maxs) = zones.bounds();
            Ok(Some((mins.clone(), maxs.clone())))
        })
    }

    fn statistics<'a>(
        &'a self,
        ds: &'a Dataset,
        segment: &'a IndexSegment,
    ) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            let zones = ZoneMap::load(ds, segment).await?;
            Ok(serde_json::json!({
                "num_zones": zones.num_zones(),
                "rows_per_zone": zones.rows_per_zone(),
            }))
        })
    }
}
