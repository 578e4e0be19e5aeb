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

/// The blobs of `column` in rows `ids` (row addresses; with `by="index"` offsets among the
/// visible rows, with `by="row_id"` row ids), in that order; None for a NULL blob.
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
            let addresses = match by.as_str() {
                "index" => ds.addresses_of_indices(&ids).await?,
                "row_id" => {
                    let found = ds.addresses_of_row_ids(&ids).await?;
                    let missing = ids.iter().zip(&found).find(|(_, a)| a.is_none());
                    if let Some((id, _)) = missing {
                        return Err(lance_core::Error::invalid(format!(
                            "{}: no row has id {id}",
                            ds.uri()
                        )));
                    }
                    found.into_iter().flatten().collect()
                }
                _ => ids,
            };
            lance_core::blob::locate(ds, &column, &addresses).await
        })
        .py()?;
        Ok(found
            .into_iter()
            .map(|b| b.map(|blob| PyBlobReader { blob }))
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
