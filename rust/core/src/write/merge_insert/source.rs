//! The merge's source: its schema checked against the table once and each batch cast to
//! the table's types (`SourceShape`), and its batches read from the caller's stream once,
//! kept so that a retry after a conflict can read them again (`SourceBatches`).
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use futures::stream::BoxStream;
use futures::StreamExt;
use tokio::sync::{mpsc, oneshot};

use crate::dataset::Dataset;
use crate::error::{Error, Result};

/// How many bytes of the source a replayable merge keeps in memory; the rest goes to a
/// temporary file (as pylance spills its merge sources past 100 MB).
pub const KEEP_IN_MEMORY: usize = 64 << 20;

/// The source's columns as the table has them.
pub struct SourceShape {
    schema: SchemaRef,
    /// Per column, the table's type when the source's differs only in nested field names.
    retype: Vec<Option<DataType>>,
    /// The table's columns the source lacks.
    pub missing: Vec<String>,
}

impl SourceShape {
    /// Check `source` against `ds`: every column is a table column of the same type (up
    /// to nested field names), and every key column of `on` is there.
    pub fn new(ds: &Dataset, source: &Schema, on: &[String]) -> Result<Self> {
        let uri = ds.uri();
        let target = &ds.arrow_schema;
        let mut fields = Vec::with_capacity(source.fields().len());
        let mut retype = Vec::with_capacity(source.fields().len());
        for f in source.fields() {
            let t = target.field_with_name(f.name()).map_err(|_| {
                Error::invalid(format!(
                    "{uri}: merge_insert: the source has column '{}', which the table does not",
                    f.name()
                ))
            })?;
            retype.push(if f.data_type() == t.data_type() {
                None
            } else if crate::write::types_match(t.data_type(), f.data_type()) {
                Some(t.data_type().clone())
            } else {
                return Err(Error::invalid(format!(
                    "{uri}: merge_insert: column '{}' is {} in the table but {} in the source",
                    f.name(),
                    t.data_type(),
                    f.data_type()
                )));
            });
            fields.push(Arc::new(Field::new(f.name(), t.data_type().clone(), true)));
        }
        for k in on {
            if target.field_with_name(k).is_err() {
                return Err(Error::invalid(format!(
                    "{uri}: merge_insert key column '{k}' does not exist in the table"
                )));
            }
            if source.field_with_name(k).is_err() {
                return Err(Error::invalid(format!(
                    "{uri}: merge_insert: the source has no key column '{k}'"
                )));
            }
        }
        let missing: Vec<String> = target
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .filter(|n| source.field_with_name(n).is_err())
            .collect();
        Ok(SourceShape {
            schema: Arc::new(Schema::new(fields)),
            retype,
            missing,
        })
    }

    /// `batch` (of the schema `new` checked) with the table's types.
    pub fn conform(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let columns = batch
            .columns()
            .iter()
            .zip(&self.retype)
            .map(|(c, t)| match t {
                None => Ok(c.clone()),
                Some(t) => Ok(arrow_array::make_array(crate::write::retype(
                    c.to_data(),
                    t,
                )?)),
            })
            .collect::<Result<Vec<_>>>()?;
        let opts = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        Ok(RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &opts,
        )?)
    }
}

/// The source's batches: read from the caller's stream once and, when the merge may be
/// retried, kept (in memory up to a limit: `KEEP_IN_MEMORY` for a stream, no limit for an
/// in-memory table's batches; the rest in an Arrow IPC stream file in the system's
/// temporary directory, removed when this is dropped), so that `rewind` starts a pass
/// that reads them again before reading on.
pub struct SourceBatches {
    schema: SchemaRef,
    live: Option<BoxStream<'static, Result<RecordBatch>>>,
    /// None: read once only.
    kept: Option<Kept>,
    /// Batches of `kept` read in this pass.
    cursor: usize,
    /// Batches read from the stream in all.
    read: usize,
    spill_reader: Option<StreamReader<BufReader<File>>>,
}

struct Kept {
    memory: Vec<RecordBatch>,
    memory_bytes: usize,
    memory_limit: usize,
    spill: Option<Spill>,
}

/// The source's batches past those kept in memory, written to a file by a thread of its
/// own, beside the merge (the file is read only by a retry).
struct Spill {
    path: PathBuf,
    to_writer: Option<mpsc::Sender<Spilled>>,
    writer: Option<std::thread::JoinHandle<()>>,
    /// Set when the file is given up: batches still queued are not written.
    dropped: Arc<AtomicBool>,
    batches: usize,
}

enum Spilled {
    Batch(RecordBatch),
    /// Everything sent before is in the file (or the writer's first error).
    Flush(oneshot::Sender<std::result::Result<(), String>>),
}

impl Drop for Spill {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::Relaxed);
        self.to_writer = None;
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}
impl SourceBatches {
    /// The batches of `stream` (all of `schema`), kept for another pass when `keep` is
    /// Some (the bytes to keep in memory before spilling to a file).
    pub fn new(
        schema: SchemaRef,
        stream: BoxStream<'static, Result<RecordBatch>>,
        keep: Option<usize>,
    ) -> Self {
        SourceBatches {
            schema,
            live: Some(stream),
            kept: keep.map(|memory_limit| Kept {
                memory: vec![],
                memory_bytes: 0,
                memory_limit,
                spill: None,
            }),
            cursor: 0,
            read: 0,
            spill_reader: None,
        }
    }

    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Whether any batch went to the temporary file.
    #[cfg(test)]
    pub fn spilled(&self) -> bool {
        self.kept.as_ref().is_some_and(|k| k.spill.is_some())
    }

    /// The temporary file, once there is one.
    #[cfg(test)]
    pub fn spill_path(&self) -> Option<PathBuf> {
        self.kept.as_ref()?.spill.as_ref().map(|s| s.path.clone())
    }

    /// Start a pass over the source from its first batch.
    pub async fn rewind(&mut self) -> Result<()> {
        self.spill_reader = None;
        self.cursor = 0;
        match &mut self.kept {
            Some(k) => match &k.spill {
                Some(s) => s.flush().await,
                None => Ok(()),
            },
            None if self.read == 0 => Ok(()),
            None => Err(Error::invalid(
                "merge_insert: the source was read once already and was not kept, so the \
                 merge cannot run again (it was asked to make no retries)",
            )),
        }
    }

    /// The next batch of this pass: a kept one, then the stream's next.
    pub async fn next(&mut self) -> Result<Option<RecordBatch>> {
        if let Some(k) = &self.kept {
            if self.cursor < k.len() {
                let batch = match k.memory.get(self.cursor) {
                    Some(b) => b.clone(),
                    None => self.next_spilled()?,
                };
                self.cursor += 1;
                return Ok(Some(batch));
            }
        }
        let Some(live) = self.live.as_mut() else {
            return Ok(None);
        };
        let Some(batch) = live.next().await else {
            self.live = None;
            return Ok(None);
        };
        let batch = batch?;
        self.read += 1;
        if let Some(k) = &mut self.kept {
            k.push(&batch, &self.schema).await?;
            self.cursor += 1;
        }
        Ok(Some(batch))
    }

    /// The next batch of the spill file (read in order, from the first on each pass).
    fn next_spilled(&mut self) -> Result<RecordBatch> {
        let spill = self
            .kept
            .as_ref()
            .and_then(|k| k.spill.as_ref())
            .expect("a batch past those in memory is in the file");
        let reader = match &mut self.spill_reader {
            Some(r) => r,
            None => {
                let file = File::open(&spill.path).map_err(|e| spill_error(&spill.path, e))?;
                self.spill_reader
                    .insert(StreamReader::try_new_buffered(file, None)?)
            }
        };
        match reader.next() {
            Some(b) => Ok(b?),
            None => Err(Error::corrupt(
                spill.path.display(),
                "the merge source's temporary file ended early",
            )),
        }
    }
}

impl Kept {
    fn len(&self) -> usize {
        self.memory.len() + self.spill.as_ref().map_or(0, |s| s.batches)
    }

    /// Keep `batch`: in memory while they fit, in the file after.
    async fn push(&mut self, batch: &RecordBatch, schema: &SchemaRef) -> Result<()> {
        let bytes = batch.get_array_memory_size();
        if self.spill.is_none() && self.memory_bytes + bytes <= self.memory_limit {
            self.memory_bytes += bytes;
            self.memory.push(batch.clone());
            return Ok(());
        }
        let spill = match &mut self.spill {
            Some(s) => s,
            None => self.spill.insert(Spill::create(schema.clone())?),
        };
        spill.push(batch.clone()).await
    }
}

impl Spill {
    /// A new file in the system's temporary directory, and the thread writing it.
    fn create(schema: SchemaRef) -> Result<Self> {
        let path = std::env::temp_dir().join(format!(
            "lance_core-merge-source-{}.arrows",
            uuid::Uuid::new_v4().simple()
        ));
        let file = File::create(&path).map_err(|e| spill_error(&path, e))?;
        let (to_writer, mut queue) = mpsc::channel::<Spilled>(2);
        let dropped = Arc::new(AtomicBool::new(false));
        let stop = dropped.clone();
        let write = move || {
            let out = BufWriter::with_capacity(1 << 20, Pieces(file));
            // The first error is kept (and told at the next flush); later batches go.
            let mut writer = StreamWriter::try_new(out, &schema).map_err(|e| e.to_string());
            while let Some(m) = queue.blocking_recv() {
                match (m, &mut writer) {
                    (Spilled::Batch(b), Ok(w)) if !stop.load(Ordering::Relaxed) => {
                        if let Err(e) = w.write(&b) {
                            writer = Err(e.to_string());
                        }
                    }
                    (Spilled::Batch(_), _) => {}
                    (Spilled::Flush(reply), w) => {
                        let done = match w {
                            Ok(w) => w.flush().map_err(|e| e.to_string()),
                            Err(e) => Err(e.clone()),
                        };
                        let _ = reply.send(done);
                    }
                }
            }
        };
        let mut spill = Spill {
            path,
            to_writer: Some(to_writer),
            writer: None,
            dropped,
            batches: 0,
        };
        // From here on, the file is removed when `spill` is dropped.
        let thread = std::thread::Builder::new()
            .name("lance-core-merge-spill".into())
            .spawn(write)
            .map_err(|e| spill_error(&spill.path, e))?;
        spill.writer = Some(thread);
        Ok(spill)
    }

    async fn push(&mut self, batch: RecordBatch) -> Result<()> {
        self.send(Spilled::Batch(batch)).await?;
        self.batches += 1;
        Ok(())
    }

    /// Wait until every batch pushed is in the file.
    async fn flush(&self) -> Result<()> {
        let (reply, done) = oneshot::channel();
        self.send(Spilled::Flush(reply)).await?;
        match done.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Error::io(
                self.path.display(),
                format!("the merge source's temporary file (kept for retries): {e}"),
            )),
            Err(_) => Err(self.stopped()),
        }
    }

    async fn send(&self, m: Spilled) -> Result<()> {
        let to_writer = self.to_writer.as_ref().expect("open until dropped");
        to_writer.send(m).await.map_err(|_| self.stopped())
    }

    fn stopped(&self) -> Error {
        Error::io(
            self.path.display(),
            "the thread writing the merge source's temporary file stopped",
        )
    }
}

/// A file written in pieces of at most 1 MiB: one large write to the page cache was seen
/// to stall far longer than the same bytes in pieces.
struct Pieces(File);

impl Write for Pieces {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(&buf[..buf.len().min(1 << 20)])
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

fn spill_error(path: &std::path::Path, e: std::io::Error) -> Error {
    Error::io(
        path.display(),
        format!("the merge source's temporary file (kept for retries): {e}"),
    )
}
