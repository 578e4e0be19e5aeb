//! `_Dataset`'s reads: scans (a `Query` built from Python's arguments), takes by offset,
//! address or row id, counts, fragments, and the plans of filters.

use lance_core::blob::BlobRead;
use lance_core::query::order::ColumnOrdering;
use lance_core::scan::Projection;
use lance_core::scan::ScanOptions;
use lance_core::Query;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::PyDataset;
use crate::arrow_export::{PyArrowBatch, PyBatchIterator};
use crate::errors::{guard, IntoPyResult};
use crate::filters::Filter;
use crate::runtime::{block_on, runtime};

/// Named SQL expressions from Python, parsed.
fn parse_projection(
    exprs: Option<Vec<(String, String)>>,
) -> PyResult<Option<Vec<(String, lance_core::expr::Expr)>>> {
    exprs
        .map(|exprs| {
            exprs
                .into_iter()
                .map(|(name, sql)| Ok((name, lance_core::expr::parse_expression(&sql)?)))
                .collect::<lance_core::Result<Vec<_>>>()
        })
        .transpose()
        .py()
}

#[pymethods]
impl PyDataset {
    /// How the indices answer `filter`: a line per condition an index answered, and the
    /// fragments left to scan.
    fn explain_filter(&self, py: Python<'_>, filter: Filter) -> PyResult<(Vec<String>, Vec<u64>)> {
        guard(|| {
            let ds = self.inner.clone();
            let filter = filter.0;
            block_on(py, async move {
                let (selection, lines) =
                    lance_core::index::search::select_explained(&ds, &filter).await?;
                let scanned = ds
                    .fragments()
                    .iter()
                    .map(|f| f.id)
                    .filter(|&id| selection.as_ref().and_then(|s| s.part(id)).is_none())
                    .collect();
                Ok((lines, scanned))
            })
            .py()
        })
    }

    /// The fragments where the indices find, exactly, that no row passes `filter` (a
    /// distributed read plans no task for them).
    fn fragments_without_matches(&self, py: Python<'_>, filter: Filter) -> PyResult<Vec<u64>> {
        guard(|| {
            let ds = self.inner.clone();
            let filter = filter.0;
            block_on(py, async move {
                lance_core::index::search::fragments_without_matches(&ds, &filter).await
            })
            .py()
        })
    }

    #[pyo3(signature = (fragment_id=None, filter=None))]
    fn count_rows(
        &self,
        py: Python<'_>,
        fragment_id: Option<u64>,
        filter: Option<Filter>,
    ) -> PyResult<u64> {
        guard(|| {
            let ds = self.inner.clone();
            let filter = filter.map(|f| f.0);
            block_on(py, lance_core::query::count_rows(ds, filter, fragment_id)).py()
        })
    }

    /// Fragment `fragment_id` as committed (protobuf bytes).
    fn fragment_metadata(&self, py: Python<'_>, fragment_id: u64) -> PyResult<Vec<u8>> {
        use prost::Message;
        match self.inner.fragment(fragment_id) {
            Some(f) => Ok(f.encode_to_vec()),
            None => Err(crate::errors::raise(
                py,
                "InvalidInputError",
                format!("{}: no fragment {fragment_id}", self.inner.uri()),
            )),
        }
    }

    /// One dict per fragment: id, physical_rows, num_deletions, files.
    fn fragments<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        guard(|| {
            let ds = self.inner.clone();
            // Rows come from the manifest; older writers left them unset, then the data file tells.
            let rows = block_on(py, async move {
                let counts = ds.fragments().iter().map(|f| async {
                    Ok::<_, lance_core::Error>((
                        ds.physical_rows(f).await?,
                        ds.num_deleted(f).await?,
                    ))
                });
                futures::future::try_join_all(counts).await
            })
            .py()?;
            let list = PyList::empty(py);
            for (f, (physical_rows, deleted)) in self.inner.fragments().iter().zip(rows) {
                let d = PyDict::new(py);
                d.set_item("id", f.id)?;
                d.set_item("physical_rows", physical_rows)?;
                d.set_item("num_deletions", deleted)?;
                d.set_item(
                    "files",
                    f.files.iter().map(|x| x.path.clone()).collect::<Vec<_>>(),
                )?;
                list.append(d)?;
            }
            Ok(list)
        })
    }

    /// The rows `ids`, in that order: row addresses (fragment id << 32 | row offset), or
    /// with `by="index"` offsets among the visible rows, or with `by="row_id"` row ids
    /// (ids no visible row has are left out).
    #[pyo3(signature = (ids, columns=None, projection=None, with_row_id=false, with_row_address=false, by="address"))]
    #[allow(clippy::too_many_arguments)]
    fn take(
        &self,
        py: Python<'_>,
        ids: Vec<u64>,
        columns: Option<Vec<String>>,
        projection: Option<Vec<(String, String)>>,
        with_row_id: bool,
        with_row_address: bool,
        by: &str,
    ) -> PyResult<PyArrowBatch> {
        guard(|| {
            let projection = Projection {
                columns,
                exprs: parse_projection(projection)?,
                with_row_id,
                with_row_address,
                ..Default::default()
            };
            let ds = self.inner.clone();
            let by = by.to_string();
            let batch = block_on(py, async move {
                // Ids to addresses and the take in one call: no round trip through Python.
                let addresses = match by.as_str() {
                    "index" => ds.addresses_of_indices(&ids).await?,
                    "row_id" => ds
                        .addresses_of_row_ids(&ids)
                        .await?
                        .into_iter()
                        .flatten()
                        .collect(),
                    _ => ids,
                };
                lance_core::scan::take::take(ds, &addresses, &projection).await
            })
            .py()?;
            Ok(PyArrowBatch(batch))
        })
    }

    /// The addresses of the dataset's visible rows `indices` (deleted rows skipped).
    fn addresses_of_indices(&self, py: Python<'_>, indices: Vec<u64>) -> PyResult<Vec<u64>> {
        guard(|| {
            let ds = self.inner.clone();
            block_on(py, async move { ds.addresses_of_indices(&indices).await }).py()
        })
    }

    /// The addresses of the visible rows `indices` of fragment `fragment_id`.
    fn fragment_addresses(
        &self,
        py: Python<'_>,
        fragment_id: u64,
        indices: Vec<u64>,
    ) -> PyResult<Vec<u64>> {
        guard(|| {
            let ds = self.inner.clone();
            block_on(py, async move {
                let frag = ds.fragment(fragment_id).ok_or_else(|| {
                    lance_core::Error::invalid(format!("{}: no fragment {fragment_id}", ds.uri()))
                })?;
                let offsets = ds.physical_offsets(frag, &indices).await?;
                Ok(offsets
                    .into_iter()
                    .map(|o| (fragment_id << 32) | o as u64)
                    .collect())
            })
            .py()
        })
    }

    /// The addresses of the rows with stable row ids `ids` (None: no visible row).
    fn addresses_of_row_ids(&self, py: Python<'_>, ids: Vec<u64>) -> PyResult<Vec<Option<u64>>> {
        guard(|| {
            let ds = self.inner.clone();
            block_on(py, async move { ds.addresses_of_row_ids(&ids).await }).py()
        })
    }

    #[pyo3(signature = (columns=None, batch_size=None, limit=None, offset=None, with_row_id=false, with_row_address=false, fragment_ids=None, io_buffer_size=None, filter=None, row_range=None, include_deleted=false, projection=None, late_materialization=true, use_scalar_index=true, nearest=None, blob_bytes=false, strict_batch_size=false, order_by=None))]
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &self,
        columns: Option<Vec<String>>,
        batch_size: Option<usize>,
        limit: Option<u64>,
        offset: Option<u64>,
        with_row_id: bool,
        with_row_address: bool,
        fragment_ids: Option<Vec<u64>>,
        io_buffer_size: Option<usize>,
        filter: Option<Filter>,
        row_range: Option<(u64, u64)>,
        include_deleted: bool,
        projection: Option<Vec<(String, String)>>,
        late_materialization: bool,
        use_scalar_index: bool,
        nearest: Option<crate::nearest::PyNearest>,
        blob_bytes: bool,
        strict_batch_size: bool,
        order_by: Option<Vec<(String, bool, bool)>>,
    ) -> PyResult<PyBatchIterator> {
        guard(|| {
            let nearest = nearest.map(|n| n.into_query()).transpose()?;
            let mut options = ScanOptions {
                columns,
                limit,
                offset,
                with_row_id,
                with_row_address,
                fragment_ids,
                row_range,
                include_deleted,
                strict_batch_size,
                filter: filter.map(|f| f.0),
                count_rows_scanned: true,
                ..Default::default()
            };
            if let Some(b) = batch_size {
                options.batch_size = b;
            }
            if let Some(b) = io_buffer_size {
                options.memory_budget = b.max(1 << 20);
            }
            options.projection = parse_projection(projection)?;
            let query = Query {
                scan: options,
                late_materialization,
                use_scalar_index,
                nearest,
                blobs: match blob_bytes {
                    true => BlobRead::Bytes,
                    false => BlobRead::Descriptors,
                },
                // (column, ascending, nulls first) per key, as `ColumnOrdering` holds them.
                order_by: order_by
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(column, ascending, nulls_first)| ColumnOrdering {
                        column,
                        ascending,
                        nulls_first,
                    })
                    .collect(),
            };
            let _enter = runtime().enter();
            let s = lance_core::query(self.inner.clone(), query).py()?;
            Ok(PyBatchIterator::new(s.schema, s.batches))
        })
    }
}
