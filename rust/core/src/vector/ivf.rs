//! IVF vector indices as pylance writes them, whatever their kind: two Lance files under
//! `_indices/<uuid>/`:
//!
//! - `index.idx`: schema metadata `lance:index` (`{"type", "distance_type"}`: the kind,
//!   found in the registry) and `lance:ivf`, the global buffer holding the `IVF` message
//!   with the centroids;
//! - `auxiliary.idx`: one row per indexed vector (`_rowid` and the stored vector in the
//!   kind's column), grouped by partition at the row offsets and counts of its own `IVF`
//!   message; `storage_metadata` says how the kind stores vectors (read by the kind:
//!   `VectorIndexKind::load`).
//!
//! A search ranks the partitions by their centroid's distance to the query and measures
//! every stored vector of the nearest few (exhaustively within a partition, so recall is
//! at least a graph search's).
use std::sync::Arc;

use arrow_array::{Array, FixedSizeListArray};
use prost::Message;

use super::distance::{self, Metric};
use super::kind::{Quantizer, StoredFile, VectorKind};
use super::tensor::tensor_values;
use super::topk::{Neighbour, TopK};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::proto::index::Ivf as IvfProto;
use crate::session::IndexCacheRef;
use crate::table::index_segments::IndexSegment;

const INDEX_FILE: &str = "index.idx";
const AUX_FILE: &str = "auxiliary.idx";

/// One IVF index segment, its model in memory; partitions read on demand (and kept).
pub struct Ivf {
    dir: String,
    pub(super) shown: String,
    pub kind: VectorKind,
    pub metric: Metric,
    pub dim: usize,
    /// Row-major, `partitions x dim`, as f32 (the element type's values).
    pub(super) centroids: Vec<f32>,
    /// The k-means loss the centroids were trained to, when recorded.
    pub(super) loss: Option<f64>,
    /// Row offset and count of each partition in the auxiliary file.
    offsets: Vec<u64>,
    pub(super) lengths: Vec<u64>,
    /// How the kind stores the rows, as trained for this segment.
    pub(super) quantizer: Arc<dyn Quantizer>,
    /// The schema metadata of `index.idx` (a graph's shape, for statistics).
    index_metadata: arrow_schema::Metadata,
    aux: Arc<Dataset>,
    /// Where partitions read are kept: the session the model was loaded in.
    cache: IndexCacheRef,
}

/// A partition's rows: their row ids and stored vectors (fixed-size lists).
pub(super) struct Partition {
    pub(super) row_ids: Vec<u64>,
    pub(super) vectors: FixedSizeListArray,
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
        let type_name = about["type"].as_str().unwrap_or_default();
        let kind = super::registry::vector_kind_named(type_name).ok_or_else(|| {
            Error::unsupported(&shown, format!("a vector index of type '{type_name}'"))
        })?;
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
        let column = kind.stored_column();
        if aux.arrow_schema.field_with_name(column).is_err() {
            let names: Vec<&String> = aux.arrow_schema.fields().iter().map(|f| f.name()).collect();
            return Err(Error::corrupt(
                &aux_shown,
                format!(
                    "a {} index without a '{column}' column (it has {names:?})",
                    kind.name()
                ),
            ));
        }
        let quantizer = kind
            .load(StoredFile {
                file: &aux,
                metadata: &first,
                dim,
                shown: &aux_shown,
            })
            .await?;
        let bytes = centroids.len() * 4 + quantizer.bytes();
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
                quantizer,
                index_metadata: meta,
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
        let column = self.kind.stored_column();
        self.cache
            .get_or_load(key, || async move {
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
        let centroid = &self.centroids[p * self.dim..(p + 1) * self.dim];
        let d = self
            .quantizer
            .distances(&part.vectors, q, centroid, self.metric, &self.shown)?;
        if d.len() != part.row_ids.len() {
            return Err(Error::corrupt(
                &self.shown,
                format!("partition {p}'s stored vectors are cut short"),
            ));
        }
        Ok(d)
    }

    /// What pylance's statistics show of this segment (segment `uuid`).
    pub fn statistics(&self, uuid: &str) -> serde_json::Value {
        // As f64, as pylance shows them (an f32 written as itself reads differently).
        let centroids: Vec<Vec<f64>> = self
            .centroids
            .chunks_exact(self.dim)
            .map(|c| c.iter().map(|&v| v as f64).collect())
            .collect();
        let partitions: Vec<serde_json::Value> = self
            .lengths
            .iter()
            .map(|&size| serde_json::json!({ "size": size }))
            .collect();
        serde_json::json!({
            "index_type": self.kind.name(),
            "uuid": uuid,
            "uri": format!("{}/{INDEX_FILE}", self.dir),
            "metric_type": self.metric.name(),
            "num_partitions": self.lengths.len(),
            "sub_index": self.kind.sub_index_statistics(
                self.quantizer.as_ref(),
                self.metric,
                &self.index_metadata,
            ),
            "partitions": partitions,
            "centroids": centroids,
            "loss": self.loss,
            "index_file_version": "V3",
        })
    }
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
