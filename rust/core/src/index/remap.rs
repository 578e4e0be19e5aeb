//! Row addresses after a compaction: each rewritten fragment's live rows, in order, moved
//! to consecutive rows of the new fragments. Indices that hold addresses are rewritten
//! through this map (as pylance remaps them); rows deleted before the compaction have no
//! new address and leave the index; addresses in other fragments stay as they are.
use std::collections::HashMap;

use arrow_array::{ArrayRef, UInt32Array, UInt64Array};

use super::selection::IdSet;
use crate::error::{Error, Result};

/// Marks an old row that was deleted (it has no new address).
const GONE: u64 = u64::MAX;

#[derive(Default)]
pub struct AddressMap {
    /// Old fragment id → the new address of each of its physical rows.
    fragments: HashMap<u32, Vec<u64>>,
}

impl AddressMap {
    /// Map the rows of one compaction group: `old` fragments (id, physical rows, deleted
    /// offsets) in order, their live rows filling `new` fragments (id, rows) in order.
    pub fn add_group(
        &mut self,
        old: &[(u32, u64, roaring::RoaringBitmap)],
        new: &[(u32, u64)],
    ) -> Result<()> {
        let mut targets = new
            .iter()
            .flat_map(|&(id, rows)| (0..rows).map(move |o| ((id as u64) << 32) | o));
        for (id, physical, deleted) in old {
            let mut to = Vec::with_capacity(*physical as usize);
            for offset in 0..*physical {
                to.push(match deleted.contains(offset as u32) {
                    true => GONE,
                    false => targets.next().ok_or_else(|| {
                        Error::invalid(format!(
                            "compaction moved fewer rows than fragment {id} and its group hold"
                        ))
                    })?,
                });
            }
            self.fragments.insert(*id, to);
        }
        if targets.next().is_some() {
            return Err(Error::invalid(
                "compaction wrote more rows than its fragments held",
            ));
        }
        Ok(())
    }

    /// The new address of the row at `address`; None when it was deleted.
    pub fn map(&self, address: u64) -> Option<u64> {
        let Some(to) = self.fragments.get(&((address >> 32) as u32)) else {
            return Some(address);
        };
        match to.get((address & 0xFFFF_FFFF) as usize) {
            Some(&GONE) | None => None,
            Some(&a) => Some(a),
        }
    }

    /// `values` and their rows' `ids`, with the ids mapped and the rows gone left out.
    pub fn apply(&self, values: &ArrayRef, ids: &UInt64Array) -> Result<(ArrayRef, UInt64Array)> {
        let mut keep = Vec::with_capacity(ids.len());
        let mut mapped = Vec::with_capacity(ids.len());
        for (i, &id) in ids.values().iter().enumerate() {
            if let Some(to) = self.map(id) {
                keep.push(i as u32);
                mapped.push(to);
            }
        }
        let values = arrow_select::take::take(values, &UInt32Array::from(keep), None)?;
        Ok((values, UInt64Array::from(mapped)))
    }

    pub fn map_set(&self, ids: &IdSet) -> IdSet {
        let mut out = IdSet::default();
        out.extend(ids.iter().filter_map(|id| self.map(id)).collect());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_rows_fill_the_new_fragments_in_order() {
        let mut map = AddressMap::default();
        let deleted: roaring::RoaringBitmap = [1u32].into_iter().collect();
        map.add_group(
            &[(3, 3, deleted), (4, 2, Default::default())],
            &[(9, 2), (10, 2)],
        )
        .unwrap();
        assert_eq!(map.map(3 << 32), Some(9 << 32));
        assert_eq!(map.map((3 << 32) | 1), None);
        assert_eq!(map.map((3 << 32) | 2), Some((9 << 32) | 1));
        assert_eq!(map.map((4 << 32) | 1), Some((10 << 32) | 1));
        // Other fragments keep their addresses.
        assert_eq!(map.map((7 << 32) | 5), Some((7 << 32) | 5));
        let mut short = AddressMap::default();
        assert!(short
            .add_group(&[(1, 3, Default::default())], &[(2, 2)])
            .is_err());
    }
}
