//! IVF vector indices as pylance writes them (IVF_FLAT, IVF_PQ, IVF_SQ, and the HNSW
//! variants, whose partitions are read here without their graphs): two Lance files under
//! `_indices/<uuid>/`:
//!
//! - `index.idx`: schema metadata `lance:index` (`{"type", "distance_type"}`) and
//!   `lance:ivf`, the global buffer holding the `IVF` message with the centroids;
//! - `auxiliary.idx`: one row per indexed vector (`_rowid` and the stored vector: `flat`,
//!   `__pq_code` or `__sq_code`), grouped by partition at the row offsets and counts of its
//!   own `IVF` message; `storage_metadata` says how vectors are stored (PQ codebook in a
//!   global buffer, SQ bounds).
//!
//! A search ranks the partitions by their centroid's distance to the query and measures
//! every stored vector of the nearest few (exhaustively within a partition, so recall is
//! at least a graph search's).
use std::sync::Arc;

use arrow_array::{Array, FixedSizeListArray, UInt8Array};
use prost::Message;

use super::distance::{self, Metric, Query};
use super::topk::{Neighbour, TopK};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::proto::index::{tensor, Ivf as IvfProto, Tensor};
use crate::session::IndexCacheRef;
use crate::table::index_segments::IndexSegment;

const INDEX_FILE: &str = "index.idx";
const AUX_FILE: &str = "auxiliary.idx";

/// How the auxiliary file stores each vector.
#[derive(Debug)]
pub(super) enum Stored {
    /// As-is (L2-normalized for cosine).
    Flat,
    /// Product quantization: `m` sub-vectors, a code of `bits` bits each; the codebook is
    /// `[m][2^bits][dim/m]`; codes of a partition are stored sub-vector by sub-vector
    /// (`transposed`) or vector by vector.
    Pq {
        m: usize,
        bits: u32,
        codebook: Vec<f32>,
        transposed: bool,
    },
    /// Scalar quantization of every element to 8 bits within one global range.
    Sq { start: f64, end: f64 },
}

/// One IVF index segment, its model in memory; partitions read on demand (and kept).
pub struct Ivf {
    dir: String,
    pub(super) shown: String,
    pub kind: String,
    pub metric: Metric,
    pub dim: usize,
    /// Row-major, `partitions x dim`, as f32 (the element type's values).
    pub(super) centroids: Vec<f32>,
    /// The k-means loss the centroids were trained to, when recorded.
    pub(super) loss: Option<f64>,
    /// Row offset and count of each partition in the auxiliary file.
    offsets: Vec<u64>,
    pub(super) lengths: Vec<u64>,
    pub(super) stored: Stored,
    aux: Arc<Dataset>,
    /// Where partitions read are kept: the session the model was loaded in.
    cache: IndexCacheRef,
}

/// A partition's rows: their row ids and stored vectors (fixed-size lists).
pub(super) struct Partition {
    pub(super) row_ids: Vec<u64>,
    pub(super) vectors: FixedSizeListArray,
}

fn tensor_values(t: &Tensor, shown: &str, what: &str) -> Result<Vec<f32>> {
    let d = &t.data;
    let bad = || {
        Error::corrupt(
            shown,
            format!("{what}: {} bytes do not fit its type", d.len()),
        )
    };
    Ok(match tensor::DataType::try_from(t.data_type) {
        Ok(tensor::DataType::Float32) if d.len().is_multiple_of(4) => d
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
            .collect(),
        Ok(tensor::DataType::Float16) if d.len().is_multiple_of(2) => d
            .chunks_exact(2)
            .map(|b| half::f16::from_le_bytes(b.try_into().expect("2 bytes")).to_f32())
            .collect(),
        Ok(tensor::DataType::Float64) if d.len().is_multiple_of(8) => d
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")) as f32)
            .collect(),
        Ok(tensor::DataType::Uint8) => d.iter().map(|&b| b as f32).collect(),
        Ok(tensor::DataType::Float32 | tensor::DataType::Float16 | tensor::DataType::Float64) => {
            return Err(bad())
        }
        _ => {
            return Err(Error::unsupported(
                shown,
                format!("{what} of tensor type {}", t.data_type),
            ))
        }
    })
}

/// The `IVF` message in the global buffer that schema metadata `lance:ivf` names.
async fn ivf_message(file: &Dataset, shown: &str) -> Result<IvfProto> {
    let k = file
        .arrow_schema
        .metadata()
        .get("lance:ivf")
        .ok_or_else(|| Error::corrupt(shown, "no 'lance:ivf' in the schema metadata"))?;
    let k: usize = k
        .parse()
        .map_err(|_| Error::corrupt(shown, format!("lance:ivf is '{k}', not a number")))?;
    let reader = file.open_file(&file.fragments()[0].files[0], None).await?;
    let bytes = reader
        .global_buffer(k)
        .await
        .map_err(|e| e.in_file(shown))?;
    IvfProto::decode(bytes).map_err(|e| Error::corrupt(shown, format!("the IVF message: {e}")))
}

fn json(shown: &str, key: &str, text: &str) -> Result<serde_json::Value> {
    serde_json::from_str(text)
        .map_err(|e| Error::corrupt(shown, format!("'{key}' is not JSON: {e}")))
}

impl Ivf {
    /// The segment's model (kept in the session: index files never change).
    pub async fn load(ds: &Dataset, segment: &IndexSegment) -> Result<Arc<Ivf>> {
        let dir = crate::index::segment_dir(ds, segment)?;
        let key = format!("{dir}#ivf");
        ds.session()
            .index
            .get_or_load(key, || Self::read(ds, dir.clone()))
            .await
    }

    /// The model of the index files in `dir` (an uncommitted segment: a build's staging).
    pub async fn load_dir(ds: &Dataset, dir: String) -> Result<Arc<Ivf>> {
        let key = format!("{dir}#ivf");
        ds.session()
            .index
            .get_or_load(key, || Self::read(ds, dir.clone()))
            .await
    }

    async fn read(ds: &Dataset, dir: String) -> Result<(Ivf, usize)> {
        let options = ds.storage_options();
        let shown = format!("{dir}/{INDEX_FILE}");
        let index = crate::file_table::open(&dir, INDEX_FILE, options).await?;
        let meta = index.arrow_schema.metadata().clone();
        let about = meta
            .get("lance:index")
            .ok_or_else(|| Error::unsupported(&shown, "no 'lance:index' metadata: not an IVF index this reader knows (a legacy single-file index?)"))?;
        let about = json(&shown, "lance:index", about)?;
        let kind = about["type"].as_str().unwrap_or_default().to_string();
        let metric = Metric::parse(about["distance_type"].as_str().unwrap_or("l2"))
            .map_err(|e| e.in_file(&shown))?;
        let ivf = ivf_message(&index, &shown).await?;
        let tensor = ivf
            .centroids_tensor
            .as_ref()
            .ok_or_else(|| Error::corrupt(&shown, "the IVF message has no centroids"))?;
        let centroids = tensor_values(tensor, &shown, "the centroids")?;
        let (parts, dim) = match tensor.shape[..] {
            [p, d] if p as usize * d as usize == centroids.len() && d > 0 => {
                (p as usize, d as usize)
            }
            _ => {
                return Err(Error::corrupt(
                    &shown,
                    format!(
                        "centroids of shape {:?} hold {} values",
                        tensor.shape,
                        centroids.len()
                    ),
                ))
            }
        };

        let aux_shown = format!("{dir}/{AUX_FILE}");
        let aux = crate::file_table::open(&dir, AUX_FILE, options).await?;
        let aux_ivf = ivf_message(&aux, &aux_shown).await?;
        if aux_ivf.offsets.len() != parts || aux_ivf.lengths.len() != parts {
            return Err(Error::corrupt(
                &aux_shown,
                format!(
                    "{} partition offsets and {} lengths for {parts} centroids",
                    aux_ivf.offsets.len(),
                    aux_ivf.lengths.len()
                ),
            ));
        }
        let rows = aux.fragments()[0].physical_rows;
        let lengths: Vec<u64> = aux_ivf.lengths.iter().map(|&l| l as u64).collect();
        if let Some(p) = (0..parts).find(|&p| aux_ivf.offsets[p] + lengths[p] > rows) {
            return Err(Error::corrupt(
                &aux_shown,
                format!("partition {p} ends past the file's {rows} rows"),
            ));
        }
        let aux_meta = aux.arrow_schema.metadata().clone();
        let storage: Vec<serde_json::Value> = match aux_meta.get("storage_metadata") {
            Some(text) => match json(&aux_shown, "storage_metadata", text)? {
                serde_json::Value::Array(items) => items
                    .iter()
                    .map(|s| json(&aux_shown, "storage_metadata", s.as_str().unwrap_or("{}")))
                    .collect::<Result<_>>()?,
                _ => vec![],
            },
            None => vec![],
        };
        let first = storage.first().cloned().unwrap_or_default();
        let column_of = |name: &str| aux.arrow_schema.field_with_name(name).is_ok();
        let stored = if column_of("__pq_code") {
            let m = first["num_sub_vectors"].as_u64().unwrap_or(0) as usize;
            let bits = first["nbits"].as_u64().unwrap_or(8) as u32;
            if m == 0 || dim % m != 0 || !(bits == 8 || bits == 4) {
                return Err(Error::corrupt(
                    &aux_shown,
                    format!("PQ with {m} sub-vectors of {bits} bits for {dim} dimensions"),
                ));
            }
            let at = first["codebook_position"].as_u64().ok_or_else(|| {
                Error::corrupt(&aux_shown, "PQ storage metadata without codebook_position")
            })?;
            let reader = aux.open_file(&aux.fragments()[0].files[0], None).await?;
            let bytes = reader.global_buffer(at as usize).await?;
            let t = Tensor::decode(bytes)
                .map_err(|e| Error::corrupt(&aux_shown, format!("the PQ codebook: {e}")))?;
            let codebook = tensor_values(&t, &aux_shown, "the PQ codebook")?;
            if codebook.len() != (1usize << bits) * dim {
                return Err(Error::corrupt(
                    &aux_shown,
                    format!(
                        "a PQ codebook of {} values for {bits}-bit codes of {dim} dimensions",
                        codebook.len()
                    ),
                ));
            }
            Stored::Pq {
                m,
                bits,
                codebook,
                transposed: first["transposed"].as_bool().unwrap_or(false),
            }
        } else if column_of("__sq_code") {
            let b = &first["bounds"];
            match (b["start"].as_f64(), b["end"].as_f64()) {
                (Some(start), Some(end)) => Stored::Sq { start, end },
                _ => {
                    return Err(Error::corrupt(
                        &aux_shown,
                        "SQ storage metadata without bounds",
                    ))
                }
            }
        } else if column_of("flat") {
            Stored::Flat
        } else {
            return Err(Error::unsupported(
                &aux_shown,
                format!(
                    "vectors stored as {:?}",
                    aux.arrow_schema
                        .fields()
                        .iter()
                        .map(|f| f.name())
                        .collect::<Vec<_>>()
                ),
            ));
        };
        let bytes = centroids.len() * 4
            + match &stored {
                Stored::Pq { codebook, .. } => codebook.len() * 4,
                _ => 0,
            };
        Ok((
            Ivf {
                dir,
                shown,
                kind,
                metric,
                dim,
                centroids,
                loss: ivf.loss,
                offsets: aux_ivf.offsets,
                lengths,
                stored,
                aux: Arc::new(aux),
                cache: IndexCacheRef::of(ds.session()),
            },
            bytes,
        ))
    }

    /// The rows of partition `p` (cached).
    pub(super) async fn partition(&self, p: usize) -> Result<Arc<Partition>> {
        let key = format!("{}#ivf-partition-{p}", self.dir);
        let (start, len) = (self.offsets[p], self.lengths[p]);
        let aux = self.aux.clone();
        let shown = format!("{}/{AUX_FILE}", self.dir);
        self.cache
            .get_or_load(key, || async move {
                let column = ["flat", "__pq_code", "__sq_code"]
                    .into_iter()
                    .find(|c| aux.arrow_schema.field_with_name(c).is_ok())
                    .unwrap_or("flat");
                let options = crate::scan::ScanOptions {
                    columns: Some(vec!["_rowid".into(), column.into()]),
                    row_range: Some((start, start + len)),
                    batch_size: 1 << 20,
                    ..Default::default()
                };
                let s = crate::scan::scan(aux.clone(), options)?;
                let batches: Vec<_> = futures::TryStreamExt::try_collect(s.batches).await?;
                let batch = arrow_select::concat::concat_batches(&s.schema, &batches)?;
                let c = crate::index::FileColumns {
                    batch: &batch,
                    shown: &shown,
                };
                let row_ids = c.primitive::<arrow_array::types::UInt64Type>("_rowid")?;
                let vectors = c.any(column)?;
                let vectors = vectors
                    .as_any()
                    .downcast_ref::<FixedSizeListArray>()
                    .cloned()
                    .ok_or_else(|| {
                        Error::corrupt(
                            &shown,
                            format!("'{column}' is {}, not vectors", vectors.data_type()),
                        )
                    })?;
                let bytes = batch.get_array_memory_size();
                Ok((
                    Partition {
                        row_ids: row_ids.values().to_vec(),
                        vectors,
                    },
                    bytes,
                ))
            })
            .await
    }

    /// Partitions in the order a search visits them (nearest centroid first), with the
    /// distance of each centroid, for `q` (already normalized for cosine).
    fn ranked(&self, q: &[f32]) -> Vec<(usize, f32)> {
        let mut out: Vec<(usize, f32)> = self
            .centroids
            .chunks_exact(self.dim)
            .enumerate()
            .map(|(p, c)| {
                let d = match self.metric {
                    Metric::Dot => 1.0 - distance::dot(c, q),
                    Metric::Hamming => c
                        .iter()
                        .zip(q)
                        .map(|(&a, &b)| ((a as u8) ^ (b as u8)).count_ones() as f32)
                        .sum(),
                    _ => distance::l2(c, q),
                };
                (p, d)
            })
            .collect();
        out.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        out
    }

    /// The `k` stored vectors nearest to `query` (one vector, the column's values) in the
    /// partitions the probe rule picks, by the index's own (possibly approximate)
    /// distances; only rows `allowed` says are live.
    pub async fn search(
        &self,
        query: &[f64],
        k: usize,
        probes: &Probes,
        range: (Option<f32>, Option<f32>),
        allowed: &(dyn Fn(u64) -> bool + Sync),
    ) -> Result<Vec<Neighbour>> {
        if query.len() != self.dim {
            return Err(Error::invalid(format!(
                "{}: the query has {} dimensions, the index {}",
                self.shown,
                query.len(),
                self.dim
            )));
        }
        let mut q: Vec<f32> = query.iter().map(|&v| v as f32).collect();
        if self.metric == Metric::Cosine {
            let n = distance::dot(&q, &q).sqrt();
            if n > 0.0 {
                q.iter_mut().for_each(|v| *v /= n);
            }
        }
        let ranked = self.ranked(&q);
        let (first, most) = probes.count(self.metric, k, &ranked);
        // The first `first` partitions are measured at once on the CPU pool (each its own
        // top k, merged); more follow one by one while fewer than k live rows were found.
        let mut top = TopK::new(k);
        let mut found = 0usize;
        let firsts: Vec<usize> = ranked.iter().take(first.min(most)).map(|r| r.0).collect();
        let parts =
            futures::future::try_join_all(firsts.iter().map(|&p| self.partition(p))).await?;
        use rayon::prelude::*;
        let each: Vec<(TopK, usize)> = crate::threads::install(|| {
            parts
                .par_iter()
                .zip(firsts.par_iter())
                .map(|(part, &p)| self.search_partition(part, p, &q, k, range, allowed))
                .collect::<Result<_>>()
        })?;
        for (t, f) in each {
            top.merge(t);
            found += f;
        }
        for &(p, _) in ranked.iter().take(most).skip(firsts.len()) {
            if found >= k {
                break;
            }
            let part = self.partition(p).await?;
            let (t, f) = self.search_partition(&part, p, &q, k, range, allowed)?;
            top.merge(t);
            found += f;
        }
        Ok(top.into_sorted())
    }

    /// The k nearest live rows of partition `p` by the index's distances, and how many live
    /// rows were seen (counted up to k: enough to tell whether to probe further).
    fn search_partition(
        &self,
        part: &Partition,
        p: usize,
        q: &[f32],
        k: usize,
        range: (Option<f32>, Option<f32>),
        allowed: &(dyn Fn(u64) -> bool + Sync),
    ) -> Result<(TopK, usize)> {
        let d = self.partition_distances(part, p, q)?;
        let mut top = TopK::new(k);
        let mut found = 0usize;
        for (r, &dist) in d.iter().enumerate() {
            if range.0.is_some_and(|l| dist < l)
                || range.1.is_some_and(|u| dist >= u)
                || dist.is_nan()
            {
                continue;
            }
            let n = Neighbour {
                distance: dist,
                row_id: part.row_ids[r],
                address: part.row_ids[r],
            };
            // Whether a row is live costs a lookup: asked only of rows that would enter the
            // top k (and of the first k found, which decide when to stop probing).
            if (found >= k && !top.accepts(&n)) || !allowed(n.row_id) {
                continue;
            }
            found += 1;
            top.push(n);
        }
        Ok((top, found))
    }

    /// The index's distance from `q` to every vector of partition `p`.
    fn partition_distances(&self, part: &Partition, p: usize, q: &[f32]) -> Result<Vec<f32>> {
        let n = part.row_ids.len();
        let mut out = Vec::with_capacity(n);
        match &self.stored {
            Stored::Flat => {
                let element = match part.vectors.value_type() {
                    dt if distance::is_vector_element(&dt) => dt,
                    dt => {
                        return Err(Error::corrupt(
                            &self.shown,
                            format!("stored vectors of {dt}"),
                        ))
                    }
                };
                let qf: Vec<f64> = q.iter().map(|&v| v as f64).collect();
                let query = Query::new(&qf, &element)?;
                distance::distances(self.metric, &query, &part.vectors, &mut out)?;
            }
            Stored::Sq { start, end } => {
                let codes = u8_values(&part.vectors, &self.shown)?;
                let dim = self.dim;
                let span = end - start;
                let qc: Vec<u8> = q
                    .iter()
                    .map(|&v| match span > 0.0 {
                        true => ((v as f64 - start) * 255.0 / span)
                            .floor()
                            .clamp(0.0, 255.0) as u8,
                        false => 0,
                    })
                    .collect();
                let range = span as f32;
                let scale = (range * range) / (255.0 * 255.0);
                // Dot: 1 - x'·q, with x' the codes mapped back into the range (as pylance
                // 14 measures it): 1 - (step·(codes·q) + start·Σq); l2 and cosine: the
                // squared code differences, scaled.
                let step = (span / 255.0) as f32;
                let q_sum: f32 = q.iter().sum();
                for x in codes[..n * dim].chunks_exact(dim) {
                    out.push(match self.metric {
                        Metric::Dot => {
                            1.0 - (step * distance::dot_u8(x, q) + *start as f32 * q_sum)
                        }
                        _ => distance::l2_u8(x, &qc) as f32 * scale,
                    });
                }
            }
            Stored::Pq {
                m,
                bits,
                codebook,
                transposed,
            } => {
                let (m, codes_per) = (*m, 1usize << bits);
                let sub = self.dim / m;
                // The distance of each code of each sub-vector, then a sum per vector.
                let target: Vec<f32> = match self.metric {
                    Metric::Dot => q.to_vec(),
                    _ => {
                        let c = &self.centroids[p * self.dim..(p + 1) * self.dim];
                        q.iter().zip(c).map(|(a, b)| a - b).collect()
                    }
                };
                let mut table = vec![0f32; m * codes_per];
                for j in 0..m {
                    let t = &target[j * sub..(j + 1) * sub];
                    for c in 0..codes_per {
                        let word =
                            &codebook[(j * codes_per + c) * sub..(j * codes_per + c + 1) * sub];
                        table[j * codes_per + c] = match self.metric {
                            Metric::Dot => 1.0 - distance::dot(t, word),
                            _ => distance::l2(t, word),
                        };
                    }
                }
                let bytes = u8_values(&part.vectors, &self.shown)?;
                let per_row = part.vectors.value_length() as usize;
                if bytes.len() < n * per_row {
                    return Err(Error::corrupt(
                        &self.shown,
                        format!("partition {p}'s codes are cut short"),
                    ));
                }
                let base = match self.metric {
                    Metric::Dot => -((m - 1) as f32),
                    _ => 0.0,
                };
                out.resize(n, base);
                // One sub-vector at a time over every row: the codes of a sub-vector are
                // contiguous when transposed, and its table stays in the L1 cache.
                for j in 0..m {
                    let t = &table[j * codes_per..(j + 1) * codes_per];
                    let byte_j = if *bits == 4 { j / 2 } else { j };
                    let shift = if *bits == 4 && j % 2 == 1 { 4 } else { 0 };
                    let mask = if *bits == 4 { 0x0f } else { 0xff };
                    let code = |b: u8| ((b >> shift) & mask) as usize;
                    match transposed {
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
            }
        }
        Ok(out)
    }
}

/// The bytes of a fixed-size list of uint8 (codes).
fn u8_values<'a>(vectors: &'a FixedSizeListArray, shown: &str) -> Result<&'a [u8]> {
    let start = vectors.offset() * vectors.value_length() as usize;
    vectors
        .values()
        .as_any()
        .downcast_ref::<UInt8Array>()
        .map(|a| &a.values()[start..])
        .ok_or_else(|| Error::corrupt(shown, "codes that are not uint8"))
}

/// How many partitions a search probes: pylance's `nprobes` (exactly that many), or its
/// automatic budget bounded by `minimum_nprobes` / `maximum_nprobes`.
#[derive(Clone, Debug, Default)]
pub struct Probes {
    pub nprobes: Option<usize>,
    pub minimum: Option<usize>,
    pub maximum: Option<usize>,
}

impl Probes {
    /// (partitions always searched, partitions searched at most while fewer than k rows
    /// were found), given the partitions ranked with their centroid distances.
    fn count(&self, metric: Metric, k: usize, ranked: &[(usize, f32)]) -> (usize, usize) {
        let total = ranked.len();
        if let Some(n) = self.nprobes {
            let n = n.clamp(1, total.max(1));
            return (n, n);
        }
        // pylance's automatic budget: the partitions whose centroid is within a margin of
        // the nearest one, within a floor and a cap, by metric and by size of k.
        let bucket = match k {
            0..=1 => 0,
            2..=10 => 1,
            11..=100 => 2,
            101..=200 => 3,
            201..=500 => 4,
            _ => 5,
        };
        let (margin, floor, cap) = match metric {
            Metric::Cosine => (
                [0.235, 0.2875, 0.38, 0.415, 0.45, 0.47][bucket],
                [3, 8, 7, 18, 28, 34][bucket],
                [50, 77, 106, 156, 192, 248][bucket],
            ),
            Metric::Dot => (
                [0.14, 0.055, 0.0625, 0.0675, 0.07, 0.0725][bucket],
                [56, 144, 200, 211, 244, 279][bucket],
                [112, 432, 768, 833, 971, 1092][bucket],
            ),
            _ => (
                [0.2175, 0.265, 0.33, 0.375, 0.3725, 0.4175][bucket],
                [5, 6, 11, 15, 22, 29][bucket],
                [19, 24, 38, 56, 81, 93][bucket],
            ),
        };
        let d0 = ranked.first().map_or(0.0, |r| r.1);
        let scale = match metric {
            Metric::Dot => (1.0 - d0).abs(),
            _ => d0,
        };
        let near = ranked.iter().filter(|r| r.1 - d0 <= margin * scale).count();
        let mut first = near.clamp(floor, cap);
        let most = self.maximum.unwrap_or(total).min(total);
        if let Some(min) = self.minimum {
            first = first.max(min);
        }
        (first.min(most).max(1), most.max(1))
    }
}
