//! What versions did: `_transaction` (one version's operation and properties),
//! `_find_transaction` (the newest version carrying a property, as a stream sink asks
//! before committing a batch) and `_changes_since` (the rows each version added, as a
//! stream source plans its batches).
use pyo3::prelude::*;
use std::collections::HashMap;

use lance_core::proto::table::Transaction;
use lance_core::table::history::{self, RowChange};

use crate::dataset::PyDataset;
use crate::errors::{guard, IntoPyResult};
use crate::runtime::block_on;

/// (version, operation, added fragments as (id, physical rows))
type ChangeRow = (u64, String, Option<Vec<(u64, u64)>>);

/// (read_version, uuid, operation, transaction_properties)
type TransactionRow = (u64, String, String, HashMap<String, String>);

fn row(t: Transaction) -> TransactionRow {
    let op = t
        .operation
        .as_ref()
        .map_or("unknown", lance_core::table::transaction::op_name)
        .to_string();
    (t.read_version, t.uuid, op, t.transaction_properties)
}

/// The transaction `ds`'s version committed, or None when its writer recorded none.
#[pyfunction]
pub fn _transaction(py: Python<'_>, ds: &PyDataset) -> PyResult<Option<TransactionRow>> {
    guard(|| {
        let t = block_on(py, history::transaction_of(&ds.inner)).py()?;
        Ok(t.map(row))
    })
}

/// (version, transaction) of the newest version at or below `newest` whose transaction
/// has property `key` = `value`.
#[pyfunction]
pub fn _find_transaction(
    py: Python<'_>,
    ds: &PyDataset,
    key: &str,
    value: &str,
    newest: u64,
) -> PyResult<Option<(u64, TransactionRow)>> {
    guard(|| {
        let found = block_on(py, history::find_transaction(&ds.inner, key, value, newest)).py()?;
        Ok(found.map(|(v, t)| (v, row(t))))
    })
}

/// [(version, operation, added)] for versions `after+1..=upto`: `added` lists the
/// (fragment id, physical rows) of a version that only added fragments, and is None for
/// one that changed rows that existed before.
#[pyfunction]
pub fn _changes_since(
    py: Python<'_>,
    ds: &PyDataset,
    after: u64,
    upto: u64,
) -> PyResult<Vec<ChangeRow>> {
    guard(|| {
        let changes = block_on(py, history::changes_since(&ds.inner, after, upto)).py()?;
        Ok(changes
            .into_iter()
            .map(|c| {
                let added = match c.change {
                    RowChange::Added(f) => Some(f),
                    RowChange::Changed => None,
                };
                (c.version, c.operation, added)
            })
            .collect())
    })
}
