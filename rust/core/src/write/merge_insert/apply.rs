//! The clauses of a merge applied to the source, batch by batch: matched table rows
//! updated (their new rows sent to one writer) or deleted, unmatched source rows inserted
//! (sent to another), the addresses of the rows changed kept to delete them at the end.
//! The writers run beside the matching, fed through channels of a batch or two, so what
//! is held at a time is a few batches and the writers' pages.
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, StructArray, UInt32Array};
use arrow_schema::{Field, Schema};
use futures::channel::mpsc;
use futures::SinkExt;
use roaring::RoaringTreemap;

use super::keys::Pair;
use super::{MergeInsert, MergeStats, WhenMatched};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::expr::{bind_filter, evaluate_filter, Expr};
use crate::proto::table::DataFragment;
use crate::scan::take::take;
use crate::scan::Projection;
use crate::table::transaction::{InsertedKeys, Staged};
use crate::write::rows::{attach_moved_rows, write_rows};

type Rows = mpsc::Receiver<Result<RecordBatch>>;

/// The merge's changes so far.
pub struct Changes<'a> {
    ds: &'a Dataset,
    table: Arc<Dataset>,
    params: &'a MergeInsert,
    condition: Option<Expr>,
    /// The table's columns the source lacks (taken from the matched rows).
    missing: Option<Vec<String>>,
    updated: mpsc::Sender<Result<RecordBatch>>,
    inserted: mpsc::Sender<Result<RecordBatch>>,
    /// The (address, stable row id) of each updated row, in the order written.
    moved: Vec<(u64, u64)>,
    /// Table rows updated or deleted because a source row matched them.
    pub changed: RoaringTreemap,
    /// Table rows any source row matched (kept when unmatched ones are deleted).
    pub matched: RoaringTreemap,
    key_field_ids: Vec<i32>,
    inserted_hashes: Vec<u64>,
    pub stats: MergeStats,
}

/// The receiving ends of a merge's new rows.
struct Outlets {
    updated: Rows,
    inserted: Rows,
}

impl<'a> Changes<'a> {
    /// Start the changes of a merge into `ds`; `missing` names the table's columns the
    /// source lacks.
    fn new(
        ds: &'a Dataset,
        params: &'a MergeInsert,
        missing: &[String],
    ) -> Result<(Self, Outlets)> {
        let condition = match &params.when_matched {
            WhenMatched::UpdateAll { condition } => condition.clone(),
            _ => None,
        };
        let (updated, updated_rx) = mpsc::channel(1);
        let (inserted, inserted_rx) = mpsc::channel(1);
        let changes = Changes {
            ds,
            table: Arc::new(ds.clone()),
            params,
            condition,
            missing: (!missing.is_empty()).then(|| missing.to_vec()),
            updated,
            inserted,
            moved: vec![],
            changed: RoaringTreemap::new(),
            matched: RoaringTreemap::new(),
            key_field_ids: super::key_field_ids(ds, &params.on)?,
            inserted_hashes: vec![],
            stats: MergeStats::default(),
        };
        let outlets = Outlets {
            updated: updated_rx,
            inserted: inserted_rx,
        };
        Ok((changes, outlets))
    }

    /// Apply the clauses to `source` (conformed source rows), whose rows match table rows
    /// as `pairs` say (in source row order) and `unmatched` match none.
    pub async fn apply(
        &mut self,
        source: &RecordBatch,
        pairs: Vec<Pair>,
        unmatched: &[u32],
    ) -> Result<()> {
        if self.params.delete_not_matched_by_source.is_some() {
            self.matched.extend(pairs.iter().map(|p| p.1));
        }
        match &self.params.when_matched {
            WhenMatched::DoNothing => {}
            WhenMatched::Fail => {
                if let Some(p) = pairs.first() {
                    return Err(Error::invalid(format!(
                        "{}: merge_insert: a source row matches a table row ({}) and \
                         when_matched_fail is set",
                        self.ds.uri(),
                        describe_key(source, p.0 as usize, &self.params.on)
                    )));
                }
            }
            WhenMatched::Delete => {
                for p in &pairs {
                    self.change(source, p)?;
                }
                self.stats.deleted += pairs.len() as u64;
            }
            WhenMatched::UpdateAll { .. } => self.update(source, pairs).await?,
        }
        if self.params.insert_not_matched && !unmatched.is_empty() {
            let rows = match unmatched.len() == source.num_rows() {
                true => source.clone(),
                false => take_rows(source, unmatched)?,
            };
            let rows = as_table_rows(self.ds, &rows, None)?;
            let keys: Vec<ArrayRef> = self
                .params
                .on
                .iter()
                .map(|k| rows.column_by_name(k).cloned().expect("checked"))
                .collect();
            let keys = InsertedKeys::of_rows(vec![], &keys)?;
            self.inserted_hashes.extend(keys.hashes);
            self.stats.inserted += rows.num_rows() as u64;
            send(&mut self.inserted, rows).await?;
        }
        Ok(())
    }

    /// Replace the matched table rows of `pairs` (where the condition holds) with their
    /// source rows, completed by the table rows' other columns.
    async fn update(&mut self, source: &RecordBatch, mut pairs: Vec<Pair>) -> Result<()> {
        if pairs.is_empty() {
            return Ok(());
        }
        let mut fill = None;
        if self.condition.is_some() || self.missing.is_some() {
            let addresses: Vec<u64> = pairs.iter().map(|p| p.1).collect();
            // A condition may read any column; otherwise only those the source lacks.
            let projection = Projection {
                columns: match &self.condition {
                    Some(_) => None,
                    None => self.missing.clone(),
                },
                ..Default::default()
            };
            let mut rows = take(self.table.clone(), &addresses, &projection).await?;
            if let Some(c) = &self.condition {
                let srcs: Vec<u32> = pairs.iter().map(|p| p.0).collect();
                let holds = condition_holds(c, &rows, &take_rows(source, &srcs)?)?;
                let kept: Vec<bool> = (0..holds.len())
                    .map(|i| holds.is_valid(i) && holds.value(i))
                    .collect();
                pairs = pairs
                    .into_iter()
                    .zip(&kept)
                    .filter_map(|(p, &k)| k.then_some(p))
                    .collect();
                rows = arrow_select::filter::filter_record_batch(&rows, &BooleanArray::from(kept))?;
            }
            fill = Some(rows);
        }
        for p in &pairs {
            self.change(source, p)?;
        }
        if pairs.is_empty() {
            return Ok(());
        }
        let srcs: Vec<u32> = pairs.iter().map(|p| p.0).collect();
        let rows = as_table_rows(self.ds, &take_rows(source, &srcs)?, fill.as_ref())?;
        if self.ds.has_stable_row_ids() {
            self.moved.extend(pairs.iter().map(|p| (p.1, p.2)));
        }
        self.stats.updated += pairs.len() as u64;
        send(&mut self.updated, rows).await
    }

    /// Record that the table row of `pair` changes; a table row changed twice is
    /// ambiguous, and refused as pylance refuses it.
    fn change(&mut self, source: &RecordBatch, pair: &Pair) -> Result<()> {
        if self.changed.insert(pair.1) {
            return Ok(());
        }
        Err(Error::invalid(format!(
            "{}: merge_insert: several source rows have the key of one table row ({}); each \
             table row may match at most one source row",
            self.ds.uri(),
            describe_key(source, pair.0 as usize, &self.params.on)
        )))
    }

    /// The end of the source: the writers' inputs are closed (the senders dropped).
    pub fn finish(self) -> Finished {
        Finished {
            moved: self.moved,
            inserted_keys: self.params.insert_not_matched.then_some(InsertedKeys {
                field_ids: self.key_field_ids,
                hashes: self.inserted_hashes,
            }),
            changed: self.changed,
            matched: self.matched,
            stats: self.stats,
        }
    }
}

/// What the changes came to once the source ended.
pub struct Finished {
    moved: Vec<(u64, u64)>,
    /// The keys inserted (None when the clauses insert nothing).
    pub inserted_keys: Option<InsertedKeys>,
    pub changed: RoaringTreemap,
    pub matched: RoaringTreemap,
    pub stats: MergeStats,
}

/// Run `feed` (which reads the source, calls `Changes::apply` on each batch and ends with
/// `Changes::finish`) beside the writers of the new rows (data file names starting with
/// `file_prefix`, staged in `staged`). Returns the new fragments (the updated rows'
/// first, keeping their stable row ids) and what the changes came to.
pub async fn run<'a, F, Fut>(
    ds: &'a Dataset,
    params: &'a MergeInsert,
    missing: &[String],
    file_prefix: &str,
    staged: &Staged,
    feed: F,
) -> Result<(Vec<DataFragment>, Finished)>
where
    F: FnOnce(Changes<'a>) -> Fut,
    Fut: std::future::Future<Output = Result<Finished>>,
{
    let (changes, outlets) = Changes::new(ds, params, missing)?;
    // Not `try_join`: a failed feed drops its senders and the writers end their files
    // (staged, so removed with the rest), rather than being cut off mid-upload.
    let (fed, written) = futures::join!(
        feed(changes),
        futures::future::try_join(
            write_rows(ds, outlets.updated, file_prefix, staged),
            write_rows(ds, outlets.inserted, file_prefix, staged)
        )
    );
    // A writer's error first: the feed then only saw its channel close.
    let (mut updated, inserted) = written?;
    let mut finished = fed?;
    let moved = std::mem::take(&mut finished.moved);
    if ds.has_stable_row_ids() && !updated.is_empty() {
        let (addresses, ids): (Vec<u64>, Vec<u64>) = moved.into_iter().unzip();
        attach_moved_rows(ds, &mut updated, &addresses, &ids, true).await?;
    }
    updated.extend(inserted);
    Ok((updated, finished))
}

async fn send(to: &mut mpsc::Sender<Result<RecordBatch>>, rows: RecordBatch) -> Result<()> {
    // A writer only stops reading by failing, and its error ends the merge first.
    to.send(Ok(rows))
        .await
        .map_err(|_| Error::invalid("merge_insert: the writer of the new rows stopped"))
}

/// The key of row `i` of `batch`, for errors ("id = 1").
pub fn describe_key(batch: &RecordBatch, i: usize, on: &[String]) -> String {
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
pub fn take_rows(batch: &RecordBatch, indices: &[u32]) -> Result<RecordBatch> {
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
