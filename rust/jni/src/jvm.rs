//! The JNI plumbing: byte arrays in and out, and every entry point's result turned into a
//! return value or a Java exception. Nothing may unwind into the JVM: a panic becomes a
//! `LanceException` too.
use std::ffi::CString;
use std::panic::{catch_unwind, AssertUnwindSafe};

use jni_sys::{jbyteArray, jsize, JNIEnv};

/// The Java exception every failure is raised as (its message names the file and cause).
const EXCEPTION_CLASS: &[u8] = b"lance_core/spark/LanceException\0";

/// Run an entry point's body: its error, or a panic, is thrown as a `LanceException` and
/// `fallback` returned (the JVM ignores a native method's value once it has thrown).
pub fn entry<T>(env: *mut JNIEnv, fallback: T, body: impl FnOnce() -> Result<T, String>) -> T {
    match contained(body) {
        Ok(value) => value,
        Err(message) => {
            throw(env, &message);
            fallback
        }
    }
}

/// `body`'s result, a panic in it turned into an error message.
fn contained<T>(body: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown cause".into());
            Err(format!("lance_core native code failed (a bug): {what}"))
        }
    }
}

fn throw(env: *mut JNIEnv, message: &str) {
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    // SAFETY: `env` is the JNIEnv the JVM passed to the running native method.
    unsafe {
        if ((**env).v1_2.ExceptionCheck)(env) {
            return; // a JNI call failed and its exception is already pending
        }
        let class = ((**env).v1_1.FindClass)(env, EXCEPTION_CLASS.as_ptr().cast());
        if class.is_null() {
            return; // FindClass has thrown NoClassDefFoundError, which says enough
        }
        ((**env).v1_1.ThrowNew)(env, class, text.as_ptr());
    }
}

/// The bytes of a Java `byte[]`.
pub fn bytes_in(env: *mut JNIEnv, array: jbyteArray) -> Result<Vec<u8>, String> {
    if array.is_null() {
        return Err("lance_core: a null byte[] was passed to native code".into());
    }
    // SAFETY: `array` is a live local reference to a byte[] for the call's duration.
    unsafe {
        let len = ((**env).v1_1.GetArrayLength)(env, array).max(0) as usize;
        let mut out = vec![0u8; len];
        ((**env).v1_1.GetByteArrayRegion)(env, array, 0, len as jsize, out.as_mut_ptr().cast());
        Ok(out)
    }
}

/// A new Java `byte[]` holding `bytes`.
pub fn bytes_out(env: *mut JNIEnv, bytes: &[u8]) -> Result<jbyteArray, String> {
    let len = jsize::try_from(bytes.len())
        .map_err(|_| "lance_core: a reply too large for a byte[]".to_string())?;
    // SAFETY: as above; a null array means the JVM has thrown OutOfMemoryError.
    unsafe {
        let array = ((**env).v1_1.NewByteArray)(env, len);
        if array.is_null() {
            return Err("lance_core: cannot allocate a byte[] for the reply".into());
        }
        ((**env).v1_1.SetByteArrayRegion)(env, array, 0, len, bytes.as_ptr().cast());
        Ok(array)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error_message() {
        let out: Result<(), String> = contained(|| panic!("index 7 out of range"));
        assert_eq!(
            out.unwrap_err(),
            "lance_core native code failed (a bug): index 7 out of range"
        );
        assert_eq!(contained(|| Ok::<_, String>(3)), Ok(3));
        assert_eq!(
            contained(|| Err::<(), _>("no such file".to_string())),
            Err("no such file".to_string())
        );
    }
}
