//! One Lance file written on its own, outside any table (pylance's `LanceFileWriter`):
//! the schema given or taken from the first batch, field ids numbered from 0, global
//! buffers and schema metadata the caller adds, pages encoded as a dataset's data files
//! are (`DataFileWriter`).
use arrow_array::RecordBatch;
use arrow_schema::{DataType, Schema, SchemaRef};
use object_store::path::Path;

use super::blob_v2::is_prepared;
use super::file::DataFileWriter;
use crate::error::{Error, Result};
use crate::file::FileVersion;
use crate::scan::plan::blob_v2_descriptor;
use crate::storage::{Storage, StorageOptions};
use crate::table::schema::{LanceSchema, BLOB_META, PACKED_META};

/// How pages are sized: bytes of values gathered per column before a page is encoded
/// (pylance's `data_cache_bytes`, shared by the top-level columns), and the largest page.
#[derive(Clone, Copy, Debug, Default)]
pub struct PageSizing {
    pub data_cache_bytes: Option<usize>,
    pub max_page_bytes: Option<usize>,
}

/// Bytes gathered per top-level column when the caller does not say (pylance's default).
const DEFAULT_COLUMN_CACHE: usize = 8 << 20;

pub struct SingleFileWriter {
    storage: Storage,
    path: Path,
    shown: String,
    version: FileVersion,
    sizing: PageSizing,
    schema: Option<(SchemaRef, LanceSchema)>,
    writer: Option<DataFileWriter>,
    /// Global buffers added before the first batch made the writer (written first).
    early_buffers: Vec<Vec<u8>>,
    buffers_added: u32,
    metadata: Vec<(String, String)>,
    finished: bool,
}

/// What a finished file holds.
#[derive(Clone, Copy, Debug)]
pub struct Written {
    pub num_rows: u64,
    pub size_bytes: u64,
}

impl SingleFileWriter {
    /// A writer of the file at `uri` in format `version` (the stable one when None),
    /// with `schema` when known (else the first batch's).
    pub fn create(
        uri: &str,
        schema: Option<SchemaRef>,
        version: Option<&str>,
        options: &StorageOptions,
        sizing: PageSizing,
    ) -> Result<Self> {
        let (dir, name) = crate::storage::split_uri(uri)?;
        let storage = Storage::open(dir, options)?;
        let path = storage.path(name);
        let shown = storage.display(&path);
        // A file on its own may also be 2.0 (a table's new files follow its format).
        let version = match version.unwrap_or("stable") {
            "2.0" => FileVersion { major: 2, minor: 0 },
            v => super::writable_version(v, &shown)?,
        };
        let mut w = SingleFileWriter {
            storage,
            path,
            shown,
            version,
            sizing,
            schema: None,
            writer: None,
            early_buffers: vec![],
            buffers_added: 0,
            metadata: vec![],
            finished: false,
        };
        if let Some(schema) = schema {
            w.set_schema(schema)?;
        }
        Ok(w)
    }

    /// How errors name the file.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    fn set_schema(&mut self, schema: SchemaRef) -> Result<()> {
        let lance = LanceSchema::from_arrow(&schema, 0).map_err(|e| e.in_file(&self.shown))?;
        self.schema = Some((schema, lance));
        Ok(())
    }

    fn check_open(&self) -> Result<()> {
        match self.finished {
            true => Err(Error::invalid(format!(
                "{}: the writer is closed (the file is written)",
                self.shown
            ))),
            false => Ok(()),
        }
    }

    /// The page writer, made on first use (the schema is known by then).
    async fn writer(&mut self) -> Result<&mut DataFileWriter> {
        if self.writer.is_none() {
            let Some((arrow, lance)) = &self.schema else {
                return Err(Error::invalid(format!(
                    "{}: no schema was given and no batch written, so the file's schema \
                     is unknown",
                    self.shown
                )));
            };
            let leaves = super::leaves::for_version(lance, self.version)
                .map_err(|e| e.in_file(&self.shown))?;
            // Blob v2 values beside a file belong to a table's `data/` directory: only
            // rows their writer placed there already (the prepared layout) are taken.
            if let Some(leaf) = leaves.iter().find(|l| {
                matches!(l.blob, Some(super::leaves::BlobSpec::V2 { .. }))
                    && !prepared_blob(&arrow.fields()[l.top])
            }) {
                return Err(Error::unsupported(
                    &self.shown,
                    format!(
                        "blob v2 column '{}' in a single file (as in pylance, blob v2 is \
                         written to tables: use write_dataset, format 2.1 for blob v1, or \
                         the prepared layout of BlobDescriptorArrayBuilder)",
                        leaf.name
                    ),
                ));
            }
            let columns = arrow.fields().len().max(1);
            let per_column = self
                .sizing
                .data_cache_bytes
                .map_or(DEFAULT_COLUMN_CACHE, |b| b / columns);
            let name = self.shown.clone();
            let mut w = DataFileWriter::create_at(
                &self.storage,
                self.path.clone(),
                name,
                self.version,
                &leaves,
            )
            .with_page_bytes(per_column, self.sizing.max_page_bytes);
            for b in std::mem::take(&mut self.early_buffers) {
                w.add_global_buffer(b).await?;
            }
            self.writer = Some(w);
        }
        Ok(self.writer.as_mut().expect("made above"))
    }

    /// Add `batch`'s rows; its columns are matched to the file's by name.
    pub async fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.check_open()?;
        if self.schema.is_none() {
            self.set_schema(batch.schema())?;
        }
        let batch = self.conformed(batch)?;
        self.writer().await?.write(&batch).await
    }

    /// `batch` with the file's columns in the file's order, each checked for its type.
    fn conformed(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let (schema, _) = self.schema.as_ref().expect("set before");
        let mut columns = Vec::with_capacity(schema.fields().len());
        for f in schema.fields() {
            let Some(c) = batch.column_by_name(f.name()) else {
                return Err(Error::invalid(format!(
                    "{}: the batch has no column '{}' (the file's columns: {})",
                    self.shown,
                    f.name(),
                    names(schema)
                )));
            };
            if c.data_type() != f.data_type() {
                return Err(Error::invalid(format!(
                    "{}: column '{}' is {} in the batch but {} in the file",
                    self.shown,
                    f.name(),
                    c.data_type(),
                    f.data_type()
                )));
            }
            columns.push(c.clone());
        }
        if batch.num_columns() != columns.len() {
            return Err(Error::invalid(format!(
                "{}: the batch has columns the file does not (the file's columns: {})",
                self.shown,
                names(schema)
            )));
        }
        Ok(RecordBatch::try_new(schema.clone(), columns)?)
    }

    /// Write `data` as the file's next global buffer; its index (1 and up: buffer 0 is
    /// the schema).
    pub async fn add_global_buffer(&mut self, data: Vec<u8>) -> Result<u32> {
        self.check_open()?;
        match self.writer.as_mut() {
            Some(w) => {
                w.add_global_buffer(data).await?;
            }
            None => self.early_buffers.push(data),
        }
        self.buffers_added += 1;
        Ok(self.buffers_added)
    }

    /// Set `key` in the schema's metadata of the finished file.
    pub fn add_schema_metadata(&mut self, key: String, value: String) -> Result<()> {
        self.check_open()?;
        self.metadata.push((key, value));
        Ok(())
    }

    /// Write the metadata and footer and publish the file; a second call does nothing.
    pub async fn finish(&mut self) -> Result<Option<Written>> {
        if self.finished {
            return Ok(None);
        }
        self.writer().await?;
        self.finished = true;
        let (arrow, mut schema) = self.schema.clone().expect("the writer has one");
        schema.metadata.extend(std::mem::take(&mut self.metadata));
        let w = self.writer.take().expect("made above");
        let num_rows = w.rows();
        let file = w.finish_with(stored_schema(&arrow, &schema)).await?;
        Ok(Some(Written {
            num_rows,
            size_bytes: file.file_size_bytes,
        }))
    }
}

/// A prepared blob column: a `lance.blob.v2` struct of rows described by their writer.
fn prepared_blob(f: &arrow_schema::Field) -> bool {
    let blob_v2 = f.metadata().get("ARROW:extension:name").map(String::as_str)
        == Some(crate::table::schema::BLOB_V2);
    matches!(f.data_type(), DataType::Struct(children) if blob_v2 && is_prepared(children))
}

/// The schema the file stores. A prepared blob column is stored as pylance stores a
/// blob v2 column: a struct marked `lance-encoding:blob` and `packed`, then its
/// descriptor's fields, with no ids of their own (-1, as pylance writes them).
fn stored_schema(arrow: &SchemaRef, schema: &LanceSchema) -> crate::proto::file::Schema {
    let mut plain = schema.clone();
    let mut prepared = Vec::new();
    for (f, lance) in arrow.fields().iter().zip(plain.fields.iter_mut()) {
        if prepared_blob(f) {
            lance.children.clear();
            lance.metadata = [BLOB_META, PACKED_META]
                .into_iter()
                .map(|k| (k.to_string(), "true".to_string()))
                .collect();
            prepared.push(lance.id);
        }
    }
    let descriptor = match blob_v2_descriptor() {
        DataType::Struct(children) => Schema::new(children),
        _ => unreachable!("a struct"),
    };
    let descriptor = LanceSchema::from_arrow(&descriptor, 0)
        .expect("plain types")
        .to_proto();
    let mut fields = Vec::new();
    for f in plain.to_proto() {
        let id = f.id;
        fields.push(f);
        if prepared.contains(&id) {
            fields.extend(descriptor.iter().cloned().map(|mut d| {
                d.id = -1;
                d.parent_id = -1;
                d
            }));
        }
    }
    crate::proto::file::Schema {
        fields,
        metadata: plain.metadata_proto(),
    }
}

fn names(schema: &SchemaRef) -> String {
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    names.join(", ")
}
