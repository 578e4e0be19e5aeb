//! Compressive encodings (the `CompressiveEncoding` tree of a page) and their decoders.
//!
//! The same encoding is laid out differently depending on where it is used, so each one
//! is decoded in up to three contexts:
//! * mini-block: the value buffers of one chunk, a value count known from the chunk;
//! * block: one opaque buffer and a count (repetition/definition levels, dictionaries);
//! * per-value: the bytes of one value of a full-zip page.
pub mod bitpacking;
mod byte_stream_split;
mod fixed_size_list;
pub mod fsst;
pub mod general;
mod packed_struct;
mod rle;
mod variable;

use std::sync::Arc;

use crate::encoding::bytes::slice;
use crate::encoding::values::ValuesBuilder;
use crate::error::{corrupt, unsupported, Result};
use crate::proto::encodings21 as pb;
use crate::proto::encodings21::compressive_encoding::Compression as PbCompression;

pub use fsst::SymbolTable;
pub use general::Scheme;

/// A parsed `CompressiveEncoding`.
#[derive(Clone, Debug)]
pub enum Codec {
    /// Values stored as they are, `bits` each.
    Flat { bits: u64 },
    /// Values with offsets (32 or 64 bits wide).
    Variable { offset_bits: u64 },
    /// Every value is `value` (or no data at all).
    Constant { value: Option<Vec<u8>> },
    /// FastLanes bit packing with the width stored before each 1024-value block.
    InlineBitpacking { bits: u64 },
    /// FastLanes bit packing with one width for the whole buffer.
    OutOfLineBitpacking { bits: u64, packed_bits: u64 },
    /// FSST-compressed strings; `inner` delimits the compressed values.
    Fsst {
        table: Arc<SymbolTable>,
        inner: Box<Codec>,
    },
    /// Runs of equal values: values then u8 run lengths.
    Rle { bits: u64 },
    /// Bytes of each value split into one stream per byte position.
    ByteStreamSplit { bits: u64 },
    /// zstd or lz4 applied to the output of `inner`.
    General { scheme: Scheme, inner: Box<Codec> },
    /// Fixed-size lists flattened into their items, with optional item validity.
    FixedSizeList {
        dim: u64,
        has_validity: bool,
        inner: Box<Codec>,
    },
    /// Rows of fixed-width fields stored row by row.
    PackedStruct { bits: Vec<u64> },
    /// Rows of fixed and variable-width fields stored row by row (full-zip only).
    VariablePackedStruct { fields: Vec<PackedField> },
}

#[derive(Clone, Debug)]
pub struct PackedField {
    pub codec: Codec,
    /// Fixed width in bits, or the width of the length prefix of a variable field.
    pub layout: PackedLayout,
}

#[derive(Clone, Copy, Debug)]
pub enum PackedLayout {
    Fixed(u64),
    Variable(u64),
}

/// How errors name an encoding: in words, not as Rust values.
impl std::fmt::Display for Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Codec::Flat { bits } => write!(f, "flat {bits}-bit values"),
            Codec::Variable { offset_bits } => {
                write!(f, "variable-width values ({offset_bits}-bit offsets)")
            }
            Codec::Constant { .. } => write!(f, "a constant"),
            Codec::InlineBitpacking { bits } => write!(f, "bit-packed {bits}-bit values"),
            Codec::OutOfLineBitpacking { bits, .. } => write!(f, "bit-packed {bits}-bit values"),
            Codec::Fsst { inner, .. } => write!(f, "FSST over {inner}"),
            Codec::Rle { bits } => write!(f, "run-length encoded {bits}-bit values"),
            Codec::ByteStreamSplit { bits } => write!(f, "byte-stream-split {bits}-bit values"),
            Codec::General { scheme, inner } => write!(f, "{scheme:?} over {inner}"),
            Codec::FixedSizeList { dim, inner, .. } => {
                write!(f, "fixed-size lists of {dim} over {inner}")
            }
            Codec::PackedStruct { .. } => write!(f, "packed structs"),
            Codec::VariablePackedStruct { .. } => {
                write!(f, "packed structs with variable-width fields")
            }
        }
    }
}

/// The name of a protobuf compression, for errors.
fn proto_name(c: Option<&PbCompression>) -> &'static str {
    match c {
        None => "nothing",
        Some(PbCompression::Flat(_)) => "flat values",
        Some(PbCompression::Variable(_)) => "variable-width values",
        Some(PbCompression::Constant(_)) => "a constant",
        Some(PbCompression::InlineBitpacking(_)) | Some(PbCompression::OutOfLineBitpacking(_)) => {
            "bit packing"
        }
        Some(PbCompression::Fsst(_)) => "FSST",
        Some(PbCompression::Dictionary(_)) => "a dictionary",
        Some(PbCompression::Rle(_)) => "run-length encoding",
        Some(PbCompression::ByteStreamSplit(_)) => "byte stream split",
        Some(PbCompression::General(_)) => "general compression",
        Some(PbCompression::FixedSizeList(_)) => "fixed-size lists",
        Some(PbCompression::PackedStruct(_)) | Some(PbCompression::VariablePackedStruct(_)) => {
            "packed structs"
        }
    }
}

fn required(e: &Option<Box<pb::CompressiveEncoding>>, what: &str) -> Result<Codec> {
    match e {
        Some(e) => Codec::from_proto(e),
        None => Err(corrupt(format!(
            "{what} encoding is missing its inner encoding"
        ))),
    }
}

impl Codec {
    pub fn from_proto(e: &pb::CompressiveEncoding) -> Result<Self> {
        let c = e
            .compression
            .as_ref()
            .ok_or_else(|| corrupt("empty compressive encoding"))?;
        Ok(match c {
            PbCompression::Flat(f) => {
                if f.data.is_some() {
                    return Err(unsupported("flat encoding with buffer compression"));
                }
                if f.bits_per_value == 0 || (f.bits_per_value != 1 && f.bits_per_value % 8 != 0) {
                    return Err(unsupported(format!(
                        "flat encoding of {} bits per value",
                        f.bits_per_value
                    )));
                }
                Codec::Flat {
                    bits: f.bits_per_value,
                }
            }
            PbCompression::Variable(v) => {
                if v.values.is_some() {
                    return Err(unsupported("variable encoding with buffer compression"));
                }
                match required(&v.offsets, "variable")? {
                    Codec::Flat {
                        bits: b @ (32 | 64),
                    } => Codec::Variable { offset_bits: b },
                    other => {
                        return Err(unsupported(format!(
                            "variable-width offsets encoded as {other}"
                        )))
                    }
                }
            }
            PbCompression::Constant(c) => Codec::Constant {
                value: c.value.clone(),
            },
            PbCompression::InlineBitpacking(b) => {
                if b.values.is_some() {
                    return Err(unsupported("inline bitpacking with buffer compression"));
                }
                Codec::InlineBitpacking {
                    bits: check_word_bits(b.uncompressed_bits_per_value)?,
                }
            }
            PbCompression::OutOfLineBitpacking(b) => {
                let bits = check_word_bits(b.uncompressed_bits_per_value)?;
                // The child records the packed width, which need not be a whole byte.
                let packed_bits = match b.values.as_deref().and_then(|v| v.compression.as_ref()) {
                    Some(PbCompression::Flat(f)) if f.bits_per_value <= bits => f.bits_per_value,
                    other => {
                        return Err(unsupported(format!(
                            "out-of-line bitpacking over {}",
                            proto_name(other)
                        )))
                    }
                };
                Codec::OutOfLineBitpacking { bits, packed_bits }
            }
            PbCompression::Fsst(f) => Codec::Fsst {
                table: Arc::new(SymbolTable::parse(&f.symbol_table)?),
                inner: Box::new(required(&f.values, "fsst")?),
            },
            PbCompression::Dictionary(_) => {
                return Err(unsupported(
                    "dictionary as a compressive encoding (dictionaries are page-level)",
                ))
            }
            PbCompression::Rle(r) => {
                let bits = match required(&r.values, "rle")? {
                    Codec::Flat { bits } => check_word_bits(bits)?,
                    other => return Err(unsupported(format!("rle values encoded as {other}"))),
                };
                match required(&r.run_lengths, "rle")? {
                    Codec::Flat { bits: 8 } => {}
                    other => {
                        return Err(unsupported(format!("rle run lengths encoded as {other}")))
                    }
                }
                Codec::Rle { bits }
            }
            PbCompression::ByteStreamSplit(b) => match required(&b.values, "byte stream split")? {
                Codec::Flat {
                    bits: bits @ (16 | 32 | 64),
                } => Codec::ByteStreamSplit { bits },
                other => return Err(unsupported(format!("byte stream split over {other}"))),
            },
            PbCompression::General(g) => {
                let comp = g
                    .compression
                    .as_ref()
                    .ok_or_else(|| corrupt("general compression without a scheme"))?;
                Codec::General {
                    scheme: Scheme::from_proto(comp.scheme)?,
                    inner: Box::new(required(&g.values, "general")?),
                }
            }
            PbCompression::FixedSizeList(f) => {
                if f.items_per_value == 0 {
                    return Err(corrupt("fixed-size list of 0 items"));
                }
                Codec::FixedSizeList {
                    dim: f.items_per_value,
                    has_validity: f.has_validity,
                    inner: Box::new(required(&f.values, "fixed-size list")?),
                }
            }
            PbCompression::PackedStruct(p) => {
                match required(&p.values, "packed struct")? {
                    Codec::Flat { bits }
                        if Some(bits)
                            == p.bits_per_value
                                .iter()
                                .try_fold(0u64, |a, b| a.checked_add(*b)) => {}
                    other => return Err(unsupported(format!("packed struct over {other}"))),
                }
                if p.bits_per_value.iter().any(|b| *b == 0 || b % 8 != 0) {
                    return Err(unsupported("packed struct field that is not byte-aligned"));
                }
                Codec::PackedStruct {
                    bits: p.bits_per_value.clone(),
                }
            }
            PbCompression::VariablePackedStruct(v) => {
                use pb::variable_packed_struct::field_encoding::Layout;
                let fields = v
                    .fields
                    .iter()
                    .map(|f| {
                        let codec = match &f.value {
                            Some(e) => Codec::from_proto(e)?,
                            None => return Err(corrupt("packed field without an encoding")),
                        };
                        let layout = match f.layout {
                            Some(Layout::BitsPerValue(b)) if b % 8 == 0 => PackedLayout::Fixed(b),
                            Some(Layout::BitsPerLength(b @ (32 | 64))) => PackedLayout::Variable(b),
                            other => {
                                return Err(unsupported(format!(
                                    "packed field layout {}",
                                    match other {
                                        Some(Layout::BitsPerValue(b)) => format!("of {b} bits"),
                                        Some(Layout::BitsPerLength(b)) =>
                                            format!("with {b}-bit lengths"),
                                        None => "missing".into(),
                                    }
                                )))
                            }
                        };
                        Ok(PackedField { codec, layout })
                    })
                    .collect::<Result<_>>()?;
                Codec::VariablePackedStruct { fields }
            }
        })
    }

    /// Decode the value buffers of one mini-block chunk holding `n` values.
    pub fn decode_miniblock(
        &self,
        bufs: &[&[u8]],
        n: usize,
        out: &mut ValuesBuilder,
    ) -> Result<()> {
        let first = || {
            bufs.first()
                .copied()
                .ok_or_else(|| corrupt("mini-block chunk has no value buffer"))
        };
        match self {
            Codec::Flat { bits } => flat(first()?, *bits, n, out),
            Codec::Variable { offset_bits } => {
                variable::decode_chunk(first()?, *offset_bits, n, out.variable()?)
            }
            Codec::InlineBitpacking { bits } => {
                bitpacking::decode_inline(first()?, *bits, n, out.fixed()?)
            }
            Codec::Fsst { table, inner } => fsst::decode_miniblock(table, inner, bufs, n, out),
            Codec::Rle { bits } => {
                let lengths = bufs
                    .get(1)
                    .ok_or_else(|| corrupt("rle chunk without run lengths"))?;
                rle::decode(first()?, lengths, *bits, n, out.fixed()?)
            }
            Codec::ByteStreamSplit { bits } => {
                byte_stream_split::decode(first()?, *bits, n, out.fixed()?)
            }
            Codec::General { scheme, inner } => {
                let decompressed = scheme.decompress(first()?)?;
                let mut rest: Vec<&[u8]> = Vec::with_capacity(bufs.len());
                rest.push(&decompressed);
                rest.extend_from_slice(&bufs[1..]);
                inner.decode_miniblock(&rest, n, out)
            }
            Codec::FixedSizeList { .. } => fixed_size_list::decode_miniblock(self, bufs, n, out),
            Codec::PackedStruct { bits } => packed_struct::decode_fixed(first()?, bits, n, out),
            Codec::Constant { value } => constant(value.as_deref(), n, out),
            other => Err(unsupported(format!(
                "{} in a mini-block page",
                other.name()
            ))),
        }
    }

    /// Values `selected` (increasing) of a mini-block chunk of `n` values, decoding only
    /// those where the encoding allows it (strings, plain or FSST-compressed); false,
    /// with nothing decoded, where it does not.
    pub fn decode_miniblock_selected(
        &self,
        bufs: &[&[u8]],
        n: usize,
        selected: &[usize],
        out: &mut ValuesBuilder,
    ) -> Result<bool> {
        let Some(buf) = bufs.first() else {
            return Ok(false);
        };
        match self {
            Codec::Variable { offset_bits } => {
                fsst::decode_miniblock_selected(None, *offset_bits, buf, n, selected, out)?;
                Ok(true)
            }
            Codec::Fsst { table, inner } => match inner.as_ref() {
                Codec::Variable { offset_bits } => {
                    fsst::decode_miniblock_selected(
                        Some(table),
                        *offset_bits,
                        buf,
                        n,
                        selected,
                        out,
                    )?;
                    Ok(true)
                }
                _ => Ok(false),
            },
            _ => Ok(false),
        }
    }

    /// Decode one opaque buffer holding `n` values (levels, dictionaries).
    pub fn decode_block(&self, buf: &[u8], n: usize, out: &mut ValuesBuilder) -> Result<()> {
        match self {
            Codec::Flat { bits } => flat(buf, *bits, n, out),
            Codec::Variable { offset_bits } => {
                variable::decode_block(buf, *offset_bits, n, out.variable()?)
            }
            Codec::InlineBitpacking { bits } => {
                if n > 1024 {
                    return Err(corrupt(format!(
                        "inline-bitpacked block of {n} values (at most 1024)"
                    )));
                }
                bitpacking::decode_inline(buf, *bits, n, out.fixed()?)
            }
            Codec::OutOfLineBitpacking { bits, packed_bits } => {
                bitpacking::decode_out_of_line(buf, *bits, *packed_bits, n, out.fixed()?)
            }
            Codec::Rle { bits } => {
                let values_len = crate::encoding::bytes::u64_at(buf, 0, "rle block")? as usize;
                let values = slice(buf, 8, values_len, "rle block values")?;
                rle::decode(values, &buf[8 + values_len..], *bits, n, out.fixed()?)
            }
            Codec::General { scheme, inner } => {
                inner.decode_block(&scheme.decompress(buf)?, n, out)
            }
            Codec::Constant { value } => constant(value.as_deref(), n, out),
            Codec::FixedSizeList {
                dim,
                has_validity: false,
                inner,
            } => match out {
                ValuesBuilder::FixedSizeList { child, len, .. } => {
                    let items = n
                        .checked_mul(*dim as usize)
                        .ok_or_else(|| corrupt(format!("{n} lists of {dim} items")))?;
                    inner.decode_block(buf, items, child)?;
                    *len += n;
                    Ok(())
                }
                _ => Err(corrupt(
                    "fixed-size list encoding for values that are not fixed-size lists",
                )),
            },
            other => Err(unsupported(format!("{} in a block", other.name()))),
        }
    }

    /// Decode the bytes of one value of a full-zip page.
    pub fn decode_value(&self, value: &[u8], out: &mut ValuesBuilder) -> Result<()> {
        match self {
            Codec::Flat { bits } => flat(value, *bits, 1, out),
            Codec::Variable { .. } => out.variable()?.append(value),
            Codec::Fsst { table, .. } => table.decode_value(value, out.variable()?),
            Codec::General { scheme, inner } => inner.decode_value(&scheme.decompress(value)?, out),
            Codec::FixedSizeList { .. } => fixed_size_list::decode_value(self, value, out),
            Codec::VariablePackedStruct { fields } => {
                packed_struct::decode_variable_row(fields, value, out)
            }
            Codec::Constant { value: v } => constant(v.as_deref(), 1, out),
            other => Err(unsupported(format!("{} in a full-zip page", other.name()))),
        }
    }

    /// A short name for error messages.
    pub fn name(&self) -> &'static str {
        match self {
            Codec::Flat { .. } => "flat",
            Codec::Variable { .. } => "variable",
            Codec::Constant { .. } => "constant",
            Codec::InlineBitpacking { .. } => "inline bitpacking",
            Codec::OutOfLineBitpacking { .. } => "out-of-line bitpacking",
            Codec::Fsst { .. } => "fsst",
            Codec::Rle { .. } => "rle",
            Codec::ByteStreamSplit { .. } => "byte stream split",
            Codec::General { .. } => "general compression",
            Codec::FixedSizeList { .. } => "fixed-size list",
            Codec::PackedStruct { .. } => "packed struct",
            Codec::VariablePackedStruct { .. } => "variable packed struct",
        }
    }
}

fn check_word_bits(bits: u64) -> Result<u64> {
    match bits {
        8 | 16 | 32 | 64 => Ok(bits),
        b => Err(unsupported(format!("bit packing of {b}-bit values"))),
    }
}

/// Flat values: `n` values of `bits` bits, back to back.
fn flat(buf: &[u8], bits: u64, n: usize, out: &mut ValuesBuilder) -> Result<()> {
    match out {
        ValuesBuilder::Fixed(b) => {
            if b.bits as u64 != bits {
                return Err(corrupt(format!(
                    "{bits}-bit flat values read as {}-bit values",
                    b.bits
                )));
            }
            b.append_bytes(buf, n)
        }
        // A fixed-size list stored flat (e.g. a vector in a full-zip page): items are contiguous.
        ValuesBuilder::FixedSizeList {
            dim,
            child,
            len,
            validity,
        } => {
            let items = n
                .checked_mul(*dim)
                .ok_or_else(|| corrupt(format!("{n} lists of {dim} items")))?;
            let child = child.fixed()?;
            if child.bits as u64 * *dim as u64 != bits {
                return Err(corrupt(format!(
                    "{bits}-bit flat values read as lists of {dim} × {} bits",
                    child.bits
                )));
            }
            if let Some(v) = validity {
                v.append_n(items, true);
            }
            child.append_bytes(buf, items)?;
            *len += n;
            Ok(())
        }
        ValuesBuilder::Struct { .. } => Err(corrupt("flat-encoded values read as struct values")),
        ValuesBuilder::Variable(_) => {
            Err(corrupt("flat-encoded values read as variable-width values"))
        }
    }
}

/// `n` copies of a constant (or zeros when there is no value).
fn constant(value: Option<&[u8]>, n: usize, out: &mut ValuesBuilder) -> Result<()> {
    match (value, out) {
        (None, out) => out.append_zeros(n),
        (Some(v), ValuesBuilder::Fixed(b)) if b.bits != 1 => {
            if v.len() != b.byte_width() {
                return Err(corrupt(format!(
                    "constant of {} bytes for {}-bit values",
                    v.len(),
                    b.bits
                )));
            }
            let dst = b.extend_uninit(n);
            // Zero-width values (fixed_size_binary:0) have nothing to copy.
            if !v.is_empty() {
                for chunk in dst.chunks_exact_mut(v.len()) {
                    chunk.copy_from_slice(v);
                }
            }
            Ok(())
        }
        (Some(v), ValuesBuilder::Fixed(b)) => {
            let bit = v.first().copied().unwrap_or(0) & 1;
            let bytes = vec![if bit == 1 { 0xFF } else { 0 }; n.div_ceil(8)];
            b.append_bits(&bytes, 0, n)
        }
        (Some(v), ValuesBuilder::Variable(b)) => {
            for _ in 0..n {
                b.append(v)?;
            }
            Ok(())
        }
        (Some(_), _) => Err(unsupported("constant values of a nested type")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codec(c: PbCompression) -> Codec {
        Codec::from_proto(&pb::CompressiveEncoding {
            compression: Some(c),
        })
        .unwrap()
    }

    #[test]
    fn packed_struct_widths_that_overflow_are_refused() {
        // Field widths summing past u64::MAX overflowed (a panic in debug builds).
        let p = pb::PackedStruct {
            bits_per_value: vec![u64::MAX - 7, 16],
            values: Some(Box::new(crate::encoding::encode::proto::flat(8))),
        };
        let e = pb::CompressiveEncoding {
            compression: Some(PbCompression::PackedStruct(Box::new(p))),
        };
        assert!(Codec::from_proto(&e).is_err());
    }

    #[test]
    fn zero_width_constants_and_huge_counts() {
        // A constant of fixed_size_binary:0 values cut its output into 0-byte chunks: a panic.
        let c = codec(PbCompression::Constant(pb::Constant {
            value: Some(vec![]),
        }));
        let mut out =
            ValuesBuilder::for_type(&arrow_schema::DataType::FixedSizeBinary(0), 3).unwrap();
        c.decode_block(&[], 3, &mut out).unwrap();
        assert_eq!(out.len(), 3);
        // Counts whose byte sizes overflow are errors, not overflow panics.
        let split = Codec::ByteStreamSplit { bits: 64 };
        let mut out = ValuesBuilder::for_type(&arrow_schema::DataType::Float64, 0).unwrap();
        assert!(split
            .decode_miniblock(&[&[0u8; 16]], usize::MAX / 2, &mut out)
            .is_err());
        let strings = Codec::Variable { offset_bits: 32 };
        let mut out = ValuesBuilder::for_type(&arrow_schema::DataType::Utf8, 0).unwrap();
        assert!(strings
            .decode_miniblock(&[&[0u8; 16]], usize::MAX, &mut out)
            .is_err());
    }
}
