//! `SELECT` statements over one table (pylance's `ds.sql(...)`), taken apart into what a
//! scan does: the output columns (names and value expressions), the filter, the order,
//! the offset and the limit. Grouping, joins, DISTINCT, subqueries and the like are
//! refused with an error saying so.
use sqlparser::ast::{
    self, GroupByExpr, LimitClause, OrderByKind, OrderBySort, SelectItem, SetExpr, Statement,
    TableFactor,
};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;

use crate::error::{Error, Result};

/// One output of a SELECT list.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// `*`: every column of the table.
    All,
    /// A named value: the column name, or the alias, or the expression's text.
    Value { name: String, sql: String },
}

/// A SELECT statement as a scan.
#[derive(Clone, Debug, PartialEq)]
pub struct Select {
    pub outputs: Vec<Output>,
    /// The table named in FROM.
    pub table: String,
    pub filter: Option<String>,
    /// (column, ascending, nulls first)
    pub order_by: Vec<(String, bool, bool)>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
}

fn unsupported(sql: &str, what: &str) -> Error {
    Error::invalid(format!(
        "cannot run SQL '{sql}': {what} is not supported (lance_core runs SELECT <columns \
         or expressions> FROM <table> [WHERE ...] [ORDER BY <columns>] [LIMIT n] [OFFSET m])"
    ))
}

fn count(sql: &str, e: &ast::Expr, what: &str) -> Result<u64> {
    e.to_string()
        .parse::<u64>()
        .map_err(|_| unsupported(sql, &format!("a {what} that is not a number ({e})")))
}

/// Parse `sql`, a SELECT over one table.
pub fn parse_select(sql: &str) -> Result<Select> {
    let statements = Parser::parse_sql(&GenericDialect {}, sql)
        .map_err(|e| Error::invalid(format!("cannot parse SQL '{sql}': {e}")))?;
    let [Statement::Query(query)] = statements.as_slice() else {
        return Err(unsupported(sql, "anything but one SELECT statement"));
    };
    if query.with.is_some() {
        return Err(unsupported(sql, "WITH"));
    }
    if query.fetch.is_some() || !query.locks.is_empty() {
        return Err(unsupported(sql, "FETCH or FOR UPDATE"));
    }
    let SetExpr::Select(select) = query.body.as_ref() else {
        return Err(unsupported(sql, "UNION, INTERSECT, EXCEPT or VALUES"));
    };
    if select.distinct.is_some() {
        return Err(unsupported(sql, "DISTINCT"));
    }
    if select.having.is_some() || select.qualify.is_some() {
        return Err(unsupported(sql, "HAVING or QUALIFY"));
    }
    match &select.group_by {
        GroupByExpr::Expressions(e, _) if e.is_empty() => {}
        _ => return Err(unsupported(sql, "GROUP BY (aggregates)")),
    }
    let table = match select.from.as_slice() {
        [t] if t.joins.is_empty() => match &t.relation {
            TableFactor::Table { name, .. } => name.to_string(),
            _ => return Err(unsupported(sql, "a FROM that is not a table name")),
        },
        [] => return Err(unsupported(sql, "a SELECT without FROM")),
        _ => return Err(unsupported(sql, "a join")),
    };
    let mut outputs = Vec::with_capacity(select.projection.len());
    for item in &select.projection {
        if let SelectItem::UnnamedExpr(ast::Expr::Function(f))
        | SelectItem::ExprWithAlias {
            expr: ast::Expr::Function(f),
            ..
        } = item
        {
            const AGGREGATES: [&str; 8] = [
                "count", "sum", "min", "max", "avg", "mean", "stddev", "variance",
            ];
            let name = f.name.to_string().to_ascii_lowercase();
            if AGGREGATES.contains(&name.as_str()) {
                return Err(unsupported(sql, &format!("the aggregate {name}()")));
            }
        }
        outputs.push(match item {
            SelectItem::Wildcard(_) => Output::All,
            SelectItem::UnnamedExpr(e) => Output::Value {
                name: match e {
                    ast::Expr::Identifier(i) => i.value.clone(),
                    ast::Expr::CompoundIdentifier(parts) => {
                        // `t.col` names the table's column.
                        let names: Vec<&str> = parts.iter().map(|p| p.value.as_str()).collect();
                        match names.as_slice() {
                            [t, rest @ ..] if *t == table && !rest.is_empty() => rest.join("."),
                            _ => names.join("."),
                        }
                    }
                    other => other.to_string(),
                },
                sql: unqualified(e, &table),
            },
            SelectItem::ExprWithAlias { expr, alias } => Output::Value {
                name: alias.value.clone(),
                sql: unqualified(expr, &table),
            },
            _ => return Err(unsupported(sql, &format!("the SELECT item {item}"))),
        });
    }
    let filter = select.selection.as_ref().map(|e| unqualified(e, &table));
    let mut order_by = Vec::new();
    if let Some(o) = &query.order_by {
        let OrderByKind::Expressions(exprs) = &o.kind else {
            return Err(unsupported(sql, "ORDER BY ALL"));
        };
        for e in exprs {
            let column = match &e.expr {
                ast::Expr::Identifier(i) => i.value.clone(),
                other => {
                    return Err(unsupported(
                        sql,
                        &format!("ORDER BY an expression ({other})"),
                    ))
                }
            };
            let ascending = !matches!(e.options.sort, Some(OrderBySort::Desc));
            // SQL's default: NULLs sort as the largest value.
            let nulls_first = e.options.nulls_first.unwrap_or(!ascending);
            order_by.push((column, ascending, nulls_first));
        }
    }
    let (mut limit, mut offset) = (None, None);
    match &query.limit_clause {
        None => {}
        Some(LimitClause::LimitOffset {
            limit: l,
            offset: o,
            limit_by,
        }) if limit_by.is_empty() => {
            limit = l.as_ref().map(|e| count(sql, e, "LIMIT")).transpose()?;
            offset = o
                .as_ref()
                .map(|o| count(sql, &o.value, "OFFSET"))
                .transpose()?;
        }
        Some(LimitClause::OffsetCommaLimit {
            offset: o,
            limit: l,
        }) => {
            limit = Some(count(sql, l, "LIMIT")?);
            offset = Some(count(sql, o, "OFFSET")?);
        }
        Some(_) => return Err(unsupported(sql, "LIMIT BY")),
    }
    Ok(Select {
        outputs,
        table,
        filter,
        order_by,
        limit,
        offset,
    })
}

/// An expression's SQL text with `table.` dropped before column names (a token `table`
/// followed by `.`, not itself after a `.`).
fn unqualified(e: &ast::Expr, table: &str) -> String {
    use sqlparser::tokenizer::{Token, Tokenizer};
    let text = e.to_string();
    let Ok(tokens) = Tokenizer::new(&GenericDialect {}, &text).tokenize() else {
        return text;
    };
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < tokens.len() {
        let qualifier = matches!(&tokens[i], Token::Word(w) if w.value == table)
            && matches!(tokens.get(i + 1), Some(Token::Period))
            && !matches!(i.checked_sub(1).map(|j| &tokens[j]), Some(Token::Period));
        if qualifier {
            i += 2;
            continue;
        }
        out.push_str(&tokens[i].to_string());
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selects_as_scans() {
        let s = parse_select(
            "SELECT id AS user_id, UPPER(value) AS val, t.x, * FROM t WHERE t.id BETWEEN 1 AND 3 \
             ORDER BY id DESC LIMIT 5 OFFSET 2",
        )
        .unwrap();
        assert_eq!(s.table, "t");
        assert_eq!(
            s.outputs,
            vec![
                Output::Value {
                    name: "user_id".into(),
                    sql: "id".into()
                },
                Output::Value {
                    name: "val".into(),
                    sql: "UPPER(value)".into()
                },
                Output::Value {
                    name: "x".into(),
                    sql: "x".into()
                },
                Output::All,
            ]
        );
        assert_eq!(s.filter.as_deref(), Some("id BETWEEN 1 AND 3"));
        assert_eq!(s.order_by, vec![("id".to_string(), false, true)]);
        assert_eq!((s.limit, s.offset), (Some(5), Some(2)));
        for bad in [
            "SELECT a, count(*) FROM t GROUP BY a",
            "SELECT count(*) FROM t",
            "SELECT DISTINCT a FROM t",
            "SELECT * FROM t JOIN u ON t.a = u.a",
            "SELECT 1",
            "DELETE FROM t",
        ] {
            let e = parse_select(bad).unwrap_err().to_string();
            assert!(e.contains("not supported"), "{bad}: {e}");
        }
    }
}
