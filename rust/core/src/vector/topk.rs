//! The k nearest of many candidates, in pylance's order: by distance, ties by row id, a NaN
//! distance after every number. Candidates are gathered in a buffer of up to 2k that is cut
//! back to the best k when full (linear time overall); once it holds k, a candidate
//! farther than the k-th is turned away without being stored.
use std::cmp::Ordering;

/// One candidate row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Neighbour {
    pub distance: f32,
    pub row_id: u64,
    /// Where the row is (fragment id << 32 | offset), to read its columns.
    pub address: u64,
}

/// pylance's result order.
pub fn order(a: &Neighbour, b: &Neighbour) -> Ordering {
    a.distance
        .is_nan()
        .cmp(&b.distance.is_nan())
        .then_with(|| match a.distance.is_nan() {
            true => Ordering::Equal,
            false => a.distance.total_cmp(&b.distance),
        })
        .then_with(|| a.row_id.cmp(&b.row_id))
}

/// The best `k` candidates seen so far.
#[derive(Clone, Debug)]
pub struct TopK {
    k: usize,
    items: Vec<Neighbour>,
    /// The k-th best after the last cut (None until there were k): anything worse is out.
    bound: Option<Neighbour>,
}

impl TopK {
    pub fn new(k: usize) -> Self {
        TopK {
            k,
            items: Vec::new(),
            bound: None,
        }
    }

    /// Whether `n` would be kept (false once k better ones were seen).
    pub fn accepts(&self, n: &Neighbour) -> bool {
        self.k > 0 && self.bound.is_none_or(|b| order(n, &b) == Ordering::Less)
    }

    pub fn push(&mut self, n: Neighbour) {
        if self.k == 0 {
            return;
        }
        if let Some(b) = &self.bound {
            if order(&n, b) != Ordering::Less {
                return;
            }
        }
        self.items.push(n);
        if self.items.len() >= 2 * self.k.max(16) {
            self.cut();
        }
    }

    /// Keep the best k, and remember the worst of them as the bound.
    fn cut(&mut self) {
        if self.items.len() > self.k {
            self.items.select_nth_unstable_by(self.k - 1, order);
            self.items.truncate(self.k);
        }
        if self.items.len() == self.k {
            self.bound = self.items.iter().copied().max_by(order);
        }
    }

    pub fn merge(&mut self, other: TopK) {
        for n in other.items {
            self.push(n);
        }
    }

    /// The best k, nearest first.
    pub fn into_sorted(mut self) -> Vec<Neighbour> {
        self.cut();
        self.items.sort_unstable_by(order);
        self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(distance: f32, row_id: u64) -> Neighbour {
        Neighbour {
            distance,
            row_id,
            address: row_id,
        }
    }

    #[test]
    fn keeps_the_k_nearest_with_ties_by_row_id_and_nan_last() {
        // A pseudo-random stream with many ties, checked against a full sort.
        let all: Vec<Neighbour> = (0..5000u64)
            .map(|i| match i % 97 {
                0 => n(f32::NAN, i),
                _ => n(((i * 7919) % 113) as f32, i),
            })
            .collect();
        for k in [1usize, 5, 16, 100, 4999, 6000] {
            let mut top = TopK::new(k);
            // Fed in two halves merged, as batches on several threads are.
            let mut other = TopK::new(k);
            for (i, x) in all.iter().enumerate() {
                match i % 2 {
                    0 => top.push(*x),
                    _ => other.push(*x),
                }
            }
            top.merge(other);
            let mut want = all.clone();
            want.sort_by(order);
            want.truncate(k);
            let got = top.into_sorted();
            assert_eq!(got.len(), want.len(), "k {k}");
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g.row_id, w.row_id, "k {k}");
            }
        }
        assert!(TopK::new(0).into_sorted().is_empty());
    }

    #[test]
    fn negative_nan_sorts_last_too() {
        // x86 produces NaN with the sign bit set (0/0, inf - inf).
        let neg_nan = f32::from_bits(0xffc0_0000);
        let mut top = TopK::new(2);
        top.push(n(neg_nan, 0));
        top.push(n(3.0, 1));
        top.push(n(-1.0, 2));
        let got: Vec<u64> = top.into_sorted().iter().map(|x| x.row_id).collect();
        assert_eq!(got, vec![2, 1]);
    }
}
