//! `Session`: the caches datasets share (pylance's `lance.Session`).
use std::sync::Arc;

use lance_core::session::Session;
use pyo3::prelude::*;

#[pyclass(name = "Session", module = "lance_core", frozen)]
pub struct PySession {
    pub(crate) inner: Arc<Session>,
}

#[pymethods]
impl PySession {
    /// A session with caches of its own; a size left out takes the default.
    #[new]
    #[pyo3(signature = (index_cache_size_bytes=None, metadata_cache_size_bytes=None))]
    fn new(index_cache_size_bytes: Option<u64>, metadata_cache_size_bytes: Option<u64>) -> Self {
        use lance_core::session::{DEFAULT_INDEX_CACHE_BYTES, DEFAULT_METADATA_CACHE_BYTES};
        PySession {
            inner: Arc::new(Session::new(
                index_cache_size_bytes.unwrap_or(DEFAULT_INDEX_CACHE_BYTES),
                metadata_cache_size_bytes.unwrap_or(DEFAULT_METADATA_CACHE_BYTES),
            )),
        }
    }

    /// Bytes held by the session's caches.
    fn size_bytes(&self) -> u64 {
        self.inner.size_bytes()
    }

    /// Entries held by the session's caches.
    fn approx_num_items(&self) -> usize {
        self.inner.approx_num_items()
    }

    /// Bytes held by the index cache.
    fn index_cache_size_bytes(&self) -> u64 {
        self.inner.index.size_bytes()
    }

    /// Bytes held by the metadata cache.
    fn metadata_cache_size_bytes(&self) -> u64 {
        self.inner.metadata.size_bytes()
    }

    /// The most bytes each cache keeps: (index, metadata).
    fn capacity_bytes(&self) -> (u64, u64) {
        (self.inner.index.capacity(), self.inner.metadata.capacity())
    }

    fn is_same_as(&self, other: &PySession) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    fn __repr__(&self) -> String {
        format!(
            "Session(index_cache_size_bytes={}, metadata_cache_size_bytes={})",
            self.inner.index.size_bytes(),
            self.inner.metadata.size_bytes()
        )
    }
}
