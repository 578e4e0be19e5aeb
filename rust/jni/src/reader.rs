//! Partition readers: a scan of one fragment's row range (or of several fragments), whose batches are handed to the
//! JVM through the Arrow C data interface, each column already in a layout Spark's column
//! vectors read (`lance_core::spark::types`). The JVM owns a batch until it calls
//! `release`; the reader itself lives until `close`.
use std::sync::Arc;

use crate::tables::is_row_locator;
use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::{Array, ArrayRef, RecordBatch, StructArray};
use arrow_schema::{DataType, Field, Fields};
use futures::stream::BoxStream;
use futures::StreamExt;
use lance_core::spark::types::{to_spark_array, Nanos};

use crate::tables::{Outcome, Request};

pub struct PartitionReader {
    uri: String,
    batches: BoxStream<'static, lance_core::Result<RecordBatch>>,
    nanos: Nanos,
}

impl PartitionReader {
    pub fn open(request: &Request) -> Outcome<Self> {
        let ds = request.open()?;
        let mut query = request.query()?;
        let options = &mut query.scan;
        // One fragment (a task's), or several (a read while planning); a search reads
        // the whole table in one partition.
        options.fragment_ids = match (request.u64("fragment_id"), request.get("fragment_ids")) {
            _ if query.nearest.is_some() => None,
            (Some(id), _) => Some(vec![id]),
            (None, Some(serde_json::Value::Array(ids))) => {
                Some(ids.iter().filter_map(serde_json::Value::as_u64).collect())
            }
            _ => return Err("a partition request names no fragment_id".into()),
        };
        if let (Some(start), Some(end)) = (request.u64("start"), request.u64("end")) {
            options.row_range = Some((start, end));
        }
        options.limit = request.u64("limit");
        if let Some(b) = request.u64("batch_size").filter(|b| *b > 0) {
            options.batch_size = b as usize;
        }
        if let Some(p) = request.str("predicate").filter(|p| !p.trim().is_empty()) {
            options.filter = Some(lance_core::expr::parse(p).map_err(|e| e.to_string())?);
        }
        let nanos = request.nanos()?;
        let uri = ds.uri().to_string();
        let _enter = lance_core::threads::io_runtime().enter();
        let scan = lance_core::query(ds, query).map_err(|e| e.to_string())?;
        Ok(PartitionReader {
            uri,
            batches: scan.batches,
            nanos,
        })
    }

    /// The next batch as a struct array of Spark-readable columns, or None at the end.
    pub fn next(&mut self) -> Outcome<Option<StructArray>> {
        let next = lance_core::threads::io_runtime().block_on(self.batches.next());
        let batch = match next {
            None => return Ok(None),
            Some(Err(e)) => return Err(e.to_string()),
            Some(Ok(b)) => b,
        };
        let schema = batch.schema();
        let mut fields = Vec::with_capacity(batch.num_columns());
        let mut columns = Vec::with_capacity(batch.num_columns());
        for (field, column) in schema.fields().iter().zip(batch.columns()) {
            let out: ArrayRef = if is_row_locator(field.name()) {
                // Spark's long: row ids and addresses stay below 2^63.
                let ids = arrow_array::cast::AsArray::as_primitive::<arrow_array::types::UInt64Type>(
                    column,
                );
                Arc::new(ids.unary::<_, arrow_array::types::Int64Type>(|v| v as i64))
            } else {
                to_spark_array(column, field, field.name(), self.nanos)
                    .map_err(|e| format!("{}: {e}", self.uri))?
            };
            fields.push(Field::new(field.name(), out.data_type().clone(), true));
            columns.push(out);
        }
        let rows = batch.num_rows();
        let array = StructArray::try_new_with_length(Fields::from(fields), columns, None, rows)
            .map_err(|e| format!("{}: {e}", self.uri))?;
        Ok(Some(array))
    }
}

/// Write `array` (and its type) as C data interface structs at the given addresses, which
/// the JVM allocated (80 and 72 bytes).
///
/// # Safety
/// The addresses must point to writable memory of those sizes holding no live struct.
pub unsafe fn export(array: StructArray, array_addr: i64, schema_addr: i64) -> Outcome<()> {
    let data = array.into_data();
    let schema = FFI_ArrowSchema::try_from(DataType::Struct(match data.data_type() {
        DataType::Struct(f) => f.clone(),
        _ => unreachable!("a batch is exported as a struct"),
    }))
    .map_err(|e| format!("lance_core: cannot describe a batch for the JVM: {e}"))?;
    std::ptr::write(
        array_addr as *mut FFI_ArrowArray,
        FFI_ArrowArray::new(&data),
    );
    std::ptr::write(schema_addr as *mut FFI_ArrowSchema, schema);
    Ok(())
}

/// Release the batch exported at these addresses (its buffers are freed once nothing else
/// holds them); the structs are left empty, so releasing twice does nothing.
///
/// # Safety
/// The addresses must be ones `export` wrote to, or hold empty structs.
pub unsafe fn release(array_addr: i64, schema_addr: i64) {
    if array_addr != 0 {
        let p = array_addr as *mut FFI_ArrowArray;
        drop(std::ptr::read(p));
        std::ptr::write(p, FFI_ArrowArray::empty());
    }
    if schema_addr != 0 {
        let p = schema_addr as *mut FFI_ArrowSchema;
        drop(std::ptr::read(p));
        std::ptr::write(p, FFI_ArrowSchema::empty());
    }
}
