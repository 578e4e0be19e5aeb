//! Variable-width values (strings, binary): offsets and bytes.
//! In a mini-block chunk the `n + 1` offsets come first and point into the chunk buffer
//! itself. In a block there is a header: offset width, where the bytes start, then the
//! offsets relative to that start.
use crate::encoding::bytes::{slice, u32_at, u64_at, words};
use crate::encoding::values::VariableBuilder;
use crate::error::{corrupt, Result};

/// Bytes of the `n + 1` offsets of `n` values, `w` bytes each.
pub fn offsets_size(n: usize, w: usize) -> Result<usize> {
    n.checked_add(1)
        .and_then(|k| k.checked_mul(w))
        .ok_or_else(|| corrupt(format!("offsets of {n} values")))
}

pub fn decode_chunk(
    buf: &[u8],
    offset_bits: u64,
    n: usize,
    out: &mut VariableBuilder,
) -> Result<()> {
    let w = (offset_bits / 8) as usize;
    let offsets = slice(buf, 0, offsets_size(n, w)?, "string offsets")?;
    if offset_bits == 32 {
        out.append_with_offsets(&words::<u32>(offsets), buf)
    } else {
        out.append_with_offsets(&words::<u64>(offsets), buf)
    }
}

pub fn decode_block(
    buf: &[u8],
    offset_bits: u64,
    n: usize,
    out: &mut VariableBuilder,
) -> Result<()> {
    let (stored_bits, start, header) = if offset_bits == 32 {
        (
            u32_at(buf, 0, "string block")? as u64,
            u32_at(buf, 4, "string block")? as u64,
            8,
        )
    } else {
        (
            u64_at(buf, 0, "string block")?,
            u64_at(buf, 8, "string block")?,
            16,
        )
    };
    if stored_bits != offset_bits {
        return Err(corrupt(format!(
            "string block header says {stored_bits}-bit offsets, expected {offset_bits}"
        )));
    }
    let w = (offset_bits / 8) as usize;
    let offsets = slice(buf, header, offsets_size(n, w)?, "string block offsets")?;
    let bytes = buf
        .get(start as usize..)
        .ok_or_else(|| corrupt("string block data starts past its end"))?;
    if offset_bits == 32 {
        out.append_with_offsets(&words::<u32>(offsets), bytes)
    } else {
        out.append_with_offsets(&words::<u64>(offsets), bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_offsets_are_relative_to_the_chunk() {
        // a, bc, "", def with 32-bit offsets starting at 5*4 = 20.
        let mut buf: Vec<u8> = [20u32, 21, 23, 23, 26]
            .iter()
            .flat_map(|o| o.to_le_bytes())
            .collect();
        buf.extend(b"abcdef");
        let mut out = VariableBuilder::new(false, 4);
        decode_chunk(&buf, 32, 4, &mut out).unwrap();
        assert_eq!(out.data, b"abcdef");
        assert_eq!(out.offsets.typed_data::<i32>(), &[0, 1, 3, 3, 6]);
        let err = decode_chunk(&buf[..22], 32, 4, &mut VariableBuilder::new(false, 4)).unwrap_err();
        assert!(err.to_string().contains("outside"), "{err}");
    }
}
