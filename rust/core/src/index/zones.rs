//! Zones of rows, as ZONEMAP and BLOOMFILTER indices cut a column: each fragment's live
//! rows in address order, `capacity` rows per zone, a zone never crossing a fragment. A
//! zone is kept as its fragment, the offset of its first live row and the span to its
//! last (deleted rows inside included), so its rows are an address range.
use std::ops::Range;

use arrow_array::UInt64Array;
use roaring::RoaringBitmap;

use super::selection::IdSet;
use crate::error::{Error, Result};

pub struct Zone {
    pub fragment: u64,
    pub start: u64,
    pub length: u64,
    /// Its rows' positions in the values it was cut from.
    pub rows: Range<usize>,
}

/// Cut rows with `addresses` (ascending within each fragment) into zones.
pub fn cut(addresses: &UInt64Array, capacity: u64) -> Result<Vec<Zone>> {
    if capacity == 0 {
        return Err(Error::invalid("a zone must hold at least one row"));
    }
    let mut zones = Vec::new();
    let mut at = 0;
    let n = addresses.len();
    while at < n {
        let fragment = addresses.value(at) >> 32;
        let mut end = at + 1;
        while end < n && ((end - at) as u64) < capacity && addresses.value(end) >> 32 == fragment {
            end += 1;
        }
        let first = addresses.value(at) & 0xFFFF_FFFF;
        let last = addresses.value(end - 1) & 0xFFFF_FFFF;
        zones.push(Zone {
            fragment,
            start: first,
            length: last - first + 1,
            rows: at..end,
        });
        at = end;
    }
    // In (fragment, start) order, whatever order the fragments were read in.
    zones.sort_by_key(|z| (z.fragment, z.start));
    Ok(zones)
}

/// Add the rows of the zone at `start` of `fragment`, `length` rows long, to `into`.
pub fn add_rows(
    into: &mut IdSet,
    fragment: u64,
    start: u64,
    length: u64,
    shown: &str,
) -> Result<()> {
    let fragment = u32::try_from(fragment)
        .map_err(|_| Error::corrupt(shown, format!("a zone names fragment {fragment}")))?;
    let end = start.saturating_add(length).min(u32::MAX as u64) as u32;
    let mut rows = RoaringBitmap::new();
    rows.insert_range(start.min(u32::MAX as u64) as u32..end);
    into.union_with(fragment, &rows);
    Ok(())
}
