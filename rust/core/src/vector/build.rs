//! Building IVF indices (IVF_FLAT, IVF_PQ, IVF_SQ) in pylance's layout (see `ivf`), from
//! a column's vectors and their row ids, in two passes over the column so that memory holds
//! a sample and the codes, not the vectors (`Sampler`, `train`, `Model::encode` per batch,
//! `Model::finish`):
//!
//! 1. k-means on a sample (`num_partitions x sample_rate` rows; unit vectors for cosine,
//!    unit centroids for dot) gives the partitions' centroids;
//! 2. every vector goes to its nearest centroid, and the rows are grouped by partition
//!    (row ids ascending within one);
//! 3. each vector is stored as its kind stores it (`VectorIndexKind`, `Quantizer`: its
//!    quantizer trained on the same sample, in its own file).
//!
//! Null vectors and vectors holding NaN are not indexed (as in pylance).
use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Array, FixedSizeListArray, Float32Array, RecordBatch, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use prost::Message;

use super::distance::Metric;
use super::encoded::Encoded;
use super::kind::{IvfParams, Layout, Quantizer};
use super::kmeans::{self, Rng};
use super::tensor::tensor;
use crate::error::{Error, Result};
use crate::index::IndexFileData;
use crate::proto::index::{Ivf, VectorIndexDetails};

/// A built index: its files and its manifest details (`VectorIndexDetails`).
pub struct Built {
    pub files: Vec<IndexFileData>,
    pub details: Vec<u8>,
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
        // The partitions and the kind's quantizer are trained on the same sample.
        let quantizer = p.kind.sample_size(p);
        Sampler {
            want: parts
                .saturating_mul(p.sample_rate.max(1))
                .max(quantizer)
                .max(1),
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

/// A trained index: centroids and quantizer; vectors are then encoded batch by batch.
pub struct Model {
    params: IvfParams,
    dim: usize,
    parts: usize,
    centroids: Vec<f32>,
    loss: f64,
    quantizer: Arc<dyn Quantizer>,
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
        .unwrap_or_else(|| p.kind.target_partition_size())
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
    let quantizer = p
        .kind
        .train(&sample.rows, dim, &ivf.centroids, p, &mut rng)?;
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
        quantizer: Arc<dyn Quantizer>,
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
        out.codes = self.quantizer.encode(
            &flat,
            dim,
            &out.partitions,
            &self.centroids,
            self.params.metric,
        );
        if self.quantizer.code_width(dim) == 0 {
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
        let layout = Layout {
            order: &order,
            partitions: &enc.partitions,
            offsets: &offsets,
            lengths: &lengths,
        };
        let stored = self.quantizer.stored(&enc, dim, &layout, element)?;
        let column = p.kind.stored_column();
        global_buffers.extend(stored.buffers);
        // The two files.
        let metric = p.metric.name();
        let aux_schema = Schema::new_with_metadata(
            vec![
                Field::new("_rowid", DataType::UInt64, false),
                Field::new(column, stored.column.data_type().clone(), false),
            ],
            HashMap::from([
                ("distance_type".to_string(), metric.to_string()),
                ("lance:ivf".to_string(), "1".to_string()),
                (
                    "storage_metadata".to_string(),
                    serde_json::json!([stored.metadata.to_string()]).to_string(),
                ),
            ]),
        );
        let aux = RecordBatch::try_new(
            Arc::new(aux_schema),
            vec![Arc::new(sorted_ids), Arc::new(stored.column)],
        )?;
        let index_schema = Schema::new_with_metadata(
            vec![Field::new("__flat_marker", DataType::UInt64, false)],
            HashMap::from([
                (
                    "lance:index".to_string(),
                    serde_json::json!({ "type": p.kind.name(), "distance_type": metric })
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
        hints.extend(
            p.kind
                .runtime_hints(p)
                .into_iter()
                .map(|(k, v)| (k.to_string(), v)),
        );
        let details = VectorIndexDetails {
            metric_type: match p.metric {
                Metric::L2 => 0,
                Metric::Cosine => 1,
                Metric::Dot => 2,
                Metric::Hamming => 3,
            },
            target_partition_size: p.target_partition_size.unwrap_or(0) as u64,
            hnsw_index_config: None,
            compression: Some(stored.compression),
            runtime_hints: hints,
        };
        Ok(Built {
            files: vec![
                IndexFileData::with_buffer("index.idx", index, model.encode_to_vec()),
                IndexFileData {
                    global_buffers,
                    ..IndexFileData::new("auxiliary.idx", aux)
                },
            ],
            details: details.encode_to_vec(),
        })
    }
}
