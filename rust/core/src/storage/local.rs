//! Reading local files directly: positioned reads on a blocking thread into buffers that
//! are not zero-filled first (object_store's local store fills each buffer with zeros
//! before reading into it), with ranges closer than a page merged into one read.
use std::ops::Range;
use std::path::PathBuf;

use bytes::Bytes;

/// Ranges closer than this are read as one (the bytes between are read and dropped).
const MERGE_GAP: u64 = 4096;
/// A merged read stops growing at this size: the allocator reuses buffers this small from
/// read to read, where a buffer of a whole column's bytes would be fresh memory, paged in
/// (faulted and zeroed by the kernel) at every take.
const MAX_MERGED: u64 = 1 << 18;

/// Why a read failed.
pub enum ReadError {
    NotFound,
    /// The file ends at `len`, before `wanted`.
    Short {
        wanted: Range<u64>,
        len: u64,
    },
    Io(std::io::Error),
}

/// Read `ranges` of the file at `path`, one `Bytes` per range, in order.
pub fn read_ranges(path: &PathBuf, ranges: &[Range<u64>]) -> Result<Vec<Bytes>, ReadError> {
    let file = std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ReadError::NotFound,
        _ => ReadError::Io(e),
    })?;
    // Merge ranges in file order; each original range is a slice of its merged read.
    let mut order: Vec<usize> = (0..ranges.len()).collect();
    order.sort_by_key(|&i| ranges[i].start);
    let mut out = vec![Bytes::new(); ranges.len()];
    let mut i = 0;
    while i < order.len() {
        let start = ranges[order[i]].start;
        let mut end = ranges[order[i]].end;
        let mut j = i + 1;
        while j < order.len()
            && ranges[order[j]].start <= end.saturating_add(MERGE_GAP)
            && ranges[order[j]].end.saturating_sub(start) <= MAX_MERGED
        {
            end = end.max(ranges[order[j]].end);
            j += 1;
        }
        let bytes = read_at(&file, start..end)?;
        for &k in &order[i..j] {
            let r = &ranges[k];
            out[k] = bytes.slice((r.start - start) as usize..(r.end - start) as usize);
        }
        i = j;
    }
    Ok(out)
}

#[cfg(unix)]
fn read_at(file: &std::fs::File, range: Range<u64>) -> Result<Bytes, ReadError> {
    use std::os::unix::io::AsRawFd;
    let len = usize::try_from(range.end.saturating_sub(range.start))
        .map_err(|_| ReadError::Io(std::io::Error::other("range too large")))?;
    let mut buf: Vec<u8> = Vec::with_capacity(len);
    let mut done = 0usize;
    while done < len {
        let at = range.start + done as u64;
        // SAFETY: the kernel writes at most `len - done` bytes into the spare capacity
        // starting at `done`; no Rust reference to the unwritten bytes is made, and the
        // length is set to what was written.
        let n = unsafe {
            libc::pread(
                file.as_raw_fd(),
                buf.as_mut_ptr().add(done).cast(),
                len - done,
                at as libc::off_t,
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(ReadError::Io(e));
        }
        if n == 0 {
            let len = file.metadata().map(|m| m.len()).unwrap_or(at);
            return Err(ReadError::Short { wanted: range, len });
        }
        done += n as usize;
        // SAFETY: bytes 0..done were written by pread.
        unsafe { buf.set_len(done) };
    }
    Ok(Bytes::from(buf))
}

#[cfg(not(unix))]
fn read_at(file: &std::fs::File, range: Range<u64>) -> Result<Bytes, ReadError> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = file;
    f.seek(SeekFrom::Start(range.start))
        .map_err(ReadError::Io)?;
    let mut buf = vec![0u8; (range.end - range.start) as usize];
    f.read_exact(&mut buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => ReadError::Short {
            len: file.metadata().map(|m| m.len()).unwrap_or(range.start),
            wanted: range.clone(),
        },
        _ => ReadError::Io(e),
    })?;
    Ok(Bytes::from(buf))
}
