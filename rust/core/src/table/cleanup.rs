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
use super::tracked_files::{for_each_reference, index_dir, Reference};
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
    /// Only these versions may go (pylance's `versions=`), when given.
    pub versions: Option<HashSet<u64>>,
    /// Deletes started per second at most (pylance's `delete_rate_limit`), when given: a
    /// store that throttles deletes is not pushed past its limit.
    pub delete_rate_limit: Option<u64>,
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Manifest,
    Data,
    Deletion,
    Transaction,
    Index,
}

impl Kind {
    /// pylance's name of the kind in a cleanup explanation.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Manifest => "manifest",
            Kind::Data => "data",
            Kind::Deletion => "deletion",
            Kind::Transaction => "transaction",
            Kind::Index => "index",
        }
    }
}

/// A file a cleanup removes.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub path: object_store::path::Path,
    pub size: u64,
    pub kind: Kind,
    /// No version references it (it goes as an orphan: old enough, or allowed).
    pub unverified: bool,
}

/// What a cleanup would do: the files to remove (old versions' manifests first, which
/// must go before their files), and the branches whose starting versions it keeps.
#[derive(Clone, Debug, Default)]
pub struct CleanupPlan {
    pub read_version: u64,
    pub manifests: Vec<Candidate>,
    pub files: Vec<Candidate>,
    /// (branch name, the version of this line it starts from)
    pub referenced_branches: Vec<(String, u64)>,
}

impl CleanupPlan {
    /// The statistics of carrying the plan out with every delete succeeding.
    pub fn stats(&self) -> CleanupStats {
        let mut stats = CleanupStats {
            old_versions: self.manifests.len() as u64,
            ..Default::default()
        };
        for c in self.manifests.iter().chain(&self.files) {
            stats.count(c);
        }
        stats
    }
}

impl CleanupStats {
    fn count(&mut self, c: &Candidate) {
        self.bytes_removed += c.size;
        match c.kind {
            Kind::Data => self.data_files_removed += 1,
            Kind::Deletion => self.deletion_files_removed += 1,
            Kind::Transaction => self.transaction_files_removed += 1,
            Kind::Index => self.index_files_removed += 1,
            Kind::Manifest => {}
        }
    }
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
        for_each_reference(m, bytes, |r| match r {
            Reference::Data { path, base_id } if ours(base_id) => insert_name(&mut self.data, path),
            Reference::Deletion { fragment_id, file } if ours(file.base_id) => {
                self.deletions
                    .insert((fragment_id, file.read_version, file.id, file.file_type));
            }
            Reference::Transaction(name) => insert_name(&mut self.transactions, name),
            Reference::Index(index) if ours(index.base_id) => {
                if let Some(dir) = index_dir(index) {
                    self.indices.insert(dir);
                }
            }
            _ => {}
        })
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
    crate::threads::cpu::spawn_cpu(name.clone(), move || {
        let m = decode_manifest(&bytes, &name)?;
        Ok((loc, m, bytes))
    })
    .await
}

/// Remove old versions and the files only they reference (see the module's comment).
pub async fn cleanup_old_versions(
    storage: &Storage,
    opts: &CleanupOptions,
) -> Result<CleanupStats> {
    let plan = plan_cleanup(storage, opts).await?;
    let mut stats = CleanupStats {
        old_versions: plan.manifests.len() as u64,
        ..Default::default()
    };
    // Index and blob sidecar directories emptied here go too (on a local disk, where
    // directories exist).
    let emptied_dirs: HashSet<std::path::PathBuf> = plan
        .files
        .iter()
        .filter(|c| matches!(c.kind, Kind::Index) || c.path.as_ref().ends_with(".blob"))
        .filter_map(|c| {
            storage
                .local_file(&c.path)?
                .parent()
                .map(|p| p.to_path_buf())
        })
        .collect();
    // Manifests first: once a version's manifest is gone nothing reads its files, while
    // the other order could leave (after a crash) versions whose files are missing.
    let started = tokio::time::Instant::now();
    // When the n-th delete (counted over both rounds) may start.
    let pace = |n: usize| {
        opts.delete_rate_limit
            .filter(|&r| r > 0)
            .map(|r| started + std::time::Duration::from_secs_f64(n as f64 / r as f64))
    };
    let mut issued = 0;
    for batch in [plan.manifests, plan.files] {
        let first = issued;
        issued += batch.len();
        let results: Vec<(Candidate, bool)> = futures::stream::iter(batch.into_iter().enumerate())
            .map(|(i, c)| async move {
                if let Some(at) = pace(first + i) {
                    tokio::time::sleep_until(at).await;
                }
                let ok = storage.delete(&c.path).await.is_ok();
                (c, ok)
            })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        for (c, ok) in results {
            match ok {
                true => stats.count(&c),
                false => stats.failed_deletes += 1,
            }
        }
    }
    for dir in emptied_dirs {
        // Only when empty: a directory still holding files is left as it is.
        let _ = std::fs::remove_dir(dir);
    }
    Ok(stats)
}

/// What `cleanup_old_versions` would remove, found without removing anything (pylance's
/// `explain_cleanup_old_versions`).
pub async fn plan_cleanup(storage: &Storage, opts: &CleanupOptions) -> Result<CleanupPlan> {
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
    // The manifests of removed versions.
    let mut removed: Vec<Candidate> = Vec::new();
    // Every manifest, read many at a time, and reduced to the files it references as it
    // arrives: a thousand decoded manifests held at once would take memory in proportion
    // to the table's history.
    let mut manifests = futures::stream::iter(locations)
        .map(|loc| read_manifest(storage, loc))
        .buffered(CONCURRENCY);
    while let Some((loc, m, bytes)) = manifests.try_next().await? {
        let old_enough = opts.before_nanos.is_none_or(|t| timestamp_nanos(&m) < t);
        let outside_retained = newest_kept.is_none_or(|first| loc.version < first);
        let chosen = opts
            .versions
            .as_ref()
            .is_none_or(|v| v.contains(&loc.version));
        let goes = loc.version != latest
            && chosen
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
            removed.push(Candidate {
                path: loc.path,
                size: bytes.len() as u64,
                kind: Kind::Manifest,
                unverified: false,
            });
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
    let mut doomed: Vec<Candidate> = Vec::new();
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
                doomed.push(Candidate {
                    path: o.location,
                    size,
                    kind,
                    unverified: !verified,
                });
            }
        }
    }
    Ok(CleanupPlan {
        read_version: latest,
        manifests: removed,
        files: doomed,
        referenced_branches: children,
    })
}
