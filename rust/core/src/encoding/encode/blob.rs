//! Blob pages. The values are written by the file writer (v1, and v2's inline values:
//! out of line in the data file, where only it knows their position) or beside the file
//! (v2's packed and dedicated values); the page holds one descriptor per item.
//!
//! v1 (format 2.1): `{position, size}` per item, a mini-block page of packed u64 pairs
//! inside a `BlobLayout` that carries the column's layers. A NULL's descriptor has size 0
//! and its levels packed into the position (repetition in bits 0..16, definition in bits
//! 16..32), an empty value is `{0, 0}`.
//!
//! v2 (format 2.2): `{kind u8, position u64, size u64, blob_id u32, blob_uri utf8}` per
//! row, a full-zip page of variable packed structs; a NULL row is a NULL item.
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, StructArray, UInt64Array};

use super::levels::LeafLevels;
use super::{packed, EncodedPage, PageOptions};
use crate::encoding::layout::Layer;
use crate::error::{unsupported, Result};
use crate::proto::encodings21 as pb;

/// What each item of a blob column's page is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    /// NULL, with its definition level.
    Null(u16),
    Empty,
    /// Value `i` of the levels' values, to be written out of line.
    Value(usize),
}

/// The items of `levels` (a blob column's page, outside any list).
pub fn items(levels: &LeafLevels) -> Result<Vec<Item>> {
    if levels.rep.is_some() {
        return Err(unsupported("writing blob values inside lists"));
    }
    let values = &levels.values;
    (0..values.len())
        .map(|i| {
            let def = levels.def.as_ref().map_or(0, |d| d[i]);
            Ok(match def {
                0 if value(values, i)?.is_empty() => Item::Empty,
                0 => Item::Value(i),
                d => Item::Null(d),
            })
        })
        .collect()
}

/// The bytes of value `i` of a blob column (binary or large_binary).
pub fn value(values: &ArrayRef, i: usize) -> Result<&[u8]> {
    if let Some(b) = values
        .as_any()
        .downcast_ref::<arrow_array::LargeBinaryArray>()
    {
        return Ok(b.value(i));
    }
    if let Some(b) = values.as_any().downcast_ref::<arrow_array::BinaryArray>() {
        return Ok(b.value(i));
    }
    Err(unsupported(format!(
        "blob values of type {}",
        values.data_type()
    )))
}

/// Value `i` of a blob column as a slice of the array's own buffer: the bytes go to
/// storage without a copy (a blob can be hundreds of megabytes).
pub fn shared_value(values: &ArrayRef, i: usize) -> Result<bytes::Bytes> {
    use arrow_array::{BinaryArray, LargeBinaryArray};
    let (buffer, start, end) = if let Some(b) = values.as_any().downcast_ref::<LargeBinaryArray>() {
        let o = b.value_offsets();
        (b.values(), o[i] as usize, o[i + 1] as usize)
    } else if let Some(b) = values.as_any().downcast_ref::<BinaryArray>() {
        let o = b.value_offsets();
        (b.values(), o[i] as usize, o[i + 1] as usize)
    } else {
        return Err(unsupported(format!(
            "blob values of type {}",
            values.data_type()
        )));
    };
    Ok(bytes::Bytes::from_owner(buffer.clone()).slice(start..end))
}

/// The descriptor of an item: a written value's position and size, `{0, 0}` for an
/// empty value, the levels for a NULL.
pub fn descriptor(item: Item, written: Option<(u64, u64)>) -> (u64, u64) {
    match (item, written) {
        (Item::Null(def), _) => (u64::from(def) << 16, 0),
        (Item::Value(_), Some(w)) => w,
        _ => (0, 0),
    }
}

/// The page of `descriptors` for a column of `layers` holding `num_rows` rows.
pub fn page(
    descriptors: &[(u64, u64)],
    layers: Vec<Layer>,
    num_rows: usize,
    large_chunks: bool,
) -> Result<EncodedPage> {
    let positions: UInt64Array = descriptors.iter().map(|d| d.0).collect();
    let sizes: UInt64Array = descriptors.iter().map(|d| d.1).collect();
    let values = StructArray::from(vec![
        (u64_field("position"), Arc::new(positions) as ArrayRef),
        (u64_field("size"), Arc::new(sizes) as ArrayRef),
    ]);
    let inner_levels = LeafLevels {
        layers: vec![Layer::AllValidItem],
        rep: None,
        def: None,
        values: Arc::new(values),
        num_rows: descriptors.len(),
    };
    let opts = PageOptions {
        large_chunks,
        ..Default::default()
    };
    let inner = packed::encode(inner_levels, &opts, "blob descriptors")?;
    let layout = pb::BlobLayout {
        inner_layout: Some(Box::new(inner.layout)),
        layers: layers.iter().map(|l| l.to_proto()).collect(),
    };
    Ok(EncodedPage {
        buffers: inner.buffers,
        layout: pb::PageLayout {
            layout: Some(pb::page_layout::Layout::BlobLayout(Box::new(layout))),
        },
        num_rows: num_rows as u64,
    })
}

fn u64_field(name: &str) -> Arc<arrow_schema::Field> {
    Arc::new(arrow_schema::Field::new(
        name,
        arrow_schema::DataType::UInt64,
        false,
    ))
}

/// One v2 blob's descriptor (see `crate::blob::BlobKind` for the kinds).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DescriptorV2 {
    pub kind: u8,
    /// Inline: the offset in the data file; packed and external: in their object.
    pub position: u64,
    pub size: u64,
    /// Packed and dedicated: the sidecar's id; external: the base id (0: none).
    pub blob_id: u32,
    pub uri: String,
}

/// The page of a v2 blob column's descriptors (None: a NULL row), a top-level column.
pub fn page_v2(descriptors: &[Option<DescriptorV2>]) -> Result<EncodedPage> {
    use arrow_array::builder::{StringBuilder, UInt32Builder, UInt64Builder, UInt8Builder};
    use arrow_schema::{DataType, Field};
    let n = descriptors.len();
    let (mut kind, mut position, mut size) = (
        UInt8Builder::with_capacity(n),
        UInt64Builder::with_capacity(n),
        UInt64Builder::with_capacity(n),
    );
    let (mut blob_id, mut uri) = (UInt32Builder::with_capacity(n), StringBuilder::new());
    for d in descriptors {
        // A NULL row's fields hold zeros (the struct's validity says it is NULL).
        let d = d.clone().unwrap_or_default();
        kind.append_value(d.kind);
        position.append_value(d.position);
        size.append_value(d.size);
        blob_id.append_value(d.blob_id);
        uri.append_value(&d.uri);
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(kind.finish()),
        Arc::new(position.finish()),
        Arc::new(size.finish()),
        Arc::new(blob_id.finish()),
        Arc::new(uri.finish()),
    ];
    let fields = vec![
        Field::new("kind", DataType::UInt8, false),
        Field::new("position", DataType::UInt64, false),
        Field::new("size", DataType::UInt64, false),
        Field::new("blob_id", DataType::UInt32, false),
        Field::new("blob_uri", DataType::Utf8, false),
    ];
    let nulls =
        arrow_buffer::NullBuffer::from(descriptors.iter().map(Option::is_some).collect::<Vec<_>>());
    let values: ArrayRef = Arc::new(StructArray::try_new(
        fields.into(),
        columns,
        Some(nulls).filter(|n| n.null_count() > 0),
    )?);
    let levels = super::levels::leaf_levels(&values, &[])?;
    let opts = PageOptions {
        large_chunks: true,
        ..Default::default()
    };
    packed::encode(levels, &opts, "blob descriptors")
}
