//! The one error type of the core. Every variant carries enough context (the file or
//! dataset path and what was wrong) for a user to act on it; the Python bindings map each
//! kind to an exception class.
use std::fmt;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The dataset, version, tag or file does not exist.
    #[error("{path}: not found: {message}")]
    NotFound { path: String, message: String },
    /// A file exists but its bytes do not match the format (truncated, corrupt, bad magic).
    #[error("{path}: corrupt file: {message}")]
    Corrupt { path: String, message: String },
    /// Valid by the format, but uses something this reader does not implement
    /// (an encoding, a feature flag, a file version).
    #[error("{path}: not supported: {message}")]
    Unsupported { path: String, message: String },
    /// The caller asked for something invalid (unknown column, bad argument).
    #[error("{0}")]
    InvalidInput(String),
    /// Data given to an existing table does not fit its schema (a column missing, extra or
    /// of another type): invalid input, and, as pylance raises it, an I/O error in Python.
    #[error("{0}")]
    SchemaMismatch(String),
    /// Another writer committed first, and this operation cannot be applied on top of its
    /// change as prepared (it touched the same fragments, or changed what was read).
    /// Re-running the operation against the new version can succeed; update, delete and
    /// merge_insert do so by themselves.
    #[error("{0}")]
    Conflict(String),
    /// Another writer committed a change this operation cannot follow at all (it replaced
    /// the table the operation was written for); re-running will not help.
    #[error("{0}")]
    Incompatible(String),
    /// The object store failed (permissions, network, ...).
    #[error("{path}: I/O error: {message}")]
    Io { path: String, message: String },
    /// A write was sent but whether it happened cannot be told: its answer was lost and
    /// reading the object back did not settle it. For a commit, the version may exist or
    /// may not; the files it refers to are kept either way.
    #[error("{path}: outcome unknown: {message}")]
    OutcomeUnknown { path: String, message: String },
    /// Arrow rejected an array we built; always a bug or a corrupt file.
    #[error("arrow error: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// A catalog's rule refused the request (`crate::namespace`): what the namespace
    /// protocol has a class of error for, shown with its prefix as pylance shows it
    /// ("Table not found: table id 'a$b'").
    #[error("{kind}: {message}")]
    Namespace {
        kind: NamespaceErrorKind,
        message: String,
    },
}

/// The errors of the namespace protocol a catalog raises, each a class of its own in the
/// bindings (`lance_namespace.errors` in Python).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NamespaceErrorKind {
    Unsupported,
    NamespaceNotFound,
    NamespaceAlreadyExists,
    NamespaceNotEmpty,
    TableNotFound,
    TableAlreadyExists,
    InvalidInput,
    InvalidTableState,
}

impl NamespaceErrorKind {
    /// The protocol's error code (its `ErrorCode`, which REST servers send).
    pub fn code(self) -> u32 {
        match self {
            NamespaceErrorKind::Unsupported => 0,
            NamespaceErrorKind::NamespaceNotFound => 1,
            NamespaceErrorKind::NamespaceAlreadyExists => 2,
            NamespaceErrorKind::NamespaceNotEmpty => 3,
            NamespaceErrorKind::TableNotFound => 4,
            NamespaceErrorKind::TableAlreadyExists => 5,
            NamespaceErrorKind::InvalidInput => 13,
            NamespaceErrorKind::InvalidTableState => 19,
        }
    }

    /// The kind of a protocol error code, where it is one of these.
    pub fn of_code(code: u64) -> Option<Self> {
        [
            NamespaceErrorKind::Unsupported,
            NamespaceErrorKind::NamespaceNotFound,
            NamespaceErrorKind::NamespaceAlreadyExists,
            NamespaceErrorKind::NamespaceNotEmpty,
            NamespaceErrorKind::TableNotFound,
            NamespaceErrorKind::TableAlreadyExists,
            NamespaceErrorKind::InvalidInput,
            NamespaceErrorKind::InvalidTableState,
        ]
        .into_iter()
        .find(|k| u64::from(k.code()) == code)
    }
}

/// What pylance puts before the message of each kind (users match on the whole text).
impl fmt::Display for NamespaceErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NamespaceErrorKind::Unsupported => "Unsupported",
            NamespaceErrorKind::NamespaceNotFound => "Namespace not found",
            NamespaceErrorKind::NamespaceAlreadyExists => "Namespace already exists",
            NamespaceErrorKind::NamespaceNotEmpty => "Namespace not empty",
            NamespaceErrorKind::TableNotFound => "Table not found",
            NamespaceErrorKind::TableAlreadyExists => "Table already exists",
            NamespaceErrorKind::InvalidInput => "Invalid input",
            NamespaceErrorKind::InvalidTableState => "Invalid table state",
        })
    }
}

impl Error {
    pub fn corrupt(path: impl fmt::Display, message: impl fmt::Display) -> Self {
        Error::Corrupt {
            path: path.to_string(),
            message: message.to_string(),
        }
    }
    pub fn unsupported(path: impl fmt::Display, message: impl fmt::Display) -> Self {
        Error::Unsupported {
            path: path.to_string(),
            message: message.to_string(),
        }
    }
    pub fn not_found(path: impl fmt::Display, message: impl fmt::Display) -> Self {
        Error::NotFound {
            path: path.to_string(),
            message: message.to_string(),
        }
    }
    pub fn invalid(message: impl fmt::Display) -> Self {
        Error::InvalidInput(message.to_string())
    }
    /// A column named by the caller (a dotted path) is not in the table at `uri` (in
    /// pylance's words, which its users match).
    pub fn no_column(uri: impl fmt::Display, path: impl fmt::Display) -> Self {
        Error::invalid(format!(
            "{uri}: Column \"{path}\" does not exist in the dataset"
        ))
    }
    pub fn namespace(kind: NamespaceErrorKind, message: impl fmt::Display) -> Self {
        Error::Namespace {
            kind,
            message: message.to_string(),
        }
    }
    pub fn schema_mismatch(message: impl fmt::Display) -> Self {
        Error::SchemaMismatch(message.to_string())
    }
    pub fn io(path: impl fmt::Display, err: impl fmt::Display) -> Self {
        Error::Io {
            path: path.to_string(),
            message: err.to_string(),
        }
    }

    /// Errors raised by pure decoding code do not know the file they came from; the
    /// caller that does adds it here.
    pub fn in_file(self, path: &str) -> Self {
        match self {
            Error::Corrupt { path: p, message } if p.is_empty() => Error::Corrupt {
                path: path.into(),
                message,
            },
            Error::Unsupported { path: p, message } if p.is_empty() => Error::Unsupported {
                path: path.into(),
                message,
            },
            Error::Arrow(e) => Error::Corrupt {
                path: path.into(),
                message: format!("decoded data rejected by arrow: {e}"),
            },
            other => other,
        }
    }
}

impl Error {
    /// Prefix the message of a format error with where it happened ("column 3", "page 2").
    pub fn context(self, what: &str) -> Self {
        match self {
            Error::Corrupt { path, message } => Error::Corrupt {
                path,
                message: format!("{what}: {message}"),
            },
            Error::Unsupported { path, message } => Error::Unsupported {
                path,
                message: format!("{what}: {message}"),
            },
            other => other,
        }
    }
}

/// Shorthand for errors in pure decoding code, where the file is added later by `in_file`.
pub fn corrupt(message: impl fmt::Display) -> Error {
    Error::corrupt("", message)
}
pub fn unsupported(message: impl fmt::Display) -> Error {
    Error::unsupported("", message)
}

impl From<object_store::Error> for Error {
    fn from(e: object_store::Error) -> Self {
        match e {
            object_store::Error::NotFound { path, .. } => Error::not_found(path, "no such object"),
            other => Error::io("", other),
        }
    }
}
