//! Writing one data file: per leaf column, arrays accumulate until a page is worth
//! encoding (about 8 MiB); a larger array (one huge input chunk) is cut into page-sized
//! slices without copying. Pages are encoded on the CPU pool, a few per core at a time,
//! and written in the order they were started.
use arrow_array::{Array, ArrayRef, RecordBatch};
use object_store::path::Path;
use std::collections::VecDeque;
use tokio::sync::oneshot;

use super::blob_sidecars::BlobSidecars;
use super::blob_v2::{BlobWriteOptions, Placer, Thresholds};
use super::leaves::{BlobSpec, LeafSpec};
use crate::encoding::encode::array20;
use crate::encoding::encode::levels::leaf_levels;
use crate::encoding::encode::{encode_page, EncodedPage};
use crate::error::{Error, Result};
use crate::file::{FileVersion, FileWriter};
use crate::proto::table::DataFile;
use crate::storage::Storage;
use crate::table::schema::LanceSchema;
use crate::threads::cpu::start_cpu;

/// Bytes of values a page holds before it is encoded.
const PAGE_BYTES: usize = 8 << 20;
/// Pages being encoded at once per file, per core of the CPU pool.
const IN_FLIGHT_PER_CORE: usize = 2;

/// The pending slices of a leaf as one array.
fn concat(parts: Vec<ArrayRef>) -> Result<ArrayRef> {
    if parts.len() == 1 {
        return Ok(parts.into_iter().next().unwrap());
    }
    let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
    Ok(arrow_select::concat::concat(&refs)?)
}

/// A page encoded in the file's format: a structural layout (2.1 on) or 2.0's tree of
/// array encodings.
enum Page {
    V21(EncodedPage),
    V20(array20::Page20),
}

struct Leaf {
    spec: LeafSpec,
    /// Slices of the leaf's top-level column waiting to be encoded.
    pending: Vec<ArrayRef>,
    pending_bytes: usize,
    /// Format 2.0 struct columns: the rows of their single page.
    header_rows: u64,
}

pub struct DataFileWriter {
    file: FileWriter,
    storage: Storage,
    /// Where the file is written.
    path: Path,
    /// The base path it is written to (None: the table's own `data/`).
    base_id: Option<u32>,
    /// The file's name within `data/`.
    file_name: String,
    /// How errors name the file.
    name: String,
    leaves: Vec<Leaf>,
    /// Pages being encoded, in the order they are written: leaf, bytes of values, page.
    encoding: VecDeque<(usize, u64, oneshot::Receiver<Result<Page>>)>,
    /// The values' bytes of the pages in `encoding` (counted as written by `bytes`).
    encoding_bytes: u64,
    rows: u64,
    version: FileVersion,
    /// Bytes of a leaf's values gathered before they are encoded as a page.
    page_bytes: usize,
    /// An array at least this large is cut into pages of its own.
    split_bytes: usize,
    blob_options: std::sync::Arc<BlobWriteOptions>,
    /// Blob v2 values beside the file, started with the first one.
    sidecars: Option<BlobSidecars>,
}

impl DataFileWriter {
    /// Start `data/{file_name}` below `storage`'s root.
    pub fn create(
        storage: &Storage,
        file_name: String,
        version: FileVersion,
        leaves: &[LeafSpec],
    ) -> Self {
        let path: Path = storage.path(&format!("data/{file_name}"));
        Self::create_at(storage, path, file_name, version, leaves)
    }

    /// Start the file at `path` (an index file, say), named `file_name` in the `DataFile`
    /// `finish` returns.
    pub fn create_at(
        storage: &Storage,
        path: Path,
        file_name: String,
        version: FileVersion,
        leaves: &[LeafSpec],
    ) -> Self {
        DataFileWriter {
            file: FileWriter::create(storage, &path, version, leaves.len()),
            storage: storage.clone(),
            path: path.clone(),
            base_id: None,
            name: storage.display(&path),
            file_name,
            leaves: leaves
                .iter()
                .map(|spec| Leaf {
                    spec: spec.clone(),
                    pending: vec![],
                    pending_bytes: 0,
                    header_rows: 0,
                })
                .collect(),
            encoding: VecDeque::new(),
            encoding_bytes: 0,
            rows: 0,
            version,
            page_bytes: PAGE_BYTES,
            split_bytes: 2 * PAGE_BYTES,
            blob_options: Default::default(),
            sidecars: None,
        }
    }

    /// How blob v2 columns treat URIs and size their packs (the defaults otherwise).
    pub fn with_blob_options(mut self, options: std::sync::Arc<BlobWriteOptions>) -> Self {
        self.blob_options = options;
        self
    }

    /// Pages of about `page_bytes` of values per leaf, and none past `max_page_bytes`
    /// when given (a larger array is cut into slices of that size at most).
    pub fn with_page_bytes(mut self, page_bytes: usize, max_page_bytes: Option<usize>) -> Self {
        let max = max_page_bytes.unwrap_or(usize::MAX).max(1);
        self.page_bytes = page_bytes.clamp(1, max);
        self.split_bytes = (2 * self.page_bytes).min(max);
        self
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The `DataFile` this writer makes, as far as it is known before the data is:
    /// everything but the size.
    pub fn started(&self) -> DataFile {
        let fields: Vec<i32> = self.leaves.iter().map(|l| l.spec.field_id).collect();
        DataFile {
            path: self.file_name.clone(),
            column_indices: (0..fields.len() as i32).collect(),
            fields,
            file_major_version: self.version.major as u32,
            file_minor_version: self.version.minor as u32,
            file_size_bytes: 0,
            base_id: self.base_id,
        }
    }

    /// The file is written to base path `base_id` (its `DataFile` says so).
    pub fn in_base(mut self, base_id: Option<u32>) -> Self {
        self.base_id = base_id;
        self
    }

    /// `finish`, also giving where the file is (its store and path), to stage it.
    pub async fn finish_staged(self, schema: &LanceSchema) -> Result<(DataFile, (Storage, Path))> {
        let at = (self.storage.clone(), self.path.clone());
        Ok((self.finish(schema).await?, at))
    }

    /// Bytes written to the file so far, pages being encoded counted by their values'
    /// size (values not yet gathered into a page are not: as pylance, a file is cut once
    /// pages of it are out).
    pub fn bytes(&self) -> u64 {
        self.file.position() + self.encoding_bytes
    }

    /// Add the rows of `batch` (its columns in schema order).
    pub async fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.rows += batch.num_rows() as u64;
        for i in 0..self.leaves.len() {
            let column = batch.column(self.leaves[i].spec.top).clone();
            let bytes = column.to_data().get_slice_memory_size().unwrap_or(0);
            if bytes >= self.split_bytes && column.len() > 1 {
                // A huge array: pages of its own, sliced (no copy), after what is pending.
                self.flush_leaf(i).await?;
                let pieces = bytes.div_ceil(self.page_bytes).min(column.len());
                let step = column.len().div_ceil(pieces);
                for start in (0..column.len()).step_by(step) {
                    let len = step.min(column.len() - start);
                    let leaf = &mut self.leaves[i];
                    leaf.pending.push(column.slice(start, len));
                    leaf.pending_bytes = bytes * len / column.len();
                    self.flush_leaf(i).await?;
                }
                continue;
            }
            let leaf = &mut self.leaves[i];
            leaf.pending_bytes += bytes;
            leaf.pending.push(column);
            if leaf.pending_bytes >= self.page_bytes {
                self.flush_leaf(i).await?;
            }
        }
        Ok(())
    }

    /// Start encoding the pending rows of leaf `i` as a page.
    async fn flush_leaf(&mut self, i: usize) -> Result<()> {
        let leaf = &mut self.leaves[i];
        if leaf.pending.is_empty() {
            return Ok(());
        }
        let parts = std::mem::take(&mut leaf.pending);
        let raw = std::mem::take(&mut leaf.pending_bytes) as u64;
        let spec = leaf.spec.clone();
        match spec.blob {
            Some(BlobSpec::V1) => return self.write_blob_page(i, parts).await,
            Some(BlobSpec::V2 {
                inline_max,
                dedicated_above,
                pack_bytes,
            }) => {
                let thresholds = Thresholds {
                    inline_max,
                    dedicated_above,
                };
                return self
                    .write_blob_v2_page(i, parts, thresholds, pack_bytes)
                    .await;
            }
            None => {}
        }
        if spec.v20 == Some(array20::Column20::StructHeader) {
            // One page for the whole file, written at the end (pylance reads no other).
            for part in &parts {
                let array = array20::array_at(part, &spec.steps, &spec.name)?;
                array20::encode(array20::Column20::StructHeader, &array, &spec.name)?;
                self.leaves[i].header_rows += array.len() as u64;
            }
            return Ok(());
        }
        if let Some(kind) = spec.v20 {
            let rx = start_cpu(self.name.clone(), move || {
                let array = array20::array_at(&concat(parts)?, &spec.steps, &spec.name)?;
                array20::encode(kind, &array, &spec.name).map(Page::V20)
            });
            return self.queue(i, raw, rx).await;
        }
        let name = self.name.clone();
        let rx = start_cpu(self.name.clone(), move || {
            let array = concat(parts)?;
            let array = if spec.json {
                crate::scan::json::text_to_jsonb(&array, &name)?
            } else {
                array
            };
            let levels = leaf_levels(&array, &spec.steps)?;
            match spec.packed {
                true => crate::encoding::encode::packed::encode(levels, &spec.options, &spec.name),
                false => encode_page(levels, &spec.options),
            }
            .map(Page::V21)
        });
        self.queue(i, raw, rx).await
    }

    /// Queue leaf `i`'s page being encoded; write the oldest while too many are.
    async fn queue(
        &mut self,
        i: usize,
        raw: u64,
        rx: oneshot::Receiver<Result<Page>>,
    ) -> Result<()> {
        self.encoding.push_back((i, raw, rx));
        self.encoding_bytes += raw;
        while self.encoding.len() > IN_FLIGHT_PER_CORE * crate::threads::num_threads() {
            self.write_oldest().await?;
        }
        Ok(())
    }

    /// A blob leaf's page: its values written to the file now (their positions are only
    /// known here), the page of their descriptors queued in order with the others.
    async fn write_blob_page(&mut self, i: usize, parts: Vec<ArrayRef>) -> Result<()> {
        let spec = self.leaves[i].spec.clone();
        let array = concat(parts)?;
        let levels = leaf_levels(&array, &spec.steps)?;
        use crate::encoding::encode::blob;
        let mut descriptors = Vec::with_capacity(levels.values.len());
        for item in blob::items(&levels)? {
            let written = match item {
                blob::Item::Value(v) => {
                    let bytes = blob::shared_value(&levels.values, v)?;
                    let size = bytes.len() as u64;
                    Some((self.file.write_blob(bytes).await?, size))
                }
                _ => None,
            };
            descriptors.push(blob::descriptor(item, written));
        }
        let page = blob::page(
            &descriptors,
            levels.layers.clone(),
            levels.num_rows,
            self.version.minor >= 2,
        );
        let (tx, rx) = oneshot::channel();
        let _ = tx.send(page.map(Page::V21));
        self.encoding.push_back((i, 0, rx));
        Ok(())
    }

    /// A blob v2 leaf's page: its values placed now (inline ones in the file, the others
    /// in sidecars), the page of their descriptors queued in order with the others.
    async fn write_blob_v2_page(
        &mut self,
        i: usize,
        parts: Vec<ArrayRef>,
        thresholds: Thresholds,
        pack_bytes: Option<u64>,
    ) -> Result<()> {
        let array = concat(parts)?;
        let spec = &self.leaves[i].spec;
        let sidecars = self.sidecars.get_or_insert_with(|| {
            BlobSidecars::new(
                &self.storage,
                self.storage.relative(&self.path),
                self.blob_options.pack_bytes(pack_bytes),
            )
        });
        let descriptors = Placer {
            file: &mut self.file,
            sidecars,
            options: &self.blob_options,
            thresholds,
            column: &spec.name,
        }
        .place(&array)
        .await
        .map_err(|e| e.in_file(&self.name))?;
        let page = crate::encoding::encode::blob::page_v2(&descriptors);
        let (tx, rx) = oneshot::channel();
        let _ = tx.send(page.map(Page::V21));
        self.encoding.push_back((i, 0, rx));
        Ok(())
    }

    async fn write_oldest(&mut self) -> Result<()> {
        let Some((column, raw, rx)) = self.encoding.pop_front() else {
            return Ok(());
        };
        self.encoding_bytes -= raw;
        let page = rx
            .await
            .map_err(|_| Error::io(&self.name, "encoding task was lost"))?
            .map_err(|e| e.in_file(&self.name))?;
        match page {
            Page::V21(page) => self.file.write_page(column, page).await,
            Page::V20(page) => self.file.write_page20(column, page).await,
        }
    }

    /// Encode what is left, write the metadata and publish the file.
    /// Write a global buffer beside the columns (an index's side data); its number.
    pub async fn add_global_buffer(&mut self, data: Vec<u8>) -> Result<u32> {
        self.file.add_global_buffer(data).await
    }

    pub async fn finish(self, schema: &LanceSchema) -> Result<DataFile> {
        let pb_schema = crate::proto::file::Schema {
            fields: schema.to_proto(),
            metadata: schema.metadata_proto(),
        };
        self.finish_with(pb_schema).await
    }

    /// `finish`, the file's schema given as stored.
    pub async fn finish_with(mut self, pb_schema: crate::proto::file::Schema) -> Result<DataFile> {
        for i in 0..self.leaves.len() {
            self.flush_leaf(i).await?;
        }
        while !self.encoding.is_empty() {
            self.write_oldest().await?;
        }
        for i in 0..self.leaves.len() {
            let rows = self.leaves[i].header_rows;
            if rows > 0 {
                self.file
                    .write_page20(i, array20::struct_header(rows))
                    .await?;
            }
        }
        let started = self.started();
        // Sidecars are published before the file, so that no file refers to a missing
        // one; if the file then fails, they go.
        let mut sidecars = Vec::new();
        if let Some(s) = self.sidecars.as_mut() {
            match s.finish().await {
                Ok(paths) => sidecars = paths,
                Err(e) => {
                    s.abort().await;
                    self.file.abort().await;
                    return Err(e);
                }
            }
        }
        let size = match self.file.finish(pb_schema, self.rows).await {
            Ok(size) => size,
            Err(e) => {
                for p in &sidecars {
                    let _ = self.storage.delete(p).await;
                }
                return Err(e);
            }
        };
        Ok(DataFile {
            file_size_bytes: size,
            ..started
        })
    }

    pub async fn abort(mut self) {
        if let Some(sidecars) = self.sidecars.as_mut() {
            sidecars.abort().await;
        }
        self.file.abort().await;
    }
}
