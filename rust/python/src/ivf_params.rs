//! What an IVF index is built with, as the Python layer checks pylance's `create_index`
//! arguments into a dict (every key present).
use lance_core::vector::kind::IvfParams;
use lance_core::vector::registry::vector_kind_to_build;
use pyo3::prelude::*;

use crate::errors::IntoPyResult;

#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct PyIvfParams {
    index_type: String,
    metric: String,
    num_partitions: Option<usize>,
    target_partition_size: Option<usize>,
    num_sub_vectors: Option<usize>,
    num_bits: u32,
    sample_rate: usize,
    max_iters: usize,
    seed: Option<u64>,
}

impl PyIvfParams {
    /// The parameters for a build on the table at `uri` (named in errors). Without a seed,
    /// the clock's nanoseconds make one.
    pub fn into_params(self, uri: &str) -> PyResult<IvfParams> {
        let kind = vector_kind_to_build(uri, &self.index_type).py()?;
        Ok(IvfParams {
            kind,
            metric: lance_core::vector::Metric::parse(&self.metric).py()?,
            num_partitions: self.num_partitions,
            target_partition_size: self.target_partition_size,
            num_sub_vectors: self.num_sub_vectors,
            num_bits: self.num_bits,
            sample_rate: self.sample_rate,
            max_iters: self.max_iters,
            seed: self.seed.unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64)
            }),
        })
    }
}
