//! Running a bound expression on a record batch with arrow's kernels, in SQL's
//! three-valued logic (a comparison with NULL is NULL; filters keep only TRUE rows).
//! Constants stay one-value scalars until a kernel needs them as long as the batch.
use std::sync::Arc;

use arrow_arith::boolean::{and_kleene, is_not_null, is_null, not, or_kleene};
use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, BooleanArray, Datum, Int64Array, OffsetSizeTrait, RecordBatch, Scalar,
    UInt64Array,
};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::{ArrowError, DataType};

use super::bind::{Bound, Node};
use super::{ArithOp, CmpOp};
use crate::error::{Error, Result};

/// A value during evaluation: one per row, or one for every row.
enum Val {
    Array(ArrayRef),
    Scalar(ArrayRef),
}

impl Val {
    fn datum(&self) -> Box<dyn Datum + '_> {
        match self {
            Val::Array(a) => Box::new(a.clone()),
            Val::Scalar(s) => Box::new(Scalar::new(s.clone())),
        }
    }

    fn into_array(self, rows: usize) -> std::result::Result<ArrayRef, ArrowError> {
        match self {
            Val::Array(a) => Ok(a),
            Val::Scalar(s) if rows == 1 => Ok(s),
            Val::Scalar(s) => {
                let idx = arrow_array::UInt32Array::from(vec![0u32; rows]);
                arrow_select::take::take(&s, &idx, None)
            }
        }
    }

    /// Apply a kernel that keeps shape (scalar in, scalar out).
    fn map(
        self,
        f: impl FnOnce(&ArrayRef) -> std::result::Result<ArrayRef, ArrowError>,
    ) -> std::result::Result<Val, ArrowError> {
        Ok(match self {
            Val::Array(a) => Val::Array(f(&a)?),
            Val::Scalar(s) => Val::Scalar(f(&s)?),
        })
    }
}

/// The value of `expr` for every row of `batch`.
pub fn evaluate(expr: &Bound, batch: &RecordBatch) -> Result<ArrayRef> {
    eval(expr, batch)
        .and_then(|v| v.into_array(batch.num_rows()))
        .map_err(|e| failed(expr, e))
}

/// The rows `predicate` (bound with `bind_filter`) keeps: TRUE, not FALSE or NULL.
pub fn evaluate_filter(predicate: &Bound, batch: &RecordBatch) -> Result<BooleanArray> {
    let a = evaluate(predicate, batch)?;
    a.as_boolean_opt().cloned().ok_or_else(|| {
        Error::invalid(format!(
            "filter '{}' does not give booleans",
            predicate.text
        ))
    })
}

fn failed(expr: &Bound, e: ArrowError) -> Error {
    Error::invalid(format!("cannot evaluate '{}': {e}", expr.text))
}

fn eval(b: &Bound, batch: &RecordBatch) -> std::result::Result<Val, ArrowError> {
    let rows = batch.num_rows();
    Ok(match &b.node {
        Node::Column { index, fields } => {
            let mut a = batch.column(*index).clone();
            for &i in fields {
                a = struct_field(&a, i)?;
            }
            Val::Array(a)
        }
        Node::Scalar(s) => Val::Scalar(s.clone()),
        Node::Cast { input, safe } => {
            let opts = CastOptions {
                safe: *safe,
                ..Default::default()
            };
            eval(input, batch)?.map(|a| cast_with_options(a, &b.data_type, &opts))?
        }
        Node::Cmp { op, left, right } => {
            let (l, r) = (eval(left, batch)?, eval(right, batch)?);
            let both_scalar = matches!((&l, &r), (Val::Scalar(_), Val::Scalar(_)));
            let out: ArrayRef = Arc::new(compare(*op, l.datum().as_ref(), r.datum().as_ref())?);
            if both_scalar {
                Val::Scalar(out)
            } else {
                Val::Array(out)
            }
        }
        Node::And(x, y) | Node::Or(x, y) => {
            let x = eval(x, batch)?.into_array(rows)?;
            let y = eval(y, batch)?.into_array(rows)?;
            let (x, y) = (x.as_boolean(), y.as_boolean());
            Val::Array(Arc::new(match &b.node {
                Node::And(..) => and_kleene(x, y)?,
                _ => or_kleene(x, y)?,
            }))
        }
        Node::Not(x) => eval(x, batch)?.map(|a| Ok(Arc::new(not(a.as_boolean())?) as ArrayRef))?,
        Node::IsNull { input, negated } => {
            let a = eval(input, batch)?.into_array(rows)?;
            Val::Array(Arc::new(if *negated {
                is_not_null(&a)?
            } else {
                is_null(&a)?
            }))
        }
        Node::InList {
            input,
            values,
            negated,
        } => {
            let x = eval(input, batch)?.into_array(rows)?;
            if let Some(hits) = in_list_bytes(&x, values) {
                return Ok(Val::Array(Arc::new(if *negated {
                    not(&hits)?
                } else {
                    hits
                })));
            }
            let mut acc: Option<BooleanArray> = None;
            for v in values {
                let hit = arrow_ord::cmp::eq(&x, &Scalar::new(v.clone()))?;
                acc = Some(match acc {
                    None => hit,
                    Some(prev) => or_kleene(&prev, &hit)?,
                });
            }
            let acc = match acc {
                Some(a) => a,
                // IN () is false, except for NULL values.
                None => arrow_arith::boolean::and_kleene(
                    &BooleanArray::from(vec![false; rows]),
                    &is_not_null(&x)?,
                )?,
            };
            Val::Array(Arc::new(if *negated { not(&acc)? } else { acc }))
        }
        Node::Like {
            input,
            pattern,
            negated,
            case_insensitive,
        } => {
            use arrow_string::like;
            let a = eval(input, batch)?.into_array(rows)?;
            let p = Scalar::new(pattern.clone());
            Val::Array(Arc::new(match (*negated, *case_insensitive) {
                (false, false) => like::like(&a, &p)?,
                (true, false) => like::nlike(&a, &p)?,
                (false, true) => like::ilike(&a, &p)?,
                (true, true) => like::nilike(&a, &p)?,
            }))
        }
        Node::Arith { op, left, right } => {
            let (l, r) = (eval(left, batch)?, eval(right, batch)?);
            let both_scalar = matches!((&l, &r), (Val::Scalar(_), Val::Scalar(_)));
            let out = arith_kernel(*op, l.datum().as_ref(), r.datum().as_ref())?;
            if both_scalar {
                Val::Scalar(out)
            } else {
                Val::Array(out)
            }
        }
        Node::Negative(x) => eval(x, batch)?.map(|a| arrow_arith::numeric::neg_wrapping(a))?,
        Node::Field { input, index } => {
            let a = eval(input, batch)?.into_array(rows)?;
            Val::Array(struct_field(&a, *index)?)
        }
        Node::Index { input, index } => {
            let list = eval(input, batch)?.into_array(rows)?;
            let index = eval(index, batch)?.into_array(rows)?;
            Val::Array(list_element(&list, index.as_primitive())?)
        }
    })
}

fn compare(
    op: CmpOp,
    l: &dyn Datum,
    r: &dyn Datum,
) -> std::result::Result<BooleanArray, ArrowError> {
    use arrow_ord::cmp;
    match op {
        CmpOp::Eq => cmp::eq(l, r),
        CmpOp::NotEq => cmp::neq(l, r),
        CmpOp::Lt => cmp::lt(l, r),
        CmpOp::LtEq => cmp::lt_eq(l, r),
        CmpOp::Gt => cmp::gt(l, r),
        CmpOp::GtEq => cmp::gt_eq(l, r),
    }
}

/// Integer overflow wraps (as in pylance); division by zero is an error.
pub(super) fn arith_kernel(
    op: ArithOp,
    l: &dyn Datum,
    r: &dyn Datum,
) -> std::result::Result<ArrayRef, ArrowError> {
    use arrow_arith::numeric;
    match op {
        ArithOp::Add => numeric::add_wrapping(l, r),
        ArithOp::Sub => numeric::sub_wrapping(l, r),
        ArithOp::Mul => numeric::mul_wrapping(l, r),
        ArithOp::Div => numeric::div(l, r),
        ArithOp::Rem => numeric::rem(l, r),
    }
}

/// Child `i` of a struct array; a null struct makes its field null.
fn struct_field(a: &ArrayRef, i: usize) -> std::result::Result<ArrayRef, ArrowError> {
    let s = a.as_struct_opt().ok_or_else(|| {
        ArrowError::InvalidArgumentError(format!("{} is not a struct", a.data_type()))
    })?;
    let child = s.column(i).clone();
    let nulls = arrow_buffer::NullBuffer::union(s.nulls(), child.nulls());
    if nulls.as_ref().map(|n| n.null_count()) == child.nulls().map(|n| n.null_count()) {
        return Ok(child);
    }
    let data = child.to_data().into_builder().nulls(nulls).build()?;
    Ok(arrow_array::make_array(data))
}

/// Element `index[r]` of each list (from 1; from the end when negative); NULL when the
/// list is NULL or too short.
fn list_element(
    list: &ArrayRef,
    index: &arrow_array::PrimitiveArray<arrow_array::types::Int64Type>,
) -> std::result::Result<ArrayRef, ArrowError> {
    fn positions<O: OffsetSizeTrait>(
        offsets: &[O],
        valid: impl Fn(usize) -> bool,
        index: &Int64Array,
    ) -> UInt64Array {
        (0..offsets.len() - 1)
            .map(|r| {
                let (start, end) = (
                    offsets[r].as_usize() as i64,
                    offsets[r + 1].as_usize() as i64,
                );
                if !valid(r) || index.is_null(r) {
                    return None;
                }
                let k = index.value(r);
                let at = match k {
                    k if k > 0 && k <= end - start => start + k - 1,
                    k if k < 0 && -k <= end - start => end + k,
                    _ => return None,
                };
                Some(at as u64)
            })
            .collect()
    }
    let valid = |r: usize| list.is_valid(r);
    let (values, take) = match list.data_type() {
        DataType::List(_) => {
            let l = list.as_list::<i32>();
            (
                l.values().clone(),
                positions(l.value_offsets(), valid, index),
            )
        }
        DataType::LargeList(_) => {
            let l = list.as_list::<i64>();
            (
                l.values().clone(),
                positions(l.value_offsets(), valid, index),
            )
        }
        DataType::FixedSizeList(_, dim) => {
            let l = list.as_fixed_size_list();
            // arrow-rs slices a fixed-size list's values with it: row r starts at r * dim.
            let offsets: Vec<i64> = (0..=l.len() as i64).map(|r| r * *dim as i64).collect();
            (l.values().clone(), positions(&offsets, valid, index))
        }
        other => {
            return Err(ArrowError::InvalidArgumentError(format!(
                "{other} is not a list"
            )))
        }
    };
    arrow_select::take::take(&values, &take, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{bind, bind_filter, parse, parse_expression};
    use arrow_array::{Float64Array, Int32Array, ListArray, StringArray, StructArray, UInt8Array};
    use arrow_schema::{Field, Fields};

    fn batch() -> RecordBatch {
        let st = StructArray::new(
            Fields::from(vec![Field::new("x", DataType::Int64, true)]),
            vec![Arc::new(Int64Array::from(vec![
                Some(1),
                Some(2),
                None,
                Some(4),
            ]))],
            Some(vec![true, true, false, true].into()),
        );
        let list = ListArray::from_iter_primitive::<arrow_array::types::Int32Type, _, _>(vec![
            Some(vec![Some(1), Some(2), Some(3)]),
            Some(vec![Some(4)]),
            Some(vec![]),
            None,
        ]);
        RecordBatch::try_from_iter(vec![
            (
                "a",
                Arc::new(Int32Array::from(vec![Some(1), Some(2), Some(3), None])) as ArrayRef,
            ),
            (
                "b",
                Arc::new(Float64Array::from(vec![
                    Some(1.5),
                    Some(2.5),
                    None,
                    Some(4.0),
                ])),
            ),
            (
                "s",
                Arc::new(StringArray::from(vec![
                    Some("x"),
                    Some("15"),
                    Some("abc"),
                    None,
                ])),
            ),
            ("u", Arc::new(UInt8Array::from(vec![1, 2, 3, 255]))),
            ("st", Arc::new(st)),
            ("l", Arc::new(list)),
        ])
        .unwrap()
    }

    fn value(sql: &str) -> ArrayRef {
        let b = batch();
        let bound = bind(&parse_expression(sql).unwrap(), &b.schema()).unwrap();
        let out = evaluate(&bound, &b).unwrap();
        assert_eq!(out.data_type(), &bound.data_type, "{sql}");
        out
    }

    fn rows(sql: &str) -> Vec<Option<bool>> {
        let b = batch();
        let bound = bind_filter(&parse(sql).unwrap(), &b.schema()).unwrap();
        evaluate_filter(&bound, &b).unwrap().iter().collect()
    }

    fn refused(sql: &str) -> String {
        let b = batch();
        bind_filter(&parse(sql).unwrap(), &b.schema())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn literals_take_the_type_they_meet() {
        // As pylance: an integer literal keeps an int32 column int32, a uint8 uint8.
        assert_eq!(value("a + 1").data_type(), &DataType::Int32);
        assert_eq!(value("u + 1").data_type(), &DataType::UInt8);
        // Integer overflow wraps.
        assert_eq!(
            value("u + 1")
                .as_primitive::<arrow_array::types::UInt8Type>()
                .value(3),
            0
        );
        // Two columns meet in their common type.
        assert_eq!(value("a + b").data_type(), &DataType::Float64);
        // A fraction against integers widens instead of truncating.
        let v = value("a * 2.5");
        assert_eq!(
            v.as_primitive::<arrow_array::types::Float64Type>().value(1),
            5.0
        );
        assert_eq!(
            rows("a > 1.5"),
            vec![Some(false), Some(true), Some(true), None]
        );
        // A literal beyond the column's type widens too.
        assert_eq!(rows("u > 1000"), vec![Some(false); 4]);
        assert_eq!(value("1").data_type(), &DataType::Int64);
    }

    #[test]
    fn strings_and_numbers_do_not_compare() {
        for sql in [
            "s > 10",
            "s BETWEEN 10 AND 20",
            "s IN (1, 2)",
            "a = 'x'",
            "a LIKE '1%'",
            "b > 'x'",
        ] {
            let err = refused(sql);
            assert!(err.contains("cannot"), "{sql}: {err}");
        }
        let err = refused("s > 10");
        assert!(
            err.contains("column 's'") && err.contains("Utf8") && err.contains("integer 10"),
            "{err}"
        );
        assert!(refused("a").contains("not booleans"));
    }

    #[test]
    fn nested_access_and_lists() {
        let x = value("st['x']");
        assert_eq!(
            x.as_primitive::<arrow_array::types::Int64Type>()
                .iter()
                .collect::<Vec<_>>(),
            vec![Some(1), Some(2), None, Some(4)]
        );
        assert_eq!(value("st.x").len(), 4);
        let first = value("l[1]");
        assert_eq!(
            first
                .as_primitive::<arrow_array::types::Int32Type>()
                .iter()
                .collect::<Vec<_>>(),
            vec![Some(1), Some(4), None, None]
        );
        let last = value("l[-1]");
        assert_eq!(
            last.as_primitive::<arrow_array::types::Int32Type>()
                .iter()
                .collect::<Vec<_>>(),
            vec![Some(3), Some(4), None, None]
        );
        assert_eq!(value("l[5]").null_count(), 4);
        assert_eq!(rows("l[2] = 2"), vec![Some(true), None, None, None]);
    }

    #[test]
    fn casts_and_negation() {
        assert_eq!(value("CAST(a AS DOUBLE)").data_type(), &DataType::Float64);
        assert_eq!(value("CAST(a AS STRING)").as_string::<i32>().value(0), "1");
        assert_eq!(value("a::bigint").data_type(), &DataType::Int64);
        let t = value("TRY_CAST(s AS INT)");
        assert_eq!(
            t.as_primitive::<arrow_array::types::Int32Type>()
                .iter()
                .collect::<Vec<_>>(),
            vec![None, Some(15), None, None]
        );
        let b = batch();
        let bound = bind(&parse_expression("CAST(s AS INT)").unwrap(), &b.schema()).unwrap();
        assert!(evaluate(&bound, &b)
            .unwrap_err()
            .to_string()
            .contains("cannot evaluate"));
        assert_eq!(
            value("-a")
                .as_primitive::<arrow_array::types::Int32Type>()
                .value(0),
            -1
        );
        assert_eq!(
            rows("a IS NULL"),
            vec![Some(false), Some(false), Some(false), Some(true)]
        );
        assert_eq!(
            rows("NOT (a > 1)"),
            vec![Some(true), Some(false), Some(false), None]
        );
    }

    #[test]
    fn expressions_print_as_sql_that_parses_back() {
        for sql in [
            "(a + 1) > 2",
            "s LIKE 'a%'",
            "st['x'] IS NOT NULL",
            "a IN (1, 2)",
            "CAST(a AS Float64)",
        ] {
            let e = parse(sql).unwrap();
            let again = parse(&e.to_string());
            // Arrow type names in casts do not parse back as SQL; everything else does.
            if !sql.contains("CAST") {
                assert_eq!(again.unwrap(), e, "{sql} -> {e}");
            }
        }
    }
}

/// `x IN (values)` for strings and binaries in one pass over the rows (a comparison per
/// value would walk them once per value). SQL's rules: NULL rows give NULL, and so do rows
/// matching nothing when a value of the list is NULL. None for other types.
fn in_list_bytes(x: &ArrayRef, values: &[ArrayRef]) -> Option<BooleanArray> {
    if values.is_empty()
        || values
            .iter()
            .any(|v| v.data_type() != x.data_type() || v.len() != 1)
    {
        return None;
    }
    let mut wanted: Vec<Vec<u8>> = Vec::with_capacity(values.len());
    let mut null_in_list = false;
    for v in values {
        match v.is_null(0) {
            true => null_in_list = true,
            false => wanted.push(value_bytes(v.as_ref(), 0)?.to_vec()),
        }
    }
    let n = x.len();
    // One loop per array type, so that reading a value is inlined.
    let hit = match x.data_type() {
        DataType::Utf8 => {
            let a = x.as_string::<i32>();
            hits(n, |i| a.value(i).as_bytes(), &wanted)
        }
        DataType::LargeUtf8 => {
            let a = x.as_string::<i64>();
            hits(n, |i| a.value(i).as_bytes(), &wanted)
        }
        DataType::Utf8View => {
            let a = x.as_string_view();
            hits(n, |i| a.value(i).as_bytes(), &wanted)
        }
        DataType::Binary => {
            let a = x.as_binary::<i32>();
            hits(n, |i| a.value(i), &wanted)
        }
        DataType::LargeBinary => {
            let a = x.as_binary::<i64>();
            hits(n, |i| a.value(i), &wanted)
        }
        DataType::BinaryView => {
            let a = x.as_binary_view();
            hits(n, |i| a.value(i), &wanted)
        }
        _ => return None,
    };
    let valid = match (x.logical_nulls(), null_in_list) {
        (nulls, false) => nulls,
        // Unmatched rows are NULL: valid only where matched (and the row is not null).
        (nulls, true) => {
            let matched = arrow_buffer::NullBuffer::new(hit.clone());
            arrow_buffer::NullBuffer::union(nulls.as_ref(), Some(&matched))
        }
    };
    Some(BooleanArray::new(hit, valid))
}

/// The bytes of value `i` of a string or binary array.
fn value_bytes(a: &dyn Array, i: usize) -> Option<&[u8]> {
    Some(match a.data_type() {
        DataType::Utf8 => a.as_string::<i32>().value(i).as_bytes(),
        DataType::LargeUtf8 => a.as_string::<i64>().value(i).as_bytes(),
        DataType::Utf8View => a.as_string_view().value(i).as_bytes(),
        DataType::Binary => a.as_binary::<i32>().value(i),
        DataType::LargeBinary => a.as_binary::<i64>().value(i),
        DataType::BinaryView => a.as_binary_view().value(i),
        _ => return None,
    })
}

/// Which of `n` values (`get(i)`) are one of `wanted`.
fn hits<'a>(
    n: usize,
    get: impl Fn(usize) -> &'a [u8],
    wanted: &[Vec<u8>],
) -> arrow_buffer::BooleanBuffer {
    if wanted.len() <= 8 {
        // A few values: comparing with each beats hashing every row.
        let needles: Vec<Needle> = wanted.iter().map(|w| Needle::new(w)).collect();
        arrow_buffer::BooleanBuffer::collect_bool(n, |i| {
            let v = get(i);
            needles.iter().any(|k| k.matches(v))
        })
    } else {
        let set: std::collections::HashSet<&[u8]> = wanted.iter().map(|w| w.as_slice()).collect();
        arrow_buffer::BooleanBuffer::collect_bool(n, |i| set.contains(get(i)))
    }
}

/// A value to find among short strings: equal lengths, then the first and last 8 bytes
/// compared as words, which for values of up to 16 bytes is the whole comparison (a
/// call to memcmp per row would cost more than the compare).
struct Needle<'a> {
    bytes: &'a [u8],
    head: u64,
    tail: u64,
}

impl<'a> Needle<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Needle {
            bytes,
            head: head_word(bytes),
            tail: tail_word(bytes),
        }
    }

    #[inline]
    fn matches(&self, v: &[u8]) -> bool {
        v.len() == self.bytes.len()
            && head_word(v) == self.head
            && tail_word(v) == self.tail
            && (v.len() <= 16 || v[8..v.len() - 8] == self.bytes[8..self.bytes.len() - 8])
    }
}

/// The first 8 bytes (zero-padded when shorter).
#[inline]
fn head_word(v: &[u8]) -> u64 {
    match v.get(..8) {
        Some(w) => u64::from_le_bytes(w.try_into().unwrap_or_default()),
        None => {
            let mut w = [0u8; 8];
            w[..v.len()].copy_from_slice(v);
            u64::from_le_bytes(w)
        }
    }
}

/// The last 8 bytes (0 when shorter: the head covered them).
#[inline]
fn tail_word(v: &[u8]) -> u64 {
    match v.len() {
        n if n >= 8 => u64::from_le_bytes(v[n - 8..].try_into().unwrap_or_default()),
        _ => 0,
    }
}
