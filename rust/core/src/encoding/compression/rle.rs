//! Run-length encoding: `k` values then `k` u8 run lengths (longer runs are split).
use crate::encoding::bytes::slice;
use crate::encoding::values::FixedBuilder;
use crate::error::{corrupt, Result};

pub fn decode(
    values: &[u8],
    lengths: &[u8],
    bits: u64,
    n: usize,
    out: &mut FixedBuilder,
) -> Result<()> {
    if out.bits as u64 != bits {
        return Err(corrupt(format!(
            "{bits}-bit run values read as {}-bit values",
            out.bits
        )));
    }
    let w = (bits / 8) as usize;
    let runs = values.len() / w;
    let lengths = slice(lengths, 0, runs, "run lengths")?;
    let dst = out.extend_uninit(n);
    let mut at = 0usize;
    for (value, &len) in values.chunks_exact(w).zip(lengths) {
        if len == 0 {
            return Err(corrupt("run of length 0"));
        }
        let take = (len as usize).min(n - at);
        for slot in dst[at * w..(at + take) * w].chunks_exact_mut(w) {
            slot.copy_from_slice(value);
        }
        at += take;
        if at == n {
            return Ok(());
        }
    }
    Err(corrupt(format!("runs cover {at} values, expected {n}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_runs_and_checks_coverage() {
        let values: Vec<u8> = [7i32, -1, 300]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let mut out = FixedBuilder::new(32, 0);
        decode(&values, &[2, 1, 3], 32, 6, &mut out).unwrap();
        assert_eq!(out.data.typed_data::<i32>(), &[7, 7, -1, 300, 300, 300]);
        let err = decode(&values, &[2, 1, 3], 32, 9, &mut FixedBuilder::new(32, 0)).unwrap_err();
        assert!(err.to_string().contains("cover 6"), "{err}");
    }
}
