//! The table's unenforced primary key: columns marked in their field metadata
//! (`lance-schema:unenforced-primary-key`, and `...:position` for the order of a composite
//! key), stored in the manifest's Field messages, used by `merge_insert` when it is given
//! no key columns. It is not enforced on the data; what the reference does enforce is
//! checked here: where a key column may be, and that once a table has a key, no config
//! change touches it (where a key column may be is a rule of the schema itself:
//! `schema::check_primary_key`).
use std::sync::Arc;

use arrow_schema::{Field, Schema, SchemaRef};

use crate::error::{Error, Result};
use crate::proto::table::transaction::UpdateConfig;
use crate::proto::table::Manifest;

use super::schema::{LanceField, LanceSchema, PRIMARY_KEY, PRIMARY_KEY_POSITION};

/// The key's columns by dotted path, in key order: explicit positions first (ascending),
/// then columns marked without a position, by field id.
pub fn key_paths(schema: &LanceSchema) -> Vec<String> {
    let mut found: Vec<(bool, u32, i32, String)> = Vec::new();
    fn walk(fields: &[LanceField], prefix: &str, out: &mut Vec<(bool, u32, i32, String)>) {
        for f in fields {
            let path = if prefix.is_empty() {
                f.name.clone()
            } else {
                format!("{prefix}.{}", f.name)
            };
            if let Some(pos) = f.primary_key_position() {
                out.push((pos == 0, pos, f.id, path.clone()));
            }
            walk(&f.children, &path, out);
        }
    }
    walk(&schema.fields, "", &mut found);
    found.sort_by_key(|(unordered, pos, id, _)| {
        (*unordered, if *unordered { *id as u32 } else { *pos }, *id)
    });
    found.into_iter().map(|(_, _, _, path)| path).collect()
}

/// `schema` with top-level `columns` marked as the key, in that order (the metadata
/// pylance writes for `primary_key` columns), for a table about to be created.
pub fn marked(schema: SchemaRef, columns: &[&str]) -> Result<SchemaRef> {
    if let Some(missing) = columns.iter().find(|c| schema.field_with_name(c).is_err()) {
        return Err(Error::invalid(format!(
            "the primary key names column '{missing}', which the table does not have"
        )));
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| {
            let mut f = f.as_ref().clone();
            if let Some(pos) = columns.iter().position(|c| c == f.name()) {
                let mut metadata = f.metadata().clone();
                metadata.insert(PRIMARY_KEY, "true");
                metadata.insert(PRIMARY_KEY_POSITION, (pos + 1).to_string());
                f = f.with_metadata(metadata);
            }
            f
        })
        .collect();
    Ok(Arc::new(Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    )))
}

/// Whether a field metadata key is one of the key's.
fn is_key_entry(key: &str) -> bool {
    key == PRIMARY_KEY || key == PRIMARY_KEY_POSITION
}

/// Refuse a config change that would change the key, as the reference does: once the table
/// has a key, no field's key entries may be set, removed or cleared by a replace (even to
/// the value they hold); a table without one may be given one, with valid values only.
pub fn check_update(m: &Manifest, u: &UpdateConfig, uri: &str) -> Result<()> {
    if u.field_metadata_updates.is_empty() && u.field_metadata.is_empty() {
        return Ok(());
    }
    let schema = LanceSchema::from_proto(&m.fields, &m.schema_metadata)?;
    let has_key = !key_paths(&schema).is_empty();
    let changed = |id: i32| {
        Error::invalid(format!(
            "{uri}: the unenforced primary key is a reserved key and cannot be changed once set \
             (field id {id})"
        ))
    };
    let entries = u
        .field_metadata_updates
        .iter()
        .map(|(id, c)| {
            (
                *id,
                c.replace,
                c.update_entries
                    .iter()
                    .map(|e| (e.key.as_str(), e.value.as_deref()))
                    .collect::<Vec<_>>(),
            )
        })
        .chain(u.field_metadata.iter().map(|(id, f)| {
            (
                *id as i32,
                false,
                f.metadata
                    .iter()
                    .map(|(k, v)| (k.as_str(), Some(v.as_str())))
                    .collect(),
            )
        }));
    for (id, replace, values) in entries {
        let touches = values.iter().any(|(k, _)| is_key_entry(k));
        if has_key {
            let holds_key = m.fields.iter().find(|f| f.id == id).is_some_and(|f| {
                f.unenforced_primary_key || f.metadata.keys().any(|k| is_key_entry(k))
            });
            if touches || (replace && holds_key) {
                return Err(changed(id));
            }
            continue;
        }
        for (key, value) in values.iter().filter(|(k, _)| is_key_entry(k)) {
            let valid = match (*key, value) {
                (PRIMARY_KEY, Some(v)) => {
                    matches!(v.trim().to_ascii_lowercase().as_str(), "true" | "1" | "yes")
                }
                (_, Some(v)) => v.trim().parse::<u32>().is_ok_and(|p| p > 0),
                (_, None) => true,
            };
            if !valid {
                return Err(Error::invalid(format!(
                    "{uri}: the unenforced primary key is a reserved key and cannot be set to an \
                     invalid value ({key} = {value:?} on field id {id})"
                )));
            }
        }
    }
    Ok(())
}

/// After field metadata changed: each Field message's key flags set from its metadata
/// again, and the new key checked.
pub fn refresh(m: &mut Manifest, uri: &str) -> Result<()> {
    let schema = LanceSchema::from_proto(&m.fields, &m.schema_metadata)?;
    let mut positions = std::collections::HashMap::new();
    fn walk(fields: &[LanceField], out: &mut std::collections::HashMap<i32, Option<u32>>) {
        for f in fields {
            out.insert(f.id, f.primary_key_position());
            walk(&f.children, out);
        }
    }
    walk(&schema.fields, &mut positions);
    for f in &mut m.fields {
        let pos = positions.get(&f.id).copied().flatten();
        f.unenforced_primary_key = pos.is_some();
        f.unenforced_primary_key_position = pos.unwrap_or(0);
    }
    super::schema::check_primary_key(&schema).map_err(|e| Error::invalid(format!("{uri}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::config::update_map;
    use arrow_schema::{DataType, Field, Fields, Schema};
    use std::collections::HashMap;

    fn key(pos: Option<&str>) -> HashMap<String, String> {
        let mut m = HashMap::from([(PRIMARY_KEY.to_string(), "true".to_string())]);
        if let Some(p) = pos {
            m.insert(PRIMARY_KEY_POSITION.to_string(), p.to_string());
        }
        m
    }

    fn schema(fields: Vec<Field>) -> Result<LanceSchema> {
        LanceSchema::from_arrow(&Schema::new(fields), 0)
    }

    #[test]
    fn key_order_is_positions_then_field_ids() {
        let s = schema(vec![
            Field::new("a", DataType::Int64, false).with_metadata(key(None)),
            Field::new("b", DataType::Int64, false).with_metadata(key(Some("2"))),
            Field::new("c", DataType::Int64, false),
            Field::new("d", DataType::Utf8, false).with_metadata(key(Some("1"))),
            Field::new("e", DataType::Int64, false).with_metadata(key(None)),
        ])
        .unwrap();
        assert_eq!(key_paths(&s), ["d", "b", "a", "e"]);
        let nested = Fields::from(vec![
            Field::new("x", DataType::Int32, false).with_metadata(key(None))
        ]);
        let s = schema(vec![Field::new("s", DataType::Struct(nested), false)]).unwrap();
        assert_eq!(key_paths(&s), ["s.x"]);
    }

    #[test]
    fn key_columns_must_be_non_null_leaves_outside_lists() {
        let err = |fields| schema(fields).unwrap_err().to_string();
        let nullable = err(vec![
            Field::new("a", DataType::Int64, true).with_metadata(key(None))
        ]);
        assert!(
            nullable.contains("'a'") && nullable.contains("must not be nullable"),
            "{nullable}"
        );
        let inner = Fields::from(vec![
            Field::new("x", DataType::Int32, false).with_metadata(key(None))
        ]);
        let parent = err(vec![Field::new("s", DataType::Struct(inner.clone()), true)]);
        assert!(
            parent.contains("'s.x'") && parent.contains("ancestors"),
            "{parent}"
        );
        let leaf = err(vec![
            Field::new("s", DataType::Struct(inner), false).with_metadata(key(None))
        ]);
        assert!(leaf.contains("must be a leaf"), "{leaf}");
        let item = Field::new("item", DataType::Int32, false).with_metadata(key(None));
        let listed = err(vec![Field::new("l", DataType::List(item.into()), false)]);
        assert!(listed.contains("inside a list"), "{listed}");
        // "false" does not declare a key.
        let off = HashMap::from([(PRIMARY_KEY.to_string(), "false".to_string())]);
        assert!(schema(vec![
            Field::new("a", DataType::Int64, true).with_metadata(off)
        ])
        .is_ok());
    }

    fn manifest(fields: Vec<Field>) -> Manifest {
        let s = schema(fields).unwrap();
        Manifest {
            fields: s.to_proto(),
            ..Default::default()
        }
    }

    fn change(id: i32, values: Vec<(&str, Option<&str>)>, replace: bool) -> UpdateConfig {
        let values = values
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.map(str::to_string)));
        UpdateConfig {
            field_metadata_updates: HashMap::from([(id, update_map(values, replace))]),
            ..Default::default()
        }
    }

    #[test]
    fn a_key_once_set_is_not_changed() {
        let keyed = manifest(vec![
            Field::new("id", DataType::Int64, false).with_metadata(key(None)),
            Field::new("v", DataType::Utf8, false),
        ]);
        for u in [
            change(0, vec![(PRIMARY_KEY, None)], false),
            change(0, vec![(PRIMARY_KEY, Some("true"))], false),
            change(0, vec![("other", Some("x"))], true),
            change(1, vec![(PRIMARY_KEY_POSITION, Some("2"))], false),
            change(1, vec![(PRIMARY_KEY, None)], false),
        ] {
            let e = check_update(&keyed, &u, "t").unwrap_err().to_string();
            assert!(e.contains("cannot be changed once set"), "{e}");
        }
        check_update(&keyed, &change(0, vec![("other", Some("x"))], false), "t").unwrap();
        check_update(&keyed, &change(1, vec![("other", Some("x"))], true), "t").unwrap();
    }

    #[test]
    fn a_table_without_a_key_may_be_given_a_valid_one() {
        let mut plain = manifest(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("v", DataType::Utf8, true),
        ]);
        let bad = check_update(
            &plain,
            &change(0, vec![(PRIMARY_KEY, Some("false"))], false),
            "t",
        );
        assert!(bad.unwrap_err().to_string().contains("invalid value"));
        let u = change(0, vec![(PRIMARY_KEY, Some("true"))], false);
        crate::table::config::apply_update(&mut plain, &u, "t").unwrap();
        assert!(plain.fields[0].unenforced_primary_key);
        // On the nullable column the new key is refused.
        let mut plain = manifest(vec![Field::new("v", DataType::Utf8, true)]);
        let u = change(0, vec![(PRIMARY_KEY, Some("true"))], false);
        let e = crate::table::config::apply_update(&mut plain, &u, "t").unwrap_err();
        assert!(e.to_string().contains("must not be nullable"), "{e}");
    }
}
