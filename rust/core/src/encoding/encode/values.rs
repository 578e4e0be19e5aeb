//! The raw values of a leaf array, as the encoders see them: fixed-width bytes, booleans,
//! variable-width values with offsets, or fixed-size lists of fixed-width items. Buffers
//! are shared with the array, not copied.
use arrow_array::{Array, ArrayRef, BooleanArray, FixedSizeListArray};
use arrow_buffer::{BooleanBuffer, Buffer};
use arrow_schema::DataType;

use crate::error::{unsupported, Result};

pub enum Values {
    /// `len` values of `width` bytes each.
    Fixed {
        bytes: Buffer,
        width: usize,
        len: usize,
    },
    /// Booleans.
    Bool { bits: BooleanBuffer },
    /// Variable-width values: `offsets[i]..offsets[i+1]` of `data`.
    Variable {
        offsets: Vec<u64>,
        data: Buffer,
        large: bool,
    },
    /// Fixed-size lists of `dim` fixed-width items, with the items' validity if any is null.
    FixedSizeList {
        dim: usize,
        item_width: usize,
        bytes: Buffer,
        item_validity: Option<BooleanBuffer>,
        len: usize,
    },
}

impl Values {
    pub fn of(array: &ArrayRef) -> Result<Values> {
        let data = array.to_data();
        let (offset, len) = (data.offset(), data.len());
        Ok(match array.data_type() {
            // Dictionary arrays are encoded from their keys and values (see `miniblock`);
            // here they only answer size questions.
            DataType::Dictionary(..) => Values::Fixed {
                bytes: Buffer::from_vec(Vec::<u8>::new()),
                width: 4,
                len,
            },
            DataType::Boolean => Values::Bool {
                bits: array
                    .as_any()
                    .downcast_ref::<BooleanArray>()
                    .unwrap()
                    .values()
                    .clone(),
            },
            DataType::Utf8 | DataType::Binary => {
                let offs = &data.buffers()[0].typed_data::<i32>()[offset..offset + len + 1];
                Values::Variable {
                    offsets: offs.iter().map(|&o| o as u64).collect(),
                    data: data.buffers()[1].clone(),
                    large: false,
                }
            }
            DataType::LargeUtf8 | DataType::LargeBinary => {
                let offs = &data.buffers()[0].typed_data::<i64>()[offset..offset + len + 1];
                Values::Variable {
                    offsets: offs.iter().map(|&o| o as u64).collect(),
                    data: data.buffers()[1].clone(),
                    large: true,
                }
            }
            DataType::FixedSizeBinary(w) => {
                let w = *w as usize;
                Values::Fixed {
                    bytes: data.buffers()[0].slice_with_length(offset * w, len * w),
                    width: w,
                    len,
                }
            }
            DataType::FixedSizeList(item, dim) => {
                let dim = *dim as usize;
                let iw = match item.data_type() {
                    // bfloat16 items, say
                    DataType::FixedSizeBinary(w) => Some(*w as usize),
                    t => t.primitive_width(),
                };
                let Some(iw) = iw else {
                    return Err(unsupported(format!(
                        "writing fixed-size lists of {}",
                        item.data_type()
                    )));
                };
                let fsl = array.as_any().downcast_ref::<FixedSizeListArray>().unwrap();
                let items = fsl.values().to_data();
                let start = items.offset() + offset * dim;
                let bytes = items.buffers()[0].slice_with_length(start * iw, len * dim * iw);
                let item_validity = items
                    .nulls()
                    .filter(|n| n.null_count() > 0)
                    .map(|n| n.inner().slice(offset * dim, len * dim));
                Values::FixedSizeList {
                    dim,
                    item_width: iw,
                    bytes,
                    item_validity,
                    len,
                }
            }
            dt => match dt.primitive_width() {
                Some(w) => Values::Fixed {
                    bytes: data.buffers()[0].slice_with_length(offset * w, len * w),
                    width: w,
                    len,
                },
                None => return Err(unsupported(format!("writing values of type {dt}"))),
            },
        })
    }

    pub fn len(&self) -> usize {
        match self {
            Values::Fixed { len, .. } | Values::FixedSizeList { len, .. } => *len,
            Values::Bool { bits } => bits.len(),
            Values::Variable { offsets, .. } => offsets.len() - 1,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The largest stored size of one value, in bytes.
    pub fn max_value_bytes(&self) -> usize {
        match self {
            Values::Fixed { width, .. } => *width,
            Values::Bool { .. } => 1,
            Values::Variable { offsets, .. } => offsets
                .windows(2)
                .map(|w| (w[1] - w[0]) as usize)
                .max()
                .unwrap_or(0),
            Values::FixedSizeList {
                dim,
                item_width,
                item_validity,
                ..
            } => dim * item_width + item_validity.as_ref().map_or(0, |_| dim.div_ceil(8)),
        }
    }

    pub fn data_type(&self) -> &'static str {
        match self {
            Values::Fixed { .. } => "fixed-width values",
            Values::Bool { .. } => "booleans",
            Values::Variable { .. } => "variable-width values",
            Values::FixedSizeList { .. } => "fixed-size lists",
        }
    }

    /// Value `i` of variable-width values.
    pub fn value(&self, i: usize) -> &[u8] {
        match self {
            Values::Variable { offsets, data, .. } => {
                &data[offsets[i] as usize..offsets[i + 1] as usize]
            }
            Values::Fixed { bytes, width, .. } => &bytes[i * width..(i + 1) * width],
            _ => &[],
        }
    }
}
