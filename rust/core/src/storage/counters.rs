//! Counts of the requests the storage layer made: process-wide reads and the bytes they
//! returned (pylance's `iops_counter` and `bytes_read_counter`), reads and writes per
//! opened store (`IoStats`, pylance's `io_stats_snapshot`); and the rows scans read
//! before their filters (`LanceScanner.analyze_plan`'s `rows_scanned`). A read is one
//! call on a store (a whole object, a range, or the ranges of one file asked for
//! together); a write is one object put, or one part of an object uploaded in parts.
use std::sync::atomic::{AtomicU64, Ordering};

static READS: AtomicU64 = AtomicU64::new(0);
static BYTES_READ: AtomicU64 = AtomicU64::new(0);
static ROWS_SCANNED: AtomicU64 = AtomicU64::new(0);

fn record(bytes: u64) {
    READS.fetch_add(1, Ordering::Relaxed);
    BYTES_READ.fetch_add(bytes, Ordering::Relaxed);
}

/// The requests made through one opened store (and the stores derived from it: a
/// dataset's versions and base paths share their table's).
#[derive(Debug, Default)]
pub struct IoStats {
    read_iops: AtomicU64,
    read_bytes: AtomicU64,
    write_iops: AtomicU64,
    write_bytes: AtomicU64,
}

/// A reading of `IoStats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounts {
    pub read_iops: u64,
    pub read_bytes: u64,
    pub write_iops: u64,
    pub write_bytes: u64,
}

impl IoStats {
    /// One read of `bytes` (counted for the process too).
    pub(crate) fn read(&self, bytes: u64) {
        record(bytes);
        self.read_iops.fetch_add(1, Ordering::Relaxed);
        self.read_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// `requests` writes of `bytes` in all.
    pub(crate) fn wrote(&self, requests: u64, bytes: u64) {
        self.write_iops.fetch_add(requests, Ordering::Relaxed);
        self.write_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> IoCounts {
        IoCounts {
            read_iops: self.read_iops.load(Ordering::Relaxed),
            read_bytes: self.read_bytes.load(Ordering::Relaxed),
            write_iops: self.write_iops.load(Ordering::Relaxed),
            write_bytes: self.write_bytes.load(Ordering::Relaxed),
        }
    }

    /// The counts so far, starting again from zero.
    pub fn take(&self) -> IoCounts {
        IoCounts {
            read_iops: self.read_iops.swap(0, Ordering::Relaxed),
            read_bytes: self.read_bytes.swap(0, Ordering::Relaxed),
            write_iops: self.write_iops.swap(0, Ordering::Relaxed),
            write_bytes: self.write_bytes.swap(0, Ordering::Relaxed),
        }
    }
}

/// Reads made since the process started.
pub fn reads() -> u64 {
    READS.load(Ordering::Relaxed)
}

/// Bytes those reads returned.
pub fn bytes_read() -> u64 {
    BYTES_READ.load(Ordering::Relaxed)
}

/// A scan read `rows` rows (of the columns its filter needs, before the filter).
pub(crate) fn record_rows_scanned(rows: u64) {
    ROWS_SCANNED.fetch_add(rows, Ordering::Relaxed);
}

/// Rows scans have read since the process started.
pub fn rows_scanned() -> u64 {
    ROWS_SCANNED.load(Ordering::Relaxed)
}
