use pyo3::prelude::*;
#[pymodule]
fn _lance_core(_m: &Bound<'_, PyModule>) -> PyResult<()> { Ok(()) }
