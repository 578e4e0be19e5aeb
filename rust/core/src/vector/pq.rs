//! IVF_PQ: product quantization. A vector is cut into `num_sub_vectors` sub-vectors, and
//! each is stored as the number of its nearest entry in that sub-vector's codebook of
//! 2^`num_bits` entries (8 bits, or 4 with two codes a byte). What is quantized is the
//! vector's residual from its partition's centroid (the vector itself for dot, where a
//! residual does not keep the order of dot products).
//!
//! In the auxiliary file (`__pq_code`) a partition's codes are written sub-vector by
//! sub-vector (`transposed`, as pylance writes them: a search reads one sub-vector's codes
//! together); the codebook is global buffer 2, a tensor of `[2^bits][dim]` whose values
//! run codebook by codebook (`[m][2^bits][dim/m]`).
use std::sync::Arc;

use arrow_array::{Array, FixedSizeListArray, UInt8Array};
use arrow_schema::DataType;
use futures::future::BoxFuture;
use prost::Message;
use rayon::prelude::*;
use serde_json::{json, Map, Value};

use super::distance::{self, Metric};
use super::encoded::{fixed_size_list, Encoded};
use super::kind::IvfParams;
use super::kind::{
    code_bytes, same_as, Layout, Quantizer, StoredFile, StoredRows, VectorIndexKind,
};
use super::kmeans::{self, Rng};
use super::tensor::{tensor, tensor_values};
use crate::error::{Error, Result};
use crate::proto::index::vector_index_details::{Compression, ProductQuantization};
use crate::proto::index::Tensor;

/// Where the codebook is among the auxiliary file's global buffers (1 is the partitions'
/// `IVF` message).
const CODEBOOK_BUFFER: usize = 2;

#[derive(Debug)]
pub struct IvfPq;

impl VectorIndexKind for IvfPq {
    fn name(&self) -> &'static str {
        "IVF_PQ"
    }

    fn sub_index(&self) -> &'static str {
        "PQ"
    }

    fn stored_column(&self) -> &'static str {
        "__pq_code"
    }

    fn load<'a>(&'a self, file: StoredFile<'a>) -> BoxFuture<'a, Result<Arc<dyn Quantizer>>> {
        Box::pin(async move { Ok(Arc::new(Pq::read(&file).await?) as Arc<dyn Quantizer>) })
    }

    fn check(&self, params: &IvfParams, dim: usize) -> std::result::Result<(), String> {
        let m = params.num_sub_vectors.unwrap_or(0);
        if m == 0 || !dim.is_multiple_of(m) {
            return Err(format!(
                "IVF_PQ needs num_sub_vectors dividing the dimension {dim}, got {m}"
            ));
        }
        if !(params.num_bits == 8 || (params.num_bits == 4 && m.is_multiple_of(2))) {
            return Err(format!(
                "IVF_PQ codes are 8 bits, or 4 with an even num_sub_vectors; got {} bits",
                params.num_bits
            ));
        }
        Ok(())
    }

    // Each codebook learns from sample_rate rows per entry (as pylance's).
    fn sample_size(&self, params: &IvfParams) -> usize {
        let entries = 1usize.checked_shl(params.num_bits).unwrap_or(usize::MAX);
        params.sample_rate.saturating_mul(entries)
    }

    fn train(
        &self,
        sample: &[f32],
        dim: usize,
        centroids: &[f32],
        p: &IvfParams,
        rng: &mut Rng,
    ) -> Result<Arc<dyn Quantizer>> {
        self.check(p, dim).map_err(Error::invalid)?;
        let m = p.num_sub_vectors.unwrap_or(0);
        let entries = 1usize << p.num_bits;
        let sub = dim / m;
        let rows = rng.sample(sample.len() / dim, p.sample_rate.max(1) * entries);
        // Each row's partition: its codebooks learn the residual from that centroid (the
        // row itself for dot), one sub-vector's slice at a time.
        let near = kmeans::Nearest::new(centroids, dim, p.metric == Metric::Dot);
        let centre: Vec<u32> = match p.metric {
            Metric::Dot => vec![],
            _ => rows
                .par_chunks(1024)
                .flat_map_iter(|chunk| {
                    let mut picked = Vec::with_capacity(chunk.len() * dim);
                    for &r in chunk {
                        picked.extend_from_slice(&sample[r * dim..(r + 1) * dim]);
                    }
                    let mut found = Vec::with_capacity(chunk.len());
                    near.find_rows(&picked, &mut found);
                    found.into_iter().map(|(c, _)| c)
                })
                .collect(),
        };
        let books: Vec<Vec<f32>> = (0..m)
            .into_par_iter()
            .map(|j| {
                let mut slice: Vec<f32> = Vec::with_capacity(rows.len() * sub);
                for (i, &r) in rows.iter().enumerate() {
                    let x = &sample[r * dim + j * sub..r * dim + (j + 1) * sub];
                    match centre.get(i) {
                        Some(&c) => {
                            let c = &centroids[c as usize * dim + j * sub..][..sub];
                            slice.extend(x.iter().zip(c).map(|(v, c)| v - c));
                        }
                        None => slice.extend_from_slice(x),
                    }
                }
                let mut rng = Rng::new(p.seed ^ (j as u64 + 1).wrapping_mul(0x9E37_79B9));
                kmeans::train(&slice, sub, entries, p.max_iters, false, &mut rng).centroids
            })
            .collect();
        Ok(Arc::new(Pq {
            m,
            bits: p.num_bits,
            codebook: books.concat(),
            transposed: true,
        }))
    }

    fn runtime_hints(&self, p: &IvfParams) -> Vec<(&'static str, String)> {
        vec![
            ("lance.pq.max_iters", p.max_iters.to_string()),
            ("lance.pq.sample_rate", p.sample_rate.to_string()),
        ]
    }
}

/// A trained product quantizer.
#[derive(Debug)]
pub struct Pq {
    /// Sub-vectors per vector.
    m: usize,
    /// Bits per code: 8, or 4 (two codes a byte, the even sub-vector's in the low half).
    bits: u32,
    /// `[m][2^bits][dim/m]`.
    codebook: Vec<f32>,
    /// A partition's codes are stored sub-vector by sub-vector (else row by row).
    transposed: bool,
}

// Two quantizers encode alike whatever order their files keep codes in.
impl PartialEq for Pq {
    fn eq(&self, other: &Pq) -> bool {
        (self.m, self.bits, &self.codebook) == (other.m, other.bits, &other.codebook)
    }
}

impl Pq {
    async fn read(file: &StoredFile<'_>) -> Result<Pq> {
        let (meta, dim, shown) = (file.metadata, file.dim, file.shown);
        let m = meta["num_sub_vectors"].as_u64().unwrap_or(0) as usize;
        let bits = meta["nbits"].as_u64().unwrap_or(8) as u32;
        if m == 0 || dim % m != 0 || !(bits == 8 || bits == 4) {
            return Err(Error::corrupt(
                shown,
                format!("PQ with {m} sub-vectors of {bits} bits for {dim} dimensions"),
            ));
        }
        let at = meta["codebook_position"].as_u64().ok_or_else(|| {
            Error::corrupt(shown, "PQ storage metadata without codebook_position")
        })?;
        let bytes = file.global_buffer(at as usize).await?;
        let t = Tensor::decode(bytes)
            .map_err(|e| Error::corrupt(shown, format!("the PQ codebook: {e}")))?;
        let codebook = tensor_values(&t, shown, "the PQ codebook")?;
        if codebook.len() != (1usize << bits) * dim {
            return Err(Error::corrupt(
                shown,
                format!(
                    "a PQ codebook of {} values for {bits}-bit codes of {dim} dimensions",
                    codebook.len()
                ),
            ));
        }
        Ok(Pq {
            m,
            bits,
            codebook,
            transposed: meta["transposed"].as_bool().unwrap_or(false),
        })
    }

    fn entries(&self) -> usize {
        1 << self.bits
    }

    fn dim(&self) -> usize {
        self.codebook.len() / self.entries()
    }

    /// Bytes of a row's codes in the file.
    fn row_bytes(&self) -> usize {
        match self.bits {
            4 => self.m / 2,
            _ => self.m,
        }
    }

    /// Entry `c` of sub-vector `j`'s codebook.
    fn entry(&self, j: usize, c: usize) -> &[f32] {
        let sub = self.dim() / self.m;
        let at = (j * self.entries() + c) * sub;
        &self.codebook[at..at + sub]
    }
}

impl Quantizer for Pq {
    fn code_width(&self, _dim: usize) -> usize {
        self.m
    }

    fn encode(
        &self,
        rows: &[f32],
        dim: usize,
        partitions: &[u32],
        centroids: &[f32],
        metric: Metric,
    ) -> Vec<u8> {
        let (m, sub) = (self.m, dim / self.m);
        let finders: Vec<kmeans::Nearest> = (0..m)
            .map(|j| {
                let book = &self.codebook[j * self.entries() * sub..][..self.entries() * sub];
                kmeans::Nearest::new(book, sub, false)
            })
            .collect();
        let mut codes = vec![0u8; partitions.len() * m];
        // Each sub-vector's code: the nearest entry of its codebook to the row's residual
        // from its partition's centroid (the row itself for dot).
        codes
            .par_chunks_mut(m)
            .zip(rows.par_chunks(dim))
            .zip(partitions.par_iter())
            .for_each_init(
                || (Vec::new(), vec![0f32; dim]),
                |(scores, residual), ((code, x), &c)| {
                    let centroid = &centroids[c as usize * dim..(c as usize + 1) * dim];
                    for ((r, v), c) in residual.iter_mut().zip(x).zip(centroid) {
                        *r = match metric {
                            Metric::Dot => *v,
                            _ => v - c,
                        };
                    }
                    for (j, b) in code.iter_mut().enumerate() {
                        *b = finders[j].find(&residual[j * sub..(j + 1) * sub], scores).0 as u8;
                    }
                },
            );
        codes
    }

    fn stored(
        &self,
        encoded: &Encoded,
        dim: usize,
        layout: &Layout,
        element: &DataType,
    ) -> Result<StoredRows> {
        let (m, per_row) = (self.m, self.row_bytes());
        // Per partition, sub-vector by sub-vector (pylance's transposed layout).
        let mut bytes = vec![0u8; layout.order.len() * per_row];
        let mut i_in = vec![0usize; layout.offsets.len()];
        for &r in layout.order {
            let c = layout.partitions[r] as usize;
            let (o, len, i) = (
                layout.offsets[c] as usize,
                layout.lengths[c] as usize,
                i_in[c],
            );
            i_in[c] += 1;
            let code = &encoded.codes[r * m..(r + 1) * m];
            for b in 0..per_row {
                bytes[o * per_row + b * len + i] = match self.bits {
                    4 => code[2 * b] | (code[2 * b + 1] << 4),
                    _ => code[b],
                };
            }
        }
        let codebook = tensor(
            &self.codebook,
            vec![self.entries() as u32, dim as u32],
            element,
        );
        Ok(StoredRows {
            column: fixed_size_list(Arc::new(UInt8Array::from(bytes)), per_row)?,
            metadata: json!({
                "codebook_position": CODEBOOK_BUFFER,
                "nbits": self.bits,
                "num_sub_vectors": m,
                "dimension": dim,
                "codebook_tensor": [],
                "transposed": true,
            }),
            buffers: vec![codebook.encode_to_vec()],
            compression: Compression::Pq(ProductQuantization {
                num_bits: self.bits,
                num_sub_vectors: m as u32,
            }),
        })
    }

    fn read_back(
        &self,
        vectors: &FixedSizeListArray,
        shown: &str,
        out: &mut Encoded,
    ) -> Result<()> {
        let (n, width) = (vectors.len(), vectors.value_length() as usize);
        if width != self.row_bytes() {
            return Err(Error::corrupt(
                shown,
                format!("codes of {width} bytes for {} sub-vectors", self.m),
            ));
        }
        let bytes = code_bytes(vectors, shown)?;
        // Back to one code per sub-vector, row by row.
        out.codes.reserve(n * self.m);
        for i in 0..n {
            for b in 0..width {
                let byte = match self.transposed {
                    true => bytes[b * n + i],
                    false => bytes[i * width + b],
                };
                match self.bits {
                    4 => out.codes.extend([byte & 0x0F, byte >> 4]),
                    _ => out.codes.push(byte),
                }
            }
        }
        Ok(())
    }

    fn distances(
        &self,
        vectors: &FixedSizeListArray,
        q: &[f32],
        centroid: &[f32],
        metric: Metric,
        shown: &str,
    ) -> Result<Vec<f32>> {
        let (m, entries, n) = (self.m, self.entries(), vectors.len());
        let sub = self.dim() / m;
        // The distance of each entry of each sub-vector's codebook, then a sum per row.
        let target: Vec<f32> = match metric {
            Metric::Dot => q.to_vec(),
            _ => q.iter().zip(centroid).map(|(a, b)| a - b).collect(),
        };
        let mut table = vec![0f32; m * entries];
        for j in 0..m {
            let t = &target[j * sub..(j + 1) * sub];
            for c in 0..entries {
                table[j * entries + c] = match metric {
                    Metric::Dot => 1.0 - distance::dot(t, self.entry(j, c)),
                    _ => distance::l2(t, self.entry(j, c)),
                };
            }
        }
        let per_row = vectors.value_length() as usize;
        if per_row != self.row_bytes() {
            return Err(Error::corrupt(
                shown,
                format!("codes of {per_row} bytes for {m} sub-vectors"),
            ));
        }
        let bytes = code_bytes(vectors, shown)?;
        // Dot: 1 - Σ x_j·q_j = Σ (1 - x_j·q_j) - (m - 1).
        let base = match metric {
            Metric::Dot => -((m - 1) as f32),
            _ => 0.0,
        };
        let mut out = vec![base; n];
        // One sub-vector at a time over every row: the codes of a sub-vector are
        // contiguous when transposed, and its table stays in the L1 cache.
        for j in 0..m {
            let t = &table[j * entries..(j + 1) * entries];
            let byte_j = if self.bits == 4 { j / 2 } else { j };
            let shift = if self.bits == 4 && j % 2 == 1 { 4 } else { 0 };
            let mask = if self.bits == 4 { 0x0f } else { 0xff };
            let code = |b: u8| ((b >> shift) & mask) as usize;
            match self.transposed {
                true => {
                    let col = &bytes[byte_j * n..(byte_j + 1) * n];
                    for (d, &b) in out.iter_mut().zip(col) {
                        *d += t[code(b)];
                    }
                }
                false => {
                    for (r, d) in out.iter_mut().enumerate() {
                        *d += t[code(bytes[r * per_row + byte_j])];
                    }
                }
            }
        }
        Ok(out)
    }

    fn same(&self, other: &dyn Quantizer) -> bool {
        same_as(self, other)
    }

    fn statistics(&self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("nbits".into(), self.bits.into());
        out.insert("num_sub_vectors".into(), self.m.into());
        out.insert("dimension".into(), self.dim().into());
        out.insert("transposed".into(), self.transposed.into());
        out
    }

    fn bytes(&self) -> usize {
        self.codebook.len() * 4
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two sub-vectors of one dimension, four entries each (2 bits are not written, but
    /// the rule is the same): entry c of sub-vector j is j * 10 + c.
    fn pq(bits: u32) -> Pq {
        let entries = 1usize << bits;
        let codebook = (0..2)
            .flat_map(|j| (0..entries).map(move |c| (j * 10 + c) as f32))
            .collect();
        Pq {
            m: 2,
            bits,
            codebook,
            transposed: true,
        }
    }

    #[test]
    fn a_row_is_coded_by_its_nearest_entries_of_its_residual() {
        let q = pq(4);
        // Centroid (1, 1): residuals (2.2, 13.9) and (0, 10) → codes (2, 4) and (0, 0).
        let rows = [3.2, 14.9, 1.0, 11.0];
        let codes = q.encode(&rows, 2, &[0, 0], &[1.0, 1.0], Metric::L2);
        assert_eq!(codes, vec![2, 4, 0, 0]);
        // Dot quantizes the rows themselves.
        let codes = q.encode(&rows, 2, &[0, 0], &[1.0, 1.0], Metric::Dot);
        assert_eq!(codes, vec![3, 5, 1, 1]);
    }

    #[test]
    fn distances_sum_each_sub_vector_table_and_match_the_written_layout() {
        for bits in [4, 8] {
            let q = pq(bits);
            let encoded = Encoded {
                partitions: vec![0, 0, 0],
                ids: vec![7, 8, 9],
                codes: vec![0, 0, 1, 2, 3, 5],
                values: vec![],
            };
            let layout = Layout {
                order: &[0, 1, 2],
                partitions: &encoded.partitions,
                offsets: &[0],
                lengths: &[3],
            };
            let stored = q.stored(&encoded, 2, &layout, &DataType::Float32).unwrap();
            let query = [1.0, 12.0];
            let centroid = [0.0, 0.0];
            let d = q
                .distances(&stored.column, &query, &centroid, Metric::L2, "t")
                .unwrap();
            // Row (c0, c1) decodes to (c0, 10 + c1): l2 to (1, 12) per sub-vector.
            let want: Vec<f32> = [(0, 0), (1, 2), (3, 5)]
                .iter()
                .map(|&(a, b)| (1.0 - a as f32).powi(2) + (2.0 - b as f32).powi(2))
                .collect();
            assert_eq!(d, want, "{bits} bits");
            // Reading the written codes back gives the codes encoded.
            let mut back = Encoded::default();
            q.read_back(&stored.column, "t", &mut back).unwrap();
            assert_eq!(back.codes, encoded.codes, "{bits} bits");
        }
    }

    #[test]
    fn parameters_are_checked_against_the_dimension() {
        let mut p = IvfParams::new(&IvfPq, Metric::L2);
        assert!(IvfPq.check(&p, 16).is_err(), "num_sub_vectors is needed");
        p.num_sub_vectors = Some(5);
        let e = IvfPq.check(&p, 16).unwrap_err();
        assert!(e.contains("dividing the dimension 16"), "{e}");
        p.num_sub_vectors = Some(3);
        p.num_bits = 4;
        assert!(IvfPq.check(&p, 15).is_err(), "4 bits need an even count");
        p.num_sub_vectors = Some(4);
        assert!(IvfPq.check(&p, 16).is_ok());
        p.num_bits = 6;
        assert!(IvfPq.check(&p, 16).is_err());
    }
}
