//! Building IVF indices (IVF_FLAT, IVF_PQ, IVF_SQ) in pylance's layout (see `ivf`), from
//! a column's vectors and their row ids:
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

/// The vectors to index as f32 rows (unit length for cosine), their row ids, and the
/// column's element type; null and NaN vectors left out.
fn rows_to_index(
    vectors: &FixedSizeListArray,
    row_ids: &UInt64Array,
    metric: Metric,
) -> Result<(Vec<f32>, Vec<u64>, DataType, usize)> {
    let dim = vectors.value_length() as usize;
    let element = vectors.value_type();
    let values = arrow_cast::cast(vectors.values(), &DataType::Float32)?;
    let values = values
        .as_any()
        .downcast_ref::<Float32Array>()
        .expect("cast to f32")
        .values();
    let start = vectors.offset() * dim;
    let mut data = Vec::with_capacity(vectors.len() * dim);
    let mut ids = Vec::with_capacity(vectors.len());
    for r in 0..vectors.len() {
        if vectors.is_null(r) {
            continue;
        }
        let x = &values[start + r * dim..start + (r + 1) * dim];
        if x.iter().any(|v| v.is_nan()) {
            continue;
        }
        let at = data.len();
        data.extend_from_slice(x);
        if metric == Metric::Cosine {
            let n = super::distance::dot(x, x).sqrt();
            if n > 0.0 {
                data[at..].iter_mut().for_each(|v| *v /= n);
            }
        }
        ids.push(row_ids.value(r));
    }
    Ok((data, ids, element, dim))
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

/// Build the index over `vectors` (one per row id).
pub fn build(vectors: &FixedSizeListArray, row_ids: &UInt64Array, p: &IvfParams) -> Result<Built> {
    let (mut data, ids, element, dim) = rows_to_index(vectors, row_ids, p.metric)?;
    let n = ids.len();
    if n == 0 {
        return Err(Error::invalid(
            "no vectors to index (every one is null or NaN)",
        ));
    }
    if !matches!(
        element,
        DataType::Float16 | DataType::Float32 | DataType::Float64
    ) {
        return Err(Error::unsupported(
            "",
            format!(
                "building an {} index on {element} vectors",
                p.storage.index_type()
            ),
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
    let mut rng = Rng::new(p.seed);
    let spherical = p.metric == Metric::Dot;

    // 1. Partitions from a sample.
    let sample_rows = rng.sample(n, parts.saturating_mul(p.sample_rate.max(1)));
    let mut sample = Vec::with_capacity(sample_rows.len() * dim);
    for &r in &sample_rows {
        sample.extend_from_slice(&data[r * dim..(r + 1) * dim]);
    }
    let ivf = kmeans::train(&sample, dim, parts, p.max_iters, spherical, &mut rng);
    drop(sample);

    // 2. Every row to its partition; rows grouped by partition, ids ascending within one.
    let assigned = kmeans::assign(&data, &ivf.centroids, dim, spherical);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&r| (assigned[r].0, ids[r]));
    let mut lengths = vec![0u32; parts];
    for &(c, _) in &assigned {
        lengths[c as usize] += 1;
    }
    let mut offsets = Vec::with_capacity(parts);
    let mut at = 0u64;
    for &l in &lengths {
        offsets.push(at);
        at += l as u64;
    }
    let sorted_ids = UInt64Array::from(order.iter().map(|&r| ids[r]).collect::<Vec<_>>());

    // 3. The stored vectors.
    let mut global_buffers = vec![Ivf {
        offsets: offsets.clone(),
        lengths: lengths.clone(),
        ..Default::default()
    }
    .encode_to_vec()];
    let (column, stored, storage_metadata, compression) = match p.storage {
        Storage::Flat => {
            let mut values = Vec::with_capacity(n * dim);
            for &r in &order {
                values.extend_from_slice(&data[r * dim..(r + 1) * dim]);
            }
            let values = arrow_cast::cast(
                &(Arc::new(Float32Array::from(values)) as ArrayRef),
                &element,
            )?;
            (
                "flat",
                fixed_size_list(values, dim)?,
                serde_json::json!({ "dim": dim }),
                details::Compression::Flat(details::FlatCompression {}),
            )
        }
        Storage::Sq => {
            let mut lo = f64::INFINITY;
            let mut hi = f64::NEG_INFINITY;
            for &r in &sample_rows {
                for &v in &data[r * dim..(r + 1) * dim] {
                    lo = lo.min(v as f64);
                    hi = hi.max(v as f64);
                }
            }
            let span = hi - lo;
            let mut codes = Vec::with_capacity(n * dim);
            for &r in &order {
                codes.extend(
                    data[r * dim..(r + 1) * dim]
                        .iter()
                        .map(|&v| match span > 0.0 {
                            true => {
                                ((v as f64 - lo) * 255.0 / span).floor().clamp(0.0, 255.0) as u8
                            }
                            false => 0,
                        }),
                );
            }
            (
                "__sq_code",
                fixed_size_list(Arc::new(UInt8Array::from(codes)), dim)?,
                serde_json::json!({ "dim": dim, "num_bits": 8, "bounds": { "start": lo, "end": hi } }),
                details::Compression::Sq(details::ScalarQuantization { num_bits: 8 }),
            )
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
            // Residuals from the partition's centroid (not for dot), in place.
            if p.metric != Metric::Dot {
                data.par_chunks_mut(dim)
                    .zip(assigned.par_iter())
                    .for_each(|(x, &(c, _))| {
                        let centroid = &ivf.centroids[c as usize * dim..(c as usize + 1) * dim];
                        x.iter_mut().zip(centroid).for_each(|(v, c)| *v -= c);
                    });
            }
            let codes_per = 1usize << p.num_bits;
            let sub = dim / m;
            let train_rows = rng.sample(n, p.sample_rate.max(1) * codes_per);
            // Each sub-vector's codebook, trained on its slice of the sample.
            let books: Vec<Vec<f32>> = (0..m)
                .into_par_iter()
                .map(|j| {
                    let mut slice = Vec::with_capacity(train_rows.len() * sub);
                    for &r in &train_rows {
                        slice.extend_from_slice(&data[r * dim + j * sub..r * dim + (j + 1) * sub]);
                    }
                    let mut rng = Rng::new(p.seed ^ (j as u64 + 1).wrapping_mul(0x9E37_79B9));
                    kmeans::train(&slice, sub, codes_per, p.max_iters, false, &mut rng).centroids
                })
                .collect();
            // Codes, row by row, then laid out sub-vector by sub-vector per partition.
            let finders: Vec<kmeans::Nearest> = books
                .iter()
                .map(|b| kmeans::Nearest::new(b, sub, false))
                .collect();
            let codes: Vec<Vec<u8>> = order
                .par_iter()
                .map_init(Vec::new, |scores, &r| {
                    (0..m)
                        .map(|j| {
                            let x = &data[r * dim + j * sub..r * dim + (j + 1) * sub];
                            finders[j].find(x, scores).0 as u8
                        })
                        .collect()
                })
                .collect();
            let per_row = if p.num_bits == 4 { m / 2 } else { m };
            let mut bytes = vec![0u8; n * per_row];
            for (&o, &len) in offsets.iter().zip(&lengths) {
                let (o, len) = (o as usize, len as usize);
                for i in 0..len {
                    let code = &codes[o + i];
                    for b in 0..per_row {
                        let byte = match p.num_bits {
                            4 => code[2 * b] | (code[2 * b + 1] << 4),
                            _ => code[b],
                        };
                        bytes[o * per_row + b * len + i] = byte;
                    }
                }
            }
            let codebook: Vec<f32> = books.concat();
            global_buffers.push(
                tensor(&codebook, vec![codes_per as u32, dim as u32], &element).encode_to_vec(),
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
            &ivf.centroids,
            vec![parts as u32, dim as u32],
            &element,
        )),
        loss: Some(ivf.loss),
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
