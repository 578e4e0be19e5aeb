//! The process's worker threads (the CPU pool and the async runtime the bindings block
//! on), made again in a child after `fork()`: a forked child has only the thread
//! that forked, so work handed to its parent's pool would wait forever. Python programs
//! fork (multiprocessing's default start method on Linux) after using the library.
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use std::sync::Mutex;

pub mod cpu;

/// A value made once per process: `get` makes it again when the process id changed. The
/// parent's value is leaked in the child (its threads are gone; dropping it could wait on
/// them).
pub struct PerProcess<T: 'static> {
    pid: AtomicU32,
    value: AtomicPtr<T>,
    making: Mutex<()>,
}

impl<T: 'static> PerProcess<T> {
    pub const fn new() -> Self {
        PerProcess {
            pid: AtomicU32::new(0),
            value: AtomicPtr::new(std::ptr::null_mut()),
            making: Mutex::new(()),
        }
    }

    pub fn get(&'static self, make: impl FnOnce() -> T) -> &'static T {
        let pid = std::process::id();
        if self.pid.load(Ordering::Acquire) == pid {
            // Set (with its pid) under `making` before the pid is published.
            return unsafe { &*self.value.load(Ordering::Acquire) };
        }
        let _guard = self.making.lock().unwrap_or_else(|e| e.into_inner());
        if self.pid.load(Ordering::Acquire) != pid {
            let made: &'static mut T = Box::leak(Box::new(make()));
            self.value.store(made, Ordering::Release);
            self.pid.store(pid, Ordering::Release);
        }
        unsafe { &*self.value.load(Ordering::Acquire) }
    }
}

impl<T: 'static> Default for PerProcess<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// The CPU pool (decoding, index builds, key lookups), one thread per core.
pub fn cpu_pool() -> &'static rayon::ThreadPool {
    static POOL: PerProcess<rayon::ThreadPool> = PerProcess::new();
    POOL.get(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("lance-core-cpu-{i}"))
            .build()
            .expect("cannot start the CPU thread pool")
    })
}

/// The async runtime that the bindings (Python, JNI) block on. Local file reads run on
/// blocking threads, and scans issue many small reads (legacy files above all): without a
/// cap each gets a thread, and each thread keeps an allocator heap, hundreds of MB of
/// resident memory.
pub fn io_runtime() -> &'static tokio::runtime::Runtime {
    static RT: PerProcess<tokio::runtime::Runtime> = PerProcess::new();
    RT.get(|| {
        tokio::runtime::Builder::new_multi_thread()
            .thread_name("lance-core-io")
            .max_blocking_threads(16)
            .enable_all()
            .build()
            .expect("cannot start the tokio runtime")
    })
}

/// Run `f` on the CPU pool, not waiting for it.
pub fn spawn(f: impl FnOnce() + Send + 'static) {
    cpu_pool().spawn(f)
}

/// Run `f` in the CPU pool and wait for it: rayon's parallel iterators inside it use the
/// pool's threads.
pub fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    cpu_pool().install(f)
}

/// How many threads the CPU pool has.
pub fn num_threads() -> usize {
    cpu_pool().current_num_threads()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_pool_runs_work() {
        use rayon::prelude::*;
        let sum: u64 = super::install(|| (0..1000u64).into_par_iter().sum());
        assert_eq!(sum, 499_500);
        let (tx, rx) = std::sync::mpsc::channel();
        super::spawn(move || tx.send(7).unwrap());
        assert_eq!(rx.recv().unwrap(), 7);
        assert!(super::num_threads() >= 1);
    }
}
