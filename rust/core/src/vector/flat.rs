//! IVF_FLAT: each partition stores its rows' vectors as they are (unit length for cosine),
//! in the column's own element type (`flat`); a search measures them exactly.
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, FixedSizeListArray, Float32Array};
use arrow_schema::DataType;
use futures::future::BoxFuture;
use serde_json::{json, Map, Value};

use super::distance::{self, Metric, Query};
use super::encoded::{fixed_size_list, Encoded};
use super::kind::IvfParams;
use super::kind::{same_as, Layout, Quantizer, StoredFile, StoredRows, VectorIndexKind};
use super::kmeans::Rng;
use crate::error::{Error, Result};
use crate::proto::index::vector_index_details::{Compression, FlatCompression};

#[derive(Debug)]
pub struct IvfFlat;

impl VectorIndexKind for IvfFlat {
    fn name(&self) -> &'static str {
        "IVF_FLAT"
    }

    fn sub_index(&self) -> &'static str {
        "FLAT"
    }

    fn stored_column(&self) -> &'static str {
        "flat"
    }

    fn load<'a>(&'a self, file: StoredFile<'a>) -> BoxFuture<'a, Result<Arc<dyn Quantizer>>> {
        Box::pin(async move { Ok(Arc::new(Flat { dim: file.dim }) as Arc<dyn Quantizer>) })
    }

    // Rows are kept whole: smaller partitions keep a search's reads as small as PQ's.
    fn target_partition_size(&self) -> usize {
        4096
    }

    fn train(
        &self,
        _sample: &[f32],
        dim: usize,
        _centroids: &[f32],
        _params: &IvfParams,
        _rng: &mut Rng,
    ) -> Result<Arc<dyn Quantizer>> {
        Ok(Arc::new(Flat { dim }))
    }
}

/// Vectors kept as they are: nothing to train.
#[derive(Debug, PartialEq)]
pub struct Flat {
    dim: usize,
}

impl Quantizer for Flat {
    fn code_width(&self, _dim: usize) -> usize {
        0
    }

    fn encode(&self, _: &[f32], _: usize, _: &[u32], _: &[f32], _: Metric) -> Vec<u8> {
        vec![]
    }

    fn stored(
        &self,
        encoded: &Encoded,
        dim: usize,
        layout: &Layout,
        element: &DataType,
    ) -> Result<StoredRows> {
        let mut values = Vec::with_capacity(layout.order.len() * dim);
        for &r in layout.order {
            values.extend_from_slice(&encoded.values[r * dim..(r + 1) * dim]);
        }
        let values: ArrayRef = Arc::new(Float32Array::from(values));
        Ok(StoredRows {
            column: fixed_size_list(arrow_cast::cast(&values, element)?, dim)?,
            metadata: json!({ "dim": dim }),
            buffers: vec![],
            compression: Compression::Flat(FlatCompression {}),
        })
    }

    fn read_back(
        &self,
        vectors: &FixedSizeListArray,
        _shown: &str,
        out: &mut Encoded,
    ) -> Result<()> {
        let width = vectors.value_length() as usize;
        let values = vectors
            .values()
            .slice(vectors.offset() * width, vectors.len() * width);
        let values = arrow_cast::cast(&values, &DataType::Float32)?;
        let values = values
            .as_any()
            .downcast_ref::<Float32Array>()
            .expect("cast to f32");
        out.values.extend_from_slice(values.values());
        Ok(())
    }

    fn distances(
        &self,
        vectors: &FixedSizeListArray,
        q: &[f32],
        _centroid: &[f32],
        metric: Metric,
        shown: &str,
    ) -> Result<Vec<f32>> {
        let element = vectors.value_type();
        if !distance::is_vector_element(&element) {
            return Err(Error::corrupt(
                shown,
                format!("stored vectors of {element}"),
            ));
        }
        let qf: Vec<f64> = q.iter().map(|&v| v as f64).collect();
        let query = Query::new(&qf, &element)?;
        let mut out = Vec::with_capacity(vectors.len());
        distance::distances(metric, &query, vectors, &mut out)?;
        Ok(out)
    }

    fn same(&self, other: &dyn Quantizer) -> bool {
        same_as(self, other)
    }

    fn statistics(&self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("dim".into(), self.dim.into());
        out
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
