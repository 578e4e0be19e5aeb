//! An IVF segment reused instead of retrained: its model (centroids and quantizer) and its
//! encoded rows, read back from its files (`ivf`) into the builder's types (`build`).
//! Compaction writes the rows again under their new addresses; `optimize_indices` encodes
//! new fragments with the same model, alone (a delta) or together with the rows of the
//! segments that share it (a merge), as pylance does without `retrain`.
//!
//! Only segments without a graph are reused: an HNSW segment's graph would have to be
//! rebuilt, so those keep their rows and stop covering what changed.
use arrow_array::{Array, Float32Array, UInt8Array};
use arrow_schema::DataType;

use super::build::{Encoded, IvfParams, Model, Quantizer, Storage};
use super::ivf::{Ivf, Stored};
use crate::error::{Error, Result};

/// How `ivf`'s vectors are stored, when it is a kind this crate writes.
pub fn storage_of(kind: &str) -> Option<Storage> {
    Storage::from_index_type(kind)
}

/// The trained model of `ivf`, ready to encode more rows as it encoded its own.
pub fn model(ivf: &Ivf) -> Result<Model> {
    let storage = storage_of(&ivf.kind).ok_or_else(|| {
        Error::unsupported(
            &ivf.shown,
            format!("reusing a {} index (its graph would be rebuilt)", ivf.kind),
        )
    })?;
    let (quantizer, num_sub_vectors, num_bits) = match &ivf.stored {
        Stored::Flat => (Quantizer::Flat, None, 8),
        Stored::Sq { start, end } => (
            Quantizer::Sq {
                lo: *start,
                hi: *end,
            },
            None,
            8,
        ),
        Stored::Pq {
            m, bits, codebook, ..
        } => {
            let per_book = codebook.len() / m;
            let books = codebook
                .chunks_exact(per_book)
                .map(<[f32]>::to_vec)
                .collect();
            (Quantizer::Pq { books, m: *m }, Some(*m), *bits)
        }
    };
    let params = IvfParams {
        storage,
        metric: ivf.metric,
        num_partitions: Some(ivf.lengths.len()),
        target_partition_size: None,
        num_sub_vectors,
        num_bits,
        sample_rate: 256,
        max_iters: 50,
        seed: 0,
    };
    Ok(Model::reused(
        params,
        ivf.dim,
        ivf.centroids.clone(),
        ivf.loss.unwrap_or(0.0),
        quantizer,
    ))
}

/// Every row of `ivf`, partition by partition, in the form `Model::encode` gives.
pub async fn rows(ivf: &Ivf) -> Result<Encoded> {
    let mut out = Encoded::default();
    for p in 0..ivf.lengths.len() {
        if ivf.lengths[p] == 0 {
            continue;
        }
        let part = ivf.partition(p).await?;
        let n = part.row_ids.len();
        out.ids.extend_from_slice(&part.row_ids);
        out.partitions.extend(std::iter::repeat_n(p as u32, n));
        let vectors = &part.vectors;
        let width = vectors.value_length() as usize;
        let values = vectors.values().slice(vectors.offset() * width, n * width);
        match &ivf.stored {
            Stored::Flat => {
                let values = arrow_cast::cast(&values, &DataType::Float32)?;
                let values = values
                    .as_any()
                    .downcast_ref::<Float32Array>()
                    .expect("cast to f32");
                out.values.extend_from_slice(values.values());
            }
            Stored::Sq { .. } => out.codes.extend_from_slice(bytes(&values, &ivf.shown)?),
            Stored::Pq {
                m,
                bits,
                transposed,
                ..
            } => {
                let bytes = bytes(&values, &ivf.shown)?;
                // Back to one code per sub-vector, row by row.
                for i in 0..n {
                    for b in 0..width {
                        let byte = match transposed {
                            true => bytes[b * n + i],
                            false => bytes[i * width + b],
                        };
                        match bits {
                            4 => out.codes.extend([byte & 0x0F, byte >> 4]),
                            _ => out.codes.push(byte),
                        }
                    }
                }
                if out.codes.len() != out.ids.len() * m {
                    return Err(Error::corrupt(
                        &ivf.shown,
                        format!("partition {p}: codes of {width} bytes for {m} sub-vectors"),
                    ));
                }
            }
        }
    }
    Ok(out)
}

fn bytes<'a>(values: &'a arrow_array::ArrayRef, shown: &str) -> Result<&'a [u8]> {
    values
        .as_any()
        .downcast_ref::<UInt8Array>()
        .map(|a| a.values().as_ref())
        .ok_or_else(|| {
            Error::corrupt(
                shown,
                format!("codes stored as {}, not bytes", values.data_type()),
            )
        })
}

/// Whether two segments share one model (a delta built from the other's, or the same
/// training), so that their rows can be written into one segment.
pub fn same_model(a: &Ivf, b: &Ivf) -> bool {
    a.kind == b.kind
        && a.metric == b.metric
        && a.dim == b.dim
        && a.centroids == b.centroids
        && match (&a.stored, &b.stored) {
            (Stored::Flat, Stored::Flat) => true,
            (Stored::Sq { start: s1, end: e1 }, Stored::Sq { start: s2, end: e2 }) => {
                s1 == s2 && e1 == e2
            }
            (
                Stored::Pq {
                    m: m1,
                    bits: b1,
                    codebook: c1,
                    ..
                },
                Stored::Pq {
                    m: m2,
                    bits: b2,
                    codebook: c2,
                    ..
                },
            ) => m1 == m2 && b1 == b2 && c1 == c2,
            _ => false,
        }
}
