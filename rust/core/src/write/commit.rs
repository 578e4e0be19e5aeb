//! How every writer ends: `commit(read_from, operation, staged, properties)` turns an
//! operation and the files staged for it into a new version (or removes those files);
//! `with_conflict_retries` re-runs a writer that lost to a concurrent commit it can be
//! prepared again after; `commit_external` commits files written elsewhere.
use std::collections::HashMap;

use arrow_schema::Schema;

use super::LIBRARY;
use crate::dataset::{Dataset, VersionRef};
use crate::error::{Error, Result};
use crate::proto::table::DataFragment;
use crate::storage::{Storage, StorageOptions};
use crate::table::commit::CommitOptions;
use crate::table::schema::LanceSchema;
use crate::table::transaction::{Operation, Staged};
use crate::table::versions::{latest_version, locate_version};

/// The version an operation was prepared against.
pub enum ReadFrom<'a> {
    /// A version the writer read (the usual case).
    Version(&'a Dataset),
    /// A table by URI and the version the writer read: None when it read none (a table
    /// being created, which must not exist by then unless the operation overwrites it).
    Uri {
        uri: &'a str,
        options: &'a StorageOptions,
        version: Option<u64>,
    },
    /// A table by URI, checked against its latest version when the commit starts (or
    /// created): for fragments written by a distributed job's tasks, committed as they are.
    Latest {
        uri: &'a str,
        options: &'a StorageOptions,
    },
}

impl ReadFrom<'_> {
    fn uri(&self) -> &str {
        match self {
            ReadFrom::Version(ds) => ds.uri(),
            ReadFrom::Uri { uri, .. } | ReadFrom::Latest { uri, .. } => uri,
        }
    }

    fn options(&self) -> &StorageOptions {
        match self {
            ReadFrom::Version(ds) => ds.storage_options(),
            ReadFrom::Uri { options, .. } | ReadFrom::Latest { options, .. } => options,
        }
    }

    async fn read_version(&self) -> Result<Option<u64>> {
        match self {
            ReadFrom::Version(ds) => Ok(Some(ds.version())),
            ReadFrom::Uri { version, .. } => Ok(*version),
            ReadFrom::Latest { uri, options } => {
                let storage = Storage::open(uri, options)?;
                match latest_version(&storage).await {
                    Ok(loc) => Ok(Some(loc.version)),
                    Err(Error::NotFound { .. }) => Ok(None),
                    Err(e) => Err(e),
                }
            }
        }
    }
}

/// Commit `op` as the version after the latest, checked against what was committed since
/// `read_from`; `staged` holds the files written for it (kept when the commit happens,
/// removed when it does not); `properties` are recorded in the transaction. Returns the
/// dataset at the new version.
pub async fn commit(
    read_from: ReadFrom<'_>,
    op: Operation,
    staged: Staged,
    properties: HashMap<String, String>,
) -> Result<Dataset> {
    commit_as(read_from, op, staged, properties, false).await
}

/// `commit`, as a detached version when `detached` (built on the version read, seen by
/// no one who does not ask for its number).
async fn commit_as(
    read_from: ReadFrom<'_>,
    op: Operation,
    staged: Staged,
    properties: HashMap<String, String>,
    detached: bool,
) -> Result<Dataset> {
    let read_version = match read_from.read_version().await {
        Ok(v) => v,
        Err(e) => return staged.settle(Err(e)).await,
    };
    let read_manifest = match &read_from {
        ReadFrom::Version(ds) => Some((ds.manifest.clone(), ds.manifest_bytes.clone())),
        _ => None,
    };
    let opts = CommitOptions {
        read_version,
        writer_library: LIBRARY.into(),
        writer_version: env!("CARGO_PKG_VERSION").into(),
        properties,
        read_manifest,
        detached,
    };
    let storage = staged.storage().clone();
    // Named before the commit consumes it, and only when someone listens.
    let name = log::log_enabled!(log::Level::Info)
        .then(|| crate::table::transaction::op_name(&op.to_proto()));
    let committed = crate::table::commit::commit(op, staged, &opts).await?;
    if let Some(name) = name {
        log::info!(
            "{}: committed version {} ({name})",
            storage.uri(),
            committed.location.version
        );
    }
    // The new version, from the manifest just written (not read back).
    let uri = match &read_from {
        ReadFrom::Version(ds) => ds.uri().to_string(),
        // The URI as a dataset opened there would show it.
        _ => Storage::open(read_from.uri(), read_from.options())?
            .uri()
            .to_string(),
    };
    let ds = Dataset::from_manifest_file(
        uri,
        storage,
        committed.location,
        committed.bytes,
        read_from.options().clone(),
    )?;
    let ds = match &read_from {
        ReadFrom::Version(read) => ds.with_session(read.session().clone()),
        _ => ds,
    };
    if detached {
        return Ok(ds);
    }
    // The commit has landed: a cleanup the table's config asks for may fail (a bad
    // setting, a file already gone) without failing it.
    match crate::table::auto_cleanup::after_commit(ds.storage(), &ds.manifest.config, ds.version())
        .await
    {
        Ok(Some(stats)) => log::info!("{}: auto cleanup: {stats:?}", ds.uri()),
        Ok(None) => {}
        Err(e) => log::warn!("{}: auto cleanup failed: {e}", ds.uri()),
    }
    Ok(ds)
}

/// Commit `op`, which writes no file (a schema change), prepared against `ds`.
pub async fn commit_schema_change(ds: &Dataset, op: Operation) -> Result<Dataset> {
    let staged = Staged::new(ds.storage());
    commit(ReadFrom::Version(ds), op, staged, Default::default()).await
}

/// Run `attempt` on `ds`, and again on the latest version each time it fails in a way a
/// fresh start can fix (up to `retries` times), as pylance's delete, update and
/// merge_insert do: its commit lost to one it must be prepared again after, or a
/// concurrent cleanup removed the version it was reading.
pub async fn with_conflict_retries<T, F, Fut>(
    ds: &Dataset,
    retries: u32,
    mut attempt: F,
) -> Result<T>
where
    F: FnMut(Dataset) -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let mut ds = ds.clone();
    let mut tries = 0;
    loop {
        let error = match attempt(ds.clone()).await {
            Err(e) if is_retryable(&e, &ds).await => e,
            other => return other,
        };
        if tries >= retries {
            return Err(Error::Conflict(format!(
                "{error} (gave up after {tries} retries)"
            )));
        }
        tries += 1;
        let session = ds.session().clone();
        ds = Dataset::open(ds.uri(), None, ds.storage_options().clone())
            .await?
            .with_session(session);
    }
}

/// A conflict, or a file of `ds`'s version gone because a cleanup removed that version.
async fn is_retryable(e: &Error, ds: &Dataset) -> bool {
    match e {
        Error::Conflict(_) => true,
        Error::NotFound { .. } => {
            let storage: &Storage = ds.storage();
            matches!(
                locate_version(storage, ds.version()).await,
                Err(Error::NotFound { .. })
            )
        }
        _ => false,
    }
}

/// An operation whose files were written elsewhere (by `write_uncommitted`, a Spark task,
/// `write_columns`), as a distributed job's driver or a Python caller describes it. Its
/// files stay the caller's: a failed commit leaves them for the caller to commit again
/// or remove.
pub enum External {
    Append {
        fragments: Vec<DataFragment>,
    },
    /// The table replaced by `fragments`, written with `schema` (field ids from 0);
    /// `stable_row_ids` makes the new table keep stable row ids.
    Overwrite {
        fragments: Vec<DataFragment>,
        schema: Schema,
        stable_row_ids: bool,
        /// Base paths a new table registers, with their ids (pylance's `initial_bases`).
        initial_bases: Vec<crate::proto::table::BasePath>,
        /// Set in the table's config (pylance's `config_upsert_values`).
        config_upsert: HashMap<String, String>,
    },
    /// Base paths registered on the table (pylance's `add_bases`).
    UpdateBases {
        new_bases: Vec<crate::proto::table::BasePath>,
    },
    Delete {
        updated: Vec<DataFragment>,
        deleted_ids: Vec<u64>,
        predicate: String,
    },
    /// New columns: every fragment of the read version, with the new columns' files, and
    /// the schema with the new columns (numbered after the read version's field ids, as
    /// the writers of their files numbered them).
    Merge {
        fragments: Vec<DataFragment>,
        schema: Schema,
    },
    /// Config and metadata maps changed, fields named by id (as pylance's
    /// `LanceOperation.UpdateConfig` gives them).
    UpdateConfig(Box<crate::proto::table::transaction::UpdateConfig>),
    /// Version `version` made the newest again.
    Restore {
        version: u64,
    },
    /// The table's schema replaced by `fields` (pylance's `LanceOperation.Project`): each
    /// names an existing field by id, which keeps its type and storage and takes the new
    /// name, nullability and place; fields left out are dropped.
    Project {
        fields: Vec<crate::proto::file::Field>,
    },
    /// Rows or columns changed (pylance's `LanceOperation.Update`): fragments with new
    /// deletion files or new data files for `fields_modified`, fragments removed, and new
    /// fragments.
    Update {
        updated: Vec<DataFragment>,
        removed_ids: Vec<u64>,
        new_fragments: Vec<DataFragment>,
        fields_modified: Vec<u32>,
        fields_for_preserving_frag_bitmap: Vec<u32>,
    },
    /// Data files replaced, by fragment id (pylance's `LanceOperation.DataReplacement`).
    DataReplacement {
        replacements: Vec<(u64, crate::proto::table::DataFile)>,
    },
}

/// Commit `operation` to the table at `uri`, read at `read_version` (None: the latest).
pub async fn commit_external(
    uri: &str,
    options: &StorageOptions,
    read_version: Option<u64>,
    operation: External,
    properties: HashMap<String, String>,
    detached: bool,
) -> Result<Dataset> {
    let op = match operation {
        External::Append { fragments } => Operation::Append { fragments },
        External::UpdateBases { new_bases } => Operation::UpdateBases { new_bases },
        External::Overwrite {
            fragments,
            schema,
            stable_row_ids,
            initial_bases,
            config_upsert,
        } => {
            let version = fragments
                .iter()
                .flat_map(|f| f.files.first())
                .map(|d| crate::file::FileVersion {
                    major: d.file_major_version as u16,
                    minor: d.file_minor_version as u16,
                })
                .next()
                .unwrap_or(crate::file::FileVersion { major: 2, minor: 2 });
            let data_format = format!("{}.{}", version.major, version.minor);
            let schema = super::blob_v2::stored_schema(&schema, version);
            Operation::Overwrite {
                fragments,
                schema: LanceSchema::from_arrow(&schema, 0)?,
                data_format,
                stable_row_ids,
                config_upsert,
                initial_bases,
            }
        }
        External::Delete {
            updated,
            deleted_ids,
            predicate,
        } => Operation::Delete {
            updated,
            deleted_ids,
            predicate,
        },
        External::Merge { fragments, schema } => {
            let version = read_version.ok_or_else(|| {
                Error::invalid(format!(
                    "{uri}: a merge must be committed with the version its columns were \
                     computed from"
                ))
            })?;
            let ds = Dataset::open(uri, Some(VersionRef::Number(version)), options.clone()).await?;
            Operation::Merge {
                fragments,
                schema: super::columns::merged_schema(&ds, &schema)?,
            }
        }
        External::UpdateConfig(update) => Operation::UpdateConfig(*update),
        External::Restore { version } => {
            let old =
                Dataset::open(uri, Some(VersionRef::Number(version)), options.clone()).await?;
            restore_operation(&old)
        }
        External::Update {
            updated,
            removed_ids,
            new_fragments,
            fields_modified,
            fields_for_preserving_frag_bitmap,
        } => Operation::Update {
            updated,
            removed_ids,
            new_fragments,
            fields_changed: fields_for_preserving_frag_bitmap,
            inserted_keys: None,
            fields_modified,
        },
        External::DataReplacement { replacements } => Operation::DataReplacement { replacements },
        External::Project { fields } => {
            let read =
                Dataset::open(uri, read_version.map(VersionRef::Number), options.clone()).await?;
            super::project::projected(&read, &fields)?
        }
    };
    let storage = Storage::open(uri, options)?;
    if detached {
        let Some(version) = read_version else {
            return Err(Error::invalid(format!(
                "{uri}: a detached commit needs the read_version it was prepared against"
            )));
        };
        let read = Dataset::open(uri, Some(VersionRef::Number(version)), options.clone()).await?;
        if read.location.scheme == crate::table::versions::NamingScheme::V1 {
            return Err(Error::invalid(format!(
                "{uri}: detached commits need v2 manifest paths (this table names its \
                 manifests the v1 way)"
            )));
        }
        let staged = Staged::new(&storage);
        return commit_as(ReadFrom::Version(&read), op, staged, properties, true).await;
    }
    let read_from = match read_version {
        Some(version) => ReadFrom::Uri {
            uri,
            options,
            version: Some(version),
        },
        None => ReadFrom::Latest { uri, options },
    };
    commit(read_from, op, Staged::new(&storage), properties).await
}

/// The operation that makes `ds`'s version the newest.
pub(super) fn restore_operation(ds: &Dataset) -> Operation {
    Operation::Restore {
        version: ds.version(),
        manifest: Box::new((*ds.manifest).clone()),
        bytes: ds.manifest_bytes.clone(),
    }
}
