//! Writing full-zip pages (the layout is described in `layout::fullzip`): for wide values,
//! each item is its control word then its bytes, and buffer 1 holds every row's offset.
use super::levels::LeafLevels;
use super::proto;
use super::values::Values;
use super::EncodedPage;
use crate::encoding::compression::bitpacking::width_of;
use crate::encoding::compression::Scheme;
use crate::error::{unsupported, Result};
use crate::proto::encodings21 as pb;

/// Values at least this big are zstd-compressed one by one, as the reference does.
const COMPRESS_VALUE_BYTES: usize = 32 * 1024;

/// Encode a full-zip page; `compress_wide` lets values of 32 KiB or more be compressed
/// one by one (not for rows whose encoding is fixed by the caller, as packed structs').
pub fn encode(levels: &LeafLevels, compress_wide: bool) -> Result<EncodedPage> {
    let values = Values::of(&levels.values)?;
    let nulls = levels.values.nulls();
    let n_levels = levels.rep.as_ref().map_or(values.len(), |r| r.len());
    let def = levels.def.as_ref().filter(|d| d.iter().any(|&x| x > 0));
    let rep = levels.rep.as_ref();
    let bits_rep = rep.map_or(0, |r| width_of(r)) as u32;
    let bits_def = def.map_or(0, |d| width_of(d)) as u32;
    let cw_bytes = match bits_rep + bits_def {
        0 => 0,
        1..=8 => 1,
        9..=16 => 2,
        _ => 4,
    };
    let max_visible = levels.max_visible_def();
    let max_rep = levels.max_rep();
    let has_lists = max_rep > 0;

    let (details, value_encoding, compress) = match &values {
        Values::Fixed { width, .. } => (
            pb::full_zip_layout::Details::BitsPerValue(*width as u32 * 8),
            proto::flat(*width as u64 * 8),
            false,
        ),
        Values::FixedSizeList {
            dim,
            item_width,
            item_validity,
            ..
        } => {
            let bits = (dim * item_width + item_validity.as_ref().map_or(0, |_| dim.div_ceil(8)))
                as u32
                * 8;
            let enc = proto::fixed_size_list(
                *dim as u64,
                item_validity.is_some(),
                proto::flat(*item_width as u64 * 8),
            );
            (pb::full_zip_layout::Details::BitsPerValue(bits), enc, false)
        }
        Values::Variable { large, .. } => {
            let w = if *large { 64 } else { 32 };
            let compress = compress_wide && values.max_value_bytes() >= COMPRESS_VALUE_BYTES;
            let enc = proto::variable(w);
            let enc = if compress {
                proto::general(Scheme::Zstd, Some(0), enc)
            } else {
                enc
            };
            (
                pb::full_zip_layout::Details::BitsPerOffset(w as u32),
                enc,
                compress,
            )
        }
        Values::Bool { .. } => return Err(unsupported("booleans in a full-zip page")),
    };

    let mut data: Vec<u8> = Vec::new();
    let mut row_starts: Vec<u64> = Vec::with_capacity(levels.num_rows + 1);
    let mut v = 0usize;
    for i in 0..n_levels {
        let r = rep.map_or(0, |r| r[i]);
        let d = def.map_or(0, |d| d[i]);
        if !has_lists || r == max_rep {
            row_starts.push(data.len() as u64);
        }
        let cw = ((r as u32) << bits_def) | d as u32;
        data.extend_from_slice(&cw.to_le_bytes()[..cw_bytes]);
        if has_lists && d > max_visible {
            continue; // an empty or null list has no value
        }
        match &values {
            Values::Fixed { bytes, width, .. } => {
                data.extend_from_slice(&bytes[v * width..(v + 1) * width])
            }
            Values::FixedSizeList {
                dim,
                item_width,
                bytes,
                item_validity,
                ..
            } => {
                if let Some(valid) = item_validity {
                    data.extend_from_slice(valid.slice(v * dim, *dim).sliced().as_slice());
                }
                let row = dim * item_width;
                data.extend_from_slice(&bytes[v * row..(v + 1) * row]);
            }
            Values::Variable { large, .. } => {
                if d == 0 && !nulls.is_some_and(|m| m.is_null(v)) {
                    let raw = values.value(v);
                    let stored = if compress {
                        Scheme::Zstd.compress(raw, Some(0))
                    } else {
                        raw.to_vec()
                    };
                    if *large {
                        data.extend_from_slice(&(stored.len() as u64).to_le_bytes());
                    } else {
                        data.extend_from_slice(&(stored.len() as u32).to_le_bytes());
                    }
                    data.extend_from_slice(&stored);
                }
            }
            Values::Bool { .. } => unreachable!(),
        }
        v += 1;
    }
    row_starts.push(data.len() as u64);

    let mut buffers = vec![data];
    let variable = matches!(values, Values::Variable { .. });
    if variable || has_lists {
        // Row offsets, each in the fewest bytes that hold the largest.
        let max = *row_starts.last().unwrap();
        let width = if max <= u8::MAX as u64 {
            1
        } else if max <= u16::MAX as u64 {
            2
        } else if max <= u32::MAX as u64 {
            4
        } else {
            8
        };
        buffers.push(
            row_starts
                .iter()
                .flat_map(|o| o.to_le_bytes().into_iter().take(width))
                .collect(),
        );
    }
    let layout = pb::FullZipLayout {
        bits_rep,
        bits_def,
        details: Some(details),
        num_items: n_levels as u32,
        num_visible_items: values.len() as u32,
        value_compression: Some(value_encoding),
        layers: levels.layers.iter().map(|l| l.to_proto()).collect(),
    };
    Ok(EncodedPage {
        buffers,
        layout: pb::PageLayout {
            layout: Some(pb::page_layout::Layout::FullZipLayout(layout)),
        },
        num_rows: levels.num_rows as u64,
    })
}
