//! Byte stream split: the i-th byte of every value is stored together, stream after
//! stream, within one chunk. Decoding interleaves the streams back.
use crate::encoding::bytes::slice;
use crate::encoding::values::FixedBuilder;
use crate::error::{corrupt, Result};

pub fn decode(buf: &[u8], bits: u64, n: usize, out: &mut FixedBuilder) -> Result<()> {
    if out.bits as u64 != bits {
        return Err(corrupt(format!(
            "{bits}-bit split values read as {}-bit values",
            out.bits
        )));
    }
    let w = (bits / 8) as usize;
    let size = n
        .checked_mul(w)
        .ok_or_else(|| corrupt(format!("{n} split values of {w} bytes")))?;
    let src = slice(buf, 0, size, "byte stream split chunk")?;
    let dst = out.extend_uninit(n);
    for (j, stream) in src.chunks_exact(n.max(1)).enumerate().take(w) {
        for (i, &byte) in stream.iter().enumerate() {
            dst[i * w + j] = byte;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaves_streams() {
        let vals = [1.0f32, 2.0, 3.0, 4.0];
        let mut split = vec![0u8; 16];
        for (i, v) in vals.iter().enumerate() {
            for (j, b) in v.to_le_bytes().iter().enumerate() {
                split[j * 4 + i] = *b;
            }
        }
        let mut out = FixedBuilder::new(32, 0);
        decode(&split, 32, 4, &mut out).unwrap();
        assert_eq!(out.data.typed_data::<f32>(), &vals);
    }
}
