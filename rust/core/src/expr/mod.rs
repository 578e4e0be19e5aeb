//! Expressions: one language for every expression lance_core evaluates — `filter=` on
//! scans, `delete(predicate)`, Spark's pushed filters, projections given as SQL
//! (`columns={"x": "a * 2"}`) and new values of updated columns.
//!
//! Three steps: `parse` turns SQL text into an `Expr` (untyped, as written); `bind`
//! checks it against the schema of the batches it will see — resolving columns, giving
//! each literal the type of what it meets, refusing what cannot be compared — and yields
//! a `Bound` expression with a known result type; `eval` runs a `Bound` expression on a
//! record batch with arrow's kernels.
mod arrow_expr;
mod bind;
mod compare;
mod eval;
mod functions;
mod json;
pub use json::JsonFunction;
mod lists;
mod parse;
pub mod ranges;
pub mod select;
mod types;

use std::collections::BTreeSet;

use arrow_schema::{DataType, TimeUnit};

pub use arrow_expr::from_pyarrow;
pub(crate) use arrow_expr::literal as literal_of;
pub use bind::{bind, bind_filter, Bound};
pub use compare::normalize_floats;
pub use eval::{evaluate, evaluate_filter, evaluate_filter_where};
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
    /// `TIMESTAMP[(p)] '...'`: seconds, milliseconds, microseconds (the default) or
    /// nanoseconds.
    Timestamp(TimeUnit),
    Time,
    /// `DECIMAL(p, s) '1.50'`
    Decimal(u8, i8),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    /// `IS DISTINCT FROM`: `<>` where NULL is a value (never NULL itself).
    Distinct,
    /// `IS NOT DISTINCT FROM`: `=` where NULL is a value.
    NotDistinct,
}

/// What `IS [NOT] TRUE | FALSE | UNKNOWN` tests a boolean for (UNKNOWN: NULL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Truth {
    True,
    False,
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl ArithOp {
    /// The operation on two arrays or scalars (arrow's kernels). Integer overflow wraps
    /// (as in pylance); division by zero is an error.
    pub(crate) fn apply(
        self,
        l: &dyn arrow_array::Datum,
        r: &dyn arrow_array::Datum,
    ) -> std::result::Result<arrow_array::ArrayRef, arrow_schema::ArrowError> {
        use arrow_arith::numeric;
        match self {
            ArithOp::Add => numeric::add_wrapping(l, r),
            ArithOp::Sub => numeric::sub_wrapping(l, r),
            ArithOp::Mul => numeric::mul_wrapping(l, r),
            ArithOp::Div => numeric::div(l, r),
            ArithOp::Rem => numeric::rem(l, r),
        }
    }
}

/// How `ListHas` searches a list for its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListSearch {
    /// `array_has_any(l, [..])` (also `list_has_any`, `arrays_overlap`): some value is in
    /// the list. A NULL value matches a NULL item.
    Any,
    /// `array_has_all(l, [..])` (also `list_has_all`): every value is in the list.
    All,
    /// `array_has(l, x)` (also `array_contains`, `list_has`, `list_contains`): `x` is in
    /// the list; NULL when `x` is NULL.
    Element,
}

impl ListSearch {
    const NAMES: [(&'static str, ListSearch); 9] = [
        ("array_has_any", ListSearch::Any),
        ("list_has_any", ListSearch::Any),
        ("arrays_overlap", ListSearch::Any),
        ("array_has_all", ListSearch::All),
        ("list_has_all", ListSearch::All),
        ("array_has", ListSearch::Element),
        ("array_contains", ListSearch::Element),
        ("list_has", ListSearch::Element),
        ("list_contains", ListSearch::Element),
    ];

    /// The search called `name` (any case).
    pub fn from_name(name: &str) -> Option<ListSearch> {
        Self::NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, s)| *s)
    }

    pub fn names() -> impl Iterator<Item = &'static str> {
        Self::NAMES.into_iter().map(|(n, _)| n)
    }

    pub fn name(self) -> &'static str {
        match self {
            ListSearch::Any => "array_has_any",
            ListSearch::All => "array_has_all",
            ListSearch::Element => "array_has",
        }
    }
}

/// The functions an expression can call. Names are matched ignoring case; some have a
/// second name (`substring`, `char_length`, `btrim`), as in DataFusion and PostgreSQL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    /// `coalesce(a, b, ...)`: the first argument that is not NULL.
    Coalesce,
    /// `nullif(a, b)`: NULL where `a = b`, else `a`.
    NullIf,
    Lower,
    Upper,
    /// `concat(a, b, ...)`: NULL arguments count as empty strings, others are converted
    /// to strings; the result is never NULL.
    Concat,
    /// `a || b`: as concat, but NULL when either is NULL (SQL's operator).
    ConcatOp,
    /// `substr(s, start[, count])`: characters from `start` (from 1; before 1 counts
    /// toward `count`), as in PostgreSQL.
    Substr,
    /// `trim(s[, characters])`: removes spaces (or any of `characters`) from both ends.
    Trim,
    Ltrim,
    Rtrim,
    /// `length(s)`: characters, not bytes.
    Length,
    Abs,
    /// `round(x[, digits])`: halves away from zero.
    Round,
    /// `regexp_like(s, pattern[, flags])`: whether `s` holds a match of the regular
    /// expression (Rust's `regex` syntax; flags such as `i`). pylance reads
    /// `regexp_match(..)` as "has a match" (`regexp_like(..) IS TRUE`; see `parse`).
    RegexpLike,
    /// pylance's JSON functions (see `json`).
    Json(JsonFunction),
    /// `make_array(a, b, ...)`, also written `[a, b, ...]`: a list of the values (in the
    /// type they all convert to) for each row.
    MakeArray,
}

impl Function {
    /// Every function by each of its names.
    const NAMES: [(&'static str, Function); 27] = [
        ("abs", Function::Abs),
        ("btrim", Function::Trim),
        ("char_length", Function::Length),
        ("character_length", Function::Length),
        ("coalesce", Function::Coalesce),
        ("concat", Function::Concat),
        (
            "json_array_contains",
            Function::Json(JsonFunction::ArrayContains),
        ),
        (
            "json_array_length",
            Function::Json(JsonFunction::ArrayLength),
        ),
        ("json_exists", Function::Json(JsonFunction::Exists)),
        ("json_extract", Function::Json(JsonFunction::Extract)),
        ("json_get", Function::Json(JsonFunction::Get)),
        ("json_get_bool", Function::Json(JsonFunction::GetBool)),
        ("json_get_float", Function::Json(JsonFunction::GetFloat)),
        ("json_get_int", Function::Json(JsonFunction::GetInt)),
        ("json_get_string", Function::Json(JsonFunction::GetString)),
        ("length", Function::Length),
        ("lower", Function::Lower),
        ("make_array", Function::MakeArray),
        ("ltrim", Function::Ltrim),
        ("nullif", Function::NullIf),
        ("regexp_like", Function::RegexpLike),
        ("round", Function::Round),
        ("rtrim", Function::Rtrim),
        ("substr", Function::Substr),
        ("substring", Function::Substr),
        ("trim", Function::Trim),
        ("upper", Function::Upper),
    ];

    /// The function called `name` (any case).
    pub fn from_name(name: &str) -> Option<Function> {
        Self::NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, f)| *f)
    }

    /// All names, for an error about an unknown one.
    pub fn known() -> String {
        Self::NAMES.map(|(n, _)| n).join(", ")
    }

    /// The name it is printed with.
    pub fn name(self) -> &'static str {
        match self {
            Function::Coalesce => "coalesce",
            Function::NullIf => "nullif",
            Function::Lower => "lower",
            Function::Upper => "upper",
            Function::Concat => "concat",
            Function::ConcatOp => "||",
            Function::Substr => "substr",
            Function::Trim => "trim",
            Function::Ltrim => "ltrim",
            Function::Rtrim => "rtrim",
            Function::Length => "length",
            Function::Abs => "abs",
            Function::Round => "round",
            Function::RegexpLike => "regexp_like",
            Function::Json(f) => f.name(),
            Function::MakeArray => "make_array",
        }
    }

    /// How many arguments it takes: at least, at most (None: any number more).
    pub fn arity(self) -> (usize, Option<usize>) {
        match self {
            Function::Coalesce | Function::Concat | Function::MakeArray => (1, None),
            Function::NullIf | Function::ConcatOp => (2, Some(2)),
            Function::Lower | Function::Upper | Function::Length | Function::Abs => (1, Some(1)),
            Function::Substr | Function::RegexpLike => (2, Some(3)),
            Function::Trim | Function::Ltrim | Function::Rtrim | Function::Round => (1, Some(2)),
            Function::Json(f) => f.arity(),
        }
    }
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
    /// `b IS [NOT] TRUE | FALSE | UNKNOWN`: never NULL (`NULL IS NOT TRUE` holds).
    Is {
        expr: Box<Expr>,
        truth: Truth,
        negated: bool,
    },
    InList {
        expr: Box<Expr>,
        list: Vec<Literal>,
        negated: bool,
    },
    /// `x [NOT] BETWEEN low AND high`: `low <= x AND x <= high`, the three compared in the
    /// one type they meet in.
    Between {
        expr: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
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
    /// `CASE [operand] WHEN w THEN v ... [ELSE e] END`: the value of the first branch
    /// whose condition is TRUE (with an operand: whose `w` equals it), else `e`, else
    /// NULL.
    Case {
        operand: Option<Box<Expr>>,
        branches: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
    },
    /// Whether a list holds some, all or one of constant values: `array_has_any(l, [1, 2])`.
    /// Values compare as in `=`, except that NULL matches NULL items and NaN matches NaN.
    /// A NULL list gives NULL, except with no values (`array_has_any` FALSE,
    /// `array_has_all` TRUE).
    ListHas {
        list: Box<Expr>,
        values: Vec<Expr>,
        search: ListSearch,
    },
    /// A function call: `lower(s)`, `coalesce(a, 0)`.
    Call {
        function: Function,
        args: Vec<Expr>,
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

    /// Every column path the expression reads (`["s", "x"]` for `s.x`).
    pub fn column_paths(&self) -> BTreeSet<Vec<String>> {
        let mut out = BTreeSet::new();
        self.visit_columns(&mut |path| {
            out.insert(path.to_vec());
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
            Expr::Between {
                expr, low, high, ..
            } => {
                for e in [expr, low, high] {
                    e.visit_columns(f);
                }
            }
            Expr::Not(e)
            | Expr::Negative(e)
            | Expr::IsNull { expr: e, .. }
            | Expr::Is { expr: e, .. }
            | Expr::InList { expr: e, .. }
            | Expr::ListHas { list: e, .. }
            | Expr::Like { expr: e, .. }
            | Expr::Field { expr: e, .. }
            | Expr::Cast { expr: e, .. } => e.visit_columns(f),
            Expr::Case {
                operand,
                branches,
                otherwise,
            } => {
                let values = branches.iter().flat_map(|(w, v)| [w, v]);
                for e in operand
                    .iter()
                    .map(|e| &**e)
                    .chain(values)
                    .chain(otherwise.as_deref())
                {
                    e.visit_columns(f);
                }
            }
            Expr::Call { args, .. } => args.iter().for_each(|a| a.visit_columns(f)),
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
                    | Expr::Is { .. }
                    | Expr::Between { .. }
                    | Expr::InList { .. }
                    | Expr::Like { .. }
                    | Expr::Call {
                        function: Function::ConcatOp,
                        ..
                    }) => write!(f, "({e})"),
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
                        if parse::is_bare_name(p) {
                            p.clone()
                        } else {
                            format!("`{}`", p.replace('`', "``"))
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
                        TypedKind::Date => "DATE".to_string(),
                        TypedKind::Timestamp(TimeUnit::Microsecond) => "TIMESTAMP".to_string(),
                        TypedKind::Timestamp(u) => {
                            let p = match u {
                                TimeUnit::Second => 0,
                                TimeUnit::Millisecond => 3,
                                TimeUnit::Microsecond => 6,
                                TimeUnit::Nanosecond => 9,
                            };
                            format!("TIMESTAMP({p})")
                        }
                        TypedKind::Time => "TIME".to_string(),
                        TypedKind::Decimal(p, s) => format!("DECIMAL({p}, {s})"),
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
                    CmpOp::Distinct => "IS DISTINCT FROM",
                    CmpOp::NotDistinct => "IS NOT DISTINCT FROM",
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
            Expr::Is {
                expr,
                truth,
                negated,
            } => {
                let not = if *negated { "NOT " } else { "" };
                let truth = match truth {
                    Truth::True => "TRUE",
                    Truth::False => "FALSE",
                    Truth::Unknown => "UNKNOWN",
                };
                write!(f, "{} IS {not}{truth}", Operand(expr))
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
            Expr::ListHas {
                list,
                values,
                search,
            } => {
                let items: Vec<String> = values.iter().map(|v| v.to_string()).collect();
                match search {
                    ListSearch::Element => write!(f, "array_has({list}, {})", items.join(", ")),
                    _ => write!(f, "{}({list}, [{}])", search.name(), items.join(", ")),
                }
            }
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => {
                let not = if *negated { "NOT " } else { "" };
                write!(
                    f,
                    "{} {not}BETWEEN {} AND {}",
                    Operand(expr),
                    Operand(low),
                    Operand(high)
                )
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
            Expr::Case {
                operand,
                branches,
                otherwise,
            } => {
                write!(f, "CASE")?;
                if let Some(x) = operand {
                    write!(f, " {x}")?;
                }
                for (w, v) in branches {
                    write!(f, " WHEN {w} THEN {v}")?;
                }
                if let Some(e) = otherwise {
                    write!(f, " ELSE {e}")?;
                }
                write!(f, " END")
            }
            Expr::Call {
                function: Function::ConcatOp,
                args,
            } if args.len() == 2 => write!(f, "{} || {}", Operand(&args[0]), Operand(&args[1])),
            Expr::Call { function, args } => {
                let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
                write!(f, "{}({})", function.name(), args.join(", "))
            }
        }
    }
}
