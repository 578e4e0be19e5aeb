//! Arrow schemas as JSON, in the shape pylance's `schema_to_json` gives them (the Lance
//! namespace protocol's `JsonArrowSchema`): leaf types by their Lance logical type name,
//! nested types with their child fields, metadata only when there is some.
use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema};
use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::table::schema::{logical_type_of, parse_logical_type};

/// Deeper nesting than this is refused when reading JSON (a hostile input).
const MAX_DEPTH: usize = 64;

pub fn schema_to_json(schema: &Schema) -> Result<Value> {
    let fields = schema
        .fields()
        .iter()
        .map(|f| field_to_json(f))
        .collect::<Result<Vec<_>>>()?;
    let mut out = Map::new();
    out.insert("fields".into(), Value::Array(fields));
    if !schema.metadata().is_empty() {
        out.insert("metadata".into(), metadata_json(schema.metadata().iter()));
    }
    Ok(Value::Object(out))
}

fn field_to_json(field: &Field) -> Result<Value> {
    let mut out = Map::new();
    out.insert("name".into(), json!(field.name()));
    out.insert("type".into(), type_to_json(field.data_type())?);
    out.insert("nullable".into(), json!(field.is_nullable()));
    if !field.metadata().is_empty() {
        out.insert("metadata".into(), metadata_json(field.metadata().iter()));
    }
    Ok(Value::Object(out))
}

fn metadata_json<'a, K, V>(pairs: impl Iterator<Item = (K, V)>) -> Value
where
    K: AsRef<str> + 'a,
    V: AsRef<str> + 'a,
{
    Value::Object(
        pairs
            .map(|(k, v)| {
                (
                    k.as_ref().to_string(),
                    Value::String(v.as_ref().to_string()),
                )
            })
            .collect(),
    )
}

fn type_to_json(dt: &DataType) -> Result<Value> {
    let children = |fields: Vec<&Field>| -> Result<Value> {
        Ok(Value::Array(
            fields
                .into_iter()
                .map(field_to_json)
                .collect::<Result<_>>()?,
        ))
    };
    Ok(match dt {
        DataType::List(item) => json!({"type": "list", "fields": children(vec![item])?}),
        DataType::LargeList(item) => json!({"type": "large_list", "fields": children(vec![item])?}),
        DataType::FixedSizeList(item, n) => {
            json!({"type": "fixed_size_list", "fields": children(vec![item])?, "length": n})
        }
        DataType::Struct(fields) => {
            json!({"type": "struct", "fields": children(fields.iter().map(|f| f.as_ref()).collect())?})
        }
        DataType::FixedSizeBinary(n) => json!({"type": "fixed_size_binary", "length": n}),
        DataType::Map(..) => {
            return Err(Error::unsupported(
                "schema JSON",
                "map types have no JSON form (as in pylance)",
            ))
        }
        other => json!({"type": logical_type_of(other)?}),
    })
}

pub fn schema_from_json(value: &Value) -> Result<Schema> {
    let fields = value
        .get("fields")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("a schema needs a \"fields\" list"))?
        .iter()
        .map(|f| field_from_json(f, 0))
        .collect::<Result<Vec<_>>>()?;
    Ok(Schema::new_with_metadata(fields, metadata(value)?))
}

/// `schema_from_json` of JSON text.
pub fn schema_from_json_text(text: &str) -> Result<Schema> {
    let value: Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    schema_from_json(&value)
}

fn field_from_json(value: &Value, depth: usize) -> Result<Field> {
    if depth > MAX_DEPTH {
        return Err(bad(format!(
            "types nested more than {MAX_DEPTH} levels deep"
        )));
    }
    let name = value
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("a field needs a \"name\""))?;
    let nullable = value
        .get("nullable")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let ty = value
        .get("type")
        .ok_or_else(|| bad(format!("field '{name}' has no \"type\"")))?;
    Ok(Field::new(name, type_from_json(ty, depth)?, nullable).with_metadata(metadata(value)?))
}

fn type_from_json(value: &Value, depth: usize) -> Result<DataType> {
    let name = value
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("a type needs a \"type\" name"))?;
    let children = || -> Result<Vec<Field>> {
        value
            .get("fields")
            .and_then(Value::as_array)
            .ok_or_else(|| bad(format!("type '{name}' needs \"fields\"")))?
            .iter()
            .map(|f| field_from_json(f, depth + 1))
            .collect()
    };
    let length = || -> Result<i32> {
        value
            .get("length")
            .and_then(Value::as_i64)
            .and_then(|n| i32::try_from(n).ok())
            .filter(|n| *n >= 0)
            .ok_or_else(|| bad(format!("type '{name}' needs a \"length\"")))
    };
    let one_child = || -> Result<Arc<Field>> {
        let mut fields = children()?;
        match fields.len() {
            1 => Ok(Arc::new(fields.remove(0))),
            n => Err(bad(format!("type '{name}' has one child field, not {n}"))),
        }
    };
    Ok(match name {
        "list" => DataType::List(one_child()?),
        "large_list" => DataType::LargeList(one_child()?),
        "fixed_size_list" => DataType::FixedSizeList(one_child()?, length()?),
        "struct" => DataType::Struct(children()?.into()),
        "fixed_size_binary" => DataType::FixedSizeBinary(length()?),
        other => parse_logical_type(other)?,
    })
}

fn metadata(value: &Value) -> Result<HashMap<String, String>> {
    match value.get("metadata") {
        None | Some(Value::Null) => Ok(HashMap::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(bad(format!("metadata value of '{k}' is not a string"))),
            })
            .collect(),
        Some(_) => Err(bad("\"metadata\" must map strings to strings")),
    }
}

fn bad(message: impl Into<String>) -> Error {
    Error::invalid(format!("schema JSON: {}", message.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_types_and_metadata_round_trip() {
        let item = Field::new("item", DataType::Float32, true);
        let schema = Schema::new_with_metadata(
            vec![
                Field::new("v", DataType::FixedSizeList(Arc::new(item), 4), false),
                Field::new(
                    "s",
                    DataType::Struct(
                        vec![Field::new(
                            "t",
                            DataType::Timestamp(
                                arrow_schema::TimeUnit::Microsecond,
                                Some("UTC".into()),
                            ),
                            true,
                        )]
                        .into(),
                    ),
                    true,
                )
                .with_metadata(HashMap::from([("k".to_string(), "v".to_string())])),
                Field::new("b", DataType::FixedSizeBinary(3), true),
            ],
            HashMap::from([("m".to_string(), "1".to_string())]),
        );
        let value = schema_to_json(&schema).unwrap();
        assert_eq!(value["fields"][0]["type"]["length"], 4);
        assert_eq!(
            value["fields"][1]["type"]["fields"][0]["type"]["type"],
            "timestamp:us:UTC"
        );
        assert!(value["fields"][2].get("metadata").is_none());
        assert_eq!(schema_from_json(&value).unwrap(), schema);
    }

    #[test]
    fn bad_json_is_an_error() {
        assert!(schema_from_json(&json!({"fields": [{"name": "x"}]})).is_err());
        assert!(
            schema_from_json(&json!({"fields": [{"name": "x", "type": {"type": "nope"}}]}))
                .is_err()
        );
        assert!(schema_from_json(
            &json!({"fields": [{"name": "x", "type": {"type": "list", "fields": []}}]})
        )
        .is_err());
    }
}
