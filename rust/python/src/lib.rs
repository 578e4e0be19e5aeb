//! Python bindings of lance-core (`lance_core._lance_core`). Each file holds one concern:
//! `dataset` the dataset class, `arrow` the zero-copy hand-over of Arrow data, `errors`
//! the mapping of errors and panics to exceptions, `runtime` the async runtime.
mod arrow;
mod dataset;
mod errors;
mod runtime;

use pyo3::prelude::*;

/// Panics on purpose, to test that a panic reaches Python as an exception.
#[pyfunction]
fn _panic_for_test() -> PyResult<()> {
    errors::guard(|| panic!("deliberate test panic"))
}

#[pymodule]
fn _lance_core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<dataset::PyDataset>()?;
    m.add_class::<arrow::PyArrowSchema>()?;
    m.add_class::<arrow::PyArrowBatch>()?;
    m.add_class::<arrow::PyBatchIterator>()?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
