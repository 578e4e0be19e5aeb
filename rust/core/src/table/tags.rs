//! Tags: `_refs/tags/{name}.json` naming a version (and optionally a branch, whose files
//! live under `tree/{branch}/`). The file is JSON as pylance writes it: `branch`,
//! `version`, `createdAt` / `updatedAt` (RFC 3339, nanoseconds, UTC), `manifestSize` (bytes
//! of the version's manifest) and `metadata`.
use std::collections::BTreeMap;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::branches::{branch_storage, normalize};
use super::versions::locate_version;
use crate::error::{Error, Result};
use crate::storage::{Created, Storage};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tag {
    #[serde(default)]
    pub branch: Option<String>,
    pub version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_size: Option<u64>,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

/// Tag names as pylance allows them: letters, digits, `.`, `-` and `_` (a name is a file
/// name, so nothing that could leave the tags directory).
fn check_name(name: &str) -> Result<()> {
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    if name.is_empty()
        || !ok_chars
        || name.starts_with('.')
        || name.contains("..")
        || name.ends_with(".lock")
    {
        return Err(Error::invalid(format!(
            "invalid tag name '{name}': use letters, digits, '.', '-' and '_' (not first)"
        )));
    }
    Ok(())
}

fn tag_path(storage: &Storage, name: &str) -> object_store::path::Path {
    storage.path(&format!("_refs/tags/{name}.json"))
}

pub async fn read_tag(storage: &Storage, name: &str) -> Result<Tag> {
    if name.is_empty() || name.contains('/') || name.contains("..") {
        return Err(Error::invalid(format!("invalid tag name '{name}'")));
    }
    let path = tag_path(storage, name);
    let bytes = match storage.get(&path).await {
        Ok(b) => b,
        Err(Error::NotFound { .. }) => {
            return Err(Error::not_found(
                storage.uri(),
                format!("tag '{name}' does not exist"),
            ))
        }
        Err(e) => return Err(e),
    };
    serde_json::from_slice(&bytes)
        .map_err(|e| Error::corrupt(storage.display(&path), format!("bad tag file: {e}")))
}

/// Every tag: name → (branch, version).
pub async fn list_tags(storage: &Storage) -> Result<Vec<(String, Tag)>> {
    let mut out = Vec::new();
    for o in storage.list_dir("_refs/tags").await? {
        let Some(name) = o.location.filename().and_then(|f| f.strip_suffix(".json")) else {
            continue;
        };
        let name = name.to_string();
        let tag = read_tag(storage, &name).await?;
        out.push((name, tag));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Now, as RFC 3339 with nanoseconds in UTC (as pylance stamps tags).
fn now() -> String {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    prost_types::Timestamp {
        seconds: d.as_secs() as i64,
        nanos: d.subsec_nanos() as i32,
    }
    .to_string()
}

/// The size of `branch`'s version `version`'s manifest; an error naming the version when
/// it does not exist (or was cleaned up).
async fn manifest_size(root: &Storage, branch: Option<&str>, version: u64) -> Result<u64> {
    let line = branch_storage(root, branch)?;
    match locate_version(&line, version).await {
        Ok(loc) => Ok(loc.size.unwrap_or(0)),
        Err(Error::NotFound { .. }) => Err(Error::invalid(format!(
            "{}: version {version} does not exist",
            line.uri()
        ))),
        Err(e) => Err(e),
    }
}

fn encode(storage: &Storage, tag: &Tag) -> Result<Bytes> {
    serde_json::to_vec_pretty(tag)
        .map(Bytes::from)
        .map_err(|e| Error::io(storage.uri(), format!("cannot write a tag: {e}")))
}

/// Create tag `name` (at the table's root `root`) for `branch`'s (None: main's) version
/// `version`; an error if the tag exists (two writers creating the same tag: one wins, the
/// other is told).
pub async fn create_tag(
    root: &Storage,
    name: &str,
    branch: Option<&str>,
    version: u64,
) -> Result<()> {
    check_name(name)?;
    let stamp = now();
    let branch = normalize(branch);
    let tag = Tag {
        branch: branch.map(str::to_string),
        version,
        created_at: Some(stamp.clone()),
        updated_at: Some(stamp),
        manifest_size: Some(manifest_size(root, branch, version).await?),
        metadata: BTreeMap::new(),
    };
    // A tag holding exactly these bytes (its creation time included) is this call's,
    // made by an attempt whose answer was lost.
    match root
        .create(&tag_path(root, name), encode(root, &tag)?)
        .await?
    {
        Created::Ours => Ok(()),
        Created::Exists(_) => Err(Error::invalid(format!(
            "{}: tag '{name}' already exists",
            root.uri()
        ))),
    }
}

/// Point tag `name` (which must exist) at `branch`'s version `version`.
pub async fn update_tag(
    root: &Storage,
    name: &str,
    branch: Option<&str>,
    version: u64,
) -> Result<()> {
    check_name(name)?;
    let old = read_tag(root, name).await?;
    let branch = normalize(branch);
    let tag = Tag {
        branch: branch.map(str::to_string),
        version,
        updated_at: Some(now()),
        manifest_size: Some(manifest_size(root, branch, version).await?),
        ..old
    };
    root.put(&tag_path(root, name), encode(root, &tag)?).await
}

/// Remove tag `name`, which must exist.
pub async fn delete_tag(storage: &Storage, name: &str) -> Result<()> {
    check_name(name)?;
    read_tag(storage, name).await?;
    storage.delete(&tag_path(storage, name)).await
}
