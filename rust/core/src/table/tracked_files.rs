//! The files a table's versions reference (pylance's `tracked_files`) and the files present
//! under its root (`all_files`). What a manifest references is walked in one place,
//! `for_each_reference`, which cleanup uses too.
use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::types::{Int32Type, Int8Type};
use arrow_array::{DictionaryArray, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};

use super::deletion::deletion_file_name;
use super::manifest::{decode_manifest, index_section};
use super::versions::{list_manifests, ManifestLocation, VERSIONS_DIR};
use crate::error::Result;
use crate::proto::table::{DeletionFile, IndexMetadata, Manifest};
use crate::storage::Storage;

/// Manifests read at once.
const CONCURRENCY: usize = 32;

/// One file (or index directory) a manifest references.
pub enum Reference<'a> {
    /// A data file, by its path under `data/` (of its base when it has one).
    Data { path: &'a str, base_id: Option<u32> },
    Deletion {
        fragment_id: u64,
        file: &'a DeletionFile,
    },
    /// The transaction file, by its name under `_transactions/`.
    Transaction(&'a str),
    /// An index segment: its files live in `_indices/<uuid>/`.
    Index(&'a IndexMetadata),
}

/// Call `visit` on every file manifest `m` (read from `bytes`) references. An index section
/// that cannot be read references nothing.
pub fn for_each_reference(m: &Manifest, bytes: &Bytes, mut visit: impl FnMut(Reference<'_>)) {
    for f in &m.fragments {
        for d in &f.files {
            visit(Reference::Data {
                path: &d.path,
                base_id: d.base_id,
            });
        }
        if let Some(d) = &f.deletion_file {
            visit(Reference::Deletion {
                fragment_id: f.id,
                file: d,
            });
        }
    }
    if !m.transaction_file.is_empty() {
        visit(Reference::Transaction(&m.transaction_file));
    }
    if let Ok(Some(section)) = index_section(m, bytes, "") {
        for index in &section.indices {
            visit(Reference::Index(index));
        }
    }
}

/// The hyphenated uuid of an index segment (its directory name), if it has a valid one.
pub fn index_dir(index: &IndexMetadata) -> Option<String> {
    let uuid = uuid::Uuid::from_slice(&index.uuid.as_ref()?.uuid).ok()?;
    Some(uuid.hyphenated().to_string())
}

/// A file some version references: where it lives (`base_uri`, the table's root or one of
/// its base paths), its path there, and what it is (pylance's names: "manifest",
/// "transaction file", "data file", "deletion file", "index file").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrackedFile {
    pub version: u64,
    pub base_uri: String,
    pub path: String,
    pub kind: &'static str,
}

/// The files the versions from `first` on reference, as a stream of one batch per
/// version (oldest first; `tracked_schema()`), and how many versions it will give.
pub struct TrackedFiles {
    pub versions: usize,
    pub batches: BoxStream<'static, Result<RecordBatch>>,
}

/// pylance's columns: version, base_uri (dictionary), path, type (dictionary).
pub fn tracked_schema() -> SchemaRef {
    let dict = |key: DataType| DataType::Dictionary(Box::new(key), Box::new(DataType::Utf8));
    Arc::new(Schema::new(vec![
        Field::new("version", DataType::Int64, false),
        Field::new("base_uri", dict(DataType::Int32), false),
        Field::new("path", DataType::Utf8, false),
        Field::new("type", dict(DataType::Int8), false),
    ]))
}

/// The files each version from `first` on references (the manifest itself included),
/// version by version, manifests read many at a time but held only until their batch is
/// made. An index segment whose manifest entry lists no files is listed from its
/// directory (once per segment).
pub async fn tracked_files(storage: Storage, first: u64) -> Result<TrackedFiles> {
    let locations: Vec<_> = list_manifests(&storage)
        .await?
        .into_iter()
        .filter(|l| l.version >= first)
        .collect();
    let versions = locations.len();
    let reader = storage.clone();
    let manifests = futures::stream::iter(locations)
        .map(move |loc| {
            let storage = reader.clone();
            async move {
                let bytes = storage.get(&loc.path).await?;
                let m = decode_manifest(&bytes, &storage.display(&loc.path))?;
                Ok::<_, crate::error::Error>((loc, m, bytes))
            }
        })
        .buffered(CONCURRENCY)
        .boxed();
    let listed: HashMap<String, Vec<String>> = HashMap::new();
    let batches = futures::stream::try_unfold(
        (manifests, listed, storage),
        |(mut manifests, mut listed, storage)| async move {
            let Some((loc, m, bytes)) = manifests.try_next().await? else {
                return Ok(None);
            };
            let files = files_of(&storage, &loc, &m, &bytes, &mut listed).await?;
            let batch = tracked_batch(&files)?;
            Ok(Some((batch, (manifests, listed, storage))))
        },
    )
    .boxed();
    Ok(TrackedFiles { versions, batches })
}

/// The files the manifest `m` of `loc` references; `listed` keeps the index directories
/// listed so far.
async fn files_of(
    storage: &Storage,
    loc: &ManifestLocation,
    m: &Manifest,
    bytes: &Bytes,
    listed: &mut HashMap<String, Vec<String>>,
) -> Result<Vec<TrackedFile>> {
    let root = storage.uri().to_string();
    let base_uri = |base_id: Option<u32>| match base_id {
        None => root.clone(),
        Some(id) => m
            .base_paths
            .iter()
            .find(|b| b.id == id)
            .map(|b| b.path.clone())
            .unwrap_or_else(|| root.clone()),
    };
    let under_base = |base_id: Option<u32>, dir: &str, name: &str| match base_id
        .and_then(|id| m.base_paths.iter().find(|b| b.id == id))
    {
        Some(b) if !b.is_dataset_root => name.to_string(),
        _ => format!("{dir}/{name}"),
    };
    let file = |base_id: Option<u32>, path: String, kind: &'static str| TrackedFile {
        version: loc.version,
        base_uri: base_uri(base_id),
        path,
        kind,
    };
    let mut rows = vec![file(
        None,
        format!("{VERSIONS_DIR}/{}", loc.scheme.file_name(loc.version)),
        "manifest",
    )];
    let mut segments = Vec::new();
    for_each_reference(m, bytes, |r| match r {
        Reference::Transaction(name) => rows.push(file(
            None,
            format!("_transactions/{name}"),
            "transaction file",
        )),
        Reference::Data { path, base_id } => rows.push(file(
            base_id,
            under_base(base_id, "data", path),
            "data file",
        )),
        Reference::Deletion {
            fragment_id,
            file: d,
        } => rows.push(file(
            d.base_id,
            under_base(d.base_id, "_deletions", &deletion_file_name(fragment_id, d)),
            "deletion file",
        )),
        Reference::Index(index) => segments.push(index.clone()),
    });
    for index in segments {
        let Some(dir) = index_dir(&index) else {
            continue;
        };
        let names: Vec<String> = if !index.files.is_empty() {
            index.files.iter().map(|f| f.path.clone()).collect()
        } else {
            if !listed.contains_key(&dir) {
                let found = storage.list_files(&format!("_indices/{dir}"), true).await?;
                let prefix = format!("_indices/{dir}/");
                let names = found
                    .iter()
                    .map(|o| storage.relative(&o.location))
                    .filter_map(|rel| rel.strip_prefix(&prefix).map(str::to_string))
                    .collect();
                listed.insert(dir.clone(), names);
            }
            listed[&dir].clone()
        };
        for name in names {
            rows.push(file(
                index.base_id,
                under_base(index.base_id, "_indices", &format!("{dir}/{name}")),
                "index file",
            ));
        }
    }
    Ok(rows)
}

/// `files` as a batch of `tracked_schema()`.
fn tracked_batch(files: &[TrackedFile]) -> Result<RecordBatch> {
    let version = Int64Array::from_iter_values(files.iter().map(|f| f.version as i64));
    let base_uri: DictionaryArray<Int32Type> = files.iter().map(|f| f.base_uri.as_str()).collect();
    let path = StringArray::from_iter_values(files.iter().map(|f| f.path.as_str()));
    let kind: DictionaryArray<Int8Type> = files.iter().map(|f| f.kind).collect();
    Ok(RecordBatch::try_new(
        tracked_schema(),
        vec![
            Arc::new(version),
            Arc::new(base_uri),
            Arc::new(path),
            Arc::new(kind),
        ],
    )?)
}

/// A file present under the table's root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PresentFile {
    pub path: String,
    pub size_bytes: u64,
    /// Microseconds since the epoch.
    pub last_modified_micros: i64,
}

/// Every file under the table's root (other base paths are not listed, as in pylance).
pub async fn all_files(storage: &Storage) -> Result<Vec<PresentFile>> {
    Ok(storage
        .list_all("")
        .await?
        .into_iter()
        .map(|o| PresentFile {
            path: storage.relative(&o.location).to_string(),
            size_bytes: o.size,
            last_modified_micros: o.last_modified.timestamp_micros(),
        })
        .collect())
}
