//! The smallest and largest value of a column, from its BTREE or ZONEMAP index: what
//! `min(x)` and `max(x)` are answered from without reading the column.
//!
//! An index knows its pages' (zones') value ranges as of when it was built. The page whose
//! largest value is smallest gives a bound T that few rows lie at or below, and the
//! smallest live value is the smallest of the rows with `x <= T`: a filtered scan the index
//! answers (fragments it does not cover are scanned whole, so appended rows count). Rows
//! deleted since may leave nothing at or below T; then the answer is unknown here.
use std::sync::Arc;

use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, SortOptions};
use futures::TryStreamExt;

use crate::dataset::Dataset;
use crate::error::Result;
use crate::expr::{CmpOp, Expr};
use crate::index::kind_of;
use crate::table::index_segments::IndexSegment;

/// Which end of a column's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extreme {
    Min,
    Max,
}

/// The smallest or largest non-null value of top-level column `column` among the live
/// rows of `ds`, as a one-row array; None when no BTREE or ZONEMAP index on the column
/// bounds it, the column is floating point (NaN orders above every number in Spark and
/// pylance alike, and indices do not keep it), or no live row lies within the bound.
pub async fn extreme(ds: &Arc<Dataset>, column: &str, which: Extreme) -> Result<Option<ArrayRef>> {
    let Some(field) = ds.schema.field(column) else {
        return Ok(None);
    };
    if matches!(
        field.data_type()?,
        DataType::Float16 | DataType::Float32 | DataType::Float64
    ) {
        return Ok(None);
    }
    let segments = ds.index_segments()?;
    let mut bounds = Vec::new();
    for segment in segments.iter().filter(|s| s.fields == [field.id]) {
        if let Some(b) = bound(ds, segment, which).await? {
            bounds.push(b);
        }
    }
    // The tightest bound first; the loosest if rows deleted since leave the first empty.
    let Some(tightest) = pick(&bounds, which, false)? else {
        return Ok(None);
    };
    let loosest = pick(&bounds, which, true)?.expect("a bound exists");
    for bound in [tightest, loosest] {
        if let Some(v) = within(ds, column, &bound, which).await? {
            return Ok(Some(v));
        }
        if bounds.len() == 1 {
            break;
        }
    }
    Ok(None)
}

/// The segment's bound for `which`: the smallest of its pages' largest values (for Min),
/// the largest of their smallest (for Max).
async fn bound(ds: &Dataset, segment: &IndexSegment, which: Extreme) -> Result<Option<ArrayRef>> {
    let Some(kind) = kind_of(segment).filter(|k| k.reads(segment.index_version)) else {
        return Ok(None);
    };
    let Some((mins, maxs)) = kind.value_bounds(ds, segment).await? else {
        return Ok(None);
    };
    Ok(match which {
        Extreme::Min => end_of(&maxs, false)?,
        Extreme::Max => end_of(&mins, true)?,
    })
}

/// Of `bounds`, the one nearest the end asked for (`loosest`: the farthest).
fn pick(bounds: &[ArrayRef], which: Extreme, loosest: bool) -> Result<Option<ArrayRef>> {
    if bounds.is_empty() {
        return Ok(None);
    }
    let refs: Vec<&dyn Array> = bounds.iter().map(|b| b.as_ref()).collect();
    let all = arrow_select::concat::concat(&refs)?;
    end_of(&all, (which == Extreme::Max) != loosest)
}

/// The smallest (`largest`: largest) non-null value of `values`, as a one-row array.
fn end_of(values: &ArrayRef, largest: bool) -> Result<Option<ArrayRef>> {
    if values.len() == values.null_count() {
        return Ok(None);
    }
    let order = SortOptions {
        descending: largest,
        nulls_first: false,
    };
    let at = arrow_ord::sort::sort_to_indices(values, Some(order), Some(1))?;
    Ok(Some(arrow_select::take::take(values, &at, None)?))
}

/// The extreme of the live rows at or below (Min) / at or above (Max) `bound`.
async fn within(
    ds: &Arc<Dataset>,
    column: &str,
    bound: &ArrayRef,
    which: Extreme,
) -> Result<Option<ArrayRef>> {
    let op = match which {
        Extreme::Min => CmpOp::LtEq,
        Extreme::Max => CmpOp::GtEq,
    };
    let filter = Expr::Cmp {
        op,
        left: Box::new(Expr::Column(vec![column.to_string()])),
        right: Box::new(Expr::Literal(crate::expr::literal_of(bound)?)),
    };
    let options = crate::scan::ScanOptions {
        columns: Some(vec![column.to_string()]),
        filter: Some(filter),
        ..Default::default()
    };
    let scan = super::run(ds.clone(), options.into())?;
    let batches: Vec<_> = scan.batches.try_collect().await?;
    let columns: Vec<&dyn Array> = batches.iter().map(|b| b.column(0).as_ref()).collect();
    if columns.is_empty() {
        return Ok(None);
    }
    let values = arrow_select::concat::concat(&columns)?;
    end_of(&values, which == Extreme::Max)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::{Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    use super::{extreme, Extreme};
    use crate::index::{kind_from_user, Kind};
    use crate::test_util::{sql, uri, write};
    use crate::write::index::{create_scalar_index, ScalarIndexParams};
    use crate::write::{delete, WriteMode};

    fn batch(ids: std::ops::Range<i64>, v: impl Fn(i64) -> Option<i64>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("v", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from_iter_values(ids.clone())),
                Arc::new(Int64Array::from_iter(ids.clone().map(&v))),
                Arc::new(StringArray::from_iter(
                    ids.map(|i| Some(format!("k{i:05}"))),
                )),
            ],
        )
        .unwrap()
    }

    fn params(kind: Kind) -> ScalarIndexParams {
        ScalarIndexParams {
            kind,
            name: None,
            replace: false,
            page_rows: Some(100),
            probability: None,
        }
    }

    async fn ends(ds: &crate::dataset::Dataset, column: &str) -> (Option<i64>, Option<i64>) {
        let ds = Arc::new(ds.clone());
        let get =
            |a: Option<arrow_array::ArrayRef>| a.map(|a| a.as_primitive::<Int64Type>().value(0));
        (
            get(extreme(&ds, column, Extreme::Min).await.unwrap()),
            get(extreme(&ds, column, Extreme::Max).await.unwrap()),
        )
    }

    #[tokio::test]
    async fn extremes_follow_deletes_and_appends() {
        for kind in ["BTREE", "ZONEMAP"].map(|k| kind_from_user(k).unwrap()) {
            // v = 3 * id, null on every tenth row.
            let v = |i: i64| (i % 10 != 0).then_some(3 * i);
            let ds = write(&uri(), batch(0..1000, v), WriteMode::Create, 400).await;
            assert_eq!(ends(&ds, "v").await, (None, None), "no index yet");
            let ds = create_scalar_index(&ds, "v", &params(kind), 0)
                .await
                .unwrap();
            assert_eq!(ends(&ds, "v").await, (Some(3), Some(2997)), "{kind:?}");
            // The smallest and largest rows deleted after the index was built.
            let ds = delete(&ds, &sql("id = 1 OR id = 999"), 0).await.unwrap();
            assert_eq!(ends(&ds, "v").await, (Some(6), Some(2994)), "{kind:?}");
            // Rows the index does not cover count.
            let ds = write(
                ds.uri(),
                batch(1000..1010, |i| Some(i - 2000)),
                WriteMode::Append,
                400,
            )
            .await;
            assert_eq!(ends(&ds, "v").await, (Some(-1000), Some(2994)), "{kind:?}");
            // Every row at or below the bound deleted: unknown here, not wrong.
            let ds = delete(&ds, &sql("v <= 400"), 0).await.unwrap();
            let (min, max) = ends(&ds, "v").await;
            assert!(min.is_none() || min == Some(402), "{kind:?}: {min:?}");
            assert_eq!(max, Some(2994));
        }
    }

    #[tokio::test]
    async fn strings_and_unindexed_columns() {
        let ds = write(&uri(), batch(0..500, Some), WriteMode::Create, 200).await;
        let ds = create_scalar_index(&ds, "s", &params(kind_from_user("BTREE").unwrap()), 0)
            .await
            .unwrap();
        let ds = Arc::new(ds);
        let min = extreme(&ds, "s", Extreme::Min).await.unwrap().unwrap();
        let max = extreme(&ds, "s", Extreme::Max).await.unwrap().unwrap();
        assert_eq!(min.as_string::<i32>().value(0), "k00000");
        assert_eq!(max.as_string::<i32>().value(0), "k00499");
        assert!(extreme(&ds, "v", Extreme::Min).await.unwrap().is_none());
        assert!(extreme(&ds, "nope", Extreme::Min).await.unwrap().is_none());
    }
}
