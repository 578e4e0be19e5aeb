//! The types values meet in: pylance's query engine's rules (DataFusion's coercion), so
//! that an expression computes the values pylance computes. Two values compared meet in
//! `comparison_type`; the sides of arithmetic are converted by `arithmetic_inputs`, and
//! the result type is then arrow's (the kernel on empty arrays); the values one of which
//! is chosen (CASE, COALESCE) meet in `union_type`. The README's "Expression types"
//! table is this module in words.
use arrow_schema::{DataType, TimeUnit};

/// Dictionaries compare and compute as their values.
pub(super) fn value_type(dt: &DataType) -> &DataType {
    match dt {
        DataType::Dictionary(_, v) => v,
        other => other,
    }
}

pub(super) fn is_string(dt: &DataType) -> bool {
    matches!(
        value_type(dt),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

pub(super) fn is_binary(dt: &DataType) -> bool {
    matches!(
        value_type(dt),
        DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_)
    )
}

pub(super) fn is_decimal(dt: &DataType) -> bool {
    matches!(dt, DataType::Decimal128(..) | DataType::Decimal256(..))
}

pub(super) fn is_numeric(dt: &DataType) -> bool {
    let dt = value_type(dt);
    dt.is_integer() || dt.is_floating() || is_decimal(dt)
}

pub(super) fn is_temporal(dt: &DataType) -> bool {
    matches!(
        value_type(dt),
        DataType::Date32
            | DataType::Date64
            | DataType::Timestamp(..)
            | DataType::Time32(_)
            | DataType::Time64(_)
    )
}

/// The decimal a number meets a decimal as: integers by their digits, floats with a
/// fixed number of places (float32 keeps 7, as float32 values have about that many).
fn as_decimal(dt: &DataType) -> Option<(u8, i8)> {
    use DataType::*;
    Some(match dt {
        Int8 | UInt8 => (3, 0),
        Int16 | UInt16 => (5, 0),
        Int32 | UInt32 => (10, 0),
        Int64 | UInt64 => (20, 0),
        Float16 => (6, 3),
        Float32 => (14, 7),
        Float64 => (30, 15),
        Decimal128(p, s) | Decimal256(p, s) => (*p, *s),
        _ => return None,
    })
}

/// The decimal holding two decimals' digits (its precision capped at the widest type's).
fn wider_decimal(a: &DataType, b: &DataType) -> Option<DataType> {
    let ((p, s), (q, t)) = (as_decimal(a)?, as_decimal(b)?);
    let scale = s.max(t);
    let whole = (p as i16 - s as i16).max(q as i16 - t as i16);
    let wide = matches!(a, DataType::Decimal256(..)) || matches!(b, DataType::Decimal256(..));
    let max = if wide { 76 } else { 38 };
    let precision = (whole + scale as i16).clamp(1, max) as u8;
    Some(if wide {
        DataType::Decimal256(precision, scale)
    } else {
        DataType::Decimal128(precision, scale)
    })
}

/// Two numbers (not decimals) in one type: the wider float if either is one (so an
/// integer meets float16 as float16), else the narrowest integer holding both ranges; a
/// uint64 and a signed integer meet as a 20-digit decimal, which holds both.
fn numbers(a: &DataType, b: &DataType) -> Option<DataType> {
    use DataType::*;
    let has = |t: DataType| *a == t || *b == t;
    let signed_with = |u: DataType, widths: &[DataType]| {
        (*a == u && widths.contains(b)) || (*b == u && widths.contains(a))
    };
    Some(if has(Float64) {
        Float64
    } else if has(Float32) {
        Float32
    } else if has(Float16) {
        Float16
    } else if signed_with(UInt64, &[Int8, Int16, Int32, Int64]) {
        Decimal128(20, 0)
    } else if has(UInt64) {
        UInt64
    } else if has(Int64) || signed_with(UInt32, &[Int8, Int16, Int32]) {
        Int64
    } else if has(UInt32) {
        UInt32
    } else if has(Int32) || signed_with(UInt16, &[Int8, Int16]) {
        Int32
    } else if has(UInt16) {
        UInt16
    } else if has(Int16) || signed_with(UInt8, &[Int8]) {
        Int16
    } else if has(Int8) {
        Int8
    } else if has(UInt8) {
        UInt8
    } else {
        return None;
    })
}

/// The type two values are compared in (and IN lists, BETWEEN bounds, NULLIF's sides).
pub(super) fn comparison_type(a: &DataType, b: &DataType) -> Option<DataType> {
    use DataType::*;
    let (a, b) = (value_type(a), value_type(b));
    if a == b {
        return Some(a.clone());
    }
    if *a == Null {
        return Some(b.clone());
    }
    if *b == Null {
        return Some(a.clone());
    }
    if is_numeric(a) && is_numeric(b) {
        if is_decimal(a) || is_decimal(b) {
            return wider_decimal(a, b);
        }
        return numbers(a, b);
    }
    if is_string(a) && is_string(b) {
        return Some(if *a == Utf8View || *b == Utf8View {
            Utf8View
        } else if *a == LargeUtf8 || *b == LargeUtf8 {
            LargeUtf8
        } else {
            Utf8
        });
    }
    if is_binary(a) && is_binary(b) {
        return Some(if *a == LargeBinary || *b == LargeBinary {
            LargeBinary
        } else {
            Binary
        });
    }
    // A string meets a date or a time as that type (the text is parsed).
    if is_string(a) && is_temporal(b) {
        return Some(b.clone());
    }
    if is_string(b) && is_temporal(a) {
        return Some(a.clone());
    }
    match (a, b) {
        // Timestamps meet in the coarser unit (the finer one is truncated), as pylance.
        (Timestamp(u, tz), Timestamp(v, tz2)) => Some(Timestamp(
            coarser(*u, *v),
            tz.clone().or_else(|| tz2.clone()),
        )),
        (Timestamp(u, tz), Date32 | Date64) | (Date32 | Date64, Timestamp(u, tz)) => {
            Some(Timestamp(*u, tz.clone()))
        }
        (Date32, Date64) | (Date64, Date32) => Some(Date64),
        _ => None,
    }
}

fn coarser(a: TimeUnit, b: TimeUnit) -> TimeUnit {
    let rank = |u: TimeUnit| match u {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 1,
        TimeUnit::Microsecond => 2,
        TimeUnit::Nanosecond => 3,
    };
    if rank(a) <= rank(b) {
        a
    } else {
        b
    }
}

/// Whether every value of type `t` is a value of type `c` as well, so that comparing in
/// either type gives one answer (`c` being a type `t` meets others in).
pub(super) fn embeds(t: &DataType, c: &DataType) -> bool {
    use DataType::*;
    let (t, c) = (value_type(t), value_type(c));
    if t == c {
        return true;
    }
    // Decimal digits an integer type needs, and the bits of its magnitude.
    let digits = |t: &DataType| as_decimal(t).map(|(p, s)| p as i16 - s as i16);
    let bits = |t: &DataType| match t {
        Int8 => 7,
        UInt8 => 8,
        Int16 => 15,
        UInt16 => 16,
        Int32 => 31,
        UInt32 => 32,
        Int64 => 63,
        _ => 64,
    };
    let range = |t: &DataType| -> (i128, i128) {
        let b = bits(t);
        if t.is_signed_integer() {
            (-(1i128 << b), (1i128 << b) - 1)
        } else {
            (0, (1i128 << b) - 1)
        }
    };
    match (t, c) {
        (a, b) if a.is_integer() && b.is_integer() => {
            let ((alo, ahi), (blo, bhi)) = (range(a), range(b));
            blo <= alo && ahi <= bhi
        }
        // A float holds the integers its mantissa does.
        (a, Float16) if a.is_integer() => bits(a) <= 11,
        (a, Float32) if a.is_integer() => bits(a) <= 24,
        (a, Float64) if a.is_integer() => bits(a) <= 53,
        (Float16, Float32 | Float64) | (Float32, Float64) => true,
        (a, Decimal128(..) | Decimal256(..)) if a.is_integer() || is_decimal(a) => {
            let (_, s) = as_decimal(a).unwrap_or((0, 0));
            let (_, cs) = as_decimal(c).unwrap_or((0, 0));
            s <= cs && digits(a) <= digits(c)
        }
        (a, b) if is_string(a) && is_string(b) => true,
        (Date32, Date64 | Timestamp(..)) | (Date64, Timestamp(..)) => true,
        _ => false,
    }
}

/// The types the two sides of `a op b` are converted to; arrow's kernel then gives the
/// result type (a decimal's precision and scale by the operator). Unlike a comparison,
/// a decimal computes with a float as a float.
pub(super) fn arithmetic_inputs(a: &DataType, b: &DataType) -> Option<(DataType, DataType)> {
    let (a, b) = (value_type(a), value_type(b));
    if !is_numeric(a) && *a != DataType::Null || !is_numeric(b) && *b != DataType::Null {
        return None;
    }
    match (a, b) {
        (DataType::Null, DataType::Null) => Some((DataType::Int64, DataType::Int64)),
        (DataType::Null, t) | (t, DataType::Null) => Some((t.clone(), t.clone())),
        _ if a == b => Some((a.clone(), b.clone())),
        _ if is_decimal(a) && is_decimal(b) => {
            if std::mem::discriminant(a) == std::mem::discriminant(b) {
                Some((a.clone(), b.clone()))
            } else {
                let w = wider_decimal(a, b)?;
                Some((w.clone(), w))
            }
        }
        _ if is_decimal(a) && b.is_integer() => Some((a.clone(), decimal_of(b)?)),
        _ if a.is_integer() && is_decimal(b) => Some((decimal_of(a)?, b.clone())),
        _ if is_decimal(a) || is_decimal(b) => {
            // With a float: both as that float.
            let f = if a.is_floating() { a } else { b };
            Some((f.clone(), f.clone()))
        }
        _ => {
            let t = numbers(a, b)?;
            Some((t.clone(), t))
        }
    }
}

/// An integer type as the decimal that holds it.
fn decimal_of(t: &DataType) -> Option<DataType> {
    let (p, s) = as_decimal(t)?;
    Some(DataType::Decimal128(p, s))
}

/// The type the values one of which is chosen meet in (CASE's results, COALESCE's
/// arguments): each joins the others as in a comparison, but strings stay apart from
/// numbers and dates (a result does not turn text into a number, as PostgreSQL).
pub(super) fn union_type<'t>(
    types: impl IntoIterator<Item = &'t DataType>,
) -> Result<DataType, (DataType, DataType)> {
    let mut out = DataType::Null;
    for t in types {
        let t = value_type(t);
        let null = out == DataType::Null || *t == DataType::Null;
        out = comparison_type(&out, t)
            .filter(|_| null || is_string(&out) == is_string(t))
            .ok_or_else(|| (out.clone(), t.clone()))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use DataType::*;

    #[test]
    fn numbers_meet_as_in_pylance() {
        for (a, b, c) in [
            (Int8, UInt8, Int16),
            (Int32, UInt32, Int64),
            (Int64, UInt64, Decimal128(20, 0)),
            (UInt8, UInt64, UInt64),
            (Int64, Float32, Float32),
            (Int32, Float16, Float16),
            (Float32, Float64, Float64),
            (Decimal128(10, 2), Int64, Decimal128(22, 2)),
            (Decimal128(10, 2), Float32, Decimal128(15, 7)),
            (Decimal128(38, 0), Decimal128(38, 10), Decimal128(38, 10)),
        ] {
            assert_eq!(comparison_type(&a, &b), Some(c.clone()), "{a} vs {b}");
            assert_eq!(comparison_type(&b, &a), Some(c), "{b} vs {a}");
        }
        assert_eq!(comparison_type(&Utf8, &Int32), None);
        assert_eq!(
            comparison_type(
                &Timestamp(TimeUnit::Nanosecond, None),
                &Timestamp(TimeUnit::Millisecond, None)
            ),
            Some(Timestamp(TimeUnit::Millisecond, None))
        );
    }

    #[test]
    fn arithmetic_converts_as_in_pylance() {
        assert_eq!(arithmetic_inputs(&UInt8, &Int64), Some((Int64, Int64)));
        assert_eq!(
            arithmetic_inputs(&UInt64, &Int32),
            Some((Decimal128(20, 0), Decimal128(20, 0)))
        );
        assert_eq!(
            arithmetic_inputs(&Decimal128(10, 2), &Int32),
            Some((Decimal128(10, 2), Decimal128(10, 0)))
        );
        assert_eq!(
            arithmetic_inputs(&Decimal128(10, 2), &Float32),
            Some((Float32, Float32))
        );
        assert_eq!(
            arithmetic_inputs(&Float32, &Int64),
            Some((Float32, Float32))
        );
        assert_eq!(arithmetic_inputs(&Utf8, &Int64), None);
    }
}
