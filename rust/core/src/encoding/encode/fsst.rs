//! FSST compression of a page's variable-width values with a trained symbol table
//! (fsst-rs). The values lie back to back in one buffer, so each step can load a full
//! word at any position and mask off the bytes past the value's end; several cursors over
//! different values run interleaved so that their table lookups overlap. Short values
//! (names, ids) then cost the same per byte as long ones, where compressing each value's
//! tail on its own would dominate.
use fsst::Compressor;

/// Cursors interleaved (fsst-rs finds four a good default on current CPUs).
const LANES: usize = 4;

/// One cursor: a contiguous range of values and where their codes go.
struct Lane {
    value: usize,
    end_value: usize,
    /// Position in the input, and the end of the current value.
    pos: usize,
    value_end: usize,
    out: Vec<u8>,
    /// End of each compressed value within `out`.
    ends: Vec<u64>,
}

/// The next word at `pos` with the bytes at or after `end` zeroed (as fsst-rs compresses
/// a value's last bytes).
#[inline(always)]
fn word_at(data: &[u8], pos: usize, end: usize) -> u64 {
    let word = if pos + 8 <= data.len() {
        u64::from_le_bytes(data[pos..pos + 8].try_into().unwrap())
    } else {
        let mut b = [0u8; 8];
        b[..data.len() - pos].copy_from_slice(&data[pos..]);
        u64::from_le_bytes(b)
    };
    let left = end - pos;
    if left >= 8 {
        word
    } else {
        word & ((1u64 << (8 * left)) - 1)
    }
}

impl Lane {
    /// A lane for values `first..end_value`.
    fn new(offsets: &[u64], first: usize, end_value: usize) -> Lane {
        let bytes = (offsets[end_value] - offsets[first]) as usize;
        Lane {
            value: first,
            end_value,
            pos: offsets[first] as usize,
            value_end: offsets[(first + 1).min(end_value)] as usize,
            // Two bytes per input byte (all escapes), and slack for the byte a step
            // may write past its codes.
            out: Vec::with_capacity(2 * bytes + 8),
            ends: Vec::with_capacity(end_value - first),
        }
    }

    /// Finish the values with no bytes left (recording where their codes end) and start
    /// the next; false when the lane is out of values.
    #[inline(always)]
    fn settle(&mut self, offsets: &[u64]) -> bool {
        while self.pos >= self.value_end {
            self.ends.push(self.out.len() as u64);
            self.value += 1;
            if self.value >= self.end_value {
                return false;
            }
            self.pos = offsets[self.value] as usize;
            self.value_end = offsets[self.value + 1] as usize;
        }
        true
    }

    /// Compress one word of the current value.
    #[inline(always)]
    fn step(&mut self, c: &Compressor, data: &[u8]) {
        let word = word_at(data, self.pos, self.value_end);
        let at = self.out.len();
        // SAFETY: `out` has room for two bytes per input byte the lane has left plus
        // eight, and a step writes at most two bytes (`compress_word`'s contract), of which
        // it keeps `adv_out`.
        let (adv_in, adv_out) = unsafe { c.compress_word(word, self.out.as_mut_ptr().add(at)) };
        unsafe { self.out.set_len(at + adv_out) };
        self.pos += adv_in;
    }
}

/// Compress values `offsets[i]..offsets[i + 1]` of `data`: the codes, and the offsets of
/// each value's codes (from 0).
pub fn compress(c: &Compressor, data: &[u8], offsets: &[u64]) -> (Vec<u8>, Vec<u64>) {
    let n = offsets.len() - 1;
    let mut lanes: Vec<Lane> = (0..LANES)
        .map(|l| Lane::new(offsets, l * n / LANES, (l + 1) * n / LANES))
        .collect();
    let mut live = [false; LANES];
    for (l, lane) in lanes.iter_mut().enumerate() {
        live[l] = lane.value < lane.end_value && lane.settle(offsets);
    }
    // Every lane one step at a time while all have work; then each drains alone.
    while live.iter().all(|&x| x) {
        for (l, lane) in lanes.iter_mut().enumerate() {
            lane.step(c, data);
            if lane.pos >= lane.value_end {
                live[l] = lane.settle(offsets);
            }
        }
    }
    for (l, lane) in lanes.iter_mut().enumerate() {
        while live[l] {
            lane.step(c, data);
            if lane.pos >= lane.value_end {
                live[l] = lane.settle(offsets);
            }
        }
    }
    // Join the lanes: codes back to back, offsets from 0.
    let total: usize = lanes.iter().map(|l| l.out.len()).sum();
    let mut out = Vec::with_capacity(total);
    let mut ends = Vec::with_capacity(n + 1);
    ends.push(0u64);
    for lane in &lanes {
        let base = out.len() as u64;
        out.extend_from_slice(&lane.out);
        ends.extend(lane.ends.iter().map(|e| e + base));
    }
    (out, ends)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_codes_as_compressing_each_value() {
        let values: Vec<String> = (0..5000)
            .map(|i| match i % 7 {
                0 => String::new(),
                1 => format!("user-{i:09}"),
                2 => "x".repeat(i % 23),
                _ => format!("{}-{}", ["alpha", "beta", "gamma"][i % 3], i * 7919 % 1000),
            })
            .collect();
        let mut data = Vec::new();
        let mut offsets = vec![0u64];
        for v in &values {
            data.extend_from_slice(v.as_bytes());
            offsets.push(data.len() as u64);
        }
        let sample: Vec<&[u8]> = values.iter().map(|v| v.as_bytes()).collect();
        let c = Compressor::train(&sample);
        let (out, ends) = compress(&c, &data, &offsets);
        assert_eq!(ends.len(), values.len() + 1);
        let d = c.decompressor();
        for (i, v) in values.iter().enumerate() {
            let codes = &out[ends[i] as usize..ends[i + 1] as usize];
            assert_eq!(codes, c.compress(v.as_bytes()).as_slice(), "value {i}");
            assert_eq!(d.decompress(codes), v.as_bytes(), "value {i}");
        }
    }
}
