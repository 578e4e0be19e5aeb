//! What each version did: the transaction it committed (operation and properties), and,
//! for readers that follow a table as a stream, which rows it added.
//!
//! A version "added rows" when every fragment of the version before it is still there
//! unchanged (same data files, same deletion file, same schema) and new fragments appeared:
//! appends, and also inserts-only merges. Compaction, index and config commits change no
//! rows. Anything else (delete, update, overwrite, restore, column changes) changed rows
//! that a reader of appended rows has already seen.
use std::collections::{HashMap, HashSet};

use crate::dataset::{Dataset, VersionRef};
use crate::error::{Error, Result};
use crate::proto::table::transaction::Operation as PbOp;
use crate::proto::table::{DataFragment, Transaction};

use crate::table::transaction::op_name;
use crate::table::transaction::read::{read_transaction, transaction_in};
use crate::table::versions::{list_manifests, ManifestLocation};
use futures::StreamExt;

/// The transaction `ds`'s version committed, if its writer recorded one.
pub async fn transaction_of(ds: &Dataset) -> Result<Option<Transaction>> {
    let storage = ds.storage();
    let bytes = storage.get(&ds.location.path).await?;
    Ok(read_transaction(storage, &bytes, &ds.manifest).await)
}

/// How many versions' transactions `find_transaction` reads at once: on an object store
/// each costs two round trips, and a new stream query's first commit reads them all.
const CONCURRENT_READS: usize = 16;

/// The newest version at or below `newest` whose transaction has property `key` = `value`,
/// with that transaction. Versions are read newest first; the search stops at the first
/// version that no longer exists (removed by cleanup), so it sees the retained history.
pub async fn find_transaction(
    ds: &Dataset,
    key: &str,
    value: &str,
    newest: u64,
) -> Result<Option<(u64, Transaction)>> {
    let storage = ds.storage();
    // One listing instead of a lookup per version; the versions are then read ahead, in
    // order, a window at a time.
    let listed: HashMap<u64, ManifestLocation> = list_manifests(storage)
        .await?
        .into_iter()
        .map(|m| (m.version, m))
        .collect();
    let retained: Vec<ManifestLocation> = (1..=newest)
        .rev()
        .map_while(|v| listed.get(&v).cloned())
        .collect();
    let mut reads = futures::stream::iter(retained)
        .map(|loc| async move { (loc.version, transaction_in(storage, &loc).await) })
        .buffered(CONCURRENT_READS);
    while let Some((v, read)) = reads.next().await {
        match read {
            Ok(Some(t)) if t.transaction_properties.get(key).map(String::as_str) == Some(value) => {
                return Ok(Some((v, t)))
            }
            Ok(_) => {}
            // Removed by a cleanup since the listing: the retained history ends here.
            Err(Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// The transactions of `ds`'s version and the `count - 1` before it, newest first: None
/// for a version whose writer recorded none or that a cleanup removed.
pub async fn recent_transactions(ds: &Dataset, count: u64) -> Result<Vec<Option<Transaction>>> {
    let storage = ds.storage();
    let listed: HashMap<u64, ManifestLocation> = list_manifests(storage)
        .await?
        .into_iter()
        .map(|m| (m.version, m))
        .collect();
    let newest = ds.version();
    let versions = (newest.saturating_sub(count) + 1..=newest).rev();
    let reads = futures::stream::iter(versions)
        .map(|v| {
            let loc = listed.get(&v).cloned();
            async move {
                match loc {
                    None => Ok(None),
                    Some(loc) => match transaction_in(storage, &loc).await {
                        Err(Error::NotFound { .. }) => Ok(None),
                        other => other,
                    },
                }
            }
        })
        .buffered(CONCURRENT_READS);
    reads.collect::<Vec<_>>().await.into_iter().collect()
}

/// How a version changed the table's rows, against the version before it.
#[derive(Clone, Debug, PartialEq)]
pub enum RowChange {
    /// Only new fragments, (id, physical rows) in manifest order; possibly none.
    Added(Vec<(u64, u64)>),
    /// Rows that existed before were changed, removed or replaced.
    Changed,
}

/// One version's change: its number, its operation's name, and what it did to rows.
#[derive(Clone, Debug)]
pub struct VersionChange {
    pub version: u64,
    pub operation: String,
    pub change: RowChange,
}

/// Operations that never change a row: their fragments may differ (compaction rewrites
/// them) but every row reads the same.
fn keeps_rows(op: &PbOp) -> bool {
    matches!(
        op,
        PbOp::Rewrite(_) | PbOp::CreateIndex(_) | PbOp::UpdateConfig(_) | PbOp::ReserveFragments(_)
    )
}

fn unchanged(before: &DataFragment, after: &DataFragment) -> bool {
    let files = |f: &DataFragment| f.files.iter().map(|d| d.path.clone()).collect::<Vec<_>>();
    let deletion = |f: &DataFragment| {
        f.deletion_file
            .as_ref()
            .map(|d| (d.id, d.read_version, d.file_type))
    };
    files(before) == files(after) && deletion(before) == deletion(after)
}

/// (id, physical rows) of `frags`.
async fn rows_of<'a>(
    ds: &Dataset,
    frags: impl Iterator<Item = &'a DataFragment>,
) -> Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    for f in frags {
        out.push((f.id, ds.physical_rows(f).await?));
    }
    Ok(out)
}

/// The change `ds` made over `previous` (the version before it; None for the first).
pub async fn change_between(previous: Option<&Dataset>, ds: &Dataset) -> Result<VersionChange> {
    let txn = transaction_of(ds).await?;
    let op = txn.as_ref().and_then(|t| t.operation.as_ref());
    let operation = op.map_or("unknown", op_name).to_string();
    let version = ds.version();
    let Some(prev) = previous else {
        // The first version created the table: all its rows are new.
        let change = RowChange::Added(rows_of(ds, ds.fragments().iter()).await?);
        return Ok(VersionChange {
            version,
            operation,
            change,
        });
    };
    if op.is_some_and(keeps_rows) {
        return Ok(VersionChange {
            version,
            operation,
            change: RowChange::Added(vec![]),
        });
    }
    let now: HashMap<u64, &DataFragment> = ds.fragments().iter().map(|f| (f.id, f)).collect();
    let kept = prev.manifest.fields == ds.manifest.fields
        && prev
            .fragments()
            .iter()
            .all(|f| now.get(&f.id).is_some_and(|g| unchanged(f, g)));
    if !kept {
        return Ok(VersionChange {
            version,
            operation,
            change: RowChange::Changed,
        });
    }
    let old: HashSet<u64> = prev.fragments().iter().map(|f| f.id).collect();
    let new = ds.fragments().iter().filter(|f| !old.contains(&f.id));
    Ok(VersionChange {
        version,
        operation,
        change: RowChange::Added(rows_of(ds, new).await?),
    })
}

/// The changes of versions `after + 1 ..= upto`, read from `ds`'s table.
pub async fn changes_since(ds: &Dataset, after: u64, upto: u64) -> Result<Vec<VersionChange>> {
    let open = |v: u64| {
        Dataset::open(
            ds.uri(),
            Some(VersionRef::Number(v)),
            ds.storage_options().clone(),
        )
    };
    let mut previous = if after == 0 {
        None
    } else {
        Some(open(after).await?)
    };
    let mut out = Vec::new();
    for v in after + 1..=upto {
        let current = open(v).await?;
        out.push(change_between(previous.as_ref(), &current).await?);
        previous = Some(current);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::transaction::Staged;
    use crate::table::versions::locate_version;
    use crate::write::{commit, write_dataset, ReadFrom, WriteMode, WriteOptions};
    use arrow_array::{Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;

    fn batch(values: std::ops::Range<i64>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from_iter_values(values))]).unwrap()
    }

    async fn write(uri: &str, values: std::ops::Range<i64>, mode: WriteMode) -> Dataset {
        let b = batch(values);
        let opts = WriteOptions {
            mode,
            ..Default::default()
        };
        write_dataset(uri, b.schema(), futures::stream::iter(vec![Ok(b)]), opts)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn appends_deletes_and_properties() {
        let dir = std::env::temp_dir().join(format!("lance_core_history_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let uri = dir.join("t.lance").to_string_lossy().to_string();
        write(&uri, 0..10, WriteMode::Create).await;
        let ds = write(&uri, 10..15, WriteMode::Append).await;
        crate::write::delete(&ds, &crate::test_util::sql("x < 3"), 0)
            .await
            .unwrap();
        let ds = Dataset::open(&uri, None, Default::default()).await.unwrap();
        let changes = changes_since(&ds, 0, 3).await.unwrap();
        assert_eq!(changes[0].change, RowChange::Added(vec![(0, 10)]));
        assert_eq!(changes[1].change, RowChange::Added(vec![(1, 5)]));
        assert_eq!(changes[1].operation, "append");
        assert_eq!(changes[2].change, RowChange::Changed);
        assert_eq!(changes[2].operation, "delete");

        // An empty append carrying properties is found by them, newest first.
        let props = HashMap::from([("stream".to_string(), "q1".to_string())]);
        let op = crate::table::transaction::Operation::Append { fragments: vec![] };
        let ds = commit(ReadFrom::Version(&ds), op, Staged::new(ds.storage()), props)
            .await
            .unwrap();
        let (v, t) = find_transaction(&ds, "stream", "q1", ds.version())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(v, 4);
        assert_eq!(t.transaction_properties["stream"], "q1");
        assert!(find_transaction(&ds, "stream", "q2", 4)
            .await
            .unwrap()
            .is_none());
        assert!(find_transaction(&ds, "stream", "q1", 3)
            .await
            .unwrap()
            .is_none());

        // More versions than one read-ahead window: still the newest match, and the search
        // ends where cleanup removed a version.
        let mut ds = ds;
        for v in 5..=24u64 {
            let mut props = HashMap::new();
            if v == 6 || v == 20 {
                props.insert("stream".to_string(), "q1".to_string());
            }
            let op = crate::table::transaction::Operation::Append { fragments: vec![] };
            ds = commit(ReadFrom::Version(&ds), op, Staged::new(ds.storage()), props)
                .await
                .unwrap();
        }
        let found = |newest| {
            let ds = &ds;
            async move {
                find_transaction(ds, "stream", "q1", newest)
                    .await
                    .unwrap()
                    .map(|(v, _)| v)
            }
        };
        assert_eq!(found(24).await, Some(20));
        assert_eq!(found(19).await, Some(6));
        let v5 = locate_version(ds.storage(), 5).await.unwrap();
        ds.storage().delete(&v5.path).await.unwrap();
        assert_eq!(found(19).await, Some(6));
        assert_eq!(found(5).await, None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
