//! The Python data source's share of the core's Spark rules (`lance_core::spark`), which
//! the JVM reader uses too: `_spark_schema`, the Spark schema of an Arrow schema; and
//! `_spark_predicates`, Spark's pushed filters as predicates.
use pyo3::prelude::*;

use crate::arrow_import::import_schema;
use crate::errors::{guard, IntoPyResult};

/// The Spark schema (Spark's JSON) holding every value of the pyarrow `schema`.
#[pyfunction]
pub fn _spark_schema(schema: Bound<'_, PyAny>) -> PyResult<String> {
    guard(|| {
        let schema = import_schema(&schema)?;
        Ok(lance_core::spark::types::spark_schema(schema.fields())
            .py()?
            .to_string())
    })
}

/// For each of Spark's pushed filters (JSON, as `lance_core::spark::filters` reads it), the
/// predicate on a table of `schema` (pyarrow), or None where Spark must filter itself.
#[pyfunction]
pub fn _spark_predicates(
    filters: Vec<String>,
    schema: Bound<'_, PyAny>,
) -> PyResult<Vec<Option<String>>> {
    guard(|| {
        let schema = import_schema(&schema)?;
        filters
            .iter()
            .map(|f| lance_core::spark::filters::to_predicate_text(f, schema.fields()).py())
            .collect()
    })
}
