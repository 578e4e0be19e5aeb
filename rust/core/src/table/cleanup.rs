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

use super::branches;
use super::deletion::deletion_file_name;
use super::manifest::{decode_manifest, timestamp_nanos};
use super::tags::list_tags;
use super::versions::{list_manifests, ManifestLocation};
use crate::error::{Error, Result};
use crate::proto::table::Manifest;
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

/// Files some manifests reference, by kind (hundreds of manifests list mostly the same
/// files: each name is kept once), deletion files by their identity until the end.
#[derive(Default)]
struct Refs {
    data: HashSet<String>,
    deletions: HashSet<(u64, u64, u64, i32)>,
    transactions: HashSet<String>,
    indices: HashSet<String>,
}

/// Add `name` to `set` unless it is there (without copying it then).
fn insert_name(set: &mut HashSet<String>, name: &str) {
    if !set.contains(name) {
        set.insert(name.to_string());
    }
}

impl Refs {
    /// The files of the cleaned table that manifest `m` references: those without a base
    /// (`m` is one of its own versions).
    fn add(&mut self, m: &Manifest, bytes: &Bytes) {
        self.add_where(m, bytes, |base| base.is_none())
    }

    /// The files of manifest `m` in the places `ours` accepts (by base id).
    fn add_where(&mut self, m: &Manifest, bytes: &Bytes, ours: impl Fn(Option<u32>) -> bool) {
        for f in &m.fragments {
            for d in f.files.iter().filter(|d| ours(d.base_id)) {
                insert_name(&mut self.data, &d.path);
            }
            if let Some(d) = f.deletion_file.as_ref().filter(|d| ours(d.base_id)) {
                self.deletions
                    .insert((f.id, d.read_version, d.id, d.file_type));
            }
        }
        if !m.transaction_file.is_empty() {
            insert_name(&mut self.transactions, &m.transaction_file);
        }
        // Index directories, from the index section of the manifest file (an unreadable
        // section keeps nothing of its own; the manifest was read whole above).
        if let Ok(Some(section)) = super::manifest::index_section(m, bytes, "") {
            for index in section.indices.iter().filter(|i| ours(i.base_id)) {
                if let Some(uuid) = index
                    .uuid
                    .as_ref()
                    .and_then(|u| uuid::Uuid::from_slice(&u.uuid).ok())
                {
                    self.indices.insert(uuid.hyphenated().to_string());
                }
            }
        }
    }

    /// The deletion file names, formatted once per distinct file.
    fn deletion_names(&self) -> HashSet<String> {
        self.deletions
            .iter()
            .map(|&(fragment, read_version, id, file_type)| {
                let d = crate::proto::table::DeletionFile {
                    read_version,
                    id,
                    file_type,
                    ..Default::default()
                };
                deletion_file_name(fragment, &d)
            })
            .collect()
    }
}

/// Whether the file at `rel` (relative to the dataset) is referenced; `deletions` are the
/// names of `refs`' deletion files.
fn is_referenced(rel: &str, refs: &Refs, deletions: &HashSet<String>) -> bool {
    if let Some(name) = rel.strip_prefix("data/") {
        // A blob v2 sidecar (`<data file stem>/<id>.blob`) lives and dies with its data file.
        if let Some((stem, file)) = name.split_once('/') {
            if file.ends_with(".blob") {
                return refs.data.contains(&format!("{stem}.lance"));
            }
        }
        return refs.data.contains(name);
    }
    if let Some(name) = rel.strip_prefix("_deletions/") {
        return deletions.contains(name);
    }
    if let Some(name) = rel.strip_prefix("_transactions/") {
        return refs.transactions.contains(name);
    }
    match rel
        .strip_prefix("_indices/")
        .and_then(|p| p.split_once('/'))
    {
        Some((dir, _)) => refs.indices.contains(dir),
        None => false,
    }
}

/// Add to `keep` the files of the line at `storage` that the versions of `children` (the
/// branches made from it, directly or not, in the table at `root`) use: a branch starts as
/// a shallow clone, so its versions read their parent's files where they are.
async fn keep_descendants_files(
    storage: &Storage,
    root: &Storage,
    children: &[(String, u64)],
    keep: &mut Refs,
) -> Result<()> {
    for (name, _) in children {
        let line = branches::branch_storage(root, Some(name))?;
        let mut manifests = futures::stream::iter(list_manifests(&line).await?)
            .map(|loc| read_manifest(&line, loc))
            .buffered(CONCURRENCY);
        while let Some((_, m, bytes)) = manifests.try_next().await? {
            let here: HashSet<u32> = m
                .base_paths
                .iter()
                .filter(|b| b.is_dataset_root && same_location(&b.path, storage.uri()))
                .map(|b| b.id)
                .collect();
            keep.add_where(&m, &bytes, |base| base.is_some_and(|id| here.contains(&id)));
        }
    }
    Ok(())
}

/// Whether two table locations name the same place (a local path as an absolute path,
/// with or without `file://`; others as written, without a trailing `/`).
fn same_location(a: &str, b: &str) -> bool {
    let norm = |s: &str| {
        let s = s.strip_prefix("file://").unwrap_or(s).trim_end_matches('/');
        match s.contains("://") {
            true => s.to_string(),
            false => std::path::absolute(s)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_else(|_| s.to_string()),
        }
    };
    norm(a) == norm(b)
}

/// Read a manifest, and decode it on the CPU pool (hundreds of them decode on both cores).
async fn read_manifest(
    storage: &Storage,
    loc: ManifestLocation,
) -> Result<(ManifestLocation, Manifest, Bytes)> {
    let bytes = storage.get(&loc.path).await?;
    let name = storage.display(&loc.path);
    crate::scan::cpu::spawn_cpu(name.clone(), move || {
        let m = decode_manifest(&bytes, &name)?;
        Ok((loc, m, bytes))
    })
    .await
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
    // A branch's tags are recorded at the table's root; only this line's tags keep its
    // versions.
    let latest_manifest = read_manifest(storage, locations[locations.len() - 1].clone())
        .await?
        .1;
    let branch = branches::normalize(latest_manifest.branch.as_deref()).map(str::to_string);
    let root = branches::root_storage(storage, branch.as_deref())?;
    let tagged: HashMap<u64, Vec<String>> = list_tags(&root)
        .await?
        .into_iter()
        .filter(|(_, t)| branches::normalize(t.branch.as_deref()) == branch.as_deref())
        .fold(HashMap::new(), |mut acc, (name, t)| {
            acc.entry(t.version).or_default().push(name);
            acc
        });
    // Branches made from this line start at one of its versions (kept, as pylance keeps
    // them) and read its files where they are.
    let children = match branches::list_branches(&root).await? {
        all if all.is_empty() => vec![],
        all => branches::descendants(&all, &branches::lineage(&root, branch.as_deref()).await?),
    };
    let branch_points: HashSet<u64> = children.iter().map(|(_, v)| *v).collect();
    let newest_kept = opts
        .retain_versions
        .map(|n| latest.saturating_sub(n.saturating_sub(1)));
    let mut old_tagged = Vec::new();
    let (mut keep_refs, mut old_refs) = (Refs::default(), Refs::default());
    // The manifests of removed versions, and their sizes.
    let mut removed: Vec<(object_store::path::Path, u64)> = Vec::new();
    // Every manifest, read many at a time, and reduced to the files it references as it
    // arrives: a thousand decoded manifests held at once would take memory in proportion
    // to the table's history.
    let mut manifests = futures::stream::iter(locations)
        .map(|loc| read_manifest(storage, loc))
        .buffered(CONCURRENCY);
    while let Some((loc, m, bytes)) = manifests.try_next().await? {
        let old_enough = opts.before_nanos.is_none_or(|t| timestamp_nanos(&m) < t);
        let outside_retained = newest_kept.is_none_or(|first| loc.version < first);
        let goes = loc.version != latest
            && old_enough
            && outside_retained
            && !branch_points.contains(&loc.version);
        let tags = tagged.get(&loc.version).filter(|_| goes);
        if let Some(names) = tags {
            old_tagged.extend(
                names
                    .iter()
                    .map(|n| format!("{n} (version {})", loc.version)),
            );
        }
        if goes && tags.is_none() {
            old_refs.add(&m, &bytes);
            removed.push((loc.path, bytes.len() as u64));
        } else {
            keep_refs.add(&m, &bytes);
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

    keep_descendants_files(storage, &root, &children, &mut keep_refs).await?;
    let (keep_deletions, old_deletions) = (keep_refs.deletion_names(), old_refs.deletion_names());

    // Candidates: files of removed versions no kept version needs, and (when old enough
    // or allowed) files no version references.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0);
    let listings = futures::future::try_join_all(
        ["data", "_deletions", "_transactions", "_indices"].map(|d| storage.list_files(d, true)),
    )
    .await?;
    let mut doomed: Vec<(object_store::path::Path, u64, Kind)> = Vec::new();
    let kinds = [Kind::Data, Kind::Deletion, Kind::Transaction, Kind::Index];
    for (&kind, objects) in kinds.iter().zip(listings) {
        for o in objects {
            let rel = storage.relative(&o.location).to_string();
            if is_referenced(&rel, &keep_refs, &keep_deletions) {
                continue;
            }
            // Only the files that may go need their size and age.
            let (size, modified) = match &o.meta {
                Some(m) => (m.size, m.last_modified.timestamp_nanos_opt().unwrap_or(now)),
                None => match storage.file_meta(&o.location).await {
                    Ok(found) => found,
                    Err(Error::NotFound { .. }) => continue, // removed meanwhile
                    Err(e) => return Err(e),
                },
            };
            let verified = is_referenced(&rel, &old_refs, &old_deletions);
            let age = now - modified;
            if verified || opts.delete_unverified || age > UNVERIFIED_GRACE_NANOS {
                doomed.push((o.location, size, kind));
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
        .into_iter()
        .map(|(path, size)| (path, size, Kind::Manifest))
        .collect();
    // Index and blob sidecar directories emptied here go too (on a local disk, where
    // directories exist).
    let emptied_dirs: HashSet<std::path::PathBuf> = doomed
        .iter()
        .filter(|(path, _, kind)| matches!(kind, Kind::Index) || path.as_ref().ends_with(".blob"))
        .filter_map(|(path, _, _)| storage.local_file(path)?.parent().map(|p| p.to_path_buf()))
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
    for dir in emptied_dirs {
        // Only when empty: a directory still holding files is left as it is.
        let _ = std::fs::remove_dir(dir);
    }
    Ok(stats)
}
