//! Queries: how a read a user asks for is answered, planned over the layers below it.
//! A query is a scan's options (`ScanOptions`: columns, filter, offset and limit, ...)
//! and what only a planner decides: whether scalar indices answer the filter and rows
//! are taken instead of scanned (`late`), a nearest-neighbour search (`nearest`), blob
//! bytes in place of their descriptors (`crate::blob`), sorting (`order`), and answers read
//! from an index's pages (`extremes`); and the table's metadata read as tables
//! (`metadata_tables`). `scan`, `index`, `vector` and `blob` never import this module.
pub mod extremes;
mod late;
pub mod metadata_tables;
mod nearest;
pub mod order;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use crate::blob::BlobRead;
use crate::dataset::Dataset;
use crate::error::Result;
use crate::scan::{Scan, ScanOptions};

/// A read as a user asks for it.
#[derive(Clone, Debug)]
pub struct Query {
    /// What to read: columns, filter, offset and limit, fragments, batch size.
    pub scan: ScanOptions,
    /// Read a filter's columns first and take the others for the rows that pass, when
    /// few do (and take the rows of a small limit): see `late`.
    pub late_materialization: bool,
    /// Answer the filter from the table's scalar indices where they cover it.
    pub use_scalar_index: bool,
    /// A nearest-neighbour search instead of a scan (see `crate::vector`): the k nearest
    /// rows with `_distance`, the filter applied before or after as it says.
    pub nearest: Option<crate::vector::Nearest>,
    /// What blob columns hold.
    pub blobs: BlobRead,
    /// Sort the rows by these keys, then apply the offset and limit (see `order`).
    pub order_by: Vec<order::ColumnOrdering>,
}

impl Default for Query {
    fn default() -> Self {
        Query {
            scan: ScanOptions::default(),
            late_materialization: true,
            use_scalar_index: true,
            nearest: None,
            blobs: BlobRead::Descriptors,
            order_by: Vec::new(),
        }
    }
}

impl From<ScanOptions> for Query {
    fn from(scan: ScanOptions) -> Self {
        Query {
            scan,
            ..Default::default()
        }
    }
}

/// Start answering `query` over `dataset`. Must be called within a tokio runtime.
pub fn run(dataset: Arc<Dataset>, mut query: Query) -> Result<Scan> {
    if !query.order_by.is_empty() {
        return order::start(dataset, query);
    }
    if query.blobs != BlobRead::Descriptors {
        // The rows' addresses locate their blobs: read them, then the blobs.
        let read = std::mem::take(&mut query.blobs);
        let keep_address = query.scan.with_row_address;
        query.scan.with_row_address = true;
        let inner = run(dataset.clone(), query)?;
        return crate::blob::with_values(dataset, inner, read, keep_address);
    }
    query.scan.batch_size = query.scan.batch_size.max(1);
    if query.nearest.is_some() {
        return nearest::start(dataset, query);
    }
    if !late::applies(&dataset, &query) {
        return crate::scan::scan(dataset, query.scan);
    }
    let options = query.scan;
    let p = crate::scan::prepare(&dataset, &options.projection(), options.filter.as_ref())?;
    let schema = p.output.schema.clone();
    let exact = options.strict_batch_size.then_some(options.batch_size);
    let batches = late::start(dataset, options, query.use_scalar_index);
    let batches = match exact {
        Some(size) => crate::scan::rebatch::rebatch(batches, schema.clone(), size),
        None => batches,
    };
    Ok(Scan { schema, batches })
}

/// The live rows of `dataset` (of fragment `fragment_id` only, when given) for which
/// `filter` holds (all of them when None). A filter reads only its own columns; without
/// one, nothing is read but deletion files. Indices answer where they cover the filter.
pub async fn count_rows(
    dataset: Arc<Dataset>,
    filter: Option<crate::expr::Expr>,
    fragment_id: Option<u64>,
) -> Result<u64> {
    let Some(filter) = filter else {
        return match fragment_id {
            None => dataset.count_rows().await,
            Some(id) => {
                let f = dataset.fragment_or_err(id)?;
                dataset.fragment_rows(f).await
            }
        };
    };
    let mut fragment_ids = fragment_id.map(|id| vec![id]);
    let mut counted = 0u64;
    // Rows an index finds are counted from it (checked with the filter first where it
    // only finds candidates); the other fragments are scanned.
    if let Some(selection) = crate::index::search::select(&dataset, &filter).await? {
        let ids = fragment_ids
            .take()
            .unwrap_or_else(|| dataset.fragments().iter().map(|f| f.id).collect());
        let mut rest = Vec::new();
        for id in ids {
            match selection.part(id) {
                Some(p) if p.exact => counted += p.yes.len(),
                Some(p) => {
                    let found = p.addresses(id, 0..u64::MAX);
                    counted += late::recheck(&dataset, &found, &filter).await?.len() as u64;
                }
                None => rest.push(id),
            }
        }
        if rest.is_empty() {
            return Ok(counted);
        }
        fragment_ids = Some(rest);
    }
    let options = ScanOptions {
        columns: Some(vec![]),
        filter: Some(filter),
        fragment_ids,
        batch_size: 64 * 1024,
        ..Default::default()
    };
    let s = crate::scan::scan(dataset, options)?;
    futures::TryStreamExt::try_fold(s.batches, counted, |n, b| async move {
        Ok(n + b.num_rows() as u64)
    })
    .await
}
