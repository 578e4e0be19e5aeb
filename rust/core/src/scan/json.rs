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
