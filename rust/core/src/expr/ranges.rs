//! The values of one column a predicate can hold for, as intervals in the column's own
//! order: what an index sorted by value (BTREE pages, ZONEMAP zones) needs to skip the
//! parts that cannot match. The answer is a superset: every row the predicate keeps has
//! its value in one of the intervals (or is NULL, where `nulls` says so). Whatever is not
//! a plain comparison of the column with constants gives no answer (any value).
use std::cmp::Ordering;
use std::ops::Bound as Edge;

use arrow_array::{Array, ArrayRef};
use arrow_ord::ord::make_comparator;
use arrow_schema::{DataType, SortOptions};

use super::bind::{Bound, Node};
use super::CmpOp;

/// One interval of values: each end a one-value array of the column's type.
pub type Interval = (Edge<ArrayRef>, Edge<ArrayRef>);

#[derive(Clone, Debug)]
pub struct ValueRanges {
    pub intervals: Vec<Interval>,
    /// Whether a NULL value can match.
    pub nulls: bool,
    /// The predicate is TRUE exactly for the values in the intervals (and NULL when
    /// `nulls`), in the order values sort in: it compares the column with constants and
    /// nothing else.
    pub exact: bool,
    /// The predicate is NULL only where the value is (a comparison with a NULL constant
    /// is NULL everywhere).
    pub strict: bool,
}

impl Default for ValueRanges {
    /// No value.
    fn default() -> Self {
        ValueRanges {
            intervals: vec![],
            nulls: false,
            exact: true,
            strict: true,
        }
    }
}

/// The values of top-level column `column` for which `pred` can be true; None when any
/// value can.
pub fn value_ranges(pred: &Bound, column: usize) -> Option<ValueRanges> {
    let is_column = |b: &Bound| matches!(&b.node, Node::Column { index, fields } if *index == column && fields.is_empty());
    let constant = |b: &Bound| match &b.node {
        Node::Scalar(a) => Some(a.clone()),
        _ => None,
    };
    match &pred.node {
        Node::Cmp { op, left, right } => {
            let (op, value) = if is_column(left) {
                (*op, constant(right)?)
            } else if is_column(right) {
                (flip(*op), constant(left)?)
            } else {
                return None;
            };
            if value.is_null(0) {
                return match op {
                    // IS NULL
                    CmpOp::NotDistinct => Some(ValueRanges {
                        nulls: true,
                        ..Default::default()
                    }),
                    // IS NOT NULL
                    CmpOp::Distinct => None,
                    // NULL whatever the value
                    _ => Some(ValueRanges {
                        strict: false,
                        ..Default::default()
                    }),
                };
            }
            let v = || value.clone();
            let interval = match op {
                CmpOp::Eq | CmpOp::NotDistinct => (Edge::Included(v()), Edge::Included(v())),
                CmpOp::Lt => (Edge::Unbounded, Edge::Excluded(v())),
                CmpOp::LtEq => (Edge::Unbounded, Edge::Included(v())),
                CmpOp::Gt => (Edge::Excluded(v()), Edge::Unbounded),
                CmpOp::GtEq => (Edge::Included(v()), Edge::Unbounded),
                CmpOp::NotEq | CmpOp::Distinct => return None,
            };
            Some(ValueRanges {
                intervals: vec![widen(interval)],
                ..Default::default()
            })
        }
        Node::IsNull {
            input,
            negated: false,
        } if is_column(input) => Some(ValueRanges {
            nulls: true,
            ..Default::default()
        }),
        Node::InList {
            input,
            values,
            negated: false,
        } if is_column(input) => Some(ValueRanges {
            intervals: values
                .iter()
                .filter(|v| !v.is_null(0))
                .map(|v| widen((Edge::Included(v.clone()), Edge::Included(v.clone()))))
                .collect(),
            // A NULL in the list makes the rows that match nothing NULL.
            strict: values.iter().all(|v| !v.is_null(0)),
            ..Default::default()
        }),
        // `LIKE 'abc%...'`: the values starting with the pattern's fixed prefix.
        Node::Like { .. } => {
            let text = like_pattern_on_column(pred, column)?;
            let as_type = |s: &str| -> Option<ArrayRef> {
                let a: ArrayRef = std::sync::Arc::new(arrow_array::StringArray::from(vec![s]));
                arrow_cast::cast(&a, pattern_type(pred)?).ok()
            };
            let prefix = like_prefix(&text);
            if prefix.is_empty() {
                return None;
            }
            let hi = match next_prefix(&prefix) {
                Some(next) => Edge::Excluded(as_type(&next)?),
                None => Edge::Unbounded,
            };
            Some(ValueRanges {
                intervals: vec![(Edge::Included(as_type(&prefix)?), hi)],
                exact: false,
                ..Default::default()
            })
        }
        // A constant: nothing when it is not TRUE.
        Node::Scalar(a) => {
            use arrow_array::cast::AsArray;
            let holds =
                a.data_type() == &DataType::Boolean && a.is_valid(0) && a.as_boolean().value(0);
            (!holds).then(|| ValueRanges {
                strict: a.is_valid(0),
                ..Default::default()
            })
        }
        Node::Or(a, b) => {
            let (mut a, b) = (value_ranges(a, column)?, value_ranges(b, column)?);
            a.intervals.extend(b.intervals);
            a.nulls |= b.nulls;
            a.exact &= b.exact;
            a.strict &= b.strict;
            Some(a)
        }
        Node::And(a, b) => match (value_ranges(a, column), value_ranges(b, column)) {
            (Some(a), Some(b)) => Some(intersect(&a, &b)),
            (one, other) => one.or(other).map(|r| ValueRanges {
                exact: false,
                strict: false,
                ..r
            }),
        },
        _ => None,
    }
}

/// The pattern of `pred` when it is a case-sensitive `column LIKE 'pattern'` on top-level
/// column `column`.
pub fn like_pattern_on_column(pred: &Bound, column: usize) -> Option<String> {
    use arrow_array::cast::AsArray;
    let Node::Like {
        input,
        pattern,
        negated: false,
        case_insensitive: false,
    } = &pred.node
    else {
        return None;
    };
    if !matches!(&input.node, Node::Column { index, fields } if *index == column && fields.is_empty())
        || pattern.is_null(0)
    {
        return None;
    }
    Some(match pattern.data_type() {
        DataType::Utf8 => pattern.as_string::<i32>().value(0).to_string(),
        DataType::LargeUtf8 => pattern.as_string::<i64>().value(0).to_string(),
        DataType::Utf8View => pattern.as_string_view().value(0).to_string(),
        _ => return None,
    })
}

fn pattern_type(pred: &Bound) -> Option<&DataType> {
    match &pred.node {
        Node::Like { pattern, .. } => Some(pattern.data_type()),
        _ => None,
    }
}

/// The runs of fixed text of a LIKE pattern, between its wildcards (`%`, `_`; a `\\`
/// takes the next character as it is), in order; empty runs left out. Every value the
/// pattern matches holds each of them.
pub fn like_fixed_runs(pattern: &str) -> Vec<String> {
    let mut runs = vec![String::new()];
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '%' | '_' => runs.push(String::new()),
            '\\' => match chars.next() {
                Some(next) => runs.last_mut().expect("one run").push(next),
                None => break,
            },
            c => runs.last_mut().expect("one run").push(c),
        }
    }
    runs.retain(|r| !r.is_empty());
    runs
}

/// The fixed start of a LIKE pattern: up to its first wildcard.
fn like_prefix(pattern: &str) -> String {
    match pattern.starts_with(['%', '_']) {
        true => String::new(),
        false => like_fixed_runs(pattern)
            .into_iter()
            .next()
            .unwrap_or_default(),
    }
}

/// The smallest string above every string starting with `prefix` (bytewise, as UTF-8
/// sorts): its last character that can grow, grown by one; None when none can.
fn next_prefix(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let mut code = last as u32 + 1;
        if (0xD800..0xE000).contains(&code) {
            code = 0xE000;
        }
        if let Some(c) = char::from_u32(code) {
            chars.push(c);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

fn flip(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::LtEq => CmpOp::GtEq,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::GtEq => CmpOp::LtEq,
        other => other,
    }
}

/// Compare two one-value arrays of one type (floats in IEEE total order).
pub fn compare(a: &ArrayRef, b: &ArrayRef) -> Ordering {
    match make_comparator(a.as_ref(), b.as_ref(), SortOptions::default()) {
        Ok(cmp) => cmp(0, 0),
        Err(_) => Ordering::Equal,
    }
}

/// Comparisons treat -0.0 and 0.0 as equal, which the total order of floats does not:
/// an end at either zero is moved out to include both.
fn widen((lo, hi): Interval) -> Interval {
    fn zero(a: &ArrayRef, negative: bool) -> Option<ArrayRef> {
        use arrow_array::{Float32Array, Float64Array};
        use std::sync::Arc;
        match a.data_type() {
            DataType::Float64 => {
                let v = a.as_any().downcast_ref::<Float64Array>()?.value(0);
                (v == 0.0).then(|| {
                    Arc::new(Float64Array::from(vec![if negative { -0.0 } else { 0.0 }]))
                        as ArrayRef
                })
            }
            DataType::Float32 => {
                let v = a.as_any().downcast_ref::<Float32Array>()?.value(0);
                (v == 0.0).then(|| {
                    Arc::new(Float32Array::from(vec![if negative {
                        -0.0f32
                    } else {
                        0.0
                    }])) as ArrayRef
                })
            }
            _ => None,
        }
    }
    let lo = match lo {
        Edge::Included(v) | Edge::Excluded(v) if zero(&v, true).is_some() => {
            Edge::Included(zero(&v, true).expect("checked"))
        }
        e => e,
    };
    let hi = match hi {
        Edge::Included(v) | Edge::Excluded(v) if zero(&v, false).is_some() => {
            Edge::Included(zero(&v, false).expect("checked"))
        }
        e => e,
    };
    (lo, hi)
}

/// Values in both: each interval of `a` cut by each of `b`.
fn intersect(a: &ValueRanges, b: &ValueRanges) -> ValueRanges {
    let mut intervals = Vec::new();
    for x in &a.intervals {
        for y in &b.intervals {
            let lo = tighter(&x.0, &y.0, Ordering::Greater);
            let hi = tighter(&x.1, &y.1, Ordering::Less);
            if !is_empty(&lo, &hi) {
                intervals.push((lo, hi));
            }
        }
    }
    ValueRanges {
        intervals,
        nulls: a.nulls && b.nulls,
        exact: a.exact && b.exact,
        strict: a.strict && b.strict,
    }
}

/// The tighter of two ends of intervals: of two low ends the higher (`inward` Greater),
/// of two high ends the lower (`inward` Less); at equal values an excluded end.
fn tighter(a: &Edge<ArrayRef>, b: &Edge<ArrayRef>, inward: Ordering) -> Edge<ArrayRef> {
    match (a, b) {
        (Edge::Unbounded, e) | (e, Edge::Unbounded) => e.clone(),
        (Edge::Included(x) | Edge::Excluded(x), Edge::Included(y) | Edge::Excluded(y)) => {
            match compare(x, y) {
                o if o == inward => a.clone(),
                Ordering::Equal if matches!(a, Edge::Excluded(_)) => a.clone(),
                _ => b.clone(),
            }
        }
    }
}

fn is_empty(lo: &Edge<ArrayRef>, hi: &Edge<ArrayRef>) -> bool {
    match (lo, hi) {
        (Edge::Unbounded, _) | (_, Edge::Unbounded) => false,
        (Edge::Included(x), Edge::Included(y)) => compare(x, y) == Ordering::Greater,
        (Edge::Included(x) | Edge::Excluded(x), Edge::Included(y) | Edge::Excluded(y)) => {
            compare(x, y) != Ordering::Less
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{bind_filter, parse};
    use arrow_schema::{Field, Schema};

    fn ranges(sql: &str) -> Option<ValueRanges> {
        let schema = Schema::new(vec![
            Field::new("x", DataType::Int64, true),
            Field::new("y", DataType::Int64, true),
        ]);
        let bound = bind_filter(&parse(sql).unwrap(), &schema).unwrap();
        value_ranges(&bound, 0)
    }

    fn ints(e: &Edge<ArrayRef>) -> String {
        use arrow_array::cast::AsArray;
        let v = |a: &ArrayRef| a.as_primitive::<arrow_array::types::Int64Type>().value(0);
        match e {
            Edge::Unbounded => "*".into(),
            Edge::Included(a) => format!("[{}", v(a)),
            Edge::Excluded(a) => format!("({}", v(a)),
        }
    }

    fn show(r: &ValueRanges) -> Vec<String> {
        let mut out: Vec<String> = r
            .intervals
            .iter()
            .map(|(a, b)| format!("{} {}", ints(a), ints(b)))
            .collect();
        if r.nulls {
            out.push("null".into());
        }
        out
    }

    #[test]
    fn comparisons_become_intervals() {
        assert_eq!(show(&ranges("x = 5").unwrap()), ["[5 [5"]);
        assert_eq!(show(&ranges("5 < x").unwrap()), ["(5 *"]);
        assert_eq!(show(&ranges("x BETWEEN 2 AND 9").unwrap()), ["[2 [9"]);
        assert_eq!(show(&ranges("x > 2 AND x <= 9").unwrap()), ["(2 [9"]);
        assert_eq!(
            show(&ranges("x IN (3, 1) OR x IS NULL").unwrap()),
            ["[3 [3", "[1 [1", "null"]
        );
        // Disjoint conditions leave nothing; another column's condition is no limit.
        assert!(show(&ranges("x > 5 AND x < 5").unwrap()).is_empty());
        assert_eq!(show(&ranges("x = 1 AND y = 2").unwrap()), ["[1 [1"]);
        assert!(ranges("x IN (1, 2) AND x > 0").unwrap().exact);
        assert!(!ranges("x = 1 AND y = 2").unwrap().exact);
        assert!(ranges("x = 1 OR y = 2").is_none());
        assert!(ranges("x <> 1").is_none());
        assert!(ranges("NOT x = 1").is_none());
        assert!(ranges("x + 1 = 2").is_none());
        assert!(show(&ranges("x = NULL").unwrap()).is_empty());
        assert!(ranges("x IS DISTINCT FROM NULL").is_none());
        assert_eq!(
            show(&ranges("x IS NOT DISTINCT FROM NULL").unwrap()),
            ["null"]
        );
        assert!(ranges("x IN (1, 2)").unwrap().strict);
        assert!(!ranges("x IN (1, NULL)").unwrap().strict);
        assert!(!ranges("x BETWEEN 1 AND NULL").unwrap().strict);
    }
}
