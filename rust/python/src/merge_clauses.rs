//! A merge's clauses as a typed value: `_MergeClauses` holds the core's `MergeInsert`
//! (its conditions already read as expressions), built once from pylance's builder
//! settings and handed as it is to `merge_insert`, `analyze_merge` and Spark's tasks.
//! It pickles as its settings with the conditions printed as SQL, which reads back as the
//! same expressions (how Spark ships it to executors).
use lance_core::write::merge_insert::{MergeInsert, WhenMatched};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::errors::raise;
use crate::filters::Filter;

#[pyclass(name = "_MergeClauses", module = "lance_core._lance_core", frozen)]
pub struct PyMergeClauses {
    params: MergeInsert,
}

impl PyMergeClauses {
    /// The core's parameters, with `retries` conflict retries.
    pub fn params(&self, retries: u32) -> MergeInsert {
        MergeInsert {
            conflict_retries: retries,
            ..self.params.clone()
        }
    }
}

#[pymethods]
impl PyMergeClauses {
    /// `when_matched` is "nothing", "update" (where `condition` holds, or always),
    /// "delete" or "fail"; `delete_by_source` deletes the table rows no source row
    /// matches (those where `by_source` holds, when given).
    #[new]
    #[pyo3(signature = (on, when_matched, condition=None, insert=false, delete_by_source=false, by_source=None))]
    fn new(
        py: Python<'_>,
        on: Vec<String>,
        when_matched: &str,
        condition: Option<Filter>,
        insert: bool,
        delete_by_source: bool,
        by_source: Option<Filter>,
    ) -> PyResult<Self> {
        let invalid = |m: String| raise(py, "InvalidInputError", m);
        let when_matched = match (when_matched, condition) {
            ("update", condition) => WhenMatched::UpdateAll {
                condition: condition.map(|c| c.0),
            },
            (_, Some(_)) => {
                return Err(invalid(format!(
                    "a merge's condition goes with when_matched \"update\", not {when_matched:?}"
                )))
            }
            ("nothing", None) => WhenMatched::DoNothing,
            ("delete", None) => WhenMatched::Delete,
            ("fail", None) => WhenMatched::Fail,
            (other, None) => return Err(invalid(format!("unknown when_matched action {other:?}"))),
        };
        if by_source.is_some() && !delete_by_source {
            return Err(invalid(
                "a by-source predicate goes with delete_by_source=True".to_string(),
            ));
        }
        Ok(PyMergeClauses {
            params: MergeInsert {
                on,
                when_matched,
                insert_not_matched: insert,
                delete_not_matched_by_source: delete_by_source.then(|| by_source.map(|p| p.0)),
                conflict_retries: 0,
            },
        })
    }

    /// Pickled as the constructor's arguments.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let p = &slf.get().params;
        let (action, condition) = match &p.when_matched {
            WhenMatched::DoNothing => ("nothing", None),
            WhenMatched::UpdateAll { condition } => ("update", condition.as_ref()),
            WhenMatched::Delete => ("delete", None),
            WhenMatched::Fail => ("fail", None),
        };
        let by_source = p.delete_not_matched_by_source.as_ref();
        let args = (
            p.on.clone(),
            action,
            condition.map(|c| c.to_string()),
            p.insert_not_matched,
            by_source.is_some(),
            by_source.and_then(|b| b.as_ref()).map(|b| b.to_string()),
        );
        let py = slf.py();
        Ok((py.get_type::<Self>().into_any(), args.into_pyobject(py)?))
    }

    fn __repr__(&self) -> String {
        format!("_MergeClauses({:?})", self.params)
    }
}
