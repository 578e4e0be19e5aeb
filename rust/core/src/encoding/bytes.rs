//! Little-endian reads from byte slices, with bounds checks that report corruption
//! instead of panicking.
use std::borrow::Cow;

use arrow_buffer::ArrowNativeType;

use crate::error::{corrupt, Result};

pub fn slice<'a>(b: &'a [u8], start: usize, len: usize, what: &str) -> Result<&'a [u8]> {
    start
        .checked_add(len)
        .and_then(|end| b.get(start..end))
        .ok_or_else(|| {
            corrupt(format!(
                "{what}: needs bytes {start}..{} of a {}-byte buffer",
                start.saturating_add(len),
                b.len()
            ))
        })
}

pub fn u16_at(b: &[u8], at: usize, what: &str) -> Result<u16> {
    Ok(u16::from_le_bytes(
        slice(b, at, 2, what)?.try_into().unwrap(),
    ))
}
pub fn u32_at(b: &[u8], at: usize, what: &str) -> Result<u32> {
    Ok(u32::from_le_bytes(
        slice(b, at, 4, what)?.try_into().unwrap(),
    ))
}
pub fn u64_at(b: &[u8], at: usize, what: &str) -> Result<u64> {
    Ok(u64::from_le_bytes(
        slice(b, at, 8, what)?.try_into().unwrap(),
    ))
}

/// An unsigned little-endian integer of `width` (0 to 8) bytes.
pub fn uint_at(b: &[u8], at: usize, width: usize, what: &str) -> Result<u64> {
    if width > 8 {
        return Err(corrupt(format!("{what}: a {width}-byte integer")));
    }
    let raw = slice(b, at, width, what)?;
    Ok(raw
        .iter()
        .enumerate()
        .fold(0u64, |v, (i, x)| v | (*x as u64) << (8 * i)))
}

/// View `bytes` as a slice of `T` (little-endian). Borrowed when the bytes are aligned
/// (the file format pads buffers so they normally are), copied otherwise.
pub fn words<T: ArrowNativeType>(bytes: &[u8]) -> Cow<'_, [T]> {
    let size = std::mem::size_of::<T>();
    let n = bytes.len() / size;
    let bytes = &bytes[..n * size];
    if bytes.as_ptr().align_offset(std::mem::align_of::<T>()) == 0 {
        // SAFETY: aligned, in bounds, and every bit pattern is a valid T (ArrowNativeType
        // is only implemented for plain integers and floats).
        Cow::Borrowed(unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const T, n) })
    } else {
        let mut v = Vec::<T>::with_capacity(n);
        // SAFETY: copies n*size bytes into the Vec's allocation, then sets its length.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), v.as_mut_ptr() as *mut u8, n * size);
            v.set_len(n);
        }
        Cow::Owned(v)
    }
}

/// Mutable view of a byte slice as `T`; the slice must be aligned (our own buffers are).
pub fn words_mut<T: ArrowNativeType>(bytes: &mut [u8]) -> Result<&mut [T]> {
    let size = std::mem::size_of::<T>();
    if bytes.as_ptr().align_offset(std::mem::align_of::<T>()) != 0
        || !bytes.len().is_multiple_of(size)
    {
        return Err(corrupt("internal: output buffer is not aligned"));
    }
    // SAFETY: checked alignment and length; every bit pattern is a valid T.
    Ok(unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr() as *mut T, bytes.len() / size) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_wider_than_8_bytes_are_errors() {
        // Found by fuzzing (full-zip offsets of 72 bits): the shift overflowed.
        let b = [1u8; 16];
        assert_eq!(uint_at(&b, 0, 2, "x").unwrap(), 0x0101);
        assert!(uint_at(&b, 0, 9, "x")
            .unwrap_err()
            .to_string()
            .contains("9-byte"));
    }
}
