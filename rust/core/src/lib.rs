//! lance-core: a pure-Rust implementation of the Lance table format.
//!
//! Layers, bottom up (see ARCHITECTURE.md): `storage` (object stores and byte ranges),
//! `encoding` (page layouts and compression ↔ Arrow), `file` (the v2 file container), `table`
//! (manifests, versions, schemas, fragments, deletions, row ids, index segments),
//! `dataset` (a version of a table, opened), `scan` (streaming reads and takes of its
//! rows), `index` / `vector` / `blob` (what indices answer, vectors, blob bytes), `query`
//! (a read as a user asks for it, planned over those), `write` (every change, committed)
//! and `namespace` (catalogs of tables named by ids, kept in Lance tables).
pub mod blob;
pub mod dataset;
pub mod error;
pub mod expr;
pub mod file;
pub mod file_table;
/// Entry points for the fuzz targets (`fuzz/`); their seeds and smoke test are test-only.
#[doc(hidden)]
pub mod fuzzing;
pub mod index;
pub mod namespace;
pub mod proto;
pub mod query;
pub mod storage;

pub use error::{Error, Result};
pub mod encoding;
pub mod scan;
pub mod session;
pub mod spark;
pub mod table;
#[cfg(test)]
mod test_util;
pub mod threads;
pub mod vector;
pub mod write;

pub use dataset::{Dataset, VersionRef};
pub use query::{run as query, Query};
pub use scan::{scan, Scan, ScanOptions};
