//! `update`: rows matching a predicate get new values from SQL expressions. As pylance
//! does it, the changed rows are written whole into new fragments and deleted where they
//! were (an `Update` transaction); with stable row ids they keep their ids.
use std::sync::{Arc, Mutex};

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{Array, ArrayRef, RecordBatch, StructArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use futures::StreamExt;

use super::rows::{
    add_address, attach_moved_rows, commit_row_changes, commit_update, delete_rows, write_rows,
    RowsByFragment,
};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::expr::{bind, evaluate, parse_expression, Expr};
use crate::proto::table::DataFragment;
use crate::scan::{ScanOptions, ROW_ADDRESS, ROW_ID};
use crate::table::schema::LanceField;
use crate::table::transaction::Staged;

/// One column's new value: the path of the column (nested fields with dots) and the
/// expression giving it.
#[derive(Clone, Debug)]
struct Assignment {
    path: Vec<String>,
    expr: Expr,
}

/// Resolve `path` (dot-separated) to a field of the dataset, through structs only.
fn field_at<'a>(ds: &'a Dataset, path: &str) -> Result<(&'a LanceField, Vec<String>)> {
    let parts: Vec<String> = path.split('.').map(str::to_string).collect();
    let missing = || {
        Error::invalid(format!(
            "{}: cannot update column '{path}': the dataset has no such column",
            ds.uri()
        ))
    };
    let mut field = ds.schema.field(&parts[0]).ok_or_else(missing)?;
    for part in &parts[1..] {
        if field.logical_type != "struct" {
            return Err(missing());
        }
        field = field
            .children
            .iter()
            .find(|c| &c.name == part)
            .ok_or_else(missing)?;
    }
    Ok((field, parts))
}

/// `array` (the values of the field at `path` below a batch column) with the field at the
/// rest of `path` replaced by `value`; structs keep their validity.
fn replace_in(array: &ArrayRef, path: &[String], value: ArrayRef) -> Result<ArrayRef> {
    let Some((name, rest)) = path.split_first() else {
        return Ok(value);
    };
    let s = array
        .as_any()
        .downcast_ref::<StructArray>()
        .ok_or_else(|| Error::invalid(format!("{name}: not a field of a struct")))?;
    let (fields, mut columns, nulls) = s.clone().into_parts();
    let i = fields
        .iter()
        .position(|f| f.name() == name)
        .ok_or_else(|| Error::invalid(format!("no field {name}")))?;
    columns[i] = replace_in(&columns[i], rest, value)?;
    Ok(Arc::new(StructArray::try_new(fields, columns, nulls)?))
}

/// What the batches of a changing scan yield besides the new rows.
#[derive(Default)]
struct Seen {
    rows: RowsByFragment,
    /// The rows' addresses and (stable tables) ids, in the order read.
    addresses: Vec<u64>,
    row_ids: Vec<u64>,
    count: u64,
}

/// Apply `assignments` to `batch` (dataset columns, then `_rowid` when stable, then
/// `_rowaddr`); returns the rows with their new values, in the dataset's schema.
fn apply(
    batch: RecordBatch,
    assignments: &[Assignment],
    target: &SchemaRef,
    seen: &Mutex<Seen>,
) -> Result<RecordBatch> {
    let schema = batch.schema();
    {
        let mut seen = seen.lock().unwrap();
        let addrs = batch
            .column_by_name(ROW_ADDRESS)
            .expect("scanned with row addresses")
            .as_primitive::<UInt64Type>();
        for &a in addrs.values() {
            add_address(&mut seen.rows, a);
        }
        if let Some(ids) = batch.column_by_name(ROW_ID) {
            seen.addresses.extend_from_slice(addrs.values());
            let ids = ids.as_primitive::<UInt64Type>().values().to_vec();
            seen.row_ids.extend(ids);
        }
        seen.count += batch.num_rows() as u64;
    }
    let mut columns: Vec<ArrayRef> = target
        .fields()
        .iter()
        .map(|f| batch.column_by_name(f.name()).cloned().expect("scanned"))
        .collect();
    // Every expression sees the old values, whatever else is assigned.
    let values = assignments
        .iter()
        .map(|a| {
            let bound = bind(&a.expr, &schema)?;
            evaluate(&bound, &batch)
        })
        .collect::<Result<Vec<_>>>()?;
    for (a, value) in assignments.iter().zip(values) {
        let top = target.index_of(&a.path[0]).expect("resolved");
        let want = field_type(target.field(top), &a.path[1..]);
        let value = stored_as(value, want, &a.path.join("."))?;
        columns[top] = replace_in(&columns[top], &a.path[1..], value)?;
    }
    Ok(RecordBatch::try_new(target.clone(), columns)?)
}

/// New values of `column` as its field `want` stores them: converted to its type (a value
/// that does not fit is an error), and no NULL where it takes none.
fn stored_as(value: ArrayRef, want: &Field, column: &str) -> Result<ArrayRef> {
    let (want_type, nullable) = (want.data_type(), want.is_nullable());
    let value = if value.data_type() == want_type {
        value
    } else {
        let opts = arrow_cast::CastOptions {
            safe: false,
            ..Default::default()
        };
        arrow_cast::cast_with_options(&value, want_type, &opts).map_err(|e| {
            Error::invalid(format!(
                "column {column}: the new values ({}) cannot all be stored as {want_type}: {e}",
                value.data_type()
            ))
        })?
    };
    if !nullable && value.null_count() > 0 {
        return Err(Error::invalid(format!(
            "column {column} is not nullable, but its new values hold nulls"
        )));
    }
    Ok(value)
}

/// The Arrow field at `path` below `field` (struct children by name).
fn field_type<'a>(field: &'a Field, path: &[String]) -> &'a Field {
    match (path.split_first(), field.data_type()) {
        (None, _) => field,
        (Some((name, rest)), DataType::Struct(children)) => {
            let child = children
                .iter()
                .find(|c| c.name() == name)
                .expect("resolved");
            field_type(child, rest)
        }
        _ => field,
    }
}

/// The assignments of `updates` (column path, SQL value expression), resolved on `ds`.
fn resolve(ds: &Dataset, updates: &[(String, String)]) -> Result<Vec<Assignment>> {
    if updates.is_empty() {
        return Err(Error::invalid(format!(
            "{}: no columns to update",
            ds.uri()
        )));
    }
    updates
        .iter()
        .map(|(path, sql)| {
            let (_, parts) = field_at(ds, path)?;
            let expr = parse_expression(sql)?;
            // A constant that the column cannot store is an error before any row is read
            // (as in pylance), even when no row matches.
            let bound = bind(&expr, &ds.arrow_schema)?;
            if let Some(value) = bound.constant() {
                let top = ds.arrow_schema.field_with_name(&parts[0])?;
                stored_as(value.clone(), field_type(top, &parts[1..]), path)?;
            }
            Ok(Assignment { path: parts, expr })
        })
        .collect()
}

/// The ids of the fields `paths` (the columns an update sets), for the transaction.
pub fn updated_field_ids(ds: &Dataset, paths: &[String]) -> Result<Vec<u32>> {
    let mut ids = paths
        .iter()
        .map(|p| Ok(field_at(ds, p)?.0.id as u32))
        .collect::<Result<Vec<u32>>>()?;
    ids.dedup();
    Ok(ids)
}

/// Set the columns of `updates` (column path, SQL value expression) on the rows matching
/// `predicate` (all rows when None). A commit that loses to one touching the same
/// fragments is re-run against the new version, up to `retries` times. Returns the
/// dataset at the new version and the number of rows updated.
pub async fn update(
    ds: &Dataset,
    updates: &[(String, String)],
    predicate: Option<&Expr>,
    retries: u32,
) -> Result<(Dataset, u64)> {
    resolve(ds, updates)?;
    super::with_conflict_retries(ds, retries, |ds| async move {
        let assignments = resolve(&ds, updates)?;
        let fields_changed = updated_field_ids(&ds, &paths_of(updates))?;
        let staged = Staged::new(ds.storage());
        let written = async {
            let done = rewrite(&ds, &assignments, predicate, None, "", &staged).await?;
            let removal = delete_rows(&ds, &done.rows, &staged).await?;
            Ok((done, removal))
        };
        let (done, removal) = staged.guard(written).await?;
        let new = commit_update(&ds, removal, done.fragments, fields_changed, None, staged).await?;
        Ok((new, done.count))
    })
    .await
}

fn paths_of(updates: &[(String, String)]) -> Vec<String> {
    updates.iter().map(|(p, _)| p.clone()).collect()
}

/// Rows rewritten with new values, not committed: the new fragments, the rows of the read
/// version they replace, and how many.
pub struct Rewritten {
    pub fragments: Vec<DataFragment>,
    pub rows: RowsByFragment,
    pub count: u64,
}

/// One task's share of a distributed update: the rows of `fragment_ids` that match
/// `predicate` get their new values in new fragments (data file names starting with
/// `file_prefix`); nothing is committed (see `commit_update_parts`).
pub async fn update_fragments(
    ds: &Dataset,
    updates: &[(String, String)],
    predicate: Option<&Expr>,
    fragment_ids: Vec<u64>,
    file_prefix: &str,
) -> Result<Rewritten> {
    let assignments = resolve(ds, updates)?;
    // A task's files are its job's once written (the job commits or aborts them).
    let staged = Staged::new(ds.storage());
    let rewritten = rewrite(
        ds,
        &assignments,
        predicate,
        Some(fragment_ids),
        file_prefix,
        &staged,
    );
    let done = staged.guard(rewritten).await?;
    staged.keep();
    Ok(done)
}

/// Commit the pieces of a distributed update of `columns` on `ds` (the version they
/// read): the `fragments` their tasks wrote and the `addresses` of the rows they replace,
/// as one `Update`. Every file written for it is removed when it does not commit.
pub async fn commit_update_parts(
    ds: &Dataset,
    fragments: Vec<DataFragment>,
    addresses: &[u64],
    columns: &[String],
) -> Result<Dataset> {
    let staged = Staged::new(ds.storage());
    staged.add_fragments(&fragments);
    let fields = staged
        .guard(async { updated_field_ids(ds, columns) })
        .await?;
    commit_row_changes(ds, fragments, addresses, fields, None, staged).await
}

async fn rewrite(
    ds: &Dataset,
    assignments: &[Assignment],
    filter: Option<&Expr>,
    fragment_ids: Option<Vec<u64>>,
    file_prefix: &str,
    staged: &Staged,
) -> Result<Rewritten> {
    let stable = ds.has_stable_row_ids();
    let query = crate::query::Query {
        scan: ScanOptions {
            filter: filter.cloned(),
            with_row_address: true,
            with_row_id: stable,
            fragment_ids,
            batch_size: 16 * 1024,
            ..Default::default()
        },
        blobs: crate::blob::BlobRead::Values,
        ..Default::default()
    };
    let s = crate::query::run(Arc::new(ds.clone()), query)?;
    let target: SchemaRef = Arc::new(Schema::new(ds.arrow_schema.fields().clone()));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (assignments_owned, seen_in) = (assignments.to_vec(), seen.clone());
    let changed = s
        .batches
        .map(move |b| b.and_then(|b| apply(b, &assignments_owned, &target, &seen_in)));
    let mut fragments = write_rows(ds, Box::pin(changed), file_prefix, staged)
        .await
        .map_err(|e| {
            // Name the predicate when it is what failed.
            match (e, filter) {
                (Error::InvalidInput(m), Some(p)) if !m.contains(ds.uri()) => {
                    Error::invalid(format!("{}: update where '{p}': {m}", ds.uri()))
                }
                (Error::InvalidInput(m), None) if !m.contains(ds.uri()) => {
                    Error::invalid(format!("{}: update: {m}", ds.uri()))
                }
                (e, _) => e,
            }
        })?;
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    if stable {
        attach_moved_rows(ds, &mut fragments, &seen.addresses, &seen.row_ids, true).await?;
    }
    Ok(Rewritten {
        fragments,
        rows: seen.rows,
        count: seen.count,
    })
}
