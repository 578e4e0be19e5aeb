//! What pylance reports about an index (`index_statistics`, `describe_indices`): the rows
//! its segments cover in this version, and per segment what its files say (a BTREE's
//! value range and pages, a BITMAP's number of keys).
use std::sync::Arc;

use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
use serde_json::{json, Map, Value};

use super::Kind;
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::table::index_segments::IndexSegment;

/// The live rows of the fragments `segment` covers in `ds`.
pub async fn rows_covered(ds: &Dataset, segment: &IndexSegment) -> Result<u64> {
    let mut rows = 0;
    for id in segment.live_fragments(ds.fragments()) {
        if let Some(f) = ds.fragment(id as u64) {
            rows += ds.fragment_rows(f).await?;
        }
    }
    Ok(rows)
}

/// pylance's statistics of index `name` (every segment of it), as JSON.
pub async fn index_statistics(ds: &Arc<Dataset>, name: &str) -> Result<Value> {
    let all = ds.index_segments()?;
    let segments: Vec<&IndexSegment> = all.iter().filter(|s| s.name == name).collect();
    let Some(first) = segments.first() else {
        return Err(Error::not_found(
            ds.uri(),
            format!("there is no index named '{name}'"),
        ));
    };
    let mut per_segment = Vec::with_capacity(segments.len());
    let mut rows_per_delta = Vec::with_capacity(segments.len());
    let mut covered = roaring::RoaringBitmap::new();
    for s in &segments {
        per_segment.push(segment_details(ds, s).await?);
        rows_per_delta.push(rows_covered(ds, s).await?);
        covered |= s.live_fragments(ds.fragments());
    }
    let mut indexed_rows = 0;
    let mut unindexed = (0u64, 0u64);
    for f in ds.fragments() {
        let rows = ds.fragment_rows(f).await?;
        match covered.contains(f.id as u32) {
            true => indexed_rows += rows,
            false => unindexed = (unindexed.0 + 1, unindexed.1 + rows),
        }
    }
    Ok(json!({
        "index_type": first.kind,
        "name": name,
        "num_indices": segments.len(),
        "num_segments": segments.len(),
        "indices": per_segment,
        "segments": per_segment,
        "num_indexed_fragments": covered.len(),
        "num_indexed_rows": indexed_rows,
        "num_unindexed_fragments": unindexed.0,
        "num_unindexed_rows": unindexed.1,
        "num_indexed_rows_per_delta": rows_per_delta,
        "updated_at_timestamp_ms": segments.iter().filter_map(|s| s.created_at_ms).max(),
    }))
}

/// What one segment's files say, as pylance shows it.
async fn segment_details(ds: &Dataset, segment: &IndexSegment) -> Result<Value> {
    Ok(match Kind::of(segment) {
        Some(Kind::BTree) => {
            let tree = super::btree::BTree::load(ds, segment).await?;
            let (mins, maxs) = tree.bounds();
            let n = mins.len();
            let first = (0..n).find(|&p| maxs.is_valid(p));
            let mut m = Map::new();
            m.insert(
                "min".into(),
                Value::String(first.map_or("NULL".into(), |p| shown(mins, p))),
            );
            m.insert(
                "max".into(),
                Value::String(if n == 0 {
                    "NULL".into()
                } else {
                    shown(maxs, n - 1)
                }),
            );
            m.insert("num_pages".into(), json!(n));
            Value::Object(m)
        }
        Some(Kind::Bitmap | Kind::LabelList) => {
            let bitmap = super::bitmap::Bitmap::load(ds, segment).await?;
            json!({ "num_bitmaps": bitmap.len() })
        }
        Some(Kind::ZoneMap) => {
            let zones = super::zonemap::ZoneMap::load(ds, segment).await?;
            json!({ "num_zones": zones.num_zones(), "rows_per_zone": zones.rows_per_zone() })
        }
        Some(Kind::BloomFilter) => {
            let bloom = super::bloom::BloomFilter::load(ds, segment).await?;
            json!({
                "type": "BloomFilter",
                "num_blocks": bloom.num_zones(),
                "number_of_items": bloom.items(),
                "probability": bloom.probability(),
            })
        }
        Some(Kind::NGram) => {
            let ngram = super::ngram::NGram::load(ds, segment).await?;
            json!({ "num_ngrams": ngram.len() })
        }
        None => json!({}),
    })
}

/// A value as pylance prints index statistics (DataFusion's scalar display).
fn shown(a: &ArrayRef, i: usize) -> String {
    use arrow_array::cast::AsArray;
    if a.is_null(i) {
        return "NULL".into();
    }
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    match a.data_type() {
        DataType::Timestamp(..) => arrow_cast::cast(&a.slice(i, 1), &DataType::Int64)
            .map(|c| {
                c.as_primitive::<arrow_array::types::Int64Type>()
                    .value(0)
                    .to_string()
            })
            .unwrap_or_default(),
        DataType::Decimal128(p, s) => format!(
            "Some({}),{p},{s}",
            a.as_primitive::<arrow_array::types::Decimal128Type>()
                .value(i)
        ),
        DataType::Float64 => a
            .as_primitive::<arrow_array::types::Float64Type>()
            .value(i)
            .to_string(),
        DataType::Float32 => a
            .as_primitive::<arrow_array::types::Float32Type>()
            .value(i)
            .to_string(),
        DataType::Float16 => a
            .as_primitive::<arrow_array::types::Float16Type>()
            .value(i)
            .to_string(),
        DataType::Binary => hex(a.as_binary::<i32>().value(i)),
        DataType::LargeBinary => hex(a.as_binary::<i64>().value(i)),
        DataType::FixedSizeBinary(_) => hex(a.as_fixed_size_binary().value(i)),
        _ => arrow_cast::display::ArrayFormatter::try_new(a.as_ref(), &Default::default())
            .map(|f| f.value(i).to_string())
            .unwrap_or_default(),
    }
}
