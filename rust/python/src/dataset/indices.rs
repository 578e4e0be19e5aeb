//! `_Dataset`'s indices: scalar and vector builds (whole, or by segment for Spark),
//! statistics, optimize and drop.

use lance_core::vector::registry::scalar_kind_to_build;
use lance_core::write::vector_index;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::{dataset_of, PyDataset};
use crate::errors::{guard, IntoPyResult};
use crate::ivf_params::PyIvfParams;
use crate::runtime::block_on;

/// A vector index as a plan names it: name, kind, metric, segment uuids.
type VectorIndexPlan = (String, String, String, Vec<String>);

#[pymethods]
impl PyDataset {
    /// Which family of index the kind a user names (any case) is: "scalar", "vector", or
    /// None when lance_core knows no such kind; and whether lance_core builds it. The one
    /// lookup `create_index` and the Spark builds route a name by.
    #[staticmethod]
    fn index_kind(index_type: &str) -> Option<(&'static str, &'static str, bool)> {
        use lance_core::vector::registry::{kind_from_user, IndexKind};
        kind_from_user(index_type).map(|k| match k {
            IndexKind::Scalar(_) => ("scalar", k.user_name(), k.builds()),
            IndexKind::Vector(_) => ("vector", k.user_name(), k.builds()),
        })
    }

    /// The index segments the manifest lists, one dict each (see `table::index_segments::IndexSegment`).
    fn index_segments<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        guard(|| {
            let ds = &self.inner;
            let name = ds.storage().display(&ds.location.path);
            let all = lance_core::table::index_segments::segments(
                &ds.manifest,
                &ds.manifest_bytes,
                &name,
            )
            .py()?;
            all.iter()
                .map(|s| {
                    let d = PyDict::new(py);
                    d.set_item("name", &s.name)?;
                    d.set_item("uuid", &s.uuid)?;
                    d.set_item("type", &s.kind)?;
                    d.set_item("type_url", &s.type_url)?;
                    d.set_item("fields", &s.fields)?;
                    let names: Vec<Option<String>> =
                        s.fields.iter().map(|&id| ds.schema.path_of(id)).collect();
                    d.set_item("field_names", names)?;
                    d.set_item("dataset_version", s.dataset_version)?;
                    let ids = s.fragments.as_ref().map(|f| f.iter().collect::<Vec<u32>>());
                    d.set_item("fragment_ids", ids)?;
                    let live: Vec<u32> = s.live_fragments(ds.fragments()).iter().collect();
                    d.set_item("live_fragment_ids", live)?;
                    d.set_item("index_version", s.index_version)?;
                    d.set_item("created_at_ms", s.created_at_ms)?;
                    d.set_item("base_id", s.base_id)?;
                    d.set_item("files", &s.files)?;
                    Ok(d)
                })
                .collect()
        })
    }

    /// Build a scalar index (BTREE, BITMAP, LABEL_LIST, ZONEMAP, BLOOMFILTER, NGRAM) on
    /// `column` and commit it.
    #[pyo3(signature = (column, index_type, name=None, replace=true, page_rows=None, retries=10, probability=None))]
    #[allow(clippy::too_many_arguments)]
    fn create_scalar_index(
        &self,
        py: Python<'_>,
        column: String,
        index_type: String,
        name: Option<String>,
        replace: bool,
        page_rows: Option<u64>,
        retries: u32,
        probability: Option<f64>,
    ) -> PyResult<Self> {
        guard(|| {
            let kind = scalar_kind_to_build(self.inner.uri(), &index_type).py()?;
            let params = lance_core::write::index::ScalarIndexParams {
                kind,
                name,
                replace,
                page_rows,
                probability,
            };
            dataset_of(
                py,
                lance_core::write::index::create_scalar_index(
                    &self.inner,
                    &column,
                    &params,
                    retries,
                ),
            )
        })
    }

    /// Build an IVF vector index (IVF_FLAT, IVF_PQ, IVF_SQ) on `column` and commit it.
    #[pyo3(signature = (column, name, replace, params, retries=10))]
    fn create_vector_index(
        &self,
        py: Python<'_>,
        column: String,
        name: Option<String>,
        replace: bool,
        params: PyIvfParams,
        retries: u32,
    ) -> PyResult<Self> {
        guard(|| {
            let params = params.into_params(self.inner.uri())?;
            dataset_of(
                py,
                vector_index::create_vector_index(
                    &self.inner,
                    &column,
                    name.as_deref(),
                    replace,
                    &params,
                    retries,
                ),
            )
        })
    }

    /// A vector index built on many workers, first step (the driver): train the model
    /// and write it under `_indices/<uuid>/`, uncommitted.
    fn stage_vector_model(
        &self,
        py: Python<'_>,
        column: String,
        params: PyIvfParams,
        uuid: String,
    ) -> PyResult<()> {
        guard(|| {
            let params = params.into_params(self.inner.uri())?;
            block_on(
                py,
                vector_index::stage_model(&self.inner, &column, &params, &uuid),
            )
            .py()
        })
    }

    /// Second step (a task): encode the vectors of `fragments` (physical rows
    /// `row_range` of each, when given) with the staged model, written beside it as part
    /// `part`.
    #[pyo3(signature = (column, uuid, fragments, row_range, part))]
    fn encode_vector_part(
        &self,
        py: Python<'_>,
        column: String,
        uuid: String,
        fragments: Vec<u64>,
        row_range: Option<(u64, u64)>,
        part: u32,
    ) -> PyResult<()> {
        guard(|| {
            block_on(
                py,
                vector_index::encode_part(&self.inner, &column, &uuid, &fragments, row_range, part),
            )
            .py()
        })
    }

    /// Last step (the driver): join the staged model and its `parts` into one segment
    /// of index `name`, and commit it.
    #[allow(clippy::too_many_arguments)]
    fn commit_vector_index(
        &self,
        py: Python<'_>,
        column: String,
        name: Option<String>,
        replace: bool,
        params: PyIvfParams,
        uuid: String,
        parts: u32,
    ) -> PyResult<Self> {
        guard(|| {
            let params = params.into_params(self.inner.uri())?;
            dataset_of(
                py,
                vector_index::commit_staged(
                    &self.inner,
                    &column,
                    name.as_deref(),
                    replace,
                    &params,
                    &uuid,
                    parts,
                ),
            )
        })
    }

    /// pylance's statistics of index `name`, as JSON text.
    fn index_statistics(&self, py: Python<'_>, name: String) -> PyResult<String> {
        guard(|| {
            let ds = self.inner.clone();
            let v = block_on(py, async move {
                lance_core::vector::stats::index_statistics(&ds, &name).await
            })
            .py()?;
            Ok(v.to_string())
        })
    }

    /// The live rows each index segment covers, in `index_segments` order.
    fn index_rows_covered(&self, py: Python<'_>) -> PyResult<Vec<u64>> {
        guard(|| {
            let ds = self.inner.clone();
            block_on(py, async move {
                let mut out = Vec::new();
                for s in ds.index_segments()?.iter() {
                    out.push(lance_core::index::stats::rows_covered(&ds, s).await?);
                }
                Ok(out)
            })
            .py()
        })
    }

    /// Index the fragments added since each index was built (see
    /// `write::index::optimize_indices`).
    #[pyo3(signature = (names, merge))]
    fn optimize_indices(
        &self,
        py: Python<'_>,
        names: Option<Vec<String>>,
        merge: bool,
    ) -> PyResult<Self> {
        guard(|| {
            dataset_of(
                py,
                lance_core::write::index::optimize_indices(&self.inner, names.as_deref(), merge),
            )
        })
    }

    /// Remove index `name` from the table.
    fn drop_index(&self, py: Python<'_>, name: String) -> PyResult<Self> {
        guard(|| dataset_of(py, lance_core::write::index::drop_index(&self.inner, &name)))
    }

    /// The vector index a `nearest` search would go through, for plans: its name, kind,
    /// metric and segment uuids (None: the search is exhaustive).
    fn vector_index_for(
        &self,
        py: Python<'_>,
        nearest: crate::nearest::PyNearest,
    ) -> PyResult<Option<VectorIndexPlan>> {
        guard(|| {
            let nearest = nearest.into_query()?;
            let ds = self.inner.clone();
            let found = block_on(py, async move {
                lance_core::vector::indexed::usable(&ds, &nearest).await
            })
            .py()?;
            Ok(found.map(|(segments, metric)| {
                let (first, ivf) = &segments[0];
                (
                    first.name.clone(),
                    ivf.kind.name().to_string(),
                    metric.name().to_string(),
                    segments.iter().map(|(s, _)| s.uuid.clone()).collect(),
                )
            }))
        })
    }

    /// Build one segment of a new index (as `create_scalar_index` names and sets it up)
    /// over `fragment_ids` without committing it, its files under `_indices/<index_uuid>/`
    /// (a new uuid when None). Returns its manifest entry (IndexMetadata protobuf bytes)
    /// for `commit_index_segments`.
    #[pyo3(signature = (column, index_type, name, fragment_ids, page_rows=None, probability=None, index_uuid=None))]
    #[allow(clippy::too_many_arguments)]
    fn build_index_segment(
        &self,
        py: Python<'_>,
        column: String,
        index_type: String,
        name: Option<String>,
        fragment_ids: Vec<u64>,
        page_rows: Option<u64>,
        probability: Option<f64>,
        index_uuid: Option<String>,
    ) -> PyResult<Vec<u8>> {
        use lance_core::write::index::{build_index_segment, ScalarIndexParams, SegmentSpec};
        use prost::Message;
        guard(|| {
            let params = ScalarIndexParams {
                kind: scalar_kind_to_build(self.inner.uri(), &index_type).py()?,
                name,
                replace: true,
                page_rows,
                probability,
            };
            let ds = self.inner.clone();
            let segment = block_on(py, async move {
                let spec = SegmentSpec::new(&ds, &column, &params)?;
                build_index_segment(&ds, &spec, &fragment_ids, index_uuid.as_deref()).await
            })
            .py()?;
            Ok(segment.encode_to_vec())
        })
    }

    /// Check that an index of `index_type` can be built on `column` and that `name` (or
    /// `<column>_idx`) is free unless `replace`; returns the name. Reads no row.
    #[pyo3(signature = (column, index_type, name=None, replace=true))]
    fn check_new_index(
        &self,
        column: String,
        index_type: String,
        name: Option<String>,
        replace: bool,
    ) -> PyResult<String> {
        use lance_core::write::index::{replaced_segments, ScalarIndexParams, SegmentSpec};
        guard(|| {
            let params = ScalarIndexParams {
                kind: scalar_kind_to_build(self.inner.uri(), &index_type).py()?,
                name,
                replace,
                page_rows: None,
                probability: None,
            };
            let spec = SegmentSpec::new(&self.inner, &column, &params).py()?;
            replaced_segments(&self.inner, &spec.name, replace).py()?;
            Ok(spec.name)
        })
    }

    /// The indices (those in `names`, else all) that miss fragments: (name, fragment ids).
    #[pyo3(signature = (names=None))]
    fn index_deltas(
        &self,
        py: Python<'_>,
        names: Option<Vec<String>>,
    ) -> PyResult<Vec<(String, Vec<u64>)>> {
        guard(|| {
            let ds = self.inner.clone();
            let deltas = block_on(py, async move {
                lance_core::write::index::index_deltas(&ds, names.as_deref()).await
            })
            .py()?;
            Ok(deltas
                .into_iter()
                .map(|d| (d.spec.name, d.fragments))
                .collect())
        })
    }

    /// Build a new segment of the existing index `name` over `fragment_ids` (set up as its
    /// other segments), without committing it; as `build_index_segment`.
    #[pyo3(signature = (name, fragment_ids, index_uuid=None))]
    fn build_index_delta(
        &self,
        py: Python<'_>,
        name: String,
        fragment_ids: Vec<u64>,
        index_uuid: Option<String>,
    ) -> PyResult<Vec<u8>> {
        use lance_core::write::index::{build_index_segment, SegmentSpec};
        use prost::Message;
        guard(|| {
            let ds = self.inner.clone();
            let segment = block_on(py, async move {
                let spec = SegmentSpec::of_index(&ds, &name).await?;
                build_index_segment(&ds, &spec, &fragment_ids, index_uuid.as_deref()).await
            })
            .py()?;
            Ok(segment.encode_to_vec())
        })
    }

    /// Commit index segments built from this version (IndexMetadata protobuf bytes) in one
    /// new version: with `name`, every segment of a new build of that index (replacing it
    /// when `replace`); without, new segments of existing indices.
    #[pyo3(signature = (segments, name=None, replace=true))]
    fn commit_index_segments(
        &self,
        py: Python<'_>,
        segments: Vec<Vec<u8>>,
        name: Option<String>,
        replace: bool,
    ) -> PyResult<Self> {
        use lance_core::write::index::{commit_index_segments, SegmentsCommit};
        use prost::Message;
        guard(|| {
            let segments = segments
                .iter()
                .map(|b| lance_core::proto::table::IndexMetadata::decode(b.as_slice()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| {
                    lance_core::Error::invalid(format!(
                        "{}: bad index segment metadata: {e}",
                        self.inner.uri()
                    ))
                })
                .py()?;
            let how = match &name {
                Some(name) => SegmentsCommit::Build { name, replace },
                None => SegmentsCommit::Extend,
            };
            dataset_of(py, commit_index_segments(&self.inner, segments, how))
        })
    }
}
