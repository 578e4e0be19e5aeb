//! FSST string compression. One symbol table per page; each value is a stream of codes:
//! code c < 255 stands for symbol c (1 to 8 bytes), code 255 escapes the next byte.
//! Decoding uses the `fsst` crate (fsst-rs); this module reads Lance's table layout.
use fsst::{Decompressor, Symbol};

use super::Codec;
use crate::encoding::bytes::{slice, u64_at, words};
use crate::encoding::values::{ValuesBuilder, VariableBuilder};
use crate::error::{corrupt, unsupported, Result};

const MAGIC: u64 = 0x4653_5354; // "FSST"

/// A page's symbol table: a u64 header (magic in the high half, an "encoded" switch in
/// bit 24, the symbol count in the low byte), the symbols as u64s, then their lengths.
#[derive(Debug)]
pub struct SymbolTable {
    /// When false the page's strings were stored uncompressed.
    encoded: bool,
    symbols: [Symbol; 255],
    lengths: [u8; 255],
}

impl SymbolTable {
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let header = u64_at(bytes, 0, "fsst symbol table")?;
        if header >> 32 != MAGIC {
            return Err(corrupt("fsst symbol table has a bad magic number"));
        }
        let encoded = (header >> 24) & 1 == 1;
        let n = (header & 0xFF) as usize;
        if n > 255 {
            return Err(corrupt("fsst symbol table with more than 255 symbols"));
        }
        let mut symbols = [Symbol::from_u8(0); 255];
        let mut lengths = [0u8; 255];
        let lens = slice(bytes, 8 + 8 * n, n, "fsst symbol lengths")?;
        for i in 0..n {
            let raw: &[u8; 8] = slice(bytes, 8 + 8 * i, 8, "fsst symbols")?
                .try_into()
                .unwrap();
            if lens[i] == 0 || lens[i] > 8 {
                return Err(corrupt(format!("fsst symbol {i} has length {}", lens[i])));
            }
            symbols[i] = Symbol::from_slice(raw);
            lengths[i] = lens[i];
        }
        Ok(SymbolTable {
            encoded,
            symbols,
            lengths,
        })
    }

    /// Decode one compressed value and append it.
    pub fn decode_value(&self, codes: &[u8], out: &mut VariableBuilder) -> Result<()> {
        if !self.encoded {
            return out.append(codes);
        }
        let d = Decompressor::new(&self.symbols, &self.lengths);
        out.append_fn(|data| decompress(&d, codes, data))
    }
}

fn decompress(d: &Decompressor<'_>, codes: &[u8], data: &mut Vec<u8>) -> Result<()> {
    if codes.last() == Some(&255) && dangling_escape(codes) {
        return Err(corrupt("fsst value ends in an escape code"));
    }
    data.reserve(d.max_decompression_capacity(codes) + 8);
    let n = d.decompress_into(codes, data.spare_capacity_mut());
    // SAFETY: `decompress_into` initialized exactly `n` bytes of the spare capacity.
    unsafe { data.set_len(data.len() + n) };
    Ok(())
}

/// Whether the final 255 of `codes` is an escape with nothing after it (rather than an
/// escaped literal 255): count the run of 255s at the end from the last non-escape code.
fn dangling_escape(codes: &[u8]) -> bool {
    let mut i = 0;
    while i < codes.len() {
        if codes[i] == 255 {
            if i + 1 == codes.len() {
                return true;
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    false
}

/// A mini-block chunk: a variable-width chunk whose values are FSST codes.
pub fn decode_miniblock(
    table: &SymbolTable,
    inner: &Codec,
    bufs: &[&[u8]],
    n: usize,
    out: &mut ValuesBuilder,
) -> Result<()> {
    let Codec::Variable { offset_bits } = inner else {
        return Err(unsupported(format!("fsst over {}", inner.name())));
    };
    let buf = bufs
        .first()
        .ok_or_else(|| corrupt("fsst chunk without a buffer"))?;
    let out = out.variable()?;
    let w = (*offset_bits / 8) as usize;
    let raw = slice(buf, 0, super::variable::offsets_size(n, w)?, "fsst offsets")?;
    let offsets: Vec<u64> = if w == 4 {
        words::<u32>(raw).iter().map(|&o| o as u64).collect()
    } else {
        words::<u64>(raw).to_vec()
    };
    if !table.encoded {
        return out.append_with_offsets(&offsets, buf);
    }
    let d = Decompressor::new(&table.symbols, &table.lengths);
    for pair in offsets.windows(2) {
        let (a, b) = (pair[0] as usize, pair[1] as usize);
        let codes = buf
            .get(a..b)
            .ok_or_else(|| corrupt(format!("fsst value {a}..{b} outside its chunk")))?;
        out.append_fn(|data| decompress(&d, codes, data))?;
    }
    Ok(())
}

/// Values `selected` (increasing) of a mini-block chunk of `n` variable-width values,
/// FSST-compressed with `table` (or stored plain, None): only those are decompressed.
pub fn decode_miniblock_selected(
    table: Option<&SymbolTable>,
    offset_bits: u64,
    buf: &[u8],
    n: usize,
    selected: &[usize],
    out: &mut ValuesBuilder,
) -> Result<()> {
    let out = out.variable()?;
    let w = (offset_bits / 8) as usize;
    let raw = slice(buf, 0, super::variable::offsets_size(n, w)?, "fsst offsets")?;
    let at = |i: usize| -> u64 {
        if w == 4 {
            u32::from_le_bytes(raw[i * 4..i * 4 + 4].try_into().unwrap()) as u64
        } else {
            u64::from_le_bytes(raw[i * 8..i * 8 + 8].try_into().unwrap())
        }
    };
    let d = table
        .filter(|t| t.encoded)
        .map(|t| Decompressor::new(&t.symbols, &t.lengths));
    for &i in selected {
        if i >= n {
            return Err(corrupt(format!("value {i} of a chunk of {n}")));
        }
        let (a, b) = (at(i) as usize, at(i + 1) as usize);
        let codes = buf
            .get(a..b)
            .ok_or_else(|| corrupt(format!("fsst value {a}..{b} outside its chunk")))?;
        if let Some(d) = &d {
            out.append_fn(|data| decompress(d, codes, data))?;
        } else {
            out.append_fn(|data| {
                data.extend_from_slice(codes);
                Ok(())
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(symbols: &[&[u8]]) -> Vec<u8> {
        let n = symbols.len() as u64;
        let mut t = ((MAGIC << 32) | (1 << 24) | n).to_le_bytes().to_vec();
        for s in symbols {
            let mut w = [0u8; 8];
            w[..s.len()].copy_from_slice(s);
            t.extend(w);
        }
        t.extend(symbols.iter().map(|s| s.len() as u8));
        t.resize(2312, 0);
        t
    }

    #[test]
    fn decodes_codes_and_escapes() {
        let t = SymbolTable::parse(&table(&[b"lance", b" "])).unwrap();
        let mut out = VariableBuilder::new(false, 1);
        t.decode_value(&[0, 1, 255, b'!', 0], &mut out).unwrap();
        assert_eq!(out.data, b"lance !lance");
        let err = t
            .decode_value(&[0, 255], &mut VariableBuilder::new(false, 1))
            .unwrap_err();
        assert!(err.to_string().contains("escape"), "{err}");
        // An escaped literal 255 at the end is fine.
        t.decode_value(&[255, 255], &mut out).unwrap();
    }

    #[test]
    fn bad_tables_are_errors() {
        assert!(SymbolTable::parse(&[0u8; 16]).is_err());
        let mut t = table(&[b"ab"]);
        t[16] = 9; // length of symbol 0
        assert!(SymbolTable::parse(&t)
            .unwrap_err()
            .to_string()
            .contains("length 9"));
    }
}
