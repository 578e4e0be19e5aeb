//! Stable row id sequences: a fragment's row ids, one per physical row (deleted rows
//! included), stored as segments (ranges, ranges with holes or a bitmap, arrays).
use prost::Message;

use crate::error::{corrupt, Result};
use crate::proto::table::{
    encoded_u64_array::Array as Enc, u64_segment::Segment, EncodedU64Array, RowIdSequence,
};

fn decode_array(a: &EncodedU64Array, out: &mut Vec<u64>) -> Result<()> {
    let add = |base: u64, offset: u64| {
        base.checked_add(offset)
            .ok_or_else(|| corrupt(format!("row id {base} + {offset} overflows")))
    };
    match a
        .array
        .as_ref()
        .ok_or_else(|| corrupt("empty encoded row id array"))?
    {
        Enc::U16Array(x) => {
            for c in x.offsets.chunks_exact(2) {
                out.push(add(x.base, u16::from_le_bytes([c[0], c[1]]) as u64)?);
            }
        }
        Enc::U32Array(x) => {
            for c in x.offsets.chunks_exact(4) {
                out.push(add(
                    x.base,
                    u32::from_le_bytes(c.try_into().unwrap()) as u64,
                )?);
            }
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

/// Ids in an encoded array (without decoding it).
fn array_len(a: &EncodedU64Array) -> Result<u64> {
    Ok(match a
        .array
        .as_ref()
        .ok_or_else(|| corrupt("empty encoded row id array"))?
    {
        Enc::U16Array(x) => x.offsets.len() / 2,
        Enc::U32Array(x) => x.offsets.len() / 4,
        Enc::U64Array(x) => x.values.len() / 8,
    } as u64)
}

fn span(start: u64, end: u64) -> Result<u64> {
    end.checked_sub(start)
        .ok_or_else(|| corrupt(format!("row id range {start}..{end}")))
}

/// The distinct holes of a range with holes that lie inside it, sorted.
fn holes_of(r: &crate::proto::table::u64_segment::RangeWithHoles) -> Result<Vec<u64>> {
    let mut holes = Vec::new();
    if let Some(h) = &r.holes {
        decode_array(h, &mut holes)?;
    }
    holes.retain(|h| (r.start..r.end).contains(h));
    holes.sort_unstable();
    holes.dedup();
    Ok(holes)
}

/// How many ids a segment holds, checking that it is well formed.
pub(crate) fn segment_len(s: &Segment) -> Result<u64> {
    Ok(match s {
        Segment::Range(r) => span(r.start, r.end)?,
        Segment::RangeWithHoles(r) => span(r.start, r.end)? - holes_of(r)?.len() as u64,
        Segment::RangeWithBitmap(r) => {
            let span = span(r.start, r.end)?;
            if (r.bitmap.len() as u64) < span.div_ceil(8) {
                return Err(corrupt("row id bitmap shorter than its range"));
            }
            let span = span as usize;
            let whole: u64 = r.bitmap[..span / 8]
                .iter()
                .map(|b| b.count_ones() as u64)
                .sum();
            let rest = match span % 8 {
                0 => 0,
                k => (r.bitmap[span / 8] & ((1u8 << k) - 1)).count_ones() as u64,
            };
            whole + rest
        }
        Segment::SortedArray(a) | Segment::Array(a) => array_len(a)?,
    })
}

/// Decode a serialized `RowIdSequence` into its row ids, in row order.
pub fn decode_row_ids(bytes: &[u8]) -> Result<Vec<u64>> {
    // A fragment's row offsets are u32s: it cannot have more rows than that.
    decode_row_ids_bounded(bytes, 1 << 32)
}

/// As `decode_row_ids`, for a fragment of at most `max_rows` rows: a sequence holding
/// more ids is corrupt, and is found so before anything is allocated for them.
pub fn decode_row_ids_bounded(bytes: &[u8], max_rows: u64) -> Result<Vec<u64>> {
    let seq =
        RowIdSequence::decode(bytes).map_err(|e| corrupt(format!("bad row id sequence: {e}")))?;
    let mut segments = Vec::with_capacity(seq.segments.len());
    let mut total = 0u64;
    for s in &seq.segments {
        let s = s
            .segment
            .as_ref()
            .ok_or_else(|| corrupt("empty row id segment"))?;
        total = total.saturating_add(segment_len(s)?);
        if total > max_rows {
            return Err(corrupt(format!(
                "row id sequence holds more than {max_rows} ids, the rows of its fragment"
            )));
        }
        segments.push(s);
    }
    let mut out = Vec::with_capacity(total as usize);
    for s in segments {
        match s {
            Segment::Range(r) => out.extend(r.start..r.end),
            Segment::RangeWithHoles(r) => {
                let holes = holes_of(r)?;
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
                for i in 0..(r.end - r.start) as usize {
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

/// A serialized `RowIdSequence` as runs of consecutive ids, in row order: `(first id,
/// count)`, the run covering the next `count` rows. Ranges stay one run however long, so
/// memory follows the sequence's segments, not its rows (arrays cost what they hold).
pub fn decode_row_id_runs(bytes: &[u8], max_rows: u64) -> Result<Vec<(u64, u64)>> {
    let seq =
        RowIdSequence::decode(bytes).map_err(|e| corrupt(format!("bad row id sequence: {e}")))?;
    let mut runs: Vec<(u64, u64)> = Vec::with_capacity(seq.segments.len());
    let mut total = 0u64;
    let push = |runs: &mut Vec<(u64, u64)>, first: u64, count: u64| {
        if count == 0 {
            return;
        }
        match runs.last_mut() {
            Some((f, c)) if f.checked_add(*c) == Some(first) => *c += count,
            _ => runs.push((first, count)),
        }
    };
    for s in &seq.segments {
        let s = s
            .segment
            .as_ref()
            .ok_or_else(|| corrupt("empty row id segment"))?;
        total = total.saturating_add(segment_len(s)?);
        if total > max_rows {
            return Err(corrupt(format!(
                "row id sequence holds more than {max_rows} ids, the rows of its fragment"
            )));
        }
        match s {
            Segment::Range(r) => push(&mut runs, r.start, r.end - r.start),
            Segment::RangeWithHoles(r) => {
                let mut from = r.start;
                for h in holes_of(r)? {
                    push(&mut runs, from, h - from);
                    from = h + 1;
                }
                push(&mut runs, from, r.end - from);
            }
            Segment::RangeWithBitmap(r) => {
                for i in 0..(r.end - r.start) as usize {
                    if (r.bitmap[i / 8] >> (i % 8)) & 1 == 1 {
                        push(&mut runs, r.start + i as u64, 1);
                    }
                }
            }
            Segment::SortedArray(a) | Segment::Array(a) => {
                let mut ids = Vec::new();
                decode_array(a, &mut ids)?;
                for id in ids {
                    push(&mut runs, id, 1);
                }
            }
        }
    }
    Ok(runs)
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
        let runs = decode_row_id_runs(&seq.encode_to_vec(), 100).unwrap();
        assert_eq!(
            runs,
            vec![
                (0, 3),
                (10, 1),
                (12, 1),
                (14, 1),
                (100, 2),
                (104, 1),
                (106, 4),
                (7, 1)
            ]
        );
        let expanded: Vec<u64> = runs.iter().flat_map(|&(f, c)| f..f + c).collect();
        assert_eq!(expanded, ids);
        assert!(decode_row_ids(&[0xff, 0xff]).is_err());
    }

    #[test]
    fn duplicate_or_outside_holes_and_huge_ranges() {
        let seg = |s| U64Segment { segment: Some(s) };
        let holes = |v: &[u16]| {
            Some(EncodedU64Array {
                array: Some(Enc::U16Array(encoded_u64_array::U16Array {
                    base: 0,
                    offsets: v.iter().flat_map(|h| h.to_le_bytes()).collect(),
                })),
            })
        };
        // A repeated hole, and one before the range, used to stop every later hole
        // from being skipped.
        let seq = RowIdSequence {
            segments: vec![seg(Segment::RangeWithHoles(u64_segment::RangeWithHoles {
                start: 10,
                end: 16,
                holes: holes(&[2, 11, 11, 14]),
            }))],
        };
        assert_eq!(
            decode_row_ids(&seq.encode_to_vec()).unwrap(),
            vec![10, 12, 13, 15]
        );
        // A range of 2^40 ids is refused before anything is allocated for it.
        let seq = RowIdSequence {
            segments: vec![seg(Segment::Range(u64_segment::Range {
                start: 0,
                end: 1 << 40,
            }))],
        };
        let err = decode_row_ids_bounded(&seq.encode_to_vec(), 1000).unwrap_err();
        assert!(err.to_string().contains("more than 1000 ids"), "{err}");
        assert!(decode_row_ids(&seq.encode_to_vec()).is_err());
        // base + offset past u64::MAX: an overflow panic before.
        let seq = RowIdSequence {
            segments: vec![seg(Segment::Array(EncodedU64Array {
                array: Some(Enc::U32Array(encoded_u64_array::U32Array {
                    base: u64::MAX,
                    offsets: 5u32.to_le_bytes().to_vec(),
                })),
            }))],
        };
        assert!(decode_row_ids(&seq.encode_to_vec())
            .unwrap_err()
            .to_string()
            .contains("overflows"));
    }
}

/// Offsets from `base` in the smallest width that holds them.
fn encode_array(base: u64, values: &[u64]) -> EncodedU64Array {
    use crate::proto::table::encoded_u64_array::{U16Array, U32Array, U64Array};
    let max = values.iter().map(|v| v - base).max().unwrap_or(0);
    let array = if max <= u16::MAX as u64 {
        Enc::U16Array(U16Array {
            base,
            offsets: values
                .iter()
                .flat_map(|v| ((v - base) as u16).to_le_bytes())
                .collect(),
        })
    } else if max <= u32::MAX as u64 {
        Enc::U32Array(U32Array {
            base,
            offsets: values
                .iter()
                .flat_map(|v| ((v - base) as u32).to_le_bytes())
                .collect(),
        })
    } else {
        Enc::U64Array(U64Array {
            values: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        })
    };
    EncodedU64Array { array: Some(array) }
}

/// The sequence of a fragment whose rows have ids `ids`, in row order: a range when they
/// are consecutive, a range with holes when they increase with few gaps (as after a
/// compaction drops deleted rows), else an array.
pub fn encode_row_ids(ids: &[u64]) -> Vec<u8> {
    use crate::proto::table::u64_segment::{Range, RangeWithHoles};
    use crate::proto::table::U64Segment;
    let segment = match (ids.first(), ids.last()) {
        (None, _) | (_, None) => None,
        (Some(&first), Some(&last)) if ids.windows(2).all(|w| w[0] < w[1]) => {
            let span = last - first + 1;
            let holes_count = span - ids.len() as u64;
            Some(if holes_count == 0 {
                Segment::Range(Range {
                    start: first,
                    end: last + 1,
                })
            } else if holes_count <= ids.len() as u64 {
                let mut holes = Vec::with_capacity(holes_count as usize);
                for w in ids.windows(2) {
                    holes.extend(w[0] + 1..w[1]);
                }
                Segment::RangeWithHoles(RangeWithHoles {
                    start: first,
                    end: last + 1,
                    holes: Some(encode_array(first, &holes)),
                })
            } else {
                Segment::SortedArray(encode_array(first, ids))
            })
        }
        _ => {
            let min = ids.iter().copied().min().unwrap_or(0);
            Some(Segment::Array(encode_array(min, ids)))
        }
    };
    RowIdSequence {
        segments: segment
            .map(|s| U64Segment { segment: Some(s) })
            .into_iter()
            .collect(),
    }
    .encode_to_vec()
}

#[cfg(test)]
mod encode_tests {
    use super::*;

    #[test]
    fn encoded_sequences_decode_to_the_same_ids() {
        let cases: Vec<Vec<u64>> = vec![
            vec![],
            (5..105).collect(),
            (0..1000).filter(|i| i % 10 != 7).collect(),
            vec![3, 70_000, 5_000_000_000],
            vec![9, 2, 7, 100],
            (1u64 << 40..(1u64 << 40) + 50)
                .filter(|i| i % 3 == 0)
                .collect(),
        ];
        for ids in cases {
            let bytes = encode_row_ids(&ids);
            assert_eq!(decode_row_ids(&bytes).unwrap(), ids);
        }
    }
}
