//! Shorthands for the `CompressiveEncoding` messages the encoders write.
use crate::encoding::compression::Scheme;
use crate::proto::encodings21 as pb;
use crate::proto::encodings21::compressive_encoding::Compression as C;

fn wrap(c: C) -> pb::CompressiveEncoding {
    pb::CompressiveEncoding {
        compression: Some(c),
    }
}

pub fn flat(bits: u64) -> pb::CompressiveEncoding {
    wrap(C::Flat(pb::Flat {
        bits_per_value: bits,
        data: None,
    }))
}

pub fn variable(offset_bits: u64) -> pb::CompressiveEncoding {
    wrap(C::Variable(Box::new(pb::Variable {
        offsets: Some(Box::new(flat(offset_bits))),
        values: None,
    })))
}

pub fn inline_bitpacking(bits: u64) -> pb::CompressiveEncoding {
    wrap(C::InlineBitpacking(pb::InlineBitpacking {
        uncompressed_bits_per_value: bits,
        values: None,
    }))
}

pub fn out_of_line_bitpacking(bits: u64, packed: u64) -> pb::CompressiveEncoding {
    wrap(C::OutOfLineBitpacking(Box::new(pb::OutOfLineBitpacking {
        uncompressed_bits_per_value: bits,
        values: Some(Box::new(flat(packed))),
    })))
}

pub fn fsst(table: Vec<u8>, inner: pb::CompressiveEncoding) -> pb::CompressiveEncoding {
    wrap(C::Fsst(Box::new(pb::Fsst {
        symbol_table: table,
        values: Some(Box::new(inner)),
    })))
}

pub fn fixed_size_list(
    dim: u64,
    has_validity: bool,
    inner: pb::CompressiveEncoding,
) -> pb::CompressiveEncoding {
    wrap(C::FixedSizeList(Box::new(pb::FixedSizeList {
        items_per_value: dim,
        values: Some(Box::new(inner)),
        has_validity,
    })))
}

pub fn general(
    scheme: Scheme,
    level: Option<i32>,
    inner: pb::CompressiveEncoding,
) -> pb::CompressiveEncoding {
    let scheme = match scheme {
        Scheme::Zstd => pb::CompressionScheme::CompressionAlgorithmZstd,
        Scheme::Lz4 => pb::CompressionScheme::CompressionAlgorithmLz4,
    };
    wrap(C::General(Box::new(pb::General {
        compression: Some(pb::BufferCompression {
            scheme: scheme as i32,
            level,
        }),
        values: Some(Box::new(inner)),
    })))
}

/// Fixed-width struct values stored row by row, each field `bits` wide (`inner` holds
/// the rows as flat values of the summed width).
pub fn packed_struct(bits: Vec<u64>, inner: pb::CompressiveEncoding) -> pb::CompressiveEncoding {
    wrap(C::PackedStruct(Box::new(pb::PackedStruct {
        bits_per_value: bits,
        values: Some(Box::new(inner)),
    })))
}

/// How one field of a variable packed struct is laid out in its row.
pub enum PackedFieldLayout {
    /// Fixed-width, this many bits.
    Fixed(u64),
    /// A length prefix of this many bits, then the bytes.
    Variable(u64),
}

/// Struct values stored row by row in a full-zip page, some fields variable-width: each
/// field's encoding and layout.
pub fn variable_packed_struct(
    fields: Vec<(pb::CompressiveEncoding, PackedFieldLayout)>,
) -> pb::CompressiveEncoding {
    use pb::variable_packed_struct::field_encoding::Layout;
    let fields = fields
        .into_iter()
        .map(
            |(value, layout)| pb::variable_packed_struct::FieldEncoding {
                value: Some(value),
                layout: Some(match layout {
                    PackedFieldLayout::Fixed(bits) => Layout::BitsPerValue(bits),
                    PackedFieldLayout::Variable(bits) => Layout::BitsPerLength(bits),
                }),
            },
        )
        .collect();
    wrap(C::VariablePackedStruct(pb::VariablePackedStruct { fields }))
}
