//! Pages of file format 2.0 (the inverse of `encoding::array20`), written as pylance
//! writes them when asked for 2.0: plain values, no compression.
//!
//! Every field has a column of its own: a struct's column holds one page header per page
//! and no data, a list's holds its offsets, and the items below it are the columns that
//! follow. Nulls are a bitmap around the values (`Nullable`), except for strings and
//! lists, where a null value's end offset is raised by an adjustment larger than any real
//! offset of the page.
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, OffsetSizeTrait};
use arrow_buffer::NullBuffer;
use arrow_schema::DataType;

use super::levels::Step;
use crate::error::{unsupported, Error, Result};
use crate::proto::encodings20::{
    array_encoding::ArrayEncoding as Enc, buffer::BufferType, nullable, ArrayEncoding, Binary,
    Buffer, Dictionary, FixedSizeList, Flat, List, Nullable, SimpleStruct,
};

/// One encoded 2.0 page.
pub struct Page20 {
    pub buffers: Vec<Vec<u8>>,
    pub encoding: ArrayEncoding,
    pub num_rows: u64,
}

/// What a 2.0 column holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column20 {
    /// A struct's own column: page lengths only (its fields follow).
    StructHeader,
    /// A list's offsets (its items follow).
    ListOffsets,
    /// Values of any other type.
    Values,
}

/// The page of `array` (the column's values at its level) for a column of `kind`.
pub fn encode(kind: Column20, array: &ArrayRef, name: &str) -> Result<Page20> {
    let mut buffers = Vec::new();
    let encoding = match kind {
        Column20::StructHeader => {
            check_no_struct_nulls(array, name)?;
            wrap(Enc::Struct(SimpleStruct {}))
        }
        Column20::ListOffsets => match array.data_type() {
            DataType::List(_) => list(array.as_list::<i32>(), &mut buffers),
            DataType::LargeList(_) => list(array.as_list::<i64>(), &mut buffers),
            dt => return Err(unsupported(format!("2.0 offsets of {dt} ('{name}')"))),
        },
        Column20::Values => values(array, &mut buffers, name)?,
    };
    Ok(Page20 {
        buffers,
        encoding,
        num_rows: array.len() as u64,
    })
}

/// The page of a struct's column holding `rows` rows (a file has one such page per
/// struct: pylance reads no more).
pub fn struct_header(rows: u64) -> Page20 {
    Page20 {
        buffers: vec![],
        encoding: wrap(Enc::Struct(SimpleStruct {})),
        num_rows: rows,
    }
}

/// The array a 2.0 column holds, reached from its top-level column by `steps`.
pub fn array_at(array: &ArrayRef, steps: &[Step], name: &str) -> Result<ArrayRef> {
    let mut array = array.clone();
    for step in steps {
        array = match step {
            Step::StructChild(i) => {
                check_no_struct_nulls(&array, name)?;
                array.as_struct().column(*i).clone()
            }
            Step::ListItems => match array.data_type() {
                DataType::List(_) => items(array.as_list::<i32>()),
                DataType::LargeList(_) => items(array.as_list::<i64>()),
                dt => return Err(unsupported(format!("2.0 items of {dt} ('{name}')"))),
            },
        };
    }
    Ok(array)
}

/// As pylance: format 2.0 has no way to store a NULL struct.
fn check_no_struct_nulls(array: &ArrayRef, name: &str) -> Result<()> {
    let nulls = array.logical_null_count();
    if nulls > 0 {
        return Err(Error::invalid(format!(
            "the struct field '{name}' holds {nulls} NULL value(s), which file format 2.0 \
             cannot store (its structs have no validity): use format 2.1 or later"
        )));
    }
    Ok(())
}

fn items<O: OffsetSizeTrait>(list: &arrow_array::GenericListArray<O>) -> ArrayRef {
    let offsets = list.value_offsets();
    let start = offsets[0].as_usize();
    let end = offsets[list.len()].as_usize();
    list.values().slice(start, end - start)
}

fn wrap(e: Enc) -> ArrayEncoding {
    ArrayEncoding {
        array_encoding: Some(e),
    }
}

/// A flat buffer of `bits` per value, added as the page's next buffer.
fn flat(bits: u64, data: Vec<u8>, buffers: &mut Vec<Vec<u8>>) -> ArrayEncoding {
    buffers.push(data);
    wrap(Enc::Flat(Flat {
        bits_per_value: bits,
        buffer: Some(Buffer {
            buffer_index: buffers.len() as u32 - 1,
            buffer_type: BufferType::Page as i32,
        }),
        compression: None,
    }))
}

fn no_nulls(values: ArrayEncoding) -> ArrayEncoding {
    wrap(Enc::Nullable(Box::new(Nullable {
        nullability: Some(nullable::Nullability::NoNulls(Box::new(nullable::NoNull {
            values: Some(Box::new(values)),
        }))),
    })))
}

fn u64s(values: impl Iterator<Item = u64>, buffers: &mut Vec<Vec<u8>>) -> ArrayEncoding {
    let bytes: Vec<u8> = values.flat_map(u64::to_le_bytes).collect();
    no_nulls(flat(64, bytes, buffers))
}

/// Each list's end relative to the page's first item; a NULL list's raised by
/// `num_items + 1`, as pylance writes it.
fn list<O: OffsetSizeTrait>(
    list: &arrow_array::GenericListArray<O>,
    buffers: &mut Vec<Vec<u8>>,
) -> ArrayEncoding {
    let offsets = list.value_offsets();
    let start = offsets[0].as_usize() as u64;
    let num_items = offsets[list.len()].as_usize() as u64 - start;
    let adjust = num_items + 1;
    let ends = (0..list.len()).map(|i| {
        let end = offsets[i + 1].as_usize() as u64 - start;
        if list.is_valid(i) {
            end
        } else {
            end + adjust
        }
    });
    let offsets = u64s(ends, buffers);
    wrap(Enc::List(Box::new(List {
        offsets: Some(Box::new(offsets)),
        null_offset_adjustment: adjust,
        num_items,
    })))
}

/// A values column's page.
fn values(array: &ArrayRef, buffers: &mut Vec<Vec<u8>>, name: &str) -> Result<ArrayEncoding> {
    match array.data_type() {
        DataType::Utf8 | DataType::Binary => return Ok(binary::<i32>(array, buffers)),
        DataType::LargeUtf8 | DataType::LargeBinary => return Ok(binary::<i64>(array, buffers)),
        DataType::Dictionary(..) => return dictionary(array, buffers, name),
        _ => {}
    }
    nullable(array, buffers, name)
}

/// Fixed-width values (and fixed-size lists of them) inside their validity.
fn nullable(array: &ArrayRef, buffers: &mut Vec<Vec<u8>>, name: &str) -> Result<ArrayEncoding> {
    let nulls = array.logical_nulls();
    let nullability = match nulls.as_ref().filter(|n| n.null_count() > 0) {
        _ if matches!(array.data_type(), DataType::Null) => {
            nullable::Nullability::AllNulls(nullable::AllNull {})
        }
        Some(n) if n.null_count() == array.len() => {
            nullable::Nullability::AllNulls(nullable::AllNull {})
        }
        Some(n) => {
            let validity = bitmap(n, buffers);
            let values = fixed(array, buffers, name)?;
            nullable::Nullability::SomeNulls(Box::new(nullable::SomeNull {
                validity: Some(Box::new(validity)),
                values: Some(Box::new(values)),
            }))
        }
        None => nullable::Nullability::NoNulls(Box::new(nullable::NoNull {
            values: Some(Box::new(fixed(array, buffers, name)?)),
        })),
    };
    Ok(wrap(Enc::Nullable(Box::new(Nullable {
        nullability: Some(nullability),
    }))))
}

fn bitmap(nulls: &NullBuffer, buffers: &mut Vec<Vec<u8>>) -> ArrayEncoding {
    flat(1, nulls.inner().sliced().to_vec(), buffers)
}

/// The values of `array` without their validity.
fn fixed(array: &ArrayRef, buffers: &mut Vec<Vec<u8>>, name: &str) -> Result<ArrayEncoding> {
    let data = array.to_data();
    match array.data_type() {
        DataType::Boolean => Ok(flat(
            1,
            array.as_boolean().values().sliced().to_vec(),
            buffers,
        )),
        DataType::FixedSizeList(_, dim) => {
            let fsl = array.as_fixed_size_list();
            let dim = *dim as usize;
            let items = fsl.values().slice(fsl.offset() * dim, fsl.len() * dim);
            if matches!(
                items.data_type(),
                DataType::Utf8 | DataType::Binary | DataType::LargeUtf8 | DataType::LargeBinary
            ) {
                return Err(unsupported(format!(
                    "writing fixed-size lists of {} in file format 2.0 ('{name}')",
                    items.data_type()
                )));
            }
            let items = nullable(&items, buffers, name)?;
            Ok(wrap(Enc::FixedSizeList(Box::new(FixedSizeList {
                dimension: dim as u32,
                items: Some(Box::new(items)),
                has_validity: false,
            }))))
        }
        dt => {
            let width = match dt {
                DataType::FixedSizeBinary(w) => *w as usize,
                dt => dt.primitive_width().ok_or_else(|| {
                    unsupported(format!("writing {dt} in file format 2.0 ('{name}')"))
                })?,
            };
            let start = data.offset() * width;
            let bytes = data.buffers()[0].as_slice()[start..start + data.len() * width].to_vec();
            Ok(flat(width as u64 * 8, bytes, buffers))
        }
    }
}

/// A dictionary column: its keys (never NULL: a NULL key points at a NULL entry added at
/// the end of the dictionary, as pylance writes it), then the entries.
fn dictionary(array: &ArrayRef, buffers: &mut Vec<Vec<u8>>, name: &str) -> Result<ArrayEncoding> {
    let dict = array.as_any_dictionary();
    let entries = dict.values().clone();
    let keys = arrow_cast::cast(dict.keys(), &DataType::UInt64)?;
    let keys = keys.as_primitive::<arrow_array::types::UInt64Type>();
    let width = dict.keys().data_type().primitive_width().unwrap_or(4);
    let null_at = entries.len() as u64;
    let mut bytes = Vec::with_capacity(keys.len() * width);
    for i in 0..keys.len() {
        let k = if keys.is_valid(i) {
            keys.value(i)
        } else {
            null_at
        };
        bytes.extend_from_slice(&k.to_le_bytes()[..width]);
    }
    let entries = match keys.null_count() {
        0 => entries,
        _ => arrow_select::concat::concat(&[
            entries.as_ref(),
            &arrow_array::new_null_array(entries.data_type(), 1),
        ])?,
    };
    let indices = no_nulls(flat(width as u64 * 8, bytes, buffers));
    let items = values(&entries, buffers, name)?;
    Ok(wrap(Enc::Dictionary(Box::new(Dictionary {
        indices: Some(Box::new(indices)),
        items: Some(Box::new(items)),
        num_dictionary_items: entries.len() as u32,
    }))))
}

/// Strings and binaries: each value's end offset (no leading 0; a NULL's raised by the
/// page's bytes + 1), then the bytes of the valid values.
fn binary<O: OffsetSizeTrait>(array: &ArrayRef, buffers: &mut Vec<Vec<u8>>) -> ArrayEncoding {
    let (offsets, data) = match array.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 => {
            let a = array.as_string::<O>();
            (a.value_offsets(), a.values().as_slice())
        }
        _ => {
            let a = array.as_binary::<O>();
            (a.value_offsets(), a.values().as_slice())
        }
    };
    let n = array.len();
    let nulls = array.logical_nulls().filter(|n| n.null_count() > 0);
    let mut bytes = Vec::new();
    let mut ends = Vec::with_capacity(n);
    match &nulls {
        None => {
            let start = offsets[0].as_usize();
            bytes.extend_from_slice(&data[start..offsets[n].as_usize()]);
            ends.extend((1..=n).map(|i| (offsets[i].as_usize() - start) as u64));
        }
        Some(valid) => {
            // A NULL's bytes (if any) are left out; its end is marked afterwards.
            for i in 0..n {
                if valid.is_valid(i) {
                    bytes
                        .extend_from_slice(&data[offsets[i].as_usize()..offsets[i + 1].as_usize()]);
                }
                ends.push(bytes.len() as u64);
            }
        }
    }
    // Set even without NULLs: pylance reads an adjustment of 0 as "every value is NULL".
    let adjust = bytes.len() as u64 + 1;
    if let Some(valid) = &nulls {
        for (i, e) in ends.iter_mut().enumerate() {
            if valid.is_null(i) {
                *e += adjust;
            }
        }
    }
    let indices = u64s(ends.into_iter(), buffers);
    let bytes = flat(8, bytes, buffers);
    wrap(Enc::Binary(Box::new(Binary {
        indices: Some(Box::new(indices)),
        bytes: Some(Box::new(bytes)),
        null_adjustment: adjust,
    })))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{FixedSizeListBuilder, Float32Builder, Int16Builder, ListBuilder};
    use arrow_array::{BooleanArray, Int32Array, LargeStringArray, StringArray, StructArray};
    use arrow_schema::Field;
    use bytes::Bytes;

    use super::*;
    use crate::encoding::array20 as read;

    /// Encode then decode one values page.
    fn round_trip(array: ArrayRef) -> ArrayRef {
        let page = encode(Column20::Values, &array, "c").unwrap();
        let buffers: Vec<Bytes> = page.buffers.into_iter().map(Bytes::from).collect();
        read::decode(&page.encoding, &buffers, array.len(), array.data_type()).unwrap()
    }

    #[test]
    fn values_of_each_kind_read_back() {
        let cases: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(vec![Some(1), None, Some(3)])),
            Arc::new(Int32Array::from(vec![4, 5, 6, 7]).slice(1, 2)),
            Arc::new(Int32Array::from(vec![None, None])),
            Arc::new(
                BooleanArray::from(vec![Some(true), None, Some(false), Some(true)]).slice(1, 3),
            ),
            Arc::new(StringArray::from(vec![
                Some("a"),
                None,
                Some(""),
                Some("ccc"),
            ])),
            Arc::new(LargeStringArray::from(vec!["x", "yy", "zzz"]).slice(1, 2)),
            Arc::new(
                arrow_array::FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                    vec![Some(b"ab".to_vec()), None].into_iter(),
                    2,
                )
                .unwrap(),
            ),
            Arc::new(arrow_array::NullArray::new(3)),
        ];
        for array in cases {
            assert_eq!(
                round_trip(array.clone()).to_data(),
                array.to_data(),
                "{array:?}"
            );
        }
        let mut fsl = FixedSizeListBuilder::new(Float32Builder::new(), 2);
        fsl.values().append_slice(&[1.0, 2.0]);
        fsl.append(true);
        fsl.values().append_nulls(2);
        fsl.append(false);
        fsl.values().append_value(3.0);
        fsl.values().append_null();
        fsl.append(true);
        let fsl: ArrayRef = Arc::new(fsl.finish());
        let back = round_trip(fsl.clone());
        assert_eq!(
            back.as_fixed_size_list().value(2).as_ref(),
            fsl.as_fixed_size_list().value(2).as_ref()
        );
        assert!(back.is_null(1) && back.is_valid(0));
    }

    #[test]
    fn a_null_strings_bytes_are_dropped_and_its_end_raised() {
        // A NULL with bytes behind it (arrow allows that): they are not written.
        let array: ArrayRef = Arc::new(StringArray::new(
            arrow_buffer::OffsetBuffer::new(vec![0i32, 2, 5, 6].into()),
            Bytes::from_static(b"abxyzc").into(),
            Some(NullBuffer::from(vec![true, false, true])),
        ));
        let page = encode(Column20::Values, &array, "c").unwrap();
        assert_eq!(page.buffers[1], b"abc");
        let ends: Vec<u64> = page.buffers[0]
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(ends, vec![2, 2 + 4, 3]);
    }

    #[test]
    fn lists_and_structs() {
        let mut b = ListBuilder::new(Int16Builder::new());
        b.append_value([Some(1), Some(2)]);
        b.append_null();
        b.append_value([]);
        b.append_value([Some(9)]);
        let list: ArrayRef = Arc::new(b.finish().slice(1, 3));
        let page = encode(Column20::ListOffsets, &list, "l").unwrap();
        let buffers: Vec<Bytes> = page.buffers.into_iter().map(Bytes::from).collect();
        let l = read::as_list(&page.encoding).unwrap();
        assert_eq!(l.num_items, 1);
        let (ends, valid) = read::list_ends(l, &buffers, 3).unwrap();
        assert_eq!((ends, valid), (vec![0, 0, 1], vec![false, true, true]));
        let items = array_at(&list, &[Step::ListItems], "l").unwrap();
        assert_eq!(
            items
                .as_primitive::<arrow_array::types::Int16Type>()
                .values()
                .to_vec(),
            vec![9]
        );

        let s: ArrayRef = Arc::new(StructArray::from(vec![(
            Arc::new(Field::new("x", DataType::Int32, true)),
            Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef,
        )]));
        assert_eq!(encode(Column20::StructHeader, &s, "s").unwrap().num_rows, 2);
        let with_null: ArrayRef = Arc::new(
            StructArray::try_new(
                s.as_struct().fields().clone(),
                s.as_struct().columns().to_vec(),
                Some(NullBuffer::from(vec![true, false])),
            )
            .unwrap(),
        );
        let err = encode(Column20::StructHeader, &with_null, "s")
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("'s'") && err.contains("2.0"), "{err}");
        assert!(array_at(&with_null, &[Step::StructChild(0)], "s").is_err());
    }
}
