//! Deletion files: the physical row offsets deleted from a fragment, either an Arrow IPC
//! file with one u32 column (small sets) or a serialized 32-bit roaring bitmap.
use std::io::Cursor;

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
    let bad = |m: String| Error::corrupt(name, m);
    let reader = arrow_ipc::reader::FileReader::try_new(Cursor::new(bytes.clone()), None)
        .map_err(|e| bad(format!("bad Arrow IPC deletion file: {e}")))?;
    let mut set = RoaringBitmap::new();
    for batch in reader {
        let batch = batch.map_err(|e| bad(format!("bad Arrow IPC deletion file: {e}")))?;
        if batch.num_columns() != 1 {
            return Err(bad(format!(
                "deletion file has {} columns, expected 1",
                batch.num_columns()
            )));
        }
        let col = batch.column(0);
        if col.null_count() > 0 {
            return Err(bad("deletion file has null row offsets".into()));
        }
        if let Some(a) = col.as_any().downcast_ref::<UInt32Array>() {
            set.extend(a.values().iter().copied());
        } else if let Some(a) = col.as_any().downcast_ref::<Int32Array>() {
            for &v in a.values() {
                set.insert(u32::try_from(v).map_err(|_| bad(format!("negative row offset {v}")))?);
            }
        } else if let Some(a) = col.as_any().downcast_ref::<UInt64Array>() {
            for &v in a.values() {
                set.insert(u32::try_from(v).map_err(|_| bad(format!("row offset {v} too large")))?);
            }
        } else {
            return Err(bad(format!(
                "deletion file column has type {}",
                col.data_type()
            )));
        }
    }
    Ok(set)
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
}
