//! Spark's batch writes on the JVM side (`LanceBatchWrite`): each task's `TaskWriter` takes
//! the rows Spark's `ArrowWriter` made, as an Arrow IPC stream, converts them to the
//! table's types (`lance_core::spark::table_types`) and writes them as uncommitted
//! fragments; the driver commits every task's fragments as one version (`commit`), or
//! removes what the job wrote (`abort`, the core's `JobFiles` rules).
//!
//! A request names the table (`uri`, `storage_options`), the job (`prefix`: the start of
//! its data files' names), how it writes (`mode`: "append", "overwrite", or "update": a
//! row-level change of SQL's UPDATE, DELETE or MERGE, whose tasks write the new rows as an
//! append does and report the `deleted` rows' addresses, all committed as one Update;
//! `read_version`,
//! the version the driver planned on, none for a new table; `keep_schema`: an overwrite
//! that keeps the table's schema, as `INSERT OVERWRITE` does, rather than the data's),
//! and `settings`: the table's properties (`lance_core::spark::table_properties`: how files
//! are cut, a new table's `primary_key` and `enable_stable_row_ids`, and, for a write that
//! sets the table's schema, its config).
use std::io::Cursor;
use std::sync::Arc;
use std::thread::JoinHandle;

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_ipc::reader::StreamDecoder;
use arrow_schema::SchemaRef;
use futures::channel::mpsc;
use futures::SinkExt;
use lance_core::proto::table::DataFragment;
use lance_core::spark::table_properties::{table_schema, write_options};
use lance_core::spark::table_types::to_table_batch;
use lance_core::table::fragment_json::{fragment_from_json, fragment_to_json};
use lance_core::table::transaction::Staged;
use lance_core::write::commit::{commit_external, External};
use lance_core::write::job_files::JobFiles;
use lance_core::write::rows::{attach_moved_rows, commit_row_changes};
use lance_core::write::{write_uncommitted, WriteMode, WriteOptions};
use lance_core::{Dataset, Error};
use serde_json::{json, Value};

use crate::tables::{Outcome, Request};

type Batches = mpsc::Sender<lance_core::Result<RecordBatch>>;

/// Hand `item` to the writer thread, waiting while it is busy; false when it has stopped.
fn send(tx: &mut Batches, item: lance_core::Result<RecordBatch>) -> bool {
    futures::executor::block_on(tx.send(item)).is_ok()
}

/// One task's writer: batches in, fragments out when it finishes.
pub struct TaskWriter {
    uri: String,
    files: JobFiles,
    target: SchemaRef,
    decoder: StreamDecoder,
    batches: Option<Batches>,
    writing: Option<JoinHandle<lance_core::Result<Vec<DataFragment>>>>,
}

/// What a write's request says, as the core's options.
struct Plan {
    uri: String,
    options: WriteOptions,
    read_version: Option<u64>,
    /// The schema the rows are written with (field ids from 0 for an overwrite).
    target: SchemaRef,
    /// The table at the read version, when there is one.
    existing: Option<Arc<Dataset>>,
    /// A row-level change: rows deleted by address, new rows appended, one Update.
    row_changes: bool,
}

impl Plan {
    /// `schema`: the data's Arrow schema (an IPC stream), needed unless the table's is
    /// kept.
    fn of(request: &Request, schema: Option<&[u8]>) -> Outcome<Plan> {
        let uri = request.uri()?.to_string();
        let read_version = request.u64("read_version");
        let (mode, row_changes) = match request.str("mode") {
            Some("append") => (WriteMode::Append, false),
            Some("update") => (WriteMode::Append, true),
            Some("overwrite") => (WriteMode::Overwrite, false),
            other => {
                return Err(format!(
                    "lance_core: a write's mode is append, overwrite or update, not {other:?}"
                ))
            }
        };
        if row_changes && read_version.is_none() {
            return Err(format!(
                "{uri}: a row-level change needs the version it read"
            ));
        }
        let existing = match read_version {
            Some(v) => Some(request.open_at(v)?),
            None => None,
        };
        let keep_schema = mode == WriteMode::Append || request.flag("keep_schema");
        let settings = request.string_map("settings");
        let target = match (&existing, keep_schema, schema) {
            (Some(ds), true, _) => ds.arrow_schema.clone(),
            (_, _, Some(bytes)) => {
                table_schema(schema_of(bytes)?, &settings).map_err(|e| e.to_string())?
            }
            _ => return Err(format!("{uri}: the write names no schema for a new table")),
        };
        let mut options = WriteOptions {
            mode,
            storage_options: request.storage_options(),
            file_prefix: request.str("prefix").unwrap_or_default().to_string(),
            ..write_options(&settings).map_err(|e| format!("{uri}: {e}"))?
        };
        // The table's own properties go to its config only where the write sets the
        // table's schema (CREATE/REPLACE TABLE ... AS SELECT), not with an INSERT's options.
        if keep_schema {
            options.config_upsert.clear();
        }
        if let (Some(ds), None) = (&existing, &options.data_storage_version) {
            options.data_storage_version = Some(ds.data_storage_version());
        }
        Ok(Plan {
            uri,
            options,
            read_version,
            target,
            existing,
            row_changes,
        })
    }

    fn files(&self) -> Outcome<JobFiles> {
        JobFiles::new(
            &self.uri,
            &self.options.storage_options,
            &self.options.file_prefix,
        )
        .map_err(|e| e.to_string())
    }
}

impl TaskWriter {
    pub fn open(request: &Request, schema: Option<&[u8]>) -> Outcome<Self> {
        let plan = Plan::of(request, schema)?;
        let files = plan.files()?;
        let (batches, incoming) = mpsc::channel::<lance_core::Result<RecordBatch>>(1);
        let (uri, target, options) = (plan.uri.clone(), plan.target.clone(), plan.options);
        let schema = target.clone();
        // A thread of its own drives the write on the I/O runtime, fed batch by batch.
        let writing = std::thread::Builder::new()
            .name("lance-core-task-writer".into())
            .spawn(move || {
                lance_core::threads::io_runtime()
                    .block_on(write_uncommitted(&uri, schema, incoming, options))
                    .map(|(fragments, _)| fragments)
            })
            .map_err(|e| format!("lance_core: cannot start a writer thread: {e}"))?;
        Ok(TaskWriter {
            uri: plan.uri,
            files,
            target,
            decoder: StreamDecoder::new(),
            batches: Some(batches),
            writing: Some(writing),
        })
    }

    /// The next bytes of the task's IPC stream: each whole batch in them is written.
    pub fn write(&mut self, bytes: Vec<u8>) -> Outcome<()> {
        let mut buffer = Buffer::from_vec(bytes);
        while !buffer.is_empty() {
            let decoded = self
                .decoder
                .decode(&mut buffer)
                .map_err(|e| format!("{}: the rows Spark sent are not Arrow IPC: {e}", self.uri))?;
            let Some(batch) = decoded else { continue };
            let batch =
                to_table_batch(&batch, &self.target).map_err(|e| format!("{}: {e}", self.uri))?;
            let sent = match &mut self.batches {
                Some(tx) => send(tx, Ok(batch)),
                None => false,
            };
            if !sent {
                // The writer stopped early: its error says why.
                self.batches = None;
                return Err(self
                    .join()
                    .err()
                    .unwrap_or_else(|| format!("{}: the writer stopped", self.uri)));
            }
        }
        Ok(())
    }

    /// The fragments written (pylance's JSON, one string each); none when the job was
    /// aborted meanwhile (their files are then deleted).
    pub fn finish(mut self) -> Outcome<Value> {
        self.decoder
            .finish()
            .map_err(|e| format!("{}: the rows Spark sent end mid-stream: {e}", self.uri))?;
        self.batches = None;
        let fragments = self.join()?;
        let paths: Vec<String> = fragments
            .iter()
            .flat_map(|f| f.files.iter().map(|d| d.path.clone()))
            .collect();
        let kept = lance_core::threads::io_runtime()
            .block_on(self.files.keep(&paths, &[]))
            .map_err(|e| e.to_string())?;
        let out: Vec<String> = match kept {
            true => fragments
                .iter()
                .map(|f| fragment_to_json(f).to_string())
                .collect(),
            false => vec![],
        };
        Ok(json!(out))
    }

    /// Stop, removing what this writer wrote.
    pub fn abort(mut self) {
        if let Some(mut tx) = self.batches.take() {
            // An error in the stream fails the write, and its guard removes its files.
            send(&mut tx, Err(Error::invalid("the Spark task was aborted")));
        }
        let _ = self.join();
    }

    fn join(&mut self) -> Outcome<Vec<DataFragment>> {
        let Some(writing) = self.writing.take() else {
            return Err(format!("{}: the writer has already stopped", self.uri));
        };
        match writing.join() {
            Ok(result) => result.map_err(|e| e.to_string()),
            Err(_) => Err(format!(
                "lance_core native code failed (a bug): the writer of {} panicked",
                self.uri
            )),
        }
    }
}

impl Drop for TaskWriter {
    fn drop(&mut self) {
        // Closed without finishing: the stream ends with an error, so nothing is kept.
        if let Some(mut tx) = self.batches.take() {
            send(
                &mut tx,
                Err(Error::invalid("the Spark task's writer was closed")),
            );
            let _ = self.join();
        }
    }
}

/// The driver's commit of every task's fragments (`fragments`: pylance's JSON strings) as
/// one version, with, for a row-level change, the rows the tasks deleted (`deleted`: their
/// addresses at the read version) and, on a table with stable row ids, the fragments of
/// the updated rows with the address and row id each row had (`moved`: per task,
/// `fragments`, `addresses`, `ids`), which keep those ids; the new version.
pub fn commit(request: &Request, schema: Option<&[u8]>) -> Outcome<u64> {
    let plan = Plan::of(request, schema)?;
    let fragments = fragments_in(request.get("fragments"), &plan.uri)?;
    let run = lance_core::threads::io_runtime();
    if let (true, Some(ds)) = (plan.row_changes, &plan.existing) {
        let deleted: Vec<u64> = match request.get("deleted") {
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_u64).collect(),
            _ => vec![],
        };
        // The new rows replace whole rows: every field is written again.
        let fields: Vec<u32> = ds
            .schema
            .field_ids()
            .into_iter()
            .map(|i| i as u32)
            .collect();
        // Updated rows that keep their stable ids, each task's in fragments of their own.
        let mut all = Vec::new();
        if let Some(Value::Array(groups)) = request.get("moved") {
            for group in groups {
                let longs = |key: &str| -> Vec<u64> {
                    match group.get(key) {
                        Some(Value::Array(v)) => v.iter().filter_map(Value::as_u64).collect(),
                        _ => vec![],
                    }
                };
                let mut moved = fragments_in(group.get("fragments"), &plan.uri)?;
                let (addresses, ids) = (longs("addresses"), longs("ids"));
                run.block_on(attach_moved_rows(ds, &mut moved, &addresses, &ids, true))
                    .map_err(|e| e.to_string())?;
                all.extend(moved);
            }
        }
        all.extend(fragments);
        let staged = Staged::new(ds.storage());
        staged.add_fragments(&all);
        let done = run
            .block_on(commit_row_changes(ds, all, &deleted, fields, None, staged))
            .map_err(|e| e.to_string())?;
        return Ok(done.version());
    }
    let operation = match plan.options.mode {
        WriteMode::Append => External::Append { fragments },
        _ => External::Overwrite {
            fragments,
            schema: plan.target.as_ref().clone(),
            stable_row_ids: plan.options.enable_stable_row_ids
                || plan
                    .existing
                    .as_ref()
                    .is_some_and(|d| d.has_stable_row_ids()),
            initial_bases: vec![],
            config_upsert: plan.options.config_upsert.clone(),
        },
    };
    let done = run
        .block_on(commit_external(
            &plan.uri,
            &plan.options.storage_options,
            plan.read_version,
            operation,
            Default::default(),
            false,
        ))
        .map_err(|e| e.to_string())?;
    Ok(done.version())
}

/// A list of pylance's fragment JSON strings, as the tasks reported them.
fn fragments_in(value: Option<&Value>, uri: &str) -> Outcome<Vec<DataFragment>> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .map(|f| fragment_from_json(f.as_str().unwrap_or_default()))
            .collect::<lance_core::Result<Vec<_>>>()
            .map_err(|e| format!("{uri}: {e}")),
        _ => Ok(vec![]),
    }
}

/// The driver's abort of a job: its files removed (`fragments`: those the tasks reported),
/// unless a version may refer to them.
pub fn abort(request: &Request) -> Outcome<()> {
    let plan = Plan::without_schema(request)?;
    let known: Vec<String> = match request.get("fragments") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|f| fragment_from_json(f.as_str().unwrap_or_default()).ok())
            .flat_map(|f| f.files.into_iter().map(|d| d.path))
            .collect(),
        _ => vec![],
    };
    let files = plan.files()?;
    lance_core::threads::io_runtime()
        .block_on(files.abort(&known, &[]))
        .map_err(|e| e.to_string())
}

impl Plan {
    /// An abort's plan: only the table and the job's prefix matter.
    fn without_schema(request: &Request) -> Outcome<Plan> {
        Ok(Plan {
            uri: request.uri()?.to_string(),
            options: WriteOptions {
                storage_options: request.storage_options(),
                file_prefix: request.str("prefix").unwrap_or_default().to_string(),
                ..Default::default()
            },
            read_version: None,
            target: Arc::new(arrow_schema::Schema::empty()),
            existing: None,
            row_changes: false,
        })
    }
}

/// The schema an Arrow IPC stream starts with (Spark's own Arrow form of a Spark schema,
/// as the JVM side sends it).
pub fn schema_of(bytes: &[u8]) -> Outcome<SchemaRef> {
    arrow_ipc::reader::StreamReader::try_new(Cursor::new(bytes), None)
        .map(|r| r.schema())
        .map_err(|e| format!("lance_core: a schema that is not Arrow IPC: {e}"))
}
