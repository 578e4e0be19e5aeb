//! Packed structs: each row's fields stored next to each other. With only fixed-width
//! fields the rows have one width (mini-block); with a variable-width field each field
//! is either its fixed bytes or a length prefix and bytes (full-zip, one row per value).
use super::{PackedField, PackedLayout};
use crate::encoding::bytes::{slice, uint_at};
use crate::encoding::values::ValuesBuilder;
use crate::error::{corrupt, Result};

fn children(
    out: &mut ValuesBuilder,
    fields: usize,
) -> Result<(&mut Vec<ValuesBuilder>, &mut usize)> {
    match out {
        ValuesBuilder::Struct { children, len } => {
            if children.len() != fields {
                return Err(corrupt(format!(
                    "packed struct of {fields} fields read as a struct of {}",
                    children.len()
                )));
            }
            Ok((children, len))
        }
        _ => Err(corrupt(
            "packed struct encoding for values that are not structs",
        )),
    }
}

/// `n` rows of fixed-width fields (`bits` per field).
pub fn decode_fixed(buf: &[u8], bits: &[u64], n: usize, out: &mut ValuesBuilder) -> Result<()> {
    let widths: Vec<usize> = bits.iter().map(|b| (*b / 8) as usize).collect();
    let row: usize = widths.iter().sum();
    let size = row
        .checked_mul(n)
        .ok_or_else(|| corrupt(format!("{n} packed rows of {row} bytes")))?;
    let data = slice(buf, 0, size, "packed struct rows")?;
    let (children, len) = children(out, widths.len())?;
    let mut offset = 0;
    for (child, &w) in children.iter_mut().zip(&widths) {
        let child = child.fixed()?;
        if child.bits as usize != w * 8 {
            return Err(corrupt(format!(
                "packed field of {} bits read as {}-bit values",
                w * 8,
                child.bits
            )));
        }
        let dst = child.extend_uninit(n);
        for (r, slot) in dst.chunks_exact_mut(w).enumerate() {
            slot.copy_from_slice(&data[r * row + offset..r * row + offset + w]);
        }
        offset += w;
    }
    *len += n;
    Ok(())
}

/// One row of fixed and variable-width fields.
pub fn decode_variable_row(
    fields: &[PackedField],
    row: &[u8],
    out: &mut ValuesBuilder,
) -> Result<()> {
    let (children, len) = children(out, fields.len())?;
    let mut at = 0usize;
    for (field, child) in fields.iter().zip(children.iter_mut()) {
        match field.layout {
            PackedLayout::Fixed(bits) => {
                let bytes = slice(row, at, (bits / 8) as usize, "packed field")?;
                at += bytes.len();
                field.codec.decode_value(bytes, child)?;
            }
            PackedLayout::Variable(bits) => {
                let w = (bits / 8) as usize;
                let n = uint_at(row, at, w, "packed field length")?;
                at += w;
                let bytes = slice(row, at, n as usize, "packed field value")?;
                at += bytes.len();
                field.codec.decode_value(bytes, child)?;
            }
        }
    }
    *len += 1;
    Ok(())
}
