//! SQL text → `Expr`, with sqlparser. Accepts the boolean expressions a WHERE clause
//! holds: comparisons, AND/OR/NOT, IN, BETWEEN, IS [NOT] NULL, [NOT] LIKE / ILIKE,
//! literals (numbers, strings, booleans, NULL, DATE/TIMESTAMP/TIME '...', X'..' bytes)
//! and column references, dotted for fields of structs.
use sqlparser::ast::{self, BinaryOperator, UnaryOperator, Value};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use super::{ArithOp, CmpOp, Expr, Literal, TypedKind};
use crate::error::{Error, Result};

fn bad(text: &str, what: impl std::fmt::Display) -> Error {
    Error::invalid(format!("cannot use filter '{text}': {what}"))
}

pub fn parse(text: &str) -> Result<Expr> {
    let dialect = GenericDialect {};
    let mut parser = Parser::new(&dialect)
        .try_with_sql(text)
        .map_err(|e| bad(text, e))?;
    let expr = parser.parse_expr().map_err(|e| bad(text, e))?;
    if parser.peek_token().token != Token::EOF {
        return Err(bad(
            text,
            format!(
                "unexpected '{}' after the expression",
                parser.peek_token().token
            ),
        ));
    }
    convert(&expr, text)
}

fn literal(v: &Value, text: &str) -> Result<Literal> {
    Ok(match v {
        Value::Null => Literal::Null,
        Value::Boolean(b) => Literal::Bool(*b),
        Value::Number(n, _) => {
            if let Ok(i) = n.parse::<i64>() {
                Literal::Int(i)
            } else if let Ok(u) = n.parse::<u64>() {
                Literal::UInt(u)
            } else {
                Literal::Float(
                    n.parse::<f64>()
                        .map_err(|_| bad(text, format!("bad number {n}")))?,
                )
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

fn literal_of(e: &ast::Expr, text: &str) -> Result<Literal> {
    match convert(e, text)? {
        Expr::Literal(l) => Ok(l),
        _ => Err(bad(text, format!("'{e}' is not a literal"))),
    }
}

fn convert(e: &ast::Expr, text: &str) -> Result<Expr> {
    use ast::Expr as E;
    Ok(match e {
        E::Identifier(id) => Expr::Column(vec![id.value.clone()]),
        E::CompoundIdentifier(ids) => Expr::Column(ids.iter().map(|i| i.value.clone()).collect()),
        E::Nested(inner) => convert(inner, text)?,
        E::Value(v) => Expr::Literal(literal(&v.value, text)?),
        E::TypedString(ts) => {
            let kind = match &ts.data_type {
                ast::DataType::Date => TypedKind::Date,
                ast::DataType::Timestamp(..) | ast::DataType::Datetime(..) => TypedKind::Timestamp,
                ast::DataType::Time(..) => TypedKind::Time,
                other => return Err(bad(text, format!("unsupported typed literal {other}"))),
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
        } => match literal_of(expr, text)? {
            Literal::Int(i) => Expr::Literal(Literal::Int(-i)),
            Literal::Float(f) => Expr::Literal(Literal::Float(-f)),
            Literal::UInt(u) if u == i64::MAX as u64 + 1 => Expr::Literal(Literal::Int(i64::MIN)),
            other => return Err(bad(text, format!("cannot negate {other:?}"))),
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
                other => return Err(bad(text, format!("unsupported operator {other}"))),
            }
        }
        E::IsNull(inner) => Expr::IsNull {
            expr: Box::new(convert(inner, text)?),
            negated: false,
        },
        E::IsNotNull(inner) => Expr::IsNull {
            expr: Box::new(convert(inner, text)?),
            negated: true,
        },
        E::IsTrue(inner) => Expr::cmp(
            CmpOp::Eq,
            convert(inner, text)?,
            Expr::Literal(Literal::Bool(true)),
        ),
        E::IsFalse(inner) => Expr::cmp(
            CmpOp::Eq,
            convert(inner, text)?,
            Expr::Literal(Literal::Bool(false)),
        ),
        E::InList {
            expr,
            list,
            negated,
        } => Expr::InList {
            expr: Box::new(convert(expr, text)?),
            list: list
                .iter()
                .map(|v| literal_of(v, text))
                .collect::<Result<_>>()?,
            negated: *negated,
        },
        E::Between {
            expr,
            negated,
            low,
            high,
        } => {
            let x = convert(expr, text)?;
            let range = Expr::cmp(CmpOp::GtEq, x.clone(), convert(low, text)?).and(Expr::cmp(
                CmpOp::LtEq,
                x,
                convert(high, text)?,
            ));
            if *negated {
                range.negate()
            } else {
                range
            }
        }
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
        other => return Err(bad(text, format!("unsupported expression '{other}'"))),
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
}
