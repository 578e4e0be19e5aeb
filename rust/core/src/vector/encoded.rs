//! The rows of a vector index as a build encodes them (`Encoded`): each row's partition,
//! row id and stored form (its kind's codes, or its values), before they are laid out in
//! the index's files; also how they travel between the tasks of a build spread over
//! workers and the one writing them.
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, Float32Array, RecordBatch, UInt64Array, UInt8Array,
};
use arrow_schema::{DataType, Field, Schema};

use crate::error::{Error, Result};

/// `values` as a fixed-size list of `width` items a row.
pub fn fixed_size_list(values: ArrayRef, width: usize) -> Result<FixedSizeListArray> {
    let item = Arc::new(Field::new("item", values.data_type().clone(), true));
    Ok(FixedSizeListArray::try_new(
        item,
        width as i32,
        values,
        None,
    )?)
}

/// The encoded vectors of some batches: partition, row id and stored form of each.
#[derive(Default)]
pub struct Encoded {
    pub(super) partitions: Vec<u32>,
    pub(super) ids: Vec<u64>,
    /// PQ or SQ codes, one byte a sub-vector (PQ) or element (SQ).
    pub(super) codes: Vec<u8>,
    /// FLAT: the vectors (unit length for cosine).
    pub(super) values: Vec<f32>,
}

impl Encoded {
    pub fn append(&mut self, mut other: Encoded) {
        self.partitions.append(&mut other.partitions);
        self.ids.append(&mut other.ids);
        self.codes.append(&mut other.codes);
        self.values.append(&mut other.values);
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The rows as a batch (`partition`, `row_id`, and `codes` or `values` as fixed-size
    /// lists), to hand from the tasks of a build spread over workers to the one writing.
    pub fn into_batch(self) -> Result<RecordBatch> {
        let n = self.ids.len();
        let mut fields = vec![
            Field::new("partition", DataType::UInt32, false),
            Field::new("row_id", DataType::UInt64, false),
        ];
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(arrow_array::UInt32Array::from(self.partitions)),
            Arc::new(UInt64Array::from(self.ids)),
        ];
        let lists = [
            (
                "codes",
                self.codes.len(),
                Arc::new(UInt8Array::from(self.codes)) as ArrayRef,
            ),
            (
                "values",
                self.values.len(),
                Arc::new(Float32Array::from(self.values)) as ArrayRef,
            ),
        ];
        for (name, len, values) in lists {
            if let Some(width) = len.checked_div(n).filter(|&w| w > 0) {
                let list = fixed_size_list(values, width)?;
                fields.push(Field::new(name, list.data_type().clone(), false));
                columns.push(Arc::new(list));
            }
        }
        Ok(RecordBatch::try_new(
            Arc::new(Schema::new(fields)),
            columns,
        )?)
    }

    /// The rows of a batch `to_batch` made (read from file `shown`).
    pub fn from_batch(batch: &RecordBatch, shown: &str) -> Result<Encoded> {
        let c = crate::index::FileColumns { batch, shown };
        let mut out = Encoded {
            partitions: c
                .primitive::<arrow_array::types::UInt32Type>("partition")?
                .values()
                .to_vec(),
            ids: c
                .primitive::<arrow_array::types::UInt64Type>("row_id")?
                .values()
                .to_vec(),
            ..Default::default()
        };
        for name in ["codes", "values"] {
            let Some(list) = batch.column_by_name(name) else {
                continue;
            };
            let list = list
                .as_any()
                .downcast_ref::<FixedSizeListArray>()
                .ok_or_else(|| {
                    Error::corrupt(shown, format!("'{name}' is not a list of fixed size"))
                })?;
            let width = list.value_length() as usize;
            let values = list
                .values()
                .slice(list.offset() * width, list.len() * width);
            match name {
                "codes" => out.codes.extend_from_slice(
                    values
                        .as_any()
                        .downcast_ref::<UInt8Array>()
                        .ok_or_else(|| Error::corrupt(shown, "codes are not bytes"))?
                        .values(),
                ),
                _ => out.values.extend_from_slice(
                    values
                        .as_any()
                        .downcast_ref::<Float32Array>()
                        .ok_or_else(|| Error::corrupt(shown, "values are not float32"))?
                        .values(),
                ),
            }
        }
        Ok(out)
    }

    /// Every row's id replaced by `map(id)`, and the rows it maps to None left out (a
    /// compaction's new addresses; deleted rows).
    pub fn remap(&mut self, map: impl Fn(u64) -> Option<u64>) {
        let n = self.ids.len();
        let code_width = self.codes.len().checked_div(n).unwrap_or(0);
        let value_width = self.values.len().checked_div(n).unwrap_or(0);
        let mut kept = 0;
        for r in 0..n {
            let Some(to) = map(self.ids[r]) else {
                continue;
            };
            self.ids[kept] = to;
            self.partitions[kept] = self.partitions[r];
            self.codes
                .copy_within(r * code_width..(r + 1) * code_width, kept * code_width);
            self.values
                .copy_within(r * value_width..(r + 1) * value_width, kept * value_width);
            kept += 1;
        }
        self.ids.truncate(kept);
        self.partitions.truncate(kept);
        self.codes.truncate(kept * code_width);
        self.values.truncate(kept * value_width);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded() -> Encoded {
        Encoded {
            partitions: vec![0, 1, 1],
            ids: vec![10, 11, 12],
            codes: vec![1, 2, 3, 4, 5, 6],
            values: vec![],
        }
    }

    #[test]
    fn remap_moves_ids_and_drops_rows_gone_with_their_codes() {
        let mut e = encoded();
        e.remap(|id| (id != 11).then_some(id + 100));
        assert_eq!(e.ids, vec![110, 112]);
        assert_eq!(e.partitions, vec![0, 1]);
        assert_eq!(e.codes, vec![1, 2, 5, 6]);
    }

    #[test]
    fn a_batch_holds_the_rows_as_they_were() {
        let back = Encoded::from_batch(&encoded().into_batch().unwrap(), "part").unwrap();
        let e = encoded();
        assert_eq!(
            (back.ids, back.partitions, back.codes, back.values),
            (e.ids, e.partitions, e.codes, e.values)
        );
        let empty = Encoded::default().into_batch().unwrap();
        assert_eq!(empty.num_columns(), 2);
        assert!(Encoded::from_batch(&empty, "part").unwrap().is_empty());
    }
}
