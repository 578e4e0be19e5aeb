//! The `nearest=` query of a scan, as the Python layer normalizes pylance's dict: the
//! query vectors flattened, every key present.
use lance_core::vector::{Metric, Nearest};
use pyo3::prelude::*;

use crate::errors::IntoPyResult;

#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct PyNearest {
    column: String,
    q: Vec<f64>,
    num_queries: usize,
    batch: bool,
    k: usize,
    metric: Option<String>,
    lower: Option<f32>,
    upper: Option<f32>,
    prefilter: bool,
    use_index: bool,
    fast_search: bool,
    nprobes: Option<usize>,
    minimum_nprobes: Option<usize>,
    maximum_nprobes: Option<usize>,
    refine_factor: Option<usize>,
    ef: Option<usize>,
    project_distance: bool,
}

impl PyNearest {
    pub fn into_query(self) -> PyResult<Nearest> {
        Ok(Nearest {
            column: self.column,
            query: self.q,
            num_queries: self.num_queries,
            batch: self.batch,
            k: self.k,
            metric: self.metric.as_deref().map(Metric::parse).transpose().py()?,
            distance_range: (self.lower, self.upper),
            prefilter: self.prefilter,
            use_index: self.use_index,
            fast_search: self.fast_search,
            nprobes: self.nprobes,
            minimum_nprobes: self.minimum_nprobes,
            maximum_nprobes: self.maximum_nprobes,
            refine_factor: self.refine_factor,
            ef: self.ef,
            project_distance: self.project_distance,
        })
    }
}
