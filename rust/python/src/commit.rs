//! `_commit`: one operation (append, overwrite, merge, delete) as a new version, and
//! `_fragment_info` to read back the fragment metadata that uncommitted writes return.
use pyo3::prelude::*;
use std::collections::HashMap;

use crate::arrow_import::import_schema;
use crate::dataset::PyDataset;
use crate::errors::{guard, raise, IntoPyResult};
use crate::runtime::block_on;

/// Fragment metadata as Python holds it (protobuf bytes), decoded.
pub fn decode_fragments(
    py: Python<'_>,
    fragments: &[Vec<u8>],
) -> PyResult<Vec<lance_core::proto::table::DataFragment>> {
    use prost::Message;
    fragments
        .iter()
        .map(|b| lance_core::proto::table::DataFragment::decode(b.as_slice()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            raise(
                py,
                "InvalidInputError",
                format!("bad fragment metadata: {e}"),
            )
        })
}

/// Commit an operation: "append" or "overwrite" of fragments, or "delete".
#[pyfunction]
#[pyo3(signature = (uri, kind, fragments, schema=None, deleted_fragment_ids=None, predicate=None, read_version=None, storage_options=None, transaction_properties=None))]
#[allow(clippy::too_many_arguments)]
pub fn _commit(
    py: Python<'_>,
    uri: String,
    kind: &str,
    fragments: Vec<Vec<u8>>,
    schema: Option<Bound<'_, PyAny>>,
    deleted_fragment_ids: Option<Vec<u64>>,
    predicate: Option<String>,
    read_version: Option<u64>,
    storage_options: Option<HashMap<String, String>>,
    transaction_properties: Option<HashMap<String, String>>,
) -> PyResult<PyDataset> {
    use lance_core::table::transaction::Operation;
    guard(|| {
        let fragments = decode_fragments(py, &fragments)?;
        let op = match kind {
            "append" => Operation::Append { fragments },
            "overwrite" => {
                let schema = schema.ok_or_else(|| {
                    raise(
                        py,
                        "InvalidInputError",
                        "an overwrite needs the new schema".into(),
                    )
                })?;
                let schema =
                    lance_core::table::schema::LanceSchema::from_arrow(&import_schema(&schema)?, 0)
                        .py()?;
                let data_format = fragments
                    .iter()
                    .flat_map(|f| f.files.first())
                    .map(|d| format!("{}.{}", d.file_major_version, d.file_minor_version))
                    .next()
                    .unwrap_or_else(|| "2.2".into());
                Operation::Overwrite {
                    fragments,
                    schema,
                    data_format,
                    stable_row_ids: false,
                }
            }
            "merge" => {
                // The new columns are numbered after the read version's ids, as the tasks
                // that wrote their files numbered them.
                let (schema, read_version) = schema.zip(read_version).ok_or_else(|| {
                    raise(
                        py,
                        "InvalidInputError",
                        "a merge needs the new schema and the version it was read from".into(),
                    )
                })?;
                let schema = import_schema(&schema)?;
                let opts = storage_options.clone().unwrap_or_default();
                let ds = block_on(
                    py,
                    lance_core::dataset::Dataset::open(
                        &uri,
                        Some(lance_core::dataset::VersionRef::Number(read_version)),
                        opts,
                    ),
                )
                .py()?;
                let new: Vec<_> = schema
                    .fields()
                    .iter()
                    .filter(|f| ds.schema.field(f.name()).is_none())
                    .cloned()
                    .collect();
                let added =
                    lance_core::write::columns::new_columns(&ds, &arrow_schema::Schema::new(new))
                        .py()?;
                Operation::Merge {
                    fragments,
                    schema: lance_core::write::columns::schema_with(&ds, &added),
                }
            }
            "delete" => Operation::Delete {
                updated: fragments,
                deleted_ids: deleted_fragment_ids.unwrap_or_default(),
                predicate: predicate.unwrap_or_default(),
            },
            other => {
                return Err(raise(
                    py,
                    "InvalidInputError",
                    format!("unknown operation '{other}'"),
                ))
            }
        };
        let ds = block_on(
            py,
            lance_core::write::commit_with_properties(
                &uri,
                op,
                read_version,
                storage_options.unwrap_or_default(),
                transaction_properties.unwrap_or_default(),
            ),
        )
        .py()?;
        Ok(PyDataset::from(ds))
    })
}

/// A readable summary of fragment metadata bytes: id, physical_rows, files.
#[pyfunction]
pub fn _fragment_info(py: Python<'_>, data: Vec<u8>) -> PyResult<(u64, u64, Vec<String>)> {
    use prost::Message;
    let f = lance_core::proto::table::DataFragment::decode(data.as_slice()).map_err(|e| {
        raise(
            py,
            "InvalidInputError",
            format!("bad fragment metadata: {e}"),
        )
    })?;
    Ok((
        f.id,
        f.physical_rows,
        f.files.iter().map(|d| d.path.clone()).collect(),
    ))
}
