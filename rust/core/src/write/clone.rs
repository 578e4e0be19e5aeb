//! Clones: a new table at another location made from a version of this one. A shallow
//! clone copies nothing (its manifest refers to the source's files through a base path);
//! a deep clone copies every file the version uses (data, deletion and index files) and
//! stands alone. Either is committed as a `Clone` transaction at the source's version
//! number, as pylance does.
use std::collections::HashMap;

use crate::dataset::{Dataset, VersionRef};
use crate::error::{Error, Result};
use crate::storage::{Storage, StorageOptions};
use crate::table::branches;
use crate::table::commit::CommitOptions;
use crate::table::transaction::{Operation, Staged};

use super::LIBRARY;

/// Clone `source` (at its version) to `target`. The source's branch (none for main) is
/// recorded in the transaction and names the source's base path.
pub async fn clone_dataset(
    source: &Dataset,
    target: &str,
    shallow: bool,
    options: StorageOptions,
    properties: HashMap<String, String>,
) -> Result<Dataset> {
    clone_as(source, target, shallow, None, options, properties).await
}

/// Create branch `name` of `source`'s table, starting at `from` (a version of `source`'s
/// line, a tag, or a branch's version): a shallow clone in `tree/<name>` whose manifests
/// carry the name, then the branch's description (which is what makes it exist, as in
/// pylance: a failure between the two leaves a directory no branch claims).
pub async fn create_branch(
    source: &Dataset,
    name: &str,
    from: VersionRef,
    properties: HashMap<String, String>,
) -> Result<Dataset> {
    branches::check_name(name)?;
    let root = source.root_storage()?;
    if branches::branch_exists(&root, name).await? {
        return Err(branches::already_exists(&root, name));
    }
    let start = source.checkout(from).await?;
    let target = branches::branch_uri(root.uri(), name);
    let options = source.storage_options().clone();
    let branch = clone_as(&start, &target, true, Some(name), options, properties).await?;
    let size = start
        .location
        .size
        .unwrap_or(start.manifest_bytes.len() as u64);
    branches::record_branch(&root, name, start.branch(), start.version(), size).await?;
    Ok(branch)
}

async fn clone_as(
    source: &Dataset,
    target: &str,
    shallow: bool,
    branch_name: Option<&str>,
    options: StorageOptions,
    properties: HashMap<String, String>,
) -> Result<Dataset> {
    let storage = Storage::open(target, &options)?;
    if Dataset::open(target, None, options.clone()).await.is_ok() {
        return Err(Error::invalid(format!("Dataset already exists: {target}")));
    }
    let staged = Staged::new(&storage);
    if !shallow {
        staged.guard(copy_files(source, &storage, &staged)).await?;
    }
    let op = Operation::Clone {
        shallow,
        ref_name: source.branch().map(str::to_string),
        ref_version: source.version(),
        ref_path: source.storage().uri().to_string(),
        branch_name: branch_name.map(str::to_string),
        manifest: Box::new((*source.manifest).clone()),
        bytes: source.manifest_bytes.clone(),
    };
    let opts = CommitOptions {
        read_version: Some(source.version()),
        writer_library: LIBRARY.into(),
        writer_version: env!("CARGO_PKG_VERSION").into(),
        properties,
        read_manifest: None,
        detached: false,
    };
    let committed = crate::table::commit::commit(op, staged, &opts).await?;
    let version = committed.location.version;
    Dataset::open(target, Some(VersionRef::Number(version)), options).await
}

/// Copy every file `source`'s version uses into `target`, where a table of its own keeps
/// them: data files in `data/`, deletion files in `_deletions/`, index files in
/// `_indices/<uuid>/`.
async fn copy_files(source: &Dataset, target: &Storage, staged: &Staged) -> Result<()> {
    for frag in source.fragments() {
        for file in &frag.files {
            let (from, path) = source.data_file_location(file)?;
            let to = target.path(&format!("data/{}", file.path));
            from.copy_object(&path, target, &to).await?;
            staged.add(to);
        }
        if let Some((from, path)) = source.deletion_file_location(frag)? {
            let name = path.filename().unwrap_or_default().to_string();
            let to = target.path(&format!("_deletions/{name}"));
            from.copy_object(&path, target, &to).await?;
            staged.add(to);
        }
    }
    for segment in source.index_segments()?.iter() {
        let dir = source.index_dir(&segment.uuid, segment.base_id)?;
        let from = Storage::open(&dir, source.storage_options())?;
        for object in from.list_all("").await? {
            let relative = from.relative(&object.location).to_string();
            let to = target.path(&format!("_indices/{}/{relative}", segment.uuid));
            from.copy_object(&object.location, target, &to).await?;
            staged.add(to);
        }
    }
    Ok(())
}
