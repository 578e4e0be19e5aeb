//! Blob columns' values located (pylance's `take_blobs`): each row's bytes are a range of
//! one object, read lazily by the caller. Where depends on the layout:
//! - blob v1 (format 2.1 and older): `(position, size)` in the fragment's data file that
//!   holds the column;
//! - blob v2 (2.2): `kind` says inline (in that data file, as v1), packed (a range of a
//!   sidecar file `data/<data file stem>/<blob id, bits reversed, in binary>.blob`),
//!   dedicated (a whole sidecar file) or external (`blob_uri`: an absolute URI when
//!   `blob_id` is 0, else a path below base path `blob_id`; size 0 means the whole object).
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

/// The locations of the blobs `descriptors` (column `column` as a scan or take returns
/// it) describe, for the rows at `rows` (their addresses).
pub async fn locate_rows(
    ds: &Dataset,
    column: &str,
    descriptors: &arrow_array::ArrayRef,
    rows: &[u64],
) -> Result<Vec<Option<BlobLocation>>> {
    let (field_id, v2) = blob_field(ds, column)?;
    let descriptors: &StructArray = descriptors.as_struct_opt().ok_or_else(|| {
        Error::corrupt(
            ds.uri(),
            format!("'{column}' did not read as blob descriptors"),
        )
    })?;
    let field_of = |name: &str| {
        descriptors.column_by_name(name).ok_or_else(|| {
            Error::corrupt(
                ds.uri(),
                format!("blob descriptors of '{column}' lack '{name}'"),
            )
        })
    };
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
            // A NULL v2 blob is an inline one of no bytes at 0.
            0 if position == 0 && size == 0 => None,
            0 => {
                let (storage, path) = data_file(ds, field_id, row)?;
                Some((storage, path, position, BlobKind::Inline, None))
            }
            k @ (1 | 2) => {
                let (storage, data) = data_file(ds, field_id, row)?;
                let stem = data
                    .as_ref()
                    .strip_suffix(".lance")
                    .unwrap_or(data.as_ref());
                let name = format!("{:032b}.blob", ids.value(i).reverse_bits());
                let path = Path::from(format!("{stem}/{name}"));
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

/// A scan per `options` whose blob columns hold their bytes (large_binary) instead of
/// their descriptors: the rows' addresses locate them, batch by batch.
pub fn scan_with_bytes(ds: Arc<Dataset>, mut options: crate::scan::ScanOptions) -> Result<Scan> {
    use futures::StreamExt;
    let keep_address = options.with_row_address;
    options.with_row_address = true;
    let inner = crate::scan::scan(ds.clone(), options)?;
    let blobs: Vec<usize> = inner
        .schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| blob_field(&ds, f.name()).is_ok())
        .map(|(i, _)| i)
        .collect();
    let address = inner.schema.index_of("_rowaddr")?;
    let mut fields: Vec<arrow_schema::FieldRef> = inner.schema.fields().iter().cloned().collect();
    for &i in &blobs {
        let f = &fields[i];
        fields[i] = Arc::new(arrow_schema::Field::new(
            f.name(),
            arrow_schema::DataType::LargeBinary,
            f.is_nullable(),
        ));
    }
    if !keep_address {
        fields.remove(address);
    }
    let schema = Arc::new(arrow_schema::Schema::new_with_metadata(
        fields,
        inner.schema.metadata().clone(),
    ));
    let out_schema = schema.clone();
    let batches = inner
        .batches
        .then(move |batch| {
            let (ds, blobs, schema) = (ds.clone(), blobs.clone(), out_schema.clone());
            async move {
                let batch = batch?;
                let rows = batch.column(address).as_primitive::<UInt64Type>().clone();
                let mut columns = batch.columns().to_vec();
                for &i in &blobs {
                    let name = batch.schema_ref().field(i).name().clone();
                    let found = locate_rows(&ds, &name, &columns[i], rows.values()).await?;
                    columns[i] = Arc::new(read_all(&found).await?);
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
    fn sidecar_names_reverse_the_blob_id() {
        assert_eq!(
            format!("{:032b}.blob", 2u32.reverse_bits()),
            "01000000000000000000000000000000.blob"
        );
    }
}
