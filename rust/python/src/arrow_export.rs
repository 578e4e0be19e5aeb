//! Handing Arrow data to Python without copying, through the Arrow C data interface in
//! PyCapsules (`__arrow_c_schema__`, `__arrow_c_array__`, `__arrow_c_stream__`); pyarrow
//! (or polars, duckdb, ...) imports them.
use std::sync::Mutex;

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{Array, RecordBatch, RecordBatchReader, StructArray};
use arrow_schema::{ArrowError, SchemaRef};
use futures::stream::BoxStream;
use futures::StreamExt;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::errors::{guard, to_py, IntoPyResult};
use crate::runtime::{block_on, runtime};

fn schema_capsule<'py>(
    py: Python<'py>,
    schema: &arrow_schema::Schema,
) -> PyResult<Bound<'py, PyCapsule>> {
    let ffi = FFI_ArrowSchema::try_from(schema).map_err(|e| to_py(e.into()))?;
    PyCapsule::new_with_value(py, ffi, c"arrow_schema")
}

/// An Arrow schema Python can import (`pa.schema(obj)`).
#[pyclass(name = "_ArrowSchema", module = "lance_core._lance_core", frozen)]
pub struct PyArrowSchema(pub SchemaRef);

#[pymethods]
impl PyArrowSchema {
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        schema_capsule(py, &self.0)
    }
}

/// One record batch Python can import (`pa.record_batch(obj)`).
#[pyclass(name = "_ArrowBatch", module = "lance_core._lance_core", frozen)]
pub struct PyArrowBatch(pub RecordBatch);

#[pymethods]
impl PyArrowBatch {
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
        let _ = requested_schema;
        let schema = schema_capsule(py, &self.0.schema())?;
        let data = StructArray::from(self.0.clone()).into_data();
        let array = FFI_ArrowArray::new(&data);
        Ok((
            schema,
            PyCapsule::new_with_value(py, array, c"arrow_array")?,
        ))
    }
}

/// A stream of batches from a scan, consumed from Python one batch at a time; each call
/// releases the GIL while Rust reads and decodes.
#[pyclass(name = "_BatchIterator", module = "lance_core._lance_core")]
pub struct PyBatchIterator {
    schema: SchemaRef,
    stream: Option<Mutex<BoxStream<'static, lance_core::Result<RecordBatch>>>>,
}

impl PyBatchIterator {
    pub fn new(
        schema: SchemaRef,
        stream: BoxStream<'static, lance_core::Result<RecordBatch>>,
    ) -> Self {
        PyBatchIterator {
            schema,
            stream: Some(Mutex::new(stream)),
        }
    }
}

#[pymethods]
impl PyBatchIterator {
    #[getter]
    fn schema(&self) -> PyArrowSchema {
        PyArrowSchema(self.schema.clone())
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<PyArrowBatch>> {
        guard(|| {
            let Some(stream) = self.stream.as_ref() else {
                return Ok(None);
            };
            let next = {
                let mut s = stream.lock().unwrap_or_else(|e| e.into_inner());
                let s: &mut BoxStream<'static, _> = &mut s;
                block_on(py, s.next())
            };
            match next {
                Some(batch) => Ok(Some(PyArrowBatch(batch.py()?))),
                None => {
                    self.stream = None;
                    Ok(None)
                }
            }
        })
    }

    /// Export the rest of the stream through the C stream interface (`pa.RecordBatchReader.from_stream`).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &mut self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let stream = self.stream.take().ok_or_else(|| {
            crate::errors::raise(
                py,
                "InvalidInputError",
                "this stream was already consumed".into(),
            )
        })?;
        let reader = StreamReader {
            schema: self.schema.clone(),
            stream: stream.into_inner().unwrap_or_else(|e| e.into_inner()),
        };
        let ffi = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, ffi, c"arrow_array_stream")
    }
}

/// Blocking reader over the async stream for the C stream interface. It runs on whatever
/// thread pulls from it (pyarrow releases the GIL while doing so); panics become errors
/// because unwinding must not cross the C boundary.
struct StreamReader {
    schema: SchemaRef,
    stream: BoxStream<'static, lance_core::Result<RecordBatch>>,
}

impl Iterator for StreamReader {
    type Item = Result<RecordBatch, ArrowError>;
    fn next(&mut self) -> Option<Self::Item> {
        let stream = &mut self.stream;
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            runtime().block_on(stream.next())
        }));
        match r {
            Ok(item) => item.map(|b| b.map_err(|e| ArrowError::ExternalError(Box::new(e)))),
            Err(_) => Some(Err(ArrowError::ComputeError(
                "internal error in lance_core (panic while reading)".into(),
            ))),
        }
    }
}

impl RecordBatchReader for StreamReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
