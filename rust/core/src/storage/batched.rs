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
            tokio::task::yield_now().await;
            let batch =
                std::mem::take(&mut *self.waiting.lock().unwrap_or_else(|e| e.into_inner()));
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
