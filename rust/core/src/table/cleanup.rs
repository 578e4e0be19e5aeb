//! Cleanup of old versions, as pylance's `cleanup_old_versions`: remove the manifests of
//! versions no longer wanted and every file (data, deletion, transaction, index) that no
//! kept version references. Kept: the latest version, tagged versions, versions newer than
//! the cutoff or among the newest `retain_versions`. A file no manifest references at all
//! may belong to a commit in flight, so it goes only when it is older than 7 days or when
//! the caller says no writer is running (`delete_unverified`). Metadata-bound: manifests are
//! read and files deleted many at a time.
use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use prost::Message;

use super::deletion::deletion_file_name;
use super::manifest::{decode_manifest, timestamp_nanos};
use super::tags::list_tags;
use super::versions::{list_manifests, ManifestLocation};
use crate::error::{Error, Result};
use crate::proto::table::{IndexSection, Manifest};
use crate::storage::Storage;

/// Requests in flight at once (manifest reads, deletes).
const CONCURRENCY: usize = 32;
/// Files no manifest references are left alone for this long: a writer may commit them.
const UNVERIFIED_GRACE_NANOS: i64 = 7 * 24 * 3600 * 1_000_000_000;

#[derive(Clone, Debug)]
pub struct CleanupOptions {
    /// Versions committed before this time (nanoseconds since the epoch) may go.
    pub before_nanos: Option<i64>,
    /// The newest this many versions stay.
    pub retain_versions: Option<u64>,
    pub delete_unverified: bool,
    pub error_if_tagged_old_versions: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CleanupStats {
    pub bytes_removed: u64,
    pub old_versions: u64,
    pub data_files_removed: u64,
    pub transaction_files_removed: u64,
    pub index_files_removed: u64,
    pub deletion_files_removed: u64,
    pub failed_deletes: u64,
}

/// What a removed file was, for the statistics.
#[derive(Clone, Copy)]
enum Kind {
    Manifest,
    Data,
    Deletion,
    Transaction,
    Index,
}

/// Paths (relative to the dataset) a manifest references.
fn referenced(m: &Manifest, bytes: &Bytes, out: &mut HashSet<String>) {
    for f in &m.fragments {
        for d in f.files.iter().filter(|d| d.base_id.is_none()) {
            out.insert(format!("data/{}", d.path));
        }
        if let Some(d) = f.deletion_file.as_ref().filter(|d| d.base_id.is_none()) {
            out.insert(format!("_deletions/{}", deletion_file_name(f.id, d)));
        }
    }
    if !m.transaction_file.is_empty() {
        out.insert(format!("_transactions/{}", m.transaction_file));
    }
    // Index directories, from the index section of the manifest file.
    if let Some(section) = m.index_section.and_then(|pos| {
        let pos = pos as usize;
        let len = u32::from_le_bytes(bytes.get(pos..pos + 4)?.try_into().ok()?) as usize;
        IndexSection::decode(bytes.get(pos + 4..pos + 4 + len)?).ok()
    }) {
        for index in section.indices.iter().filter(|i| i.base_id.is_none()) {
            if let Some(uuid) = index
                .uuid
                .as_ref()
                .and_then(|u| uuid::Uuid::from_slice(&u.uuid).ok())
            {
                out.insert(format!("_indices/{}/", uuid.hyphenated()));
            }
        }
    }
}

/// Whether `path` is referenced: itself, or (index files) its index directory.
fn is_referenced(path: &str, refs: &HashSet<String>) -> bool {
    if refs.contains(path) {
        return true;
    }
    match path
        .strip_prefix("_indices/")
        .and_then(|p| p.split_once('/'))
    {
        Some((dir, _)) => refs.contains(&format!("_indices/{dir}/")),
        None => false,
    }
}

async fn read_manifest(
    storage: &Storage,
    loc: ManifestLocation,
) -> Result<(ManifestLocation, Manifest, Bytes)> {
    let bytes = storage.get(&loc.path).await?;
    let m = decode_manifest(&bytes, &storage.display(&loc.path))?;
    Ok((loc, m, bytes))
}

async fn delete_one(
    storage: &Storage,
    path: object_store::path::Path,
    size: u64,
    kind: Kind,
) -> (u64, Kind, bool) {
    (size, kind, storage.delete(&path).await.is_ok())
}

pub async fn cleanup_old_versions(
    storage: &Storage,
    opts: &CleanupOptions,
) -> Result<CleanupStats> {
    let locations = list_manifests(storage).await?;
    let Some(latest) = locations.last().map(|l| l.version) else {
        return Err(Error::not_found(
            storage.uri(),
            "no dataset versions to clean up",
        ));
    };
    // Every manifest, read many at a time.
    let manifests: Vec<(ManifestLocation, Manifest, Bytes)> = futures::stream::iter(locations)
        .map(|loc| read_manifest(storage, loc))
        .buffered(CONCURRENCY)
        .try_collect()
        .await?;

    let tagged: HashMap<u64, Vec<String>> = list_tags(storage)
        .await?
        .into_iter()
        .filter(|(_, t)| t.branch.is_none())
        .fold(HashMap::new(), |mut acc, (name, t)| {
            acc.entry(t.version).or_default().push(name);
            acc
        });
    let newest_kept = opts
        .retain_versions
        .map(|n| latest.saturating_sub(n.saturating_sub(1)));
    let mut old_tagged = Vec::new();
    let (mut kept, mut removed) = (Vec::new(), Vec::new());
    for entry in manifests {
        let (loc, m) = (&entry.0, &entry.1);
        let old_enough = opts.before_nanos.is_none_or(|t| timestamp_nanos(m) < t);
        let outside_retained = newest_kept.is_none_or(|first| loc.version < first);
        let goes = loc.version != latest && old_enough && outside_retained;
        if goes {
            if let Some(names) = tagged.get(&loc.version) {
                old_tagged.extend(
                    names
                        .iter()
                        .map(|n| format!("{n} (version {})", loc.version)),
                );
                kept.push(entry);
                continue;
            }
            removed.push(entry);
        } else {
            kept.push(entry);
        }
    }
    if opts.error_if_tagged_old_versions && !old_tagged.is_empty() {
        return Err(Error::invalid(format!(
            "{}: cleanup would remove tagged versions: {}; delete those tags, or pass \
             error_if_tagged_old_versions=False to keep tagged versions and clean up the rest",
            storage.uri(),
            old_tagged.join(", ")
        )));
    }

    let mut keep_refs = HashSet::new();
    for (_, m, bytes) in &kept {
        referenced(m, bytes, &mut keep_refs);
    }
    let mut old_refs = HashSet::new();
    for (_, m, bytes) in &removed {
        referenced(m, bytes, &mut old_refs);
    }

    // Candidates: files of removed versions no kept version needs, and (when old enough
    // or allowed) files no version references.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0);
    let listings = futures::future::try_join_all(
        ["data", "_deletions", "_transactions", "_indices"].map(|d| storage.list_all(d)),
    )
    .await?;
    let mut doomed: Vec<(object_store::path::Path, u64, Kind)> = Vec::new();
    let kinds = [Kind::Data, Kind::Deletion, Kind::Transaction, Kind::Index];
    for (&kind, objects) in kinds.iter().zip(listings) {
        for o in objects {
            let rel = storage.relative(&o.location).to_string();
            if is_referenced(&rel, &keep_refs) {
                continue;
            }
            let verified = is_referenced(&rel, &old_refs);
            let age = now - o.last_modified.timestamp_nanos_opt().unwrap_or(now);
            if verified || opts.delete_unverified || age > UNVERIFIED_GRACE_NANOS {
                doomed.push((o.location, o.size, kind));
            }
        }
    }
    let mut stats = CleanupStats {
        old_versions: removed.len() as u64,
        ..Default::default()
    };
    // Manifests first: once a version's manifest is gone nothing reads its files, while
    // the other order could leave (after a crash) versions whose files are missing.
    let manifests: Vec<(object_store::path::Path, u64, Kind)> = removed
        .iter()
        .map(|(l, _, _)| (l.path.clone(), l.size, Kind::Manifest))
        .collect();
    for batch in [manifests, doomed] {
        let results: Vec<(u64, Kind, bool)> = futures::stream::iter(batch)
            .map(|(path, size, kind)| delete_one(storage, path, size, kind))
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        for (size, kind, ok) in results {
            if !ok {
                stats.failed_deletes += 1;
                continue;
            }
            stats.bytes_removed += size;
            match kind {
                Kind::Data => stats.data_files_removed += 1,
                Kind::Deletion => stats.deletion_files_removed += 1,
                Kind::Transaction => stats.transaction_files_removed += 1,
                Kind::Index => stats.index_files_removed += 1,
                Kind::Manifest => {}
            }
        }
    }
    Ok(stats)
}
