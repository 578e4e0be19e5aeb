//! `ALTER TABLE` on a catalog's table: columns added (all null, no data written), dropped,
//! renamed, made nullable, cast to a new type (only that column's data rewritten),
//! and table properties set or removed (the table's config), each through the core's rules
//! (`write/columns.rs`, `write/project.rs`, `write/column_type.rs`, `write/config.rs`), at
//! the latest version, one version per call.
//!
//! The request names the table (`uri`, `storage_options`) and the change (`op`):
//! "add_columns" (the new columns are the fields of `schema`), "drop_columns" (`paths`),
//! "alter_columns" (`alterations`: `{path, name?, nullable?, type?}`, `type` the index of
//! the field of `schema` whose type is the new one), "update_config" (`upsert`, `delete`).
use arrow_schema::SchemaRef;
use lance_core::write::config::{update_config, ConfigChange, MapChange};
use lance_core::write::{alter_columns, drop_columns, Alteration};
use serde_json::{json, Value};

use crate::tables::{Outcome, Request};

/// How often a config change that loses to a concurrent one is re-run (pylance's default).
const CONFLICT_RETRIES: u32 = 10;

/// Apply the change; the new version.
pub fn alter(request: &Request, schema: Option<&[u8]>) -> Outcome<Value> {
    let ds = request.open()?;
    let schema = schema.map(crate::writer::schema_of).transpose()?;
    let uri = ds.uri().to_string();
    let run = lance_core::threads::io_runtime();
    let done = match request.str("op").unwrap_or_default() {
        "add_columns" => {
            let new = schema.ok_or_else(|| format!("{uri}: ADD COLUMNS sent no columns"))?;
            run.block_on(lance_core::write::columns::add_null_columns(&ds, &new))
        }
        "drop_columns" => run.block_on(drop_columns(&ds, &request.strings("paths"))),
        "alter_columns" => {
            let alterations = alterations(request, schema.as_ref(), &uri)?;
            // Spark refuses SET NOT NULL itself; a caller that asks anyway is refused here
            // rather than left to check the data.
            if let Some(a) = alterations.iter().find(|a| a.nullable == Some(false)) {
                return Err(format!(
                    "{uri}: column '{}' cannot be made NOT NULL",
                    a.path
                ));
            }
            run.block_on(alter_columns(&ds, &alterations))
        }
        "update_config" => {
            let mut values: Vec<(String, Option<String>)> = match request.get("upsert") {
                Some(Value::Object(m)) => m
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().map(String::from)))
                    .collect(),
                _ => vec![],
            };
            values.extend(request.strings("delete").into_iter().map(|k| (k, None)));
            let change = ConfigChange {
                config: Some(MapChange {
                    values,
                    replace: false,
                }),
                table_metadata: None,
                schema_metadata: None,
                fields: vec![],
            };
            run.block_on(update_config(&ds, &change, CONFLICT_RETRIES))
        }
        other => return Err(format!("{uri}: unknown ALTER TABLE change '{other}'")),
    }
    .map_err(|e| e.to_string())?;
    Ok(json!({ "version": done.version() }))
}

fn alterations(
    request: &Request,
    schema: Option<&SchemaRef>,
    uri: &str,
) -> Outcome<Vec<Alteration>> {
    let Some(Value::Array(items)) = request.get("alterations") else {
        return Ok(vec![]);
    };
    items
        .iter()
        .map(|a| {
            let path = a
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let data_type = match a.get("type").and_then(Value::as_u64) {
                None => None,
                Some(i) => Some(
                    schema
                        .and_then(|s| s.fields().get(i as usize))
                        .ok_or_else(|| format!("{uri}: ALTER COLUMN {path} TYPE sent no type"))?
                        .data_type()
                        .clone(),
                ),
            };
            Ok(Alteration {
                name: a.get("name").and_then(Value::as_str).map(String::from),
                nullable: a.get("nullable").and_then(Value::as_bool),
                data_type,
                path,
            })
        })
        .collect()
}
