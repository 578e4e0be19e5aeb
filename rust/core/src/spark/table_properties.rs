//! A catalog table's properties (Spark's `TBLPROPERTIES`) as pylance's `write_dataset`
//! arguments: `data_storage_version` (or `file_format_version`, lance-spark's name),
//! `enable_stable_row_ids`, `max_rows_per_file`, `max_bytes_per_file` and `primary_key`
//! (its columns, comma-separated in key order); any other property is kept in the table's
//! config, where `SHOW TBLPROPERTIES` finds it again (as Delta keeps a table's properties).
//! One reading for every way a table gets them: `CREATE TABLE`, CTAS, `REPLACE TABLE`.
use std::collections::HashMap;

use arrow_schema::SchemaRef;

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

/// `schema` with the columns of the `primary_key` property marked as the table's key.
pub fn with_primary_key(
    schema: SchemaRef,
    properties: &HashMap<String, String>,
) -> Result<SchemaRef> {
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
}
