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
pub fn batch_stream(reader: RecordBatchStreamReader) -> BatchStream {
    let (tx, rx) = tokio::sync::mpsc::channel(2);
    let puller = std::thread::spawn(move || {
        for batch in reader {
            // The caller's data failed to arrive (its generator raised, say): an input error,
            // whose message carries the source's own. Nothing is read after it.
            let batch = batch.and_then(aligned).map_err(|e| {
                lance_core::Error::invalid(format!("reading the data to write failed: {e}"))
            });
            let failed = batch.is_err();
            if tx.blocking_send(batch).is_err() || failed {
                break; // the writer stopped, or the source did
            }
        }
        // The reader is released here, by pyarrow's code, which takes the GIL.
    });
    BatchStream {
        rx,
        puller: Some(puller),
    }
}

/// The receiving end of `batch_stream`. Dropping it waits for the pulling thread to end
/// (it stops at its next batch), with the GIL released: a thread still calling into
/// Python when the interpreter exits is stopped by `pthread_exit`, whose unwinding through
/// native frames aborts the process.
pub struct BatchStream {
    rx: tokio::sync::mpsc::Receiver<lance_core::Result<RecordBatch>>,
    puller: Option<std::thread::JoinHandle<()>>,
}

impl futures::Stream for BatchStream {
    type Item = lance_core::Result<RecordBatch>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for BatchStream {
    fn drop(&mut self) {
        // Closing the channel stops a puller waiting to send.
        self.rx.close();
        while self.rx.try_recv().is_ok() {}
        if let Some(puller) = self.puller.take() {
            if !puller.is_finished() {
                // The puller may need the GIL to finish its batch or release the reader.
                Python::attach(|py| py.detach(|| puller.join().ok()));
            }
        }
    }
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
