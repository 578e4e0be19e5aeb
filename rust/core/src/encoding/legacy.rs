//! Pages of legacy (0.1) files. A page is one field's values in one batch, laid out by
//! type alone: fixed-width values (and fixed-size lists of them) back to back, booleans
//! as bits, strings as their bytes followed by absolute i64 file positions, lists as
//! offsets into their items' page. There is no validity: legacy files keep no nulls
//! except that a nullable string or binary that is empty reads as null (as pylance
//! reads it), and columns of the null type.
use std::sync::Arc;

use arrow_array::{make_array, new_null_array, Array, ArrayRef, BooleanArray, FixedSizeListArray};
use arrow_buffer::{BooleanBuffer, Buffer};
use arrow_schema::DataType;
use bytes::Bytes;

use super::array20::fixed_array;
use super::values::variable_array;
use crate::error::{corrupt, unsupported, Result};

/// Bits one value of a fixed-width type takes in a legacy page.
pub fn value_bits(dt: &DataType) -> Result<u64> {
    let bad = || corrupt(format!("values of type {dt}"));
    match dt {
        DataType::Boolean => Ok(1),
        DataType::FixedSizeBinary(w) => u64::try_from(*w).map(|w| 8 * w).map_err(|_| bad()),
        DataType::FixedSizeList(item, k) => u64::try_from(*k)
            .ok()
            .and_then(|k| value_bits(item.data_type()).ok()?.checked_mul(k))
            .ok_or_else(bad),
        dt => dt
            .primitive_width()
            .map(|w| 8 * w as u64)
            .ok_or_else(|| unsupported(format!("{dt} in a legacy file"))),
    }
}

/// `n` values of fixed-width type `dt` starting `bit` bits into `data`.
pub fn fixed_values(dt: &DataType, data: Bytes, bit: usize, n: usize) -> Result<ArrayRef> {
    let needed = value_bits(dt)?
        .checked_mul(n as u64)
        .and_then(|b| b.checked_add(bit as u64))
        .map(|b| b.div_ceil(8));
    if needed.is_none_or(|needed| (data.len() as u64) < needed) {
        return Err(corrupt(format!(
            "a page of {n} values of {dt} needs {} bytes, found {}",
            needed.unwrap_or(u64::MAX),
            data.len()
        )));
    }
    match dt {
        DataType::Boolean => Ok(Arc::new(BooleanArray::new(
            BooleanBuffer::new(Buffer::from(data), bit, n),
            None,
        ))),
        DataType::FixedSizeList(item, k) => {
            let count = n
                .checked_mul(*k as usize)
                .ok_or_else(|| corrupt(format!("{n} lists of {k} items")))?;
            let items = fixed_values(item.data_type(), data, bit, count)?;
            Ok(Arc::new(FixedSizeListArray::try_new(
                item.clone(),
                *k,
                items,
                None,
            )?))
        }
        dt if bit == 0 => fixed_array(dt, n, Buffer::from(data)),
        dt => Err(corrupt(format!("{dt} values that do not start on a byte"))),
    }
}

/// `count` little-endian offsets of 4 or 8 bytes.
pub fn offsets(data: &[u8], width: usize, count: usize) -> Result<Vec<i64>> {
    let size = width
        .checked_mul(count)
        .ok_or_else(|| corrupt(format!("{count} legacy offsets")))?;
    let data = super::bytes::slice(data, 0, size, "legacy offsets")?;
    Ok(data
        .chunks_exact(width)
        .map(|c| match width {
            4 => i32::from_le_bytes(c.try_into().unwrap()) as i64,
            _ => i64::from_le_bytes(c.try_into().unwrap()),
        })
        .collect())
}

/// Strings or binaries: `positions` are the `n + 1` absolute file positions bounding the
/// values, `data` the file's bytes from `positions[0]`. With `nullable`, an empty value is
/// null (legacy files store no validity; this is how pylance reads them).
pub fn var_binary(
    positions: &[i64],
    data: Bytes,
    dt: &DataType,
    nullable: bool,
) -> Result<ArrayRef> {
    let n = positions.len().saturating_sub(1);
    let first = positions.first().copied().unwrap_or(0);
    let mut ends = Vec::with_capacity(n + 1);
    let mut valid = Vec::with_capacity(n);
    let mut prev = 0u64;
    ends.push(0u64);
    for &p in &positions[1.min(positions.len())..] {
        let end = p
            .checked_sub(first)
            .filter(|&e| e >= prev as i64 && e as usize <= data.len())
            .ok_or_else(|| {
                corrupt(format!(
                    "string positions out of order or outside the file ({p})"
                ))
            })? as u64;
        valid.push(!(nullable && end == prev));
        ends.push(end);
        prev = end;
    }
    variable_array(dt, &ends, data, valid)
}

/// Dictionary keys (plain values of the key type) and the field's dictionary.
pub fn dictionary(keys: ArrayRef, values: ArrayRef, dt: &DataType) -> Result<ArrayRef> {
    let size = values.len() as u64;
    let strict = arrow_cast::CastOptions {
        safe: false,
        ..Default::default()
    };
    let as_u64 = arrow_cast::cast_with_options(&keys, &DataType::UInt64, &strict)
        .map_err(|_| corrupt("negative dictionary key"))?;
    let as_u64 = as_u64
        .as_any()
        .downcast_ref::<arrow_array::UInt64Array>()
        .ok_or_else(|| corrupt("dictionary keys"))?;
    if let Some(k) = as_u64.values().iter().find(|&&k| k >= size) {
        return Err(corrupt(format!(
            "dictionary key {k} out of range for {size} values"
        )));
    }
    let data = keys
        .to_data()
        .into_builder()
        .data_type(dt.clone())
        .child_data(vec![values.to_data()]);
    Ok(make_array(data.build()?))
}

/// `n` nulls of the null type.
pub fn nulls(n: usize) -> ArrayRef {
    new_null_array(&DataType::Null, n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int32Type;
    use arrow_array::Int32Array;

    #[test]
    fn empty_strings_of_nullable_columns_are_null() {
        // Values "ab", "", "c" at file positions 100..103.
        let data = Bytes::from_static(b"abc");
        let positions = [100, 102, 102, 103];
        let a = var_binary(&positions, data.clone(), &DataType::Utf8, true).unwrap();
        let got: Vec<Option<&str>> = a.as_string::<i32>().iter().collect();
        assert_eq!(got, vec![Some("ab"), None, Some("c")]);
        let a = var_binary(&positions, data.clone(), &DataType::LargeUtf8, false).unwrap();
        let got: Vec<Option<&str>> = a.as_string::<i64>().iter().collect();
        assert_eq!(got, vec![Some("ab"), Some(""), Some("c")]);
        // Positions that go backwards or past the bytes read are corrupt.
        assert!(var_binary(&[100, 102, 101, 103], data.clone(), &DataType::Utf8, true).is_err());
        assert!(var_binary(&[100, 102, 102, 109], data, &DataType::Utf8, true).is_err());
    }

    #[test]
    fn booleans_and_vectors_start_anywhere_in_a_page() {
        // Bits 3.. of 0b1010_1000, 0b0000_0001: true, false, true, false, true, true.
        let bits = Bytes::from_static(&[0b1010_1000, 0b0000_0001]);
        let a = fixed_values(&DataType::Boolean, bits.clone(), 3, 6).unwrap();
        let got: Vec<bool> = a.as_boolean().iter().map(|v| v.unwrap()).collect();
        assert_eq!(got, vec![true, false, true, false, true, true]);
        assert!(fixed_values(&DataType::Boolean, bits, 3, 20).is_err());
        let ints: Vec<u8> = (0..6i32).flat_map(|v| v.to_le_bytes()).collect();
        let dt = DataType::new_fixed_size_list(DataType::Int32, 3, true);
        let a = fixed_values(&dt, Bytes::from(ints), 0, 2).unwrap();
        let items = a
            .as_fixed_size_list()
            .values()
            .as_primitive::<Int32Type>()
            .clone();
        assert_eq!(items.values().to_vec(), vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn dictionary_keys_must_be_in_range() {
        let dt = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        let values: ArrayRef = Arc::new(arrow_array::StringArray::from(vec!["x", "y"]));
        let ok = dictionary(
            Arc::new(Int32Array::from(vec![1, 0, 1])),
            values.clone(),
            &dt,
        )
        .unwrap();
        assert_eq!(ok.len(), 3);
        assert!(dictionary(Arc::new(Int32Array::from(vec![2])), values.clone(), &dt).is_err());
        assert!(dictionary(Arc::new(Int32Array::from(vec![-1])), values, &dt).is_err());
    }

    #[test]
    fn sizes_that_overflow_are_errors() {
        // value bits × n overflowed u64 for wide vectors and many rows.
        let dt = DataType::new_fixed_size_list(DataType::Int64, 1 << 30, true);
        assert!(fixed_values(&dt, Bytes::from_static(&[0; 8]), 0, 1 << 40).is_err());
        assert!(offsets(&[0; 8], 8, usize::MAX / 4).is_err());
    }
}
