//! Building IVF indices (IVF_FLAT, IVF_PQ, IVF_SQ) in pylance's layout (see `ivf`), from
//! a column's vectors and their row ids, in two passes over the column so that memory holds
//! a sample and the codes, not the vectors (`Sampler`, `train`, `Model::encode` per batch,
//! `Model::finish`):
//!
//! 1. k-means on a sample (`num_partitions x sample_rate` rows; unit vectors for cosine,
//!    unit centroids for dot) gives the partitions' centroids;
//! 2. every vector goes to its nearest centroid, and the rows are grouped by partition
//!    (row ids ascending within one);
//! 3. vectors are stored as they are (FLAT), as product-quantization codes of their residual
//!    from the centroid (PQ: a codebook per sub-vector trained on a sample; no residual for
//!    dot), or as 8-bit codes within the sample's value range (SQ).
//!
//! Null vectors and vectors holding NaN are not indexed (as in pylance).
use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, Float32Array, RecordBatch, UInt64Array, UInt8Array,
};
use arrow_schema::{DataType, Field, Schema};
use prost::Message;
use rayon::prelude::*;

use super::distance::Metric;
use super::kmeans::{self, Rng};
use crate::error::{Error, Result};
use crate::proto::index::{
    tensor, vector_index_details as details, Ivf, Tensor, VectorIndexDetails,
};

/// How vectors are stored in the partitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    Flat,
    Pq,
    Sq,
}

impl Storage {
    /// pylance's index type names this builder makes.
    pub fn from_index_type(name: &str) -> Option<Storage> {
        match name.to_ascii_uppercase().as_str() {
            "IVF_FLAT" => Some(Storage::Flat),
            "IVF_PQ" => Some(Storage::Pq),
            "IVF_SQ" => Some(Storage::Sq),
            _ => None,
        }
    }

    pub fn index_type(self) -> &'static str {
        match self {
            Storage::Flat => "IVF_FLAT",
            Storage::Pq => "IVF_PQ",
            Storage::Sq => "IVF_SQ",
        }
    }

    /// Rows per partition aimed at when the number of partitions is not given.
    fn target_partition_size(self) -> usize {
        match self {
            Storage::Flat => 4096,
            Storage::Pq | Storage::Sq => 8192,
        }
    }
}

/// What an IVF index is built with (pylance's `create_index` arguments).
#[derive(Clone, Debug)]
pub struct IvfParams {
    pub storage: Storage,
    pub metric: Metric,
    pub num_partitions: Option<usize>,
    pub target_partition_size: Option<usize>,
    pub num_sub_vectors: Option<usize>,
    pub num_bits: u32,
    pub sample_rate: usize,
    pub max_iters: usize,
    pub seed: u64,
}

/// One file of the index: its name, rows (with schema metadata) and global buffers.
pub struct BuiltFile {
    pub name: &'static str,
    pub batch: RecordBatch,
    pub global_buffers: Vec<Vec<u8>>,
}

/// A built index: its files and its manifest details (`VectorIndexDetails`).
pub struct Built {
    pub files: Vec<BuiltFile>,
    pub details: Vec<u8>,
}

fn tensor(values: &[f32], shape: Vec<u32>, element: &DataType) -> Tensor {
    let (data_type, data) = match element {
        DataType::Float16 => (
            tensor::DataType::Float16,
            values
                .iter()
                .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
                .collect(),
        ),
        DataType::Float64 => (
            tensor::DataType::Float64,
            values
                .iter()
                .flat_map(|&v| (v as f64).to_le_bytes())
                .collect(),
        ),
        _ => (
            tensor::DataType::Float32,
            values.iter().flat_map(|&v| v.to_le_bytes()).collect(),
        ),
    };
    Tensor {
        data_type: data_type as i32,
        shape,
        data,
    }
}

fn fixed_size_list(values: ArrayRef, dim: usize) -> Result<FixedSizeListArray> {
    let item = Arc::new(Field::new("item", values.data_type().clone(), true));
    Ok(FixedSizeListArray::try_new(item, dim as i32, values, None)?)
}

/// The f32 values of a batch of vectors (cast when float16/64), and their dimension.
fn f32_values(vectors: &FixedSizeListArray) -> Result<(Float32Array, usize)> {
    let dim = vectors.value_length() as usize;
    let start = vectors.offset() * dim;
    let values = vectors.values().slice(start, vectors.len() * dim);
    let values = arrow_cast::cast(&values, &DataType::Float32)?;
    Ok((
        values
            .as_any()
            .downcast_ref::<Float32Array>()
            .expect("cast to f32")
            .clone(),
        dim,
    ))
}

/// Calls `f(row, x)` for every vector of the batch to index (not null, no NaN), `x` as f32
/// values of unit length for cosine.
fn each_row(
    vectors: &FixedSizeListArray,
    metric: Metric,
    mut f: impl FnMut(usize, &[f32]),
) -> Result<()> {
    let (values, dim) = f32_values(vectors)?;
    let mut unit = vec![0f32; dim];
    for r in 0..vectors.len() {
        let x = &values.values()[r * dim..(r + 1) * dim];
        if vectors.is_null(r) || x.iter().any(|v| v.is_nan()) {
            continue;
        }
        match metric {
            Metric::Cosine => {
                let n = super::distance::dot(x, x).sqrt();
                unit.iter_mut()
                    .zip(x)
                    .for_each(|(u, v)| *u = if n > 0.0 { v / n } else { *v });
                f(r, &unit);
            }
            _ => f(r, x),
        }
    }
    Ok(())
}

/// A uniform sample of the vectors to index (reservoir sampling over the batches of a
/// scan), and their count: what the model is trained on.
pub struct Sampler {
    want: usize,
    seen: usize,
    dim: usize,
    rows: Vec<f32>,
    rng: Rng,
    metric: Metric,
}

impl Sampler {
    pub fn new(p: &IvfParams, dim: usize) -> Self {
        let parts = p.num_partitions.unwrap_or(4096);
        // PQ trains its codebooks on sample_rate x 2^bits rows, SQ takes its range from
        // sample_rate x 256 rows (as pylance's).
        let pq = match p.storage {
            Storage::Pq => p.sample_rate.saturating_mul(1 << p.num_bits),
            Storage::Sq => p.sample_rate.saturating_mul(256),
            Storage::Flat => 0,
        };
        Sampler {
            want: parts.saturating_mul(p.sample_rate.max(1)).max(pq).max(1),
            seen: 0,
            dim,
            rows: Vec::new(),
            rng: Rng::new(p.seed),
            metric: p.metric,
        }
    }

    pub fn add(&mut self, vectors: &FixedSizeListArray) -> Result<()> {
        if vectors.value_length() as usize != self.dim {
            return Err(Error::invalid("internal: vectors of another dimension"));
        }
        let (dim, want) = (self.dim, self.want);
        let (rows, seen, rng) = (&mut self.rows, &mut self.seen, &mut self.rng);
        each_row(vectors, self.metric, |_, x| {
            if rows.len() < want * dim {
                rows.extend_from_slice(x);
            } else {
                let j = rng.below(*seen + 1);
                if j < want {
                    rows[j * dim..(j + 1) * dim].copy_from_slice(x);
                }
            }
            *seen += 1;
        })
    }
}

/// How partitions' vectors are stored, trained.
pub(super) enum Quantizer {
    Flat,
    Pq { books: Vec<Vec<f32>>, m: usize },
    Sq { lo: f64, hi: f64 },
}

/// A trained index: centroids and quantizer; vectors are then encoded batch by batch.
pub struct Model {
    params: IvfParams,
    dim: usize,
    parts: usize,
    centroids: Vec<f32>,
    loss: f64,
    quantizer: Quantizer,
}

/// The encoded vectors of some batches: partition, row id and stored form of each.
#[derive(Default)]
pub struct Encoded {
    pub(super) partitions: Vec<u32>,
    pub(super) ids: Vec<u64>,
    /// PQ or SQ codes, one byte a sub-vector (PQ) or element (SQ).
    pub(super) codes: Vec<u8>,
    /// FLAT: the vectors (unit length for cosine).
    pub(super) values: Vec<f32>,
}

impl Encoded {
    pub fn append(&mut self, mut other: Encoded) {
        self.partitions.append(&mut other.partitions);
        self.ids.append(&mut other.ids);
        self.codes.append(&mut other.codes);
        self.values.append(&mut other.values);
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The rows as a batch (`partition`, `row_id`, and `codes` or `values` as fixed-size
    /// lists), to hand from the tasks of a build spread over workers to the one writing.
    pub fn into_batch(self) -> Result<RecordBatch> {
        let n = self.ids.len();
        let mut fields = vec![
            Field::new("partition", DataType::UInt32, false),
            Field::new("row_id", DataType::UInt64, false),
        ];
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(arrow_array::UInt32Array::from(self.partitions)),
            Arc::new(UInt64Array::from(self.ids)),
        ];
        let lists = [
            (
                "codes",
                self.codes.len(),
                Arc::new(UInt8Array::from(self.codes)) as ArrayRef,
            ),
            (
                "values",
                self.values.len(),
                Arc::new(Float32Array::from(self.values)) as ArrayRef,
            ),
        ];
        for (name, len, values) in lists {
            if let Some(width) = len.checked_div(n).filter(|&w| w > 0) {
                let list = fixed_size_list(values, width)?;
                fields.push(Field::new(name, list.data_type().clone(), false));
                columns.push(Arc::new(list));
            }
        }
        Ok(RecordBatch::try_new(
            Arc::new(Schema::new(fields)),
            columns,
        )?)
    }

    /// The rows of a batch `to_batch` made (read from file `shown`).
    pub fn from_batch(batch: &RecordBatch, shown: &str) -> Result<Encoded> {
        let c = crate::index::FileColumns { batch, shown };
        let mut out = Encoded {
            partitions: c
                .primitive::<arrow_array::types::UInt32Type>("partition")?
                .values()
                .to_vec(),
            ids: c
                .primitive::<arrow_array::types::UInt64Type>("row_id")?
                .values()
                .to_vec(),
            ..Default::default()
        };
        for name in ["codes", "values"] {
            let Some(list) = batch.column_by_name(name) else {
                continue;
            };
            let list = list
                .as_any()
                .downcast_ref::<FixedSizeListArray>()
                .ok_or_else(|| {
                    Error::corrupt(shown, format!("'{name}' is not a list of fixed size"))
                })?;
            let width = list.value_length() as usize;
            let values = list
                .values()
                .slice(list.offset() * width, list.len() * width);
            match name {
                "codes" => out.codes.extend_from_slice(
                    values
                        .as_any()
                        .downcast_ref::<UInt8Array>()
                        .ok_or_else(|| Error::corrupt(shown, "codes are not bytes"))?
                        .values(),
                ),
                _ => out.values.extend_from_slice(
                    values
                        .as_any()
                        .downcast_ref::<Float32Array>()
                        .ok_or_else(|| Error::corrupt(shown, "values are not float32"))?
                        .values(),
                ),
            }
        }
        Ok(out)
    }

    /// Every row's id replaced by `map(id)`, and the rows it maps to None left out (a
    /// compaction's new addresses; deleted rows).
    pub fn remap(&mut self, map: impl Fn(u64) -> Option<u64>) {
        let n = self.ids.len();
        let code_width = self.codes.len().checked_div(n).unwrap_or(0);
        let value_width = self.values.len().checked_div(n).unwrap_or(0);
        let mut kept = 0;
        for r in 0..n {
            let Some(to) = map(self.ids[r]) else {
                continue;
            };
            self.ids[kept] = to;
            self.partitions[kept] = self.partitions[r];
            self.codes
                .copy_within(r * code_width..(r + 1) * code_width, kept * code_width);
            self.values
                .copy_within(r * value_width..(r + 1) * value_width, kept * value_width);
            kept += 1;
        }
        self.ids.truncate(kept);
        self.partitions.truncate(kept);
        self.codes.truncate(kept * code_width);
        self.values.truncate(kept * value_width);
    }
}

/// Train the model on `sample` (`n` vectors in all), on the CPU pool.
pub fn train(sample: Sampler, p: &IvfParams) -> Result<Model> {
    crate::threads::install(|| train_here(sample, p))
}

fn train_here(sample: Sampler, p: &IvfParams) -> Result<Model> {
    let (dim, n) = (sample.dim, sample.seen);
    if n == 0 {
        return Err(Error::invalid(
            "no vectors to index (every one is null or NaN)",
        ));
    }
    let target = p
        .target_partition_size
        .unwrap_or_else(|| p.storage.target_partition_size())
        .max(1);
    let parts = p
        .num_partitions
        .unwrap_or((n / target).clamp(1, 4096))
        .max(1);
    if parts > n {
        return Err(Error::invalid(format!(
            "{parts} partitions for {n} vectors: an IVF index needs at least one vector per partition"
        )));
    }
    let mut rng = Rng::new(p.seed ^ 0x5eed);
    let spherical = p.metric == Metric::Dot;
    let rows = sample.rows.len() / dim;
    // The partitions, from `parts x sample_rate` of the sampled rows.
    let want = parts.saturating_mul(p.sample_rate.max(1));
    // The whole sample when it is no larger than wanted (no copy: it is the largest
    // buffer of the build).
    let ivf_sample: std::borrow::Cow<[f32]> = match want >= rows {
        true => std::borrow::Cow::Borrowed(&sample.rows),
        false => {
            let mut picked = Vec::with_capacity(want * dim);
            for r in rng.sample(rows, want) {
                picked.extend_from_slice(&sample.rows[r * dim..(r + 1) * dim]);
            }
            std::borrow::Cow::Owned(picked)
        }
    };
    // k-means can settle in a poor local optimum (two centroids sharing a cluster);
    // where training is cheap (small tables), the best of three starts is kept.
    let starts = match (ivf_sample.len() / dim.max(1)) * parts * dim <= 1 << 26 {
        true => 3,
        false => 1,
    };
    let ivf = (0..starts)
        .map(|_| kmeans::train(&ivf_sample, dim, parts, p.max_iters, spherical, &mut rng))
        .min_by(|a, b| a.loss.total_cmp(&b.loss))
        .expect("at least one start");
    drop(ivf_sample);
    let quantizer = match p.storage {
        Storage::Flat => Quantizer::Flat,
        Storage::Sq => {
            let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
            for &v in &sample.rows {
                lo = lo.min(v as f64);
                hi = hi.max(v as f64);
            }
            Quantizer::Sq { lo, hi }
        }
        Storage::Pq => {
            let m = p.num_sub_vectors.unwrap_or(0);
            if m == 0 || !dim.is_multiple_of(m) {
                return Err(Error::invalid(format!(
                    "IVF_PQ needs num_sub_vectors dividing the dimension {dim}, got {m}"
                )));
            }
            if !(p.num_bits == 8 || (p.num_bits == 4 && m.is_multiple_of(2))) {
                return Err(Error::invalid(format!(
                    "IVF_PQ codes are 8 bits, or 4 with an even num_sub_vectors; got {} bits",
                    p.num_bits
                )));
            }
            let codes_per = 1usize << p.num_bits;
            let sub = dim / m;
            let pq_rows = rng.sample(rows, p.sample_rate.max(1) * codes_per);
            // Each row's partition: its codebooks learn the residual from that centroid
            // (the row itself for dot), one sub-vector's slice at a time.
            let near = kmeans::Nearest::new(&ivf.centroids, dim, spherical);
            let centre: Vec<u32> = match p.metric {
                Metric::Dot => vec![],
                _ => pq_rows
                    .par_chunks(1024)
                    .flat_map_iter(|chunk| {
                        let mut rows = Vec::with_capacity(chunk.len() * dim);
                        for &r in chunk {
                            rows.extend_from_slice(&sample.rows[r * dim..(r + 1) * dim]);
                        }
                        let mut found = Vec::with_capacity(chunk.len());
                        near.find_rows(&rows, &mut found);
                        found.into_iter().map(|(c, _)| c)
                    })
                    .collect(),
            };
            let books = (0..m)
                .into_par_iter()
                .map(|j| {
                    let mut slice: Vec<f32> = Vec::with_capacity(pq_rows.len() * sub);
                    for (i, &r) in pq_rows.iter().enumerate() {
                        let x = &sample.rows[r * dim + j * sub..r * dim + (j + 1) * sub];
                        match centre.get(i) {
                            Some(&c) => {
                                let c = &ivf.centroids[c as usize * dim + j * sub..][..sub];
                                slice.extend(x.iter().zip(c).map(|(v, c)| v - c));
                            }
                            None => slice.extend_from_slice(x),
                        }
                    }
                    let mut rng = Rng::new(p.seed ^ (j as u64 + 1).wrapping_mul(0x9E37_79B9));
                    kmeans::train(&slice, sub, codes_per, p.max_iters, false, &mut rng).centroids
                })
                .collect();
            Quantizer::Pq { books, m }
        }
    };
    Ok(Model {
        params: p.clone(),
        dim,
        parts,
        centroids: ivf.centroids,
        loss: ivf.loss,
        quantizer,
    })
}

impl Model {
    /// A model trained before (an existing segment's), to encode more rows with or to
    /// write its rows again.
    pub(super) fn reused(
        params: IvfParams,
        dim: usize,
        centroids: Vec<f32>,
        loss: f64,
        quantizer: Quantizer,
    ) -> Model {
        Model {
            parts: centroids.len() / dim.max(1),
            params,
            dim,
            centroids,
            loss,
            quantizer,
        }
    }

    pub fn params(&self) -> &IvfParams {
        &self.params
    }

    /// The same model, its details recording `p`'s training settings (a reused model
    /// does not know them).
    pub fn with_settings_of(mut self, p: &IvfParams) -> Model {
        self.params.sample_rate = p.sample_rate;
        self.params.max_iters = p.max_iters;
        self.params.target_partition_size = p.target_partition_size;
        self
    }

    /// The partition and stored form of every vector of a batch to index.
    pub fn encode(&self, vectors: &FixedSizeListArray, row_ids: &UInt64Array) -> Result<Encoded> {
        crate::threads::install(|| self.encode_here(vectors, row_ids))
    }

    fn encode_here(&self, vectors: &FixedSizeListArray, row_ids: &UInt64Array) -> Result<Encoded> {
        let dim = self.dim;
        let spherical = self.params.metric == Metric::Dot;
        let mut out = Encoded::default();
        let mut flat: Vec<f32> = Vec::with_capacity(vectors.len() * dim);
        each_row(vectors, self.params.metric, |r, x| {
            out.ids.push(row_ids.value(r));
            flat.extend_from_slice(x);
        })?;
        // Partitions: rows in blocks against every centroid (the bulk of the work).
        let near = kmeans::Nearest::new(&self.centroids, dim, spherical);
        out.partitions = near.find_all(&flat).into_iter().map(|(c, _)| c).collect();
        let per_row = match &self.quantizer {
            Quantizer::Flat => 0,
            Quantizer::Sq { .. } => dim,
            Quantizer::Pq { m, .. } => *m,
        };
        let mut codes = vec![0u8; out.ids.len() * per_row];
        match &self.quantizer {
            Quantizer::Flat => {}
            Quantizer::Sq { lo, hi } => {
                let span = hi - lo;
                for (code, &v) in codes.iter_mut().zip(&flat) {
                    *code = match span > 0.0 {
                        true => ((v as f64 - lo) * 255.0 / span).floor().clamp(0.0, 255.0) as u8,
                        false => 0,
                    };
                }
            }
            Quantizer::Pq { books, m } => {
                let sub = dim / m;
                let finders: Vec<kmeans::Nearest> = books
                    .iter()
                    .map(|b| kmeans::Nearest::new(b, sub, false))
                    .collect();
                // Each sub-vector's code: the nearest entry of its codebook to the row's
                // residual from its partition's centroid (the row itself for dot).
                codes
                    .par_chunks_mut(*m)
                    .zip(flat.par_chunks(dim))
                    .zip(out.partitions.par_iter())
                    .for_each_init(
                        || (Vec::new(), vec![0f32; dim]),
                        |(scores, residual), ((code, x), &c)| {
                            let centroid =
                                &self.centroids[c as usize * dim..(c as usize + 1) * dim];
                            for ((r, v), c) in residual.iter_mut().zip(x).zip(centroid) {
                                *r = match self.params.metric {
                                    Metric::Dot => *v,
                                    _ => v - c,
                                };
                            }
                            for (j, b) in code.iter_mut().enumerate() {
                                *b = finders[j].find(&residual[j * sub..(j + 1) * sub], scores).0
                                    as u8;
                            }
                        },
                    );
            }
        }
        out.codes = codes;
        if matches!(self.quantizer, Quantizer::Flat) {
            out.values = flat;
        }
        Ok(out)
    }

    /// The index's files from every vector encoded, for a column of `element` vectors.
    pub fn finish(self, enc: Encoded, element: &DataType) -> Result<Built> {
        let (dim, parts, p) = (self.dim, self.parts, &self.params);
        let n = enc.ids.len();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&r| (enc.partitions[r], enc.ids[r]));
        let mut lengths = vec![0u32; parts];
        for &c in &enc.partitions {
            lengths[c as usize] += 1;
        }
        let mut offsets = Vec::with_capacity(parts);
        let mut at = 0u64;
        for &l in &lengths {
            offsets.push(at);
            at += l as u64;
        }
        let sorted_ids = UInt64Array::from(order.iter().map(|&r| enc.ids[r]).collect::<Vec<_>>());
        let mut global_buffers = vec![Ivf {
            offsets: offsets.clone(),
            lengths: lengths.clone(),
            ..Default::default()
        }
        .encode_to_vec()];
        let (column, stored, storage_metadata, compression) = match &self.quantizer {
            Quantizer::Flat => {
                let mut values = Vec::with_capacity(n * dim);
                for &r in &order {
                    values.extend_from_slice(&enc.values[r * dim..(r + 1) * dim]);
                }
                let values: ArrayRef = Arc::new(Float32Array::from(values));
                (
                    "flat",
                    fixed_size_list(arrow_cast::cast(&values, element)?, dim)?,
                    serde_json::json!({ "dim": dim }),
                    details::Compression::Flat(details::FlatCompression {}),
                )
            }
            Quantizer::Sq { lo, hi } => {
                let mut codes = Vec::with_capacity(n * dim);
                for &r in &order {
                    codes.extend_from_slice(&enc.codes[r * dim..(r + 1) * dim]);
                }
                (
                    "__sq_code",
                    fixed_size_list(Arc::new(UInt8Array::from(codes)), dim)?,
                    serde_json::json!({ "dim": dim, "num_bits": 8, "bounds": { "start": lo, "end": hi } }),
                    details::Compression::Sq(details::ScalarQuantization { num_bits: 8 }),
                )
            }
            Quantizer::Pq { books, m } => {
                let m = *m;
                let codes_per = 1usize << p.num_bits;
                let per_row = if p.num_bits == 4 { m / 2 } else { m };
                // Per partition, sub-vector by sub-vector (pylance's transposed layout).
                let mut bytes = vec![0u8; n * per_row];
                let mut i_in = vec![0usize; parts];
                for &r in &order {
                    let c = enc.partitions[r] as usize;
                    let (o, len, i) = (offsets[c] as usize, lengths[c] as usize, i_in[c]);
                    i_in[c] += 1;
                    let code = &enc.codes[r * m..(r + 1) * m];
                    for b in 0..per_row {
                        bytes[o * per_row + b * len + i] = match p.num_bits {
                            4 => code[2 * b] | (code[2 * b + 1] << 4),
                            _ => code[b],
                        };
                    }
                }
                global_buffers.push(
                    tensor(&books.concat(), vec![codes_per as u32, dim as u32], element)
                        .encode_to_vec(),
                );
                (
                    "__pq_code",
                    fixed_size_list(Arc::new(UInt8Array::from(bytes)), per_row)?,
                    serde_json::json!({
                        "codebook_position": 2,
                        "nbits": p.num_bits,
                        "num_sub_vectors": m,
                        "dimension": dim,
                        "codebook_tensor": [],
                        "transposed": true,
                    }),
                    details::Compression::Pq(details::ProductQuantization {
                        num_bits: p.num_bits,
                        num_sub_vectors: m as u32,
                    }),
                )
            }
        };
        // The two files.
        let metric = p.metric.name();
        let aux_schema = Schema::new_with_metadata(
            vec![
                Field::new("_rowid", DataType::UInt64, false),
                Field::new(column, stored.data_type().clone(), false),
            ],
            HashMap::from([
                ("distance_type".to_string(), metric.to_string()),
                ("lance:ivf".to_string(), "1".to_string()),
                (
                    "storage_metadata".to_string(),
                    serde_json::json!([storage_metadata.to_string()]).to_string(),
                ),
            ]),
        );
        let aux = RecordBatch::try_new(
            Arc::new(aux_schema),
            vec![Arc::new(sorted_ids), Arc::new(stored)],
        )?;
        let index_schema = Schema::new_with_metadata(
            vec![Field::new("__flat_marker", DataType::UInt64, false)],
            HashMap::from([
                (
                    "lance:index".to_string(),
                    serde_json::json!({ "type": p.storage.index_type(), "distance_type": metric })
                        .to_string(),
                ),
                ("lance:ivf".to_string(), "1".to_string()),
                (
                    "lance:flat".to_string(),
                    serde_json::json!(vec![""; parts]).to_string(),
                ),
            ]),
        );
        let index = RecordBatch::new_empty(Arc::new(index_schema));
        let model = Ivf {
            offsets: vec![0; parts],
            lengths: vec![0; parts],
            centroids_tensor: Some(tensor(
                &self.centroids,
                vec![parts as u32, dim as u32],
                element,
            )),
            loss: Some(self.loss),
            ..Default::default()
        };
        let mut hints = HashMap::from([
            ("lance.ivf.max_iters".to_string(), p.max_iters.to_string()),
            (
                "lance.ivf.sample_rate".to_string(),
                p.sample_rate.to_string(),
            ),
            ("lance.skip_transpose".to_string(), "false".to_string()),
        ]);
        match p.storage {
            Storage::Pq => {
                hints.insert("lance.pq.max_iters".into(), p.max_iters.to_string());
                hints.insert("lance.pq.sample_rate".into(), p.sample_rate.to_string());
            }
            Storage::Sq => {
                hints.insert("lance.sq.sample_rate".into(), p.sample_rate.to_string());
            }
            Storage::Flat => {}
        }
        let details = VectorIndexDetails {
            metric_type: match p.metric {
                Metric::L2 => 0,
                Metric::Cosine => 1,
                Metric::Dot => 2,
                Metric::Hamming => 3,
            },
            target_partition_size: p.target_partition_size.unwrap_or(0) as u64,
            hnsw_index_config: None,
            compression: Some(compression),
            runtime_hints: hints,
        };
        Ok(Built {
            files: vec![
                BuiltFile {
                    name: "index.idx",
                    batch: index,
                    global_buffers: vec![model.encode_to_vec()],
                },
                BuiltFile {
                    name: "auxiliary.idx",
                    batch: aux,
                    global_buffers,
                },
            ],
            details: details.encode_to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded() -> Encoded {
        Encoded {
            partitions: vec![0, 1, 1],
            ids: vec![10, 11, 12],
            codes: vec![1, 2, 3, 4, 5, 6],
            values: vec![],
        }
    }

    #[test]
    fn remap_moves_ids_and_drops_rows_gone_with_their_codes() {
        let mut e = encoded();
        e.remap(|id| (id != 11).then_some(id + 100));
        assert_eq!(e.ids, vec![110, 112]);
        assert_eq!(e.partitions, vec![0, 1]);
        assert_eq!(e.codes, vec![1, 2, 5, 6]);
    }

    #[test]
    fn a_batch_holds_the_rows_as_they_were() {
        let back = Encoded::from_batch(&encoded().into_batch().unwrap(), "part").unwrap();
        let e = encoded();
        assert_eq!(
            (back.ids, back.partitions, back.codes, back.values),
            (e.ids, e.partitions, e.codes, e.values)
        );
        let empty = Encoded::default().into_batch().unwrap();
        assert_eq!(empty.num_columns(), 2);
        assert!(Encoded::from_batch(&empty, "part").unwrap().is_empty());
    }
}
