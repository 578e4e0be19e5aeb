//! Writing a Lance v2 data file: page buffers (each padded to 64 bytes), then the schema
//! as global buffer 0, the column metadata, the two offset tables and the footer.
use bytes::Bytes;
use object_store::path::Path;
use prost::Message;

use super::{FileVersion, FOOTER_LEN, MAGIC};
use crate::encoding::encode::array20::Page20;
use crate::encoding::encode::EncodedPage;
use crate::error::{Error, Result};
use crate::proto::encodings20::{column_encoding, ColumnEncoding};
use crate::proto::file::v2::{
    column_metadata::Page, encoding, ColumnMetadata, DirectEncoding, Encoding,
};
use crate::proto::file::{FileDescriptor, Schema as PbSchema};
use crate::storage::Storage;

const ALIGN: u64 = 64;
const PAD: u8 = 0x48;

fn any(type_url: &str, value: Vec<u8>) -> Encoding {
    let any = prost_types::Any {
        type_url: type_url.into(),
        value,
    };
    Encoding {
        location: Some(encoding::Location::Direct(DirectEncoding {
            encoding: any.encode_to_vec(),
        })),
    }
}

pub struct FileWriter {
    writer: crate::storage::ObjectWriter,
    name: String,
    position: u64,
    version: FileVersion,
    columns: Vec<ColumnMetadata>,
    /// Rows written so far per column (the next page's first row).
    column_rows: Vec<u64>,
    /// Global buffers after the schema (offset, size), in order from buffer 1.
    extra_buffers: Vec<(u64, u64)>,
}

impl FileWriter {
    pub fn create(
        storage: &Storage,
        path: &Path,
        version: FileVersion,
        num_columns: usize,
    ) -> Self {
        let column_encoding = ColumnEncoding {
            column_encoding: Some(column_encoding::ColumnEncoding::Values(())),
        };
        let column = ColumnMetadata {
            encoding: Some(any(
                "/lance.encodings.ColumnEncoding",
                column_encoding.encode_to_vec(),
            )),
            ..Default::default()
        };
        FileWriter {
            writer: storage.writer(path),
            name: storage.display(path),
            position: 0,
            version,
            columns: vec![column; num_columns],
            column_rows: vec![0; num_columns],
            extra_buffers: Vec::new(),
        }
    }

    pub fn position(&self) -> u64 {
        self.position
    }

    async fn write(&mut self, data: Bytes) -> Result<()> {
        self.position += data.len() as u64;
        self.writer
            .put(data)
            .await
            .map_err(|e| Error::io(&self.name, e))
    }

    async fn write_aligned(&mut self, data: impl Into<Bytes>) -> Result<u64> {
        let data: Bytes = data.into();
        static PADDING: [u8; ALIGN as usize] = [PAD; ALIGN as usize];
        let at = self.position;
        let pad = ((ALIGN - data.len() as u64 % ALIGN) % ALIGN) as usize;
        self.write(data).await?;
        if pad > 0 {
            // Padding on its own, so a full buffer is never reallocated to grow by a few bytes.
            self.write(Bytes::from_static(&PADDING[..pad])).await?;
        }
        Ok(at)
    }

    /// Append a page to `column`.
    pub async fn write_page(&mut self, column: usize, page: EncodedPage) -> Result<()> {
        let encoding = any("/lance.encodings21.PageLayout", page.layout.encode_to_vec());
        self.append_page(column, page.buffers, page.num_rows, encoding)
            .await
    }

    /// Append a format 2.0 page to `column`.
    pub async fn write_page20(&mut self, column: usize, page: Page20) -> Result<()> {
        let encoding = any(
            "/lance.encodings.ArrayEncoding",
            page.encoding.encode_to_vec(),
        );
        self.append_page(column, page.buffers, page.num_rows, encoding)
            .await
    }

    async fn append_page(
        &mut self,
        column: usize,
        buffers: Vec<Vec<u8>>,
        num_rows: u64,
        encoding: Encoding,
    ) -> Result<()> {
        let mut offsets = Vec::with_capacity(buffers.len());
        let mut sizes = Vec::with_capacity(buffers.len());
        for b in buffers {
            sizes.push(b.len() as u64);
            offsets.push(self.write_aligned(b).await?);
        }
        let priority = self.column_rows[column];
        self.column_rows[column] += num_rows;
        self.columns[column].pages.push(Page {
            buffer_offsets: offsets,
            buffer_sizes: sizes,
            length: num_rows,
            encoding: Some(encoding),
            priority,
        });
        Ok(())
    }

    /// Write a blob's bytes out of line (64-byte aligned, before the page that describes
    /// them); returns where they start.
    pub async fn write_blob(&mut self, data: Bytes) -> Result<u64> {
        self.write_aligned(data).await
    }

    /// Write a global buffer (an index's side data); returns its number (1 and up).
    pub async fn add_global_buffer(&mut self, data: Vec<u8>) -> Result<u32> {
        let size = data.len() as u64;
        let at = self.write_aligned(data).await?;
        self.extra_buffers.push((at, size));
        Ok(self.extra_buffers.len() as u32)
    }

    /// Write the metadata and footer and publish the file; returns its size.
    pub async fn finish(mut self, schema: PbSchema, num_rows: u64) -> Result<u64> {
        let descriptor = FileDescriptor {
            schema: Some(schema),
            length: num_rows,
        }
        .encode_to_vec();
        let schema_at = self.position;
        let schema_len = descriptor.len() as u64;
        self.write(Bytes::from(descriptor)).await?;
        let column_meta_start = self.position;
        let mut table = Vec::with_capacity(self.columns.len() * 16);
        for c in std::mem::take(&mut self.columns) {
            let bytes = c.encode_to_vec();
            table.extend_from_slice(&self.position.to_le_bytes());
            table.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            self.write(Bytes::from(bytes)).await?;
        }
        let num_columns = table.len() / 16;
        let cmo_table_start = self.position;
        self.write(Bytes::from(table)).await?;
        let gbo_table_start = self.position;
        let mut gbo = schema_at.to_le_bytes().to_vec();
        gbo.extend_from_slice(&schema_len.to_le_bytes());
        for (at, size) in &self.extra_buffers {
            gbo.extend_from_slice(&at.to_le_bytes());
            gbo.extend_from_slice(&size.to_le_bytes());
        }
        let num_global_buffers = 1 + self.extra_buffers.len() as u32;
        self.write(Bytes::from(gbo)).await?;
        let mut footer = Vec::with_capacity(FOOTER_LEN);
        for v in [column_meta_start, cmo_table_start, gbo_table_start] {
            footer.extend_from_slice(&v.to_le_bytes());
        }
        footer.extend_from_slice(&num_global_buffers.to_le_bytes());
        footer.extend_from_slice(&(num_columns as u32).to_le_bytes());
        // 2.0 says 0.3 on disk, as pylance writes it.
        let (major, minor) = match self.version {
            FileVersion { major: 2, minor: 0 } => (0u16, 3u16),
            v => (v.major, v.minor),
        };
        footer.extend_from_slice(&major.to_le_bytes());
        footer.extend_from_slice(&minor.to_le_bytes());
        footer.extend_from_slice(MAGIC);
        self.write(Bytes::from(footer)).await?;
        self.writer
            .shutdown()
            .await
            .map_err(|e| Error::io(&self.name, e))?;
        Ok(self.position)
    }

    /// Give up on the file (nothing is published).
    pub async fn abort(mut self) {
        let _ = self.writer.abort().await;
    }
}
