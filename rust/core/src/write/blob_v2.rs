//! Blob v2 columns on the write path (format 2.2). The logical column is a struct
//! `{data, uri[, position, size]}` (pylance's `lance.blob.v2` type): each row holds
//! bytes, or a URI (with an optional range) of an object elsewhere. Written, each row is
//! a descriptor (`encode::blob::DescriptorV2`) and its bytes go by size: inline in the
//! data file, packed into a shared sidecar, or a sidecar of their own
//! (`blob_sidecars`). A URI is kept as a reference, or its bytes are copied in (ingest).
//!
//! A `large_binary` column marked `lance-encoding:blob` (blob v1) becomes a v2 column
//! `{data, uri}` in format 2.2, as pylance's writer does.
use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{new_null_array, Array, ArrayRef, StructArray};
use arrow_schema::{DataType, Field, Fields, Schema};
use bytes::Bytes;

use super::blob_sidecars::BlobSidecars;
use crate::blob::BlobKind;
use crate::encoding::encode::blob::DescriptorV2;
use crate::error::{Error, Result};
use crate::file::FileWriter;
use crate::storage::{Storage, StorageOptions};
use crate::table::schema::{BLOB_META, BLOB_V2};

const EXTENSION_NAME: &str = "ARROW:extension:name";
/// pylance's default: a pack sidecar is closed once it would pass 1 GiB.
const PACK_BYTES: u64 = 1 << 30;

/// What a write does with blobs given by URI.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExternalBlobMode {
    /// Store the URI (relative to a base path of the table when it is below one).
    #[default]
    Reference,
    /// Copy the bytes into the table, placed by size as given bytes are.
    Ingest,
}

/// Settings of one write for its blob v2 columns (pylance's write parameters).
#[derive(Clone, Debug, Default)]
pub struct BlobWriteOptions {
    pub external: ExternalBlobMode,
    /// Keep an absolute URI that is below none of the table's base paths.
    pub allow_outside_bases: bool,
    /// Largest pack sidecar (a field's `lance-encoding:blob-pack-file-size-threshold`
    /// overrides it); 1 GiB when None.
    pub pack_bytes: Option<u64>,
    /// The table's base paths (not its root) a referenced URI may be below: (id, URI).
    pub bases: Vec<(u32, String)>,
    /// How objects named by URI are opened for ingest.
    pub storage_options: StorageOptions,
}

impl BlobWriteOptions {
    pub fn check(&self) -> Result<()> {
        if self.allow_outside_bases && self.external == ExternalBlobMode::Ingest {
            return Err(Error::invalid(
                "allow_external_blob_outside_bases applies to external_blob_mode='reference', \
                 not 'ingest'",
            ));
        }
        if self.pack_bytes == Some(0) {
            return Err(Error::invalid(
                "blob_pack_file_size_threshold must be positive",
            ));
        }
        Ok(())
    }

    /// For rows written again into `ds` (update, compaction, merge): its base paths, and
    /// absolute URIs kept as the table already holds them.
    pub fn of_table(ds: &crate::dataset::Dataset) -> Self {
        BlobWriteOptions {
            allow_outside_bases: true,
            bases: table_bases(ds),
            storage_options: ds.storage_options().clone(),
            ..Default::default()
        }
    }

    pub fn pack_bytes(&self, field: Option<u64>) -> u64 {
        field.or(self.pack_bytes).unwrap_or(PACK_BYTES)
    }

    /// The base id and the URI to store for a referenced blob: a path below the
    /// longest base path that holds it, else the absolute URI when allowed.
    pub fn reference(&self, column: &str, uri: &str) -> Result<(u32, String)> {
        let best = self
            .bases
            .iter()
            .filter_map(|(id, base)| {
                let base = base.trim_end_matches('/');
                let rest = uri.strip_prefix(base)?.strip_prefix('/')?;
                (!rest.is_empty()).then_some((base.len(), *id, rest))
            })
            .max_by_key(|(len, _, _)| *len);
        if let Some((_, id, rest)) = best {
            return Ok((id, rest.to_string()));
        }
        if !self.allow_outside_bases {
            return Err(Error::invalid(format!(
                "blob column '{}': external blob URI '{uri}' is outside the table's base \
                 paths (the dataset root is not one); writes that set \
                 allow_external_blob_outside_bases store it as an absolute URI",
                column
            )));
        }
        let parsed = url::Url::parse(uri).map_err(|_| {
            Error::invalid(format!(
                "blob column '{}': external blob URI '{uri}' is not an absolute URI",
                column
            ))
        })?;
        Ok((0, parsed.to_string()))
    }
}

/// Check the blobs `batch` gives by URI against `ds`'s base paths, as new values are
/// checked when written without `allow_outside_bases` (a merge's source, say, which has no
/// such setting: as in pylance, a URI outside them is refused).
pub fn check_new_references(
    ds: &crate::dataset::Dataset,
    batch: &arrow_array::RecordBatch,
) -> Result<()> {
    let options = BlobWriteOptions {
        bases: table_bases(ds),
        ..Default::default()
    };
    for (f, column) in batch.schema().fields().iter().zip(batch.columns()) {
        let Some(s) = column.as_struct_opt().filter(|_| is_blob_v2(f)) else {
            continue;
        };
        let (Some(uri), data) = (s.column_by_name("uri"), s.column_by_name("data")) else {
            continue;
        };
        let uri = arrow_cast::cast(uri, &DataType::Utf8)?;
        let uri = uri.as_string::<i32>();
        for i in 0..s.len() {
            let given_bytes = data.is_some_and(|d| d.is_valid(i));
            if s.is_valid(i) && uri.is_valid(i) && !given_bytes {
                options.reference(f.name(), uri.value(i))?;
            }
        }
    }
    Ok(())
}

/// The base paths of `ds` other than its root: (id, URI).
pub fn table_bases(ds: &crate::dataset::Dataset) -> Vec<(u32, String)> {
    ds.manifest
        .base_paths
        .iter()
        .filter(|b| !b.is_dataset_root)
        .map(|b| (b.id, b.path.clone()))
        .collect()
}

fn is_blob_v2(f: &Field) -> bool {
    f.metadata().get(EXTENSION_NAME).map(String::as_str) == Some(BLOB_V2)
}

fn is_blob_v1(f: &Field) -> bool {
    matches!(f.data_type(), DataType::Binary | DataType::LargeBinary)
        && f.metadata().contains_key(BLOB_META)
}

/// `schema` as a table of file format `version` stores it: in 2.2 and later blob v1
/// columns become v2 columns `{data, uri}` (the rule for every new table's schema: a
/// write, or an overwrite committed from fragments written elsewhere).
pub fn stored_schema(schema: &Schema, version: crate::file::FileVersion) -> Schema {
    match version.minor >= 2 {
        true => upgrade_v1_columns(schema),
        false => schema.clone(),
    }
}

/// `schema` with its blob v1 columns as v2 columns `{data, uri}`.
fn upgrade_v1_columns(schema: &Schema) -> Schema {
    if !schema.fields().iter().any(|f| is_blob_v1(f)) {
        return schema.clone();
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| {
            if !is_blob_v1(f) {
                return f.as_ref().clone();
            }
            let children = Fields::from(vec![
                Field::new("data", DataType::LargeBinary, true),
                Field::new("uri", DataType::Utf8, true),
            ]);
            let metadata = HashMap::from([(EXTENSION_NAME.to_string(), BLOB_V2.to_string())]);
            Field::new(f.name(), DataType::Struct(children), f.is_nullable())
                .with_metadata(metadata)
        })
        .collect();
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

/// Whether a column of type `incoming` can be written to blob v2 column `target`: bytes,
/// or a blob struct.
pub fn accepts(target: &Field, incoming: &DataType) -> bool {
    is_blob_v2(target)
        && match incoming {
            DataType::Binary | DataType::LargeBinary => true,
            DataType::Struct(fields) => fields.iter().any(|f| f.name() == "data"),
            _ => false,
        }
}

/// `column` as the blob v2 column `target` (None: `target` is not one): bytes become
/// `data`, a blob struct has its children matched by name (missing ones NULL).
pub fn conform(column: &ArrayRef, target: &Field) -> Result<Option<ArrayRef>> {
    if !is_blob_v2(target) {
        return Ok(None);
    }
    let DataType::Struct(target_children) = target.data_type() else {
        return Err(Error::invalid(format!(
            "blob column '{}' is {}, not a struct",
            target.name(),
            target.data_type()
        )));
    };
    let len = column.len();
    let (input, nulls): (Vec<(String, ArrayRef)>, _) = match column.data_type() {
        DataType::Binary | DataType::LargeBinary => (
            vec![("data".into(), column.clone())],
            column.nulls().cloned(),
        ),
        DataType::Struct(fields) => {
            let s = column.as_struct();
            (
                fields
                    .iter()
                    .map(|f| f.name().clone())
                    .zip(s.columns().iter().cloned())
                    .collect(),
                s.nulls().cloned(),
            )
        }
        other => {
            return Err(Error::invalid(format!(
                "blob column '{}' takes bytes or blobs, not {other}",
                target.name()
            )))
        }
    };
    let find = |name: &str| {
        input
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, a)| a.clone())
    };
    let mut fields: Vec<Arc<Field>> = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for f in target_children.iter() {
        let c = match find(f.name()) {
            Some(c) if c.data_type() == f.data_type() => c,
            Some(c) => arrow_cast::cast(&c, f.data_type())?,
            None => new_null_array(f.data_type(), len),
        };
        fields.push(f.clone());
        columns.push(c);
    }
    // A range given for a table whose blob type has no room for it cannot be kept.
    for name in ["position", "size"] {
        if target_children.find(name).is_none() && find(name).is_some_and(|c| c.null_count() < len)
        {
            return Err(Error::invalid(format!(
                "blob column '{}' holds {{data, uri}} only: its blobs cannot be given a {name}",
                target.name()
            )));
        }
    }
    Ok(Some(Arc::new(StructArray::try_new(
        fields.into(),
        columns,
        nulls,
    )?)))
}

/// Where a blob column's rows go, from its field's thresholds.
#[derive(Clone, Copy, Debug)]
pub struct Thresholds {
    pub inline_max: u64,
    pub dedicated_above: u64,
}

/// Places the bytes of one data file's blob v2 rows and describes them.
pub struct Placer<'a> {
    pub file: &'a mut FileWriter,
    pub sidecars: &'a mut BlobSidecars,
    pub options: &'a BlobWriteOptions,
    pub thresholds: Thresholds,
    /// The column's name, for errors.
    pub column: &'a str,
}

impl Placer<'_> {
    /// The descriptors of `rows` (a blob struct), their bytes written.
    pub async fn place(&mut self, rows: &ArrayRef) -> Result<Vec<Option<DescriptorV2>>> {
        let s = rows.as_struct_opt().ok_or_else(|| {
            Error::invalid(format!(
                "blob column '{}' holds {}, not blobs",
                self.column,
                rows.data_type()
            ))
        })?;
        if is_prepared(s.fields()) {
            return self.place_prepared(s).await;
        }
        let child = |name: &str| s.column_by_name(name).cloned();
        let data = child("data")
            .map(|c| arrow_cast::cast(&c, &DataType::LargeBinary))
            .transpose()?;
        let uri = child("uri")
            .map(|c| arrow_cast::cast(&c, &DataType::Utf8))
            .transpose()?;
        let uri = uri.as_ref().map(|u| u.as_string::<i32>());
        let position = child("position");
        let position = position.as_ref().map(|p| p.as_primitive::<UInt64Type>());
        let size = child("size");
        let size = size.as_ref().map(|p| p.as_primitive::<UInt64Type>());
        let mut out = Vec::with_capacity(s.len());
        for i in 0..s.len() {
            if s.is_null(i) {
                out.push(None);
                continue;
            }
            let bytes = match data.as_ref().filter(|d| d.is_valid(i)) {
                Some(d) => Some(crate::encoding::encode::blob::shared_value(d, i)?),
                None => None,
            };
            let uri = uri.filter(|u| u.is_valid(i)).map(|u| u.value(i));
            let range = match (
                position.filter(|p| p.is_valid(i)).map(|p| p.value(i)),
                size.filter(|p| p.is_valid(i)).map(|p| p.value(i)),
            ) {
                (Some(p), Some(n)) => Some((p, n)),
                (None, None) => None,
                _ => return Err(self.row_error(i, "sets one of position and size")),
            };
            let descriptor = match (bytes, uri) {
                (Some(_), Some(_)) => return Err(self.row_error(i, "sets both data and uri")),
                (Some(b), None) => {
                    if range.is_some() {
                        return Err(self.row_error(i, "sets a range but no uri"));
                    }
                    self.store(b).await?
                }
                (None, Some(u)) => self.external(i, u, range).await?,
                // Neither: an empty inline descriptor, as pylance writes it.
                (None, None) => DescriptorV2::default(),
            };
            out.push(Some(descriptor));
        }
        Ok(out)
    }

    /// Rows already described by their writer (pylance's prepared layout, as
    /// `BlobDescriptorArrayBuilder` makes them): kept as given, but an inline row's
    /// bytes, which go into the data file here.
    async fn place_prepared(&mut self, s: &StructArray) -> Result<Vec<Option<DescriptorV2>>> {
        let column = |name: &str, dt: &DataType| -> Result<ArrayRef> {
            let c = s.column_by_name(name).expect("checked by is_prepared");
            Ok(arrow_cast::cast(c, dt)?)
        };
        let kind = column("kind", &DataType::UInt8)?;
        let kind = kind.as_primitive::<arrow_array::types::UInt8Type>();
        let data = column("data", &DataType::LargeBinary)?;
        let uri = column("uri", &DataType::Utf8)?;
        let uri = uri.as_string::<i32>();
        let blob_id = column("blob_id", &DataType::UInt32)?;
        let blob_id = blob_id.as_primitive::<arrow_array::types::UInt32Type>();
        let size = column("blob_size", &DataType::UInt64)?;
        let size = size.as_primitive::<UInt64Type>();
        let position = column("position", &DataType::UInt64)?;
        let position = position.as_primitive::<UInt64Type>();
        let mut out = Vec::with_capacity(s.len());
        for i in 0..s.len() {
            if s.is_null(i) {
                out.push(None);
                continue;
            }
            let u64_of = |a: &arrow_array::UInt64Array, what: &str| {
                a.is_valid(i)
                    .then(|| a.value(i))
                    .ok_or_else(|| self.row_error(i, &format!("has no {what}")))
            };
            let id_of = || {
                blob_id
                    .is_valid(i)
                    .then(|| blob_id.value(i))
                    .ok_or_else(|| self.row_error(i, "has no blob_id"))
            };
            let uri_of = || match uri.is_valid(i) && !uri.value(i).is_empty() {
                true => Ok(uri.value(i).to_string()),
                false => Err(self.row_error(i, "has no uri")),
            };
            let k = match kind.is_valid(i) {
                true => kind.value(i),
                false => return Err(self.row_error(i, "has no kind")),
            };
            let d = match k {
                0 => {
                    let bytes = match data.is_valid(i) {
                        true => crate::encoding::encode::blob::shared_value(&data, i)?,
                        false => Bytes::new(),
                    };
                    let size = bytes.len() as u64;
                    let position = match size {
                        0 => 0,
                        _ => self.file.write_blob(bytes).await?,
                    };
                    DescriptorV2 {
                        kind: 0,
                        position,
                        size,
                        ..Default::default()
                    }
                }
                1 => DescriptorV2 {
                    kind: 1,
                    position: u64_of(position, "position")?,
                    size: u64_of(size, "blob_size")?,
                    blob_id: id_of()?,
                    ..Default::default()
                },
                2 => DescriptorV2 {
                    kind: 2,
                    size: u64_of(size, "blob_size")?,
                    blob_id: id_of()?,
                    ..Default::default()
                },
                3..=5 => DescriptorV2 {
                    kind: k,
                    // An external object's range (none: the whole object), its base.
                    position: u64_of(position, "position").unwrap_or(0),
                    size: u64_of(size, "blob_size").unwrap_or(0),
                    blob_id: match k {
                        5 => id_of()?,
                        _ => id_of().unwrap_or(0),
                    },
                    uri: uri_of()?,
                },
                k => return Err(self.row_error(i, &format!("has unknown blob kind {k}"))),
            };
            out.push(Some(d));
        }
        Ok(out)
    }

    fn row_error(&self, i: usize, what: &str) -> Error {
        Error::invalid(format!("blob column '{}': row {i} {what}", self.column))
    }

    /// Bytes stored in the table, placed by their size.
    async fn store(&mut self, bytes: Bytes) -> Result<DescriptorV2> {
        let size = bytes.len() as u64;
        let t = self.thresholds;
        Ok(if size > t.dedicated_above {
            DescriptorV2 {
                kind: BlobKind::Dedicated as u8,
                size,
                blob_id: self.sidecars.dedicated(bytes).await?,
                ..Default::default()
            }
        } else if size > t.inline_max {
            let (blob_id, position) = self.sidecars.packed(bytes).await?;
            DescriptorV2 {
                kind: BlobKind::Packed as u8,
                position,
                size,
                blob_id,
                ..Default::default()
            }
        } else {
            DescriptorV2 {
                kind: BlobKind::Inline as u8,
                position: self.file.write_blob(bytes).await?,
                size,
                ..Default::default()
            }
        })
    }

    async fn external(
        &mut self,
        i: usize,
        uri: &str,
        range: Option<(u64, u64)>,
    ) -> Result<DescriptorV2> {
        if uri.is_empty() {
            return Err(self.row_error(i, "has an empty uri"));
        }
        if range.is_some_and(|(_, n)| n == 0) {
            return Err(self.row_error(i, "has a range of size 0"));
        }
        if let Some((p, n)) = range {
            if p.checked_add(n).is_none() {
                return Err(self.row_error(i, "has a range past 2^64"));
            }
        }
        if self.options.external == ExternalBlobMode::Ingest {
            let bytes = read_external(uri, range, &self.options.storage_options).await?;
            return self.store(bytes).await;
        }
        let (blob_id, stored) = self.options.reference(self.column, uri)?;
        let (position, size) = range.unwrap_or((0, 0));
        Ok(DescriptorV2 {
            kind: BlobKind::External as u8,
            position,
            size,
            blob_id,
            uri: stored,
        })
    }
}

/// The children of pylance's prepared blob layout: rows described by their writer.
pub const PREPARED_FIELDS: [&str; 6] = ["kind", "data", "uri", "blob_id", "blob_size", "position"];

/// Whether a blob v2 struct's `fields` are the prepared layout (the logical one is
/// `{data, uri[, position, size]}`).
pub fn is_prepared(fields: &Fields) -> bool {
    fields.len() == PREPARED_FIELDS.len()
        && fields
            .iter()
            .zip(PREPARED_FIELDS)
            .all(|(f, name)| f.name() == name)
}

/// The bytes of the object at `uri` (a range of it when given), for ingest.
async fn read_external(
    uri: &str,
    range: Option<(u64, u64)>,
    options: &StorageOptions,
) -> Result<Bytes> {
    let (dir, name) = crate::storage::split_uri(uri)?;
    let storage = Storage::open(dir, options)?;
    let path = storage.path(name);
    match range {
        Some((p, n)) => storage.get_range(&path, p..p + n).await,
        None => storage.get(&path).await,
    }
}
