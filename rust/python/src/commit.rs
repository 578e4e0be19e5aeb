//! `_commit`: an operation prepared elsewhere (append, overwrite, merge, delete, update,
//! data replacement, config change, restore) as a new version, and `_fragment_to_json`/`_fragment_from_json`: fragment metadata between its bytes and pylance's JSON.
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
#[pyo3(signature = (uri, kind, fragments, schema=None, deleted_fragment_ids=None, predicate=None, read_version=None, storage_options=None, transaction_properties=None, version=None, config=None, lance_schema=None, new_fragments=None, fields_modified=None, fields_for_preserving_frag_bitmap=None, enable_stable_row_ids=false, bases=None, detached=false))]
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
    lance_schema: Option<Vec<u8>>,
    new_fragments: Option<Vec<Vec<u8>>>,
    fields_modified: Option<Vec<u32>>,
    fields_for_preserving_frag_bitmap: Option<Vec<u32>>,
    enable_stable_row_ids: bool,
    bases: Option<Vec<crate::bases::BaseArg>>,
    detached: bool,
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
                stable_row_ids: enable_stable_row_ids,
                initial_bases: crate::bases::from_args(bases),
                config_upsert: Default::default(),
            },
            "update_bases" => External::UpdateBases {
                new_bases: crate::bases::from_args(bases),
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
            "update" => External::Update {
                updated: fragments,
                removed_ids: deleted_fragment_ids.unwrap_or_default(),
                new_fragments: decode_fragments(py, &new_fragments.unwrap_or_default())?,
                fields_modified: fields_modified.unwrap_or_default(),
                fields_for_preserving_frag_bitmap: fields_for_preserving_frag_bitmap
                    .unwrap_or_default(),
            },
            // Each replacement comes as a fragment of its id holding the new file.
            "data_replacement" => External::DataReplacement {
                replacements: fragments
                    .into_iter()
                    .map(|f| match <[_; 1]>::try_from(f.files) {
                        Ok([file]) => Ok((f.id, file)),
                        Err(_) => Err(raise(
                            py,
                            "InvalidInputError",
                            format!("replacement for fragment {} must hold one data file", f.id),
                        )),
                    })
                    .collect::<PyResult<_>>()?,
            },
            "update_config" => {
                External::UpdateConfig(Box::new(update_config(config.unwrap_or_default())))
            }
            "project" => External::Project {
                fields: crate::schema::decode_fields(py, &lance_schema.unwrap_or_default())?,
            },
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
                detached,
            ),
        )
        .py()?;
        Ok(PyDataset::from(ds))
    })
}

/// Fragment metadata bytes as pylance's JSON (`FragmentMetadata.to_json()`).
#[pyfunction]
pub fn _fragment_to_json(py: Python<'_>, data: Vec<u8>) -> PyResult<String> {
    let fragment = decode_fragments(py, &[data])?.remove(0);
    Ok(lance_core::table::fragment_json::fragment_to_json(&fragment).to_string())
}

/// pylance's fragment JSON as the fragment metadata bytes the other calls take.
#[pyfunction]
pub fn _fragment_from_json(text: &str) -> PyResult<Vec<u8>> {
    use prost::Message;
    let fragment = lance_core::table::fragment_json::fragment_from_json(text).py()?;
    Ok(fragment.encode_to_vec())
}
