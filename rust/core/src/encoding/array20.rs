//! Pages of file format 2.0. A 2.0 page holds a tree of array encodings
//! (`lance.encodings.ArrayEncoding`) instead of a structural layout: there are no
//! repetition or definition levels. Validity is a bitmap (`Nullable`) or an adjustment
//! added to offsets (strings); a struct has a header column with no data and its
//! children have columns of their own. This module decodes one page of a leaf column
//! into an Arrow array of `n` values read as the leaf's type.
use std::sync::Arc;

use arrow_array::{
    make_array, new_null_array, Array, ArrayRef, BooleanArray, FixedSizeListArray, UInt32Array,
};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer};
use arrow_schema::DataType;
use bytes::Bytes;

use super::compression::fsst::SymbolTable;
use super::compression::general::Scheme;
use super::values::with_nulls;
use super::values::{variable_array, ValuesBuilder, VariableBuilder};
pub use crate::encoding::values::{fixed_array, fixed_width};
use crate::error::{corrupt, unsupported, Result};
use crate::proto::encodings20::{
    array_encoding::ArrayEncoding as Enc, buffer::BufferType, nullable::Nullability, ArrayEncoding,
    Binary, Dictionary, Flat, List,
};

/// Decode `n` values of a page encoded as `enc`, read as `dt`; `buffers` are the page's.
pub fn decode(enc: &ArrayEncoding, buffers: &[Bytes], n: usize, dt: &DataType) -> Result<ArrayRef> {
    match enc
        .array_encoding
        .as_ref()
        .ok_or_else(|| corrupt("2.0 page without an encoding"))?
    {
        Enc::Flat(f) => flat(f, buffers, n, dt),
        Enc::Nullable(nl) => match nl
            .nullability
            .as_ref()
            .ok_or_else(|| corrupt("2.0 nullable encoding without a kind"))?
        {
            Nullability::NoNulls(v) => decode(child(&v.values)?, buffers, n, dt),
            Nullability::AllNulls(_) => Ok(new_null_array(dt, n)),
            Nullability::SomeNulls(sn) => {
                let validity = bitmap(child(&sn.validity)?, buffers, n)?;
                let values = decode(child(&sn.values)?, buffers, n, dt)?;
                with_nulls(values, Some(NullBuffer::new(validity)))
            }
        },
        Enc::FixedSizeList(fsl) => {
            let DataType::FixedSizeList(item, dim) = dt else {
                return Err(corrupt(format!(
                    "a fixed-size list page cannot be read as {dt}"
                )));
            };
            if fsl.dimension != *dim as u32 {
                return Err(corrupt(format!(
                    "lists of {} items cannot be read as {dt}",
                    fsl.dimension
                )));
            }
            let items = usize::try_from(*dim)
                .ok()
                .and_then(|d| d.checked_mul(n))
                .ok_or_else(|| corrupt(format!("{n} lists of {dim} items")))?;
            let items = decode(child(&fsl.items)?, buffers, items, item.data_type())?;
            Ok(Arc::new(FixedSizeListArray::try_new(
                item.clone(),
                *dim,
                items,
                None,
            )?))
        }
        Enc::Binary(b) => binary(b, buffers, n, dt),
        Enc::Dictionary(d) => dictionary(d, buffers, n, dt),
        Enc::Fsst(f) => {
            let large = matches!(dt, DataType::LargeUtf8 | DataType::LargeBinary);
            let raw_type = if large {
                DataType::LargeBinary
            } else {
                DataType::Binary
            };
            let codes = decode(child(&f.binary)?, buffers, n, &raw_type)?;
            let table = SymbolTable::parse(&f.symbol_table)?;
            let mut out = VariableBuilder::new(large, n);
            for i in 0..n {
                if codes.is_null(i) {
                    out.append_empty()?;
                } else if large {
                    table.decode_value(
                        codes
                            .as_any()
                            .downcast_ref::<arrow_array::LargeBinaryArray>()
                            .unwrap()
                            .value(i),
                        &mut out,
                    )?;
                } else {
                    table.decode_value(
                        codes
                            .as_any()
                            .downcast_ref::<arrow_array::BinaryArray>()
                            .unwrap()
                            .value(i),
                        &mut out,
                    )?;
                }
            }
            ValuesBuilder::Variable(out).finish(dt, codes.nulls().cloned())
        }
        Enc::PackedStruct(p) => {
            let DataType::Struct(fields) = dt else {
                return Err(corrupt(format!(
                    "a packed struct page cannot be read as {dt}"
                )));
            };
            let widths = fields
                .iter()
                .map(|f| fixed_width(f.data_type()))
                .collect::<Result<Vec<_>>>()?;
            let row = widths
                .iter()
                .try_fold(0usize, |a, w| a.checked_add(*w))
                .ok_or_else(|| corrupt(format!("packed struct rows of type {dt}")))?;
            let data = page_buffer(&p.buffer, buffers)?;
            if n.checked_mul(row).is_none_or(|size| data.len() < size) {
                return Err(corrupt(format!(
                    "packed struct page has {} bytes for {n} rows of {row} bytes",
                    data.len()
                )));
            }
            let mut columns = Vec::with_capacity(fields.len());
            let mut at = 0;
            for (f, w) in fields.iter().zip(&widths) {
                let mut out = Vec::with_capacity(n * w);
                for r in 0..n {
                    out.extend_from_slice(&data[r * row + at..r * row + at + w]);
                }
                at += w;
                columns.push(fixed_array(f.data_type(), n, Buffer::from_vec(out))?);
            }
            Ok(Arc::new(arrow_array::StructArray::try_new(
                fields.clone(),
                columns,
                None,
            )?))
        }
        Enc::List(_) | Enc::Struct(_) => Err(corrupt(format!(
            "a list or struct page where values of {dt} were expected"
        ))),
        other => Err(unsupported(format!(
            "2.0 page encoding {} (pylance does not write it for 2.0)",
            encoding_name(other)
        ))),
    }
}

fn encoding_name(e: &Enc) -> &'static str {
    match e {
        Enc::Bitpacked(_) => "bitpacked",
        Enc::FixedSizeBinary(_) => "fixed-size binary",
        Enc::BitpackedForNonNeg(_) => "bitpacked (non-negative)",
        Enc::Constant(_) => "constant",
        _ => "of a 2.1 kind",
    }
}

fn child(e: &Option<Box<ArrayEncoding>>) -> Result<&ArrayEncoding> {
    e.as_deref()
        .ok_or_else(|| corrupt("2.0 encoding is missing an inner encoding"))
}

/// The page buffer a `Buffer` reference names. pylance keeps 2.0 data in page buffers only.
fn page_buffer(b: &Option<crate::proto::encodings20::Buffer>, buffers: &[Bytes]) -> Result<Bytes> {
    let (index, kind) = b.as_ref().map_or((0, BufferType::Page as i32), |b| {
        (b.buffer_index, b.buffer_type)
    });
    if kind != BufferType::Page as i32 {
        return Err(unsupported(
            "2.0 encodings that keep data in column or file buffers",
        ));
    }
    buffers.get(index as usize).cloned().ok_or_else(|| {
        corrupt(format!(
            "encoding names page buffer {index}, the page has {}",
            buffers.len()
        ))
    })
}

/// The bytes of a flat encoding, decompressed when it says so.
fn flat_bytes(f: &Flat, buffers: &[Bytes]) -> Result<Bytes> {
    let data = page_buffer(&f.buffer, buffers)?;
    let scheme = f.compression.as_ref().map_or("", |c| c.scheme.as_str());
    match scheme {
        "" | "none" => Ok(data),
        _ if data.is_empty() => Ok(data),
        "zstd" => Ok(Bytes::from(Scheme::Zstd.decompress(&data)?)),
        "lz4" => Ok(Bytes::from(Scheme::Lz4.decompress(&data)?)),
        other => Err(unsupported(format!("2.0 compression scheme '{other}'"))),
    }
}

fn flat(f: &Flat, buffers: &[Bytes], n: usize, dt: &DataType) -> Result<ArrayRef> {
    let bits = f.bits_per_value;
    match dt {
        DataType::Null => Ok(new_null_array(dt, n)),
        DataType::Boolean => {
            if bits != 1 {
                return Err(corrupt(format!("{bits}-bit values cannot be read as {dt}")));
            }
            Ok(Arc::new(BooleanArray::new(bits_of(f, buffers, n)?, None)))
        }
        dt => {
            let width = fixed_width(dt)?;
            if bits != 8 * width as u64 {
                return Err(corrupt(format!("{bits}-bit values cannot be read as {dt}")));
            }
            fixed_array(dt, n, Buffer::from(flat_bytes(f, buffers)?))
        }
    }
}

fn bits_of(f: &Flat, buffers: &[Bytes], n: usize) -> Result<BooleanBuffer> {
    let data = page_buffer(&f.buffer, buffers)?;
    if data.len() < n.div_ceil(8) {
        return Err(corrupt(format!("{} bytes for {n} bits", data.len())));
    }
    Ok(BooleanBuffer::new(Buffer::from(data), 0, n))
}

/// A validity bitmap: always a 1-bit flat encoding, 1 = valid.
fn bitmap(enc: &ArrayEncoding, buffers: &[Bytes], n: usize) -> Result<BooleanBuffer> {
    match &enc.array_encoding {
        Some(Enc::Flat(f)) if f.bits_per_value == 1 => bits_of(f, buffers, n),
        _ => Err(unsupported("2.0 validity that is not a bitmap")),
    }
}

/// `n` unsigned integers (offsets, indices) of any stored width, widened to u64.
fn uints(enc: &ArrayEncoding, buffers: &[Bytes], n: usize) -> Result<Vec<u64>> {
    let f = match &enc.array_encoding {
        Some(Enc::Flat(f)) => f,
        Some(Enc::Nullable(nl)) => match &nl.nullability {
            Some(Nullability::NoNulls(v)) => return uints(child(&v.values)?, buffers, n),
            _ => return Err(unsupported("2.0 offsets or indices with nulls")),
        },
        _ => return Err(unsupported("2.0 offsets or indices that are not flat")),
    };
    let width = match f.bits_per_value {
        w @ (8 | 16 | 32 | 64) => w as usize / 8,
        w => return Err(corrupt(format!("{w}-bit offsets or indices"))),
    };
    let data = flat_bytes(f, buffers)?;
    let size = n
        .checked_mul(width)
        .ok_or_else(|| corrupt(format!("{n} offsets or indices")))?;
    let data = super::bytes::slice(&data, 0, size, "2.0 offsets or indices")?;
    Ok(data
        .chunks_exact(width)
        .map(|c| {
            let mut v = [0u8; 8];
            v[..width].copy_from_slice(c);
            u64::from_le_bytes(v)
        })
        .collect())
}

/// For a page of plain values (flat, uncompressed, with no nulls): the page buffer that
/// holds them and their bits, so that single values can be read on their own.
pub fn plain_buffer(enc: &ArrayEncoding) -> Option<(usize, u64)> {
    match enc.array_encoding.as_ref()? {
        Enc::Flat(f) if f.compression.is_none() && f.bits_per_value % 8 == 0 => {
            let b = f.buffer.as_ref();
            let kind = b.map_or(BufferType::Page as i32, |b| b.buffer_type);
            (kind == BufferType::Page as i32)
                .then(|| (b.map_or(0, |b| b.buffer_index as usize), f.bits_per_value))
        }
        Enc::Nullable(nl) => match &nl.nullability {
            Some(Nullability::NoNulls(v)) => plain_buffer(v.values.as_deref()?),
            _ => None,
        },
        _ => None,
    }
}

/// The flat encoding of a string page's bytes: bare, or (pylance 0.14–0.16) wrapped in a
/// `Nullable` that says there are no nulls.
fn plain_bytes(enc: &ArrayEncoding) -> Result<&Flat> {
    match &enc.array_encoding {
        Some(Enc::Flat(f)) if f.bits_per_value == 8 => Ok(f),
        Some(Enc::Nullable(nl)) => match &nl.nullability {
            Some(Nullability::NoNulls(v)) => plain_bytes(child(&v.values)?),
            _ => Err(unsupported("2.0 string bytes with nulls")),
        },
        _ => Err(unsupported("2.0 string bytes that are not flat bytes")),
    }
}

/// Strings and binaries: each value's end offset (no leading 0), plus `null_adjustment`
/// for a null value, and the bytes. The bytes become the array's data buffer as they are;
/// only the offsets are rebuilt.
fn binary(b: &Binary, buffers: &[Bytes], n: usize, dt: &DataType) -> Result<ArrayRef> {
    if !matches!(
        dt,
        DataType::Utf8 | DataType::Binary | DataType::LargeUtf8 | DataType::LargeBinary
    ) {
        return Err(corrupt(format!("a string page cannot be read as {dt}")));
    }
    let ends = uints(child(&b.indices)?, buffers, n)?;
    let data = flat_bytes(plain_bytes(child(&b.bytes)?)?, buffers)?;
    let adjust = b.null_adjustment;
    let mut offsets = Vec::with_capacity(n + 1);
    offsets.push(0u64);
    let mut valid = Vec::with_capacity(n);
    let mut start = 0u64;
    for end in ends {
        let (end, is_valid) = match end.checked_sub(adjust) {
            Some(e) if adjust > 0 => (e, false),
            _ => (end, true),
        };
        if end < start || end > data.len() as u64 {
            return Err(corrupt(format!(
                "string offsets {start}..{end} outside {} bytes",
                data.len()
            )));
        }
        offsets.push(end);
        valid.push(is_valid);
        start = end;
    }
    variable_array(dt, &offsets, data, valid)
}

/// A page dictionary. For a dictionary-typed column the indices are 0-based, and rows
/// whose entry is null are null; for a plain string column (the writer chose a dictionary
/// for a low-cardinality page) they are 1-based with 0 for null.
fn dictionary(d: &Dictionary, buffers: &[Bytes], n: usize, dt: &DataType) -> Result<ArrayRef> {
    // The entries are stored in the page's buffers: a bit each at least, unless there
    // are no more of them than rows.
    let stored: usize = buffers.iter().map(|b| b.len()).sum();
    let entries = d.num_dictionary_items as usize;
    if entries > n.max(stored.saturating_mul(8)) {
        return Err(corrupt(format!(
            "dictionary of {entries} entries in a page of {n} rows and {stored} bytes"
        )));
    }
    let indices = uints(child(&d.indices)?, buffers, n)?;
    let (value_type, one_based) = match dt {
        DataType::Dictionary(_, v) => (v.as_ref(), false),
        dt => (dt, true),
    };
    let items = decode(child(&d.items)?, buffers, entries, value_type)?;
    let mut keys = Vec::with_capacity(n);
    let mut valid = Vec::with_capacity(n);
    for i in indices {
        let k = if one_based { i.checked_sub(1) } else { Some(i) };
        match k {
            Some(k) if k >= entries as u64 => {
                return Err(corrupt(format!(
                    "dictionary index {k} out of range for {entries} entries"
                )))
            }
            Some(k) if items.is_valid(k as usize) => {
                keys.push(k as u32);
                valid.push(true);
            }
            _ => {
                keys.push(0);
                valid.push(false);
            }
        }
    }
    let keys = UInt32Array::new(keys.into(), Some(NullBuffer::from(valid)));
    match dt {
        DataType::Dictionary(key_type, _) => {
            let keys = arrow_cast::cast(&keys, key_type)?;
            let data = keys
                .to_data()
                .into_builder()
                .data_type(dt.clone())
                .add_child_data(items.to_data());
            Ok(make_array(data.build()?))
        }
        _ if entries == 0 => Ok(new_null_array(dt, n)),
        _ => Ok(arrow_select::take::take(&items, &keys, None)?),
    }
}

/// The list encoding of a page of a list's offsets column.
pub fn as_list(enc: &ArrayEncoding) -> Result<&List> {
    match &enc.array_encoding {
        Some(Enc::List(l)) => Ok(l),
        _ => Err(corrupt(
            "a list's offsets column has a page that is not a list",
        )),
    }
}

/// The `n` lists of an offsets page: each list's end (relative to the page's first item;
/// lists run back to back from 0) and whether it is valid. A null list has the page's
/// `null_offset_adjustment` added to its end.
pub fn list_ends(list: &List, buffers: &[Bytes], n: usize) -> Result<(Vec<u64>, Vec<bool>)> {
    let mut ends = uints(child(&list.offsets)?, buffers, n)?;
    let adjust = list.null_offset_adjustment;
    let mut valid = Vec::with_capacity(n);
    let mut prev = 0;
    for e in ends.iter_mut() {
        let is_valid = adjust == 0 || *e < adjust;
        if !is_valid {
            *e -= adjust;
        }
        if *e < prev || *e > list.num_items {
            return Err(corrupt(format!(
                "list offsets {prev}..{} outside the page's {} items",
                *e, list.num_items
            )));
        }
        prev = *e;
        valid.push(is_valid);
    }
    Ok((ends, valid))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::encodings20::{nullable, Buffer as PbBuffer, Constant, Nullable};
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int32Type;

    fn flat(bits: u64, buffer: u32) -> ArrayEncoding {
        ArrayEncoding {
            array_encoding: Some(Enc::Flat(Flat {
                bits_per_value: bits,
                buffer: Some(PbBuffer {
                    buffer_index: buffer,
                    buffer_type: 0,
                }),
                compression: None,
            })),
        }
    }

    fn no_nulls(values: ArrayEncoding) -> ArrayEncoding {
        ArrayEncoding {
            array_encoding: Some(Enc::Nullable(Box::new(Nullable {
                nullability: Some(Nullability::NoNulls(Box::new(nullable::NoNull {
                    values: Some(Box::new(values)),
                }))),
            }))),
        }
    }

    fn u64s(v: &[u64]) -> Bytes {
        Bytes::from(v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>())
    }

    #[test]
    fn nullable_ints() {
        let enc = ArrayEncoding {
            array_encoding: Some(Enc::Nullable(Box::new(Nullable {
                nullability: Some(Nullability::SomeNulls(Box::new(nullable::SomeNull {
                    validity: Some(Box::new(flat(1, 0))),
                    values: Some(Box::new(flat(32, 1))),
                }))),
            }))),
        };
        let values: Vec<u8> = [1i32, 0, 3, 4, 0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let bufs = [Bytes::from_static(&[0b01101]), Bytes::from(values)];
        let a = decode(&enc, &bufs, 5, &DataType::Int32).unwrap();
        let a = a.as_primitive::<Int32Type>();
        let got: Vec<Option<i32>> = a.iter().collect();
        assert_eq!(got, vec![Some(1), None, Some(3), Some(4), None]);
        // A values buffer too short for the rows is an error, not a panic.
        let short = [bufs[0].clone(), bufs[1].slice(0..8)];
        assert!(decode(&enc, &short, 5, &DataType::Int32).is_err());
    }

    #[test]
    fn strings_mark_nulls_by_adjusting_their_ends() {
        let enc = ArrayEncoding {
            array_encoding: Some(Enc::Binary(Box::new(Binary {
                indices: Some(Box::new(no_nulls(flat(64, 0)))),
                bytes: Some(Box::new(flat(8, 1))),
                null_adjustment: 8,
            }))),
        };
        let bufs = [u64s(&[1, 9, 1, 5, 7]), Bytes::from_static(b"addddee")];
        let a = decode(&enc, &bufs, 5, &DataType::Utf8).unwrap();
        let got: Vec<Option<&str>> = a.as_string::<i32>().iter().collect();
        assert_eq!(
            got,
            vec![Some("a"), None, Some(""), Some("dddd"), Some("ee")]
        );
        // An end before the previous one is corrupt.
        let bad = [u64s(&[3, 1, 1, 5, 7]), Bytes::from_static(b"addddee")];
        assert!(decode(&enc, &bad, 5, &DataType::Utf8).is_err());
    }

    #[test]
    fn string_pages_with_a_dictionary_count_from_one() {
        let items = ArrayEncoding {
            array_encoding: Some(Enc::Binary(Box::new(Binary {
                indices: Some(Box::new(no_nulls(flat(64, 1)))),
                bytes: Some(Box::new(flat(8, 2))),
                null_adjustment: 3,
            }))),
        };
        let enc = ArrayEncoding {
            array_encoding: Some(Enc::Dictionary(Box::new(Dictionary {
                indices: Some(Box::new(no_nulls(flat(8, 0)))),
                items: Some(Box::new(items)),
                num_dictionary_items: 2,
            }))),
        };
        let bufs = [
            Bytes::from_static(&[2, 0, 1, 2]),
            u64s(&[1, 2]),
            Bytes::from_static(b"xy"),
        ];
        let a = decode(&enc, &bufs, 4, &DataType::Utf8).unwrap();
        let got: Vec<Option<&str>> = a.as_string::<i32>().iter().collect();
        assert_eq!(got, vec![Some("y"), None, Some("x"), Some("y")]);
        let out_of_range = [
            Bytes::from_static(&[3, 0, 1, 2]),
            bufs[1].clone(),
            bufs[2].clone(),
        ];
        assert!(decode(&enc, &out_of_range, 4, &DataType::Utf8).is_err());
    }

    #[test]
    fn encodings_pylance_never_writes_for_2_0_are_named() {
        let enc = ArrayEncoding {
            array_encoding: Some(Enc::Constant(Constant { value: vec![1] })),
        };
        let e = decode(&enc, &[], 3, &DataType::Int32).unwrap_err();
        assert!(e.to_string().contains("constant"), "{e}");
    }

    #[test]
    fn list_ends_are_checked() {
        let list = List {
            offsets: Some(Box::new(no_nulls(flat(64, 0)))),
            null_offset_adjustment: 7,
            num_items: 6,
        };
        let (ends, valid) = list_ends(&list, &[u64s(&[2, 9, 2, 3, 6])], 5).unwrap();
        assert_eq!(ends, vec![2, 2, 2, 3, 6]);
        assert_eq!(valid, vec![true, false, true, true, true]);
        assert!(list_ends(&list, &[u64s(&[2, 1, 2, 3, 6])], 5).is_err());
        assert!(list_ends(&list, &[u64s(&[2, 9, 2, 3, 16])], 5).is_err());
    }

    #[test]
    fn stated_counts_that_overflow_or_exceed_the_page_are_errors() {
        // n * width overflowed for a page claiming 2^62 rows (a panic in debug builds).
        let bufs = [u64s(&[1, 2, 3])];
        assert!(decode(&no_nulls(flat(64, 0)), &bufs, 1 << 62, &DataType::Int64).is_err());
        let binary = ArrayEncoding {
            array_encoding: Some(Enc::Binary(Box::new(Binary {
                indices: Some(Box::new(no_nulls(flat(64, 0)))),
                bytes: Some(Box::new(flat(8, 1))),
                null_adjustment: 0,
            }))),
        };
        let bufs = [u64s(&[1]), Bytes::from_static(b"x")];
        assert!(decode(&binary, &bufs, 1 << 62, &DataType::Utf8).is_err());
        // A dictionary said to hold 2^32 all-null entries in a page of a few bytes.
        let all_null = ArrayEncoding {
            array_encoding: Some(Enc::Nullable(Box::new(Nullable {
                nullability: Some(Nullability::AllNulls(nullable::AllNull {})),
            }))),
        };
        let dict = ArrayEncoding {
            array_encoding: Some(Enc::Dictionary(Box::new(Dictionary {
                indices: Some(Box::new(no_nulls(flat(8, 0)))),
                items: Some(Box::new(all_null)),
                num_dictionary_items: u32::MAX,
            }))),
        };
        let err = decode(&dict, &[Bytes::from_static(&[0, 1])], 2, &DataType::Utf8).unwrap_err();
        assert!(
            err.to_string().contains("dictionary of 4294967295 entries"),
            "{err}"
        );
        // Negative widths from a schema are errors, not huge sizes.
        let dt = DataType::FixedSizeBinary(-4);
        assert!(decode(&flat(32, 0), &[u64s(&[1])], 1, &dt).is_err());
    }
}
