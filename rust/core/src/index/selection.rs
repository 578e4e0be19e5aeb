//! What indices say about a filter: per fragment they cover, the rows (offsets in the
//! fragment) for which it is TRUE and those for which it is NULL, as SQL's three-valued
//! logic needs to combine them (NOT of a condition keeps neither its TRUE nor its NULL
//! rows). An answer is exact, or else an over-estimate: rows that may pass, which the
//! filter itself must then check. Fragments no index answered for are absent: every row
//! of them may pass, and they are scanned.
use std::collections::BTreeMap;

use roaring::RoaringBitmap;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rows {
    /// Rows where the condition is TRUE (may be TRUE, when not exact).
    pub yes: RoaringBitmap,
    /// Rows where it is NULL (only meaningful when exact).
    pub nulls: RoaringBitmap,
    pub exact: bool,
}

impl Rows {
    pub fn exact(yes: RoaringBitmap, nulls: RoaringBitmap) -> Rows {
        Rows {
            yes,
            nulls,
            exact: true,
        }
    }

    /// The row addresses of fragment `fragment`'s TRUE rows among physical rows
    /// `range`, ascending.
    pub fn addresses(&self, fragment: u64, range: std::ops::Range<u64>) -> Vec<u64> {
        self.yes
            .iter()
            .filter(|&o| range.contains(&(o as u64)))
            .map(|o| (fragment << 32) | o as u64)
            .collect()
    }

    /// Rows that may pass, to be checked.
    pub fn candidates(yes: RoaringBitmap) -> Rows {
        Rows {
            yes,
            nulls: RoaringBitmap::new(),
            exact: false,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selection {
    /// By fragment id.
    pub fragments: BTreeMap<u32, Rows>,
}

impl Selection {
    pub fn part(&self, fragment: u64) -> Option<&Rows> {
        u32::try_from(fragment)
            .ok()
            .and_then(|f| self.fragments.get(&f))
    }

    pub fn is_empty(&self) -> bool {
        self.fragments.is_empty()
    }

    /// Rows passing both. Where only one side knows a fragment, its rows still bound
    /// the answer, but no longer exactly.
    pub fn and(mut self, other: Selection) -> Selection {
        let mut other = other.fragments;
        for (id, a) in self.fragments.iter_mut() {
            match other.remove(id) {
                Some(b) if a.exact && b.exact => {
                    // NULL AND TRUE, NULL AND NULL, TRUE AND NULL are NULL.
                    let nulls = (&a.nulls & (&b.yes | &b.nulls)) | (&b.nulls & &a.yes);
                    *a = Rows::exact(&a.yes & &b.yes, nulls);
                }
                Some(b) => *a = Rows::candidates(&a.yes & &b.yes),
                None => *a = Rows::candidates(std::mem::take(&mut a.yes)),
            }
        }
        for (id, b) in other {
            self.fragments.insert(id, Rows::candidates(b.yes));
        }
        self
    }

    /// Rows passing either: known only where both sides know the fragment.
    pub fn or(self, other: Selection) -> Selection {
        let mut other = other.fragments;
        let fragments = self
            .fragments
            .into_iter()
            .filter_map(|(id, a)| {
                let b = other.remove(&id)?;
                let yes = &a.yes | &b.yes;
                Some((
                    id,
                    match a.exact && b.exact {
                        true => {
                            let nulls = (&a.nulls | &b.nulls) - &yes;
                            Rows::exact(yes, nulls)
                        }
                        false => Rows::candidates(yes),
                    },
                ))
            })
            .collect();
        Selection { fragments }
    }

    /// Rows where the condition is FALSE: the rows of each fragment (`physical` gives
    /// their count) neither TRUE nor NULL. Known where the condition was known exactly.
    pub fn not(self, physical: impl Fn(u32) -> Option<u64>) -> Selection {
        let fragments = self
            .fragments
            .into_iter()
            .filter(|(_, rows)| rows.exact)
            .filter_map(|(id, rows)| {
                let mut all = RoaringBitmap::new();
                all.insert_range(0..physical(id)?.min(u32::MAX as u64) as u32);
                let yes = all - &rows.yes - &rows.nulls;
                Some((id, Rows::exact(yes, rows.nulls)))
            })
            .collect();
        Selection { fragments }
    }
}

/// Row ids or row addresses an index holds, split as addresses are (high 32 bits, low
/// 32 bits), so that addresses come out grouped by fragment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IdSet(pub BTreeMap<u32, RoaringBitmap>);

impl IdSet {
    pub fn insert(&mut self, id: u64) {
        self.0
            .entry((id >> 32) as u32)
            .or_default()
            .insert(id as u32);
    }

    /// Add many ids at once (sorted here: far cheaper than one by one); an id may come
    /// more than once.
    pub fn extend(&mut self, mut ids: Vec<u64>) {
        ids.sort_unstable();
        ids.dedup();
        for run in ids.chunk_by(|a, b| a >> 32 == b >> 32) {
            let low =
                RoaringBitmap::from_sorted_iter(run.iter().map(|&id| id as u32)).expect("sorted");
            self.union_with((run[0] >> 32) as u32, &low);
        }
    }

    pub fn union_with(&mut self, high: u32, low: &RoaringBitmap) {
        *self.0.entry(high).or_default() |= low;
    }

    /// The ids in both sets.
    pub fn intersection(&self, other: &IdSet) -> IdSet {
        IdSet(
            self.0
                .iter()
                .filter_map(|(high, low)| {
                    let both = low & other.0.get(high)?;
                    (!both.is_empty()).then_some((*high, both))
                })
                .collect(),
        )
    }

    pub fn len(&self) -> u64 {
        self.0.values().map(|b| b.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.values().all(|b| b.is_empty())
    }

    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.0
            .iter()
            .flat_map(|(h, b)| b.iter().map(move |l| ((*h as u64) << 32) | l as u64))
    }
}

/// What an index found for one condition: the ids where it is TRUE and where it is
/// NULL (as far as asked for), and whether exactly.
#[derive(Clone, Debug, Default)]
pub struct Found {
    pub yes: IdSet,
    pub nulls: IdSet,
    pub exact: bool,
}
