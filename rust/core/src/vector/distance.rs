//! Distances between a query and stored vectors, as pylance defines them (its `_distance`):
//! `l2` is the squared euclidean distance, `cosine` is 1 - cos(angle), `dot` is 1 - x·q,
//! `hamming` counts the bits in which two uint8 vectors differ.
//!
//! The kernels sum in independent lanes so that the compiler turns them into SIMD
//! instructions; on x86-64 a copy compiled for AVX2 and FMA is picked at run time when the
//! CPU has them (the portable build may only assume SSE2).
use std::sync::OnceLock;

use arrow_array::{Array, ArrayRef, FixedSizeListArray};
use arrow_schema::DataType;

use crate::error::{Error, Result};

/// How a search measures closeness.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Metric {
    L2,
    Cosine,
    Dot,
    Hamming,
}

impl Metric {
    /// pylance's names, in any case ("euclidean" is l2).
    pub fn parse(name: &str) -> Result<Self> {
        match name.to_ascii_lowercase().as_str() {
            "l2" | "euclidean" => Ok(Metric::L2),
            "cosine" => Ok(Metric::Cosine),
            "dot" => Ok(Metric::Dot),
            "hamming" => Ok(Metric::Hamming),
            _ => Err(Error::invalid(format!(
                "metric '{name}' is not supported (l2, cosine, dot or hamming)"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Metric::L2 => "l2",
            Metric::Cosine => "cosine",
            Metric::Dot => "dot",
            Metric::Hamming => "hamming",
        }
    }

    /// The metric a search uses when none is given: hamming for bytes, else l2.
    pub fn default_for(element: &DataType) -> Self {
        match element {
            DataType::UInt8 => Metric::Hamming,
            _ => Metric::L2,
        }
    }

    /// Whether vectors of `element` can be compared this way; an error names the column.
    pub fn check(self, element: &DataType, column: &str) -> Result<()> {
        let ok = match element {
            DataType::UInt8 => self == Metric::Hamming,
            DataType::Float16 | DataType::Float32 | DataType::Float64 => self != Metric::Hamming,
            _ => false,
        };
        match ok {
            true => Ok(()),
            false => Err(Error::invalid(format!(
                "metric {} does not apply to column '{column}' of {element} vectors",
                self.name()
            ))),
        }
    }
}

/// The element types a vector column may have.
pub fn is_vector_element(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Float16 | DataType::Float32 | DataType::Float64 | DataType::UInt8
    )
}

/// A query vector in the type its distances are computed in: float16 columns are compared
/// in f32 with the query rounded to float16 first (as the stored values were).
#[derive(Clone, Debug)]
pub enum Query {
    F32 { values: Vec<f32>, norm: f32 },
    F64 { values: Vec<f64>, norm: f64 },
    U8(Vec<u8>),
}

impl Query {
    /// `values` (one vector) for a column of `element` vectors.
    pub fn new(values: &[f64], element: &DataType) -> Result<Self> {
        Ok(match element {
            DataType::Float64 => {
                let norm = dot_f64(values, values).sqrt();
                Query::F64 {
                    values: values.to_vec(),
                    norm,
                }
            }
            DataType::Float32 | DataType::Float16 => {
                let values: Vec<f32> = match element {
                    DataType::Float16 => values
                        .iter()
                        .map(|&v| half::f16::from_f64(v).to_f32())
                        .collect(),
                    _ => values.iter().map(|&v| v as f32).collect(),
                };
                let norm = (kernels().dot)(&values, &values).sqrt();
                Query::F32 { values, norm }
            }
            DataType::UInt8 => {
                let mut bytes = Vec::with_capacity(values.len());
                for &v in values {
                    if !(0.0..=255.0).contains(&v) || v.fract() != 0.0 {
                        return Err(Error::invalid(format!(
                            "a query for uint8 vectors must hold integers 0..=255, got {v}"
                        )));
                    }
                    bytes.push(v as u8);
                }
                Query::U8(bytes)
            }
            other => {
                return Err(Error::invalid(format!(
                    "vectors of {other} cannot be searched"
                )))
            }
        })
    }

    pub fn dim(&self) -> usize {
        match self {
            Query::F32 { values, .. } => values.len(),
            Query::F64 { values, .. } => values.len(),
            Query::U8(v) => v.len(),
        }
    }
}

/// The distances from `query` to rows `rows` of `vectors` (a fixed-size list column of
/// `query.dim()` elements), appended to `out`; null vectors get NaN (the caller skips
/// them by validity, not by value).
pub fn distances(
    metric: Metric,
    query: &Query,
    vectors: &FixedSizeListArray,
    out: &mut Vec<f32>,
) -> Result<()> {
    let dim = vectors.value_length() as usize;
    if dim != query.dim() {
        return Err(Error::invalid(format!(
            "the query has {} dimensions, the vectors {dim}",
            query.dim()
        )));
    }
    let n = vectors.len();
    let start = vectors.offset() * dim;
    let values: &ArrayRef = vectors.values();
    out.reserve(n);
    let k = kernels();
    macro_rules! each_row {
        ($slice:expr, $f:expr) => {{
            let all = $slice;
            for r in 0..n {
                let x = &all[start + r * dim..start + (r + 1) * dim];
                out.push($f(x));
            }
        }};
    }
    match (query, values.data_type()) {
        (Query::F32 { values: q, norm }, DataType::Float32) => {
            let all = values
                .as_any()
                .downcast_ref::<arrow_array::Float32Array>()
                .expect("type checked")
                .values();
            match metric {
                Metric::L2 => each_row!(all, |x: &[f32]| (k.l2)(x, q)),
                Metric::Dot => each_row!(all, |x: &[f32]| 1.0 - (k.dot)(x, q)),
                Metric::Cosine => each_row!(all, |x: &[f32]| {
                    let (d, xx) = (k.dot_norm)(x, q);
                    1.0 - d / (xx.sqrt() * norm)
                }),
                Metric::Hamming => unreachable!("checked by Metric::check"),
            }
        }
        (Query::F32 { values: q, norm }, DataType::Float16) => {
            let all = values
                .as_any()
                .downcast_ref::<arrow_array::Float16Array>()
                .expect("type checked")
                .values();
            let mut x = vec![0f32; dim];
            for r in 0..n {
                let row = &all[start + r * dim..start + (r + 1) * dim];
                for (o, v) in x.iter_mut().zip(row) {
                    *o = v.to_f32();
                }
                out.push(match metric {
                    Metric::L2 => (k.l2)(&x, q),
                    Metric::Dot => 1.0 - (k.dot)(&x, q),
                    _ => {
                        let (d, xx) = (k.dot_norm)(&x, q);
                        1.0 - d / (xx.sqrt() * norm)
                    }
                });
            }
        }
        (Query::F64 { values: q, norm }, DataType::Float64) => {
            let all = values
                .as_any()
                .downcast_ref::<arrow_array::Float64Array>()
                .expect("type checked")
                .values();
            match metric {
                Metric::L2 => each_row!(all, |x: &[f64]| l2_f64(x, q) as f32),
                Metric::Dot => each_row!(all, |x: &[f64]| (1.0 - dot_f64(x, q)) as f32),
                _ => each_row!(all, |x: &[f64]| {
                    let d = dot_f64(x, q);
                    (1.0 - d / (dot_f64(x, x).sqrt() * norm)) as f32
                }),
            }
        }
        (Query::U8(q), DataType::UInt8) => {
            let all = values
                .as_any()
                .downcast_ref::<arrow_array::UInt8Array>()
                .expect("type checked")
                .values();
            each_row!(all, |x: &[u8]| hamming(x, q) as f32)
        }
        (_, other) => {
            return Err(Error::invalid(format!(
                "internal: a query does not match vectors of {other}"
            )))
        }
    }
    Ok(())
}

/// x·y of two f32 slices of one length (the fastest kernel for this CPU).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    (kernels().dot)(a, b)
}

/// The squared euclidean distance of two f32 slices of one length.
pub fn l2(a: &[f32], b: &[f32]) -> f32 {
    (kernels().l2)(a, b)
}

/// Σ(a−b)² of two byte vectors (scalar-quantization codes), exact.
pub fn l2_u8(a: &[u8], b: &[u8]) -> u32 {
    (kernels().l2_u8)(a, b)
}

/// Σ a·b of byte codes and f32 values.
pub fn dot_u8(a: &[u8], b: &[f32]) -> f32 {
    (kernels().dot_u8)(a, b)
}

/// `acc[i] += a * x[i]` over two slices of one length (k-means' distances to many
/// centroids at once).
pub fn axpy(acc: &mut [f32], a: f32, x: &[f32]) {
    (kernels().axpy)(acc, a, x)
}

/// The position and value of the smallest of `norms[c] - 2·dots[c]` (or of `-dots[c]`
/// when `spherical`): the nearest centroid, given a row's dot products with every
/// centroid and their squared norms. Ties go to the first.
pub fn argmin_key(dots: &[f32], norms: &[f32], spherical: bool) -> (usize, f32) {
    (kernels().argmin_key)(dots, norms, spherical)
}

/// Rows per `dots_block` call.
pub const BLOCK_ROWS: usize = 4;

/// `out[r * k + c]` = row r · centroid c, for the `BLOCK_ROWS` rows of `rows` (`dim`
/// values each) and the `k` centroids of `transposed` (`dim x k`, each dimension's values
/// of every centroid together). Centroids are taken 16 at a time with the sums of all the
/// rows kept in registers, so each centroid value is loaded once per block of rows, not
/// once per row: assigning rows to many centroids (k-means, IVF encoding) is bound by
/// arithmetic, not by reading the centroids again for every row.
pub fn dots_block(rows: &[f32], transposed: &[f32], k: usize, dim: usize, out: &mut [f32]) {
    assert!(rows.len() >= BLOCK_ROWS * dim && transposed.len() >= k * dim);
    assert!(out.len() >= BLOCK_ROWS * k);
    (kernels().dots_block)(rows, transposed, k, dim, out)
}

/// Lanes summed independently (a multiple of every SIMD width we target).
const LANES: usize = 16;

/// See `argmin_key`.
type ArgminKey = fn(&[f32], &[f32], bool) -> (usize, f32);

/// The f32 kernels, picked once for this CPU.
struct Kernels {
    l2: fn(&[f32], &[f32]) -> f32,
    dot: fn(&[f32], &[f32]) -> f32,
    /// x·q and x·x in one pass (cosine).
    dot_norm: fn(&[f32], &[f32]) -> (f32, f32),
    l2_u8: fn(&[u8], &[u8]) -> u32,
    dot_u8: fn(&[u8], &[f32]) -> f32,
    axpy: fn(&mut [f32], f32, &[f32]),
    argmin_key: ArgminKey,
    dots_block: DotsBlock,
}

/// See `dots_block`.
type DotsBlock = fn(&[f32], &[f32], usize, usize, &mut [f32]);

fn kernels() -> &'static Kernels {
    static PICKED: OnceLock<Kernels> = OnceLock::new();
    PICKED.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            return Kernels {
                l2: avx2::l2,
                dot: avx2::dot,
                dot_norm: avx2::dot_norm,
                l2_u8: avx2::l2_u8,
                dot_u8: avx2::dot_u8,
                axpy: avx2::axpy,
                argmin_key: avx2::argmin_key,
                dots_block: avx2::dots_block,
            };
        }
        Kernels {
            l2: l2_f32,
            dot: dot_f32,
            dot_norm: dot_norm_f32,
            l2_u8: l2_u8_lanes,
            dot_u8: dot_u8_lanes,
            axpy: axpy_lanes,
            argmin_key: argmin_key_lanes,
            dots_block: dots_block_lanes::<false>,
        }
    })
}

#[inline(always)]
fn l2_f32(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            let d = x[i] - y[i];
            acc[i] += d * d;
        }
    }
    let mut sum: f32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        sum += (x - y) * (x - y);
    }
    sum
}

#[inline(always)]
fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            acc[i] += x[i] * y[i];
        }
    }
    let mut sum: f32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        sum += x * y;
    }
    sum
}

#[inline(always)]
fn dot_norm_f32(x: &[f32], q: &[f32]) -> (f32, f32) {
    let mut dot = [0f32; LANES];
    let mut xx = [0f32; LANES];
    let (cx, cq) = (x.chunks_exact(LANES), q.chunks_exact(LANES));
    let (rx, rq) = (cx.remainder(), cq.remainder());
    for (a, b) in cx.zip(cq) {
        for i in 0..LANES {
            dot[i] += a[i] * b[i];
            xx[i] += a[i] * a[i];
        }
    }
    let (mut d, mut n): (f32, f32) = (dot.iter().sum(), xx.iter().sum());
    for (a, b) in rx.iter().zip(rq) {
        d += a * b;
        n += a * a;
    }
    (d, n)
}

/// See `dots_block`; `FMA`: fused multiply-adds (only where the CPU has them: elsewhere
/// `mul_add` is a library call).
#[inline(always)]
fn dots_block_lanes<const FMA: bool>(
    rows: &[f32],
    transposed: &[f32],
    k: usize,
    dim: usize,
    out: &mut [f32],
) {
    const W: usize = 16;
    let rows: [&[f32]; BLOCK_ROWS] = std::array::from_fn(|r| &rows[r * dim..(r + 1) * dim]);
    let mut c0 = 0;
    while c0 + W <= k {
        let mut acc = [[0f32; W]; BLOCK_ROWS];
        for i in 0..dim {
            let col: &[f32; W] = transposed[i * k + c0..i * k + c0 + W]
                .try_into()
                .expect("16 values");
            for r in 0..BLOCK_ROWS {
                let v = rows[r][i];
                for j in 0..W {
                    acc[r][j] = match FMA {
                        true => v.mul_add(col[j], acc[r][j]),
                        false => acc[r][j] + v * col[j],
                    };
                }
            }
        }
        for (r, a) in acc.iter().enumerate() {
            out[r * k + c0..r * k + c0 + W].copy_from_slice(a);
        }
        c0 += W;
    }
    for c in c0..k {
        for r in 0..BLOCK_ROWS {
            let mut s = 0f32;
            for i in 0..dim {
                s += rows[r][i] * transposed[i * k + c];
            }
            out[r * k + c] = s;
        }
    }
}

#[inline(always)]
fn axpy_lanes(acc: &mut [f32], a: f32, x: &[f32]) {
    for (s, &v) in acc.iter_mut().zip(x) {
        *s += a * v;
    }
}

#[inline(always)]
fn argmin_key_lanes(dots: &[f32], norms: &[f32], spherical: bool) -> (usize, f32) {
    let (a, b) = if spherical {
        (0.0f32, -1.0f32)
    } else {
        (1.0, -2.0)
    };
    // The smallest key, lane-wise (branch-free, so it becomes SIMD min instructions)...
    let mut low = [f32::INFINITY; LANES];
    let (cd, cn) = (dots.chunks_exact(LANES), norms.chunks_exact(LANES));
    let (rd, rn) = (cd.remainder(), cn.remainder());
    for (d, n) in cd.zip(cn) {
        for l in 0..LANES {
            let key = a * n[l] + b * d[l];
            low[l] = if key < low[l] { key } else { low[l] };
        }
    }
    let mut min = low.iter().copied().fold(f32::INFINITY, f32::min);
    for (d, n) in rd.iter().zip(rn) {
        min = min.min(a * n + b * d);
    }
    // ...then the first centroid with it.
    let at = dots
        .iter()
        .zip(norms)
        .position(|(d, n)| a * n + b * d == min)
        .unwrap_or(0);
    (at, min)
}

#[inline(always)]
fn l2_u8_lanes(a: &[u8], b: &[u8]) -> u32 {
    let mut acc = [0u32; 2 * LANES];
    let (ca, cb) = (a.chunks_exact(2 * LANES), b.chunks_exact(2 * LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..2 * LANES {
            let d = x[i] as i32 - y[i] as i32;
            acc[i] += (d * d) as u32;
        }
    }
    let tail: u32 = ra
        .iter()
        .zip(rb)
        .map(|(&x, &y)| ((x as i32 - y as i32) * (x as i32 - y as i32)) as u32)
        .sum();
    acc.iter().sum::<u32>() + tail
}

#[inline(always)]
fn dot_u8_lanes(a: &[u8], b: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            acc[i] += x[i] as f32 * y[i];
        }
    }
    acc.iter().sum::<f32>() + ra.iter().zip(rb).map(|(&x, y)| x as f32 * y).sum::<f32>()
}

/// The same kernels compiled for AVX2 and FMA (called only when the CPU has both).
#[cfg(target_arch = "x86_64")]
mod avx2 {
    #[target_feature(enable = "avx2,fma")]
    unsafe fn l2_impl(a: &[f32], b: &[f32]) -> f32 {
        super::l2_f32(a, b)
    }
    #[target_feature(enable = "avx2,fma")]
    unsafe fn dot_impl(a: &[f32], b: &[f32]) -> f32 {
        super::dot_f32(a, b)
    }
    #[target_feature(enable = "avx2,fma")]
    unsafe fn dot_norm_impl(a: &[f32], b: &[f32]) -> (f32, f32) {
        super::dot_norm_f32(a, b)
    }
    #[target_feature(enable = "avx2,fma")]
    unsafe fn l2_u8_impl(a: &[u8], b: &[u8]) -> u32 {
        super::l2_u8_lanes(a, b)
    }
    #[target_feature(enable = "avx2,fma")]
    unsafe fn dot_u8_impl(a: &[u8], b: &[f32]) -> f32 {
        super::dot_u8_lanes(a, b)
    }
    #[target_feature(enable = "avx2,fma")]
    unsafe fn axpy_impl(acc: &mut [f32], a: f32, x: &[f32]) {
        super::axpy_lanes(acc, a, x)
    }
    pub fn axpy(acc: &mut [f32], a: f32, x: &[f32]) {
        unsafe { axpy_impl(acc, a, x) }
    }
    #[target_feature(enable = "avx2,fma")]
    unsafe fn argmin_key_impl(dots: &[f32], norms: &[f32], spherical: bool) -> (usize, f32) {
        super::argmin_key_lanes(dots, norms, spherical)
    }
    pub fn argmin_key(dots: &[f32], norms: &[f32], spherical: bool) -> (usize, f32) {
        unsafe { argmin_key_impl(dots, norms, spherical) }
    }
    #[target_feature(enable = "avx2,fma")]
    unsafe fn dots_block_impl(rows: &[f32], t: &[f32], k: usize, dim: usize, out: &mut [f32]) {
        super::dots_block_lanes::<true>(rows, t, k, dim, out)
    }
    pub fn dots_block(rows: &[f32], t: &[f32], k: usize, dim: usize, out: &mut [f32]) {
        unsafe { dots_block_impl(rows, t, k, dim, out) }
    }
    // SAFETY (all of them): `kernels()` hands these out only after detecting AVX2 and FMA.
    pub fn l2_u8(a: &[u8], b: &[u8]) -> u32 {
        unsafe { l2_u8_impl(a, b) }
    }
    pub fn dot_u8(a: &[u8], b: &[f32]) -> f32 {
        unsafe { dot_u8_impl(a, b) }
    }
    pub fn l2(a: &[f32], b: &[f32]) -> f32 {
        unsafe { l2_impl(a, b) }
    }
    pub fn dot(a: &[f32], b: &[f32]) -> f32 {
        unsafe { dot_impl(a, b) }
    }
    pub fn dot_norm(a: &[f32], b: &[f32]) -> (f32, f32) {
        unsafe { dot_norm_impl(a, b) }
    }
}

fn l2_f64(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0f64; LANES / 2];
    let (ca, cb) = (a.chunks_exact(LANES / 2), b.chunks_exact(LANES / 2));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES / 2 {
            let d = x[i] - y[i];
            acc[i] += d * d;
        }
    }
    acc.iter().sum::<f64>()
        + ra.iter()
            .zip(rb)
            .map(|(x, y)| (x - y) * (x - y))
            .sum::<f64>()
}

fn dot_f64(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0f64; LANES / 2];
    let (ca, cb) = (a.chunks_exact(LANES / 2), b.chunks_exact(LANES / 2));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES / 2 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f64>() + ra.iter().zip(rb).map(|(x, y)| x * y).sum::<f64>()
}

/// Bits in which `a` and `b` differ, eight bytes at a time.
fn hamming(a: &[u8], b: &[u8]) -> u32 {
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    let mut bits = 0u32;
    for (x, y) in ca.zip(cb) {
        let x = u64::from_le_bytes(x.try_into().expect("8 bytes"));
        let y = u64::from_le_bytes(y.try_into().expect("8 bytes"));
        bits += (x ^ y).count_ones();
    }
    bits + ra
        .iter()
        .zip(rb)
        .map(|(x, y)| (x ^ y).count_ones())
        .sum::<u32>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float16Array, Float32Array, Float64Array, UInt8Array};
    use std::sync::Arc;

    fn column<A: Array + 'static>(values: A, dim: i32) -> FixedSizeListArray {
        let dt = values.data_type().clone();
        FixedSizeListArray::new(
            Arc::new(arrow_schema::Field::new("item", dt, true)),
            dim,
            Arc::new(values),
            None,
        )
    }

    /// Plain sums in f64, to check the lane-wise kernels against.
    fn reference(metric: Metric, x: &[f64], q: &[f64]) -> f64 {
        let dot: f64 = x.iter().zip(q).map(|(a, b)| a * b).sum();
        match metric {
            Metric::L2 => x.iter().zip(q).map(|(a, b)| (a - b) * (a - b)).sum(),
            Metric::Dot => 1.0 - dot,
            Metric::Cosine => {
                let nx: f64 = x.iter().map(|a| a * a).sum::<f64>().sqrt();
                let nq: f64 = q.iter().map(|a| a * a).sum::<f64>().sqrt();
                1.0 - dot / (nx * nq)
            }
            Metric::Hamming => unreachable!(),
        }
    }

    #[test]
    fn float_kernels_agree_with_plain_sums_for_every_width_and_remainder() {
        // Dimensions below, at and above the lane count, with remainders.
        for dim in [1usize, 3, 15, 16, 17, 33, 128] {
            let rows = 5;
            let data: Vec<f64> = (0..rows * dim)
                .map(|i| ((i * 37 % 101) as f64 - 50.0) / 7.0)
                .collect();
            let q: Vec<f64> = (0..dim).map(|i| (i as f64 * 0.3).sin()).collect();
            for metric in [Metric::L2, Metric::Dot, Metric::Cosine] {
                let f32s = column(
                    Float32Array::from(data.iter().map(|&v| v as f32).collect::<Vec<_>>()),
                    dim as i32,
                );
                let f64s = column(Float64Array::from(data.clone()), dim as i32);
                for (col, element) in [(f32s, DataType::Float32), (f64s, DataType::Float64)] {
                    let query = Query::new(&q, &element).unwrap();
                    let mut out = Vec::new();
                    distances(metric, &query, &col, &mut out).unwrap();
                    for r in 0..rows {
                        let want = reference(metric, &data[r * dim..(r + 1) * dim], &q);
                        if want.is_nan() {
                            // A zero query has no angle (cosine): NaN, as in pylance.
                            assert!(out[r].is_nan());
                            continue;
                        }
                        let tol = 1e-3 * want.abs().max(1.0);
                        assert!(
                            (out[r] as f64 - want).abs() <= tol,
                            "{metric:?} {element} dim {dim} row {r}: {} vs {want}",
                            out[r]
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn float16_vectors_are_compared_with_the_query_rounded_to_float16() {
        let q = [0.1f64, 0.2, 0.3];
        let stored: Vec<half::f16> = q.iter().map(|&v| half::f16::from_f64(v)).collect();
        let col = column(Float16Array::from(stored), 3);
        let query = Query::new(&q, &DataType::Float16).unwrap();
        let mut out = Vec::new();
        distances(Metric::L2, &query, &col, &mut out).unwrap();
        assert_eq!(out, vec![0.0]);
    }

    #[test]
    fn hamming_counts_differing_bits_and_bytes_are_checked() {
        let col = column(UInt8Array::from((0u8..20).collect::<Vec<_>>()), 10);
        let q: Vec<f64> = vec![0.0; 10];
        let query = Query::new(&q, &DataType::UInt8).unwrap();
        let mut out = Vec::new();
        distances(Metric::Hamming, &query, &col, &mut out).unwrap();
        let want = |r: u8| (r * 10..r * 10 + 10).map(|b| b.count_ones()).sum::<u32>() as f32;
        assert_eq!(out, vec![want(0), want(1)]);
        assert!(Query::new(&[256.0], &DataType::UInt8).is_err());
        assert!(Query::new(&[1.5], &DataType::UInt8).is_err());
    }

    #[test]
    fn metrics_parse_by_pylance_names_and_check_element_types() {
        assert_eq!(Metric::parse("Euclidean").unwrap(), Metric::L2);
        assert_eq!(Metric::parse("COSINE").unwrap(), Metric::Cosine);
        assert!(Metric::parse("manhattan").is_err());
        assert!(Metric::L2.check(&DataType::UInt8, "v").is_err());
        assert!(Metric::Hamming.check(&DataType::Float32, "v").is_err());
        assert!(Metric::Dot.check(&DataType::Float16, "v").is_ok());
        assert_eq!(Metric::default_for(&DataType::UInt8), Metric::Hamming);
    }

    #[test]
    fn byte_and_k_means_kernels_agree_with_plain_loops() {
        for n in [1usize, 7, 16, 33, 100, 256, 300] {
            let a: Vec<u8> = (0..n).map(|i| (i * 37 % 251) as u8).collect();
            let b: Vec<u8> = (0..n).map(|i| (i * 91 % 256) as u8).collect();
            let f: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let want: u32 = a
                .iter()
                .zip(&b)
                .map(|(&x, &y)| (x as i32 - y as i32).pow(2) as u32)
                .sum();
            assert_eq!(l2_u8(&a, &b), want);
            let want: f32 = a.iter().zip(&f).map(|(&x, y)| x as f32 * y).sum();
            assert!((dot_u8(&a, &f) - want).abs() <= 1e-3 * want.abs().max(1.0));
            let mut acc = vec![1f32; n];
            axpy(&mut acc, 2.0, &f);
            assert!(acc
                .iter()
                .zip(&f)
                .all(|(s, v)| (s - (1.0 + 2.0 * v)).abs() < 1e-6));
            // The nearest centroid: the smallest |c|^2 - 2 x.c, the first of equals.
            let norms: Vec<f32> = (0..n).map(|i| (i % 5) as f32).collect();
            let keys: Vec<f32> = norms.iter().zip(&f).map(|(m, d)| m - 2.0 * d).collect();
            let min = keys.iter().copied().fold(f32::INFINITY, f32::min);
            let at = keys.iter().position(|&k| k == min).unwrap();
            assert_eq!(argmin_key(&f, &norms, false), (at, min));
            let (at, v) = argmin_key(&f, &norms, true);
            let best = f.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            assert_eq!((at, v), (f.iter().position(|&x| x == best).unwrap(), -best));
        }
    }

    #[test]
    fn a_dimension_mismatch_is_an_error() {
        let col = column(Float32Array::from(vec![0f32; 8]), 4);
        let query = Query::new(&[0.0; 3], &DataType::Float32).unwrap();
        assert!(distances(Metric::L2, &query, &col, &mut Vec::new()).is_err());
    }
}
