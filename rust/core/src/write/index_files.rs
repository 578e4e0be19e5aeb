//! What every index build shares, whatever its kind: the indexed column read with each
//! row's address (or stable row id), the index's files written under
//! `_indices/<uuid>/` in the table's file format, the segment's manifest entry, and the
//! manifest's index entries looked up by name.
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{ArrayRef, UInt64Array};
use futures::{StreamExt, TryStreamExt};

use super::file::DataFileWriter;
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::file::FileVersion;
use crate::index::IndexFileData;
use crate::proto::table::{IndexFile, IndexMetadata, Uuid};
use crate::scan::{scan, ScanOptions, ROW_ADDRESS, ROW_ID};
use crate::table::schema::LanceSchema;
use crate::table::transaction::Staged;

/// The manifest entry of a segment written under `_indices/<uuid>/`.
#[allow(clippy::too_many_arguments)]
pub(super) fn segment_entry(
    ds: &Dataset,
    uuid: uuid::Uuid,
    field_id: i32,
    name: &str,
    covered: &[u64],
    details: prost_types::Any,
    index_version: i32,
    files: Vec<IndexFile>,
) -> Result<IndexMetadata> {
    let mut bitmap = roaring::RoaringBitmap::new();
    bitmap.extend(covered.iter().map(|&f| f as u32));
    let mut fragment_bitmap = Vec::with_capacity(bitmap.serialized_size());
    bitmap
        .serialize_into(&mut fragment_bitmap)
        .map_err(|e| Error::io(ds.uri(), e.to_string()))?;
    let created_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64;
    Ok(IndexMetadata {
        uuid: Some(Uuid {
            uuid: uuid.as_bytes().to_vec(),
        }),
        fields: vec![field_id],
        name: name.to_string(),
        dataset_version: ds.version(),
        fragment_bitmap,
        index_details: Some(details),
        index_version: Some(index_version),
        created_at: Some(created_at),
        base_id: None,
        files,
    })
}

/// The manifest's index entries.
pub(crate) fn index_metadata(ds: &Dataset) -> Result<Vec<IndexMetadata>> {
    let name = ds.storage().display(&ds.location.path);
    Ok(
        crate::table::manifest::index_section(&ds.manifest, &ds.manifest_bytes, &name)?
            .map(|s| s.indices)
            .unwrap_or_default(),
    )
}

pub(super) fn segments_named(ds: &Dataset, name: &str) -> Result<Vec<IndexMetadata>> {
    Ok(index_metadata(ds)?
        .into_iter()
        .filter(|i| i.name == name)
        .collect())
}

/// The live values of `column` in `fragments`, batch by batch, each with its rows'
/// addresses (or stable row ids).
pub(super) fn column_batches(
    ds: &Arc<Dataset>,
    column: &str,
    by_row_id: bool,
    fragments: &[u64],
) -> Result<futures::stream::BoxStream<'static, Result<(ArrayRef, UInt64Array)>>> {
    column_batches_in(ds, column, by_row_id, fragments, None, 64 * 1024)
}

/// `column_batches` in batches of `batch_size` rows, only physical rows `start..end` of
/// each fragment when `row_range` is given (several workers sharing a large fragment).
pub(super) fn column_batches_in(
    ds: &Arc<Dataset>,
    column: &str,
    by_row_id: bool,
    fragments: &[u64],
    row_range: Option<(u64, u64)>,
    batch_size: usize,
) -> Result<futures::stream::BoxStream<'static, Result<(ArrayRef, UInt64Array)>>> {
    let options = ScanOptions {
        columns: Some(vec![column.to_string()]),
        fragment_ids: Some(fragments.to_vec()),
        row_range,
        with_row_address: !by_row_id,
        with_row_id: by_row_id,
        batch_size,
        ..Default::default()
    };
    let s = scan(ds.clone(), options)?;
    let id_column = if by_row_id { ROW_ID } else { ROW_ADDRESS };
    let uri = ds.uri().to_string();
    Ok(Box::pin(s.batches.map(move |b| {
        let b = b?;
        let ids = b
            .column_by_name(id_column)
            .map(|a| a.as_primitive::<arrow_array::types::UInt64Type>().clone())
            .ok_or_else(|| Error::corrupt(&uri, "internal: the scan returned no row ids"))?;
        Ok((b.column(0).clone(), ids))
    })))
}

/// Every live value of `column` in `fragments`, with its row's address (or stable row
/// id).
pub(super) async fn read_column(
    ds: &Arc<Dataset>,
    column: &str,
    by_row_id: bool,
    fragments: &[u64],
) -> Result<(ArrayRef, UInt64Array)> {
    let parts: Vec<(ArrayRef, UInt64Array)> = column_batches(ds, column, by_row_id, fragments)?
        .try_collect()
        .await?;
    let values: Vec<&dyn arrow_array::Array> = parts.iter().map(|(v, _)| v.as_ref()).collect();
    let ids: Vec<&dyn arrow_array::Array> = parts
        .iter()
        .map(|(_, i)| i as &dyn arrow_array::Array)
        .collect();
    match parts.is_empty() {
        true => {
            let field = ds.arrow_schema.field_with_name(column)?;
            Ok((
                arrow_array::new_empty_array(field.data_type()),
                UInt64Array::from(Vec::<u64>::new()),
            ))
        }
        false => Ok((
            arrow_select::concat::concat(&values)?,
            arrow_select::concat::concat(&ids)?
                .as_primitive::<arrow_array::types::UInt64Type>()
                .clone(),
        )),
    }
}

/// Write each file of an index in its directory; their names and sizes.
pub(super) async fn write_files(
    ds: &Dataset,
    staged: &Staged,
    uuid: &uuid::Uuid,
    files: Vec<IndexFileData>,
) -> Result<Vec<IndexFile>> {
    // Index files follow the table's format; older tables get 2.1 files (lance_core
    // writes no older format, and pylance reads these whatever the table's).
    let version = match ds.data_storage_version().as_str() {
        "0.1" | "2.0" | "2.1" => FileVersion { major: 2, minor: 1 },
        _ => FileVersion { major: 2, minor: 2 },
    };
    let mut out = Vec::with_capacity(files.len());
    for IndexFileData {
        name,
        batch,
        global_buffers,
    } in files
    {
        let schema = LanceSchema::from_arrow(&batch.schema(), 0)?;
        let leaves = super::leaves::leaves(&schema, version.minor >= 2)?;
        let path = ds
            .storage()
            .path(&format!("_indices/{}/{name}", uuid.hyphenated()));
        staged.add(path.clone());
        let mut w =
            DataFileWriter::create_at(ds.storage(), path, name.to_string(), version, &leaves);
        for buffer in global_buffers {
            w.add_global_buffer(buffer).await?;
        }
        let mut at = 0;
        while at < batch.num_rows() {
            let n = (batch.num_rows() - at).min(64 * 1024);
            w.write(&batch.slice(at, n)).await?;
            at += n;
        }
        let file = w.finish(&schema).await?;
        out.push(IndexFile {
            path: name.to_string(),
            size_bytes: file.file_size_bytes,
        });
    }
    Ok(out)
}

/// The segments a new build of index `name` replaces: none when there is no such index;
/// when there is one, all of its segments if `replace`, else an error naming it.
pub fn replaced_segments(ds: &Dataset, name: &str, replace: bool) -> Result<Vec<IndexMetadata>> {
    let removed = segments_named(ds, name)?;
    if !removed.is_empty() && !replace {
        return Err(Error::invalid(format!(
            "{}: an index named '{name}' already exists (replace=True replaces it)",
            ds.uri()
        )));
    }
    Ok(removed)
}
