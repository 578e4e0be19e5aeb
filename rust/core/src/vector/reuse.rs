//! An IVF segment reused instead of retrained: its model (centroids and quantizer) and its
//! encoded rows, read back from its files (`ivf`) into the builder's types (`build`).
//! Compaction writes the rows again under their new addresses; `optimize_indices` encodes
//! new fragments with the same model, alone (a delta) or together with the rows of the
//! segments that share it (a merge), as pylance does without `retrain`.
//!
//! Only segments of kinds lance_core builds are reused: an HNSW segment's graph would have
//! to be rebuilt, so those keep their rows and stop covering what changed.
use super::build::Model;
use super::encoded::Encoded;
use super::ivf::Ivf;
use super::kind::IvfParams;
use crate::error::{Error, Result};

/// The trained model of `ivf`, ready to encode more rows as it encoded its own.
pub fn model(ivf: &Ivf) -> Result<Model> {
    if !ivf.kind.builds() {
        return Err(Error::unsupported(
            &ivf.shown,
            format!(
                "reusing a {} index (its graph would be rebuilt)",
                ivf.kind.name()
            ),
        ));
    }
    let params = IvfParams {
        num_partitions: Some(ivf.lengths.len()),
        ..IvfParams::new(ivf.kind, ivf.metric)
    };
    Ok(Model::reused(
        params,
        ivf.dim,
        ivf.centroids.clone(),
        ivf.loss.unwrap_or(0.0),
        ivf.quantizer.clone(),
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
        ivf.quantizer
            .read_back(&part.vectors, &ivf.shown, &mut out)
            .map_err(|e| e.context(&format!("partition {p}")))?;
    }
    Ok(out)
}

/// Whether two segments share one model (a delta built from the other's, or the same
/// training), so that their rows can be written into one segment.
pub fn same_model(a: &Ivf, b: &Ivf) -> bool {
    a.kind.name() == b.kind.name()
        && a.metric == b.metric
        && a.dim == b.dim
        && a.centroids == b.centroids
        && a.quantizer.same(b.quantizer.as_ref())
}
