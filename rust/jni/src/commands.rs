//! What the SQL extension's statements and the catalog's metadata tables ask of a table
//! (`op` in the request): "versions", "tags", "branches", "indices", "fragments" (the metadata tables,
//! at the request's version), or a statement at the latest version: "optimize" and
//! "vacuum" (`options`), "create_tag" (`name`, `if_not_exists`, `source`: `branch`,
//! `version`, `tag`), "drop_tag" (`name`, `if_exists`), "create_branch" and "drop_branch"
//! (as for tags), "drop_index" (`name`), or the commit
//! of a `CREATE INDEX` job at the version it planned on, "commit_index" (`name`,
//! `segments`) or, for a vector index, "commit_vector_index" (`name`, `column`, `method`,
//! `options`, the staged `model`, `parts`); the job's other steps are `index_job`'s. The reply is the rows as an Arrow
//! IPC stream (one batch), which the JVM turns into Spark's rows.
use lance_core::query::metadata_tables::{self, MetadataTable};
use lance_core::spark::commands::{self, AsOf, Options, Reference};
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
        Options::new(
            format!("{statement} {}", ds.uri()),
            request.string_map("options"),
        )
    };
    let run = lance_core::threads::io_runtime();
    let batch = match op {
        "optimize" => run.block_on(commands::optimize(&ds, options("OPTIMIZE"))),
        "vacuum" => run.block_on(commands::vacuum(&ds, options("VACUUM"))),
        "create_tag" | "create_branch" | "drop_tag" | "drop_branch" => {
            let kind = match op.ends_with("tag") {
                true => Reference::Tag,
                false => Reference::Branch,
            };
            let name = name()?;
            if op.starts_with("drop") {
                let if_exists = request.flag("if_exists");
                run.block_on(commands::drop_reference(&ds, kind, &name, if_exists))
            } else {
                let source = request.get("source");
                let field = |k: &str| source.and_then(|s| s.get(k));
                let source = AsOf {
                    branch: field("branch").and_then(Value::as_str).map(String::from),
                    version: field("version").and_then(Value::as_u64),
                    tag: field("tag").and_then(Value::as_str).map(String::from),
                };
                let if_not = request.flag("if_not_exists");
                run.block_on(commands::create_reference(
                    &ds, kind, &name, if_not, &source,
                ))
            }
        }
        "drop_index" => {
            let name = name()?;
            run.block_on(commands::drop_index(&ds, &name))
        }
        "commit_index" => {
            let name = name()?;
            let segments = segments(request, ds.uri())?;
            run.block_on(commands::commit_index(&ds, &name, segments))
        }
        "commit_vector_index" => {
            let name = name()?;
            let column = request.str("column").unwrap_or_default();
            let method = request.str("method").unwrap_or_default();
            let mut options = options("CREATE INDEX");
            let params = commands::vector_params(&ds, method, column, &mut options)
                .map_err(|e| e.to_string())?;
            let parts = request.u64("parts").unwrap_or_default() as u32;
            run.block_on(commands::commit_vector_index(
                &ds,
                &name,
                column,
                &params,
                request.str("model"),
                parts,
            ))
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

/// A `CREATE INDEX` job's steps (`op`), which the JVM side runs as a Spark job
/// (`LanceProcedures`): "plan" on the driver (`name`, `method`, `columns`, `options`,
/// `parallelism`; at the latest version) answers the version, what each task builds and
/// the fragments of each task (and, for a vector index, `vector` and the `model` it trained
/// and staged); "build" in a task (`version`, `column`, `method`, `name`, `page_rows`,
/// `probability`, `fragment_ids`, `uuid`, the job's `prefix`) answers its segment's
/// metadata (base64 protobuf; null when the job was aborted meanwhile, its files then
/// deleted), or with `vector` (`model`, `part`, `fragment_ids`) encodes its part and
/// answers `part` (null when aborted); "abort" (`prefix`, `index_uuids`) removes what the
/// tasks wrote. The commit is `commit_index` or `commit_vector_index` of `run`.
pub fn index_job(request: &Request) -> Outcome<Value> {
    use base64::Engine;
    use lance_core::spark::commands::{
        build_index_task, encode_vector_task, plan_index, IndexBuild,
    };
    use lance_core::vector::registry::scalar_kind_to_build;
    use lance_core::write::index::ScalarIndexParams;
    use lance_core::write::job_files::JobFiles;
    use prost::Message;

    let run = lance_core::threads::io_runtime();
    let files = || {
        JobFiles::new(
            request.uri()?,
            &request.storage_options(),
            request.str("prefix").unwrap_or_default(),
        )
        .map_err(|e| e.to_string())
    };
    match request.str("op").unwrap_or_default() {
        "plan" => {
            let ds = request.open()?;
            let columns = request.strings("columns");
            let options = Options::new(
                format!("CREATE INDEX {}", ds.uri()),
                request.string_map("options"),
            );
            let parallelism = request.u64("parallelism").unwrap_or(1) as usize;
            let job = run
                .block_on(plan_index(
                    &ds,
                    request.str("name").unwrap_or_default(),
                    request.str("method").unwrap_or_default(),
                    &columns,
                    options,
                    parallelism,
                ))
                .map_err(|e| e.to_string())?;
            let mut reply = serde_json::json!({
                "version": ds.version(),
                "column": job.column,
                "tasks": job.tasks,
            });
            match job.build {
                IndexBuild::Scalar(params) => {
                    reply["method"] = params.kind.user_names()[0].into();
                    reply["page_rows"] = params.page_rows.into();
                    reply["probability"] = params.probability.into();
                }
                IndexBuild::Vector { model, .. } => {
                    reply["vector"] = true.into();
                    reply["model"] = model.into();
                }
            }
            Ok(reply)
        }
        "build" if request.flag("vector") => {
            let ds = request.open()?;
            let model = request.str("model").unwrap_or_default().to_string();
            let part = request.u64("part").unwrap_or_default() as u32;
            let column = request.str("column").unwrap_or_default();
            run.block_on(encode_vector_task(
                &ds,
                column,
                &model,
                &request.u64s("fragment_ids"),
                part,
            ))
            .map_err(|e| e.to_string())?;
            let kept = run
                .block_on(files()?.keep(&[], std::slice::from_ref(&model)))
                .map_err(|e| e.to_string())?;
            Ok(serde_json::json!({ "part": kept.then_some(part) }))
        }
        "build" => {
            let ds = request.open()?;
            let uri = ds.uri().to_string();
            let params = ScalarIndexParams {
                kind: scalar_kind_to_build(&uri, request.str("method").unwrap_or_default())
                    .map_err(|e| e.to_string())?,
                name: request.str("name").map(String::from),
                replace: true,
                page_rows: request.u64("page_rows"),
                probability: request.get("probability").and_then(Value::as_f64),
            };
            let uuid = request.str("uuid").unwrap_or_default().to_string();
            let column = request.str("column").unwrap_or_default();
            let fragments = request.u64s("fragment_ids");
            let segment = run
                .block_on(build_index_task(&ds, column, &params, &fragments, &uuid))
                .map_err(|e| e.to_string())?;
            let kept = run
                .block_on(files()?.keep(&[], std::slice::from_ref(&uuid)))
                .map_err(|e| e.to_string())?;
            let encoded = base64::engine::general_purpose::STANDARD.encode(segment.encode_to_vec());
            Ok(serde_json::json!({ "segment": kept.then_some(encoded) }))
        }
        "abort" => {
            let uuids = request.strings("index_uuids");
            run.block_on(files()?.abort(&[], &uuids))
                .map_err(|e| e.to_string())?;
            Ok(Value::Null)
        }
        other => Err(format!("lance_core: unknown CREATE INDEX step '{other}'")),
    }
}

/// The segments of a "commit_index" request (base64 protobuf, as "build" answered them).
fn segments(request: &Request, uri: &str) -> Outcome<Vec<lance_core::proto::table::IndexMetadata>> {
    use base64::Engine;
    use prost::Message;
    let Some(Value::Array(items)) = request.get("segments") else {
        return Ok(vec![]);
    };
    items
        .iter()
        .map(|s| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(s.as_str().unwrap_or_default())
                .map_err(|e| format!("{uri}: bad index segment: {e}"))?;
            lance_core::proto::table::IndexMetadata::decode(bytes.as_slice())
                .map_err(|e| format!("{uri}: bad index segment metadata: {e}"))
        })
        .collect()
}

/// The arguments of a `VECTOR_SEARCH` (`arguments`: a list of `[name or null, value]`),
/// by name and checked: `{"arguments": {...}}`, which the JVM resolves `table` from and
/// sends back as a read's `search`.
pub fn search_arguments(request: &Request) -> Outcome<Value> {
    let given: Vec<(Option<String>, Value)> = match request.get("arguments") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::Array(pair) if pair.len() == 2 => {
                    Ok((pair[0].as_str().map(String::from), pair[1].clone()))
                }
                _ => Err(
                    "lance_core: VECTOR_SEARCH arguments must be [name, value] pairs".to_string(),
                ),
            })
            .collect::<Outcome<_>>()?,
        _ => return Err("lance_core: a VECTOR_SEARCH request without arguments".into()),
    };
    let named = lance_core::spark::vector_search::named(&given).map_err(|e| e.to_string())?;
    Ok(serde_json::json!({ "arguments": named }))
}
