//! Packed structs on write (`lance-encoding:packed`, and blob descriptors): a struct
//! stored as one column whose values are its rows, each row its fields' bytes side by
//! side, so that one read returns whole rows. With fixed-width fields only, every row has
//! one width: a mini-block page whose values are `PackedStruct` rows (formats 2.1 and
//! 2.2). With a variable-width field (strings, binary) or a fixed-size list, each row is
//! a full-zip value of `VariablePackedStruct` fields: fixed bytes, or a length and bytes
//! (2.2 only). Fields cannot be NULL where their struct is valid; the struct can.
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BinaryArray, FixedSizeBinaryArray, StructArray};
use arrow_schema::DataType;

use super::levels::LeafLevels;
use super::proto::{self, PackedFieldLayout};
use super::values::Values;
use super::{fullzip, miniblock, EncodedPage, PageOptions};
use crate::error::{unsupported, Error, Result};
use crate::proto::encodings21 as pb;

/// Whether a field of type `dt` can be packed, and whether it makes rows variable-width
/// (None: it cannot be packed).
pub fn packable(dt: &DataType) -> Option<bool> {
    match dt {
        DataType::Boolean => None,
        DataType::Utf8 | DataType::Binary | DataType::LargeUtf8 | DataType::LargeBinary => {
            Some(true)
        }
        DataType::FixedSizeList(item, _) => match item.data_type() {
            DataType::Boolean => None,
            t => t.primitive_width().map(|_| true),
        },
        DataType::FixedSizeBinary(_) => Some(false),
        t => t.primitive_width().map(|_| false),
    }
}

/// One field's bytes, as rows take them.
enum Field {
    Fixed { values: Values, width: usize },
    Variable { values: Values, large: bool },
}

impl Field {
    fn of(child: &ArrayRef, name: &str, parent: &str) -> Result<Field> {
        let values = Values::of(child)?;
        Ok(match values {
            Values::Fixed { width, .. } => Field::Fixed { values, width },
            Values::FixedSizeList {
                dim,
                item_width,
                ref item_validity,
                ..
            } => {
                if item_validity.is_some() {
                    return Err(Error::invalid(format!(
                        "packed struct field '{parent}': '{name}' has NULL list items"
                    )));
                }
                Field::Fixed {
                    width: dim * item_width,
                    values,
                }
            }
            Values::Variable { large, .. } => Field::Variable { values, large },
            Values::Bool { .. } => {
                return Err(unsupported(format!(
                    "packed struct field '{parent}': booleans ('{name}') are not byte-wide"
                )))
            }
        })
    }

    /// The bytes of row `r` (without a length prefix).
    fn bytes(&self, r: usize) -> &[u8] {
        match self {
            Field::Fixed {
                values: Values::Fixed { bytes, .. } | Values::FixedSizeList { bytes, .. },
                width,
            } => &bytes[r * width..(r + 1) * width],
            Field::Fixed { .. } => &[],
            Field::Variable { values, .. } => values.value(r),
        }
    }

    /// How the field is described in a `VariablePackedStruct`.
    fn encoding(&self, child: &DataType) -> (pb::CompressiveEncoding, PackedFieldLayout) {
        match (self, child) {
            (Field::Fixed { width, .. }, DataType::FixedSizeList(item, dim)) => {
                let bits = item.data_type().primitive_width().unwrap_or(0) as u64 * 8;
                (
                    proto::fixed_size_list(*dim as u64, false, proto::flat(bits)),
                    PackedFieldLayout::Fixed(*width as u64 * 8),
                )
            }
            (Field::Fixed { width, .. }, _) => {
                let bits = *width as u64 * 8;
                (proto::flat(bits), PackedFieldLayout::Fixed(bits))
            }
            (Field::Variable { large, .. }, _) => {
                let bits = if *large { 64 } else { 32 };
                (proto::variable(bits), PackedFieldLayout::Variable(bits))
            }
        }
    }
}

/// Encode one page of a packed struct column: `levels.values` is the struct array
/// (`name` names the column in errors).
pub fn encode(levels: LeafLevels, opts: &PageOptions, name: &str) -> Result<EncodedPage> {
    let s = levels
        .values
        .as_any()
        .downcast_ref::<StructArray>()
        .ok_or_else(|| {
            unsupported(format!(
                "packed struct field '{name}' holds {}",
                levels.values.data_type()
            ))
        })?
        .clone();
    let fields_meta = s.fields().clone();
    let mut fields = Vec::with_capacity(s.num_columns());
    for (f, child) in fields_meta.iter().zip(s.columns()) {
        if packable(f.data_type()).is_none() {
            return Err(unsupported(format!(
                "packed struct field '{name}': '{}' is {}, which cannot be packed",
                f.name(),
                f.data_type()
            )));
        }
        if let Some(nulls) = child.logical_nulls() {
            if (0..s.len()).any(|i| s.is_valid(i) && nulls.is_null(i)) {
                return Err(Error::invalid(format!(
                    "packed struct field '{name}': '{}' has NULL values (a packed struct \
                     can be NULL, its fields cannot)",
                    f.name()
                )));
            }
        }
        fields.push(Field::of(child, f.name(), name)?);
    }
    let variable = fields_meta
        .iter()
        .any(|f| packable(f.data_type()) == Some(true));
    let nulls = s.nulls().cloned();
    if !variable {
        let width: usize = fields
            .iter()
            .map(|f| match f {
                Field::Fixed { width, .. } => *width,
                Field::Variable { .. } => 0,
            })
            .sum();
        let mut rows = Vec::with_capacity(width * s.len());
        for r in 0..s.len() {
            for f in &fields {
                rows.extend_from_slice(f.bytes(r));
            }
        }
        let bits: Vec<u64> = fields
            .iter()
            .map(|f| match f {
                Field::Fixed { width, .. } => *width as u64 * 8,
                Field::Variable { .. } => 0,
            })
            .collect();
        let rows: ArrayRef = Arc::new(FixedSizeBinaryArray::try_new(
            width as i32,
            rows.into(),
            nulls,
        )?);
        let levels = LeafLevels {
            values: rows,
            ..levels
        };
        let opts = PageOptions {
            large_chunks: opts.large_chunks,
            force_mini_block: true,
            ..Default::default()
        };
        let mut page = miniblock::encode(&levels, &opts)?;
        if let Some(pb::page_layout::Layout::MiniBlockLayout(m)) = page.layout.layout.as_mut() {
            let inner = m
                .value_compression
                .take()
                .unwrap_or_else(|| proto::flat(width as u64 * 8));
            m.value_compression = Some(proto::packed_struct(bits, inner));
        }
        return Ok(page);
    }
    if !opts.large_chunks {
        return Err(unsupported(format!(
            "packed struct field '{name}' with variable-width or list fields in format 2.1 \
             (it needs 2.2)"
        )));
    }
    let mut rows: Vec<Option<Vec<u8>>> = Vec::with_capacity(s.len());
    for r in 0..s.len() {
        if s.is_null(r) {
            rows.push(None);
            continue;
        }
        let mut row = Vec::new();
        for f in &fields {
            let bytes = f.bytes(r);
            match f {
                Field::Variable { large: true, .. } => {
                    row.extend_from_slice(&(bytes.len() as u64).to_le_bytes())
                }
                Field::Variable { large: false, .. } => {
                    row.extend_from_slice(&(bytes.len() as u32).to_le_bytes())
                }
                Field::Fixed { .. } => {}
            }
            row.extend_from_slice(bytes);
        }
        rows.push(Some(row));
    }
    let encodings = fields
        .iter()
        .zip(fields_meta.iter())
        .map(|(f, m)| f.encoding(m.data_type()))
        .collect();
    let rows: ArrayRef = Arc::new(BinaryArray::from_iter(rows));
    let levels = LeafLevels {
        values: rows,
        ..levels
    };
    let mut page = fullzip::encode(&levels, false)?;
    if let Some(pb::page_layout::Layout::FullZipLayout(f)) = page.layout.layout.as_mut() {
        f.value_compression = Some(proto::variable_packed_struct(encodings));
    }
    Ok(page)
}
