//! IVF_SQ: scalar quantization. Every value of every vector is stored as one byte, its
//! place in 256 equal steps of the range the training sample's values span
//! (`bounds.start..bounds.end`, values outside it clamped), in the auxiliary file's
//! `__sq_code` column.
use std::sync::Arc;

use arrow_array::{FixedSizeListArray, UInt8Array};
use arrow_schema::DataType;
use futures::future::BoxFuture;
use serde_json::{json, Map, Value};

use super::distance::{self, Metric};
use super::encoded::{fixed_size_list, Encoded};
use super::kind::IvfParams;
use super::kind::{
    code_bytes, same_as, Layout, Quantizer, StoredFile, StoredRows, VectorIndexKind,
};
use super::kmeans::Rng;
use crate::error::{Error, Result};
use crate::proto::index::vector_index_details::{Compression, ScalarQuantization};

#[derive(Debug)]
pub struct IvfSq;

impl VectorIndexKind for IvfSq {
    fn name(&self) -> &'static str {
        "IVF_SQ"
    }

    fn sub_index(&self) -> &'static str {
        "SQ"
    }

    fn stored_column(&self) -> &'static str {
        "__sq_code"
    }

    fn load<'a>(&'a self, file: StoredFile<'a>) -> BoxFuture<'a, Result<Arc<dyn Quantizer>>> {
        Box::pin(async move {
            let b = &file.metadata["bounds"];
            match (b["start"].as_f64(), b["end"].as_f64()) {
                (Some(start), Some(end)) => Ok(Arc::new(Sq {
                    start,
                    end,
                    dim: file.dim,
                }) as Arc<dyn Quantizer>),
                _ => Err(Error::corrupt(
                    file.shown,
                    "SQ storage metadata without bounds",
                )),
            }
        })
    }

    // The range is taken from sample_rate x 256 rows (as pylance's).
    fn sample_size(&self, params: &IvfParams) -> usize {
        params.sample_rate.saturating_mul(256)
    }

    fn train(
        &self,
        sample: &[f32],
        dim: usize,
        _centroids: &[f32],
        _params: &IvfParams,
        _rng: &mut Rng,
    ) -> Result<Arc<dyn Quantizer>> {
        let (mut start, mut end) = (f64::INFINITY, f64::NEG_INFINITY);
        for &v in sample {
            start = start.min(v as f64);
            end = end.max(v as f64);
        }
        Ok(Arc::new(Sq { start, end, dim }))
    }

    fn runtime_hints(&self, p: &IvfParams) -> Vec<(&'static str, String)> {
        vec![("lance.sq.sample_rate", p.sample_rate.to_string())]
    }
}

/// A trained scalar quantizer: the range its 256 steps cover.
#[derive(Debug, PartialEq)]
pub struct Sq {
    start: f64,
    end: f64,
    dim: usize,
}

impl Sq {
    /// The code of value `v`.
    fn code(&self, v: f32) -> u8 {
        let span = self.end - self.start;
        match span > 0.0 {
            true => ((v as f64 - self.start) * 255.0 / span)
                .floor()
                .clamp(0.0, 255.0) as u8,
            false => 0,
        }
    }
}

impl Quantizer for Sq {
    fn code_width(&self, dim: usize) -> usize {
        dim
    }

    fn encode(&self, rows: &[f32], _: usize, _: &[u32], _: &[f32], _: Metric) -> Vec<u8> {
        rows.iter().map(|&v| self.code(v)).collect()
    }

    fn stored(
        &self,
        encoded: &Encoded,
        dim: usize,
        layout: &Layout,
        _element: &DataType,
    ) -> Result<StoredRows> {
        let mut codes = Vec::with_capacity(layout.order.len() * dim);
        for &r in layout.order {
            codes.extend_from_slice(&encoded.codes[r * dim..(r + 1) * dim]);
        }
        Ok(StoredRows {
            column: fixed_size_list(Arc::new(UInt8Array::from(codes)), dim)?,
            metadata: json!({
                "dim": dim,
                "num_bits": 8,
                "bounds": { "start": self.start, "end": self.end },
            }),
            buffers: vec![],
            compression: Compression::Sq(ScalarQuantization { num_bits: 8 }),
        })
    }

    fn read_back(
        &self,
        vectors: &FixedSizeListArray,
        shown: &str,
        out: &mut Encoded,
    ) -> Result<()> {
        out.codes.extend_from_slice(code_bytes(vectors, shown)?);
        Ok(())
    }

    fn distances(
        &self,
        vectors: &FixedSizeListArray,
        q: &[f32],
        _centroid: &[f32],
        metric: Metric,
        shown: &str,
    ) -> Result<Vec<f32>> {
        let dim = q.len();
        if vectors.value_length() as usize != dim {
            return Err(Error::corrupt(
                shown,
                format!(
                    "SQ codes of {} values for {dim} dimensions",
                    vectors.value_length()
                ),
            ));
        }
        let codes = code_bytes(vectors, shown)?;
        let qc: Vec<u8> = q.iter().map(|&v| self.code(v)).collect();
        let span = self.end - self.start;
        let range = span as f32;
        let scale = (range * range) / (255.0 * 255.0);
        // Dot: 1 - x'·q, with x' the codes mapped back into the range (as pylance 14
        // measures it): 1 - (step·(codes·q) + start·Σq); l2 and cosine: the squared code
        // differences, scaled.
        let step = (span / 255.0) as f32;
        let q_sum: f32 = q.iter().sum();
        Ok(codes
            .chunks_exact(dim)
            .map(|x| match metric {
                Metric::Dot => 1.0 - (step * distance::dot_u8(x, q) + self.start as f32 * q_sum),
                _ => distance::l2_u8(x, &qc) as f32 * scale,
            })
            .collect())
    }

    fn same(&self, other: &dyn Quantizer) -> bool {
        same_as(self, other)
    }

    fn statistics(&self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("dim".into(), self.dim.into());
        out.insert("num_bits".into(), 8.into());
        out.insert(
            "bounds".into(),
            json!({ "start": self.start, "end": self.end }),
        );
        out
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_coded_in_256_steps_of_the_range_and_clamped() {
        let sq = Sq {
            start: 0.0,
            end: 255.0,
            dim: 2,
        };
        assert_eq!(
            sq.encode(&[-3.0, 0.0, 1.5, 255.0, 300.0], 1, &[], &[], Metric::L2),
            [0, 0, 1, 255, 255]
        );
        let flat = Sq {
            start: 1.0,
            end: 1.0,
            dim: 2,
        };
        assert_eq!(flat.encode(&[1.0, 2.0], 1, &[], &[], Metric::L2), [0, 0]);
    }

    #[test]
    fn l2_is_the_scaled_squared_code_difference() {
        let sq = Sq {
            start: 0.0,
            end: 255.0,
            dim: 2,
        };
        let codes = fixed_size_list(Arc::new(UInt8Array::from(vec![0, 0, 3, 4])), 2).unwrap();
        let d = sq
            .distances(&codes, &[0.0, 0.0], &[], Metric::L2, "t")
            .unwrap();
        assert_eq!(d, vec![0.0, 25.0]);
    }
}
