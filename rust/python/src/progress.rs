//! pylance's `progress=` objects (`lance_core.progress.FragmentWriteProgress`) as the core's
//! `WriteProgress`: each event calls the object's `_do_begin` / `_do_complete` with the
//! fragment as pylance's JSON.
use std::sync::Arc;

use lance_core::proto::table::DataFragment;
use lance_core::table::fragment_json::fragment_to_json;
use lance_core::write::{ProgressHook, WriteProgress};
use pyo3::prelude::*;

struct PyProgress(Py<PyAny>);

impl PyProgress {
    fn call(&self, method: &str, fragment: &DataFragment) -> lance_core::Result<()> {
        let text = fragment_to_json(fragment).to_string();
        Python::attach(|py| {
            self.0
                .bind(py)
                .call_method1(method, (text,))
                .map(|_| ())
                .map_err(|e| {
                    lance_core::Error::invalid(format!(
                        "the write's progress callback ({method}) failed: {e}"
                    ))
                })
        })
    }
}

impl WriteProgress for PyProgress {
    fn begin(&self, fragment: &DataFragment) -> lance_core::Result<()> {
        self.call("_do_begin", fragment)
    }
    fn complete(&self, fragment: &DataFragment) -> lance_core::Result<()> {
        self.call("_do_complete", fragment)
    }
}

/// The hook for a `progress=` argument (None: no progress object).
pub fn progress_hook(progress: Option<Bound<'_, PyAny>>) -> Option<ProgressHook> {
    progress.map(|p| ProgressHook(Arc::new(PyProgress(p.unbind()))))
}
