//! Finding manifests: `_versions/{v}.manifest` (V1) or `_versions/{u64::MAX - v:020}.manifest`
//! (V2, so the newest sorts first). A directory must use one scheme. Writers may also
//! leave `latest_version_hint.json` (`{"version": N}`); it is only a hint: we check the
//! named manifest exists and probe upward for newer ones.
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

impl NamingScheme {
    pub fn file_name(self, version: u64) -> String {
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
    pub size: u64,
    pub scheme: NamingScheme,
}

/// Every manifest of the dataset, sorted by version. Errors if the directory mixes naming
/// schemes, and says so plainly when there is no dataset at all.
pub async fn list_manifests(storage: &Storage) -> Result<Vec<ManifestLocation>> {
    let objects = storage.list_dir(VERSIONS_DIR).await?;
    let mut found = Vec::new();
    for o in objects {
        let Some(name) = o.location.filename() else {
            continue;
        };
        if let Some((version, scheme)) = parse_manifest_name(name) {
            found.push(ManifestLocation {
                version,
                path: o.location.clone(),
                size: o.size,
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
    for scheme in [NamingScheme::V2, NamingScheme::V1] {
        let path = storage.path(&format!("{VERSIONS_DIR}/{}", scheme.file_name(version)));
        match storage.head(&path).await {
            Ok(meta) => {
                return Ok(ManifestLocation {
                    version,
                    path,
                    size: meta.size,
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

/// The newest manifest. Local and in-memory stores are listed (cheap, and it checks the
/// naming scheme); elsewhere the hint file saves a listing when it is present and true.
pub async fn latest_version(storage: &Storage, use_hint: bool) -> Result<ManifestLocation> {
    if use_hint {
        if let Some(loc) = latest_from_hint(storage).await {
            return Ok(loc);
        }
    }
    let all = list_manifests(storage).await?;
    Ok(all
        .into_iter()
        .next_back()
        .expect("list_manifests returns at least one"))
}

/// Follow the hint: the named version must exist, then newer versions are probed one by
/// one. Any doubt (no hint, bad JSON, missing manifest) returns None and we list instead.
pub async fn latest_from_hint(storage: &Storage) -> Option<ManifestLocation> {
    let hint = storage
        .get(&storage.path(&format!("{VERSIONS_DIR}/{HINT_FILE}")))
        .await
        .ok()?;
    let value: serde_json::Value = serde_json::from_slice(&hint).ok()?;
    let mut version = value.get("version")?.as_u64()?;
    let mut loc = probe(storage, version).await?;
    loop {
        version += 1;
        match probe(storage, version).await {
            Some(next) => loc = next,
            None => return Some(loc),
        }
    }
}

async fn probe(storage: &Storage, version: u64) -> Option<ManifestLocation> {
    for scheme in [NamingScheme::V2, NamingScheme::V1] {
        let path = storage.path(&format!("{VERSIONS_DIR}/{}", scheme.file_name(version)));
        if let Ok(meta) = storage.head(&path).await {
            return Some(ManifestLocation {
                version,
                path,
                size: meta.size,
                scheme,
            });
        }
    }
    None
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
mod hint_tests {
    use bytes::Bytes;

    use super::*;
    use crate::storage::StorageOptions;

    async fn store_with(versions: &[u64], hint: Option<&str>) -> Storage {
        let uri = format!(
            "memory://hints/{}",
            versions
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join("-")
                + hint.unwrap_or("none")
        );
        let s = Storage::open(&uri, &StorageOptions::new()).unwrap();
        for v in versions {
            s.put(
                &s.path(&format!(
                    "{VERSIONS_DIR}/{}",
                    NamingScheme::V2.file_name(*v)
                )),
                Bytes::from_static(b"m"),
            )
            .await
            .unwrap();
        }
        if let Some(h) = hint {
            s.put(
                &s.path(&format!("{VERSIONS_DIR}/{HINT_FILE}")),
                Bytes::from(h.to_string()),
            )
            .await
            .unwrap();
        }
        s
    }

    #[tokio::test]
    async fn hint_is_followed_and_checked() {
        // A stale hint: newer versions are found by probing upward.
        let s = store_with(&[1, 2, 3], Some(r#"{"version":1}"#)).await;
        assert_eq!(latest_from_hint(&s).await.unwrap().version, 3);
        assert_eq!(latest_version(&s, true).await.unwrap().version, 3);
        // A hint naming a missing version, garbage, or no hint: fall back to listing.
        for hint in [Some(r#"{"version":99}"#), Some("garbage"), None] {
            let s = store_with(&[1, 2], hint).await;
            assert!(latest_from_hint(&s).await.is_none());
            assert_eq!(latest_version(&s, true).await.unwrap().version, 2);
        }
    }

    #[tokio::test]
    async fn empty_directory_is_not_a_dataset() {
        let s = store_with(&[], None).await;
        let err = latest_version(&s, true).await.unwrap_err();
        assert!(matches!(err, Error::NotFound { .. }), "{err}");
    }
}
