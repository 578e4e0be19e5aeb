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
            let batch = batch.and_then(aligned).map_err(lance_core::Error::from);
            if tx.blocking_send(batch).is_err() {
                break; // the writer stopped (an error): stop reading
            }
        }
    });
    Box::pin(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (b, rx))
    }))
}

/// A data file name prefix from Python: letters, digits, '-' and '_' only (it becomes part
/// of a path).
pub fn checked_file_prefix(py: Python<'_>, prefix: Option<String>) -> PyResult<String> {
    let prefix = prefix.unwrap_or_default();
    if prefix
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        Ok(prefix)
    } else {
        Err(raise(
            py,
            "InvalidInputError",
            format!("file_prefix may only hold letters, digits, '-' and '_': {prefix:?}"),
        ))
    }
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
        let batches = batch_stream(reader);
        let ds = block_on(py, write_dataset(&uri, schema, batches, opts)).py()?;
        Ok(PyDataset::from(ds))
    })
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

/// Write data files without committing; returns each fragment's metadata (protobuf bytes).
#[pyfunction]
#[pyo3(signature = (data, uri, mode="append", max_rows_per_file=1048576, max_bytes_per_file=None, data_storage_version=None, storage_options=None, file_prefix=None))]
#[allow(clippy::too_many_arguments)]
pub fn _write_fragments(
    py: Python<'_>,
    data: Bound<'_, PyAny>,
    uri: String,
    mode: &str,
    max_rows_per_file: u64,
    max_bytes_per_file: Option<u64>,
    data_storage_version: Option<String>,
    storage_options: Option<HashMap<String, String>>,
    file_prefix: Option<String>,
) -> PyResult<Vec<Vec<u8>>> {
    use prost::Message;
    guard(|| {
        let file_prefix = checked_file_prefix(py, file_prefix)?;
        let mut opts = WriteOptions {
            mode: self::mode(py, mode)?,
            max_rows_per_file,
            data_storage_version,
            storage_options: storage_options.unwrap_or_default(),
            file_prefix,
            ..Default::default()
        };
        if let Some(b) = max_bytes_per_file {
            opts.max_bytes_per_file = b;
        }
        let reader = import_stream(&data)?;
        let schema = reader.schema();
        let batches = batch_stream(reader);
        let fragments = block_on(
            py,
            lance_core::write::write_uncommitted(&uri, schema, batches, opts),
        )
        .py()?;
        Ok(fragments.iter().map(|f| f.encode_to_vec()).collect())
    })
}

/// Commit an operation: "append" or "overwrite" of fragments, or "delete".
#[pyfunction]
#[pyo3(signature = (uri, kind, fragments, schema=None, deleted_fragment_ids=None, predicate=None, read_version=None, storage_options=None))]
#[allow(clippy::too_many_arguments)]
pub fn _commit(
    py: Python<'_>,
    uri: String,
    kind: &str,
    fragments: Vec<Vec<u8>>,
    schema: Option<Bound<'_, PyAny>>,
    deleted_fragment_ids: Option<Vec<u64>>,
    predicate: Option<String>,
    read_version: Option<u64>,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<PyDataset> {
    use lance_core::proto::table::DataFragment;
    use lance_core::table::commit::Operation;
    use prost::Message;
    guard(|| {
        let fragments = fragments
            .iter()
            .map(|b| DataFragment::decode(b.as_slice()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| {
                raise(
                    py,
                    "InvalidInputError",
                    format!("bad fragment metadata: {e}"),
                )
            })?;
        let op = match kind {
            "append" => Operation::Append { fragments },
            "overwrite" => {
                let schema = schema.ok_or_else(|| {
                    raise(
                        py,
                        "InvalidInputError",
                        "an overwrite needs the new schema".into(),
                    )
                })?;
                let schema =
                    lance_core::table::schema::LanceSchema::from_arrow(&import_schema(&schema)?, 0)
                        .py()?;
                let data_format = fragments
                    .iter()
                    .flat_map(|f| f.files.first())
                    .map(|d| format!("{}.{}", d.file_major_version, d.file_minor_version))
                    .next()
                    .unwrap_or_else(|| "2.2".into());
                Operation::Overwrite {
                    fragments,
                    schema,
                    data_format,
                    stable_row_ids: false,
                }
            }
            "merge" => {
                // The new columns are numbered after the read version's ids, as the tasks
                // that wrote their files numbered them.
                let (schema, read_version) = schema.zip(read_version).ok_or_else(|| {
                    raise(
                        py,
                        "InvalidInputError",
                        "a merge needs the new schema and the version it was read from".into(),
                    )
                })?;
                let schema = import_schema(&schema)?;
                let opts = storage_options.clone().unwrap_or_default();
                let ds = block_on(
                    py,
                    lance_core::dataset::Dataset::open(
                        &uri,
                        Some(lance_core::dataset::VersionRef::Number(read_version)),
                        opts,
                    ),
                )
                .py()?;
                let new: Vec<_> = schema
                    .fields()
                    .iter()
                    .filter(|f| ds.schema.field(f.name()).is_none())
                    .cloned()
                    .collect();
                let added =
                    lance_core::write::columns::new_columns(&ds, &arrow_schema::Schema::new(new))
                        .py()?;
                Operation::Merge {
                    fragments,
                    schema: lance_core::write::columns::schema_with(&ds, &added),
                }
            }
            "delete" => Operation::Delete {
                updated: fragments,
                deleted_ids: deleted_fragment_ids.unwrap_or_default(),
                predicate: predicate.unwrap_or_default(),
            },
            other => {
                return Err(raise(
                    py,
                    "InvalidInputError",
                    format!("unknown operation '{other}'"),
                ))
            }
        };
        let ds = block_on(
            py,
            lance_core::write::commit_operation(
                &uri,
                op,
                read_version,
                storage_options.unwrap_or_default(),
            ),
        )
        .py()?;
        Ok(PyDataset::from(ds))
    })
}

/// A readable summary of fragment metadata bytes: id, physical_rows, files.
#[pyfunction]
pub fn _fragment_info(py: Python<'_>, data: Vec<u8>) -> PyResult<(u64, u64, Vec<String>)> {
    use prost::Message;
    let f = lance_core::proto::table::DataFragment::decode(data.as_slice()).map_err(|e| {
        raise(
            py,
            "InvalidInputError",
            format!("bad fragment metadata: {e}"),
        )
    })?;
    Ok((
        f.id,
        f.physical_rows,
        f.files.iter().map(|d| d.path.clone()).collect(),
    ))
}

/// Delete data files (names within the dataset's `data/` directory) that were written but
/// never committed, e.g. by the tasks of an aborted Spark job. Missing files are fine.
#[pyfunction]
#[pyo3(signature = (uri, paths, storage_options=None))]
pub fn _delete_data_files(
    py: Python<'_>,
    uri: String,
    paths: Vec<String>,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<()> {
    guard(|| {
        let storage =
            lance_core::storage::Storage::open(&uri, &storage_options.unwrap_or_default()).py()?;
        block_on(py, async move {
            for p in paths {
                if p.contains("..") || p.starts_with('/') {
                    return Err(lance_core::Error::invalid(format!(
                        "{uri}: '{p}' is not a data file name"
                    )));
                }
                storage.delete(&storage.path(&format!("data/{p}"))).await?;
            }
            Ok(())
        })
        .py()
    })
}

/// Small objects beside a dataset's data (job markers): write `data` at `path` below the
/// dataset's root.
#[pyfunction]
#[pyo3(signature = (uri, path, data, storage_options=None))]
pub fn _put_object(
    py: Python<'_>,
    uri: String,
    path: String,
    data: Vec<u8>,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<()> {
    guard(|| {
        let storage =
            lance_core::storage::Storage::open(&uri, &storage_options.unwrap_or_default()).py()?;
        block_on(py, async move {
            storage
                .put(&storage.path(&path), bytes::Bytes::from(data))
                .await
        })
        .py()
    })
}

/// Whether an object exists at `path` below the dataset's root.
#[pyfunction]
#[pyo3(signature = (uri, path, storage_options=None))]
pub fn _object_exists(
    py: Python<'_>,
    uri: String,
    path: String,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<bool> {
    guard(|| {
        let storage =
            lance_core::storage::Storage::open(&uri, &storage_options.unwrap_or_default()).py()?;
        block_on(
            py,
            async move { storage.exists(&storage.path(&path)).await },
        )
        .py()
    })
}

/// Names of the files in the dataset's `data/` directory that start with `prefix`.
#[pyfunction]
#[pyo3(signature = (uri, prefix, storage_options=None))]
pub fn _list_data_files(
    py: Python<'_>,
    uri: String,
    prefix: String,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<Vec<String>> {
    guard(|| {
        let storage =
            lance_core::storage::Storage::open(&uri, &storage_options.unwrap_or_default()).py()?;
        let files = block_on(py, async move { storage.list_dir("data").await }).py()?;
        Ok(files
            .iter()
            .filter_map(|m| m.location.filename().map(str::to_string))
            .filter(|n| n.starts_with(&prefix))
            .collect())
    })
}
