//! A fragment's metadata as JSON, in the shape pylance's `FragmentMetadata.to_json()` gives
//! and `from_json()` takes: how fragments written by one process (a Spark task, a progress
//! file, pylance itself) reach the process that commits them.
//!
//! Written: every key pylance writes. Read: what pylance reads, with its defaults for keys
//! an older writer left out (`column_indices`, the file versions, `file_size_bytes`).
use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::proto::table::{
    data_fragment::{CreatedAtVersionSequence, LastUpdatedAtVersionSequence, RowIdSequence},
    deletion_file::DeletionFileType,
    DataFile, DataFragment, DeletionFile, ExternalFile,
};

/// `fragment` as pylance's JSON object.
pub fn fragment_to_json(fragment: &DataFragment) -> Value {
    let files: Vec<Value> = fragment.files.iter().map(data_file_to_json).collect();
    let deletion = fragment.deletion_file.as_ref().map(|d| {
        json!({
            "read_version": d.read_version,
            "id": d.id,
            "file_type": match d.file_type() {
                DeletionFileType::ArrowArray => "array",
                DeletionFileType::Bitmap => "bitmap",
            },
            // pylance reads 0 as "unknown" and writes it back as null.
            "num_deleted_rows": (d.num_deleted_rows > 0).then_some(d.num_deleted_rows),
            "base_id": d.base_id,
        })
    });
    let row_ids = fragment.row_id_sequence.as_ref().map(|s| match s {
        RowIdSequence::InlineRowIds(b) => json!({ "Inline": b }),
        RowIdSequence::ExternalRowIds(f) => json!({ "External": external_to_json(f) }),
    });
    let created = fragment
        .created_at_version_sequence
        .as_ref()
        .map(|s| match s {
            CreatedAtVersionSequence::InlineCreatedAtVersions(b) => json!({ "inline": b }),
            CreatedAtVersionSequence::ExternalCreatedAtVersions(f) => {
                json!({ "external": external_to_json(f) })
            }
        });
    let updated = fragment
        .last_updated_at_version_sequence
        .as_ref()
        .map(|s| match s {
            LastUpdatedAtVersionSequence::InlineLastUpdatedAtVersions(b) => json!({ "inline": b }),
            LastUpdatedAtVersionSequence::ExternalLastUpdatedAtVersions(f) => {
                json!({ "external": external_to_json(f) })
            }
        });
    json!({
        "id": fragment.id,
        "files": files,
        "overlays": [],
        "physical_rows": fragment.physical_rows,
        "deletion_file": deletion,
        "row_id_meta": row_ids,
        "created_at_version_meta": created,
        "last_updated_at_version_meta": updated,
    })
}

fn data_file_to_json(f: &DataFile) -> Value {
    json!({
        "path": f.path,
        "fields": f.fields,
        "column_indices": f.column_indices,
        "file_major_version": f.file_major_version,
        "file_minor_version": f.file_minor_version,
        // 0 is "not recorded" in the manifest, null in pylance's JSON.
        "file_size_bytes": (f.file_size_bytes > 0).then_some(f.file_size_bytes),
        "base_id": f.base_id,
    })
}

fn external_to_json(f: &ExternalFile) -> Value {
    json!({ "path": f.path, "offset": f.offset, "size": f.size })
}

/// A fragment from pylance's JSON (text). Errors say which key is wrong.
pub fn fragment_from_json(text: &str) -> Result<DataFragment> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| Error::invalid(format!("fragment metadata is not JSON: {e}")))?;
    let obj = object(&value, "fragment metadata")?;
    let overlays = obj.get("overlays").and_then(Value::as_array);
    if overlays.is_some_and(|o| !o.is_empty()) {
        return Err(crate::error::unsupported(
            "fragment metadata with data overlay files (lance_core does not read overlays)",
        ));
    }
    let files = match obj.get("files") {
        Some(Value::Array(files)) => files
            .iter()
            .map(data_file_from_json)
            .collect::<Result<Vec<_>>>()?,
        Some(Value::Null) | None => Vec::new(),
        Some(_) => return Err(Error::invalid("fragment metadata: 'files' is not a list")),
    };
    let deletion_file = match obj.get("deletion_file") {
        None | Some(Value::Null) => None,
        Some(d) => Some(deletion_from_json(d)?),
    };
    let row_id_sequence = match obj.get("row_id_meta") {
        None | Some(Value::Null) => None,
        Some(v) => Some(match sequence_from_json(v, "row_id_meta")? {
            Sequence::Inline(b) => RowIdSequence::InlineRowIds(b),
            Sequence::External(f) => RowIdSequence::ExternalRowIds(f),
        }),
    };
    let created_at_version_sequence = match obj.get("created_at_version_meta") {
        None | Some(Value::Null) => None,
        Some(v) => Some(match sequence_from_json(v, "created_at_version_meta")? {
            Sequence::Inline(b) => CreatedAtVersionSequence::InlineCreatedAtVersions(b),
            Sequence::External(f) => CreatedAtVersionSequence::ExternalCreatedAtVersions(f),
        }),
    };
    let last_updated_at_version_sequence = match obj.get("last_updated_at_version_meta") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            match sequence_from_json(v, "last_updated_at_version_meta")? {
                Sequence::Inline(b) => LastUpdatedAtVersionSequence::InlineLastUpdatedAtVersions(b),
                Sequence::External(f) => {
                    LastUpdatedAtVersionSequence::ExternalLastUpdatedAtVersions(f)
                }
            },
        ),
    };
    Ok(DataFragment {
        id: required_u64(obj, "id", "fragment metadata")?,
        files,
        deletion_file,
        physical_rows: optional_u64(obj, "physical_rows", "fragment metadata")?.unwrap_or(0),
        row_id_sequence,
        last_updated_at_version_sequence,
        created_at_version_sequence,
    })
}

fn data_file_from_json(v: &Value) -> Result<DataFile> {
    let what = "fragment metadata: a data file";
    let obj = object(v, what)?;
    // pylance's own dataclass names the path `_path`; either is accepted.
    let path = match obj.get("path").or_else(|| obj.get("_path")) {
        Some(Value::String(s)) => s.clone(),
        _ => return Err(Error::invalid(format!("{what} has no 'path'"))),
    };
    Ok(DataFile {
        path,
        fields: i32_list(obj, "fields", what)?,
        column_indices: i32_list(obj, "column_indices", what)?,
        file_major_version: optional_u64(obj, "file_major_version", what)?.unwrap_or(0) as u32,
        file_minor_version: optional_u64(obj, "file_minor_version", what)?.unwrap_or(0) as u32,
        file_size_bytes: optional_u64(obj, "file_size_bytes", what)?.unwrap_or(0),
        base_id: optional_u64(obj, "base_id", what)?.map(|b| b as u32),
    })
}

fn deletion_from_json(v: &Value) -> Result<DeletionFile> {
    let what = "fragment metadata: the deletion file";
    let obj = object(v, what)?;
    let file_type = match obj.get("file_type").and_then(Value::as_str) {
        Some("array") | None => DeletionFileType::ArrowArray,
        Some("bitmap") => DeletionFileType::Bitmap,
        Some(other) => {
            return Err(Error::invalid(format!(
                "{what}: unknown file_type '{other}' (known: array, bitmap)"
            )))
        }
    };
    Ok(DeletionFile {
        file_type: file_type as i32,
        read_version: required_u64(obj, "read_version", what)?,
        id: required_u64(obj, "id", what)?,
        num_deleted_rows: optional_u64(obj, "num_deleted_rows", what)?.unwrap_or(0),
        base_id: optional_u64(obj, "base_id", what)?.map(|b| b as u32),
    })
}

enum Sequence {
    Inline(Vec<u8>),
    External(ExternalFile),
}

/// `{"Inline": [bytes]}` / `{"External": {...}}` (row ids) or their lower-case forms
/// (version sequences), as pylance writes each.
fn sequence_from_json(v: &Value, what: &str) -> Result<Sequence> {
    let obj = object(v, what)?;
    let (key, body) = obj
        .iter()
        .next()
        .filter(|_| obj.len() == 1)
        .ok_or_else(|| Error::invalid(format!("fragment metadata: {what} needs one key")))?;
    match key.to_ascii_lowercase().as_str() {
        "inline" => {
            let bytes = body
                .as_array()
                .ok_or_else(|| Error::invalid(format!("{what}: inline is not a list")))?
                .iter()
                .map(|b| b.as_u64().filter(|b| *b < 256).map(|b| b as u8))
                .collect::<Option<Vec<u8>>>()
                .ok_or_else(|| Error::invalid(format!("{what}: inline holds a non-byte")))?;
            Ok(Sequence::Inline(bytes))
        }
        "external" => {
            let f = object(body, what)?;
            Ok(Sequence::External(ExternalFile {
                path: f
                    .get("path")
                    .and_then(Value::as_str)
                    .ok_or_else(|| Error::invalid(format!("{what}: external has no path")))?
                    .to_string(),
                offset: required_u64(f, "offset", what)?,
                size: required_u64(f, "size", what)?,
            }))
        }
        other => Err(Error::invalid(format!(
            "fragment metadata: {what} has unknown kind '{other}'"
        ))),
    }
}

fn object<'a>(v: &'a Value, what: &str) -> Result<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| Error::invalid(format!("{what} is not a JSON object")))
}

fn optional_u64(obj: &Map<String, Value>, key: &str, what: &str) -> Result<Option<u64>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            Error::invalid(format!(
                "{what}: '{key}' is not a non-negative integer: {v}"
            ))
        }),
    }
}

fn required_u64(obj: &Map<String, Value>, key: &str, what: &str) -> Result<u64> {
    optional_u64(obj, key, what)?.ok_or_else(|| Error::invalid(format!("{what} has no '{key}'")))
}

fn i32_list(obj: &Map<String, Value>, key: &str, what: &str) -> Result<Vec<i32>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_i64().and_then(|v| i32::try_from(v).ok()))
            .collect::<Option<Vec<i32>>>()
            .ok_or_else(|| Error::invalid(format!("{what}: '{key}' holds a non-integer"))),
        Some(v) => Err(Error::invalid(format!(
            "{what}: '{key}' is not a list: {v}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_part() {
        let f = DataFragment {
            id: 7,
            files: vec![DataFile {
                path: "a.lance".into(),
                fields: vec![0, -1, 2],
                column_indices: vec![0, 1],
                file_major_version: 2,
                file_minor_version: 2,
                file_size_bytes: 614,
                base_id: Some(3),
            }],
            deletion_file: Some(DeletionFile {
                file_type: DeletionFileType::Bitmap as i32,
                read_version: 4,
                id: u64::MAX,
                num_deleted_rows: 2,
                base_id: None,
            }),
            physical_rows: 10,
            row_id_sequence: Some(RowIdSequence::InlineRowIds(vec![10, 4, 200])),
            last_updated_at_version_sequence: Some(
                LastUpdatedAtVersionSequence::ExternalLastUpdatedAtVersions(ExternalFile {
                    path: "v.bin".into(),
                    offset: 5,
                    size: 9,
                }),
            ),
            created_at_version_sequence: Some(CreatedAtVersionSequence::InlineCreatedAtVersions(
                vec![1, 2],
            )),
        };
        let text = fragment_to_json(&f).to_string();
        assert_eq!(fragment_from_json(&text).unwrap(), f);
    }

    #[test]
    fn reads_what_old_writers_left_out_and_names_bad_keys() {
        let f = fragment_from_json(
            r#"{"id": 0, "files": [{"path": "0.lance", "fields": [0]}], "physical_rows": 100}"#,
        )
        .unwrap();
        assert_eq!(f.files[0].file_size_bytes, 0);
        assert!(f.files[0].column_indices.is_empty());
        let err = fragment_from_json(r#"{"files": []}"#).unwrap_err();
        assert!(err.to_string().contains("'id'"), "{err}");
        let err = fragment_from_json(r#"{"id": 1, "deletion_file": {"id": 1}}"#).unwrap_err();
        assert!(err.to_string().contains("read_version"), "{err}");
        let err = fragment_from_json(r#"{"id": 1, "overlays": [{}]}"#).unwrap_err();
        assert!(err.to_string().contains("overlay"), "{err}");
    }
}
