//! SQL text → `Expr`, with sqlparser. Accepts what a WHERE clause or a SELECT list of
//! one table holds: comparisons, AND/OR/NOT, IN, BETWEEN, IS [NOT] NULL, [NOT] LIKE /
//! ILIKE, arithmetic, CAST / TRY_CAST / `::`, literals (numbers, strings, booleans, NULL,
//! DATE/TIMESTAMP/TIME '...', X'..' bytes), column references (dotted for fields of
//! structs), struct fields by subscript (`s['x']`) and list elements (`l[1]`, from 1),
//! CASE, and calls of the functions `Function` lists (with SQL's own spellings
//! `SUBSTRING(s FROM a FOR n)` and `TRIM(LEADING 'x' FROM s)`).
use arrow_schema::{DataType, TimeUnit};
use sqlparser::ast::{self, BinaryOperator, UnaryOperator, Value};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use super::{ArithOp, CmpOp, Expr, Function, ListSearch, Literal, Truth, TypedKind};
use crate::error::{Error, Result};

/// The text being parsed, and what it is for ("filter", "expression"), for errors.
#[derive(Clone, Copy)]
struct Source<'a> {
    text: &'a str,
    kind: &'a str,
}

fn bad(src: Source<'_>, what: impl std::fmt::Display) -> Error {
    Error::invalid(format!("cannot use {} '{}': {what}", src.kind, src.text))
}

/// Parse a predicate (`filter=`, `delete`).
pub fn parse(text: &str) -> Result<Expr> {
    parse_as(Source {
        text,
        kind: "filter",
    })
}

/// Parse a value expression (a projection's column, an update's new value).
pub fn parse_expression(text: &str) -> Result<Expr> {
    parse_as(Source {
        text,
        kind: "expression",
    })
}

fn parse_as(src: Source<'_>) -> Result<Expr> {
    let dialect = GenericDialect {};
    let mut tokens = sqlparser::tokenizer::Tokenizer::new(&dialect, src.text)
        .tokenize()
        .map_err(|e| bad(src, e))?;
    // A word before a dot names a column whose field follows, even when it is a keyword
    // SQL gives a syntax of its own (`struct.y`, `map.k`, `date.day`): quoted, it is read
    // as a name.
    for i in 0..tokens.len().saturating_sub(1) {
        if let (Token::Word(w), Token::Period) = (&tokens[i], &tokens[i + 1]) {
            if w.quote_style.is_none() && w.keyword != sqlparser::keywords::Keyword::NoKeyword {
                tokens[i] = Token::Word(sqlparser::tokenizer::Word {
                    value: w.value.clone(),
                    quote_style: Some('`'),
                    keyword: sqlparser::keywords::Keyword::NoKeyword,
                });
            }
        }
    }
    let mut parser = Parser::new(&dialect).with_tokens(tokens);
    let expr = parser.parse_expr().map_err(|e| bad(src, e))?;
    if parser.peek_token().token != Token::EOF {
        return Err(bad(
            src,
            format!(
                "unexpected '{}' after the expression",
                parser.peek_token().token
            ),
        ));
    }
    convert(&expr, src)
}

fn literal(v: &Value, text: Source<'_>) -> Result<Literal> {
    Ok(match v {
        Value::Null => Literal::Null,
        Value::Boolean(b) => Literal::Bool(*b),
        Value::Number(n, _) => {
            if let Ok(i) = n.parse::<i64>() {
                Literal::Int(i)
            } else if let Ok(u) = n.parse::<u64>() {
                Literal::UInt(u)
            } else {
                n.parse::<f64>()
                    .map_err(|_| bad(text, format!("bad number {n}")))?;
                Literal::Float(n.clone())
            }
        }
        Value::SingleQuotedString(s)
        | Value::DoubleQuotedString(s)
        | Value::EscapedStringLiteral(s) => Literal::String(s.clone()),
        Value::HexStringLiteral(h) => {
            let bytes = (0..h.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(h.get(i..i + 2).unwrap_or("?"), 16))
                .collect::<std::result::Result<Vec<u8>, _>>()
                .map_err(|_| bad(text, format!("bad hex literal X'{h}'")))?;
            Literal::Binary(bytes)
        }
        other => return Err(bad(text, format!("unsupported literal {other}"))),
    })
}

fn literal_of(e: &ast::Expr, text: Source<'_>) -> Result<Literal> {
    match convert(e, text)? {
        Expr::Literal(l) => Ok(l),
        _ => Err(bad(text, format!("'{e}' is not a literal"))),
    }
}

fn convert(e: &ast::Expr, text: Source<'_>) -> Result<Expr> {
    use ast::Expr as E;
    Ok(match e {
        // As in pylance, "x" is a string (names are quoted with backticks: `my col`).
        E::Identifier(id) if id.quote_style == Some('"') => {
            Expr::Literal(Literal::String(id.value.clone()))
        }
        E::Identifier(id) => Expr::Column(vec![id.value.clone()]),
        E::CompoundIdentifier(ids) => Expr::Column(ids.iter().map(|i| i.value.clone()).collect()),
        E::Nested(inner) => convert(inner, text)?,
        E::Value(v) => Expr::Literal(literal(&v.value, text)?),
        E::TypedString(ts) => {
            let kind = match sql_type(&ts.data_type) {
                Some(DataType::Date32) => TypedKind::Date,
                Some(DataType::Timestamp(unit, None)) => TypedKind::Timestamp(unit),
                Some(DataType::Decimal128(p, s)) => TypedKind::Decimal(p, s),
                _ if matches!(ts.data_type, ast::DataType::Time(..)) => TypedKind::Time,
                _ => {
                    return Err(bad(
                        text,
                        format!("unsupported typed literal {}", ts.data_type),
                    ))
                }
            };
            let text_value = match &ts.value.value {
                Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => s.clone(),
                other => other.to_string(),
            };
            Expr::Literal(Literal::Typed {
                kind,
                text: text_value,
            })
        }
        E::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => convert(expr, text)?.negate(),
        E::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match convert(expr, text)? {
            Expr::Literal(Literal::Int(i)) => Expr::Literal(Literal::Int(-i)),
            Expr::Literal(Literal::Float(f)) => {
                Expr::Literal(Literal::Float(match f.strip_prefix('-') {
                    Some(positive) => positive.to_string(),
                    None => format!("-{f}"),
                }))
            }
            Expr::Literal(Literal::UInt(u)) if u == i64::MAX as u64 + 1 => {
                Expr::Literal(Literal::Int(i64::MIN))
            }
            Expr::Literal(other) => {
                return Err(bad(text, format!("cannot negate {}", describe(&other))))
            }
            other => Expr::Negative(Box::new(other)),
        },
        E::UnaryOp {
            op: UnaryOperator::Plus,
            expr,
        } => convert(expr, text)?,
        E::BinaryOp { left, op, right } => {
            let (l, r) = (convert(left, text)?, convert(right, text)?);
            let cmp = |op| Expr::cmp(op, l.clone(), r.clone());
            match op {
                BinaryOperator::And => l.and(r),
                BinaryOperator::Or => l.or(r),
                BinaryOperator::Eq => cmp(CmpOp::Eq),
                BinaryOperator::NotEq => cmp(CmpOp::NotEq),
                BinaryOperator::Lt => cmp(CmpOp::Lt),
                BinaryOperator::LtEq => cmp(CmpOp::LtEq),
                BinaryOperator::Gt => cmp(CmpOp::Gt),
                BinaryOperator::GtEq => cmp(CmpOp::GtEq),
                BinaryOperator::Plus
                | BinaryOperator::Minus
                | BinaryOperator::Multiply
                | BinaryOperator::Divide
                | BinaryOperator::Modulo => {
                    let op = match op {
                        BinaryOperator::Plus => ArithOp::Add,
                        BinaryOperator::Minus => ArithOp::Sub,
                        BinaryOperator::Multiply => ArithOp::Mul,
                        BinaryOperator::Divide => ArithOp::Div,
                        _ => ArithOp::Rem,
                    };
                    Expr::Arith {
                        op,
                        left: Box::new(l),
                        right: Box::new(r),
                    }
                }
                BinaryOperator::StringConcat => Expr::Call {
                    function: Function::ConcatOp,
                    args: vec![l, r],
                },
                other => return Err(bad(text, format!("unsupported operator {other}"))),
            }
        }
        E::IsDistinctFrom(a, b) => Expr::cmp(CmpOp::Distinct, convert(a, text)?, convert(b, text)?),
        E::IsNotDistinctFrom(a, b) => {
            Expr::cmp(CmpOp::NotDistinct, convert(a, text)?, convert(b, text)?)
        }
        E::IsNull(inner) => Expr::IsNull {
            expr: Box::new(convert(inner, text)?),
            negated: false,
        },
        E::IsNotNull(inner) => Expr::IsNull {
            expr: Box::new(convert(inner, text)?),
            negated: true,
        },
        E::IsTrue(inner) => is(inner, Truth::True, false, text)?,
        E::IsNotTrue(inner) => is(inner, Truth::True, true, text)?,
        E::IsFalse(inner) => is(inner, Truth::False, false, text)?,
        E::IsNotFalse(inner) => is(inner, Truth::False, true, text)?,
        E::IsUnknown(inner) => is(inner, Truth::Unknown, false, text)?,
        E::IsNotUnknown(inner) => is(inner, Truth::Unknown, true, text)?,
        E::InList {
            expr,
            list,
            negated,
        } => {
            let x = convert(expr, text)?;
            let items = list
                .iter()
                .map(|v| convert(v, text))
                .collect::<Result<Vec<_>>>()?;
            let literals: Option<Vec<Literal>> = items
                .iter()
                .map(|e| match e {
                    Expr::Literal(l) => Some(l.clone()),
                    _ => None,
                })
                .collect();
            match literals {
                Some(list) => Expr::InList {
                    expr: Box::new(x),
                    list,
                    negated: *negated,
                },
                // With values that are not literals (`a IN (b, 7)`): `a = b OR a = 7`, which
                // is what IN means, NULLs included.
                None => {
                    let any = items
                        .into_iter()
                        .map(|v| Expr::cmp(CmpOp::Eq, x.clone(), v))
                        .reduce(Expr::or)
                        .ok_or_else(|| bad(text, "IN needs at least one value"))?;
                    if *negated {
                        any.negate()
                    } else {
                        any
                    }
                }
            }
        }
        E::Between {
            expr,
            negated,
            low,
            high,
        } => Expr::Between {
            expr: Box::new(convert(expr, text)?),
            low: Box::new(convert(low, text)?),
            high: Box::new(convert(high, text)?),
            negated: *negated,
        },
        E::Like {
            negated,
            expr,
            pattern,
            escape_char: None,
            any: false,
        }
        | E::ILike {
            negated,
            expr,
            pattern,
            escape_char: None,
            any: false,
        } => {
            let Literal::String(p) = literal_of(pattern, text)? else {
                return Err(bad(text, "LIKE needs a string pattern"));
            };
            Expr::Like {
                expr: Box::new(convert(expr, text)?),
                pattern: p,
                negated: *negated,
                case_insensitive: matches!(e, E::ILike { .. }),
            }
        }
        E::CompoundFieldAccess { root, access_chain } => {
            let mut out = convert(root, text)?;
            for step in access_chain {
                out = match step {
                    ast::AccessExpr::Subscript(ast::Subscript::Index { index }) => {
                        match convert(index, text)? {
                            // A string subscript names a struct field.
                            Expr::Literal(Literal::String(name)) => Expr::Field {
                                expr: Box::new(out),
                                name,
                            },
                            index => Expr::Index {
                                expr: Box::new(out),
                                index: Box::new(index),
                            },
                        }
                    }
                    ast::AccessExpr::Dot(ast::Expr::Identifier(id)) => Expr::Field {
                        expr: Box::new(out),
                        name: id.value.clone(),
                    },
                    other => return Err(bad(text, format!("unsupported access '{other}'"))),
                };
            }
            out
        }
        E::Cast {
            kind,
            expr,
            data_type,
            format: None,
        } => Expr::Cast {
            expr: Box::new(convert(expr, text)?),
            to: sql_type(data_type).ok_or_else(|| {
                bad(
                    text,
                    format!(
                        "cannot cast to {data_type} (types are [TINYINT|SMALLINT|INT|BIGINT] \
                         [UNSIGNED], FLOAT, DOUBLE, DECIMAL(p, s), BOOLEAN, STRING, BINARY, \
                         DATE, TIMESTAMP[(p)])"
                    ),
                )
            })?,
            safe: matches!(kind, ast::CastKind::TryCast | ast::CastKind::SafeCast),
        },
        E::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            let boxed = |e: &Option<Box<ast::Expr>>| -> Result<Option<Box<Expr>>> {
                Ok(match e {
                    Some(e) => Some(Box::new(convert(e, text)?)),
                    None => None,
                })
            };
            Expr::Case {
                operand: boxed(operand)?,
                branches: conditions
                    .iter()
                    .map(|c| Ok((convert(&c.condition, text)?, convert(&c.result, text)?)))
                    .collect::<Result<_>>()?,
                otherwise: boxed(else_result)?,
            }
        }
        E::Function(call) => function(call, text)?,
        // sqlparser reads every spelling of substr/substring itself.
        E::Substring {
            expr,
            substring_from,
            substring_for,
            ..
        } => {
            let mut args = vec![convert(expr, text)?];
            match (substring_from, substring_for) {
                (Some(from), _) => args.push(convert(from, text)?),
                // `SUBSTRING(s FOR n)` starts at 1.
                (None, Some(_)) => args.push(Expr::Literal(Literal::Int(1))),
                // `substr(s)`: binding says what is missing.
                (None, None) => {}
            }
            if let Some(count) = substring_for {
                args.push(convert(count, text)?);
            }
            Expr::Call {
                function: Function::Substr,
                args,
            }
        }
        // And every spelling of trim: TRIM(s), TRIM(s, 'x'), TRIM([BOTH|LEADING|TRAILING]
        // ['x'] FROM s).
        E::Trim {
            expr,
            trim_where,
            trim_what,
            trim_characters,
        } => {
            let function = match trim_where {
                None | Some(ast::TrimWhereField::Both) => Function::Trim,
                Some(ast::TrimWhereField::Leading) => Function::Ltrim,
                Some(ast::TrimWhereField::Trailing) => Function::Rtrim,
            };
            let mut args = vec![convert(expr, text)?];
            match (trim_what, trim_characters.as_deref()) {
                (Some(what), _) => args.push(convert(what, text)?),
                (None, Some([chars])) => args.push(convert(chars, text)?),
                (None, Some(_)) => return Err(bad(text, "TRIM takes one string of characters")),
                (None, None) => {}
            }
            Expr::Call { function, args }
        }
        ast::Expr::Array(a) => Expr::Call {
            function: Function::MakeArray,
            args: a
                .elem
                .iter()
                .map(|e| convert(e, text))
                .collect::<Result<_>>()?,
        },
        other => return Err(bad(text, format!("unsupported expression '{other}'"))),
    })
}

fn is(inner: &ast::Expr, truth: Truth, negated: bool, text: Source<'_>) -> Result<Expr> {
    Ok(Expr::Is {
        expr: Box::new(convert(inner, text)?),
        truth,
        negated,
    })
}

/// A call of a function `Function` knows, of a list search (`ListSearch`) or of a string
/// test (`contains`, `starts_with`, `ends_with`), with plain arguments (no DISTINCT, OVER,
/// ...).
fn function(call: &ast::Function, text: Source<'_>) -> Result<Expr> {
    if let Some(now) = clock(call) {
        return Ok(Expr::Literal(now));
    }
    /// What a name calls.
    enum Callee {
        Search(ListSearch),
        Test(StringTest),
        Function(Function),
    }
    let name = call.name.to_string();
    // As pylance coerces it: whether there is a match (never NULL), not the groups.
    let has_match = name.eq_ignore_ascii_case("regexp_match");
    let callee = match &call.name.0[..] {
        [ast::ObjectNamePart::Identifier(_)] if has_match => {
            Some(Callee::Function(Function::RegexpLike))
        }
        [ast::ObjectNamePart::Identifier(id)] => {
            let n = id.value.as_str();
            ListSearch::from_name(n)
                .map(Callee::Search)
                .or_else(|| StringTest::from_name(n).map(Callee::Test))
                .or_else(|| Function::from_name(n).map(Callee::Function))
        }
        _ => None,
    }
    .ok_or_else(|| {
        bad(
            text,
            format!("unknown function '{name}' (known: {})", known_functions()),
        )
    })?;
    let unsupported = || bad(text, format!("unsupported call of {name}: '{call}'"));
    let plain = call.filter.is_none()
        && call.over.is_none()
        && call.within_group.is_empty()
        && call.null_treatment.is_none()
        && !call.uses_odbc_syntax
        && matches!(call.parameters, ast::FunctionArguments::None);
    let ast::FunctionArguments::List(list) = &call.args else {
        return Err(unsupported());
    };
    if !plain || list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
        return Err(unsupported());
    }
    let args: Vec<&ast::Expr> = list
        .args
        .iter()
        .map(|a| match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e),
            _ => Err(unsupported()),
        })
        .collect::<Result<_>>()?;
    match callee {
        Callee::Search(search) => list_search(search, &name, &args, text),
        Callee::Test(test) => string_test(test, &name, &args, text),
        Callee::Function(function) => {
            let call = Expr::Call {
                function,
                args: args
                    .into_iter()
                    .map(|e| convert(e, text))
                    .collect::<Result<_>>()?,
            };
            Ok(match has_match {
                true => Expr::Is {
                    expr: Box::new(call),
                    truth: Truth::True,
                    negated: false,
                },
                false => call,
            })
        }
    }
}

/// `current_date()`, `now()` / `current_timestamp()`: the date or time (UTC) the
/// expression is read at, as a literal.
fn clock(call: &ast::Function) -> Option<Literal> {
    let no_args = match &call.args {
        ast::FunctionArguments::None => true,
        ast::FunctionArguments::List(l) => l.args.is_empty(),
        _ => false,
    };
    let name = call.name.to_string().to_ascii_lowercase();
    let now = chrono::Utc::now().naive_utc();
    match name.as_str() {
        "current_date" if no_args => Some(Literal::Typed {
            kind: TypedKind::Date,
            text: now.date().to_string(),
        }),
        "now" | "current_timestamp" if no_args => Some(Literal::Typed {
            kind: TypedKind::Timestamp(TimeUnit::Microsecond),
            text: now.format("%Y-%m-%d %H:%M:%S%.6f").to_string(),
        }),
        _ => None,
    }
}

fn known_functions() -> String {
    let mut names: Vec<String> = Function::known().split(", ").map(String::from).collect();
    names.extend(ListSearch::names().map(String::from));
    names.extend(["contains", "ends_with", "starts_with"].map(String::from));
    names.extend(["current_date", "current_timestamp", "now", "regexp_match"].map(String::from));
    names.sort_unstable();
    names.join(", ")
}

/// `array_has_any(l, [1, 2])`, `array_has(l, 1)`: the list, then literal values (a list
/// literal `[..]` or `make_array(..)` for `Any` and `All`, one literal for `Element`).
fn list_search(
    search: ListSearch,
    name: &str,
    args: &[&ast::Expr],
    text: Source<'_>,
) -> Result<Expr> {
    let [list, values] = args else {
        return Err(bad(
            text,
            format!("{name} takes 2 arguments, not {}", args.len()),
        ));
    };
    let values = match search {
        ListSearch::Element => vec![convert(values, text)?],
        ListSearch::Any | ListSearch::All => list_literal(values)
            .ok_or_else(|| {
                bad(
                    text,
                    format!("{name} needs a list of constant values ([1, 2]), not '{values}'"),
                )
            })?
            .into_iter()
            .map(|e| convert(e, text))
            .collect::<Result<_>>()?,
    };
    Ok(Expr::ListHas {
        list: Box::new(convert(list, text)?),
        values,
        search,
    })
}

/// The elements of `[a, b]` or `make_array(a, b)`.
fn list_literal(e: &ast::Expr) -> Option<Vec<&ast::Expr>> {
    match e {
        ast::Expr::Array(a) => Some(a.elem.iter().collect()),
        ast::Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("make_array") => {
            match &f.args {
                ast::FunctionArguments::List(l) => l
                    .args
                    .iter()
                    .map(|a| match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e),
                        _ => None,
                    })
                    .collect(),
                ast::FunctionArguments::None => Some(vec![]),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The string tests that are LIKE patterns.
#[derive(Clone, Copy)]
enum StringTest {
    Contains,
    StartsWith,
    EndsWith,
}

impl StringTest {
    fn from_name(name: &str) -> Option<StringTest> {
        [
            ("contains", StringTest::Contains),
            ("starts_with", StringTest::StartsWith),
            ("ends_with", StringTest::EndsWith),
        ]
        .into_iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, t)| t)
    }
}

/// `contains(s, 'x')` is `s LIKE '%x%'` (with `%`, `_` and `\` in 'x' escaped), and so on:
/// one kernel, and indices see them as the LIKE they are. A NULL text gives NULL.
fn string_test(
    test: StringTest,
    name: &str,
    args: &[&ast::Expr],
    text: Source<'_>,
) -> Result<Expr> {
    let [s, needle] = args else {
        return Err(bad(
            text,
            format!("{name} takes 2 arguments, not {}", args.len()),
        ));
    };
    let needle = match literal_of(needle, text) {
        Ok(Literal::String(n)) => n,
        Ok(Literal::Null) => return Ok(Expr::Literal(Literal::Null)),
        _ => {
            return Err(bad(
                text,
                format!("{name} needs a string literal to look for, not '{needle}'"),
            ))
        }
    };
    let mut escaped = String::with_capacity(needle.len() + 2);
    for c in needle.chars() {
        if matches!(c, '%' | '_' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    let pattern = match test {
        StringTest::Contains => format!("%{escaped}%"),
        StringTest::StartsWith => format!("{escaped}%"),
        StringTest::EndsWith => format!("%{escaped}"),
    };
    Ok(Expr::Like {
        expr: Box::new(convert(s, text)?),
        pattern,
        negated: false,
        case_insensitive: false,
    })
}

/// How an error names a literal.
pub(super) fn describe(l: &Literal) -> String {
    match l {
        Literal::Null => "NULL".into(),
        Literal::Bool(b) => format!("the boolean {b}"),
        Literal::Int(i) => format!("the integer {i}"),
        Literal::UInt(u) => format!("the integer {u}"),
        Literal::Float(f) => format!("the number {f}"),
        Literal::String(s) => format!("the string '{s}'"),
        Literal::Binary(b) => format!("{} bytes", b.len()),
        Literal::Typed { .. } => Expr::Literal(l.clone()).to_string(),
    }
}

/// The Arrow type of an SQL type name in a cast.
fn sql_type(t: &ast::DataType) -> Option<DataType> {
    use ast::DataType as T;
    use ast::ExactNumberInfo as N;
    Some(match t {
        T::Boolean | T::Bool => DataType::Boolean,
        T::TinyInt(_) | T::Int8(_) => DataType::Int8,
        T::SmallInt(_) | T::Int2(_) | T::Int16 => DataType::Int16,
        T::Int(_) | T::Integer(_) | T::Int4(_) | T::Int32 => DataType::Int32,
        T::BigInt(_) | T::Int64 => DataType::Int64,
        T::TinyIntUnsigned(_) | T::UTinyInt | T::UInt8 => DataType::UInt8,
        T::SmallIntUnsigned(_) | T::USmallInt | T::UInt16 => DataType::UInt16,
        T::IntUnsigned(_) | T::IntegerUnsigned(_) | T::Int4Unsigned(_) | T::UInt32 => {
            DataType::UInt32
        }
        T::BigIntUnsigned(_) | T::UBigInt | T::UInt64 | T::Int8Unsigned(_) => DataType::UInt64,
        T::Float(_) | T::Real | T::Float4 | T::Float32 => DataType::Float32,
        T::Double(_) | T::DoublePrecision | T::Float8 | T::Float64 => DataType::Float64,
        T::Decimal(info) | T::Numeric(info) | T::Dec(info) => {
            let (p, s) = match info {
                N::None => (38, 10),
                N::Precision(p) => (*p, 0),
                N::PrecisionAndScale(p, s) => (*p, *s),
            };
            let (p, s) = (u8::try_from(p).ok()?, i8::try_from(s).ok()?);
            match p {
                1..=38 => DataType::Decimal128(p, s),
                39..=76 => DataType::Decimal256(p, s),
                _ => return None,
            }
        }
        T::String(_) | T::Text | T::Varchar(_) | T::Char(_) | T::CharacterVarying(_) => {
            DataType::Utf8
        }
        T::Binary(_) | T::Varbinary(_) | T::Bytea | T::Blob(_) | T::Bytes(_) => DataType::Binary,
        T::Date | T::Date32 => DataType::Date32,
        T::Timestamp(p, ast::TimezoneInfo::None | ast::TimezoneInfo::WithoutTimeZone)
        | T::Datetime(p) => DataType::Timestamp(
            match p.unwrap_or(6) {
                0 => TimeUnit::Second,
                1..=3 => TimeUnit::Millisecond,
                4..=6 => TimeUnit::Microsecond,
                _ => TimeUnit::Nanosecond,
            },
            None,
        ),
        _ => return None,
    })
}

/// Whether `name` reads back as that column written bare (else it is printed quoted): a
/// word, and when it is a keyword (`id`, `date`, `not`, `all`, `select`), one read as the
/// quoted name in each place a column can stand — some keywords mean something of their
/// own in some of them (`not IS NULL`, `x = all`).
///
/// Deciding parses up to 36 expressions for a keyword, and every filter is printed while
/// it is bound (for its messages), so the answers are remembered: a point query through
/// an index on `key` spent two thirds of its time here.
pub(crate) fn is_bare_name(name: &str) -> bool {
    use std::collections::HashMap;
    use std::sync::{LazyLock, Mutex};
    // Column names come from schemas and filters: few, but not bounded, so the memory is.
    const REMEMBERED: usize = 4096;
    static DECIDED: LazyLock<Mutex<HashMap<String, bool>>> = LazyLock::new(Default::default);
    if let Some(&bare) = DECIDED.lock().unwrap_or_else(|e| e.into_inner()).get(name) {
        return bare;
    }
    let bare = decide_bare_name(name);
    let mut decided = DECIDED.lock().unwrap_or_else(|e| e.into_inner());
    if decided.len() >= REMEMBERED {
        decided.clear();
    }
    decided.insert(name.to_string(), bare);
    bare
}

fn decide_bare_name(name: &str) -> bool {
    const PLACES: [&str; 18] = [
        "$",
        "$ IS NULL",
        "$ IS NOT TRUE",
        "$ IN (1)",
        "$ NOT IN (1)",
        "$ LIKE 'a'",
        "$ BETWEEN $ AND $",
        "NOT ($ = $)",
        "NOT $",
        "($ + 1) * $",
        "x = $",
        "-$",
        "$ AND $ OR $",
        "coalesce($, $)",
        "CASE WHEN $ THEN $ ELSE $ END",
        "$[1]",
        "$['x']",
        "CAST($ AS INT)",
    ];
    let tokens = sqlparser::tokenizer::Tokenizer::new(&GenericDialect {}, name).tokenize();
    let Ok([Token::Word(w)]) = tokens.as_deref() else {
        return false;
    };
    if w.quote_style.is_some() || w.value != name {
        return false;
    }
    if w.keyword == sqlparser::keywords::Keyword::NoKeyword {
        return true;
    }
    let quoted = format!("`{name}`");
    PLACES.iter().all(|place| {
        let bare = parse_expression(&place.replace('$', name));
        bare.is_ok() && bare.ok() == parse_expression(&place.replace('$', &quoted)).ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_predicate_language() {
        let e = parse("a > 3 AND NOT (s.x = 'hi' OR b IS NULL) AND c IN (1, 2) AND d BETWEEN 1.5 AND 2 AND e LIKE 'ab%'").unwrap();
        assert_eq!(
            e.columns().into_iter().collect::<Vec<_>>(),
            vec!["a", "b", "c", "d", "e", "s"]
        );
        assert_eq!(
            parse("x = -5").unwrap(),
            Expr::cmp(CmpOp::Eq, Expr::col("x"), Expr::Literal(Literal::Int(-5)))
        );
        assert_eq!(
            parse("d >= DATE '2020-01-02'").unwrap(),
            Expr::cmp(
                CmpOp::GtEq,
                Expr::col("d"),
                Expr::Literal(Literal::Typed {
                    kind: TypedKind::Date,
                    text: "2020-01-02".into()
                })
            )
        );
        assert!(parse("a >")
            .unwrap_err()
            .to_string()
            .contains("cannot use filter 'a >'"));
        assert!(parse("a = 1 garbage").is_err());
        assert!(matches!(parse("a % 10 = 3").unwrap(), Expr::Cmp { .. }));
        assert!(parse("a ^ 1 > 2")
            .unwrap_err()
            .to_string()
            .contains("unsupported operator"));
    }

    #[test]
    fn column_names_print_so_that_they_read_back() {
        let names = [
            "a",
            "é",
            "Upper",
            "not",
            "null",
            "all",
            "select",
            "current_date",
            "interval",
            "a b",
            "x`y",
            "1a",
        ];
        for name in names {
            let not_null = Expr::IsNull {
                expr: Box::new(Expr::col(name)),
                negated: true,
            };
            let one = || Box::new(Expr::Literal(Literal::Int(1)));
            let sum = Expr::Arith {
                op: ArithOp::Add,
                left: Box::new(Expr::col(name)),
                right: one(),
            };
            for e in [
                Expr::cmp(CmpOp::Gt, Expr::col(name), *one()),
                Expr::cmp(CmpOp::Eq, Expr::col("x"), sum),
                Expr::col("x").and(not_null).negate(),
                Expr::col(name).negate(),
                Expr::InList {
                    expr: Box::new(Expr::col(name)),
                    list: vec![Literal::Int(1)],
                    negated: true,
                },
                Expr::Column(vec![name.into(), name.into()]),
            ] {
                assert_eq!(parse(&e.to_string()).unwrap(), e, "{e}");
            }
        }
    }
}
