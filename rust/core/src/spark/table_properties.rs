//! A catalog table's properties (Spark's `TBLPROPERTIES`) as pylance's `write_dataset`
//! arguments: `data_storage_version` (or `file_format_version`, lance-spark's name),
//! `enable_stable_row_ids`, `max_rows_per_file`, `max_bytes_per_file` and `primary_key`
//! (its columns, comma-separated in key order), and lance-spark's
//! `<column>.arrow.fixed-size-list.size` (the column is a vector); any other property is kept in the table's
//! config, where `SHOW TBLPROPERTIES` finds it again (as Delta keeps a table's properties).
//! One reading for every way a table gets them: `CREATE TABLE`, CTAS, `REPLACE TABLE`.
use std::collections::HashMap;

use std::sync::Arc;

use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef};

use crate::error::{Error, Result};
use crate::write::WriteOptions;

const WRITE_ARGUMENTS: [&str; 6] = [
    "data_storage_version",
    "file_format_version",
    "enable_stable_row_ids",
    "max_rows_per_file",
    "max_bytes_per_file",
    "primary_key",
];

/// The write options `properties` ask for; the others in `config_upsert`.
pub fn write_options(properties: &HashMap<String, String>) -> Result<WriteOptions> {
    let mut options = WriteOptions {
        config_upsert: properties
            .iter()
            .filter(|(k, _)| !WRITE_ARGUMENTS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        ..Default::default()
    };
    let version = properties
        .get("data_storage_version")
        .or_else(|| properties.get("file_format_version"));
    if let Some(v) = version {
        options.data_storage_version = Some(v.clone());
    }
    if let Some(v) = properties.get("enable_stable_row_ids") {
        options.enable_stable_row_ids = flag(v, "enable_stable_row_ids")?;
    }
    if let Some(n) = count(properties, "max_rows_per_file")? {
        options.max_rows_per_file = n;
    }
    if let Some(n) = count(properties, "max_bytes_per_file")? {
        options.max_bytes_per_file = n;
    }
    Ok(options)
}

/// The schema a table is created with: `schema` (Spark's columns in Arrow) with the
/// columns of the `primary_key` property marked as the table's key, and each column a
/// `<column>.arrow.fixed-size-list.size = n` property names (lance-spark's) made a vector
/// of n elements, as Spark has no fixed-size array type.
pub fn table_schema(schema: SchemaRef, properties: &HashMap<String, String>) -> Result<SchemaRef> {
    let schema = with_vectors(schema, properties)?;
    match properties
        .get("primary_key")
        .filter(|k| !k.trim().is_empty())
    {
        None => Ok(schema),
        Some(key) => {
            let columns: Vec<&str> = key.split(',').map(str::trim).collect();
            crate::table::primary_key::marked(schema, &columns)
        }
    }
}

/// The suffix of the property that makes an array column a vector.
const VECTOR_SIZE: &str = ".arrow.fixed-size-list.size";

fn with_vectors(schema: SchemaRef, properties: &HashMap<String, String>) -> Result<SchemaRef> {
    let mut fields: Vec<FieldRef> = schema.fields().iter().cloned().collect();
    let mut keys: Vec<&String> = properties
        .keys()
        .filter(|k| k.ends_with(VECTOR_SIZE))
        .collect();
    keys.sort();
    for key in keys {
        let column = &key[..key.len() - VECTOR_SIZE.len()];
        let size: i32 = match properties[key].trim().parse() {
            Ok(n) if n > 0 => n,
            _ => {
                return Err(Error::invalid(format!(
                    "table property {key} is a vector's length, above 0, not '{}'",
                    properties[key]
                )))
            }
        };
        let Some(at) = fields.iter().position(|f| f.name() == column) else {
            return Err(Error::invalid(format!(
                "table property {key} names no column of the table"
            )));
        };
        let field = &fields[at];
        let element = match field.data_type() {
            DataType::List(e) | DataType::LargeList(e) | DataType::FixedSizeList(e, _)
                if e.data_type().is_floating() =>
            {
                e.data_type().clone()
            }
            other => {
                return Err(Error::invalid(format!(
                    "table property {key}: column '{column}' is {other}, not an array of floats"
                )))
            }
        };
        let vector = DataType::FixedSizeList(Arc::new(Field::new("item", element, true)), size);
        fields[at] = Arc::new(field.as_ref().clone().with_data_type(vector));
    }
    Ok(Arc::new(Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    )))
}

fn count(properties: &HashMap<String, String>, key: &str) -> Result<Option<u64>> {
    properties
        .get(key)
        .map(|v| {
            v.trim().parse().map_err(|_| {
                Error::invalid(format!(
                    "table property {key} is a number of rows or bytes, not '{v}'"
                ))
            })
        })
        .transpose()
}

fn flag(text: &str, key: &str) -> Result<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err(Error::invalid(format!(
            "table property {key} is true or false, not '{text}'"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn write_arguments_and_config() {
        let o = write_options(&props(&[
            ("file_format_version", "2.1"),
            ("enable_stable_row_ids", "TRUE"),
            ("max_rows_per_file", "10"),
            ("team", "search"),
        ]))
        .unwrap();
        assert_eq!(o.data_storage_version.as_deref(), Some("2.1"));
        assert!(o.enable_stable_row_ids);
        assert_eq!(o.max_rows_per_file, 10);
        assert_eq!(o.config_upsert, props(&[("team", "search")]));
        let e = write_options(&props(&[("max_rows_per_file", "ten")])).unwrap_err();
        assert!(
            e.to_string().contains("max_rows_per_file is a number"),
            "{e}"
        );
    }

    #[test]
    fn vector_columns() {
        let spark = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new(
                "emb",
                DataType::List(Arc::new(Field::new("element", DataType::Float32, false))),
                false,
            ),
        ]));
        let out = table_schema(
            spark.clone(),
            &props(&[("emb.arrow.fixed-size-list.size", "4")]),
        )
        .unwrap();
        match out.field(1).data_type() {
            DataType::FixedSizeList(e, 4) => assert_eq!(e.data_type(), &DataType::Float32),
            other => panic!("{other}"),
        }
        let err = |k: &str, v: &str| {
            table_schema(spark.clone(), &props(&[(k, v)]))
                .unwrap_err()
                .to_string()
        };
        assert!(err("nope.arrow.fixed-size-list.size", "4").contains("names no column"));
        assert!(err("id.arrow.fixed-size-list.size", "4").contains("not an array of floats"));
        assert!(err("emb.arrow.fixed-size-list.size", "0").contains("above 0"));
    }
}
