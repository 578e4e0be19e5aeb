//! The row-id index: stable row id → row address (`fragment id << 32 | row offset`), for
//! datasets with stable row ids. Built from every fragment's row-id sequence as runs of
//! consecutive ids over consecutive rows, so 4M sequential ids in four fragments are four
//! entries, and ids that moved in a compaction cost what their sequences hold.
use crate::error::{corrupt, Result};

/// A run: ids `first..first + count` are rows `offset..offset + count` of `fragment`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    first: u64,
    count: u64,
    fragment: u64,
    offset: u64,
}

#[derive(Debug, Default)]
pub struct RowIdIndex {
    /// Sorted by first id; runs never overlap.
    runs: Vec<Run>,
}

impl RowIdIndex {
    /// Build from each fragment's id runs, in row order, leaving out its deleted rows (an
    /// updated row keeps its id in a new fragment; its old copy is deleted).
    pub fn build(
        fragments: impl IntoIterator<
            Item = (
                u64,
                Vec<(u64, u64)>,
                Option<std::sync::Arc<roaring::RoaringBitmap>>,
            ),
        >,
    ) -> Result<Self> {
        let mut runs = Vec::new();
        for (fragment, frag_runs, deleted) in fragments {
            let mut offset = 0u64;
            for (first, count) in frag_runs {
                // The run's live stretches, between its deleted rows.
                let mut at = 0u64;
                let gaps = deleted.iter().flat_map(|d| {
                    d.range(
                        offset.min(u32::MAX as u64) as u32
                            ..(offset + count).min(u32::MAX as u64) as u32,
                    )
                });
                for gap in gaps
                    .map(|g| g as u64 - offset)
                    .chain(std::iter::once(count))
                {
                    if gap > at {
                        runs.push(Run {
                            first: first + at,
                            count: gap - at,
                            fragment,
                            offset: offset + at,
                        });
                    }
                    at = gap + 1;
                }
                offset += count;
            }
        }
        runs.sort_unstable_by_key(|r| r.first);
        for w in runs.windows(2) {
            if w[0].first + w[0].count > w[1].first {
                return Err(corrupt(format!(
                    "row id {} belongs to two rows (fragments {} and {})",
                    w[1].first, w[0].fragment, w[1].fragment
                )));
            }
        }
        Ok(RowIdIndex { runs })
    }

    /// The address of row id `id`, if any row has it.
    pub fn address(&self, id: u64) -> Option<u64> {
        let i = self
            .runs
            .partition_point(|r| r.first <= id)
            .checked_sub(1)?;
        let r = &self.runs[i];
        (id < r.first + r.count).then(|| (r.fragment << 32) | (r.offset + id - r.first))
    }

    /// Entries held (for memory checks).
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deleted_rows_leave_their_ids_to_the_live_copy() {
        // Rows 2 and 5 of fragment 0 were updated: deleted there, their ids now in fragment 1.
        let deleted: roaring::RoaringBitmap = [2u32, 5].into_iter().collect();
        let index = RowIdIndex::build(vec![
            (0, vec![(0, 8)], Some(std::sync::Arc::new(deleted))),
            (1, vec![(2, 1), (5, 1)], None),
        ])
        .unwrap();
        assert_eq!(index.address(2), Some(1 << 32));
        assert_eq!(index.address(5), Some((1 << 32) | 1));
        assert_eq!(index.address(3), Some(3));
        assert_eq!(index.address(7), Some(7));
        assert_eq!(index.address(8), None);
    }

    #[test]
    fn ranges_stay_ranges_and_moved_ids_are_found() {
        // Fragment 0: ids 0..1000; fragment 5 (after a compaction): ids 3000..3500, then
        // 1500 and 1502, then 2000..2100.
        let index = RowIdIndex::build(vec![
            (0, vec![(0, 1000)], None),
            (
                5,
                vec![(3000, 500), (1500, 1), (1502, 1), (2000, 100)],
                None,
            ),
        ])
        .unwrap();
        assert_eq!(index.len(), 5);
        assert_eq!(index.address(0), Some(0));
        assert_eq!(index.address(999), Some(999));
        assert_eq!(index.address(1000), None);
        assert_eq!(index.address(3000), Some(5 << 32));
        assert_eq!(index.address(1500), Some((5 << 32) | 500));
        assert_eq!(index.address(1501), None);
        assert_eq!(index.address(1502), Some((5 << 32) | 501));
        assert_eq!(index.address(2099), Some((5 << 32) | 601));
        assert!(
            RowIdIndex::build(vec![(0, vec![(0, 10)], None), (1, vec![(5, 1)], None)]).is_err()
        );
    }
}
