//! A merge whose join an outside engine (Spark) did: each task applies the clauses to its
//! share of the joined rows, streamed batch by batch, and writes the new rows
//! (`merge_joined`); the driver commits every task's files and deletions as one `Update`
//! (`commit_merge_parts`).
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, SchemaRef};
use futures::TryStreamExt;
use roaring::RoaringTreemap;

use super::apply::{describe_key, run, take_rows};
use super::source::SourceShape;
use super::{by_source_expr, check_clauses, key_field_ids, MergeInsert, MergeStats, SourceStream};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::proto::table::DataFragment;
use crate::scan::take::take;
use crate::scan::Projection;
use crate::table::transaction::{InsertedKeys, Staged};
use crate::write::rows::commit_row_changes;

/// Names of the columns an outside engine adds to the source rows it joined to the
/// table (see `merge_joined`).
pub const JOINED_ADDRESS: &str = "__merge_rowaddr";
pub const JOINED_ROW_ID: &str = "__merge_rowid";
pub const JOINED_FROM_SOURCE: &str = "__merge_source";
pub const JOINED_BY_SOURCE: &str = "__merge_by_source";

/// What the tasks of a distributed merge wrote and found, for its driver to commit.
pub struct MergeParts {
    /// The new fragments (updated and inserted rows).
    pub fragments: Vec<DataFragment>,
    /// The read version's rows they replace or delete.
    pub removed: Vec<u64>,
    /// The table rows each task updated or deleted because a source row matched them (a
    /// table row changed by source rows of two tasks appears twice).
    pub matched: Vec<u64>,
    /// The key columns.
    pub on: Vec<String>,
    /// Hashes of the keys inserted (see `InsertedKeys`), when the merge inserts.
    pub inserted_hashes: Option<Vec<u64>>,
}

/// Commit the pieces of a distributed merge on `ds` (the version they read) as one
/// `Update`, refusing a table row changed by source rows of two tasks as a local merge
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
    commit_row_changes(
        ds,
        parts.fragments,
        &parts.removed,
        super::all_fields(ds),
        inserted_keys,
        staged,
    )
    .await
}

/// Each table row may be changed by one source row: the error names the key of the
/// first row of `matched` given twice.
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
    Err(Error::invalid(format!(
        "{}: merge_insert: several source rows have the key of one table row ({}); each \
         table row may match at most one source row",
        ds.uri(),
        describe_key(&row, 0, on)
    )))
}

/// What one task of a distributed merge wrote and found, not committed.
#[derive(Debug, Default)]
pub struct MergePart {
    pub fragments: Vec<DataFragment>,
    /// Addresses of the table rows to delete (the updated ones included).
    pub to_delete: Vec<u64>,
    /// Addresses of the table rows updated or deleted because a source row matched them,
    /// so the driver can find a table row that source rows of several tasks change.
    pub matched: Vec<u64>,
    /// The keys of the rows this task inserted (None when the merge inserts nothing by
    /// its clauses), for the driver's transaction to record.
    pub inserted_keys: Option<InsertedKeys>,
    pub stats: MergeStats,
}

/// Where the joined rows' own columns are.
struct JoinedColumns {
    address: usize,
    row_id: Option<usize>,
    from_source: usize,
    by_source: Option<usize>,
    /// The source's columns.
    source: Vec<usize>,
}

impl JoinedColumns {
    fn new(ds: &Dataset, schema: &SchemaRef, params: &MergeInsert) -> Result<Self> {
        let uri = ds.uri();
        let find = |name: &str| schema.index_of(name).ok();
        let boolean = |name: &str| -> Result<Option<usize>> {
            match find(name) {
                Some(i) if schema.field(i).data_type() != &DataType::Boolean => Err(
                    Error::invalid(format!("{uri}: merge_insert: {name} must be boolean")),
                ),
                other => Ok(other),
            }
        };
        let address = find(JOINED_ADDRESS).ok_or_else(|| {
            Error::invalid(format!(
                "{uri}: merge_insert: the joined rows have no column {JOINED_ADDRESS}"
            ))
        })?;
        let from_source = boolean(JOINED_FROM_SOURCE)?.ok_or_else(|| {
            Error::invalid(format!(
                "{uri}: merge_insert: the joined rows have no column {JOINED_FROM_SOURCE}"
            ))
        })?;
        let by_source = boolean(JOINED_BY_SOURCE)?;
        if params.delete_not_matched_by_source.is_some()
            && by_source.is_none()
            && by_source_expr(params).is_some()
        {
            return Err(Error::invalid(format!(
                "{uri}: merge_insert: the joined rows need {JOINED_BY_SOURCE}, the value of \
                 the by-source predicate"
            )));
        }
        Ok(JoinedColumns {
            address,
            row_id: find(JOINED_ROW_ID),
            from_source,
            by_source,
            source: (0..schema.fields().len())
                .filter(|&i| !schema.field(i).name().starts_with("__merge_"))
                .collect(),
        })
    }
}

fn as_u64(c: &ArrayRef) -> Result<arrow_array::UInt64Array> {
    let c = arrow_cast::cast(c, &DataType::UInt64)?;
    Ok(c.as_primitive::<UInt64Type>().clone())
}

/// One task's share of a merge whose join an outside engine (Spark) did, read batch by
/// batch from `joined` (of `schema`). Each row is a source row (`JOINED_FROM_SOURCE`
/// true; the source's columns) with the address (`JOINED_ADDRESS`, null when no table row
/// has its key) and stable row id (`JOINED_ROW_ID`) of the table row it matched, or, when
/// unmatched table rows may be deleted, a table row no source row matched
/// (`JOINED_FROM_SOURCE` false or null) with whether the by-source predicate holds for it
/// (`JOINED_BY_SOURCE`). The new rows are written (data file names starting with
/// `file_prefix`); nothing is deleted or committed (see `commit_merge_parts`).
pub async fn merge_joined(
    ds: &Dataset,
    joined: SourceStream,
    schema: SchemaRef,
    params: &MergeInsert,
    file_prefix: &str,
) -> Result<MergePart> {
    check_clauses(ds, params)?;
    let columns = &JoinedColumns::new(ds, &schema, params)?;
    let shape = &SourceShape::new(ds, &schema.project(&columns.source)?, &params.on)?;
    let deleting = params.delete_not_matched_by_source.is_some();
    let mut by_source = RoaringTreemap::new();
    let staged = Staged::new(ds.storage());
    let work = async {
        let by_source = &mut by_source;
        run(
            ds,
            params,
            &shape.missing,
            file_prefix,
            &staged,
            |mut changes| async move {
                let mut joined = joined;
                while let Some(b) = joined.try_next().await? {
                    let addresses = as_u64(b.column(columns.address))?;
                    let ids = match columns.row_id {
                        Some(i) => Some(as_u64(b.column(i))?),
                        None => None,
                    };
                    let from_source = b.column(columns.from_source).as_boolean();
                    let is_source = |i: usize| from_source.is_valid(i) && from_source.value(i);
                    let rows: Vec<u32> = (0..b.num_rows() as u32)
                        .filter(|&i| is_source(i as usize))
                        .collect();
                    let source = shape.conform(&take_rows(&b.project(&columns.source)?, &rows)?)?;
                    let (mut pairs, mut unmatched) = (vec![], vec![]);
                    for (j, &i) in rows.iter().enumerate() {
                        let i = i as usize;
                        match addresses.is_valid(i) {
                            true => {
                                let id = ids.as_ref().map_or(0, |ids| ids.value(i));
                                pairs.push((j as u32, addresses.value(i), id));
                            }
                            false => unmatched.push(j as u32),
                        }
                    }
                    changes.apply(&source, pairs, &unmatched).await?;
                    if deleting {
                        let holds = columns.by_source.map(|c| b.column(c).as_boolean());
                        for i in 0..b.num_rows() {
                            let deletable = holds.is_none_or(|h| h.is_valid(i) && h.value(i));
                            if !is_source(i) && addresses.is_valid(i) && deletable {
                                by_source.insert(addresses.value(i));
                            }
                        }
                    }
                }
                Ok(changes.finish())
            },
        )
        .await
    };
    let (fragments, done) = staged.guard(work).await?;
    // A task's files are its job's once written (the job commits or aborts them).
    staged.keep();
    let mut stats = done.stats;
    stats.deleted += by_source.len();
    Ok(MergePart {
        fragments,
        to_delete: (&done.changed | &by_source).iter().collect(),
        matched: done.changed.iter().collect(),
        inserted_keys: done.inserted_keys,
        stats,
    })
}
