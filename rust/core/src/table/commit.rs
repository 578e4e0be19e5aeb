//! Committing a new version: write the transaction, then build the next manifest on top
//! of the latest one and create its file only if no other writer created it first. When
//! another writer won, check what it did against this transaction (`transaction::conflict`),
//! rebase on the new latest version and try again.
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use prost::Message;

use super::features::{unknown_reader_flags, BASE_PATHS, DELETION_FILES, STABLE_ROW_IDS};
use super::manifest::decode_manifest;
use super::manifest::decode_manifest_as;
use super::transaction::read::{transaction_at, TransactionPlace};
use super::transaction::{resolve, Operation, Resolution, Staged};
use super::versions::{
    detached_version, latest_version, write_hint, ManifestLocation, NamingScheme,
    DETACHED_VERSION_MASK, VERSIONS_DIR,
};
use crate::error::{Error, Result};
use crate::proto::table::{
    data_fragment::RowIdSequence as RowIdSeq, manifest, u64_segment, DataFragment, Manifest,
    RowIdSequence, Transaction, U64Segment,
};
use crate::storage::{Created, Storage};

/// Attempts before giving up when other writers keep committing first.
const MAX_ATTEMPTS: usize = 40;

/// Options of a commit.
#[derive(Clone, Debug)]
pub struct CommitOptions {
    /// The version the operation was prepared against (None: a new dataset).
    pub read_version: Option<u64>,
    pub writer_library: String,
    pub writer_version: String,
    /// Free-form properties recorded in the transaction (e.g. a stream's query and batch
    /// ids, which let a replayed batch find that it was committed already).
    pub properties: std::collections::HashMap<String, String>,
    /// The read version's manifest, when the writer has it: while it is still the latest,
    /// the commit builds on it without reading it again.
    pub read_manifest: Option<(Arc<Manifest>, Bytes)>,
    /// Commit as a detached version (see `commit_detached`).
    pub detached: bool,
}

/// A version a commit created: where its manifest is, and the file's bytes.
pub struct Committed {
    pub location: ManifestLocation,
    pub bytes: Bytes,
}

/// Commit `op`, for which the files in `staged` were written; returns the new version.
/// The staged files (and the transaction file written here) are removed when the commit
/// does not happen.
pub async fn commit(op: Operation, staged: Staged, opts: &CommitOptions) -> Result<Committed> {
    let storage = staged.storage().clone();
    let result = commit_loop(&storage, &op, &staged, opts).await;
    let committed = staged.settle(result).await?;
    if !opts.detached {
        write_hint(&storage, committed.location.version);
    }
    Ok(committed)
}

async fn commit_loop(
    storage: &Storage,
    op: &Operation,
    staged: &Staged,
    opts: &CommitOptions,
) -> Result<Committed> {
    let uuid = uuid::Uuid::new_v4().hyphenated().to_string();
    let read_version = opts.read_version.unwrap_or(0);
    let transaction = Transaction {
        read_version,
        uuid: uuid.clone(),
        operation: Some(op.to_proto()),
        transaction_properties: opts.properties.clone(),
        ..Default::default()
    };
    let txn_bytes = transaction.encode_to_vec();
    let txn_name = format!("{read_version}-{uuid}.txn");
    let txn_path = storage.path(&format!("_transactions/{txn_name}"));
    storage
        .put(&txn_path, Bytes::from(txn_bytes.clone()))
        .await?;
    staged.add(txn_path);
    let txn = (txn_name, txn_bytes);
    if opts.detached {
        return commit_detached(storage, op, opts, &txn).await;
    }

    // Versions this commit tried to create without learning whether it did.
    let mut unsettled = Unsettled::default();
    let mut checked = read_version;
    for attempt in 0..MAX_ATTEMPTS {
        let step = next_version(storage, op, opts, &txn, &mut checked, unsettled.version()).await;
        if let Some(committed) = unsettled.settle(storage, step)? {
            return Ok(committed);
        }
        // Another writer took this version, or the store failed: back off a little, then
        // look again.
        let jitter = (uuid.as_bytes()[attempt % uuid.len()] as u64 % 20) + 5 * attempt as u64;
        tokio::time::sleep(Duration::from_millis(jitter)).await;
    }
    Err(Error::Conflict(format!(
        "{}: gave up committing after {MAX_ATTEMPTS} attempts: other writers kept committing first",
        storage.uri()
    )))
}

/// Times a commit tries a version whose creation it could not settle before it reports
/// its outcome as unknown (each try already spent the store client's own retries).
const MAX_UNSETTLED: usize = 5;

/// The version a commit last tried to create without learning whether it did (the
/// store's answer was lost and reading it back did not tell), and how many tries ended
/// so. Both commit loops follow its rule: such a version is tried again or found to be
/// another writer's before the commit goes on, and from then on no failure may be
/// reported as "not applied".
#[derive(Default)]
struct Unsettled {
    last: Option<(u64, String)>,
    tries: usize,
}

impl Unsettled {
    /// The version that may be this commit's.
    fn version(&self) -> Option<u64> {
        self.last.as_ref().map(|(v, _)| *v)
    }

    /// What one try found: the commit done, another try (None), or the commit's error.
    fn settle(&mut self, storage: &Storage, step: Result<Claim>) -> Result<Option<Committed>> {
        match step {
            Ok(Claim::Ours(committed)) => Ok(Some(committed)),
            Ok(Claim::Taken) => {
                self.last = None;
                Ok(None)
            }
            Ok(Claim::Unsettled { version, path, why }) => {
                self.tries += 1;
                if self.tries > MAX_UNSETTLED {
                    return Err(outcome_unknown(storage, &path, &why));
                }
                self.last = Some((version, path));
                Ok(None)
            }
            Err(e) => match &self.last {
                Some((_, path)) => Err(outcome_unknown(storage, path, &e.to_string())),
                None => Err(e),
            },
        }
    }
}

fn outcome_unknown(storage: &Storage, path: &str, why: &str) -> Error {
    Error::OutcomeUnknown {
        path: path.to_string(),
        message: format!(
            "this commit to {} may or may not have created that version ({why}); the files \
             it wrote are kept. Open the table to see: a version whose transaction carries \
             this operation's properties is it",
            storage.uri()
        ),
    }
}

/// What trying one version found.
enum Claim {
    /// The version is this commit's: created now, or by an attempt whose answer was lost.
    Ours(Committed),
    /// Another writer's commit holds it.
    Taken,
    /// Whether it was created is not known (`Error::OutcomeUnknown` from the store, which
    /// names the manifest's `path` and says `why`).
    Unsettled {
        version: u64,
        path: String,
        why: String,
    },
}

/// One try of the commit loop: find the latest version, check what was committed since
/// `checked` against `op`, build the next manifest and try to create it.
async fn next_version(
    storage: &Storage,
    op: &Operation,
    opts: &CommitOptions,
    txn: &(String, Vec<u8>),
    checked: &mut u64,
    unsettled: Option<u64>,
) -> Result<Claim> {
    let read_version = opts.read_version.unwrap_or(0);
    // The latest version, and what happened since we last looked.
    let latest = match latest_version(storage).await {
        Ok(loc) => Some(loc),
        Err(Error::NotFound { .. }) => None,
        Err(e) => return Err(e),
    };
    // A version an earlier try may have created is this commit, if its transaction is
    // ours: it must not be applied again on top of itself.
    if let (Some(version), Some(loc)) = (unsettled, &latest) {
        if version <= loc.version {
            let at = super::versions::locate_version(storage, version).await?;
            let bytes = storage.get(&at.path).await?;
            if holds_transaction(storage, &at.path, &bytes, &txn.0)? {
                return Ok(Claim::Ours(Committed {
                    location: ManifestLocation {
                        size: Some(bytes.len() as u64),
                        ..at
                    },
                    bytes,
                }));
            }
        }
    }
    let (base, base_bytes, scheme) = match (&latest, &opts.read_manifest) {
        (Some(loc), Some((m, bytes))) if m.version == loc.version => {
            (Some((**m).clone()), bytes.clone(), loc.scheme)
        }
        (Some(loc), _) => {
            let bytes = storage.get(&loc.path).await?;
            let m = decode_manifest(&bytes, &storage.display(&loc.path))?;
            (Some(m), bytes, loc.scheme)
        }
        (None, _) => (None, Bytes::new(), NamingScheme::V2),
    };
    if let (Some(_), Operation::Clone { .. }) = (&base, op) {
        return Err(Error::invalid(format!(
            "Dataset already exists: {}",
            storage.uri()
        )));
    }
    if let Some(b) = &base {
        if opts.read_version.is_none() && !matches!(op, Operation::Overwrite { .. }) {
            return Err(Error::invalid(format!(
                "{}: a dataset already exists here",
                storage.uri()
            )));
        }
        let unknown = unknown_reader_flags(b.writer_feature_flags);
        if unknown != 0 {
            return Err(Error::unsupported(
                storage.uri(),
                format!(
                    "dataset needs writer features this writer does not know (flags {unknown:#x})"
                ),
            ));
        }
        check_since(storage, op, read_version, *checked + 1..=b.version).await?;
        *checked = b.version;
    }
    let version = match op {
        // A clone starts at the version it was made from.
        Operation::Clone { ref_version, .. } => *ref_version,
        _ => base.as_ref().map_or(1, |b| b.version + 1),
    };
    let file = build_manifest(storage, op, base, base_bytes, (version, version), opts, txn).await?;
    let path = storage.path(&format!("{VERSIONS_DIR}/{}", scheme.file_name(version)));
    claim(storage, path, (version, scheme), file, &txn.0).await
}

/// Create the manifest `file` of `version` at `path` unless a manifest is there; one
/// found there is this commit's when it records this commit's transaction file
/// `txn_name` (an earlier attempt made it and its answer was lost).
async fn claim(
    storage: &Storage,
    path: object_store::path::Path,
    (version, scheme): (u64, NamingScheme),
    file: Bytes,
    txn_name: &str,
) -> Result<Claim> {
    let bytes = match storage.create(&path, file.clone()).await {
        Ok(Created::Ours) => file,
        Ok(Created::Exists(found)) if holds_transaction(storage, &path, &found, txn_name)? => found,
        Ok(Created::Exists(_)) => return Ok(Claim::Taken),
        Err(Error::OutcomeUnknown { path, message }) => {
            return Ok(Claim::Unsettled {
                version,
                path,
                why: message,
            })
        }
        Err(e) => return Err(e),
    };
    Ok(Claim::Ours(Committed {
        location: ManifestLocation {
            version,
            path,
            size: Some(bytes.len() as u64),
            scheme,
        },
        bytes,
    }))
}

/// Whether the manifest file `bytes` (at `path`) records the transaction file `txn_name`.
fn holds_transaction(
    storage: &Storage,
    path: &object_store::path::Path,
    bytes: &Bytes,
    txn_name: &str,
) -> Result<bool> {
    let place: TransactionPlace = decode_manifest_as(bytes, &storage.display(path))?;
    Ok(place.transaction_file == txn_name)
}

/// Commit `op` as a detached version: built on the version read (which may be detached
/// too), numbered at random with the top bit set, and named `_versions/d{version}.manifest`
/// so that no listing of the table's versions sees it. Nothing is checked against other
/// writers: a detached version is nobody's latest.
async fn commit_detached(
    storage: &Storage,
    op: &Operation,
    opts: &CommitOptions,
    txn: &(String, Vec<u8>),
) -> Result<Committed> {
    let Some((base, base_bytes)) = &opts.read_manifest else {
        return Err(Error::invalid(format!(
            "{}: a detached commit needs the version it was prepared against",
            storage.uri()
        )));
    };
    if matches!(op, Operation::Clone { .. }) {
        return Err(Error::invalid(format!(
            "{}: a clone cannot be committed detached",
            storage.uri()
        )));
    }
    // A number whose creation could not be settled is tried again, never left for a new
    // one: two detached versions of one commit would be two copies of it.
    let mut unsettled = Unsettled::default();
    for _ in 0..MAX_ATTEMPTS {
        let version = unsettled.version().unwrap_or_else(detached_version);
        // Built as the version after the one read (new rows' lineage says so), numbered
        // as detached.
        let after = (base.version & !DETACHED_VERSION_MASK) + 1;
        let step = async {
            let base = Some((**base).clone());
            let file = build_manifest(
                storage,
                op,
                base,
                base_bytes.clone(),
                (after, version),
                opts,
                txn,
            )
            .await?;
            let name = NamingScheme::V2.file_name(version);
            let path = storage.path(&format!("{VERSIONS_DIR}/{name}"));
            claim(storage, path, (version, NamingScheme::V2), file, &txn.0).await
        };
        if let Some(committed) = unsettled.settle(storage, step.await)? {
            return Ok(committed);
        }
    }
    Err(Error::Conflict(format!(
        "{}: no free detached version number after {MAX_ATTEMPTS} tries",
        storage.uri()
    )))
}

/// The manifest file made by `op` on `base` (the manifest file `base_bytes`; None: a new
/// table), recording the transaction `txn` (its file name and bytes). `versions`: the
/// version it is built as, and the number it is written under (they differ for a
/// detached version).
async fn build_manifest(
    storage: &Storage,
    op: &Operation,
    base: Option<Manifest>,
    base_bytes: Bytes,
    versions: (u64, u64),
    opts: &CommitOptions,
    txn: &(String, Vec<u8>),
) -> Result<Bytes> {
    let (version, numbered_as) = versions;
    let mut next = next_manifest(storage, base.as_ref(), op, version, opts)?;
    // A restored or cloned version keeps its own index section and legacy dictionary
    // bytes (a clone's indices point where its files are).
    let (base, base_bytes) = match op {
        Operation::Restore {
            manifest, bytes, ..
        } => (Some((**manifest).clone()), bytes.clone()),
        Operation::Clone {
            manifest, bytes, ..
        } => {
            let base_id = super::bases::clone_base_id(&next, op);
            edit_indices(Some((**manifest).clone()), bytes.clone(), |all| {
                for index in all.iter_mut() {
                    index.base_id = base_id;
                }
                Ok(())
            })?
        }
        _ => (base, base_bytes),
    };
    // Statistics older writers left out or got wrong are filled in from the files
    // before this writer's version is stamped on them.
    let recompute = base.as_ref().is_some_and(|b| b.writer_version.is_none());
    migrate_fragments(storage, &mut next, recompute).await?;
    settle_data_format(storage, &mut next)?;
    let (base, base_bytes) = match op {
        // Indices rewritten for the rows' new addresses, or holding stable row ids, move
        // to the new fragments; the others lose the old ones (their rows are scanned
        // rather than looked up at addresses that no longer hold them).
        Operation::Rewrite { groups, indices } => {
            let first_free = first_free_fragment_id(base.as_ref());
            let new_ids = rewrite_new_ids(groups, indices.ids_reserved, first_free);
            let moves: Vec<(Vec<u32>, Vec<u32>)> = groups
                .iter()
                .zip(new_ids)
                .map(|((old, _), new)| {
                    (
                        old.iter().map(|f| f.id as u32).collect(),
                        new.iter().map(|&id| id as u32).collect(),
                    )
                })
                .collect();
            edit_indices(base, base_bytes, |all| move_indices(all, &moves, indices))?
        }
        // An index on a dropped column goes with it (pylance refuses to read a
        // table whose index names a field the schema lacks).
        Operation::Project { fields, .. } => {
            let kept: HashSet<i32> = fields.iter().map(|f| f.id).collect();
            edit_indices(base, base_bytes, |indices| {
                indices.retain(|i| i.fields.iter().all(|f| kept.contains(f)));
                Ok(())
            })?
        }
        // Indices over the rewritten fields no longer cover the fragments whose
        // files for them changed.
        Operation::DataReplacement { replacements } => {
            let fields: HashSet<i32> = replacements
                .iter()
                .flat_map(|(_, f)| f.fields.iter().copied())
                .collect();
            let ids: Vec<u64> = replacements.iter().map(|(id, _)| *id).collect();
            edit_indices(base, base_bytes, |all| uncover(all, &ids, &fields))?
        }
        Operation::Update {
            updated,
            fields_modified,
            ..
        } if !fields_modified.is_empty() => {
            let fields: HashSet<i32> = fields_modified.iter().map(|&f| f as i32).collect();
            let ids: Vec<u64> = updated.iter().map(|f| f.id).collect();
            edit_indices(base, base_bytes, |all| uncover(all, &ids, &fields))?
        }
        Operation::CreateIndex {
            new_indices,
            removed_indices,
        } => {
            next.index_section = Some(0);
            edit_indices(base, base_bytes, |indices| {
                indices.retain(|i| !removed_indices.iter().any(|r| r.uuid == i.uuid));
                indices.extend(new_indices.iter().cloned());
                Ok(())
            })?
        }
        _ => (base, base_bytes),
    };
    next.version = numbered_as;
    Ok(manifest_file(
        next,
        base.as_ref(),
        &base_bytes,
        &txn.0,
        &txn.1,
    ))
}

/// Fail when a version in `versions`, committed since `read_version` was read, makes `op`
/// impossible (`Incompatible`) or means preparing it again (`Conflict`).
async fn check_since(
    storage: &Storage,
    op: &Operation,
    read_version: u64,
    versions: std::ops::RangeInclusive<u64>,
) -> Result<()> {
    for v in versions {
        let theirs = match transaction_at(storage, v).await {
            Ok(t) => t,
            // A concurrent cleanup removed it: what it did cannot be checked, but
            // the operation can be prepared again on the latest version.
            Err(Error::NotFound { .. }) => {
                return Err(Error::Conflict(format!(
                    "{}: version {v}, committed since version {read_version} was read, \
                     was removed by a cleanup; retry on the latest version",
                    storage.uri()
                )))
            }
            Err(e) => return Err(e),
        };
        match resolve(op, theirs.as_ref().and_then(|t| t.operation.as_ref())) {
            Resolution::Compatible => {}
            Resolution::Retryable(why) => {
                return Err(Error::Conflict(format!(
                    "{}: Retryable commit conflict for version {v}: {why}",
                    storage.uri()
                )))
            }
            Resolution::Incompatible(why) => {
                return Err(Error::Incompatible(format!(
                    "{}: Commit conflict for version {v}: {why}",
                    storage.uri()
                )))
            }
        }
    }
    Ok(())
}

/// The manifest of `version`: `base` (the latest version) with `op` applied.
fn next_manifest(
    storage: &Storage,
    base: Option<&Manifest>,
    op: &Operation,
    version: u64,
    opts: &CommitOptions,
) -> Result<Manifest> {
    let mut m = match op {
        Operation::Clone { manifest, .. } => (**manifest).clone(),
        Operation::Restore { manifest, .. } => {
            let mut old = (**manifest).clone();
            if let Some(latest) = base {
                old.max_fragment_id = old.max_fragment_id.max(latest.max_fragment_id);
                old.next_row_id = old.next_row_id.max(latest.next_row_id);
            }
            old
        }
        _ => base.cloned().unwrap_or_default(),
    };
    m.version = version;
    m.writer_version = Some(manifest::WriterVersion {
        library: opts.writer_library.clone(),
        version: opts.writer_version.clone(),
        ..Default::default()
    });
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    m.timestamp = Some(prost_types::Timestamp {
        seconds: now.as_secs() as i64,
        nanos: now.subsec_nanos() as i32,
    });
    m.tag.clear();
    m.transaction_section = None;
    let mut next_id = first_free_fragment_id(Some(&m));
    let stable = |m: &Manifest| m.reader_feature_flags & STABLE_ROW_IDS != 0;
    let mut assign = |m: &mut Manifest, fragments: &[DataFragment]| {
        for f in fragments {
            let mut f = f.clone();
            f.id = next_id;
            next_id += 1;
            if stable(m) && f.row_id_sequence.is_none() {
                let seq = RowIdSequence {
                    segments: vec![U64Segment {
                        segment: Some(u64_segment::Segment::Range(u64_segment::Range {
                            start: m.next_row_id,
                            end: m.next_row_id + f.physical_rows,
                        })),
                    }],
                };
                m.next_row_id += f.physical_rows;
                f.row_id_sequence = Some(RowIdSeq::InlineRowIds(seq.encode_to_vec()));
            }
            if stable(m) {
                super::row_versions::stamp_new_fragment(&mut f, version);
            }
            m.fragments.push(f);
        }
    };
    let mut keep_indices = true;
    match op {
        Operation::Append { fragments } => assign(&mut m, fragments),
        Operation::Overwrite {
            fragments,
            schema,
            data_format,
            stable_row_ids,
            config_upsert,
            initial_bases,
        } => {
            // A new table registers its bases; an existing one keeps those it has.
            if !initial_bases.is_empty() {
                if base.is_some() {
                    return Err(Error::invalid(format!(
                        "{}: Cannot register new bases in Overwrite mode. Only CREATE mode can \
                         register new bases.",
                        storage.uri()
                    )));
                }
                m.base_paths = super::bases::assign_initial(&[], initial_bases)?;
            }
            m.fragments.clear();
            m.config.extend(config_upsert.clone());
            m.fields = schema.to_proto();
            m.schema_metadata = schema.metadata_proto();
            m.data_format = Some(manifest::DataStorageFormat {
                file_format: "lance".into(),
                version: data_format.clone(),
            });
            if *stable_row_ids {
                m.reader_feature_flags |= STABLE_ROW_IDS;
                m.writer_feature_flags |= STABLE_ROW_IDS;
            } else {
                m.reader_feature_flags &= !STABLE_ROW_IDS;
                m.writer_feature_flags &= !STABLE_ROW_IDS;
            }
            keep_indices = false;
            assign(&mut m, fragments);
        }
        Operation::Delete {
            updated,
            deleted_ids,
            ..
        }
        | Operation::Update {
            updated,
            removed_ids: deleted_ids,
            ..
        } => {
            for f in updated {
                let slot = m
                    .fragments
                    .iter_mut()
                    .find(|x| x.id == f.id)
                    .ok_or_else(|| {
                        Error::Conflict(format!(
                            "{}: fragment {} no longer exists; re-read the dataset and try again",
                            storage.uri(),
                            f.id
                        ))
                    })?;
                *slot = f.clone();
            }
            m.fragments.retain(|f| !deleted_ids.contains(&f.id));
            if let Operation::Update { new_fragments, .. } = op {
                assign(&mut m, new_fragments);
            }
        }
        Operation::Merge { fragments, schema } => {
            let mut by_id: std::collections::HashMap<u64, &DataFragment> =
                fragments.iter().map(|f| (f.id, f)).collect();
            let mut merged = Vec::with_capacity(m.fragments.len());
            for f in &m.fragments {
                match by_id.remove(&f.id) {
                    Some(new) => merged.push(new.clone()),
                    None => break,
                }
            }
            if merged.len() != m.fragments.len()
                || !by_id.is_empty()
                || fragments.len() != merged.len()
            {
                return Err(Error::invalid(format!(
                    "{}: adding columns must list every fragment of the table exactly once",
                    storage.uri()
                )));
            }
            m.fragments = merged;
            m.fields = schema.to_proto();
            m.schema_metadata = schema.metadata_proto();
        }
        Operation::DataReplacement { replacements } => {
            replace_data_files(&mut m.fragments, replacements, storage.uri())?
        }
        Operation::Restore { .. } => {}
        Operation::Clone {
            shallow,
            ref_name,
            ref_path,
            branch_name,
            ..
        } => {
            m.branch = branch_name.clone();
            super::bases::point_at_clone_source(&mut m, *shallow, ref_name, ref_path);
        }
        Operation::UpdateBases { new_bases } => {
            m.base_paths = super::bases::register(&m.base_paths, new_bases, storage.uri())?
        }
        Operation::UpdateConfig(u) => super::config::apply_update(&mut m, u, storage.uri())?,
        Operation::ReserveFragments { count, .. } => next_id += *count as u64,
        // The section itself is changed with the manifest file's bytes (`edit_indices`).
        Operation::CreateIndex { .. } => {}
        Operation::Rewrite { groups, indices } => {
            let new_ids = rewrite_new_ids(groups, indices.ids_reserved, next_id);
            for ((old, new), new_ids) in groups.iter().zip(new_ids) {
                let ids: HashSet<u64> = old.iter().map(|f| f.id).collect();
                let Some(at) = m.fragments.iter().position(|f| ids.contains(&f.id)) else {
                    return Err(Error::Conflict(format!(
                        "{}: the fragments being compacted no longer exist; re-read the dataset and try again",
                        storage.uri()
                    )));
                };
                if m.fragments.iter().filter(|f| ids.contains(&f.id)).count() != ids.len() {
                    return Err(Error::Conflict(format!(
                        "{}: some fragments being compacted no longer exist; re-read the dataset and try again",
                        storage.uri()
                    )));
                }
                m.fragments.retain(|f| !ids.contains(&f.id));
                let mut fresh = Vec::with_capacity(new.len());
                for (f, id) in new.iter().zip(new_ids) {
                    let mut f = f.clone();
                    f.id = id;
                    next_id = next_id.max(id + 1);
                    fresh.push(f);
                }
                m.fragments.splice(at..at, fresh);
            }
        }
        Operation::Project { fields, .. } => {
            let kept: HashSet<i32> = fields.iter().map(|f| f.id).collect();
            for f in m.fragments.iter_mut() {
                f.files
                    .retain(|d| d.fields.iter().any(|id| kept.contains(id)));
            }
            m.fields = fields.clone();
            // A column made nullable (or dropped around) may no longer hold a key.
            super::primary_key::refresh(&mut m, storage.uri())?;
        }
    }
    m.max_fragment_id = if next_id > 0 {
        Some((next_id - 1) as u32)
    } else {
        m.max_fragment_id
    };
    let has_deletions = m.fragments.iter().any(|f| f.deletion_file.is_some());
    let has_bases = !m.base_paths.is_empty();
    for flags in [&mut m.reader_feature_flags, &mut m.writer_feature_flags] {
        *flags = (*flags & !DELETION_FILES) | if has_deletions { DELETION_FILES } else { 0 };
        *flags = (*flags & !BASE_PATHS) | if has_bases { BASE_PATHS } else { 0 };
    }
    if !keep_indices {
        m.index_section = None;
    }
    Ok(m)
}

/// Fill in the statistics older writers left out of the fragments, as pylance does on
/// every commit: physical rows (all of them when `recompute`: pylance 0.8.0–0.8.12 stored
/// the rows left after deletions there, and wrote no writer version), deleted rows, data
/// file sizes. Fragments left with no rows leave the manifest. Files under other base
/// paths are left as they are (no writer old enough to need this wrote those).
async fn migrate_fragments(storage: &Storage, m: &mut Manifest, recompute: bool) -> Result<()> {
    use super::data_file::recorded_size;
    use super::deletion::{decode_deletions, deletion_file_name};
    for f in m.fragments.iter_mut() {
        if recompute || f.physical_rows == 0 {
            if let Some(file) = f.files.first().filter(|d| d.base_id.is_none()) {
                let path = storage.path(&format!("data/{}", file.path));
                let reader =
                    crate::file::FileReader::open(storage, path, recorded_size(file)).await?;
                f.physical_rows = reader.metadata.num_rows;
            }
        }
        let id = f.id;
        if let Some(d) = f
            .deletion_file
            .as_mut()
            .filter(|d| d.base_id.is_none() && (recompute || d.num_deleted_rows == 0))
        {
            let path = storage.path(&format!("_deletions/{}", deletion_file_name(id, d)));
            let bytes = storage.get(&path).await?;
            d.num_deleted_rows = decode_deletions(&bytes, d, &storage.display(&path))?.len();
        }
        for file in f
            .files
            .iter_mut()
            .filter(|d| d.file_size_bytes == 0 && d.base_id.is_none())
        {
            let path = storage.path(&format!("data/{}", file.path));
            file.file_size_bytes = storage.head(&path).await?.size;
        }
    }
    m.fragments.retain(|f| {
        let deleted = f.deletion_file.as_ref().map_or(0, |d| d.num_deleted_rows);
        f.physical_rows == 0 || f.physical_rows > deleted
    });
    Ok(())
}

/// Record the data storage version in the manifest, as pylance always does: the one the
/// manifest had (or that its files imply, R1 of `Dataset::data_storage_version`), moved up
/// from 0.1 to the files' version when every file is newer; files of mixed versions, or
/// of a version other than a 2.x manifest's, refuse the commit.
fn settle_data_format(storage: &Storage, m: &mut Manifest) -> Result<()> {
    use super::data_file::{effective_version, files_version, normalized_version};
    let recorded = m
        .data_format
        .as_ref()
        .map(|f| f.version.clone())
        .filter(|v| !v.is_empty());
    let from_files = files_version(m).map_err(|e| {
        Error::invalid(format!(
            "{}: the dataset contains a mixture of file versions; roll back to an earlier \
             version: {e}",
            storage.uri()
        ))
    })?;
    let version = match (recorded, from_files) {
        (Some(v), Some(files)) if normalized_version(&v) == "0.1" => files,
        (Some(v), Some(files)) => {
            if normalized_version(&v) != files {
                return Err(Error::invalid(format!(
                    "{}: the operation leaves files of version {files}, but the dataset's \
                     data storage version is {v}",
                    storage.uri()
                )));
            }
            v
        }
        (Some(v), None) => v,
        (None, _) => effective_version(m).map_err(Error::invalid)?,
    };
    m.data_format = Some(manifest::DataStorageFormat {
        file_format: "lance".into(),
        version,
    });
    Ok(())
}

/// How many leading bytes of the previous manifest file hold the values of legacy
/// dictionary fields (an offsets array of `length + 1` absolute positions at `offset`,
/// the values before it), so that they can stay at the same positions.
fn dictionary_prefix(m: &Manifest, base_bytes: &Bytes) -> usize {
    let mut end = 0usize;
    for f in &m.fields {
        let Some(d) = &f.dictionary else { continue };
        let (Ok(at), Ok(n)) = (usize::try_from(d.offset), usize::try_from(d.length)) else {
            continue;
        };
        let region_end = n
            .checked_add(1)
            .and_then(|k| k.checked_mul(8))
            .and_then(|b| b.checked_add(at));
        if let Some(e) = region_end.filter(|&e| e <= base_bytes.len()) {
            end = end.max(e);
            // The last position is where the values end (they usually come first).
            let last = i64::from_le_bytes(base_bytes[e - 8..e].try_into().unwrap());
            if let Some(v) = usize::try_from(last)
                .ok()
                .filter(|&v| v <= base_bytes.len())
            {
                end = end.max(v);
            }
        }
    }
    end
}

/// `base` and its file's bytes with its index section changed by `edit` (re-encoded at
/// the end of the bytes, where `manifest_file` finds it through `index_section`; made
/// when there was none).
fn edit_indices(
    base: Option<Manifest>,
    bytes: Bytes,
    edit: impl FnOnce(&mut Vec<crate::proto::table::IndexMetadata>) -> Result<()>,
) -> Result<(Option<Manifest>, Bytes)> {
    let Some(mut m) = base else {
        return Ok((None, bytes));
    };
    let had = super::manifest::index_section(&m, &bytes, "the latest manifest")?;
    let existed = had.is_some();
    let mut section = had.unwrap_or_default();
    edit(&mut section.indices)?;
    if !existed && section.indices.is_empty() {
        return Ok((Some(m), bytes));
    }
    let encoded = section.encode_to_vec();
    let mut out = bytes.to_vec();
    let at = out.len();
    out.extend_from_slice(&(encoded.len() as u32).to_le_bytes());
    out.extend_from_slice(&encoded);
    m.index_section = Some(at as u64);
    Ok((Some(m), Bytes::from(out)))
}

/// Replace data files as pylance's `DataReplacement` does: in each fragment, the files
/// holding exactly the new file's fields (in the same file version) point at the new
/// file; a file for fields no file of the fragment holds is added. A replacement that
/// changes nothing is refused.
fn replace_data_files(
    fragments: &mut [DataFragment],
    replacements: &[(u64, crate::proto::table::DataFile)],
    uri: &str,
) -> Result<()> {
    let layouts: HashSet<&Vec<i32>> = replacements.iter().map(|(_, f)| &f.fields).collect();
    if layouts.len() > 1 {
        return Err(Error::invalid(format!(
            "{uri}: a data replacement's new files must all hold the same fields, found {:?}",
            layouts
        )));
    }
    for (id, new) in replacements {
        let frag = fragments.iter_mut().find(|f| f.id == *id).ok_or_else(|| {
            Error::Conflict(format!(
                "{uri}: fragment {id}, whose data is being replaced, is no longer in the table"
            ))
        })?;
        let before = frag.files.clone();
        let mut covered: HashSet<i32> = HashSet::new();
        for file in frag.files.iter_mut() {
            if file.fields == new.fields
                && file.file_major_version == new.file_major_version
                && file.file_minor_version == new.file_minor_version
            {
                file.path = new.path.clone();
                file.file_size_bytes = new.file_size_bytes;
                file.base_id = new.base_id;
            }
            covered.extend(file.fields.iter().copied());
        }
        if new.fields.iter().all(|f| !covered.contains(f)) {
            frag.files.push(new.clone());
        }
        if frag.files == before {
            return Err(Error::invalid(format!(
                "{uri}: the new data file {} for fragment {id} (fields {:?}, file version {}.{}) \
                 matches none of its data files: a replacement must hold exactly the fields of \
                 one of them, in the same file version",
                new.path, new.fields, new.file_major_version, new.file_minor_version
            )));
        }
    }
    Ok(())
}

/// Indices over any of `fields` stop covering fragments `ids` (their values changed).
fn uncover(
    indices: &mut [crate::proto::table::IndexMetadata],
    ids: &[u64],
    fields: &HashSet<i32>,
) -> Result<()> {
    for index in indices.iter_mut() {
        if index.fragment_bitmap.is_empty() || !index.fields.iter().any(|f| fields.contains(f)) {
            continue;
        }
        let mut bitmap = roaring::RoaringBitmap::deserialize_from(&index.fragment_bitmap[..])
            .map_err(|e| Error::corrupt("", format!("an index's fragment bitmap: {e}")))?;
        for &id in ids {
            bitmap.remove(id as u32);
        }
        let mut out = Vec::with_capacity(bitmap.serialized_size());
        bitmap
            .serialize_into(&mut out)
            .map_err(|e| Error::io("", format!("an index's fragment bitmap: {e}")))?;
        index.fragment_bitmap = out;
    }
    Ok(())
}

/// The fragment id after the largest one `m` has used.
fn first_free_fragment_id(m: Option<&Manifest>) -> u64 {
    m.and_then(|m| m.max_fragment_id)
        .map_or(0, |id| id as u64 + 1)
}

/// The ids a compaction's new fragments get, group by group: those reserved for them, or
/// the next free ones from `first_free` on, in order.
fn rewrite_new_ids(
    groups: &[(Vec<DataFragment>, Vec<DataFragment>)],
    reserved: bool,
    first_free: u64,
) -> Vec<Vec<u64>> {
    let mut next = first_free;
    groups
        .iter()
        .map(|(_, new)| {
            new.iter()
                .map(|f| match reserved {
                    true => f.id,
                    false => {
                        next += 1;
                        next - 1
                    }
                })
                .collect()
        })
        .collect()
}

/// The indices after a compaction moved the rows of each group's old fragments (first of
/// the pair) into its new ones (second): a segment rewritten for the new addresses takes
/// its new files; it, and a segment holding stable row ids, cover the new fragments of
/// the groups they covered; every segment stops covering the old fragments. A rewritten
/// segment replaced meanwhile (its old uuid gone) is left out.
fn move_indices(
    indices: &mut [crate::proto::table::IndexMetadata],
    moves: &[(Vec<u32>, Vec<u32>)],
    moved: &super::transaction::IndicesMoved,
) -> Result<()> {
    for index in indices.iter_mut() {
        if index.fragment_bitmap.is_empty() {
            continue;
        }
        let mut bitmap = roaring::RoaringBitmap::deserialize_from(&index.fragment_bitmap[..])
            .map_err(|e| Error::corrupt("", format!("an index's fragment bitmap: {e}")))?;
        let uuid = index.uuid.as_ref().map(|u| u.uuid.as_slice());
        let rewritten = moved
            .rewritten
            .iter()
            .find(|r| r.old_id.as_ref().map(|u| u.uuid.as_slice()) == uuid);
        let follows = rewritten.is_some()
            || uuid.is_some_and(|u| moved.following_rows.iter().any(|f| f == u));
        for (old, new) in moves {
            let covered = old.iter().all(|id| bitmap.contains(*id));
            for id in old {
                bitmap.remove(*id);
            }
            if follows && covered {
                bitmap.extend(new.iter().copied());
            }
        }
        let mut out = Vec::with_capacity(bitmap.serialized_size());
        bitmap
            .serialize_into(&mut out)
            .map_err(|e| Error::io("", format!("an index's fragment bitmap: {e}")))?;
        index.fragment_bitmap = out;
        if let Some(r) = rewritten {
            index.uuid = r.new_id.clone();
            index.index_details = r.new_index_details.clone();
            index.index_version = Some(r.new_index_version as i32);
            index.files = r.new_index_files.clone();
        }
    }
    Ok(())
}

/// The next manifest file: [legacy dictionaries] [index section] [transaction] [manifest]
/// [footer].
fn manifest_file(
    mut m: Manifest,
    base: Option<&Manifest>,
    base_bytes: &Bytes,
    txn_name: &str,
    txn_bytes: &[u8],
) -> Bytes {
    m.transaction_file = txn_name.to_string();
    let mut out = Vec::with_capacity(txn_bytes.len() + 4096);
    // Legacy datasets keep the values of dictionary fields in the manifest file, found by
    // absolute positions: keep the bytes before them where they are.
    out.extend_from_slice(&base_bytes[..dictionary_prefix(&m, base_bytes)]);
    // Indices stay valid across appends and deletes: carry the section over.
    m.index_section = match (
        m.index_section.is_some(),
        base.and_then(|b| b.index_section),
    ) {
        (true, Some(pos)) => {
            let pos = pos as usize;
            let len = base_bytes
                .get(pos..pos + 4)
                .map(|b| u32::from_le_bytes(b.try_into().unwrap()) as usize);
            match len.and_then(|len| base_bytes.get(pos..pos + 4 + len)) {
                Some(section) => {
                    let at = out.len() as u64;
                    out.extend_from_slice(section);
                    Some(at)
                }
                None => None,
            }
        }
        _ => None,
    };
    m.transaction_position = Some(out.len() as u64);
    out.extend_from_slice(&(txn_bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(txn_bytes);
    let manifest_pos = out.len() as i64;
    let body = m.encode_to_vec();
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    out.extend_from_slice(&manifest_pos.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(b"LANC");
    Bytes::from(out)
}
