//! Building scalar indices, keeping them up to date and dropping them: the indexed column
//! is read with each row's address (or stable row id, where the kind keeps those), the
//! kind builds the files (`index::ScalarIndexKind`), they are written under
//! `_indices/<uuid>/` (`index_files`), and a `CreateIndex` transaction adds the segment
//! (and removes the ones it replaces). Nothing here depends on the kind.
use std::sync::Arc;

use arrow_schema::DataType;

use super::commit::{commit, ReadFrom};
pub use super::index_files::replaced_segments;
use super::index_files::{index_metadata, read_column, segment_entry, segments_named, write_files};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::index::{kind_of, kind_of_metadata, BuildParams, Kind};
use crate::proto::table::{IndexMetadata, Uuid};
use crate::table::transaction::{Operation, Staged};

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
        params,
    } = spec;
    let index_version = kind.version_written(ds.has_stable_row_ids());
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
    let files = kind.build(&values, &ids, params)?;
    let uuid = uuid.unwrap_or_else(uuid::Uuid::new_v4);
    let written = write_files(ds, staged, &uuid, files).await?;
    let details = prost_types::Any {
        type_url: kind.type_url().to_string(),
        value: kind.details(data_type, params),
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
    let (holds_row_ids, remappable) = match kind_of(segment) {
        Some(kind) => (kind.holds_row_ids(segment.index_version), kind.remaps()),
        // Every vector index holds row ids; those lance_core builds it can rewrite.
        None => (
            segment.type_url.ends_with("VectorIndexDetails"),
            crate::vector::vector_kind_of(segment).is_some_and(|k| k.builds()),
        ),
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
    let segment = crate::table::index_segments::segment(meta)?;
    let uuid = uuid::Uuid::new_v4();
    let new_index_files = match kind_of(&segment) {
        Some(kind) => match kind.remap(ds, &segment, map).await? {
            Some(files) => write_files(ds, staged, &uuid, files).await?,
            None => return Ok(None),
        },
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
    let values = kind
        .keyed_type(column, &dt)
        .map_err(|reason| Error::invalid(format!("{}: {reason}", ds.uri())))?;
    if !is_scalar(values)
        || field.logical_type == "json"
        || field.is_blob_v1()
        || field.is_blob_v2()
    {
        return Err(Error::invalid(format!(
            "{}: a {} index cannot be built on column '{column}' of type {dt}",
            ds.uri(),
            kind.name()
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
    /// Rows per page or zone, and a Bloom filter's chance of a false match.
    pub params: BuildParams,
}

impl SegmentSpec {
    /// A new index per `params` on `column` of `ds`, checked before any row is read: the
    /// column exists and `kind` can index its type. The name is not checked here
    /// (`replaced_segments` does).
    pub fn new(ds: &Dataset, column: &str, params: &ScalarIndexParams) -> Result<SegmentSpec> {
        let (field_id, data_type) = indexable(ds, column, params.kind)?;
        if params.page_rows == Some(0) {
            return Err(Error::invalid(format!(
                "{}: a {} page or zone must hold at least one row",
                ds.uri(),
                params.kind.name()
            )));
        }
        let defaults = params.kind.default_params();
        let build = BuildParams {
            page_rows: params.page_rows.unwrap_or(defaults.page_rows),
            probability: params.probability.unwrap_or(defaults.probability),
        };
        Ok(SegmentSpec {
            name: params
                .name
                .clone()
                .unwrap_or_else(|| format!("{column}_idx")),
            column: column.to_string(),
            field_id,
            data_type,
            kind: params.kind,
            params: build,
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
    let (Some(kind), [field_id]) = (kind_of_metadata(first), first.fields.as_slice()) else {
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
    let params = match segment {
        Some(s) => kind.params_of(ds, s).await?,
        None => kind.default_params(),
    };
    Ok(Some(SegmentSpec {
        name: name.to_string(),
        column,
        field_id: *field_id,
        data_type,
        kind,
        params,
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
                Some(m) if m.fields != s.fields || kind_name(m) != kind_name(s) => {
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

/// The name of a manifest entry's kind, when lance_core knows it.
fn kind_name(m: &IndexMetadata) -> Option<&'static str> {
    kind_of_metadata(m).map(|k| k.name())
}
