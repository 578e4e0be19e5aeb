//! The table's string maps a commit may change without touching data (`UpdateConfig`):
//! its config, its metadata, the schema's metadata and each field's metadata. A change
//! sets keys (a value) or removes them (no value), after clearing the map when it
//! replaces it.
use std::collections::{HashMap, HashSet};

use crate::error::{Error, Result};
use crate::proto::table::transaction::{UpdateConfig, UpdateMap, UpdateMapEntry};
use crate::proto::table::Manifest;

/// A change of one map: `values` set (Some) or removed (None), after clearing the map
/// when `replace`.
pub fn update_map(
    values: impl IntoIterator<Item = (String, Option<String>)>,
    replace: bool,
) -> UpdateMap {
    UpdateMap {
        update_entries: values
            .into_iter()
            .map(|(key, value)| UpdateMapEntry { key, value })
            .collect(),
        replace,
    }
}

fn apply<V>(map: &mut HashMap<String, V>, change: &UpdateMap, value: impl Fn(&str) -> V) {
    if change.replace {
        map.clear();
    }
    for e in &change.update_entries {
        match &e.value {
            Some(v) => {
                map.insert(e.key.clone(), value(v));
            }
            None => {
                map.remove(&e.key);
            }
        }
    }
}

/// Apply `u` to manifest `m` (of the table at `uri`, for errors). Also takes the form
/// older writers recorded (`upsert_values`, `delete_keys`, ...).
pub fn apply_update(m: &mut Manifest, u: &UpdateConfig, uri: &str) -> Result<()> {
    super::primary_key::check_update(m, u, uri)?;
    let as_string = |v: &str| v.to_string();
    let as_bytes = |v: &str| v.as_bytes().to_vec();
    if let Some(c) = &u.config_updates {
        apply(&mut m.config, c, as_string);
    }
    for (k, v) in &u.upsert_values {
        m.config.insert(k.clone(), v.clone());
    }
    for k in &u.delete_keys {
        m.config.remove(k);
    }
    if let Some(t) = &u.table_metadata_updates {
        apply(&mut m.table_metadata, t, as_string);
    }
    if let Some(s) = &u.schema_metadata_updates {
        apply(&mut m.schema_metadata, s, as_bytes);
    }
    for (k, v) in &u.schema_metadata {
        m.schema_metadata.insert(k.clone(), v.clone().into_bytes());
    }
    let legacy_fields = u.field_metadata.iter().map(|(id, f)| {
        (
            *id as i32,
            update_map(
                f.metadata.iter().map(|(k, v)| (k.clone(), Some(v.clone()))),
                false,
            ),
        )
    });
    let fields: Vec<(i32, UpdateMap)> = u
        .field_metadata_updates
        .iter()
        .map(|(id, c)| (*id, c.clone()))
        .chain(legacy_fields)
        .collect();
    for (id, change) in fields {
        let field = m.fields.iter_mut().find(|f| f.id == id).ok_or_else(|| {
            Error::invalid(format!(
                "{uri}: no field with id {id} to change the metadata of"
            ))
        })?;
        apply(&mut field.metadata, &change, as_bytes);
    }
    if !u.field_metadata_updates.is_empty() || !u.field_metadata.is_empty() {
        super::primary_key::refresh(m, uri)?;
    }
    Ok(())
}

/// The keys each map of `u` changes (`*` for a replaced map), named by map.
fn touched(u: &UpdateConfig) -> HashSet<(String, String)> {
    let mut out = HashSet::new();
    let mut add = |map: String, c: &UpdateMap| {
        if c.replace {
            out.insert((map.clone(), "*".to_string()));
        }
        for e in &c.update_entries {
            out.insert((map.clone(), e.key.clone()));
        }
    };
    if let Some(c) = &u.config_updates {
        add("config".into(), c);
    }
    if let Some(c) = &u.table_metadata_updates {
        add("table metadata".into(), c);
    }
    if let Some(c) = &u.schema_metadata_updates {
        add("schema metadata".into(), c);
    }
    for (id, c) in &u.field_metadata_updates {
        add(format!("field {id} metadata"), c);
    }
    for k in u.upsert_values.keys().chain(&u.delete_keys) {
        out.insert(("config".into(), k.clone()));
    }
    out
}

/// A map and key both changes touch (a replaced map meets any change of it), if any.
pub fn overlap(a: &UpdateConfig, b: &UpdateConfig) -> Option<String> {
    let (a, b) = (touched(a), touched(b));
    a.iter()
        .find(|(map, key)| {
            b.contains(&(map.clone(), key.clone()))
                || b.contains(&(map.clone(), "*".into()))
                || (key == "*" && b.iter().any(|(m, _)| m == map))
        })
        .map(|(map, key)| match key.as_str() {
            "*" => format!("the {map}"),
            _ => format!("key '{key}' of the {map}"),
        })
}

/// Whether `u` changes the schema's or fields' metadata (which a new schema replaces).
pub fn changes_schema(u: &UpdateConfig) -> bool {
    u.schema_metadata_updates.is_some()
        || !u.field_metadata_updates.is_empty()
        || !u.schema_metadata.is_empty()
        || !u.field_metadata.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::file::Field;

    #[test]
    fn keys_set_removed_and_maps_replaced() {
        let mut m = Manifest {
            fields: vec![Field {
                id: 3,
                parent_id: -1,
                logical_type: "int64".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        m.config.insert("old".into(), "1".into());
        let u = UpdateConfig {
            config_updates: Some(update_map(
                [
                    ("a".to_string(), Some("x".to_string())),
                    ("old".to_string(), None),
                ],
                false,
            )),
            table_metadata_updates: Some(update_map(
                [("t".to_string(), Some("y".to_string()))],
                true,
            )),
            field_metadata_updates: [(
                3,
                update_map([("f".to_string(), Some("z".to_string()))], false),
            )]
            .into_iter()
            .collect(),
            ..Default::default()
        };
        apply_update(&mut m, &u, "t").unwrap();
        assert_eq!(
            m.config,
            HashMap::from([("a".to_string(), "x".to_string())])
        );
        assert_eq!(m.table_metadata["t"], "y");
        assert_eq!(m.fields[0].metadata["f"], b"z".to_vec());
        let bad = UpdateConfig {
            field_metadata_updates: [(9, update_map([], false))].into_iter().collect(),
            ..Default::default()
        };
        assert!(apply_update(&mut m, &bad, "t")
            .unwrap_err()
            .to_string()
            .contains("id 9"));
        let other = UpdateConfig {
            config_updates: Some(update_map([("b".to_string(), None)], false)),
            ..Default::default()
        };
        assert_eq!(overlap(&u, &other), None);
        let replacing = UpdateConfig {
            config_updates: Some(update_map([], true)),
            ..Default::default()
        };
        assert_eq!(
            overlap(&other, &replacing).as_deref(),
            Some("key 'b' of the config")
        );
        assert_eq!(overlap(&replacing, &u).as_deref(), Some("the config"));
    }
}
