//! Object-level helpers over a dataset's store, for what sits outside the table format:
//! the data files and abort markers of a distributed job, copying whole trees, and the
//! object operations of a file session (`lance_core.file.LanceFileSession`).
use pyo3::prelude::*;
use std::collections::HashMap;

use lance_core::storage::Storage;
use lance_core::write::job_files::JobFiles;

use crate::errors::{guard, IntoPyResult};
use crate::runtime::block_on;

pub(crate) fn open_storage(
    uri: &str,
    options: Option<HashMap<String, String>>,
) -> PyResult<Storage> {
    Storage::open(uri, &options.unwrap_or_default()).py()
}

/// Delete everything below a dataset root (pylance's `LanceDataset.drop`; the caller has
/// checked that a dataset is there).
#[pyfunction]
#[pyo3(signature = (uri, storage_options=None))]
pub fn _drop_dataset(
    py: Python<'_>,
    uri: String,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<()> {
    guard(|| {
        let storage = open_storage(&uri, storage_options)?;
        block_on(py, async move { storage.delete_tree("").await }).py()
    })
}

/// The files of a distributed job (`lance_core::write::job_files`) writing with `prefix`
/// into the table at `uri`: `op` is "delete" (data files `paths` and index segments
/// `index_uuids`), "keep" (in a task after writing: false, and its files deleted, when the
/// job was aborted) or "abort" (the job's files removed unless a version may refer to
/// them). True but for a "keep" that says no.
#[pyfunction]
#[pyo3(signature = (uri, prefix, op, paths, index_uuids, storage_options=None))]
#[allow(clippy::too_many_arguments)]
pub fn _job_files(
    py: Python<'_>,
    uri: String,
    prefix: String,
    op: String,
    paths: Vec<String>,
    index_uuids: Vec<String>,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<bool> {
    guard(|| {
        let files = JobFiles::new(&uri, &storage_options.unwrap_or_default(), &prefix).py()?;
        block_on(py, async move {
            match op.as_str() {
                "delete" => files.delete(&paths, &index_uuids).await.map(|_| true),
                "keep" => files.keep(&paths, &index_uuids).await,
                "abort" => files.abort(&paths, &index_uuids).await.map(|_| true),
                other => Err(lance_core::Error::invalid(format!(
                    "unknown job files operation '{other}'"
                ))),
            }
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
        let storage = open_storage(&uri, storage_options)?;
        block_on(
            py,
            async move { storage.exists(&storage.path(&path)).await },
        )
        .py()
    })
}

/// Copy every file of a dataset (or any directory) between stores, e.g. a local
/// dataset into `memory://`. Internal: the tests use it to stage datasets.
#[pyfunction]
#[pyo3(signature = (src, dst, src_options=None, dst_options=None))]
pub fn _copy_tree(
    py: Python<'_>,
    src: String,
    dst: String,
    src_options: Option<HashMap<String, String>>,
    dst_options: Option<HashMap<String, String>>,
) -> PyResult<usize> {
    guard(|| {
        let from = open_storage(&src, src_options)?;
        let to = open_storage(&dst, dst_options)?;
        block_on(py, from.copy_tree_to(&to)).py()
    })
}

/// A file session's listing below `base`: (directories, files) directly in `path`, or
/// every file below it (no directories) when `recursive`; paths relative to `base`.
#[pyfunction]
#[pyo3(signature = (base, path, recursive, storage_options=None))]
pub fn _store_list(
    py: Python<'_>,
    base: String,
    path: String,
    recursive: bool,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<(Vec<String>, Vec<String>)> {
    guard(|| {
        let storage = open_storage(&base, storage_options)?;
        block_on(py, async move {
            if !recursive {
                return storage.list_level(&path).await;
            }
            let all = storage.list_all(&path).await?;
            let mut files: Vec<String> = all
                .iter()
                .map(|m| storage.relative(&m.location).to_string())
                .collect();
            files.sort();
            Ok((vec![], files))
        })
        .py()
    })
}

/// An object as listed: (name, path in the store, size, modification time in ms, e-tag).
type ListedObject = (String, String, u64, i64, Option<String>);

/// The objects directly in `path` below `base`, each as (name, path in the store, size,
/// modification time in ms since the epoch, e-tag): what a namespace reports of a table's
/// version files.
#[pyfunction]
#[pyo3(signature = (base, path, storage_options=None))]
pub fn _store_list_meta(
    py: Python<'_>,
    base: String,
    path: String,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<Vec<ListedObject>> {
    guard(|| {
        let storage = open_storage(&base, storage_options)?;
        let found = block_on(py, async move { storage.list_dir(&path).await }).py()?;
        Ok(found
            .into_iter()
            .filter_map(|m| {
                let name = m.location.filename()?.to_string();
                Some((
                    name,
                    m.location.to_string(),
                    m.size,
                    m.last_modified.timestamp_millis(),
                    m.e_tag,
                ))
            })
            .collect())
    })
}

/// `length` bytes at `offset` of the object at `path` below `base`, in one read.
#[pyfunction]
#[pyo3(signature = (base, path, offset, length, storage_options=None))]
pub fn _store_read_range(
    py: Python<'_>,
    base: String,
    path: String,
    offset: u64,
    length: u64,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<Py<pyo3::types::PyBytes>> {
    guard(|| {
        let storage = open_storage(&base, storage_options)?;
        let end = offset.checked_add(length).ok_or_else(|| {
            crate::errors::raise(py, "InvalidInputError", format!("{path}: range past 2^64"))
        })?;
        let bytes = block_on(py, async move {
            storage.get_range(&storage.path(&path), offset..end).await
        })
        .py()?;
        Ok(pyo3::types::PyBytes::new(py, &bytes).unbind())
    })
}

/// Delete the object at `path` below `base` (it must exist).
#[pyfunction]
#[pyo3(signature = (base, path, storage_options=None))]
pub fn _store_delete(
    py: Python<'_>,
    base: String,
    path: String,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<()> {
    guard(|| {
        let storage = open_storage(&base, storage_options)?;
        block_on(py, async move {
            storage.delete_existing(&storage.path(&path)).await
        })
        .py()
    })
}

/// Copy a local file to `remote` below `base` (`upload`), or `remote` to a local file.
#[pyfunction]
#[pyo3(signature = (base, local, remote, upload, storage_options=None))]
pub fn _store_transfer(
    py: Python<'_>,
    base: String,
    local: String,
    remote: String,
    upload: bool,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<()> {
    guard(|| {
        let storage = open_storage(&base, storage_options)?;
        block_on(py, async move {
            let (local, remote) = (std::path::Path::new(&local), storage.path(&remote));
            match upload {
                true => storage.upload(local, &remote).await,
                false => storage.download(&remote, local).await,
            }
        })
        .py()
    })
}

/// Reads the storage layer made in this process (pylance's `iops_counter`).
#[pyfunction]
pub fn iops_counter() -> u64 {
    lance_core::storage::counters::reads()
}

/// Bytes those reads returned (pylance's `bytes_read_counter`).
#[pyfunction]
pub fn bytes_read_counter() -> u64 {
    lance_core::storage::counters::bytes_read()
}

/// Rows scans read before their filters, in this process (`analyze_plan`'s `rows_scanned`).
#[pyfunction]
pub fn _rows_scanned_counter() -> u64 {
    lance_core::storage::counters::rows_scanned()
}

/// Every file under the dataset's root, as (path, size, modification time in µs since the
/// epoch).
#[pyfunction]
pub fn _all_files(
    py: Python<'_>,
    ds: &crate::dataset::PyDataset,
) -> PyResult<Vec<(String, u64, i64)>> {
    guard(|| {
        let storage = ds.inner.storage().clone();
        let files = block_on(py, async move {
            lance_core::table::tracked_files::all_files(&storage).await
        })
        .py()?;
        Ok(files
            .into_iter()
            .map(|f| (f.path, f.size_bytes, f.last_modified_micros))
            .collect())
    })
}
