//! Process-wide counts of the reads the storage layer made and the bytes they returned
//! (pylance's `iops_counter` and `bytes_read_counter`): a read is one call on a store
//! (a whole object, a range, or the ranges of one file asked for together); and the rows
//! scans read before their filters (`LanceScanner.analyze_plan`'s `rows_scanned`).
use std::sync::atomic::{AtomicU64, Ordering};

static READS: AtomicU64 = AtomicU64::new(0);
static BYTES_READ: AtomicU64 = AtomicU64::new(0);
static ROWS_SCANNED: AtomicU64 = AtomicU64::new(0);

pub(crate) fn record(bytes: u64) {
    READS.fetch_add(1, Ordering::Relaxed);
    BYTES_READ.fetch_add(bytes, Ordering::Relaxed);
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
