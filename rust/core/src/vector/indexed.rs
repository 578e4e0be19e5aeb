//! A search through the column's IVF index segments, as pylance runs it:
//!
//! - each segment is searched for the k (times `refine_factor`) nearest rows it holds that
//!   are still live (and pass a pre-filter), by its own distances;
//! - fragments no segment covers are searched exhaustively;
//! - when there are such fragments, or a refine factor, the index's candidates are measured
//!   again exactly from the table's vectors, so that every distance returned is exact.
//!
//! Used when the index's metric is the one asked for (or none was asked for); a search by
//! another metric, `use_index=False` or a search of chosen fragments goes exhaustive.
use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Array, FixedSizeListArray};
use roaring::{RoaringBitmap, RoaringTreemap};

use super::distance::{self, Metric, Query};
use super::ivf::{Ivf, Probes};
use super::topk::{Neighbour, TopK};
use super::Nearest;
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::scan::Projection;
use crate::table::index_segments::IndexSegment;
use crate::table::row_index::RowIdIndex;

/// The column's IVF segments this search can use (manifest entry and model), with the
/// metric they were built for.
pub async fn usable(
    ds: &Dataset,
    nearest: &Nearest,
) -> Result<Option<(Vec<(IndexSegment, Arc<Ivf>)>, Metric)>> {
    if !nearest.use_index {
        return Ok(None);
    }
    let segments = ds.index_segments()?;
    let mut found = Vec::new();
    for s in segments.iter() {
        let on_column = s.fields.len() == 1
            && ds.schema.path_of(s.fields[0]).as_deref() == Some(nearest.column.as_str());
        if on_column && super::registry::vector_kind_of(s).is_some() {
            let ivf = Ivf::load(ds, s).await.map_err(|e| {
                e.context(&format!(
                    "vector index '{}' on column '{}'",
                    s.name, nearest.column
                ))
            })?;
            found.push((s.clone(), ivf));
        }
    }
    let Some(metric) = found.first().map(|(_, i)| i.metric) else {
        return Ok(None);
    };
    if found.iter().any(|(_, i)| i.metric != metric) || nearest.metric.is_some_and(|m| m != metric)
    {
        return Ok(None);
    }
    Ok(Some((found, metric)))
}

/// Which row ids of the index are rows of this version (and pass the pre-filter), and
/// where they are.
struct Live {
    /// Stable row ids: where each is.
    ids: Option<Arc<RowIdIndex>>,
    /// Per fragment: its rows and deleted rows.
    fragments: HashMap<u64, (u64, Option<Arc<RoaringBitmap>>)>,
    /// With a pre-filter: the row ids that pass it.
    passing: Option<RoaringTreemap>,
    /// The fragments the index covers: a row it names that now lives elsewhere (moved by a
    /// compaction that kept stable row ids) is found by the exhaustive search instead.
    covered: RoaringBitmap,
}

impl Live {
    async fn of(
        ds: &Arc<Dataset>,
        passing: Option<RoaringTreemap>,
        covered: RoaringBitmap,
    ) -> Result<Live> {
        let ids = match ds.has_stable_row_ids() {
            true => Some(ds.row_id_index().await?),
            false => None,
        };
        let mut fragments = HashMap::new();
        for f in ds.fragments() {
            fragments.insert(f.id, (ds.physical_rows(f).await?, ds.deletions(f).await?));
        }
        Ok(Live {
            ids,
            fragments,
            passing,
            covered,
        })
    }

    /// The address of the live row with id `id`.
    fn address(&self, id: u64) -> Option<u64> {
        if self.passing.as_ref().is_some_and(|p| !p.contains(id)) {
            return None;
        }
        let address = match &self.ids {
            Some(index) => index.address(id)?,
            None => id,
        };
        if !self.covered.contains((address >> 32) as u32) {
            return None;
        }
        let (rows, deleted) = self.fragments.get(&(address >> 32))?;
        let offset = address & 0xFFFF_FFFF;
        let gone = offset >= *rows || deleted.as_ref().is_some_and(|d| d.contains(offset as u32));
        (!gone).then_some(address)
    }
}

/// The k nearest rows for each query (among the rows whose ids are in `passing`, when a
/// pre-filter gives it), through `segments` (of one index) and an exhaustive search of
/// the fragments they do not cover (`flat`, given the fragments to search).
pub async fn search<F, Fut>(
    ds: &Arc<Dataset>,
    passing: Option<RoaringTreemap>,
    nearest: &Nearest,
    segments: &[(IndexSegment, Arc<Ivf>)],
    queries: &[Query],
    metric: Metric,
    flat: F,
) -> Result<Vec<Vec<Neighbour>>>
where
    F: FnOnce(Vec<u64>) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<Vec<Neighbour>>>>,
{
    let mut covered = RoaringBitmap::new();
    for (s, _) in segments {
        covered |= s.live_fragments(ds.fragments());
    }
    let unindexed: Vec<u64> = ds
        .fragments()
        .iter()
        .map(|f| f.id)
        .filter(|&id| !covered.contains(id as u32) && !nearest.fast_search)
        .collect();
    let live = Live::of(ds, passing, covered).await?;
    let refine = nearest.refine_factor.map(|r| r.max(1));
    let wanted = nearest.k.saturating_mul(refine.unwrap_or(1));
    let probes = Probes {
        nprobes: nearest.nprobes,
        minimum: nearest.minimum_nprobes,
        maximum: nearest.maximum_nprobes,
    };
    let dim = nearest.query.len() / nearest.num_queries.max(1);
    let allowed = |id: u64| live.address(id).is_some();
    let mut from_index = Vec::with_capacity(queries.len());
    for q in nearest.query.chunks(dim) {
        let mut top = TopK::new(wanted);
        for (_, ivf) in segments {
            for n in ivf
                .search(q, wanted, &probes, nearest.distance_range, &allowed)
                .await?
            {
                top.push(n);
            }
        }
        let mut found = top.into_sorted();
        for n in &mut found {
            n.address = live.address(n.row_id).unwrap_or(n.address);
        }
        from_index.push(found);
    }
    if unindexed.is_empty() && refine.is_none() {
        return Ok(from_index);
    }
    // Exact distances for the index's candidates, merged with the unindexed fragments'.
    let rest = match unindexed.is_empty() {
        true => vec![vec![]; queries.len()],
        false => flat(unindexed).await?,
    };
    let mut out = Vec::with_capacity(queries.len());
    for ((candidates, query), others) in from_index.into_iter().zip(queries).zip(rest) {
        let exact = measure_exactly(ds, nearest, &candidates, query, metric).await?;
        let mut top = TopK::new(nearest.k);
        for n in exact.into_iter().chain(others) {
            let (lower, upper) = nearest.distance_range;
            if lower.is_none_or(|l| n.distance >= l) && upper.is_none_or(|u| n.distance < u) {
                top.push(n);
            }
        }
        out.push(top.into_sorted());
    }
    Ok(out)
}

/// `candidates` with their exact distances to `query`, read from the table's vectors.
async fn measure_exactly(
    ds: &Arc<Dataset>,
    nearest: &Nearest,
    candidates: &[Neighbour],
    query: &Query,
    metric: Metric,
) -> Result<Vec<Neighbour>> {
    if candidates.is_empty() {
        return Ok(vec![]);
    }
    let addresses: Vec<u64> = candidates.iter().map(|n| n.address).collect();
    let projection = Projection {
        columns: Some(vec![nearest.column.clone()]),
        ..Default::default()
    };
    let taken = crate::scan::take::take(ds.clone(), &addresses, &projection).await?;
    let vectors = taken
        .column(0)
        .as_any()
        .downcast_ref::<FixedSizeListArray>()
        .ok_or_else(|| Error::invalid("internal: the vector column taken is not a vector"))?;
    let mut d = Vec::with_capacity(candidates.len());
    distance::distances(metric, query, vectors, &mut d)?;
    Ok(candidates
        .iter()
        .zip(d)
        .enumerate()
        .filter(|(i, _)| !vectors.is_null(*i))
        .map(|(_, (n, distance))| Neighbour { distance, ..*n })
        .collect())
}
