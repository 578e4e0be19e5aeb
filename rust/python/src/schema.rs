//! `lance_core.schema.LanceSchema`: a schema with Lance field ids, held in Python as the
//! file format's `Schema` message (bytes).
use std::collections::HashMap;

use prost::Message;
use pyo3::prelude::*;

use lance_core::proto::file::Schema as PbSchema;
use lance_core::table::schema::LanceSchema;

use crate::arrow_export::PyArrowSchema;
use crate::arrow_import::import_schema;
use crate::errors::{guard, raise, IntoPyResult};

pub fn encode(schema: &LanceSchema) -> Vec<u8> {
    PbSchema {
        fields: schema.to_proto(),
        metadata: schema.metadata_proto(),
    }
    .encode_to_vec()
}

fn decode_proto(py: Python<'_>, data: &[u8]) -> PyResult<PbSchema> {
    PbSchema::decode(data)
        .map_err(|e| raise(py, "InvalidInputError", format!("bad Lance schema: {e}")))
}

pub fn decode(py: Python<'_>, data: &[u8]) -> PyResult<LanceSchema> {
    let pb = decode_proto(py, data)?;
    LanceSchema::from_proto(&pb.fields, &pb.metadata).py()
}

/// The fields of a `LanceSchema`'s bytes, as stored.
pub fn decode_fields(py: Python<'_>, data: &[u8]) -> PyResult<Vec<lance_core::proto::file::Field>> {
    Ok(decode_proto(py, data)?.fields)
}

/// A pyarrow schema with field ids numbered from 0, as a new table would get them.
#[pyfunction]
pub fn _lance_schema_from_arrow(schema: Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    guard(|| {
        let schema = import_schema(&schema)?;
        Ok(encode(&LanceSchema::from_arrow(&schema, 0).py()?))
    })
}

#[pyfunction]
pub fn _lance_schema_to_arrow(py: Python<'_>, data: Vec<u8>) -> PyResult<PyArrowSchema> {
    guard(|| {
        let schema = decode(py, &data)?.to_arrow().py()?;
        Ok(PyArrowSchema(std::sync::Arc::new(schema)))
    })
}

/// One field as `_lance_schema_fields` gives it.
type FieldRow = (
    i32,
    i32,
    String,
    bool,
    u32,
    String,
    bool,
    HashMap<String, String>,
);

/// Every field, parents before children: (id, parent id, name, unenforced primary key,
/// its position, logical type, nullable, metadata).
#[pyfunction]
pub fn _lance_schema_fields(py: Python<'_>, data: Vec<u8>) -> PyResult<Vec<FieldRow>> {
    Ok(decode_fields(py, &data)?
        .iter()
        .map(|f| {
            let metadata = f
                .metadata
                .iter()
                .map(|(k, v)| (k.clone(), String::from_utf8_lossy(v).into_owned()))
                .collect();
            (
                f.id,
                f.parent_id,
                f.name.clone(),
                f.unenforced_primary_key,
                f.unenforced_primary_key_position,
                f.logical_type.clone(),
                f.nullable,
                metadata,
            )
        })
        .collect())
}

/// A pyarrow schema as JSON text, in pylance's `schema_to_json` shape.
#[pyfunction]
pub fn _schema_to_json(schema: Bound<'_, PyAny>) -> PyResult<String> {
    guard(|| {
        let schema = import_schema(&schema)?;
        let value = lance_core::table::schema_json::schema_to_json(&schema).py()?;
        Ok(value.to_string())
    })
}

/// The pyarrow schema of JSON text in pylance's `schema_to_json` shape.
#[pyfunction]
pub fn _json_to_schema(text: String) -> PyResult<PyArrowSchema> {
    guard(|| {
        let schema = lance_core::table::schema_json::schema_from_json_text(&text).py()?;
        Ok(PyArrowSchema(std::sync::Arc::new(schema)))
    })
}
