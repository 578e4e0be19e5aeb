//! Python bindings of lance-core (`lance_core._lance_core`). Each file holds one concern:
//! `dataset/` the dataset class (one file per concern: reads, changes, indices, versions,
//! maintenance), `write` new data files, `commit` new versions, `file_api` single Lance
//! files, `blobs` blob columns read as files, `nearest` vector-search queries, `session` the
//! caches datasets share, `files` job files beside the table, `row_changes` the pieces of
//! distributed updates and merges, `arrow_export` and `arrow_import` the zero-copy hand-over
//! of Arrow data each way, `namespace` the directory catalog (`lance_core.namespace`),
//! `errors` the mapping of errors and panics to exceptions, `runtime` the async runtime.
mod arrow_export;
mod arrow_import;
mod bases;
mod blobs;
mod commit;
mod dataset;
mod errors;
mod file_api;
mod files;
mod filters;
mod history;
mod ivf_params;
mod logging;
mod merge_clauses;
mod namespace;
mod nearest;
mod progress;
mod row_changes;
mod runtime;
mod schema;
mod session;
mod spark;
mod staged;
mod write;

use pyo3::prelude::*;

/// Panics on purpose, to test that a panic reaches Python as an exception.
#[pyfunction]
fn _panic_for_test() -> PyResult<()> {
    errors::guard(|| panic!("deliberate test panic"))
}

#[pymodule]
fn _lance_core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    logging::init();
    m.add_class::<dataset::PyDataset>()?;
    m.add_class::<session::PySession>()?;
    m.add_class::<arrow_export::PyArrowSchema>()?;
    m.add_class::<arrow_export::PyArrowBatch>()?;
    m.add_class::<arrow_export::PyBatchIterator>()?;
    m.add_class::<staged::PyStagedFiles>()?;
    m.add_class::<file_api::PyFileWriter>()?;
    m.add_class::<blobs::PyBlobReader>()?;
    m.add_class::<blobs::PySidecarWriter>()?;
    m.add_class::<namespace::PyDirectoryNamespace>()?;
    m.add_function(wrap_pyfunction!(namespace::_namespace_page, m)?)?;
    m.add_function(wrap_pyfunction!(blobs::_take_blobs, m)?)?;
    m.add_function(wrap_pyfunction!(blobs::_read_blobs, m)?)?;
    m.add_function(wrap_pyfunction!(blobs::_read_blob_ranges, m)?)?;
    m.add_function(wrap_pyfunction!(blobs::_blob_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(file_api::_file_layout, m)?)?;
    m.add_function(wrap_pyfunction!(file_api::_file_global_buffer, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    m.add_function(wrap_pyfunction!(files::_copy_tree, m)?)?;
    m.add_function(wrap_pyfunction!(write::_write_dataset, m)?)?;
    m.add_function(wrap_pyfunction!(write::_write_fragments, m)?)?;
    m.add_function(wrap_pyfunction!(write::_check_append_columns, m)?)?;
    m.add_function(wrap_pyfunction!(commit::_commit, m)?)?;
    m.add_function(wrap_pyfunction!(commit::_fragment_to_json, m)?)?;
    m.add_function(wrap_pyfunction!(schema::_lance_schema_from_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(schema::_lance_schema_to_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(schema::_schema_to_json, m)?)?;
    m.add_function(wrap_pyfunction!(schema::_json_to_schema, m)?)?;
    m.add_function(wrap_pyfunction!(schema::_lance_schema_fields, m)?)?;
    m.add_function(wrap_pyfunction!(commit::_fragment_from_json, m)?)?;
    m.add_class::<filters::PyFilter>()?;
    m.add_class::<merge_clauses::PyMergeClauses>()?;
    m.add_function(wrap_pyfunction!(filters::_parse_select, m)?)?;
    m.add_function(wrap_pyfunction!(spark::_spark_predicates, m)?)?;
    m.add_function(wrap_pyfunction!(spark::_to_table_batch, m)?)?;
    m.add_function(wrap_pyfunction!(spark::_spark_schema, m)?)?;
    m.add_function(wrap_pyfunction!(spark::_balanced_groups, m)?)?;
    m.add_function(wrap_pyfunction!(history::_transactions, m)?)?;
    m.add_function(wrap_pyfunction!(history::_find_transaction, m)?)?;
    m.add_function(wrap_pyfunction!(history::_changes_since, m)?)?;
    m.add_function(wrap_pyfunction!(history::_tracked_files, m)?)?;
    m.add_function(wrap_pyfunction!(files::_all_files, m)?)?;
    m.add_function(wrap_pyfunction!(files::_job_files, m)?)?;
    m.add_function(wrap_pyfunction!(files::_drop_dataset, m)?)?;
    m.add_function(wrap_pyfunction!(files::_object_exists, m)?)?;
    m.add_function(wrap_pyfunction!(files::_store_list, m)?)?;
    m.add_function(wrap_pyfunction!(files::_store_list_meta, m)?)?;
    m.add_function(wrap_pyfunction!(files::iops_counter, m)?)?;
    m.add_function(wrap_pyfunction!(files::bytes_read_counter, m)?)?;
    m.add_function(wrap_pyfunction!(files::_rows_scanned_counter, m)?)?;
    m.add_function(wrap_pyfunction!(files::_store_read_range, m)?)?;
    m.add_function(wrap_pyfunction!(files::_store_delete, m)?)?;
    m.add_function(wrap_pyfunction!(files::_store_transfer, m)?)?;
    m.add_function(wrap_pyfunction!(row_changes::_update_part, m)?)?;
    m.add_function(wrap_pyfunction!(row_changes::_merge_part, m)?)?;
    m.add_function(wrap_pyfunction!(row_changes::_commit_update_parts, m)?)?;
    m.add_function(wrap_pyfunction!(row_changes::_commit_merge_parts, m)?)?;
    {
        use lance_core::write::merge_insert as mi;
        m.add("MERGE_JOINED_ADDRESS", mi::JOINED_ADDRESS)?;
        m.add("MERGE_JOINED_ROW_ID", mi::JOINED_ROW_ID)?;
        m.add("MERGE_JOINED_FROM_SOURCE", mi::JOINED_FROM_SOURCE)?;
        m.add("MERGE_JOINED_BY_SOURCE", mi::JOINED_BY_SOURCE)?;
    }
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

/// mimalloc returns freed pages to the OS promptly, where glibc's arenas keep them, so the
/// process's resident memory tracks what a scan really holds.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
