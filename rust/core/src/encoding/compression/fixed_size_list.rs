//! Fixed-size lists of primitive items (vectors). The lists are flattened into their
//! items; when items can be null, each list layer that has nulls stores an item-validity
//! bitmap (outermost layer first) before the item data.
use arrow_buffer::BooleanBufferBuilder;

use super::Codec;
use crate::encoding::bytes::slice;
use crate::encoding::values::ValuesBuilder;
use crate::error::{corrupt, Result};

/// The list layers (dimension, has item validity), outermost first, and the item codec.
fn layers(codec: &Codec) -> (Vec<(usize, bool)>, &Codec) {
    let mut out = Vec::new();
    let mut c = codec;
    while let Codec::FixedSizeList {
        dim,
        has_validity,
        inner,
    } = c
    {
        out.push((*dim as usize, *has_validity));
        c = inner;
    }
    (out, c)
}

/// The validity builder of a list layer, created on first use with every earlier item valid.
fn validity_mut(
    validity: &mut Option<BooleanBufferBuilder>,
    existing_items: usize,
) -> &mut BooleanBufferBuilder {
    validity.get_or_insert_with(|| {
        let mut b = BooleanBufferBuilder::new(existing_items);
        b.append_n(existing_items, true);
        b
    })
}

/// Walk the list layers of `out`, calling `fill_validity(layer, items, builder)` for each
/// one, and return the item builder and the total number of items for `rows` lists.
fn descend<'a>(
    codec_layers: &[(usize, bool)],
    rows: usize,
    mut node: &'a mut ValuesBuilder,
    mut fill_validity: impl FnMut(usize, usize, &mut BooleanBufferBuilder) -> Result<()>,
) -> Result<(&'a mut ValuesBuilder, usize)> {
    let mut count = rows;
    for (layer, &(dim, has_validity)) in codec_layers.iter().enumerate() {
        match node {
            ValuesBuilder::FixedSizeList {
                dim: d,
                validity,
                child,
                len,
            } => {
                if *d != dim {
                    return Err(corrupt(format!(
                        "lists of {dim} items read as lists of {d}"
                    )));
                }
                let items = count
                    .checked_mul(dim)
                    .ok_or_else(|| corrupt(format!("{count} lists of {dim} items")))?;
                if has_validity {
                    let existing = child.len();
                    fill_validity(layer, items, validity_mut(validity, existing))?;
                } else if let Some(v) = validity {
                    v.append_n(items, true);
                }
                *len += count;
                count = items;
                node = child;
            }
            _ => {
                return Err(corrupt(
                    "fixed-size list encoding for values that are not fixed-size lists",
                ))
            }
        }
    }
    Ok((node, count))
}

/// A mini-block chunk of `n` lists.
pub fn decode_miniblock(
    codec: &Codec,
    bufs: &[&[u8]],
    n: usize,
    out: &mut ValuesBuilder,
) -> Result<()> {
    let (codec_layers, leaf) = layers(codec);
    let mut next = 0usize;
    let (items_builder, items) = descend(&codec_layers, n, out, |_, items, v| {
        let bits = bufs
            .get(next)
            .ok_or_else(|| corrupt("fixed-size list chunk is missing a validity buffer"))?;
        next += 1;
        if bits.len() * 8 < items {
            return Err(corrupt(format!(
                "validity of {items} items needs {} bytes, have {}",
                items.div_ceil(8),
                bits.len()
            )));
        }
        v.append_packed_range(0..items, bits);
        Ok(())
    })?;
    leaf.decode_miniblock(&bufs[next..], items, items_builder)
}

/// One list of a full-zip page: each validity layer's bytes, then the item data.
pub fn decode_value(codec: &Codec, value: &[u8], out: &mut ValuesBuilder) -> Result<()> {
    let (codec_layers, leaf) = layers(codec);
    let mut at = 0usize;
    let (items_builder, items) = descend(&codec_layers, 1, out, |_, items, v| {
        let bytes = slice(value, at, items.div_ceil(8), "fixed-size list validity")?;
        at += bytes.len();
        v.append_packed_range(0..items, bytes);
        Ok(())
    })?;
    leaf.decode_block(&value[at..], items, items_builder)
}
