//! Scalar indices: loading their files and answering filters from them. What an index is
//! (its segments as the manifest lists them) is `crate::table::index_segments`.
pub mod bitmap;
pub mod bloom;
pub mod btree;
pub mod label_list;
pub mod ngram;
pub mod remap;
pub mod search;
pub mod selection;
pub mod stats;
pub mod zonemap;
mod zones;

use crate::error::Result;
use crate::proto::table::IndexMetadata;
use crate::table::index_segments::kind_of;
use crate::table::index_segments::IndexSegment;

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
