//! `_pyarrow_filter`: a pyarrow compute expression (as pyarrow serializes it) as the SQL
//! text of the same filter, so that every filter argument also takes `pc.field("a") > 5`;
//! `_parse_select`: a SELECT statement as the parts of a scan (`ds.sql`).
use pyo3::prelude::*;

use crate::errors::{guard, IntoPyResult};

#[pyfunction]
pub fn _pyarrow_filter(data: &[u8]) -> PyResult<String> {
    guard(|| Ok(lance_core::expr::from_pyarrow(data).py()?.to_string()))
}

/// A SELECT's outputs (None for `*`, else (name, SQL)), table, filter, order (column,
/// ascending, nulls first), limit and offset.
type SelectParts = (
    Vec<Option<(String, String)>>,
    String,
    Option<String>,
    Vec<(String, bool, bool)>,
    Option<u64>,
    Option<u64>,
);

#[pyfunction]
pub fn _parse_select(sql: &str) -> PyResult<SelectParts> {
    use lance_core::expr::select::{parse_select, Output};
    guard(|| {
        let s = parse_select(sql).py()?;
        let outputs = s
            .outputs
            .into_iter()
            .map(|o| match o {
                Output::All => None,
                Output::Value { name, sql } => Some((name, sql)),
            })
            .collect();
        Ok((outputs, s.table, s.filter, s.order_by, s.limit, s.offset))
    })
}
