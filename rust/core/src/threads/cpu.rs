//! CPU-bound work (decoding pages) runs on the CPU pool (`threads`), one thread per core,
//! so the async runtime's threads stay free for I/O. A panic in the work becomes an error.
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use tokio::sync::oneshot;

use crate::error::{Error, Result};

/// The message of a caught panic.
pub fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .map(|s| s.as_str())
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic")
        .to_string()
}

/// Run `f`, turning a panic into an error about `what`.
pub fn catch_panic<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        Err(Error::corrupt(
            what,
            format!(
                "internal error while decoding: {}",
                panic_message(p.as_ref())
            ),
        ))
    })
}

/// Start `f` on the CPU pool; the receiver gets its result.
pub fn start_cpu<T, F>(what: String, f: F) -> oneshot::Receiver<Result<T>>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    crate::threads::spawn(move || {
        let _ = tx.send(catch_panic(&what, f));
    });
    rx
}

/// Work on fewer bytes than this runs on the calling thread: handing it to the pool and
/// waking up for the result would cost more than doing it.
pub const INLINE_CPU_BYTES: u64 = 64 * 1024;

/// Run `f` (work on about `bytes` bytes) here when it is small, else on the CPU pool.
pub async fn run_cpu<T, F>(what: String, bytes: u64, f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    if bytes < INLINE_CPU_BYTES {
        return catch_panic(&what, f);
    }
    spawn_cpu(what, f).await
}

/// Run `f` on the CPU pool and wait for it.
pub async fn spawn_cpu<T, F>(what: String, f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    let name = what.clone();
    start_cpu(what, f)
        .await
        .map_err(|_| Error::corrupt(name, "decoding task was lost"))?
}
