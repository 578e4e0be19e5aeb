//! The Python data source's share of the core's Spark rules (`lance_core::spark`), which
//! the JVM side uses too: `_spark_schema`, the Spark schema of an Arrow schema;
//! `_spark_predicates`, Spark's pushed filters as predicates; `_to_table_batch`, Spark's
//! rows in a table's types for a write; and `_balanced_groups`, the fragments of a
//! distributed build's tasks.
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

/// `batch` (Spark's Arrow rows, with the table's column names) in the types of `target`
/// (the table's pyarrow schema), columns in its order (`lance_core::spark::table_types`).
#[pyfunction]
pub fn _to_table_batch(
    py: Python<'_>,
    batch: Bound<'_, PyAny>,
    target: Bound<'_, PyAny>,
) -> PyResult<crate::arrow_export::PyArrowBatch> {
    guard(|| {
        let target = std::sync::Arc::new(import_schema(&target)?);
        // A pyarrow RecordBatch's stream holds it alone.
        let mut reader = crate::arrow_import::import_stream(&batch)?;
        let rows = match reader.next() {
            Some(b) => b.map_err(lance_core::Error::from).py()?,
            None => {
                arrow_array::RecordBatch::new_empty(arrow_array::RecordBatchReader::schema(&reader))
            }
        };
        let batch = py
            .detach(|| lance_core::spark::table_types::to_table_batch(&rows, &target))
            .py()?;
        Ok(crate::arrow_export::PyArrowBatch(batch))
    })
}

/// `fragments` ((id, rows) pairs) in at most `n` groups of about equal rows (see
/// `lance_core::spark::commands::balanced_groups`).
#[pyfunction]
pub fn _balanced_groups(fragments: Vec<(u64, u64)>, n: usize) -> Vec<Vec<u64>> {
    lance_core::spark::commands::balanced_groups(&fragments, n)
}
