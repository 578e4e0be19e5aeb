//! The functions' kernels, on arguments already of the types binding gave them. String
//! functions go row by row (arrow has none with SQL's semantics: characters rather than
//! bytes, PostgreSQL's substr positions, trim of chosen characters); numbers use arrow's
//! kernels. COALESCE and NULLIF, which choose among whole values, are in `eval`.
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Float32Type, Float64Type, Int64Type};
use arrow_array::{
    Array, ArrayRef, Decimal128Array, Float32Array, Float64Array, GenericStringArray, Int32Array,
    Int64Array, OffsetSizeTrait, Scalar,
};
use arrow_cast::cast;
use arrow_schema::{ArrowError, DataType};

use super::Function;

/// An argument: one value per row, or one value for every row.
pub(super) struct Arg {
    pub values: ArrayRef,
    pub scalar: bool,
}

impl Arg {
    /// Where row `i`'s value is.
    fn at(&self, i: usize) -> usize {
        if self.scalar {
            0
        } else {
            i
        }
    }
}

/// A string argument of offset type `O`.
#[derive(Clone, Copy)]
struct Strs<'a, O: OffsetSizeTrait> {
    array: &'a GenericStringArray<O>,
    scalar: bool,
}

impl<'a, O: OffsetSizeTrait> Strs<'a, O> {
    fn new(arg: &'a Arg) -> Result<Self, ArrowError> {
        let array = arg.values.as_string_opt::<O>().ok_or_else(|| {
            ArrowError::InvalidArgumentError(format!(
                "expected strings, not {}",
                arg.values.data_type()
            ))
        })?;
        Ok(Strs {
            array,
            scalar: arg.scalar,
        })
    }

    fn get(&self, i: usize) -> Option<&'a str> {
        let i = if self.scalar { 0 } else { i };
        self.array.is_valid(i).then(|| self.array.value(i))
    }

    /// Bytes of every value (for a scalar, times `rows`): the size of a result built from
    /// them.
    fn bytes(&self, rows: usize) -> usize {
        let offsets = self.array.value_offsets();
        let total = offsets[offsets.len() - 1].as_usize() - offsets[0].as_usize();
        if self.scalar {
            total.saturating_mul(rows)
        } else {
            total
        }
    }
}

/// An int64 argument.
struct Ints<'a> {
    array: &'a Int64Array,
    scalar: bool,
}

impl<'a> Ints<'a> {
    fn new(arg: &'a Arg) -> Result<Self, ArrowError> {
        let array = arg.values.as_primitive_opt::<Int64Type>().ok_or_else(|| {
            ArrowError::InvalidArgumentError(format!(
                "expected int64 values, not {}",
                arg.values.data_type()
            ))
        })?;
        Ok(Ints {
            array,
            scalar: arg.scalar,
        })
    }

    fn get(&self, i: usize) -> Option<i64> {
        let i = if self.scalar { 0 } else { i };
        self.array.is_valid(i).then(|| self.array.value(i))
    }
}

/// `function` (not COALESCE or NULLIF) on `args` for `rows` rows (1 when every argument
/// is a scalar); `to` is the bound result type.
pub(super) fn call(
    function: Function,
    args: &[Arg],
    rows: usize,
    to: &DataType,
) -> Result<ArrayRef, ArrowError> {
    match function {
        Function::Abs => abs(&args[0].values),
        Function::Round => round(&args[0], args.get(1), rows),
        // JSON functions have kernels of their own (`super::json`), called by `eval`.
        Function::Json(_) => Err(ArrowError::InvalidArgumentError(
            "internal: a JSON function reached the generic kernels".into(),
        )),
        Function::MakeArray => make_array(args, rows, to),
        Function::RegexpLike => match args[0].values.data_type() {
            DataType::LargeUtf8 => regexp_like::<i64>(args, rows),
            _ => regexp_like::<i32>(args, rows),
        },
        _ => {
            // Every string argument was cast to the type of the first (concat: the result).
            let text = match function {
                Function::Concat | Function::ConcatOp => to,
                _ => args[0].values.data_type(),
            };
            match text {
                DataType::Utf8 => strings::<i32>(function, args, rows),
                DataType::LargeUtf8 => strings::<i64>(function, args, rows),
                other => Err(ArrowError::InvalidArgumentError(format!(
                    "{} expected strings, not {other}",
                    function.name()
                ))),
            }
        }
    }
}

/// `regexp_like(s, pattern[, flags])` with arrow's kernels: one compiled pattern when it
/// (and the flags) are the same for every row, else one per row.
fn regexp_like<O: OffsetSizeTrait>(args: &[Arg], rows: usize) -> Result<ArrayRef, ArrowError> {
    use arrow_string::regexp::{regexp_is_match, regexp_is_match_scalar};
    let full = |a: &Arg| -> Result<ArrayRef, ArrowError> {
        if a.scalar && rows != 1 {
            let zeros = arrow_array::UInt32Array::from(vec![0u32; rows]);
            arrow_select::take::take(a.values.as_ref(), &zeros, None)
        } else {
            Ok(a.values.clone())
        }
    };
    let text = full(&args[0])?;
    let text = text.as_string::<O>();
    let constant = args[1..].iter().all(|a| a.scalar);
    if constant {
        let pattern = Strs::<O>::new(&args[1])?.get(0);
        let flags = args.get(2).map(Strs::<O>::new).transpose()?;
        let flags = flags.map(|f| f.get(0));
        let (Some(pattern), None | Some(Some(_))) = (pattern, flags) else {
            return Ok(arrow_array::new_null_array(&DataType::Boolean, rows));
        };
        return Ok(Arc::new(regexp_is_match_scalar(
            text,
            pattern,
            flags.flatten(),
        )?));
    }
    let pattern = full(&args[1])?;
    let flags = args.get(2).map(full).transpose()?;
    let out = regexp_is_match(
        text,
        pattern.as_string::<O>(),
        flags.as_ref().map(|f| f.as_string::<O>()),
    )?;
    Ok(Arc::new(out))
}

fn strings<O: OffsetSizeTrait>(
    function: Function,
    args: &[Arg],
    rows: usize,
) -> Result<ArrayRef, ArrowError> {
    let s = Strs::<O>::new(&args[0])?;
    let size = s.bytes(rows);
    Ok(match function {
        Function::Lower | Function::Upper => {
            let upper = function == Function::Upper;
            build::<O>(rows, size, |i, out| {
                let Some(v) = s.get(i) else { return false };
                // ASCII (the usual case) is mapped in place; other text by Unicode's rules.
                if v.is_ascii() {
                    out.push_str(v);
                    if upper {
                        out.make_ascii_uppercase()
                    } else {
                        out.make_ascii_lowercase()
                    }
                } else if upper {
                    out.push_str(&v.to_uppercase())
                } else {
                    out.push_str(&v.to_lowercase())
                }
                true
            })?
        }
        Function::Concat | Function::ConcatOp => {
            let all = args
                .iter()
                .map(Strs::<O>::new)
                .collect::<Result<Vec<_>, _>>()?;
            let size = all.iter().map(|a| a.bytes(rows)).sum();
            let strict = function == Function::ConcatOp;
            build::<O>(rows, size, |i, out| {
                if strict && all.iter().any(|a| a.get(i).is_none()) {
                    return false;
                }
                for v in all.iter().filter_map(|a| a.get(i)) {
                    out.push_str(v);
                }
                true
            })?
        }
        Function::Substr => {
            let start = Ints::new(&args[1])?;
            let count = args.get(2).map(Ints::new).transpose()?;
            let mut negative = None;
            let out = build::<O>(rows, size, |i, out| {
                let (Some(v), Some(from)) = (s.get(i), start.get(i)) else {
                    return false;
                };
                let n = match &count {
                    Some(c) => match c.get(i) {
                        Some(n) if n < 0 => {
                            negative = Some(n);
                            return false;
                        }
                        Some(n) => Some(n),
                        None => return false,
                    },
                    None => None,
                };
                out.push_str(substr(v, from, n));
                true
            })?;
            if let Some(n) = negative {
                // As PostgreSQL and DataFusion.
                return Err(ArrowError::InvalidArgumentError(format!(
                    "negative substring length not allowed ({n})"
                )));
            }
            out
        }
        Function::Trim | Function::Ltrim | Function::Rtrim => {
            let chars = args.get(1).map(Strs::<O>::new).transpose()?;
            let left = function != Function::Rtrim;
            let right = function != Function::Ltrim;
            build::<O>(rows, size, |i, out| {
                let chars = match &chars {
                    Some(c) => c.get(i),
                    None => Some(" "),
                };
                let (Some(v), Some(chars)) = (s.get(i), chars) else {
                    return false;
                };
                out.push_str(trim(v, chars, left, right));
                true
            })?
        }
        Function::Length => {
            let counts = (0..rows).map(|i| s.get(i).map(|v| v.chars().count()));
            if O::IS_LARGE {
                Arc::new(counts.map(|c| c.map(|c| c as i64)).collect::<Int64Array>())
            } else {
                // A Utf8 value has fewer than 2^31 bytes, so fewer characters.
                Arc::new(counts.map(|c| c.map(|c| c as i32)).collect::<Int32Array>())
            }
        }
        other => {
            return Err(ArrowError::InvalidArgumentError(format!(
                "{} is not a string function",
                other.name()
            )))
        }
    })
}

/// Strings built row by row: `row` writes row `i`'s value into an empty buffer and says
/// whether there is one (false: NULL). `size` is a guess of the bytes.
fn build<O: OffsetSizeTrait>(
    rows: usize,
    size: usize,
    mut row: impl FnMut(usize, &mut String) -> bool,
) -> Result<ArrayRef, ArrowError> {
    let mut out = arrow_array::builder::GenericStringBuilder::<O>::with_capacity(rows, size);
    let mut buf = String::new();
    let mut total = 0usize;
    for i in 0..rows {
        buf.clear();
        if row(i, &mut buf) {
            total += buf.len();
            // The builder panics past its offsets' range; a long concat must fail instead.
            if O::from_usize(total).is_none() {
                return Err(ArrowError::InvalidArgumentError(format!(
                    "the result has more than {} bytes of text; use LargeUtf8 columns",
                    i32::MAX
                )));
            }
            out.append_value(&buf);
        } else {
            out.append_null();
        }
    }
    Ok(Arc::new(out.finish()))
}

/// Characters `start, start + 1, ...` of `v` (counted from 1), `count` of them when
/// given, as PostgreSQL: positions before 1 count toward `count` but give nothing
/// (`substr('alphabet', 0, 3)` is 'al'), positions past the end give nothing.
pub(super) fn substr(v: &str, start: i64, count: Option<i64>) -> &str {
    // Characters [begin, end) counted from 0.
    let begin = start.saturating_sub(1).max(0);
    let end = count.map(|n| start.saturating_sub(1).saturating_add(n));
    if end.is_some_and(|e| e <= begin) {
        return "";
    }
    let ascii = v.is_ascii();
    let byte = |k: i64| -> usize {
        let k = usize::try_from(k).unwrap_or(usize::MAX);
        if ascii {
            k.min(v.len())
        } else {
            v.char_indices().nth(k).map_or(v.len(), |(b, _)| b)
        }
    };
    let from = byte(begin);
    let to = end.map_or(v.len(), byte);
    &v[from..to]
}

/// `v` without any of `chars` at its start (`left`) and end (`right`).
fn trim<'v>(v: &'v str, chars: &str, left: bool, right: bool) -> &'v str {
    let strip = |c: char| chars.contains(c);
    let v = if left { v.trim_start_matches(strip) } else { v };
    if right {
        v.trim_end_matches(strip)
    } else {
        v
    }
}

/// `|x|` in `x`'s type: negatives negated (integer minimums wrap, as all arithmetic
/// here), and -0.0 is 0.0.
fn abs(x: &ArrayRef) -> Result<ArrayRef, ArrowError> {
    if x.data_type().is_unsigned_integer() || x.data_type() == &DataType::Null {
        return Ok(x.clone());
    }
    let zero = cast(
        &(Arc::new(Int64Array::from(vec![0])) as ArrayRef),
        x.data_type(),
    )?;
    // Floats compare in total order: -0.0 and -NaN are below 0.
    let negative = arrow_ord::cmp::lt(x, &Scalar::new(zero))?;
    // abs of the smallest integer overflows: an error, as in pylance.
    let flipped = if x.data_type().is_signed_integer() {
        arrow_arith::numeric::neg(x)?
    } else {
        arrow_arith::numeric::neg_wrapping(x)?
    };
    arrow_select::zip::zip(&negative, &flipped, x)
}

/// `x` rounded to `digits` after the point (before it when negative), halves away from
/// zero: decimals in their own type, float32 in float32, anything else as a double.
fn round(x: &Arg, digits: Option<&Arg>, rows: usize) -> Result<ArrayRef, ArrowError> {
    let digits = digits.map(Ints::new).transpose()?;
    let digits_at = |i: usize| match &digits {
        Some(d) => d.get(i),
        None => Some(0),
    };
    match x.values.data_type() {
        DataType::Decimal128(p, s) => {
            let (p, s) = (*p, *s);
            let values = x.values.as_primitive::<Decimal128Type>();
            let out = (0..rows)
                .map(|i| {
                    let j = x.at(i);
                    match (values.is_valid(j), digits_at(i)) {
                        (true, Some(d)) => round_decimal(values.value(j), s, d).map(Some),
                        _ => Ok(None),
                    }
                })
                .collect::<Result<Decimal128Array, ArrowError>>()?;
            Ok(Arc::new(out.with_precision_and_scale(p, s)?))
        }
        DataType::Float32 => {
            let values = x.values.as_primitive::<Float32Type>();
            let out: Float32Array = (0..rows)
                .map(|i| {
                    let j = x.at(i);
                    let d = digits_at(i)?;
                    values.is_valid(j).then(|| round_f32(values.value(j), d))
                })
                .collect();
            Ok(Arc::new(out))
        }
        _ => {
            let values = cast(&x.values, &DataType::Float64)?;
            let values = values.as_primitive::<Float64Type>();
            let out: Float64Array = (0..rows)
                .map(|i| {
                    let j = x.at(i);
                    let d = digits_at(i)?;
                    values.is_valid(j).then(|| round_to(values.value(j), d))
                })
                .collect();
            Ok(Arc::new(out))
        }
    }
}

/// A decimal (of `scale`) rounded to `digits` places, halves away from zero; its scale
/// stays, so the dropped places become zeros.
fn round_decimal(v: i128, scale: i8, digits: i64) -> Result<i128, ArrowError> {
    let drop = scale as i64 - digits;
    if drop <= 0 {
        return Ok(v);
    }
    if drop > 38 {
        return Ok(0);
    }
    let f = 10i128.pow(drop as u32);
    let (q, r) = (v / f, v % f);
    let q = if r >= f / 2 {
        q + 1
    } else if r <= -(f / 2) {
        q - 1
    } else {
        q
    };
    q.checked_mul(f)
        .ok_or_else(|| ArrowError::ComputeError(format!("round overflows on {v}")))
}

/// `round_to` for one float type: `v` rounded to `digits` places, halves away from zero,
/// computed in that type as pylance computes it (`(v * 10^d).round() / 10^d`), but a
/// value so large that it has no digits after the point to round is kept as it is
/// (pylance gives inf there, where `v * 10^d` overflows).
macro_rules! round_in {
    ($name:ident, $t:ty) => {
        fn $name(v: $t, digits: i64) -> $t {
            let p = 10f64.powi(digits.clamp(-308, 308) as i32) as $t;
            let r = (v * p).round() / p;
            if r.is_finite() || !v.is_finite() {
                r
            } else {
                v
            }
        }
    };
}
round_in!(round_f32, f32);
round_in!(round_to, f64);

/// One list per row of the arguments' values at that row, in order.
fn make_array(args: &[Arg], rows: usize, to: &DataType) -> Result<ArrayRef, ArrowError> {
    let DataType::List(item) = to else {
        return Err(ArrowError::InvalidArgumentError(format!(
            "make_array must give a list, not {to}"
        )));
    };
    let arrays: Vec<&dyn arrow_array::Array> = args.iter().map(|a| a.values.as_ref()).collect();
    let width = args.len();
    let picks: Vec<(usize, usize)> = (0..rows)
        .flat_map(|row| {
            args.iter()
                .enumerate()
                .map(move |(k, a)| (k, if a.scalar { 0 } else { row }))
        })
        .collect();
    let values = arrow_select::interleave::interleave(&arrays, &picks)?;
    let offsets = arrow_buffer::OffsetBuffer::from_lengths(std::iter::repeat_n(width, rows));
    Ok(std::sync::Arc::new(arrow_array::ListArray::try_new(
        item.clone(),
        offsets,
        values,
        None,
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{bind, evaluate, parse, parse_expression};
    use arrow_array::types::Int32Type;
    use arrow_array::{
        DictionaryArray, Int32Array, LargeStringArray, RecordBatch, StringArray, StringViewArray,
    };

    const WORDS: [Option<&str>; 5] = [
        Some("Hello"),
        Some(" sp ace "),
        None,
        Some("ÄÖü straße"),
        Some(""),
    ];

    fn batch() -> RecordBatch {
        RecordBatch::try_from_iter(vec![
            ("k", Arc::new(StringArray::from(WORDS.to_vec())) as ArrayRef),
            ("kl", Arc::new(LargeStringArray::from(WORDS.to_vec()))),
            ("kv", Arc::new(StringViewArray::from(WORDS.to_vec()))),
            (
                "kd",
                Arc::new(WORDS.into_iter().collect::<DictionaryArray<Int32Type>>()),
            ),
            (
                "n",
                Arc::new(Int32Array::from(vec![
                    Some(1),
                    Some(0),
                    None,
                    Some(-7),
                    Some(3),
                ])),
            ),
            (
                "f",
                Arc::new(Float64Array::from(vec![
                    Some(1.25),
                    Some(-2.5),
                    None,
                    Some(0.125),
                    Some(-0.0),
                ])),
            ),
        ])
        .unwrap()
    }

    fn value(sql: &str) -> ArrayRef {
        let b = batch();
        let bound = bind(&parse_expression(sql).unwrap(), &b.schema()).unwrap();
        let out = evaluate(&bound, &b).unwrap();
        assert_eq!(out.data_type(), &bound.data_type, "{sql}");
        assert_eq!(out.len(), b.num_rows(), "{sql}");
        out
    }

    /// `sql` gives exactly `expected` (type, values and NULLs).
    fn gives(sql: &str, expected: impl Array + 'static) {
        assert_eq!(value(sql).as_ref(), &expected as &dyn Array, "{sql}");
    }

    /// `sql` gives the string `expected` on every row (a constant expression).
    fn constant(sql: &str, expected: Option<&str>) {
        gives(sql, StringArray::from(vec![expected; 5]));
    }

    fn refused(sql: &str) -> String {
        let b = batch();
        match parse_expression(sql) {
            Err(e) => e.to_string(),
            Ok(e) => bind(&e, &b.schema()).unwrap_err().to_string(),
        }
    }

    fn failed(sql: &str) -> String {
        let b = batch();
        let bound = bind(&parse_expression(sql).unwrap(), &b.schema()).unwrap();
        evaluate(&bound, &b).unwrap_err().to_string()
    }

    #[test]
    fn regexp_like_and_match_test_each_row() {
        use arrow_array::BooleanArray;
        // WORDS: "Hello", " sp ace ", NULL, "ÄÖü straße", "".
        let hits = BooleanArray::from(vec![
            Some(true),
            Some(false),
            None,
            Some(false),
            Some(false),
        ]);
        gives("regexp_like(k, 'l+o$')", hits);
        // regexp_match is "has a match": false, not NULL, for a NULL text.
        gives(
            "regexp_match(kl, 'l+o$')",
            BooleanArray::from(vec![true, false, false, false, false]),
        );
        gives(
            "regexp_like(k, '^h', 'i')",
            BooleanArray::from(vec![
                Some(true),
                Some(false),
                None,
                Some(false),
                Some(false),
            ]),
        );
        // A pattern per row.
        gives(
            "regexp_like('Hello', k)",
            BooleanArray::from(vec![Some(true), Some(false), None, Some(false), Some(true)]),
        );
        gives(
            "regexp_like(k, NULL)",
            BooleanArray::from(vec![None::<bool>; 5]),
        );
        assert!(
            failed("regexp_like(k, '(')").contains("regex"),
            "{}",
            failed("regexp_like(k, '(')")
        );
        assert!(refused("regexp_like(n, 'x')").contains("string"));
    }

    #[test]
    fn clock_functions_and_keyword_columns() {
        use arrow_array::BooleanArray;
        let today = chrono::Utc::now().date_naive().to_string();
        gives(
            &format!("current_date() = DATE '{today}'"),
            BooleanArray::from(vec![true; 5]),
        );
        gives(
            "now() > TIMESTAMP '2020-01-01 00:00:00'",
            BooleanArray::from(vec![true; 5]),
        );
        // A keyword before a dot is a column name.
        let e = parse("struct.y > 5 AND map.k = 1").unwrap();
        assert_eq!(format!("{e:?}").matches("Column([").count(), 2, "{e:?}");
        assert!(format!("{e:?}").contains("\"struct\", \"y\""), "{e:?}");
    }

    #[test]
    fn lower_and_upper() {
        let lower = [
            Some("hello"),
            Some(" sp ace "),
            None,
            Some("äöü straße"),
            Some(""),
        ];
        let upper = [
            Some("HELLO"),
            Some(" SP ACE "),
            None,
            Some("ÄÖÜ STRASSE"),
            Some(""),
        ];
        gives("lower(k)", StringArray::from(lower.to_vec()));
        gives("LOWER(kl)", LargeStringArray::from(lower.to_vec()));
        gives("upper(k)", StringArray::from(upper.to_vec()));
        gives("Upper(kl)", LargeStringArray::from(upper.to_vec()));
        // Views and dictionaries are read as their values.
        gives("lower(kv)", StringArray::from(lower.to_vec()));
        gives("upper(kd)", StringArray::from(upper.to_vec()));
        constant("lower('AbC')", Some("abc"));
        constant("upper(NULL)", None);
    }

    #[test]
    fn concat_treats_null_as_empty() {
        gives(
            "concat(k, '-', n)",
            StringArray::from(vec!["Hello-1", " sp ace -0", "-", "ÄÖü straße--7", "-3"]),
        );
        gives(
            "concat(kl, 1)",
            LargeStringArray::from(vec!["Hello1", " sp ace 1", "1", "ÄÖü straße1", "1"]),
        );
        gives(
            "CONCAT(k)",
            StringArray::from(vec!["Hello", " sp ace ", "", "ÄÖü straße", ""]),
        );
        // Never NULL, even when every argument is.
        constant("concat(NULL, NULL)", Some(""));
        constant("concat('a', NULL, 'b', 2, TRUE)", Some("ab2true"));
    }

    #[test]
    fn substr_counts_characters_from_one() {
        // PostgreSQL's and DataFusion's results.
        for (sql, expected) in [
            ("substr('alphabet', 3)", "phabet"),
            ("substr('alphabet', 3, 2)", "ph"),
            ("substr('alphabet', 0, 3)", "al"),
            ("substr('alphabet', -1, 4)", "al"),
            ("substr('alphabet', -5, 3)", ""),
            ("substr('alphabet', -5)", "alphabet"),
            ("substr('alphabet', 8, 5)", "t"),
            ("substr('alphabet', 9)", ""),
            ("substr('alphabet', 1, 0)", ""),
            ("substring('alphabet', 2, 3)", "lph"),
            ("SUBSTRING('alphabet' FROM 2 FOR 3)", "lph"),
            ("SUBSTRING('alphabet' FROM 3)", "phabet"),
            ("SUBSTRING('alphabet' FOR 2)", "al"),
            ("substr('straße', 5, 2)", "ße"),
            ("substr('alphabet', 9223372036854775807, 2)", ""),
            (
                "substr('alphabet', -9223372036854775808, 9223372036854775807)",
                "",
            ),
        ] {
            constant(sql, Some(expected));
        }
        constant("substr('alphabet', NULL, 2)", None);
        constant("substr('alphabet', 2, NULL)", None);
        gives(
            "substr(k, 2, 3)",
            StringArray::from(vec![Some("ell"), Some("sp "), None, Some("Öü "), Some("")]),
        );
        gives(
            "substring(kl FROM 2 FOR 3)",
            LargeStringArray::from(vec![Some("ell"), Some("sp "), None, Some("Öü "), Some("")]),
        );
        // Start from a column: 1, 0, NULL, -7, 3.
        gives(
            "substr(k, n)",
            StringArray::from(vec![
                Some("Hello"),
                Some(" sp ace "),
                None,
                Some("ÄÖü straße"),
                Some(""),
            ]),
        );
        gives(
            "substr('alphabet', n, 2)",
            StringArray::from(vec![Some("al"), Some("a"), None, Some(""), Some("ph")]),
        );
        assert!(failed("substr(k, 1, -1)").contains("negative substring length"));
        // NULL strings are NULL before their count is looked at.
        gives(
            "substr(CASE WHEN n > 5 THEN k END, 1, n)",
            StringArray::from(vec![None::<&str>; 5]),
        );
    }

    #[test]
    fn trims() {
        constant("trim('  a b  ')", Some("a b"));
        constant("ltrim('  a b  ')", Some("a b  "));
        constant("rtrim('  a b  ')", Some("  a b"));
        constant("btrim('xxaxx', 'x')", Some("a"));
        constant("trim('xyaxy', 'yx')", Some("a"));
        constant("ltrim('xyaxy', 'xy')", Some("axy"));
        constant("rtrim('xyaxy', 'xy')", Some("xya"));
        constant("TRIM(BOTH 'x' FROM 'xxaxx')", Some("a"));
        constant("TRIM('x' FROM 'xxaxx')", Some("a"));
        constant("TRIM(LEADING 'x' FROM 'xxaxx')", Some("axx"));
        constant("TRIM(TRAILING 'x' FROM 'xxaxx')", Some("xxa"));
        constant("trim('xxaxx', '')", Some("xxaxx"));
        constant("trim('xxaxx', NULL)", None);
        gives(
            "trim(k)",
            StringArray::from(vec![
                Some("Hello"),
                Some("sp ace"),
                None,
                Some("ÄÖü straße"),
                Some(""),
            ]),
        );
        gives(
            "rtrim(kl, 'eß')",
            LargeStringArray::from(vec![
                Some("Hello"),
                Some(" sp ace "),
                None,
                Some("ÄÖü stra"),
                Some(""),
            ]),
        );
    }

    #[test]
    fn length_counts_characters() {
        let counts = vec![Some(5), Some(8), None, Some(10), Some(0)];
        gives("length(k)", Int32Array::from(counts.clone()));
        gives("char_length(kv)", Int32Array::from(counts.clone()));
        gives("CHARACTER_LENGTH(kd)", Int32Array::from(counts.clone()));
        gives(
            "length(kl)",
            Int64Array::from(counts.iter().map(|c| c.map(i64::from)).collect::<Vec<_>>()),
        );
        gives("length('straße')", Int32Array::from(vec![6; 5]));
    }

    #[test]
    fn nested_calls() {
        gives(
            "substr(trim(concat('  ', k, 'xyz  ')), 2, 3)",
            StringArray::from(vec!["ell", "p a", "yz", "Öü ", "yz"]),
        );
        gives(
            "upper(substr(kl, length(kl) - 1))",
            LargeStringArray::from(vec![Some("LO"), Some("E "), None, Some("SSE"), Some("")]),
        );
        // A literal is int64 inside a value (as in pylance), so the sum is too.
        gives(
            "length(lower(coalesce(k, 'NONE'))) + 1",
            Int64Array::from(vec![6, 9, 5, 11, 1]),
        );
    }

    #[test]
    fn coalesce_and_nullif() {
        // A literal keeps its own type: int32 and int64 give int64, as in pylance.
        gives("coalesce(n, 0)", Int64Array::from(vec![1, 0, 0, -7, 3]));
        gives(
            "coalesce(NULL, k, 'none')",
            StringArray::from(vec!["Hello", " sp ace ", "none", "ÄÖü straße", ""]),
        );
        gives(
            "coalesce(k, kl)",
            LargeStringArray::from(vec![
                Some("Hello"),
                Some(" sp ace "),
                None,
                Some("ÄÖü straße"),
                Some(""),
            ]),
        );
        gives(
            "COALESCE(f, n, 9)",
            Float64Array::from(vec![1.25, -2.5, 9.0, 0.125, -0.0]),
        );
        gives(
            "coalesce(n)",
            Int32Array::from(vec![Some(1), Some(0), None, Some(-7), Some(3)]),
        );
        // Only the rows still NULL run the next argument: 1 / n is not computed where n is 0.
        gives(
            "coalesce(f, 1 / n)",
            Float64Array::from(vec![Some(1.25), Some(-2.5), None, Some(0.125), Some(-0.0)]),
        );
        // Rows that need it do run it.
        assert!(failed("coalesce(CAST(NULL AS DOUBLE), 1 / n)").contains("Divide by zero"));
        gives(
            "nullif(n, 0)",
            Int64Array::from(vec![Some(1), None, None, Some(-7), Some(3)]),
        );
        gives(
            "nullif(f, -0.0)",
            Float64Array::from(vec![Some(1.25), Some(-2.5), None, Some(0.125), None]),
        );
        gives(
            "nullif(k, '')",
            StringArray::from(vec![
                Some("Hello"),
                Some(" sp ace "),
                None,
                Some("ÄÖü straße"),
                None,
            ]),
        );
        gives("nullif(1, 1)", Int64Array::from(vec![None; 5]));
    }

    #[test]
    fn abs_and_round() {
        gives(
            "abs(n)",
            Int32Array::from(vec![Some(1), Some(0), None, Some(7), Some(3)]),
        );
        gives(
            "abs(f)",
            Float64Array::from(vec![Some(1.25), Some(2.5), None, Some(0.125), Some(0.0)]),
        );
        gives("abs(-5)", Int64Array::from(vec![5; 5]));
        // The smallest integer has no absolute value in its type.
        assert!(failed("abs(-9223372036854775808)").contains("Overflow"));
        assert!(failed("abs(CAST(n - 8 AS TINYINT) * CAST(16 AS TINYINT))").contains("Overflow"));
        gives(
            "round(f)",
            Float64Array::from(vec![Some(1.0), Some(-3.0), None, Some(0.0), Some(-0.0)]),
        );
        gives(
            "round(f, 1)",
            Float64Array::from(vec![Some(1.3), Some(-2.5), None, Some(0.1), Some(-0.0)]),
        );
        gives(
            "round(n)",
            Float64Array::from(vec![Some(1.0), Some(0.0), None, Some(-7.0), Some(3.0)]),
        );
        gives("round(1234.5678, -2)", Float64Array::from(vec![1200.0; 5]));
        gives("round(1234.5678, 2)", Float64Array::from(vec![1234.57; 5]));
        gives(
            "round(2.5, n)",
            Float64Array::from(vec![Some(2.5), Some(3.0), None, Some(0.0), Some(2.5)]),
        );
        gives(
            "round(CAST(f AS FLOAT))",
            arrow_array::Float32Array::from(vec![
                Some(1.0),
                Some(-3.0),
                None,
                Some(0.0),
                Some(-0.0),
            ]),
        );
        gives("round(1e300, 400)", Float64Array::from(vec![1e300; 5]));
    }

    #[test]
    fn errors_name_the_function() {
        let e = refused("foo(k)");
        assert!(
            e.starts_with("cannot use expression 'foo(k)': unknown function 'foo' (known: abs, "),
            "{e}"
        );
        let e = parse("FOO(k) = 1").unwrap_err().to_string();
        assert!(
            e.contains("cannot use filter 'FOO(k) = 1': unknown function 'FOO'"),
            "{e}"
        );
        assert!(refused("count(*)").contains("unknown function 'count'"));
        assert!(refused("pg_catalog.lower(k)").contains("unknown function 'pg_catalog.lower'"));
        assert!(refused("lower(DISTINCT k)").contains("unsupported call of lower"));
        for (sql, message) in [
            ("lower(k, k)", "lower takes 1 argument, not 2"),
            ("substr(k)", "substr takes 2 or 3 arguments, not 1"),
            ("coalesce()", "coalesce takes at least 1 argument, not 0"),
            ("nullif(n)", "nullif takes 2 arguments, not 1"),
            ("lower(n)", "lower needs a string, but column 'n' is Int32"),
            (
                "length(f)",
                "length needs a string, but column 'f' is Float64",
            ),
            (
                "trim(k, 1)",
                "trim needs a string, but the integer 1 is Int64",
            ),
            (
                "substr(k, 'a')",
                "substr needs an integer start, but the string 'a' is Utf8",
            ),
            (
                "substr(k, 1, 2.5)",
                "substr needs an integer count, but the number 2.5 is Float64",
            ),
            ("abs(k)", "abs needs a number, but column 'k' is Utf8"),
            ("round(f, 'x')", "round needs an integer number of digits"),
            (
                "coalesce(n, 'x')",
                "coalesce cannot give column 'n' (Int32) and the string 'x' one type",
            ),
            (
                "coalesce(n, k, f)",
                "coalesce cannot give column 'n' (Int32) and column 'k' (Utf8) one type",
            ),
            (
                "nullif(n, 'x')",
                "nullif cannot compare column 'n' (Int32) with the string 'x' (Utf8)",
            ),
            ("lower(zz)", "it refers to 'zz', which is not a column"),
            ("concat(k, zz)", "it refers to 'zz', which is not a column"),
        ] {
            let e = refused(sql);
            assert!(e.starts_with("cannot use expression '"), "{sql}: {e}");
            assert!(e.contains(message), "{sql}: {e}");
        }
    }

    #[test]
    fn calls_print_as_sql_that_parses_back() {
        for sql in [
            "lower(k)",
            "substr(k, 2, 3)",
            "SUBSTRING(k FROM 2 FOR 3)",
            "TRIM(LEADING 'x' FROM k)",
            "trim(k, 'xy')",
            "coalesce(n, 0) + 1",
            "concat(k, '-', n)",
        ] {
            let e = parse_expression(sql).unwrap();
            assert_eq!(parse_expression(&e.to_string()).unwrap(), e, "{sql} -> {e}");
        }
        assert_eq!(
            parse_expression("SUBSTRING(k FROM 2 FOR 3)")
                .unwrap()
                .to_string(),
            "substr(k, 2, 3)"
        );
        assert_eq!(
            parse_expression("concat(lower(a), coalesce(b, c.d), 1)")
                .unwrap()
                .columns()
                .into_iter()
                .collect::<Vec<_>>(),
            vec!["a", "b", "c"]
        );
    }

    #[test]
    fn substr_of_text() {
        assert_eq!(substr("héllo", 2, Some(3)), "éll");
        assert_eq!(substr("héllo", 0, None), "héllo");
        assert_eq!(substr("", 1, Some(1)), "");
        assert_eq!(trim("..a..", ".", true, false), "a..");
        assert_eq!(round_to(0.5, 0), 1.0);
        assert_eq!(round_to(-0.5, 0), -1.0);
        assert_eq!(round_to(1.0, -400), 0.0);
    }
}
