//! `_write_dataset`: Arrow data from Python (anything with `__arrow_c_stream__`) into a
//! Lance dataset. Batches are imported through the C stream interface without copying;
//! buffers that are not aligned (Spark's Arrow IPC makes such) are copied once so that
//! nothing downstream trips over them.
use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{Array, RecordBatch, RecordBatchReader, StructArray};
use lance_core::write::{write_dataset, WriteMode, WriteOptions};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyCapsuleMethods};
use std::collections::HashMap;

use crate::dataset::PyDataset;
use crate::errors::{guard, raise, IntoPyResult};
use crate::runtime::block_on;

/// Import the Arrow C stream of `data` (an object with `__arrow_c_stream__`).
pub fn import_stream(data: &Bound<'_, PyAny>) -> PyResult<RecordBatchStreamReader> {
    let py = data.py();
    let capsule = data.call_method0("__arrow_c_stream__")?;
    let capsule = capsule.cast::<PyCapsule>().map_err(|_| {
        raise(
            py,
            "InvalidInputError",
            "__arrow_c_stream__ did not return a capsule".into(),
        )
    })?;
    let ptr = capsule.pointer_checked(Some(c"arrow_array_stream"))?;
    // SAFETY: the capsule holds an FFI_ArrowArrayStream (checked by name); `from_raw`
    // moves it out and leaves a released stream behind for the capsule to drop.
    unsafe { RecordBatchStreamReader::from_raw(ptr.as_ptr() as *mut FFI_ArrowArrayStream) }.map_err(
        |e| {
            raise(
                py,
                "InvalidInputError",
                format!("cannot read the Arrow stream: {e}"),
            )
        },
    )
}

/// A batch whose buffers all meet Arrow's alignment (copying only those that do not).
pub fn aligned(batch: RecordBatch) -> Result<RecordBatch, arrow_schema::ArrowError> {
    let (schema, rows) = (batch.schema(), batch.num_rows());
    let mut data = StructArray::from(batch).into_data();
    data.align_buffers();
    let columns = StructArray::from(data).columns().to_vec();
    RecordBatch::try_new_with_options(
        schema,
        columns,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows)),
    )
}

pub fn mode(py: Python<'_>, mode: &str) -> PyResult<WriteMode> {
    match mode {
        "create" => Ok(WriteMode::Create),
        "append" => Ok(WriteMode::Append),
        "overwrite" => Ok(WriteMode::Overwrite),
        other => Err(raise(
            py,
            "InvalidInputError",
            format!("mode must be 'create', 'append' or 'overwrite', not '{other}'"),
        )),
    }
}

#[pyfunction]
#[pyo3(signature = (data, uri, mode="create", max_rows_per_file=1048576, max_bytes_per_file=None, data_storage_version=None, enable_stable_row_ids=false, storage_options=None))]
#[allow(clippy::too_many_arguments)]
pub fn _write_dataset(
    py: Python<'_>,
    data: Bound<'_, PyAny>,
    uri: String,
    mode: &str,
    max_rows_per_file: u64,
    max_bytes_per_file: Option<u64>,
    data_storage_version: Option<String>,
    enable_stable_row_ids: bool,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<PyDataset> {
    guard(|| {
        let mut opts = WriteOptions {
            mode: self::mode(py, mode)?,
            max_rows_per_file,
            data_storage_version,
            enable_stable_row_ids,
            storage_options: storage_options.unwrap_or_default(),
            ..Default::default()
        };
        if let Some(b) = max_bytes_per_file {
            opts.max_bytes_per_file = b;
        }
        let reader = import_stream(&data)?;
        let schema = reader.schema();
        let batches = futures::stream::iter(
            reader.map(|b| b.and_then(aligned).map_err(lance_core::Error::from)),
        );
        let ds = block_on(py, write_dataset(&uri, schema, batches, opts)).py()?;
        Ok(PyDataset::from(ds))
    })
}
