//! What pylance's statistics show of an index, whichever its family: the coverage every
//! index shares (`crate::index::stats`), and per segment what its files say (a vector
//! segment's partitions, centroids and sub-index; a scalar kind's own).
use std::sync::Arc;

use super::ivf::Ivf;
use super::registry::vector_kind_of;
use crate::dataset::Dataset;
use crate::error::Result;
use crate::table::index_segments::IndexSegment;

/// pylance's statistics of index `name` (every segment of it, scalar or vector), as JSON.
pub async fn index_statistics(ds: &Arc<Dataset>, name: &str) -> Result<serde_json::Value> {
    crate::index::stats::index_statistics(ds, name, |ds, s| Box::pin(vector_statistics(ds, s)))
        .await
}

/// What a vector segment's files say, as pylance's statistics show it; None for a segment
/// of another kind.
async fn vector_statistics(
    ds: &Dataset,
    segment: &IndexSegment,
) -> Result<Option<serde_json::Value>> {
    if vector_kind_of(segment).is_none() {
        return Ok(None);
    }
    let ivf = Ivf::load(ds, segment).await?;
    Ok(Some(ivf.statistics(&segment.uuid)))
}
