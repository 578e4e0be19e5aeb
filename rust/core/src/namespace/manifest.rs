//! The `__manifest` table of a directory namespace: a Lance table at the namespace's root
//! with one row per namespace and per table, as pylance keeps it (so that either library
//! reads the catalog the other wrote).
//!
//! Each change is one commit of the table. Writers in other processes commit too, so every
//! read opens the latest version, and a commit that lost a race is made again on top of
//! the winner's (up to the namespace's `commit_retries`). A row is added by a merge on
//! `object_id` that fails on a match, as pylance adds it, so that two writers racing to
//! add one id conflict instead of both appending.
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, ListArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use futures::TryStreamExt;

use super::Properties;
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::expr::{CmpOp, Expr, Literal};
use crate::scan::ScanOptions;
use crate::storage::StorageOptions;
use crate::write::merge_insert::{merge_insert, MergeInsert, SourceIs, WhenMatched};
use crate::write::{write_dataset, WriteMode, WriteOptions};

/// The `object_type` of a namespace's row.
pub const NAMESPACE: &str = "namespace";
/// The `object_type` of a table's row.
pub const TABLE: &str = "table";

/// What pylance's deletes retry by themselves (its `conflict_retries` default), before
/// the catalog's own retries.
const DELETE_RETRIES: u32 = 10;

/// The catalog's columns, wire facts of pylance's: `object_id` is the table's unenforced
/// primary key, which makes a merge on it record the keys it inserts.
pub fn manifest_schema() -> SchemaRef {
    let key = HashMap::from([(
        "lance-schema:unenforced-primary-key:position".to_string(),
        "0".to_string(),
    )]);
    Arc::new(Schema::new(vec![
        Field::new("object_id", DataType::Utf8, false).with_metadata(key),
        Field::new("object_type", DataType::Utf8, false),
        Field::new("location", DataType::Utf8, true),
        Field::new("metadata", DataType::Utf8, true),
        Field::new(
            "base_objects",
            DataType::List(Arc::new(Field::new("object_id", DataType::Utf8, true))),
            true,
        ),
    ]))
}

/// A row of the catalog (`base_objects` is not read: nothing here uses it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub object_id: String,
    /// `NAMESPACE` or `TABLE`.
    pub object_type: String,
    /// A table's directory, relative to the namespace's root.
    pub location: Option<String>,
    /// A namespace's properties, as a JSON object of strings.
    pub metadata: Option<String>,
}

impl Entry {
    pub fn is_namespace(&self) -> bool {
        self.object_type == NAMESPACE
    }
    pub fn is_table(&self) -> bool {
        self.object_type == TABLE
    }
}

/// The catalog rows of a directory namespace (`<root>/__manifest`).
#[derive(Debug)]
pub struct ManifestTable {
    uri: String,
    options: StorageOptions,
    retries: u32,
    /// One writer at a time through this catalog; other writers (other processes, other
    /// catalogs of the same root) are met by the commit retries.
    writing: tokio::sync::Mutex<()>,
}

impl ManifestTable {
    /// The catalog at `uri`; a commit that lost a race is made again up to `retries` times.
    pub fn new(uri: String, options: StorageOptions, retries: u32) -> Self {
        ManifestTable {
            uri,
            options,
            retries,
            writing: tokio::sync::Mutex::new(()),
        }
    }

    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The latest version, or None before the first row was added.
    async fn open(&self) -> Result<Option<Dataset>> {
        match Dataset::open(&self.uri, None, self.options.clone()).await {
            Ok(ds) => Ok(Some(ds)),
            Err(Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The rows of the latest version (those where `filter` holds).
    pub async fn rows(&self, filter: Option<Expr>) -> Result<Vec<Entry>> {
        let Some(ds) = self.open().await? else {
            return Ok(vec![]);
        };
        let columns = ["object_id", "object_type", "location", "metadata"];
        let options = ScanOptions {
            columns: Some(columns.iter().map(|c| c.to_string()).collect()),
            filter,
            ..Default::default()
        };
        let scan = crate::query::run(Arc::new(ds), options.into())?;
        let batches: Vec<RecordBatch> = scan.batches.try_collect().await?;
        let mut out = vec![];
        for batch in &batches {
            let ids = strings(batch, 0, &self.uri)?;
            let types = strings(batch, 1, &self.uri)?;
            let locations = strings(batch, 2, &self.uri)?;
            let metadata = strings(batch, 3, &self.uri)?;
            for row in 0..batch.num_rows() {
                let (Some(object_id), Some(object_type)) = (ids[row].clone(), types[row].clone())
                else {
                    return Err(Error::corrupt(
                        &self.uri,
                        "a catalog row has no object_id or object_type",
                    ));
                };
                out.push(Entry {
                    object_id,
                    object_type,
                    location: locations[row].clone(),
                    metadata: metadata[row].clone(),
                });
            }
        }
        Ok(out)
    }

    /// The row of `object_id`, if the catalog has one.
    pub async fn get(&self, object_id: &str) -> Result<Option<Entry>> {
        let mut found = self.rows(Some(id_is(object_id))).await?;
        Ok(if found.is_empty() {
            None
        } else {
            Some(found.swap_remove(0))
        })
    }

    /// Add a row; the error `taken()` makes is returned when the id is in the catalog
    /// already (found there, or added by a writer that won the race).
    pub async fn insert(
        &self,
        object_id: &str,
        object_type: &str,
        location: Option<&str>,
        properties: Option<&[(String, String)]>,
        taken: impl Fn() -> Error,
    ) -> Result<()> {
        let metadata = properties.filter(|p| !p.is_empty()).map(properties_json);
        let row = entry_batch(object_id, object_type, location, metadata.as_deref())?;
        let (row, taken) = (&row, &taken);
        self.committing(move || self.try_insert(object_id, row, taken))
            .await
    }

    /// One attempt of `insert`, on the latest version.
    async fn try_insert(
        &self,
        object_id: &str,
        row: &RecordBatch,
        taken: &impl Fn() -> Error,
    ) -> Result<()> {
        let ds = match self.open().await? {
            Some(ds) => ds,
            None => match self.create(row).await {
                Ok(()) => return Ok(()),
                // Another writer created the catalog first: add the row to theirs.
                Err(e) if is_conflict(&e) || is_invalid(&e) => match self.open().await? {
                    Some(ds) => ds,
                    None => return Err(e),
                },
                Err(e) => return Err(e),
            },
        };
        // A merge on object_id, not a check and an append: two writers that both found
        // the id free would both append. The merge records the key it inserts, so the
        // later of two racing inserts conflicts (pylance's inserts too) and, made again,
        // finds the row.
        let params = MergeInsert {
            on: vec!["object_id".to_string()],
            when_matched: WhenMatched::Fail,
            insert_not_matched: true,
            delete_not_matched_by_source: None,
            conflict_retries: 0,
        };
        let source = futures::stream::iter(vec![Ok::<_, Error>(row.clone())]);
        // Boxed: the writers' futures are large, and a catalog call nests them in its own
        // (on a thread's stack they would overflow it in an unoptimized build).
        let merged = Box::pin(merge_insert(
            &ds,
            Box::pin(source),
            row.schema(),
            SourceIs::InMemory,
            &params,
        ))
        .await;
        match merged {
            Ok(_) => Ok(()),
            Err(e) if is_invalid(&e) => match self.get(object_id).await? {
                Some(_) => Err(taken()),
                None => Err(e),
            },
            Err(e) => Err(e),
        }
    }

    /// The catalog's first version, holding `row`.
    async fn create(&self, row: &RecordBatch) -> Result<()> {
        let options = WriteOptions {
            mode: WriteMode::Create,
            storage_options: self.options.clone(),
            ..Default::default()
        };
        let source = futures::stream::iter(vec![Ok::<_, Error>(row.clone())]);
        Box::pin(write_dataset(&self.uri, row.schema(), source, options)).await?;
        Ok(())
    }

    /// Remove the row of `object_id` (none there is fine).
    pub async fn delete(&self, object_id: &str) -> Result<()> {
        let predicate = id_is(object_id);
        let predicate = &predicate;
        self.committing(move || async move {
            if let Some(ds) = self.open().await? {
                Box::pin(crate::write::delete(&ds, predicate, DELETE_RETRIES)).await?;
            }
            Ok(())
        })
        .await
    }

    /// Run `attempt` (read the latest version, then commit), again from the new latest
    /// version when another writer committed first, up to `retries` times more.
    async fn committing<F, Fut>(&self, mut attempt: F) -> Result<()>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<()>>,
    {
        let _writing = self.writing.lock().await;
        let mut tries_left = self.retries;
        loop {
            match attempt().await {
                Err(e) if is_conflict(&e) && tries_left > 0 => tries_left -= 1,
                done => return done,
            }
        }
    }
}

/// `object_id = '<id>'`.
fn id_is(object_id: &str) -> Expr {
    Expr::Cmp {
        op: CmpOp::Eq,
        left: Box::new(Expr::col("object_id")),
        right: Box::new(Expr::Literal(Literal::String(object_id.to_string()))),
    }
}

/// Rows of `object_type`.
pub(super) fn type_is(object_type: &str) -> Expr {
    Expr::Cmp {
        op: CmpOp::Eq,
        left: Box::new(Expr::col("object_type")),
        right: Box::new(Expr::Literal(Literal::String(object_type.to_string()))),
    }
}

/// Another writer committed first (a retry on the new version may succeed).
fn is_conflict(e: &Error) -> bool {
    matches!(e, Error::Conflict(_) | Error::Incompatible(_))
}

/// What a merge refusing a matched key, or a create finding a table, reports.
fn is_invalid(e: &Error) -> bool {
    matches!(e, Error::InvalidInput(_) | Error::SchemaMismatch(_))
}

/// Properties as the JSON object the catalog stores, in their order.
fn properties_json(properties: &[(String, String)]) -> String {
    let fields: Vec<String> = properties
        .iter()
        .map(|(k, v)| {
            let (k, v) = (
                serde_json::Value::String(k.clone()),
                serde_json::Value::String(v.clone()),
            );
            format!("{k}:{v}")
        })
        .collect();
    format!("{{{}}}", fields.join(","))
}

/// The properties a row's metadata holds (a JSON object of strings), in their order.
pub(super) fn parse_properties(metadata: &str, uri: &str) -> Result<Properties> {
    struct Ordered(Properties);
    struct Visitor;
    impl<'de> serde::de::Visitor<'de> for Visitor {
        type Value = Ordered;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object of strings")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
            let mut out: Properties = vec![];
            while let Some((k, v)) = map.next_entry::<String, String>()? {
                // A repeated key keeps its last value, as a JSON parser's map does.
                match out.iter_mut().find(|(key, _)| *key == k) {
                    Some(entry) => entry.1 = v,
                    None => out.push((k, v)),
                }
            }
            Ok(Ordered(out))
        }
    }
    impl<'de> serde::Deserialize<'de> for Ordered {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_map(Visitor)
        }
    }
    serde_json::from_str::<Ordered>(metadata)
        .map(|o| o.0)
        .map_err(|e| Error::corrupt(uri, format!("a namespace's metadata is not valid: {e}")))
}

/// One catalog row as a batch of `manifest_schema`.
fn entry_batch(
    object_id: &str,
    object_type: &str,
    location: Option<&str>,
    metadata: Option<&str>,
) -> Result<RecordBatch> {
    let item = Arc::new(Field::new("object_id", DataType::Utf8, true));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec![object_id])),
        Arc::new(StringArray::from(vec![object_type])),
        Arc::new(StringArray::from(vec![location])),
        Arc::new(StringArray::from(vec![metadata])),
        Arc::new(ListArray::new_null(item, 1)),
    ];
    Ok(RecordBatch::try_new(manifest_schema(), columns)?)
}

/// Column `i` of a read of the catalog, as strings (a catalog written with large strings
/// too).
fn strings(batch: &RecordBatch, i: usize, uri: &str) -> Result<Vec<Option<String>>> {
    let column = batch.column(i);
    let column = match column.data_type() {
        DataType::Utf8 => column.clone(),
        _ => arrow_cast::cast(column, &DataType::Utf8)?,
    };
    let Some(values) = column.as_string_opt::<i32>() else {
        return Err(Error::corrupt(
            uri,
            format!("column {i} of the catalog is not strings"),
        ));
    };
    Ok(values.iter().map(|v| v.map(str::to_string)).collect())
}
