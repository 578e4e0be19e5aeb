//! Valid inputs for the fuzz targets. Pages come from this crate's encoders; what they do
//! not write (2.0 and legacy pages, RLE, byte stream split, packed structs, constants,
//! blobs) is laid out by hand, following the decoders' own descriptions of the formats.
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{
    ArrayRef, BooleanArray, DictionaryArray, FixedSizeListArray, Float32Array, Int32Array,
    Int64Array, LargeStringArray, StringArray, StructArray,
};
use arrow_schema::{DataType, Field};
use prost::Message;

use super::Frame;
use crate::encoding::compression::bitpacking::{encode_inline, encode_out_of_line};
use crate::encoding::compression::Scheme;
use crate::encoding::encode::levels::{leaf_levels, Step};
use crate::encoding::encode::{encode_page, proto, EncodedPage, PageOptions};
use crate::encoding::layout::Layer;
use crate::proto::encodings20 as pb20;
use crate::proto::encodings21 as pb;
use crate::proto::encodings21::compressive_encoding::Compression as C;
use crate::proto::file::v2::{column_metadata::Page, encoding, ColumnMetadata, DirectEncoding};
use crate::proto::file::{FileDescriptor, Metadata, Schema as PbSchema};
use crate::proto::table as pbt;
use crate::table::schema::LanceSchema;

fn encoding_of(c: C) -> pb::CompressiveEncoding {
    pb::CompressiveEncoding {
        compression: Some(c),
    }
}

fn le<T: Copy, const N: usize>(values: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    values.iter().flat_map(|v| f(*v)).collect()
}

/// Arrays the writers turn into pages, with their logical types and the steps from the
/// top-level array to the leaf.
fn arrays() -> Vec<(&'static str, ArrayRef, Vec<Step>)> {
    let ints = Int32Array::from_iter((0..300).map(|i| (i % 7 != 0).then_some(i * 3)));
    let longs = Int64Array::from_iter_values((0..200).map(|i| i * 1_000_003 % 77_777));
    let words = StringArray::from_iter((0..120).map(|i| {
        (i % 11 != 0).then(|| ["lance", "fuzz", "page", "column"][i % 4].repeat(1 + i % 3))
    }));
    let long_strings =
        LargeStringArray::from_iter_values((0..6).map(|i| format!("{i}-").repeat(90 + i * 7)));
    let bools = BooleanArray::from_iter((0..100).map(|i| (i % 5 != 0).then_some(i % 3 == 0)));
    let vectors = |dim: i32, rows: usize| {
        let items = Float32Array::from_iter_values((0..rows * dim as usize).map(|i| i as f32));
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        Arc::new(FixedSizeListArray::new(item, dim, Arc::new(items), None)) as ArrayRef
    };
    let mut lists = ListBuilder::new(StringBuilder::new());
    for i in 0..40 {
        match i % 5 {
            0 => lists.append_null(),
            1 => lists.append(true),
            _ => {
                for j in 0..i % 4 {
                    lists.values().append_value(format!("v{j}"));
                }
                lists.values().append_null();
                lists.append(true);
            }
        }
    }
    let int_lists =
        arrow_array::ListArray::from_iter_primitive::<arrow_array::types::Int32Type, _, _>(
            (0..50)
                .map(|i| (i % 6 != 1).then(|| (0..i % 4).map(|j| Some(j * i)).collect::<Vec<_>>())),
        );
    let inner = Arc::new(Int32Array::from_iter(
        (0..30).map(|i| (i % 4 != 0).then_some(i)),
    ));
    let structs = StructArray::new(
        vec![Field::new("a", DataType::Int32, true)].into(),
        vec![inner as ArrayRef],
        Some((0..30).map(|i| i % 5 != 2).collect::<Vec<_>>().into()),
    );
    let dict: DictionaryArray<arrow_array::types::Int32Type> =
        (0..80).map(|i| ["x", "yy", "zzz"][i % 3]).collect();
    let nulls = Int32Array::from(vec![None::<i32>; 20]);
    vec![
        ("int32", Arc::new(ints) as ArrayRef, vec![]),
        ("int64", Arc::new(longs), vec![]),
        ("string", Arc::new(words), vec![]),
        ("large_string", Arc::new(long_strings), vec![]),
        ("bool", Arc::new(bools), vec![]),
        ("fixed_size_list:float:4", vectors(4, 50), vec![]),
        ("fixed_size_list:float:80", vectors(80, 5), vec![]),
        ("string", Arc::new(lists.finish()), vec![Step::ListItems]),
        ("int32", Arc::new(int_lists), vec![Step::ListItems]),
        ("int32", Arc::new(structs), vec![Step::StructChild(0)]),
        ("dict:string:int32:false", Arc::new(dict), vec![]),
        ("int32", Arc::new(nulls), vec![]),
    ]
}

fn options() -> Vec<PageOptions> {
    let base = PageOptions::default();
    vec![
        base,
        PageOptions {
            large_chunks: true,
            allow_dictionary: true,
            ..base
        },
        PageOptions {
            allow_fsst: true,
            compression: Some((Scheme::Lz4, None)),
            ..base
        },
        PageOptions {
            compression: Some((Scheme::Zstd, Some(1))),
            force_full_zip: true,
            ..base
        },
        PageOptions {
            force_mini_block: true,
            ..base
        },
    ]
}

/// Every page the encoders write for the arrays above, with its logical type.
fn encoded_pages() -> Vec<(&'static str, EncodedPage)> {
    let mut out = Vec::new();
    for (lt, array, steps) in arrays() {
        for opts in options() {
            let Ok(levels) = leaf_levels(&array, &steps) else {
                continue;
            };
            if let Ok(page) = encode_page(levels, &opts) {
                out.push((lt, page));
            }
        }
    }
    out
}

fn layers(l: &[Layer]) -> Vec<i32> {
    l.iter().map(|l| l.to_proto()).collect()
}

/// A mini-block chunk with no levels: its value count header, buffer sizes, then buffers.
fn chunk(num_levels: u16, buffers: &[Vec<u8>]) -> Vec<u8> {
    let mut c = num_levels.to_le_bytes().to_vec();
    for b in buffers {
        c.extend((b.len() as u16).to_le_bytes());
    }
    for b in buffers {
        c.resize(c.len().div_ceil(8) * 8, 0);
        c.extend_from_slice(b);
    }
    c.resize(c.len().div_ceil(8) * 8, 0);
    c
}

/// A one-chunk mini-block page of `n` values without levels.
fn one_chunk_page(n: u64, codec: pb::CompressiveEncoding, buffers: &[Vec<u8>]) -> EncodedPage {
    let c = chunk(n as u16, buffers);
    let word = ((c.len() / 8 - 1) << 4) as u16;
    EncodedPage {
        buffers: vec![word.to_le_bytes().to_vec(), c],
        layout: pb::PageLayout {
            layout: Some(pb::page_layout::Layout::MiniBlockLayout(
                pb::MiniBlockLayout {
                    value_compression: Some(codec),
                    layers: layers(&[Layer::AllValidItem]),
                    num_buffers: buffers.len() as u64,
                    num_items: n,
                    ..Default::default()
                },
            )),
        },
        num_rows: n,
    }
}

/// Pages the encoders do not write: inline constants, blobs, packed structs, RLE.
fn hand_pages() -> Vec<(&'static str, EncodedPage)> {
    let constant = |value: Option<Vec<u8>>, ls: &[Layer], bufs: Vec<Vec<u8>>, rows| EncodedPage {
        buffers: bufs,
        layout: pb::PageLayout {
            layout: Some(pb::page_layout::Layout::ConstantLayout(
                pb::ConstantLayout {
                    layers: layers(ls),
                    inline_value: value,
                    ..Default::default()
                },
            )),
        },
        num_rows: rows,
    };
    let descriptors = one_chunk_page(
        3,
        packed_struct(),
        &[le(&[0u64, 0, 4096, 100, 5 << 16, 0], u64::to_le_bytes)],
    );
    let blob = EncodedPage {
        buffers: descriptors.buffers.clone(),
        layout: pb::PageLayout {
            layout: Some(pb::page_layout::Layout::BlobLayout(Box::new(
                pb::BlobLayout {
                    inner_layout: Some(Box::new(descriptors.layout.clone())),
                    layers: layers(&[Layer::NullableItem]),
                },
            ))),
        },
        num_rows: 3,
    };
    let rle = encoding_of(C::Rle(Box::new(pb::Rle {
        values: Some(Box::new(proto::flat(32))),
        run_lengths: Some(Box::new(proto::flat(8))),
    })));
    let bss = encoding_of(C::ByteStreamSplit(Box::new(pb::ByteStreamSplit {
        values: Some(Box::new(proto::flat(32))),
    })));
    vec![
        (
            "int32",
            constant(
                Some(7i32.to_le_bytes().to_vec()),
                &[Layer::AllValidItem],
                vec![],
                9,
            ),
        ),
        (
            "int32",
            constant(
                Some(7i32.to_le_bytes().to_vec()),
                &[Layer::NullableItem],
                vec![vec![], le(&[0u16, 1, 0, 0], u16::to_le_bytes)],
                4,
            ),
        ),
        ("int32", constant(None, &[Layer::NullableItem], vec![], 5)),
        ("struct:uint64,uint64", blob),
        ("struct:uint64,uint64", descriptors),
        (
            "int32",
            one_chunk_page(6, rle, &[le(&[5i32, -1], i32::to_le_bytes), vec![4, 2]]),
        ),
        (
            "float",
            one_chunk_page(2, bss, &[vec![0, 0, 0, 0, 0, 0, 0x80, 0x40]]),
        ),
    ]
}

fn packed_struct() -> pb::CompressiveEncoding {
    encoding_of(C::PackedStruct(Box::new(pb::PackedStruct {
        bits_per_value: vec![64, 64],
        values: Some(Box::new(proto::flat(128))),
    })))
}

fn page_frame(lt: &str, p: &EncodedPage, cut: u8, fsl: u8) -> Vec<u8> {
    Frame::new(lt)
        .u32(p.num_rows as u32)
        .u8(cut)
        .u8(fsl)
        .section(&p.layout.encode_to_vec())
        .buffers(&p.buffers)
        .finish()
}

pub fn pages(target: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (lt, p) in encoded_pages().iter().chain(hand_pages().iter()) {
        let kind = match p.layout.layout {
            Some(pb::page_layout::Layout::MiniBlockLayout(_)) => "miniblock",
            Some(pb::page_layout::Layout::FullZipLayout(_)) => "fullzip",
            _ => "constant_blob",
        };
        if kind == target {
            out.push(page_frame(lt, p, 0, 0));
            out.push(page_frame(lt, p, 16, 0));
        }
    }
    out
}

pub fn compression() -> Vec<Vec<u8>> {
    let frame = |lt: &str, mode: u8, n: u32, enc: pb::CompressiveEncoding, bufs: &[Vec<u8>]| {
        Frame::new(lt)
            .u8(mode)
            .u32(n)
            .section(&enc.encode_to_vec())
            .buffers(bufs)
            .finish()
    };
    let (mini, block, value) = (0, 1, 2);
    let ints: Vec<i32> = (0..100).map(|i| i * 3 % 41).collect();
    let mut inline = Vec::new();
    encode_inline(
        &ints.iter().map(|&v| v as u32).collect::<Vec<_>>(),
        &mut inline,
    );
    let levels: Vec<u16> = (0..1500).map(|i| (i % 3) as u16).collect();
    let mut out_of_line = Vec::new();
    encode_out_of_line(&levels, 2, &mut out_of_line);
    let mut strings = le(&[12u32, 15, 15, 19], u32::to_le_bytes);
    strings.extend(b"abcdefg");
    let mut block_strings = le(&[32u32, 8 + 12], u32::to_le_bytes);
    block_strings.extend(le(&[0u32, 3, 3], u32::to_le_bytes));
    block_strings.extend(b"abc");
    let flat_ints = le(&ints, i32::to_le_bytes);
    let mut rle_block = 8u64.to_le_bytes().to_vec();
    rle_block.extend(le(&[9i32, 4], i32::to_le_bytes));
    rle_block.extend([3, 2]);
    // FSST: symbols "lance" and " ", codes 0 1 255 '!' 0 → "lance !lance".
    let mut table = ((0x4653_5354u64 << 32) | (1 << 24) | 2)
        .to_le_bytes()
        .to_vec();
    table.extend(u64::from_le_bytes(*b"lance\0\0\0").to_le_bytes());
    table.extend(u64::from_le_bytes(*b" \0\0\0\0\0\0\0").to_le_bytes());
    table.extend([5, 1]);
    let mut fsst_chunk = le(&[8u32, 13], u32::to_le_bytes);
    fsst_chunk.extend([0, 1, 255, b'!', 0]);
    let rle = encoding_of(C::Rle(Box::new(pb::Rle {
        values: Some(Box::new(proto::flat(32))),
        run_lengths: Some(Box::new(proto::flat(8))),
    })));
    let bss = encoding_of(C::ByteStreamSplit(Box::new(pb::ByteStreamSplit {
        values: Some(Box::new(proto::flat(64))),
    })));
    let var_packed = encoding_of(C::VariablePackedStruct(pb::VariablePackedStruct {
        fields: vec![
            pb::variable_packed_struct::FieldEncoding {
                value: Some(proto::flat(32)),
                layout: Some(pb::variable_packed_struct::field_encoding::Layout::BitsPerValue(32)),
            },
            pb::variable_packed_struct::FieldEncoding {
                value: Some(proto::variable(32)),
                layout: Some(pb::variable_packed_struct::field_encoding::Layout::BitsPerLength(32)),
            },
        ],
    }));
    let mut row = 5i32.to_le_bytes().to_vec();
    row.extend(3u32.to_le_bytes());
    row.extend(b"xyz");
    let constant = encoding_of(C::Constant(pb::Constant {
        value: Some(vec![1, 2, 3, 4]),
    }));
    vec![
        frame(
            "int32",
            mini,
            100,
            proto::flat(32),
            std::slice::from_ref(&flat_ints),
        ),
        frame(
            "int32",
            block,
            100,
            proto::flat(32),
            std::slice::from_ref(&flat_ints),
        ),
        frame(
            "int32",
            value,
            3,
            proto::flat(32),
            &vec![flat_ints[..4].to_vec(); 3],
        ),
        frame("bool", mini, 16, proto::flat(1), &[vec![0xA5, 0x3C]]),
        frame(
            "uint32",
            mini,
            100,
            proto::inline_bitpacking(32),
            &[inline.clone()],
        ),
        frame(
            "uint32",
            block,
            100,
            proto::inline_bitpacking(32),
            &[inline],
        ),
        frame(
            "uint16",
            block,
            1500,
            proto::out_of_line_bitpacking(16, 2),
            &[out_of_line],
        ),
        frame("string", mini, 3, proto::variable(32), &[strings]),
        frame("string", block, 2, proto::variable(32), &[block_strings]),
        frame(
            "string",
            value,
            2,
            proto::variable(32),
            &[b"ab".to_vec(), vec![]],
        ),
        frame(
            "string",
            mini,
            1,
            proto::fsst(table.clone(), proto::variable(32)),
            &[fsst_chunk],
        ),
        frame(
            "string",
            value,
            1,
            proto::fsst(table, proto::variable(32)),
            &[vec![0, 1, 0]],
        ),
        frame(
            "int32",
            mini,
            5,
            rle.clone(),
            &[le(&[9i32, 4], i32::to_le_bytes), vec![3, 2]],
        ),
        frame("int32", block, 5, rle, &[rle_block]),
        frame(
            "double",
            mini,
            2,
            bss,
            &[vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]],
        ),
        frame(
            "int32",
            mini,
            100,
            proto::general(Scheme::Zstd, None, proto::flat(32)),
            &[Scheme::Zstd.compress(&flat_ints, None)],
        ),
        frame(
            "int32",
            block,
            100,
            proto::general(Scheme::Lz4, None, proto::flat(32)),
            &[Scheme::Lz4.compress(&flat_ints, None)],
        ),
        frame(
            "fixed_size_list:int32:4",
            mini,
            25,
            proto::fixed_size_list(4, false, proto::flat(32)),
            std::slice::from_ref(&flat_ints),
        ),
        frame(
            "fixed_size_list:int32:4",
            mini,
            2,
            proto::fixed_size_list(4, true, proto::flat(32)),
            &[vec![0x7F], flat_ints[..32].to_vec()],
        ),
        frame(
            "fixed_size_list:int32:4",
            value,
            2,
            proto::fixed_size_list(4, true, proto::flat(32)),
            &[{
                let mut v = vec![0x0F];
                v.extend(&flat_ints[..16]);
                v
            }],
        ),
        frame(
            "struct:uint64,uint64",
            mini,
            3,
            packed_struct(),
            &[le(&[1u64, 2, 3, 4, 5, 6], u64::to_le_bytes)],
        ),
        frame("struct:int32,string", value, 1, var_packed, &[row]),
        frame("int32", mini, 7, constant.clone(), &[]),
        frame("string", block, 7, constant, &[]),
    ]
}

fn flat20(bits: u64, buffer: u32) -> pb20::ArrayEncoding {
    pb20::ArrayEncoding {
        array_encoding: Some(pb20::array_encoding::ArrayEncoding::Flat(pb20::Flat {
            bits_per_value: bits,
            buffer: Some(pb20::Buffer {
                buffer_index: buffer,
                buffer_type: 0,
            }),
            compression: None,
        })),
    }
}

fn nullable20(n: pb20::nullable::Nullability) -> pb20::ArrayEncoding {
    pb20::ArrayEncoding {
        array_encoding: Some(pb20::array_encoding::ArrayEncoding::Nullable(Box::new(
            pb20::Nullable {
                nullability: Some(n),
            },
        ))),
    }
}

fn no_nulls20(values: pb20::ArrayEncoding) -> pb20::ArrayEncoding {
    nullable20(pb20::nullable::Nullability::NoNulls(Box::new(
        pb20::nullable::NoNull {
            values: Some(Box::new(values)),
        },
    )))
}

/// 2.0 pages: (logical type, rows, encoding, buffers).
fn pages20() -> Vec<(&'static str, usize, pb20::ArrayEncoding, Vec<Vec<u8>>)> {
    use pb20::array_encoding::ArrayEncoding as E;
    let ints = le(&[1i32, 0, 3, 4, 0], i32::to_le_bytes);
    let some_nulls = nullable20(pb20::nullable::Nullability::SomeNulls(Box::new(
        pb20::nullable::SomeNull {
            validity: Some(Box::new(flat20(1, 0))),
            values: Some(Box::new(flat20(32, 1))),
        },
    )));
    let binary = |indices: u32, bytes: u32, adjust: u64| pb20::ArrayEncoding {
        array_encoding: Some(E::Binary(Box::new(pb20::Binary {
            indices: Some(Box::new(no_nulls20(flat20(64, indices)))),
            bytes: Some(Box::new(flat20(8, bytes))),
            null_adjustment: adjust,
        }))),
    };
    let ends = le(&[1u64, 9, 1, 5, 7], u64::to_le_bytes);
    let dictionary = pb20::ArrayEncoding {
        array_encoding: Some(E::Dictionary(Box::new(pb20::Dictionary {
            indices: Some(Box::new(no_nulls20(flat20(8, 0)))),
            items: Some(Box::new(binary(1, 2, 3))),
            num_dictionary_items: 2,
        }))),
    };
    let fsl = pb20::ArrayEncoding {
        array_encoding: Some(E::FixedSizeList(Box::new(pb20::FixedSizeList {
            dimension: 2,
            items: Some(Box::new(flat20(32, 0))),
            has_validity: false,
        }))),
    };
    let list = pb20::ArrayEncoding {
        array_encoding: Some(E::List(Box::new(pb20::List {
            offsets: Some(Box::new(no_nulls20(flat20(64, 0)))),
            null_offset_adjustment: 7,
            num_items: 6,
        }))),
    };
    let packed = pb20::ArrayEncoding {
        array_encoding: Some(E::PackedStruct(pb20::PackedStruct {
            inner: vec![flat20(32, 0), flat20(64, 0)],
            buffer: Some(pb20::Buffer {
                buffer_index: 0,
                buffer_type: 0,
            }),
        })),
    };
    let zstd = pb20::ArrayEncoding {
        array_encoding: Some(E::Flat(pb20::Flat {
            bits_per_value: 32,
            buffer: Some(pb20::Buffer {
                buffer_index: 0,
                buffer_type: 0,
            }),
            compression: Some(pb20::Compression {
                scheme: "zstd".into(),
                level: None,
            }),
        })),
    };
    let mut fsst_table = ((0x4653_5354u64 << 32) | (1 << 24) | 1)
        .to_le_bytes()
        .to_vec();
    fsst_table.extend(u64::from_le_bytes(*b"ab\0\0\0\0\0\0").to_le_bytes());
    fsst_table.push(2);
    let fsst = pb20::ArrayEncoding {
        array_encoding: Some(E::Fsst(Box::new(pb20::Fsst {
            binary: Some(Box::new(binary(0, 1, 0))),
            symbol_table: fsst_table,
        }))),
    };
    vec![
        ("int32", 5, some_nulls, vec![vec![0b01101], ints.clone()]),
        ("int32", 5, flat20(32, 0), vec![ints.clone()]),
        ("bool", 12, flat20(1, 0), vec![vec![0xAB, 0x0C]]),
        (
            "string",
            5,
            binary(0, 1, 8),
            vec![ends.clone(), b"addddee".to_vec()],
        ),
        (
            "string",
            4,
            dictionary,
            vec![
                vec![2, 0, 1, 2],
                le(&[1u64, 2], u64::to_le_bytes),
                b"xy".to_vec(),
            ],
        ),
        (
            "fixed_size_list:int32:2",
            2,
            fsl,
            vec![le(&[1i32, 2, 3, 4], i32::to_le_bytes)],
        ),
        (
            "int64",
            5,
            list,
            vec![le(&[2u64, 9, 2, 3, 6], u64::to_le_bytes)],
        ),
        ("struct:int32,int64", 2, packed, vec![vec![7; 24]]),
        ("int32", 5, zstd, vec![Scheme::Zstd.compress(&ints, None)]),
        (
            "string",
            2,
            fsst,
            vec![le(&[1u64, 3], u64::to_le_bytes), vec![0, 255, b'c']],
        ),
    ]
}

pub fn array20() -> Vec<Vec<u8>> {
    pages20()
        .into_iter()
        .map(|(lt, n, enc, bufs)| {
            Frame::new(lt)
                .u32(n as u32)
                .section(&enc.encode_to_vec())
                .buffers(&bufs)
                .finish()
        })
        .collect()
}

pub fn legacy() -> Vec<Vec<u8>> {
    let frame = |lt: &str, op: u8, n: u32, bit: u8, a: &[u8], b: &[u8]| {
        Frame::new(lt)
            .u8(op)
            .u32(n)
            .u8(bit)
            .section(a)
            .section(b)
            .finish()
    };
    let ints = le(&[1i32, 2, 3, 4, 5, 6], i32::to_le_bytes);
    let positions = le(&[100i64, 102, 102, 105], i64::to_le_bytes);
    let mut dict_values = le(&[0i64, 1, 3], i64::to_le_bytes);
    dict_values.extend(b"xyy");
    vec![
        frame("int32", 0, 6, 0, &ints, &[]),
        frame("bool", 0, 9, 3, &[0xF0, 0x0F], &[]),
        frame("fixed_size_list:int32:3", 0, 2, 0, &ints, &[]),
        frame("int32", 1, 6, 0, &ints, &[]),
        frame("int64", 0x21, 3, 0, &ints, &[]),
        frame("string", 2, 3, 0, &positions, b"abcde"),
        frame("binary", 0x12, 3, 0, &positions, b"abcde"),
        frame(
            "dict:string:int32:false",
            0x23,
            3,
            0,
            &le(&[0i32, 1, 1], i32::to_le_bytes),
            &dict_values,
        ),
        frame(
            "dict:int64:int8:false",
            0x33,
            4,
            0,
            &[0, 1, 2, 1],
            &le(&[9i64, 8, 7], i64::to_le_bytes),
        ),
    ]
}

pub fn levels() -> Vec<Vec<u8>> {
    let frame = |ls: &[Layer], flags: u8, fsl: u8, n: u32, rows: u32, rep: &[u16], def: &[u16]| {
        Frame::default()
            .section(
                &ls.iter()
                    .map(|l| (l.to_proto() - 1) as u8)
                    .collect::<Vec<_>>(),
            )
            .u8(flags)
            .u8(fsl)
            .u32(n)
            .u32(rows)
            .section(&le(rep, u16::to_le_bytes))
            .section(&le(def, u16::to_le_bytes))
            .finish()
    };
    use Layer::*;
    vec![
        // [[1, 2], [], None, [3, None], [4]]
        frame(
            &[NullableItem, NullAndEmptyList],
            3,
            0,
            5,
            5,
            &[1, 0, 1, 1, 1, 0, 1],
            &[0, 0, 3, 2, 0, 1, 0],
        ),
        // A struct around a list.
        frame(
            &[NullableItem, NullAndEmptyList, NullableItem],
            3,
            0,
            3,
            5,
            &[1, 0, 1, 1, 1, 1],
            &[0, 0, 2, 4, 3, 1],
        ),
        // Nested lists.
        frame(
            &[NullableItem, NullAndEmptyList, NullAndEmptyList],
            3,
            0,
            5,
            5,
            &[2, 0, 1, 1, 2, 2, 2, 2, 1],
            &[0, 0, 3, 0, 0, 5, 4, 1, 2],
        ),
        // Fixed-size lists of structs (dim 2).
        frame(
            &[NullableItem, NullableItem, NullableItem],
            2,
            0b100,
            8,
            8,
            &[],
            &[0, 1, 3, 3, 0, 0, 0, 2],
        ),
        frame(&[NullableItem], 6, 0, 4, 4, &[], &[0, 1, 1, 0]),
        frame(
            &[AllValidItem, AllValidList],
            1,
            0,
            4,
            2,
            &[1, 0, 1, 0],
            &[],
        ),
    ]
}

fn manifest_file(m: &pbt::Manifest) -> Vec<u8> {
    let mut b = b"transaction bytes before the manifest".to_vec();
    let pos = b.len() as u64;
    let body = m.encode_to_vec();
    b.extend((body.len() as u32).to_le_bytes());
    b.extend(body);
    b.extend(pos.to_le_bytes());
    b.extend(0u16.to_le_bytes());
    b.extend(2u16.to_le_bytes());
    b.extend(b"LANC");
    b
}

fn schema() -> LanceSchema {
    let item = Arc::new(Field::new("item", DataType::Int32, true));
    let arrow = arrow_schema::Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
        Field::new(
            "s",
            DataType::Struct(vec![Field::new("x", DataType::Float64, true)].into()),
            true,
        ),
        Field::new("l", DataType::List(item), true),
        Field::new(
            "v",
            DataType::new_fixed_size_list(DataType::Float32, 8, true),
            true,
        ),
        Field::new(
            "d",
            DataType::Dictionary(Box::new(DataType::Int16), Box::new(DataType::Utf8)),
            true,
        ),
        Field::new(
            "t",
            DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
    ]);
    LanceSchema::from_arrow(&arrow, 0).expect("a schema the writer supports")
}

pub fn manifests() -> Vec<Vec<u8>> {
    let s = schema();
    let frag = |id: u64, deletion: bool, row_ids: Option<Vec<u8>>| pbt::DataFragment {
        id,
        files: vec![pbt::DataFile {
            path: format!("{id}.lance"),
            fields: s.field_ids(),
            column_indices: (0..s.field_ids().len() as i32).collect(),
            file_major_version: 2,
            file_minor_version: 1,
            file_size_bytes: 4096,
            ..Default::default()
        }],
        deletion_file: deletion.then_some(pbt::DeletionFile {
            file_type: pbt::deletion_file::DeletionFileType::ArrowArray as i32,
            read_version: 3,
            id: 77,
            num_deleted_rows: 2,
            base_id: None,
        }),
        physical_rows: 100,
        row_id_sequence: row_ids.map(pbt::data_fragment::RowIdSequence::InlineRowIds),
        ..Default::default()
    };
    let m = pbt::Manifest {
        fields: s.to_proto(),
        schema_metadata: s.metadata_proto(),
        fragments: vec![
            frag(0, true, Some(row_ids()[0].clone())),
            frag(1, false, None),
        ],
        version: 4,
        timestamp: Some(prost_types::Timestamp {
            seconds: 1_700_000_000,
            nanos: 5,
        }),
        max_fragment_id: Some(1),
        next_row_id: 200,
        ..Default::default()
    };
    vec![manifest_file(&m), manifest_file(&pbt::Manifest::default())]
}

/// A page of a container: its encoding, rows and buffers.
type PageBytes = (prost_types::Any, u64, Vec<Vec<u8>>);

/// A v2 container around `columns` (each a list of (page encoding, rows, buffers)):
/// pages, schema, column metadata, offset tables, footer.
fn container(
    version: (u16, u16),
    fields: &LanceSchema,
    rows: u64,
    columns: Vec<Vec<PageBytes>>,
) -> Vec<u8> {
    let mut out = Vec::new();
    let mut metas = Vec::new();
    for pages in columns {
        let mut meta = ColumnMetadata::default();
        for (any, length, buffers) in pages {
            let (mut offsets, mut sizes) = (vec![], vec![]);
            for b in buffers {
                offsets.push(out.len() as u64);
                sizes.push(b.len() as u64);
                out.extend(b);
                out.resize(out.len().div_ceil(64) * 64, 0x48);
            }
            meta.pages.push(Page {
                buffer_offsets: offsets,
                buffer_sizes: sizes,
                length,
                encoding: Some(crate::proto::file::v2::Encoding {
                    location: Some(encoding::Location::Direct(DirectEncoding {
                        encoding: any.encode_to_vec(),
                    })),
                }),
                priority: 0,
            });
        }
        metas.push(meta.encode_to_vec());
    }
    let descriptor = FileDescriptor {
        schema: Some(PbSchema {
            fields: fields.to_proto(),
            metadata: fields.metadata_proto(),
        }),
        length: rows,
    }
    .encode_to_vec();
    let schema_at = out.len() as u64;
    out.extend(&descriptor);
    let column_meta_start = out.len() as u64;
    let mut table = Vec::new();
    for m in metas {
        table.extend((out.len() as u64).to_le_bytes());
        table.extend((m.len() as u64).to_le_bytes());
        out.extend(m);
    }
    let num_columns = table.len() / 16;
    let cmo = out.len() as u64;
    out.extend(table);
    let gbo = out.len() as u64;
    out.extend(schema_at.to_le_bytes());
    out.extend((descriptor.len() as u64).to_le_bytes());
    for v in [column_meta_start, cmo, gbo] {
        out.extend(v.to_le_bytes());
    }
    out.extend(1u32.to_le_bytes());
    out.extend((num_columns as u32).to_le_bytes());
    out.extend(version.0.to_le_bytes());
    out.extend(version.1.to_le_bytes());
    out.extend(b"LANC");
    out
}

fn any(url: &str, value: Vec<u8>) -> prost_types::Any {
    prost_types::Any {
        type_url: url.into(),
        value,
    }
}

pub fn files() -> Vec<Vec<u8>> {
    let one = |name: &str, lt: DataType| {
        LanceSchema::from_arrow(
            &arrow_schema::Schema::new(vec![Field::new(name, lt, true)]),
            0,
        )
        .expect("a supported type")
    };
    let mut out = Vec::new();
    // 2.1 and 2.2: a file of one column for some of the encoded pages.
    for (i, (lt, p)) in encoded_pages().iter().enumerate().step_by(4) {
        let Ok(dt) = crate::table::schema::parse_logical_type(lt) else {
            continue;
        };
        let page = (
            any("/lance.encodings21.PageLayout", p.layout.encode_to_vec()),
            p.num_rows,
            p.buffers.clone(),
        );
        let version = if i % 8 == 0 { (2, 1) } else { (2, 2) };
        out.push(container(
            version,
            &one("c", dt),
            p.num_rows,
            vec![vec![page]],
        ));
    }
    // 2.0 (0.3 on disk).
    for (lt, n, enc, bufs) in pages20().into_iter().take(4) {
        let Ok(dt) = crate::table::schema::parse_logical_type(lt) else {
            continue;
        };
        let page = (
            any("/lance.encodings.ArrayEncoding", enc.encode_to_vec()),
            n as u64,
            bufs,
        );
        out.push(container((0, 3), &one("x", dt), n as u64, vec![vec![page]]));
    }
    out.push(legacy_file());
    out
}

/// A legacy (0.2) file of two int32 fields in two batches of 3 rows.
fn legacy_file() -> Vec<u8> {
    let mut out = Vec::new();
    let mut table = Vec::new();
    let mut entries = Vec::new();
    for field in 0..2i32 {
        for batch in 0..2i32 {
            let at = out.len() as i64;
            out.extend(le(&[field, batch, field + batch], i32::to_le_bytes));
            entries.push((field, batch, at));
        }
    }
    let table_at = out.len() as u64;
    for (_, _, at) in entries {
        table.extend(at.to_le_bytes());
        table.extend(3i64.to_le_bytes());
    }
    out.extend(table);
    let meta_at = out.len() as u64;
    let meta = Metadata {
        batch_offsets: vec![0, 3, 6],
        page_table_position: table_at,
        manifest_position: 0,
        ..Default::default()
    }
    .encode_to_vec();
    out.extend((meta.len() as u32).to_le_bytes());
    out.extend(meta);
    out.extend(meta_at.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out.extend(2u16.to_le_bytes());
    out.extend(b"LANC");
    out
}

pub fn deletions(bitmap: bool) -> Vec<Vec<u8>> {
    let sets: Vec<roaring::RoaringBitmap> = if bitmap {
        vec![(0..6000).map(|i| i * 3).collect(), (0..70000).collect()]
    } else {
        vec![
            [1u32, 5, 9].into_iter().collect(),
            (0..300).map(|i| i * 7).collect(),
        ]
    };
    sets.iter()
        .filter_map(|s| crate::table::deletion::encode_deletions(s).ok())
        .map(|(_, b)| b.to_vec())
        .collect()
}

pub fn row_ids() -> Vec<Vec<u8>> {
    use pbt::encoded_u64_array::Array as Enc;
    use pbt::u64_segment::Segment;
    let seg = |s| pbt::U64Segment { segment: Some(s) };
    let array = |a| pbt::EncodedU64Array { array: Some(a) };
    let seq = pbt::RowIdSequence {
        segments: vec![
            seg(Segment::Range(pbt::u64_segment::Range {
                start: 0,
                end: 30,
            })),
            seg(Segment::RangeWithHoles(pbt::u64_segment::RangeWithHoles {
                start: 40,
                end: 60,
                holes: Some(array(Enc::U16Array(pbt::encoded_u64_array::U16Array {
                    base: 40,
                    offsets: le(&[1u16, 3, 7], u16::to_le_bytes),
                }))),
            })),
            seg(Segment::RangeWithBitmap(
                pbt::u64_segment::RangeWithBitmap {
                    start: 100,
                    end: 116,
                    bitmap: vec![0xd3, 0x03],
                },
            )),
            seg(Segment::SortedArray(array(Enc::U32Array(
                pbt::encoded_u64_array::U32Array {
                    base: 1000,
                    offsets: le(&[1u32, 5, 9], u32::to_le_bytes),
                },
            )))),
            seg(Segment::Array(array(Enc::U64Array(
                pbt::encoded_u64_array::U64Array {
                    values: le(&[7u64, 3], u64::to_le_bytes),
                },
            )))),
        ],
    };
    vec![
        seq.encode_to_vec(),
        pbt::RowIdSequence::default().encode_to_vec(),
    ]
}
