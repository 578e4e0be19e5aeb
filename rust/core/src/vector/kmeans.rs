//! k-means over f32 vectors, as vector indices train their partitions and PQ codebooks:
//! centroids start spread out (k-means++), rows are assigned to their nearest centroid
//! (on the CPU pool, in blocks), centroids move to their rows' mean, until the loss
//! improves by less than a ten-thousandth or `max_iters` is reached. An empty cluster takes
//! half of the largest one's rows. `spherical` k-means (for the dot metric) compares by
//! dot product with unit centroids.
use rayon::prelude::*;

use super::distance;

/// A small deterministic random source (splitmix64): training is reproducible for a seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in 0..n.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// `k` distinct numbers of 0..n (all of them when k >= n), in random order.
    pub fn sample(&mut self, n: usize, k: usize) -> Vec<usize> {
        let mut all: Vec<usize> = (0..n).collect();
        let k = k.min(n);
        for i in 0..k {
            let j = i + self.below(n - i);
            all.swap(i, j);
        }
        all.truncate(k);
        all
    }
}

/// What a training run found.
#[derive(Clone, Debug)]
pub struct Trained {
    /// `k x dim`, row-major.
    pub centroids: Vec<f32>,
    /// The sum of each row's distance to its centroid, at the end.
    pub loss: f64,
}

/// Finds the nearest of a set of centroids. The centroids are kept transposed (each
/// dimension's values of every centroid together), so that one row's distances to all of
/// them are computed centroid-wise in SIMD lanes whatever the dimension (a PQ sub-vector
/// may have 4 or 8): |x-c|² = |x|² + |c|² - 2x·c, or 1 - x·c when `spherical`.
pub struct Nearest {
    transposed: Vec<f32>,
    norms: Vec<f32>,
    k: usize,
    dim: usize,
    spherical: bool,
}

impl Nearest {
    pub fn new(centroids: &[f32], dim: usize, spherical: bool) -> Self {
        let k = centroids.len() / dim.max(1);
        let mut transposed = vec![0f32; k * dim];
        for (c, centroid) in centroids.chunks_exact(dim).enumerate() {
            for (i, &v) in centroid.iter().enumerate() {
                transposed[i * k + c] = v;
            }
        }
        let norms = centroids
            .chunks_exact(dim)
            .map(|c| distance::dot(c, c))
            .collect();
        Nearest {
            transposed,
            norms,
            k,
            dim,
            spherical,
        }
    }

    /// The nearest centroid to `x` and its distance; `scores` is scratch of k values.
    pub fn find(&self, x: &[f32], scores: &mut Vec<f32>) -> (usize, f32) {
        scores.clear();
        scores.resize(self.k, 0.0);
        for (i, &v) in x.iter().enumerate().take(self.dim) {
            distance::axpy(scores, v, &self.transposed[i * self.k..(i + 1) * self.k]);
        }
        self.pick(x, scores)
    }

    /// The nearest centroid of every row of `rows` (`n x dim`) and its distance, in this
    /// thread: `BLOCK_ROWS` rows at a time (see `distance::dots_block`), the rest one by one.
    pub fn find_rows(&self, rows: &[f32], out: &mut Vec<(u32, f32)>) {
        let (k, dim) = (self.k, self.dim);
        let mut dots = vec![0f32; distance::BLOCK_ROWS * k];
        let blocks = rows.chunks_exact(distance::BLOCK_ROWS * dim);
        let rest = blocks.remainder();
        for block in blocks {
            distance::dots_block(block, &self.transposed, k, dim, &mut dots);
            for (r, x) in block.chunks_exact(dim).enumerate() {
                let (c, d) = self.pick(x, &dots[r * k..(r + 1) * k]);
                out.push((c as u32, d));
            }
        }
        for x in rest.chunks_exact(dim) {
            let (c, d) = self.find(x, &mut dots);
            out.push((c as u32, d));
        }
    }

    /// The nearest centroid to `x` from its dot products with every centroid.
    fn pick(&self, x: &[f32], dots: &[f32]) -> (usize, f32) {
        let best = distance::argmin_key(dots, &self.norms, self.spherical);
        let d = match self.spherical {
            true => 1.0 + best.1,
            false => (distance::dot(x, x) + best.1).max(0.0),
        };
        (best.0, d)
    }
}

/// The nearest centroid of every row of `data` (`n x dim`), on the CPU pool.
pub fn assign(data: &[f32], centroids: &[f32], dim: usize, spherical: bool) -> Vec<(u32, f32)> {
    Nearest::new(centroids, dim, spherical).find_all(data)
}

impl Nearest {
    /// `find_rows` over `data` on the CPU pool.
    pub fn find_all(&self, data: &[f32]) -> Vec<(u32, f32)> {
        crate::threads::install(|| {
            data.par_chunks(self.dim.max(1) * 256)
                .flat_map_iter(|block| {
                    let mut out = Vec::with_capacity(256);
                    self.find_rows(block, &mut out);
                    out
                })
                .collect()
        })
    }
}

fn normalize(v: &mut [f32]) {
    let n = distance::dot(v, v).sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// Train `k` centroids on `data` (`n x dim` f32 values).
pub fn train(
    data: &[f32],
    dim: usize,
    k: usize,
    max_iters: usize,
    spherical: bool,
    rng: &mut Rng,
) -> Trained {
    let n = data.len() / dim.max(1);
    let k = k.max(1);
    let mut centroids = vec![0f32; k * dim];
    if n == 0 {
        return Trained {
            centroids,
            loss: 0.0,
        };
    }
    // k-means++ starts: each next centroid a row drawn with probability proportional to its
    // squared distance from the centroids chosen so far (spread out, so that no cluster
    // starts with two centroids and another with none).
    let mut nearest_d: Vec<f32> = vec![f32::INFINITY; n];
    let mut chosen = rng.below(n);
    for c in 0..k {
        let row = &data[chosen * dim..(chosen + 1) * dim];
        centroids[c * dim..(c + 1) * dim].copy_from_slice(row);
        if spherical {
            normalize(&mut centroids[c * dim..(c + 1) * dim]);
        }
        if c + 1 == k {
            break;
        }
        let centroid = centroids[c * dim..(c + 1) * dim].to_vec();
        nearest_d
            .par_chunks_mut(1024)
            .zip(data.par_chunks(1024 * dim))
            .for_each(|(ds, rows)| {
                for (d, x) in ds.iter_mut().zip(rows.chunks_exact(dim)) {
                    let e = match spherical {
                        true => (1.0 - distance::dot(x, &centroid)).max(0.0),
                        false => distance::l2(x, &centroid),
                    };
                    *d = d.min(e);
                }
            });
        let total: f64 = nearest_d.iter().map(|&d| d as f64).sum();
        chosen = if total > 0.0 {
            let mut target = (rng.next_u64() as f64 / u64::MAX as f64) * total;
            let mut pick = n - 1;
            for (r, &d) in nearest_d.iter().enumerate() {
                target -= d as f64;
                if target <= 0.0 && d > 0.0 {
                    pick = r;
                    break;
                }
            }
            pick
        } else {
            rng.below(n)
        };
    }
    let mut last = f64::INFINITY;
    let mut loss = 0.0;
    for _ in 0..max_iters.max(1) {
        let assigned = assign(data, &centroids, dim, spherical);
        loss = assigned.iter().map(|&(_, d)| d as f64).sum();
        // New centroids: the mean of their rows.
        let mut sums = vec![0f64; k * dim];
        let mut counts = vec![0usize; k];
        for (r, &(c, _)) in assigned.iter().enumerate() {
            let c = c as usize;
            counts[c] += 1;
            for (s, &v) in sums[c * dim..(c + 1) * dim]
                .iter_mut()
                .zip(&data[r * dim..(r + 1) * dim])
            {
                *s += v as f64;
            }
        }
        for c in 0..k {
            if counts[c] > 0 {
                for i in 0..dim {
                    centroids[c * dim + i] = (sums[c * dim + i] / counts[c] as f64) as f32;
                }
            }
        }
        // An empty cluster splits the largest: a copy of its centroid, both nudged apart.
        for c in 0..k {
            if counts[c] == 0 {
                let big = (0..k).max_by_key(|&i| counts[i]).unwrap_or(0);
                if counts[big] < 2 {
                    continue;
                }
                for i in 0..dim {
                    let v = centroids[big * dim + i];
                    let nudge = if v == 0.0 { 1e-6 } else { v.abs() * 1e-4 };
                    centroids[c * dim + i] = v + nudge;
                    centroids[big * dim + i] = v - nudge;
                }
                counts[c] = counts[big] / 2;
                counts[big] -= counts[c];
            }
        }
        if spherical {
            for c in centroids.chunks_exact_mut(dim) {
                normalize(c);
            }
        }
        if (last - loss).abs() < 1e-4 * last.abs() {
            break;
        }
        last = loss;
    }
    Trained { centroids, loss }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows in blocks find the centroid each row finds alone, for every count of rows and
    /// centroids (blocks of 4 rows and 16 centroids, and what is left over).
    #[test]
    fn blocked_rows_find_what_single_rows_find() {
        let mut rng = Rng::new(11);
        let mut value = || rng.below(2001) as f32 / 1000.0 - 1.0;
        for (n, k, dim, spherical) in [(9, 37, 5, false), (8, 16, 128, false), (3, 5, 8, true)] {
            let data: Vec<f32> = (0..n * dim).map(|_| value()).collect();
            let centroids: Vec<f32> = (0..k * dim).map(|_| value()).collect();
            let near = Nearest::new(&centroids, dim, spherical);
            let mut blocked = Vec::new();
            near.find_rows(&data, &mut blocked);
            assert_eq!(blocked.len(), n);
            for (x, (c, d)) in data.chunks_exact(dim).zip(blocked) {
                let (c1, d1) = near.find(x, &mut Vec::new());
                assert_eq!(c as usize, c1);
                assert!((d - d1).abs() <= 1e-4 * d1.abs().max(1.0), "{d} vs {d1}");
            }
        }
    }

    /// Points around well-separated centres: k-means finds the centres.
    #[test]
    fn finds_separated_clusters() {
        let dim = 4;
        let centres = [
            [0.0f32, 0.0, 0.0, 0.0],
            [10.0, 10.0, 0.0, 0.0],
            [0.0, 10.0, 10.0, 10.0],
        ];
        let mut rng = Rng::new(3);
        let mut data = Vec::new();
        for i in 0..600 {
            for &c in &centres[i % 3] {
                data.push(c + (rng.below(1000) as f32 / 1000.0 - 0.5) * 0.2);
            }
        }
        let t = train(&data, dim, 3, 50, false, &mut Rng::new(7));
        let near = Nearest::new(&t.centroids, dim, false);
        for c in &centres {
            let (_, d) = near.find(c, &mut Vec::new());
            assert!(d < 0.01, "centre {c:?} is {d} from its centroid");
        }
        assert!(t.loss < 600.0 * 0.1);
    }

    #[test]
    fn samples_are_distinct_and_seeded() {
        let a = Rng::new(1).sample(100, 30);
        let mut s = a.clone();
        s.sort();
        s.dedup();
        assert_eq!(s.len(), 30);
        assert_eq!(a, Rng::new(1).sample(100, 30));
        assert_eq!(Rng::new(1).sample(5, 10).len(), 5);
    }
}
