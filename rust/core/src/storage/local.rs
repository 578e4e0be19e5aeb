//! Reading local files directly: positioned reads on a blocking thread into buffers that
//! are not zero-filled first (object_store's local store fills each buffer with zeros
//! before reading into it), with ranges closer than a page merged into one read; ranges of
//! a MiB or more are mapped from the page cache instead of copied.
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

/// The names of the files in `dir` (relative to it, '/'-separated; with the files of its
/// subdirectories when `recursive`), without reading each file's metadata. A missing
/// directory has none.
pub fn file_names(dir: &std::path::Path, recursive: bool) -> std::io::Result<Vec<String>> {
    let mut out = Vec::new();
    let mut pending = vec![(dir.to_path_buf(), String::new())];
    while let Some((at, prefix)) = pending.pop() {
        let entries = match std::fs::read_dir(&at) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let rel = format!("{prefix}{name}");
            if entry.file_type()?.is_dir() {
                if recursive {
                    pending.push((entry.path(), format!("{rel}/")));
                }
            } else {
                out.push(rel);
            }
        }
    }
    Ok(out)
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
    // (merged range, the sorted positions in `order` it serves)
    let mut merged: Vec<(Range<u64>, Range<usize>)> = Vec::new();
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
        merged.push((start..end, i..j));
        i = j;
    }
    // Reads far apart (the columns of a taken row): let the kernel fetch them all at
    // once, so that reads not in the page cache wait for the disk together rather than
    // one after another.
    if merged.len() > 1 {
        for (r, _) in &merged {
            read_ahead(&file, r);
        }
    }
    let mut out = vec![Bytes::new(); ranges.len()];
    for (r, served) in merged {
        let start = r.start;
        let bytes = read_at(&file, r)?;
        for &k in &order[served] {
            let r = &ranges[k];
            out[k] = bytes.slice((r.start - start) as usize..(r.end - start) as usize);
        }
    }
    Ok(out)
}

/// Ask the kernel to start reading `range` into the page cache (a hint: cheap when the
/// bytes are there already, and errors are of no consequence).
fn read_ahead(file: &std::fs::File, range: &Range<u64>) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::io::AsRawFd;
        let len = range.end.saturating_sub(range.start);
        // SAFETY: posix_fadvise only reads its integer arguments.
        unsafe {
            libc::posix_fadvise(
                file.as_raw_fd(),
                range.start as libc::off_t,
                len as libc::off_t,
                libc::POSIX_FADV_WILLNEED,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, range);
}

/// Reads this large are mapped instead of copied (see `map_range`).
const MAP_MIN: u64 = 1 << 20;

/// A large range, mapped from the page cache: no copy into a fresh buffer (which the
/// kernel would first fault in and zero page by page). The file's current length is checked
/// first, so a file shorter than the range is an error like a short read. Lance data files
/// are written once and never changed in place, and a file deleted while mapped stays
/// readable until unmapped; only a file truncated by another process while we read it
/// could still fault, as with any memory-mapped reader.
#[cfg(unix)]
fn map_range(file: &std::fs::File, range: &Range<u64>) -> Result<Bytes, ReadError> {
    let len = file.metadata().map_err(ReadError::Io)?.len();
    if range.end > len {
        return Err(ReadError::Short {
            wanted: range.clone(),
            len,
        });
    }
    // Mappings start at a page boundary: map from the page holding the start.
    let page = 4096u64;
    let start = range.start / page * page;
    // SAFETY: see above; the mapping is read-only and private, and outlives every slice
    // of it (the `Bytes` owns it).
    let map = unsafe {
        memmap2::MmapOptions::new()
            .offset(start)
            .len((range.end - start) as usize)
            .populate()
            .map(file)
    }
    .map_err(ReadError::Io)?;
    let skip = (range.start - start) as usize;
    Ok(Bytes::from_owner(map).slice(skip..))
}

#[cfg(unix)]
fn read_at(file: &std::fs::File, range: Range<u64>) -> Result<Bytes, ReadError> {
    use std::os::unix::io::AsRawFd;
    if range.end.saturating_sub(range.start) >= MAP_MIN {
        return map_range(file, &range);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
        let path =
            std::env::temp_dir().join(format!("lance_core_local_{}_{name}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn large_ranges_are_mapped_small_ones_read_and_both_checked_against_the_length() {
        let data: Vec<u8> = (0..3 * MAP_MIN as usize).map(|i| (i % 251) as u8).collect();
        let path = temp_file("ranges", &data);
        // Mapped (2 MiB from an offset that is not page-aligned), read, and merged ranges.
        let ranges = [
            5000..5000 + 2 * MAP_MIN,
            10..20,
            30..40,
            3 * MAP_MIN - 8..3 * MAP_MIN,
        ];
        let got = read_ranges(&path, &ranges).ok().unwrap();
        for (r, b) in ranges.iter().zip(&got) {
            assert_eq!(&b[..], &data[r.start as usize..r.end as usize]);
        }
        // The file shrinks: a range past its end is a short read, mapped or not.
        std::fs::write(&path, &data[..MAP_MIN as usize + 100]).unwrap();
        for r in [0..2 * MAP_MIN, MAP_MIN..MAP_MIN + 200] {
            match read_ranges(&path, std::slice::from_ref(&r)) {
                Err(ReadError::Short { len, .. }) => assert_eq!(len, MAP_MIN + 100),
                Ok(_) => panic!("{r:?} read past the end"),
                Err(_) => panic!("{r:?}: another error"),
            }
        }
        let _ = std::fs::remove_file(&path);
    }
}
