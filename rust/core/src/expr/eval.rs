//! Running a bound expression on a record batch with arrow's kernels, in SQL's
//! three-valued logic (a comparison with NULL is NULL; filters keep only TRUE rows).
//! Constants stay one-value scalars until a kernel needs them as long as the batch.
//! CASE and COALESCE run a value only on the rows that take it when it could fail on the
//! others (`CASE WHEN b <> 0 THEN a / b END` does not divide by zero).
use std::sync::Arc;

use arrow_arith::boolean::{and, and_kleene, and_not, is_not_null, is_null, not, or_kleene};
use arrow_array::cast::AsArray;
use arrow_array::{
    new_null_array, Array, ArrayRef, BooleanArray, Datum, Int64Array, OffsetSizeTrait, RecordBatch,
    Scalar, UInt32Array, UInt64Array,
};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::{ArrowError, DataType};
use arrow_select::filter::filter_record_batch;
use arrow_select::zip::zip;

use super::bind::{Bound, Node};
use super::compare::compare;
use super::functions::{self, Arg};
use super::{ArithOp, CmpOp, Function, Truth};
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

/// The rows `predicate` keeps among those `selected` (a mask without NULLs); the others
/// are not kept. Where the predicate could fail on some values, it runs on the selected
/// rows only: a row that is not there (deleted) must not make it fail.
pub fn evaluate_filter_where(
    predicate: &Bound,
    batch: &RecordBatch,
    selected: &BooleanArray,
) -> Result<BooleanArray> {
    let kept = eval_selected(predicate, batch, selected)
        .and_then(|v| v.into_array(batch.num_rows()))
        .map_err(|e| failed(predicate, e))?;
    let kept = kept.as_boolean_opt().ok_or_else(|| {
        Error::invalid(format!(
            "filter '{}' does not give booleans",
            predicate.text
        ))
    })?;
    Ok(BooleanArray::new(
        only_true(kept).values() & selected.values(),
        None,
    ))
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
            let and = matches!(&b.node, Node::And(..));
            let x = eval(x, batch)?.into_array(rows)?;
            let x = x.as_boolean();
            // The right side matters only where the left does not decide (AND: where it is
            // not FALSE, OR: not TRUE); it runs on those rows only when it could fail on
            // others, so that `b <> 0 AND a / b > 1` does not divide by zero.
            let decided = if and { only_false(x) } else { only_true(x) };
            let open = not(&decided)?;
            let y = eval_selected(y, batch, &open)?.into_array(rows)?;
            let y = y.as_boolean();
            Val::Array(Arc::new(if and {
                and_kleene(x, y)?
            } else {
                or_kleene(x, y)?
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
        Node::Is {
            input,
            truth,
            negated,
        } => eval(input, batch)?.map(|a| {
            let a = a.as_boolean();
            let values = a.values();
            let known = match a.nulls() {
                Some(n) => n.inner().clone(),
                None => arrow_buffer::BooleanBuffer::new_set(a.len()),
            };
            let hit = match truth {
                Truth::True => values & &known,
                Truth::False => &!values & &known,
                Truth::Unknown => !&known,
            };
            let out = if *negated { !&hit } else { hit };
            Ok(Arc::new(BooleanArray::new(out, None)) as ArrayRef)
        })?,
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
                let hit = compare(CmpOp::Eq, &x, &Scalar::new(v.clone()))?;
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
        Node::ListHas {
            input,
            values,
            search,
            impossible,
        } => {
            let l = eval(input, batch)?.into_array(rows)?;
            Val::Array(Arc::new(super::lists::list_has(
                l.as_ref(),
                values,
                *search,
                *impossible,
            )?))
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
            let out = op.apply(l.datum().as_ref(), r.datum().as_ref())?;
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
        Node::Case {
            branches,
            otherwise,
        } => {
            let mut out = new_null_array(&b.data_type, rows);
            // The rows no branch has taken yet: each condition is run on those only.
            let mut left = BooleanArray::from(vec![true; rows]);
            for (when, then) in branches {
                if left.true_count() == 0 {
                    break;
                }
                let hit = eval_selected(when, batch, &left)?.into_array(rows)?;
                // NULL is not TRUE.
                let hit = and(&left, &only_true(hit.as_boolean()))?;
                if hit.true_count() == 0 {
                    continue;
                }
                let v = eval_selected(then, batch, &hit)?;
                out = zip(&hit, v.datum().as_ref(), &out)?;
                left = and_not(&left, &hit)?;
            }
            if let Some(e) = otherwise.as_deref().filter(|_| left.true_count() > 0) {
                let v = eval_selected(e, batch, &left)?;
                out = zip(&left, v.datum().as_ref(), &out)?;
            }
            Val::Array(out)
        }
        Node::Call {
            function: Function::Coalesce,
            args,
        } => {
            let mut out = eval(&args[0], batch)?;
            for next in &args[1..] {
                out = match out {
                    Val::Scalar(s) if s.is_valid(0) => return Ok(Val::Scalar(s)),
                    // A NULL constant: the next value for every row.
                    Val::Scalar(_) => eval(next, batch)?,
                    Val::Array(a) if a.logical_null_count() == 0 => return Ok(Val::Array(a)),
                    Val::Array(a) => {
                        let missing = is_null(&a)?;
                        let v = eval_selected(next, batch, &missing)?;
                        let out = zip(&missing, v.datum().as_ref(), &a)?;
                        Val::Array(out)
                    }
                };
            }
            out
        }
        Node::Call {
            function: Function::NullIf,
            args,
        } => {
            let (x, y) = (eval(&args[0], batch)?, eval(&args[1], batch)?);
            let both_scalar = matches!((&x, &y), (Val::Scalar(_), Val::Scalar(_)));
            let same = compare(CmpOp::Eq, x.datum().as_ref(), y.datum().as_ref())?;
            let same = only_true(&same);
            let x = match x {
                Val::Scalar(s) if both_scalar => s,
                x => x.into_array(rows)?,
            };
            let out = arrow_select::nullif::nullif(&x, &same)?;
            if both_scalar {
                Val::Scalar(out)
            } else {
                Val::Array(out)
            }
        }
        Node::Call { function, args } => {
            let args = args
                .iter()
                .map(|a| {
                    Ok(match eval(a, batch)? {
                        Val::Scalar(values) => Arg {
                            values,
                            scalar: true,
                        },
                        Val::Array(values) => Arg {
                            values,
                            scalar: false,
                        },
                    })
                })
                .collect::<std::result::Result<Vec<_>, ArrowError>>()?;
            // Constants in, a constant out.
            let scalar = args.iter().all(|a| a.scalar);
            let n = if scalar { 1 } else { rows };
            let out = match *function {
                Function::Json(f) => super::json::call(f, &args, n)?,
                f => functions::call(f, &args, n, &b.data_type)?,
            };
            match scalar {
                true => Val::Scalar(out),
                false => Val::Array(out),
            }
        }
    })
}

/// TRUE where `a` is FALSE, FALSE where it is TRUE or NULL.
fn only_false(a: &BooleanArray) -> BooleanArray {
    let values = !a.values();
    match a.nulls() {
        Some(valid) => BooleanArray::new(&values & valid.inner(), None),
        None => BooleanArray::new(values, None),
    }
}

/// TRUE where `a` is TRUE, FALSE where it is FALSE or NULL.
fn only_true(a: &BooleanArray) -> BooleanArray {
    match a.nulls() {
        Some(valid) => BooleanArray::new(a.values() & valid.inner(), None),
        None => BooleanArray::new(a.values().clone(), None),
    }
}

/// `b` for the rows `selected` (a mask without NULLs) picks; other rows are NULL, or
/// whatever `b` gives there when it cannot fail. An expression that could fail is run on
/// the selected rows only: a CASE branch must not fail on rows another branch takes.
fn eval_selected(
    b: &Bound,
    batch: &RecordBatch,
    selected: &BooleanArray,
) -> std::result::Result<Val, ArrowError> {
    let rows = batch.num_rows();
    let count = selected.true_count();
    if count == rows || !may_fail(b) {
        return eval(b, batch);
    }
    if count == 0 {
        return Ok(Val::Scalar(new_null_array(&b.data_type, 1)));
    }
    let part = filter_record_batch(batch, selected)?;
    Ok(match eval(b, &part)? {
        Val::Scalar(s) => Val::Scalar(s),
        Val::Array(a) => {
            // Back to the batch's rows: row r takes the next value when selected.
            let mut next = 0u32;
            let at: UInt32Array = selected
                .values()
                .iter()
                .map(|s| {
                    s.then(|| {
                        next += 1;
                        next - 1
                    })
                })
                .collect();
            Val::Array(arrow_select::take::take(&a, &at, None)?)
        }
    })
}

/// Whether `b` could fail on some values: a division (by zero), a strict cast (of a
/// value that does not convert), decimal arithmetic (beyond 38 digits), abs or round (of
/// the smallest integer, of a decimal at its limit), substr with a count (a negative one).
fn may_fail(b: &Bound) -> bool {
    match &b.node {
        Node::Column { .. } | Node::Scalar(_) => false,
        Node::Cast { input, safe } => !safe || may_fail(input),
        Node::Arith {
            op: ArithOp::Div | ArithOp::Rem,
            ..
        } => true,
        Node::Arith { .. }
            if matches!(
                b.data_type,
                DataType::Decimal128(..) | DataType::Decimal256(..)
            ) =>
        {
            true
        }
        Node::Call {
            function: Function::Abs | Function::Round,
            ..
        } => true,
        Node::Call {
            function: Function::Substr,
            args,
        } if args.len() == 3 => true,
        Node::Cmp { left, right, .. }
        | Node::Arith { left, right, .. }
        | Node::And(left, right)
        | Node::Or(left, right)
        | Node::Index {
            input: left,
            index: right,
        } => may_fail(left) || may_fail(right),
        Node::Not(x)
        | Node::IsNull { input: x, .. }
        | Node::Is { input: x, .. }
        | Node::InList { input: x, .. }
        | Node::ListHas { input: x, .. }
        | Node::Like { input: x, .. }
        | Node::Negative(x)
        | Node::Field { input: x, .. } => may_fail(x),
        Node::Case {
            branches,
            otherwise,
        } => branches
            .iter()
            .flat_map(|(w, v)| [w, v])
            .chain(otherwise.as_deref())
            .any(may_fail),
        Node::Call { args, .. } => args.iter().any(may_fail),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{bind, bind_filter, parse, parse_expression};
    use arrow_array::{
        Float64Array, Int32Array, LargeStringArray, ListArray, StringArray, StructArray, UInt8Array,
    };
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
            (
                "ls",
                Arc::new(LargeStringArray::from(vec![
                    Some("p"),
                    None,
                    Some("q"),
                    Some("r"),
                ])),
            ),
            ("z", Arc::new(Int32Array::from(vec![0, 1, 0, 2]))),
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
    fn filters_compute_as_pylances_engine_types_them() {
        let (t, f) = (Some(true), Some(false));
        // u: 1, 2, 3, 255. An integer literal is int64 inside a filter: 255 + 1 is 256.
        assert_eq!(rows("u + 1 = 0"), vec![f, f, f, f]);
        assert_eq!(rows("u + 1 > 255"), vec![f, f, f, t]);
        // b: 1.5, 2.5, NULL, 4.0; the three of BETWEEN meet in one type.
        assert_eq!(rows("b BETWEEN 1 AND 2.0"), vec![t, f, None, f]);
        assert_eq!(rows("b = DECIMAL(3, 1) '1.5'"), vec![t, f, None, f]);
        // "x" is a string, as in pylance.
        assert_eq!(rows("s = \"x\""), vec![t, f, f, None]);
        // a: 1, 2, 3, NULL. NULL is a value to IS [NOT] DISTINCT FROM.
        assert_eq!(rows("a IS DISTINCT FROM 1"), vec![f, t, t, t]);
        assert_eq!(rows("a IS NOT DISTINCT FROM NULL"), vec![f, f, f, t]);
        assert_eq!(rows("b IS NOT DISTINCT FROM -0.0 + 1.5"), vec![t, f, f, f]);
        // IS [NOT] TRUE / FALSE / UNKNOWN never give NULL.
        assert_eq!(rows("(a > 1) IS NOT TRUE"), vec![t, f, f, t]);
        assert_eq!(rows("NOT ((a > 1) IS FALSE)"), vec![f, t, t, t]);
        assert_eq!(rows("(a > 1) IS UNKNOWN"), vec![f, f, f, t]);
        // A comparison with NULL is NULL without computing the other side.
        assert_eq!(rows("a / z = NULL"), vec![None; 4]);
    }

    #[test]
    fn and_or_run_their_right_side_where_it_matters() {
        let (t, f) = (Some(true), Some(false));
        // z: 0, 1, 0, 2. Unguarded, a / z divides by zero.
        assert!(refused_at_run("a / z > 1").contains("Divide by zero"));
        assert_eq!(rows("z <> 0 AND a / z > 1"), vec![f, t, f, None]);
        assert_eq!(rows("z = 0 OR a / z > 1"), vec![t, t, t, None]);
        assert_eq!(rows("NOT (z = 0 OR a / z <= 1)"), vec![f, t, f, None]);
    }

    fn refused_at_run(sql: &str) -> String {
        let b = batch();
        let bound = bind_filter(&parse(sql).unwrap(), &b.schema()).unwrap();
        evaluate_filter(&bound, &b).unwrap_err().to_string()
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

    /// `sql` gives exactly `expected` (type, values and NULLs).
    fn gives(sql: &str, expected: impl Array + 'static) {
        assert_eq!(value(sql).as_ref(), &expected as &dyn Array, "{sql}");
    }

    #[test]
    fn case_takes_the_first_true_branch() {
        // a: 1, 2, 3, NULL
        gives(
            "CASE WHEN a > 1 THEN 'big' WHEN a = 1 THEN 'one' END",
            StringArray::from(vec![Some("one"), Some("big"), Some("big"), None]),
        );
        gives(
            "CASE WHEN a >= 1 THEN 'first' WHEN a >= 2 THEN 'second' ELSE 'none' END",
            StringArray::from(vec!["first", "first", "first", "none"]),
        );
        // A NULL condition is not TRUE: the NULL row takes ELSE. The literal is int64, so
        // the result is too (as pylance types CASE inside a filter).
        gives(
            "CASE WHEN a > 2 THEN a ELSE 0 END",
            Int64Array::from(vec![0, 0, 3, 0]),
        );
        // Results meet in their common type (a is int32, b double); a fraction widens.
        gives(
            "CASE WHEN a > 1 THEN a ELSE b END",
            Float64Array::from(vec![1.5, 2.0, 3.0, 4.0]),
        );
        gives(
            "CASE WHEN a > 1 THEN a ELSE 0.5 END",
            Float64Array::from(vec![0.5, 2.0, 3.0, 0.5]),
        );
        gives(
            "CASE WHEN a = 1 THEN ls ELSE 'other' END",
            LargeStringArray::from(vec!["p", "other", "other", "other"]),
        );
        gives(
            "CASE WHEN a = 1 THEN ls WHEN a = 2 THEN s END",
            LargeStringArray::from(vec![Some("p"), Some("15"), None, None]),
        );
        gives(
            "CASE WHEN a = 1 THEN 1 ELSE NULL END",
            Int64Array::from(vec![Some(1), None, None, None]),
        );
        let nulls = value("CASE WHEN a > 1 THEN NULL END");
        assert_eq!(
            (nulls.data_type(), nulls.logical_null_count()),
            (&DataType::Null, 4)
        );
        gives(
            "CASE WHEN TRUE THEN s END",
            StringArray::from(vec![Some("x"), Some("15"), Some("abc"), None]),
        );
        // Nested, and as a filter.
        gives(
            "CASE WHEN a > 1 THEN CASE WHEN a > 2 THEN 'c' ELSE 'b' END ELSE 'a' END",
            StringArray::from(vec!["a", "b", "c", "a"]),
        );
        assert_eq!(
            rows("CASE WHEN a > 1 THEN s = 'abc' ELSE b > 1 END"),
            vec![Some(true), Some(false), Some(true), Some(true)]
        );
        assert_eq!(
            rows("CASE WHEN a > 1 THEN s = 'abc' END"),
            vec![None, Some(false), Some(true), None]
        );
    }

    #[test]
    fn simple_case_compares_its_operand() {
        gives(
            "CASE a WHEN 1 THEN 'x' WHEN 2 THEN 'y' ELSE 'z' END",
            StringArray::from(vec!["x", "y", "z", "z"]),
        );
        // NULL equals nothing, not even NULL.
        gives(
            "CASE a WHEN NULL THEN 1 ELSE 2 END",
            Int64Array::from(vec![2, 2, 2, 2]),
        );
        gives(
            "CASE s WHEN 'abc' THEN ls WHEN 'x' THEN 'first' END",
            LargeStringArray::from(vec![Some("first"), None, Some("q"), None]),
        );
        gives(
            "CASE a % 2 WHEN 0 THEN 'even' ELSE 'odd' END",
            StringArray::from(vec!["odd", "even", "odd", "odd"]),
        );
    }

    #[test]
    fn case_runs_a_branch_only_on_its_rows() {
        // z: 0, 1, 0, 2. Unguarded, the division fails.
        let b = batch();
        let bound = bind(&parse_expression("a / z").unwrap(), &b.schema()).unwrap();
        assert!(evaluate(&bound, &b)
            .unwrap_err()
            .to_string()
            .contains("Divide by zero"));
        gives(
            "CASE WHEN z <> 0 THEN a / z ELSE -1 END",
            Int64Array::from(vec![Some(-1), Some(2), Some(-1), None]),
        );
        gives(
            "CASE WHEN z = 0 THEN 0 WHEN a / z > 1 THEN 1 ELSE 2 END",
            Int64Array::from(vec![0, 1, 0, 2]),
        );
        gives(
            "CASE WHEN z = 0 THEN NULL ELSE CAST(a / z AS STRING) END",
            StringArray::from(vec![None, Some("2"), None, None]),
        );
        gives(
            "CASE z WHEN 0 THEN 0.0 ELSE b / z END",
            Float64Array::from(vec![Some(0.0), Some(2.5), Some(0.0), Some(2.0)]),
        );
    }

    #[test]
    fn case_errors() {
        let b = batch();
        let refused = |sql: &str| {
            bind(&parse_expression(sql).unwrap(), &b.schema())
                .unwrap_err()
                .to_string()
        };
        for (sql, message) in [
            (
                "CASE WHEN a THEN 1 END",
                "column 'a' is Int32, not a boolean",
            ),
            (
                "CASE WHEN a > 1 THEN a ELSE 'x' END",
                "CASE cannot give column 'a' (Int32) and the string 'x' one type",
            ),
            (
                "CASE WHEN a > 1 THEN a ELSE s END",
                "CASE cannot give column 'a' (Int32) and column 's' (Utf8) one type",
            ),
            (
                "CASE WHEN a > 1 THEN s ELSE l END",
                "CASE cannot give column 's'",
            ),
            (
                "CASE s WHEN 1 THEN 2 END",
                "cannot compare column 's' of type Utf8 with the integer 1",
            ),
            ("CASE WHEN a > 1 THEN 1 ELSE 'x' END", "the string 'x'"),
            (
                "CASE WHEN zz THEN 1 END",
                "it refers to 'zz', which is not a column",
            ),
            (
                "CASE WHEN a > 1 THEN zz END",
                "it refers to 'zz', which is not a column",
            ),
        ] {
            let e = refused(sql);
            assert!(
                e.starts_with("cannot use expression 'CASE ") && e.contains(message),
                "{sql}: {e}"
            );
        }
        assert!(parse_expression("CASE WHEN a THEN 1").is_err());
    }

    #[test]
    fn case_columns_and_text() {
        let e =
            parse_expression("CASE k WHEN 1 THEN lower(s) WHEN x.y THEN 2 ELSE concat(t, 'x') END")
                .unwrap();
        assert_eq!(
            e.columns().into_iter().collect::<Vec<_>>(),
            vec!["k", "s", "t", "x"]
        );
        for sql in [
            "CASE WHEN a > 1 THEN 'big' WHEN a IS NULL THEN NULL ELSE s END",
            "CASE a WHEN 1 THEN 2 END + 1",
            "CASE WHEN CASE WHEN a > 1 THEN TRUE END THEN 1 END",
        ] {
            let e = parse_expression(sql).unwrap();
            assert_eq!(parse_expression(&e.to_string()).unwrap(), e, "{sql} -> {e}");
        }
    }

    #[test]
    fn a_timestamp_with_an_offset_is_an_instant_in_any_zone() {
        // 2024-01-01 05:00 UTC: midnight in New York.
        let t = arrow_array::TimestampMicrosecondArray::from(vec![1_704_085_200_000_000])
            .with_timezone("America/New_York");
        let b = RecordBatch::try_from_iter(vec![("t", Arc::new(t) as ArrayRef)]).unwrap();
        for (sql, passes) in [
            ("t = TIMESTAMP '2024-01-01 05:00:00+00:00'", true),
            ("t = TIMESTAMP '2024-01-01 00:00:00-05:00'", true),
            ("t = TIMESTAMP '2024-01-01 05:00:00Z'", true),
            ("t < TIMESTAMP '2024-01-01 04:00:00+00:00'", false),
            // Without an offset it is a wall clock reading in the column's zone.
            ("t = TIMESTAMP '2024-01-01 00:00:00'", true),
            ("t = TIMESTAMP '2024-01-01 05:00:00'", false),
        ] {
            let bound = bind_filter(&parse(sql).unwrap(), &b.schema()).unwrap();
            let got: Vec<_> = evaluate_filter(&bound, &b).unwrap().iter().collect();
            assert_eq!(got, vec![Some(passes)], "{sql}");
        }
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
