//! pylance's JSON functions over JSON columns: `json_get` (a field or array element, as
//! JSON), `json_get_string` / `_int` / `_float` / `_bool` (the same, converted strictly: a
//! value of another kind is an error, JSON null is NULL), `json_extract` (the first value
//! a JSONPath selects, as JSON), `json_exists`, `json_array_contains(json, path, value)`
//! and `json_array_length(json, path)`. The conversions and JSONPath are the `jsonb`
//! crate's, as in pylance, so both answer alike.
//!
//! Scans hand filters JSON columns as text; each value is parsed back to JSONB here.
use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Int64Builder, StringBuilder};
use arrow_array::{Array, ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray};
use arrow_schema::ArrowError;
use jsonb::{OwnedJsonb, RawJsonb};

use arrow_schema::DataType;

use super::functions::Arg;

/// One of pylance's JSON functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonFunction {
    Get,
    GetString,
    GetInt,
    GetFloat,
    GetBool,
    Extract,
    Exists,
    ArrayContains,
    ArrayLength,
}

impl JsonFunction {
    pub fn name(self) -> &'static str {
        match self {
            JsonFunction::Get => "json_get",
            JsonFunction::GetString => "json_get_string",
            JsonFunction::GetInt => "json_get_int",
            JsonFunction::GetFloat => "json_get_float",
            JsonFunction::GetBool => "json_get_bool",
            JsonFunction::Extract => "json_extract",
            JsonFunction::Exists => "json_exists",
            JsonFunction::ArrayContains => "json_array_contains",
            JsonFunction::ArrayLength => "json_array_length",
        }
    }

    /// (at least, at most) arguments: the document, a key or path, and for
    /// `json_array_contains` the value sought.
    pub fn arity(self) -> (usize, Option<usize>) {
        match self {
            JsonFunction::ArrayContains => (3, Some(3)),
            _ => (2, Some(2)),
        }
    }

    /// The type of its result, as pylance gives it (json_get and json_extract: JSON text).
    pub fn result_type(self) -> DataType {
        match self {
            JsonFunction::GetInt | JsonFunction::ArrayLength => DataType::Int64,
            JsonFunction::GetFloat => DataType::Float64,
            JsonFunction::GetBool | JsonFunction::Exists | JsonFunction::ArrayContains => {
                DataType::Boolean
            }
            JsonFunction::Get | JsonFunction::GetString | JsonFunction::Extract => DataType::Utf8,
        }
    }
}

fn error(function: JsonFunction, message: impl std::fmt::Display) -> ArrowError {
    ArrowError::InvalidArgumentError(format!("{}: {message}", function.name()))
}

/// Row `i` of a string argument (bound as Utf8).
fn text(arg: &Arg, i: usize) -> Result<Option<&str>, ArrowError> {
    let array = arg
        .values
        .as_any()
        .downcast_ref::<StringArray>()
        .ok_or_else(|| ArrowError::InvalidArgumentError("expected strings".into()))?;
    let i = if arg.scalar { 0 } else { i };
    Ok(array.is_valid(i).then(|| array.value(i)))
}

/// Row `i`'s JSON document as JSONB (None: NULL).
fn document(function: JsonFunction, arg: &Arg, i: usize) -> Result<Option<OwnedJsonb>, ArrowError> {
    match text(arg, i)? {
        None => Ok(None),
        Some(t) => jsonb::parse_value(t.as_bytes())
            .map(|v| Some(OwnedJsonb::new(v.to_vec())))
            .map_err(|e| error(function, format!("not JSON: {e}"))),
    }
}

/// A field (or, for a key that is a whole number, an array element) of `doc`.
fn by_key(
    function: JsonFunction,
    doc: &RawJsonb,
    key: &str,
) -> Result<Option<OwnedJsonb>, ArrowError> {
    let found = match key.parse::<usize>() {
        Ok(index) => doc.get_by_index(index),
        Err(_) => doc.get_by_name(key, false),
    };
    found.map_err(|e| error(function, format!("cannot read '{key}': {e}")))
}

/// The values `path` selects in `doc`.
fn select(
    function: JsonFunction,
    doc: &RawJsonb,
    path: &str,
) -> Result<Vec<OwnedJsonb>, ArrowError> {
    let parsed = jsonb::jsonpath::parse_json_path(path.as_bytes())
        .map_err(|e| error(function, format!("invalid JSONPath '{path}': {e}")))?;
    jsonb::jsonpath::Selector::new(*doc)
        .select_values(&parsed)
        .map_err(|e| error(function, format!("JSONPath '{path}': {e}")))
}

/// The elements of an array value (none for another kind).
fn elements(value: &RawJsonb) -> Vec<OwnedJsonb> {
    (0..)
        .map_while(|i| value.get_by_index(i).ok().flatten())
        .collect()
}

fn is_null(function: JsonFunction, value: &RawJsonb) -> Result<bool, ArrowError> {
    value.is_null().map_err(|e| error(function, e))
}

/// Each row's keyed value (see `call`) converted by `to`; a value of another kind is an
/// error, as in pylance.
fn typed<T>(
    function: JsonFunction,
    rows: usize,
    keyed: &dyn Fn(usize) -> Result<Option<OwnedJsonb>, ArrowError>,
    what: &str,
    to: &dyn Fn(&RawJsonb) -> Result<T, jsonb::Error>,
) -> Result<Vec<Option<T>>, ArrowError> {
    (0..rows)
        .map(|i| match keyed(i)? {
            None => Ok(None),
            Some(v) => to(&v.as_raw())
                .map(Some)
                .map_err(|e| error(function, format!("the value is not {what}: {e}"))),
        })
        .collect()
}

/// `function` on `args` for `rows` rows.
pub(super) fn call(
    function: JsonFunction,
    args: &[Arg],
    rows: usize,
) -> Result<ArrayRef, ArrowError> {
    // Row i's (document, second argument), or None where either is NULL.
    let row = |i: usize| -> Result<Option<(OwnedJsonb, &str)>, ArrowError> {
        Ok(
            match (document(function, &args[0], i)?, text(&args[1], i)?) {
                (Some(doc), Some(key)) => Some((doc, key)),
                _ => None,
            },
        )
    };
    // The value a key names, JSON null as None.
    let keyed = |i: usize| -> Result<Option<OwnedJsonb>, ArrowError> {
        let Some((doc, key)) = row(i)? else {
            return Ok(None);
        };
        match by_key(function, &doc.as_raw(), key)? {
            Some(v) if !is_null(function, &v.as_raw())? => Ok(Some(v)),
            _ => Ok(None),
        }
    };
    Ok(match function {
        JsonFunction::Get | JsonFunction::Extract => {
            let mut out = StringBuilder::with_capacity(rows, rows * 8);
            for i in 0..rows {
                let value = match row(i)? {
                    None => None,
                    Some((doc, key)) if function == JsonFunction::Get => {
                        by_key(function, &doc.as_raw(), key)?
                    }
                    Some((doc, path)) => select(function, &doc.as_raw(), path)?.into_iter().next(),
                };
                out.append_option(value.map(|v| v.as_raw().to_string()));
            }
            Arc::new(out.finish())
        }
        JsonFunction::GetString => Arc::new(StringArray::from(typed(
            function,
            rows,
            &keyed,
            "a string",
            &|v: &RawJsonb| v.to_str(),
        )?)),
        JsonFunction::GetInt => Arc::new(Int64Array::from(typed(
            function,
            rows,
            &keyed,
            "an integer",
            &|v: &RawJsonb| v.to_i64(),
        )?)),
        JsonFunction::GetFloat => Arc::new(Float64Array::from(typed(
            function,
            rows,
            &keyed,
            "a number",
            &|v: &RawJsonb| v.to_f64(),
        )?)),
        JsonFunction::GetBool => Arc::new(BooleanArray::from(typed(
            function,
            rows,
            &keyed,
            "a boolean",
            &|v: &RawJsonb| v.to_bool(),
        )?)),
        JsonFunction::Exists => {
            let mut out = BooleanBuilder::with_capacity(rows);
            for i in 0..rows {
                out.append_option(match row(i)? {
                    None => None,
                    Some((doc, path)) => Some(!select(function, &doc.as_raw(), path)?.is_empty()),
                });
            }
            Arc::new(out.finish())
        }
        JsonFunction::ArrayContains => {
            let mut out = BooleanBuilder::with_capacity(rows);
            for i in 0..rows {
                let wanted = text(&args[2], i)?;
                out.append_option(match (row(i)?, wanted) {
                    (Some((doc, path)), Some(wanted)) => {
                        let quoted = format!("\"{wanted}\"");
                        Some(select(function, &doc.as_raw(), path)?.iter().any(|array| {
                            elements(&array.as_raw()).iter().any(|e| {
                                let e = e.as_raw().to_string();
                                e == wanted || e == quoted
                            })
                        }))
                    }
                    _ => None,
                });
            }
            Arc::new(out.finish())
        }
        JsonFunction::ArrayLength => {
            let mut out = Int64Builder::with_capacity(rows);
            for i in 0..rows {
                let length = match row(i)? {
                    None => None,
                    Some((doc, path)) => match select(function, &doc.as_raw(), path)?
                        .into_iter()
                        .next()
                    {
                        None => None,
                        Some(first) => {
                            let raw = first.as_raw();
                            let n = elements(&raw).len();
                            if n == 0 && raw.get_by_index(0).is_err() {
                                return Err(error(function, format!("'{path}' is not an array")));
                            }
                            Some(n as i64)
                        }
                    },
                };
                out.append_option(length);
            }
            Arc::new(out.finish())
        }
    })
}
