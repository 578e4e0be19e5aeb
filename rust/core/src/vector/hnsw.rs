//! IVF_HNSW_FLAT, IVF_HNSW_PQ, IVF_HNSW_SQ: pylance's IVF kinds with an HNSW graph over
//! each partition's rows (in `index.idx`; its shape in the schema metadata `lance:hnsw`,
//! one entry per partition). The rows are stored as their IVF kind stores them, so
//! lance_core reads and searches them as that kind does, measuring every row of a probed
//! partition rather than walking the graph (recall at least the graph's). It does not
//! build these kinds: a new segment, an optimize or a compaction's remap would need the
//! graph built, so such segments are left as they are.
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::distance::Metric;
use super::kind::IvfParams;
use super::kind::{Quantizer, StoredFile, VectorIndexKind, VectorKind};
use super::kmeans::Rng;
use super::{flat, pq, sq};
use crate::error::{Error, Result};

/// An IVF kind with a graph over each partition.
#[derive(Debug)]
pub struct IvfHnsw {
    name: &'static str,
    /// The kind whose stored rows it has.
    rows: VectorKind,
}

pub static IVF_HNSW_FLAT: IvfHnsw = IvfHnsw {
    name: "IVF_HNSW_FLAT",
    rows: &flat::IvfFlat,
};
pub static IVF_HNSW_PQ: IvfHnsw = IvfHnsw {
    name: "IVF_HNSW_PQ",
    rows: &pq::IvfPq,
};
pub static IVF_HNSW_SQ: IvfHnsw = IvfHnsw {
    name: "IVF_HNSW_SQ",
    rows: &sq::IvfSq,
};

impl VectorIndexKind for IvfHnsw {
    fn name(&self) -> &'static str {
        self.name
    }

    fn sub_index(&self) -> &'static str {
        "HNSW"
    }

    fn stored_column(&self) -> &'static str {
        self.rows.stored_column()
    }

    fn load<'a>(&'a self, file: StoredFile<'a>) -> BoxFuture<'a, Result<Arc<dyn Quantizer>>> {
        self.rows.load(file)
    }

    fn builds(&self) -> bool {
        false
    }

    fn train(
        &self,
        _sample: &[f32],
        _dim: usize,
        _centroids: &[f32],
        _params: &IvfParams,
        _rng: &mut Rng,
    ) -> Result<Arc<dyn Quantizer>> {
        Err(Error::unsupported(
            self.name,
            "building an HNSW graph (lance_core reads these indices, pylance builds them)",
        ))
    }

    /// pylance shows the first partition's graph beside the stored rows' settings.
    fn sub_index_statistics(
        &self,
        quantizer: &dyn Quantizer,
        metric: Metric,
        index_metadata: &arrow_schema::Metadata,
    ) -> Value {
        let graph = index_metadata
            .get("lance:hnsw")
            .and_then(|text| serde_json::from_str::<Vec<String>>(text).ok())
            .and_then(|entries| entries.first().cloned())
            .and_then(|first| serde_json::from_str::<serde_json::Map<String, Value>>(&first).ok())
            .unwrap_or_default();
        let mut out = graph;
        out.extend(quantizer.statistics());
        out.insert("index_type".into(), self.sub_index().into());
        out.insert("metric_type".into(), metric.name().into());
        Value::Object(out)
    }
}
