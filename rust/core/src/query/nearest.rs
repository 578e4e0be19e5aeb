//! A nearest-neighbour search, run as a query (`Query::nearest`):
//!
//! 1. candidates: the vector column with row ids and addresses is scanned (with the filter
//!    when it pre-filters), and each batch is measured against every query on the CPU
//!    pool, several batches at once, into a top-k per query;
//! 2. a post-filter (pylance's default) keeps those of the k nearest for which the filter
//!    holds, checked by taking only the filter's columns for them;
//! 3. offset and limit cut the results (all queries' results, one after another), and
//!    the columns asked for are taken for the rows left, with `_distance` beside them.
//!
//! The result is one batch, ordered by query, then distance, then row id.
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, Float32Array, Int32Array, RecordBatch, RecordBatchOptions,
    UInt64Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use futures::{StreamExt, TryStreamExt};

use roaring::RoaringTreemap;

use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::scan::take::{take, take_where};
use crate::scan::{prepare, Projection, Scan, ScanOptions, ROW_ADDRESS};
use crate::vector::distance::{self, Metric, Query};
use crate::vector::topk::{Neighbour, TopK};
use crate::vector::{Nearest, DISTANCE, QUERY_INDEX};

/// What a search compares: the queries in the column's element type, and the metric.
struct Target {
    queries: Vec<Query>,
    metric: Metric,
}

/// Check `nearest` against the dataset's schema: a vector column, queries of its
/// dimension without NaN or infinity, k > 0, a metric its elements allow.
fn target(ds: &Dataset, nearest: &Nearest) -> Result<Target> {
    let column = &nearest.column;
    let plan = crate::scan::plan::plan_scan(&ds.schema, Some(std::slice::from_ref(column)), false)
        .map_err(|_| {
            Error::invalid(format!(
                "nearest: column '{column}' is not in the dataset {}",
                ds.uri()
            ))
        })?;
    let field = plan.schema.field(0);
    let (element, dim) = match field.data_type() {
        DataType::FixedSizeList(item, dim) if distance::is_vector_element(item.data_type()) => {
            (item.data_type().clone(), *dim as usize)
        }
        other => {
            return Err(Error::invalid(format!(
                "nearest: column '{column}' is {other}, not a vector column (a fixed-size list \
                 of float16, float32, float64 or uint8)"
            )))
        }
    };
    if nearest.k == 0 {
        return Err(Error::invalid("nearest: k must be greater than 0"));
    }
    let n = nearest.num_queries;
    if n == 0 || nearest.query.len() != n * dim {
        let got = match n {
            0 => 0,
            _ => nearest.query.len() / n,
        };
        return Err(Error::invalid(format!(
            "nearest: the query has {got} dimensions, column '{column}' has {dim}"
        )));
    }
    if let Some(v) = nearest.query.iter().find(|v| !v.is_finite()) {
        return Err(Error::invalid(format!(
            "nearest: the query holds {v}; every value must be a finite number"
        )));
    }
    let metric = nearest
        .metric
        .unwrap_or_else(|| Metric::default_for(&element));
    metric.check(&element, column)?;
    let queries = nearest
        .query
        .chunks(dim)
        .map(|q| Query::new(q, &element))
        .collect::<Result<Vec<_>>>()
        .map_err(|e| e.context(&format!("nearest on column '{column}'")))?;
    Ok(Target { queries, metric })
}

/// Where `_distance` goes among the output columns, and the columns to take without it.
struct Shape {
    projection: Projection,
    /// Position of `_distance` among the taken batch's columns (None: not returned).
    distance_at: Option<usize>,
    /// A leading `query_index` column (several queries).
    query_index: bool,
    schema: SchemaRef,
}

fn shape(ds: &Dataset, options: &ScanOptions, nearest: &Nearest) -> Result<Shape> {
    let mut projection = options.projection();
    // A `_distance` named among the columns is placed there; otherwise after the columns
    // (before `_rowid` / `_rowaddr`), unless turned off.
    let named = projection
        .columns
        .as_ref()
        .and_then(|c| c.iter().position(|n| n == DISTANCE));
    if let (Some(cols), Some(i)) = (&mut projection.columns, named) {
        cols.remove(i);
    }
    let taken = prepare(ds, &projection, None)?.output.schema.clone();
    let extras = usize::from(projection.with_row_id) + usize::from(projection.with_row_address);
    let distance_at = match named {
        Some(i) => Some(i),
        None if nearest.project_distance => Some(taken.fields().len() - extras),
        None => None,
    };
    let mut fields: Vec<Arc<Field>> = Vec::with_capacity(taken.fields().len() + 2);
    if nearest.batch {
        fields.push(Arc::new(Field::new(QUERY_INDEX, DataType::Int32, false)));
    }
    let mut rest: Vec<Arc<Field>> = taken.fields().iter().cloned().collect();
    if let Some(at) = distance_at {
        rest.insert(at, Arc::new(Field::new(DISTANCE, DataType::Float32, true)));
    }
    fields.extend(rest);
    Ok(Shape {
        projection,
        distance_at,
        query_index: nearest.batch,
        schema: Arc::new(Schema::new_with_metadata(fields, taken.metadata().clone())),
    })
}

/// Start the search `query.nearest` asks for. Must be called within a tokio runtime.
pub fn start(ds: Arc<Dataset>, query: super::Query) -> Result<Scan> {
    let nearest = query
        .nearest
        .clone()
        .ok_or_else(|| Error::invalid("internal: a vector search without a query"))?;
    let target = target(&ds, &nearest)?;
    let shape = shape(&ds, &query.scan, &nearest)?;
    let schema = shape.schema.clone();
    let run = async move {
        let options = &query.scan;
        let found = match crate::vector::indexed::usable(&ds, &nearest).await? {
            Some((segments, metric)) if options.fragment_ids.is_none() => {
                let target = Target {
                    queries: target.queries,
                    metric,
                };
                let flat = |fragments: Vec<u64>| {
                    let mut query = query.clone();
                    query.scan.fragment_ids = Some(fragments);
                    let (ds, nearest, target) = (&ds, &nearest, &target);
                    async move { candidates(ds, &query, nearest, target).await }
                };
                let queries = target.queries.clone();
                let passing = match (&options.filter, nearest.prefilter) {
                    (Some(filter), true) => Some(passing(&ds, filter, &query).await?),
                    _ => None,
                };
                crate::vector::indexed::search(
                    &ds, passing, &nearest, &segments, &queries, metric, flat,
                )
                .await?
            }
            // pylance's fast_search looks only at indexed rows: without an index, none.
            _ if nearest.fast_search => vec![Vec::new(); target.queries.len()],
            _ => candidates(&ds, &query, &nearest, &target).await?,
        };
        let found = post_filter(&ds, options, &nearest, found).await?;
        output(&ds, options, &shape, found).await
    };
    Ok(Scan {
        schema,
        batches: futures::stream::once(run).boxed(),
    })
}

/// The ids of the rows that pass `filter` (a pre-filter), answered as `query` allows.
async fn passing(
    ds: &Arc<Dataset>,
    filter: &crate::expr::Expr,
    query: &super::Query,
) -> Result<RoaringTreemap> {
    let read = super::Query {
        scan: ScanOptions {
            columns: Some(vec![]),
            with_row_id: true,
            filter: Some(filter.clone()),
            batch_size: 64 * 1024,
            ..Default::default()
        },
        use_scalar_index: query.use_scalar_index,
        ..Default::default()
    };
    let s = super::run(ds.clone(), read)?;
    let batches: Vec<RecordBatch> = s.batches.try_collect().await?;
    let mut set = RoaringTreemap::new();
    for b in batches {
        set.extend(u64s(&b, 0)?.iter().copied());
    }
    Ok(set)
}

/// The k nearest rows for each query (sorted), from a scan of the vector column.
async fn candidates(
    ds: &Arc<Dataset>,
    query: &super::Query,
    nearest: &Nearest,
    target: &Target,
) -> Result<Vec<Vec<Neighbour>>> {
    let options = &query.scan;
    let read = super::Query {
        scan: ScanOptions {
            columns: Some(vec![nearest.column.clone()]),
            with_row_id: true,
            with_row_address: true,
            fragment_ids: options.fragment_ids.clone(),
            memory_budget: options.memory_budget,
            filter: options.filter.clone().filter(|_| nearest.prefilter),
            batch_size: options.batch_size.max(8192),
            ..Default::default()
        },
        late_materialization: query.late_materialization,
        use_scalar_index: query.use_scalar_index,
        ..Default::default()
    };
    let s = super::run(ds.clone(), read)?;
    let shared = Arc::new((
        target.queries.clone(),
        target.metric,
        nearest.k,
        nearest.distance_range,
    ));
    let name = format!("nearest on column '{}' of {}", nearest.column, ds.uri());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let per_batch = s.batches.map(move |batch| {
        let (shared, name) = (shared.clone(), name.clone());
        async move {
            let batch = batch?;
            crate::threads::cpu::spawn_cpu(name, move || {
                let (queries, metric, k, range) = &*shared;
                measure(&batch, queries, *metric, *k, *range)
            })
            .await
        }
    });
    let mut tops: Vec<TopK> = (0..target.queries.len())
        .map(|_| TopK::new(nearest.k))
        .collect();
    let mut per_batch = per_batch.buffered(workers);
    while let Some(found) = per_batch.try_next().await? {
        for (top, f) in tops.iter_mut().zip(found) {
            top.merge(f);
        }
    }
    Ok(tops.into_iter().map(TopK::into_sorted).collect())
}

/// The k nearest rows of one batch (vector, `_rowid`, `_rowaddr`) for each query.
fn measure(
    batch: &RecordBatch,
    queries: &[Query],
    metric: Metric,
    k: usize,
    (lower, upper): (Option<f32>, Option<f32>),
) -> Result<Vec<TopK>> {
    let vectors = batch
        .column(0)
        .as_any()
        .downcast_ref::<FixedSizeListArray>()
        .ok_or_else(|| Error::invalid("internal: the vector column read is not a vector"))?;
    let ids = u64s(batch, 1)?;
    let addresses = u64s(batch, 2)?;
    let mut d = Vec::with_capacity(batch.num_rows());
    let mut out = Vec::with_capacity(queries.len());
    for q in queries {
        d.clear();
        distance::distances(metric, q, vectors, &mut d)?;
        let mut top = TopK::new(k);
        for (r, &distance) in d.iter().enumerate() {
            if vectors.is_null(r) || !in_range(distance, lower, upper) {
                continue;
            }
            top.push(Neighbour {
                distance,
                row_id: ids[r],
                address: addresses[r],
            });
        }
        out.push(top);
    }
    Ok(out)
}

/// Whether `d` lies in `lower..upper` (a NaN distance lies in no bounded range).
fn in_range(d: f32, lower: Option<f32>, upper: Option<f32>) -> bool {
    lower.is_none_or(|l| d >= l) && upper.is_none_or(|u| d < u)
}

fn u64s(batch: &RecordBatch, i: usize) -> Result<&[u64]> {
    batch
        .column(i)
        .as_any()
        .downcast_ref::<UInt64Array>()
        .map(|a| &a.values()[..])
        .ok_or_else(|| Error::invalid("internal: row ids read are not uint64"))
}

/// Without pre-filtering, a filter keeps those of the k nearest for which it holds.
async fn post_filter(
    ds: &Arc<Dataset>,
    options: &ScanOptions,
    nearest: &Nearest,
    found: Vec<Vec<Neighbour>>,
) -> Result<Vec<Vec<Neighbour>>> {
    let Some(filter) = options.filter.as_ref().filter(|_| !nearest.prefilter) else {
        return Ok(found);
    };
    let addresses: Vec<u64> = found.iter().flatten().map(|n| n.address).collect();
    if addresses.is_empty() {
        return Ok(found);
    }
    let only_address = Projection {
        columns: Some(vec![]),
        with_row_address: true,
        ..Default::default()
    };
    let kept = take_where(ds.clone(), &addresses, &only_address, Some(filter)).await?;
    let kept = kept
        .column_by_name(ROW_ADDRESS)
        .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
        .ok_or_else(|| Error::invalid("internal: a filtered take without row addresses"))?;
    let pass: std::collections::HashSet<u64> = kept.values().iter().copied().collect();
    Ok(found
        .into_iter()
        .map(|q| {
            q.into_iter()
                .filter(|n| pass.contains(&n.address))
                .collect()
        })
        .collect())
}

/// The rows found, cut by offset and limit, with the columns asked for and `_distance`.
async fn output(
    ds: &Arc<Dataset>,
    options: &ScanOptions,
    shape: &Shape,
    found: Vec<Vec<Neighbour>>,
) -> Result<RecordBatch> {
    let rows: Vec<(i32, Neighbour)> = found
        .into_iter()
        .enumerate()
        .flat_map(|(q, ns)| ns.into_iter().map(move |n| (q as i32, n)))
        .skip(options.offset.unwrap_or(0) as usize)
        .take(options.limit.map_or(usize::MAX, |l| l as usize))
        .collect();
    let addresses: Vec<u64> = rows.iter().map(|(_, n)| n.address).collect();
    let taken = take(ds.clone(), &addresses, &shape.projection).await?;
    let mut columns: Vec<ArrayRef> = taken.columns().to_vec();
    if let Some(at) = shape.distance_at {
        let d: Float32Array = rows.iter().map(|(_, n)| Some(n.distance)).collect();
        columns.insert(at, Arc::new(d));
    }
    if shape.query_index {
        let q: Int32Array = rows.iter().map(|(q, _)| *q).collect();
        columns.insert(0, Arc::new(q));
    }
    let opts = RecordBatchOptions::new().with_row_count(Some(rows.len()));
    Ok(RecordBatch::try_new_with_options(
        shape.schema.clone(),
        columns,
        &opts,
    )?)
}
