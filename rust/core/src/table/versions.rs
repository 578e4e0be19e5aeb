//! Finding manifests: `_versions/{v}.manifest` (V1) or `_versions/{u64::MAX - v:020}.manifest`
//! (V2, so the newest sorts first). A directory must use one scheme.
//!
//! The latest version is found without reading the whole directory where the store
//! allows: object stores list in lexical order, so the first V2 name of the first page is
//! the newest; on a local disk a commit leaves `latest_version_hint.json`
//! (`{"version":N}`, as pylance 14 writes it too), trusted only while nothing in
//! `_versions/` changed after it (the
//! directory's modification time is not past the hint's change time), and checked by
//! looking for version N+1. Anything else reads the directory.
use object_store::path::Path;

use crate::error::{Error, Result};
use crate::storage::Storage;

pub const VERSIONS_DIR: &str = "_versions";
pub const HINT_FILE: &str = "latest_version_hint.json";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NamingScheme {
    V1,
    V2,
}

/// The top bit of a detached version's number: such versions are not on the table's
/// line of versions (nothing lists them; only their number opens them).
pub const DETACHED_VERSION_MASK: u64 = 1 << 63;

pub fn is_detached(version: u64) -> bool {
    version & DETACHED_VERSION_MASK != 0
}

/// A fresh detached version number: random, with the top bit set.
pub fn detached_version() -> u64 {
    let random = uuid::Uuid::new_v4().as_u64_pair().0;
    random | DETACHED_VERSION_MASK
}

impl NamingScheme {
    /// The manifest's file name in `_versions/`; a detached version is `d{version}` in
    /// either scheme, sorting after every numbered one.
    pub fn file_name(self, version: u64) -> String {
        if is_detached(version) {
            return format!("d{version}.manifest");
        }
        match self {
            NamingScheme::V1 => format!("{version}.manifest"),
            NamingScheme::V2 => format!("{:020}.manifest", u64::MAX - version),
        }
    }
}

/// Parse a file name of `_versions/`: the version and scheme, or None for other files
/// (the hint, detached `d*.manifest` versions, temporary files).
pub fn parse_manifest_name(name: &str) -> Option<(u64, NamingScheme)> {
    let stem = name.strip_suffix(".manifest")?;
    if stem.is_empty() || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = stem.parse().ok()?;
    if stem.len() == 20 {
        Some((u64::MAX - n, NamingScheme::V2))
    } else {
        Some((n, NamingScheme::V1))
    }
}

/// A manifest found in `_versions/`.
#[derive(Clone, Debug)]
pub struct ManifestLocation {
    pub version: u64,
    pub path: Path,
    /// The file's size, when a listing told it.
    pub size: Option<u64>,
    pub scheme: NamingScheme,
}

/// Every manifest of the dataset, sorted by version. Errors if the directory mixes naming
/// schemes, and says so plainly when there is no dataset at all.
pub async fn list_manifests(storage: &Storage) -> Result<Vec<ManifestLocation>> {
    let objects = storage.list_files(VERSIONS_DIR, false).await?;
    let mut found = Vec::new();
    for o in objects {
        let Some(name) = o.location.filename() else {
            continue;
        };
        if let Some((version, scheme)) = parse_manifest_name(name) {
            found.push(ManifestLocation {
                version,
                size: o.meta.as_ref().map(|m| m.size),
                path: o.location,
                scheme,
            });
        }
    }
    if found.is_empty() {
        return Err(Error::not_found(
            storage.uri(),
            "no Lance dataset here (no manifests in _versions/)",
        ));
    }
    let v1 = found.iter().any(|m| m.scheme == NamingScheme::V1);
    let v2 = found.iter().any(|m| m.scheme == NamingScheme::V2);
    if v1 && v2 {
        return Err(Error::corrupt(
            storage.display(&storage.path(VERSIONS_DIR)),
            "found both manifest naming schemes (V1 '{version}.manifest' and V2 zero-padded) in the same directory",
        ));
    }
    found.sort_by_key(|m| m.version);
    Ok(found)
}

/// The location of `version`, trying the V2 name first.
pub async fn locate_version(storage: &Storage, version: u64) -> Result<ManifestLocation> {
    if is_detached(version) {
        let path = storage.path(&format!(
            "{VERSIONS_DIR}/{}",
            NamingScheme::V2.file_name(version)
        ));
        return match storage.head(&path).await {
            Ok(meta) => Ok(ManifestLocation {
                version,
                path,
                size: Some(meta.size),
                scheme: NamingScheme::V2,
            }),
            Err(Error::NotFound { .. }) => Err(Error::not_found(
                storage.uri(),
                format!("detached version {version} does not exist"),
            )),
            Err(e) => Err(e),
        };
    }
    for scheme in [NamingScheme::V2, NamingScheme::V1] {
        let path = storage.path(&format!("{VERSIONS_DIR}/{}", scheme.file_name(version)));
        match storage.head(&path).await {
            Ok(meta) => {
                return Ok(ManifestLocation {
                    version,
                    path,
                    size: Some(meta.size),
                    scheme,
                })
            }
            Err(Error::NotFound { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    // Distinguish "no such version" from "no dataset".
    let all = list_manifests(storage).await?;
    let known: Vec<u64> = all.iter().map(|m| m.version).collect();
    Err(Error::not_found(
        storage.uri(),
        format!(
            "version {version} does not exist (versions {}..={})",
            known.first().unwrap_or(&0),
            known.last().unwrap_or(&0)
        ),
    ))
}

/// The newest manifest.
pub async fn latest_version(storage: &Storage) -> Result<ManifestLocation> {
    match storage.local_file(&storage.path(VERSIONS_DIR)) {
        Some(dir) => {
            let (uri, root) = (storage.uri().to_string(), storage.path(VERSIONS_DIR));
            let found = tokio::task::spawn_blocking(move || newest_on_disk(&dir))
                .await
                .map_err(|e| Error::io(&uri, e))?;
            match found {
                Ok(Some((version, scheme))) => Ok(ManifestLocation {
                    version,
                    path: root.clone().join(scheme.file_name(version)),
                    size: None,
                    scheme,
                }),
                Ok(None) => Err(no_dataset(storage)),
                Err(Mixed) => Err(mixed_schemes(storage)),
            }
        }
        None => newest_listed(storage).await,
    }
}

fn no_dataset(storage: &Storage) -> Error {
    Error::not_found(
        storage.uri(),
        "no Lance dataset here (no manifests in _versions/)",
    )
}

fn mixed_schemes(storage: &Storage) -> Error {
    Error::corrupt(
        storage.display(&storage.path(VERSIONS_DIR)),
        "found both manifest naming schemes (V1 '{version}.manifest' and V2 zero-padded) in the same directory",
    )
}

/// An object store's listing is in lexical order: the first manifest named in the V2
/// scheme is the newest, and one page of the listing suffices. V1 names sort by digits,
/// not by number, so they are all read.
async fn newest_listed(storage: &Storage) -> Result<ManifestLocation> {
    use futures::TryStreamExt;
    let mut listing = std::pin::pin!(storage.list_stream(VERSIONS_DIR));
    let mut newest: Option<ManifestLocation> = None;
    while let Some(meta) = listing.try_next().await? {
        let Some((version, scheme)) = meta.location.filename().and_then(parse_manifest_name) else {
            continue;
        };
        let here = ManifestLocation {
            version,
            path: meta.location.clone(),
            size: Some(meta.size),
            scheme,
        };
        if newest.is_none() && scheme == NamingScheme::V2 {
            return Ok(here);
        }
        let current = newest.as_ref().map(|n| (n.version, n.scheme));
        if supersedes(current, version, scheme).map_err(|_| mixed_schemes(storage))? {
            newest = Some(here);
        }
    }
    newest.ok_or_else(|| no_dataset(storage))
}

/// Both naming schemes in one directory.
struct Mixed;

/// Whether manifest `version` (named in `scheme`) is newer than the newest found so far.
fn supersedes(
    newest: Option<(u64, NamingScheme)>,
    version: u64,
    scheme: NamingScheme,
) -> std::result::Result<bool, Mixed> {
    match newest {
        Some((_, s)) if s != scheme => Err(Mixed),
        Some((v, _)) => Ok(version > v),
        None => Ok(true),
    }
}

/// The newest version in the local directory `dir`: from the hint when nothing changed
/// there since it was written, else by reading the directory's names (not each file's
/// metadata). None when there is no manifest.
fn newest_on_disk(
    dir: &std::path::Path,
) -> std::result::Result<Option<(u64, NamingScheme)>, Mixed> {
    if let Some(found) = newest_from_hint(dir) {
        return Ok(Some(found));
    }
    let Ok(names) = crate::storage::local_file_names(dir, false) else {
        return Ok(None);
    };
    let mut newest: Option<(u64, NamingScheme)> = None;
    for (version, scheme) in names.iter().filter_map(|n| parse_manifest_name(n)) {
        if supersedes(newest, version, scheme)? {
            newest = Some((version, scheme));
        }
    }
    Ok(newest)
}

/// The version the hint names, when the hint is the last change to the directory and
/// its version is there but the next one is not.
fn newest_from_hint(dir: &std::path::Path) -> Option<(u64, NamingScheme)> {
    let hint_path = dir.join(HINT_FILE);
    let hint_meta = std::fs::metadata(&hint_path).ok()?;
    let dir_meta = std::fs::metadata(dir).ok()?;
    // Creating, renaming or removing any entry moves the directory's mtime; renaming the
    // hint into place sets its ctime to the same instant.
    if dir_meta.modified().ok()? > changed_at(&hint_meta)? {
        return None;
    }
    let text = std::fs::read(&hint_path).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&text).ok()?;
    let version = value.get("version")?.as_u64()?;
    let scheme = [NamingScheme::V2, NamingScheme::V1]
        .into_iter()
        .find(|s| dir.join(s.file_name(version)).exists())?;
    (!dir.join(scheme.file_name(version + 1)).exists()).then_some((version, scheme))
}

#[cfg(unix)]
fn changed_at(meta: &std::fs::Metadata) -> Option<std::time::SystemTime> {
    use std::os::unix::fs::MetadataExt;
    let since_epoch = std::time::Duration::new(
        u64::try_from(meta.ctime()).ok()?,
        u32::try_from(meta.ctime_nsec()).ok()?,
    );
    Some(std::time::UNIX_EPOCH + since_epoch)
}

#[cfg(not(unix))]
fn changed_at(meta: &std::fs::Metadata) -> Option<std::time::SystemTime> {
    meta.modified().ok()
}

/// After committing `version` to a local table, leave the hint for the next open (best
/// effort: a table without a hint is read by listing).
pub fn write_hint(storage: &Storage, version: u64) {
    let Some(dir) = storage.local_file(&storage.path(VERSIONS_DIR)) else {
        return;
    };
    let tmp = dir.join(format!(".{HINT_FILE}.{}", uuid::Uuid::new_v4().simple()));
    let body = format!("{{\"version\":{version}}}");
    if std::fs::write(&tmp, body).is_err() || std::fs::rename(&tmp, dir.join(HINT_FILE)).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_in_both_schemes() {
        assert_eq!(
            parse_manifest_name("3.manifest"),
            Some((3, NamingScheme::V1))
        );
        assert_eq!(
            parse_manifest_name("18446744073709551614.manifest"),
            Some((1, NamingScheme::V2))
        );
        assert_eq!(
            NamingScheme::V2.file_name(1),
            "18446744073709551614.manifest"
        );
        assert_eq!(parse_manifest_name("d12064427529245671912.manifest"), None);
        assert_eq!(parse_manifest_name("latest_version_hint.json"), None);
        assert_eq!(parse_manifest_name(".tmp_7.manifest_abc"), None);
        assert_eq!(parse_manifest_name("foo.manifest"), None);
    }
}

#[cfg(test)]
mod latest_tests {
    use bytes::Bytes;

    use super::*;
    use crate::storage::StorageOptions;

    async fn put_versions(s: &Storage, versions: &[u64], scheme: NamingScheme) {
        for v in versions {
            let path = s.path(&format!("{VERSIONS_DIR}/{}", scheme.file_name(*v)));
            s.put(&path, Bytes::from_static(b"m")).await.unwrap();
        }
    }

    #[tokio::test]
    async fn a_sorted_listing_stops_at_the_first_v2_name() {
        let s = Storage::open("memory://latest/v2", &StorageOptions::new()).unwrap();
        put_versions(&s, &[1, 2, 3, 10, 11], NamingScheme::V2).await;
        assert_eq!(latest_version(&s).await.unwrap().version, 11);
        // V1 names sort by digits ("10" before "9"): all are read.
        let s = Storage::open("memory://latest/v1", &StorageOptions::new()).unwrap();
        put_versions(&s, &[1, 9, 10, 2], NamingScheme::V1).await;
        assert_eq!(latest_version(&s).await.unwrap().version, 10);
        let s = Storage::open("memory://latest/none", &StorageOptions::new()).unwrap();
        let err = latest_version(&s).await.unwrap_err();
        assert!(matches!(err, Error::NotFound { .. }), "{err}");
    }

    #[tokio::test]
    async fn mixed_schemes_are_refused() {
        let s = Storage::open("memory://latest/mixed", &StorageOptions::new()).unwrap();
        put_versions(&s, &[1], NamingScheme::V1).await;
        put_versions(&s, &[2], NamingScheme::V2).await;
        let err = latest_version(&s).await.unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    }

    /// Past the granularity of file times, so that a change lands after the hint.
    fn tick() {
        std::thread::sleep(std::time::Duration::from_millis(30));
    }

    #[tokio::test]
    async fn the_local_hint_is_used_only_while_nothing_changed() {
        let dir = tempfile::tempdir().unwrap();
        let s = Storage::open(dir.path().to_str().unwrap(), &StorageOptions::new()).unwrap();
        put_versions(&s, &[1, 2, 3], NamingScheme::V2).await;
        let versions = dir.path().join(VERSIONS_DIR);
        assert_eq!(newest_from_hint(&versions), None, "no hint yet");
        assert_eq!(latest_version(&s).await.unwrap().version, 3);
        tick();
        write_hint(&s, 3);
        assert_eq!(newest_from_hint(&versions), Some((3, NamingScheme::V2)));
        assert_eq!(latest_version(&s).await.unwrap().version, 3);

        // Another writer commits without updating the hint.
        tick();
        put_versions(&s, &[4], NamingScheme::V2).await;
        assert_eq!(newest_from_hint(&versions), None);
        assert_eq!(latest_version(&s).await.unwrap().version, 4);

        // Version 2 is kept (say, tagged), the hint names it; another writer then commits
        // 5 and a cleanup removes 3 and 4: the hint no longer describes the directory.
        tick();
        write_hint(&s, 2);
        tick();
        put_versions(&s, &[5], NamingScheme::V2).await;
        for v in [3, 4] {
            let p = s.path(&format!("{VERSIONS_DIR}/{}", NamingScheme::V2.file_name(v)));
            s.delete(&p).await.unwrap();
        }
        assert_eq!(newest_from_hint(&versions), None);
        assert_eq!(latest_version(&s).await.unwrap().version, 5);
    }

    #[tokio::test]
    async fn a_hint_naming_a_missing_version_or_garbage_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let s = Storage::open(dir.path().to_str().unwrap(), &StorageOptions::new()).unwrap();
        put_versions(&s, &[1, 2], NamingScheme::V1).await;
        let versions = dir.path().join(VERSIONS_DIR);
        tick();
        write_hint(&s, 99);
        assert_eq!(newest_from_hint(&versions), None);
        assert_eq!(latest_version(&s).await.unwrap().version, 2);
        tick();
        std::fs::write(versions.join(HINT_FILE), "garbage").unwrap();
        assert_eq!(newest_from_hint(&versions), None);
        assert_eq!(latest_version(&s).await.unwrap().version, 2);
    }
}
