//! Filter expressions: one expression type for every predicate lance_core evaluates
//! (`filter=` on scans, `delete(predicate)`, Spark's pushed filters). Parsed from SQL
//! text (`parse`), evaluated on Arrow record batches (`eval`).
mod eval;
mod parse;

use std::collections::BTreeSet;

pub use eval::evaluate;
pub use parse::parse;

/// A literal value, typed as SQL writes it; it is cast to the column it meets.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    Null,
    Bool(bool),
    Int(i64),
    /// Integers beyond i64 (up to u64::MAX).
    UInt(u64),
    Float(f64),
    String(String),
    Binary(Vec<u8>),
    /// `DATE '...'`, `TIMESTAMP '...'`, `TIME '...'`: the text, parsed when cast.
    Typed {
        kind: TypedKind,
        text: String,
    },
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
            | Expr::Or(left, right) => {
                left.visit_columns(f);
                right.visit_columns(f);
            }
            Expr::Not(e)
            | Expr::IsNull { expr: e, .. }
            | Expr::InList { expr: e, .. }
            | Expr::Like { expr: e, .. } => e.visit_columns(f),
        }
    }
}
