//! Deletion files: the physical row offsets deleted from a fragment, either an Arrow IPC
//! file with one u32 column (small sets) or a serialized 32-bit roaring bitmap.
use arrow_array::{Array, Int32Array, UInt32Array, UInt64Array};
use bytes::Bytes;
use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::proto::table::{deletion_file::DeletionFileType, DeletionFile};

/// `_deletions/{fragment}-{read_version}-{id}.{arrow|bin}`
pub fn deletion_file_name(fragment_id: u64, d: &DeletionFile) -> String {
    let ext = match DeletionFileType::try_from(d.file_type) {
        Ok(DeletionFileType::Bitmap) => "bin",
        _ => "arrow",
    };
    format!("{fragment_id}-{}-{}.{ext}", d.read_version, d.id)
}

/// Decode a deletion file's bytes into the set of deleted row offsets.
pub fn decode_deletions(bytes: &Bytes, d: &DeletionFile, name: &str) -> Result<RoaringBitmap> {
    match DeletionFileType::try_from(d.file_type) {
        Ok(DeletionFileType::Bitmap) => RoaringBitmap::deserialize_from(&bytes[..])
            .map_err(|e| Error::corrupt(name, format!("bad roaring bitmap: {e}"))),
        Ok(DeletionFileType::ArrowArray) => decode_arrow(bytes, name),
        Err(_) => Err(Error::unsupported(
            name,
            format!("deletion file type {}", d.file_type),
        )),
    }
}

fn decode_arrow(bytes: &Bytes, name: &str) -> Result<RoaringBitmap> {
    // arrow-ipc trusts the lengths a file states: it allocates them, or slices buffers
    // by them and panics when they do not fit. `read_arrow` checks each one against the
    // bytes first; should a panic still get through, it is this file's error.
    let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| read_arrow(bytes)));
    let message = match read {
        Ok(r) => return r.map_err(|m| Error::corrupt(name, m)),
        Err(panic) => panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default(),
    };
    Err(Error::corrupt(
        name,
        format!("bad Arrow IPC deletion file (the Arrow reader failed: {message})"),
    ))
}

const ARROW_MAGIC: &[u8] = b"ARROW1";

/// The deleted offsets of an Arrow IPC file: its one column of u32, i32 or u64, in any
/// number of record batches. Nothing is read or allocated past what the bytes hold.
fn read_arrow(bytes: &Bytes) -> std::result::Result<RoaringBitmap, String> {
    let bad = |m: String| format!("bad Arrow IPC deletion file: {m}");
    let len = bytes.len();
    if len < 2 * ARROW_MAGIC.len() + 6
        || !bytes.starts_with(ARROW_MAGIC)
        || !bytes.ends_with(ARROW_MAGIC)
    {
        return Err(bad(format!(
            "no ARROW1 magic at both ends of its {len} bytes"
        )));
    }
    let footer_len = i32::from_le_bytes(bytes[len - 10..len - 6].try_into().unwrap());
    let footer_start = usize::try_from(footer_len)
        .ok()
        .and_then(|f| (len - 10).checked_sub(f))
        .filter(|&s| s >= 8)
        .ok_or_else(|| bad(format!("footer of {footer_len} bytes in a file of {len}")))?;
    let footer = arrow_ipc::root_as_footer(&bytes[footer_start..len - 10])
        .map_err(|e| bad(format!("footer: {e}")))?;
    if footer.dictionaries().is_some_and(|d| !d.is_empty()) {
        return Err(bad("it has dictionaries".into()));
    }
    let schema = footer.schema().ok_or_else(|| bad("no schema".into()))?;
    let schema = arrow_ipc::convert::try_fb_to_schema(schema).map_err(|e| bad(e.to_string()))?;
    if schema.fields().len() != 1 {
        return Err(format!(
            "deletion file has {} columns, expected 1",
            schema.fields().len()
        ));
    }
    let dt = schema.field(0).data_type().clone();
    if !matches!(
        dt,
        arrow_schema::DataType::UInt32
            | arrow_schema::DataType::Int32
            | arrow_schema::DataType::UInt64
    ) {
        return Err(format!("deletion file column has type {dt}"));
    }
    let decoder =
        arrow_ipc::reader::FileDecoder::new(std::sync::Arc::new(schema), footer.version());
    let buffer = arrow_buffer::Buffer::from(bytes.clone());
    let mut set = RoaringBitmap::new();
    for block in footer.recordBatches().iter().flatten() {
        let (at, meta, body) = (block.offset(), block.metaDataLength(), block.bodyLength());
        let range = usize::try_from(at)
            .ok()
            .zip(usize::try_from(meta).ok().filter(|&m| m >= 8))
            .zip(usize::try_from(body).ok())
            .and_then(|((at, meta), body)| Some(at..at.checked_add(meta)?.checked_add(body)?))
            .filter(|r| r.start >= 8 && r.end <= footer_start)
            .ok_or_else(|| {
                bad(format!(
                    "record batch at {at} ({meta} + {body} bytes) outside the data"
                ))
            })?;
        let body_at = range.start + meta as usize;
        check_batch_message(
            &bytes[range.start..body_at],
            &bytes[body_at..range.end],
            len,
        )
        .map_err(bad)?;
        let batch = decoder
            .read_record_batch(block, &buffer.slice_with_length(range.start, range.len()))
            .map_err(|e| bad(e.to_string()))?;
        let Some(batch) = batch else { continue };
        let col = batch.column(0);
        if col.null_count() > 0 {
            return Err("deletion file has null row offsets".into());
        }
        if let Some(a) = col.as_any().downcast_ref::<UInt32Array>() {
            set.extend(a.values().iter().copied());
        } else if let Some(a) = col.as_any().downcast_ref::<Int32Array>() {
            for &v in a.values() {
                set.insert(u32::try_from(v).map_err(|_| format!("negative row offset {v}"))?);
            }
        } else if let Some(a) = col.as_any().downcast_ref::<UInt64Array>() {
            for &v in a.values() {
                set.insert(u32::try_from(v).map_err(|_| format!("row offset {v} too large"))?);
            }
        }
    }
    Ok(set)
}

/// A compressed buffer of a deletion file may inflate this many times (the file's row
/// offsets are distinct, so they do not compress far; a corrupt stated size does).
const MAX_INFLATION: usize = 1024;

/// Check a record batch message (`meta`, with its 8-byte prefix) against its `body`, in
/// a file of `file_len` bytes: every buffer inside the body, every count within what it
/// can hold, and the size each compressed buffer states (arrow-ipc allocates it before
/// decompressing) within `MAX_INFLATION` times the file.
fn check_batch_message(
    meta: &[u8],
    body: &[u8],
    file_len: usize,
) -> std::result::Result<(), String> {
    let body_len = body.len() as i64;
    let max_inflated = file_len.saturating_mul(MAX_INFLATION) as i64;
    // As arrow-ipc reads it: a continuation marker and a length, or (old files) a length.
    let flatbuffer = if meta[..4] == [0xFF; 4] {
        &meta[8..]
    } else {
        &meta[4..]
    };
    let message = arrow_ipc::root_as_message(flatbuffer).map_err(|e| format!("message: {e}"))?;
    let Some(batch) = message.header_as_record_batch() else {
        return Ok(()); // arrow-ipc rejects anything else itself
    };
    let compressed = batch.compression().is_some();
    let bits = if compressed { max_inflated } else { body_len }.saturating_mul(8);
    let count_ok = |n: i64| (0..=bits).contains(&n);
    if !count_ok(batch.length()) {
        return Err(format!("record batch of {} rows", batch.length()));
    }
    for n in batch.nodes().iter().flatten() {
        if !count_ok(n.length()) || !(0..=n.length()).contains(&n.null_count()) {
            return Err(format!(
                "array of {} values ({} null)",
                n.length(),
                n.null_count()
            ));
        }
    }
    for b in batch.buffers().iter().flatten() {
        let end = b.offset().checked_add(b.length());
        if b.offset() < 0 || b.length() < 0 || end.is_none_or(|e| e > body_len) {
            return Err(format!(
                "buffer at {} of {} bytes outside a body of {body_len}",
                b.offset(),
                b.length()
            ));
        }
        if compressed && b.length() > 0 {
            // An i64 uncompressed size (-1: stored as it is), then the compressed bytes.
            let at = b.offset() as usize;
            let size = body
                .get(at..at + 8)
                .filter(|_| b.length() >= 8)
                .map(|s| i64::from_le_bytes(s.try_into().unwrap()))
                .ok_or_else(|| format!("compressed buffer of {} bytes", b.length()))?;
            if size < -1 || size > max_inflated {
                return Err(format!(
                    "compressed buffer of {} bytes claims {size} bytes",
                    b.length()
                ));
            }
        }
    }
    Ok(())
}

/// Deletion sets of this many rows or more are stored as roaring bitmaps, smaller ones
/// as Arrow files (as the reference does).
pub const BITMAP_THRESHOLD: u64 = 5000;

/// Encode a fragment's deleted row offsets: (file type, bytes).
pub fn encode_deletions(set: &RoaringBitmap) -> Result<(DeletionFileType, Bytes)> {
    if set.len() >= BITMAP_THRESHOLD {
        let mut out = Vec::with_capacity(set.serialized_size());
        set.serialize_into(&mut out)
            .map_err(|e| Error::io("deletion file", e))?;
        return Ok((DeletionFileType::Bitmap, Bytes::from(out)));
    }
    use std::sync::Arc;
    let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
        "row_id",
        arrow_schema::DataType::UInt32,
        false,
    )]));
    let column: arrow_array::ArrayRef = Arc::new(UInt32Array::from_iter_values(set.iter()));
    let batch = arrow_array::RecordBatch::try_new(schema.clone(), vec![column])?;
    let mut out = Vec::new();
    let mut w = arrow_ipc::writer::FileWriter::try_new(&mut out, &schema)?;
    w.write(&batch)?;
    w.finish()?;
    drop(w);
    Ok((DeletionFileType::ArrowArray, Bytes::from(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_kinds_round_trip() {
        for n in [1u32, 4999, 5000, 12345] {
            let set: RoaringBitmap = (0..n).map(|i| i * 3).collect();
            let (kind, bytes) = encode_deletions(&set).unwrap();
            assert_eq!(kind == DeletionFileType::Bitmap, n >= 5000);
            let d = DeletionFile {
                file_type: kind as i32,
                ..Default::default()
            };
            assert_eq!(decode_deletions(&bytes, &d, "t").unwrap(), set);
        }
        let d = DeletionFile {
            file_type: DeletionFileType::Bitmap as i32,
            ..Default::default()
        };
        assert!(decode_deletions(&Bytes::from_static(b"junk"), &d, "t")
            .unwrap_err()
            .to_string()
            .contains("t: corrupt"));
    }

    fn arrow_file(values: &[u32], compression: Option<arrow_ipc::CompressionType>) -> Vec<u8> {
        use std::sync::Arc;
        let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
            "row_id",
            arrow_schema::DataType::UInt32,
            false,
        )]));
        let column: arrow_array::ArrayRef = Arc::new(UInt32Array::from(values.to_vec()));
        let batch = arrow_array::RecordBatch::try_new(schema.clone(), vec![column]).unwrap();
        let options = arrow_ipc::writer::IpcWriteOptions::default()
            .try_with_compression(compression)
            .unwrap();
        let mut out = Vec::new();
        let mut w = arrow_ipc::writer::FileWriter::try_new_with_options(&mut out, &schema, options)
            .unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
        drop(w);
        out
    }

    fn arrow_kind() -> DeletionFile {
        DeletionFile {
            file_type: DeletionFileType::ArrowArray as i32,
            ..Default::default()
        }
    }

    #[test]
    fn every_bit_flip_of_an_arrow_file_is_an_error_or_a_set() {
        // A bit-flipped deletion file made arrow-ipc panic ("offset of the new Buffer
        // cannot exceed the existing length"); now each flip decodes or is `Corrupt`.
        for compression in [None, Some(arrow_ipc::CompressionType::LZ4_FRAME)] {
            let good = arrow_file(&[3, 8, 1000, 4097], compression);
            let want: RoaringBitmap = [3u32, 8, 1000, 4097].into_iter().collect();
            assert_eq!(
                decode_deletions(&Bytes::from(good.clone()), &arrow_kind(), "d").unwrap(),
                want
            );
            for bit in 0..good.len() * 8 {
                let mut bad = good.clone();
                bad[bit / 8] ^= 1 << (bit % 8);
                match decode_deletions(&Bytes::from(bad), &arrow_kind(), "d") {
                    Ok(_) => {}
                    Err(Error::Corrupt { path, .. }) => assert_eq!(path, "d"),
                    Err(e) => panic!("bit {bit}: {e}"),
                }
            }
        }
    }

    #[test]
    fn stated_sizes_beyond_the_file_are_refused_before_allocating() {
        // A 698-byte file whose footer claimed 1.3 GB made the reader allocate that much.
        let good = arrow_file(&[1, 2, 3], None);
        let n = good.len();
        let mut bad = good.clone();
        bad[n - 10..n - 6].copy_from_slice(&1_300_000_000i32.to_le_bytes());
        let err = decode_deletions(&Bytes::from(bad), &arrow_kind(), "d").unwrap_err();
        assert!(
            err.to_string().contains("footer of 1300000000 bytes"),
            "{err}"
        );
        // A compressed buffer that claims to inflate to 1 TiB.
        let values: Vec<u32> = (0..500).collect();
        let mut bad = arrow_file(&values, Some(arrow_ipc::CompressionType::ZSTD));
        let size = (values.len() as i64 * 4).to_le_bytes();
        let at = bad
            .windows(8)
            .position(|w| w == size)
            .expect("the stated size");
        bad[at..at + 8].copy_from_slice(&(1i64 << 40).to_le_bytes());
        let err = decode_deletions(&Bytes::from(bad), &arrow_kind(), "d").unwrap_err();
        assert!(
            err.to_string().contains("claims 1099511627776 bytes"),
            "{err}"
        );
    }
}
