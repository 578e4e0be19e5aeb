//! Scalar indices: loading their files and answering filters from them. What an index is
//! (its segments as the manifest lists them) is `crate::table::index_segments`.
pub mod bitmap;
pub mod bloom;
pub mod btree;
pub mod kind;
pub mod label_list;
pub mod ngram;
pub mod registry;
pub mod remap;
pub mod search;
pub mod selection;
pub mod stats;
pub mod zonemap;
mod zones;

pub use kind::{BuildParams, IndexFileData, ScalarIndexKind};
pub use registry::{kind_from_user, kind_of, kind_of_metadata, Kind, KINDS};

use crate::dataset::Dataset;
use crate::error::Result;
use crate::table::index_segments::IndexSegment;

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

/// The type of top-level column `column` of `ds`, when it has one.
pub(crate) fn column_type(ds: &Dataset, column: &str) -> Option<arrow_schema::DataType> {
    ds.schema.field(column).and_then(|f| f.data_type().ok())
}
