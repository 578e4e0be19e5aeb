//! JSON columns are stored as JSONB (a binary JSON encoding, the `jsonb` crate's); a scan
//! returns them as JSON text, as pylance does.
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, LargeBinaryArray, StringArray};
use arrow_schema::FieldRef;

use crate::error::{corrupt, Result};

pub fn jsonb_to_text(array: &ArrayRef, field: &FieldRef) -> Result<ArrayRef> {
    let bin = array
        .as_any()
        .downcast_ref::<LargeBinaryArray>()
        .ok_or_else(|| {
            corrupt(format!(
                "JSON column '{}' stored as {}",
                field.name(),
                array.data_type()
            ))
        })?;
    let text: StringArray = bin
        .iter()
        .map(|v| v.map(|b| jsonb::RawJsonb::new(b).to_string()))
        .collect();
    Ok(Arc::new(text))
}

/// JSON text → JSONB, for writing JSON columns; text that is not JSON is an error naming
/// the column.
pub fn text_to_jsonb(array: &ArrayRef, column: &str) -> Result<ArrayRef> {
    use arrow_array::cast::AsArray;
    let strings: Vec<Option<&str>> = match array.data_type() {
        arrow_schema::DataType::Utf8 => array.as_string::<i32>().iter().collect(),
        arrow_schema::DataType::LargeUtf8 => array.as_string::<i64>().iter().collect(),
        other => return Err(corrupt(format!("JSON column '{column}' given as {other}"))),
    };
    let mut out = Vec::with_capacity(strings.len());
    for (i, s) in strings.into_iter().enumerate() {
        out.push(match s {
            None => None,
            Some(text) => Some(
                jsonb::parse_value(text.as_bytes())
                    .map_err(|e| {
                        crate::Error::invalid(format!(
                            "column '{column}' row {i} is not valid JSON: {e}"
                        ))
                    })?
                    .to_vec(),
            ),
        });
    }
    Ok(Arc::new(LargeBinaryArray::from(
        out.iter().map(|v| v.as_deref()).collect::<Vec<_>>(),
    )))
}
