//! Counting distinct values without keeping them: a HyperLogLog sketch, so that the
//! writer can tell a column of unique strings from a low-cardinality one in one cheap
//! pass before it builds any dictionary.
use std::hash::BuildHasher;

use foldhash::fast::FixedState;

/// log2 of the number of registers: 4096 registers, about 1.6% standard error.
const BITS: u32 = 12;
const REGISTERS: usize = 1 << BITS;

/// The hasher shared by the sketch and the dictionary builder (fixed, so that the same
/// data always encodes the same way).
pub fn hasher() -> FixedState {
    FixedState::with_seed(0x6c61_6e63_655f_636f)
}

/// Estimate how many distinct values `values` holds.
pub fn estimate<'a>(values: impl Iterator<Item = &'a [u8]>) -> f64 {
    let h = hasher();
    let mut registers = vec![0u8; REGISTERS];
    for v in values {
        let x = h.hash_one(v);
        let index = (x >> (64 - BITS)) as usize;
        // The rank of the first set bit of the rest (a sentinel bit bounds it).
        let rest = (x << BITS) | (1 << (BITS - 1));
        let rank = rest.leading_zeros() as u8 + 1;
        if rank > registers[index] {
            registers[index] = rank;
        }
    }
    let m = REGISTERS as f64;
    let sum: f64 = registers.iter().map(|&r| 2f64.powi(-(r as i32))).sum();
    let raw = 0.7213 / (1.0 + 1.079 / m) * m * m / sum;
    let zeros = registers.iter().filter(|&&r| r == 0).count();
    if raw <= 2.5 * m && zeros > 0 {
        // Few values: linear counting is more accurate there.
        m * (m / zeros as f64).ln()
    } else {
        raw
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_within_a_few_percent() {
        for distinct in [10usize, 1000, 100_000] {
            let values: Vec<String> = (0..200_000).map(|i| format!("v{}", i % distinct)).collect();
            let e = estimate(values.iter().map(|s| s.as_bytes()));
            // Within 5%, or 2 values for tiny counts (two of ten may share a register).
            let err = (e - distinct as f64).abs();
            assert!(
                err < (0.05 * distinct as f64).max(2.0),
                "{distinct}: estimated {e}"
            );
        }
    }
}
