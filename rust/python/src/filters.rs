//! `_pyarrow_filter`: a pyarrow compute expression (as pyarrow serializes it) as the SQL
//! text of the same filter, so that every filter argument also takes `pc.field("a") > 5`.
use pyo3::prelude::*;

use crate::errors::{guard, IntoPyResult};

#[pyfunction]
pub fn _pyarrow_filter(data: &[u8]) -> PyResult<String> {
    guard(|| Ok(lance_core::expr::from_pyarrow(data).py()?.to_string()))
}
