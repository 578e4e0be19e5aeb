//! Reading committed transactions: where a version keeps its transaction (inline in the
//! manifest file, or a file of its own), and the transaction of a version.
use bytes::Bytes;
use prost::Message;

use crate::error::Result;
use crate::proto::table::{Manifest, Transaction};
use crate::storage::Storage;
use crate::table::manifest::decode_manifest_as;
use crate::table::versions::{locate_version, ManifestLocation};

/// The transaction of a committed version: inline in its manifest file, or its own file.
pub async fn read_transaction(
    storage: &Storage,
    bytes: &Bytes,
    m: &Manifest,
) -> Option<Transaction> {
    let place = TransactionPlace {
        transaction_file: m.transaction_file.clone(),
        transaction_section: m.transaction_section,
        transaction_position: m.transaction_position,
    };
    read_transaction_at(storage, bytes, &place).await
}

/// The manifest fields that say where a version's transaction is. Decoding a manifest as
/// this skips its fragment list, which grows with the table.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TransactionPlace {
    #[prost(string, tag = "12")]
    pub transaction_file: String,
    #[prost(uint64, optional, tag = "21")]
    pub transaction_section: Option<u64>,
    #[prost(uint64, optional, tag = "23")]
    pub transaction_position: Option<u64>,
}

/// The transaction `place` points to, given the manifest file's `bytes`.
pub async fn read_transaction_at(
    storage: &Storage,
    bytes: &Bytes,
    place: &TransactionPlace,
) -> Option<Transaction> {
    if let Some(pos) = place.transaction_position.or(place.transaction_section) {
        let pos = pos as usize;
        let len = u32::from_le_bytes(bytes.get(pos..pos + 4)?.try_into().ok()?) as usize;
        return Transaction::decode(bytes.get(pos + 4..pos + 4 + len)?).ok();
    }
    if place.transaction_file.is_empty() {
        return None;
    }
    let data = storage
        .get(&storage.path(&format!("_transactions/{}", place.transaction_file)))
        .await
        .ok()?;
    Transaction::decode(&data[..]).ok()
}

/// The transaction version `version` of the table in `storage` committed, if recorded.
pub async fn transaction_at(storage: &Storage, version: u64) -> Result<Option<Transaction>> {
    transaction_in(storage, &locate_version(storage, version).await?).await
}

pub async fn transaction_in(
    storage: &Storage,
    loc: &ManifestLocation,
) -> Result<Option<Transaction>> {
    let bytes = storage.get(&loc.path).await?;
    let place: TransactionPlace = decode_manifest_as(&bytes, &storage.display(&loc.path))?;
    Ok(read_transaction_at(storage, &bytes, &place).await)
}
