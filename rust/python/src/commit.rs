//! `_commit`: an operation prepared elsewhere (append, overwrite, merge, delete, config
//! change, restore) as a new version, and `_fragment_info` to read back the fragment metadata that uncommitted writes return.
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

/// One map's change as Python gives it: (keys set (Some) or removed (None), replace).
type MapArg = (Vec<(String, Option<String>)>, bool);

/// An `UpdateConfig`'s maps: config, table metadata, schema metadata, fields by id.
type ConfigArg = (
    Option<MapArg>,
    Option<MapArg>,
    Option<MapArg>,
    HashMap<i32, MapArg>,
);

fn update_config(arg: ConfigArg) -> lance_core::proto::table::transaction::UpdateConfig {
    use lance_core::table::config::update_map;
    let map = |(values, replace): MapArg| update_map(values, replace);
    let (config, table, schema, fields) = arg;
    lance_core::proto::table::transaction::UpdateConfig {
        config_updates: config.map(map),
        table_metadata_updates: table.map(map),
        schema_metadata_updates: schema.map(map),
        field_metadata_updates: fields.into_iter().map(|(id, m)| (id, map(m))).collect(),
        ..Default::default()
    }
}

/// Commit an operation prepared elsewhere: `kind` names the variant of
/// `lance_core::write::External` (append, overwrite, delete, merge, update_config,
/// restore) the arguments fill.
#[pyfunction]
#[pyo3(signature = (uri, kind, fragments, schema=None, deleted_fragment_ids=None, predicate=None, read_version=None, storage_options=None, transaction_properties=None, version=None, config=None))]
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
    version: Option<u64>,
    config: Option<ConfigArg>,
) -> PyResult<PyDataset> {
    use lance_core::write::External;
    guard(|| {
        let fragments = decode_fragments(py, &fragments)?;
        let schema = || match &schema {
            Some(s) => import_schema(s),
            None => Err(raise(
                py,
                "InvalidInputError",
                format!("a {kind} needs the new schema"),
            )),
        };
        let operation = match kind {
            "append" => External::Append { fragments },
            "overwrite" => External::Overwrite {
                fragments,
                schema: schema()?,
            },
            "merge" => External::Merge {
                fragments,
                schema: schema()?,
            },
            "delete" => External::Delete {
                updated: fragments,
                deleted_ids: deleted_fragment_ids.unwrap_or_default(),
                predicate: predicate.unwrap_or_default(),
            },
            "update_config" => {
                External::UpdateConfig(Box::new(update_config(config.unwrap_or_default())))
            }
            "restore" => External::Restore {
                version: version.ok_or_else(|| {
                    raise(
                        py,
                        "InvalidInputError",
                        "a restore needs the version".into(),
                    )
                })?,
            },
            other => {
                return Err(raise(
                    py,
                    "InvalidInputError",
                    format!("unknown operation '{other}'"),
                ))
            }
        };
        let options = storage_options.unwrap_or_default();
        let ds = block_on(
            py,
            lance_core::write::commit_external(
                &uri,
                &options,
                read_version,
                operation,
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
