//! Python bindings of lance-core (`lance_core._lance_core`). Each file holds one concern:
//! `dataset` the dataset class, `arrow` the zero-copy hand-over of Arrow data, `errors`
//! the mapping of errors and panics to exceptions, `runtime` the async runtime.
mod arrow;
mod dataset;
mod errors;
mod runtime;
mod write;

use pyo3::prelude::*;

/// Panics on purpose, to test that a panic reaches Python as an exception.
#[pyfunction]
fn _panic_for_test() -> PyResult<()> {
    errors::guard(|| panic!("deliberate test panic"))
}

/// Copy every file of a dataset (or any directory) between stores, e.g. a local
/// dataset into `memory://`. Internal: the tests use it to stage datasets.
#[pyfunction]
#[pyo3(signature = (src, dst, src_options=None, dst_options=None))]
fn _copy_tree(
    py: Python<'_>,
    src: String,
    dst: String,
    src_options: Option<std::collections::HashMap<String, String>>,
    dst_options: Option<std::collections::HashMap<String, String>>,
) -> PyResult<usize> {
    use errors::IntoPyResult;
    errors::guard(|| {
        let from =
            lance_core::storage::Storage::open(&src, &src_options.unwrap_or_default()).py()?;
        let to = lance_core::storage::Storage::open(&dst, &dst_options.unwrap_or_default()).py()?;
        runtime::block_on(py, from.copy_tree_to(&to)).py()
    })
}

#[pymodule]
fn _lance_core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<dataset::PyDataset>()?;
    m.add_class::<arrow::PyArrowSchema>()?;
    m.add_class::<arrow::PyArrowBatch>()?;
    m.add_class::<arrow::PyBatchIterator>()?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    m.add_function(wrap_pyfunction!(_copy_tree, m)?)?;
    m.add_function(wrap_pyfunction!(write::_write_dataset, m)?)?;
    m.add_function(wrap_pyfunction!(write::_write_fragments, m)?)?;
    m.add_function(wrap_pyfunction!(write::_commit, m)?)?;
    m.add_function(wrap_pyfunction!(write::_fragment_info, m)?)?;
    m.add_function(wrap_pyfunction!(write::_delete_data_files, m)?)?;
    m.add_function(wrap_pyfunction!(write::_put_object, m)?)?;
    m.add_function(wrap_pyfunction!(write::_object_exists, m)?)?;
    m.add_function(wrap_pyfunction!(write::_list_data_files, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

/// mimalloc returns freed pages to the OS promptly, where glibc's arenas keep them, so the
/// process's resident memory tracks what a scan really holds.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
