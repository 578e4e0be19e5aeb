//! Tags: `_refs/tags/{name}.json` naming a version (and optionally a branch, whose files
//! live under `tree/{branch}/`).
use serde::Deserialize;

use crate::error::{Error, Result};
use crate::storage::Storage;

#[derive(Debug, Deserialize)]
pub struct Tag {
    #[serde(default)]
    pub branch: Option<String>,
    pub version: u64,
}

pub async fn read_tag(storage: &Storage, name: &str) -> Result<Tag> {
    if name.is_empty() || name.contains('/') || name.contains("..") {
        return Err(Error::invalid(format!("invalid tag name '{name}'")));
    }
    let path = storage.path(&format!("_refs/tags/{name}.json"));
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
