//! `_Dataset`'s changes: deletes, updates, merge_insert, new and altered columns, config
//! and metadata.

use arrow_array::RecordBatchReader;
use pyo3::prelude::*;

use super::PyDataset;
use crate::errors::{guard, IntoPyResult};
use crate::runtime::block_on;

/// One alteration from Python: path, new name, nullable, and an Arrow schema whose only
/// field has the new type.
type PyAlteration<'py> = (
    String,
    Option<String>,
    Option<bool>,
    Option<Bound<'py, PyAny>>,
);

/// ((inserted, updated, deleted), data files written, their bytes, deletion files written)
type MergeAnalysisRow = ((u64, u64, u64), u64, u64, u64);

/// Keys of a string map set (Some) or removed (None).
type Entries = Vec<(String, Option<String>)>;

/// A map's entries, and whether they replace it.
type MapValues = (Entries, bool);

#[pymethods]
impl PyDataset {
    /// Add all-null columns (an Arrow schema); metadata only. Returns the new version.
    fn add_null_columns(&self, py: Python<'_>, schema: Bound<'_, PyAny>) -> PyResult<Self> {
        guard(|| {
            let schema = crate::arrow_import::import_schema(&schema)?;
            Ok(PyDataset::from(
                block_on(
                    py,
                    lance_core::write::columns::add_null_columns(&self.inner, &schema),
                )
                .py()?,
            ))
        })
    }

    /// Change the config, the table's metadata, the schema's metadata and fields'
    /// metadata (by dotted path): each `(values, replace)`, a value of None removing its
    /// key. One version; returns it.
    #[pyo3(signature = (config=None, table_metadata=None, schema_metadata=None, fields=vec![], retries=10))]
    fn update_config(
        &self,
        py: Python<'_>,
        config: Option<MapValues>,
        table_metadata: Option<MapValues>,
        schema_metadata: Option<MapValues>,
        fields: Vec<(String, Entries, bool)>,
        retries: u32,
    ) -> PyResult<Self> {
        use lance_core::write::config::{update_config, ConfigChange, MapChange};
        let map = |(values, replace): (Vec<(String, Option<String>)>, bool)| MapChange {
            values,
            replace,
        };
        let change = ConfigChange {
            config: config.map(map),
            table_metadata: table_metadata.map(map),
            schema_metadata: schema_metadata.map(map),
            fields: fields
                .into_iter()
                .map(|(path, values, replace)| (path, MapChange { values, replace }))
                .collect(),
        };
        guard(|| {
            Ok(PyDataset::from(
                block_on(py, update_config(&self.inner, &change, retries)).py()?,
            ))
        })
    }

    /// Drop columns (nested ones by dotted path); metadata only. Returns the new version.
    fn drop_columns(&self, py: Python<'_>, paths: Vec<String>) -> PyResult<Self> {
        guard(|| {
            Ok(PyDataset::from(
                block_on(py, lance_core::write::drop_columns(&self.inner, &paths)).py()?,
            ))
        })
    }

    /// Rename columns, change their nullability or type: (path, new name, nullable, an
    /// Arrow schema whose only field has the new type) each. Returns the new version.
    fn alter_columns(&self, py: Python<'_>, alterations: Vec<PyAlteration<'_>>) -> PyResult<Self> {
        use lance_core::write::Alteration;
        guard(|| {
            let alterations = alterations
                .into_iter()
                .map(|(path, name, nullable, schema)| {
                    // A new type comes as the only field of an Arrow schema.
                    let data_type = match schema {
                        None => None,
                        Some(s) => Some(
                            crate::arrow_import::import_schema(&s)?
                                .field(0)
                                .data_type()
                                .clone(),
                        ),
                    };
                    Ok::<_, PyErr>(Alteration {
                        path,
                        name,
                        nullable,
                        data_type,
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(PyDataset::from(
                block_on(
                    py,
                    lance_core::write::alter_columns(&self.inner, &alterations),
                )
                .py()?,
            ))
        })
    }

    /// Set columns (path, SQL value) on the rows matching `predicate`; re-runs up to
    /// `retries` times when a concurrent commit changed the same fragments. Returns the new
    /// version and the number of rows updated.
    #[pyo3(signature = (updates, predicate=None, retries=10))]
    fn update(
        &self,
        py: Python<'_>,
        updates: Vec<(String, String)>,
        predicate: Option<crate::filters::Filter>,
        retries: u32,
    ) -> PyResult<(Self, u64)> {
        guard(|| {
            let ds = self.inner.clone();
            let predicate = predicate.map(|p| p.0);
            let (new, count) = block_on(py, async move {
                lance_core::write::update(&ds, &updates, predicate.as_ref(), retries).await
            })
            .py()?;
            Ok((PyDataset::from(new), count))
        })
    }

    /// Merge the rows of `data` (an Arrow stream, read batch by batch with the GIL
    /// released) by the merge's `clauses`; `in_memory` says its batches are an in-memory
    /// table's (kept as they are for a retry, not copied). Returns the new version and the
    /// inserted, updated and deleted counts.
    #[pyo3(signature = (data, clauses, retries, in_memory=false))]
    fn merge_insert(
        &self,
        py: Python<'_>,
        data: Bound<'_, PyAny>,
        clauses: PyRef<'_, crate::merge_clauses::PyMergeClauses>,
        retries: u32,
        in_memory: bool,
    ) -> PyResult<(Self, (u64, u64, u64))> {
        use lance_core::write::merge_insert::{merge_insert, SourceIs};
        guard(|| {
            let params = clauses.params(retries);
            let reader = crate::arrow_import::import_stream(&data)?;
            let schema = reader.schema();
            let batches = crate::arrow_import::batch_stream(reader);
            let ds = self.inner.clone();
            // The source is read as the merge goes, never whole.
            let (new, stats) = block_on(py, async move {
                let source_is = match in_memory {
                    true => SourceIs::InMemory,
                    false => SourceIs::Streamed,
                };
                merge_insert(&ds, Box::pin(batches), schema, source_is, &params).await
            })
            .py()?;
            Ok((
                PyDataset::from(new),
                (stats.inserted, stats.updated, stats.deleted),
            ))
        })
    }

    /// Run a merge as `merge_insert` would without committing it (its files are removed):
    /// ((inserted, updated, deleted), data files written, their bytes, deletion files).
    fn analyze_merge(
        &self,
        py: Python<'_>,
        data: Bound<'_, PyAny>,
        clauses: PyRef<'_, crate::merge_clauses::PyMergeClauses>,
    ) -> PyResult<MergeAnalysisRow> {
        use lance_core::write::merge_insert::analyze_merge;
        guard(|| {
            let params = clauses.params(0);
            let reader = crate::arrow_import::import_stream(&data)?;
            let schema = reader.schema();
            let batches = crate::arrow_import::batch_stream(reader);
            let ds = self.inner.clone();
            let a = block_on(py, async move {
                analyze_merge(&ds, Box::pin(batches), schema, &params).await
            })
            .py()?;
            let s = a.stats;
            Ok((
                (s.inserted, s.updated, s.deleted),
                a.files_written,
                a.bytes_written,
                a.deletion_files_written,
            ))
        })
    }

    /// Delete the rows matching `predicate`: the new version and how many rows went.
    #[pyo3(signature = (predicate, retries=10))]
    fn delete(
        &self,
        py: Python<'_>,
        predicate: crate::filters::Filter,
        retries: u32,
    ) -> PyResult<(Self, u64)> {
        guard(|| {
            let (ds, count) = block_on(
                py,
                lance_core::write::delete_counted(&self.inner, &predicate.0, retries),
            )
            .py()?;
            Ok((PyDataset::from(ds), count))
        })
    }

    /// Write new columns for fragment `fragment_id`: `data` (an Arrow stream) has one row
    /// per physical row, deleted ones included. Returns the fragment's metadata (protobuf
    /// bytes) with the new file added, to commit with a merge from this version.
    #[pyo3(signature = (data, fragment_id, file_prefix=None))]
    fn write_columns(
        &self,
        py: Python<'_>,
        data: Bound<'_, PyAny>,
        fragment_id: u64,
        file_prefix: Option<String>,
    ) -> PyResult<Vec<u8>> {
        use lance_core::write::columns::{new_columns, write_columns};
        use prost::Message;
        guard(|| {
            let file_prefix = crate::write::checked_file_prefix(py, file_prefix)?;
            let reader = crate::arrow_import::import_stream(&data)?;
            let schema = reader.schema();
            let batches = crate::arrow_import::batch_stream(reader);
            let ds = self.inner.clone();
            let fragment = block_on(py, async move {
                let added = new_columns(&ds, &schema)?;
                write_columns(&ds, fragment_id, &added, batches, &file_prefix).await
            })
            .py()?;
            Ok(fragment.encode_to_vec())
        })
    }

    /// pylance's `LanceFragment.update_columns`: the fragment with its new data file
    /// (protobuf bytes, not committed) and the updated fields' ids.
    fn update_columns(
        &self,
        py: Python<'_>,
        data: Bound<'_, PyAny>,
        fragment_id: u64,
        left_on: String,
        right_on: String,
    ) -> PyResult<(Vec<u8>, Vec<u32>)> {
        use prost::Message;
        guard(|| {
            let reader = crate::arrow_import::import_stream(&data)?;
            let schema = reader.schema();
            let batches = reader.collect::<Result<Vec<_>, _>>().map_err(|e| {
                crate::errors::raise(py, "InvalidInputError", format!("update_columns: {e}"))
            })?;
            let ds = self.inner.clone();
            let (fragment, fields) = block_on(py, async move {
                lance_core::write::columns::update_columns(
                    &ds,
                    fragment_id,
                    (schema, batches),
                    &left_on,
                    &right_on,
                )
                .await
            })
            .py()?;
            Ok((fragment.encode_to_vec(), fields))
        })
    }

    /// Delete the rows of one fragment matching `predicate`, or at physical `offsets`,
    /// without committing: the fragment's new metadata, or None when no row is left.
    #[pyo3(signature = (fragment_id, predicate=None, offsets=None))]
    fn delete_in_fragment(
        &self,
        py: Python<'_>,
        fragment_id: u64,
        predicate: Option<crate::filters::Filter>,
        offsets: Option<Vec<u64>>,
    ) -> PyResult<Option<Vec<u8>>> {
        use lance_core::write::{delete_offsets_uncommitted, delete_uncommitted};
        use prost::Message;
        guard(|| {
            let ds = self.inner.clone();
            let fragment = block_on(py, async move {
                match (predicate, offsets) {
                    (Some(p), None) => delete_uncommitted(&ds, fragment_id, &p.0).await,
                    (None, Some(o)) => delete_offsets_uncommitted(&ds, fragment_id, &o).await,
                    _ => Err(lance_core::Error::invalid(
                        "delete_in_fragment takes a predicate or offsets",
                    )),
                }
            })
            .py()?;
            Ok(fragment.map(|f| f.encode_to_vec()))
        })
    }
}
