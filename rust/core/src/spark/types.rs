//! Spark's view of Arrow types, for readers that hand Spark columnar batches directly (the
//! JVM reader).
//!
//! Spark has fewer types than Arrow. Each Arrow type maps to the Spark type that holds all
//! of its values (uint64 → decimal(20,0), uint32 → bigint, halffloat and bfloat16 → float,
//! decimals of more than 38 digits → their text, ...), so reading valid data never fails
//! on a type; these are the Python data source's rules (`lance_core/spark/types.py`).
//! `to_spark_array` rewrites a column into the few layouts Spark's column vectors read:
//! fixed-width values, variable-width bytes (32- or 64-bit offsets), lists (32- or 64-bit
//! offsets), maps, structs and nulls. Columns already in such a layout are kept as they
//! are (no copy).
use std::sync::Arc;

use arrow_array::{
    cast::AsArray, Array, ArrayRef, GenericListArray, Int64Array, MapArray, OffsetSizeTrait,
    PrimitiveArray, StructArray,
};
use arrow_buffer::OffsetBuffer;
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::{DataType, Field, FieldRef, Fields, TimeUnit};
use serde_json::{json, Value};

use crate::table::schema::{BFLOAT16, EXTENSION_NAME};
use crate::{Error, Result};

/// How a reader treats values finer than Spark's microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Nanos {
    /// Drop them, as PySpark does with pandas data.
    #[default]
    Truncate,
    /// Refuse a value that is not a whole microsecond, naming its column.
    Error,
}

fn extension(field: &Field) -> Option<&str> {
    field.metadata().get(EXTENSION_NAME).map(|s| s.as_str())
}

fn is_json(field: &Field) -> bool {
    matches!(extension(field), Some("arrow.json" | "lance.json"))
}

/// The Spark type (as Spark's JSON) holding every value of `field`.
pub fn spark_type(field: &Field, path: &str) -> Result<Value> {
    if extension(field) == Some(BFLOAT16) {
        return Ok(json!("float"));
    }
    let t = field.data_type();
    if is_json(field) && matches!(t, DataType::Utf8 | DataType::LargeUtf8) {
        return Ok(json!("string"));
    }
    let simple = match t {
        DataType::Boolean => "boolean",
        DataType::Int8 => "byte",
        DataType::Int16 | DataType::UInt8 => "short",
        DataType::Int32 | DataType::UInt16 => "integer",
        DataType::Int64 | DataType::UInt32 => "long",
        DataType::UInt64 => "decimal(20,0)",
        DataType::Float16 | DataType::Float32 => "float",
        DataType::Float64 => "double",
        DataType::Date32 | DataType::Date64 => "date",
        DataType::Null => "null",
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "string",
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => "binary",
        DataType::Timestamp(_, Some(_)) => "timestamp",
        DataType::Timestamp(_, None) => "timestamp_ntz",
        DataType::Time32(_) | DataType::Time64(_) => "time(6)",
        DataType::Duration(_) => "interval day to second",
        DataType::Decimal32(p, s) | DataType::Decimal64(p, s) | DataType::Decimal128(p, s) => {
            return Ok(json!(format!("decimal({p},{s})")))
        }
        DataType::Decimal256(p, s) if *p <= 38 => return Ok(json!(format!("decimal({p},{s})"))),
        DataType::Decimal256(..) => "string",
        DataType::Dictionary(_, values) => {
            let inner = Field::new(field.name(), values.as_ref().clone(), field.is_nullable());
            return spark_type(&inner, path);
        }
        DataType::Struct(children) => {
            let fields = children
                .iter()
                .map(|c| spark_field(c, &format!("{path}.{}", c.name())))
                .collect::<Result<Vec<_>>>()?;
            return Ok(json!({"type": "struct", "fields": fields}));
        }
        DataType::Map(entries, _) => {
            let (key, value) = map_fields(entries);
            return Ok(json!({
                "type": "map",
                "keyType": spark_type(key, &format!("{path}.key"))?,
                "valueType": spark_type(value, &format!("{path}.value"))?,
                "valueContainsNull": value.is_nullable(),
            }));
        }
        DataType::List(item)
        | DataType::LargeList(item)
        | DataType::FixedSizeList(item, _)
        | DataType::ListView(item)
        | DataType::LargeListView(item) => {
            return Ok(json!({
                "type": "array",
                "elementType": spark_type(item, &format!("{path}.item"))?,
                "containsNull": item.is_nullable(),
            }));
        }
        other => {
            return Err(crate::error::unsupported(format!(
                "column '{path}' is {other}, which Spark has no type for"
            )))
        }
    };
    Ok(json!(simple))
}

fn spark_field(field: &Field, path: &str) -> Result<Value> {
    Ok(json!({
        "name": field.name(),
        "type": spark_type(field, path)?,
        "nullable": field.is_nullable(),
        "metadata": {},
    }))
}

/// The Spark schema (Spark's JSON of a StructType) of `fields`.
pub fn spark_schema(fields: &Fields) -> Result<Value> {
    let fields = fields
        .iter()
        .map(|f| spark_field(f, f.name()))
        .collect::<Result<Vec<_>>>()?;
    Ok(json!({"type": "struct", "fields": fields}))
}

fn map_fields(entries: &FieldRef) -> (&FieldRef, &FieldRef) {
    match entries.data_type() {
        DataType::Struct(kv) if kv.len() == 2 => (&kv[0], &kv[1]),
        _ => unreachable!("a map's entries are a struct of two fields"),
    }
}

/// `array` (of `field`, at `path`) in a layout Spark's column vectors read, holding the
/// values of `spark_type(field)`.
pub fn to_spark_array(
    array: &ArrayRef,
    field: &Field,
    path: &str,
    nanos: Nanos,
) -> Result<ArrayRef> {
    if extension(field) == Some(BFLOAT16) {
        return bfloat16_to_f32(array, path);
    }
    let fail = |e: arrow_schema::ArrowError| {
        Error::invalid(format!(
            "column '{path}': cannot convert {} for Spark: {e}",
            array.data_type()
        ))
    };
    let cast = |to: &DataType| cast_with_options(array, to, &CastOptions::default()).map_err(fail);
    Ok(match array.data_type() {
        DataType::UInt8 => cast(&DataType::Int16)?,
        DataType::UInt16 => cast(&DataType::Int32)?,
        DataType::UInt32 => cast(&DataType::Int64)?,
        DataType::UInt64 => cast(&DataType::Decimal128(20, 0))?,
        DataType::Float16 => cast(&DataType::Float32)?,
        DataType::Date64 => cast(&DataType::Date32)?,
        DataType::Utf8View => cast(&DataType::Utf8)?,
        DataType::BinaryView | DataType::FixedSizeBinary(_) => cast(&DataType::Binary)?,
        DataType::Decimal32(p, s) | DataType::Decimal64(p, s) => {
            cast(&DataType::Decimal128(*p, *s))?
        }
        DataType::Decimal256(p, s) if *p <= 38 => cast(&DataType::Decimal128(*p, *s))?,
        DataType::Decimal256(..) => cast(&DataType::Utf8)?,
        DataType::Timestamp(unit, _) | DataType::Duration(unit) => {
            as_i64(array.as_ref(), *unit, TimeUnit::Microsecond, nanos, path)?
        }
        // Spark keeps a time of day as nanoseconds (all of them, as PySpark passes them).
        DataType::Time32(unit) | DataType::Time64(unit) => {
            as_i64(array.as_ref(), *unit, TimeUnit::Nanosecond, nanos, path)?
        }
        DataType::Dictionary(_, values) => {
            let plain = cast(values)?;
            let inner = Field::new(field.name(), values.as_ref().clone(), field.is_nullable())
                .with_metadata(field.metadata().clone());
            to_spark_array(&plain, &inner, path, nanos)?
        }
        DataType::Struct(fields) => {
            let s = array.as_struct();
            let columns = s
                .columns()
                .iter()
                .zip(fields.iter())
                .map(|(c, f)| to_spark_array(c, f, &format!("{path}.{}", f.name()), nanos))
                .collect::<Result<Vec<_>>>()?;
            rebuilt_struct(s, fields, columns)?
        }
        DataType::FixedSizeList(item, _) | DataType::ListView(item) => {
            let list = cast(&DataType::List(item.clone()))?;
            to_spark_array(
                &list,
                &Field::new(field.name(), list.data_type().clone(), true),
                path,
                nanos,
            )?
        }
        DataType::LargeListView(item) => {
            let list = cast(&DataType::LargeList(item.clone()))?;
            to_spark_array(
                &list,
                &Field::new(field.name(), list.data_type().clone(), true),
                path,
                nanos,
            )?
        }
        DataType::List(item) => list_items::<i32>(array, item, path, nanos)?,
        DataType::LargeList(item) => list_items::<i64>(array, item, path, nanos)?,
        DataType::Map(entries, sorted) => {
            let m = array.as_map();
            let DataType::Struct(kv) = entries.data_type() else {
                unreachable!("a map's entries are a struct")
            };
            let columns = vec![
                to_spark_array(m.keys(), &kv[0], &format!("{path}.key"), nanos)?,
                to_spark_array(m.values(), &kv[1], &format!("{path}.value"), nanos)?,
            ];
            if Arc::ptr_eq(&columns[0], m.keys()) && Arc::ptr_eq(&columns[1], m.values()) {
                array.clone()
            } else {
                let inner = rebuilt_struct(m.entries(), kv, columns)?;
                let entries = Arc::new(
                    entries
                        .as_ref()
                        .clone()
                        .with_data_type(inner.data_type().clone()),
                );
                let offsets = OffsetBuffer::new(m.offsets().inner().clone());
                Arc::new(
                    MapArray::try_new(
                        entries,
                        offsets,
                        inner.as_struct().clone(),
                        m.nulls().cloned(),
                        *sorted,
                    )
                    .map_err(fail)?,
                )
            }
        }
        _ => array.clone(),
    })
}

/// A list column with its items converted; itself when they need no change.
fn list_items<O: OffsetSizeTrait>(
    array: &ArrayRef,
    item: &FieldRef,
    path: &str,
    nanos: Nanos,
) -> Result<ArrayRef> {
    let l = array.as_list::<O>();
    let values = to_spark_array(l.values(), item, &format!("{path}.item"), nanos)?;
    if Arc::ptr_eq(&values, l.values()) {
        return Ok(array.clone());
    }
    let item = Arc::new(
        item.as_ref()
            .clone()
            .with_data_type(values.data_type().clone()),
    );
    let list =
        GenericListArray::<O>::try_new(item, l.offsets().clone(), values, l.nulls().cloned())
            .map_err(|e| {
                Error::invalid(format!(
                    "column '{path}': cannot convert its items for Spark: {e}"
                ))
            })?;
    Ok(Arc::new(list))
}

/// `s` with `columns` (converted from its own) as children; `s` itself when none changed.
fn rebuilt_struct(s: &StructArray, fields: &Fields, columns: Vec<ArrayRef>) -> Result<ArrayRef> {
    if columns
        .iter()
        .zip(s.columns())
        .all(|(a, b)| Arc::ptr_eq(a, b))
    {
        return Ok(Arc::new(s.clone()));
    }
    let fields: Fields = fields
        .iter()
        .zip(&columns)
        .map(|(f, c)| Arc::new(f.as_ref().clone().with_data_type(c.data_type().clone())))
        .collect();
    Ok(Arc::new(
        StructArray::try_new(fields, columns, s.nulls().cloned())
            .map_err(|e| Error::invalid(format!("cannot rebuild a struct for Spark: {e}")))?,
    ))
}

/// A timestamp, duration or time column as int64 counts of `to` (Spark's microseconds,
/// or nanoseconds for times of day). Finer values are cut, or refused with `Nanos::Error`.
fn as_i64(
    array: &dyn Array,
    unit: TimeUnit,
    to: TimeUnit,
    nanos: Nanos,
    path: &str,
) -> Result<ArrayRef> {
    let as_i64 = cast_with_options(array, &DataType::Int64, &CastOptions::default())
        .map_err(|e| Error::invalid(format!("column '{path}': {e}")))?;
    let per_second = |u: TimeUnit| match u {
        TimeUnit::Second => 1i64,
        TimeUnit::Millisecond => 1_000,
        TimeUnit::Microsecond => 1_000_000,
        TimeUnit::Nanosecond => 1_000_000_000,
    };
    let (from, to) = (per_second(unit), per_second(to));
    if from == to {
        return Ok(as_i64);
    }
    let values = as_i64.as_primitive::<arrow_array::types::Int64Type>();
    if from < to {
        let mul = to / from;
        let out: Int64Array = values.unary(|v| v.saturating_mul(mul));
        return Ok(Arc::new(out));
    }
    let div = from / to;
    if nanos == Nanos::Error {
        if let Some(v) = values.iter().flatten().find(|v| v % div != 0) {
            return Err(Error::invalid(format!(
                "column '{path}': {v} ns would lose data as Spark's microseconds \
                 (read with option timestamp_nanos='truncate' to drop the nanoseconds)"
            )));
        }
    }
    let out: Int64Array = values.unary(|v| v / div);
    Ok(Arc::new(out))
}

/// bfloat16 (two bytes each, the high half of a float32) as float32.
fn bfloat16_to_f32(array: &ArrayRef, path: &str) -> Result<ArrayRef> {
    let DataType::FixedSizeBinary(2) = array.data_type() else {
        return Err(Error::invalid(format!(
            "column '{path}' is marked bfloat16 but is {}",
            array.data_type()
        )));
    };
    let b = array.as_fixed_size_binary();
    let values: Vec<f32> = (0..b.len())
        .map(|i| {
            let v = b.value(i);
            f32::from_bits(u32::from(u16::from_le_bytes([v[0], v[1]])) << 16)
        })
        .collect();
    Ok(Arc::new(
        PrimitiveArray::<arrow_array::types::Float32Type>::new(values.into(), b.nulls().cloned()),
    ))
}

/// Row 0 of `array` (of `field`) as JSON in Spark's terms, for an answer computed before any
/// task runs (`min(x)` from an index): integers and booleans as themselves, strings as text,
/// dates as days and timestamps as microseconds since the epoch, decimals as their text,
/// null as null. None for types such an answer is not given in.
pub fn spark_value(array: &ArrayRef, field: &Field, nanos: Nanos) -> Result<Option<Value>> {
    use arrow_array::types::*;
    let a = to_spark_array(array, field, field.name(), nanos)?;
    if a.is_null(0) {
        return Ok(Some(Value::Null));
    }
    Ok(Some(match a.data_type() {
        DataType::Boolean => json!(a.as_boolean().value(0)),
        DataType::Int8 => json!(a.as_primitive::<Int8Type>().value(0)),
        DataType::Int16 => json!(a.as_primitive::<Int16Type>().value(0)),
        DataType::Int32 => json!(a.as_primitive::<Int32Type>().value(0)),
        // Timestamps too, as microseconds.
        DataType::Int64 => json!(a.as_primitive::<Int64Type>().value(0)),
        DataType::Date32 => json!(a.as_primitive::<Date32Type>().value(0)),
        DataType::Utf8 => json!(a.as_string::<i32>().value(0)),
        DataType::LargeUtf8 => json!(a.as_string::<i64>().value(0)),
        DataType::Decimal128(..) => {
            json!(a.as_primitive::<Decimal128Type>().value_as_string(0))
        }
        _ => return Ok(None),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{RecordBatch, StringArray, TimestampNanosecondArray, UInt64Array};

    #[test]
    fn types_map_to_the_spark_type_holding_every_value() {
        let fields = Fields::from(vec![
            Field::new("a", DataType::UInt64, true),
            Field::new(
                "b",
                DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
                true,
            ),
            Field::new_list("c", Field::new("item", DataType::Utf8, true), false),
            Field::new("d", DataType::Decimal256(50, 2), true),
        ]);
        let schema = spark_schema(&fields).unwrap();
        let types: Vec<&Value> = schema["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| &f["type"])
            .collect();
        assert_eq!(types[0], "decimal(20,0)");
        assert_eq!(types[1], "timestamp");
        assert_eq!(types[2]["elementType"], "string");
        assert_eq!(schema["fields"][2]["nullable"], false);
        assert_eq!(types[3], "string");
        let err = spark_type(
            &Field::new(
                "x",
                DataType::Interval(arrow_schema::IntervalUnit::MonthDayNano),
                true,
            ),
            "x",
        )
        .unwrap_err();
        assert!(err.to_string().contains("column 'x'"), "{err}");
    }

    #[test]
    fn columns_spark_reads_as_they_are_are_not_copied() {
        let s: ArrayRef = Arc::new(StringArray::from(vec!["x", "y"]));
        let out = to_spark_array(
            &s,
            &Field::new("s", DataType::Utf8, true),
            "s",
            Nanos::Truncate,
        )
        .unwrap();
        assert!(Arc::ptr_eq(&s, &out));
        let u: ArrayRef = Arc::new(UInt64Array::from(vec![u64::MAX]));
        let out = to_spark_array(
            &u,
            &Field::new("u", DataType::UInt64, true),
            "u",
            Nanos::Truncate,
        )
        .unwrap();
        assert_eq!(out.data_type(), &DataType::Decimal128(20, 0));
        let _ = RecordBatch::new_empty(Arc::new(arrow_schema::Schema::empty()));
    }

    #[test]
    fn nanoseconds_are_cut_or_refused() {
        let t: ArrayRef = Arc::new(TimestampNanosecondArray::from(vec![1_500, -1_500, 3_000]));
        let f = Field::new("t", t.data_type().clone(), true);
        let out = to_spark_array(&t, &f, "t", Nanos::Truncate).unwrap();
        assert_eq!(
            out.as_primitive::<arrow_array::types::Int64Type>()
                .values()
                .to_vec(),
            vec![1, -1, 3]
        );
        let err = to_spark_array(&t, &f, "t", Nanos::Error).unwrap_err();
        assert!(err.to_string().contains("column 't'"), "{err}");
    }

    #[test]
    fn single_values_in_sparks_terms() {
        use arrow_array::{Date32Array, StringArray, TimestampNanosecondArray, UInt64Array};
        let value = |a: ArrayRef| {
            let f = Field::new("c", a.data_type().clone(), true);
            spark_value(&a, &f, Nanos::Truncate).unwrap()
        };
        assert_eq!(
            value(Arc::new(Date32Array::from(vec![19000]))),
            Some(json!(19000))
        );
        // Nanoseconds cut to microseconds.
        let ts = TimestampNanosecondArray::from(vec![1_700_000_000_123_456_789]);
        assert_eq!(value(Arc::new(ts)), Some(json!(1_700_000_000_123_456i64)));
        assert_eq!(
            value(Arc::new(UInt64Array::from(vec![u64::MAX]))),
            Some(json!("18446744073709551615"))
        );
        assert_eq!(
            value(Arc::new(StringArray::from(vec![None::<&str>]))),
            Some(Value::Null)
        );
        assert_eq!(
            value(Arc::new(arrow_array::Float64Array::from(vec![1.0]))),
            None
        );
    }
}
