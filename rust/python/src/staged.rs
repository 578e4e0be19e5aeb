//! `_StagedFiles`: the core's staged-files guard for writers driven from Python (a Python
//! function computing new columns, fragment by fragment, then one commit). Used as a
//! context manager: leaving it by an exception removes every staged file.
use pyo3::prelude::*;
use std::collections::HashMap;

use lance_core::storage::Storage;
use lance_core::table::transaction::Staged;

use crate::commit::decode_fragments;
use crate::errors::{guard, IntoPyResult};
use crate::runtime::block_on;

#[pyclass(name = "_StagedFiles")]
pub struct PyStagedFiles {
    /// None once settled.
    staged: Option<Staged>,
}

#[pymethods]
impl PyStagedFiles {
    #[new]
    #[pyo3(signature = (uri, storage_options=None))]
    fn new(uri: String, storage_options: Option<HashMap<String, String>>) -> PyResult<Self> {
        let storage = Storage::open(&uri, &storage_options.unwrap_or_default()).py()?;
        Ok(PyStagedFiles {
            staged: Some(Staged::new(&storage)),
        })
    }

    /// Stage the data files of `fragments` (metadata bytes); with `last_file_only`, only
    /// each fragment's newest file (the one `merge_columns` added).
    #[pyo3(signature = (fragments, last_file_only=false))]
    fn add_fragments(
        &self,
        py: Python<'_>,
        fragments: Vec<Vec<u8>>,
        last_file_only: bool,
    ) -> PyResult<()> {
        let staged = self.staged.as_ref().ok_or_else(|| {
            pyo3::exceptions::PyRuntimeError::new_err("these staged files were settled already")
        })?;
        for mut f in decode_fragments(py, &fragments)? {
            if last_file_only {
                let n = f.files.len().saturating_sub(1);
                f.files.drain(..n);
            }
            staged.add_fragments(&[f]);
        }
        Ok(())
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Leaving normally keeps the files (they were committed); leaving by an exception
    /// removes them, but when it is an `OutcomeUnknownError` (the commit may have
    /// happened, and its version then refers to them). The exception goes on.
    fn __exit__(
        &mut self,
        py: Python<'_>,
        exc_type: Option<Bound<'_, PyAny>>,
        _exc: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        guard(|| {
            if let Some(staged) = self.staged.take() {
                match exc_type {
                    Some(t) if !is_outcome_unknown(py, &t)? => {
                        block_on(py, async move { staged.remove_all().await })
                    }
                    _ => staged.keep(),
                }
            }
            Ok(false)
        })
    }
}

/// Whether `exc_type` is `lance_core.errors.OutcomeUnknownError` (or a subclass).
fn is_outcome_unknown(py: Python<'_>, exc_type: &Bound<'_, PyAny>) -> PyResult<bool> {
    let unknown = py
        .import("lance_core.errors")?
        .getattr("OutcomeUnknownError")?;
    match exc_type.cast::<pyo3::types::PyType>() {
        Ok(t) => t.is_subclass(&unknown),
        Err(_) => Ok(false),
    }
}
