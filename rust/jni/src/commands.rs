//! What the SQL extension's statements and the catalog's metadata tables ask of a table
//! (`op` in the request): "versions", "tags", "indices", "fragments" (the metadata tables,
//! at the request's version), or a statement at the latest version: "optimize" and
//! "vacuum" (`options`), "create_tag" (`name`, `if_not_exists`, `source`: `branch`,
//! `version`, `tag`), "drop_tag" (`name`, `if_exists`), "drop_index" (`name`). The reply is
//! the rows as an Arrow IPC stream (one batch), which the JVM turns into Spark's rows.
use lance_core::query::metadata_tables::{self, MetadataTable};
use lance_core::spark::commands::{self, Options, TagSource};
use serde_json::Value;

use crate::tables::{Outcome, Request};

/// The rows `op` answers, as Arrow IPC.
pub fn run(request: &Request) -> Outcome<Vec<u8>> {
    let op = request.str("op").unwrap_or_default();
    let ds = request.open()?;
    let name = || {
        request
            .str("name")
            .map(str::to_string)
            .ok_or_else(|| format!("{}: {op} needs a name", ds.uri()))
    };
    let options = |statement: &str| {
        let values = match request.get("options") {
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), String::from),
                    )
                })
                .collect(),
            _ => vec![],
        };
        Options::new(format!("{statement} {}", ds.uri()), values)
    };
    let run = lance_core::threads::io_runtime();
    let batch = match op {
        "optimize" => run.block_on(commands::optimize(&ds, options("OPTIMIZE"))),
        "vacuum" => run.block_on(commands::vacuum(&ds, options("VACUUM"))),
        "create_tag" => {
            let source = request.get("source");
            let field = |k: &str| source.and_then(|s| s.get(k));
            let source = TagSource {
                branch: field("branch").and_then(Value::as_str).map(String::from),
                version: field("version").and_then(Value::as_u64),
                tag: field("tag").and_then(Value::as_str).map(String::from),
            };
            let name = name()?;
            run.block_on(commands::create_tag(
                &ds,
                &name,
                request.flag("if_not_exists"),
                &source,
            ))
        }
        "drop_tag" => {
            let name = name()?;
            run.block_on(commands::drop_tag(&ds, &name, request.flag("if_exists")))
        }
        "drop_index" => {
            let name = name()?;
            run.block_on(commands::drop_index(&ds, &name))
        }
        other => match MetadataTable::named(other) {
            Some(table) => run.block_on(metadata_tables::read(&ds, table)),
            None => return Err(format!("{}: unknown table command '{other}'", ds.uri())),
        },
    }
    .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let mut writer = arrow_ipc::writer::StreamWriter::try_new(&mut out, &batch.schema())
        .map_err(|e| e.to_string())?;
    writer.write(&batch).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    drop(writer);
    Ok(out)
}
