//! Spark's pushed filters (`org.apache.spark.sql.sources.Filter`, sent as JSON by the JVM
//! reader) as lance_core predicates.
//!
//! A filter is taken only when the predicate means exactly what Spark means by it, on the
//! column as Lance stores it; the others are left for Spark to evaluate. Both Spark readers
//! use these rules: the JVM reader, and the Python data source (`lance_core/spark/filters.py`
//! sends its filters in the same JSON).
//!
//! The JSON: `{"op": "EqualTo", "column": ["a", "b"], "value": V}` (also GreaterThan,
//! GreaterThanOrEqual, LessThan, LessThanOrEqual, EqualNullSafe), `{"op": "In", "column",
//! "values": [V, ...]}`, `{"op": "IsNull" | "IsNotNull", "column"}`, `{"op":
//! "StringStartsWith" | "StringEndsWith" | "StringContains", "column", "value"}`, `{"op":
//! "Not", "child"}, `{"op": "And" | "Or", "left", "right"}`, `{"op": "AlwaysTrue" |
//! "AlwaysFalse"}`. A value V is `null` or one
//! key naming its Java kind: `{"bool": true}`, `{"int": "12"}` (integers as text, exact
//! beyond 2^53), `{"float": "1.5"}`, `{"string": "x"}`, `{"decimal": "1.25"}`, `{"date":
//! "2024-01-31"}`, `{"timestamp_ntz": "2024-01-31 10:00:00.5"}`; any other kind
//! (`{"other": ...}`) is not taken.
use arrow_schema::{DataType, Field, Fields};
use serde_json::Value;

/// The predicate (lance_core SQL) for one Spark filter on a table of `fields`, or None if
/// it cannot be taken.
pub fn to_predicate(filter: &Value, fields: &Fields) -> Option<String> {
    let op = filter.get("op")?.as_str()?;
    match op {
        "Not" => {
            return Some(format!(
                "NOT ({})",
                to_predicate(filter.get("child")?, fields)?
            ))
        }
        "And" | "Or" => {
            let left = to_predicate(filter.get("left")?, fields)?;
            let right = to_predicate(filter.get("right")?, fields)?;
            return Some(format!("(({left}) {} ({right}))", op.to_uppercase()));
        }
        // `DELETE FROM t` without a condition hands over AlwaysTrue.
        "AlwaysTrue" => return Some("true".into()),
        "AlwaysFalse" => return Some("false".into()),
        _ => {}
    }
    let path: Vec<&str> = filter
        .get("column")?
        .as_array()?
        .iter()
        .map(|p| p.as_str())
        .collect::<Option<_>>()?;
    let field = column(&path, fields)?;
    if !filterable(field.data_type()) {
        return None;
    }
    let col = path
        .iter()
        .map(|p| format!("`{}`", p.replace('`', "``")))
        .collect::<Vec<_>>()
        .join(".");
    let t = field.data_type();
    let comparison = match op {
        "EqualTo" => "=",
        "GreaterThan" => ">",
        "GreaterThanOrEqual" => ">=",
        "LessThan" => "<",
        "LessThanOrEqual" => "<=",
        "IsNull" => return Some(format!("{col} IS NULL")),
        "IsNotNull" => return Some(format!("{col} IS NOT NULL")),
        "EqualNullSafe" => {
            let value = filter.get("value")?;
            if value.is_null() {
                return Some(format!("{col} IS NULL"));
            }
            // With a non-null value, null rows are simply false.
            return Some(format!(
                "({col} IS NOT NULL AND {col} = {})",
                literal(value, t)?
            ));
        }
        "In" => {
            let values = filter.get("values")?.as_array()?;
            if values.is_empty() {
                return None;
            }
            let lits = values
                .iter()
                .map(|v| literal(v, t))
                .collect::<Option<Vec<_>>>()?;
            return Some(format!("{col} IN ({})", lits.join(", ")));
        }
        "StringStartsWith" | "StringEndsWith" | "StringContains" => {
            let v = like_escape(filter.get("value")?.get("string")?.as_str()?);
            let pattern = match op {
                "StringStartsWith" => format!("{v}%"),
                "StringEndsWith" => format!("%{v}"),
                _ => format!("%{v}%"),
            };
            return Some(format!("{col} LIKE '{pattern}'"));
        }
        _ => return None,
    };
    Some(format!(
        "{col} {comparison} {}",
        literal(filter.get("value")?, t)?
    ))
}

/// `to_predicate` of a filter given as JSON text (the Python data source's).
pub fn to_predicate_text(filter: &str, fields: &Fields) -> crate::Result<Option<String>> {
    let value: Value = serde_json::from_str(filter).map_err(|e| {
        crate::Error::invalid(format!("a Spark filter sent as JSON is not JSON: {e}"))
    })?;
    Ok(to_predicate(&value, fields))
}

/// The field at a dotted path through structs.
fn column<'a>(path: &[&str], fields: &'a Fields) -> Option<&'a Field> {
    let (first, rest) = path.split_first()?;
    let field = fields.iter().find(|f| f.name() == first)?;
    if rest.is_empty() {
        return Some(field);
    }
    match field.data_type() {
        DataType::Struct(children) => column(rest, children),
        _ => None,
    }
}

/// A column type whose values Spark sees as Lance compares them.
fn filterable(t: &DataType) -> bool {
    match t {
        DataType::Dictionary(_, values) => filterable(values),
        DataType::Float16 => false,
        t => {
            t.is_integer()
                || t.is_floating()
                || matches!(
                    t,
                    DataType::Boolean
                        | DataType::Utf8
                        | DataType::LargeUtf8
                        | DataType::Date32
                        | DataType::Date64
                        | DataType::Timestamp(..)
                        | DataType::Decimal128(..)
                        | DataType::Decimal256(..)
                )
        }
    }
}

/// SQL text of a literal Spark passed, or None when it has no exact text form.
fn literal(value: &Value, column: &DataType) -> Option<String> {
    let obj = value.as_object()?;
    let (kind, v) = obj.iter().next()?;
    match kind.as_str() {
        "bool" => Some(if v.as_bool()? { "TRUE" } else { "FALSE" }.to_string()),
        "int" => {
            let text = v.as_str()?;
            text.parse::<i128>().ok().map(|n| n.to_string())
        }
        "float" => {
            let text = v.as_str()?;
            let f: f64 = text.parse().ok()?;
            f.is_finite().then(|| text.to_string())
        }
        "decimal" => {
            let text = v.as_str()?;
            let plain = text.strip_prefix('-').unwrap_or(text);
            (!plain.is_empty() && plain.chars().all(|c| c.is_ascii_digit() || c == '.'))
                .then(|| text.to_string())
        }
        "string" => Some(format!("'{}'", v.as_str()?.replace('\'', "''"))),
        "date" => {
            let text = v.as_str()?;
            chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
            Some(format!("DATE '{text}'"))
        }
        "timestamp_ntz" => {
            // Only wall-clock timestamps compared with wall-clock columns: an instant's
            // text depends on time zone settings the reader cannot see.
            if !matches!(column, DataType::Timestamp(_, None)) {
                return None;
            }
            let text = v.as_str()?;
            chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f").ok()?;
            Some(format!("TIMESTAMP '{text}'"))
        }
        _ => None,
    }
}

/// A LIKE pattern matching `s` literally (lance_core's LIKE escapes with a backslash).
fn like_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
        .replace('\'', "''")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields() -> Fields {
        Fields::from(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("name", DataType::Utf8, true),
            Field::new("h", DataType::Float16, true),
            Field::new(
                "ts",
                DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, Some("UTC".into())),
                true,
            ),
            Field::new_struct("s", vec![Field::new("x", DataType::Int32, true)], true),
        ])
    }

    #[test]
    fn filters_spark_means_the_same_by_are_taken() {
        let f = fields();
        let eq = json!({"op": "EqualTo", "column": ["id"], "value": {"int": "9007199254740993"}});
        assert_eq!(to_predicate(&eq, &f).unwrap(), "`id` = 9007199254740993");
        let nested = json!({"op": "GreaterThan", "column": ["s", "x"], "value": {"int": "3"}});
        assert_eq!(to_predicate(&nested, &f).unwrap(), "`s`.`x` > 3");
        let like =
            json!({"op": "StringStartsWith", "column": ["name"], "value": {"string": "a_%'"}});
        assert_eq!(to_predicate(&like, &f).unwrap(), "`name` LIKE 'a\\_\\%''%'");
        let not_in = json!({"op": "Not", "child": {"op": "In", "column": ["id"], "values": [{"int": "1"}, {"int": "2"}]}});
        assert_eq!(to_predicate(&not_in, &f).unwrap(), "NOT (`id` IN (1, 2))");
        let null_safe = json!({"op": "EqualNullSafe", "column": ["name"], "value": null});
        assert_eq!(to_predicate(&null_safe, &f).unwrap(), "`name` IS NULL");
        // As text, from the Python data source.
        let text = to_predicate_text(r#"{"op": "IsNotNull", "column": ["id"]}"#, &f);
        assert_eq!(text.unwrap().as_deref(), Some("`id` IS NOT NULL"));
        assert!(to_predicate_text("{not json", &f).is_err());
        // DELETE without a condition.
        assert_eq!(
            to_predicate(&json!({"op": "AlwaysTrue"}), &f).unwrap(),
            "true"
        );
    }

    #[test]
    fn filters_that_could_differ_are_left_to_spark() {
        let f = fields();
        for filter in [
            json!({"op": "EqualTo", "column": ["h"], "value": {"float": "1.0"}}),
            json!({"op": "EqualTo", "column": ["id"], "value": {"float": "NaN"}}),
            json!({"op": "EqualTo", "column": ["ts"], "value": {"timestamp_ntz": "2024-01-01 00:00:00"}}),
            json!({"op": "EqualTo", "column": ["missing"], "value": {"int": "1"}}),
            json!({"op": "In", "column": ["id"], "values": [{"int": "1"}, null]}),
            json!({"op": "And", "left": {"op": "IsNull", "column": ["id"]}, "right": {"op": "Nope"}}),
            json!({"op": "EqualTo", "column": ["id"], "value": {"other": "x"}}),
        ] {
            assert_eq!(to_predicate(&filter, &f), None, "{filter}");
        }
    }
}
