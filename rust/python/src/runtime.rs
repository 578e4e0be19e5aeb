//! The process's tokio runtime (made again in a child after `fork()`, see
//! `lance_core::threads`); blocking calls into it release the GIL.
use std::future::Future;

use lance_core::threads::PerProcess;
use pyo3::prelude::*;
use tokio::runtime::Runtime;

pub fn runtime() -> &'static Runtime {
    static RT: PerProcess<Runtime> = PerProcess::new();
    RT.get(|| {
        tokio::runtime::Builder::new_multi_thread()
            .thread_name("lance-core-io")
            // Local file reads run on blocking threads. Scans issue many small reads
            // (legacy files above all); without a cap each gets a thread, and each
            // thread keeps an allocator heap: hundreds of MB of resident memory.
            .max_blocking_threads(16)
            .enable_all()
            .build()
            .expect("cannot start the tokio runtime")
    })
}

/// Run `fut` to completion on the runtime with the GIL released.
pub fn block_on<F>(py: Python<'_>, fut: F) -> F::Output
where
    F: Future + Send,
    F::Output: Send,
{
    py.detach(|| runtime().block_on(fut))
}
