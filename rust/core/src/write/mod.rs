//! Writing datasets: Arrow batches → data files → fragments → a committed version.
//!
//! `write_fragments` writes data files without committing (what each Spark task does);
//! `write_dataset` also commits them (create, append or overwrite).
pub mod blob_sidecars;
pub mod blob_v2;
pub mod clone;
pub mod column_type;
pub mod columns;
pub mod commit;
pub mod compact;
pub mod config;
mod delete;
mod file;
pub mod index;
mod index_files;
pub mod job_files;
pub mod leaves;
pub mod merge_insert;
#[cfg(test)]
mod model_tests;
mod project;
mod restore;
pub mod rows;
pub mod single_file;
#[cfg(test)]
mod tests;
pub mod update;
pub mod vector_index;

use std::collections::HashMap;

pub use column_type::alter_columns;
pub use commit::{
    commit, commit_external, commit_schema_change, with_conflict_retries, External, ReadFrom,
};
pub use delete::{delete, delete_counted, delete_offsets_uncommitted, delete_uncommitted};
pub use project::{drop_columns, Alteration};
pub use restore::restore;
pub use update::update;

use std::sync::Arc;

use arrow_array::{Array, RecordBatch};
use arrow_schema::{Schema, SchemaRef};
use futures::{Stream, StreamExt};

use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::file::FileVersion;
use crate::proto::table::{BasePath, DataFile, DataFragment};
use crate::storage::{Storage, StorageOptions};
use crate::table::bases::WriteTarget;
use crate::table::schema::LanceSchema;
use crate::table::transaction::{Operation, Staged};
use file::DataFileWriter;

pub const LIBRARY: &str = "lance_core";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMode {
    Create,
    Append,
    Overwrite,
}

#[derive(Clone, Debug)]
pub struct WriteOptions {
    pub mode: WriteMode,
    pub max_rows_per_file: u64,
    pub max_bytes_per_file: u64,
    /// "2.1" or "2.2" (the default, as the reference's `stable`) for new datasets.
    pub data_storage_version: Option<String>,
    pub enable_stable_row_ids: bool,
    pub storage_options: StorageOptions,
    /// Start of every data file name (a distributed job's token, so that the files of an
    /// aborted job can be found and deleted).
    pub file_prefix: String,
    /// How blob v2 columns are written.
    pub blobs: blob_v2::BlobWriteOptions,
    /// Recorded in the commit's transaction (pylance's `transaction_properties`, and its
    /// commit message).
    pub transaction_properties: HashMap<String, String>,
    /// Set in the table's config by a create or overwrite (pylance's
    /// `auto_cleanup_options` become `lance.auto_cleanup.*` keys).
    pub config_upsert: HashMap<String, String>,
    /// Told about each fragment as it is started and finished (pylance's `progress=`).
    pub progress: Option<ProgressHook>,
    /// The id every fragment written carries until a commit numbers them (pylance's
    /// `fragment_id`, 0 by default as in pylance).
    pub fragment_id: u64,
    /// Base paths a new table registers (pylance's `initial_bases`; ids 0 are assigned).
    pub initial_bases: Vec<BasePath>,
    /// Where new data files go, in turn: base names or paths (pylance's `target_bases`);
    /// none: the table's own `data/`.
    pub target_bases: Vec<String>,
    /// `target_bases` resolved (set by the writer once the table's bases are known).
    pub targets: Vec<WriteTarget>,
}

/// What a writer tells about its fragments: `begin` before a fragment's data file is
/// written (its path is known, its rows are not), `complete` once the file is finished.
/// An error from either stops the write.
pub trait WriteProgress: Send + Sync {
    fn begin(&self, fragment: &DataFragment) -> Result<()>;
    fn complete(&self, fragment: &DataFragment) -> Result<()>;
}

/// A shared `WriteProgress`, as `WriteOptions` holds it.
#[derive(Clone)]
pub struct ProgressHook(pub Arc<dyn WriteProgress>);

impl std::fmt::Debug for ProgressHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressHook")
    }
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            mode: WriteMode::Create,
            max_rows_per_file: 1024 * 1024,
            max_bytes_per_file: 90 * (1 << 30),
            data_storage_version: None,
            enable_stable_row_ids: false,
            storage_options: StorageOptions::new(),
            file_prefix: String::new(),
            blobs: Default::default(),
            transaction_properties: HashMap::new(),
            config_upsert: HashMap::new(),
            progress: None,
            fragment_id: 0,
            initial_bases: Vec::new(),
            target_bases: Vec::new(),
            targets: Vec::new(),
        }
    }
}

/// The file format version for a `data_storage_version` string.
pub fn writable_version(v: &str, uri: &str) -> Result<FileVersion> {
    match v {
        "2.2" | "stable" => Ok(FileVersion { major: 2, minor: 2 }),
        "2.1" => Ok(FileVersion { major: 2, minor: 1 }),
        "2.0" => Ok(FileVersion { major: 2, minor: 0 }),
        "0.1" | "legacy" | "2.3" | "next" => Err(Error::unsupported(
            uri,
            format!("writing data storage version '{v}' (lance_core writes 2.0, 2.1 and 2.2)"),
        )),
        other => Err(Error::invalid(format!(
            "{uri}: unknown data storage version '{other}' (known: 2.0, 2.1, 2.2, stable; \
             read only: 0.1/legacy)"
        ))),
    }
}

/// Write `batches` (all with `schema`'s columns, in its order) as data files of the
/// dataset `staged` is for, cut at `max_rows_per_file` / `max_bytes_per_file`. Each file
/// finished is staged; the fragments returned are not committed, and their ids are
/// assigned when they are.
pub async fn write_fragments<S>(
    staged: &Staged,
    schema: &LanceSchema,
    version: FileVersion,
    batches: S,
    opts: &WriteOptions,
) -> Result<Vec<DataFragment>>
where
    S: Stream<Item = Result<RecordBatch>> + Unpin,
{
    let storage = staged.storage();
    let leaves = leaves::for_version(schema, version).map_err(|e| e.in_file(storage.uri()))?;
    opts.blobs.check()?;
    let blob_options = Arc::new(opts.blobs.clone());
    let mut batches = batches;
    let mut fragments = Vec::new();
    let mut current: Option<DataFileWriter> = None;
    let max_rows = opts.max_rows_per_file.max(1);
    let progress = opts.progress.as_ref().map(|p| p.0.clone());
    let primary = [WriteTarget::primary(storage)];
    let targets = match opts.targets.is_empty() {
        true => &primary[..],
        false => &opts.targets[..],
    };
    // Files go to the targets in turn, starting over with every write.
    let mut files_started = 0usize;
    // The fragment a writer's file will be, as far as it is known.
    let fragment_of = |file: DataFile, rows: u64| DataFragment {
        id: opts.fragment_id,
        files: vec![file],
        physical_rows: rows,
        ..Default::default()
    };
    let result: Result<()> = async {
        while let Some(batch) = batches.next().await {
            let batch = batch?;
            let mut offset = 0usize;
            while offset < batch.num_rows() {
                if current.is_none() {
                    let name = new_data_file_name(&opts.file_prefix);
                    let target = &targets[files_started % targets.len()];
                    files_started += 1;
                    let path = target.path(&name);
                    let w =
                        DataFileWriter::create_at(&target.storage, path, name, version, &leaves)
                            .with_blob_options(blob_options.clone())
                            .in_base(target.base_id);
                    if let Some(p) = &progress {
                        p.begin(&fragment_of(w.started(), 0))?;
                    }
                    current = Some(w);
                }
                let w = current.as_mut().unwrap();
                let take = ((max_rows - w.rows()) as usize).min(batch.num_rows() - offset);
                w.write(&batch.slice(offset, take)).await?;
                offset += take;
                if w.rows() >= max_rows || w.bytes() >= opts.max_bytes_per_file {
                    let w = current.take().unwrap();
                    let rows = w.rows();
                    let (file, at) = w.finish_staged(schema).await?;
                    staged.add_in(&at.0, at.1);
                    let fragment = fragment_of(file, rows);
                    if let Some(p) = &progress {
                        p.complete(&fragment)?;
                    }
                    fragments.push(fragment);
                }
            }
        }
        if let Some(w) = current.take() {
            let rows = w.rows();
            if rows > 0 {
                let (file, at) = w.finish_staged(schema).await?;
                staged.add_in(&at.0, at.1);
                let fragment = fragment_of(file, rows);
                if let Some(p) = &progress {
                    p.complete(&fragment)?;
                }
                fragments.push(fragment);
            } else {
                w.abort().await;
            }
        }
        Ok(())
    }
    .await;
    if let Err(e) = result {
        // The file being written is not staged yet (its upload is still open): abort it.
        // Those finished are staged, and go when the writer's attempt fails.
        if let Some(w) = current.take() {
            w.abort().await;
        }
        return Err(e);
    }
    Ok(fragments)
}

/// The columns of `ds` that appended data `incoming` writes: all of them, or those it has
/// when every one it lacks is a nullable top-level column (the fragment's files then lack
/// them, and its rows read as nulls there).
fn appended_columns(
    ds: &Dataset,
    incoming: &Schema,
    uri: &str,
) -> Result<(LanceSchema, SchemaRef)> {
    let has = |name: &str| incoming.field_with_name(name).is_ok();
    if ds.schema.fields.iter().all(|f| has(&f.name)) {
        return Ok(((*ds.schema).clone(), ds.arrow_schema.clone()));
    }
    if let Some(f) = ds
        .schema
        .fields
        .iter()
        .find(|f| !has(&f.name) && !f.nullable)
    {
        return Err(Error::schema_mismatch(format!(
            "{uri}: cannot append: the data has no column '{}', which is not nullable",
            f.name
        )));
    }
    if !ds.schema.fields.iter().any(|f| has(&f.name)) {
        // The full check names what is missing.
        check_append_columns(&ds.arrow_schema, incoming, uri)?;
    }
    let schema = LanceSchema {
        fields: ds
            .schema
            .fields
            .iter()
            .filter(|f| has(&f.name))
            .cloned()
            .collect(),
        metadata: ds.schema.metadata.clone(),
    };
    let arrow = Arc::new(schema.to_arrow()?);
    Ok((schema, arrow))
}

/// A new data file's name, as pylance 14 names them: a random id as 24 binary digits
/// (its first three bytes: object stores partition by key prefix, and a binary prefix
/// spreads new files over partitions fastest) then 26 hex digits (the other 13 bytes).
pub(crate) fn new_data_file_name(prefix: &str) -> String {
    let id = uuid::Uuid::new_v4();
    let (head, rest) = id.as_bytes().split_at(3);
    let mut name = String::with_capacity(prefix.len() + 56);
    name.push_str(prefix);
    for b in head {
        name.push_str(&format!("{b:08b}"));
    }
    for b in rest {
        name.push_str(&format!("{b:02x}"));
    }
    name.push_str(".lance");
    name
}

/// Check that `incoming` can be appended to `dataset` (same columns and types), naming the
/// first column that differs.
pub fn check_append_schema(dataset: &Schema, incoming: &Schema, uri: &str) -> Result<()> {
    check_append_columns(dataset, incoming, uri)?;
    for f in dataset.fields() {
        let g = incoming.field_with_name(f.name())?;
        if !types_match(f.data_type(), g.data_type()) && !blob_v2::accepts(f, g.data_type()) {
            return Err(Error::schema_mismatch(format!(
                "{uri}: cannot append: column '{}' is {} in the dataset but {} in the data",
                f.name(),
                f.data_type(),
                g.data_type()
            )));
        }
        // Nullable data into a non-nullable column is fine without nulls: checked per batch.
    }
    Ok(())
}

/// Check that `incoming` has the columns of `dataset`, no more and no fewer (the rule for
/// data whose types are converted batch by batch, as Spark's are).
pub fn check_append_columns(dataset: &Schema, incoming: &Schema, uri: &str) -> Result<()> {
    if let Some(f) = dataset
        .fields()
        .iter()
        .find(|f| incoming.field_with_name(f.name()).is_err())
    {
        return Err(Error::schema_mismatch(format!(
            "{uri}: cannot append: the data has no column '{}' (type {})",
            f.name(),
            f.data_type()
        )));
    }
    if let Some(g) = incoming
        .fields()
        .iter()
        .find(|g| dataset.field_with_name(g.name()).is_err())
    {
        return Err(Error::schema_mismatch(format!(
            "{uri}: cannot append: the dataset has no column '{}'",
            g.name()
        )));
    }
    Ok(())
}

/// Types equal up to field names and nullability of nested fields.
pub(crate) fn types_match(a: &arrow_schema::DataType, b: &arrow_schema::DataType) -> bool {
    use arrow_schema::DataType::*;
    match (a, b) {
        (Struct(x), Struct(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|(f, g)| f.name() == g.name() && types_match(f.data_type(), g.data_type()))
        }
        (List(x), List(y)) | (LargeList(x), LargeList(y)) => {
            types_match(x.data_type(), y.data_type())
        }
        (FixedSizeList(x, n), FixedSizeList(y, m)) => {
            n == m && types_match(x.data_type(), y.data_type())
        }
        (Map(x, _), Map(y, _)) => types_match(x.data_type(), y.data_type()),
        _ => a == b,
    }
}

/// Give array data `target`, a type equal to its own up to the names and nullability of
/// nested fields; the buffers are kept.
pub(crate) fn retype(
    data: arrow_data::ArrayData,
    target: &arrow_schema::DataType,
) -> Result<arrow_data::ArrayData> {
    use arrow_schema::DataType::*;
    let children = match target {
        List(f) | LargeList(f) | FixedSizeList(f, _) | Map(f, _) => {
            vec![retype(data.child_data()[0].clone(), f.data_type())?]
        }
        Struct(fields) => data
            .child_data()
            .iter()
            .zip(fields.iter())
            .map(|(c, f)| retype(c.clone(), f.data_type()))
            .collect::<Result<_>>()?,
        _ => data.child_data().to_vec(),
    };
    Ok(data
        .into_builder()
        .data_type(target.clone())
        .child_data(children)
        .build()?)
}

/// Reorder a batch's columns to `schema`'s order (by name) and give it that schema.
fn conform(batch: RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    if batch.schema().fields() == schema.fields() {
        return Ok(batch);
    }
    let columns = schema
        .fields()
        .iter()
        .map(|f| {
            let c = batch
                .column_by_name(f.name())
                .ok_or_else(|| Error::invalid(format!("batch has no column '{}'", f.name())))?;
            if !f.is_nullable() && c.null_count() > 0 {
                return Err(Error::invalid(format!(
                    "column '{}' is not nullable but the data has nulls",
                    f.name()
                )));
            }
            if let Some(blobs) = blob_v2::conform(c, f)? {
                return Ok(blobs);
            }
            // Same type up to nested field names (pyarrow calls list items "element" when
            // read from Parquet): rename, keeping the buffers.
            if c.data_type() != f.data_type() {
                return Ok(arrow_array::make_array(retype(c.to_data(), f.data_type())?));
            }
            Ok(c.clone())
        })
        .collect::<Result<Vec<_>>>()?;
    let opts = arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &opts,
    )?)
}

/// What a write needs to know before writing files: the target dataset (if any), the
/// effective mode, the schema with field ids and the file version.
struct Prepared {
    storage: Storage,
    existing: Option<Dataset>,
    /// Bases a new table registers (ids assigned).
    new_bases: Vec<BasePath>,
    /// Where the data files go.
    targets: Vec<WriteTarget>,
    mode: WriteMode,
    schema: LanceSchema,
    arrow_schema: SchemaRef,
    version: FileVersion,
    data_format: String,
}

async fn prepare(uri: &str, incoming: &Schema, opts: &WriteOptions) -> Result<Prepared> {
    let mut p = prepare_table(uri, incoming, opts).await?;
    // Bases: a new table registers them; an existing one has its own. Targets are checked
    // before anything is written.
    let bases = match &p.existing {
        Some(_) if !opts.initial_bases.is_empty() => {
            return Err(Error::invalid(format!(
                "{uri}: Cannot register new bases in {:?} mode. Only CREATE mode can register \
                 new bases.",
                p.mode
            )))
        }
        Some(ds) => ds.manifest.base_paths.clone(),
        None => {
            p.new_bases = crate::table::bases::assign_initial(&[], &opts.initial_bases)?;
            p.new_bases.clone()
        }
    };
    p.targets = crate::table::bases::resolve_targets(
        &p.storage,
        &bases,
        &opts.target_bases,
        &opts.storage_options,
    )?;
    Ok(p)
}

async fn prepare_table(uri: &str, incoming: &Schema, opts: &WriteOptions) -> Result<Prepared> {
    let storage = Storage::open(uri, &opts.storage_options)?;
    let existing = match Dataset::open(uri, None, opts.storage_options.clone()).await {
        Ok(ds) => Some(ds),
        Err(Error::NotFound { .. }) => None,
        Err(e) => return Err(e),
    };
    let mode = match (opts.mode, &existing) {
        (WriteMode::Create, Some(_)) => {
            return Err(Error::invalid(format!(
                "{uri}: a dataset already exists here (use mode='append' or 'overwrite')"
            )))
        }
        (WriteMode::Append, None) => WriteMode::Create,
        (m, _) => m,
    };
    match (mode, &existing) {
        (WriteMode::Append, Some(ds)) => {
            // Data without some nullable columns is appended as files without them (their
            // rows read as nulls), as pylance appends it.
            let (schema, arrow_schema) = appended_columns(ds, incoming, uri)?;
            check_append_schema(&arrow_schema, incoming, uri)?;
            let data_format = ds.data_storage_version();
            let version = writable_version(&data_format, uri)?;
            Ok(Prepared {
                storage,
                existing,
                new_bases: Vec::new(),
                targets: Vec::new(),
                mode,
                schema,
                arrow_schema,
                version,
                data_format,
            })
        }
        _ => {
            // An overwrite keeps the table's format unless asked for another, as pylance's.
            let format = opts
                .data_storage_version
                .clone()
                .or_else(|| existing.as_ref().map(|ds| ds.data_storage_version()))
                .unwrap_or_else(|| "2.2".into());
            let data_format = if format == "stable" {
                "2.2".to_string()
            } else {
                format
            };
            let version = writable_version(&data_format, uri)?;
            let incoming = blob_v2::stored_schema(incoming, version);
            let schema = LanceSchema::from_arrow(&incoming, 0).map_err(|e| e.in_file(uri))?;
            let arrow_schema = Arc::new(schema.to_arrow()?);
            Ok(Prepared {
                storage,
                existing,
                new_bases: Vec::new(),
                targets: Vec::new(),
                mode,
                schema,
                arrow_schema,
                version,
                data_format,
            })
        }
    }
}

async fn write_prepared<S>(
    p: &Prepared,
    batches: S,
    opts: &WriteOptions,
    staged: &Staged,
) -> Result<Vec<DataFragment>>
where
    S: Stream<Item = Result<RecordBatch>> + Unpin + Send,
{
    let target = p.arrow_schema.clone();
    let stream = batches.map(move |b| b.and_then(|b| conform(b, &target)));
    let mut opts = opts.clone();
    opts.targets = p.targets.clone();
    if let Some(ds) = &p.existing {
        // Blobs referenced by URI are stored relative to the table's base paths.
        opts.blobs.bases = blob_v2::table_bases(ds);
    }
    if opts.blobs.storage_options.is_empty() {
        opts.blobs.storage_options = opts.storage_options.clone();
    }
    write_fragments(staged, &p.schema, p.version, Box::pin(stream), &opts).await
}

/// Write a dataset: create it, append to it or overwrite it. Returns it at the new version.
pub async fn write_dataset<S>(
    uri: &str,
    schema: SchemaRef,
    batches: S,
    opts: WriteOptions,
) -> Result<Dataset>
where
    S: Stream<Item = Result<RecordBatch>> + Unpin + Send,
{
    let p = prepare(uri, &schema, &opts).await?;
    let staged = Staged::new(&p.storage);
    let fragments = staged
        .guard(write_prepared(&p, batches, &opts, &staged))
        .await?;
    let op = match p.mode {
        WriteMode::Append => Operation::Append { fragments },
        _ => Operation::Overwrite {
            fragments,
            schema: p.schema.clone(),
            data_format: p.data_format.clone(),
            stable_row_ids: opts.enable_stable_row_ids
                || (p.mode == WriteMode::Overwrite
                    && p.existing.as_ref().is_some_and(|d| d.has_stable_row_ids())),
            config_upsert: opts.config_upsert.clone(),
            initial_bases: p.new_bases.clone(),
        },
    };
    let read_from = match &p.existing {
        Some(ds) => ReadFrom::Version(ds),
        None => ReadFrom::Uri {
            uri,
            options: &opts.storage_options,
            version: None,
        },
    };
    commit(read_from, op, staged, opts.transaction_properties.clone()).await
}

/// Write data files for the dataset at `uri` without committing them (for distributed
/// writers: each task writes, one process commits). In append mode the files use the
/// existing dataset's schema and file version; otherwise `schema` with fresh field ids.
/// When writing fails no file is left; once written, the files are the caller's. Also
/// returns the base paths a new table registers (`initial_bases` with their ids), for the
/// commit of the files.
pub async fn write_uncommitted<S>(
    uri: &str,
    schema: SchemaRef,
    batches: S,
    opts: WriteOptions,
) -> Result<(Vec<DataFragment>, Vec<BasePath>)>
where
    S: Stream<Item = Result<RecordBatch>> + Unpin + Send,
{
    let mut opts = opts;
    if opts.mode == WriteMode::Create {
        // Preparing fragments for a dataset that may appear meanwhile is not an error.
        opts.mode = WriteMode::Overwrite;
    }
    let p = prepare(uri, &schema, &opts).await?;
    let staged = Staged::new(&p.storage);
    let fragments = staged
        .guard(write_prepared(&p, batches, &opts, &staged))
        .await?;
    staged.keep();
    Ok((fragments, p.new_bases))
}
