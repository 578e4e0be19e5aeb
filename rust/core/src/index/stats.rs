//! What pylance reports about an index (`index_statistics`, `describe_indices`): the rows
//! its segments cover in this version, and per segment what its files say (a BTREE's
//! value range and pages, a BITMAP's number of keys).
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{json, Value};

use super::registry::kind_of;
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

/// pylance's statistics of index `name` (every segment of it), as JSON; what each segment's
/// files say comes from `describe` (for kinds this layer does not know: vector kinds are
/// above it), else from its scalar kind (`segment_details`).
pub async fn index_statistics<F>(ds: &Arc<Dataset>, name: &str, describe: F) -> Result<Value>
where
    F: for<'a> Fn(&'a Dataset, &'a IndexSegment) -> BoxFuture<'a, Result<Option<Value>>>,
{
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
        let details = match describe(ds, s).await? {
            Some(d) => d,
            None => segment_details(ds, s).await?,
        };
        per_segment.push(details);
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
    Ok(match kind_of(segment) {
        Some(kind) => kind.statistics(ds, segment).await?,
        None => json!({}),
    })
}
