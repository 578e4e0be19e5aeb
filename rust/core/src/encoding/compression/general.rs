//! General-purpose compression (zstd, lz4) applied on top of another encoding.
//! zstd units are a u64 uncompressed length and one zstd frame; lz4 units a u32
//! uncompressed length and one lz4 block.
use crate::encoding::bytes::u64_at;
use crate::error::{corrupt, unsupported, Result};
use crate::proto::encodings21::CompressionScheme;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    Zstd,
    Lz4,
}

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
/// Refuse to inflate a unit beyond this; a corrupt length must not exhaust memory.
const MAX_UNIT: u64 = 1 << 32;
/// An lz4 block inflates at most about 255 times (a match of n bytes takes n / 255 bytes).
const LZ4_MAX_RATIO: usize = 256;

/// Decompress a zstd stream into at most `limit` bytes; memory grows with the bytes that
/// come out, not with a length the input states.
fn zstd_stream(input: &[u8], limit: u64) -> Result<Vec<u8>> {
    use std::io::Read;
    let decoder = zstd::stream::read::Decoder::with_buffer(input)
        .map_err(|e| corrupt(format!("zstd: {e}")))?;
    let mut out = Vec::new();
    decoder
        .take(limit)
        .read_to_end(&mut out)
        .map_err(|e| corrupt(format!("zstd: {e}")))?;
    Ok(out)
}

impl Scheme {
    pub fn from_proto(scheme: i32) -> Result<Self> {
        match CompressionScheme::try_from(scheme) {
            Ok(CompressionScheme::CompressionAlgorithmZstd) => Ok(Scheme::Zstd),
            Ok(CompressionScheme::CompressionAlgorithmLz4) => Ok(Scheme::Lz4),
            _ => Err(unsupported(format!("general compression scheme {scheme}"))),
        }
    }

    pub fn decompress(self, buf: &[u8]) -> Result<Vec<u8>> {
        match self {
            Scheme::Zstd => {
                if buf.starts_with(&ZSTD_MAGIC) {
                    // A bare frame, as some older writers produced.
                    let out = zstd_stream(buf, MAX_UNIT + 1)?;
                    if out.len() as u64 > MAX_UNIT {
                        return Err(corrupt("zstd frame inflates past 4 GiB"));
                    }
                    return Ok(out);
                }
                let len = u64_at(buf, 0, "zstd unit")?;
                if len > MAX_UNIT {
                    return Err(corrupt(format!("zstd unit claims {len} bytes")));
                }
                // One byte more than stated shows a unit that inflates past its claim.
                let out = zstd_stream(&buf[8..], len + 1)?;
                if out.len() as u64 != len {
                    return Err(corrupt(format!(
                        "zstd unit decompressed to {} bytes, expected {len}",
                        out.len()
                    )));
                }
                Ok(out)
            }
            Scheme::Lz4 => {
                let len = crate::encoding::bytes::u32_at(buf, 0, "lz4 unit")? as usize;
                if len > buf.len().saturating_mul(LZ4_MAX_RATIO) {
                    return Err(corrupt(format!(
                        "lz4 unit of {} bytes claims {len} bytes",
                        buf.len()
                    )));
                }
                lz4_flex::block::decompress(&buf[4..], len)
                    .map_err(|e| corrupt(format!("lz4: {e}")))
            }
        }
    }
}

impl Scheme {
    /// Compress `data` into one unit of this scheme's framing.
    pub fn compress(self, data: &[u8], level: Option<i32>) -> Vec<u8> {
        match self {
            Scheme::Zstd => {
                let mut out = (data.len() as u64).to_le_bytes().to_vec();
                // Compressing into memory cannot fail for valid levels; fall back to level 3.
                let frame = zstd::bulk::compress(data, level.unwrap_or(3))
                    .or_else(|_| zstd::bulk::compress(data, 3))
                    .unwrap_or_default();
                out.extend_from_slice(&frame);
                out
            }
            Scheme::Lz4 => lz4_flex::block::compress_prepend_size(data),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_framings_round_trip() {
        let data: Vec<u8> = (0..5000u32).flat_map(|v| (v % 97).to_le_bytes()).collect();
        let mut z = (data.len() as u64).to_le_bytes().to_vec();
        z.extend(zstd::bulk::compress(&data, 3).unwrap());
        assert_eq!(Scheme::Zstd.decompress(&z).unwrap(), data);
        let l = lz4_flex::block::compress_prepend_size(&data);
        assert_eq!(Scheme::Lz4.decompress(&l).unwrap(), data);
        // Truncated units are errors, not panics.
        assert!(Scheme::Zstd.decompress(&z[..z.len() / 2]).is_err());
        assert!(Scheme::Lz4.decompress(&l[..l.len() / 2]).is_err());
    }

    #[test]
    fn stated_sizes_do_not_size_allocations() {
        // A zstd unit claiming 16 GiB used to reserve it before decompressing; now the
        // output grows as it decompresses and the claim is checked against it.
        let mut z = (1u64 << 34).to_le_bytes().to_vec();
        z.extend(zstd::bulk::compress(b"abc", 3).unwrap());
        let err = Scheme::Zstd.decompress(&z).unwrap_err();
        assert!(
            err.to_string().contains("claims 17179869184 bytes"),
            "{err}"
        );
        let mut z = (1u64 << 31).to_le_bytes().to_vec();
        z.extend(zstd::bulk::compress(b"abc", 3).unwrap());
        let err = Scheme::Zstd.decompress(&z).unwrap_err();
        assert!(err.to_string().contains("decompressed to 3 bytes"), "{err}");
        // lz4 reserved its stated u32 size (up to 4 GiB) from 4 bytes.
        let mut l = lz4_flex::block::compress_prepend_size(b"abc");
        l[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        let err = Scheme::Lz4.decompress(&l).unwrap_err();
        assert!(err.to_string().contains("claims 4294967295"), "{err}");
    }
}
