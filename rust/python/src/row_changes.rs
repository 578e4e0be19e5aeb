//! The pieces of a distributed update or merge_insert: each task rewrites its rows into
//! new fragments (`_update_part`, `_merge_part`) and the driver commits every task's
//! fragments and row addresses as one `Update` (`_commit_update_parts`,
//! `_commit_merge_parts`). Row addresses
//! travel as little-endian u64 bytes.
use arrow_array::RecordBatchReader;
use lance_core::proto::table::DataFragment;
use prost::Message;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::arrow_import::{batch_stream, import_stream};
use crate::dataset::PyDataset;
use crate::errors::{guard, raise, IntoPyResult};
use crate::filters::Filter;
use crate::merge_clauses::PyMergeClauses;
use crate::runtime::block_on;
use crate::write::checked_file_prefix;

fn address_bytes(addresses: &[u64]) -> Vec<u8> {
    addresses.iter().flat_map(|a| a.to_le_bytes()).collect()
}

fn encoded(fragments: &[DataFragment]) -> Vec<Vec<u8>> {
    fragments.iter().map(|f| f.encode_to_vec()).collect()
}

/// One task of a distributed update: the rows of `fragment_ids` matching `predicate` get
/// `updates` and are written into new fragments. Returns (new fragments, addresses of the
/// rows they replace, number of rows).
#[pyfunction]
#[pyo3(signature = (ds, updates, predicate, fragment_ids, file_prefix))]
pub fn _update_part(
    py: Python<'_>,
    ds: &PyDataset,
    updates: Vec<(String, String)>,
    predicate: Option<Filter>,
    fragment_ids: Vec<u64>,
    file_prefix: Option<String>,
) -> PyResult<(Vec<Vec<u8>>, Vec<u8>, u64)> {
    guard(|| {
        let prefix = checked_file_prefix(py, file_prefix)?;
        let inner = ds.inner.clone();
        let done = block_on(py, async move {
            lance_core::write::update::update_fragments(
                &inner,
                &updates,
                predicate.map(|p| p.0).as_ref(),
                fragment_ids,
                &prefix,
            )
            .await
        })
        .py()?;
        let addresses: Vec<u64> = done
            .rows
            .iter()
            .flat_map(|(&frag, offsets)| offsets.iter().map(move |o| (frag << 32) | o as u64))
            .collect();
        Ok((
            encoded(&done.fragments),
            address_bytes(&addresses),
            done.count,
        ))
    })
}

/// What one merge task did: new fragments (protobuf bytes), addresses to delete and
/// addresses matched (little-endian u64s), the hashes of the keys it inserted
/// (little-endian u64s; None when the merge does not insert), and (inserted, updated,
/// deleted) counts.
type MergePart = (
    Vec<Vec<u8>>,
    Vec<u8>,
    Vec<u8>,
    Option<Vec<u8>>,
    (u64, u64, u64),
);

/// One task of a distributed merge whose join Spark did: `data` holds the joined rows
/// (see `merge_joined`).
#[pyfunction]
#[pyo3(signature = (ds, data, clauses, file_prefix))]
pub fn _merge_part(
    py: Python<'_>,
    ds: &PyDataset,
    data: Bound<'_, PyAny>,
    clauses: PyRef<'_, PyMergeClauses>,
    file_prefix: Option<String>,
) -> PyResult<MergePart> {
    guard(|| {
        let params = clauses.params(0);
        let prefix = checked_file_prefix(py, file_prefix)?;
        let reader = import_stream(&data)?;
        let schema = reader.schema();
        let batches = batch_stream(reader);
        let inner = ds.inner.clone();
        let part = block_on(py, async move {
            let joined = Box::pin(batches);
            lance_core::write::merge_insert::merge_joined(&inner, joined, schema, &params, &prefix)
                .await
        })
        .py()?;
        let s = part.stats;
        Ok((
            encoded(&part.fragments),
            address_bytes(&part.to_delete),
            address_bytes(&part.matched),
            part.inserted_keys.map(|k| address_bytes(&k.hashes)),
            (s.inserted, s.updated, s.deleted),
        ))
    })
}

/// Commit the pieces of a distributed update of `columns` on `ds` (the version they
/// read): their new `fragments` and the `addresses` of the rows they replace.
#[pyfunction]
pub fn _commit_update_parts(
    py: Python<'_>,
    ds: &PyDataset,
    fragments: Vec<Vec<u8>>,
    addresses: Bound<'_, PyBytes>,
    columns: Vec<String>,
) -> PyResult<PyDataset> {
    guard(|| {
        let fragments = crate::commit::decode_fragments(py, &fragments)?;
        let addresses = u64s(py, addresses.as_bytes(), "row addresses")?;
        let inner = ds.inner.clone();
        let new = block_on(py, async move {
            lance_core::write::update::commit_update_parts(&inner, fragments, &addresses, &columns)
                .await
        })
        .py()?;
        Ok(PyDataset::from(new))
    })
}

/// Commit the pieces of a distributed merge on `ds` (the version they read): their new
/// `fragments`, the addresses of the rows they `removed` and `matched`, the key columns
/// `on`, and the hashes of the keys they inserted (None when the merge does not insert).
#[pyfunction]
#[pyo3(signature = (ds, fragments, removed, matched, on, inserted_keys=None))]
pub fn _commit_merge_parts(
    py: Python<'_>,
    ds: &PyDataset,
    fragments: Vec<Vec<u8>>,
    removed: Bound<'_, PyBytes>,
    matched: Bound<'_, PyBytes>,
    on: Vec<String>,
    inserted_keys: Option<Bound<'_, PyBytes>>,
) -> PyResult<PyDataset> {
    guard(|| {
        let parts = lance_core::write::merge_insert::MergeParts {
            fragments: crate::commit::decode_fragments(py, &fragments)?,
            removed: u64s(py, removed.as_bytes(), "row addresses")?,
            matched: u64s(py, matched.as_bytes(), "matched row addresses")?,
            on,
            inserted_hashes: match &inserted_keys {
                Some(b) => Some(u64s(py, b.as_bytes(), "inserted key hashes")?),
                None => None,
            },
        };
        let inner = ds.inner.clone();
        let new = block_on(py, async move {
            lance_core::write::merge_insert::commit_merge_parts(&inner, parts).await
        })
        .py()?;
        Ok(PyDataset::from(new))
    })
}

/// Little-endian u64 values packed in `bytes` (`what` names them in the error).
fn u64s(py: Python<'_>, bytes: &[u8], what: &str) -> PyResult<Vec<u64>> {
    if !bytes.len().is_multiple_of(8) {
        return Err(raise(
            py,
            "InvalidInputError",
            format!("{what} must be whole little-endian u64 values"),
        ));
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect())
}
