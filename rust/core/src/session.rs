//! A session: the caches that the datasets opened with it share (pylance's `Session`).
//!
//! Everything kept here is keyed by the URI of a file that never changes once written —
//! data files, deletion files and index files all get fresh unique names — so what was
//! read for one version stays true for every version and every open that lists the same
//! file. Manifests are not kept: a table deleted and written again at the same place
//! reuses their names.
//!
//! Datasets opened without a session share one for the process, so that reopening a
//! table (as each Spark task does) finds its file metadata and index pages already read;
//! a session made on purpose has caches of its own, sized as asked.
use std::any::Any;
use std::future::Future;
use std::sync::{Arc, OnceLock, Weak};

use quick_cache::sync::Cache;
use quick_cache::{OptionsBuilder, Weighter};

use crate::error::Result;

/// Bytes of index data a session keeps unless told otherwise.
pub const DEFAULT_INDEX_CACHE_BYTES: u64 = 512 << 20;
/// Bytes of file metadata (footers, page tables, deletion sets) kept unless told otherwise.
pub const DEFAULT_METADATA_CACHE_BYTES: u64 = 256 << 20;

#[derive(Clone)]
struct Entry {
    value: Arc<dyn Any + Send + Sync>,
    bytes: u64,
}

#[derive(Clone)]
struct EntryBytes;

impl Weighter<String, Entry> for EntryBytes {
    fn weight(&self, _key: &String, entry: &Entry) -> u64 {
        // A weight of 0 would never be evicted.
        entry.bytes.max(1)
    }
}

/// Values of any type under string keys, bounded by their (estimated) size in bytes:
/// past the bound, the entries least worth keeping go first.
pub struct ByteCache {
    entries: Option<Cache<String, Entry, EntryBytes>>,
    capacity: u64,
}

impl std::fmt::Debug for ByteCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ByteCache")
            .field("capacity", &self.capacity)
            .field("bytes", &self.size_bytes())
            .field("entries", &self.len())
            .finish()
    }
}

impl ByteCache {
    /// A cache of at most `capacity` bytes (0: keeps nothing).
    pub fn new(capacity: u64) -> Self {
        let entries = (capacity > 0).then(|| {
            // Few shards: one entry may take up to a shard's share of the bytes, and index
            // pages are large.
            let options = OptionsBuilder::new()
                .shards(4)
                .estimated_items_capacity((capacity / 16384).clamp(64, 1 << 16) as usize)
                .weight_capacity(capacity)
                .build()
                .expect("cache options are valid");
            Cache::with_options(options, EntryBytes, Default::default(), Default::default())
        });
        ByteCache { entries, capacity }
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The bytes held now.
    pub fn size_bytes(&self) -> u64 {
        self.entries.as_ref().map_or(0, |c| c.weight())
    }

    pub fn len(&self) -> usize {
        self.entries.as_ref().map_or(0, |c| c.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value under `key`, if kept and of type `T`.
    pub fn get<T: Any + Send + Sync>(&self, key: &str) -> Option<Arc<T>> {
        let entry = self.entries.as_ref()?.get(key)?;
        entry.value.downcast::<T>().ok()
    }

    /// Keep `value` (about `bytes` in memory) under `key`; too large a value is not kept.
    pub fn put<T: Any + Send + Sync>(&self, key: String, value: Arc<T>, bytes: u64) {
        if let Some(c) = &self.entries {
            c.insert(key, Entry { value, bytes });
        }
    }

    /// The value kept under `key`, else the one `load` makes (with its size in bytes),
    /// kept. Two callers missing at once both load; the later one's value is kept.
    pub async fn get_or_load<T, F, Fut>(&self, key: String, load: F) -> Result<Arc<T>>
    where
        T: Any + Send + Sync,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(T, usize)>>,
    {
        if let Some(v) = self.get::<T>(&key) {
            return Ok(v);
        }
        let (value, bytes) = load().await?;
        let value = Arc::new(value);
        self.put(key, value.clone(), bytes as u64);
        Ok(value)
    }
}

/// The caches shared by the datasets opened with one session.
#[derive(Debug)]
pub struct Session {
    /// Index data: models, lookup pages, partitions.
    pub index: ByteCache,
    /// File metadata: data files' footers and column layouts, pages planned for random
    /// access, deletion sets.
    pub metadata: ByteCache,
}

impl Default for Session {
    fn default() -> Self {
        Session::new(DEFAULT_INDEX_CACHE_BYTES, DEFAULT_METADATA_CACHE_BYTES)
    }
}

impl Session {
    pub fn new(index_cache_bytes: u64, metadata_cache_bytes: u64) -> Self {
        Session {
            index: ByteCache::new(index_cache_bytes),
            metadata: ByteCache::new(metadata_cache_bytes),
        }
    }

    /// The session of the datasets opened without one.
    pub fn shared() -> Arc<Session> {
        static SHARED: OnceLock<Arc<Session>> = OnceLock::new();
        SHARED.get_or_init(|| Arc::new(Session::default())).clone()
    }

    /// Bytes held by both caches.
    pub fn size_bytes(&self) -> u64 {
        self.index.size_bytes() + self.metadata.size_bytes()
    }

    /// Entries held by both caches.
    pub fn approx_num_items(&self) -> usize {
        self.index.len() + self.metadata.len()
    }
}

/// The index cache of a session, as held by something that cache keeps (an index's model
/// caches its pages beside itself): weak, so that no cycle keeps a dropped session alive.
#[derive(Clone, Debug)]
pub struct IndexCacheRef(Weak<Session>);

impl IndexCacheRef {
    pub fn of(session: &Arc<Session>) -> Self {
        IndexCacheRef(Arc::downgrade(session))
    }

    /// As `ByteCache::get_or_load`; once the session is gone, loads without keeping.
    pub async fn get_or_load<T, F, Fut>(&self, key: String, load: F) -> Result<Arc<T>>
    where
        T: Any + Send + Sync,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(T, usize)>>,
    {
        match self.0.upgrade() {
            Some(session) => session.index.get_or_load(key, load).await,
            None => Ok(Arc::new(load().await?.0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn loads_once_and_keeps_within_budget() {
        let cache = ByteCache::new(1 << 20);
        let mut loads = 0;
        for _ in 0..3 {
            let v = cache
                .get_or_load("a".into(), || {
                    loads += 1;
                    async { Ok((7u32, 4)) }
                })
                .await
                .unwrap();
            assert_eq!(*v, 7);
        }
        assert_eq!(loads, 1);
        assert_eq!(cache.size_bytes(), 4);
        // A value of another type under the key is a miss, not a wrong answer.
        assert!(cache.get::<i64>("a").is_none());
        // Entries past the budget push others out.
        for i in 0..64 {
            cache.put(format!("big{i}"), Arc::new(i), 64 << 10);
        }
        assert!(cache.size_bytes() <= 1 << 20);
        assert!(cache.len() < 65);
    }

    #[test]
    fn a_zero_budget_keeps_nothing() {
        let cache = ByteCache::new(0);
        cache.put("a".into(), Arc::new(1u8), 1);
        assert!(cache.get::<u8>("a").is_none());
        assert_eq!((cache.size_bytes(), cache.len()), (0, 0));
    }
}
