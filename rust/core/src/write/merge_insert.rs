//! `merge_insert` (upsert): source rows are matched to the table's rows on key columns.
//! Matched rows are updated (written anew, deleted where they were) or deleted, source
//! rows without a match are inserted, table rows without a match may be deleted; one
//! `Update` transaction, as pylance writes it.
//!
//! The source is held in memory and its keys hashed (arrow's row format, so any key types
//! and several key columns hash alike); the table is scanned for its key columns only, and
//! whole table rows are taken only where a condition or a partial source needs them.
use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, StructArray, UInt32Array};
use arrow_row::{Row, RowConverter, Rows, SortField};
use arrow_schema::{Field, Schema, SchemaRef};
use futures::TryStreamExt;
use std::hash::BuildHasher;

use super::rows::{
    add_address, attach_moved_rows, commit_row_changes, commit_update, delete_rows, write_rows,
    RowsByFragment,
};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::expr::{bind_filter, evaluate_filter, parse, Expr};
use crate::proto::table::DataFragment;
use crate::scan::take::take;
use crate::scan::{scan, Projection, ScanOptions, ROW_ADDRESS, ROW_ID};
use crate::table::transaction::{InsertedKeys, Staged};

/// What happens to a table row whose key a source row has.
#[derive(Clone, Debug, PartialEq)]
pub enum WhenMatched {
    /// Keep the table row (and do not insert the source row).
    DoNothing,
    /// Replace the table row with the source row, where `condition` (SQL over `source.x`
    /// and `target.x`) holds, or always.
    UpdateAll {
        condition: Option<String>,
    },
    Delete,
    /// A match is an error.
    Fail,
}

/// The clauses of a merge, as pylance's builder sets them.
#[derive(Clone, Debug)]
pub struct MergeInsert {
    pub on: Vec<String>,
    pub when_matched: WhenMatched,
    pub insert_not_matched: bool,
    /// Delete table rows no source row matches: None keeps them; Some(None) deletes all of
    /// them; Some(Some(sql)) those where `sql` holds.
    pub delete_not_matched_by_source: Option<Option<String>>,
    pub conflict_retries: u32,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MergeStats {
    pub inserted: u64,
    pub updated: u64,
    pub deleted: u64,
}

/// Run the merge of `source` (batches of one schema) into `ds`. A commit that loses to
/// one touching the same fragments re-runs the match against the new version, up to
/// `conflict_retries` times. Returns the dataset at the new version and the counts.
pub async fn merge_insert(
    ds: &Dataset,
    source: Vec<RecordBatch>,
    source_schema: SchemaRef,
    params: &MergeInsert,
) -> Result<(Dataset, MergeStats)> {
    check_clauses(ds, params)?;
    let source = arrow_select::concat::concat_batches(&source_schema, &source)?;
    super::blob_v2::check_new_references(ds, &source).map_err(|e| e.in_file(ds.uri()))?;
    super::with_conflict_retries(ds, params.conflict_retries, |ds| {
        let source = &source;
        async move { merge_once(&ds, source, params).await }
    })
    .await
}

/// A merge must change something and have a key.
fn check_clauses(ds: &Dataset, params: &MergeInsert) -> Result<()> {
    let changes_nothing = params.when_matched == WhenMatched::DoNothing
        && !params.insert_not_matched
        && params.delete_not_matched_by_source.is_none();
    if changes_nothing {
        return Err(Error::invalid(format!(
            "{}: merge_insert has no clause that changes the table (when_matched_update_all, \
             when_matched_delete, when_not_matched_insert_all, when_not_matched_by_source_delete)",
            ds.uri()
        )));
    }
    if params.on.is_empty() {
        return Err(Error::invalid(format!(
            "{}: merge_insert needs at least one key column",
            ds.uri()
        )));
    }
    Ok(())
}

/// The source, checked against the table and cast to its types.
struct Source {
    batch: RecordBatch,
    /// The source's keys in row format.
    keys: Rows,
    /// The first source row of each (non-null) key, by the key's hash; keys whose hash
    /// another key already has (rare) are in `collided`.
    by_hash: HashMap<u64, u32, foldhash::fast::FixedState>,
    collided: HashMap<u64, Vec<u32>>,
    /// Source rows whose key another source row also has.
    duplicate: Vec<bool>,
    converter: RowConverter,
}

/// `source` with the table's types, checked: every column is a table column and every
/// key column is there.
fn conform_source(ds: &Dataset, source: &RecordBatch, on: &[String]) -> Result<RecordBatch> {
    let uri = ds.uri();
    let target = &ds.arrow_schema;
    let mut fields = Vec::with_capacity(source.num_columns());
    let mut columns = Vec::with_capacity(source.num_columns());
    for (f, c) in source.schema().fields().iter().zip(source.columns()) {
        let t = target.field_with_name(f.name()).map_err(|_| {
            Error::invalid(format!(
                "{uri}: merge_insert: the source has column '{}', which the table does not",
                f.name()
            ))
        })?;
        let c = if c.data_type() == t.data_type() {
            c.clone()
        } else if super::types_match(t.data_type(), c.data_type()) {
            arrow_array::make_array(super::retype(c.to_data(), t.data_type())?)
        } else {
            return Err(Error::invalid(format!(
                "{uri}: merge_insert: column '{}' is {} in the table but {} in the source",
                f.name(),
                t.data_type(),
                c.data_type()
            )));
        };
        fields.push(Arc::new(Field::new(f.name(), t.data_type().clone(), true)));
        columns.push(c);
    }
    let opts = arrow_array::RecordBatchOptions::new().with_row_count(Some(source.num_rows()));
    let batch = RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), columns, &opts)?;
    for k in on {
        if target.field_with_name(k).is_err() {
            return Err(Error::invalid(format!(
                "{uri}: merge_insert key column '{k}' does not exist in the table"
            )));
        }
        if batch.column_by_name(k).is_none() {
            return Err(Error::invalid(format!(
                "{uri}: merge_insert: the source has no key column '{k}'"
            )));
        }
    }
    Ok(batch)
}

fn prepare_source(ds: &Dataset, source: &RecordBatch, on: &[String]) -> Result<Source> {
    let batch = conform_source(ds, source, on)?;
    let key_columns: Vec<ArrayRef> = on
        .iter()
        .map(|k| batch.column_by_name(k).cloned().expect("checked"))
        .collect();
    let converter = RowConverter::new(
        key_columns
            .iter()
            .map(|c| SortField::new(c.data_type().clone()))
            .collect(),
    )?;
    let keys = key_rows(&converter, &key_columns)?;
    let null_key = any_null(&key_columns, batch.num_rows());
    let mut by_hash: HashMap<u64, u32, _> =
        HashMap::with_capacity_and_hasher(batch.num_rows(), foldhash::fast::FixedState::default());
    let mut collided: HashMap<u64, Vec<u32>> = HashMap::new();
    let mut duplicate = vec![false; batch.num_rows()];
    for (i, &null) in null_key.iter().enumerate() {
        if null {
            continue; // a null key matches nothing
        }
        let row = keys.row(i);
        let h = hash_key(row);
        let first = match by_hash.entry(h) {
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(i as u32);
                continue;
            }
            std::collections::hash_map::Entry::Occupied(e) => *e.get(),
        };
        let same = std::iter::once(first)
            .chain(collided.get(&h).into_iter().flatten().copied())
            .find(|&j| keys.row(j as usize) == row);
        match same {
            Some(j) => {
                duplicate[i] = true;
                duplicate[j as usize] = true;
            }
            None => collided.entry(h).or_default().push(i as u32),
        }
    }
    Ok(Source {
        batch,
        keys,
        by_hash,
        collided,
        duplicate,
        converter,
    })
}

/// Keys in row format, where equal keys have equal bytes: -0.0 is made 0.0 and NaNs one
/// NaN first, since those are equal keys (as in every comparison).
fn key_rows(converter: &RowConverter, columns: &[ArrayRef]) -> Result<Rows> {
    let columns: Vec<ArrayRef> = columns.iter().map(crate::expr::normalize_floats).collect();
    Ok(converter.convert_columns(&columns)?)
}

/// The hash of a key in row format (equal keys have equal bytes).
fn hash_key(row: Row<'_>) -> u64 {
    foldhash::fast::FixedState::with_seed(0x5eed).hash_one(row.as_ref())
}

impl Source {
    /// The first source row whose key is `row`.
    fn lookup(&self, row: Row<'_>) -> Option<u32> {
        let h = hash_key(row);
        let first = *self.by_hash.get(&h)?;
        std::iter::once(first)
            .chain(self.collided.get(&h).into_iter().flatten().copied())
            .find(|&j| self.keys.row(j as usize) == row)
    }
}

/// Whether any of `columns` is null, per row.
fn any_null(columns: &[ArrayRef], rows: usize) -> Vec<bool> {
    let mut out = vec![false; rows];
    for c in columns {
        if let Some(n) = c.logical_nulls() {
            for (o, valid) in out.iter_mut().zip(n.iter()) {
                *o |= !valid;
            }
        }
    }
    out
}

/// The matches of one pass over the table.
#[derive(Default)]
struct Matches {
    /// (table row address, its stable row id or 0, source row).
    pairs: Vec<(u64, u64, u32)>,
    /// Table rows no source row matched, to delete.
    unmatched_to_delete: Vec<u64>,
    /// Source rows that matched a table row.
    matched_source: Vec<bool>,
}

async fn find_matches(
    ds: &Arc<Dataset>,
    src: &Source,
    params: &MergeInsert,
    by_source: Option<&Expr>,
) -> Result<Matches> {
    let stable = ds.has_stable_row_ids();
    let mut columns = params.on.clone();
    if let Some(e) = by_source {
        for c in e.columns() {
            let top = c.split('.').next().unwrap_or(&c).to_string();
            if !columns.contains(&top) {
                columns.push(top);
            }
        }
    }
    let options = ScanOptions {
        columns: Some(columns),
        with_row_address: true,
        with_row_id: stable,
        batch_size: 64 * 1024,
        ..Default::default()
    };
    let s = scan(ds.clone(), options)?;
    let mut batches = s.batches;
    let mut m = Matches {
        matched_source: vec![false; src.batch.num_rows()],
        ..Default::default()
    };
    let want_unmatched = params.delete_not_matched_by_source.is_some();
    let mut bound_by_source = None;
    while let Some(b) = batches.try_next().await? {
        let keys: Vec<ArrayRef> = params
            .on
            .iter()
            .map(|k| b.column_by_name(k).cloned().expect("scanned"))
            .collect();
        let rows = key_rows(&src.converter, &keys)?;
        let null_key = any_null(&keys, b.num_rows());
        let addrs = b
            .column_by_name(ROW_ADDRESS)
            .expect("scanned")
            .as_primitive::<UInt64Type>()
            .clone();
        let ids = b
            .column_by_name(ROW_ID)
            .map(|c| c.as_primitive::<UInt64Type>().clone());
        let mut unmatched = vec![];
        // Look the batch's keys up on the CPU pool, in slices.
        let hits: Vec<Option<u32>> = crate::threads::install(|| {
            use rayon::prelude::*;
            (0..b.num_rows())
                .into_par_iter()
                .with_min_len(4096)
                .map(|i| {
                    if null_key[i] {
                        None
                    } else {
                        src.lookup(rows.row(i))
                    }
                })
                .collect()
        });
        for (i, hit) in hits.into_iter().enumerate() {
            match hit {
                Some(j) => {
                    if src.duplicate[j as usize] && params.when_matched != WhenMatched::DoNothing {
                        return Err(matched_twice(ds.uri(), &src.batch, j as usize, &params.on));
                    }
                    m.matched_source[j as usize] = true;
                    let id = ids.as_ref().map_or(0, |ids| ids.value(i));
                    m.pairs.push((addrs.value(i), id, j));
                }
                None if want_unmatched => unmatched.push(i as u32),
                None => {}
            }
        }
        if !unmatched.is_empty() {
            let keep = match by_source {
                None => None,
                Some(e) => {
                    let bound = match &bound_by_source {
                        Some(b) => b,
                        None => bound_by_source.insert(bind_filter(e, &b.schema())?),
                    };
                    Some(evaluate_filter(bound, &b)?)
                }
            };
            for i in unmatched {
                if keep
                    .as_ref()
                    .is_none_or(|k| k.is_valid(i as usize) && k.value(i as usize))
                {
                    m.unmatched_to_delete.push(addrs.value(i as usize));
                }
            }
        }
    }
    Ok(m)
}

/// The error for a table row that several source rows match (the key of source row `row`
/// of `batch`), as pylance refuses it.
fn matched_twice(uri: &str, batch: &RecordBatch, row: usize, on: &[String]) -> Error {
    Error::invalid(format!(
        "{uri}: merge_insert: several source rows have the key of one table row ({}); each \
         table row may match at most one source row",
        describe_key(batch, row, on)
    ))
}

/// The key of row `i` of `batch`, for errors ("id = 1").
fn describe_key(batch: &RecordBatch, i: usize, on: &[String]) -> String {
    on.iter()
        .map(|k| {
            let c = batch.column_by_name(k).expect("checked");
            let v = arrow_cast::display::array_value_to_string(c, i).unwrap_or_default();
            format!("{k} = {v}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Rows `indices` of `batch`.
fn take_rows(batch: &RecordBatch, indices: &[u32]) -> Result<RecordBatch> {
    let idx = UInt32Array::from(indices.to_vec());
    Ok(arrow_select::take::take_record_batch(batch, &idx)?)
}

/// Source rows shaped as table rows: the table's columns, `fill` supplying those the
/// source lacks (the matched table rows, or nulls for inserts).
fn as_table_rows(
    ds: &Dataset,
    source: &RecordBatch,
    fill: Option<&RecordBatch>,
) -> Result<RecordBatch> {
    let target = Arc::new(Schema::new(ds.arrow_schema.fields().clone()));
    let columns = target
        .fields()
        .iter()
        .map(|f| match source.column_by_name(f.name()) {
            Some(c) => Ok(c.clone()),
            None => match fill.and_then(|t| t.column_by_name(f.name())) {
                Some(c) => Ok(c.clone()),
                None if f.is_nullable() => Ok(arrow_array::new_null_array(
                    f.data_type(),
                    source.num_rows(),
                )),
                None => Err(Error::invalid(format!(
                    "{}: merge_insert: the source has no column '{}', which is not nullable, \
                     so rows cannot be inserted without it",
                    ds.uri(),
                    f.name()
                ))),
            },
        })
        .collect::<Result<Vec<_>>>()?;
    let opts = arrow_array::RecordBatchOptions::new().with_row_count(Some(source.num_rows()));
    Ok(RecordBatch::try_new_with_options(target, columns, &opts)?)
}

/// `batch` as a stream of slices of 64K rows, so that the writer encodes while it is fed.
fn in_chunks(
    batch: RecordBatch,
) -> std::pin::Pin<Box<dyn futures::Stream<Item = Result<RecordBatch>> + Send>> {
    const CHUNK: usize = 64 * 1024;
    let n = batch.num_rows();
    let slices: Vec<Result<RecordBatch>> = (0..n)
        .step_by(CHUNK)
        .map(|o| Ok(batch.slice(o, CHUNK.min(n - o))))
        .collect();
    Box::pin(futures::stream::iter(slices))
}

/// Which matched pairs satisfy `condition`, evaluated over `target.*` and `source.*`.
fn condition_holds(
    condition: &Expr,
    table_rows: &RecordBatch,
    source_rows: &RecordBatch,
) -> Result<BooleanArray> {
    let as_struct = |b: &RecordBatch| -> ArrayRef { Arc::new(StructArray::from(b.clone())) };
    let (t, s) = (as_struct(table_rows), as_struct(source_rows));
    let schema = Arc::new(Schema::new(vec![
        Field::new("target", t.data_type().clone(), false),
        Field::new("source", s.data_type().clone(), false),
    ]));
    let both = RecordBatch::try_new(schema.clone(), vec![t, s])?;
    let bound = bind_filter(condition, &schema)?;
    evaluate_filter(&bound, &both)
}

/// The clauses' expressions, parsed.
fn by_source_expr(params: &MergeInsert) -> Result<Option<Expr>> {
    match &params.delete_not_matched_by_source {
        Some(Some(sql)) => Ok(Some(parse(sql)?)),
        _ => Ok(None),
    }
}

/// What a merge changes, decided but not yet written.
struct Planned {
    /// Matched rows in their new form, with their (address, stable row id or 0).
    updated: Option<(RecordBatch, Vec<(u64, u64)>)>,
    inserted: Option<RecordBatch>,
    /// Addresses of table rows to delete (updated ones included).
    to_delete: Vec<u64>,
    stats: MergeStats,
}

/// Apply the clauses of `params` to the matches `m` of `source` (conformed source rows).
async fn plan_changes(
    ds: &Dataset,
    source: &RecordBatch,
    m: Matches,
    params: &MergeInsert,
) -> Result<Planned> {
    let condition = match &params.when_matched {
        WhenMatched::UpdateAll {
            condition: Some(sql),
        } => Some(parse(sql)?),
        _ => None,
    };
    let mut stats = MergeStats {
        deleted: m.unmatched_to_delete.len() as u64,
        ..Default::default()
    };
    let mut to_delete = m.unmatched_to_delete;

    // Matched rows.
    let mut updated = None;
    match &params.when_matched {
        WhenMatched::DoNothing => {}
        WhenMatched::Fail if !m.pairs.is_empty() => {
            let j = m.pairs[0].2 as usize;
            return Err(Error::invalid(format!(
                "{}: merge_insert: a source row matches a table row ({}) and when_matched_fail is set",
                ds.uri(),
                describe_key(source, j, &params.on)
            )));
        }
        WhenMatched::Fail => {}
        WhenMatched::Delete => {
            to_delete.extend(m.pairs.iter().map(|p| p.0));
            stats.deleted += m.pairs.len() as u64;
        }
        WhenMatched::UpdateAll { .. } => {
            let mut pairs = m.pairs;
            let partial = source.num_columns() < ds.arrow_schema.fields().len();
            let mut table_rows = None;
            if partial || condition.is_some() {
                // The whole table rows of the matches, in the order of `pairs`.
                let addrs: Vec<u64> = pairs.iter().map(|p| p.0).collect();
                let rows = take(Arc::new(ds.clone()), &addrs, &Projection::default()).await?;
                let srcs: Vec<u32> = pairs.iter().map(|p| p.2).collect();
                let source_rows = take_rows(source, &srcs)?;
                let rows = match &condition {
                    Some(c) => {
                        let holds = condition_holds(c, &rows, &source_rows)?;
                        let kept: Vec<bool> = (0..holds.len())
                            .map(|i| holds.is_valid(i) && holds.value(i))
                            .collect();
                        let mask = BooleanArray::from(kept.clone());
                        pairs = pairs
                            .into_iter()
                            .zip(kept)
                            .filter_map(|(p, k)| k.then_some(p))
                            .collect();
                        arrow_select::filter::filter_record_batch(&rows, &mask)?
                    }
                    None => rows,
                };
                table_rows = Some(rows);
            }
            let srcs: Vec<u32> = pairs.iter().map(|p| p.2).collect();
            let new_rows = as_table_rows(ds, &take_rows(source, &srcs)?, table_rows.as_ref())?;
            to_delete.extend(pairs.iter().map(|p| p.0));
            stats.updated = pairs.len() as u64;
            updated = Some((new_rows, pairs.iter().map(|p| (p.0, p.1)).collect()));
        }
    }

    // Source rows without a match.
    let mut inserted = None;
    if params.insert_not_matched {
        let rows: Vec<u32> = (0..source.num_rows() as u32)
            .filter(|&i| !m.matched_source[i as usize])
            .collect();
        stats.inserted = rows.len() as u64;
        if !rows.is_empty() {
            inserted = Some(as_table_rows(ds, &take_rows(source, &rows)?, None)?);
        }
    }
    Ok(Planned {
        updated,
        inserted,
        to_delete,
        stats,
    })
}

/// Write the updated and the inserted rows of `planned` (at once) as new fragments, staged
/// in `staged`; updated rows keep their stable row ids, inserted ones get theirs when
/// committed.
async fn write_planned(
    ds: &Dataset,
    updated: Option<(RecordBatch, Vec<(u64, u64)>)>,
    inserted: Option<RecordBatch>,
    file_prefix: &str,
    staged: &Staged,
) -> Result<Vec<DataFragment>> {
    let stable = ds.has_stable_row_ids();
    let write_updated = async {
        match updated.filter(|(r, _)| r.num_rows() > 0) {
            None => Ok(vec![]),
            Some((rows, moved)) => {
                let mut frags = write_rows(ds, in_chunks(rows), file_prefix, staged).await?;
                if stable {
                    let (addresses, ids): (Vec<u64>, Vec<u64>) = moved.into_iter().unzip();
                    attach_moved_rows(ds, &mut frags, &addresses, &ids, true).await?;
                }
                Ok(frags)
            }
        }
    };
    let write_inserted = async {
        match inserted {
            None => Ok(vec![]),
            Some(rows) => write_rows(ds, in_chunks(rows), file_prefix, staged).await,
        }
    };
    let (mut updated, inserted) = futures::try_join!(write_updated, write_inserted)?;
    updated.extend(inserted);
    Ok(updated)
}

/// Every field of the table: a merge may change any column.
fn all_fields(ds: &Dataset) -> Vec<u32> {
    ds.schema
        .field_ids()
        .into_iter()
        .map(|i| i as u32)
        .collect()
}

async fn merge_once(
    ds: &Dataset,
    source: &RecordBatch,
    params: &MergeInsert,
) -> Result<(Dataset, MergeStats)> {
    let m = stage_merge(ds, source, params).await?;
    let new = commit_update(ds, m.removal, m.fragments, all_fields(ds), m.keys, m.staged).await?;
    Ok((new, m.stats))
}

/// A merge's files, written and staged but not committed (dropped, they are removed).
struct StagedMerge {
    fragments: Vec<DataFragment>,
    removal: super::rows::Removal,
    keys: Option<InsertedKeys>,
    stats: MergeStats,
    staged: Staged,
}

/// Match `source` against `ds`, and write the updated and inserted rows and the deletion
/// files the merge needs.
async fn stage_merge(
    ds: &Dataset,
    source: &RecordBatch,
    params: &MergeInsert,
) -> Result<StagedMerge> {
    let src = prepare_source(ds, source, &params.on)?;
    let by_source = by_source_expr(params)?;
    let m = find_matches(&Arc::new(ds.clone()), &src, params, by_source.as_ref()).await?;
    let planned = plan_changes(ds, &src.batch, m, params).await?;
    let stats = planned.stats;
    let mut to_delete = RowsByFragment::new();
    for &a in &planned.to_delete {
        add_address(&mut to_delete, a);
    }
    let keys = inserted_keys(ds, params, planned.inserted.as_ref())?;
    // The new fragments and the deletion files are written at once.
    let staged = Staged::new(ds.storage());
    let written = async {
        futures::try_join!(
            write_planned(ds, planned.updated, planned.inserted, "", &staged),
            delete_rows(ds, &to_delete, &staged)
        )
    };
    let (fragments, removal) = staged.guard(written).await?;
    Ok(StagedMerge {
        fragments,
        removal,
        keys,
        stats,
        staged,
    })
}

/// What a merge did when run without committing (pylance's `analyze_plan` of a merge).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MergeAnalysis {
    pub stats: MergeStats,
    /// Data files written (updated and inserted rows).
    pub files_written: u64,
    /// Their bytes.
    pub bytes_written: u64,
    /// Fragments given a new deletion file.
    pub deletion_files_written: u64,
}

/// Run the merge of `source` into `ds` as `merge_insert` would, without committing: its
/// counts and what it wrote, then its files are removed.
pub async fn analyze_merge(
    ds: &Dataset,
    source: Vec<RecordBatch>,
    source_schema: SchemaRef,
    params: &MergeInsert,
) -> Result<MergeAnalysis> {
    check_clauses(ds, params)?;
    let source = arrow_select::concat::concat_batches(&source_schema, &source)?;
    let m = stage_merge(ds, &source, params).await?;
    let files = m.fragments.iter().flat_map(|f| &f.files);
    let analysis = MergeAnalysis {
        stats: m.stats,
        files_written: files.clone().count() as u64,
        bytes_written: files.map(|f| f.file_size_bytes).sum(),
        deletion_files_written: m.removal.updated.len() as u64,
    };
    m.staged.remove_all().await;
    Ok(analysis)
}

/// The keys of the rows a merge inserts (`inserted`, as table rows), which its transaction
/// records so that a concurrent merge inserting one of them runs again; None for a merge
/// that inserts nothing by its clauses.
fn inserted_keys(
    ds: &Dataset,
    params: &MergeInsert,
    inserted: Option<&RecordBatch>,
) -> Result<Option<InsertedKeys>> {
    if !params.insert_not_matched {
        return Ok(None);
    }
    let columns: Vec<ArrayRef> = match inserted {
        Some(rows) => params
            .on
            .iter()
            .filter_map(|key| rows.column_by_name(key).cloned())
            .collect(),
        None => vec![],
    };
    Ok(Some(InsertedKeys::of_rows(
        key_field_ids(ds, &params.on)?,
        &columns,
    )?))
}

/// The field ids of the key columns `on`, in that order.
pub fn key_field_ids(ds: &Dataset, on: &[String]) -> Result<Vec<i32>> {
    on.iter()
        .map(|key| {
            ds.schema.field(key).map(|f| f.id).ok_or_else(|| {
                Error::invalid(format!(
                    "{}: merge_insert key column '{key}' does not exist",
                    ds.uri()
                ))
            })
        })
        .collect()
}

/// What the tasks of a distributed merge wrote and found, for its driver to commit.
pub struct MergeParts {
    /// The new fragments (updated and inserted rows).
    pub fragments: Vec<DataFragment>,
    /// The read version's rows they replace or delete.
    pub removed: Vec<u64>,
    /// The table rows source rows matched, each task's own (a table row matched by
    /// source rows of two tasks appears twice).
    pub matched: Vec<u64>,
    /// The key columns.
    pub on: Vec<String>,
    /// Hashes of the keys inserted (see `InsertedKeys`), when the merge inserts.
    pub inserted_hashes: Option<Vec<u64>>,
}

/// Commit the pieces of a distributed merge on `ds` (the version they read) as one
/// `Update`, refusing a table row matched by source rows of two tasks as a local merge
/// does. Every file written for it is removed when it does not commit.
pub async fn commit_merge_parts(ds: &Dataset, parts: MergeParts) -> Result<Dataset> {
    let staged = Staged::new(ds.storage());
    staged.add_fragments(&parts.fragments);
    let checked = async {
        check_one_match_per_row(ds, &parts.matched, &parts.on).await?;
        match parts.inserted_hashes {
            Some(hashes) => Ok(Some(InsertedKeys {
                field_ids: key_field_ids(ds, &parts.on)?,
                hashes,
            })),
            None => Ok(None),
        }
    };
    let inserted_keys = staged.guard(checked).await?;
    let fields = ds
        .schema
        .field_ids()
        .into_iter()
        .map(|i| i as u32)
        .collect();
    commit_row_changes(
        ds,
        parts.fragments,
        &parts.removed,
        fields,
        inserted_keys,
        staged,
    )
    .await
}

/// Each table row may match one source row: the error names the key of the first row
/// of `matched` given twice.
async fn check_one_match_per_row(ds: &Dataset, matched: &[u64], on: &[String]) -> Result<()> {
    let mut sorted = matched.to_vec();
    sorted.sort_unstable();
    let Some(twice) = sorted.windows(2).find(|w| w[0] == w[1]).map(|w| w[0]) else {
        return Ok(());
    };
    let projection = Projection {
        columns: Some(on.to_vec()),
        ..Default::default()
    };
    let row = take(Arc::new(ds.clone()), &[twice], &projection).await?;
    Err(matched_twice(ds.uri(), &row, 0, on))
}

/// Names of the columns an outside engine adds to the source rows it joined to the
/// table (see `merge_joined`).
pub const JOINED_ADDRESS: &str = "__merge_rowaddr";
pub const JOINED_ROW_ID: &str = "__merge_rowid";
pub const JOINED_FROM_SOURCE: &str = "__merge_source";
pub const JOINED_BY_SOURCE: &str = "__merge_by_source";

/// What one task of a distributed merge wrote and found, not committed.
#[derive(Debug, Default)]
pub struct MergePart {
    pub fragments: Vec<DataFragment>,
    /// Addresses of the table rows to delete (the updated ones included).
    pub to_delete: Vec<u64>,
    /// Addresses of every matched table row (before any condition), so the driver can
    /// find a table row that source rows of several tasks match.
    pub matched: Vec<u64>,
    /// The keys of the rows this task inserted (None when the merge inserts nothing by
    /// its clauses), for the driver's transaction to record.
    pub inserted_keys: Option<InsertedKeys>,
    pub stats: MergeStats,
}

/// One task's share of a merge whose join an outside engine (Spark) did. Each row of
/// `joined` is a source row (`JOINED_FROM_SOURCE` true; the source's columns) with the
/// address (`JOINED_ADDRESS`, null when no table row has its key) and stable row id
/// (`JOINED_ROW_ID`) of the table row it matched, or, when unmatched table rows may be
/// deleted, a table row no source row matched (`JOINED_FROM_SOURCE` false or null) with
/// whether the by-source predicate holds for it (`JOINED_BY_SOURCE`). The
/// new rows are written (data file names starting with `file_prefix`); nothing is
/// deleted or committed (see `commit_merge_parts`).
pub async fn merge_joined(
    ds: &Dataset,
    joined: Vec<RecordBatch>,
    schema: SchemaRef,
    params: &MergeInsert,
    file_prefix: &str,
) -> Result<MergePart> {
    check_clauses(ds, params)?;
    let uri = ds.uri();
    let joined = arrow_select::concat::concat_batches(&schema, &joined)?;
    let column = |name: &str| {
        joined.column_by_name(name).cloned().ok_or_else(|| {
            Error::invalid(format!(
                "{uri}: merge_insert: the joined rows have no column {name}"
            ))
        })
    };
    let as_u64 = |c: ArrayRef| -> Result<arrow_array::UInt64Array> {
        let c = arrow_cast::cast(&c, &arrow_schema::DataType::UInt64)?;
        Ok(c.as_primitive::<UInt64Type>().clone())
    };
    let addrs = as_u64(column(JOINED_ADDRESS)?)?;
    let ids = match joined.column_by_name(JOINED_ROW_ID) {
        Some(c) => Some(as_u64(c.clone())?),
        None => None,
    };
    let from_source = column(JOINED_FROM_SOURCE)?;
    let from_source = from_source.as_boolean_opt().ok_or_else(|| {
        Error::invalid(format!(
            "{uri}: merge_insert: {JOINED_FROM_SOURCE} must be boolean"
        ))
    })?;
    let is_source = |i: usize| from_source.is_valid(i) && from_source.value(i);

    // The source rows, with the source's columns only.
    let source_rows: Vec<u32> = (0..joined.num_rows() as u32)
        .filter(|&i| is_source(i as usize))
        .collect();
    let source_columns: Vec<usize> = (0..joined.num_columns())
        .filter(|&i| !joined.schema().field(i).name().starts_with("__merge_"))
        .collect();
    let source = take_rows(&joined.project(&source_columns)?, &source_rows)?;
    let source = conform_source(ds, &source, &params.on)?;

    let mut m = Matches {
        matched_source: vec![false; source.num_rows()],
        ..Default::default()
    };
    for (j, &i) in source_rows.iter().enumerate() {
        let i = i as usize;
        if addrs.is_valid(i) {
            let id = ids.as_ref().map_or(0, |ids| ids.value(i));
            m.pairs.push((addrs.value(i), id, j as u32));
            m.matched_source[j] = true;
        }
    }
    let matched: Vec<u64> = m.pairs.iter().map(|p| p.0).collect();
    if params.when_matched != WhenMatched::DoNothing && params.when_matched != WhenMatched::Fail {
        // Two source rows of this task on one table row (across tasks the driver checks).
        let mut sorted: Vec<(u64, u32)> = m.pairs.iter().map(|p| (p.0, p.2)).collect();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(matched_twice(uri, &source, w[0].1 as usize, &params.on));
        }
    }

    // Table rows no source row matched, where the by-source predicate holds.
    if params.delete_not_matched_by_source.is_some() {
        let holds = match joined.column_by_name(JOINED_BY_SOURCE) {
            None if by_source_expr(params)?.is_some() => {
                return Err(Error::invalid(format!(
                    "{uri}: merge_insert: the joined rows need {JOINED_BY_SOURCE}, the value of \
                     the by-source predicate"
                )))
            }
            None => None,
            Some(c) => Some(c.as_boolean_opt().cloned().ok_or_else(|| {
                Error::invalid(format!(
                    "{uri}: merge_insert: {JOINED_BY_SOURCE} must be boolean"
                ))
            })?),
        };
        for i in 0..joined.num_rows() {
            let deletable = holds.as_ref().is_none_or(|h| h.is_valid(i) && h.value(i));
            if !is_source(i) && addrs.is_valid(i) && deletable {
                m.unmatched_to_delete.push(addrs.value(i));
            }
        }
    }

    let planned = plan_changes(ds, &source, m, params).await?;
    let keys = inserted_keys(ds, params, planned.inserted.as_ref())?;
    // A task's files are its job's once written (the job commits or aborts them).
    let staged = Staged::new(ds.storage());
    let written = write_planned(ds, planned.updated, planned.inserted, file_prefix, &staged);
    let fragments = staged.guard(written).await?;
    staged.keep();
    Ok(MergePart {
        fragments,
        to_delete: planned.to_delete,
        matched,
        inserted_keys: keys,
        stats: planned.stats,
    })
}
