//! lance-core-jni: the JNI entry points of the JVM reader (`java/`, class
//! `lance_core.spark.Native`). Each one moves JSON bytes or numbers across and calls the
//! core; `jvm` turns every failure, panics included, into a Java `LanceException`.
//!
//! - `version()`: this library's version, which the jar checks against its own;
//! - `describe(request)`: what the driver plans a query with (`tables::describe`);
//! - `countRows(request)`: rows passing the request's predicate;
//! - `openReader(request)` / `nextBatch(reader, array, schema)` / `closeReader(reader)`:
//!   a partition's batches through the Arrow C data interface;
//! - `releaseBatch(array, schema)`: the JVM is done with a batch;
//! - `namespace(request, schema)`: the Spark catalog's calls (`namespace::call`);
//! - `openWriter(request, schema)` / `writeBatch(writer, ipc)` / `finishWriter(writer)` /
//!   `abortWriter(writer)`: a Spark task's writer (`writer::TaskWriter`);
//! - `commitWrite(request, schema)` / `abortWrite(request)`: the driver's end of a write;
//! - `canDeleteWhere(request)` / `deleteWhere(request)`: SQL's DELETE (`changes`);
//! - `alterTable(request, schema)`: ALTER TABLE (`alter`);
//! - `tableCommand(request)`: a metadata table's rows, or a statement of the SQL
//!   extension run (`commands`), as Arrow IPC;
//! - `indexJob(request)`: a step of a `CREATE INDEX` job (`commands::index_job`);
//! - `searchArguments(request)`: a `VECTOR_SEARCH`'s arguments by name, checked
//!   (`commands::search_arguments`).
#![allow(non_snake_case)]

mod alter;
mod changes;
mod commands;
mod jvm;
mod namespace;
mod reader;
mod tables;
mod writer;

use jni_sys::{jbyteArray, jclass, jlong, JNIEnv};

use crate::reader::PartitionReader;
use crate::tables::Request;
use crate::writer::TaskWriter;

/// The body of an entry point that takes a JSON request and a `byte[]` that may be null
/// (an Arrow IPC schema) and replies JSON.
fn json_reply(
    env: *mut JNIEnv,
    request: jbyteArray,
    bytes: jbyteArray,
    call: impl FnOnce(&Request, Option<&[u8]>) -> Result<serde_json::Value, String>,
) -> jbyteArray {
    jvm::entry(env, std::ptr::null_mut(), || {
        let request = Request::parse(&jvm::bytes_in(env, request)?)?;
        let bytes = optional_bytes(env, bytes)?;
        let reply = call(&request, bytes.as_deref())?;
        jvm::bytes_out(env, reply.to_string().as_bytes())
    })
}

/// A `byte[]` argument that may be null.
fn optional_bytes(env: *mut JNIEnv, array: jbyteArray) -> Result<Option<Vec<u8>>, String> {
    match array.is_null() {
        true => Ok(None),
        false => jvm::bytes_in(env, array).map(Some),
    }
}

#[no_mangle]
pub extern "system" fn Java_lance_1core_spark_Native_version(
    env: *mut JNIEnv,
    _: jclass,
) -> jbyteArray {
    jvm::entry(env, std::ptr::null_mut(), || {
        jvm::bytes_out(env, env!("CARGO_PKG_VERSION").as_bytes())
    })
}

#[no_mangle]
pub extern "system" fn Java_lance_1core_spark_Native_describe(
    env: *mut JNIEnv,
    _: jclass,
    request: jbyteArray,
) -> jbyteArray {
    json_reply(env, request, std::ptr::null_mut(), |r, _| {
        tables::describe(r)
    })
}

/// A catalog operation's reply; `schema` (an Arrow IPC stream, or null) is the schema of
/// a table to create.
#[no_mangle]
pub extern "system" fn Java_lance_1core_spark_Native_namespace(
    env: *mut JNIEnv,
    _: jclass,
    request: jbyteArray,
    schema: jbyteArray,
) -> jbyteArray {
    json_reply(env, request, schema, namespace::call)
}

#[no_mangle]
pub extern "system" fn Java_lance_1core_spark_Native_countRows(
    env: *mut JNIEnv,
    _: jclass,
    request: jbyteArray,
) -> jlong {
    jvm::entry(env, -1, || {
        let request = Request::parse(&jvm::bytes_in(env, request)?)?;
        Ok(tables::count_rows(&request)? as jlong)
    })
}

#[no_mangle]
pub extern "system" fn Java_lance_1core_spark_Native_openReader(
    env: *mut JNIEnv,
    _: jclass,
    request: jbyteArray,
) -> jlong {
    jvm::entry(env, 0, || {
        let request = Request::parse(&jvm::bytes_in(env, request)?)?;
        let reader = Box::new(PartitionReader::open(&request)?);
        Ok(Box::into_raw(reader) as jlong)
    })
}

/// The next batch's row count (its structs written at `array` and `schema`), or -1 at
/// the end of the partition.
#[no_mangle]
pub extern "system" fn Java_lance_1core_spark_Native_nextBatch(
    env: *mut JNIEnv,
    _: jclass,
    reader: jlong,
    array: jlong,
    schema: jlong,
) -> jlong {
    jvm::entry(env, -1, || {
        if reader == 0 || array == 0 || schema == 0 {
            return Err("lance_core: nextBatch was called on a closed reader".into());
        }
        // SAFETY: `reader` came from `openReader` and is not closed (the Java reader
        // forgets it in `close`); the JVM calls this from one thread at a time.
        let reader = unsafe { &mut *(reader as *mut PartitionReader) };
        match reader.next()? {
            None => Ok(-1),
            Some(batch) => {
                let rows = arrow_array::Array::len(&batch) as jlong;
                // SAFETY: the Java reader allocated these structs and released the last batch.
                unsafe { reader::export(batch, array, schema)? };
                Ok(rows)
            }
        }
    })
}

#[no_mangle]
pub extern "system" fn Java_lance_1core_spark_Native_releaseBatch(
    env: *mut JNIEnv,
    _: jclass,
    array: jlong,
    schema: jlong,
) {
    // SAFETY: the addresses are the Java reader's structs, holding a batch or empty.
    jvm::entry(env, (), || {
        unsafe { reader::release(array, schema) };
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_lance_1core_spark_Native_closeReader(
    env: *mut JNIEnv,
    _: jclass,
    reader: jlong,
) {
    jvm::entry(env, (), || {
        if reader != 0 {
            // SAFETY: `reader` came from `openReader` and is closed once.
            drop(unsafe { Box::from_raw(reader as *mut PartitionReader) });
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_lance_1core_spark_Native_openWriter(
    env: *mut JNIEnv,
    _: jclass,
    request: jbyteArray,
    schema: jbyteArray,
) -> jlong {
    jvm::entry(env, 0, || {
        let request = Request::parse(&jvm::bytes_in(env, request)?)?;
        let schema = optional_bytes(env, schema)?;
        let writer = Box::new(TaskWriter::open(&request, schema.as_deref())?);
        Ok(Box::into_raw(writer) as jlong)
    })
}

/// More of the task's Arrow IPC stream.
#[no_mangle]
pub extern "system" fn Java_lance_1core_spark_Native_writeBatch(
    env: *mut JNIEnv,
    _: jclass,
    writer: jlong,
    ipc: jbyteArray,
) {
    jvm::entry(env, (), || {
        if writer == 0 {
            return Err("lance_core: writeBatch was called on a closed writer".into());
        }
        // SAFETY: `writer` came from `openWriter` and is not finished or aborted (the Java
        // writer forgets it then); one thread at a time calls it.
        let writer = unsafe { &mut *(writer as *mut TaskWriter) };
        writer.write(jvm::bytes_in(env, ipc)?)
    })
}

/// The task's fragments (JSON: a list of pylance's fragment JSON strings); frees the writer.
#[no_mangle]
pub extern "system" fn Java_lance_1core_spark_Native_finishWriter(
    env: *mut JNIEnv,
    _: jclass,
    writer: jlong,
) -> jbyteArray {
    jvm::entry(env, std::ptr::null_mut(), || {
        if writer == 0 {
            return Err("lance_core: finishWriter was called on a closed writer".into());
        }
        // SAFETY: as in `writeBatch`; the writer is taken back and freed here, once.
        let writer = unsafe { Box::from_raw(writer as *mut TaskWriter) };
        let reply = writer.finish()?;
        jvm::bytes_out(env, reply.to_string().as_bytes())
    })
}

/// Stops a task's writer, removing what it wrote; frees it.
#[no_mangle]
pub extern "system" fn Java_lance_1core_spark_Native_abortWriter(
    env: *mut JNIEnv,
    _: jclass,
    writer: jlong,
) {
    jvm::entry(env, (), || {
        if writer != 0 {
            // SAFETY: as in `finishWriter`.
            unsafe { Box::from_raw(writer as *mut TaskWriter) }.abort();
        }
        Ok(())
    })
}

/// The driver commits the tasks' fragments as one version; returns it.
#[no_mangle]
pub extern "system" fn Java_lance_1core_spark_Native_commitWrite(
    env: *mut JNIEnv,
    _: jclass,
    request: jbyteArray,
    schema: jbyteArray,
) -> jlong {
    jvm::entry(env, -1, || {
        let request = Request::parse(&jvm::bytes_in(env, request)?)?;
        let schema = optional_bytes(env, schema)?;
        Ok(writer::commit(&request, schema.as_deref())? as jlong)
    })
}

/// The driver removes a job's files (unless a version may refer to them).
#[no_mangle]
pub extern "system" fn Java_lance_1core_spark_Native_abortWrite(
    env: *mut JNIEnv,
    _: jclass,
    request: jbyteArray,
) {
    jvm::entry(env, (), || {
        let request = Request::parse(&jvm::bytes_in(env, request)?)?;
        writer::abort(&request)
    })
}

/// Whether the request's filters can be handed over whole to a delete (1) or not (0).
#[no_mangle]
pub extern "system" fn Java_lance_1core_spark_Native_canDeleteWhere(
    env: *mut JNIEnv,
    _: jclass,
    request: jbyteArray,
) -> jlong {
    jvm::entry(env, 0, || {
        let request = Request::parse(&jvm::bytes_in(env, request)?)?;
        Ok(changes::can_delete(&request)? as jlong)
    })
}

/// Deletes the rows the request's filters hold for; the new version and the count (JSON).
#[no_mangle]
pub extern "system" fn Java_lance_1core_spark_Native_deleteWhere(
    env: *mut JNIEnv,
    _: jclass,
    request: jbyteArray,
) -> jbyteArray {
    json_reply(env, request, std::ptr::null_mut(), |r, _| {
        changes::delete(r)
    })
}

/// An ALTER TABLE change; `schema` (an Arrow IPC stream, or null) holds the columns added
/// or the new types. The new version (JSON).
#[no_mangle]
pub extern "system" fn Java_lance_1core_spark_Native_alterTable(
    env: *mut JNIEnv,
    _: jclass,
    request: jbyteArray,
    schema: jbyteArray,
) -> jbyteArray {
    json_reply(env, request, schema, alter::alter)
}

#[no_mangle]
pub extern "system" fn Java_lance_1core_spark_Native_tableCommand(
    env: *mut JNIEnv,
    _: jclass,
    request: jbyteArray,
) -> jbyteArray {
    jvm::entry(env, std::ptr::null_mut(), || {
        let request = Request::parse(&jvm::bytes_in(env, request)?)?;
        jvm::bytes_out(env, &commands::run(&request)?)
    })
}

#[no_mangle]
pub extern "system" fn Java_lance_1core_spark_Native_indexJob(
    env: *mut JNIEnv,
    _: jclass,
    request: jbyteArray,
) -> jbyteArray {
    json_reply(env, request, std::ptr::null_mut(), |r, _| {
        commands::index_job(r)
    })
}

#[no_mangle]
pub extern "system" fn Java_lance_1core_spark_Native_searchArguments(
    env: *mut JNIEnv,
    _: jclass,
    request: jbyteArray,
) -> jbyteArray {
    json_reply(env, request, std::ptr::null_mut(), |r, _| {
        commands::search_arguments(r)
    })
}
