//! One Lance file read as a table of one fragment, so that the index files under
//! `_indices/` (and a user's standalone files) go through the same scans and takes as a
//! dataset's data files: the file's own schema becomes the table's, its columns the
//! fragment's only data file.
use std::sync::Arc;

use bytes::Bytes;

use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::file::{FileReader, FileVersion};
use crate::proto::table::manifest::{DataStorageFormat, WriterVersion};
use crate::proto::table::{BasePath, DataFile, DataFragment, Manifest};
use crate::storage::{Storage, StorageOptions};
use crate::table::schema::{LanceField, LanceSchema};
use crate::table::versions::{ManifestLocation, NamingScheme};

/// The base id the file's directory gets in the table made for it.
const FILE_DIR: u32 = 1;

/// Open the Lance file `name` in the directory `dir` as a dataset of one fragment (id 0)
/// holding every column of the file.
pub async fn open(dir: &str, name: &str, options: &StorageOptions) -> Result<Dataset> {
    let storage = Storage::open(dir, options)?;
    let path = storage.path(name);
    let (reader, schema, shown) = open_v2(&storage, path.clone()).await?;
    let meta = &reader.metadata;
    let version = meta.footer.version;
    let fields = column_field_ids(&schema, version == FileVersion { major: 2, minor: 0 });
    if fields.len() != meta.columns.len() {
        return Err(Error::corrupt(
            &shown,
            format!(
                "the file has {} columns but its schema has {} column fields",
                meta.columns.len(),
                fields.len()
            ),
        ));
    }
    let data_file = DataFile {
        path: name.to_string(),
        column_indices: (0..fields.len() as i32).collect(),
        fields,
        file_major_version: version.major as u32,
        file_minor_version: version.minor as u32,
        file_size_bytes: meta.file_size,
        base_id: Some(FILE_DIR),
    };
    let manifest = Manifest {
        fields: meta.schema.fields.clone(),
        schema_metadata: meta.schema.metadata.clone(),
        version: 1,
        fragments: vec![DataFragment {
            id: 0,
            files: vec![data_file],
            physical_rows: meta.num_rows,
            ..Default::default()
        }],
        max_fragment_id: Some(0),
        writer_version: Some(WriterVersion {
            library: "lance_core".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            ..Default::default()
        }),
        data_format: Some(DataStorageFormat {
            file_format: "lance".into(),
            version: crate::table::data_file::file_version_name(
                version.major as u32,
                version.minor as u32,
            )
            .unwrap_or_default()
            .to_string(),
        }),
        base_paths: vec![BasePath {
            id: FILE_DIR,
            path: dir.to_string(),
            is_dataset_root: false,
            name: None,
        }],
        ..Default::default()
    };
    let location = ManifestLocation {
        version: 1,
        path,
        size: None,
        scheme: NamingScheme::V2,
    };
    let ds = Dataset::from_manifest(
        storage.uri().to_string(),
        storage,
        location,
        manifest,
        Bytes::new(),
        options.clone(),
    )?;
    ds.cache_open_file(&ds.fragments()[0].files[0], Arc::new(reader))?;
    Ok(ds)
}

/// The reader of the file behind a table made by `open` (its metadata, its buffers).
pub async fn reader(t: &Dataset) -> Result<Arc<FileReader>> {
    match t.fragments().first().and_then(|f| f.files.first()) {
        Some(file) => t.open_file(file, None).await,
        None => Err(Error::invalid(format!("{}: not a file's table", t.uri()))),
    }
}

/// Global buffer `k` of the file behind `t`, as a user asks for it: an index past the
/// last buffer is the caller's mistake, not the file's.
pub async fn global_buffer(t: &Dataset, k: usize) -> Result<Bytes> {
    let r = reader(t).await?;
    let n = r.metadata.global_buffers.len();
    if k >= n {
        return Err(Error::invalid(format!(
            "{}: no global buffer {k}: the file has {n} (0 holds the schema)",
            r.name()
        )));
    }
    r.global_buffer(k).await
}

/// Every row of a table made by `open`, as one batch (index lookups, small files).
pub async fn read_all(t: Arc<Dataset>) -> Result<arrow_array::RecordBatch> {
    let schema = t.arrow_schema.clone();
    let options = crate::scan::ScanOptions {
        batch_size: 1 << 20,
        ..Default::default()
    };
    let batches: Vec<arrow_array::RecordBatch> =
        futures::TryStreamExt::try_collect(crate::scan::scan(t, options)?.batches).await?;
    Ok(arrow_select::concat::concat_batches(&schema, &batches)?)
}

/// The `DataFile` entry for the Lance file `path` (under the dataset's data directory,
/// or base `base_id`'s) written with some of `ds`'s columns, by name (pylance's
/// `DataFile.create`): their field ids in the dataset, the file's version and size. A
/// column the dataset does not have is an error naming it. Also the file's row count.
pub async fn describe_data_file(
    ds: &Dataset,
    path: &str,
    base_id: Option<u32>,
) -> Result<(DataFile, u64)> {
    let mut file = DataFile {
        path: path.to_string(),
        base_id,
        ..Default::default()
    };
    let (storage, location) = ds.data_file_location(&file)?;
    let (reader, own, shown) = open_v2(&storage, location).await?;
    let meta = &reader.metadata;
    let mut fields = Vec::with_capacity(own.fields.len());
    for f in &own.fields {
        let theirs = ds.schema.field(&f.name).ok_or_else(|| {
            Error::invalid(format!(
                "{shown}: column '{}' is not a column of the dataset {}",
                f.name,
                ds.uri()
            ))
        })?;
        fields.push(theirs.clone());
    }
    let version = meta.footer.version;
    let in_dataset = LanceSchema {
        fields,
        metadata: Default::default(),
    };
    file.fields = column_field_ids(&in_dataset, version == FileVersion { major: 2, minor: 0 });
    if file.fields.len() != meta.columns.len() {
        return Err(Error::invalid(format!(
            "{shown}: the file has {} columns, but the dataset's fields of its column names \
             have {}: its columns' types do not match the dataset's",
            meta.columns.len(),
            file.fields.len()
        )));
    }
    file.column_indices = (0..file.fields.len() as i32).collect();
    file.file_major_version = version.major as u32;
    file.file_minor_version = version.minor as u32;
    file.file_size_bytes = meta.file_size;
    Ok((file, meta.num_rows))
}

/// Open a Lance file of format 2.x and read the schema it carries (a legacy 0.1 file has
/// none of its own: it is read only as a dataset's data file). Returns the reader, the
/// schema and the file's name as errors show it.
async fn open_v2(
    storage: &Storage,
    path: object_store::path::Path,
) -> Result<(FileReader, LanceSchema, String)> {
    let shown = storage.display(&path);
    let reader = FileReader::open(storage, path, None).await?;
    let meta = &reader.metadata;
    if meta.legacy.is_some() {
        return Err(Error::unsupported(
            &shown,
            "a legacy (0.1) file is read only as a dataset's data file",
        ));
    }
    let schema = LanceSchema::from_proto(&meta.schema.fields, &meta.schema.metadata)
        .map_err(|e| e.in_file(&shown))?;
    Ok((reader, schema, shown))
}

/// The field ids of a file's columns, in order: in format 2.0 every field has a column;
/// from 2.1 on only the leaves do (a packed struct or a blob is one leaf).
fn column_field_ids(schema: &LanceSchema, every_field: bool) -> Vec<i32> {
    fn walk(f: &LanceField, every_field: bool, out: &mut Vec<i32>) {
        let whole = f.is_packed_struct() || f.is_blob_v2() || f.children.is_empty();
        if every_field || whole {
            out.push(f.id);
        }
        if !whole {
            for c in &f.children {
                walk(c, every_field, out);
            }
        }
    }
    let mut out = Vec::new();
    for f in &schema.fields {
        walk(f, every_field, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{Int32Builder, ListBuilder};
    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray, StructArray};
    use arrow_schema::{DataType, Field};

    use super::*;
    use crate::scan::{take::take, Projection};
    use crate::test_util::{read, uri, write};
    use crate::write::WriteMode;

    /// Leaves in structs and lists: the file's columns map to the right fields.
    fn nested() -> RecordBatch {
        let id: ArrayRef = Arc::new(Int64Array::from_iter_values(0..50));
        let point: ArrayRef = Arc::new(StructArray::from(vec![
            (
                Arc::new(Field::new("x", DataType::Int64, true)),
                Arc::new(Int64Array::from_iter_values((0..50).map(|i| i * 3))) as ArrayRef,
            ),
            (
                Arc::new(Field::new("name", DataType::Utf8, true)),
                Arc::new(StringArray::from_iter_values(
                    (0..50).map(|i| format!("p{i}")),
                )) as ArrayRef,
            ),
        ]));
        let mut list = ListBuilder::new(Int32Builder::new());
        for i in 0..50 {
            for k in 0..(i % 4) {
                list.values().append_value(i * 10 + k);
            }
            list.append(i % 7 != 0);
        }
        let tags: ArrayRef = Arc::new(list.finish());
        RecordBatch::try_from_iter(vec![("id", id), ("point", point), ("tags", tags)]).unwrap()
    }

    #[tokio::test]
    async fn a_data_file_reads_as_the_table_it_came_from() {
        let batch = nested();
        let u = uri();
        let ds = write(&u, batch.clone(), WriteMode::Create, 1_000_000).await;
        let file = &ds.fragments()[0].files[0];
        let t = open(&format!("{u}/data"), &file.path, &StorageOptions::new())
            .await
            .unwrap();
        assert_eq!(t.fragments()[0].files[0].fields, file.fields);
        assert_eq!(t.arrow_schema, ds.arrow_schema);
        assert_eq!(read(&t).await, batch);
        let rows = take(Arc::new(t), &[7, 0, 49], &Projection::default())
            .await
            .unwrap();
        let want = arrow_select::take::take_record_batch(
            &batch,
            &arrow_array::UInt32Array::from(vec![7, 0, 49]),
        )
        .unwrap();
        assert_eq!(rows, want);
    }

    #[tokio::test]
    async fn a_missing_or_foreign_file_is_an_error_naming_it() {
        let u = uri();
        let err = open(&u, "nope.lance", &StorageOptions::new())
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("nope.lance"), "{err}");
    }
}
