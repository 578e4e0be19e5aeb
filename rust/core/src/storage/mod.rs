//! Storage: turns a dataset URI into an object store plus a root path, and reads bytes.
//!
//! Everything above this layer addresses files by a path relative to a root; nothing above
//! it knows whether the bytes come from a local disk, memory or a cloud bucket.
mod cloud;
mod local;
mod uri;

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};

use crate::error::{Error, Result};
pub use uri::StorageOptions;

/// An object store rooted at a directory (a dataset root or one of its base paths).
#[derive(Clone, Debug)]
pub struct Storage {
    store: Arc<dyn ObjectStore>,
    root: Path,
    /// The URI the user gave, used to name files in error messages.
    uri: String,
    /// For a local directory: the store, to map paths to files read directly.
    local: Option<Arc<object_store::local::LocalFileSystem>>,
    /// Where a cloud store's requests go (named in network errors).
    endpoint: Option<Arc<str>>,
}

impl Storage {
    /// Open the store that holds `uri` (a local path, `file://`, `memory://`, `s3://`,
    /// `gs://`, `az://`/`abfs://`), passing `options` to its builder.
    pub fn open(uri: &str, options: &StorageOptions) -> Result<Self> {
        let r = uri::resolve(uri, options)?;
        Ok(Storage {
            store: r.store,
            root: r.root,
            uri: r.shown,
            local: r.local,
            endpoint: r.endpoint.map(Arc::from),
        })
    }

    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The object path of `relative` (slash-separated) below the root.
    pub fn path(&self, relative: &str) -> Path {
        let mut p = self.root.clone();
        for part in relative.split('/').filter(|s| !s.is_empty()) {
            p = p.clone().join(part);
        }
        p
    }

    /// The user-facing name of an object, for error messages.
    pub fn display(&self, path: &Path) -> String {
        let rel = path
            .as_ref()
            .strip_prefix(self.root.as_ref())
            .unwrap_or(path.as_ref());
        format!(
            "{}/{}",
            self.uri.trim_end_matches('/'),
            rel.trim_start_matches('/')
        )
    }

    fn map_err(&self, path: &Path, e: object_store::Error) -> Error {
        match e {
            object_store::Error::NotFound { .. } => {
                Error::not_found(self.display(path), "no such file")
            }
            other => match cloud::network_failure(&other, self.endpoint.as_deref()) {
                Some(what) => Error::io(self.display(path), what),
                None => Error::io(self.display(path), other),
            },
        }
    }

    pub async fn get(&self, path: &Path) -> Result<Bytes> {
        let res = self
            .store
            .get(path)
            .await
            .map_err(|e| self.map_err(path, e))?;
        res.bytes().await.map_err(|e| self.map_err(path, e))
    }

    /// Read ranges of a local file directly (see `local`).
    async fn read_local(
        &self,
        fs: &object_store::local::LocalFileSystem,
        path: &Path,
        ranges: &[Range<u64>],
    ) -> Result<Vec<Bytes>> {
        let file = fs
            .path_to_filesystem(path)
            .map_err(|e| self.map_err(path, e))?;
        let ranges = ranges.to_vec();
        let read = tokio::task::spawn_blocking(move || local::read_ranges(&file, &ranges))
            .await
            .map_err(|e| Error::io(self.display(path), e))?;
        read.map_err(|e| match e {
            local::ReadError::NotFound => Error::not_found(self.display(path), "no such file"),
            local::ReadError::Short { wanted, len } => Error::corrupt(
                self.display(path),
                format!(
                    "truncated: wanted bytes {}..{} but the file has {len}",
                    wanted.start, wanted.end
                ),
            ),
            local::ReadError::Io(e) => Error::io(self.display(path), e),
        })
    }

    /// Read `range` of an object; a range past the end of the object is a truncated file.
    pub async fn get_range(&self, path: &Path, range: Range<u64>) -> Result<Bytes> {
        if let Some(fs) = &self.local {
            let mut out = self
                .read_local(fs, path, std::slice::from_ref(&range))
                .await?;
            return Ok(out.pop().unwrap_or_default());
        }
        let want = range.end - range.start;
        if want == 0 {
            // Object stores refuse an empty range (S3's header cannot say it).
            return Ok(Bytes::new());
        }
        let bytes = self
            .store
            .get_range(path, range.clone())
            .await
            .map_err(|e| self.range_err(path, &range, e))?;
        if bytes.len() as u64 != want {
            return Err(Error::corrupt(
                self.display(path),
                format!(
                    "truncated: wanted bytes {}..{} but got {}",
                    range.start,
                    range.end,
                    bytes.len()
                ),
            ));
        }
        Ok(bytes)
    }

    /// Read several ranges of one object; the store coalesces nearby ones.
    pub async fn get_ranges(&self, path: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        if ranges.is_empty() {
            return Ok(vec![]);
        }
        if let Some(fs) = &self.local {
            return self.read_local(fs, path, ranges).await;
        }
        // Object stores refuse empty ranges (an all-null page has empty buffers): ask only
        // for the others and give the empty ones back as empty bytes.
        let wanted: Vec<Range<u64>> = ranges.iter().filter(|r| r.end > r.start).cloned().collect();
        let mut fetched = if wanted.is_empty() {
            Vec::new()
        } else {
            self.store.get_ranges(path, &wanted).await.map_err(|e| {
                let span = wanted[0].start..wanted.iter().map(|r| r.end).max().unwrap_or(0);
                self.range_err(path, &span, e)
            })?
        }
        .into_iter();
        let out: Vec<Bytes> = ranges
            .iter()
            .map(|r| match r.end > r.start {
                true => fetched.next().unwrap_or_default(),
                false => Bytes::new(),
            })
            .collect();
        for (b, r) in out.iter().zip(ranges) {
            if b.len() as u64 != r.end - r.start {
                return Err(Error::corrupt(
                    self.display(path),
                    format!(
                        "truncated: wanted bytes {}..{} but got {}",
                        r.start,
                        r.end,
                        b.len()
                    ),
                ));
            }
        }
        Ok(out)
    }

    fn range_err(&self, path: &Path, range: &Range<u64>, e: object_store::Error) -> Error {
        match e {
            object_store::Error::NotFound { .. } => {
                Error::not_found(self.display(path), "no such file")
            }
            // Stores report a range past the end in their own words; for a reader that
            // means the file is shorter than its metadata says.
            object_store::Error::Generic { .. } | object_store::Error::NotSupported { .. }
                if e.to_string().contains("range") || e.to_string().contains("Range") =>
            {
                Error::corrupt(
                    self.display(path),
                    format!(
                        "truncated: cannot read bytes {}..{}: {e}",
                        range.start, range.end
                    ),
                )
            }
            other => self.map_err(path, other),
        }
    }

    pub async fn head(&self, path: &Path) -> Result<ObjectMeta> {
        self.store
            .head(path)
            .await
            .map_err(|e| self.map_err(path, e))
    }

    pub async fn exists(&self, path: &Path) -> Result<bool> {
        match self.store.head(path).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(self.map_err(path, e)),
        }
    }

    /// Write an object (whole), replacing any existing one.
    pub async fn put(&self, path: &Path, data: Bytes) -> Result<()> {
        self.store
            .put(path, data.into())
            .await
            .map_err(|e| self.map_err(path, e))?;
        Ok(())
    }

    /// Write an object only if none exists there yet: the atomic step of a commit.
    /// Returns false when another writer got there first.
    pub async fn put_if_absent(&self, path: &Path, data: Bytes) -> Result<bool> {
        let opts = object_store::PutOptions {
            mode: object_store::PutMode::Create,
            ..Default::default()
        };
        match self.store.put_opts(path, data.into(), opts).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. })
            | Err(object_store::Error::Precondition { .. }) => Ok(false),
            Err(e) => Err(self.map_err(path, e)),
        }
    }

    /// A streaming writer for a large object (uploaded in parts, published when shut down).
    pub fn writer(&self, path: &Path) -> object_store::buffered::BufWriter {
        object_store::buffered::BufWriter::with_capacity(self.store.clone(), path.clone(), 8 << 20)
            .with_max_concurrency(2)
    }

    pub async fn delete(&self, path: &Path) -> Result<()> {
        match self.store.delete(path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.map_err(path, e)),
        }
    }

    /// The path of `path` relative to the root.
    pub fn relative<'a>(&self, path: &'a Path) -> &'a str {
        path.as_ref()
            .strip_prefix(self.root.as_ref())
            .unwrap_or(path.as_ref())
            .trim_start_matches('/')
    }

    /// Copy every object below the root of `self` to the same place below `dest`.
    pub async fn copy_tree_to(&self, dest: &Storage) -> Result<usize> {
        let objects = self.list_all("").await?;
        for o in &objects {
            let data = self.get(&o.location).await?;
            dest.put(&dest.path(self.relative(&o.location)), data)
                .await?;
        }
        Ok(objects.len())
    }

    /// Objects directly below `dir` (relative to the root).
    pub async fn list_dir(&self, dir: &str) -> Result<Vec<ObjectMeta>> {
        let prefix = self.path(dir);
        let listing = self.store.list_with_delimiter(Some(&prefix)).await;
        match listing {
            Ok(l) => Ok(l.objects),
            Err(object_store::Error::NotFound { .. }) => Ok(vec![]),
            Err(e) => Err(self.map_err(&prefix, e)),
        }
    }

    /// The objects below `dir`, recursively, as the store lists them page by page (object
    /// stores in lexical order: a caller that stops early saves the later pages).
    pub fn list_stream(
        &self,
        dir: &str,
    ) -> impl futures::Stream<Item = Result<ObjectMeta>> + Send + 'static {
        let prefix = self.path(dir);
        let this = self.clone();
        self.store.list(Some(&prefix)).filter_map(move |r| {
            let out = match r {
                Ok(meta) => Some(Ok(meta)),
                Err(object_store::Error::NotFound { .. }) => None,
                Err(e) => Some(Err(this.map_err(&prefix, e))),
            };
            futures::future::ready(out)
        })
    }

    /// The file behind `path`, when the store is a local directory.
    pub fn local_file(&self, path: &Path) -> Option<std::path::PathBuf> {
        self.local.as_ref()?.path_to_filesystem(path).ok()
    }

    /// Every object below `dir`, recursively.
    pub async fn list_all(&self, dir: &str) -> Result<Vec<ObjectMeta>> {
        let prefix = self.path(dir);
        let res: std::result::Result<Vec<ObjectMeta>, _> =
            self.store.list(Some(&prefix)).try_collect().await;
        match res {
            Ok(v) => Ok(v),
            Err(object_store::Error::NotFound { .. }) => Ok(vec![]),
            Err(e) => Err(self.map_err(&prefix, e)),
        }
    }
}
