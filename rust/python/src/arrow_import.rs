//! Taking Arrow data from Python: streams and schemas come in through the Arrow C data
//! interface (`__arrow_c_stream__`, `__arrow_c_schema__`) without copying; buffers that are
//! not aligned (Spark's Arrow IPC makes such) are copied once so that nothing downstream
//! trips over them.
use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{Array, RecordBatch, StructArray};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyCapsuleMethods};

use crate::errors::raise;

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

/// The batches of an imported Arrow stream, pulled on a thread of their own: the
/// producer may be Python code that itself calls lance_core (a scan feeding a write, a
/// column function reading a fragment), and that must not run on a thread that is
/// already driving the write's runtime.
pub fn batch_stream(
    reader: RecordBatchStreamReader,
) -> impl futures::Stream<Item = lance_core::Result<RecordBatch>> + Send + Unpin {
    let (tx, rx) = tokio::sync::mpsc::channel(2);
    std::thread::spawn(move || {
        for batch in reader {
            // The caller's data failed to arrive (its generator raised, say): an input error,
            // whose message carries the source's own.
            let batch = batch.and_then(aligned).map_err(|e| {
                lance_core::Error::invalid(format!("reading the data to write failed: {e}"))
            });
            if tx.blocking_send(batch).is_err() {
                break; // the writer stopped (an error): stop reading
            }
        }
    });
    Box::pin(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (b, rx))
    }))
}

/// Import an Arrow schema from an object with `__arrow_c_schema__`.
pub fn import_schema(obj: &Bound<'_, PyAny>) -> PyResult<arrow_schema::Schema> {
    let py = obj.py();
    let capsule = obj.call_method0("__arrow_c_schema__")?;
    let capsule = capsule.cast::<PyCapsule>().map_err(|_| {
        raise(
            py,
            "InvalidInputError",
            "__arrow_c_schema__ did not return a capsule".into(),
        )
    })?;
    let ptr = capsule.pointer_checked(Some(c"arrow_schema"))?;
    // SAFETY: the capsule holds an FFI_ArrowSchema (checked by name); it is only read.
    let ffi = unsafe { &*(ptr.as_ptr() as *const arrow_schema::ffi::FFI_ArrowSchema) };
    arrow_schema::Schema::try_from(ffi).map_err(|e| {
        raise(
            py,
            "InvalidInputError",
            format!("cannot read the Arrow schema: {e}"),
        )
    })
}
