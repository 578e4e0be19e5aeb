//! Row-level changes, shared by delete, update and merge_insert: rows of the read version
//! leave their fragments through new deletion files, and changed or inserted rows go into
//! new fragments, where moved rows keep their stable row ids.
use std::collections::BTreeMap;

use arrow_array::RecordBatch;
use futures::{Stream, StreamExt, TryStreamExt};
use roaring::RoaringBitmap;

use super::{commit, conform, writable_version, write_fragments, ReadFrom, WriteOptions};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::proto::table::data_fragment::RowIdSequence as RowIdSeq;
use crate::proto::table::{DataFragment, DeletionFile};
use crate::table::deletion::{deletion_file_name, encode_deletions};
use crate::table::transaction::{InsertedKeys, Operation, Staged};

/// Row offsets to delete, by fragment id.
pub type RowsByFragment = BTreeMap<u64, RoaringBitmap>;

/// Add the row address `addr` (fragment id in the high 32 bits) to `rows`.
pub fn add_address(rows: &mut RowsByFragment, addr: u64) {
    rows.entry(addr >> 32)
        .or_default()
        .insert((addr & 0xFFFF_FFFF) as u32);
}

/// The fragments of the read version after deleting `rows`: those given a new deletion
/// file (written here) and the ids of those left with no row.
pub struct Removal {
    pub updated: Vec<DataFragment>,
    pub removed_ids: Vec<u64>,
}

/// Write a deletion file per fragment of `rows`, merged with its existing deletions, and
/// stage each in `staged`.
pub async fn delete_rows(ds: &Dataset, rows: &RowsByFragment, staged: &Staged) -> Result<Removal> {
    let work: Vec<_> = rows
        .iter()
        .filter(|(_, r)| !r.is_empty())
        .map(|(&id, hits)| delete_in_fragment(ds, staged, id, hits.clone()))
        .collect();
    // Deletion files are small: write several at once.
    let done: Vec<(u64, Option<DataFragment>)> = futures::stream::iter(work)
        .buffered(16)
        .try_collect()
        .await?;
    let mut removal = Removal {
        updated: vec![],
        removed_ids: vec![],
    };
    for (id, f) in done {
        match f {
            Some(f) => removal.updated.push(f),
            None => removal.removed_ids.push(id),
        }
    }
    Ok(removal)
}

/// Fragment `id` with `hits` deleted too: with a new deletion file, or None when no row
/// is left.
async fn delete_in_fragment(
    ds: &Dataset,
    staged: &Staged,
    id: u64,
    hits: RoaringBitmap,
) -> Result<(u64, Option<DataFragment>)> {
    let read_version = ds.version();
    let frag = ds.fragment_or_err(id)?;
    let mut all = ds
        .deletions(frag)
        .await?
        .map(|d| (*d).clone())
        .unwrap_or_default();
    all |= hits;
    if all.len() >= ds.physical_rows(frag).await? {
        return Ok((id, None));
    }
    if frag
        .deletion_file
        .as_ref()
        .is_some_and(|d| d.base_id.is_some())
    {
        return Err(Error::unsupported(
            ds.uri(),
            "deleting from fragments whose deletions live under another base path",
        ));
    }
    let (kind, bytes) = encode_deletions(&all)?;
    let file = DeletionFile {
        file_type: kind as i32,
        read_version,
        id: rand_id(),
        num_deleted_rows: all.len(),
        base_id: None,
    };
    let storage = staged.storage();
    let name = deletion_file_name(id, &file);
    storage
        .put(&storage.path(&format!("_deletions/{name}")), bytes)
        .await?;
    staged.add_deletion_file(id, &file);
    let mut f = frag.clone();
    f.deletion_file = Some(file);
    Ok((id, Some(f)))
}

/// A random id for a deletion file name (collisions between concurrent writers must not happen).
fn rand_id() -> u64 {
    let u = uuid::Uuid::new_v4();
    u64::from_le_bytes(u.as_bytes()[..8].try_into().unwrap()) >> 1
}

/// Write `batches` (rows of the dataset's schema) as new fragments of `ds`, staged in
/// `staged`; data file names start with `file_prefix` (a distributed job's token, or empty).
pub async fn write_rows<S>(
    ds: &Dataset,
    batches: S,
    file_prefix: &str,
    staged: &Staged,
) -> Result<Vec<DataFragment>>
where
    S: Stream<Item = Result<RecordBatch>> + Unpin + Send,
{
    let version = writable_version(&ds.data_storage_version(), ds.uri())?;
    let target = ds.arrow_schema.clone();
    let stream = batches.map(move |b| b.and_then(|b| conform(b, &target)));
    let opts = WriteOptions {
        storage_options: ds.storage_options().clone(),
        file_prefix: file_prefix.to_string(),
        blobs: super::blob_v2::BlobWriteOptions::of_table(ds),
        ..Default::default()
    };
    write_fragments(staged, &ds.schema, version, Box::pin(stream), &opts).await
}

/// Give new fragments holding rows moved from `ds` (from `addresses`, with stable ids
/// `ids`, in row order over the fragments) what stays with a row when it moves: its
/// stable id and the version it was created in, and also the version it was last
/// updated in when the move changes nothing (`changed` false: compaction). A changed
/// row's last update is stamped with the version that commits it.
pub async fn attach_moved_rows(
    ds: &Dataset,
    fragments: &mut [DataFragment],
    addresses: &[u64],
    ids: &[u64],
    changed: bool,
) -> Result<()> {
    use crate::table::row_versions::{Lineage, DEFAULT_VERSION};
    let total: u64 = fragments.iter().map(|f| f.physical_rows).sum();
    if ids.len() as u64 != total || addresses.len() != ids.len() {
        return Err(Error::corrupt(
            ds.uri(),
            format!(
                "{total} rows were moved, with {} row ids and {} addresses",
                ids.len(),
                addresses.len()
            ),
        ));
    }
    // Each lineage sequence of each fragment the rows came from, decoded once.
    let mut versions: std::collections::HashMap<(u64, Lineage), Option<Vec<u64>>> =
        Default::default();
    let mut lineages = vec![(Lineage::CreatedAt, Vec::new())];
    if !changed {
        lineages.push((Lineage::LastUpdatedAt, Vec::new()));
    }
    for (which, out) in lineages.iter_mut() {
        out.reserve(addresses.len());
        for &a in addresses {
            let frag_id = a >> 32;
            let seq = match versions.entry((frag_id, *which)) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    let frag = ds.fragment_or_err(frag_id)?;
                    e.insert(ds.row_versions(frag, *which).await?)
                }
            };
            let offset = (a & 0xFFFF_FFFF) as usize;
            out.push(
                seq.as_ref()
                    .and_then(|v| v.get(offset).copied())
                    .unwrap_or(DEFAULT_VERSION),
            );
        }
    }
    let mut at = 0usize;
    for f in fragments {
        let n = f.physical_rows as usize;
        f.row_id_sequence = Some(RowIdSeq::InlineRowIds(
            crate::table::rowids::encode_row_ids(&ids[at..at + n]),
        ));
        for (which, values) in &lineages {
            which.set(f, &values[at..at + n]);
        }
        at += n;
    }
    Ok(())
}

/// Commit an `Update` of `ds`: `removal` (deletion files already written) and the new
/// `fragments`, all staged in `staged`; a merge records the keys it inserted.
pub async fn commit_update(
    ds: &Dataset,
    removal: Removal,
    fragments: Vec<DataFragment>,
    fields_changed: Vec<u32>,
    inserted_keys: Option<InsertedKeys>,
    staged: Staged,
) -> Result<Dataset> {
    let op = Operation::Update {
        updated: removal.updated,
        removed_ids: removal.removed_ids,
        new_fragments: fragments,
        fields_changed,
        inserted_keys,
        fields_modified: vec![],
    };
    commit(ReadFrom::Version(ds), op, staged, Default::default()).await
}

/// Commit the rows changed by the pieces of a distributed update or merge: the new
/// `fragments` they wrote (already in `staged`), the `addresses` of the read version's
/// rows they replace or delete, and (a merge's) the keys they inserted. Fails, removing
/// those fragments, when an address is given twice (two changes of one row) or names no
/// row of `ds`.
pub async fn commit_row_changes(
    ds: &Dataset,
    fragments: Vec<DataFragment>,
    addresses: &[u64],
    fields_changed: Vec<u32>,
    inserted_keys: Option<InsertedKeys>,
    staged: Staged,
) -> Result<Dataset> {
    let checked = async {
        let mut rows = RowsByFragment::new();
        for &a in addresses {
            let (frag, offset) = (a >> 32, (a & 0xFFFF_FFFF) as u32);
            if !rows.entry(frag).or_default().insert(offset) {
                return Err(changed_twice(ds, frag, offset));
            }
        }
        for (&frag, offsets) in &rows {
            let f = ds.fragment_or_err(frag)?;
            if offsets.max().unwrap_or(0) as u64 >= ds.physical_rows(f).await? {
                return Err(Error::invalid(format!(
                    "{}: fragment {frag} has no row {}",
                    ds.uri(),
                    offsets.max().unwrap_or(0)
                )));
            }
        }
        delete_rows(ds, &rows, &staged).await
    };
    let removal = staged.guard(checked).await?;
    commit_update(
        ds,
        removal,
        fragments,
        fields_changed,
        inserted_keys,
        staged,
    )
    .await
}

/// The error for a table row that two source rows change (an update or merge whose keys
/// are not unique in the source).
pub fn changed_twice(ds: &Dataset, fragment: u64, offset: u32) -> Error {
    Error::invalid(format!(
        "{}: row {offset} of fragment {fragment} is changed twice; each table row may match \
         at most one source row",
        ds.uri()
    ))
}
