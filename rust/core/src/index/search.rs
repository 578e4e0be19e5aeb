//! Answering a filter from the table's scalar indices, as far as they can: each part of
//! the filter on one indexed column is looked up in that column's index, the parts are
//! combined by the filter's AND, OR and NOT, and the rows deleted since are taken out.
//! What no index answers stays unknown, and its fragments are scanned.
use std::sync::Arc;

use super::registry::{kind_of, readable};
use super::selection::{Found, IdSet, Rows, Selection};
use crate::dataset::Dataset;
use crate::error::Result;
use crate::expr::{CmpOp, Expr};
use crate::table::index_segments::IndexSegment;

/// The fragments of `ds` where its indices prove no row passes `filter`: a distributed
/// scan gives them no task.
pub async fn fragments_without_matches(ds: &Arc<Dataset>, filter: &Expr) -> Result<Vec<u64>> {
    Ok(select(ds, filter).await?.map_or_else(Vec::new, |s| {
        s.fragments
            .iter()
            .filter(|(_, rows)| rows.exact && rows.yes.is_empty())
            .map(|(&id, _)| id as u64)
            .collect()
    }))
}

/// The rows of `ds` that pass `filter` as far as its indices tell (None when no index
/// helps), with deleted rows taken out.
pub async fn select(ds: &Arc<Dataset>, filter: &Expr) -> Result<Option<Selection>> {
    Ok(select_explained(ds, filter).await?.0)
}

/// `select`, and a line per condition an index answered: the condition, the index, its
/// kind and the fragments it answered for (as query plans show them).
pub async fn select_explained(
    ds: &Arc<Dataset>,
    filter: &Expr,
) -> Result<(Option<Selection>, Vec<String>)> {
    let segments = ds.index_segments()?;
    let usable: Vec<(String, &IndexSegment)> = segments
        .iter()
        .filter(|s| s.fields.len() == 1 && readable(s))
        .filter_map(|s| {
            let path = ds.schema.path_of(s.fields[0])?;
            Some((path, s))
        })
        .collect();
    if usable.is_empty() {
        return Ok((None, vec![]));
    }
    let search = Search {
        ds,
        usable,
        log: Default::default(),
    };
    let mut selection = search.answer(filter, false).await?;
    let log = std::mem::take(&mut *search.log.lock().unwrap_or_else(|e| e.into_inner()));
    if selection.is_empty() {
        return Ok((None, log));
    }
    // Rows deleted since the index was built are no rows; neither are rows past the end
    // of their fragment (which only a damaged index could name).
    for (&id, rows) in selection.fragments.iter_mut() {
        let Some(frag) = ds.fragment(id as u64) else {
            continue;
        };
        let past_end = frag.physical_rows.min(u32::MAX as u64) as u32..;
        rows.yes.remove_range(past_end.clone());
        rows.nulls.remove_range(past_end);
        if let Some(deleted) = ds.deletions(frag).await? {
            rows.yes -= deleted.as_ref();
            rows.nulls -= deleted.as_ref();
        }
    }
    Ok((Some(selection), log))
}

/// Whether an index lance_core reads covers a column `filter` reads (cheap: from the
/// manifest alone).
pub fn may_help(ds: &Dataset, filter: &Expr) -> bool {
    let Ok(segments) = ds.index_segments() else {
        return false;
    };
    let columns = filter.columns();
    segments.iter().any(|s| {
        s.fields.len() == 1
            && readable(s)
            && ds
                .schema
                .path_of(s.fields[0])
                .is_some_and(|p| columns.iter().any(|c| c.eq_ignore_ascii_case(&p)))
    })
}

struct Search<'a> {
    ds: &'a Arc<Dataset>,
    /// Segments of single-column indices lance_core reads, with their column's path.
    usable: Vec<(String, &'a IndexSegment)>,
    /// What was answered, for plans.
    log: std::sync::Mutex<Vec<String>>,
}

impl Search<'_> {
    /// What the indices tell about `e`; `nulls`: where it is NULL is wanted too (under a
    /// NOT).
    fn answer<'s>(
        &'s self,
        e: &'s Expr,
        nulls: bool,
    ) -> futures::future::BoxFuture<'s, Result<Selection>> {
        Box::pin(async move {
            if let Some(column) = self.single_column(e) {
                if let Some(s) = self.lookup(&column, e, nulls).await? {
                    return Ok(s);
                }
            }
            let physical = |id: u32| self.ds.fragment(id as u64).map(|f| f.physical_rows);
            Ok(match e {
                Expr::And(a, b) => self
                    .answer(a, nulls)
                    .await?
                    .and(self.answer(b, nulls).await?),
                Expr::Or(a, b) => self
                    .answer(a, nulls)
                    .await?
                    .or(self.answer(b, nulls).await?),
                // NOT of an ordering is the opposite ordering, which an index that only
                // narrows rows down (a ZONEMAP) can still answer.
                Expr::Not(a) => match complement(a) {
                    Some(c) => self.answer(&c, nulls).await?,
                    None => self.answer(a, true).await?.not(physical),
                },
                _ => match negated(e) {
                    Some(positive) => self.answer(&positive, true).await?.not(physical),
                    None => Selection::default(),
                },
            })
        })
    }

    /// The indexed column `e` reads, when it reads only that one.
    fn single_column(&self, e: &Expr) -> Option<String> {
        let paths = e.column_paths();
        let mut it = paths.iter();
        let (Some(path), None) = (it.next(), it.next()) else {
            return None;
        };
        // Only top-level columns for now: the condition is run on a batch of that one
        // column.
        let [name] = path.as_slice() else {
            return None;
        };
        self.usable
            .iter()
            .find(|(p, _)| p == name)
            .or_else(|| {
                self.usable
                    .iter()
                    .find(|(p, _)| p.eq_ignore_ascii_case(name))
            })
            .map(|_| name.clone())
    }

    /// Look `e` up in the indices on `column`: each of their segments answers for the
    /// live fragments it covers. None when none of them can answer it.
    async fn lookup(&self, column: &str, e: &Expr, nulls: bool) -> Result<Option<Selection>> {
        let mut out = Selection::default();
        let mut answered = false;
        for (path, segment) in &self.usable {
            if !path.eq_ignore_ascii_case(column) {
                continue;
            }
            let covered = segment.live_fragments(self.ds.fragments());
            if covered.iter().all(|f| out.fragments.contains_key(&f)) {
                continue;
            }
            let Some(found) = self.search(segment, column, e, nulls).await? else {
                continue;
            };
            answered = true;
            let fragments: Vec<String> = covered.iter().map(|f| f.to_string()).collect();
            self.log
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(format!(
                    "ScalarIndexQuery: query=[{e}]@{}({}), fragments [{}]{}",
                    segment.name,
                    segment.kind,
                    fragments.join(", "),
                    if found.exact { "" } else { ", rechecked" }
                ));
            let ids_are_row_ids = self.ds.has_stable_row_ids()
                && kind_of(segment).is_some_and(|k| k.holds_row_ids(segment.index_version));
            let (yes, no_value) = match ids_are_row_ids {
                true => (
                    self.addresses(&found.yes).await?,
                    self.addresses(&found.nulls).await?,
                ),
                false => (found.yes, found.nulls),
            };
            for f in covered.iter() {
                if out.fragments.contains_key(&f) {
                    continue;
                }
                let yes = yes.0.get(&f).cloned().unwrap_or_default();
                let rows = match found.exact {
                    true => Rows::exact(yes, no_value.0.get(&f).cloned().unwrap_or_default()),
                    false => Rows::candidates(yes),
                };
                out.fragments.insert(f, rows);
            }
        }
        Ok(answered.then_some(out))
    }

    async fn search(
        &self,
        segment: &IndexSegment,
        column: &str,
        e: &Expr,
        nulls: bool,
    ) -> Result<Option<Found>> {
        match kind_of(segment) {
            Some(kind) => kind.search(self.ds, segment, column, e, nulls).await,
            None => Ok(None),
        }
    }

    /// The addresses of the rows with stable row ids `ids` (rows gone since are left
    /// out).
    async fn addresses(&self, ids: &IdSet) -> Result<IdSet> {
        let mut out = IdSet::default();
        if ids.is_empty() {
            return Ok(out);
        }
        let index = self.ds.row_id_index().await?;
        for id in ids.iter() {
            if let Some(a) = index.address(id) {
                out.insert(a);
            }
        }
        Ok(out)
    }
}

/// `e` as NOT of a condition an index can look up: `x <> 1` is NOT `x = 1`, `x NOT IN`,
/// `NOT BETWEEN` and `IS NOT NULL` likewise.
fn negated(e: &Expr) -> Option<Expr> {
    Some(match e {
        Expr::Cmp {
            op: CmpOp::NotEq,
            left,
            right,
        } => Expr::Cmp {
            op: CmpOp::Eq,
            left: left.clone(),
            right: right.clone(),
        },
        Expr::InList {
            expr,
            list,
            negated: true,
        } => Expr::InList {
            expr: expr.clone(),
            list: list.clone(),
            negated: false,
        },
        Expr::Between {
            expr,
            low,
            high,
            negated: true,
        } => Expr::Between {
            expr: expr.clone(),
            low: low.clone(),
            high: high.clone(),
            negated: false,
        },
        Expr::IsNull {
            expr,
            negated: true,
        } => Expr::IsNull {
            expr: expr.clone(),
            negated: false,
        },
        _ => return None,
    })
}

/// The comparison true exactly where ordering comparison `e` is false, and NULL where it
/// is (`NOT x > 5` is `x <= 5`).
fn complement(e: &Expr) -> Option<Expr> {
    let Expr::Cmp { op, left, right } = e else {
        return None;
    };
    let op = match op {
        CmpOp::Lt => CmpOp::GtEq,
        CmpOp::LtEq => CmpOp::Gt,
        CmpOp::Gt => CmpOp::LtEq,
        CmpOp::GtEq => CmpOp::Lt,
        _ => return None,
    };
    Some(Expr::cmp(op, (**left).clone(), (**right).clone()))
}
