//! Evaluating an `Expr` on a record batch with arrow's kernels, in SQL's three-valued
//! logic (a comparison with NULL is NULL; filters keep only TRUE rows).
use std::sync::Arc;

use arrow_arith::boolean::{and_kleene, is_not_null, is_null, not, or_kleene};
use arrow_array::cast::AsArray;
use arrow_array::{
    new_null_array, Array, ArrayRef, BinaryArray, BooleanArray, Datum, Float64Array, Int64Array,
    RecordBatch, Scalar, StringArray, StructArray, UInt64Array,
};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::DataType;

use super::{ArithOp, CmpOp, Expr, Literal};
use crate::error::{Error, Result};

enum Value {
    Array(ArrayRef),
    Literal(Literal),
}

/// Evaluate a boolean expression: one value per row (NULL where unknown).
pub fn evaluate(expr: &Expr, batch: &RecordBatch) -> Result<BooleanArray> {
    match eval(expr, batch)? {
        Value::Array(a) => as_bool(&a, expr),
        Value::Literal(l) => {
            let a = literal_array(&l, &DataType::Boolean, batch.num_rows())?;
            as_bool(&a, expr)
        }
    }
}

fn as_bool(a: &ArrayRef, expr: &Expr) -> Result<BooleanArray> {
    a.as_boolean_opt().cloned().ok_or_else(|| {
        Error::invalid(format!(
            "filter {expr:?} is not a boolean expression (it gives {})",
            a.data_type()
        ))
    })
}

/// A column by name (exact, else ignoring case), then fields of structs; a null struct
/// makes its fields null.
fn column(path: &[String], batch: &RecordBatch) -> Result<ArrayRef> {
    let schema = batch.schema();
    let find = |names: Vec<&String>, want: &str| -> Option<usize> {
        names
            .iter()
            .position(|n| n.as_str() == want)
            .or_else(|| names.iter().position(|n| n.eq_ignore_ascii_case(want)))
    };
    let names: Vec<&String> = schema.fields().iter().map(|f| f.name()).collect();
    let i = find(names, &path[0]).ok_or_else(|| {
        Error::invalid(format!(
            "filter refers to '{}', which is not a column",
            path.join(".")
        ))
    })?;
    let mut array = batch.column(i).clone();
    for name in &path[1..] {
        let s = array
            .as_any()
            .downcast_ref::<StructArray>()
            .ok_or_else(|| {
                Error::invalid(format!(
                    "filter refers to '{}', but '{name}' is not inside a struct",
                    path.join(".")
                ))
            })?;
        let names: Vec<&String> = s.fields().iter().map(|f| f.name()).collect();
        let j = find(names, name).ok_or_else(|| {
            Error::invalid(format!(
                "filter refers to '{}', which does not exist",
                path.join(".")
            ))
        })?;
        let child = s.column(j).clone();
        let nulls = arrow_buffer::NullBuffer::union(s.nulls(), child.nulls());
        array = crate::encoding::layout::with_nulls(child, nulls)?;
    }
    Ok(array)
}

fn eval(expr: &Expr, batch: &RecordBatch) -> Result<Value> {
    let boolean = |e: &Expr| -> Result<BooleanArray> { evaluate(e, batch) };
    Ok(Value::Array(match expr {
        Expr::Column(path) => column(path, batch)?,
        Expr::Literal(l) => return Ok(Value::Literal(l.clone())),
        Expr::And(a, b) => Arc::new(and_kleene(&boolean(a)?, &boolean(b)?)?),
        Expr::Or(a, b) => Arc::new(or_kleene(&boolean(a)?, &boolean(b)?)?),
        Expr::Not(a) => Arc::new(not(&boolean(a)?)?),
        Expr::IsNull { expr, negated } => {
            let a = to_array(eval(expr, batch)?, None, batch.num_rows())?;
            Arc::new(if *negated {
                is_not_null(&a)?
            } else {
                is_null(&a)?
            })
        }
        Expr::Cmp { op, left, right } => Arc::new(compare(
            *op,
            eval(left, batch)?,
            eval(right, batch)?,
            batch.num_rows(),
            expr,
        )?),
        Expr::Arith { op, left, right } => arith(
            *op,
            eval(left, batch)?,
            eval(right, batch)?,
            batch.num_rows(),
            expr,
        )?,
        Expr::InList {
            expr: e,
            list,
            negated,
        } => {
            let target = eval(e, batch)?;
            let mut acc: Option<BooleanArray> = None;
            for item in list {
                let target = match &target {
                    Value::Array(a) => Value::Array(a.clone()),
                    Value::Literal(l) => Value::Literal(l.clone()),
                };
                let hit = compare(
                    CmpOp::Eq,
                    target,
                    Value::Literal(item.clone()),
                    batch.num_rows(),
                    expr,
                )?;
                acc = Some(match acc {
                    None => hit,
                    Some(prev) => or_kleene(&prev, &hit)?,
                });
            }
            let acc = acc.unwrap_or_else(|| BooleanArray::from(vec![false; batch.num_rows()]));
            Arc::new(if *negated { not(&acc)? } else { acc })
        }
        Expr::Like {
            expr: e,
            pattern,
            negated,
            case_insensitive,
        } => {
            let a = to_array(eval(e, batch)?, Some(&DataType::Utf8), batch.num_rows())?;
            let a = match a.data_type() {
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => a,
                DataType::Dictionary(_, v)
                    if matches!(v.as_ref(), DataType::Utf8 | DataType::LargeUtf8) =>
                {
                    arrow_cast::cast(&a, v)?
                }
                other => {
                    return Err(Error::invalid(format!(
                        "LIKE needs a string column, not {other}"
                    )))
                }
            };
            let p = arrow_cast::cast(
                &(Arc::new(StringArray::from(vec![pattern.as_str()])) as ArrayRef),
                a.data_type(),
            )?;
            let p = Scalar::new(p);
            use arrow_string::like;
            Arc::new(match (*negated, *case_insensitive) {
                (false, false) => like::like(&a, &p)?,
                (true, false) => like::nlike(&a, &p)?,
                (false, true) => like::ilike(&a, &p)?,
                (true, true) => like::nilike(&a, &p)?,
            })
        }
    }))
}

/// A literal as a one-row array of `target` (cast the way SQL would: '2020-01-01' to a
/// date, 5 to a double, ...); a failed cast is an error, not a NULL.
fn literal_array(l: &Literal, target: &DataType, rows: usize) -> Result<ArrayRef> {
    let raw: ArrayRef = match l {
        Literal::Null => return Ok(new_null_array(target, rows)),
        Literal::Bool(b) => Arc::new(BooleanArray::from(vec![*b])),
        Literal::Int(i) => Arc::new(Int64Array::from(vec![*i])),
        Literal::UInt(u) => Arc::new(UInt64Array::from(vec![*u])),
        Literal::Float(f) => Arc::new(Float64Array::from(vec![*f])),
        Literal::String(s) => Arc::new(StringArray::from(vec![s.as_str()])),
        Literal::Binary(b) => Arc::new(BinaryArray::from(vec![b.as_slice()])),
        Literal::Typed { text, .. } => Arc::new(StringArray::from(vec![text.as_str()])),
    };
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    let one = if raw.data_type() == target {
        raw
    } else {
        cast_with_options(&raw, target, &strict)
            .map_err(|e| Error::invalid(format!("cannot use {l:?} as a {target} value: {e}")))?
    };
    if rows == 1 {
        return Ok(one);
    }
    let idx = arrow_array::UInt32Array::from(vec![0u32; rows]);
    Ok(arrow_select::take::take(&one, &idx, None)?)
}

fn to_array(v: Value, target: Option<&DataType>, rows: usize) -> Result<ArrayRef> {
    match v {
        Value::Array(a) => Ok(a),
        Value::Literal(l) => literal_array(&l, target.unwrap_or(&DataType::Null), rows),
    }
}

fn is_integer(dt: &DataType) -> bool {
    dt.is_integer()
}

fn cmp(op: CmpOp, l: &dyn Datum, r: &dyn Datum) -> Result<BooleanArray> {
    use arrow_ord::cmp;
    Ok(match op {
        CmpOp::Eq => cmp::eq(l, r)?,
        CmpOp::NotEq => cmp::neq(l, r)?,
        CmpOp::Lt => cmp::lt(l, r)?,
        CmpOp::LtEq => cmp::lt_eq(l, r)?,
        CmpOp::Gt => cmp::gt(l, r)?,
        CmpOp::GtEq => cmp::gt_eq(l, r)?,
    })
}

fn flip(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::LtEq => CmpOp::GtEq,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::GtEq => CmpOp::LtEq,
        o => o,
    }
}

fn compare(op: CmpOp, left: Value, right: Value, rows: usize, expr: &Expr) -> Result<BooleanArray> {
    let context = |e: Error| match e {
        Error::Arrow(a) => Error::invalid(format!("cannot evaluate {expr:?}: {a}")),
        other => other,
    };
    match (left, right) {
        (Value::Array(a), Value::Literal(l)) => {
            // Compare integers with a fractional literal as doubles, not by truncating it.
            let a = if is_integer(a.data_type()) && matches!(l, Literal::Float(_)) {
                arrow_cast::cast(&a, &DataType::Float64)?
            } else {
                a
            };
            let target = match a.data_type() {
                DataType::Dictionary(_, v) => v.as_ref().clone(),
                dt => dt.clone(),
            };
            let lit = literal_array(&l, &target, 1).map_err(context)?;
            cmp(op, &a, &Scalar::new(lit)).map_err(context)
        }
        (Value::Literal(l), Value::Array(a)) => {
            compare(flip(op), Value::Array(a), Value::Literal(l), rows, expr)
        }
        (Value::Array(a), Value::Array(b)) => {
            let b = if a.data_type() == b.data_type() {
                b
            } else {
                arrow_cast::cast(&b, a.data_type()).map_err(|e| context(e.into()))?
            };
            cmp(op, &a, &b).map_err(context)
        }
        (Value::Literal(a), Value::Literal(b)) => {
            // Constant folding on the fly: both sides as doubles or strings.
            let target = match (&a, &b) {
                (Literal::String(_), _) | (_, Literal::String(_)) => DataType::Utf8,
                (Literal::Bool(_), _) | (_, Literal::Bool(_)) => DataType::Boolean,
                _ => DataType::Float64,
            };
            let (x, y) = (
                literal_array(&a, &target, rows)?,
                literal_array(&b, &target, rows)?,
            );
            cmp(op, &x, &y).map_err(context)
        }
    }
}

/// Arithmetic on numbers; a literal takes the other side's type (or both become doubles
/// when the literal has a fraction). Division by zero is an error, as in SQL engines.
fn arith(op: ArithOp, left: Value, right: Value, rows: usize, expr: &Expr) -> Result<ArrayRef> {
    use arrow_arith::numeric;
    let context =
        |e: arrow_schema::ArrowError| Error::invalid(format!("cannot evaluate {expr:?}: {e}"));
    let promote = |a: ArrayRef, other: &Value| -> Result<ArrayRef> {
        Ok(match other {
            Value::Literal(Literal::Float(_)) if is_integer(a.data_type()) => {
                arrow_cast::cast(&a, &DataType::Float64)?
            }
            _ => a,
        })
    };
    let (a, b): (ArrayRef, ArrayRef) = match (left, right) {
        (Value::Array(a), r @ Value::Literal(_)) => {
            let a = promote(a, &r)?;
            let Value::Literal(l) = r else { unreachable!() };
            let b = literal_array(&l, a.data_type(), rows)?;
            (a, b)
        }
        (l @ Value::Literal(_), Value::Array(b)) => {
            let b = promote(b, &l)?;
            let Value::Literal(l) = l else { unreachable!() };
            (literal_array(&l, b.data_type(), rows)?, b)
        }
        (Value::Array(a), Value::Array(b)) => {
            let b = if a.data_type() == b.data_type() {
                b
            } else {
                arrow_cast::cast(&b, a.data_type())?
            };
            (a, b)
        }
        (Value::Literal(a), Value::Literal(b)) => (
            literal_array(&a, &DataType::Float64, rows)?,
            literal_array(&b, &DataType::Float64, rows)?,
        ),
    };
    let out = match op {
        ArithOp::Add => numeric::add(&a, &b),
        ArithOp::Sub => numeric::sub(&a, &b),
        ArithOp::Mul => numeric::mul(&a, &b),
        ArithOp::Div => numeric::div(&a, &b),
        ArithOp::Rem => numeric::rem(&a, &b),
    };
    out.map_err(context)
}
