//! Spark's batches in a table's types, for writes into an existing table: Spark's Arrow
//! form of a row has fewer types than the table may use (`string` for `large_string`,
//! microsecond timestamps in the session's zone, lists for fixed-size vectors, `binary`
//! for blobs), so each column is converted to the table's type of the same name, and a
//! value that does not fit is an error naming the column. A column already of the
//! table's type is kept as it is (no copy). Both Spark writers use this: the JVM writer
//! (`rust/jni`) and the Python data source (`lance_core/spark/types.py`).
use std::sync::Arc;

use arrow_array::{
    cast::AsArray, new_null_array, Array, ArrayRef, FixedSizeListArray, GenericListArray, MapArray,
    OffsetSizeTrait, RecordBatch, RecordBatchOptions, StructArray, UInt64Array,
};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::{DataType, Field, SchemaRef};

use crate::write::blob_v2;
use crate::{Error, Result};

/// `batch` (Spark's, with the table's column names) with `target`'s columns, in its order
/// and with its types.
pub fn to_table_batch(batch: &RecordBatch, target: &SchemaRef) -> Result<RecordBatch> {
    if batch.schema().fields() == target.fields() {
        return Ok(batch.clone());
    }
    let columns = target
        .fields()
        .iter()
        .map(|f| {
            let column = batch.column_by_name(f.name()).ok_or_else(|| {
                Error::schema_mismatch(format!("the data has no column '{}'", f.name()))
            })?;
            to_table_array(column, f, f.name())
        })
        .collect::<Result<Vec<_>>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    // Nullability is the writer's to check (it names the column).
    let schema = Arc::new(arrow_schema::Schema::new_with_metadata(
        target
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect::<Vec<_>>(),
        target.metadata().clone(),
    ));
    Ok(RecordBatch::try_new_with_options(
        schema, columns, &options,
    )?)
}

/// `array` as the type of `target` (at `path`, for messages).
pub fn to_table_array(array: &ArrayRef, target: &Field, path: &str) -> Result<ArrayRef> {
    let dst = target.data_type();
    if array.data_type() == dst {
        return Ok(array.clone());
    }
    // Blob v2 columns take bytes, as blobs.
    if blob_v2::accepts(target, array.data_type()) {
        if let Some(blobs) = blob_v2::conform(array, target)? {
            return Ok(blobs);
        }
    }
    let src = array.data_type().clone();
    match (&src, dst) {
        (DataType::Dictionary(_, values), _) => {
            let plain = cast(array, values, path)?;
            to_table_array(&plain, target, path)
        }
        (DataType::Struct(_), DataType::Struct(fields)) => {
            let s = array.as_struct();
            if s.num_columns() != fields.len() {
                return Err(mismatch(path, &src, dst, "a different number of fields"));
            }
            let children = s
                .columns()
                .iter()
                .zip(fields.iter())
                .map(|(c, f)| to_table_array(c, f, &format!("{path}.{}", f.name())))
                .collect::<Result<Vec<_>>>()?;
            let relaxed = fields
                .iter()
                .map(|f| f.as_ref().clone().with_nullable(true))
                .collect::<Vec<_>>();
            Ok(Arc::new(StructArray::try_new(
                relaxed.into(),
                children,
                s.nulls().cloned(),
            )?))
        }
        (DataType::Map(_, _), DataType::Map(entries, sorted)) => {
            let m = array.as_map();
            let DataType::Struct(kv) = entries.data_type() else {
                return Err(mismatch(path, &src, dst, "a map without entries"));
            };
            let keys = to_table_array(m.keys(), &kv[0], &format!("{path}.key"))?;
            let values = to_table_array(m.values(), &kv[1], &format!("{path}.value"))?;
            let entries_array = StructArray::try_new(kv.clone(), vec![keys, values], None)?;
            Ok(Arc::new(MapArray::try_new(
                entries.clone(),
                m.offsets().clone(),
                entries_array,
                m.nulls().cloned(),
                *sorted,
            )?))
        }
        (DataType::List(_), DataType::List(item)) => list::<i32, i32>(array, item, path),
        (DataType::List(_), DataType::LargeList(item)) => list::<i32, i64>(array, item, path),
        (DataType::LargeList(_), DataType::List(item)) => list::<i64, i32>(array, item, path),
        (DataType::LargeList(_), DataType::LargeList(item)) => list::<i64, i64>(array, item, path),
        (DataType::List(_), DataType::FixedSizeList(item, size)) => {
            fixed::<i32>(array, item, *size, path)
        }
        (DataType::LargeList(_), DataType::FixedSizeList(item, size)) => {
            fixed::<i64>(array, item, *size, path)
        }
        _ => cast(array, dst, path),
    }
}

/// A value that does not fit the table's column: invalid input, naming the column.
fn mismatch(path: &str, src: &DataType, dst: &DataType, why: &str) -> Error {
    Error::invalid(format!(
        "column '{path}': cannot convert {src} to {dst}: {why}"
    ))
}

/// A safe cast: a value that does not fit is an error, not a null or a wrapped number.
fn cast(array: &ArrayRef, dst: &DataType, path: &str) -> Result<ArrayRef> {
    let options = CastOptions {
        safe: false,
        ..Default::default()
    };
    cast_with_options(array, dst, &options)
        .map_err(|e| mismatch(path, array.data_type(), dst, &e.to_string()))
}

/// A list column as lists of `item` with offsets of `O`.
fn list<I: OffsetSizeTrait, O: OffsetSizeTrait>(
    array: &ArrayRef,
    item: &Arc<Field>,
    path: &str,
) -> Result<ArrayRef> {
    let l = array.as_list::<I>();
    let values = to_table_array(l.values(), item, &format!("{path}.item"))?;
    let offsets = l
        .offsets()
        .iter()
        .map(|o| {
            O::from_usize(o.as_usize()).ok_or_else(|| {
                Error::invalid(format!("column '{path}': too many items for {item}"))
            })
        })
        .collect::<Result<Vec<O>>>()?;
    Ok(Arc::new(GenericListArray::<O>::try_new(
        Arc::new(item.as_ref().clone().with_nullable(true)),
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        values,
        l.nulls().cloned(),
    )?))
}

/// A list column as fixed-size lists of `size` items (vectors): every list that is not
/// null must have `size` items; a null list's items, however many, are not kept.
fn fixed<I: OffsetSizeTrait>(
    array: &ArrayRef,
    item: &Arc<Field>,
    size: i32,
    path: &str,
) -> Result<ArrayRef> {
    let l = array.as_list::<I>();
    let n = size as usize;
    let offsets = l.offsets();
    let mut exact = true;
    for i in 0..l.len() {
        let len = offsets[i + 1].as_usize() - offsets[i].as_usize();
        if len != n {
            if l.is_valid(i) {
                return Err(Error::invalid(format!(
                    "column '{path}': every list must have {size} items (row {i} has {len})"
                )));
            }
            exact = false;
        }
    }
    let first = offsets[0].as_usize();
    let values = if exact {
        l.values().slice(first, l.len() * n)
    } else {
        // Null lists of other lengths: each row gets `size` slots, taken from its own items
        // where it has them (nulls otherwise; the row is null anyway).
        let mut picks: Vec<Option<u64>> = Vec::with_capacity(l.len() * n);
        for i in 0..l.len() {
            let (start, end) = (offsets[i].as_usize(), offsets[i + 1].as_usize());
            picks.extend((0..n).map(|k| (start + k < end).then_some((start + k) as u64)));
        }
        if l.values().is_empty() {
            new_null_array(l.values().data_type(), picks.len())
        } else {
            arrow_select::take::take(l.values(), &UInt64Array::from(picks), None)?
        }
    };
    let values = to_table_array(&values, item, &format!("{path}.item"))?;
    Ok(Arc::new(FixedSizeListArray::try_new(
        Arc::new(item.as_ref().clone().with_nullable(true)),
        size,
        values,
        l.nulls().cloned(),
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::Float32Type;
    use arrow_array::{Float32Array, Int32Array, ListArray, StringArray};
    use arrow_schema::Schema;

    fn vectors(rows: Vec<Option<Vec<Option<f32>>>>) -> ArrayRef {
        Arc::new(ListArray::from_iter_primitive::<Float32Type, _, _>(rows))
    }

    #[test]
    fn spark_rows_take_the_tables_types() {
        let spark = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, true),
            Field::new("name", DataType::Utf8, true),
            Field::new("v", DataType::new_list(DataType::Float32, true), true),
        ]));
        let batch = RecordBatch::try_new(
            spark,
            vec![
                Arc::new(Int32Array::from(vec![1, 2, 3])),
                Arc::new(StringArray::from(vec![Some("a"), None, Some("c")])),
                vectors(vec![
                    Some(vec![Some(1.0), Some(2.0)]),
                    None,
                    Some(vec![Some(5.0), Some(6.0)]),
                ]),
            ],
        )
        .unwrap();
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        let table = Arc::new(Schema::new(vec![
            Field::new("v", DataType::FixedSizeList(item, 2), true),
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::LargeUtf8, true),
        ]));
        let out = to_table_batch(&batch, &table).unwrap();
        assert_eq!(out.column(1).data_type(), &DataType::Int64);
        assert_eq!(out.column(2).data_type(), &DataType::LargeUtf8);
        let v = out.column(0).as_fixed_size_list();
        assert!(v.is_null(1));
        let items = v.values().as_any().downcast_ref::<Float32Array>().unwrap();
        assert_eq!(items.len(), 6);
        assert_eq!((items.value(4), items.value(5)), (5.0, 6.0));
    }

    #[test]
    fn a_value_that_does_not_fit_names_its_column() {
        let lists = vectors(vec![Some(vec![Some(1.0)])]);
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        let err = to_table_array(
            &lists,
            &Field::new("v", DataType::FixedSizeList(item, 2), true),
            "v",
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("column 'v': every list must have 2 items"),
            "{err}"
        );
        let big: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![1i64 << 40]));
        let err = to_table_array(&big, &Field::new("x", DataType::Int32, true), "x").unwrap_err();
        assert!(
            err.to_string()
                .contains("column 'x': cannot convert Int64 to Int32"),
            "{err}"
        );
    }
}
