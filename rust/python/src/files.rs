//! Object-level helpers over a dataset's store, for what sits outside the table format:
//! the data files and abort markers of a distributed job, copying whole trees, and the
//! object operations of a file session (`lance_core.file.LanceFileSession`).
use pyo3::prelude::*;
use std::collections::HashMap;

use lance_core::storage::Storage;

use crate::errors::{guard, IntoPyResult};
use crate::runtime::block_on;

pub(crate) fn open_storage(
    uri: &str,
    options: Option<HashMap<String, String>>,
) -> PyResult<Storage> {
    Storage::open(uri, &options.unwrap_or_default()).py()
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
        let storage = open_storage(&uri, storage_options)?;
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

/// Delete the files of index segments `uuids` (their directories `_indices/<uuid>/`)
/// that were written but never committed, e.g. by the tasks of an aborted Spark job.
/// Missing ones are fine.
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

#[pyfunction]
#[pyo3(signature = (uri, uuids, storage_options=None))]
pub fn _delete_index_dirs(
    py: Python<'_>,
    uri: String,
    uuids: Vec<String>,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<()> {
    guard(|| {
        let storage = open_storage(&uri, storage_options)?;
        block_on(py, async move {
            for u in uuids {
                if u.is_empty() || !u.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
                    return Err(lance_core::Error::invalid(format!(
                        "{uri}: '{u}' is not an index segment's uuid"
                    )));
                }
                storage.delete_tree(&format!("_indices/{u}")).await?;
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
        let storage = open_storage(&uri, storage_options)?;
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
        let storage = open_storage(&uri, storage_options)?;
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
        let storage = open_storage(&uri, storage_options)?;
        let files = block_on(py, async move { storage.list_dir("data").await }).py()?;
        Ok(files
            .iter()
            .filter_map(|m| m.location.filename().map(str::to_string))
            .filter(|n| n.starts_with(&prefix))
            .collect())
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
