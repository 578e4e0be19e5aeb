//! The Spark catalog's calls into the core's directory namespace (`LanceCatalog`): a JSON
//! request names the namespace (`properties`: pylance's, `root` and `storage.<key>`), the
//! operation (`op`) and the object (`id`, its parts); the reply is `{"ok": ...}`, or
//! `{"refused": {"kind", "message"}}` for the protocol's refusals (a table not found, a
//! namespace not empty, ...), which the catalog raises as Spark's own exceptions. Any
//! other failure is thrown as a `LanceException`.
//!
//! The namespace keeps no state between calls: every rule (and the `__manifest` table) is
//! the core's, read afresh by each call, as any other writer of the catalog would.

use arrow_schema::SchemaRef;
use lance_core::namespace::Namespace;
use lance_core::spark::table_properties::{table_schema, write_options};
use lance_core::write::{write_dataset, WriteMode, WriteOptions};
use lance_core::{Dataset, Error, VersionRef};
use serde_json::{json, Map, Value};

use crate::tables::{Outcome, Request};

/// Run the request's operation; `schema` is an Arrow IPC stream holding the schema of a
/// table to create (`create_table`, `replace_table`).
pub fn call(request: &Request, schema: Option<&[u8]>) -> Outcome<Value> {
    let ns =
        Namespace::from_properties(&request.string_map("properties")).map_err(|e| e.to_string())?;
    let id = parts(request.get("id"))?;
    let op = request.str("op").unwrap_or_default();
    let run = lance_core::threads::io_runtime();
    let done = run.block_on(async {
        match op {
            "list_namespaces" => Ok(json!(ns.list_namespaces(&id).await?.names)),
            "create_namespace" => {
                let props: Vec<(String, String)> = request
                    .string_map("namespace_properties")
                    .into_iter()
                    .collect();
                ns.create_namespace(&id, Some(&props)).await?;
                Ok(Value::Null)
            }
            "describe_namespace" => {
                let props = ns.describe_namespace(&id).await?;
                Ok(Value::Object(
                    props
                        .into_iter()
                        .map(|(k, v)| (k, Value::String(v)))
                        .collect(),
                ))
            }
            "drop_namespace" => ns.drop_namespace(&id).await.map(|_| Value::Null),
            "list_tables" => Ok(json!(ns.list_tables(&id).await?.names)),
            "describe_table" => describe_table(&ns, &id, request).await,
            "create_table" | "replace_table" => {
                let schema = schema_of(schema, request)?;
                create_table(&ns, &id, schema, request, op == "replace_table").await
            }
            "declare_table" => ns.declare_table(&id).await.map(Value::String),
            "drop_table" => ns.drop_table(&id).await.map(Value::String),
            "deregister_table" => ns.deregister_table(&id).await.map(Value::String),
            other => Err(Error::invalid(format!(
                "lance_core: the catalog asked for an unknown namespace operation '{other}'"
            ))),
        }
    });
    match done {
        Ok(value) => Ok(json!({ "ok": value })),
        Err(Error::Namespace { kind, message }) => Ok(json!({
            "refused": {"kind": format!("{kind:?}"), "message": Error::Namespace { kind, message }.to_string()}
        })),
        Err(e) => Err(e.to_string()),
    }
}

/// What the catalog shows of table `id` (`DESCRIBE EXTENDED`, `SHOW TBLPROPERTIES`) and
/// reads it with: its location and the namespace's storage options, and, opened at the
/// latest version, the one asked for (`version`, a number or tag) or the last one
/// committed at or before `timestamp_micros`, its version, format version, whether its
/// row ids are stable, its primary key and its config.
async fn describe_table(ns: &Namespace, id: &[String], request: &Request) -> Result<Value, Error> {
    let table = ns.table_location(id).await?;
    let (mut location, options) = (table.location, table.storage_options);
    // A branch of the table (`branch`): its own line of versions, under the table's root,
    // read and written as a table of its own.
    if let Some(branch) = request.str("branch") {
        let storage = lance_core::storage::Storage::open(&location, &options)?;
        if !lance_core::table::branches::branch_exists(&storage, branch).await? {
            return Err(Error::Namespace {
                kind: lance_core::namespace::NamespaceErrorKind::TableNotFound,
                message: format!("{location}: no branch '{branch}'"),
            });
        }
        location = lance_core::table::branches::branch_uri(&location, branch);
    }
    // No dataset there (a path named as a table, a directory gone): no such table.
    let mut ds = match Dataset::open(&location, request.version(), options.clone()).await {
        Err(Error::NotFound { message, .. }) if request.version().is_none() => {
            return Err(Error::Namespace {
                kind: lance_core::namespace::NamespaceErrorKind::TableNotFound,
                message: format!("{location}: {message}"),
            })
        }
        opened => opened?,
    };
    if let Some(micros) = request.get("timestamp_micros").and_then(Value::as_i64) {
        let nanos = micros.saturating_mul(1000);
        let at = ds
            .versions()
            .await?
            .into_iter()
            .filter(|v| v.timestamp_nanos <= nanos)
            .map(|v| v.version)
            .max()
            .ok_or_else(|| {
                Error::invalid(format!(
                    "{location}: no version of the table was committed at or before the \
                     timestamp asked for ({micros} microseconds since the epoch)"
                ))
            })?;
        ds = ds.checkout(VersionRef::Number(at)).await?;
    }
    let key = lance_core::table::primary_key::key_paths(&ds.schema);
    let config: Map<String, Value> = ds
        .manifest
        .config
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    Ok(json!({
        "location": location,
        "storage_options": options,
        "version": ds.version(),
        "data_storage_version": ds.data_storage_version(),
        "enable_stable_row_ids": ds.has_stable_row_ids(),
        "primary_key": key,
        "config": config,
    }))
}

/// Create table `id` empty, with `schema` and the request's `write` settings (pylance's
/// `write_dataset` arguments); with `replace`, an existing table is overwritten instead
/// (a new version with the new schema and no rows). Returns its location.
async fn create_table(
    ns: &Namespace,
    id: &[String],
    schema: SchemaRef,
    request: &Request,
    replace: bool,
) -> Result<Value, Error> {
    let settings = request.string_map("write");
    let options = write_options(&settings)?;
    let schema = table_schema(schema, &settings)?;
    if !replace {
        return Ok(json!(ns.create_table(id, schema, options).await?));
    }
    let table = ns.table_location(id).await?;
    let options = WriteOptions {
        mode: WriteMode::Overwrite,
        storage_options: table.storage_options,
        ..options
    };
    let nothing = futures::stream::empty();
    Box::pin(write_dataset(&table.location, schema, nothing, options)).await?;
    Ok(json!(table.location))
}

/// The schema of a table to create, which the catalog sends.
fn schema_of(bytes: Option<&[u8]>, request: &Request) -> Result<SchemaRef, Error> {
    let bytes = bytes.ok_or_else(|| {
        Error::invalid(format!(
            "lance_core: the catalog sent no schema for {:?}",
            request.str("op")
        ))
    })?;
    crate::writer::schema_of(bytes).map_err(Error::invalid)
}

/// An id: a JSON list of strings.
fn parts(value: Option<&Value>) -> Outcome<Vec<String>> {
    match value {
        None => Ok(vec![]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(String::from)
                    .ok_or_else(|| format!("lance_core: an id's parts are strings, not {v}"))
            })
            .collect(),
        Some(other) => Err(format!(
            "lance_core: an id is a list of strings, not {other}"
        )),
    }
}
