//! Storage: turns a dataset URI into an object store plus a root path, and reads bytes.
//!
//! Everything above this layer addresses files by a path relative to a root; nothing above
//! it knows whether the bytes come from a local disk, memory or a cloud bucket.
mod batched;
pub(crate) mod cloud;
pub mod counters;
mod local;
mod uri;

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};

use crate::error::{Error, Result};
pub use batched::ReadBatcher;
pub use local::file_names as local_file_names;
pub use uri::StorageOptions;

/// What `Storage::create` found.
#[derive(Debug)]
pub enum Created {
    /// The object holds the bytes given: this call made it (or one of its attempts did).
    Ours,
    /// The object was there with other bytes, given here.
    Exists(Bytes),
}

/// Whether the store refused a write outright, so that it certainly did not happen
/// (permissions, credentials, a missing bucket, a bad path), rather than failing in a
/// way that leaves its outcome open (a server error, a lost connection, a timeout).
fn refused(e: &object_store::Error) -> bool {
    use object_store::Error as E;
    matches!(
        e,
        E::PermissionDenied { .. }
            | E::Unauthenticated { .. }
            | E::NotFound { .. }
            | E::NotImplemented { .. }
            | E::NotSupported { .. }
            | E::InvalidPath { .. }
            | E::UnknownConfigurationKey { .. }
    )
}

/// A file a listing found (see `Storage::list_files`).
#[derive(Clone, Debug)]
pub struct Listed {
    pub location: Path,
    /// Size and modification time, when the listing gave them.
    pub meta: Option<ObjectMeta>,
}

/// The directory and file name of a file's URI or path.
pub fn split_uri(uri: &str) -> Result<(&str, &str)> {
    let trimmed = uri.trim_end_matches('/');
    match trimmed.rsplit_once('/') {
        Some((dir, name)) if !name.is_empty() => Ok((if dir.is_empty() { "/" } else { dir }, name)),
        None if !trimmed.is_empty() => Ok((".", trimmed)),
        _ => Err(Error::invalid(format!("'{uri}' names no file"))),
    }
}

/// Local reads up to this many bytes run on the calling thread.
const INLINE_READ_BYTES: u64 = 256 * 1024;

/// Bytes of a large object uploaded at once.
const WRITE_PART: usize = 8 << 20;

/// An object written as a stream (`Storage::writer`): uploaded in parts, published when
/// shut down; its requests are counted then.
pub struct ObjectWriter {
    inner: object_store::buffered::BufWriter,
    stats: Arc<counters::IoStats>,
    bytes: u64,
}

impl ObjectWriter {
    pub async fn put(&mut self, data: Bytes) -> object_store::Result<()> {
        self.bytes += data.len() as u64;
        self.inner.put(data).await
    }

    pub async fn write_all(&mut self, data: &[u8]) -> std::io::Result<()> {
        use tokio::io::AsyncWriteExt;
        self.bytes += data.len() as u64;
        self.inner.write_all(data).await
    }

    /// Publish the object.
    pub async fn shutdown(&mut self) -> std::io::Result<()> {
        use tokio::io::AsyncWriteExt;
        self.inner.shutdown().await?;
        let parts = self.bytes.div_ceil(WRITE_PART as u64).max(1);
        self.stats.wrote(parts, self.bytes);
        Ok(())
    }

    /// Give the object up (nothing is published).
    pub async fn abort(&mut self) -> object_store::Result<()> {
        self.inner.abort().await
    }
}

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
    /// The requests made through this store and those derived from it.
    stats: Arc<counters::IoStats>,
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
            stats: Arc::default(),
        })
    }

    /// The requests made through this store (and those derived from it).
    pub fn io_stats(&self) -> &Arc<counters::IoStats> {
        &self.stats
    }

    /// This store, counting its requests in `stats` (a base path of a table counts with
    /// the table).
    pub fn counting_in(mut self, stats: Arc<counters::IoStats>) -> Self {
        self.stats = stats;
        self
    }

    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Independent reads (files opened, fragments read) worth having in flight at once: a
    /// local disk is kept busy by a few; an object store answers many in parallel, each
    /// after a round trip.
    pub fn io_parallelism(&self) -> usize {
        if self.is_local() {
            8
        } else {
            64
        }
    }

    /// A directory on this machine (read by system calls, not requests).
    pub fn is_local(&self) -> bool {
        self.local.is_some()
    }

    /// The same store rooted at `relative` (slash-separated) below this root: a branch's
    /// directory shares its table's connection.
    pub fn below(&self, relative: &str) -> Storage {
        let mut uri = self.uri.trim_end_matches('/').to_string();
        for part in relative.split('/').filter(|s| !s.is_empty()) {
            uri.push('/');
            uri.push_str(part);
        }
        Storage {
            root: self.path(relative),
            uri,
            ..self.clone()
        }
    }

    /// The same store rooted where `relative` (slash-separated) ends this root: the
    /// inverse of `below`; None when the root does not end so.
    pub fn above(&self, relative: &str) -> Option<Storage> {
        let parts: Vec<&str> = relative.split('/').filter(|s| !s.is_empty()).collect();
        let mut root: Vec<_> = self.root.parts().collect();
        let mut uri = self.uri.trim_end_matches('/').to_string();
        for part in parts.iter().rev() {
            if root.pop()?.as_ref() != *part {
                return None;
            }
            uri = uri.strip_suffix(part)?.strip_suffix('/')?.to_string();
        }
        Some(Storage {
            root: Path::from_iter(root),
            uri,
            ..self.clone()
        })
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
        if let Some(file) = self.local_file(path) {
            // A small local file (a deletion file, a manifest) is read on this thread.
            match std::fs::metadata(&file) {
                Ok(meta) if meta.is_file() && meta.len() <= INLINE_READ_BYTES => {
                    return match std::fs::read(&file) {
                        Ok(data) => {
                            self.stats.read(data.len() as u64);
                            Ok(Bytes::from(data))
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                            Err(Error::not_found(self.display(path), "no such file"))
                        }
                        Err(e) => Err(Error::io(self.display(path), e)),
                    };
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(Error::not_found(self.display(path), "no such file"))
                }
                _ => {}
            }
        }
        let res = self
            .store
            .get(path)
            .await
            .map_err(|e| self.map_err(path, e))?;
        let bytes = res.bytes().await.map_err(|e| self.map_err(path, e))?;
        self.stats.read(bytes.len() as u64);
        Ok(bytes)
    }

    /// Whether reads of one file asked for at about the same time are worth joining
    /// (see `ReadBatcher`): on an object store always (a request is a round trip); on a
    /// local disk when they are small, as those run on the calling thread one after another
    /// anyway, and joined they open the file once and reach the disk together.
    pub fn joins_reads(&self, ranges: &[Range<u64>]) -> bool {
        self.local.is_none()
            || ranges
                .iter()
                .map(|r| r.end.saturating_sub(r.start))
                .sum::<u64>()
                <= INLINE_READ_BYTES
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
        let total: u64 = ranges.iter().map(|r| r.end.saturating_sub(r.start)).sum();
        // A small read (from the page cache, mostly) costs less than handing it to the
        // blocking pool and waking up again; only larger ones leave the async thread.
        let read = if total <= INLINE_READ_BYTES {
            local::read_ranges(&file, ranges)
        } else {
            let ranges = ranges.to_vec();
            tokio::task::spawn_blocking(move || local::read_ranges(&file, &ranges))
                .await
                .map_err(|e| Error::io(self.display(path), e))?
        };
        if let Ok(parts) = &read {
            self.stats.read(parts.iter().map(|b| b.len() as u64).sum());
        }
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
        self.stats.read(bytes.len() as u64);
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
        self.stats
            .read(fetched.as_slice().iter().map(|b| b.len() as u64).sum());
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
        let bytes = data.len() as u64;
        self.store
            .put(path, data.into())
            .await
            .map_err(|e| self.map_err(path, e))?;
        self.stats.wrote(1, bytes);
        Ok(())
    }

    /// Create the object at `path` holding `data` only if none is there yet: the atomic
    /// step of a commit. On an object store the answer can be lost after the object was
    /// made (a `500` for a write that happened; a retry then meets the object its first
    /// attempt made and gets `412`), so any answer but "created" is checked by reading the
    /// object back: holding `data`, it is ours; holding other bytes, it is returned for the
    /// caller to judge (another writer's, or an earlier attempt of the caller's with other
    /// bytes). An error that leaves the object absent, or that the read cannot settle, is
    /// `Error::OutcomeUnknown`; an answer that refuses the write (permissions, no bucket)
    /// is an ordinary error.
    pub async fn create(&self, path: &Path, data: Bytes) -> Result<Created> {
        let opts = object_store::PutOptions {
            mode: object_store::PutMode::Create,
            ..Default::default()
        };
        let bytes = data.len() as u64;
        let put = self.store.put_opts(path, data.clone().into(), opts).await;
        self.stats.wrote(1, bytes);
        let failure = match put {
            Ok(_) => return Ok(Created::Ours),
            Err(object_store::Error::AlreadyExists { .. })
            | Err(object_store::Error::Precondition { .. }) => None,
            Err(e) if refused(&e) => return Err(self.map_err(path, e)),
            Err(e) => Some(self.map_err(path, e)),
        };
        let unknown = |why: String| Error::OutcomeUnknown {
            path: self.display(path),
            message: why,
        };
        match self.get(path).await {
            Ok(found) if found == data => Ok(Created::Ours),
            Ok(found) => Ok(Created::Exists(found)),
            Err(Error::NotFound { .. }) => Err(unknown(match failure {
                Some(e) => format!("the write failed ({e}) and the object is not there"),
                None => "the store said the object exists, yet it is not there".into(),
            })),
            Err(read) => Err(unknown(format!(
                "{}; reading it back to see whether it was made failed too: {read}",
                failure.map_or("the store said the object exists".into(), |e| e.to_string())
            ))),
        }
    }

    /// A streaming writer for a large object (uploaded in parts, published when shut down).
    pub fn writer(&self, path: &Path) -> ObjectWriter {
        let inner = object_store::buffered::BufWriter::with_capacity(
            self.store.clone(),
            path.clone(),
            WRITE_PART,
        )
        .with_max_concurrency(2);
        ObjectWriter {
            inner,
            stats: self.stats.clone(),
            bytes: 0,
        }
    }

    pub async fn delete(&self, path: &Path) -> Result<()> {
        match self.store.delete(path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.map_err(path, e)),
        }
    }

    /// Delete every object below `dir` (relative to the root); local directories left
    /// empty are removed too. Nothing there is fine.
    pub async fn delete_tree(&self, dir: &str) -> Result<()> {
        for meta in self.list_all(dir).await? {
            self.delete(&meta.location).await?;
        }
        if let Some(local) = self.local_file(&self.path(dir)) {
            remove_empty_dirs(&local);
        }
        Ok(())
    }

    /// The path of `path` relative to the root.
    pub fn relative<'a>(&self, path: &'a Path) -> &'a str {
        path.as_ref()
            .strip_prefix(self.root.as_ref())
            .unwrap_or(path.as_ref())
            .trim_start_matches('/')
    }

    /// Copy the object at `from` to `to` in `dest`, in parts (never whole in memory).
    pub async fn copy_object(&self, from: &Path, dest: &Storage, to: &Path) -> Result<()> {
        const PART: u64 = 8 << 20;
        let size = self.head(from).await?.size;
        let mut writer = dest.writer(to);
        let mut at = 0;
        while at < size {
            let end = (at + PART).min(size);
            let part = self.get_range(from, at..end).await?;
            writer
                .write_all(&part)
                .await
                .map_err(|e| Error::io(dest.display(to), e))?;
            at = end;
        }
        writer
            .shutdown()
            .await
            .map_err(|e| Error::io(dest.display(to), e))
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

    /// The files in `dir` (below it too when `recursive`), each with its size and
    /// modification time when the listing told them: object stores do; a local directory
    /// is read by names only (no `stat` per file), see `file_meta`.
    pub async fn list_files(&self, dir: &str, recursive: bool) -> Result<Vec<Listed>> {
        let Some(root) = self.local_file(&self.path(dir)) else {
            let found = match recursive {
                true => self.list_all(dir).await?,
                false => self.list_dir(dir).await?,
            };
            return Ok(found
                .into_iter()
                .map(|meta| Listed {
                    location: meta.location.clone(),
                    meta: Some(meta),
                })
                .collect());
        };
        let names = tokio::task::spawn_blocking(move || local::file_names(&root, recursive))
            .await
            .map_err(|e| Error::io(self.uri(), e))?
            .map_err(|e| Error::io(self.display(&self.path(dir)), e))?;
        Ok(names
            .into_iter()
            .map(|rel| Listed {
                location: self.path(&format!("{dir}/{rel}")),
                meta: None,
            })
            .collect())
    }

    /// The size and modification time (ns since the epoch) of a file.
    pub async fn file_meta(&self, path: &Path) -> Result<(u64, i64)> {
        if let Some(file) = self.local_file(path) {
            let meta = std::fs::metadata(&file).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => {
                    Error::not_found(self.display(path), "no such file")
                }
                _ => Error::io(self.display(path), e),
            })?;
            let modified = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as i64);
            return Ok((meta.len(), modified));
        }
        let meta = self.head(path).await?;
        Ok((
            meta.size,
            meta.last_modified.timestamp_nanos_opt().unwrap_or(0),
        ))
    }

    /// The directories and objects directly below `dir`, as paths relative to the root.
    pub async fn list_level(&self, dir: &str) -> Result<(Vec<String>, Vec<String>)> {
        let prefix = self.path(dir);
        match self.store.list_with_delimiter(Some(&prefix)).await {
            Ok(l) => Ok((
                l.common_prefixes
                    .iter()
                    .map(|p| self.relative(p).to_string())
                    .collect(),
                l.objects
                    .iter()
                    .map(|o| self.relative(&o.location).to_string())
                    .collect(),
            )),
            Err(object_store::Error::NotFound { .. }) => Ok((vec![], vec![])),
            Err(e) => Err(self.map_err(&prefix, e)),
        }
    }

    /// Delete an object that must exist (a user's request: a missing one is an error).
    pub async fn delete_existing(&self, path: &Path) -> Result<()> {
        if !self.exists(path).await? {
            return Err(Error::not_found(self.display(path), "no such file"));
        }
        self.delete(path).await
    }

    /// Copy the local file `from` to `to`, in parts (never whole in memory).
    pub async fn upload(&self, from: &std::path::Path, to: &Path) -> Result<()> {
        use tokio::io::AsyncReadExt;
        let shown = from.display().to_string();
        let mut file = tokio::fs::File::open(from)
            .await
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Error::not_found(&shown, "no such file"),
                _ => Error::io(&shown, e),
            })?;
        let mut w = self.writer(to);
        let mut buf = vec![0u8; 8 << 20];
        let copied: Result<()> = async {
            loop {
                let n = file
                    .read(&mut buf)
                    .await
                    .map_err(|e| Error::io(&shown, e))?;
                if n == 0 {
                    break;
                }
                w.write_all(&buf[..n])
                    .await
                    .map_err(|e| Error::io(self.display(to), e))?;
            }
            w.shutdown()
                .await
                .map_err(|e| Error::io(self.display(to), e))
        }
        .await;
        if copied.is_err() {
            let _ = w.abort().await;
        }
        copied
    }

    /// Copy the object `from` to the local file `to`, part by part as it arrives.
    pub async fn download(&self, from: &Path, to: &std::path::Path) -> Result<()> {
        use tokio::io::AsyncWriteExt;
        let shown = to.display().to_string();
        let got = self
            .store
            .get(from)
            .await
            .map_err(|e| self.map_err(from, e))?;
        let mut stream = got.into_stream();
        let mut file = tokio::fs::File::create(to)
            .await
            .map_err(|e| Error::io(&shown, e))?;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| self.map_err(from, e))?;
            file.write_all(&chunk)
                .await
                .map_err(|e| Error::io(&shown, e))?;
        }
        file.flush().await.map_err(|e| Error::io(&shown, e))
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

/// Remove `dir` and the directories below it that hold no file (best effort: one a
/// concurrent writer just put a file in stays).
fn remove_empty_dirs(dir: &std::path::Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_empty_dirs(&e.path());
            }
        }
    }
    let _ = std::fs::remove_dir(dir);
}

#[cfg(test)]
mod split_tests {
    use super::*;

    #[test]
    fn split_uris() {
        assert_eq!(split_uri("/tmp/a/f.lance").unwrap(), ("/tmp/a", "f.lance"));
        assert_eq!(
            split_uri("s3://b/k/f.lance").unwrap(),
            ("s3://b/k", "f.lance")
        );
        assert_eq!(split_uri("f.lance").unwrap(), (".", "f.lance"));
        assert_eq!(split_uri("/f.lance").unwrap(), ("/", "f.lance"));
        assert!(split_uri("").is_err());
    }

    /// A create that meets the bytes it was given (an earlier attempt's, whose answer was
    /// lost) made the object; other bytes are someone else's, handed back.
    #[tokio::test]
    async fn a_create_knows_its_own_object() {
        let storage = Storage::open("memory://create", &StorageOptions::new()).unwrap();
        let path = storage.path("_versions/1.manifest");
        let ours = Bytes::from_static(b"ours");
        assert!(matches!(
            storage.create(&path, ours.clone()).await.unwrap(),
            Created::Ours
        ));
        assert!(matches!(
            storage.create(&path, ours.clone()).await.unwrap(),
            Created::Ours
        ));
        match storage.create(&path, Bytes::from_static(b"theirs")).await {
            Ok(Created::Exists(found)) => assert_eq!(found, ours),
            other => panic!("expected the existing object, got {other:?}"),
        }
    }
}
