//! Files a writer wrote for a version that is not committed yet. The one place where such
//! files are removed when the commit does not happen: a writer registers each file as it
//! finishes it, and the guard removes them all on an error (`guard`, `settle`), or when it
//! is dropped unsettled (a panic, a cancelled future). A commit that succeeds keeps them.
use std::future::Future;
use std::sync::Mutex;

use object_store::path::Path;

use crate::error::{Error, Result};
use crate::proto::table::{DataFragment, DeletionFile};
use crate::storage::Storage;
use crate::table::deletion::deletion_file_name;

/// The files one attempt of a writer has written so far (see the module comment).
#[derive(Debug)]
pub struct Staged {
    storage: Storage,
    /// Each file with its store (the table's, or a base's).
    paths: Mutex<Vec<(Storage, Path)>>,
}

impl Staged {
    /// Nothing staged yet, for the table in `storage`.
    pub fn new(storage: &Storage) -> Self {
        Staged {
            storage: storage.clone(),
            paths: Mutex::new(Vec::new()),
        }
    }

    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// Stage the object at `path` (below the table's root).
    pub fn add(&self, path: Path) {
        self.add_in(&self.storage.clone(), path);
    }

    /// Stage the object at `path` of `storage` (a data file written to a base).
    pub fn add_in(&self, storage: &Storage, path: Path) {
        self.lock().push((storage.clone(), path));
    }

    /// Stage the data file `name` (as a `DataFile` names it, relative to `data/`).
    pub fn add_data_file(&self, name: &str) {
        self.add(self.storage.path(&format!("data/{name}")));
    }

    /// Stage every data file of `fragments`.
    pub fn add_fragments(&self, fragments: &[DataFragment]) {
        for f in fragments.iter().flat_map(|f| &f.files) {
            self.add_data_file(&f.path);
        }
    }

    /// Stage the deletion file `file` of fragment `fragment_id`.
    pub fn add_deletion_file(&self, fragment_id: u64, file: &DeletionFile) {
        let name = deletion_file_name(fragment_id, file);
        self.add(self.storage.path(&format!("_deletions/{name}")));
    }

    /// How many files are staged.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Run `work`, which stages files here; when it fails, remove every staged file before
    /// returning its error.
    pub async fn guard<T>(&self, work: impl Future<Output = Result<T>>) -> Result<T> {
        match work.await {
            Ok(v) => Ok(v),
            Err(e) => Err(self.fail(e).await),
        }
    }

    /// End of the attempt: on success the files are the version's (kept); on an error
    /// they are nobody's (removed), unless the commit's outcome is unknown: a version
    /// may then refer to them, so they stay.
    pub async fn settle<T>(self, result: Result<T>) -> Result<T> {
        match result {
            Ok(v) => {
                self.keep();
                Ok(v)
            }
            Err(e) => Err(self.fail(e).await),
        }
    }

    /// Remove every staged file of an attempt that failed with `e` (but when its commit's
    /// outcome is unknown); a store's failure is said to have changed nothing, so that
    /// the caller knows it may run it again.
    async fn fail(&self, e: Error) -> Error {
        if let Error::OutcomeUnknown { .. } = e {
            self.lock().clear();
            return e;
        }
        self.remove_all().await;
        match e {
            Error::Io { path, message } => Error::Io {
                path,
                message: format!("{message} (nothing was committed: safe to retry)"),
            },
            other => other,
        }
    }

    /// The files now belong to a committed version, or to a caller that commits them
    /// later (fragments written for a distributed job): never remove them.
    pub fn keep(self) {
        self.lock().clear();
    }

    /// Remove every staged file now. Failures to remove are ignored: the file is then an
    /// orphan that `cleanup_old_versions` removes, never a file a version refers to.
    pub async fn remove_all(&self) {
        let paths = std::mem::take(&mut *self.lock());
        let removals = paths.iter().map(|(storage, p)| remove(storage, p));
        futures::future::join_all(removals).await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(Storage, Path)>> {
        // A panic while the lock was held leaves a consistent list: keep using it.
        self.paths.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Remove a staged object; a data file's blob sidecars (the directory `<stem>/` beside
/// it) go with it.
async fn remove(storage: &Storage, path: &Path) {
    let _ = storage.delete(path).await;
    let relative = storage.relative(path);
    if let Some(stem) = relative
        .strip_suffix(".lance")
        .filter(|_| !relative.starts_with('_'))
    {
        let _ = storage.delete_tree(stem).await;
    }
}

impl Drop for Staged {
    /// Unsettled at drop (the writer panicked or its future was dropped): remove the files
    /// on the runtime in the background; without a runtime they stay as orphans.
    fn drop(&mut self) {
        let paths = std::mem::take(&mut *self.lock());
        if paths.is_empty() {
            return;
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                for (storage, p) in paths {
                    remove(&storage, &p).await;
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use bytes::Bytes;

    /// A table of its own per test: memory stores live for the process, and the tests run
    /// at once.
    fn table(name: &str) -> Storage {
        Storage::open(&format!("memory://staged/{name}"), &Default::default()).unwrap()
    }

    async fn put(s: &Storage, staged: &Staged, name: &str) -> Path {
        let p = s.path(&format!("data/{name}"));
        s.put(&p, Bytes::from_static(b"x")).await.unwrap();
        staged.add_data_file(name);
        p
    }

    #[tokio::test]
    async fn an_error_removes_what_was_staged_and_success_keeps_it() {
        let s = table("an_error_removes_what_was_staged_and_success_keeps_it");
        let staged = Staged::new(&s);
        let a = put(&s, &staged, "a.lance").await;
        let failed: Result<()> = staged
            .guard(async { Err(Error::invalid("writer failed")) })
            .await;
        assert!(failed.is_err());
        assert!(
            !s.exists(&a).await.unwrap(),
            "a failed attempt leaves no file"
        );
        assert!(staged.is_empty());

        let b = put(&s, &staged, "b.lance").await;
        staged.settle(Ok(())).await.unwrap();
        assert!(s.exists(&b).await.unwrap(), "a committed file is kept");
    }

    #[tokio::test]
    async fn settle_with_an_error_removes_everything() {
        let s = table("settle_with_an_error_removes_everything");
        let staged = Staged::new(&s);
        let a = put(&s, &staged, "a.lance").await;
        let file = DeletionFile {
            file_type: 1,
            read_version: 3,
            id: 7,
            num_deleted_rows: 1,
            base_id: None,
        };
        let del = s.path(&format!("_deletions/{}", deletion_file_name(4, &file)));
        s.put(&del, Bytes::from_static(b"d")).await.unwrap();
        staged.add_deletion_file(4, &file);
        let r: Result<u64> = staged.settle(Err(Error::Conflict("lost".into()))).await;
        assert!(matches!(r, Err(Error::Conflict(_))));
        assert!(!s.exists(&a).await.unwrap());
        assert!(!s.exists(&del).await.unwrap());
    }

    #[tokio::test]
    async fn dropped_unsettled_removes_in_the_background() {
        let s = table("dropped_unsettled_removes_in_the_background");
        let staged = Staged::new(&s);
        let a = put(&s, &staged, "a.lance").await;
        drop(staged);
        for _ in 0..100 {
            if !s.exists(&a).await.unwrap() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("the file of a dropped, unsettled attempt is still there");
    }
}
