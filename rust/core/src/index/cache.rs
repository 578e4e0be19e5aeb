//! Index data kept in memory between queries, for the whole process. An index's files
//! never change once written (a new build gets a new directory), so what was read under
//! a directory's URI stays true for every dataset and version that lists the index, and
//! a point query after the first costs no reads of the index. Bounded by bytes: the
//! entries used longest ago go first.
use std::any::Any;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::Result;

/// Bytes of index data kept at most.
const BUDGET: usize = 512 << 20;

struct Entry {
    value: Arc<dyn Any + Send + Sync>,
    bytes: usize,
    used: u64,
}

#[derive(Default)]
struct Lru {
    entries: HashMap<String, Entry>,
    bytes: usize,
    tick: u64,
}

fn lru() -> &'static Mutex<Lru> {
    static CACHE: OnceLock<Mutex<Lru>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

fn get<T: Any + Send + Sync>(key: &str) -> Option<Arc<T>> {
    let mut c = lru().lock().unwrap_or_else(|e| e.into_inner());
    c.tick += 1;
    let tick = c.tick;
    let e = c.entries.get_mut(key)?;
    e.used = tick;
    e.value.clone().downcast::<T>().ok()
}

fn put<T: Any + Send + Sync>(key: String, value: Arc<T>, bytes: usize) {
    let mut c = lru().lock().unwrap_or_else(|e| e.into_inner());
    if bytes > BUDGET / 4 {
        return;
    }
    c.tick += 1;
    let used = c.tick;
    if let Some(old) = c.entries.insert(key, Entry { value, bytes, used }) {
        c.bytes -= old.bytes;
    }
    c.bytes += bytes;
    while c.bytes > BUDGET {
        let Some(oldest) = c
            .entries
            .iter()
            .min_by_key(|(_, e)| e.used)
            .map(|(k, _)| k.clone())
        else {
            break;
        };
        if let Some(e) = c.entries.remove(&oldest) {
            c.bytes -= e.bytes;
        }
    }
}

/// The value kept under `key`, else the one `load` makes (with its size in bytes), kept.
/// Two callers missing at once both load; the later one's value is kept.
pub async fn get_or_load<T, F, Fut>(key: String, load: F) -> Result<Arc<T>>
where
    T: Any + Send + Sync,
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<(T, usize)>>,
{
    if let Some(v) = get::<T>(&key) {
        return Ok(v);
    }
    let (value, bytes) = load().await?;
    let value = Arc::new(value);
    put(key, value.clone(), bytes);
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn loads_once_and_keeps_within_budget() {
        let mut loads = 0;
        for _ in 0..3 {
            let v = get_or_load("cache-test/a".into(), || {
                loads += 1;
                async { Ok((7u32, 4)) }
            })
            .await
            .unwrap();
            assert_eq!(*v, 7);
        }
        assert_eq!(loads, 1);
        // Entries past the budget push out the oldest.
        for i in 0..5 {
            put(format!("cache-test/big{i}"), Arc::new(i), BUDGET / 4);
        }
        assert!(get::<u32>("cache-test/a").is_none());
        assert!(get::<i32>("cache-test/big4").is_some());
        assert!(lru().lock().unwrap().bytes <= BUDGET);
    }
}
