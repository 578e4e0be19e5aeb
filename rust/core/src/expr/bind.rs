//! Binding: an `Expr` checked against the schema of the batches it will run on, before
//! any data is read. Columns are resolved to positions, every literal takes the type of
//! what it meets (`a + 1` on an int32 column stays int32, as in pylance), two columns of
//! different types meet in a common type, and what cannot meet is refused with an error
//! that names the column and both types (`s > 10` on a string column). The values a
//! CASE or COALESCE chooses among meet in one type the same way, and each function
//! checks its arguments here (`lower(a)` on an int column is refused before any read).
use std::sync::Arc;

use arrow_array::{new_empty_array, new_null_array, ArrayRef, BooleanArray, StringArray};
use arrow_cast::{can_cast_types, cast_with_options, CastOptions};
use arrow_schema::{DataType, Schema, TimeUnit};

use super::parse::describe;
use super::{ArithOp, CmpOp, Expr, Function, Literal, TypedKind};
use crate::error::{Error, Result};

/// An expression ready to run: its nodes and the type and nullability of its result.
#[derive(Clone, Debug)]
pub struct Bound {
    pub(super) node: Node,
    pub data_type: DataType,
    pub nullable: bool,
    /// The expression as written, for errors at evaluation time.
    pub(super) text: Arc<str>,
}

#[derive(Clone, Debug)]
pub(super) enum Node {
    /// Top-level column `index`, then struct children by position.
    Column {
        index: usize,
        fields: Vec<usize>,
    },
    /// A constant: a one-value array of the node's type.
    Scalar(ArrayRef),
    Cast {
        input: Box<Bound>,
        safe: bool,
    },
    Cmp {
        op: CmpOp,
        left: Box<Bound>,
        right: Box<Bound>,
    },
    And(Box<Bound>, Box<Bound>),
    Or(Box<Bound>, Box<Bound>),
    Not(Box<Bound>),
    IsNull {
        input: Box<Bound>,
        negated: bool,
    },
    InList {
        input: Box<Bound>,
        values: Vec<ArrayRef>,
        negated: bool,
    },
    Like {
        input: Box<Bound>,
        pattern: ArrayRef,
        negated: bool,
        case_insensitive: bool,
    },
    Arith {
        op: ArithOp,
        left: Box<Bound>,
        right: Box<Bound>,
    },
    Negative(Box<Bound>),
    Field {
        input: Box<Bound>,
        index: usize,
    },
    Index {
        input: Box<Bound>,
        index: Box<Bound>,
    },
    /// The value of the first branch whose condition is TRUE, else `otherwise`, else NULL
    /// (a simple CASE's conditions are `operand = value` comparisons). All values are of
    /// the node's type.
    Case {
        branches: Vec<(Bound, Bound)>,
        otherwise: Option<Box<Bound>>,
    },
    /// A function on arguments of the types it takes (checked and converted here).
    Call {
        function: Function,
        args: Vec<Bound>,
    },
}

/// Bind a value expression (a projection) to the schema of the batches it will see.
pub fn bind(expr: &Expr, schema: &Schema) -> Result<Bound> {
    Binder::new(expr, schema, "expression").bind(expr)
}

/// Bind a predicate: like `bind`, and its result must be a boolean.
pub fn bind_filter(expr: &Expr, schema: &Schema) -> Result<Bound> {
    let binder = Binder::new(expr, schema, "filter");
    let b = binder.bind(expr)?;
    match b.data_type {
        DataType::Boolean => Ok(b),
        DataType::Null => binder.cast(b, DataType::Boolean),
        ref other => Err(binder.error(format!("it gives {other} values, not booleans"))),
    }
}

struct Binder<'a> {
    schema: &'a Schema,
    /// "filter 'x > 1'", for errors.
    what: String,
    text: Arc<str>,
}

/// What a literal becomes when it meets a value of some type.
enum Meets {
    /// The literal as a one-value array of that type.
    As(ArrayRef),
    /// The literal does not fit that type (an integer beyond int8, a fraction against
    /// integers): both sides move to this wider type.
    Widen(DataType),
    /// The two cannot be compared or combined.
    No,
}

fn strict() -> CastOptions<'static> {
    CastOptions {
        safe: false,
        ..Default::default()
    }
}

/// Dictionaries compare and compute as their values.
fn value_type(dt: &DataType) -> &DataType {
    match dt {
        DataType::Dictionary(_, v) => v,
        other => other,
    }
}

fn is_string(dt: &DataType) -> bool {
    matches!(
        value_type(dt),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

fn is_binary(dt: &DataType) -> bool {
    matches!(
        value_type(dt),
        DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_)
    )
}

fn is_numeric(dt: &DataType) -> bool {
    let dt = value_type(dt);
    dt.is_integer() || dt.is_floating() || is_decimal(dt)
}

fn is_decimal(dt: &DataType) -> bool {
    matches!(dt, DataType::Decimal128(..) | DataType::Decimal256(..))
}

fn is_temporal(dt: &DataType) -> bool {
    matches!(
        value_type(dt),
        DataType::Date32
            | DataType::Date64
            | DataType::Timestamp(..)
            | DataType::Time32(_)
            | DataType::Time64(_)
    )
}

/// A one-value array holding `text` converted to `to` (strictly: bad text is None).
fn from_text(text: &str, to: &DataType) -> Option<ArrayRef> {
    let raw: ArrayRef = Arc::new(StringArray::from(vec![text]));
    cast_with_options(&raw, to, &strict()).ok()
}

/// The literal's own type, when nothing tells it another.
fn natural(l: &Literal) -> Result<ArrayRef> {
    use arrow_array::*;
    Ok(match l {
        Literal::Null => new_null_array(&DataType::Null, 1),
        Literal::Bool(b) => Arc::new(BooleanArray::from(vec![*b])),
        Literal::Int(i) => Arc::new(Int64Array::from(vec![*i])),
        Literal::UInt(u) => Arc::new(UInt64Array::from(vec![*u])),
        Literal::Float(f) => Arc::new(Float64Array::from(vec![f
            .parse::<f64>()
            .unwrap_or(f64::NAN)])),
        Literal::String(s) => Arc::new(StringArray::from(vec![s.as_str()])),
        Literal::Binary(b) => Arc::new(BinaryArray::from(vec![b.as_slice()])),
        Literal::Typed { kind, text } => {
            let to = match kind {
                TypedKind::Date => DataType::Date32,
                TypedKind::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
                TypedKind::Time => DataType::Time64(TimeUnit::Microsecond),
            };
            from_text(text, &to).ok_or_else(|| {
                Error::invalid(format!("{} is not a valid {to} value", describe(l)))
            })?
        }
    })
}

/// Digits after the decimal point of a number as written (exponents count as many).
fn fraction_digits(text: &str) -> Option<i8> {
    if text.contains(['e', 'E']) {
        return None;
    }
    let frac = text.split_once('.').map_or("", |(_, f)| f);
    i8::try_from(frac.len()).ok()
}

/// What literal `l` becomes when it meets a value of type `to`.
fn meets(l: &Literal, to: &DataType) -> Meets {
    let to = value_type(to);
    let cast = |a: ArrayRef| cast_with_options(&a, to, &strict()).ok();
    let widen_int = || {
        if to.is_floating() {
            Meets::Widen(to.clone())
        } else if matches!(l, Literal::UInt(_)) {
            Meets::Widen(DataType::Float64)
        } else {
            Meets::Widen(DataType::Int64)
        }
    };
    match l {
        Literal::Null => Meets::As(new_null_array(to, 1)),
        Literal::Int(_) | Literal::UInt(_) if to.is_integer() || to.is_floating() => {
            match natural(l).ok().and_then(cast) {
                Some(a) => Meets::As(a),
                None => widen_int(),
            }
        }
        Literal::Int(_) | Literal::UInt(_) if is_decimal(to) => {
            match natural(l).ok().and_then(cast) {
                Some(a) => Meets::As(a),
                None => Meets::Widen(DataType::Float64),
            }
        }
        Literal::Float(_) if to.is_floating() => match natural(l).ok().and_then(cast) {
            Some(a) => Meets::As(a),
            None => Meets::No,
        },
        // A fraction against integers: compare and compute as doubles, not by truncating.
        Literal::Float(_) if to.is_integer() => Meets::Widen(DataType::Float64),
        Literal::Float(text) if is_decimal(to) => {
            let scale = match to {
                DataType::Decimal128(_, s) | DataType::Decimal256(_, s) => *s,
                _ => 0,
            };
            match fraction_digits(text)
                .filter(|&d| d <= scale)
                .and_then(|_| from_text(text, to))
            {
                Some(a) => Meets::As(a),
                None => Meets::Widen(DataType::Float64),
            }
        }
        Literal::String(s) if is_string(to) || is_temporal(to) => match from_text(s, to) {
            Some(a) => Meets::As(a),
            None => Meets::No,
        },
        Literal::Binary(b) if is_binary(to) => {
            let raw: ArrayRef = Arc::new(arrow_array::BinaryArray::from(vec![b.as_slice()]));
            match cast(raw) {
                Some(a) => Meets::As(a),
                None => Meets::No,
            }
        }
        Literal::Bool(b) if *to == DataType::Boolean => {
            Meets::As(Arc::new(BooleanArray::from(vec![*b])))
        }
        Literal::Typed { text, .. } if is_temporal(to) => match from_text(text, to) {
            Some(a) => Meets::As(a),
            None => Meets::No,
        },
        _ => Meets::No,
    }
}

/// The type two values of types `a` and `b` meet in to be compared or combined.
pub(super) fn common_type(a: &DataType, b: &DataType) -> Option<DataType> {
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
        return Some(numeric_common(a, b));
    }
    if is_string(a) && is_string(b) {
        return Some(if matches!(a, LargeUtf8) || matches!(b, LargeUtf8) {
            LargeUtf8
        } else {
            Utf8
        });
    }
    if is_binary(a) && is_binary(b) {
        return Some(if matches!(a, LargeBinary) || matches!(b, LargeBinary) {
            LargeBinary
        } else {
            Binary
        });
    }
    // A string meets a number or a date as that type (converted, an error if it cannot be).
    if is_string(a) && (is_numeric(b) || is_temporal(b)) {
        return Some(b.clone());
    }
    if is_string(b) && (is_numeric(a) || is_temporal(a)) {
        return Some(a.clone());
    }
    match (a, b) {
        (Timestamp(u, tz), Timestamp(v, tz2)) if tz == tz2 => {
            Some(Timestamp(finer(*u, *v), tz.clone()))
        }
        (Timestamp(..), Date32 | Date64) => Some(a.clone()),
        (Date32 | Date64, Timestamp(..)) => Some(b.clone()),
        (Date32, Date64) | (Date64, Date32) => Some(Date64),
        _ => None,
    }
}

fn finer(a: TimeUnit, b: TimeUnit) -> TimeUnit {
    let rank = |u: TimeUnit| match u {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 1,
        TimeUnit::Microsecond => 2,
        TimeUnit::Nanosecond => 3,
    };
    if rank(a) >= rank(b) {
        a
    } else {
        b
    }
}

fn numeric_common(a: &DataType, b: &DataType) -> DataType {
    use DataType::*;
    if a.is_floating() || b.is_floating() {
        let small = |t: &DataType| matches!(t, Float16 | Float32 | Int8 | Int16 | UInt8 | UInt16);
        return if small(a) && small(b) {
            Float32
        } else {
            Float64
        };
    }
    match (a, b) {
        (Decimal128(p, s), Decimal128(q, t)) => {
            let scale = (*s).max(*t);
            let whole = (*p as i8 - s).max(*q as i8 - t);
            Decimal128(((whole + scale) as u8).min(38), scale)
        }
        (Decimal128(_, s) | Decimal256(_, s), _) | (_, Decimal128(_, s) | Decimal256(_, s)) => {
            Decimal128(38, *s)
        }
        _ => {
            // Integers: the narrowest type holding both ranges.
            let width = |t: &DataType| t.primitive_width().unwrap_or(8);
            let signed = |t: &DataType| t.is_signed_integer();
            let (wa, wb) = (width(a), width(b));
            let w = match (signed(a), signed(b)) {
                (true, true) | (false, false) => wa.max(wb),
                (true, false) => wa.max(wb * 2).min(8),
                (false, true) => wb.max(wa * 2).min(8),
            };
            let any_signed = signed(a) || signed(b);
            match (any_signed, w) {
                (true, 1) => Int8,
                (true, 2) => Int16,
                (true, 4) => Int32,
                (true, _) => Int64,
                (false, 1) => UInt8,
                (false, 2) => UInt16,
                (false, 4) => UInt32,
                (false, _) => UInt64,
            }
        }
    }
}

/// How an error names one side of an expression.
fn side(e: &Expr) -> String {
    match e {
        Expr::Column(p) => format!("column '{}'", p.join(".")),
        Expr::Literal(l) => describe(l),
        other => format!("'{other}'"),
    }
}

impl<'a> Binder<'a> {
    fn new(expr: &Expr, schema: &'a Schema, kind: &str) -> Self {
        let text: Arc<str> = expr.to_string().into();
        Binder {
            schema,
            what: format!("{kind} '{text}'"),
            text,
        }
    }

    fn error(&self, message: impl std::fmt::Display) -> Error {
        Error::invalid(format!("cannot use {}: {message}", self.what))
    }

    fn node(&self, node: Node, data_type: DataType, nullable: bool) -> Bound {
        Bound {
            node,
            data_type,
            nullable,
            text: self.text.clone(),
        }
    }

    fn scalar(&self, a: ArrayRef) -> Bound {
        let nullable = a.null_count() > 0;
        let dt = a.data_type().clone();
        self.node(Node::Scalar(a), dt, nullable)
    }

    fn cast(&self, b: Bound, to: DataType) -> Result<Bound> {
        if b.data_type == to {
            return Ok(b);
        }
        if let Node::Scalar(a) = &b.node {
            // Constants are converted now, so a bad one fails before any data is read.
            let a = cast_with_options(a, &to, &strict()).map_err(|e| self.error(e))?;
            return Ok(self.scalar(a));
        }
        if !can_cast_types(&b.data_type, &to) {
            return Err(self.error(format!("cannot convert {} to {to}", b.data_type)));
        }
        let nullable = b.nullable;
        Ok(self.node(
            Node::Cast {
                input: Box::new(b),
                safe: false,
            },
            to,
            nullable,
        ))
    }

    fn bind(&self, e: &Expr) -> Result<Bound> {
        Ok(match e {
            Expr::Column(path) => self.column(path)?,
            Expr::Literal(l) => self.scalar(natural(l).map_err(|e| self.error(e))?),
            Expr::Cmp { op, left, right } => {
                let (l, r) = self.pair(left, right, "compare")?;
                check_cmp(&l.data_type, &r.data_type).map_err(|m| {
                    self.error(format!(
                        "cannot compare {} with {}: {m}",
                        side(left),
                        side(right)
                    ))
                })?;
                let nullable = l.nullable || r.nullable;
                self.node(
                    Node::Cmp {
                        op: *op,
                        left: Box::new(l),
                        right: Box::new(r),
                    },
                    DataType::Boolean,
                    nullable,
                )
            }
            Expr::And(a, b) | Expr::Or(a, b) => {
                let (x, y) = (self.boolean(a)?, self.boolean(b)?);
                let nullable = x.nullable || y.nullable;
                let node = match e {
                    Expr::And(..) => Node::And(Box::new(x), Box::new(y)),
                    _ => Node::Or(Box::new(x), Box::new(y)),
                };
                self.node(node, DataType::Boolean, nullable)
            }
            Expr::Not(a) => {
                let x = self.boolean(a)?;
                let nullable = x.nullable;
                self.node(Node::Not(Box::new(x)), DataType::Boolean, nullable)
            }
            Expr::IsNull { expr, negated } => {
                let x = self.bind(expr)?;
                self.node(
                    Node::IsNull {
                        input: Box::new(x),
                        negated: *negated,
                    },
                    DataType::Boolean,
                    false,
                )
            }
            Expr::InList {
                expr,
                list,
                negated,
            } => self.in_list(expr, list, *negated)?,
            Expr::Like {
                expr,
                pattern,
                negated,
                case_insensitive,
            } => {
                let x = self.bind(expr)?;
                if !is_string(&x.data_type) {
                    return Err(self.error(format!(
                        "LIKE needs strings, but {} is {}",
                        side(expr),
                        x.data_type
                    )));
                }
                let to = match value_type(&x.data_type) {
                    DataType::Utf8View => DataType::Utf8,
                    other => other.clone(),
                };
                let x = self.cast(x, to.clone())?;
                let pattern = from_text(pattern, &to).ok_or_else(|| self.error("bad pattern"))?;
                let nullable = x.nullable;
                self.node(
                    Node::Like {
                        input: Box::new(x),
                        pattern,
                        negated: *negated,
                        case_insensitive: *case_insensitive,
                    },
                    DataType::Boolean,
                    nullable,
                )
            }
            Expr::Arith { op, left, right } => {
                let (l, r) = self.pair(left, right, "combine")?;
                let (l, r) = (self.plain(l)?, self.plain(r)?);
                let out = arith_type(*op, &l.data_type, &r.data_type).map_err(|m| {
                    self.error(format!(
                        "cannot compute {} {} {}: {m}",
                        side(left),
                        op_text(*op),
                        side(right)
                    ))
                })?;
                let nullable = l.nullable || r.nullable;
                self.node(
                    Node::Arith {
                        op: *op,
                        left: Box::new(l),
                        right: Box::new(r),
                    },
                    out,
                    nullable,
                )
            }
            Expr::Negative(a) => {
                let x = self.plain(self.bind(a)?)?;
                if !is_numeric(&x.data_type) || x.data_type.is_unsigned_integer() {
                    return Err(self.error(format!("cannot negate {} ({})", side(a), x.data_type)));
                }
                let (dt, nullable) = (x.data_type.clone(), x.nullable);
                self.node(Node::Negative(Box::new(x)), dt, nullable)
            }
            Expr::Field { expr, name } => {
                let x = self.bind(expr)?;
                let DataType::Struct(fields) = &x.data_type else {
                    return Err(self.error(format!(
                        "{} is {}, not a struct, so it has no field '{name}'",
                        side(expr),
                        x.data_type
                    )));
                };
                let index = find(fields.iter().map(|f| f.name().as_str()), name)
                    .ok_or_else(|| self.error(format!("{} has no field '{name}'", side(expr))))?;
                let dt = fields[index].data_type().clone();
                self.node(
                    Node::Field {
                        input: Box::new(x),
                        index,
                    },
                    dt,
                    true,
                )
            }
            Expr::Index { expr, index } => {
                let x = self.bind(expr)?;
                let item = match &x.data_type {
                    DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
                        f.data_type().clone()
                    }
                    other => {
                        return Err(self.error(format!(
                            "{} is {other}, not a list, so it cannot be indexed",
                            side(expr)
                        )))
                    }
                };
                let i = self.bind(index)?;
                if !value_type(&i.data_type).is_integer() {
                    return Err(self.error(format!(
                        "a list index must be an integer, not {}",
                        i.data_type
                    )));
                }
                let i = self.cast(i, DataType::Int64)?;
                self.node(
                    Node::Index {
                        input: Box::new(x),
                        index: Box::new(i),
                    },
                    item,
                    true,
                )
            }
            Expr::Cast { expr, to, safe } => {
                let x = self.bind(expr)?;
                if let (Node::Scalar(a), false) = (&x.node, *safe) {
                    let a = cast_with_options(a, to, &strict()).map_err(|e| self.error(e))?;
                    return Ok(self.scalar(a));
                }
                if !can_cast_types(&x.data_type, to) {
                    return Err(self.error(format!("cannot cast {} to {to}", x.data_type)));
                }
                let nullable = x.nullable || *safe;
                self.node(
                    Node::Cast {
                        input: Box::new(x),
                        safe: *safe,
                    },
                    to.clone(),
                    nullable,
                )
            }
            Expr::Case {
                operand,
                branches,
                otherwise,
            } => self.case(operand.as_deref(), branches, otherwise.as_deref())?,
            Expr::Call { function, args } => self.call(*function, args)?,
        })
    }

    fn case(
        &self,
        operand: Option<&Expr>,
        branches: &[(Expr, Expr)],
        otherwise: Option<&Expr>,
    ) -> Result<Bound> {
        if branches.is_empty() {
            return Err(self.error("CASE needs at least one WHEN"));
        }
        let conditions = branches
            .iter()
            .map(|(when, _)| match operand {
                // `CASE x WHEN v` is `x = v`: NULL (so not taken) when either is NULL.
                Some(x) => self.boolean(&Expr::cmp(CmpOp::Eq, x.clone(), when.clone())),
                None => self.boolean(when),
            })
            .collect::<Result<Vec<_>>>()?;
        let results: Vec<&Expr> = branches.iter().map(|(_, v)| v).chain(otherwise).collect();
        let (values, dt) = self.one_type(&results, "CASE")?;
        let nullable = otherwise.is_none() || values.iter().any(|v| v.nullable);
        let mut values = values.into_iter();
        let branches = conditions.into_iter().zip(values.by_ref()).collect();
        let otherwise = values.next().map(Box::new);
        Ok(self.node(
            Node::Case {
                branches,
                otherwise,
            },
            dt,
            nullable,
        ))
    }

    /// Values of which one is chosen (CASE's results, COALESCE's arguments) in one type:
    /// the values that are not literals meet in their common type, and the literals take
    /// it as they take a column's type (`coalesce(a, 0)` keeps an int32 column int32).
    fn one_type(&self, exprs: &[&Expr], what: &str) -> Result<(Vec<Bound>, DataType)> {
        let differ = |a: &Expr, t: &DataType, b: &Expr, u: Option<&DataType>| {
            let u = u.map(|u| format!(" ({u})")).unwrap_or_default();
            self.error(format!(
                "{what} cannot give {} ({t}) and {}{u} one type",
                side(a),
                side(b)
            ))
        };
        let mut bound = Vec::with_capacity(exprs.len());
        // The type so far and the first value of it, for errors.
        let mut to: Option<(DataType, &Expr)> = None;
        for &e in exprs {
            if let Expr::Literal(_) = e {
                bound.push(None);
                continue;
            }
            let b = self.bind(e)?;
            to = Some(match to {
                None => (value_type(&b.data_type).clone(), e),
                Some((t, first)) => {
                    // Unlike a comparison, a result does not turn strings into numbers or
                    // dates (which would fail on rows that hold other text): as PostgreSQL.
                    let u = value_type(&b.data_type);
                    let null = t == DataType::Null || *u == DataType::Null;
                    let common = common_type(&t, u)
                        .filter(|_| null || is_string(&t) == is_string(u))
                        .ok_or_else(|| differ(first, &t, e, Some(&b.data_type)))?;
                    (common, first)
                }
            });
            bound.push(Some(b));
        }
        let literals = exprs.iter().filter_map(|e| match e {
            Expr::Literal(l) => Some((*e, l)),
            _ => None,
        });
        // Only literals (or only NULL values): the first literal that is not NULL sets
        // the type.
        if to.as_ref().is_none_or(|(t, _)| *t == DataType::Null) {
            if let Some((e, l)) = literals.clone().find(|(_, l)| **l != Literal::Null) {
                let a = natural(l).map_err(|e| self.error(e))?;
                to = Some((a.data_type().clone(), e));
            }
        }
        let (mut t, first) = to.unwrap_or((DataType::Null, exprs[0]));
        'widen: loop {
            for (e, l) in literals.clone() {
                match meets(l, &t) {
                    Meets::As(_) => {}
                    // A literal that needs a wider type (1.5 against integers): all move.
                    Meets::Widen(wider) if wider != t => {
                        t = wider;
                        continue 'widen;
                    }
                    _ => return Err(differ(first, &t, e, None)),
                }
            }
            break;
        }
        let values = exprs
            .iter()
            .zip(bound)
            .map(|(e, b)| match (e, b) {
                (_, Some(b)) => self.cast(b, t.clone()),
                (Expr::Literal(l), None) => match meets(l, &t) {
                    Meets::As(a) => Ok(self.scalar(a)),
                    _ => Err(differ(first, &t, e, None)),
                },
                (_, None) => unreachable!("only literals are bound late"),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((values, t))
    }

    fn call(&self, function: Function, args: &[Expr]) -> Result<Bound> {
        let name = function.name();
        let (min, max) = function.arity();
        if args.len() < min || max.is_some_and(|m| args.len() > m) {
            let takes = match max {
                Some(m) if m == min => format!("{min}"),
                Some(m) if m == min + 1 => format!("{min} or {m}"),
                Some(m) => format!("{min} to {m}"),
                None => format!("at least {min}"),
            };
            let plural = if max.unwrap_or(min) == 1 { "" } else { "s" };
            return Err(self.error(format!(
                "{name} takes {takes} argument{plural}, not {}",
                args.len()
            )));
        }
        let any_nullable = |bs: &[Bound]| bs.iter().any(|b| b.nullable);
        let (args, dt, nullable) = match function {
            Function::Coalesce => {
                let exprs: Vec<&Expr> = args.iter().collect();
                let (values, dt) = self.one_type(&exprs, "coalesce")?;
                let nullable = values.iter().all(|v| v.nullable);
                (values, dt, nullable)
            }
            Function::NullIf => {
                let (l, r) = self.pair(&args[0], &args[1], "compare")?;
                check_cmp(&l.data_type, &r.data_type).map_err(|m| {
                    self.error(format!(
                        "nullif cannot compare {} with {}: {m}",
                        side(&args[0]),
                        side(&args[1])
                    ))
                })?;
                let dt = l.data_type.clone();
                (vec![l, r], dt, true)
            }
            Function::Lower
            | Function::Upper
            | Function::Trim
            | Function::Ltrim
            | Function::Rtrim => {
                let s = self.string_arg(function, &args[0])?;
                let dt = s.data_type.clone();
                let mut values = vec![s];
                if let Some(chars) = args.get(1) {
                    values.push(self.cast(self.string_arg(function, chars)?, dt.clone())?);
                }
                let nullable = any_nullable(&values);
                (values, dt, nullable)
            }
            Function::Length => {
                let s = self.string_arg(function, &args[0])?;
                // As DataFusion's character_length: int32 counts for Utf8, int64 for
                // LargeUtf8.
                let dt = match s.data_type {
                    DataType::LargeUtf8 => DataType::Int64,
                    _ => DataType::Int32,
                };
                let nullable = s.nullable;
                (vec![s], dt, nullable)
            }
            Function::Substr => {
                let s = self.string_arg(function, &args[0])?;
                let dt = s.data_type.clone();
                let mut values = vec![s, self.integer_arg(function, &args[1], "start")?];
                if let Some(count) = args.get(2) {
                    values.push(self.integer_arg(function, count, "count")?);
                }
                let nullable = any_nullable(&values);
                (values, dt, nullable)
            }
            Function::Concat => {
                let values = args
                    .iter()
                    .map(|a| {
                        let b = self.plain(self.bind(a)?)?;
                        if can_cast_types(&b.data_type, &DataType::Utf8) {
                            Ok(b)
                        } else {
                            Err(self.error(format!(
                                "concat cannot convert {} ({}) to a string",
                                side(a),
                                b.data_type
                            )))
                        }
                    })
                    .collect::<Result<Vec<_>>>()?;
                let dt = if values.iter().any(|v| v.data_type == DataType::LargeUtf8) {
                    DataType::LargeUtf8
                } else {
                    DataType::Utf8
                };
                let values = values
                    .into_iter()
                    .map(|v| self.cast(v, dt.clone()))
                    .collect::<Result<Vec<_>>>()?;
                // NULL arguments count as empty strings, so the result is never NULL.
                (values, dt, false)
            }
            Function::Abs | Function::Round => {
                let x = self.plain(self.bind(&args[0])?)?;
                if !is_numeric(&x.data_type) && x.data_type != DataType::Null {
                    return Err(self.error(format!(
                        "{name} needs a number, but {} is {}",
                        side(&args[0]),
                        x.data_type
                    )));
                }
                let dt = match (function, &x.data_type) {
                    // Rounding is done on doubles (float32 stays float32).
                    (Function::Round, DataType::Float32) => DataType::Float32,
                    (Function::Round, _) => DataType::Float64,
                    (_, DataType::Null) => DataType::Int64,
                    (_, dt) => dt.clone(),
                };
                let mut values = vec![self.cast(x, dt.clone())?];
                if let Some(digits) = args.get(1) {
                    values.push(self.integer_arg(function, digits, "number of digits")?);
                }
                let nullable = any_nullable(&values);
                (values, dt, nullable)
            }
        };
        Ok(self.node(Node::Call { function, args }, dt, nullable))
    }

    /// An argument that must be a string, as Utf8 or LargeUtf8 (a view or a dictionary
    /// is read as its values, NULL as a Utf8 NULL).
    fn string_arg(&self, function: Function, e: &Expr) -> Result<Bound> {
        let b = self.bind(e)?;
        let to = match value_type(&b.data_type) {
            DataType::Utf8 | DataType::Utf8View | DataType::Null => DataType::Utf8,
            DataType::LargeUtf8 => DataType::LargeUtf8,
            other => {
                return Err(self.error(format!(
                    "{} needs a string, but {} is {other}",
                    function.name(),
                    side(e)
                )))
            }
        };
        self.cast(b, to)
    }

    /// An argument that must be an integer (`what` it is, for errors), as int64.
    fn integer_arg(&self, function: Function, e: &Expr, what: &str) -> Result<Bound> {
        let b = self.bind(e)?;
        let dt = value_type(&b.data_type);
        if !dt.is_integer() && *dt != DataType::Null {
            return Err(self.error(format!(
                "{} needs an integer {what}, but {} is {dt}",
                function.name(),
                side(e)
            )));
        }
        self.cast(b, DataType::Int64)
    }

    /// A column or a field inside struct columns, by name (exact, else ignoring case). A
    /// column named with the whole dotted path (a projected nested field) comes first.
    fn column(&self, path: &[String]) -> Result<Bound> {
        let names = || self.schema.fields().iter().map(|f| f.name().as_str());
        let dotted = path.join(".");
        if path.len() > 1 {
            if let Some(i) = names().position(|n| n == dotted) {
                let f = self.schema.field(i);
                return Ok(self.node(
                    Node::Column {
                        index: i,
                        fields: vec![],
                    },
                    f.data_type().clone(),
                    f.is_nullable(),
                ));
            }
        }
        let index = find(names(), &path[0]).ok_or_else(|| {
            self.error(format!("it refers to '{}', which is not a column", path[0]))
        })?;
        let mut field = self.schema.field(index);
        let mut nullable = field.is_nullable();
        let mut fields = Vec::with_capacity(path.len() - 1);
        for name in &path[1..] {
            let DataType::Struct(children) = field.data_type() else {
                return Err(self.error(format!(
                    "'{}' is not a struct, so '{dotted}' does not exist",
                    field.name()
                )));
            };
            let i = find(children.iter().map(|f| f.name().as_str()), name).ok_or_else(|| {
                self.error(format!("it refers to '{dotted}', which is not a column"))
            })?;
            fields.push(i);
            field = &children[i];
            nullable |= field.is_nullable();
        }
        Ok(self.node(
            Node::Column { index, fields },
            field.data_type().clone(),
            nullable,
        ))
    }

    /// A side that must be a boolean (AND, OR, NOT).
    fn boolean(&self, e: &Expr) -> Result<Bound> {
        let b = self.bind(e)?;
        match b.data_type {
            DataType::Boolean => Ok(b),
            DataType::Null => self.cast(b, DataType::Boolean),
            ref other => Err(self.error(format!("{} is {other}, not a boolean", side(e)))),
        }
    }

    /// Dictionary values are computed on as plain values.
    fn plain(&self, b: Bound) -> Result<Bound> {
        match &b.data_type {
            DataType::Dictionary(_, v) => {
                let v = v.as_ref().clone();
                self.cast(b, v)
            }
            _ => Ok(b),
        }
    }

    /// Both sides of a comparison or arithmetic, of one type: a literal takes the other
    /// side's type; two values meet in their common type.
    fn pair(&self, left: &Expr, right: &Expr, verb: &str) -> Result<(Bound, Bound)> {
        match (left, right) {
            (Expr::Literal(a), Expr::Literal(b)) => {
                let (x, y) = (natural(a), natural(b));
                let (x, y) = (x.map_err(|e| self.error(e))?, y.map_err(|e| self.error(e))?);
                let to = common_type(x.data_type(), y.data_type()).ok_or_else(|| {
                    self.error(format!(
                        "cannot {verb} {} with {}",
                        describe(a),
                        describe(b)
                    ))
                })?;
                Ok((
                    self.cast(self.scalar(x), to.clone())?,
                    self.cast(self.scalar(y), to)?,
                ))
            }
            (other, Expr::Literal(l)) => self.with_literal(other, l, verb),
            (Expr::Literal(l), other) => {
                let (v, lit) = self.with_literal(other, l, verb)?;
                Ok((lit, v))
            }
            _ => self.values_pair(left, right, verb),
        }
    }

    fn values_pair(&self, left: &Expr, right: &Expr, verb: &str) -> Result<(Bound, Bound)> {
        let (l, r) = (self.bind(left)?, self.bind(right)?);
        if l.data_type == r.data_type {
            return Ok((l, r));
        }
        let to = common_type(&l.data_type, &r.data_type).ok_or_else(|| {
            self.error(format!(
                "cannot {verb} {} ({}) with {} ({})",
                side(left),
                l.data_type,
                side(right),
                r.data_type
            ))
        })?;
        // A dictionary meets a value of its value type as it is (arrow compares them).
        let keep = |b: &Bound| value_type(&b.data_type) == &to && verb == "compare";
        let l = if keep(&l) {
            l
        } else {
            self.cast(l, to.clone())?
        };
        let r = if keep(&r) { r } else { self.cast(r, to)? };
        Ok((l, r))
    }

    /// A value and a literal: the literal takes the value's type, or both widen.
    fn with_literal(&self, value: &Expr, l: &Literal, verb: &str) -> Result<(Bound, Bound)> {
        let v = self.bind(value)?;
        match meets(l, &v.data_type) {
            Meets::As(a) => Ok((v, self.scalar(a))),
            Meets::Widen(to) => {
                let lit = match meets(l, &to) {
                    Meets::As(a) => a,
                    _ => return Err(self.mismatch(value, &v.data_type, l, verb)),
                };
                Ok((self.cast(v, to)?, self.scalar(lit)))
            }
            Meets::No => Err(self.mismatch(value, &v.data_type, l, verb)),
        }
    }

    fn mismatch(&self, value: &Expr, dt: &DataType, l: &Literal, verb: &str) -> Error {
        self.error(format!(
            "cannot {verb} {} of type {dt} with {}",
            side(value),
            describe(l)
        ))
    }

    fn in_list(&self, expr: &Expr, list: &[Literal], negated: bool) -> Result<Bound> {
        let mut x = self.bind(expr)?;
        let mut values = Vec::with_capacity(list.len());
        let mut i = 0;
        while i < list.len() {
            match meets(&list[i], &x.data_type) {
                Meets::As(a) => {
                    values.push(a);
                    i += 1;
                }
                // One value needs a wider type: start over in it.
                Meets::Widen(to) if value_type(&x.data_type) != &to => {
                    x = self.cast(x, to)?;
                    values.clear();
                    i = 0;
                }
                _ => return Err(self.mismatch(expr, &x.data_type, &list[i], "compare")),
            }
        }
        let nullable = x.nullable || values.iter().any(|v| v.null_count() > 0);
        Ok(self.node(
            Node::InList {
                input: Box::new(x),
                values,
                negated,
            },
            DataType::Boolean,
            nullable,
        ))
    }
}

/// Find `name` among `names`: exactly, else ignoring case.
fn find<'n>(names: impl Iterator<Item = &'n str> + Clone, name: &str) -> Option<usize> {
    names
        .clone()
        .position(|n| n == name)
        .or_else(|| names.clone().position(|n| n.eq_ignore_ascii_case(name)))
}

fn op_text(op: ArithOp) -> &'static str {
    match op {
        ArithOp::Add => "+",
        ArithOp::Sub => "-",
        ArithOp::Mul => "*",
        ArithOp::Div => "/",
        ArithOp::Rem => "%",
    }
}

/// Whether arrow can compare values of these types (tried on empty arrays).
fn check_cmp(a: &DataType, b: &DataType) -> std::result::Result<(), String> {
    let (x, y) = (new_empty_array(a), new_empty_array(b));
    arrow_ord::cmp::eq(&x, &y)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The result type of `a op b` (arrow's kernel run on empty arrays), or why it fails.
pub(super) fn arith_type(
    op: ArithOp,
    a: &DataType,
    b: &DataType,
) -> std::result::Result<DataType, String> {
    if !is_numeric(a) || !is_numeric(b) {
        return Err(format!("arithmetic needs numbers, not {a} and {b}"));
    }
    let (x, y) = (new_empty_array(a), new_empty_array(b));
    super::eval::arith_kernel(op, &x, &y)
        .map(|r| r.data_type().clone())
        .map_err(|e| e.to_string())
}
