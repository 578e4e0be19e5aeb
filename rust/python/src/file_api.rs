//! Single Lance files (pylance's `lance.file`): a file's layout as its metadata shows it,
//! its global buffers, and the writer of one file. Reading rows goes through the file's
//! table (`_Dataset.open_file`), so scans and takes are the dataset's own.
use std::collections::HashMap;
use std::sync::Arc;

use lance_core::file::PageEncoding;
use lance_core::write::single_file::{PageSizing, SingleFileWriter};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::arrow_import::{aligned, import_schema, import_stream};
use crate::dataset::PyDataset;
use crate::errors::{guard, IntoPyResult};
use crate::runtime::block_on;

fn ranges(py: Python<'_>, rs: &[std::ops::Range<u64>]) -> PyResult<Py<PyList>> {
    let items: Vec<(u64, u64)> = rs.iter().map(|r| (r.start, r.end - r.start)).collect();
    Ok(PyList::new(py, items)?.unbind())
}

/// The layout of the file behind `file` (a table made by `_Dataset.open_file`) as a
/// dict: versions (2.0 files as pylance numbers them, 0.3), rows, the sizes of its parts,
/// its global buffers and, per column, its buffers and pages (buffers as (position,
/// size), the page's encoding as text).
#[pyfunction]
pub fn _file_layout(py: Python<'_>, file: &PyDataset) -> PyResult<Py<PyDict>> {
    guard(|| {
        let ds = file.inner.clone();
        let reader = block_on(py, async move { lance_core::file_table::reader(&ds).await }).py()?;
        let m = &reader.metadata;
        let (major, minor) = match (m.footer.version.major, m.footer.version.minor) {
            (2, 0) => (0, 3),
            v => v,
        };
        let (data, column_meta, buffers) = m.section_sizes();
        let out = PyDict::new(py);
        out.set_item("major_version", major)?;
        out.set_item("minor_version", minor)?;
        out.set_item("num_rows", m.num_rows)?;
        out.set_item("num_data_bytes", data)?;
        out.set_item("num_column_metadata_bytes", column_meta)?;
        out.set_item("num_global_buffer_bytes", buffers)?;
        out.set_item("global_buffers", ranges(py, &m.global_buffers)?)?;
        let columns = PyList::empty(py);
        for c in &m.columns {
            let col = PyDict::new(py);
            col.set_item("column_buffers", ranges(py, &c.buffers)?)?;
            let pages = PyList::empty(py);
            for p in &c.pages {
                let page = PyDict::new(py);
                page.set_item("buffers", ranges(py, &p.buffers)?)?;
                page.set_item("num_rows", p.num_rows)?;
                let encoding = match &p.encoding {
                    PageEncoding::Layout(l) => format!("{l:#?}"),
                    PageEncoding::Array(a) => format!("{a:#?}"),
                    PageEncoding::Legacy(_) => String::new(),
                };
                page.set_item("encoding", encoding)?;
                pages.append(page)?;
            }
            col.set_item("pages", pages)?;
            columns.append(col)?;
        }
        out.set_item("columns", columns)?;
        Ok(out.unbind())
    })
}

/// Global buffer `index` of the file behind `file`.
#[pyfunction]
pub fn _file_global_buffer(
    py: Python<'_>,
    file: &PyDataset,
    index: usize,
) -> PyResult<Py<PyBytes>> {
    guard(|| {
        let ds = file.inner.clone();
        let bytes = block_on(py, async move {
            lance_core::file_table::global_buffer(&ds, index).await
        })
        .py()?;
        Ok(PyBytes::new(py, &bytes).unbind())
    })
}

/// The writer of one Lance file (`lance_core.file.LanceFileWriter` wraps it).
#[pyclass(name = "_FileWriter", module = "lance_core._lance_core", frozen)]
pub struct PyFileWriter {
    inner: Arc<tokio::sync::Mutex<SingleFileWriter>>,
}

#[pymethods]
impl PyFileWriter {
    #[new]
    #[pyo3(signature = (path, schema=None, version=None, storage_options=None, data_cache_bytes=None, max_page_bytes=None))]
    fn new(
        path: String,
        schema: Option<Bound<'_, PyAny>>,
        version: Option<String>,
        storage_options: Option<HashMap<String, String>>,
        data_cache_bytes: Option<usize>,
        max_page_bytes: Option<usize>,
    ) -> PyResult<Self> {
        guard(|| {
            let schema = schema.map(|s| import_schema(&s)).transpose()?.map(Arc::new);
            let sizing = PageSizing {
                data_cache_bytes,
                max_page_bytes,
            };
            let options = storage_options.unwrap_or_default();
            let w = SingleFileWriter::create(&path, schema, version.as_deref(), &options, sizing)
                .py()?;
            Ok(PyFileWriter {
                inner: Arc::new(tokio::sync::Mutex::new(w)),
            })
        })
    }

    /// Add the rows of `data` (an object with `__arrow_c_stream__`: a table, a reader).
    fn write(&self, py: Python<'_>, data: Bound<'_, PyAny>) -> PyResult<()> {
        guard(|| {
            let batches = import_stream(&data)?
                .map(|b| b.and_then(aligned).map_err(lance_core::Error::from))
                .collect::<lance_core::Result<Vec<_>>>()
                .py()?;
            let inner = self.inner.clone();
            block_on(py, async move {
                let mut w = inner.lock().await;
                for b in &batches {
                    w.write(b).await?;
                }
                Ok(())
            })
            .py()
        })
    }

    fn add_global_buffer(&self, py: Python<'_>, data: Vec<u8>) -> PyResult<u32> {
        let inner = self.inner.clone();
        guard(|| {
            block_on(py, async move {
                inner.lock().await.add_global_buffer(data).await
            })
            .py()
        })
    }

    fn add_schema_metadata(&self, py: Python<'_>, key: String, value: String) -> PyResult<()> {
        let inner = self.inner.clone();
        guard(|| {
            block_on(py, async move {
                inner.lock().await.add_schema_metadata(key, value)
            })
            .py()
        })
    }

    /// Publish the file: (rows, bytes), or None when it was published before.
    fn finish(&self, py: Python<'_>) -> PyResult<Option<(u64, u64)>> {
        guard(|| {
            let inner = self.inner.clone();
            let done = block_on(py, async move { inner.lock().await.finish().await }).py()?;
            Ok(done.map(|d| (d.num_rows, d.size_bytes)))
        })
    }
}
