//! Errors → Python exceptions. The exception classes live in `lance_core.errors` (so they
//! can inherit from both our base class and the matching builtin), a catalog's in
//! `lance_namespace.errors` (the namespace protocol's, pylance's too); panics are caught
//! here and raised as errors too, never as a process abort.
use std::panic::{catch_unwind, AssertUnwindSafe};

use lance_core::error::NamespaceErrorKind;
use lance_core::Error;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

const LANCE_ERRORS: &str = "lance_core.errors";
const NAMESPACE_ERRORS: &str = "lance_namespace.errors";

/// The module and class an error is raised as.
fn exception_class(e: &Error) -> (&'static str, &'static str) {
    let class = match e {
        Error::NotFound { .. } => "DatasetNotFoundError",
        Error::Corrupt { .. } | Error::Arrow(_) => "CorruptFileError",
        Error::Unsupported { .. } => "UnsupportedFeatureError",
        Error::InvalidInput(_) => "InvalidInputError",
        Error::SchemaMismatch(_) => "SchemaMismatchError",
        Error::Conflict(_) => "CommitConflictError",
        Error::Incompatible(_) => "IncompatibleTransactionError",
        Error::Io { .. } => "LanceIOError",
        Error::OutcomeUnknown { .. } => "OutcomeUnknownError",
        Error::Namespace { kind, .. } => return (NAMESPACE_ERRORS, namespace_class(*kind)),
    };
    (LANCE_ERRORS, class)
}

/// The class of `lance_namespace.errors` of each kind a catalog refuses with.
fn namespace_class(kind: NamespaceErrorKind) -> &'static str {
    match kind {
        NamespaceErrorKind::Unsupported => "UnsupportedOperationError",
        NamespaceErrorKind::NamespaceNotFound => "NamespaceNotFoundError",
        NamespaceErrorKind::NamespaceAlreadyExists => "NamespaceAlreadyExistsError",
        NamespaceErrorKind::NamespaceNotEmpty => "NamespaceNotEmptyError",
        NamespaceErrorKind::TableNotFound => "TableNotFoundError",
        NamespaceErrorKind::TableAlreadyExists => "TableAlreadyExistsError",
        NamespaceErrorKind::InvalidInput => "InvalidInputError",
        NamespaceErrorKind::InvalidTableState => "InvalidTableStateError",
    }
}

/// Raise `class_name` from `lance_core.errors` with `message`.
pub fn raise(py: Python<'_>, class_name: &str, message: String) -> PyErr {
    raise_in(py, LANCE_ERRORS, class_name, message)
}

/// Raise `class_name` from `module` with `message` (a `RuntimeError` when there is no
/// such class).
fn raise_in(py: Python<'_>, module: &str, class_name: &str, message: String) -> PyErr {
    let class = py.import(module).and_then(|m| m.getattr(class_name));
    match class {
        Ok(cls) => match cls.call1((message.clone(),)) {
            Ok(instance) => PyErr::from_value(instance),
            Err(e) => e,
        },
        Err(_) => PyRuntimeError::new_err(message),
    }
}

pub fn to_py(e: Error) -> PyErr {
    let (module, class) = exception_class(&e);
    Python::attach(|py| raise_in(py, module, class, e.to_string()))
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
