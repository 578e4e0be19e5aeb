//! The keys a merge_insert inserted, as its transaction records them
//! (`Update.inserted_rows`), so that a concurrent merge inserting the same key sees it and
//! runs again (then updating the row instead of inserting it twice).
//!
//! The record is the reference's, bit for bit (checked against pylance 14): each key is
//! hashed with xxHash64 (seed 0) over its bytes (integers as 8 little-endian bytes, 32-bit
//! ones widened; strings and binaries as they are; a composite key as each part followed by
//! a zero byte), and the hashes go into a split-block Bloom filter of 1024 blocks (sized for
//! 8192 keys at a false-positive rate of 0.00057). A key with a null part is left out, as
//! the reference does; key types the reference leaves out are hashed here over their
//! Arrow row encoding, so that two lance_core merges still see each other's keys.
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef};
use arrow_row::{RowConverter, SortField};
use arrow_schema::DataType;
use twox_hash::XxHash64;

use crate::error::Result;
use crate::proto::table::transaction::{key_existence_filter, BloomFilter, KeyExistenceFilter};

/// Bloom filter sizing the reference uses for every merge (and that readers compare).
const NUMBER_OF_ITEMS: u64 = 8192;
const PROBABILITY: f64 = 0.00057;
/// 8192 items at 0.00057 need 2^15 bytes (Putze's bound for split-block filters).
const BITMAP_BYTES: usize = 1 << 15;
const BLOCK_BYTES: usize = 32;
/// The per-word multipliers of a split-block Bloom filter (as Parquet's).
const SALT: [u32; 8] = [
    0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31,
];

/// The hashed keys of the rows a merge inserted, over the key columns `field_ids`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InsertedKeys {
    pub field_ids: Vec<i32>,
    pub hashes: Vec<u64>,
}

impl InsertedKeys {
    /// The keys of the rows of `columns` (the key columns, in the merge's ON order).
    pub fn of_rows(field_ids: Vec<i32>, columns: &[ArrayRef]) -> Result<Self> {
        let rows = columns.first().map_or(0, |c| c.len());
        let fallback = columns
            .iter()
            .map(|c| match natively_hashed(c.data_type()) {
                true => Ok(None),
                false => {
                    let conv = RowConverter::new(vec![SortField::new(c.data_type().clone())])?;
                    Ok(Some(conv.convert_columns(std::slice::from_ref(c))?))
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let composite = columns.len() > 1;
        let mut bytes = Vec::new();
        let mut hashes = Vec::with_capacity(rows);
        'rows: for row in 0..rows {
            bytes.clear();
            for (col, fb) in columns.iter().zip(&fallback) {
                if col.is_null(row) {
                    continue 'rows;
                }
                match fb {
                    Some(encoded) => bytes.extend_from_slice(encoded.row(row).as_ref()),
                    None => key_bytes(col, row, &mut bytes),
                }
                if composite {
                    bytes.push(0);
                }
            }
            hashes.push(XxHash64::oneshot(0, &bytes));
        }
        Ok(InsertedKeys { field_ids, hashes })
    }

    /// The filter a transaction records.
    pub fn to_proto(&self) -> KeyExistenceFilter {
        let mut bitmap = vec![0u8; BITMAP_BYTES];
        for &h in &self.hashes {
            let at = block_at(h, BITMAP_BYTES / BLOCK_BYTES);
            for (i, word) in bitmap[at].chunks_exact_mut(4).enumerate() {
                let w = u32::from_le_bytes(word.try_into().unwrap()) | mask(h, i);
                word.copy_from_slice(&w.to_le_bytes());
            }
        }
        KeyExistenceFilter {
            field_ids: self.field_ids.clone(),
            data: Some(key_existence_filter::Data::Bloom(BloomFilter {
                bitmap,
                num_bits: (BITMAP_BYTES * 8) as u32,
                number_of_items: NUMBER_OF_ITEMS,
                probability: PROBABILITY,
            })),
        }
    }

    /// Whether a key of ours may be one `theirs` recorded. A filter over other columns, of
    /// another shape, or an exact set (whose hash is not this one) may share any key.
    pub fn may_share_a_key(&self, theirs: &KeyExistenceFilter) -> bool {
        if theirs.field_ids != self.field_ids {
            return true;
        }
        match &theirs.data {
            Some(key_existence_filter::Data::Bloom(b)) => {
                let usable =
                    b.bitmap.len() >= BLOCK_BYTES && b.bitmap.len().is_multiple_of(BLOCK_BYTES);
                if !usable {
                    return true;
                }
                let blocks = b.bitmap.len() / BLOCK_BYTES;
                self.hashes.iter().any(|&h| {
                    let block = &b.bitmap[block_at(h, blocks)];
                    block.chunks_exact(4).enumerate().all(|(i, word)| {
                        u32::from_le_bytes(word.try_into().unwrap()) & mask(h, i) != 0
                    })
                })
            }
            Some(key_existence_filter::Data::Exact(e)) => !e.key_hashes.is_empty(),
            None => false,
        }
    }
}

/// Types whose keys the reference hashes (the others are hashed over their row encoding).
fn natively_hashed(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Int32
            | DataType::Int64
            | DataType::UInt32
            | DataType::UInt64
            | DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Binary
            | DataType::LargeBinary
    )
}

/// The bytes the reference hashes for row `row` of a natively hashed key column.
fn key_bytes(col: &ArrayRef, row: usize, out: &mut Vec<u8>) {
    match col.data_type() {
        DataType::Int32 => {
            out.extend((col.as_primitive::<Int32Type>().value(row) as i64).to_le_bytes())
        }
        DataType::Int64 => out.extend(col.as_primitive::<Int64Type>().value(row).to_le_bytes()),
        DataType::UInt32 => {
            out.extend((col.as_primitive::<UInt32Type>().value(row) as u64).to_le_bytes())
        }
        DataType::UInt64 => out.extend(col.as_primitive::<UInt64Type>().value(row).to_le_bytes()),
        DataType::Utf8 => out.extend(col.as_string::<i32>().value(row).as_bytes()),
        DataType::LargeUtf8 => out.extend(col.as_string::<i64>().value(row).as_bytes()),
        DataType::Binary => out.extend(col.as_binary::<i32>().value(row)),
        DataType::LargeBinary => out.extend(col.as_binary::<i64>().value(row)),
        other => unreachable!("{other} keys are hashed over their row encoding"),
    }
}

/// The bytes of the block (of `blocks`) hash `h` falls in: its high 32 bits scaled to the
/// block count.
fn block_at(h: u64, blocks: usize) -> std::ops::Range<usize> {
    let b = ((h >> 32).saturating_mul(blocks as u64) >> 32) as usize;
    b * BLOCK_BYTES..(b + 1) * BLOCK_BYTES
}

/// The bit `h` sets in word `i` of its block.
fn mask(h: u64, i: usize) -> u32 {
    1u32 << ((h as u32).wrapping_mul(SALT[i]) >> 27)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int32Array, Int64Array, StringArray};
    use std::sync::Arc;

    fn keys(columns: Vec<ArrayRef>) -> InsertedKeys {
        InsertedKeys::of_rows(vec![0], &columns).unwrap()
    }

    #[test]
    fn hashes_are_the_references() {
        // Values read off pylance 14's transactions.
        let ints = keys(vec![Arc::new(Int64Array::from(vec![1000, 1001]))]);
        assert_eq!(
            ints.hashes,
            vec![16518971584542448201, 13463077165453968481]
        );
        let narrow = keys(vec![Arc::new(Int32Array::from(vec![1000]))]);
        assert_eq!(narrow.hashes, vec![16518971584542448201]);
        let strings = keys(vec![Arc::new(StringArray::from(vec!["a", "b"]))]);
        assert_eq!(
            strings.hashes,
            vec![15154266338359012955, 8666379929374662555]
        );
        let composite = InsertedKeys::of_rows(
            vec![1, 0],
            &[
                Arc::new(StringArray::from(vec!["k"])) as ArrayRef,
                Arc::new(Int64Array::from(vec![1000])),
            ],
        )
        .unwrap();
        assert_eq!(composite.hashes, vec![1100304540039266858]);
    }

    #[test]
    fn nulls_are_left_out_and_filters_find_their_keys() {
        let ours = keys(vec![Arc::new(Int64Array::from(vec![
            Some(5),
            None,
            Some(7),
        ]))]);
        assert_eq!(ours.hashes.len(), 2);
        let recorded = ours.to_proto();
        let Some(key_existence_filter::Data::Bloom(b)) = &recorded.data else {
            panic!("a bloom filter")
        };
        assert_eq!((b.bitmap.len(), b.num_bits), (32768, 262144));
        // Each key sets one bit in each of the eight words of its block.
        let ones: u32 = b.bitmap.iter().map(|x| x.count_ones()).sum();
        assert!((8..=16).contains(&ones), "{ones}");
        let same = keys(vec![Arc::new(Int64Array::from(vec![7]))]);
        assert!(same.may_share_a_key(&recorded));
        let other = keys(vec![Arc::new(Int64Array::from(
            (100..150).collect::<Vec<_>>(),
        ))]);
        assert!(!other.may_share_a_key(&recorded));
        // Another key column: anything may be shared.
        let elsewhere = InsertedKeys {
            field_ids: vec![3],
            hashes: other.hashes.clone(),
        };
        assert!(elsewhere.may_share_a_key(&recorded));
    }
}
