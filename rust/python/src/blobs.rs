//! Blob columns read as files: `_take_blobs` locates the rows' blobs, and each
//! `_BlobReader` reads byte ranges of one blob on demand (`lance_core.blob.BlobFile`
//! wraps it as a Python file object).
use lance_core::blob::{BlobKind, BlobLocation};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::dataset::PyDataset;
use crate::errors::{guard, IntoPyResult};
use crate::runtime::block_on;

#[pyclass(name = "_BlobReader", module = "lance_core._lance_core", frozen)]
pub struct PyBlobReader {
    blob: BlobLocation,
}

#[pymethods]
impl PyBlobReader {
    #[getter]
    fn size(&self) -> u64 {
        self.blob.size
    }

    #[getter]
    fn kind(&self) -> &'static str {
        match self.blob.kind {
            BlobKind::Inline => "inline",
            BlobKind::Packed => "packed",
            BlobKind::Dedicated => "dedicated",
            BlobKind::External => "external",
            BlobKind::Managed => "managed",
        }
    }

    #[getter]
    fn uri(&self) -> Option<String> {
        self.blob.uri.clone()
    }

    /// Where the bytes are: the object and the blob's first byte in it.
    #[getter]
    fn location(&self) -> (String, u64) {
        (self.blob.shown(), self.blob.position)
    }

    /// Bytes `offset..offset + length` of the blob.
    fn read(&self, py: Python<'_>, offset: u64, length: u64) -> PyResult<Py<PyBytes>> {
        guard(|| {
            let blob = self.blob.clone();
            let bytes = block_on(py, async move { blob.read(offset, length).await }).py()?;
            Ok(PyBytes::new(py, &bytes).unbind())
        })
    }

    /// Several `(offset, length)` ranges of the blob, read together.
    fn read_many(&self, py: Python<'_>, ranges: Vec<(u64, u64)>) -> PyResult<Vec<Py<PyBytes>>> {
        guard(|| {
            let blob = self.blob.clone();
            let parts = block_on(py, async move { blob.read_many(&ranges).await }).py()?;
            Ok(parts.iter().map(|b| PyBytes::new(py, b).unbind()).collect())
        })
    }
}

/// The addresses of rows `ids`: row addresses already, or with `by="index"` offsets among
/// the visible rows, with `by="row_id"` row ids.
async fn addresses(
    ds: &lance_core::dataset::Dataset,
    ids: Vec<u64>,
    by: &str,
) -> lance_core::Result<Vec<u64>> {
    match by {
        "index" => ds.addresses_of_indices(&ids).await,
        "row_id" => {
            let found = ds.addresses_of_row_ids(&ids).await?;
            if let Some((id, _)) = ids.iter().zip(&found).find(|(_, a)| a.is_none()) {
                return Err(lance_core::Error::invalid(format!(
                    "{}: no row has id {id}",
                    ds.uri()
                )));
            }
            Ok(found.into_iter().flatten().collect())
        }
        _ => Ok(ids),
    }
}

/// The blobs of `column` in rows `ids` (see `addresses`), in that order; None for a NULL
/// blob.
#[pyfunction]
pub fn _take_blobs(
    py: Python<'_>,
    ds: &PyDataset,
    column: String,
    ids: Vec<u64>,
    by: String,
) -> PyResult<Vec<Option<PyBlobReader>>> {
    guard(|| {
        let ds = ds.inner.clone();
        let found = block_on(py, async move {
            let rows = addresses(&ds, ids, &by).await?;
            lance_core::blob::locate(ds, &column, &rows).await
        })
        .py()?;
        Ok(found
            .into_iter()
            .map(|b| b.map(|blob| PyBlobReader { blob }))
            .collect())
    })
}

/// The whole bytes of the blobs of `column` in rows `ids` (see `addresses`), read
/// together: `(row address, bytes or None)` per row, in that order.
#[pyfunction]
pub fn _read_blobs(
    py: Python<'_>,
    ds: &PyDataset,
    column: String,
    ids: Vec<u64>,
    by: String,
) -> PyResult<Vec<(u64, Option<Py<PyBytes>>)>> {
    guard(|| {
        let ds = ds.inner.clone();
        let (rows, values) = block_on(py, async move {
            let rows = addresses(&ds, ids, &by).await?;
            let found = lance_core::blob::locate(ds, &column, &rows).await?;
            Ok::<_, lance_core::Error>((rows, lance_core::blob::read_all(&found).await?))
        })
        .py()?;
        use arrow_array::Array;
        Ok(rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let bytes = values
                    .is_valid(i)
                    .then(|| PyBytes::new(py, values.value(i)).unbind());
                (*r, bytes)
            })
            .collect())
    })
}

/// What one range request read: its index, the row's address, the bytes (None: a NULL
/// blob).
type RangeRead = (usize, u64, Option<Py<PyBytes>>);

/// Byte ranges of blobs of `column`: `requests` are `(row, offset, length)` with rows as
/// `addresses` takes them; `(request index, row address, bytes or None)` per request.
#[pyfunction]
pub fn _read_blob_ranges(
    py: Python<'_>,
    ds: &PyDataset,
    column: String,
    requests: Vec<(u64, u64, u64)>,
    by: String,
) -> PyResult<Vec<RangeRead>> {
    guard(|| {
        let ds = ds.inner.clone();
        let (rows, parts) = block_on(py, async move {
            let ids = requests.iter().map(|r| r.0).collect();
            let rows = addresses(&ds, ids, &by).await?;
            let found = lance_core::blob::locate(ds, &column, &rows).await?;
            let asked: Vec<_> = requests
                .iter()
                .zip(&found)
                .map(|((_, offset, length), blob)| (blob.as_ref(), *offset, *length))
                .collect();
            let parts = lance_core::blob::read_ranges(&asked).await?;
            Ok::<_, lance_core::Error>((rows, parts))
        })
        .py()?;
        Ok(parts
            .into_iter()
            .enumerate()
            .map(|(i, p)| (i, rows[i], p.map(|b| PyBytes::new(py, &b).unbind())))
            .collect())
    })
}

/// The bytes of blob column `column` for the rows of `data` (an Arrow stream of one batch
/// holding that column's descriptors, as a scan returns them, and `_rowaddr`), as a batch
/// of one large_binary column named `column`.
#[pyfunction]
pub fn _blob_bytes(
    py: Python<'_>,
    ds: &PyDataset,
    column: String,
    data: Bound<'_, PyAny>,
) -> PyResult<crate::arrow_export::PyArrowBatch> {
    guard(|| {
        let mut batches = crate::arrow_import::import_stream(&data)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(lance_core::Error::from)
            .py()?;
        let missing = |what: &str| {
            lance_core::Error::invalid(format!("blob bytes need one batch with '{what}'"))
        };
        let b = match batches.len() {
            1 => batches.pop().expect("one"),
            _ => return Err(missing(&column)).py(),
        };
        let ds = ds.inner.clone();
        let name = column.clone();
        let values = block_on(py, async move {
            let descriptors = b.column_by_name(&column).ok_or_else(|| missing(&column))?;
            let rows = b
                .column_by_name("_rowaddr")
                .ok_or_else(|| missing("_rowaddr"))?;
            let rows = rows
                .as_any()
                .downcast_ref::<arrow_array::UInt64Array>()
                .ok_or_else(|| missing("_rowaddr (uint64)"))?;
            let found =
                lance_core::blob::locate_rows(&ds, &column, descriptors, rows.values()).await?;
            lance_core::blob::read_all(&found).await
        })
        .py()?;
        let schema = arrow_schema::Schema::new(vec![arrow_schema::Field::new(
            name,
            arrow_schema::DataType::LargeBinary,
            true,
        )]);
        let columns: Vec<arrow_array::ArrayRef> = vec![std::sync::Arc::new(values)];
        let batch = arrow_array::RecordBatch::try_new(std::sync::Arc::new(schema), columns)
            .map_err(lance_core::Error::from)
            .py()?;
        Ok(crate::arrow_export::PyArrowBatch(batch))
    })
}

/// One `.blob` sidecar of a data file, written by the caller's own placement (pylance's
/// `PackedBlobWriter` and `DedicatedBlobWriter` in `lance_core.blob` wrap it).
#[pyclass(name = "_SidecarWriter", module = "lance_core._lance_core", frozen)]
pub struct PySidecarWriter {
    inner: std::sync::Arc<tokio::sync::Mutex<lance_core::write::blob_sidecars::SidecarWriter>>,
    shown: String,
}

#[pymethods]
impl PySidecarWriter {
    /// Sidecar `blob_id` of the data file `data_file` below `base`.
    #[new]
    #[pyo3(signature = (base, data_file, blob_id, storage_options=None))]
    fn new(
        base: String,
        data_file: String,
        blob_id: u32,
        storage_options: Option<std::collections::HashMap<String, String>>,
    ) -> PyResult<Self> {
        guard(|| {
            let storage = crate::files::open_storage(&base, storage_options)?;
            let w = lance_core::write::blob_sidecars::SidecarWriter::create(
                &storage, &data_file, blob_id,
            );
            Ok(PySidecarWriter {
                shown: w.shown().to_string(),
                inner: std::sync::Arc::new(tokio::sync::Mutex::new(w)),
            })
        })
    }

    #[getter]
    fn path(&self) -> &str {
        &self.shown
    }

    /// Append `data`; where it starts in the object.
    fn write(&self, py: Python<'_>, data: &[u8]) -> PyResult<u64> {
        guard(|| {
            let bytes = bytes::Bytes::copy_from_slice(data);
            let inner = self.inner.clone();
            block_on(py, async move { inner.lock().await.append(bytes).await }).py()
        })
    }

    /// Publish the object; its size.
    fn finish(&self, py: Python<'_>) -> PyResult<u64> {
        guard(|| {
            let inner = self.inner.clone();
            block_on(py, async move { inner.lock().await.finish().await }).py()
        })
    }

    /// Give the object up.
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        guard(|| {
            let inner = self.inner.clone();
            block_on(py, async move {
                inner.lock().await.abort().await;
                Ok(())
            })
            .py()
        })
    }
}
