//! Building scalar indices and dropping them: the indexed column is read with each row's
//! address (or stable row id, where the kind of index keeps those), the index's files are
//! written under `_indices/<uuid>/` as pylance 14 lays them out (`index::btree::build`,
//! `index::bitmap::build`), and a `CreateIndex` transaction adds the segment (and removes
//! the one it replaces).
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{ArrayRef, RecordBatch, UInt64Array};
use arrow_schema::DataType;
use futures::{StreamExt, TryStreamExt};

use super::commit::{commit, ReadFrom};
use super::file::DataFileWriter;
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::file::FileVersion;
use crate::index::Kind;
use crate::proto::table::{IndexFile, IndexMetadata, Uuid};
use crate::scan::{scan, ScanOptions, ROW_ADDRESS, ROW_ID};
use crate::table::schema::LanceSchema;
use crate::table::transaction::{Operation, Staged};

/// Rows per BTREE page, as pylance writes them.
pub const BTREE_PAGE_ROWS: u64 = 4096;

#[derive(Clone, Debug)]
pub struct ScalarIndexParams {
    pub kind: Kind,
    /// `<column>_idx` when None.
    pub name: Option<String>,
    /// Replace an index of the same name (else that is an error).
    pub replace: bool,
    /// BTREE: rows per page (pylance's `zone_size`); ZONEMAP: rows per zone
    /// (`rows_per_zone`); BLOOMFILTER: rows (values) per zone (`number_of_items`).
    pub page_rows: Option<u64>,
    /// BLOOMFILTER: the chance of a false match per zone filter.
    pub probability: Option<f64>,
}

/// Build a scalar index on `column` of `ds` and commit it (re-read and rebuilt up to
/// `retries` times when a concurrent commit moved the rows it indexed).
pub async fn create_scalar_index(
    ds: &Dataset,
    column: &str,
    params: &ScalarIndexParams,
    retries: u32,
) -> Result<Dataset> {
    super::with_conflict_retries(ds, retries, |ds| async move {
        let ds = Arc::new(ds);
        let spec = SegmentSpec::new(&ds, column, params)?;
        let removed = replaced_segments(&ds, &spec.name, params.replace)?;
        let staged = Staged::new(ds.storage());
        let segment = staged
            .guard(build_segment(&ds, &staged, &spec, None, None))
            .await?;
        let op = Operation::CreateIndex {
            new_indices: vec![segment],
            removed_indices: removed,
        };
        commit(ReadFrom::Version(&ds), op, staged, Default::default()).await
    })
    .await
}

/// Build one segment of the index `spec` describes over `fragments` (all when None): its
/// files written (and staged) under `_indices/<uuid>/` (a new uuid when None), its
/// manifest entry returned.
async fn build_segment(
    ds: &Arc<Dataset>,
    staged: &Staged,
    spec: &SegmentSpec,
    fragments: Option<Vec<u64>>,
    uuid: Option<uuid::Uuid>,
) -> Result<IndexMetadata> {
    let SegmentSpec {
        name,
        column,
        field_id,
        data_type,
        kind,
        page_rows,
        probability,
    } = spec;
    let (kind, page_rows, probability) = (*kind, *page_rows, *probability);
    if page_rows == 0 {
        return Err(Error::invalid(format!(
            "a {kind:?} page or zone must hold at least one row"
        )));
    }
    // What the segment's ids are on a table with stable row ids: BTREE's format version 1
    // holds addresses there.
    let index_version = match kind {
        Kind::BTree => i32::from(ds.has_stable_row_ids()),
        Kind::LabelList => crate::index::label_list::INDEX_VERSION,
        Kind::Bitmap | Kind::ZoneMap | Kind::BloomFilter | Kind::NGram => 0,
    };
    let by_row_id = ds.has_stable_row_ids() && kind.holds_row_ids(index_version);
    let covered: Vec<u64> =
        fragments.unwrap_or_else(|| ds.fragments().iter().map(|f| f.id).collect());
    let (values, ids) = read_column(ds, column, by_row_id, &covered).await?;
    if values.data_type() != data_type {
        return Err(Error::corrupt(
            ds.uri(),
            format!(
                "column '{column}' read as {}, not {data_type}",
                values.data_type()
            ),
        ));
    }
    let files: Vec<IndexFileData> = match kind {
        Kind::BTree => {
            let (pages, lookup) = crate::index::btree::build(&values, &ids, page_rows as usize)?;
            vec![
                IndexFileData::new(crate::index::btree::PAGES_FILE, pages),
                IndexFileData::new(crate::index::btree::LOOKUP_FILE, lookup),
            ]
        }
        Kind::Bitmap => vec![IndexFileData::new(
            crate::index::bitmap::FILE,
            crate::index::bitmap::build(&values, &ids)?,
        )],
        Kind::BloomFilter => {
            let (batch, nulls) = crate::index::bloom::build(&values, &ids, page_rows, probability)?;
            vec![IndexFileData {
                name: crate::index::bloom::FILE.to_string(),
                batch,
                global_buffers: vec![nulls],
            }]
        }
        Kind::ZoneMap => {
            let (batch, nulls) = crate::index::zonemap::build(&values, &ids, page_rows)?;
            vec![IndexFileData {
                name: crate::index::zonemap::FILE.to_string(),
                batch,
                global_buffers: vec![nulls],
            }]
        }
        Kind::NGram => vec![IndexFileData::new(
            crate::index::ngram::FILE,
            crate::index::ngram::build(&values, &ids)?,
        )],
        Kind::LabelList => {
            let (batch, list_nulls) = crate::index::label_list::build(&values, &ids)?;
            vec![IndexFileData {
                name: crate::index::bitmap::FILE.to_string(),
                batch,
                global_buffers: vec![list_nulls],
            }]
        }
    };
    let uuid = uuid.unwrap_or_else(uuid::Uuid::new_v4);
    let written = write_files(ds, staged, &uuid, files).await?;
    let details = prost_types::Any {
        type_url: kind.type_url().to_string(),
        value: details(kind, data_type, page_rows),
    };
    segment_entry(
        ds,
        uuid,
        *field_id,
        name,
        &covered,
        details,
        index_version,
        written,
    )
}

/// The manifest entry of a segment written under `_indices/<uuid>/`.
#[allow(clippy::too_many_arguments)]
pub(super) fn segment_entry(
    ds: &Dataset,
    uuid: uuid::Uuid,
    field_id: i32,
    name: &str,
    covered: &[u64],
    details: prost_types::Any,
    index_version: i32,
    files: Vec<IndexFile>,
) -> Result<IndexMetadata> {
    let mut bitmap = roaring::RoaringBitmap::new();
    bitmap.extend(covered.iter().map(|&f| f as u32));
    let mut fragment_bitmap = Vec::with_capacity(bitmap.serialized_size());
    bitmap
        .serialize_into(&mut fragment_bitmap)
        .map_err(|e| Error::io(ds.uri(), e.to_string()))?;
    let created_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64;
    Ok(IndexMetadata {
        uuid: Some(Uuid {
            uuid: uuid.as_bytes().to_vec(),
        }),
        fields: vec![field_id],
        name: name.to_string(),
        dataset_version: ds.version(),
        fragment_bitmap,
        index_details: Some(details),
        index_version: Some(index_version),
        created_at: Some(created_at),
        base_id: None,
        files,
    })
}

/// The serialized details of a segment of `kind` (only ZONEMAP has any).
fn details(kind: Kind, data_type: &DataType, rows_per_zone: u64) -> Vec<u8> {
    use prost::Message;
    match kind {
        Kind::ZoneMap => crate::proto::table::ZoneMapIndexDetails {
            rows_per_zone: Some(rows_per_zone),
            use_seeds: Some(crate::index::zonemap::seeds_by_default(data_type)),
            has_null_bitmap: Some(true),
        }
        .encode_to_vec(),
        _ => vec![],
    }
}

/// Bring indices up to date with the fragments added since they were built, as pylance's
/// `optimize_indices`: for each index (those named in `names`, else all) with fragments
/// it does not cover, a new segment over those fragments alone (`merge` false: a delta),
/// or one segment over every fragment in place of its segments (`merge`). Vector indices
/// keep their trained model (`vector_index::optimize`); HNSW ones are left as they are.
/// One commit for all.
pub async fn optimize_indices(
    ds: &Dataset,
    names: Option<&[String]>,
    merge: bool,
) -> Result<Dataset> {
    super::with_conflict_retries(ds, 3, |ds| async move {
        let ds = Arc::new(ds);
        let deltas = index_deltas(&ds, names).await?;
        let all = index_metadata(&ds)?;
        let staged = Staged::new(ds.storage());
        let (mut new_indices, mut removed_indices) = (Vec::new(), Vec::new());
        let work = async {
            for IndexDelta { spec, fragments } in deltas {
                let over = (!merge).then_some(fragments);
                let segment = build_segment(&ds, &staged, &spec, over, None).await?;
                new_indices.push(segment);
                if merge {
                    removed_indices.extend(all.iter().filter(|m| m.name == spec.name).cloned());
                }
            }
            for (segments, missing) in uncovered(&ds, names)? {
                if !super::vector_index::is_vector(&segments[0]) {
                    continue;
                }
                let optimized =
                    super::vector_index::optimize(&ds, &staged, &segments, &missing, merge).await?;
                if let Some((segment, replaced)) = optimized {
                    new_indices.push(segment);
                    removed_indices.extend(replaced);
                }
            }
            Ok::<_, Error>(())
        };
        staged.guard(work).await?;
        if new_indices.is_empty() {
            return Ok(ds.as_ref().clone());
        }
        let op = Operation::CreateIndex {
            new_indices,
            removed_indices,
        };
        commit(ReadFrom::Version(&ds), op, staged, Default::default()).await
    })
    .await
}

/// What a compaction does with an index segment over fragments it rewrites.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnRewrite {
    /// It holds stable row ids: the rows keep them, the segment covers the new fragments.
    FollowRows,
    /// It holds row addresses a compaction can map (`remap_segment`).
    Remap,
    /// Zones of rows, or an HNSW graph: it stops covering the rewritten fragments.
    Uncover,
}

/// How a compaction treats `segment` (pylance remaps the same kinds; zones of rows
/// cannot be, and an HNSW graph would need rebuilding).
pub(crate) fn on_rewrite(
    segment: &crate::table::index_segments::IndexSegment,
    stable_row_ids: bool,
) -> OnRewrite {
    let vector = segment.kind.starts_with("IVF_");
    let holds_row_ids = match Kind::of(segment) {
        Some(kind) => kind.holds_row_ids(segment.index_version),
        None => vector,
    };
    let remappable = match Kind::of(segment) {
        Some(kind) => matches!(
            kind,
            Kind::BTree | Kind::Bitmap | Kind::LabelList | Kind::NGram
        ),
        None => crate::vector::reuse::storage_of(&segment.kind).is_some(),
    };
    match () {
        _ if stable_row_ids && holds_row_ids => OnRewrite::FollowRows,
        _ if remappable => OnRewrite::Remap,
        _ => OnRewrite::Uncover,
    }
}

/// Segment `meta` of `ds` rewritten with every row address mapped by `map` (rows gone
/// left out), as a new segment whose files are staged in `staged`: what a compaction's
/// `Rewrite` records to replace it. None when it cannot be (it then stops covering the
/// rewritten fragments).
pub(crate) async fn remap_segment(
    ds: &Arc<Dataset>,
    staged: &Staged,
    meta: &IndexMetadata,
    map: &crate::index::remap::AddressMap,
) -> Result<Option<crate::proto::table::transaction::rewrite::RewrittenIndex>> {
    use crate::index::{bitmap, btree, label_list, ngram};
    let segment = crate::table::index_segments::segment(meta)?;
    let uuid = uuid::Uuid::new_v4();
    let files = match Kind::of(&segment) {
        Some(Kind::BTree) => {
            let tree = btree::BTree::load(ds, &segment).await?;
            let (values, ids) = tree.entries().await?;
            let (values, ids) = map.apply(&values, &ids)?;
            let (pages, lookup) = btree::build(&values, &ids, tree.page_rows() as usize)?;
            vec![
                IndexFileData::new(btree::PAGES_FILE, pages),
                IndexFileData::new(btree::LOOKUP_FILE, lookup),
            ]
        }
        Some(Kind::Bitmap) => {
            let (keys, ids) = bitmap::Bitmap::load(ds, &segment).await?.entries()?;
            let (keys, ids) = map.apply(&keys, &ids)?;
            vec![IndexFileData::new(
                bitmap::FILE,
                bitmap::build(&keys, &ids)?,
            )]
        }
        Some(Kind::LabelList) => {
            let index = bitmap::Bitmap::load(ds, &segment).await?;
            let (items, ids) = index.entries()?;
            let (items, ids) = map.apply(&items, &ids)?;
            let nulls = map.map_set(&index.list_nulls().cloned().unwrap_or_default());
            let (batch, nulls) = label_list::build_from_items(&items, &ids, &nulls)?;
            vec![IndexFileData {
                name: bitmap::FILE.to_string(),
                batch,
                global_buffers: vec![nulls],
            }]
        }
        Some(Kind::NGram) => {
            let index = ngram::NGram::load(ds, &segment).await?;
            vec![IndexFileData::new(
                ngram::FILE,
                index.remapped(|id| map.map(id))?,
            )]
        }
        Some(Kind::ZoneMap | Kind::BloomFilter) => return Ok(None),
        None => vec![],
    };
    let new_index_files = match Kind::of(&segment) {
        Some(_) => write_files(ds, staged, &uuid, files).await?,
        None => match super::vector_index::remapped_files(ds, staged, &uuid, meta, map).await? {
            Some(files) => files,
            None => return Ok(None),
        },
    };
    Ok(Some(
        crate::proto::table::transaction::rewrite::RewrittenIndex {
            old_id: meta.uuid.clone(),
            new_id: Some(Uuid {
                uuid: uuid.as_bytes().to_vec(),
            }),
            new_index_details: meta.index_details.clone(),
            new_index_version: meta.index_version.unwrap_or(0).max(0) as u32,
            new_index_files,
        },
    ))
}

/// Remove every segment of index `name` from the table (its files stay until a cleanup
/// removes versions that list it).
pub async fn drop_index(ds: &Dataset, name: &str) -> Result<Dataset> {
    super::with_conflict_retries(ds, 3, |ds| async move {
        let removed = segments_named(&ds, name)?;
        if removed.is_empty() {
            return Err(Error::not_found(
                ds.uri(),
                format!("there is no index named '{name}'"),
            ));
        }
        let op = Operation::CreateIndex {
            new_indices: vec![],
            removed_indices: removed,
        };
        let staged = Staged::new(ds.storage());
        commit(ReadFrom::Version(&ds), op, staged, Default::default()).await
    })
    .await
}

/// The field id and type of `column`, if an index of `kind` can be built on it.
fn indexable(ds: &Dataset, column: &str, kind: Kind) -> Result<(i32, DataType)> {
    let field = ds.schema.field(column).ok_or_else(|| {
        let names: Vec<&str> = ds.schema.fields.iter().map(|f| f.name.as_str()).collect();
        Error::invalid(format!(
            "{}: cannot index '{column}': there is no such column (columns are {})",
            ds.uri(),
            names.join(", ")
        ))
    })?;
    let dt = field.data_type()?;
    let values = match (kind, &dt) {
        (Kind::LabelList, DataType::List(item) | DataType::LargeList(item)) => item.data_type(),
        (Kind::BloomFilter, t) if !crate::index::bloom::supports(t) => {
            return Err(Error::invalid(format!(
                "{}: a BLOOMFILTER index cannot be built on column '{column}' of type {dt}",
                ds.uri()
            )))
        }
        (Kind::NGram, DataType::Utf8 | DataType::LargeUtf8) => &dt,
        (Kind::NGram, _) => {
            return Err(Error::invalid(format!(
                "{}: an NGRAM index needs a string column, and '{column}' is {dt}",
                ds.uri()
            )))
        }
        (Kind::LabelList, _) => {
            return Err(Error::invalid(format!(
                "{}: a LABEL_LIST index needs a list column, and '{column}' is {dt}",
                ds.uri()
            )))
        }
        _ => &dt,
    };
    if !is_scalar(values)
        || field.logical_type == "json"
        || field.is_blob_v1()
        || field.is_blob_v2()
    {
        return Err(Error::invalid(format!(
            "{}: a {kind:?} index cannot be built on column '{column}' of type {dt}",
            ds.uri()
        )));
    }
    Ok((field.id, dt))
}

/// Whether values of this type can be index keys.
fn is_scalar(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Boolean
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::UInt64
            | DataType::Float16
            | DataType::Float32
            | DataType::Float64
            | DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::FixedSizeBinary(_)
            | DataType::Date32
            | DataType::Date64
            | DataType::Timestamp(..)
            | DataType::Time32(_)
            | DataType::Time64(_)
            | DataType::Duration(_)
            | DataType::Decimal128(..)
            | DataType::Decimal256(..)
    )
}

/// The manifest's index entries.
pub(crate) fn index_metadata(ds: &Dataset) -> Result<Vec<IndexMetadata>> {
    let name = ds.storage().display(&ds.location.path);
    Ok(
        crate::table::manifest::index_section(&ds.manifest, &ds.manifest_bytes, &name)?
            .map(|s| s.indices)
            .unwrap_or_default(),
    )
}

fn segments_named(ds: &Dataset, name: &str) -> Result<Vec<IndexMetadata>> {
    Ok(index_metadata(ds)?
        .into_iter()
        .filter(|i| i.name == name)
        .collect())
}

/// The live values of `column` in `fragments`, batch by batch, each with its rows'
/// addresses (or stable row ids).
pub(super) fn column_batches(
    ds: &Arc<Dataset>,
    column: &str,
    by_row_id: bool,
    fragments: &[u64],
) -> Result<futures::stream::BoxStream<'static, Result<(ArrayRef, UInt64Array)>>> {
    column_batches_in(ds, column, by_row_id, fragments, None, 64 * 1024)
}

/// `column_batches` in batches of `batch_size` rows, only physical rows `start..end` of
/// each fragment when `row_range` is given (several workers sharing a large fragment).
pub(super) fn column_batches_in(
    ds: &Arc<Dataset>,
    column: &str,
    by_row_id: bool,
    fragments: &[u64],
    row_range: Option<(u64, u64)>,
    batch_size: usize,
) -> Result<futures::stream::BoxStream<'static, Result<(ArrayRef, UInt64Array)>>> {
    let options = ScanOptions {
        columns: Some(vec![column.to_string()]),
        fragment_ids: Some(fragments.to_vec()),
        row_range,
        with_row_address: !by_row_id,
        with_row_id: by_row_id,
        batch_size,
        ..Default::default()
    };
    let s = scan(ds.clone(), options)?;
    let id_column = if by_row_id { ROW_ID } else { ROW_ADDRESS };
    let uri = ds.uri().to_string();
    Ok(Box::pin(s.batches.map(move |b| {
        let b = b?;
        let ids = b
            .column_by_name(id_column)
            .map(|a| a.as_primitive::<arrow_array::types::UInt64Type>().clone())
            .ok_or_else(|| Error::corrupt(&uri, "internal: the scan returned no row ids"))?;
        Ok((b.column(0).clone(), ids))
    })))
}

/// Every live value of `column` in `fragments`, with its row's address (or stable row
/// id).
async fn read_column(
    ds: &Arc<Dataset>,
    column: &str,
    by_row_id: bool,
    fragments: &[u64],
) -> Result<(ArrayRef, UInt64Array)> {
    let parts: Vec<(ArrayRef, UInt64Array)> = column_batches(ds, column, by_row_id, fragments)?
        .try_collect()
        .await?;
    let values: Vec<&dyn arrow_array::Array> = parts.iter().map(|(v, _)| v.as_ref()).collect();
    let ids: Vec<&dyn arrow_array::Array> = parts
        .iter()
        .map(|(_, i)| i as &dyn arrow_array::Array)
        .collect();
    match parts.is_empty() {
        true => {
            let field = ds.arrow_schema.field_with_name(column)?;
            Ok((
                arrow_array::new_empty_array(field.data_type()),
                UInt64Array::from(Vec::<u64>::new()),
            ))
        }
        false => Ok((
            arrow_select::concat::concat(&values)?,
            arrow_select::concat::concat(&ids)?
                .as_primitive::<arrow_array::types::UInt64Type>()
                .clone(),
        )),
    }
}

/// One file of an index: its name, its rows and the global buffers it keeps beside
/// them (numbered from 1).
pub(super) struct IndexFileData {
    pub name: String,
    pub batch: RecordBatch,
    pub global_buffers: Vec<Vec<u8>>,
}

impl IndexFileData {
    fn new(name: &str, batch: RecordBatch) -> Self {
        IndexFileData {
            name: name.to_string(),
            batch,
            global_buffers: vec![],
        }
    }
}

/// Write each file of an index in its directory; their names and sizes.
pub(super) async fn write_files(
    ds: &Dataset,
    staged: &Staged,
    uuid: &uuid::Uuid,
    files: Vec<IndexFileData>,
) -> Result<Vec<IndexFile>> {
    // Index files follow the table's format; older tables get 2.1 files (lance_core
    // writes no older format, and pylance reads these whatever the table's).
    let version = match ds.data_storage_version().as_str() {
        "0.1" | "2.0" | "2.1" => FileVersion { major: 2, minor: 1 },
        _ => FileVersion { major: 2, minor: 2 },
    };
    let mut out = Vec::with_capacity(files.len());
    for IndexFileData {
        name,
        batch,
        global_buffers,
    } in files
    {
        let schema = LanceSchema::from_arrow(&batch.schema(), 0)?;
        let leaves = super::leaves::leaves(&schema, version.minor >= 2)?;
        let path = ds
            .storage()
            .path(&format!("_indices/{}/{name}", uuid.hyphenated()));
        staged.add(path.clone());
        let mut w =
            DataFileWriter::create_at(ds.storage(), path, name.to_string(), version, &leaves);
        for buffer in global_buffers {
            w.add_global_buffer(buffer).await?;
        }
        let mut at = 0;
        while at < batch.num_rows() {
            let n = (batch.num_rows() - at).min(64 * 1024);
            w.write(&batch.slice(at, n)).await?;
            at += n;
        }
        let file = w.finish(&schema).await?;
        out.push(IndexFile {
            path: name.to_string(),
            size_bytes: file.file_size_bytes,
        });
    }
    Ok(out)
}

// Builds spread over many workers (Spark): the driver checks and plans, each worker
// builds one segment over its fragments (`build_index_segment`), the driver commits them
// all at once (`commit_index_segments`).

/// What a segment of index `name` is built with: the column, its field and type, the kind
/// and its page or zone settings.
#[derive(Clone, Debug)]
pub struct SegmentSpec {
    pub name: String,
    pub column: String,
    pub field_id: i32,
    pub data_type: DataType,
    pub kind: Kind,
    /// BTREE: rows per page; ZONEMAP, BLOOMFILTER: rows per zone.
    pub page_rows: u64,
    /// BLOOMFILTER: the chance of a false match per zone filter.
    pub probability: f64,
}

impl SegmentSpec {
    /// A new index per `params` on `column` of `ds`, checked before any row is read: the
    /// column exists and `kind` can index its type. The name is not checked here
    /// (`replaced_segments` does).
    pub fn new(ds: &Dataset, column: &str, params: &ScalarIndexParams) -> Result<SegmentSpec> {
        let (field_id, data_type) = indexable(ds, column, params.kind)?;
        let page_rows = params.page_rows.unwrap_or(match params.kind {
            Kind::ZoneMap => crate::index::zonemap::DEFAULT_ROWS_PER_ZONE,
            Kind::BloomFilter => crate::index::bloom::DEFAULT_ITEMS,
            _ => BTREE_PAGE_ROWS,
        });
        Ok(SegmentSpec {
            name: params
                .name
                .clone()
                .unwrap_or_else(|| format!("{column}_idx")),
            column: column.to_string(),
            field_id,
            data_type,
            kind: params.kind,
            page_rows,
            probability: params
                .probability
                .unwrap_or(crate::index::bloom::DEFAULT_PROBABILITY),
        })
    }

    /// The existing index `name`: its column and kind, and its segments' page or zone
    /// settings (a new segment is built as the others were).
    pub async fn of_index(ds: &Dataset, name: &str) -> Result<SegmentSpec> {
        let all = index_metadata(ds)?;
        let first = all.iter().find(|m| m.name == name).ok_or_else(|| {
            Error::not_found(ds.uri(), format!("there is no index named '{name}'"))
        })?;
        existing_spec(ds, first).await?.ok_or_else(|| {
            Error::unsupported(
                ds.uri(),
                format!(
                    "index '{name}' is of a kind lance_core does not build, or its column is gone"
                ),
            )
        })
    }
}

/// The spec of the index `first` is a segment of; None when lance_core does not build its
/// kind or its column is gone.
async fn existing_spec(ds: &Dataset, first: &IndexMetadata) -> Result<Option<SegmentSpec>> {
    let name = first.name.as_str();
    let (Some(kind), [field_id]) = (Kind::of_metadata(first), first.fields.as_slice()) else {
        return Ok(None);
    };
    let Some(column) = ds
        .schema
        .path_of(*field_id)
        .filter(|p| ds.schema.field(p).is_some())
    else {
        return Ok(None);
    };
    let data_type = ds.schema.field(&column).expect("checked").data_type()?;
    let listed = ds.index_segments()?;
    let segment = listed.iter().find(|s| s.name == name);
    let mut probability = crate::index::bloom::DEFAULT_PROBABILITY;
    let page_rows = match (kind, segment) {
        (Kind::BTree, Some(s)) => crate::index::btree::BTree::load(ds, s).await?.page_rows(),
        (Kind::ZoneMap, Some(s)) => crate::index::zonemap::ZoneMap::load(ds, s)
            .await?
            .rows_per_zone(),
        (Kind::BloomFilter, Some(s)) => {
            let b = crate::index::bloom::BloomFilter::load(ds, s).await?;
            probability = b.probability();
            b.items()
        }
        (Kind::ZoneMap, None) => crate::index::zonemap::DEFAULT_ROWS_PER_ZONE,
        (Kind::BloomFilter, None) => crate::index::bloom::DEFAULT_ITEMS,
        _ => BTREE_PAGE_ROWS,
    };
    Ok(Some(SegmentSpec {
        name: name.to_string(),
        column,
        field_id: *field_id,
        data_type,
        kind,
        page_rows,
        probability,
    }))
}

/// An index with fragments none of its segments covers, and those fragments.
#[derive(Clone, Debug)]
pub struct IndexDelta {
    pub spec: SegmentSpec,
    pub fragments: Vec<u64>,
}

/// The indices of `ds` (those named in `names`, else all) that do not cover every
/// fragment, with the fragments they miss; indices lance_core does not build, or whose
/// column is gone, are left out.
pub async fn index_deltas(ds: &Dataset, names: Option<&[String]>) -> Result<Vec<IndexDelta>> {
    let mut out = Vec::new();
    for (segments, missing) in uncovered(ds, names)? {
        if let Some(spec) = existing_spec(ds, &segments[0]).await? {
            out.push(IndexDelta {
                spec,
                fragments: missing,
            });
        }
    }
    Ok(out)
}

/// The indices of `ds` (those named in `names`, else all; each as its segments) that do
/// not cover every fragment, with the fragments they miss.
fn uncovered(
    ds: &Dataset,
    names: Option<&[String]>,
) -> Result<Vec<(Vec<IndexMetadata>, Vec<u64>)>> {
    let all = index_metadata(ds)?;
    let mut seen: Vec<&str> = Vec::new();
    for m in &all {
        if !seen.contains(&m.name.as_str()) && names.is_none_or(|n| n.contains(&m.name)) {
            seen.push(&m.name);
        }
    }
    let mut out = Vec::new();
    for name in seen {
        let segments: Vec<IndexMetadata> = all.iter().filter(|m| m.name == name).cloned().collect();
        let mut covered = roaring::RoaringBitmap::new();
        for m in &segments {
            if let Ok(b) = roaring::RoaringBitmap::deserialize_from(&m.fragment_bitmap[..]) {
                covered |= b;
            }
        }
        let missing: Vec<u64> = ds
            .fragments()
            .iter()
            .map(|f| f.id)
            .filter(|&f| !covered.contains(f as u32))
            .collect();
        if !missing.is_empty() {
            out.push((segments, missing));
        }
    }
    Ok(out)
}

/// The segments a new build of index `name` replaces: none when there is no such index;
/// when there is one, all of its segments if `replace`, else an error naming it.
pub fn replaced_segments(ds: &Dataset, name: &str, replace: bool) -> Result<Vec<IndexMetadata>> {
    let removed = segments_named(ds, name)?;
    if !removed.is_empty() && !replace {
        return Err(Error::invalid(format!(
            "{}: an index named '{name}' already exists (replace=True replaces it)",
            ds.uri()
        )));
    }
    Ok(removed)
}

/// Build one segment of an index per `spec` over `fragments` of `ds` (at its version),
/// without committing it: its files written under `_indices/<uuid>/` (`uuid` when given,
/// so that the job running the build can find and remove them if it fails), and removed
/// again if the build fails; its manifest entry returned, for `commit_index_segments`.
pub async fn build_index_segment(
    ds: &Dataset,
    spec: &SegmentSpec,
    fragments: &[u64],
    uuid: Option<&str>,
) -> Result<IndexMetadata> {
    let uuid = uuid
        .map(|u| {
            uuid::Uuid::parse_str(u).map_err(|_| {
                Error::invalid(format!(
                    "{}: '{u}' is not a uuid (a segment's files go under _indices/<uuid>/)",
                    ds.uri()
                ))
            })
        })
        .transpose()?;
    let known: std::collections::HashSet<u64> = ds.fragments().iter().map(|f| f.id).collect();
    if let Some(f) = fragments.iter().find(|f| !known.contains(f)) {
        return Err(Error::invalid(format!(
            "{}: cannot build a segment of index '{}' over fragment {f}: version {} has no such fragment",
            ds.uri(),
            spec.name,
            ds.version()
        )));
    }
    let mut fragments = fragments.to_vec();
    fragments.sort_unstable();
    fragments.dedup();
    let ds = Arc::new(ds.clone());
    let staged = Staged::new(ds.storage());
    let segment = staged
        .guard(build_segment(&ds, &staged, spec, Some(fragments), uuid))
        .await?;
    // The files are the caller's now: it commits them, or removes them.
    staged.keep();
    Ok(segment)
}

/// What `commit_index_segments` commits.
#[derive(Clone, Copy, Debug)]
pub enum SegmentsCommit<'a> {
    /// Every segment of a new build of index `name`: they replace the index's segments
    /// when `replace`, else the index must not exist yet.
    Build { name: &'a str, replace: bool },
    /// New segments of existing indices (one or more), over fragments their other
    /// segments do not cover (an incremental build).
    Extend,
}

/// Commit `segments` (built by `build_index_segment` from `ds`'s version) as one
/// `CreateIndex` on top of `ds`. Each segment must have been built at `ds`'s version, over
/// fragments of that version that no other segment of its index covers; commits since
/// then are checked by the usual conflict rules (a compaction or update that moved the
/// indexed rows makes this fail: the segments must be built again). Extending with no
/// segment commits nothing.
pub async fn commit_index_segments(
    ds: &Dataset,
    segments: Vec<IndexMetadata>,
    how: SegmentsCommit<'_>,
) -> Result<Dataset> {
    let uri = ds.uri();
    let existing = index_metadata(ds)?;
    let removed = match how {
        SegmentsCommit::Build { name, replace } => {
            if segments.is_empty() {
                return Err(Error::invalid(format!(
                    "{uri}: index '{name}' has no segment to commit"
                )));
            }
            if let Some(s) = segments.iter().find(|s| s.name != name) {
                return Err(Error::invalid(format!(
                    "{uri}: a segment of index '{}' cannot be committed as part of index '{name}'",
                    s.name
                )));
            }
            replaced_segments(ds, name, replace)?
        }
        SegmentsCommit::Extend if segments.is_empty() => return Ok(ds.clone()),
        SegmentsCommit::Extend => vec![],
    };
    let live: roaring::RoaringBitmap = ds.fragments().iter().map(|f| f.id as u32).collect();
    // The fragments each index covers once this commits, to find a fragment indexed twice.
    let mut covered: std::collections::HashMap<&str, roaring::RoaringBitmap> = Default::default();
    for m in existing
        .iter()
        .filter(|m| !removed.iter().any(|r| r.uuid == m.uuid))
    {
        if let Ok(b) = roaring::RoaringBitmap::deserialize_from(&m.fragment_bitmap[..]) {
            *covered.entry(m.name.as_str()).or_default() |= b;
        }
    }
    for s in &segments {
        let name = &s.name;
        if s.dataset_version != ds.version() {
            return Err(Error::invalid(format!(
                "{uri}: a segment of index '{name}' was built at version {}, not at version {} it is committed on",
                s.dataset_version,
                ds.version()
            )));
        }
        if let SegmentsCommit::Extend = how {
            match existing.iter().find(|m| &m.name == name) {
                None => {
                    return Err(Error::invalid(format!(
                        "{uri}: cannot add a segment to index '{name}': there is no such index"
                    )))
                }
                Some(m) if m.fields != s.fields || Kind::of_metadata(m) != Kind::of_metadata(s) => {
                    return Err(Error::invalid(format!(
                        "{uri}: a new segment of index '{name}' indexes other fields or another kind than its segments"
                    )))
                }
                Some(_) => {}
            }
        }
        let bitmap =
            roaring::RoaringBitmap::deserialize_from(&s.fragment_bitmap[..]).map_err(|e| {
                Error::invalid(format!(
                    "{uri}: a segment of index '{name}' has an unreadable fragment bitmap: {e}"
                ))
            })?;
        if let Some(f) = (&bitmap - &live).min() {
            return Err(Error::invalid(format!(
                "{uri}: a segment of index '{name}' covers fragment {f}, which version {} does not have",
                ds.version()
            )));
        }
        let seen = covered.entry(name.as_str()).or_default();
        if let Some(f) = (&*seen & &bitmap).min() {
            return Err(Error::invalid(format!(
                "{uri}: fragment {f} would be indexed by two segments of index '{name}'"
            )));
        }
        *seen |= bitmap;
    }
    let names: Vec<String> =
        segments
            .iter()
            .map(|s| s.name.clone())
            .fold(Vec::new(), |mut v, n| {
                if !v.contains(&n) {
                    v.push(n);
                }
                v
            });
    let op = Operation::CreateIndex {
        new_indices: segments,
        removed_indices: removed,
    };
    // The segments' files are their builders': the commit removes none of them.
    commit(
        ReadFrom::Version(ds),
        op,
        Staged::new(ds.storage()),
        Default::default(),
    )
    .await
    .map_err(|e| match e {
        Error::Conflict(m) => Error::Conflict(format!(
            "index {} not committed (build it again): {m}",
            names.join(", ")
        )),
        e => e,
    })
}
