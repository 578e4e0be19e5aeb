//! Stable row id sequences: a fragment's row ids, one per physical row (deleted rows
//! included), stored as segments (ranges, ranges with holes or a bitmap, arrays).
use prost::Message;

use crate::error::{corrupt, Result};
use crate::proto::table::{
    encoded_u64_array::Array as Enc, u64_segment::Segment, EncodedU64Array, RowIdSequence,
};

fn decode_array(a: &EncodedU64Array, out: &mut Vec<u64>) -> Result<()> {
    match a
        .array
        .as_ref()
        .ok_or_else(|| corrupt("empty encoded row id array"))?
    {
        Enc::U16Array(x) => {
            out.extend(
                x.offsets
                    .chunks_exact(2)
                    .map(|c| x.base + u16::from_le_bytes([c[0], c[1]]) as u64),
            );
        }
        Enc::U32Array(x) => {
            out.extend(
                x.offsets
                    .chunks_exact(4)
                    .map(|c| x.base + u32::from_le_bytes(c.try_into().unwrap()) as u64),
            );
        }
        Enc::U64Array(x) => {
            out.extend(
                x.values
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap())),
            );
        }
    }
    Ok(())
}

/// Decode a serialized `RowIdSequence` into its row ids, in row order.
pub fn decode_row_ids(bytes: &[u8]) -> Result<Vec<u64>> {
    let seq =
        RowIdSequence::decode(bytes).map_err(|e| corrupt(format!("bad row id sequence: {e}")))?;
    let mut out = Vec::new();
    for s in &seq.segments {
        match s
            .segment
            .as_ref()
            .ok_or_else(|| corrupt("empty row id segment"))?
        {
            Segment::Range(r) => {
                if r.end < r.start {
                    return Err(corrupt(format!("row id range {}..{}", r.start, r.end)));
                }
                out.extend(r.start..r.end);
            }
            Segment::RangeWithHoles(r) => {
                let mut holes = Vec::new();
                if let Some(h) = &r.holes {
                    decode_array(h, &mut holes)?;
                }
                holes.sort_unstable();
                let mut h = holes.iter().peekable();
                for v in r.start..r.end {
                    if h.peek() == Some(&&v) {
                        h.next();
                    } else {
                        out.push(v);
                    }
                }
            }
            Segment::RangeWithBitmap(r) => {
                let span = r.end.saturating_sub(r.start) as usize;
                if r.bitmap.len() * 8 < span {
                    return Err(corrupt("row id bitmap shorter than its range"));
                }
                for i in 0..span {
                    // Bit i (LSB-first) says whether start + i is present.
                    if (r.bitmap[i / 8] >> (i % 8)) & 1 == 1 {
                        out.push(r.start + i as u64);
                    }
                }
            }
            Segment::SortedArray(a) | Segment::Array(a) => decode_array(a, &mut out)?,
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::table::{encoded_u64_array, u64_segment, U64Segment};

    #[test]
    fn all_segment_kinds() {
        let seg = |s| U64Segment { segment: Some(s) };
        let seq = RowIdSequence {
            segments: vec![
                seg(Segment::Range(u64_segment::Range { start: 0, end: 3 })),
                seg(Segment::RangeWithHoles(u64_segment::RangeWithHoles {
                    start: 10,
                    end: 15,
                    holes: Some(EncodedU64Array {
                        array: Some(Enc::U16Array(encoded_u64_array::U16Array {
                            base: 10,
                            offsets: vec![1, 0, 3, 0],
                        })),
                    }),
                })),
                // 0xd3 = bits 0,1,4,6,7; 0x03 = bits 8,9
                seg(Segment::RangeWithBitmap(u64_segment::RangeWithBitmap {
                    start: 100,
                    end: 110,
                    bitmap: vec![0xd3, 0x03],
                })),
                seg(Segment::Array(EncodedU64Array {
                    array: Some(Enc::U64Array(encoded_u64_array::U64Array {
                        values: 7u64.to_le_bytes().to_vec(),
                    })),
                })),
            ],
        };
        let ids = decode_row_ids(&seq.encode_to_vec()).unwrap();
        assert_eq!(
            ids,
            vec![0, 1, 2, 10, 12, 14, 100, 101, 104, 106, 107, 108, 109, 7]
        );
        assert!(decode_row_ids(&[0xff, 0xff]).is_err());
    }
}
