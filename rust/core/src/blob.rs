//! Blob columns' values located (pylance's `take_blobs`): each row's bytes are a range of
//! one object, read lazily by the caller. Where depends on the layout:
//! - blob v1 (format 2.1 and older): `(position, size)` in the fragment's data file that
//!   holds the column;
//! - blob v2 (2.2): `kind` says inline (in that data file, as v1), packed (a range of a
//!   sidecar file `data/<data file stem>/<blob id, bits reversed, in binary>.blob`),
//!   dedicated (a whole sidecar file), external (`blob_uri`: an absolute URI when
//!   `blob_id` is 0, else a path below base path `blob_id`; size 0 means the whole object)
//!   or managed (`blob_uri` a path below the table's root, kind 4, or below base path
//!   `blob_id`, kind 5; the size is exact).
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{UInt32Type, UInt64Type, UInt8Type};
use arrow_array::{Array, StructArray};
use object_store::path::Path;

use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::scan::{Projection, Scan};
use crate::storage::Storage;

/// How a blob is stored (blob v2's `kind`; v1 blobs are all inline).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlobKind {
    Inline = 0,
    Packed = 1,
    Dedicated = 2,
    External = 3,
    /// A range of an object the table manages, below its root (pylance's
    /// `append_managed`; kind 4), or below base path `blob_id` (kind 5).
    Managed = 4,
}

/// The object name of sidecar `id` in its data file's directory: the id's bits reversed,
/// as 32 binary digits (consecutive ids spread over an object store's key space).
pub fn sidecar_name(id: u32) -> String {
    format!("{:032b}.blob", id.reverse_bits())
}

/// Where sidecar `id` of the data file at `data_file` is: `<dir>/<stem>/<name>` for
/// `<dir>/<stem>.lance` (paths relative to the same root).
pub fn sidecar_path(data_file: &str, id: u32) -> String {
    let stem = data_file.strip_suffix(".lance").unwrap_or(data_file);
    format!("{stem}/{}", sidecar_name(id))
}

/// Where one blob's bytes are.
#[derive(Clone, Debug)]
pub struct BlobLocation {
    pub storage: Storage,
    pub path: Path,
    pub position: u64,
    pub size: u64,
    pub kind: BlobKind,
    /// The URI an external blob was given by.
    pub uri: Option<String>,
}

impl BlobLocation {
    /// How errors name the blob's object.
    pub fn shown(&self) -> String {
        self.storage.display(&self.path)
    }

    /// Bytes `offset..offset + len` of the blob, in one read.
    pub async fn read(&self, offset: u64, len: u64) -> Result<bytes::Bytes> {
        let range = self.physical(offset, len)?;
        self.storage.get_range(&self.path, range).await
    }

    /// Several ranges `(offset, len)` of the blob, read together.
    pub async fn read_many(&self, ranges: &[(u64, u64)]) -> Result<Vec<bytes::Bytes>> {
        let physical: Vec<_> = ranges
            .iter()
            .map(|&(o, l)| self.physical(o, l))
            .collect::<Result<_>>()?;
        self.storage.get_ranges(&self.path, &physical).await
    }

    fn physical(&self, offset: u64, len: u64) -> Result<std::ops::Range<u64>> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size => Ok(self.position + offset..self.position + end),
            _ => Err(Error::invalid(format!(
                "{}: bytes {offset}..{} lie past the end of a blob of {} bytes",
                self.shown(),
                offset.saturating_add(len),
                self.size
            ))),
        }
    }
}

/// The locations of column `column`'s blobs in the rows at `addresses` (in that order;
/// None for a NULL blob).
pub async fn locate(
    ds: Arc<Dataset>,
    column: &str,
    addresses: &[u64],
) -> Result<Vec<Option<BlobLocation>>> {
    blob_field(&ds, column)?;
    let projection = Projection {
        columns: Some(vec![column.to_string()]),
        with_row_address: true,
        ..Default::default()
    };
    let batch = crate::scan::take::take(ds.clone(), addresses, &projection).await?;
    let rows = batch.column(1).as_primitive::<UInt64Type>();
    locate_rows(&ds, column, batch.column(0), rows.values()).await
}

/// The id of blob column `column`, and whether it is blob v2.
fn blob_field(ds: &Dataset, column: &str) -> Result<(i32, bool)> {
    let field = ds
        .schema
        .field(column)
        .ok_or_else(|| Error::invalid(format!("{}: no column '{column}'", ds.uri())))?;
    match (field.is_blob_v1(), field.is_blob_v2()) {
        (_, true) => Ok((field.id, true)),
        (true, _) => Ok((field.id, false)),
        _ => Err(Error::invalid(format!(
            "{}: column '{column}' is not a blob column",
            ds.uri()
        ))),
    }
}

/// Column `column` of a scan as the blob descriptors it must be.
fn as_descriptors<'a>(
    ds: &Dataset,
    column: &str,
    descriptors: &'a arrow_array::ArrayRef,
) -> Result<&'a StructArray> {
    descriptors.as_struct_opt().ok_or_else(|| {
        Error::corrupt(
            ds.uri(),
            format!("'{column}' did not read as blob descriptors"),
        )
    })
}

/// Field `name` of blob descriptors `d` (of column `column`).
fn descriptor_child<'a>(
    ds: &Dataset,
    column: &str,
    d: &'a StructArray,
    name: &str,
) -> Result<&'a arrow_array::ArrayRef> {
    d.column_by_name(name).ok_or_else(|| {
        Error::corrupt(
            ds.uri(),
            format!("blob descriptors of '{column}' lack '{name}'"),
        )
    })
}

/// The locations of the blobs `descriptors` (column `column` as a scan or take returns
/// it) describe, for the rows at `rows` (their addresses).
pub async fn locate_rows(
    ds: &Dataset,
    column: &str,
    descriptors: &arrow_array::ArrayRef,
    rows: &[u64],
) -> Result<Vec<Option<BlobLocation>>> {
    let (field_id, v2) = blob_field(ds, column)?;
    let descriptors = as_descriptors(ds, column, descriptors)?;
    let field_of = |name: &str| descriptor_child(ds, column, descriptors, name);
    let positions = field_of("position")?.as_primitive::<UInt64Type>().clone();
    let sizes = field_of("size")?.as_primitive::<UInt64Type>().clone();
    let v2_columns = match v2 {
        true => Some((
            field_of("kind")?.as_primitive::<UInt8Type>().clone(),
            field_of("blob_id")?.as_primitive::<UInt32Type>().clone(),
            field_of("blob_uri")?.as_string::<i32>().clone(),
        )),
        false => None,
    };
    let mut out = Vec::with_capacity(rows.len());
    for (i, &row) in rows.iter().enumerate() {
        if descriptors.is_null(i) {
            out.push(None);
            continue;
        }
        let (position, size) = (positions.value(i), sizes.value(i));
        let Some((kinds, ids, uris)) = &v2_columns else {
            let (storage, path) = data_file(ds, field_id, row)?;
            out.push(Some(BlobLocation {
                storage,
                path,
                position,
                size,
                kind: BlobKind::Inline,
                uri: None,
            }));
            continue;
        };
        let location = match kinds.value(i) {
            // (An empty inline blob at 0 is empty, not NULL: its descriptor is valid.)
            0 => {
                let (storage, path) = data_file(ds, field_id, row)?;
                Some((storage, path, position, BlobKind::Inline, None))
            }
            k @ (1 | 2) => {
                let (storage, data) = data_file(ds, field_id, row)?;
                let path = Path::from(sidecar_path(data.as_ref(), ids.value(i)));
                match k {
                    1 => Some((storage, path, position, BlobKind::Packed, None)),
                    _ => Some((storage, path, 0, BlobKind::Dedicated, None)),
                }
            }
            3 => {
                let uri = uris.value(i).to_string();
                let (storage, path) = match ids.value(i) {
                    0 => {
                        let (dir, name) = crate::storage::split_uri(&uri)?;
                        let storage = Storage::open(dir, ds.storage_options())?;
                        let path = storage.path(name);
                        (storage, path)
                    }
                    base => {
                        let storage = ds.base_storage(base)?.clone();
                        let path = storage.path(&uri);
                        (storage, path)
                    }
                };
                Some((storage, path, position, BlobKind::External, Some(uri)))
            }
            k @ (4 | 5) => {
                let uri = uris.value(i).to_string();
                let storage = match k {
                    4 => ds.storage().clone(),
                    _ => ds.base_storage(ids.value(i))?.clone(),
                };
                let path = storage.path(&uri);
                Some((storage, path, position, BlobKind::Managed, Some(uri)))
            }
            other => {
                return Err(Error::unsupported(
                    ds.uri(),
                    format!("blob kind {other} in column '{column}'"),
                ))
            }
        };
        let Some((storage, path, position, kind, uri)) = location else {
            out.push(None);
            continue;
        };
        let size = match (kind, size) {
            (BlobKind::External, 0) => storage.head(&path).await?.size.saturating_sub(position),
            _ => size,
        };
        out.push(Some(BlobLocation {
            storage,
            path,
            position,
            size,
            kind,
            uri,
        }));
    }
    Ok(out)
}

/// The bytes of blobs at `locations` (None: NULL) as one array, read concurrently (the
/// ranges of one object asked for together).
pub async fn read_all(locations: &[Option<BlobLocation>]) -> Result<arrow_array::LargeBinaryArray> {
    use futures::{StreamExt, TryStreamExt};
    let mut by_object: std::collections::HashMap<String, Vec<usize>> = Default::default();
    let mut values: Vec<Option<bytes::Bytes>> = vec![None; locations.len()];
    for (i, l) in locations.iter().enumerate() {
        match l {
            Some(l) if l.size == 0 => values[i] = Some(bytes::Bytes::new()),
            Some(l) => by_object.entry(l.shown()).or_default().push(i),
            None => {}
        }
    }
    let reads = by_object.into_values().map(|rows| async move {
        let first = locations[rows[0]].as_ref().expect("grouped above");
        let ranges: Vec<_> = rows
            .iter()
            .map(|&i| {
                let l = locations[i].as_ref().expect("grouped above");
                l.position..l.position + l.size
            })
            .collect();
        let bytes = first.storage.get_ranges(&first.path, &ranges).await?;
        Ok::<_, Error>(rows.into_iter().zip(bytes).collect::<Vec<_>>())
    });
    let parallel = locations
        .iter()
        .flatten()
        .next()
        .map_or(1, |l| l.storage.io_parallelism());
    let read: Vec<Vec<(usize, bytes::Bytes)>> = futures::stream::iter(reads)
        .buffer_unordered(parallel)
        .try_collect()
        .await?;
    for (i, b) in read.into_iter().flatten() {
        values[i] = Some(b);
    }
    Ok(values
        .iter()
        .map(|v| v.as_deref())
        .collect::<arrow_array::LargeBinaryArray>())
}

/// Byte ranges `(blob, offset, length)` of blobs (None: a NULL blob, whose ranges read as
/// None), read as `read_all` reads whole blobs. A range past its blob's end is an error.
pub async fn read_ranges(
    requests: &[(Option<&BlobLocation>, u64, u64)],
) -> Result<Vec<Option<bytes::Bytes>>> {
    let mut parts = Vec::with_capacity(requests.len());
    for (i, (blob, offset, length)) in requests.iter().enumerate() {
        let Some(blob) = blob else {
            parts.push(None);
            continue;
        };
        let end = offset.checked_add(*length).filter(|e| *e <= blob.size);
        if end.is_none() {
            return Err(Error::invalid(format!(
                "request {i}: bytes {offset}..{offset}+{length} are past the end of {} \
                 (a blob of {} bytes)",
                blob.shown(),
                blob.size
            )));
        }
        parts.push(Some(BlobLocation {
            position: blob.position + offset,
            size: *length,
            ..(*blob).clone()
        }));
    }
    let read = read_all(&parts).await?;
    Ok((0..parts.len())
        .map(|i| {
            read.is_valid(i)
                .then(|| bytes::Bytes::copy_from_slice(read.value(i)))
        })
        .collect())
}

/// What a read returns for blob columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BlobRead {
    /// Where each blob is (pylance's default).
    #[default]
    Descriptors,
    /// The bytes, large_binary (pylance's `blob_handling="all_binary"`).
    Bytes,
    /// What the blobs were written from: bytes for v1 columns, and for v2 columns the
    /// blob struct `{data, uri, position, size}` (an external blob keeps its URI), so that
    /// rows can be written again as they were (update, compaction).
    Values,
}

/// `inner` (a read whose batches end with `_rowaddr`) with its blob columns' descriptors
/// replaced by their bytes (`BlobRead::Bytes`, as large_binary) or the values they were
/// written from (`BlobRead::Values`): the rows' addresses locate them, batch by batch.
/// `_rowaddr` stays only when `keep_address`.
pub fn with_values(
    ds: Arc<Dataset>,
    inner: Scan,
    read: BlobRead,
    keep_address: bool,
) -> Result<Scan> {
    use futures::StreamExt;
    // (column, the blob struct type when v2 values are wanted as blob structs)
    let mut blobs: Vec<(usize, Option<arrow_schema::FieldRef>)> = Vec::new();
    let mut fields: Vec<arrow_schema::FieldRef> = inner.schema.fields().iter().cloned().collect();
    for (i, f) in inner.schema.fields().iter().enumerate() {
        let Ok((_, v2)) = blob_field(&ds, f.name()) else {
            continue;
        };
        let as_struct = match v2 && read == BlobRead::Values {
            true => Some(Arc::new(ds.arrow_schema.field_with_name(f.name())?.clone())),
            false => None,
        };
        fields[i] = as_struct.clone().unwrap_or_else(|| {
            Arc::new(arrow_schema::Field::new(
                f.name(),
                arrow_schema::DataType::LargeBinary,
                f.is_nullable(),
            ))
        });
        blobs.push((i, as_struct));
    }
    let address = inner.schema.index_of("_rowaddr")?;
    if !keep_address {
        fields.remove(address);
    }
    let schema = Arc::new(arrow_schema::Schema::new_with_metadata(
        fields,
        inner.schema.metadata().clone(),
    ));
    let out_schema = schema.clone();
    let columns: Vec<usize> = blobs.iter().map(|(i, _)| *i).collect();
    // A batch is cut into slices of at most `BYTES_PER_BATCH` of blobs (as their
    // descriptors size them) before any is read, so memory is bounded by bytes too.
    let batches = inner
        .batches
        .flat_map(move |batch| {
            let slices: Vec<Result<arrow_array::RecordBatch>> = match batch {
                Ok(b) => byte_bounded_slices(&b, &columns)
                    .into_iter()
                    .map(|(at, n)| Ok(b.slice(at, n)))
                    .collect(),
                Err(e) => vec![Err(e)],
            };
            futures::stream::iter(slices)
        })
        .then(move |batch: Result<arrow_array::RecordBatch>| {
            let (ds, blobs, schema) = (ds.clone(), blobs.clone(), out_schema.clone());
            async move {
                let batch = batch?;
                let rows = batch.column(address).as_primitive::<UInt64Type>().clone();
                let mut columns = batch.columns().to_vec();
                for (i, as_struct) in &blobs {
                    let i = *i;
                    let name = batch.schema_ref().field(i).name().clone();
                    columns[i] = match as_struct {
                        Some(target) => {
                            blob_values(&ds, &name, &columns[i], rows.values(), target).await?
                        }
                        None => {
                            let found = locate_rows(&ds, &name, &columns[i], rows.values()).await?;
                            Arc::new(read_all(&found).await?)
                        }
                    };
                }
                if !keep_address {
                    columns.remove(address);
                }
                let options =
                    arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
                Ok(arrow_array::RecordBatch::try_new_with_options(
                    schema, columns, &options,
                )?)
            }
        })
        .boxed();
    Ok(Scan { schema, batches })
}

/// Bytes of blobs one batch of a blob scan holds at most (a single larger blob is a batch
/// of its own).
const BYTES_PER_BATCH: u64 = 64 << 20;

/// Row ranges `(start, length)` of `batch` whose blobs in `columns` (descriptors with a
/// `size`) take at most `BYTES_PER_BATCH` each.
fn byte_bounded_slices(batch: &arrow_array::RecordBatch, columns: &[usize]) -> Vec<(usize, usize)> {
    let sizes: Vec<&arrow_array::UInt64Array> = columns
        .iter()
        .filter_map(|&c| batch.column(c).as_struct_opt()?.column_by_name("size"))
        .filter_map(|s| s.as_primitive_opt::<UInt64Type>())
        .collect();
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0usize, 0u64);
    for r in 0..batch.num_rows() {
        let row: u64 = sizes.iter().map(|s| s.value(r)).sum();
        if r > start && bytes + row > BYTES_PER_BATCH {
            out.push((start, r - start));
            (start, bytes) = (r, 0);
        }
        bytes += row;
    }
    if batch.num_rows() > start || out.is_empty() {
        out.push((start, batch.num_rows() - start));
    }
    out
}

/// Blob v2 rows (`descriptors`, at addresses `rows`) as the blob struct `target` types:
/// an external blob as its full URI and range, any other as its bytes.
async fn blob_values(
    ds: &Dataset,
    column: &str,
    descriptors: &arrow_array::ArrayRef,
    rows: &[u64],
    target: &arrow_schema::Field,
) -> Result<arrow_array::ArrayRef> {
    let d = as_descriptors(ds, column, descriptors)?;
    let child = |name: &str| descriptor_child(ds, column, d, name);
    let kinds = child("kind")?.as_primitive::<UInt8Type>();
    let positions = child("position")?.as_primitive::<UInt64Type>();
    let sizes = child("size")?.as_primitive::<UInt64Type>();
    let ids = child("blob_id")?.as_primitive::<UInt32Type>();
    let uris = child("blob_uri")?.as_string::<i32>();
    let external: Vec<bool> = (0..d.len())
        .map(|i| d.is_valid(i) && kinds.value(i) == BlobKind::External as u8)
        .collect();
    // The bytes of every blob that is not external, read together.
    let keep = arrow_array::BooleanArray::from(external.iter().map(|e| !e).collect::<Vec<_>>());
    let stored = arrow_select::filter::filter(descriptors, &keep)?;
    let stored_rows: Vec<u64> = rows
        .iter()
        .zip(&external)
        .filter(|(_, e)| !**e)
        .map(|(r, _)| *r)
        .collect();
    let found = locate_rows(ds, column, &stored, &stored_rows).await?;
    let bytes = read_all(&found).await?;
    let (mut data, mut uri) = (
        arrow_array::builder::LargeBinaryBuilder::new(),
        arrow_array::builder::StringBuilder::new(),
    );
    let mut position = arrow_array::builder::UInt64Builder::new();
    let mut size = arrow_array::builder::UInt64Builder::new();
    let mut next_stored = 0;
    for (i, &is_external) in external.iter().enumerate() {
        if is_external {
            let stored = uris.value(i);
            let full = match ids.value(i) {
                0 => stored.to_string(),
                base => format!(
                    "{}/{}",
                    ds.base_storage(base)?.uri().trim_end_matches('/'),
                    stored
                ),
            };
            data.append_null();
            uri.append_value(full);
            match sizes.value(i) {
                0 => {
                    position.append_null();
                    size.append_null();
                }
                n => {
                    position.append_value(positions.value(i));
                    size.append_value(n);
                }
            }
            continue;
        }
        match bytes.is_valid(next_stored) {
            true => data.append_value(bytes.value(next_stored)),
            false => data.append_null(),
        }
        next_stored += 1;
        uri.append_null();
        position.append_null();
        size.append_null();
    }
    let (data, uri, position, size) = (
        data.finish(),
        uri.finish(),
        position.finish(),
        size.finish(),
    );
    // NULL where the descriptor is NULL.
    let valid: Vec<bool> = (0..d.len())
        .map(|i| data.is_valid(i) || uri.is_valid(i))
        .collect();
    let arrow_schema::DataType::Struct(children) = target.data_type() else {
        return Err(Error::corrupt(
            ds.uri(),
            format!("blob column '{column}' is not a struct"),
        ));
    };
    let columns = children
        .iter()
        .map(|f| -> Result<arrow_array::ArrayRef> {
            let c: arrow_array::ArrayRef = match f.name().as_str() {
                "data" => Arc::new(data.clone()),
                "uri" => Arc::new(uri.clone()),
                "position" => Arc::new(position.clone()),
                "size" => Arc::new(size.clone()),
                _ => return Ok(arrow_array::new_null_array(f.data_type(), d.len())),
            };
            Ok(match c.data_type() == f.data_type() {
                true => c,
                false => arrow_cast::cast(&c, f.data_type())?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(StructArray::try_new(
        children.clone(),
        columns,
        Some(arrow_buffer::NullBuffer::from(valid)),
    )?))
}

/// The store and path of the data file holding field `field_id` in the row's fragment.
fn data_file(ds: &Dataset, field_id: i32, row_address: u64) -> Result<(Storage, Path)> {
    let fragment = row_address >> 32;
    let frag = ds
        .fragment(fragment)
        .ok_or_else(|| Error::invalid(format!("{}: no fragment {fragment}", ds.uri())))?;
    let file = frag
        .files
        .iter()
        .find(|f| f.fields.contains(&field_id))
        .ok_or_else(|| {
            Error::corrupt(
                ds.uri(),
                format!("fragment {fragment} has no data file for field {field_id}"),
            )
        })?;
    ds.data_file_location(file)
}

#[cfg(test)]
mod tests {
    #[test]
    fn blob_batches_are_cut_by_bytes() {
        use arrow_array::{ArrayRef, RecordBatch, StructArray, UInt64Array};
        use std::sync::Arc;
        const MB: u64 = 1 << 20;
        let sizes: ArrayRef = Arc::new(UInt64Array::from(vec![
            30 * MB,
            30 * MB,
            10 * MB,
            100 * MB,
            1,
        ]));
        let descriptors = StructArray::from(vec![(
            Arc::new(arrow_schema::Field::new(
                "size",
                arrow_schema::DataType::UInt64,
                false,
            )),
            sizes,
        )]);
        let batch = RecordBatch::try_from_iter([("b", Arc::new(descriptors) as ArrayRef)]).unwrap();
        assert_eq!(
            super::byte_bounded_slices(&batch, &[0]),
            vec![(0, 2), (2, 1), (3, 1), (4, 1)]
        );
        assert_eq!(
            super::byte_bounded_slices(&batch.slice(0, 0), &[0]),
            vec![(0, 0)]
        );
    }

    #[test]
    fn sidecar_names_reverse_the_blob_id() {
        // As pylance 14 names the sidecars of blobs 1 and 2.
        assert_eq!(
            super::sidecar_name(1),
            "10000000000000000000000000000000.blob"
        );
        assert_eq!(
            super::sidecar_name(2),
            "01000000000000000000000000000000.blob"
        );
    }
}
