//! The process's tokio runtime (`lance_core::threads::io_runtime`, made again in a child
//! after `fork()`); blocking calls into it release the GIL.
use std::future::Future;

use pyo3::prelude::*;
use tokio::runtime::Runtime;

pub fn runtime() -> &'static Runtime {
    lance_core::threads::io_runtime()
}

/// Run `f` to completion on the runtime with the GIL released.
pub fn block_on<F>(py: Python<'_>, fut: F) -> F::Output
where
    F: Future + Send,
    F::Output: Send,
{
    py.detach(|| runtime().block_on(fut))
}
