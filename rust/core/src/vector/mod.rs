//! Vector search: the k rows nearest to a query vector, as pylance's `nearest=` finds them.
//!
//! - `kind`: what a vector index kind is (`VectorIndexKind`, its trained `Quantizer`);
//!   one file per kind: `flat` (IVF_FLAT), `pq` (IVF_PQ), `sq` (IVF_SQ), `hnsw` (the
//!   IVF_HNSW kinds, read only); `registry` lists them, and finds any index kind, scalar
//!   or vector, by the name a user gives it; `stats` what pylance's statistics show of
//!   an index of either family;
//! - `build`: building IVF indices in pylance's layout, partitions trained by `kmeans`,
//!   rows stored by their kind (`encoded`: the rows before they are laid out; `tensor`:
//!   centroids and codebooks in files); `reuse`: an existing segment's model and rows read
//!   back;
//! - `distance`: the metrics and their SIMD kernels;
//! - `indexed`: a search through the column's IVF index, merged with the unindexed rest;
//! - `ivf`: reading pylance's IVF indices and searching their nearest partitions;
//! - `topk`: keeping the k nearest of many candidates, in pylance's order.
//!
//! The search itself (candidates read, pre-filtered, measured on the CPU pool, the
//! winners' columns taken) is a query: `crate::query::nearest`.
pub mod build;
pub mod distance;
pub mod encoded;
pub mod flat;
pub mod hnsw;
pub mod indexed;
pub mod ivf;
pub mod kind;
pub mod kmeans;
pub mod pq;
pub mod registry;
pub mod reuse;
pub mod sq;
pub mod stats;
pub mod tensor;
pub mod topk;

pub use distance::Metric;
pub use kind::{IvfParams, Quantizer, VectorIndexKind, VectorKind};
pub use registry::{kind_from_user, vector_kind_named, vector_kind_of, IndexKind, VECTOR_KINDS};

/// The name of the distance column a search adds.
pub const DISTANCE: &str = "_distance";
/// The name of the column that says which query a row answers (several queries at once).
pub const QUERY_INDEX: &str = "query_index";

/// A nearest-neighbour query, as pylance's `nearest={...}` describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Nearest {
    /// The vector column (dotted for a field of a struct).
    pub column: String,
    /// The query vectors' values, one vector after another.
    pub query: Vec<f64>,
    /// How many vectors `query` holds.
    pub num_queries: usize,
    /// Several queries were given (a 2-D `q`): each result row says which it answers in a
    /// leading `query_index` column.
    pub batch: bool,
    pub k: usize,
    /// None: l2, or hamming for uint8 vectors.
    pub metric: Option<Metric>,
    /// Only distances in `lower..upper` (either end open when None).
    pub distance_range: (Option<f32>, Option<f32>),
    /// Filter before searching (k rows that pass), rather than after (those of the k
    /// nearest that pass).
    pub prefilter: bool,
    /// Search a vector index where one covers the column.
    pub use_index: bool,
    /// Only the rows an index covers (pylance's `fast_search`): fragments appended since
    /// the index was built are not searched, and without an index nothing is found.
    pub fast_search: bool,
    pub nprobes: Option<usize>,
    pub minimum_nprobes: Option<usize>,
    pub maximum_nprobes: Option<usize>,
    pub refine_factor: Option<usize>,
    pub ef: Option<usize>,
    /// Add `_distance` even when the columns asked for do not name it (pylance's default;
    /// its `disable_scoring_autoprojection` turns it off).
    pub project_distance: bool,
}

impl Nearest {
    /// A query for the `k` rows of `column` nearest to `query` (one vector), with
    /// pylance's defaults for the rest.
    pub fn new(column: impl Into<String>, query: Vec<f64>, k: usize) -> Self {
        Nearest {
            column: column.into(),
            query,
            num_queries: 1,
            batch: false,
            k,
            metric: None,
            distance_range: (None, None),
            prefilter: false,
            use_index: true,
            fast_search: false,
            nprobes: None,
            minimum_nprobes: None,
            maximum_nprobes: None,
            refine_factor: None,
            ef: None,
            project_distance: true,
        }
    }
}
