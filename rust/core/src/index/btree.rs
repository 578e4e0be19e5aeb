//! BTREE indices: the column's values sorted (NULLs first), with the id of each row, cut
//! into pages of `batch_size` rows (`page_data.lance`: `values`, `ids`); a small lookup
//! (`page_lookup.lance`) gives each page's smallest and largest value and its NULL count.
//!
//! A condition on the column is answered by reading only the pages whose value range can
//! hold a match and running the condition itself on their values, so the rows found are
//! exactly those a scan keeps: the lookup only decides which pages are read, and there
//! it errs on the side of reading (a page's minimum is NULL when it holds NULLs; floats
//! compare in total order, where NaN and the two zeros sit apart from where comparisons
//! put them).
use std::cmp::Ordering;
use std::ops::Bound as Edge;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array, UInt64Array};
use arrow_ord::ord::make_comparator;
use arrow_schema::{DataType, Field, Schema, SortOptions};
use futures::StreamExt;

use futures::future::BoxFuture;
use serde_json::Value;

use super::kind::{BuildParams, IndexFileData, ScalarIndexKind};
use super::remap::AddressMap;
use super::selection::Found;
use crate::dataset::Dataset;
use crate::error::{corrupt, Error, Result};
use crate::expr::ranges::{value_ranges, ValueRanges};
use crate::expr::Expr;
use crate::session::IndexCacheRef;
use crate::table::index_segments::IndexSegment;

pub const LOOKUP_FILE: &str = "page_lookup.lance";
pub const PAGES_FILE: &str = "page_data.lance";
const DEFAULT_BATCH_SIZE: u64 = 4096;

/// A BTREE index's lookup, and the files its pages are read from.
pub struct BTree {
    /// `_indices/<uuid>` (for errors and cache keys).
    dir: String,
    /// The page files: one, or (as older pylance wrote them) one per range of pages,
    /// each numbering its pages from 0.
    parts: Vec<PagePart>,
    value_type: DataType,
    mins: ArrayRef,
    maxs: ArrayRef,
    null_counts: Vec<u32>,
    page_ids: Vec<u32>,
    batch_size: u64,
    /// The lookup lists pages in the order of their values (as pylance writes it); else
    /// every page is read.
    sorted: bool,
    /// Where pages read are kept: the session the lookup was loaded in.
    cache: IndexCacheRef,
}

struct PagePart {
    name: String,
    first_page: u64,
    file: Arc<Dataset>,
    /// Rows in the file.
    rows: u64,
}

impl BTree {
    /// The lookup of `segment` (its pages are read when queried).
    pub async fn load(ds: &Dataset, segment: &IndexSegment) -> Result<Arc<BTree>> {
        let dir = super::segment_dir(ds, segment)?;
        let key = format!("{dir}#btree");
        let cache = IndexCacheRef::of(ds.session());
        ds.session()
            .index
            .get_or_load(key, || async {
                let options = ds.storage_options();
                let lookup = crate::file_table::open(&dir, LOOKUP_FILE, options).await?;
                let shown = format!("{dir}/{LOOKUP_FILE}");
                let batch = crate::file_table::read_all(Arc::new(lookup)).await?;
                let batch_size = match batch.schema().metadata().get("batch_size") {
                    Some(s) => s.parse::<u64>().ok().filter(|&b| b > 0).ok_or_else(|| {
                        Error::corrupt(&shown, format!("batch_size '{s}' is not a page size"))
                    })?,
                    None => DEFAULT_BATCH_SIZE,
                };
                let metadata = batch.schema().metadata().clone();
                // Partitioned: `[[partition id, pages], ...]`, each partition's pages in
                // `part_<id>_page_data.lance`, numbered on from the previous partition's.
                let partitions: Vec<(String, u64)> = match metadata.get("range_partitioned") {
                    Some(v) if v == "true" => {
                        let text =
                            metadata
                                .get("page_num_per_range_partition")
                                .ok_or_else(|| {
                                    Error::corrupt(&shown, "partitioned, but no partitions")
                                })?;
                        let parts: Vec<(u64, u64)> = serde_json::from_str(text).map_err(|e| {
                            Error::corrupt(&shown, format!("page_num_per_range_partition: {e}"))
                        })?;
                        parts
                            .into_iter()
                            .map(|(id, pages)| (format!("part_{id}_{PAGES_FILE}"), pages))
                            .collect()
                    }
                    _ => vec![(PAGES_FILE.to_string(), u64::MAX)],
                };
                let c = super::FileColumns {
                    batch: &batch,
                    shown: &shown,
                };
                let (mins, maxs) = (c.any("min")?, c.any("max")?);
                let u32s = |name: &str| -> Result<Vec<u32>> {
                    Ok(c.primitive::<arrow_array::types::UInt32Type>(name)?
                        .values()
                        .to_vec())
                };
                let (null_counts, page_ids) = (u32s("null_count")?, u32s("page_idx")?);
                let mut parts = Vec::with_capacity(partitions.len());
                let mut first_page = 0u64;
                for (name, pages) in partitions {
                    let file = crate::file_table::open(&dir, &name, options).await?;
                    let rows = file.fragments()[0].physical_rows;
                    parts.push(PagePart {
                        name,
                        first_page,
                        file: Arc::new(file),
                        rows,
                    });
                    first_page = first_page.saturating_add(pages);
                }
                let first = &parts[0];
                let value_type = first
                    .file
                    .arrow_schema
                    .field_with_name("values")
                    .map_err(|_| {
                        Error::corrupt(format!("{dir}/{}", first.name), "no 'values' column")
                    })?
                    .data_type()
                    .clone();
                if mins.data_type() != &value_type || maxs.data_type() != &value_type {
                    return Err(Error::corrupt(
                        &shown,
                        format!(
                            "page bounds are {}, but the values are {value_type}",
                            mins.data_type()
                        ),
                    ));
                }
                let sorted = ascending(&mins) && ascending(&maxs);
                let bytes = mins.get_array_memory_size() + maxs.get_array_memory_size();
                let tree = BTree {
                    dir,
                    parts,
                    value_type,
                    mins,
                    maxs,
                    null_counts,
                    page_ids,
                    batch_size,
                    sorted,
                    cache,
                };
                Ok((tree, bytes))
            })
            .await
    }

    /// Every value with its row's id, in page order (for rewriting the index).
    pub async fn entries(&self) -> Result<(ArrayRef, arrow_array::UInt64Array)> {
        let (mut values, mut ids) = (Vec::new(), Vec::new());
        for part in &self.parts {
            let shown = format!("{}/{}", self.dir, part.name);
            let batch = crate::file_table::read_all(part.file.clone()).await?;
            let c = super::FileColumns {
                batch: &batch,
                shown: &shown,
            };
            values.push(c.any("values")?);
            ids.push(c.primitive::<arrow_array::types::UInt64Type>("ids")?);
        }
        let values =
            arrow_select::concat::concat(&values.iter().map(|a| a.as_ref()).collect::<Vec<_>>())?;
        let ids: Vec<u64> = ids
            .iter()
            .flat_map(|a| a.values().iter().copied())
            .collect();
        Ok((values, arrow_array::UInt64Array::from(ids)))
    }

    /// Rows per page.
    pub fn page_rows(&self) -> u64 {
        self.batch_size
    }

    /// Each page's first and last value.
    pub fn bounds(&self) -> (&ArrayRef, &ArrayRef) {
        (&self.mins, &self.maxs)
    }

    pub fn value_type(&self) -> &DataType {
        &self.value_type
    }

    /// The ids of the rows for which `condition` (on column `name`, whose values the
    /// index holds) is TRUE, and with `nulls` those for which it is NULL; None when the
    /// condition does not narrow the values down (a scan serves it better).
    pub async fn search(&self, name: &str, condition: &Expr, nulls: bool) -> Result<Option<Found>> {
        let schema = Arc::new(Schema::new(vec![Field::new(
            name,
            self.value_type.clone(),
            true,
        )]));
        let Ok(bound) = crate::expr::bind_filter(condition, &schema) else {
            return Ok(None);
        };
        let Some(mut ranges) = value_ranges(&bound, 0) else {
            return Ok(None);
        };
        let typed = ranges.intervals.iter().all(|(lo, hi)| {
            [lo, hi].into_iter().all(|e| match e {
                Edge::Included(v) | Edge::Excluded(v) => v.data_type() == &self.value_type,
                Edge::Unbounded => true,
            })
        });
        if !typed {
            return Ok(None);
        }
        // Rows where the condition is NULL are among those whose value is, unless it
        // compares with a NULL constant: then any page may hold them.
        if nulls && !ranges.strict {
            ranges = ValueRanges {
                intervals: vec![(Edge::Unbounded, Edge::Unbounded)],
                nulls: true,
                exact: false,
                strict: false,
            };
        }
        ranges.nulls |= nulls;
        // Where the condition is just "the value is in these intervals", a page's rows
        // are found by searching its sorted values; else the condition is run on them.
        // (Floats sort in total order, which comparisons do not follow.)
        let by_search = ranges.exact && !nulls && !self.floats();
        let pages = self.pages_for(&ranges);
        let reads = pages.into_iter().map(|p| self.page(p));
        let mut out = Found {
            exact: true,
            ..Default::default()
        };
        let mut pages = futures::stream::iter(reads).buffered(8);
        while let Some(page) = pages.next().await {
            let page = page?;
            let ids = page
                .column(1)
                .as_primitive::<arrow_array::types::UInt64Type>();
            if by_search {
                let mut yes = Vec::new();
                for rows in page_rows(page.column(0), &ranges)? {
                    yes.extend_from_slice(&ids.values()[rows]);
                }
                out.yes.extend(yes);
                continue;
            }
            let values = RecordBatch::try_new(schema.clone(), vec![page.column(0).clone()])?;
            let keep = crate::expr::evaluate_filter(&bound, &values)?;
            let (mut yes, mut no_value) = (Vec::new(), Vec::new());
            for (i, id) in ids.values().iter().enumerate() {
                if keep.is_null(i) {
                    no_value.push(*id);
                } else if keep.value(i) {
                    yes.push(*id);
                }
            }
            out.yes.extend(yes);
            out.nulls.extend(no_value);
        }
        Ok(Some(out))
    }

    fn floats(&self) -> bool {
        matches!(
            self.value_type,
            DataType::Float16 | DataType::Float32 | DataType::Float64
        )
    }

    /// Pages whose values can fall in `ranges`. Pages hold ascending values, so each
    /// interval is a run of pages: from the first whose maximum reaches its low end to
    /// the last whose minimum is within its high end (NULL bounds sort first: a page's
    /// minimum is NULL when it holds NULLs, its maximum when it holds nothing else).
    fn pages_for(&self, ranges: &ValueRanges) -> Vec<u32> {
        let n = self.page_ids.len();
        if !self.sorted {
            return self.page_ids.clone();
        }
        let mut want = vec![false; n];
        for (p, w) in want.iter_mut().enumerate() {
            *w = (ranges.nulls && self.null_counts[p] > 0) || self.has_nan(p);
        }
        for (lo, hi) in &ranges.intervals {
            let first = match lo {
                Edge::Unbounded => 0,
                Edge::Included(v) => partition(&self.maxs, v, |o| o.is_lt()),
                Edge::Excluded(v) => partition(&self.maxs, v, |o| o.is_le()),
            };
            let end = match hi {
                Edge::Unbounded => n,
                Edge::Included(v) | Edge::Excluded(v) => partition(&self.mins, v, |o| o.is_le()),
            };
            for w in want.iter_mut().take(end).skip(first) {
                *w = true;
            }
        }
        (0..n)
            .filter(|&p| want[p] && (ranges.nulls || self.maxs.is_valid(p)))
            .map(|p| self.page_ids[p])
            .collect()
    }

    /// Whether page `p` holds a NaN (of either sign: they sort at both ends).
    fn has_nan(&self, p: usize) -> bool {
        if !self.floats() {
            return false;
        }
        let nan = |a: &ArrayRef| {
            a.is_valid(p)
                && match a.data_type() {
                    DataType::Float64 => a
                        .as_primitive::<arrow_array::types::Float64Type>()
                        .value(p)
                        .is_nan(),
                    DataType::Float32 => a
                        .as_primitive::<arrow_array::types::Float32Type>()
                        .value(p)
                        .is_nan(),
                    _ => a
                        .as_primitive::<arrow_array::types::Float16Type>()
                        .value(p)
                        .is_nan(),
                }
        };
        nan(&self.mins) || nan(&self.maxs)
    }

    /// Page `p` (`values`, `ids`), kept in the cache.
    async fn page(&self, p: u32) -> Result<Arc<RecordBatch>> {
        let p = p as u64;
        let part = self
            .parts
            .iter()
            .rev()
            .find(|part| part.first_page <= p)
            .expect("the first part starts at page 0");
        let start = (p - part.first_page) * self.batch_size;
        if start >= part.rows {
            return Err(corrupt(format!(
                "{}/{LOOKUP_FILE}: page {p} starts past the {} rows of {}",
                self.dir, part.rows, part.name
            )));
        }
        let end = (start + self.batch_size).min(part.rows);
        let key = format!("{}#page{p}", self.dir);
        self.cache
            .get_or_load(key, || async {
                // A random access read: only the units of the file's pages that hold the
                // page's rows are decoded (a scan would decode whole file pages).
                let projection = crate::scan::Projection {
                    columns: Some(vec!["values".into(), "ids".into()]),
                    ..Default::default()
                };
                let shown = format!("{}/{}", self.dir, part.name);
                let rows: Vec<u64> = (start..end).collect();
                let batch = crate::scan::take::take(part.file.clone(), &rows, &projection)
                    .await
                    .map_err(|e| e.in_file(&shown))?;
                if batch.column(1).data_type() != &DataType::UInt64 {
                    return Err(Error::corrupt(
                        &shown,
                        format!("ids are {}, not uint64", batch.column(1).data_type()),
                    ));
                }
                // Rows are found in a page by searching its values: they must be in order.
                if !ascending(batch.column(0)) {
                    return Err(Error::corrupt(
                        &shown,
                        format!("the values of page {p} are not in ascending order"),
                    ));
                }
                let bytes = batch.get_array_memory_size();
                Ok((batch, bytes))
            })
            .await
    }
}

/// Whether `values` ascend (NULLs first).
fn ascending(values: &ArrayRef) -> bool {
    let Ok(cmp) = make_comparator(values.as_ref(), values.as_ref(), SortOptions::default()) else {
        return false;
    };
    (1..values.len()).all(|i| cmp(i - 1, i).is_le())
}

/// How many of the ascending `values` (NULLs first) stand before `v`: those for which
/// `before(value compared with v)` holds.
fn partition(values: &ArrayRef, v: &ArrayRef, before: impl Fn(Ordering) -> bool) -> usize {
    let Ok(cmp) = make_comparator(values.as_ref(), v.as_ref(), SortOptions::default()) else {
        return 0;
    };
    let (mut lo, mut hi) = (0, values.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if before(cmp(mid, 0)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The rows of a page (ascending values, NULLs first) whose values are in `ranges`.
fn page_rows(values: &ArrayRef, ranges: &ValueRanges) -> Result<Vec<std::ops::Range<usize>>> {
    let mut out = Vec::with_capacity(ranges.intervals.len() + 1);
    if ranges.nulls {
        out.push(0..values.null_count());
    }
    let skip_nulls = values.null_count();
    for (lo, hi) in &ranges.intervals {
        let start = match lo {
            Edge::Unbounded => skip_nulls,
            Edge::Included(v) => partition(values, v, |o| o.is_lt()),
            Edge::Excluded(v) => partition(values, v, |o| o.is_le()),
        }
        .max(skip_nulls);
        let end = match hi {
            Edge::Unbounded => values.len(),
            Edge::Included(v) => partition(values, v, |o| o.is_le()),
            Edge::Excluded(v) => partition(values, v, |o| o.is_lt()),
        };
        if start < end {
            out.push(start..end);
        }
    }
    // Overlapping intervals (IN lists with repeats) name rows once.
    out.sort_by_key(|r| r.start);
    let mut merged: Vec<std::ops::Range<usize>> = Vec::with_capacity(out.len());
    for r in out {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    Ok(merged)
}

/// The files of a BTREE over `values` (one per row) and the rows' `ids`, `page_rows` to a
/// page: the page file (`values`, `ids` sorted by value, NULLs first, floats in total
/// order) and the lookup (each page's first and last value, its NULL count, its number).
pub fn build(
    values: &ArrayRef,
    ids: &arrow_array::UInt64Array,
    page_rows: usize,
) -> Result<(RecordBatch, RecordBatch)> {
    let page_rows = page_rows.max(1);
    let order = arrow_ord::sort::sort_to_indices(
        values,
        Some(SortOptions {
            descending: false,
            nulls_first: true,
        }),
        None,
    )?;
    let values = arrow_select::take::take(values, &order, None)?;
    let ids = arrow_select::take::take(ids, &order, None)?;
    let pages = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("values", values.data_type().clone(), true),
            Field::new("ids", DataType::UInt64, false),
        ])),
        vec![values.clone(), ids],
    )?;
    let n = values.len();
    let starts: Vec<usize> = (0..n).step_by(page_rows).collect();
    let firsts = UInt32Array::from(starts.iter().map(|&s| s as u32).collect::<Vec<_>>());
    let lasts = UInt32Array::from(
        starts
            .iter()
            .map(|&s| ((s + page_rows).min(n) - 1) as u32)
            .collect::<Vec<_>>(),
    );
    let mins = arrow_select::take::take(&values, &firsts, None)?;
    let maxs = arrow_select::take::take(&values, &lasts, None)?;
    let null_counts: UInt32Array = starts
        .iter()
        .map(|&s| {
            let end = (s + page_rows).min(n);
            Some(values.slice(s, end - s).null_count() as u32)
        })
        .collect();
    let page_ids = UInt32Array::from((0..starts.len() as u32).collect::<Vec<_>>());
    let metadata: std::collections::HashMap<String, String> = [
        ("batch_size".to_string(), page_rows.to_string()),
        ("range_partitioned".to_string(), "false".to_string()),
    ]
    .into_iter()
    .collect();
    let lookup = RecordBatch::try_new(
        Arc::new(Schema::new_with_metadata(
            vec![
                Field::new("min", values.data_type().clone(), true),
                Field::new("max", values.data_type().clone(), true),
                Field::new("null_count", DataType::UInt32, false),
                Field::new("page_idx", DataType::UInt32, false),
            ],
            metadata,
        )),
        vec![mins, maxs, Arc::new(null_counts), Arc::new(page_ids)],
    )?;
    Ok((pages, lookup))
}

/// BTREE, as the registry lists it (`super::registry`).
#[derive(Debug)]
pub struct BTreeKind;

impl ScalarIndexKind for BTreeKind {
    fn name(&self) -> &'static str {
        "BTree"
    }

    fn user_names(&self) -> &'static [&'static str] {
        &["BTREE"]
    }

    fn type_url(&self) -> &'static str {
        "/lance.table.BTreeIndexDetails"
    }

    fn reads(&self, index_version: i32) -> bool {
        index_version <= 1
    }

    /// Version 1 holds row addresses where version 0 held stable row ids: pylance 14
    /// writes 1 on tables with stable row ids.
    fn version_written(&self, stable_row_ids: bool) -> i32 {
        i32::from(stable_row_ids)
    }

    fn holds_row_ids(&self, index_version: i32) -> bool {
        index_version < 1
    }

    fn params_names(&self) -> (Option<&'static str>, bool) {
        (Some("zone_size"), false)
    }

    fn default_params(&self) -> BuildParams {
        BuildParams {
            page_rows: DEFAULT_BATCH_SIZE,
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
                page_rows: BTree::load(ds, segment).await?.page_rows(),
                ..self.default_params()
            })
        })
    }

    fn build(
        &self,
        values: &ArrayRef,
        ids: &UInt64Array,
        params: &BuildParams,
    ) -> Result<Vec<IndexFileData>> {
        let (pages, lookup) = build(values, ids, params.page_rows as usize)?;
        Ok(vec![
            IndexFileData::new(PAGES_FILE, pages),
            IndexFileData::new(LOOKUP_FILE, lookup),
        ])
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
            BTree::load(ds, segment)
                .await?
                .search(column, e, nulls)
                .await
        })
    }

    fn remaps(&self) -> bool {
        true
    }

    fn remap<'a>(
        &'a self,
        ds: &'a Dataset,
        segment: &'a IndexSegment,
        map: &'a AddressMap,
    ) -> BoxFuture<'a, Result<Option<Vec<IndexFileData>>>> {
        Box::pin(async move {
            let tree = BTree::load(ds, segment).await?;
            let (values, ids) = tree.entries().await?;
            let (values, ids) = map.apply(&values, &ids)?;
            let params = BuildParams {
                page_rows: tree.page_rows(),
                ..self.default_params()
            };
            self.build(&values, &ids, &params).map(Some)
        })
    }

    fn value_bounds<'a>(
        &'a self,
        ds: &'a Dataset,
        segment: &'a IndexSegment,
    ) -> BoxFuture<'a, Result<Option<(ArrayRef, ArrayRef)>>> {
        Box::pin(async move {
            let tree = BTree::load(ds, segment).await?;
            let (mins, maxs) = tree.bounds();
            Ok(Some((mins.clone(), maxs.clone())))
        })
    }

    fn statistics<'a>(
        &'a self,
        ds: &'a Dataset,
        segment: &'a IndexSegment,
    ) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            let tree = BTree::load(ds, segment).await?;
            let (mins, maxs) = tree.bounds();
            let n = mins.len();
            let first = (0..n).find(|&p| maxs.is_valid(p));
            let mut m = serde_json::Map::new();
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
            m.insert("num_pages".into(), serde_json::json!(n));
            Ok(Value::Object(m))
        })
    }
}

/// A value as pylance prints index statistics (DataFusion's scalar display).
fn shown(a: &ArrayRef, i: usize) -> String {
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
