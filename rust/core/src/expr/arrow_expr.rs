//! pyarrow compute expressions (`pc.field("a") > 5`) as filters. Python hands over the
//! expression as pyarrow serializes it (what it pickles): an Arrow IPC file whose schema
//! metadata lists the expression tree in order — `call` name, its arguments, `options`,
//! `end`; `field_ref` names (`nested_field_ref` n, then n of them); `literal` i, the value
//! in column i of its one row — read here into an `Expr`.
use std::io::Cursor;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, TimeUnit};

use super::{ArithOp, CmpOp, Expr, Literal, TypedKind};
use crate::error::{Error, Result};

fn bad(what: impl std::fmt::Display) -> Error {
    Error::invalid(format!(
        "cannot use the pyarrow expression as a filter: {what}"
    ))
}

/// The expression pyarrow serialized into `bytes`.
pub fn from_pyarrow(bytes: &[u8]) -> Result<Expr> {
    let entries = tree_entries(bytes)?;
    let mut reader = arrow_ipc::reader::FileReader::try_new(Cursor::new(bytes), None)
        .map_err(|e| bad(format!("not an Arrow IPC file ({e})")))?;
    let values = match reader.next() {
        Some(batch) => batch.map_err(bad)?,
        None => RecordBatch::new_empty(reader.schema()),
    };
    let mut at = 0;
    let expr = read(&entries, &mut at, &values)?;
    if at != entries.len() {
        return Err(bad("entries left after the expression"));
    }
    Ok(expr)
}

/// The schema's metadata, in order (it repeats keys, which a map would lose).
fn tree_entries(bytes: &[u8]) -> Result<Vec<(String, String)>> {
    let n = bytes.len();
    if n < 16 || &bytes[..6] != b"ARROW1" || &bytes[n - 6..] != b"ARROW1" {
        return Err(bad("not an Arrow IPC file"));
    }
    let len = i32::from_le_bytes(bytes[n - 10..n - 6].try_into().expect("4 bytes")) as usize;
    let start = (n - 10)
        .checked_sub(len)
        .ok_or_else(|| bad("truncated footer"))?;
    let footer = arrow_ipc::root_as_footer(&bytes[start..n - 10])
        .map_err(|e| bad(format!("bad footer: {e}")))?;
    let metadata = footer
        .schema()
        .and_then(|s| s.custom_metadata())
        .ok_or_else(|| bad("no expression in the schema"))?;
    Ok(metadata
        .iter()
        .map(|kv| {
            (
                kv.key().unwrap_or_default().to_string(),
                kv.value().unwrap_or_default().to_string(),
            )
        })
        .collect())
}

fn index(v: &str) -> Result<usize> {
    v.parse().map_err(|_| bad(format!("bad index '{v}'")))
}

fn read(entries: &[(String, String)], at: &mut usize, values: &RecordBatch) -> Result<Expr> {
    let (key, value) = entries
        .get(*at)
        .ok_or_else(|| bad("the expression ends early"))?;
    *at += 1;
    match key.as_str() {
        "literal" => literal(values.column(index(value)?)).map(Expr::Literal),
        "field_ref" => Ok(Expr::Column(vec![value.clone()])),
        "nested_field_ref" => {
            let mut path = vec![];
            for _ in 0..index(value)? {
                match entries.get(*at) {
                    Some((k, name)) if k == "field_ref" => path.push(name.clone()),
                    _ => return Err(bad("a nested field reference without its names")),
                }
                *at += 1;
            }
            Ok(Expr::Column(path))
        }
        "call" => {
            let name = value.clone();
            let mut args = vec![];
            let mut options = None;
            loop {
                match entries.get(*at) {
                    Some((k, v)) if k == "end" && *v == name => {
                        *at += 1;
                        break;
                    }
                    Some((k, v)) if k == "options" => {
                        options = Some(values.column(index(v)?).clone());
                        *at += 1;
                    }
                    Some(_) => args.push(read(entries, at, values)?),
                    None => return Err(bad(format!("call of {name} has no end"))),
                }
            }
            call(&name, args, options)
        }
        other => Err(bad(format!("unknown entry '{other}'"))),
    }
}

fn call(name: &str, mut args: Vec<Expr>, options: Option<ArrayRef>) -> Result<Expr> {
    let arity = |n: usize| {
        if args.len() == n {
            Ok(())
        } else {
            Err(bad(format!("{name} with {} arguments", args.len())))
        }
    };
    let cmp = match name {
        "equal" => Some(CmpOp::Eq),
        "not_equal" => Some(CmpOp::NotEq),
        "less" => Some(CmpOp::Lt),
        "less_equal" => Some(CmpOp::LtEq),
        "greater" => Some(CmpOp::Gt),
        "greater_equal" => Some(CmpOp::GtEq),
        _ => None,
    };
    if let Some(op) = cmp {
        arity(2)?;
        let right = Box::new(args.pop().expect("two"));
        let left = Box::new(args.pop().expect("two"));
        return Ok(Expr::Cmp { op, left, right });
    }
    let arith = match name.trim_end_matches("_checked") {
        "add" => Some(ArithOp::Add),
        "subtract" => Some(ArithOp::Sub),
        "multiply" => Some(ArithOp::Mul),
        "divide" => Some(ArithOp::Div),
        _ => None,
    };
    if let Some(op) = arith {
        arity(2)?;
        let right = Box::new(args.pop().expect("two"));
        let left = Box::new(args.pop().expect("two"));
        return Ok(Expr::Arith { op, left, right });
    }
    match name {
        // pyarrow's `&` and `|` are the Kleene forms, which are SQL's AND and OR.
        "and" | "and_kleene" | "or" | "or_kleene" => {
            arity(2)?;
            let right = Box::new(args.pop().expect("two"));
            let left = Box::new(args.pop().expect("two"));
            Ok(match name.starts_with("and") {
                true => Expr::And(left, right),
                false => Expr::Or(left, right),
            })
        }
        "invert" => {
            arity(1)?;
            Ok(Expr::Not(Box::new(args.pop().expect("one"))))
        }
        "negate" | "negate_checked" => {
            arity(1)?;
            Ok(Expr::Negative(Box::new(args.pop().expect("one"))))
        }
        "is_null" | "is_valid" => {
            arity(1)?;
            Ok(Expr::IsNull {
                expr: Box::new(args.pop().expect("one")),
                negated: name == "is_valid",
            })
        }
        "is_in" => {
            arity(1)?;
            let set = options
                .as_ref()
                .and_then(|o| o.as_struct_opt())
                .and_then(|s| s.column_by_name("value_set"))
                .ok_or_else(|| bad("is_in without its value set"))?;
            let list = set
                .as_list_opt::<i32>()
                .map(|l| l.value(0))
                .or_else(|| set.as_list_opt::<i64>().map(|l| l.value(0)))
                .ok_or_else(|| bad(format!("is_in's value set is a {}", set.data_type())))?;
            let list = (0..list.len())
                .map(|i| literal(&list.slice(i, 1)))
                .collect::<Result<Vec<_>>>()?;
            Ok(Expr::InList {
                expr: Box::new(args.pop().expect("one")),
                list,
                negated: false,
            })
        }
        other => Err(bad(format!(
            "pyarrow function '{other}' is not supported in filters (use a SQL string)"
        ))),
    }
}

/// The value in row 0 of `a`, as a literal of a filter.
pub(crate) fn literal(a: &ArrayRef) -> Result<Literal> {
    use arrow_array::types::*;
    if a.is_empty() || a.is_null(0) {
        return Ok(Literal::Null);
    }
    let typed = |kind, text: String| Literal::Typed { kind, text };
    Ok(match a.data_type() {
        DataType::Boolean => Literal::Bool(a.as_boolean().value(0)),
        DataType::Int8 => Literal::Int(a.as_primitive::<Int8Type>().value(0).into()),
        DataType::Int16 => Literal::Int(a.as_primitive::<Int16Type>().value(0).into()),
        DataType::Int32 => Literal::Int(a.as_primitive::<Int32Type>().value(0).into()),
        DataType::Int64 => Literal::Int(a.as_primitive::<Int64Type>().value(0)),
        DataType::UInt8 => Literal::Int(a.as_primitive::<UInt8Type>().value(0).into()),
        DataType::UInt16 => Literal::Int(a.as_primitive::<UInt16Type>().value(0).into()),
        DataType::UInt32 => Literal::Int(a.as_primitive::<UInt32Type>().value(0).into()),
        DataType::UInt64 => Literal::UInt(a.as_primitive::<UInt64Type>().value(0)),
        DataType::Float32 => Literal::float(a.as_primitive::<Float32Type>().value(0).into()),
        DataType::Float64 => Literal::float(a.as_primitive::<Float64Type>().value(0)),
        DataType::Utf8 => Literal::String(a.as_string::<i32>().value(0).to_string()),
        DataType::LargeUtf8 => Literal::String(a.as_string::<i64>().value(0).to_string()),
        DataType::Binary => Literal::Binary(a.as_binary::<i32>().value(0).to_vec()),
        DataType::LargeBinary => Literal::Binary(a.as_binary::<i64>().value(0).to_vec()),
        DataType::Date32 => {
            let d = a.as_primitive::<Date32Type>().value_as_date(0);
            typed(
                TypedKind::Date,
                d.ok_or_else(|| bad("a date out of range"))?.to_string(),
            )
        }
        DataType::Date64 => {
            let d = a.as_primitive::<Date64Type>().value_as_date(0);
            typed(
                TypedKind::Date,
                d.ok_or_else(|| bad("a date out of range"))?.to_string(),
            )
        }
        // An instant (with a time zone) keeps its offset: the text then reads as that
        // instant whatever the column's zone.
        DataType::Timestamp(unit, tz) => {
            let t = match unit {
                TimeUnit::Second => a.as_primitive::<TimestampSecondType>().value_as_datetime(0),
                TimeUnit::Millisecond => a
                    .as_primitive::<TimestampMillisecondType>()
                    .value_as_datetime(0),
                TimeUnit::Microsecond => a
                    .as_primitive::<TimestampMicrosecondType>()
                    .value_as_datetime(0),
                TimeUnit::Nanosecond => a
                    .as_primitive::<TimestampNanosecondType>()
                    .value_as_datetime(0),
            };
            let t = t.ok_or_else(|| bad("a timestamp out of range"))?;
            let offset = if tz.is_some() { "+00:00" } else { "" };
            typed(
                TypedKind::Timestamp(*unit),
                format!("{}{offset}", t.format("%Y-%m-%d %H:%M:%S%.9f")),
            )
        }
        other => return Err(bad(format!("literals of type {other} are not supported"))),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn what_is_not_a_serialized_expression_is_refused() {
        for bytes in [&b""[..], b"ARROW1", b"ARROW1\0\0xxxxxxxxxxxxxxxxARROW1"] {
            let e = super::from_pyarrow(bytes).unwrap_err().to_string();
            assert!(e.contains("pyarrow expression"), "{e}");
        }
    }
}
