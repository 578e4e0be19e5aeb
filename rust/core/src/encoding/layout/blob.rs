//! Blob pages (large binary values stored out of line). The page holds one descriptor
//! `{position, size}` per item in an inner layout; a descriptor of size 0 with a non-zero
//! position is a null whose levels are packed into the position (rep in bits 0..16, def
//! in bits 16..32). Like pylance, a scan returns the descriptors, not the bytes.
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, StructArray, UInt64Array};
use arrow_schema::DataType;
use bytes::Bytes;

use super::{decode_page, layers_from_proto, max_visible_def, DecodedPage, Layer, PageValues};
use crate::error::{corrupt, Result};
use crate::proto::encodings21::BlobLayout;

pub fn decode(
    b: &BlobLayout,
    buffers: &[Bytes],
    num_rows: u64,
    leaf_type: &DataType,
) -> Result<DecodedPage> {
    let layers = layers_from_proto(&b.layers)?;
    let inner_layout = b
        .inner_layout
        .as_ref()
        .ok_or_else(|| corrupt("blob page without an inner layout"))?;
    let DataType::Struct(fields) = leaf_type else {
        return Err(corrupt(format!("blob descriptions read as {leaf_type}")));
    };
    let inner = decode_page(inner_layout, buffers, num_rows, leaf_type)?;
    let descriptors = inner.values.into_array(leaf_type, None)?;
    let s = descriptors
        .as_any()
        .downcast_ref::<StructArray>()
        .ok_or_else(|| corrupt("blob descriptions"))?;
    if s.num_columns() < 2 {
        return Err(corrupt("blob descriptions without a position and a size"));
    }
    let (pos, size) = match (
        s.column(0).as_any().downcast_ref::<UInt64Array>(),
        s.column(1).as_any().downcast_ref::<UInt64Array>(),
    ) {
        (Some(p), Some(z)) => (p.values(), z.values()),
        _ => return Err(corrupt("blob descriptions are not u64 position and size")),
    };
    let n = pos.len();
    let mut rep = Vec::with_capacity(n);
    let mut def = Vec::with_capacity(n);
    for i in 0..n {
        let (r, d) = if size[i] == 0 && pos[i] != 0 {
            ((pos[i] & 0xFFFF) as u16, ((pos[i] >> 16) & 0xFFFF) as u16)
        } else {
            (0, 0)
        };
        rep.push(r);
        def.push(d);
    }
    let has_def = layers != [Layer::AllValidItem];
    let has_rep = rep.iter().any(|&r| r != 0);
    let visible = max_visible_def(&layers);
    let values: ArrayRef = if layers.iter().any(|l| l.is_list()) {
        let keep = BooleanArray::from(def.iter().map(|&d| d <= visible).collect::<Vec<_>>());
        arrow_select::filter::filter(&descriptors, &keep)?
    } else {
        Arc::new(StructArray::new(fields.clone(), s.columns().to_vec(), None))
    };
    Ok(DecodedPage {
        num_rows,
        layers,
        rep: has_rep.then(|| rep.into()),
        def: has_def.then(|| def.into()),
        values: PageValues::Array(values),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::encoding::encode::proto;
    use crate::proto::encodings21::{page_layout::Layout, MiniBlockLayout, PageLayout};

    #[test]
    fn descriptions_need_a_position_and_a_size() {
        // Read as a struct of one field, blob descriptions indexed a missing column.
        let inner = PageLayout {
            layout: Some(Layout::MiniBlockLayout(MiniBlockLayout {
                value_compression: Some(proto::flat(64)),
                layers: vec![Layer::AllValidItem.to_proto()],
                num_buffers: 0,
                num_items: 0,
                ..Default::default()
            })),
        };
        let b = BlobLayout {
            inner_layout: Some(Box::new(inner)),
            layers: vec![Layer::AllValidItem.to_proto()],
        };
        let dt =
            DataType::Struct(vec![arrow_schema::Field::new("p", DataType::UInt64, true)].into());
        let r =
            std::panic::catch_unwind(|| decode(&b, &[Bytes::new(), Bytes::new()], 0, &dt).is_err());
        assert!(r.unwrap());
    }
}
