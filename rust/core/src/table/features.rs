//! Reader feature flags: bits a manifest sets when reading it needs a feature. A reader
//! must refuse a dataset with a bit it does not know.

/// Fragments may have deletion files.
pub const DELETION_FILES: u64 = 1;
/// Fragments carry stable row id sequences.
pub const STABLE_ROW_IDS: u64 = 2;
/// Deprecated marker of the v2 file format; nothing to do.
pub const USE_V2_FORMAT: u64 = 4;
/// The manifest has a table config.
pub const TABLE_CONFIG: u64 = 8;
/// Files may live under other base paths.
pub const BASE_PATHS: u64 = 16;
/// Transaction files may be missing (a writer concern).
pub const DISABLE_TRANSACTION_FILE: u64 = 32;
/// Index metadata only; does not change how rows are read.
pub const INDEX_METADATA: u64 = 128;
/// Data files of several file versions in one dataset (we read each file by its own version).
pub const MIXED_FILE_VERSIONS: u64 = 256;
/// Fragment-reuse index history (index-side only).
pub const FRAGMENT_REUSE_HISTORY: u64 = 1024;
/// Set by newer writers; does not change how rows are read.
pub const NON_REUSABLE_FIELD_IDS: u64 = 2048;

const KNOWN: u64 = DELETION_FILES
    | STABLE_ROW_IDS
    | USE_V2_FORMAT
    | TABLE_CONFIG
    | BASE_PATHS
    | DISABLE_TRANSACTION_FILE
    | INDEX_METADATA
    | MIXED_FILE_VERSIONS
    | FRAGMENT_REUSE_HISTORY
    | NON_REUSABLE_FIELD_IDS;

/// The reader flags set in `flags` that this reader does not know.
pub fn unknown_reader_flags(flags: u64) -> u64 {
    flags & !KNOWN
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_bits_are_reported() {
        assert_eq!(unknown_reader_flags(DELETION_FILES | STABLE_ROW_IDS), 0);
        assert_eq!(unknown_reader_flags(64 | 1), 64);
        assert_eq!(unknown_reader_flags(1 << 40), 1 << 40);
    }
}
