//! Reads of one remote object asked for at about the same time (the columns of a
//! fragment read for a take, the pages of a fragment started together) go out as one
//! `get_ranges` call, which the store coalesces into as few requests as the gaps
//! allow. On an object store a request costs a round trip; bytes between nearby
//! ranges cost almost nothing.
//!
//! The first reader to arrive leads: it yields once so that concurrent readers can add
//! their ranges, then reads them all and hands each its part. A reader whose leader
//! went away (cancelled) or whose shared read failed reads its own ranges alone, so an
//! error always belongs to the ranges that caused it.
use std::ops::Range;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use object_store::path::Path;
use tokio::sync::oneshot;

use super::Storage;
use crate::error::Result;

/// A reader's ranges and where its bytes go (None: read them yourself).
struct Waiting {
    ranges: Vec<Range<u64>>,
    reply: oneshot::Sender<Option<Vec<Bytes>>>,
}

/// Releases the waiting readers when a leader is dropped before it took them.
struct LeaderGuard<'a>(&'a ReadBatcher);

impl Drop for LeaderGuard<'_> {
    fn drop(&mut self) {
        // Dropping their reply senders tells each to read alone.
        drop(self.0.take_waiting());
    }
}

/// The readers waiting for the next shared read of one object.
#[derive(Clone, Default)]
pub struct ReadBatcher {
    waiting: Arc<Mutex<Vec<Waiting>>>,
}

impl std::fmt::Debug for ReadBatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReadBatcher")
    }
}

impl ReadBatcher {
    fn take_waiting(&self) -> Vec<Waiting> {
        std::mem::take(&mut *self.waiting.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Read `ranges` of `path`, together with whatever other readers ask for meanwhile.
    pub async fn get_ranges(
        &self,
        storage: &Storage,
        path: &Path,
        ranges: &[Range<u64>],
    ) -> Result<Vec<Bytes>> {
        let (reply, answer) = oneshot::channel();
        let leads = {
            let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
            waiting.push(Waiting {
                ranges: ranges.to_vec(),
                reply,
            });
            waiting.len() == 1
        };
        if leads {
            // Dropped while yielding (its read cancelled), the leader must not leave the
            // others waiting for a read no one will make: they read alone.
            let guard = LeaderGuard(self);
            tokio::task::yield_now().await;
            std::mem::forget(guard);
            let batch = self.take_waiting();
            let all: Vec<Range<u64>> = batch.iter().flat_map(|w| w.ranges.clone()).collect();
            let read = match batch.len() {
                1 => return storage.get_ranges(path, &all).await,
                _ => storage.get_ranges(path, &all).await.ok(),
            };
            let mut parts = read.map(|r| r.into_iter());
            for w in batch {
                let mine = parts
                    .as_mut()
                    .map(|p| p.by_ref().take(w.ranges.len()).collect::<Vec<_>>());
                let _ = w.reply.send(mine);
            }
        }
        match answer.await {
            Ok(Some(bytes)) => Ok(bytes),
            // The shared read failed, or its leader was dropped: read alone.
            Ok(None) | Err(_) => storage.get_ranges(path, ranges).await,
        }
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)] // one range per read is what the tests ask for
mod tests {
    use std::future::Future;

    use super::*;
    use crate::storage::StorageOptions;

    async fn store(name: &str) -> (Storage, Path) {
        let uri = format!("memory://batched-tests-{name}/t");
        let storage = Storage::open(&uri, &StorageOptions::new()).unwrap();
        let path = storage.path("f.bin");
        let bytes: Vec<u8> = (0..=255u8).collect();
        storage.put(&path, bytes.into()).await.unwrap();
        (storage, path)
    }

    #[tokio::test]
    async fn concurrent_readers_each_get_their_ranges() {
        let (storage, path) = store("concurrent").await;
        let b = ReadBatcher::default();
        let (x, y) = tokio::join!(
            b.get_ranges(&storage, &path, &[0..2, 10..12]),
            b.get_ranges(&storage, &path, &[200..203]),
        );
        assert_eq!(
            x.unwrap(),
            vec![Bytes::from_static(&[0, 1]), Bytes::from_static(&[10, 11])]
        );
        assert_eq!(y.unwrap(), vec![Bytes::from_static(&[200, 201, 202])]);
        // A range past the end fails for the reader that asked for it alone.
        let (bad, good) = tokio::join!(
            b.get_ranges(&storage, &path, &[250..300]),
            b.get_ranges(&storage, &path, &[5..6]),
        );
        assert!(bad.is_err());
        assert_eq!(good.unwrap(), vec![Bytes::from_static(&[5])]);
    }

    #[tokio::test]
    async fn a_leader_dropped_while_gathering_leaves_no_reader_waiting() {
        let (storage, path) = store("dropped").await;
        let b = ReadBatcher::default();
        {
            // The leader is polled once (it yields to gather others), then dropped.
            let mut leader = Box::pin(b.get_ranges(&storage, &path, &[0..1]));
            let waker = futures::task::noop_waker();
            let mut cx = std::task::Context::from_waker(&waker);
            assert!(leader.as_mut().poll(&mut cx).is_pending());
        }
        let read = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            b.get_ranges(&storage, &path, &[1..3]),
        )
        .await
        .expect("a later reader must not wait for the dropped leader");
        assert_eq!(read.unwrap(), vec![Bytes::from_static(&[1, 2])]);
    }
}
