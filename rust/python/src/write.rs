//! `_write_dataset` (write and commit) and `_write_fragments` (write data files only, for
//! a caller that commits later, like a distributed job's driver).
use arrow_array::RecordBatchReader;
use lance_core::write::blob_v2::{BlobWriteOptions, ExternalBlobMode};
use lance_core::write::{write_dataset, WriteMode, WriteOptions};
use pyo3::prelude::*;
use std::collections::HashMap;

use crate::arrow_import::{batch_stream, import_schema, import_stream};
use crate::bases::BaseArg;
use crate::dataset::PyDataset;
use crate::errors::{guard, raise, IntoPyResult};
use crate::runtime::block_on;

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

/// The options both write entry points take from Python.
fn write_options(
    py: Python<'_>,
    mode: &str,
    max_rows_per_file: u64,
    max_bytes_per_file: Option<u64>,
    data_storage_version: Option<String>,
    storage_options: Option<HashMap<String, String>>,
    bases: (Option<Vec<BaseArg>>, Option<Vec<String>>),
) -> PyResult<WriteOptions> {
    let (initial_bases, target_bases) = bases;
    let mut opts = WriteOptions {
        mode: self::mode(py, mode)?,
        max_rows_per_file,
        data_storage_version,
        storage_options: storage_options.unwrap_or_default(),
        initial_bases: crate::bases::from_args(initial_bases),
        target_bases: target_bases.unwrap_or_default(),
        ..Default::default()
    };
    if let Some(b) = max_bytes_per_file {
        opts.max_bytes_per_file = b;
    }
    Ok(opts)
}

/// pylance's blob write parameters.
fn blob_options(
    py: Python<'_>,
    external_blob_mode: &str,
    allow_external_blob_outside_bases: bool,
    blob_pack_file_size_threshold: Option<u64>,
) -> PyResult<BlobWriteOptions> {
    let external = match external_blob_mode {
        "reference" => ExternalBlobMode::Reference,
        "ingest" => ExternalBlobMode::Ingest,
        other => {
            return Err(raise(
                py,
                "InvalidInputError",
                format!("external_blob_mode must be 'reference' or 'ingest', not '{other}'"),
            ))
        }
    };
    Ok(BlobWriteOptions {
        external,
        allow_outside_bases: allow_external_blob_outside_bases,
        pack_bytes: blob_pack_file_size_threshold,
        ..Default::default()
    })
}

#[pyfunction]
#[pyo3(signature = (data, uri, mode="create", max_rows_per_file=1048576, max_bytes_per_file=None, data_storage_version=None, enable_stable_row_ids=false, storage_options=None, external_blob_mode="reference", allow_external_blob_outside_bases=false, blob_pack_file_size_threshold=None, transaction_properties=None, progress=None, config_upsert=None, initial_bases=None, target_bases=None))]
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
    external_blob_mode: &str,
    allow_external_blob_outside_bases: bool,
    blob_pack_file_size_threshold: Option<u64>,
    transaction_properties: Option<HashMap<String, String>>,
    progress: Option<Bound<'_, PyAny>>,
    config_upsert: Option<HashMap<String, String>>,
    initial_bases: Option<Vec<BaseArg>>,
    target_bases: Option<Vec<String>>,
) -> PyResult<PyDataset> {
    guard(|| {
        let opts = WriteOptions {
            enable_stable_row_ids,
            config_upsert: config_upsert.unwrap_or_default(),
            progress: crate::progress::progress_hook(progress),
            transaction_properties: transaction_properties.unwrap_or_default(),
            blobs: blob_options(
                py,
                external_blob_mode,
                allow_external_blob_outside_bases,
                blob_pack_file_size_threshold,
            )?,
            ..write_options(
                py,
                mode,
                max_rows_per_file,
                max_bytes_per_file,
                data_storage_version,
                storage_options,
                (initial_bases, target_bases),
            )?
        };
        let reader = import_stream(&data)?;
        let schema = reader.schema();
        let batches = batch_stream(reader);
        let ds = block_on(py, write_dataset(&uri, schema, batches, opts)).py()?;
        Ok(PyDataset::from(ds))
    })
}

/// Write data files without committing; returns each fragment's metadata (protobuf bytes)
/// and the base paths a new table registers (with their ids).
#[pyfunction]
#[pyo3(signature = (data, uri, mode="append", max_rows_per_file=1048576, max_bytes_per_file=None, data_storage_version=None, storage_options=None, file_prefix=None, progress=None, fragment_id=0, initial_bases=None, target_bases=None))]
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
    progress: Option<Bound<'_, PyAny>>,
    fragment_id: u64,
    initial_bases: Option<Vec<BaseArg>>,
    target_bases: Option<Vec<String>>,
) -> PyResult<(Vec<Vec<u8>>, Vec<BaseArg>)> {
    use prost::Message;
    guard(|| {
        let opts = WriteOptions {
            file_prefix: checked_file_prefix(py, file_prefix)?,
            progress: crate::progress::progress_hook(progress),
            fragment_id,
            ..write_options(
                py,
                mode,
                max_rows_per_file,
                max_bytes_per_file,
                data_storage_version,
                storage_options,
                (initial_bases, target_bases),
            )?
        };
        let reader = import_stream(&data)?;
        let schema = reader.schema();
        let batches = batch_stream(reader);
        let (fragments, bases) = block_on(
            py,
            lance_core::write::write_uncommitted(&uri, schema, batches, opts),
        )
        .py()?;
        Ok((
            fragments.iter().map(|f| f.encode_to_vec()).collect(),
            crate::bases::to_args(&bases),
        ))
    })
}

/// Check that data with `incoming`'s columns can be appended to a dataset with
/// `existing`'s (the same names; types are converted batch by batch).
#[pyfunction]
pub fn _check_append_columns(
    existing: Bound<'_, PyAny>,
    incoming: Bound<'_, PyAny>,
    uri: &str,
) -> PyResult<()> {
    guard(|| {
        let existing = import_schema(&existing)?;
        let incoming = import_schema(&incoming)?;
        lance_core::write::check_append_columns(&existing, &incoming, uri).py()
    })
}
