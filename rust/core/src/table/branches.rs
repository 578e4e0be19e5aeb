//! Branches: lines of versions that leave the main line (or another branch) at a version
//! and go on by themselves. As pylance stores them, a branch named `a/b` is
//! - a shallow clone of the version it starts from, kept in `tree/a/b/` below the table's
//!   root, whose manifests carry the branch's name (`Manifest.branch`), and
//! - its description, `_refs/branches/a%2Fb.json` (the name's `/` escaped: one file per
//!   branch), which is what makes the branch exist: a `tree/` directory without it is a
//!   leftover of a creation that did not finish.
//!
//! The description's `identifier` is the branch's lineage: the (version, random id) pairs
//! of every branch point from main down to this branch. A branch whose lineage starts with
//! another's was made from it (directly or not), at the version that follows the common
//! part; such a branch keeps its parent from being deleted, and its files from cleanup.
use std::collections::BTreeMap;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::storage::{Created, Storage};

/// The name that means "no branch": the table's main line of versions.
pub const MAIN: &str = "main";

/// The directory (below a table's root) holding its branches.
const TREE: &str = "tree";

/// `Some(name)` for a branch, `None` for main (however it was spelled).
pub fn normalize(branch: Option<&str>) -> Option<&str> {
    branch.filter(|b| !b.is_empty() && *b != MAIN)
}

/// A branch name as pylance accepts it: `/`-separated segments of letters, digits, `.`, `-`
/// and `_`, not `main`, not ending in `.lock`, and nothing that could leave `tree/`.
pub fn check_name(name: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(Error::invalid(format!(
            "invalid branch name '{name}': {why}"
        )))
    };
    if name.is_empty() {
        return bad("it is empty");
    }
    if name == MAIN {
        return bad("'main' names the main line of versions");
    }
    if name.contains("..") || name.contains('\\') {
        return bad("it may not contain '..' or '\\'");
    }
    if name.ends_with(".lock") {
        return bad("it may not end with '.lock'");
    }
    for segment in name.split('/') {
        if segment.is_empty() {
            return bad("it may not start or end with '/' or contain '//'");
        }
        if !segment
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '.' | '-' | '_'))
        {
            return bad("use letters, digits, '.', '-', '_' and '/' between parts");
        }
    }
    Ok(())
}

/// Where branch `name`'s versions live, below the table's root `root_uri`.
pub fn branch_uri(root_uri: &str, name: &str) -> String {
    format!("{}/{TREE}/{name}", root_uri.trim_end_matches('/'))
}

/// The store of `branch`'s versions (main's: the root itself).
pub fn branch_storage(root: &Storage, branch: Option<&str>) -> Result<Storage> {
    match normalize(branch) {
        Some(name) => {
            check_name(name)?;
            Ok(root.below(&format!("{TREE}/{name}")))
        }
        None => Ok(root.clone()),
    }
}

/// The table's root, from the store of branch `branch` (`<root>/tree/<branch>`).
pub fn root_storage(line: &Storage, branch: Option<&str>) -> Result<Storage> {
    match normalize(branch) {
        Some(name) => line.above(&format!("{TREE}/{name}")).ok_or_else(|| {
            Error::invalid(format!(
                "{}: the manifest names branch '{name}', but the dataset is not at \
                 <root>/{TREE}/{name}",
                line.uri()
            ))
        }),
        None => Ok(line.clone()),
    }
}

/// A branch's lineage: the branch points from main down to it, as (version of the parent,
/// random id) pairs; main's is empty.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Lineage {
    pub version_mapping: Vec<(u64, String)>,
}

impl Lineage {
    /// A branch made from `parent` at `version`: the parent's lineage and a fresh id.
    fn child(parent: &Lineage, version: u64) -> Lineage {
        let mut version_mapping = parent.version_mapping.clone();
        version_mapping.push((version, uuid::Uuid::new_v4().simple().to_string()));
        Lineage { version_mapping }
    }

    /// A description written without a lineage (older writers): a lineage of its own,
    /// descending from nothing (version 0), so it protects no other branch's versions.
    fn unknown() -> Lineage {
        Lineage {
            version_mapping: vec![(0, uuid::Uuid::new_v4().simple().to_string())],
        }
    }

    /// The version of `ancestor` this lineage descends from, when it does (directly or
    /// through other branches).
    pub fn descends_from(&self, ancestor: &Lineage) -> Option<u64> {
        let n = ancestor.version_mapping.len();
        (self.version_mapping.len() > n
            && self.version_mapping[..n] == ancestor.version_mapping[..])
            .then(|| self.version_mapping[n].0)
            .filter(|v| *v > 0)
    }
}

/// `_refs/branches/{name}.json`, as pylance writes it (camelCase keys).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchContents {
    /// The branch it was made from; `None` for main.
    pub parent_branch: Option<String>,
    #[serde(default = "Lineage::unknown")]
    pub identifier: Lineage,
    /// The parent's version it starts from.
    pub parent_version: u64,
    /// Unix seconds.
    pub create_at: u64,
    /// Bytes of the branch's first manifest.
    pub manifest_size: u64,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

/// The description file of branch `name` (its `/` escaped, so that the file stays directly
/// in `_refs/branches/`).
fn contents_path(root: &Storage, name: &str) -> object_store::path::Path {
    root.path("_refs/branches")
        .join(format!("{name}.json").as_str())
}

/// The branch name a description file's name stands for.
fn name_of_file(file: &str) -> Option<String> {
    let stem = file.strip_suffix(".json")?;
    let decoded = percent_decode(stem);
    (!decoded.is_empty()).then_some(decoded)
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Branch `name`'s description; a not-found error naming it when there is none.
pub async fn read_branch(root: &Storage, name: &str) -> Result<BranchContents> {
    check_name(name)?;
    let path = contents_path(root, name);
    let bytes = match root.get(&path).await {
        Ok(b) => b,
        Err(Error::NotFound { .. }) => {
            return Err(Error::not_found(
                root.uri(),
                format!("branch '{name}' does not exist"),
            ))
        }
        Err(e) => return Err(e),
    };
    serde_json::from_slice(&bytes)
        .map_err(|e| Error::corrupt(root.display(&path), format!("bad branch file: {e}")))
}

/// Every branch of the table at `root`, by name.
pub async fn list_branches(root: &Storage) -> Result<BTreeMap<String, BranchContents>> {
    let mut out = BTreeMap::new();
    for o in root.list_dir("_refs/branches").await? {
        let Some(name) = o.location.filename().and_then(name_of_file) else {
            continue;
        };
        let bytes = root.get(&o.location).await?;
        let contents = serde_json::from_slice(&bytes).map_err(|e| {
            Error::corrupt(root.display(&o.location), format!("bad branch file: {e}"))
        })?;
        out.insert(name, contents);
    }
    Ok(out)
}

/// The lineage of `branch` (main's is empty).
pub async fn lineage(root: &Storage, branch: Option<&str>) -> Result<Lineage> {
    match normalize(branch) {
        Some(name) => Ok(read_branch(root, name).await?.identifier),
        None => Ok(Lineage {
            version_mapping: vec![],
        }),
    }
}

/// The branches made (directly or not) from `branch`, each with the version of `branch`
/// its line starts from, deepest first.
pub fn descendants(all: &BTreeMap<String, BranchContents>, of: &Lineage) -> Vec<(String, u64)> {
    let mut found: Vec<(&Lineage, &String, u64)> = all
        .iter()
        .filter_map(|(name, c)| Some((&c.identifier, name, c.identifier.descends_from(of)?)))
        .collect();
    found.sort_by(|a, b| b.0.cmp(a.0));
    found.into_iter().map(|(_, n, v)| (n.clone(), v)).collect()
}

/// Record branch `name`, made from `parent` (None: main) at `version`, whose first
/// manifest has `manifest_size` bytes. An error if a branch of that name exists.
pub async fn record_branch(
    root: &Storage,
    name: &str,
    parent: Option<&str>,
    version: u64,
    manifest_size: u64,
) -> Result<BranchContents> {
    let parent = normalize(parent);
    let contents = BranchContents {
        parent_branch: parent.map(str::to_string),
        identifier: Lineage::child(&lineage(root, parent).await?, version),
        parent_version: version,
        create_at: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs(),
        manifest_size,
        metadata: BTreeMap::new(),
    };
    let bytes = serde_json::to_vec_pretty(&contents)
        .map_err(|e| Error::io(root.uri(), format!("cannot write a branch: {e}")))?;
    // Contents holding exactly these bytes are this call's (an attempt whose answer was
    // lost made them).
    match root
        .create(&contents_path(root, name), Bytes::from(bytes))
        .await?
    {
        Created::Ours => Ok(contents),
        Created::Exists(_) => Err(already_exists(root, name)),
    }
}

pub fn already_exists(root: &Storage, name: &str) -> Error {
    Error::invalid(format!("{}: branch '{name}' already exists", root.uri()))
}

/// Whether branch `name` is recorded.
pub async fn branch_exists(root: &Storage, name: &str) -> Result<bool> {
    root.exists(&contents_path(root, name)).await
}

/// Delete branch `name`: its description, then its directory (as much of `tree/` as no
/// other branch lives in). Refused while other branches were made from it.
pub async fn delete_branch(root: &Storage, name: &str) -> Result<()> {
    check_name(name)?;
    let all = list_branches(root).await?;
    let Some(contents) = all.get(name) else {
        return Err(Error::not_found(
            root.uri(),
            format!("branch '{name}' does not exist"),
        ));
    };
    let children = descendants(&all, &contents.identifier);
    if !children.is_empty() {
        let list: Vec<String> = children
            .iter()
            .map(|(n, v)| format!("{n} (from version {v})"))
            .collect();
        return Err(Error::invalid(format!(
            "{}: branch '{name}' cannot be deleted: branches were made from it: {}",
            root.uri(),
            list.join(", ")
        )));
    }
    root.delete(&contents_path(root, name)).await?;
    let others: Vec<&str> = all
        .keys()
        .map(String::as_str)
        .filter(|n| *n != name)
        .collect();
    if let Some(dir) = directory_to_remove(name, &others) {
        root.delete_tree(&format!("{TREE}/{dir}")).await?;
    }
    Ok(())
}

/// The part of `tree/` to remove with branch `name` (relative to `tree/`), given the
/// branches that stay: the shortest prefix of the name no remaining branch lives below.
/// None when a remaining branch lives inside the branch's own directory.
fn directory_to_remove(name: &str, remaining: &[&str]) -> Option<String> {
    let parts: Vec<&str> = name.split('/').collect();
    let mut shared = 0;
    for other in remaining {
        let theirs: Vec<&str> = other.split('/').collect();
        let common = parts
            .iter()
            .zip(&theirs)
            .take_while(|(a, b)| a == b)
            .count();
        if common == parts.len() {
            // The other branch lives inside this one's directory.
            return None;
        }
        shared = shared.max(common);
    }
    Some(parts[..=shared].join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::StorageOptions;

    #[test]
    fn names_follow_pylance_rules() {
        for ok in ["a", "feature/x-1", "v1.2_b", "a/b/c"] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "", "main", "/a", "a/", "a//b", "a/../b", "a\\b", "x.lock", "a b", "a*",
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn root_and_branch_locations_invert() {
        let opts = StorageOptions::default();
        let root = Storage::open("memory:///t.lance", &opts).unwrap();
        let b = branch_storage(&root, Some("a/b")).unwrap();
        assert_eq!(b.uri(), "memory:///t.lance/tree/a/b");
        assert_eq!(b.uri(), branch_uri(root.uri(), "a/b"));
        let back = root_storage(&b, Some("a/b")).unwrap();
        assert_eq!(back.uri(), root.uri());
        assert_eq!(back.path("x").as_ref(), root.path("x").as_ref());
        assert!(root_storage(&root, Some("a/b")).is_err());
        assert_eq!(
            branch_storage(&root, Some("main")).unwrap().uri(),
            root.uri()
        );
    }

    #[test]
    fn lineage_finds_descendants_and_their_versions() {
        let main = Lineage {
            version_mapping: vec![],
        };
        let b1 = Lineage::child(&main, 3);
        let b2 = Lineage::child(&b1, 5);
        let other = Lineage::child(&main, 4);
        assert_eq!(b1.descends_from(&main), Some(3));
        assert_eq!(b2.descends_from(&main), Some(3));
        assert_eq!(b2.descends_from(&b1), Some(5));
        assert_eq!(other.descends_from(&b1), None);
        assert_eq!(b1.descends_from(&b1), None);
        assert_eq!(Lineage::unknown().descends_from(&main), None);
        let all: BTreeMap<String, BranchContents> = [("b1", &b1, 3), ("b2", &b2, 5)]
            .into_iter()
            .map(|(n, l, v)| {
                let c = BranchContents {
                    parent_branch: None,
                    identifier: l.clone(),
                    parent_version: v,
                    create_at: 0,
                    manifest_size: 1,
                    metadata: BTreeMap::new(),
                };
                (n.to_string(), c)
            })
            .collect();
        assert_eq!(
            descendants(&all, &main),
            vec![("b2".to_string(), 3), ("b1".to_string(), 3)]
        );
        assert_eq!(descendants(&all, &b1), vec![("b2".to_string(), 5)]);
    }

    #[test]
    fn deleting_a_branch_removes_only_its_own_directories() {
        assert_eq!(directory_to_remove("a/b/c", &[]), Some("a".into()));
        assert_eq!(directory_to_remove("a/b/c", &["a"]), Some("a/b".into()));
        assert_eq!(
            directory_to_remove("a/b/c", &["a/b/d"]),
            Some("a/b/c".into())
        );
        assert_eq!(directory_to_remove("a/b", &["a/b/c"]), None);
        assert_eq!(directory_to_remove("x", &["y"]), Some("x".into()));
    }

    #[test]
    fn descriptions_read_as_pylance_writes_them() {
        let text = r#"{"parentBranch": "b1", "identifier": {"version_mapping": [[1, "ab"], [2, "cd"]]},
            "parentVersion": 2, "createAt": 1795807357, "manifestSize": 454, "metadata": {}}"#;
        let c: BranchContents = serde_json::from_str(text).unwrap();
        assert_eq!(c.parent_branch.as_deref(), Some("b1"));
        assert_eq!(
            c.identifier.version_mapping,
            vec![(1, "ab".into()), (2, "cd".into())]
        );
        let back = serde_json::to_value(&c).unwrap();
        assert_eq!(back["identifier"]["version_mapping"][1][0], 2);
        assert_eq!(back["parentVersion"], 2);
        assert_eq!(name_of_file("feat%2Fx.json").as_deref(), Some("feat/x"));
    }
}
