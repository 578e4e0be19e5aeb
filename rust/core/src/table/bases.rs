//! Base paths: the other locations a table's files may live in (a multi-base table's
//! data directories, a shallow clone's source). A file with a `base_id` lives below that
//! base (`<path>/data/<file>` when the base is a dataset root, `<path>/<file>` otherwise);
//! a file without one lives with the table. The rules for numbering new bases and for
//! choosing where new data files go are pylance 14's.
use object_store::path::Path;

use crate::error::{Error, Result};
use crate::proto::table::BasePath;
use crate::storage::{Storage, StorageOptions};

/// Ids for the bases a new table registers: those given 0 ("unassigned") are numbered
/// from one past the largest id of `existing` (or 1), in order; given ids are kept and
/// must not repeat.
pub fn assign_initial(existing: &[BasePath], new: &[BasePath]) -> Result<Vec<BasePath>> {
    let mut next = existing.iter().map(|b| b.id + 1).max().unwrap_or(1).max(1);
    let mut out = Vec::with_capacity(new.len());
    for b in new {
        let mut b = b.clone();
        if b.id == 0 {
            b.id = next;
            next += 1;
        }
        out.push(b);
    }
    let mut seen = std::collections::HashSet::new();
    for b in existing.iter().chain(&out) {
        if !seen.insert(b.id) {
            return Err(Error::invalid(format!(
                "Duplicate base path ID {} detected. Base path IDs must be unique.",
                b.id
            )));
        }
    }
    Ok(out)
}

/// `existing` with `new` registered after it (pylance's `add_bases`): a base whose name
/// (unnamed ones count as one name) or path is already registered is refused; one given
/// id 0 gets the smallest unused id from 1.
pub fn register(existing: &[BasePath], new: &[BasePath], uri: &str) -> Result<Vec<BasePath>> {
    let mut all = existing.to_vec();
    for b in new {
        if let Some(old) = all.iter().find(|o| o.name == b.name || o.path == b.path) {
            return Err(Error::invalid(format!(
                "{uri}: Conflict detected: Base path with name '{:?}' or path '{}' already exists. \
                 Existing: name='{:?}', path='{}'",
                b.name, b.path, old.name, old.path
            )));
        }
        let mut b = b.clone();
        if b.id == 0 {
            b.id = (1..)
                .find(|id| all.iter().all(|o| o.id != *id))
                .unwrap_or(1);
        } else if all.iter().any(|o| o.id == b.id) {
            return Err(Error::invalid(format!(
                "{uri}: Conflict detected: base path id {} already exists",
                b.id
            )));
        }
        all.push(b);
    }
    Ok(all)
}

/// Whether two sets of bases registered by concurrent commits clash (a non-zero id, a
/// name or a path in both).
pub fn clash(ours: &[BasePath], theirs: &[BasePath]) -> bool {
    ours.iter().any(|a| {
        theirs.iter().any(|b| {
            (a.id != 0 && a.id == b.id)
                || (a.name.is_some() && a.name == b.name)
                || a.path == b.path
        })
    })
}

/// Make a clone's first manifest `m` (the source version's) find its files: a shallow
/// clone registers the source (`ref_path`, named `ref_name`) as a dataset-root base under
/// the smallest unused id from 0 and points every file of the source's own directory at
/// it (files already in other bases stay there); a deep clone, which copied every file
/// to its own directory, has no bases.
pub fn point_at_clone_source(
    m: &mut crate::proto::table::Manifest,
    shallow: bool,
    ref_name: &Option<String>,
    ref_path: &str,
) {
    let new_id = match shallow {
        true => {
            let id = (0..)
                .find(|id| m.base_paths.iter().all(|b| b.id != *id))
                .unwrap_or(0);
            m.base_paths.push(BasePath {
                id,
                name: ref_name.clone(),
                is_dataset_root: true,
                path: ref_path.to_string(),
            });
            Some(id)
        }
        false => {
            m.base_paths.clear();
            None
        }
    };
    for f in m.fragments.iter_mut() {
        for d in f.files.iter_mut() {
            if !shallow || d.base_id.is_none() {
                d.base_id = new_id;
            }
        }
        if let Some(d) = f.deletion_file.as_mut() {
            if !shallow || d.base_id.is_none() {
                d.base_id = new_id;
            }
        }
    }
}

/// The base id a clone's indices (all kept with the source) get: the source's base in a
/// shallow clone's manifest `m`, none in a deep clone.
pub fn clone_base_id(
    m: &crate::proto::table::Manifest,
    op: &crate::table::transaction::Operation,
) -> Option<u32> {
    match op {
        crate::table::transaction::Operation::Clone { shallow: true, .. } => {
            m.base_paths.last().map(|b| b.id)
        }
        _ => None,
    }
}

/// Where a writer puts new data files: the table's own `data/` directory, or a base.
#[derive(Clone, Debug)]
pub struct WriteTarget {
    /// The `base_id` the files get (None: the table's own directory).
    pub base_id: Option<u32>,
    pub storage: Storage,
    /// The directory below the store's root: `data` for the table or a dataset-root
    /// base, nothing for a plain data directory.
    dir: &'static str,
}

impl WriteTarget {
    /// The table's own `data/` directory.
    pub fn primary(storage: &Storage) -> Self {
        WriteTarget {
            base_id: None,
            storage: storage.clone(),
            dir: "data",
        }
    }

    /// The path a data file named `name` gets here.
    pub fn path(&self, name: &str) -> Path {
        match self.dir {
            "" => self.storage.path(name),
            dir => self.storage.path(&format!("{dir}/{name}")),
        }
    }
}

/// The targets named by `refs` (each a base's name or path, matched exactly, or the
/// table's own URI), in order: new data files go to them in turn. No refs: the table's
/// own directory.
pub fn resolve_targets(
    primary: &Storage,
    bases: &[BasePath],
    refs: &[String],
    options: &StorageOptions,
) -> Result<Vec<WriteTarget>> {
    if refs.is_empty() {
        return Ok(vec![WriteTarget::primary(primary)]);
    }
    refs.iter()
        .map(|r| {
            if let Some(b) = bases
                .iter()
                .find(|b| b.name.as_deref() == Some(r) || &b.path == r)
            {
                return Ok(WriteTarget {
                    base_id: Some(b.id),
                    storage: Storage::open(&b.path, options)?,
                    dir: if b.is_dataset_root { "data" } else { "" },
                });
            }
            if r == primary.uri() {
                return Ok(WriteTarget::primary(primary));
            }
            Err(Error::invalid(format!(
                "{}: Base reference '{r}' not found in available bases",
                primary.uri()
            )))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(id: u32, name: Option<&str>, path: &str) -> BasePath {
        BasePath {
            id,
            name: name.map(str::to_string),
            path: path.into(),
            is_dataset_root: false,
        }
    }

    #[test]
    fn ids_as_pylance_numbers_them() {
        let new = [
            base(5, Some("a"), "/a"),
            base(0, Some("b"), "/b"),
            base(0, None, "/c"),
        ];
        let ids: Vec<u32> = assign_initial(&[], &new)
            .unwrap()
            .iter()
            .map(|b| b.id)
            .collect();
        assert_eq!(ids, vec![5, 1, 2]);
        assert!(assign_initial(&[], &[base(0, None, "/a"), base(1, None, "/b")]).is_err());
        let existing = [base(1, Some("a"), "/a"), base(3, Some("c"), "/c")];
        let all = register(&existing, &[base(0, Some("b"), "/b")], "t").unwrap();
        assert_eq!(all[2].id, 2);
        let err = register(&existing, &[base(0, Some("a"), "/z")], "t").unwrap_err();
        assert!(err.to_string().contains("already exists"), "{err}");
        assert!(register(&existing, &[base(0, None, "/x"), base(0, None, "/y")], "t").is_err());
    }

    #[test]
    fn clashes_by_id_name_or_path() {
        let a = [base(0, Some("x"), "/x")];
        assert!(clash(&a, &[base(0, Some("x"), "/other")]));
        assert!(clash(&a, &[base(0, None, "/x")]));
        assert!(!clash(&a, &[base(0, Some("y"), "/y")]));
        assert!(clash(&[base(4, None, "/p")], &[base(4, None, "/q")]));
    }

    #[test]
    fn targets_by_name_or_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_str().unwrap();
        let primary = Storage::open(root, &StorageOptions::new()).unwrap();
        let mut b = base(2, Some("b"), &format!("{root}/b"));
        b.is_dataset_root = true;
        let bases = [b.clone(), base(3, None, &format!("{root}/c"))];
        let refs = ["b".to_string(), format!("{root}/c"), root.to_string()];
        let t = resolve_targets(&primary, &bases, &refs, &StorageOptions::new()).unwrap();
        let ids: Vec<Option<u32>> = t.iter().map(|t| t.base_id).collect();
        assert_eq!(ids, vec![Some(2), Some(3), None]);
        assert!(t[0].path("f.lance").as_ref().ends_with("b/data/f.lance"));
        assert!(t[1].path("f.lance").as_ref().ends_with("c/f.lance"));
        let err = resolve_targets(&primary, &bases, &["zz".into()], &StorageOptions::new());
        assert!(err.unwrap_err().to_string().contains("not found"));
    }
}
