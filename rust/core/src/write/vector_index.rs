//! Vector indices written, whatever their kind (`vector::build` trains the model and makes
//! the files, each kind storing its rows as `vector::VectorIndexKind` says; this module
//! reads the column, hands it over and commits):
//!
//! - `create_vector_index`: a model trained on a sample of the column (pass 1), every
//!   vector encoded with it (pass 2), one segment committed;
//! - `remapped_files`: a segment's rows written again for a compaction's new addresses;
//! - `optimize`: fragments added since a build encoded with the index's own model, as a
//!   delta segment, or merged with the rows of every segment sharing that model;
//! - Spark splits a build the same way: `stage_model` on the driver writes the trained
//!   model as an uncommitted segment, each task's `encode_part` writes its fragments'
//!   codes beside it, and `commit_staged` on the driver joins them into one segment.
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{ArrayRef, FixedSizeListArray, RecordBatch};
use arrow_schema::DataType;
use futures::TryStreamExt;

use super::commit::{commit, ReadFrom};
use super::index_files::{column_batches_in, replaced_segments, segment_entry, write_files};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::index::remap::AddressMap;
use crate::index::IndexFileData;
use crate::proto::table::IndexMetadata;
use crate::table::transaction::{Operation, Staged};
use crate::threads::cpu::spawn_cpu;
use crate::vector::build::{train, Model, Sampler};
use crate::vector::encoded::Encoded;
use crate::vector::ivf::Ivf;
use crate::vector::kind::IvfParams;
use crate::vector::reuse;

/// Rows per batch a build reads: vectors are wide, and batches smaller than the pages
/// they come from are slices of them rather than copies (a 128-float vector is 512 bytes:
/// 16,384 of them are 8 MB).
const VECTOR_BATCH: usize = 16 * 1024;

/// Type URL of a vector index's details, as pylance writes it.
const VECTOR_DETAILS_URL: &str = "/lance.index.pb.VectorIndexDetails";

/// Build an IVF vector index on `column` and commit it (rebuilt up to `retries` times
/// when a concurrent commit moved the rows it indexed).
pub async fn create_vector_index(
    ds: &Dataset,
    column: &str,
    name: Option<&str>,
    replace: bool,
    params: &IvfParams,
    retries: u32,
) -> Result<Dataset> {
    super::with_conflict_retries(ds, retries, |ds| async move {
        let ds = Arc::new(ds);
        commit_new_segment(&ds, column, name, replace, params, |covered| {
            let ds = ds.clone();
            async move {
                let model = Arc::new(train_model(&ds, column, params, &covered).await?);
                let encoded = encode(&ds, column, model.clone(), &covered, None).await?;
                let model = Arc::try_unwrap(model)
                    .map_err(|_| Error::invalid("internal: model still shared"))?;
                Ok((model, encoded))
            }
        })
        .await
    })
    .await
}

/// The tail every build shares: check `column` and the index `name` (replacing one of
/// that name only when `replace`), take a model and its rows from `build` (given the
/// fragments the segment covers: all of them), write them as one new segment and commit
/// a `CreateIndex`. Files written before a failure are removed.
async fn commit_new_segment<F, Fut>(
    ds: &Arc<Dataset>,
    column: &str,
    name: Option<&str>,
    replace: bool,
    params: &IvfParams,
    build: F,
) -> Result<Dataset>
where
    F: FnOnce(Vec<u64>) -> Fut,
    Fut: std::future::Future<Output = Result<(Model, Encoded)>>,
{
    let (field_id, element) = vector_field(ds, column, params)?;
    let name = name.map_or_else(|| format!("{column}_idx"), str::to_string);
    let removed = replaced_segments(ds, &name, replace)?;
    let staged = Staged::new(ds.storage());
    let work = async {
        let covered: Vec<u64> = ds.fragments().iter().map(|f| f.id).collect();
        let (model, encoded) = build(covered.clone()).await?;
        let uuid = uuid::Uuid::new_v4();
        let (files, details) =
            write_model(ds, &staged, &uuid, model, encoded, &element, column).await?;
        segment_entry(
            ds,
            uuid,
            field_id,
            &name,
            &covered,
            details_any(details),
            1,
            files,
        )
    };
    let segment = staged.guard(work).await?;
    let op = Operation::CreateIndex {
        new_indices: vec![segment],
        removed_indices: removed,
    };
    commit(ReadFrom::Version(ds), op, staged, Default::default()).await
}

fn details_any(value: Vec<u8>) -> prost_types::Any {
    prost_types::Any {
        type_url: VECTOR_DETAILS_URL.to_string(),
        value,
    }
}

/// The field id and element type of `column`, checked to be a vector column the index
/// can be built on.
fn vector_field(ds: &Dataset, column: &str, params: &IvfParams) -> Result<(i32, DataType)> {
    let field = ds
        .schema
        .field(column)
        .ok_or_else(|| Error::invalid(format!("{}: no column '{column}' to index", ds.uri())))?;
    let arrow = ds
        .arrow_schema
        .field_with_name(column)
        .map_err(|_| Error::invalid(format!("{}: no column '{column}' to index", ds.uri())))?;
    match arrow.data_type() {
        DataType::FixedSizeList(item, dim)
            if matches!(
                item.data_type(),
                DataType::Float16 | DataType::Float32 | DataType::Float64
            ) =>
        {
            params.metric.check(item.data_type(), column)?;
            params
                .kind
                .check(params, *dim as usize)
                .map_err(|reason| Error::invalid(format!("{}: {reason}", ds.uri())))?;
            Ok((field.id, item.data_type().clone()))
        }
        other => Err(Error::invalid(format!(
            "{}: column '{column}' is {other}; a {} index needs a fixed-size list of float16, \
             float32 or float64",
            ds.uri(),
            params.kind.name()
        ))),
    }
}

/// The column and element type of the field a segment indexes; None when it is gone.
fn indexed_column(ds: &Dataset, meta: &IndexMetadata) -> Result<Option<(String, DataType)>> {
    let [field_id] = meta.fields.as_slice() else {
        return Ok(None);
    };
    let Some(column) = ds.schema.path_of(*field_id) else {
        return Ok(None);
    };
    let Some(field) = ds.schema.field(&column) else {
        return Ok(None);
    };
    Ok(match field.data_type()? {
        DataType::FixedSizeList(item, _) => Some((column, item.data_type().clone())),
        _ => None,
    })
}

fn vectors_of(values: &ArrayRef) -> Result<FixedSizeListArray> {
    values
        .as_fixed_size_list_opt()
        .cloned()
        .ok_or_else(|| Error::invalid("internal: the vector column read is not a vector"))
}

/// Pass 1: a model trained on a sample of `column`'s vectors in `fragments`.
async fn train_model(
    ds: &Arc<Dataset>,
    column: &str,
    params: &IvfParams,
    fragments: &[u64],
) -> Result<Model> {
    let mut sampler = None;
    let by_row_id = ds.has_stable_row_ids();
    let mut batches = column_batches_in(ds, column, by_row_id, fragments, None, VECTOR_BATCH)?;
    while let Some((values, _)) = batches.try_next().await? {
        let vectors = vectors_of(&values)?;
        let s =
            sampler.get_or_insert_with(|| Sampler::new(params, vectors.value_length() as usize));
        s.add(&vectors)?;
    }
    let sampler = sampler.ok_or_else(|| {
        Error::invalid(format!(
            "{}: no vectors to index in column '{column}': the table is empty",
            ds.uri()
        ))
    })?;
    let p = params.clone();
    spawn_cpu(building(params, column), move || train(sampler, &p)).await
}

fn building(params: &IvfParams, column: &str) -> String {
    format!("building {} on column '{column}'", params.kind.name())
}

/// Pass 2: every vector of `column` in `fragments` (physical rows `row_range` of each,
/// when given) encoded by `model`, with its row's address (or stable row id).
async fn encode(
    ds: &Arc<Dataset>,
    column: &str,
    model: Arc<Model>,
    fragments: &[u64],
    row_range: Option<(u64, u64)>,
) -> Result<Encoded> {
    let mut encoded = Encoded::default();
    let by_row_id = ds.has_stable_row_ids();
    let mut batches = column_batches_in(ds, column, by_row_id, fragments, row_range, VECTOR_BATCH)?;
    let what = building(model.params(), column);
    while let Some((values, ids)) = batches.try_next().await? {
        let (vectors, model) = (vectors_of(&values)?, model.clone());
        let part = spawn_cpu(what.clone(), move || model.encode(&vectors, &ids)).await?;
        encoded.append(part);
    }
    Ok(encoded)
}

/// Write `encoded` with `model` as the files of segment `uuid` (staged); their names and
/// sizes, and the segment's details.
async fn write_model(
    ds: &Dataset,
    staged: &Staged,
    uuid: &uuid::Uuid,
    model: Model,
    encoded: Encoded,
    element: &DataType,
    column: &str,
) -> Result<(Vec<crate::proto::table::IndexFile>, Vec<u8>)> {
    let element = element.clone();
    let what = building(model.params(), column);
    let built = spawn_cpu(what, move || model.finish(encoded, &element)).await?;
    Ok((
        write_files(ds, staged, uuid, built.files).await?,
        built.details,
    ))
}

/// The model of segment `meta` when lance_core can encode rows as it did (a kind it
/// builds); None for the others (a graph would need rebuilding).
async fn reusable(ds: &Dataset, meta: &IndexMetadata) -> Result<Option<Arc<Ivf>>> {
    let segment = crate::table::index_segments::segment(meta)?;
    if !crate::vector::vector_kind_of(&segment).is_some_and(|k| k.builds()) {
        return Ok(None);
    }
    let ivf = Ivf::load(ds, &segment).await?;
    Ok(reuse::model(&ivf).is_ok().then_some(ivf))
}

/// Segment `meta`'s files written again under `uuid` with every row id mapped by `map`
/// (rows gone left out); None when its kind cannot be rewritten (it then stops covering
/// the rewritten fragments).
pub(super) async fn remapped_files(
    ds: &Arc<Dataset>,
    staged: &Staged,
    uuid: &uuid::Uuid,
    meta: &IndexMetadata,
    map: &AddressMap,
) -> Result<Option<Vec<crate::proto::table::IndexFile>>> {
    let (Some(ivf), Some((column, element))) =
        (reusable(ds, meta).await?, indexed_column(ds, meta)?)
    else {
        return Ok(None);
    };
    let model = reuse::model(&ivf)?;
    let mut rows = reuse::rows(&ivf).await?;
    rows.remap(|id| map.map(id));
    let (files, _) = write_model(ds, staged, uuid, model, rows, &element, &column).await?;
    Ok(Some(files))
}

/// Vector index `name` (its `segments`) brought up to date with `missing` fragments, as
/// pylance's `optimize_indices` without retraining: their vectors encoded with the newest
/// reusable segment's model into a new segment, alone (`merge` false, a delta) or with
/// the rows of every segment sharing the model (which it replaces). None when no segment
/// can be reused (an HNSW index; its column gone). The new segment, and those it replaces.
pub(super) async fn optimize(
    ds: &Arc<Dataset>,
    staged: &Staged,
    segments: &[IndexMetadata],
    missing: &[u64],
    merge: bool,
) -> Result<Option<(IndexMetadata, Vec<IndexMetadata>)>> {
    let mut newest_first: Vec<&IndexMetadata> = segments.iter().collect();
    newest_first.sort_by_key(|m| std::cmp::Reverse(m.dataset_version));
    let mut base = None;
    for m in &newest_first {
        if let Some(ivf) = reusable(ds, m).await? {
            base = Some((*m, ivf));
            break;
        }
    }
    let (Some((meta, ivf)), Some((column, element))) = (base, indexed_column(ds, &segments[0])?)
    else {
        return Ok(None);
    };
    let model = Arc::new(reuse::model(&ivf)?);
    let mut encoded = encode(ds, &column, model.clone(), missing, None).await?;
    let mut covered: roaring::RoaringBitmap = missing.iter().map(|&f| f as u32).collect();
    let mut replaced = Vec::new();
    if merge {
        for m in &newest_first {
            let Some(other) = reusable(ds, m).await? else {
                continue;
            };
            if !reuse::same_model(&ivf, &other) {
                continue;
            }
            encoded.append(reuse::rows(&other).await?);
            if let Some(f) = crate::table::index_segments::segment(m)?.fragments {
                covered |= f;
            }
            replaced.push((*m).clone());
        }
    }
    let model =
        Arc::try_unwrap(model).map_err(|_| Error::invalid("internal: model still shared"))?;
    let uuid = uuid::Uuid::new_v4();
    let (files, _) = write_model(ds, staged, &uuid, model, encoded, &element, &column).await?;
    let covered: Vec<u64> = covered.iter().map(u64::from).collect();
    let details = meta
        .index_details
        .clone()
        .unwrap_or_else(|| details_any(vec![]));
    let entry = segment_entry(
        ds,
        uuid,
        meta.fields[0],
        &meta.name,
        &covered,
        details,
        meta.index_version.unwrap_or(1),
        files,
    )?;
    Ok(Some((entry, replaced)))
}

/// Whether `meta` is a segment of a vector index.
pub(super) fn is_vector(meta: &IndexMetadata) -> bool {
    meta.index_details
        .as_ref()
        .is_some_and(|d| d.type_url.ends_with("VectorIndexDetails"))
}

// A build spread over Spark's workers.

/// Where a staged build keeps the codes of task `part`, beside its model.
fn part_file(part: u32) -> String {
    format!("encoded-{part}.lance")
}

/// Driver, first: train a model for `column` of `ds` on a sample of every fragment, and
/// write it under `_indices/<uuid>/` as a segment without rows (nothing committed).
pub async fn stage_model(ds: &Dataset, column: &str, params: &IvfParams, uuid: &str) -> Result<()> {
    let ds = Arc::new(ds.clone());
    let (_, element) = vector_field(&ds, column, params)?;
    let uuid = parse_uuid(&ds, uuid)?;
    let staged = Staged::new(ds.storage());
    let work = async {
        let covered: Vec<u64> = ds.fragments().iter().map(|f| f.id).collect();
        let model = train_model(&ds, column, params, &covered).await?;
        write_model(
            &ds,
            &staged,
            &uuid,
            model,
            Encoded::default(),
            &element,
            column,
        )
        .await
    };
    staged.guard(work).await?;
    staged.keep();
    Ok(())
}

fn parse_uuid(ds: &Dataset, uuid: &str) -> Result<uuid::Uuid> {
    uuid::Uuid::parse_str(uuid).map_err(|_| {
        Error::invalid(format!(
            "{}: '{uuid}' is not a uuid (index files go under _indices/<uuid>/)",
            ds.uri()
        ))
    })
}

/// The model staged under `_indices/<uuid>/`.
async fn staged_model(ds: &Dataset, uuid: &str) -> Result<Arc<Ivf>> {
    let dir = format!("{}/_indices/{uuid}", ds.uri().trim_end_matches('/'));
    Ivf::load_dir(ds, dir).await
}

/// A task: encode `column`'s vectors in `fragments` (physical rows `row_range` of each,
/// when given) with the model staged under `_indices/<uuid>/`, and write them beside it
/// as part `part`.
pub async fn encode_part(
    ds: &Dataset,
    column: &str,
    uuid: &str,
    fragments: &[u64],
    row_range: Option<(u64, u64)>,
    part: u32,
) -> Result<()> {
    let ds = Arc::new(ds.clone());
    let ivf = staged_model(&ds, uuid).await?;
    let model = Arc::new(reuse::model(&ivf)?);
    let encoded = encode(&ds, column, model, fragments, row_range).await?;
    let staged = Staged::new(ds.storage());
    let file = IndexFileData {
        name: part_file(part),
        batch: encoded.into_batch()?,
        global_buffers: vec![],
    };
    let uuid = parse_uuid(&ds, uuid)?;
    staged
        .guard(write_files(&ds, &staged, &uuid, vec![file]))
        .await?;
    staged.keep();
    Ok(())
}

/// Driver, last: join the model staged under `_indices/<uuid>/` and the `parts` its tasks
/// encoded into one segment of index `name` (under a new uuid), and commit it; the staged
/// files are removed.
pub async fn commit_staged(
    ds: &Dataset,
    column: &str,
    name: Option<&str>,
    replace: bool,
    params: &IvfParams,
    uuid: &str,
    parts: u32,
) -> Result<Dataset> {
    let ds = Arc::new(ds.clone());
    let joined = |_covered: Vec<u64>| async {
        let ivf = staged_model(&ds, uuid).await?;
        let dir = format!("{}/_indices/{uuid}", ds.uri().trim_end_matches('/'));
        let mut encoded = Encoded::default();
        for part in 0..parts {
            let path = format!("{dir}/{}", part_file(part));
            let file =
                crate::file_table::open(&dir, &part_file(part), ds.storage_options()).await?;
            let s = crate::scan::scan(Arc::new(file), Default::default())?;
            let batches: Vec<RecordBatch> = s.batches.try_collect().await?;
            for b in batches {
                encoded.append(Encoded::from_batch(&b, &path)?);
            }
        }
        Ok((reuse::model(&ivf)?.with_settings_of(params), encoded))
    };
    let new = commit_new_segment(&ds, column, name, replace, params, joined).await?;
    ds.storage()
        .delete_tree(&format!("_indices/{uuid}"))
        .await?;
    Ok(new)
}
