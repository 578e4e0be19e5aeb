//! Encoding: Arrow arrays → page bytes, the inverse of `layout` and `compression`.
//!
//! For each page of a leaf column: `levels` computes repetition/definition levels from
//! the arrays, then one layout is picked: a constant page when every value is null,
//! full-zip when a value takes 256 bytes or more, mini-block otherwise.
pub mod array20;
pub mod blob;
pub mod distinct;
pub mod fsst;
pub mod fullzip;
pub mod levels;
pub mod miniblock;
pub mod packed;
pub mod proto;
pub mod values;

use levels::LeafLevels;
use values::Values;

use crate::encoding::compression::Scheme;
use crate::error::Result;
use crate::proto::encodings21 as pb;

/// Values this wide or wider go to full-zip pages.
const FULL_ZIP_BYTES: usize = 256;

/// A page ready to be written: its buffers and layout.
pub struct EncodedPage {
    pub buffers: Vec<Vec<u8>>,
    pub layout: pb::PageLayout,
    pub num_rows: u64,
}

/// Per-column choices, from the file version and the field's `lance-encoding:` metadata.
#[derive(Clone, Copy, Debug, Default)]
pub struct PageOptions {
    /// 2.2: u32 chunk words and buffer sizes; dictionaries lz4-compressed.
    pub large_chunks: bool,
    /// General compression requested for the values (zstd or lz4, with a level).
    pub compression: Option<(Scheme, Option<i32>)>,
    pub allow_dictionary: bool,
    pub allow_fsst: bool,
    /// Force a structural layout (`lance-encoding:structural-encoding`).
    pub force_full_zip: bool,
    pub force_mini_block: bool,
}

/// Encode one page of a leaf column.
pub fn encode_page(levels: LeafLevels, opts: &PageOptions) -> Result<EncodedPage> {
    let all_null = levels.values.logical_null_count() == levels.values.len();
    if all_null {
        return Ok(all_null_page(&levels));
    }
    let values = Values::of(&levels.values)?;
    let wide = values.max_value_bytes() >= FULL_ZIP_BYTES;
    let fixed_bool = matches!(values, Values::Bool { .. });
    // Dictionaries are page-level state that only mini-block pages carry.
    let dictionary = matches!(
        levels.values.data_type(),
        arrow_schema::DataType::Dictionary(..)
    );
    if (wide || opts.force_full_zip) && !opts.force_mini_block && !fixed_bool && !dictionary {
        return fullzip::encode(&levels, true);
    }
    miniblock::encode(&levels, opts)
}

/// Every value null (or no values at all): only the levels matter. A single nullable
/// layer needs nothing stored; otherwise the levels are kept as raw u16.
fn all_null_page(levels: &LeafLevels) -> EncodedPage {
    let simple =
        levels.layers == [crate::encoding::layout::Layer::NullableItem] && levels.rep.is_none();
    let raw = |l: &Option<Vec<u16>>| -> Vec<u8> {
        l.as_ref()
            .map(|l| l.iter().flat_map(|x| x.to_le_bytes()).collect())
            .unwrap_or_default()
    };
    let buffers = if simple {
        vec![]
    } else {
        vec![raw(&levels.rep), raw(&levels.def)]
    };
    let layout = pb::ConstantLayout {
        layers: levels.layers.iter().map(|l| l.to_proto()).collect(),
        ..Default::default()
    };
    EncodedPage {
        buffers,
        layout: pb::PageLayout {
            layout: Some(pb::page_layout::Layout::ConstantLayout(layout)),
        },
        num_rows: levels.num_rows as u64,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, DictionaryArray};

    use super::*;

    #[test]
    fn dictionaries_stay_mini_block_when_full_zip_is_forced() {
        // `lance-encoding:structural-encoding=fullzip` on a dictionary column made the
        // full-zip writer slice the (empty) value bytes it keeps for dictionaries: a panic.
        let dict: DictionaryArray<arrow_array::types::Int32Type> =
            ["a", "b", "a"].into_iter().collect();
        let array: ArrayRef = Arc::new(dict);
        let levels = levels::leaf_levels(&array, &[]).unwrap();
        let opts = PageOptions {
            force_full_zip: true,
            ..Default::default()
        };
        let page = encode_page(levels, &opts).unwrap();
        assert!(matches!(
            page.layout.layout,
            Some(pb::page_layout::Layout::MiniBlockLayout(_))
        ));
    }
}
