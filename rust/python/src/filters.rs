//! Filters as typed values: `_Filter` holds the core's `Expr`, read once from SQL text or
//! from a pyarrow compute expression (as pyarrow serializes it), and `Filter` is the one
//! conversion every binding entry point taking a filter uses (a `_Filter` as it is, SQL
//! text parsed). A pyarrow expression is never printed to SQL and parsed again.
//! `_parse_select`: a SELECT statement as the parts of a scan (`ds.sql`).
use lance_core::expr::Expr;
use pyo3::prelude::*;

use crate::errors::{guard, raise, IntoPyResult};

#[pyclass(name = "_Filter", module = "lance_core._lance_core", frozen)]
pub struct PyFilter {
    expr: Expr,
}

#[pymethods]
impl PyFilter {
    /// SQL text, parsed here: a bad filter fails where it was given, naming it.
    #[staticmethod]
    fn sql(text: &str) -> PyResult<Self> {
        guard(|| {
            Ok(PyFilter {
                expr: lance_core::expr::parse(text).py()?,
            })
        })
    }

    /// A pyarrow compute expression, from the bytes pyarrow serializes it to.
    #[staticmethod]
    fn pyarrow(data: &[u8]) -> PyResult<Self> {
        guard(|| {
            Ok(PyFilter {
                expr: lance_core::expr::from_pyarrow(data).py()?,
            })
        })
    }

    /// Both filters (`a & b`: SQL's AND).
    fn __and__(&self, other: Filter) -> Self {
        PyFilter {
            expr: self.expr.clone().and(other.0),
        }
    }

    /// The filter as SQL, for plans and messages.
    fn __str__(&self) -> String {
        self.expr.to_string()
    }

    fn __repr__(&self) -> String {
        format!("_Filter({:?})", self.expr.to_string())
    }

    /// Pickled as its SQL printing, which reads back as the same expression (how Spark
    /// ships a filter to executors).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (String,))> {
        let sql = slf.py().get_type::<Self>().getattr("sql")?;
        Ok((sql, (slf.get().expr.to_string(),)))
    }
}

/// A filter argument: a `_Filter` (its expression as it is) or SQL text (parsed).
pub struct Filter(pub Expr);

impl<'a, 'py> FromPyObject<'a, 'py> for Filter {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(f) = obj.cast::<PyFilter>() {
            return Ok(Filter(f.get().expr.clone()));
        }
        if let Ok(text) = obj.extract::<String>() {
            return guard(|| Ok(Filter(lance_core::expr::parse(&text).py()?)));
        }
        let kind = obj
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        Err(raise(
            obj.py(),
            "InvalidInputError",
            format!("a filter is SQL text or a pyarrow compute expression, not a {kind}"),
        ))
    }
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
