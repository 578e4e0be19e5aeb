//! Indices as the manifest lists them. An index is a plug-in beside the table: an
//! `IndexMetadata` entry in the manifest file's index section (the fields it covers, the
//! fragments it was built over, its kind as a protobuf `Any`) and files under
//! `_indices/<uuid>/`. Several entries with one name are segments of one index, each over
//! its own fragments.
pub mod bitmap;
pub mod bloom;
pub mod btree;
pub mod extremes;
pub mod label_list;
pub mod ngram;
pub mod remap;
pub mod search;
pub mod selection;
pub mod stats;
pub mod zonemap;
mod zones;

use prost::Message;
use roaring::RoaringBitmap;

use bytes::Bytes;

use crate::error::Result;
use crate::proto::table::{DataFragment, IndexMetadata, Manifest};

/// One segment of an index.
#[derive(Clone, Debug)]
pub struct IndexSegment {
    pub name: String,
    /// The directory name under `_indices/`.
    pub uuid: String,
    /// Schema field ids of the indexed columns.
    pub fields: Vec<i32>,
    /// The version whose data the segment was built from.
    pub dataset_version: u64,
    /// The fragments it was built over, as recorded (fragments deleted since stay in
    /// it); None when the writer did not record them.
    pub fragments: Option<RoaringBitmap>,
    /// What pylance calls the kind: "BTree", "Bitmap", "IVF_PQ", ...
    pub kind: String,
    pub type_url: String,
    /// The version of the index's own format (what its ids mean, for BTREE).
    pub index_version: i32,
    /// Milliseconds since the epoch, when recorded.
    pub created_at_ms: Option<u64>,
    pub base_id: Option<u32>,
    /// Files of the segment (relative to its directory) and their sizes.
    pub files: Vec<(String, u64)>,
}

/// The kinds of index lance_core reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    BTree,
    Bitmap,
    /// A BITMAP over the items of a list column (`array_has_any` and kin).
    LabelList,
    /// Value ranges per zone of rows.
    ZoneMap,
    /// A Bloom filter of the values per zone of rows.
    BloomFilter,
    /// The rows holding each trigram of a string column (LIKE, `contains`).
    NGram,
}

impl Kind {
    pub fn of(segment: &IndexSegment) -> Option<Kind> {
        Self::named(&segment.kind)
    }

    pub fn of_metadata(m: &IndexMetadata) -> Option<Kind> {
        Self::named(&kind_of(m.index_details.as_ref()?))
    }

    fn named(kind: &str) -> Option<Kind> {
        match kind {
            "BTree" => Some(Kind::BTree),
            "Bitmap" => Some(Kind::Bitmap),
            "LabelList" => Some(Kind::LabelList),
            "ZoneMap" => Some(Kind::ZoneMap),
            "BloomFilter" => Some(Kind::BloomFilter),
            "NGram" => Some(Kind::NGram),
            _ => None,
        }
    }

    /// The type URL of its details, as pylance writes them (no fields).
    pub fn type_url(self) -> &'static str {
        match self {
            Kind::BTree => "/lance.table.BTreeIndexDetails",
            Kind::Bitmap => "/lance.table.BitmapIndexDetails",
            Kind::LabelList => "/lance.table.LabelListIndexDetails",
            Kind::ZoneMap => "/lance.table.ZoneMapIndexDetails",
            Kind::BloomFilter => "/lance.index.pb.BloomFilterIndexDetails",
            Kind::NGram => "/lance.table.NGramIndexDetails",
        }
    }

    /// Whether a segment of this kind on a table with stable row ids holds row ids (else
    /// row addresses): BITMAP, LABEL_LIST and NGRAM do, BTREE before its version 1,
    /// zones (ZONEMAP, BLOOMFILTER) never.
    pub fn holds_row_ids(self, index_version: i32) -> bool {
        match self {
            Kind::Bitmap | Kind::LabelList | Kind::NGram => true,
            Kind::BTree => index_version < 1,
            Kind::ZoneMap | Kind::BloomFilter => false,
        }
    }

    /// The kind a user names (`create_scalar_index(col, "BTREE")`), any case.
    pub fn from_user(name: &str) -> Option<Kind> {
        match name.to_ascii_uppercase().as_str() {
            "BTREE" => Some(Kind::BTree),
            "BITMAP" => Some(Kind::Bitmap),
            // pylance's names for it: the index type and the plug-in.
            "LABEL_LIST" | "LABELLIST" => Some(Kind::LabelList),
            "ZONEMAP" => Some(Kind::ZoneMap),
            "BLOOMFILTER" => Some(Kind::BloomFilter),
            "NGRAM" => Some(Kind::NGram),
            _ => None,
        }
    }
}

/// The columns of an index file's rows, each checked for its type; errors name the file
/// (`shown`).
pub(crate) struct FileColumns<'a> {
    pub batch: &'a arrow_array::RecordBatch,
    pub shown: &'a str,
}

impl FileColumns<'_> {
    pub fn any(&self, name: &str) -> Result<arrow_array::ArrayRef> {
        self.batch
            .column_by_name(name)
            .cloned()
            .ok_or_else(|| crate::error::Error::corrupt(self.shown, format!("no '{name}' column")))
    }

    fn typed<T: Clone + 'static>(&self, name: &str, what: &str) -> Result<T> {
        let c = self.any(name)?;
        c.as_any().downcast_ref::<T>().cloned().ok_or_else(|| {
            crate::error::Error::corrupt(
                self.shown,
                format!("'{name}' is {}, not {what}", c.data_type()),
            )
        })
    }

    pub fn primitive<T: arrow_array::ArrowPrimitiveType>(
        &self,
        name: &str,
    ) -> Result<arrow_array::PrimitiveArray<T>> {
        self.typed(name, &T::DATA_TYPE.to_string())
    }

    pub fn binary(&self, name: &str) -> Result<arrow_array::BinaryArray> {
        self.typed(name, "binary")
    }

    pub fn boolean(&self, name: &str) -> Result<arrow_array::BooleanArray> {
        self.typed(name, "boolean")
    }
}

/// An index file read whole, as a loader gets it: the opened file (for its schema
/// metadata and global buffers), its rows, and its path for errors.
pub(crate) struct WholeFile {
    pub file: std::sync::Arc<crate::dataset::Dataset>,
    pub batch: arrow_array::RecordBatch,
    pub shown: String,
}

impl WholeFile {
    pub fn columns(&self) -> FileColumns<'_> {
        FileColumns {
            batch: &self.batch,
            shown: &self.shown,
        }
    }

    pub fn metadata(&self) -> &arrow_schema::Metadata {
        self.file.arrow_schema.metadata()
    }
}

/// Index file `name` of `segment` read whole and made into a `T` by `parse`, once per
/// session: later loads are answered from its index cache (the entry sized by the rows
/// read).
pub(crate) async fn load_whole<T, F, Fut>(
    ds: &crate::dataset::Dataset,
    segment: &IndexSegment,
    name: &str,
    parse: F,
) -> Result<std::sync::Arc<T>>
where
    T: std::any::Any + Send + Sync,
    F: FnOnce(WholeFile) -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let dir = segment_dir(ds, segment)?;
    ds.session()
        .index
        .get_or_load(format!("{dir}/{name}"), || async {
            let file = crate::file_table::open(&dir, name, ds.storage_options()).await?;
            let file = std::sync::Arc::new(file);
            let batch = crate::file_table::read_all(file.clone()).await?;
            let bytes = batch.get_array_memory_size();
            let shown = format!("{dir}/{name}");
            Ok((parse(WholeFile { file, batch, shown }).await?, bytes))
        })
        .await
}

/// The directory holding a segment's files.
pub(crate) fn segment_dir(ds: &crate::dataset::Dataset, segment: &IndexSegment) -> Result<String> {
    ds.index_dir(&segment.uuid, segment.base_id)
}

impl IndexSegment {
    /// The recorded fragments that are still among `fragments` (a version's).
    pub fn live_fragments(&self, fragments: &[DataFragment]) -> RoaringBitmap {
        let live: RoaringBitmap = fragments.iter().map(|f| f.id as u32).collect();
        match &self.fragments {
            Some(f) => f & live,
            None => RoaringBitmap::new(),
        }
    }
}

/// The index segments of manifest `m` (read from the manifest file `bytes`, named
/// `name` in errors), in the order it lists them.
pub fn segments(m: &Manifest, bytes: &Bytes, name: &str) -> Result<Vec<IndexSegment>> {
    let Some(section) = crate::table::manifest::index_section(m, bytes, name)? else {
        return Ok(vec![]);
    };
    section
        .indices
        .iter()
        .map(|m| segment(m).map_err(|e| e.in_file(name)))
        .collect()
}

pub(crate) fn segment(m: &IndexMetadata) -> Result<IndexSegment> {
    let uuid = m
        .uuid
        .as_ref()
        .and_then(|u| uuid::Uuid::from_slice(&u.uuid).ok())
        .ok_or_else(|| crate::error::corrupt(format!("index '{}' has no valid uuid", m.name)))?;
    let fragments = match m.fragment_bitmap.is_empty() {
        true => None,
        false => Some(
            RoaringBitmap::deserialize_from(&m.fragment_bitmap[..]).map_err(|e| {
                crate::error::corrupt(format!("index '{}': fragment bitmap: {e}", m.name))
            })?,
        ),
    };
    let (type_url, kind) = match &m.index_details {
        Some(any) => (any.type_url.clone(), kind_of(any)),
        None => (String::new(), "Unknown".to_string()),
    };
    Ok(IndexSegment {
        name: m.name.clone(),
        uuid: uuid.hyphenated().to_string(),
        fields: m.fields.clone(),
        dataset_version: m.dataset_version,
        fragments,
        kind,
        type_url,
        index_version: m.index_version.unwrap_or(0),
        created_at_ms: m.created_at,
        base_id: m.base_id,
        files: m
            .files
            .iter()
            .map(|f| (f.path.clone(), f.size_bytes))
            .collect(),
    })
}

/// The kind pylance names an index by: from the details' message name for scalar
/// indices ("/lance.table.BTreeIndexDetails" is "BTree"), from the details' contents for
/// vector indices ("IVF_" + "HNSW_" when graphs are built + the quantization).
fn kind_of(details: &prost_types::Any) -> String {
    let message = details
        .type_url
        .rsplit(['/', '.'])
        .next()
        .unwrap_or_default();
    if message == "VectorIndexDetails" {
        let Ok(v) = crate::proto::index::VectorIndexDetails::decode(details.value.as_slice())
        else {
            return "Vector".into();
        };
        use crate::proto::index::vector_index_details::Compression;
        let quantization = match v.compression {
            Some(Compression::Pq(_)) => "PQ",
            Some(Compression::Sq(_)) => "SQ",
            Some(Compression::Rq(_)) => "RQ",
            Some(Compression::Flat(_)) => "FLAT",
            // Written before the details said how vectors are stored.
            None => return "Vector".into(),
        };
        let graph = if v.hnsw_index_config.is_some() {
            "HNSW_"
        } else {
            ""
        };
        return format!("IVF_{graph}{quantization}");
    }
    match message.strip_suffix("IndexDetails") {
        Some(kind) if !kind.is_empty() => kind.to_string(),
        _ => message.to_string(),
    }
}
