//! What a vector index kind is to the rest of lance_core. Every kind pylance writes is IVF:
//! partitions found by k-means (`build`, `ivf`: the same for all kinds), whose rows are
//! stored in a form that differs by kind — the vectors themselves (FLAT), product
//! quantization codes (PQ) or 8-bit scalar codes (SQ), and for the HNSW kinds a graph
//! over them as well. That form is behind two traits:
//!
//! - `VectorIndexKind`, one unit struct per kind in its own file (`flat.rs`, `pq.rs`,
//!   `sq.rs`; `hnsw.rs` for the graph kinds, which lance_core reads but does not build),
//!   listed by the registry (`super::registry`): its name, the column its segments store
//!   rows in, its parameters and their checks, how its quantizer is trained and read back;
//! - `Quantizer`, a trained quantizer (a new build's, or an existing segment's): how a row
//!   is encoded, how its column is laid out in the auxiliary file, how far stored rows
//!   are from a query, what statistics show of it.
//!
//! So the builders (`build`, `crate::write::vector_index`), the search (`ivf`,
//! `indexed`), compaction, optimize and statistics never match on a kind.
use std::any::Any;
use std::fmt::Debug;
use std::sync::Arc;

use arrow_array::{Array, FixedSizeListArray, UInt8Array};
use arrow_schema::DataType;
use futures::future::BoxFuture;
use serde_json::{Map, Value};

use super::distance::Metric;
use super::encoded::Encoded;
use super::kmeans::Rng;
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::proto::index::vector_index_details::Compression;

/// What an IVF index is built with (pylance's `create_index` arguments).
#[derive(Clone, Debug)]
pub struct IvfParams {
    pub kind: VectorKind,
    pub metric: Metric,
    pub num_partitions: Option<usize>,
    pub target_partition_size: Option<usize>,
    /// PQ: sub-vectors per vector, and bits per code.
    pub num_sub_vectors: Option<usize>,
    pub num_bits: u32,
    pub sample_rate: usize,
    pub max_iters: usize,
    pub seed: u64,
}

impl IvfParams {
    /// A build of `kind` by `metric` with pylance's defaults for the rest.
    pub fn new(kind: VectorKind, metric: Metric) -> IvfParams {
        IvfParams {
            kind,
            metric,
            num_partitions: None,
            target_partition_size: None,
            num_sub_vectors: None,
            num_bits: 8,
            sample_rate: 256,
            max_iters: 50,
            seed: 0,
        }
    }
}

impl PartialEq for IvfParams {
    fn eq(&self, o: &IvfParams) -> bool {
        self.kind.name() == o.kind.name()
            && (self.metric, self.num_partitions, self.target_partition_size)
                == (o.metric, o.num_partitions, o.target_partition_size)
            && (self.num_sub_vectors, self.num_bits) == (o.num_sub_vectors, o.num_bits)
            && (self.sample_rate, self.max_iters, self.seed) == (o.sample_rate, o.max_iters, o.seed)
    }
}

/// A kind of vector index.
pub type VectorKind = &'static dyn VectorIndexKind;

/// One kind of vector index.
pub trait VectorIndexKind: Send + Sync + Debug {
    /// pylance's name for it ("IVF_PQ"): what users give `create_index`, what the
    /// manifest's details make of it (`IndexSegment::kind`) and what `index.idx` records.
    fn name(&self) -> &'static str;

    /// What pylance's statistics call its sub-index ("PQ"; "HNSW" for the graph kinds).
    fn sub_index(&self) -> &'static str;

    /// The column of the auxiliary file holding each row's stored vector.
    fn stored_column(&self) -> &'static str;

    /// The quantizer of a segment, read from its auxiliary file.
    fn load<'a>(&'a self, file: StoredFile<'a>) -> BoxFuture<'a, Result<Arc<dyn Quantizer>>>;

    /// Whether lance_core builds segments of this kind, and so can encode more rows with an
    /// existing segment's quantizer (optimize, a compaction's remap).
    fn builds(&self) -> bool {
        true
    }

    /// Rows per partition aimed at when the number of partitions is not given.
    fn target_partition_size(&self) -> usize {
        8192
    }

    /// Why a build with `params` on vectors of `dim` dimensions cannot be made (checked
    /// before any row is read).
    fn check(&self, _params: &IvfParams, _dim: usize) -> std::result::Result<(), String> {
        Ok(())
    }

    /// How many rows its quantizer is trained on (the sample also trains the partitions).
    fn sample_size(&self, _params: &IvfParams) -> usize {
        0
    }

    /// Its quantizer trained on `sample` (rows of `dim` values, unit length for cosine),
    /// given the partitions' `centroids`.
    fn train(
        &self,
        sample: &[f32],
        dim: usize,
        centroids: &[f32],
        params: &IvfParams,
        rng: &mut Rng,
    ) -> Result<Arc<dyn Quantizer>>;

    /// The training settings pylance records in the details' runtime hints besides the
    /// partitions' (`lance.ivf.*`).
    fn runtime_hints(&self, _params: &IvfParams) -> Vec<(&'static str, String)> {
        vec![]
    }

    /// The `sub_index` of a segment's statistics, given its quantizer, metric and the
    /// schema metadata of its `index.idx`.
    fn sub_index_statistics(
        &self,
        quantizer: &dyn Quantizer,
        metric: Metric,
        _index_metadata: &arrow_schema::Metadata,
    ) -> Value {
        let mut out = quantizer.statistics();
        out.insert("index_type".into(), self.sub_index().into());
        out.insert("metric_type".into(), metric.name().into());
        Value::Object(out)
    }
}

/// A segment's auxiliary file, as a kind reads its quantizer from it.
pub struct StoredFile<'a> {
    /// The file, as a table of one fragment.
    pub file: &'a Dataset,
    /// The first entry of its `storage_metadata` (`{}` when there is none).
    pub metadata: &'a Value,
    /// The dimension of the index's vectors.
    pub dim: usize,
    /// The file's path, for errors.
    pub shown: &'a str,
}

impl StoredFile<'_> {
    /// Global buffer `k` of the file.
    pub async fn global_buffer(&self, k: usize) -> Result<bytes::Bytes> {
        crate::file_table::reader(self.file)
            .await?
            .global_buffer(k)
            .await
            .map_err(|e| e.in_file(self.shown))
    }
}

/// Where the rows of a segment go in its auxiliary file: grouped by partition, row ids
/// ascending within one.
pub struct Layout<'a> {
    /// The encoded rows' indices, in the order they are written.
    pub order: &'a [usize],
    /// Each encoded row's partition.
    pub partitions: &'a [u32],
    /// Each partition's first row and number of rows in the file.
    pub offsets: &'a [u64],
    pub lengths: &'a [u32],
}

/// A quantizer's column of the auxiliary file, and what the file says about it.
pub struct StoredRows {
    /// One fixed-size list per row, in the layout's order.
    pub column: FixedSizeListArray,
    /// Its `storage_metadata` entry.
    pub metadata: Value,
    /// Global buffers it needs after the partitions' `IVF` message (numbered from 2).
    pub buffers: Vec<Vec<u8>>,
    /// How the manifest's details describe it.
    pub compression: Compression,
}

/// A trained quantizer: a new build's, or an existing segment's read back.
pub trait Quantizer: Send + Sync + Debug {
    /// Bytes of code per row of `dim` values; 0 when rows are kept as their values.
    fn code_width(&self, dim: usize) -> usize;

    /// The codes of `rows` (`dim` values each, unit length for cosine), `code_width`
    /// bytes a row, given each row's partition and the partitions' centroids.
    fn encode(
        &self,
        rows: &[f32],
        dim: usize,
        partitions: &[u32],
        centroids: &[f32],
        metric: Metric,
    ) -> Vec<u8>;

    /// The auxiliary file's column for the rows `encoded` holds, laid out by `layout`, for
    /// a vector column of `element` values.
    fn stored(
        &self,
        encoded: &Encoded,
        dim: usize,
        layout: &Layout,
        element: &DataType,
    ) -> Result<StoredRows>;

    /// The rows of one partition as read from the auxiliary file (`vectors`), appended to
    /// `out` as `encode` gave them (codes, or values for FLAT).
    fn read_back(&self, vectors: &FixedSizeListArray, shown: &str, out: &mut Encoded)
        -> Result<()>;

    /// The index's distance from `q` (the query, unit length for cosine) to every stored
    /// vector of a partition whose centroid is `centroid`.
    fn distances(
        &self,
        vectors: &FixedSizeListArray,
        q: &[f32],
        centroid: &[f32],
        metric: Metric,
        shown: &str,
    ) -> Result<Vec<f32>>;

    /// Whether `other` encodes rows exactly as this one does.
    fn same(&self, other: &dyn Quantizer) -> bool;

    /// What pylance's statistics show of it (its storage metadata, as it names it).
    fn statistics(&self) -> Map<String, Value>;

    /// Bytes it holds in memory (for the session's cache).
    fn bytes(&self) -> usize {
        0
    }

    fn as_any(&self) -> &dyn Any;
}

/// Whether two quantizers of type `T` are equal (`Quantizer::same`).
pub(super) fn same_as<T: PartialEq + 'static>(this: &T, other: &dyn Quantizer) -> bool {
    other.as_any().downcast_ref::<T>() == Some(this)
}

/// The codes of a partition read from the auxiliary file: its values as bytes.
pub(super) fn code_bytes<'a>(vectors: &'a FixedSizeListArray, shown: &str) -> Result<&'a [u8]> {
    let width = vectors.value_length() as usize;
    let start = vectors.offset() * width;
    let bytes = vectors
        .values()
        .as_any()
        .downcast_ref::<UInt8Array>()
        .ok_or_else(|| {
            Error::corrupt(
                shown,
                format!(
                    "codes stored as {}, not bytes",
                    vectors.values().data_type()
                ),
            )
        })?;
    bytes
        .values()
        .get(start..start + vectors.len() * width)
        .ok_or_else(|| Error::corrupt(shown, "a partition's codes are cut short"))
}
