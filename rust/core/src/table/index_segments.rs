//! The index segments a manifest lists: each `IndexMetadata` entry of the manifest file's
//! index section (the fields it covers, the fragments it was built over, its kind as a
//! protobuf `Any`, its files under `_indices/<uuid>/`). Several entries with one name are
//! segments of one index, each over its own fragments. Only the description lives here,
//! with the manifest; reading and answering an index is `crate::index` and `crate::vector`.
use bytes::Bytes;
use prost::Message;
use roaring::RoaringBitmap;

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
pub(crate) fn kind_of(details: &prost_types::Any) -> String {
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
