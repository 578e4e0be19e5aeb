//! A dataset at one version: the entry point tying storage, manifests and scans together.
pub mod data_stats;
pub mod history;

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::SchemaRef;
use bytes::Bytes;
use object_store::path::Path;
use roaring::RoaringBitmap;

use crate::encoding::layout::PagePlan;
use crate::error::{Error, Result};
use crate::file::FileReader;
use crate::proto::table::{
    data_fragment::RowIdSequence as RowIdSeq, DataFile, DataFragment, Manifest,
};
use crate::session::Session;
use crate::storage::{Storage, StorageOptions};
use crate::table::branches;
use crate::table::deletion::{decode_deletions, deletion_file_name};
use crate::table::features::{unknown_reader_flags, STABLE_ROW_IDS};
use crate::table::manifest::{decode_manifest, timestamp_nanos};
use crate::table::row_index::RowIdIndex;
use crate::table::rowids::{decode_row_id_runs, decode_row_ids};
use crate::table::schema::LanceSchema;
use crate::table::tags::read_tag;
use crate::table::validate::validate_manifest;
use crate::table::versions::{latest_version, list_manifests, locate_version, ManifestLocation};

/// Which version to open.
#[derive(Clone, Debug)]
pub enum VersionRef {
    /// A version of the line being read (main, or the branch the dataset is on).
    Number(u64),
    Tag(String),
    /// A version (None: the latest) of a branch (None or "main": the main line).
    Branch(Option<String>, Option<u64>),
}

/// One version in the history (`Dataset::versions`).
#[derive(Clone, Debug)]
pub struct VersionInfo {
    pub version: u64,
    pub timestamp_nanos: i64,
    pub metadata: Vec<(String, String)>,
}

impl VersionInfo {
    fn of(m: &Manifest) -> Self {
        VersionInfo {
            version: m.version,
            timestamp_nanos: timestamp_nanos(m),
            metadata: summary(m),
        }
    }
}

/// Where a base path's files are.
#[derive(Clone, Debug)]
struct Base {
    storage: Storage,
    is_dataset_root: bool,
}

/// What is read once per version: the row-id index and the manifest's index section.
/// (What stays true across versions — data files' metadata, deletion sets — is kept in
/// the session.)
#[derive(Debug, Default)]
struct VersionCache {
    /// The row-id index, built on first use.
    row_index: tokio::sync::OnceCell<Arc<RowIdIndex>>,
    /// The manifest's index section, read on first use.
    index_segments: std::sync::OnceLock<Arc<Vec<crate::table::index_segments::IndexSegment>>>,
}

/// The session key of an open data file (`legacy_ids`: the field ids its columns were
/// resolved for).
fn open_file_key(file: &str, legacy_ids: Option<(i32, i32)>) -> String {
    match legacy_ids {
        Some((min, max)) => format!("{file}#open:{min}:{max}"),
        None => format!("{file}#open"),
    }
}

fn page_plan_key(file: &str, column: usize, page: usize) -> String {
    format!("{file}#plan:{column}:{page}")
}

#[derive(Clone, Debug)]
pub struct Dataset {
    /// The URI the user opened (tags live here).
    uri: String,
    /// The directory holding this version's `_versions/` (the root, or a branch under `tree/`).
    storage: Storage,
    bases: HashMap<u32, Base>,
    pub location: ManifestLocation,
    pub manifest: Arc<Manifest>,
    /// The manifest file as read: a commit on this version builds on it without reading
    /// it again (it carries index sections and legacy dictionaries by position).
    pub manifest_bytes: Bytes,
    pub schema: Arc<LanceSchema>,
    pub arrow_schema: SchemaRef,
    options: StorageOptions,
    version_cache: Arc<VersionCache>,
    session: Arc<Session>,
}

impl Dataset {
    pub async fn open(
        uri: &str,
        version: Option<VersionRef>,
        options: StorageOptions,
    ) -> Result<Self> {
        let root = Storage::open(uri, &options)?;
        if !root.uri().contains("://") && std::path::Path::new(root.uri()).is_file() {
            return Err(Error::not_found(
                root.uri(),
                "this is a file, not a Lance dataset (a dataset is a directory)",
            ));
        }
        match Self::open_in(root.clone(), version.clone(), options.clone()).await {
            Err(e @ Error::NotFound { .. })
                if matches!(version, Some(VersionRef::Tag(_) | VersionRef::Branch(..))) =>
            {
                // `uri` may be a branch's directory: tags and branches are recorded at the
                // table's root, which its manifest leads to.
                match Self::open_in(root, None, options).await {
                    Ok(here) if here.branch().is_some() => {
                        here.checkout(version.unwrap_or(VersionRef::Number(here.version())))
                            .await
                    }
                    _ => Err(e),
                }
            }
            other => other,
        }
    }

    /// Open `version` of the table whose root (where tags and branches are recorded) is
    /// `root`; a plain number counts on the line `root` holds.
    async fn open_in(
        root: Storage,
        version: Option<VersionRef>,
        options: StorageOptions,
    ) -> Result<Self> {
        let (storage, version) = match version {
            Some(VersionRef::Tag(tag)) => {
                let t = read_tag(&root, &tag).await?;
                let storage = branches::branch_storage(&root, t.branch.as_deref())?;
                (storage, Some(t.version))
            }
            Some(VersionRef::Branch(branch, version)) => {
                let branch = branches::normalize(branch.as_deref());
                if let Some(name) = branch {
                    branches::read_branch(&root, name).await?;
                }
                (branches::branch_storage(&root, branch)?, version)
            }
            Some(VersionRef::Number(v)) => (root.clone(), Some(v)),
            None => (root.clone(), None),
        };
        let location = match version {
            Some(v) => locate_version(&storage, v).await?,
            None => latest_version(&storage).await?,
        };
        log::debug!("{}: opening version {}", storage.uri(), location.version);
        Self::load(storage.uri().to_string(), storage, location, options).await
    }

    async fn load(
        uri: String,
        storage: Storage,
        location: ManifestLocation,
        options: StorageOptions,
    ) -> Result<Self> {
        let bytes = storage.get(&location.path).await?;
        Self::from_manifest_file(uri, storage, location, bytes, options)
    }

    /// The dataset at the version whose manifest file is `bytes` (found at `location` of
    /// `storage`; `uri` is the table's root as the user named it).
    pub fn from_manifest_file(
        uri: String,
        storage: Storage,
        location: ManifestLocation,
        bytes: Bytes,
        options: StorageOptions,
    ) -> Result<Self> {
        let name = storage.display(&location.path);
        let manifest = decode_manifest(&bytes, &name)?;
        Self::from_manifest(uri, storage, location, manifest, bytes, options)
    }

    /// A dataset at the version `manifest` describes (found at `location`, read from the
    /// manifest file `bytes`; empty for a manifest made in memory).
    pub fn from_manifest(
        uri: String,
        storage: Storage,
        location: ManifestLocation,
        manifest: Manifest,
        bytes: Bytes,
        options: StorageOptions,
    ) -> Result<Self> {
        let name = storage.display(&location.path);
        validate_manifest(&manifest, &name, location.version)?;
        check_file_versions(&manifest, &name)?;
        let unknown = unknown_reader_flags(manifest.reader_feature_flags);
        if unknown != 0 {
            return Err(Error::unsupported(
                &name,
                format!("dataset needs reader features this reader does not know (flags {unknown:#x} of {:#x})", manifest.reader_feature_flags),
            ));
        }
        let schema = LanceSchema::from_proto(&manifest.fields, &manifest.schema_metadata)
            .map_err(|e| e.in_file(&name))?;
        let arrow_schema = Arc::new(schema.to_arrow().map_err(|e| e.in_file(&name))?);
        let mut bases = HashMap::new();
        for b in &manifest.base_paths {
            bases.insert(
                b.id,
                Base {
                    storage: Storage::open(&b.path, &options)?
                        .counting_in(storage.io_stats().clone()),
                    is_dataset_root: b.is_dataset_root,
                },
            );
        }
        Ok(Dataset {
            uri,
            storage,
            bases,
            location,
            manifest: Arc::new(manifest),
            manifest_bytes: bytes,
            schema: Arc::new(schema),
            arrow_schema,
            options,
            version_cache: Arc::new(VersionCache::default()),
            session: Session::shared(),
        })
    }

    pub fn uri(&self) -> &str {
        &self.uri
    }

    pub fn version(&self) -> u64 {
        self.manifest.version
    }

    /// The store holding this version's `_versions/`.
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    pub fn storage_options(&self) -> &StorageOptions {
        &self.options
    }

    /// The data storage version of the dataset, e.g. "2.2", as pylance reports it (see
    /// `table::data_file::effective_version`).
    pub fn data_storage_version(&self) -> String {
        crate::table::data_file::effective_version(&self.manifest).unwrap_or_else(|_| "0.1".into())
    }

    pub async fn latest_version(&self) -> Result<u64> {
        Ok(latest_version(&self.storage).await?.version)
    }

    /// Open another version of the same dataset, with the same storage options: a number
    /// on the same branch, a tag (which names its own branch), or a branch's version.
    pub async fn checkout(&self, version: VersionRef) -> Result<Self> {
        let version = match version {
            VersionRef::Number(v) => v,
            other => {
                let ds = Self::open_in(self.root_storage()?, Some(other), self.options.clone());
                return Ok(ds.await?.with_session(self.session.clone()));
            }
        };
        let location = locate_version(&self.storage, version).await?;
        let ds = Self::load(
            self.uri.clone(),
            self.storage.clone(),
            location,
            self.options.clone(),
        );
        Ok(ds.await?.with_session(self.session.clone()))
    }

    /// The branch this version is on (None: the main line).
    pub fn branch(&self) -> Option<&str> {
        branches::normalize(self.manifest.branch.as_deref())
    }

    /// The table's root: where its tags and branches are recorded (for a branch, the
    /// directory `tree/<branch>` is in).
    pub fn root_storage(&self) -> Result<Storage> {
        branches::root_storage(&self.storage, self.branch())
    }

    /// Every version with its commit time and summary, oldest first.
    pub async fn versions(&self) -> Result<Vec<VersionInfo>> {
        let locations = list_manifests(&self.storage).await?;
        let storage = &self.storage;
        in_rounds(&locations, storage.io_parallelism(), |l| async move {
            let bytes = storage.get(&l.path).await?;
            Ok::<_, Error>(VersionInfo::of(&decode_manifest(
                &bytes,
                &storage.display(&l.path),
            )?))
        })
        .await
    }

    /// The version numbers of this line, oldest first, from a listing of `_versions/`
    /// (pylance's `version_refs`: no manifest is read).
    pub async fn version_numbers(&self) -> Result<Vec<u64>> {
        Ok(list_manifests(&self.storage)
            .await?
            .into_iter()
            .map(|l| l.version)
            .collect())
    }

    /// This version's row of `versions()`, from the manifest in hand.
    pub fn version_info(&self) -> VersionInfo {
        VersionInfo::of(&self.manifest)
    }

    pub fn fragments(&self) -> &[DataFragment] {
        &self.manifest.fragments
    }

    pub fn fragment(&self, id: u64) -> Option<&DataFragment> {
        self.manifest.fragments.iter().find(|f| f.id == id)
    }

    /// Fragment `id`, or an error saying this version has none.
    pub fn fragment_or_err(&self, id: u64) -> Result<&DataFragment> {
        self.fragment(id).ok_or_else(|| {
            Error::invalid(format!(
                "{}: version {} has no fragment {id}",
                self.uri(),
                self.version()
            ))
        })
    }

    pub fn has_stable_row_ids(&self) -> bool {
        self.manifest.reader_feature_flags & STABLE_ROW_IDS != 0
    }

    /// Where a data file is: its store and path.
    pub fn data_file_location(&self, file: &DataFile) -> Result<(Storage, Path)> {
        match file.base_id {
            None => Ok((
                self.storage.clone(),
                self.storage.path(&format!("data/{}", file.path)),
            )),
            Some(id) => {
                let b = self.base(id)?;
                let rel = if b.is_dataset_root {
                    format!("data/{}", file.path)
                } else {
                    file.path.clone()
                };
                Ok((b.storage.clone(), b.storage.path(&rel)))
            }
        }
    }

    /// The store of base path `id` (where files with that `base_id` live).
    pub fn base_storage(&self, id: u32) -> Result<&Storage> {
        Ok(&self.base(id)?.storage)
    }

    /// The directory of index `uuid` (kept under `base_id`, else with the table).
    pub fn index_dir(&self, uuid: &str, base_id: Option<u32>) -> Result<String> {
        let storage = match base_id {
            None => &self.storage,
            Some(id) => &self.base(id)?.storage,
        };
        Ok(format!(
            "{}/_indices/{uuid}",
            storage.uri().trim_end_matches('/')
        ))
    }

    /// The index segments the manifest lists (read from it once).
    pub fn index_segments(&self) -> Result<Arc<Vec<crate::table::index_segments::IndexSegment>>> {
        if let Some(s) = self.version_cache.index_segments.get() {
            return Ok(s.clone());
        }
        let name = self.storage.display(&self.location.path);
        let all =
            crate::table::index_segments::segments(&self.manifest, &self.manifest_bytes, &name)?;
        Ok(self
            .version_cache
            .index_segments
            .get_or_init(|| Arc::new(all))
            .clone())
    }

    fn base(&self, id: u32) -> Result<&Base> {
        self.bases.get(&id).ok_or_else(|| {
            Error::corrupt(
                self.storage.display(&self.location.path),
                format!("a file refers to base path {id}, which the manifest does not list"),
            )
        })
    }

    /// Open a data file of this version (kept in the session); `legacy_ids` resolves the
    /// columns of a legacy file for the field id range its `DataFile` lists.
    pub async fn open_file(
        &self,
        file: &DataFile,
        legacy_ids: Option<(i32, i32)>,
    ) -> Result<Arc<FileReader>> {
        self.open_file_reading(file, legacy_ids, None).await
    }

    /// Open a data file of this version by reading it whole (see `FileReader::open_whole`;
    /// `held` is the memory that takes), unless the session knows its metadata already:
    /// then its pages are read as wanted, which costs no more round trips.
    pub async fn open_file_whole(
        &self,
        file: &DataFile,
        held: tokio::sync::OwnedSemaphorePermit,
    ) -> Result<Arc<FileReader>> {
        self.open_file_reading(file, None, Some(held)).await
    }

    async fn open_file_reading(
        &self,
        file: &DataFile,
        legacy_ids: Option<(i32, i32)>,
        whole: Option<tokio::sync::OwnedSemaphorePermit>,
    ) -> Result<Arc<FileReader>> {
        let (storage, path) = self.data_file_location(file)?;
        let key = open_file_key(&storage.display(&path), legacy_ids);
        if let Some(reader) = self.session.metadata.get::<FileReader>(&key) {
            // Kept by another open of the table: read through this one's store.
            return Ok(match reader.reads_through(&storage) {
                true => reader,
                false => Arc::new(reader.reading_through(&storage)),
            });
        }
        let size = crate::table::data_file::recorded_size(file);
        let mut reader = match (whole, size) {
            (Some(held), Some(size)) => FileReader::open_whole(&storage, path, size, held).await?,
            _ => FileReader::open(&storage, path, size).await?,
        };
        if let Some((min, max)) = legacy_ids {
            reader = reader.with_field_ids(min, max).await?;
        }
        let kept = Arc::new(reader.to_keep());
        self.session
            .metadata
            .put(key, kept.clone(), kept.memory_size());
        // The caller reads its pages from the bytes the open read, if it read them all.
        Ok(match reader.in_memory() && !kept.in_memory() {
            true => Arc::new(reader),
            false => kept,
        })
    }

    /// Keep `reader`, the open data file `file` of this version, as `open_file` would have.
    pub fn cache_open_file(&self, file: &DataFile, reader: Arc<FileReader>) -> Result<()> {
        let (storage, path) = self.data_file_location(file)?;
        let reader = Arc::new(reader.to_keep());
        let bytes = reader.memory_size();
        let key = open_file_key(&storage.display(&path), None);
        self.session.metadata.put(key, reader, bytes);
        Ok(())
    }

    /// A page planned for random access, if planned before (`file` as its reader names it).
    pub fn cached_page_plan(
        &self,
        file: &str,
        column: usize,
        page: usize,
    ) -> Option<Arc<PagePlan>> {
        self.session
            .metadata
            .get(&page_plan_key(file, column, page))
    }

    pub fn cache_page_plan(&self, file: &str, column: usize, page: usize, plan: Arc<PagePlan>) {
        let bytes = plan.memory_size();
        self.session
            .metadata
            .put(page_plan_key(file, column, page), plan, bytes);
    }

    /// The caches this dataset shares with the others opened in its session.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// This dataset, keeping what it reads in `session`.
    pub fn with_session(mut self, session: Arc<Session>) -> Self {
        self.session = session;
        self
    }

    /// The physical row offsets in `frag` of its visible rows `indices` (deleted rows
    /// skipped), in the order given; an index past its visible rows is an error.
    pub async fn physical_offsets(&self, frag: &DataFragment, indices: &[u64]) -> Result<Vec<u32>> {
        let physical = self.physical_rows(frag).await?;
        let deletions = self.deletions(frag).await?;
        let visible = physical - deletions.as_ref().map_or(0, |d| d.len());
        indices
            .iter()
            .map(|&k| {
                if k >= visible {
                    return Err(Error::invalid(format!(
                        "{}: index {k} is out of range: fragment {} has {visible} rows",
                        self.uri, frag.id
                    )));
                }
                Ok(match &deletions {
                    None => k as u32,
                    Some(d) => nth_not_deleted(d, k),
                })
            })
            .collect()
    }

    /// Check, as pylance's `validate()`, what opening trusts: fragment ids unique and
    /// ascending, each fragment's field ids unique and ascending per file, every data file
    /// present with the fragment's row count, deleted offsets within it, index segments
    /// unique. An error names the file and what is wrong.
    pub async fn validate(&self) -> Result<()> {
        let name = self.location.path.to_string();
        let mut previous: Option<u64> = None;
        for f in self.fragments() {
            if previous.is_some_and(|p| f.id <= p) {
                return Err(Error::corrupt(
                    &name,
                    format!(
                        "fragment ids are not unique and ascending: {} after {}",
                        f.id,
                        previous.unwrap_or_default()
                    ),
                ));
            }
            previous = Some(f.id);
        }
        self.per_fragment(|f| self.validate_fragment(f)).await?;
        let mut seen = std::collections::HashSet::new();
        for segment in self.index_segments()?.iter() {
            if !seen.insert(segment.uuid.clone()) {
                return Err(Error::corrupt(
                    &name,
                    format!("index segment {} is listed twice", segment.uuid),
                ));
            }
        }
        Ok(())
    }

    /// One fragment's part of `validate` (pylance's `LanceFragment.validate`).
    pub async fn validate_fragment(&self, f: &DataFragment) -> Result<()> {
        let rows = self.physical_rows(f).await?;
        let mut fields = std::collections::HashSet::new();
        for file in &f.files {
            let (storage, path) = self.data_file_location(file)?;
            let shown = storage.display(&path);
            let ids: Vec<i32> = file.fields.iter().copied().filter(|id| *id >= 0).collect();
            if ids.windows(2).any(|w| w[0] >= w[1]) || !ids.iter().all(|id| fields.insert(*id)) {
                return Err(Error::corrupt(
                    &shown,
                    format!(
                        "fragment {}: field ids {:?} are not ascending or repeat another file's",
                        f.id, file.fields
                    ),
                ));
            }
            // Asked of the store, never of the session's caches: the file may have gone
            // or changed since it was read.
            storage.file_meta(&path).await?;
            // A legacy (0.1) file's rows are counted per batch; its length is not checked.
            if file.file_major_version >= 2 {
                let reader = FileReader::open(&storage, path.clone(), None).await?;
                if reader.metadata.num_rows != rows {
                    return Err(Error::corrupt(
                        &shown,
                        format!(
                            "fragment {} has {rows} rows, but the file holds {}",
                            f.id, reader.metadata.num_rows
                        ),
                    ));
                }
            }
        }
        if f.deletion_file.is_some() {
            let deleted = self.read_deletions(f).await?;
            if deleted.max().is_some_and(|m| u64::from(m) >= rows) {
                return Err(Error::corrupt(
                    self.location.path.to_string(),
                    format!(
                        "fragment {} deletes row {} of its {rows} rows",
                        f.id,
                        deleted.max().unwrap_or_default()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Rows in a fragment's data files, deleted rows included.
    pub async fn physical_rows(&self, frag: &DataFragment) -> Result<u64> {
        // A manifest without a writer version comes from pylance 0.8.12 or older, and
        // 0.8.0–0.8.12 stored the rows left after deletions here: only the file knows.
        let trusted = self.manifest.writer_version.is_some();
        if (trusted && frag.physical_rows > 0) || frag.files.is_empty() {
            return Ok(frag.physical_rows);
        }
        // Older writers left it unset or wrong: ask the first data file.
        let reader = self.open_file(&frag.files[0], None).await?;
        Ok(reader.metadata.num_rows)
    }

    /// The deleted row offsets of a fragment, if it has a deletion file (read once per
    /// session).
    pub async fn deletions(&self, frag: &DataFragment) -> Result<Option<Arc<RoaringBitmap>>> {
        if frag.deletion_file.is_none() {
            return Ok(None);
        }
        let Some((storage, path)) = self.deletion_file_location(frag)? else {
            return Ok(None);
        };
        let key = format!("{}#deletions", storage.display(&path));
        if let Some(set) = self.session.metadata.get::<RoaringBitmap>(&key) {
            return Ok(Some(set));
        }
        let set = Arc::new(self.read_deletions(frag).await?);
        let bytes = set.serialized_size() as u64;
        self.session.metadata.put(key, set.clone(), bytes);
        Ok(Some(set))
    }

    /// Where a fragment's deletion file is (its store and path), if it has one.
    pub fn deletion_file_location(&self, frag: &DataFragment) -> Result<Option<(Storage, Path)>> {
        let Some(d) = &frag.deletion_file else {
            return Ok(None);
        };
        let storage = match d.base_id {
            None => &self.storage,
            Some(id) => &self.base(id)?.storage,
        };
        let path = storage.path(&format!("_deletions/{}", deletion_file_name(frag.id, d)));
        Ok(Some((storage.clone(), path)))
    }

    async fn read_deletions(&self, frag: &DataFragment) -> Result<RoaringBitmap> {
        let (Some(d), Some((storage, path))) =
            (&frag.deletion_file, self.deletion_file_location(frag)?)
        else {
            return Ok(RoaringBitmap::new());
        };
        let bytes = storage.get(&path).await?;
        let set = decode_deletions(&bytes, d, &storage.display(&path))?;
        // Old writers left the count out (0); when it is there, the file must agree, or
        // counting rows and reading them would disagree.
        if d.num_deleted_rows > 0 && set.len() != d.num_deleted_rows {
            return Err(Error::corrupt(
                storage.display(&path),
                format!(
                    "holds {} deleted rows, but the manifest records {}",
                    set.len(),
                    d.num_deleted_rows
                ),
            ));
        }
        if let Some(max) = set.max() {
            let rows = self.physical_rows(frag).await?;
            if u64::from(max) >= rows {
                return Err(Error::corrupt(
                    storage.display(&path),
                    format!(
                        "deletes row {max}, but fragment {} has only {rows} rows",
                        frag.id
                    ),
                ));
            }
        }
        Ok(set)
    }

    /// Deleted rows of a fragment, from the manifest when it records them.
    pub async fn num_deleted(&self, frag: &DataFragment) -> Result<u64> {
        match &frag.deletion_file {
            None => Ok(0),
            Some(d) if d.num_deleted_rows > 0 => Ok(d.num_deleted_rows),
            Some(_) => Ok(self.deletions(frag).await?.map(|s| s.len()).unwrap_or(0)),
        }
    }

    /// Visible rows of a fragment.
    pub async fn fragment_rows(&self, frag: &DataFragment) -> Result<u64> {
        let physical = self.physical_rows(frag).await?;
        Ok(physical.saturating_sub(self.num_deleted(frag).await?))
    }

    /// Visible rows of the dataset, without decoding any data page.
    pub async fn count_rows(&self) -> Result<u64> {
        let counts = self.per_fragment(|f| self.fragment_rows(f)).await?;
        Ok(counts.iter().sum())
    }

    /// `read` of every fragment, in order, a few at a time (`Storage::io_parallelism`):
    /// answers the manifest holds come at once, and the futures of 10,000 fragments are
    /// never all alive together (that would take megabytes).
    pub async fn per_fragment<'a, T, F, Fut>(&'a self, read: F) -> Result<Vec<T>>
    where
        F: Fn(&'a DataFragment) -> Fut,
        Fut: std::future::Future<Output = Result<T>> + 'a,
    {
        in_rounds(self.fragments(), self.storage.io_parallelism(), read).await
    }

    /// The stable row ids of a fragment (one per physical row), when the dataset has them.
    pub async fn row_ids(&self, frag: &DataFragment) -> Result<Option<Vec<u64>>> {
        if frag.row_id_sequence.is_none() && !self.has_stable_row_ids() {
            return Ok(None);
        }
        let (bytes, name) = self.row_id_bytes(frag).await?;
        decode_row_ids(&bytes)
            .map(Some)
            .map_err(|e| e.in_file(&name))
    }

    /// One of a fragment's row lineage sequences (a version per physical row), or None
    /// when the fragment has none (its rows read as version 1).
    pub async fn row_versions(
        &self,
        frag: &DataFragment,
        which: crate::table::row_versions::Lineage,
    ) -> Result<Option<Vec<u64>>> {
        use crate::table::row_versions::{decode_versions, Stored};
        let (bytes, name) = match which.of(frag) {
            None => return Ok(None),
            Some(Stored::Inline(b)) => (
                bytes::Bytes::copy_from_slice(b),
                self.storage.display(&self.location.path),
            ),
            Some(Stored::External(ext)) => self.external_bytes(ext).await?,
        };
        let rows = self.physical_rows(frag).await?;
        decode_versions(&bytes, rows)
            .map(Some)
            .map_err(|e| e.in_file(&name))
    }

    /// The bytes of a sequence kept in a file of its own, and what to call it in errors.
    async fn external_bytes(
        &self,
        ext: &crate::proto::table::ExternalFile,
    ) -> Result<(bytes::Bytes, String)> {
        let path = self.storage.path(&ext.path);
        let b = self
            .storage
            .get_range(&path, ext.offset..ext.offset + ext.size)
            .await?;
        Ok((b, self.storage.display(&path)))
    }

    /// The serialized row-id sequence of a fragment (inline, or read from its file), and
    /// what to call it in errors.
    async fn row_id_bytes(&self, frag: &DataFragment) -> Result<(bytes::Bytes, String)> {
        match &frag.row_id_sequence {
            Some(RowIdSeq::InlineRowIds(b)) => Ok((
                bytes::Bytes::copy_from_slice(b),
                self.storage.display(&self.location.path),
            )),
            Some(RowIdSeq::ExternalRowIds(ext)) => self.external_bytes(ext).await,
            None => Err(Error::corrupt(
                self.storage.display(&self.location.path),
                format!(
                    "dataset has stable row ids but fragment {} has no row id sequence",
                    frag.id
                ),
            )),
        }
    }

    /// The row-id index of this version (stable row ids only), built on first use.
    pub async fn row_id_index(&self) -> Result<Arc<RowIdIndex>> {
        self.version_cache
            .row_index
            .get_or_try_init(|| async {
                let runs = self
                    .per_fragment(|f| async move {
                        let (bytes, name) = self.row_id_bytes(f).await?;
                        let rows = self.physical_rows(f).await?;
                        let runs =
                            decode_row_id_runs(&bytes, rows).map_err(|e| e.in_file(&name))?;
                        Ok::<_, Error>((f.id, runs, self.deletions(f).await?))
                    })
                    .await?;
                let index = RowIdIndex::build(runs)
                    .map_err(|e| e.in_file(&self.storage.display(&self.location.path)))?;
                Ok(Arc::new(index))
            })
            .await
            .cloned()
    }

    /// The addresses of rows with stable row ids (or, without them, row ids that are
    /// addresses) `ids`, in order: None for an id no visible row has.
    pub async fn addresses_of_row_ids(&self, ids: &[u64]) -> Result<Vec<Option<u64>>> {
        let addresses: Vec<Option<u64>> = if self.has_stable_row_ids() {
            let index = self.row_id_index().await?;
            ids.iter().map(|&id| index.address(id)).collect()
        } else {
            ids.iter().copied().map(Some).collect()
        };
        // Deleted rows are no rows (as in pylance); an address outside every fragment is
        // an error (stable ids found by the index never are). Each fragment's row count
        // and deletions are looked up once, not once per id.
        let mut seen: HashMap<u64, (u64, Option<Arc<RoaringBitmap>>)> = HashMap::new();
        let mut out = Vec::with_capacity(addresses.len());
        for a in addresses {
            let Some(a) = a else {
                out.push(None);
                continue;
            };
            let (id, offset) = (a >> 32, a & 0xFFFF_FFFF);
            if let std::collections::hash_map::Entry::Vacant(slot) = seen.entry(id) {
                let frag = self.fragment(id).ok_or_else(|| {
                    Error::invalid(format!(
                        "{}: row id {a} is in fragment {id}, which this version does not have",
                        self.uri
                    ))
                })?;
                slot.insert((self.physical_rows(frag).await?, self.deletions(frag).await?));
            }
            let (rows, deletions) = &seen[&id];
            if offset >= *rows {
                return Err(Error::invalid(format!(
                    "{}: row id {a} is row {offset} of fragment {id}, which has {rows} rows",
                    self.uri
                )));
            }
            let deleted = deletions
                .as_ref()
                .is_some_and(|d| d.contains(offset as u32));
            out.push((!deleted).then_some(a));
        }
        Ok(out)
    }

    /// The addresses of the dataset's visible rows `indices` (counted over the
    /// fragments in order, deleted rows skipped), in the order given.
    pub async fn addresses_of_indices(&self, indices: &[u64]) -> Result<Vec<u64>> {
        let counts = self.per_fragment(|f| self.fragment_rows(f)).await?;
        let mut ends = Vec::with_capacity(counts.len());
        let mut total = 0u64;
        for c in &counts {
            total += c;
            ends.push(total);
        }
        // Per fragment: the positions asked for and their index within the fragment.
        let mut per_fragment: Vec<Vec<(usize, u64)>> = vec![Vec::new(); counts.len()];
        for (pos, &i) in indices.iter().enumerate() {
            if i >= total {
                return Err(Error::invalid(format!(
                    "{}: index {i} is out of range: the dataset has {total} rows",
                    self.uri
                )));
            }
            let f = ends.partition_point(|&e| e <= i);
            let start = ends[f] - counts[f];
            per_fragment[f].push((pos, i - start));
        }
        let mut out = vec![0u64; indices.len()];
        for (f, wanted) in per_fragment
            .iter()
            .enumerate()
            .filter(|(_, w)| !w.is_empty())
        {
            let frag = &self.fragments()[f];
            let local: Vec<u64> = wanted.iter().map(|w| w.1).collect();
            let offsets = self.physical_offsets(frag, &local).await?;
            for ((pos, _), o) in wanted.iter().zip(offsets) {
                out[*pos] = (frag.id << 32) | o as u64;
            }
        }
        Ok(out)
    }
}

/// Data files must be of the version the dataset records (pylance refuses the dataset
/// otherwise): of one version when none is recorded, and of the recorded 2.x version
/// unless the dataset allows mixing. Over a recorded 0.1 (an old writer's default that
/// the next commit corrects) any single version is read.
fn check_file_versions(m: &Manifest, name: &str) -> Result<()> {
    use crate::table::data_file::{effective_version, file_version_name, normalized_version};
    use crate::table::features::MIXED_FILE_VERSIONS;
    effective_version(m).map_err(|e| Error::invalid(format!("{name}: {e}")))?;
    let recorded = match &m.data_format {
        Some(f) if !f.version.is_empty() => normalized_version(&f.version),
        _ => return Ok(()),
    };
    if recorded == "0.1" || m.reader_feature_flags & MIXED_FILE_VERSIONS != 0 {
        return Ok(());
    }
    for frag in &m.fragments {
        for file in &frag.files {
            let v = file_version_name(file.file_major_version, file.file_minor_version);
            if v != Some(recorded) {
                return Err(Error::invalid(format!(
                    "{name}: data file {} of fragment {} has version {}, but the dataset's data \
                     storage version is {recorded}",
                    file.path,
                    frag.id,
                    v.unwrap_or("unknown")
                )));
            }
        }
    }
    Ok(())
}

/// The `k`-th row offset (from 0) not in `deleted`: the smallest p with p - rank(p) == k
/// and p not deleted, found by binary search over p.
fn nth_not_deleted(deleted: &RoaringBitmap, k: u64) -> u32 {
    // Rows before p that are kept: p - (deleted rows below p).
    let kept_below = |p: u64| {
        p - if p == 0 {
            0
        } else {
            deleted.rank((p - 1) as u32)
        }
    };
    let (mut lo, mut hi) = (k, k + deleted.len());
    // The first p with kept_below(p + 1) > k, i.e. p is the k-th kept row.
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if kept_below(mid + 1) > k {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo as u32
}

/// The summary pylance shows with each version.
fn summary(m: &Manifest) -> Vec<(String, String)> {
    let mut rows = 0u64;
    let mut deleted = 0u64;
    let mut files = 0u64;
    let mut deletion_files = 0u64;
    let mut bytes = 0u64;
    let mut total_rows = 0u64;
    for f in &m.fragments {
        rows += f.physical_rows;
        files += f.files.len() as u64;
        bytes += f.files.iter().map(|d| d.file_size_bytes).sum::<u64>();
        let del = f
            .deletion_file
            .as_ref()
            .map(|d| d.num_deleted_rows)
            .unwrap_or(0);
        if f.deletion_file.is_some() {
            deletion_files += 1;
            deleted += del;
        }
        if f.deletion_file.is_none() || del > 0 {
            total_rows += f.physical_rows - del.min(f.physical_rows);
        }
    }
    vec![
        ("total_data_file_rows".into(), rows.to_string()),
        ("total_data_files".into(), files.to_string()),
        ("total_deletion_file_rows".into(), deleted.to_string()),
        ("total_deletion_files".into(), deletion_files.to_string()),
        ("total_files_size".into(), bytes.to_string()),
        ("total_fragments".into(), m.fragments.len().to_string()),
        ("total_rows".into(), total_rows.to_string()),
    ]
}

/// `read` of every item, in order, `n` at a time: a future per item alive at once would
/// take memory in proportion to the table (its fragments, its versions).
async fn in_rounds<'a, I, T, F, Fut>(items: &'a [I], n: usize, read: F) -> Result<Vec<T>>
where
    F: Fn(&'a I) -> Fut,
    Fut: std::future::Future<Output = Result<T>> + 'a,
{
    let mut out = Vec::with_capacity(items.len());
    for some in items.chunks(n.max(1)) {
        out.extend(futures::future::try_join_all(some.iter().map(&read)).await?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nth_kept_row_skips_deleted_ones() {
        let deleted: RoaringBitmap = [0u32, 1, 5, 6, 7, 20].into_iter().collect();
        let kept: Vec<u32> = (0..30).filter(|r| !deleted.contains(*r)).collect();
        for (k, &row) in kept.iter().enumerate() {
            assert_eq!(nth_not_deleted(&deleted, k as u64), row, "k = {k}");
        }
    }
}
