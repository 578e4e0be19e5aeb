//! Comparison as SQL defines it: arrow's kernels, except for floats. Arrow orders floats
//! by IEEE's total order, which tells -0.0 from 0.0 and a NaN with its sign bit set (what
//! 0.0 / 0 gives on x86, and which sign a NaN from arithmetic has is up to the compiler)
//! from one without. Here -0.0 equals 0.0, and every NaN equals every other and lies above
//! +inf, as pylance compares a column with a constant (README: deliberate differences).
//!
//! One home for the rule: comparisons, IN, NULLIF and merge keys all come here.
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float16Type, Float32Type, Float64Type};
use arrow_array::{
    new_null_array, Array, ArrayRef, ArrowPrimitiveType, BooleanArray, Datum, PrimitiveArray,
};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::{ArrowError, DataType};

use super::CmpOp;

/// `l op r`, NULL where either side is NULL (but for IS [NOT] DISTINCT FROM, where NULL
/// is a value equal to itself and the answer is never NULL).
pub fn compare(op: CmpOp, l: &dyn Datum, r: &dyn Datum) -> Result<BooleanArray, ArrowError> {
    if let CmpOp::Distinct | CmpOp::NotDistinct = op {
        return distinct(op, l, r);
    }
    let ((la, l_scalar), (ra, r_scalar)) = (l.get(), r.get());
    if la.data_type() == ra.data_type() {
        match la.data_type() {
            DataType::Float16 => return Ok(floats::<Float16Type>(op, la, l_scalar, ra, r_scalar)),
            DataType::Float32 => return Ok(floats::<Float32Type>(op, la, l_scalar, ra, r_scalar)),
            DataType::Float64 => return Ok(floats::<Float64Type>(op, la, l_scalar, ra, r_scalar)),
            _ => {}
        }
    }
    if la.data_type().is_nested() || ra.data_type().is_nested() {
        return nested(op, (la, l_scalar), (ra, r_scalar));
    }
    use arrow_ord::cmp;
    match op {
        CmpOp::Eq => cmp::eq(l, r),
        CmpOp::NotEq => cmp::neq(l, r),
        CmpOp::Lt => cmp::lt(l, r),
        CmpOp::LtEq => cmp::lt_eq(l, r),
        CmpOp::Gt => cmp::gt(l, r),
        CmpOp::GtEq => cmp::gt_eq(l, r),
        CmpOp::Distinct | CmpOp::NotDistinct => unreachable!("answered above"),
    }
}

/// Lists and structs compared row by row, element by element (as SQL orders them: a
/// shorter list that is a prefix of a longer one sorts first); NULL where either side is.
fn nested(
    op: CmpOp,
    (la, l_scalar): (&dyn Array, bool),
    (ra, r_scalar): (&dyn Array, bool),
) -> Result<BooleanArray, ArrowError> {
    use std::cmp::Ordering;
    let cmp = arrow_ord::ord::make_comparator(la, ra, Default::default())?;
    let len = match (l_scalar, r_scalar) {
        (true, true) => 1,
        (true, false) => ra.len(),
        _ => la.len(),
    };
    Ok((0..len)
        .map(|i| {
            let (li, ri) = (if l_scalar { 0 } else { i }, if r_scalar { 0 } else { i });
            if la.is_null(li) || ra.is_null(ri) {
                return None;
            }
            let o = cmp(li, ri);
            Some(match op {
                CmpOp::Eq => o == Ordering::Equal,
                CmpOp::NotEq => o != Ordering::Equal,
                CmpOp::Lt => o == Ordering::Less,
                CmpOp::LtEq => o != Ordering::Greater,
                CmpOp::Gt => o == Ordering::Greater,
                CmpOp::GtEq => o != Ordering::Less,
                CmpOp::Distinct | CmpOp::NotDistinct => unreachable!("answered above"),
            })
        })
        .collect())
}

/// IS [NOT] DISTINCT FROM: equality where two NULLs are equal and NULL differs from any
/// value, built on `=` so that floats compare as everywhere else.
fn distinct(op: CmpOp, l: &dyn Datum, r: &dyn Datum) -> Result<BooleanArray, ArrowError> {
    let ((la, l_scalar), (ra, r_scalar)) = (l.get(), r.get());
    let eq = compare(CmpOp::Eq, l, r)?;
    let len = eq.len();
    let null_at = |a: &dyn Array, scalar: bool, i: usize| a.is_null(if scalar { 0 } else { i });
    let same = BooleanBuffer::collect_bool(len, |i| {
        match (null_at(la, l_scalar, i), null_at(ra, r_scalar, i)) {
            (true, true) => true,
            (false, false) => eq.value(i),
            _ => false,
        }
    });
    let out = if op == CmpOp::Distinct { !&same } else { same };
    Ok(BooleanArray::new(out, None))
}

/// A float's place in the order: IEEE's total order with -0.0 moved onto 0.0 and every
/// NaN onto one place above +inf, as an integer (comparing two keys is one integer
/// comparison).
pub trait OrderKey: Copy {
    fn order_key(self) -> i64;
}

/// The total order of IEEE floats as signed integers: negative values have their other
/// bits flipped, so that larger magnitudes sort lower.
fn total_order_bits(bits: i64, width: u32) -> i64 {
    let sign_rest = (1i64 << (width - 1)) - 1;
    if bits < 0 {
        bits ^ sign_rest
    } else {
        bits
    }
}

/// Above the key of +inf of every width.
const NAN_KEY: i64 = i64::MAX;

impl OrderKey for f64 {
    fn order_key(self) -> i64 {
        if self.is_nan() {
            return NAN_KEY;
        }
        let v = if self == 0.0 { 0.0 } else { self };
        total_order_bits(v.to_bits() as i64, 64)
    }
}

impl OrderKey for f32 {
    fn order_key(self) -> i64 {
        if self.is_nan() {
            return NAN_KEY;
        }
        let v = if self == 0.0 { 0.0 } else { self };
        total_order_bits(v.to_bits() as i32 as i64, 32)
    }
}

impl OrderKey for half::f16 {
    fn order_key(self) -> i64 {
        if self.is_nan() {
            return NAN_KEY;
        }
        let v = if self == half::f16::ZERO || self == half::f16::NEG_ZERO {
            half::f16::ZERO
        } else {
            self
        };
        total_order_bits(v.to_bits() as i16 as i64, 16)
    }
}

fn floats<T>(
    op: CmpOp,
    l: &dyn Array,
    l_scalar: bool,
    r: &dyn Array,
    r_scalar: bool,
) -> BooleanArray
where
    T: ArrowPrimitiveType,
    T::Native: OrderKey,
{
    let (a, b): (&PrimitiveArray<T>, &PrimitiveArray<T>) = (l.as_primitive(), r.as_primitive());
    let len = match (l_scalar, r_scalar) {
        (true, false) => b.len(),
        (_, _) => a.len(),
    };
    if (l_scalar && a.is_null(0)) || (r_scalar && b.is_null(0)) {
        return new_null_array(&DataType::Boolean, len).as_boolean().clone();
    }
    let (av, bv) = (a.values(), b.values());
    let at = |i: usize| av[if l_scalar { 0 } else { i }].order_key();
    let bt = |i: usize| bv[if r_scalar { 0 } else { i }].order_key();
    let test: fn(i64, i64) -> bool = match op {
        CmpOp::Eq | CmpOp::NotDistinct => |x, y| x == y,
        CmpOp::NotEq | CmpOp::Distinct => |x, y| x != y,
        CmpOp::Lt => |x, y| x < y,
        CmpOp::LtEq => |x, y| x <= y,
        CmpOp::Gt => |x, y| x > y,
        CmpOp::GtEq => |x, y| x >= y,
    };
    let values = BooleanBuffer::collect_bool(len, |i| test(at(i), bt(i)));
    let nulls = NullBuffer::union(
        a.nulls().filter(|_| !l_scalar),
        b.nulls().filter(|_| !r_scalar),
    );
    BooleanArray::new(values, nulls)
}

/// `a` with every -0.0 made 0.0 and every NaN the one NaN, for code that groups or
/// hashes values (merge keys), so that values equal here have equal bits; other arrays
/// are returned as they are.
pub fn normalize_floats(a: &ArrayRef) -> ArrayRef {
    fn norm<T: ArrowPrimitiveType>(a: &ArrayRef, zero: T::Native, nan: T::Native) -> ArrayRef
    where
        T::Native: PartialEq + OrderKey,
    {
        // -0.0 == 0.0, so both become 0.0.
        let fix = |v: T::Native| {
            if v.order_key() == NAN_KEY {
                nan
            } else if v == zero {
                zero
            } else {
                v
            }
        };
        let p = a.as_primitive::<T>();
        Arc::new(p.unary::<_, T>(fix))
    }
    match a.data_type() {
        DataType::Float16 => norm::<Float16Type>(a, half::f16::ZERO, half::f16::NAN),
        DataType::Float32 => norm::<Float32Type>(a, 0.0, f32::NAN),
        DataType::Float64 => norm::<Float64Type>(a, 0.0, f64::NAN),
        _ => a.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float32Array, Float64Array, Scalar};

    fn rows(op: CmpOp, values: Vec<Option<f64>>, x: f64) -> Vec<Option<bool>> {
        let a = Float64Array::from(values);
        let s = Scalar::new(Float64Array::from(vec![x]));
        compare(op, &a, &s).unwrap().iter().collect()
    }

    #[test]
    fn zeros_are_equal_and_nan_is_largest() {
        let v = vec![
            Some(-0.0),
            Some(0.0),
            Some(1.0),
            Some(f64::NAN),
            None,
            Some(f64::NEG_INFINITY),
        ];
        let (t, f) = (Some(true), Some(false));
        assert_eq!(rows(CmpOp::Eq, v.clone(), 0.0), vec![t, t, f, f, None, f]);
        assert_eq!(rows(CmpOp::Eq, v.clone(), -0.0), vec![t, t, f, f, None, f]);
        assert_eq!(rows(CmpOp::Lt, v.clone(), 0.0), vec![f, f, f, f, None, t]);
        assert_eq!(rows(CmpOp::GtEq, v.clone(), 0.0), vec![t, t, t, t, None, f]);
        assert_eq!(
            rows(CmpOp::Eq, v.clone(), f64::NAN),
            vec![f, f, f, t, None, f]
        );
        assert_eq!(
            rows(CmpOp::Gt, v.clone(), f64::INFINITY),
            vec![f, f, f, t, None, f]
        );
        // A NaN with its sign bit set (0.0 / 0 on x86) is NaN as well.
        assert_eq!(
            rows(CmpOp::Eq, v.clone(), -f64::NAN),
            vec![f, f, f, t, None, f]
        );
        assert_eq!(rows(CmpOp::Lt, v, -f64::NAN), vec![t, t, t, f, None, t]);
        let left = Float32Array::from(vec![Some(-0.0f32), None, Some(2.0)]);
        let right = Float32Array::from(vec![Some(0.0f32), Some(1.0), Some(1.0)]);
        let out: Vec<_> = compare(CmpOp::LtEq, &left, &right)
            .unwrap()
            .iter()
            .collect();
        assert_eq!(out, vec![t, None, f]);
        let null = Scalar::new(Float32Array::from(vec![None::<f32>]));
        assert_eq!(compare(CmpOp::Eq, &left, &null).unwrap().null_count(), 3);
    }

    #[test]
    fn normalizing_keeps_everything_but_the_signs_of_zero_and_nan() {
        let a: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(-0.0),
            None,
            Some(-f64::NAN),
            Some(-2.0),
        ]));
        let n = normalize_floats(&a);
        let n = n.as_primitive::<Float64Type>();
        assert!(n.value(0).is_sign_positive() && n.is_null(1) && n.value(3) == -2.0);
        assert_eq!(n.value(2).to_bits(), f64::NAN.to_bits());
    }
}
