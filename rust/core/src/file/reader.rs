//! Opening a data file (one read of its tail, a second only when the metadata is larger)
//! and fetching the buffers of a page.
use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path;
use tokio::sync::OwnedSemaphorePermit;

use super::{legacy, offset_table, FileMetadata, Footer, FOOTER_LEN};
use crate::error::{Error, Result};
use crate::storage::{ReadBatcher, Storage};

/// Bytes read from the end of a local file on open; enough for the metadata of most
/// files.
const TAIL_READ: u64 = 256 * 1024;
/// The same from an object store (as pylance reads it). Reading more of a larger file on
/// open would fetch pages a take or a narrow scan does not want.
const REMOTE_TAIL_READ: u64 = 64 * 1024;
/// A remote file no larger than this is read whole by the open's one request, and the
/// read that opened it takes its pages from memory: one round trip instead of the two or
/// three (tail, page metadata, pages) of a ranged read. At most 192 KiB more than the tail
/// read, which transfer in less time than a round trip takes on any link faster than
/// about 10 MB/s at 20 ms.
const REMOTE_WHOLE_FILE: u64 = 256 * 1024;

/// An open data file: its metadata, and the means to read its pages.
#[derive(Clone, Debug)]
pub struct FileReader {
    storage: Storage,
    path: Path,
    name: String,
    pub metadata: Arc<FileMetadata>,
    /// The whole file, when it is small and remote (see `REMOTE_WHOLE_FILE`), or read
    /// whole for a scan of all its columns (`open_whole`).
    whole: Option<Bytes>,
    /// The share of a scan's memory budget that `whole` takes, while it is held.
    _held: Option<Arc<OwnedSemaphorePermit>>,
    /// Joins reads asked for at once into one (see `Storage::joins_reads`).
    batcher: ReadBatcher,
}

/// The buffers of one page, in the order the page's metadata lists them.
#[derive(Clone, Debug)]
pub struct PageData {
    pub buffers: Vec<Bytes>,
}

impl FileReader {
    /// Open `path`; `size` is the file size when the manifest records it (saves a request).
    pub async fn open(storage: &Storage, path: Path, size: Option<u64>) -> Result<Self> {
        let size = match size {
            Some(s) if s > 0 => s,
            _ => storage.head(&path).await?.size,
        };
        let tail = match storage.local_file(&path) {
            None if size <= REMOTE_WHOLE_FILE => size,
            None => REMOTE_TAIL_READ,
            Some(_) => TAIL_READ,
        };
        Self::open_reading(storage, path, size, tail, None).await
    }

    /// Open remote file `path` of `size` bytes by reading all of it in one request, for a
    /// read that wants every column: no tail read first. `held` is the memory the bytes
    /// take, given back when the last clone of the open file is dropped. A local file is
    /// opened as `open` opens it (its pages are read as wanted, at no round trip's cost).
    pub async fn open_whole(
        storage: &Storage,
        path: Path,
        size: u64,
        held: OwnedSemaphorePermit,
    ) -> Result<Self> {
        if storage.local_file(&path).is_some() {
            return Self::open(storage, path, Some(size)).await;
        }
        Self::open_reading(storage, path, size, size, Some(Arc::new(held))).await
    }

    /// Open `path` (`size` bytes) by first reading its last `tail` bytes.
    async fn open_reading(
        storage: &Storage,
        path: Path,
        size: u64,
        tail: u64,
        held: Option<Arc<OwnedSemaphorePermit>>,
    ) -> Result<Self> {
        let name = storage.display(&path);
        let remote = storage.local_file(&path).is_none();
        let read = Self::read_metadata(storage, &path, size, tail).await;
        let read = read.map(|(m, whole)| (m, whole.filter(|_| remote)));
        let (metadata, whole) = match read {
            Err(Error::Corrupt { message, .. }) if message.starts_with("truncated") => {
                // The manifest's size is stale or the file was cut: say which.
                let actual = storage.head(&path).await?.size;
                let message = if actual != size {
                    format!("file is {actual} bytes but the manifest records {size}")
                } else {
                    message
                };
                return Err(Error::corrupt(&name, message));
            }
            other => other.map_err(|e| e.in_file(&name))?,
        };
        Ok(FileReader {
            storage: storage.clone(),
            path,
            name,
            _held: held.filter(|_| whole.is_some()),
            metadata: Arc::new(metadata),
            whole,
            batcher: ReadBatcher::default(),
        })
    }

    /// Read the tail of the file, and more of it until the schema (global buffer 0) and
    /// the column metadata are in the bytes read; with the whole file when that was read.
    async fn read_metadata(
        storage: &Storage,
        path: &Path,
        size: u64,
        tail_read: u64,
    ) -> Result<(FileMetadata, Option<Bytes>)> {
        if size < legacy::FOOTER_LEN as u64 {
            return Err(crate::error::corrupt(format!(
                "file is {size} bytes, too short for a Lance file"
            )));
        }
        let mut start = size.saturating_sub(tail_read);
        let mut tail = storage.get_range(path, start..size).await?;
        if let Some(version) = legacy::legacy_version(&tail) {
            let m = Self::read_legacy_metadata(storage, path, size, version, start, tail).await?;
            return Ok((m, None));
        }
        if size < FOOTER_LEN as u64 {
            return Err(crate::error::corrupt(format!(
                "file is {size} bytes, too short for a Lance file"
            )));
        }
        let footer = Footer::parse(&tail, size)?;
        footer.check_version()?;
        loop {
            let mut needed = footer
                .column_meta_start
                .min(footer.cmo_table_start)
                .min(footer.gbo_table_start);
            if footer.gbo_table_start >= start {
                let at = (footer.gbo_table_start - start) as usize;
                let gbo = offset_table(
                    &tail,
                    at,
                    footer.num_global_buffers.min(1) as usize,
                    size,
                    "global buffer",
                )?;
                needed = gbo.first().map_or(needed, |g| needed.min(g.start));
            }
            if needed >= start {
                let m = FileMetadata::parse(&tail, start, size)?;
                return Ok((m, (start == 0).then_some(tail)));
            }
            let head = storage.get_range(path, needed..start).await?;
            let mut whole = Vec::with_capacity(head.len() + tail.len());
            whole.extend_from_slice(&head);
            whole.extend_from_slice(&tail);
            tail = Bytes::from(whole);
            start = needed;
        }
    }

    async fn read_legacy_metadata(
        storage: &Storage,
        path: &Path,
        size: u64,
        version: super::FileVersion,
        start: u64,
        tail: Bytes,
    ) -> Result<FileMetadata> {
        if let Some(m) = legacy::parse_metadata(&tail, start, size, version)? {
            return Ok(m);
        }
        // The metadata message starts before the bytes read: read from there.
        let end = tail.len();
        let position = u64::from_le_bytes(tail[end - 16..end - 8].try_into().unwrap());
        let all = storage.get_range(path, position..size).await?;
        legacy::parse_metadata(&all, position, size, version)?
            .ok_or_else(|| crate::error::corrupt("legacy metadata could not be located"))
    }

    /// A legacy file with its columns: field ids `min_id..=max_id` (the ids its
    /// `DataFile` lists), column `id - min_id`, one page per batch.
    pub async fn with_field_ids(&self, min_id: i32, max_id: i32) -> Result<Self> {
        let Some(layout) = self.metadata.legacy.clone() else {
            return Ok(self.clone());
        };
        let file_size = self.metadata.file_size;
        let range = legacy::page_table_range(&layout, min_id, max_id, file_size)
            .map_err(|e| e.in_file(&self.name))?;
        let table = self.storage.get_range(&self.path, range).await?;
        let columns = legacy::columns_from_page_table(&layout, &table, min_id, max_id, file_size)
            .map_err(|e| e.in_file(&self.name))?;
        let mut metadata = (*self.metadata).clone();
        metadata.columns = columns;
        Ok(FileReader {
            metadata: Arc::new(metadata),
            ..self.clone()
        })
    }

    /// This open file, its reads made (and counted) through `storage`: the same object
    /// as another open of the table sees it.
    pub fn reading_through(&self, storage: &Storage) -> FileReader {
        FileReader {
            storage: storage.clone(),
            ..self.clone()
        }
    }

    /// Whether reads go through `storage`'s connection and counters.
    pub fn reads_through(&self, storage: &Storage) -> bool {
        Arc::ptr_eq(self.storage.io_stats(), storage.io_stats())
    }

    /// The open file as a cache keeps it: its metadata, with its bytes only when the file
    /// is no larger than its tail read (so that cached files hold little more than their
    /// metadata, and later reads of a larger one ask the store for what they want).
    pub fn to_keep(&self) -> FileReader {
        let small = self
            .whole
            .as_ref()
            .is_some_and(|w| w.len() as u64 <= REMOTE_TAIL_READ);
        FileReader {
            whole: self.whole.clone().filter(|_| small),
            _held: None,
            ..self.clone()
        }
    }

    /// Whether the file's bytes are in memory (its reads make no request).
    pub fn in_memory(&self) -> bool {
        self.whole.is_some()
    }

    /// About how many bytes of memory the open file holds: its metadata, and the whole
    /// file when it was small enough to keep.
    pub fn memory_size(&self) -> u64 {
        self.metadata.memory_size() + self.whole.as_ref().map_or(0, |b| b.len() as u64)
    }

    /// The file's name as shown in errors.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn num_columns(&self) -> usize {
        self.metadata.columns.len()
    }

    /// Read the buffers of page `page` of column `column`.
    pub async fn read_page(&self, column: usize, page: usize) -> Result<PageData> {
        let info = self
            .metadata
            .columns
            .get(column)
            .and_then(|c| c.pages.get(page))
            .ok_or_else(|| {
                Error::corrupt(&self.name, format!("no page {page} in column {column}"))
            })?;
        let buffers = self.read_ranges(&info.buffers).await?;
        Ok(PageData { buffers })
    }

    /// Read several byte ranges of the file at once (nearby ones in one request, with
    /// those other readers of the file ask for meanwhile).
    pub async fn read_ranges(&self, ranges: &[std::ops::Range<u64>]) -> Result<Vec<Bytes>> {
        if let Some(whole) = &self.whole {
            return ranges.iter().map(|r| self.slice(whole, r)).collect();
        }
        match self.storage.joins_reads(ranges) {
            true => {
                self.batcher
                    .get_ranges(&self.storage, &self.path, ranges)
                    .await
            }
            false => self.storage.get_ranges(&self.path, ranges).await,
        }
    }

    /// The bytes of global buffer `k` (0 is the schema; writers may add more).
    pub async fn global_buffer(&self, k: usize) -> Result<Bytes> {
        let range = self
            .metadata
            .global_buffers
            .get(k)
            .cloned()
            .ok_or_else(|| {
                Error::corrupt(
                    &self.name,
                    format!(
                        "no global buffer {k} (the file has {})",
                        self.metadata.global_buffers.len()
                    ),
                )
            })?;
        self.read_range(range).await
    }

    /// Read an arbitrary byte range of the file (out-of-line blob values).
    pub async fn read_range(&self, range: std::ops::Range<u64>) -> Result<Bytes> {
        let mut read = self.read_ranges(std::slice::from_ref(&range)).await?;
        Ok(read.pop().unwrap_or_default())
    }

    fn slice(&self, whole: &Bytes, r: &std::ops::Range<u64>) -> Result<Bytes> {
        if r.start > r.end || r.end > whole.len() as u64 {
            return Err(Error::corrupt(
                &self.name,
                format!(
                    "truncated: wanted bytes {}..{} but the file has {}",
                    r.start,
                    r.end,
                    whole.len()
                ),
            ));
        }
        Ok(whole.slice(r.start as usize..r.end as usize))
    }
}
