//! Expressions: one language for every expression lance_core evaluates — `filter=` on
//! scans, `delete(predicate)`, Spark's pushed filters and projections given as SQL
//! (`columns={"x": "a * 2"}`).
//!
//! Three steps: `parse` turns SQL text into an `Expr` (untyped, as written); `bind`
//! checks it against the schema of the batches it will see — resolving columns, giving
//! each literal the type of what it meets, refusing what cannot be compared — and yields
//! a `Bound` expression with a known result type; `eval` runs a `Bound` expression on a
//! record batch with arrow's kernels.
mod bind;
mod eval;
mod parse;

use std::collections::BTreeSet;

use arrow_schema::DataType;

pub use bind::{bind, bind_filter, Bound};
pub use eval::{evaluate, evaluate_filter};
pub use parse::{parse, parse_expression};

/// A literal value, typed as SQL writes it; binding gives it the type of what it meets.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    Null,
    Bool(bool),
    Int(i64),
    /// Integers beyond i64 (up to u64::MAX).
    UInt(u64),
    /// A number with a fraction or an exponent, kept as written so that a decimal column
    /// can take it exactly.
    Float(String),
    String(String),
    Binary(Vec<u8>),
    /// `DATE '...'`, `TIMESTAMP '...'`, `TIME '...'`: the text, parsed when bound.
    Typed {
        kind: TypedKind,
        text: String,
    },
}

impl Literal {
    pub fn float(v: f64) -> Literal {
        Literal::Float(format!("{v:?}"))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypedKind {
    Date,
    Timestamp,
    Time,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A column, or a field inside struct columns (`s.x`).
    Column(Vec<String>),
    Literal(Literal),
    Cmp {
        op: CmpOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
    InList {
        expr: Box<Expr>,
        list: Vec<Literal>,
        negated: bool,
    },
    Like {
        expr: Box<Expr>,
        pattern: String,
        negated: bool,
        case_insensitive: bool,
    },
    Arith {
        op: ArithOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    /// `-x`
    Negative(Box<Expr>),
    /// A field of a struct value: `s['x']`, or `.x` after a subscript (`l[1].x`).
    Field {
        expr: Box<Expr>,
        name: String,
    },
    /// An element of a list value, counted from 1 (`l[1]`); from the end when negative.
    /// Out of range gives NULL.
    Index {
        expr: Box<Expr>,
        index: Box<Expr>,
    },
    /// `CAST(x AS type)`; with `safe` (`TRY_CAST`) a value that does not convert is NULL.
    Cast {
        expr: Box<Expr>,
        to: DataType,
        safe: bool,
    },
}

impl Expr {
    pub fn col(name: &str) -> Expr {
        Expr::Column(vec![name.to_string()])
    }

    pub fn cmp(op: CmpOp, left: Expr, right: Expr) -> Expr {
        Expr::Cmp {
            op,
            left: Box::new(left),
            right: Box::new(right),
        }
    }

    pub fn and(self, other: Expr) -> Expr {
        Expr::And(Box::new(self), Box::new(other))
    }

    pub fn or(self, other: Expr) -> Expr {
        Expr::Or(Box::new(self), Box::new(other))
    }

    pub fn negate(self) -> Expr {
        Expr::Not(Box::new(self))
    }

    /// The top-level columns the expression reads.
    pub fn columns(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        self.visit_columns(&mut |path| {
            out.insert(path[0].clone());
        });
        out
    }

    fn visit_columns(&self, f: &mut impl FnMut(&[String])) {
        match self {
            Expr::Column(p) => f(p),
            Expr::Literal(_) => {}
            Expr::Cmp { left, right, .. }
            | Expr::Arith { left, right, .. }
            | Expr::And(left, right)
            | Expr::Or(left, right)
            | Expr::Index {
                expr: left,
                index: right,
            } => {
                left.visit_columns(f);
                right.visit_columns(f);
            }
            Expr::Not(e)
            | Expr::Negative(e)
            | Expr::IsNull { expr: e, .. }
            | Expr::InList { expr: e, .. }
            | Expr::Like { expr: e, .. }
            | Expr::Field { expr: e, .. }
            | Expr::Cast { expr: e, .. } => e.visit_columns(f),
        }
    }
}

/// SQL text of an expression (for errors): children that are operations are put in
/// parentheses, so the text reads back as the same expression.
impl std::fmt::Display for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        struct Operand<'a>(&'a Expr);
        impl std::fmt::Display for Operand<'_> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self.0 {
                    e @ (Expr::Cmp { .. }
                    | Expr::And(..)
                    | Expr::Or(..)
                    | Expr::Arith { .. }
                    | Expr::Not(_)
                    | Expr::IsNull { .. }
                    | Expr::InList { .. }
                    | Expr::Like { .. }) => write!(f, "({e})"),
                    e => write!(f, "{e}"),
                }
            }
        }
        let quoted = |s: &str| format!("'{}'", s.replace('\'', "''"));
        match self {
            Expr::Column(path) => {
                let parts: Vec<String> = path
                    .iter()
                    .map(|p| {
                        let plain = p
                            .chars()
                            .next()
                            .is_some_and(|c| c.is_alphabetic() || c == '_')
                            && p.chars().all(|c| c.is_alphanumeric() || c == '_');
                        if plain {
                            p.clone()
                        } else {
                            format!("\"{}\"", p.replace('"', "\"\""))
                        }
                    })
                    .collect();
                write!(f, "{}", parts.join("."))
            }
            Expr::Literal(l) => match l {
                Literal::Null => write!(f, "NULL"),
                Literal::Bool(b) => write!(f, "{}", if *b { "TRUE" } else { "FALSE" }),
                Literal::Int(i) => write!(f, "{i}"),
                Literal::UInt(u) => write!(f, "{u}"),
                Literal::Float(x) => write!(f, "{x}"),
                Literal::String(s) => write!(f, "{}", quoted(s)),
                Literal::Binary(b) => {
                    write!(f, "X'")?;
                    for byte in b {
                        write!(f, "{byte:02X}")?;
                    }
                    write!(f, "'")
                }
                Literal::Typed { kind, text } => {
                    let k = match kind {
                        TypedKind::Date => "DATE",
                        TypedKind::Timestamp => "TIMESTAMP",
                        TypedKind::Time => "TIME",
                    };
                    write!(f, "{k} {}", quoted(text))
                }
            },
            Expr::Cmp { op, left, right } => {
                let o = match op {
                    CmpOp::Eq => "=",
                    CmpOp::NotEq => "<>",
                    CmpOp::Lt => "<",
                    CmpOp::LtEq => "<=",
                    CmpOp::Gt => ">",
                    CmpOp::GtEq => ">=",
                };
                write!(f, "{} {o} {}", Operand(left), Operand(right))
            }
            Expr::And(a, b) => write!(f, "{} AND {}", Operand(a), Operand(b)),
            Expr::Or(a, b) => write!(f, "{} OR {}", Operand(a), Operand(b)),
            Expr::Not(a) => write!(f, "NOT {}", Operand(a)),
            Expr::IsNull { expr, negated } => {
                write!(
                    f,
                    "{} IS {}NULL",
                    Operand(expr),
                    if *negated { "NOT " } else { "" }
                )
            }
            Expr::InList {
                expr,
                list,
                negated,
            } => {
                let items: Vec<String> = list
                    .iter()
                    .map(|l| Expr::Literal(l.clone()).to_string())
                    .collect();
                let not = if *negated { "NOT " } else { "" };
                write!(f, "{} {not}IN ({})", Operand(expr), items.join(", "))
            }
            Expr::Like {
                expr,
                pattern,
                negated,
                case_insensitive,
            } => {
                let not = if *negated { "NOT " } else { "" };
                let like = if *case_insensitive { "ILIKE" } else { "LIKE" };
                write!(f, "{} {not}{like} {}", Operand(expr), quoted(pattern))
            }
            Expr::Arith { op, left, right } => {
                let o = match op {
                    ArithOp::Add => "+",
                    ArithOp::Sub => "-",
                    ArithOp::Mul => "*",
                    ArithOp::Div => "/",
                    ArithOp::Rem => "%",
                };
                write!(f, "{} {o} {}", Operand(left), Operand(right))
            }
            Expr::Negative(e) => write!(f, "-{}", Operand(e)),
            Expr::Field { expr, name } => write!(f, "{}[{}]", Operand(expr), quoted(name)),
            Expr::Index { expr, index } => write!(f, "{}[{index}]", Operand(expr)),
            Expr::Cast { expr, to, safe } => {
                let kind = if *safe { "TRY_CAST" } else { "CAST" };
                write!(f, "{kind}({expr} AS {to})")
            }
        }
    }
}
