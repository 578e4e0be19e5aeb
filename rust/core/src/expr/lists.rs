//! The list searches (`array_has_any`, `array_has_all`, `array_has`): one pass over the
//! flattened items per value looked for, then one count per list.
use arrow_array::cast::AsArray;
use arrow_array::{new_null_array, Array, ArrayRef, BooleanArray, Scalar};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::{ArrowError, DataType};

use super::ListSearch;

/// Which of `items` equal `value` (a one-value array of their type): NULL matches NULL,
/// and floats compare bit for bit in total order (NaN matches NaN, -0.0 does not match
/// 0.0), as pylance's list functions compare.
fn item_matches(items: &ArrayRef, value: &ArrayRef) -> Result<BooleanBuffer, ArrowError> {
    if value.is_null(0) {
        return Ok(match items.logical_nulls() {
            Some(n) => !n.inner(),
            None => BooleanBuffer::new_unset(items.len()),
        });
    }
    let hits = arrow_ord::cmp::eq(items, &Scalar::new(value.clone()))?;
    Ok(match hits.nulls() {
        Some(n) => hits.values() & n.inner(),
        None => hits.values().clone(),
    })
}

/// A list column taken apart: each list's item range, the items, the list validity.
struct Lists {
    ranges: Vec<(usize, usize)>,
    items: ArrayRef,
    nulls: Option<NullBuffer>,
}

/// For lists, large lists and fixed-size lists.
fn parts(list: &dyn Array) -> Result<Lists, ArrowError> {
    let ranges: Vec<(usize, usize)>;
    let items = match list.data_type() {
        DataType::List(_) => {
            let l = list.as_list::<i32>();
            ranges = l
                .offsets()
                .windows(2)
                .map(|w| (w[0] as usize, w[1] as usize))
                .collect();
            l.values().clone()
        }
        DataType::LargeList(_) => {
            let l = list.as_list::<i64>();
            ranges = l
                .offsets()
                .windows(2)
                .map(|w| (w[0] as usize, w[1] as usize))
                .collect();
            l.values().clone()
        }
        DataType::FixedSizeList(_, n) => {
            let l = list.as_fixed_size_list();
            let n = *n as usize;
            ranges = (0..l.len()).map(|i| (i * n, (i + 1) * n)).collect();
            l.values().clone()
        }
        other => {
            return Err(ArrowError::InvalidArgumentError(format!(
                "expected a list, not {other}"
            )))
        }
    };
    Ok(Lists {
        ranges,
        items,
        nulls: list.logical_nulls(),
    })
}

/// `search` of `values` (in the item type) in every list of `list`; `impossible` adds a
/// value that equals no item.
pub(super) fn list_has(
    list: &dyn Array,
    values: &ArrayRef,
    search: ListSearch,
    impossible: bool,
) -> Result<BooleanArray, ArrowError> {
    let Lists {
        ranges,
        items,
        nulls,
    } = parts(list)?;
    let rows = ranges.len();
    let wanted = values.len() + usize::from(impossible);
    if wanted == 0 {
        // Nothing to look for: no list has some of it, every list (even NULL) has all.
        return Ok(BooleanArray::from(vec![search == ListSearch::All; rows]));
    }
    if values.data_type() == &DataType::Null {
        return Ok(new_null_array(&DataType::Boolean, rows)
            .as_boolean()
            .clone());
    }
    let hits: Vec<BooleanBuffer> = (0..values.len())
        .map(|j| item_matches(&items, &values.slice(j, 1)))
        .collect::<Result<_, _>>()?;
    let found = |hit: &BooleanBuffer, (start, end): (usize, usize)| {
        end > start && hit.slice(start, end - start).count_set_bits() > 0
    };
    let bits = match search {
        ListSearch::Any | ListSearch::Element => {
            let any = hits
                .iter()
                .skip(1)
                .fold(hits.first().cloned(), |acc, h| acc.map(|a| &a | h));
            match any {
                Some(any) => BooleanBuffer::collect_bool(rows, |i| found(&any, ranges[i])),
                None => BooleanBuffer::new_unset(rows),
            }
        }
        ListSearch::All if impossible => BooleanBuffer::new_unset(rows),
        ListSearch::All => {
            BooleanBuffer::collect_bool(rows, |i| hits.iter().all(|h| found(h, ranges[i])))
        }
    };
    Ok(BooleanArray::new(bits, nulls))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{Int32Builder, ListBuilder};
    use arrow_array::Int32Array;

    use super::*;

    fn lists() -> ArrayRef {
        // [1, 2], [3], NULL, [], [2, NULL]
        let mut b = ListBuilder::new(Int32Builder::new());
        b.append_value([Some(1), Some(2)]);
        b.append_value([Some(3)]);
        b.append_null();
        b.append_value([] as [Option<i32>; 0]);
        b.append_value([Some(2), None]);
        Arc::new(b.finish())
    }

    fn run(values: Vec<Option<i32>>, search: ListSearch, impossible: bool) -> Vec<Option<bool>> {
        let values: ArrayRef = Arc::new(Int32Array::from(values));
        list_has(lists().as_ref(), &values, search, impossible)
            .unwrap()
            .iter()
            .collect()
    }

    #[test]
    fn searches_follow_pylances_semantics() {
        let (t, f) = (Some(true), Some(false));
        assert_eq!(
            run(vec![Some(2), Some(3)], ListSearch::Any, false),
            vec![t, t, None, f, t]
        );
        assert_eq!(
            run(vec![Some(1), Some(2)], ListSearch::All, false),
            vec![t, f, None, f, f]
        );
        // NULL matches a NULL item.
        assert_eq!(
            run(vec![None], ListSearch::Any, false),
            vec![f, f, None, f, t]
        );
        // No values: FALSE for some, TRUE for all, NULL lists included.
        assert_eq!(run(vec![], ListSearch::Any, false), vec![f; 5]);
        assert_eq!(run(vec![], ListSearch::All, false), vec![t; 5]);
        // A value no item can equal.
        assert_eq!(
            run(vec![Some(1)], ListSearch::All, true),
            vec![f, f, None, f, f]
        );
        assert_eq!(run(vec![], ListSearch::Any, true), vec![f, f, None, f, f]);
    }
}
