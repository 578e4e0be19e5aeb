//! lance-core-jni: the JNI entry points of the JVM reader (`java/`, class
//! `lance_core.spark.Native`). Each one moves JSON bytes or numbers across and calls the
//! core; `jvm` turns every failure, panics included, into a Java `LanceException`.
//!
//! - `version()`: this library's version, which the jar checks against its own;
//! - `describe(request)`: what the driver plans a query with (`tables::describe`);
//! - `countRows(request)`: rows passing the request's predicate;
//! - `openReader(request)` / `nextBatch(reader, array, schema)` / `closeReader(reader)`:
//!   a partition's batches through the Arrow C data interface;
//! - `releaseBatch(array, schema)`: the JVM is done with a batch.
#![allow(non_snake_case)]

mod jvm;
mod reader;
mod tables;

use jni_sys::{jbyteArray, jclass, jlong, JNIEnv};

use crate::reader::PartitionReader;
use crate::tables::Request;

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
    jvm::entry(env, std::ptr::null_mut(), || {
        let request = Request::parse(&jvm::bytes_in(env, request)?)?;
        let reply = tables::describe(&request)?;
        jvm::bytes_out(env, reply.to_string().as_bytes())
    })
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
