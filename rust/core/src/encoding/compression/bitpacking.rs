//! FastLanes bit packing. Values come in blocks of 1024, each value cut to `w` bits and
//! laid out in the FastLanes transposed order; the `fastlanes` crate unpacks a block.
//! Lance frames the blocks two ways: "inline" stores each block's width in a word before
//! it (mini-block chunks), "out-of-line" has one width for a whole buffer and may store
//! the last partial block unpacked.
use arrow_buffer::ArrowNativeType;
use fastlanes::BitPacking;

use crate::encoding::bytes::{slice, uint_at, words, words_mut};
use crate::encoding::values::FixedBuilder;
use crate::error::{corrupt, Result};

const BLOCK: usize = 1024;

/// Bytes of one packed block of width `w`: 1024 values × w bits.
fn block_bytes(w: usize) -> usize {
    BLOCK * w / 8
}

/// Unpack one block of width `w` from `packed` into `out` (1024 values).
fn unpack<T: BitPacking + ArrowNativeType>(w: usize, packed: &[u8], out: &mut [T]) -> Result<()> {
    let t_bits = std::mem::size_of::<T>() * 8;
    if w > t_bits {
        return Err(corrupt(format!(
            "bit width {w} larger than the {t_bits}-bit values"
        )));
    }
    debug_assert_eq!(out.len(), BLOCK);
    if w == 0 {
        out.fill(T::default());
        return Ok(());
    }
    let packed = slice(packed, 0, block_bytes(w), "bit-packed block")?;
    let input = words::<T>(packed);
    // SAFETY: `input` holds exactly 1024*w/T words, `out` 1024 values and w <= T, which
    // is all `unchecked_unpack` requires.
    unsafe { T::unchecked_unpack(w, &input, out) };
    Ok(())
}

/// Append `n` values from `count` consecutive blocks of width `w`.
fn unpack_blocks_typed<T: BitPacking + ArrowNativeType>(
    w: usize,
    packed: &[u8],
    n: usize,
    out: &mut FixedBuilder,
) -> Result<()> {
    let start = out.len;
    let blocks = n.div_ceil(BLOCK);
    let dst = out.extend_uninit(blocks * BLOCK);
    let dst = words_mut::<T>(dst)?;
    let bb = block_bytes(w);
    for (i, block) in dst.chunks_exact_mut(BLOCK).enumerate() {
        unpack::<T>(w, slice(packed, i * bb, bb, "bit-packed data")?, block)?;
    }
    out.truncate(start + n);
    Ok(())
}

fn unpack_blocks(
    bits: u64,
    w: usize,
    packed: &[u8],
    n: usize,
    out: &mut FixedBuilder,
) -> Result<()> {
    if out.bits as u64 != bits {
        return Err(corrupt(format!(
            "{bits}-bit packed values read as {}-bit values",
            out.bits
        )));
    }
    match bits {
        8 => unpack_blocks_typed::<u8>(w, packed, n, out),
        16 => unpack_blocks_typed::<u16>(w, packed, n, out),
        32 => unpack_blocks_typed::<u32>(w, packed, n, out),
        64 => unpack_blocks_typed::<u64>(w, packed, n, out),
        b => Err(corrupt(format!("bit packing of {b}-bit values"))),
    }
}

/// One block with its width in a leading `bits`-wide word; `n` (≤ 1024) values are kept.
pub fn decode_inline(buf: &[u8], bits: u64, n: usize, out: &mut FixedBuilder) -> Result<()> {
    let word = (bits / 8) as usize;
    let w = uint_at(buf, 0, word, "bit-packed block header")?;
    if w > bits {
        return Err(corrupt(format!(
            "bit-packed block claims width {w} for {bits}-bit values"
        )));
    }
    if n > BLOCK {
        return Err(corrupt(format!(
            "{n} values in one inline bit-packed block"
        )));
    }
    unpack_blocks(bits, w as usize, &buf[word..], n, out)
}

/// `n` values packed at width `w` with no headers; the last partial block is either
/// packed (padded to 1024) or stored as plain `bits`-wide values, which the buffer's
/// length tells apart.
pub fn decode_out_of_line(
    buf: &[u8],
    bits: u64,
    w: u64,
    n: usize,
    out: &mut FixedBuilder,
) -> Result<()> {
    let word = (bits / 8) as usize;
    let w = w as usize;
    let full = n / BLOCK;
    let tail = n % BLOCK;
    let words_per_block = BLOCK * w / bits as usize;
    let have = buf.len() / word;
    let raw_tail = tail > 0 && have == full * words_per_block + tail;
    let packed_n = if raw_tail { full * BLOCK } else { n };
    let need = packed_n.div_ceil(BLOCK) * words_per_block;
    if have < need + if raw_tail { tail } else { 0 } {
        return Err(corrupt(format!(
            "bit-packed buffer of {} bytes is too short for {n} values of width {w}",
            buf.len()
        )));
    }
    unpack_blocks(bits, w, buf, packed_n, out)?;
    if raw_tail {
        out.append_bytes(&buf[need * word..], tail)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pack 1024 values the FastLanes way to build test inputs.
    fn pack_u32(values: &[u32; 1024], w: usize) -> Vec<u8> {
        let mut packed = vec![0u32; 1024 * w / 32];
        unsafe { u32::unchecked_pack(w, values, &mut packed) };
        packed.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn inline_block_round_trip_keeps_first_n() {
        let mut values = [0u32; 1024];
        for (i, v) in values.iter_mut().enumerate() {
            *v = (i % 16) as u32;
        }
        let mut buf = 4u32.to_le_bytes().to_vec();
        buf.extend(pack_u32(&values, 4));
        let mut out = FixedBuilder::new(32, 0);
        decode_inline(&buf, 32, 1000, &mut out).unwrap();
        assert_eq!(out.len, 1000);
        let got: Vec<u32> = out.data.typed_data::<u32>().to_vec();
        assert_eq!(&got[..], &values[..1000]);
    }

    #[test]
    fn width_zero_is_all_zeros_and_bad_width_is_an_error() {
        let mut out = FixedBuilder::new(16, 0);
        decode_inline(&0u16.to_le_bytes(), 16, 7, &mut out).unwrap();
        assert_eq!(out.data.typed_data::<u16>(), &[0; 7]);
        let err =
            decode_inline(&40u16.to_le_bytes(), 16, 7, &mut FixedBuilder::new(16, 0)).unwrap_err();
        assert!(err.to_string().contains("width 40"), "{err}");
        // A header promising data that is not there.
        let err =
            decode_inline(&8u16.to_le_bytes(), 16, 7, &mut FixedBuilder::new(16, 0)).unwrap_err();
        assert!(err.to_string().contains("bit-packed"), "{err}");
    }

    #[test]
    fn out_of_line_with_raw_tail() {
        let mut values = [0u32; 1024];
        for (i, v) in values.iter_mut().enumerate() {
            *v = (i * 7 % 1000) as u32;
        }
        let mut buf = pack_u32(&values, 10);
        // 1024 packed values, then a 3-value tail stored as plain u32s.
        for t in [5u32, 6, 7] {
            buf.extend(t.to_le_bytes());
        }
        let mut out = FixedBuilder::new(32, 0);
        decode_out_of_line(&buf, 32, 10, 1027, &mut out).unwrap();
        let got = out.data.typed_data::<u32>();
        assert_eq!(&got[..1024], &values[..]);
        assert_eq!(&got[1024..], &[5, 6, 7]);
    }
}

/// Bits needed for the largest value of `values` (0 when all are 0).
pub fn width_of<T: ArrowNativeType + Into<u64>>(values: &[T]) -> usize {
    let or = values.iter().fold(0u64, |acc, v| acc | (*v).into());
    64 - or.leading_zeros() as usize
}

/// Pack up to 1024 values (zero-padded to a block) at width `w`, appending the words.
fn pack_block<T: BitPacking + ArrowNativeType>(values: &[T], w: usize, out: &mut Vec<u8>) {
    if w == 0 {
        return;
    }
    let mut block = [T::default(); BLOCK];
    block[..values.len()].copy_from_slice(values);
    let mut packed = vec![T::default(); BLOCK * w / (std::mem::size_of::<T>() * 8)];
    // SAFETY: `packed` holds exactly 1024*w/T words and w <= T (callers compute w from
    // the values, which fit in T).
    unsafe { T::unchecked_pack(w, &block, &mut packed) };
    for v in packed {
        out.extend_from_slice(v.to_byte_slice_le());
    }
}

/// Little-endian bytes of a native value.
trait ToLe {
    fn to_byte_slice_le(&self) -> &[u8];
}
impl<T: ArrowNativeType> ToLe for T {
    fn to_byte_slice_le(&self) -> &[u8] {
        // SAFETY: a plain integer viewed as its bytes; the format is little-endian, as are
        // the targets this crate builds for.
        unsafe {
            std::slice::from_raw_parts(self as *const T as *const u8, std::mem::size_of::<T>())
        }
    }
}

/// Encode one mini-block chunk (≤ 1024 values): the width as a `T` word, then the block.
pub fn encode_inline<T: BitPacking + ArrowNativeType + Into<u64>>(values: &[T], out: &mut Vec<u8>) {
    let w = width_of(values);
    let mut header = [0u8; 8];
    header[0] = w as u8;
    out.extend_from_slice(&header[..std::mem::size_of::<T>()]);
    pack_block(values, w, out);
}

/// Size of `encode_inline` output for these values.
pub fn inline_size<T: ArrowNativeType + Into<u64>>(values: &[T]) -> usize {
    std::mem::size_of::<T>() + BLOCK * width_of(values) / 8
}

/// Encode `values` at width `w` without headers: full blocks, then the tail either packed
/// (padded) or as plain values, whichever is smaller (the reader tells them apart by size).
pub fn encode_out_of_line<T: BitPacking + ArrowNativeType>(
    values: &[T],
    w: usize,
    out: &mut Vec<u8>,
) {
    let t_bits = std::mem::size_of::<T>() * 8;
    let full = values.len() / BLOCK * BLOCK;
    for block in values[..full].chunks(BLOCK) {
        pack_block(block, w, out);
    }
    let tail = &values[full..];
    if tail.is_empty() {
        return;
    }
    if w * (BLOCK - tail.len()) < (t_bits - w) * tail.len() {
        pack_block(tail, w, out);
    } else {
        for v in tail {
            out.extend_from_slice(v.to_byte_slice_le());
        }
    }
}

#[cfg(test)]
mod encode_tests {
    use super::*;

    #[test]
    fn inline_and_out_of_line_round_trip() {
        let values: Vec<u64> = (0..1000u64).map(|i| (i * 37) % 5000).collect();
        let mut buf = Vec::new();
        encode_inline(&values, &mut buf);
        assert_eq!(buf.len(), inline_size(&values));
        let mut out = FixedBuilder::new(64, 0);
        decode_inline(&buf, 64, values.len(), &mut out).unwrap();
        assert_eq!(out.data.typed_data::<u64>(), &values[..]);

        for n in [1024usize, 1030, 2047, 5] {
            let levels: Vec<u16> = (0..n).map(|i| (i % 3) as u16).collect();
            let mut buf = Vec::new();
            encode_out_of_line(&levels, 2, &mut buf);
            let mut out = FixedBuilder::new(16, 0);
            decode_out_of_line(&buf, 16, 2, n, &mut out).unwrap();
            assert_eq!(out.data.typed_data::<u16>(), &levels[..], "{n} levels");
        }
    }
}
