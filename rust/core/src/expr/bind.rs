//! Binding: an `Expr` checked against the schema of the batches it will run on, before
//! any data is read. Columns are resolved to positions; values meet in the types pylance's
//! query engine gives them (`types`), so that arithmetic overflows, rounds and compares as
//! there (`u8 + 1` is int64; `f32 = 0.1` compares in float64); a literal that converts into
//! the type of what it meets without changing is converted instead, which gives the same
//! answer without converting a column. What cannot meet is refused with an error that
//! names the column and both types (`s > 10` on a string column). Functions check their
//! arguments here (`lower(a)` on an int column is refused before any read).
use std::sync::Arc;

use arrow_array::{new_empty_array, new_null_array, ArrayRef, BooleanArray, StringArray};
use arrow_cast::{can_cast_types, cast_with_options, CastOptions};
use arrow_schema::{DataType, Schema, TimeUnit};

use super::parse::describe;
use super::types::{
    arithmetic_inputs, comparison_type, embeds, is_binary, is_decimal, is_numeric, is_string,
    is_temporal, union_type, value_type,
};
use super::{ArithOp, CmpOp, Expr, Function, ListSearch, Literal, Truth, TypedKind};
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
    Is {
        input: Box<Bound>,
        truth: Truth,
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
    /// `array_has_any` and kin. `values` are in the list's item type; `impossible` says
    /// that some value cannot equal any item (2.5 in a list of integers).
    ListHas {
        input: Box<Bound>,
        values: ArrayRef,
        search: ListSearch,
        impossible: bool,
    },
    /// A function on arguments of the types it takes (checked and converted here).
    Call {
        function: Function,
        args: Vec<Bound>,
    },
}

/// Bind a value expression (a projection, an update's new value) to the schema of the
/// batches it will see. A value that is a column combined with a literal (`a + 1`,
/// `2 * price`) keeps the column's type, as pylance gives it: the literal is converted to
/// that type when it can be (wrapping on overflow, as pylance's `a + 1` does).
pub fn bind(expr: &Expr, schema: &Schema) -> Result<Bound> {
    let binder = Binder::new(expr, schema, "expression");
    if let Expr::Arith { op, left, right } = expr {
        if let Some(b) = binder.column_with_literal(*op, left, right)? {
            return Ok(b);
        }
    }
    binder.bind(expr)
}

impl Bound {
    /// The value, when the expression is a constant (the same for every row).
    pub fn constant(&self) -> Option<&ArrayRef> {
        match &self.node {
            Node::Scalar(a) => Some(a),
            _ => None,
        }
    }
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

fn strict() -> CastOptions<'static> {
    CastOptions {
        safe: false,
        ..Default::default()
    }
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
                // Text with an offset (`...Z`, `...+02:00`) is an instant, not a wall
                // clock reading: it keeps its meaning against a column in any time zone.
                TypedKind::Timestamp(unit) => {
                    let instant = text
                        .get(10..)
                        .is_some_and(|t| t.contains(['Z', 'z', '+', '-']));
                    DataType::Timestamp(*unit, instant.then(|| "+00:00".into()))
                }
                TypedKind::Time => DataType::Time64(TimeUnit::Microsecond),
                TypedKind::Decimal(p, s) => DataType::Decimal128(*p, *s),
            };
            from_text(text, &to).ok_or_else(|| {
                Error::invalid(format!("{} is not a valid {to} value", describe(l)))
            })?
        }
    })
}

/// `a` converted to `to` (strictly), if that gives back `a` when converted again: the
/// literal is the same value in `to`.
fn convert_exactly(a: &ArrayRef, to: &DataType) -> Option<ArrayRef> {
    let there = cast_with_options(a, to, &strict()).ok()?;
    let back = cast_with_options(&there, a.data_type(), &strict()).ok()?;
    (back.as_ref() == a.as_ref()).then_some(there)
}

/// Literal `l` as a one-value array of type `to` (text parsed as a date, 5 as an int8),
/// or None when it does not convert; with `exactly`, also None when it would not be the
/// same value there (0.1 as a float32, 300 as an int8, 1.5 as an integer).
fn literal_as(l: &Literal, to: &DataType, exactly: bool) -> Option<ArrayRef> {
    let to = value_type(to);
    let number = |a: ArrayRef| {
        if exactly {
            convert_exactly(&a, to)
        } else {
            cast_with_options(&a, to, &strict()).ok()
        }
    };
    match l {
        Literal::Null => Some(new_null_array(to, 1)),
        Literal::String(s) if is_string(to) || is_temporal(to) => from_text(s, to),
        Literal::Binary(b) if is_binary(to) => {
            let raw: ArrayRef = Arc::new(arrow_array::BinaryArray::from(vec![b.as_slice()]));
            cast_with_options(&raw, to, &strict()).ok()
        }
        Literal::Bool(b) if *to == DataType::Boolean => {
            Some(Arc::new(BooleanArray::from(vec![*b])))
        }
        // A number with a fraction meets a decimal as written, not through the double
        // nearest to it: 99999999.99 is exactly that decimal.
        Literal::Float(text) if is_decimal(to) && !text.contains(['e', 'E']) => {
            let scale = match to {
                DataType::Decimal128(_, s) | DataType::Decimal256(_, s) => *s,
                _ => 0,
            };
            let places = text
                .split_once('.')
                .map_or(0, |(_, f)| f.trim_end_matches('0').len());
            if exactly && places > scale.max(0) as usize {
                return None;
            }
            from_text(text, to)
        }
        Literal::Int(_) | Literal::UInt(_) | Literal::Float(_) if is_numeric(to) => {
            number(natural(l).ok()?)
        }
        Literal::Typed {
            kind: TypedKind::Decimal(..),
            ..
        } if is_numeric(to) => number(natural(l).ok()?),
        Literal::Typed { .. } if is_temporal(to) => number(natural(l).ok()?),
        _ => None,
    }
}

/// The literal in a column's type as pylance converts it at the top of a value
/// expression: an integer that fits, any number into a float (rounded), an integer into
/// a decimal that holds it. None where pylance would not convert it.
fn into_column_type(l: &Literal, to: &DataType) -> Option<ArrayRef> {
    let lit = natural(l).ok()?;
    let fits = match (l, to) {
        (Literal::Int(_) | Literal::UInt(_), t) if t.is_integer() || is_decimal(t) => true,
        (Literal::Int(_) | Literal::UInt(_) | Literal::Float(_), t) if t.is_floating() => true,
        _ => false,
    };
    if !fits {
        return None;
    }
    cast_with_options(&lit, to, &strict()).ok()
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
                let (l, r) = self.pair(left, right)?;
                let null_is_a_value = matches!(op, CmpOp::Distinct | CmpOp::NotDistinct);
                if !null_is_a_value && [&l, &r].iter().any(|b| is_null_constant(b)) {
                    // NULL, whatever the other side is (which is not computed, as in
                    // pylance: `abs(x) = NULL` does not fail where abs would).
                    return Ok(self.scalar(new_null_array(&DataType::Boolean, 1)));
                }
                check_cmp(&l.data_type, &r.data_type).map_err(|m| {
                    self.error(format!(
                        "cannot compare {} with {}: {m}",
                        side(left),
                        side(right)
                    ))
                })?;
                let nullable = (l.nullable || r.nullable) && !null_is_a_value;
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
            Expr::Is {
                expr,
                truth,
                negated,
            } => {
                let x = self.boolean(expr)?;
                self.node(
                    Node::Is {
                        input: Box::new(x),
                        truth: *truth,
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
            Expr::ListHas {
                list,
                values,
                search,
            } => self.list_has(list, values, *search)?,
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
                let (l, r) = (self.bind(left)?, self.bind(right)?);
                let null = is_null_constant(&l) || is_null_constant(&r);
                let b = self.arith(*op, (left, l), (right, r))?;
                if null {
                    // NULL, and the other side is not computed.
                    self.scalar(new_null_array(&b.data_type, 1))
                } else {
                    b
                }
            }
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => {
                let x = self.bind(expr)?;
                let (x, mut bounds) = self.compared_with(expr, x, &[&**low, &**high])?;
                let (hi, lo) = (bounds.pop().expect("two"), bounds.pop().expect("two"));
                let cmp = |op, bound: Bound| {
                    let nullable = x.nullable || bound.nullable;
                    self.node(
                        Node::Cmp {
                            op,
                            left: Box::new(x.clone()),
                            right: Box::new(bound),
                        },
                        DataType::Boolean,
                        nullable,
                    )
                };
                let (a, b) = (cmp(CmpOp::GtEq, lo), cmp(CmpOp::LtEq, hi));
                let nullable = a.nullable || b.nullable;
                let range = self.node(
                    Node::And(Box::new(a), Box::new(b)),
                    DataType::Boolean,
                    nullable,
                );
                if *negated {
                    self.node(Node::Not(Box::new(range)), DataType::Boolean, nullable)
                } else {
                    range
                }
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

    /// `l op r`, both sides converted to the types arithmetic meets in.
    fn arith(&self, op: ArithOp, left: (&Expr, Bound), right: (&Expr, Bound)) -> Result<Bound> {
        let ((le, l), (re, r)) = (left, right);
        let refuse = |m: String| {
            self.error(format!(
                "cannot compute {} {} {}: {m}",
                side(le),
                op_text(op),
                side(re)
            ))
        };
        let (lt, rt) = arithmetic_inputs(&l.data_type, &r.data_type).ok_or_else(|| {
            refuse(format!(
                "arithmetic needs numbers, not {} and {}",
                l.data_type, r.data_type
            ))
        })?;
        let (l, r) = (self.cast(l, lt)?, self.cast(r, rt)?);
        let out = arith_type(op, &l.data_type, &r.data_type).map_err(refuse)?;
        let nullable = l.nullable || r.nullable;
        Ok(self.node(
            Node::Arith {
                op,
                left: Box::new(l),
                right: Box::new(r),
            },
            out,
            nullable,
        ))
    }

    /// `column op literal` (or `literal op column`) computed in the column's type, as
    /// pylance does at the top of a value expression; None when it is not that shape or
    /// the literal does not convert (then the usual rules apply).
    fn column_with_literal(&self, op: ArithOp, left: &Expr, right: &Expr) -> Result<Option<Bound>> {
        let (column, literal, column_first) = match (left, right) {
            (Expr::Column(_), Expr::Literal(l)) => (left, l, true),
            (Expr::Literal(l), Expr::Column(_)) => (right, l, false),
            _ => return Ok(None),
        };
        let c = self.plain(self.bind(column)?)?;
        let Some(lit) = into_column_type(literal, &c.data_type) else {
            return Ok(None);
        };
        let lit = (if column_first { right } else { left }, self.scalar(lit));
        let col = (column, c);
        let (l, r) = if column_first { (col, lit) } else { (lit, col) };
        self.arith(op, l, r).map(Some)
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
    /// all meet as in `types::union_type`, literals with their own types (`coalesce(a, 0)`
    /// on an int32 column is int64, as in pylance).
    fn one_type(&self, exprs: &[&Expr], what: &str) -> Result<(Vec<Bound>, DataType)> {
        let bound = exprs
            .iter()
            .map(|e| self.bind(e))
            .collect::<Result<Vec<_>>>()?;
        let t = union_type(bound.iter().map(|b| &b.data_type)).map_err(|(t, u)| {
            // Name the first value of each of the two types that do not meet.
            let of = |dt: &DataType| {
                exprs
                    .iter()
                    .zip(&bound)
                    .find(|(_, b)| value_type(&b.data_type) == dt)
                    .map(|(e, b)| (*e, b.data_type.clone()))
            };
            let ((a, at), (b, bt)) = (
                of(&t).unwrap_or((exprs[0], t.clone())),
                of(&u).unwrap_or((exprs[0], u.clone())),
            );
            let typed = |e: &Expr, dt: &DataType| match e {
                Expr::Literal(_) => side(e),
                _ => format!("{} ({dt})", side(e)),
            };
            self.error(format!(
                "{what} cannot give {} and {} one type",
                typed(a, &at),
                typed(b, &bt)
            ))
        })?;
        let values = bound
            .into_iter()
            .map(|b| self.cast(b, t.clone()))
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
            Function::MakeArray => {
                let exprs: Vec<&Expr> = args.iter().collect();
                let (values, dt) = self.one_type(&exprs, "a list")?;
                let dt = match dt {
                    DataType::Null => DataType::Int64,
                    dt => dt,
                };
                let values = values
                    .into_iter()
                    .map(|v| self.cast(v, dt.clone()))
                    .collect::<Result<Vec<_>>>()?;
                let item = arrow_schema::Field::new("item", dt, true);
                (values, DataType::List(std::sync::Arc::new(item)), false)
            }
            Function::NullIf => {
                // As a comparison, but a literal keeps its own type: nullif(a, 0) on an
                // int32 column is int64, as in pylance.
                let (x, y) = (self.bind(&args[0])?, self.bind(&args[1])?);
                let t = comparison_type(&x.data_type, &y.data_type)
                    .filter(|t| check_cmp(t, t).is_ok())
                    .ok_or_else(|| {
                        self.error(format!(
                            "nullif cannot compare {} ({}) with {} ({})",
                            side(&args[0]),
                            x.data_type,
                            side(&args[1]),
                            y.data_type
                        ))
                    })?;
                let (x, y) = (self.cast(x, t.clone())?, self.cast(y, t.clone())?);
                (vec![x, y], t, true)
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
            Function::Json(f) => {
                // Every argument as text; the result as pylance types it (json_get gives
                // JSON text here, where pylance gives JSONB: both compose and compare).
                let values = args
                    .iter()
                    .map(|a| self.cast(self.string_arg(function, a)?, DataType::Utf8))
                    .collect::<Result<Vec<_>>>()?;
                (values, f.result_type(), true)
            }
            Function::RegexpLike => {
                let s = self.string_arg(function, &args[0])?;
                let dt = s.data_type.clone();
                let mut values = vec![s];
                for a in &args[1..] {
                    values.push(self.cast(self.string_arg(function, a)?, dt.clone())?);
                }
                let nullable = any_nullable(&values);
                (values, DataType::Boolean, nullable)
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
            Function::Concat | Function::ConcatOp => {
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
                // concat counts NULL arguments as empty strings, so it is never NULL.
                let nullable = function == Function::ConcatOp && any_nullable(&values);
                (values, dt, nullable)
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
                    // As pylance: float32 and decimals round in their own type, the
                    // rest as doubles.
                    (Function::Round, t @ (DataType::Float32 | DataType::Decimal128(..))) => {
                        t.clone()
                    }
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

    /// Both sides of a comparison, in the type they meet in.
    fn pair(&self, left: &Expr, right: &Expr) -> Result<(Bound, Bound)> {
        match (left, right) {
            (Expr::Literal(a), Expr::Literal(b)) => {
                let (x, y) = (natural(a), natural(b));
                let (x, y) = (x.map_err(|e| self.error(e))?, y.map_err(|e| self.error(e))?);
                let to = comparison_type(x.data_type(), y.data_type()).ok_or_else(|| {
                    self.error(format!(
                        "cannot compare {} with {}",
                        describe(a),
                        describe(b)
                    ))
                })?;
                Ok((
                    self.cast(self.scalar(x), to.clone())?,
                    self.cast(self.scalar(y), to)?,
                ))
            }
            (other, Expr::Literal(_)) => {
                let (v, mut lit) = self.compared_with(other, self.bind(other)?, &[right])?;
                Ok((v, lit.pop().expect("one")))
            }
            (Expr::Literal(_), other) => {
                let (v, mut lit) = self.compared_with(other, self.bind(other)?, &[left])?;
                Ok((lit.pop().expect("one"), v))
            }
            _ => self.values_pair(left, right),
        }
    }

    fn values_pair(&self, left: &Expr, right: &Expr) -> Result<(Bound, Bound)> {
        let (l, r) = (self.bind(left)?, self.bind(right)?);
        if l.data_type == r.data_type {
            return Ok((l, r));
        }
        let to = comparison_type(&l.data_type, &r.data_type).ok_or_else(|| {
            self.error(format!(
                "cannot compare {} ({}) with {} ({})",
                side(left),
                l.data_type,
                side(right),
                r.data_type
            ))
        })?;
        // A dictionary meets a value of its value type as it is (arrow compares them),
        // but for floats, which compare as SQL only when plain (see `compare`).
        let keep = |b: &Bound| value_type(&b.data_type) == &to && !to.is_floating();
        let l = if keep(&l) {
            l
        } else {
            self.cast(l, to.clone())?
        };
        let r = if keep(&r) { r } else { self.cast(r, to)? };
        Ok((l, r))
    }

    /// `x` and the values it is compared with (the other side of a comparison, BETWEEN's
    /// bounds, an IN list), all in the one type they meet in, as pylance's engine folds
    /// them. When each of the others is a literal that is the same value in `x`'s type,
    /// and `x`'s values are all values of that common type, `x` keeps its type: the
    /// answer is the same and no column is converted (`a = 5` on an int32 column).
    fn compared_with(
        &self,
        x_expr: &Expr,
        x: Bound,
        others: &[&Expr],
    ) -> Result<(Bound, Vec<Bound>)> {
        let t = value_type(&x.data_type).clone();
        let mut common = t.clone();
        let mut bound = Vec::with_capacity(others.len());
        for &e in others {
            let b = match e {
                Expr::Literal(l) => self.scalar(natural(l).map_err(|e| self.error(e))?),
                _ => self.bind(e)?,
            };
            common = comparison_type(&common, &b.data_type)
                .ok_or_else(|| self.mismatch(x_expr, &x.data_type, e, &b.data_type))?;
            bound.push(b);
        }
        let exact = |e: &Expr| match e {
            Expr::Literal(l) => literal_as(l, &t, true).is_some(),
            _ => false,
        };
        // Integers and decimals compare exactly in either type, and the common type may
        // not hold all of `t` (decimal(38, 0) against 0.5 meets as decimal(38, 1)): there a
        // literal that is exact in `t` is compared in `t` too, as pylance does.
        let exact_numbers = |a: &DataType, b: &DataType| {
            (a.is_integer() || is_decimal(a)) && (b.is_integer() || is_decimal(b))
        };
        let to = if (embeds(&t, &common) || exact_numbers(&t, &common))
            && others.iter().all(|e| exact(e))
        {
            t
        } else {
            common
        };
        // (A dictionary of `to` compares as it is, but for floats: see `values_pair`.)
        let x = if x.data_type == to || value_type(&x.data_type) == &to && !to.is_floating() {
            x
        } else {
            self.cast(x, to.clone())?
        };
        let values = others
            .iter()
            .zip(bound)
            .map(|(e, b)| match e {
                Expr::Literal(l) => literal_as(l, &to, false)
                    .map(|a| self.scalar(a))
                    .ok_or_else(|| self.mismatch(x_expr, &x.data_type, e, &b.data_type)),
                _ => self.cast(b, to.clone()),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((x, values))
    }

    fn mismatch(&self, value: &Expr, dt: &DataType, other: &Expr, other_type: &DataType) -> Error {
        let other = match other {
            Expr::Literal(l) => describe(l),
            e => format!("{} ({other_type})", side(e)),
        };
        self.error(format!(
            "cannot compare {} of type {dt} with {other}",
            side(value)
        ))
    }

    fn in_list(&self, expr: &Expr, list: &[Literal], negated: bool) -> Result<Bound> {
        let x = self.bind(expr)?;
        let items: Vec<Expr> = list.iter().cloned().map(Expr::Literal).collect();
        let (x, values) = self.compared_with(expr, x, &items.iter().collect::<Vec<_>>())?;
        let values: Vec<ArrayRef> = values
            .into_iter()
            .map(|b| match b.node {
                Node::Scalar(a) => a,
                _ => unreachable!("IN lists hold literals"),
            })
            .collect();
        if !values.is_empty() && values.iter().all(|v| v.is_null(0)) {
            // `x IN (NULL, ...)` is NULL whatever x is, which is not computed (as in
            // pylance: `(a / b) IN (NULL)` does not fail where the division would).
            return Ok(self.scalar(new_null_array(&DataType::Boolean, 1)));
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

impl Binder<'_> {
    fn list_has(&self, list: &Expr, values: &[Expr], search: ListSearch) -> Result<Bound> {
        let l = self.bind(list)?;
        let item = match &l.data_type {
            DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
                f.data_type().clone()
            }
            other => {
                return Err(self.error(format!(
                    "{} needs a list, but {} is {other}",
                    search.name(),
                    side(list)
                )))
            }
        };
        let mut found = Vec::with_capacity(values.len());
        let mut impossible = false;
        for v in values {
            // A literal takes the item type as in a comparison; another constant
            // (`CAST('NaN' AS DOUBLE)`) is converted if it stays the same value.
            let (exact, converts) = match v {
                Expr::Literal(lit) => (
                    literal_as(lit, &item, true),
                    literal_as(lit, &item, false).is_some()
                        || (is_numeric(&item)
                            && natural(lit).is_ok_and(|a| is_numeric(a.data_type()))),
                ),
                other => {
                    let b = self.bind(other)?;
                    let Node::Scalar(a) = &b.node else {
                        return Err(self.error(format!(
                            "{} looks for constant values, and {} is not one",
                            search.name(),
                            side(other)
                        )));
                    };
                    let exact = if a.is_null(0) {
                        Some(new_null_array(value_type(&item), 1))
                    } else {
                        convert_exactly(a, value_type(&item))
                    };
                    (exact, can_cast_types(a.data_type(), &item))
                }
            };
            match exact {
                Some(a) if a.is_null(0) && search == ListSearch::Element => {
                    // Whether NULL is in a list is never known.
                    return Ok(self.scalar(new_null_array(&DataType::Boolean, 1)));
                }
                Some(a) => found.push(a),
                // Converts only by changing: equal to no item, as when the items are
                // converted to the value's type instead.
                None if converts => impossible = true,
                None => {
                    return Err(self.error(format!(
                        "cannot look for {} among the {item} items of {}",
                        side(v),
                        side(list)
                    )))
                }
            }
        }
        let values = if found.is_empty() {
            new_empty_array(value_type(&item))
        } else {
            let refs: Vec<&dyn arrow_array::Array> = found.iter().map(|a| a.as_ref()).collect();
            arrow_select::concat::concat(&refs).map_err(|e| self.error(e))?
        };
        let nullable = l.nullable;
        Ok(self.node(
            Node::ListHas {
                input: Box::new(l),
                values,
                search,
                impossible,
            },
            DataType::Boolean,
            nullable,
        ))
    }
}

/// A NULL literal (or anything bound to a NULL constant).
fn is_null_constant(b: &Bound) -> bool {
    // A NULL of the Null type has no validity buffer: only its logical nulls say so.
    matches!(&b.node, Node::Scalar(a) if a.logical_nulls().is_some_and(|n| n.is_null(0)))
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
    // Lists and structs compare row by row (see `compare`), the rest with arrow's kernels.
    if a.is_nested() || b.is_nested() {
        return arrow_ord::ord::make_comparator(&x, &y, Default::default())
            .map(|_| ())
            .map_err(|e| e.to_string());
    }
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
    op.apply(&x, &y)
        .map(|r| r.data_type().clone())
        .map_err(|e| e.to_string())
}
