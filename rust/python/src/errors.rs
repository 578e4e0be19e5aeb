//! Errors → Python exceptions. The exception classes live in `lance_core.errors` (so they
//! can inherit from both our base class and the matching builtin); panics are caught here
//! and raised as errors too, never as a process abort.
use std::panic::{catch_unwind, AssertUnwindSafe};

use lance_core::Error;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

fn exception_class(e: &Error) -> &'static str {
    match e {
        Error::NotFound { .. } => "DatasetNotFoundError",
        Error::Corrupt { .. } | Error::Arrow(_) => "CorruptFileError",
        Error::Unsupported { .. } => "UnsupportedFeatureError",
        Error::InvalidInput(_) => "InvalidInputError",
        Error::SchemaMismatch(_) => "SchemaMismatchError",
        Error::Conflict(_) => "CommitConflictError",
        Error::Incompatible(_) => "IncompatibleTransactionError",
        Error::Io { .. } => "LanceIOError",
        Error::OutcomeUnknown { .. } => "OutcomeUnknownError",
    }
}

/// Raise `class_name` from `lance_core.errors` with `message`.
pub fn raise(py: Python<'_>, class_name: &str, message: String) -> PyErr {
    let class = py
        .import("lance_core.errors")
        .and_then(|m| m.getattr(class_name));
    match class {
        Ok(cls) => match cls.call1((message.clone(),)) {
            Ok(instance) => PyErr::from_value(instance),
            Err(e) => e,
        },
        Err(_) => PyRuntimeError::new_err(message),
    }
}

pub fn to_py(e: Error) -> PyErr {
    Python::attach(|py| raise(py, exception_class(&e), e.to_string()))
}

pub trait IntoPyResult<T> {
    fn py(self) -> PyResult<T>;
}
impl<T> IntoPyResult<T> for Result<T, Error> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

/// Run a binding's body; a panic inside becomes a `lance_core.errors.LanceError`.
pub fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(panic) => {
            let msg = lance_core::threads::cpu::panic_message(panic.as_ref());
            let message = format!("internal error in lance_core (please report): {msg}");
            Err(Python::attach(|py| raise(py, "LanceError", message)))
        }
    }
}
