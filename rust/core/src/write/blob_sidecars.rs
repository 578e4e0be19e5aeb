//! Blob v2 values too large to sit in their data file: the `.blob` objects beside it, in
//! `data/<data file stem>/`. A value above the dedicated threshold gets an object of its
//! own; a middle-sized one is appended to the current pack object, which rolls over once
//! it would pass the pack size. Objects are numbered 1, 2, ... (0 is never used) and
//! named by `crate::blob::sidecar_name`.
use bytes::Bytes;
use object_store::path::Path;

use crate::blob::sidecar_path;
use crate::error::{Error, Result};
use crate::storage::Storage;

/// One sidecar written by a caller that places its blobs itself (pylance's packed and
/// dedicated blob writers): bytes appended in order, the object published by `finish`.
pub struct SidecarWriter {
    writer: crate::storage::ObjectWriter,
    shown: String,
    bytes: u64,
}

impl SidecarWriter {
    /// Sidecar `id` of the data file at `data_file` (relative to `storage`'s root).
    pub fn create(storage: &Storage, data_file: &str, id: u32) -> Self {
        let path = storage.path(&sidecar_path(data_file, id));
        SidecarWriter {
            writer: storage.writer(&path),
            shown: storage.display(&path),
            bytes: 0,
        }
    }

    /// How errors name the object.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Append `data`; where it starts in the object.
    pub async fn append(&mut self, data: Bytes) -> Result<u64> {
        let at = self.bytes;
        self.bytes += data.len() as u64;
        self.writer
            .put(data)
            .await
            .map_err(|e| Error::io(&self.shown, e))?;
        Ok(at)
    }

    /// Publish the object; its size.
    pub async fn finish(&mut self) -> Result<u64> {
        self.writer
            .shutdown()
            .await
            .map_err(|e| Error::io(&self.shown, e))?;
        Ok(self.bytes)
    }

    /// Give the object up (nothing is published).
    pub async fn abort(&mut self) {
        let _ = self.writer.abort().await;
    }
}

struct Pack {
    id: u32,
    writer: crate::storage::ObjectWriter,
    bytes: u64,
}

pub struct BlobSidecars {
    storage: Storage,
    /// `data/<file>`, relative to the table's root.
    data_file: String,
    next_id: u32,
    pack: Option<Pack>,
    pack_limit: u64,
    /// Objects published so far (removed again if the data file is abandoned).
    written: Vec<Path>,
}

impl BlobSidecars {
    /// Sidecars of the data file at `data_file` (relative to the store's root).
    pub fn new(storage: &Storage, data_file: &str, pack_limit: u64) -> Self {
        BlobSidecars {
            storage: storage.clone(),
            data_file: data_file.to_string(),
            next_id: 1,
            pack: None,
            pack_limit: pack_limit.max(1),
            written: Vec::new(),
        }
    }

    fn path(&self, id: u32) -> Path {
        self.storage.path(&sidecar_path(&self.data_file, id))
    }

    fn take_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Write `data` as an object of its own; its id.
    pub async fn dedicated(&mut self, data: Bytes) -> Result<u32> {
        let id = self.take_id();
        let path = self.path(id);
        self.storage.put(&path, data).await?;
        self.written.push(path);
        Ok(id)
    }

    /// Append `data` to the current pack (a new one when it would grow past the limit);
    /// the pack's id and where `data` starts in it.
    pub async fn packed(&mut self, data: Bytes) -> Result<(u32, u64)> {
        let len = data.len() as u64;
        if self
            .pack
            .as_ref()
            .is_none_or(|p| p.bytes + len > self.pack_limit)
        {
            self.close_pack().await?;
            let id = self.take_id();
            let path = self.path(id);
            self.pack = Some(Pack {
                id,
                writer: self.storage.writer(&path),
                bytes: 0,
            });
        }
        let shown = self
            .storage
            .display(&self.path(self.pack.as_ref().unwrap().id));
        let pack = self.pack.as_mut().unwrap();
        let at = pack.bytes;
        pack.writer
            .put(data)
            .await
            .map_err(|e| Error::io(&shown, e))?;
        pack.bytes += len;
        Ok((pack.id, at))
    }

    async fn close_pack(&mut self) -> Result<()> {
        if let Some(mut pack) = self.pack.take() {
            let path = self.path(pack.id);
            pack.writer
                .shutdown()
                .await
                .map_err(|e| Error::io(self.storage.display(&path), e))?;
            self.written.push(path);
        }
        Ok(())
    }

    /// Publish the open pack; every sidecar's path.
    pub async fn finish(&mut self) -> Result<Vec<Path>> {
        self.close_pack().await?;
        Ok(std::mem::take(&mut self.written))
    }

    /// Drop the open pack and remove every sidecar written (the data file is abandoned).
    pub async fn abort(&mut self) {
        if let Some(mut pack) = self.pack.take() {
            let _ = pack.writer.abort().await;
        }
        for p in std::mem::take(&mut self.written) {
            let _ = self.storage.delete(&p).await;
        }
    }
}
