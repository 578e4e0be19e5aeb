//! What versions did: `_transactions` (recent versions' operations, with their fields,
//! and properties),
//! `_find_transaction` (the newest version carrying a property, as a stream sink asks
//! before committing a batch) and `_changes_since` (the rows each version added, as a
//! stream source plans its batches).
use prost::Message;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::collections::HashMap;

use lance_core::dataset::history::{self, RowChange};
use lance_core::proto::table::transaction::{Operation as PbOp, UpdateMap};
use lance_core::proto::table::{DataFragment, Transaction};
use lance_core::table::schema::LanceSchema;

use crate::arrow_export::{PyArrowSchema, PyBatchIterator};
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

/// (read_version, uuid, kind, transaction_properties, the operation's fields by
/// pylance's `LanceOperation` attribute names)
type DetailedRow<'py> = (
    u64,
    String,
    &'static str,
    HashMap<String, String>,
    Bound<'py, PyDict>,
);

/// The transactions of `ds`'s version and the `count - 1` before it, newest first (None
/// where a writer recorded none or a cleanup removed the version).
#[pyfunction]
pub fn _transactions<'py>(
    py: Python<'py>,
    ds: &PyDataset,
    count: u64,
) -> PyResult<Vec<Option<DetailedRow<'py>>>> {
    guard(|| {
        let found = block_on(py, history::recent_transactions(&ds.inner, count)).py()?;
        found
            .into_iter()
            .map(|t| t.map(|t| detailed(py, t)).transpose())
            .collect()
    })
}

fn detailed(py: Python<'_>, t: Transaction) -> PyResult<DetailedRow<'_>> {
    let fields = PyDict::new(py);
    let kind = match &t.operation {
        Some(op) => operation_fields(py, op, &fields)?,
        None => "unknown",
    };
    Ok((
        t.read_version,
        t.uuid,
        kind,
        t.transaction_properties,
        fields,
    ))
}

/// Fill `out` with `op`'s fields, as Python values; the operation's kind.
fn operation_fields(py: Python<'_>, op: &PbOp, out: &Bound<'_, PyDict>) -> PyResult<&'static str> {
    let frags = |f: &[DataFragment]| -> Vec<Bound<'_, PyBytes>> {
        f.iter()
            .map(|f| PyBytes::new(py, &f.encode_to_vec()))
            .collect()
    };
    let schema = |fields: &[lance_core::proto::file::Field],
                  metadata: &HashMap<String, Vec<u8>>|
     -> PyResult<PyArrowSchema> {
        let arrow = LanceSchema::from_proto(fields, metadata)
            .and_then(|s| s.to_arrow())
            .py()?;
        Ok(PyArrowSchema(std::sync::Arc::new(arrow)))
    };
    let map = |m: &Option<UpdateMap>| {
        m.as_ref().map(|m| {
            let entries: Vec<(String, Option<String>)> = m
                .update_entries
                .iter()
                .map(|e| (e.key.clone(), e.value.clone()))
                .collect();
            (entries, m.replace)
        })
    };
    Ok(match op {
        PbOp::Append(a) => {
            out.set_item("fragments", frags(&a.fragments))?;
            "append"
        }
        PbOp::Overwrite(o) => {
            out.set_item("fragments", frags(&o.fragments))?;
            out.set_item("new_schema", schema(&o.schema, &o.schema_metadata)?)?;
            if !o.initial_bases.is_empty() {
                out.set_item("initial_bases", crate::bases::to_args(&o.initial_bases))?;
            }
            "overwrite"
        }
        PbOp::Delete(d) => {
            out.set_item("updated_fragments", frags(&d.updated_fragments))?;
            out.set_item("deleted_fragment_ids", d.deleted_fragment_ids.clone())?;
            out.set_item("predicate", d.predicate.clone())?;
            "delete"
        }
        PbOp::Merge(m) => {
            out.set_item("fragments", frags(&m.fragments))?;
            out.set_item("schema", schema(&m.schema, &m.schema_metadata)?)?;
            "merge"
        }
        PbOp::Project(p) => {
            out.set_item("schema", schema(&p.schema, &HashMap::new())?)?;
            "project"
        }
        PbOp::Restore(r) => {
            out.set_item("version", r.version)?;
            "restore"
        }
        PbOp::ReserveFragments(r) => {
            out.set_item("num_fragments", r.num_fragments)?;
            "reserve_fragments"
        }
        PbOp::Update(u) => {
            out.set_item("removed_fragment_ids", u.removed_fragment_ids.clone())?;
            out.set_item("updated_fragments", frags(&u.updated_fragments))?;
            out.set_item("new_fragments", frags(&u.new_fragments))?;
            out.set_item("fields_modified", u.fields_modified.clone())?;
            out.set_item(
                "fields_for_preserving_frag_bitmap",
                u.fields_for_preserving_frag_bitmap.clone(),
            )?;
            let mode = if u.update_mode == 1 {
                "rewrite_columns"
            } else {
                "rewrite_rows"
            };
            out.set_item("update_mode", mode)?;
            "update"
        }
        PbOp::Rewrite(r) => {
            let mut groups: Vec<_> = r
                .groups
                .iter()
                .map(|g| (frags(&g.old_fragments), frags(&g.new_fragments)))
                .collect();
            if !r.old_fragments.is_empty() || !r.new_fragments.is_empty() {
                groups.push((frags(&r.old_fragments), frags(&r.new_fragments)));
            }
            out.set_item("groups", groups)?;
            "rewrite"
        }
        PbOp::CreateIndex(c) => {
            let names = |v: &[lance_core::proto::table::IndexMetadata]| -> Vec<String> {
                v.iter().map(|i| i.name.clone()).collect()
            };
            out.set_item("new_indices", names(&c.new_indices))?;
            out.set_item("removed_indices", names(&c.removed_indices))?;
            "create_index"
        }
        PbOp::UpdateConfig(u) => {
            out.set_item("config_updates", map(&u.config_updates))?;
            out.set_item("table_metadata_updates", map(&u.table_metadata_updates))?;
            out.set_item("schema_metadata_updates", map(&u.schema_metadata_updates))?;
            let fields: HashMap<i32, _> = u
                .field_metadata_updates
                .iter()
                .map(|(id, m)| (*id, map(&Some(m.clone()))))
                .collect();
            out.set_item("field_metadata_updates", fields)?;
            "update_config"
        }
        PbOp::DataReplacement(d) => {
            let groups: Vec<(u64, Option<String>)> = d
                .replacements
                .iter()
                .map(|g| (g.fragment_id, g.new_file.as_ref().map(|f| f.path.clone())))
                .collect();
            out.set_item("replacements", groups)?;
            "data_replacement"
        }
        PbOp::UpdateMemWalState(_) => "update_mem_wal_state",
        PbOp::Clone(_) => "clone",
        PbOp::UpdateBases(u) => {
            out.set_item("new_bases", crate::bases::to_args(&u.new_bases))?;
            "update_bases"
        }
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

/// The files the versions of `ds`'s line from `first` on reference, manifests included
/// (`lance_core.table.tracked_files`): how many versions, and a stream of one batch each.
#[pyfunction]
pub fn _tracked_files(
    py: Python<'_>,
    ds: &PyDataset,
    first: u64,
) -> PyResult<(usize, PyBatchIterator)> {
    guard(|| {
        let storage = ds.inner.storage().clone();
        let walk = block_on(
            py,
            lance_core::table::tracked_files::tracked_files(storage, first),
        )
        .py()?;
        let schema = lance_core::table::tracked_files::tracked_schema();
        Ok((walk.versions, PyBatchIterator::new(schema, walk.batches)))
    })
}
