//! CPU-bound work (decoding pages) runs on rayon's pool, sized to the machine's cores,
//! so the async runtime's threads stay free for I/O. A panic in the work becomes an error.
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::{Error, Result};

pub async fn spawn_cpu<T, F>(what: String, f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    let name = what.clone();
    rayon::spawn(move || {
        let out = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| {
            let msg = panic
                .downcast_ref::<String>()
                .map(|s| s.as_str())
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("unknown panic");
            Err(Error::corrupt(
                &name,
                format!("internal error while decoding: {msg}"),
            ))
        });
        let _ = tx.send(out);
    });
    rx.await
        .map_err(|_| Error::corrupt(what, "decoding task was lost"))?
}
