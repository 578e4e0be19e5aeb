//! Restore: an earlier version committed again as the newest (a `Restore` transaction),
//! as pylance's `restore()` does. Nothing is copied: the old manifest's fragments point at
//! files that are still there (cleanup keeps what a kept version references).
use super::commit::restore_operation;
use super::{commit, ReadFrom};
use crate::dataset::Dataset;
use crate::error::Result;
use crate::storage::Storage;
use crate::table::transaction::Staged;
use crate::table::versions::latest_version;

/// Commit `ds`'s version as the newest; checked against the latest version (a commit
/// made in between is a conflict, not something to undo silently).
pub async fn restore(ds: &Dataset) -> Result<Dataset> {
    let storage = Storage::open(ds.uri(), ds.storage_options())?;
    let latest = latest_version(&storage).await?.version;
    let op = restore_operation(ds);
    let read_from = ReadFrom::Uri {
        uri: ds.uri(),
        options: ds.storage_options(),
        version: Some(latest),
    };
    commit(read_from, op, Staged::new(&storage), Default::default()).await
}
