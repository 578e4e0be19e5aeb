//! What a scalar index kind is to the rest of lance_core: one trait each kind implements
//! (in its own file), listed by the registry (`super::registry`). Everything that
//! differs between kinds — the names pylance gives it, which of its format versions are
//! read, what it answers and how, how it is built from a column, remapped after a
//! compaction and described — is behind this trait, so the query planner (`search`),
//! the writers (`crate::write::index`) and statistics never match on a kind.
use std::fmt::Debug;

use arrow_array::{ArrayRef, RecordBatch, UInt64Array};
use arrow_schema::DataType;
use futures::future::BoxFuture;
use serde_json::Value;

use super::remap::AddressMap;
use super::selection::Found;
use crate::dataset::Dataset;
use crate::error::Result;
use crate::expr::Expr;
use crate::table::index_segments::IndexSegment;

/// One file of an index: its name, its rows and the global buffers it keeps beside them
/// (numbered from 1).
pub struct IndexFileData {
    pub name: String,
    pub batch: RecordBatch,
    pub global_buffers: Vec<Vec<u8>>,
}

impl IndexFileData {
    pub fn new(name: &str, batch: RecordBatch) -> Self {
        IndexFileData {
            name: name.to_string(),
            batch,
            global_buffers: vec![],
        }
    }

    pub fn with_buffer(name: &str, batch: RecordBatch, buffer: Vec<u8>) -> Self {
        IndexFileData {
            global_buffers: vec![buffer],
            ..Self::new(name, batch)
        }
    }
}

/// How a segment is built: rows per page (BTREE) or zone (ZONEMAP, BLOOMFILTER; 0 for
/// kinds without either) and, for Bloom filters, the chance of a false match per zone.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BuildParams {
    pub page_rows: u64,
    pub probability: f64,
}

/// One kind of scalar index.
pub trait ScalarIndexKind: Send + Sync + Debug {
    /// Its name as the manifest's details name it ("BTree" for
    /// `/lance.table.BTreeIndexDetails`): what `IndexSegment::kind` holds.
    fn name(&self) -> &'static str;

    /// The names a user gives it (`create_scalar_index(col, "BTREE")`), upper case.
    fn user_names(&self) -> &'static [&'static str];

    /// The type URL of its details, as pylance writes them.
    fn type_url(&self) -> &'static str;

    /// Whether lance_core reads segments in this version of the kind's format.
    fn reads(&self, index_version: i32) -> bool {
        index_version == 0
    }

    /// The version of the kind's format a new segment is written in.
    fn version_written(&self, _stable_row_ids: bool) -> i32 {
        0
    }

    /// Whether a segment in `index_version` on a table with stable row ids holds row ids
    /// (else row addresses).
    fn holds_row_ids(&self, index_version: i32) -> bool;

    /// The type of the values an index of this kind on `column` (of type `data_type`)
    /// keys (the items of a list, for LABEL_LIST), or why it cannot be built on it.
    fn keyed_type<'a>(
        &self,
        _column: &str,
        data_type: &'a DataType,
    ) -> std::result::Result<&'a DataType, String> {
        Ok(data_type)
    }

    /// The name users give `BuildParams::page_rows` (pylance's and lance-spark's option:
    /// "zone_size", "rows_per_zone", ...), None when the kind takes none; and whether it
    /// takes a `probability`.
    fn params_names(&self) -> (Option<&'static str>, bool) {
        (None, false)
    }

    /// What a segment is built with when the user says nothing.
    fn default_params(&self) -> BuildParams {
        BuildParams {
            page_rows: 0,
            probability: 0.0,
        }
    }

    /// What an existing segment was built with (new segments of the same index are
    /// built alike).
    fn params_of<'a>(
        &'a self,
        _ds: &'a Dataset,
        _segment: &'a IndexSegment,
    ) -> BoxFuture<'a, Result<BuildParams>> {
        Box::pin(async move { Ok(self.default_params()) })
    }

    /// The serialized details message of a new segment (empty for most kinds).
    fn details(&self, _data_type: &DataType, _params: &BuildParams) -> Vec<u8> {
        vec![]
    }

    /// The files of a segment over `values` (the column, in row order), each row's id
    /// in `ids` (its address, or stable row id when `holds_row_ids`).
    fn build(
        &self,
        values: &ArrayRef,
        ids: &UInt64Array,
        params: &BuildParams,
    ) -> Result<Vec<IndexFileData>>;

    /// What `segment` tells about condition `e` on `column` (None when it cannot answer
    /// it); `nulls`: where `e` is NULL is wanted too (under a NOT).
    fn search<'a>(
        &'a self,
        ds: &'a Dataset,
        segment: &'a IndexSegment,
        column: &'a str,
        e: &'a Expr,
        nulls: bool,
    ) -> BoxFuture<'a, Result<Option<Found>>>;

    /// Whether a compaction can map the row addresses of a segment to the rows' new
    /// ones (`remap`); else (zones of rows, by default) the segment stops covering the
    /// fragments it rewrites.
    fn remaps(&self) -> bool {
        false
    }

    /// The files of `segment` with every row address mapped by `map` (rows gone left
    /// out), after a compaction; None when the kind cannot be remapped (`remaps`).
    fn remap<'a>(
        &'a self,
        _ds: &'a Dataset,
        _segment: &'a IndexSegment,
        _map: &'a AddressMap,
    ) -> BoxFuture<'a, Result<Option<Vec<IndexFileData>>>> {
        Box::pin(async { Ok(None) })
    }

    /// The smallest and the largest value of each page or zone of `segment`, where the
    /// kind keeps them (what `min(x)` and `max(x)` are bounded by: `crate::query::extremes`).
    fn value_bounds<'a>(
        &'a self,
        _ds: &'a Dataset,
        _segment: &'a IndexSegment,
    ) -> BoxFuture<'a, Result<Option<(ArrayRef, ArrayRef)>>> {
        Box::pin(async { Ok(None) })
    }

    /// What `segment`'s files say, as pylance's index statistics show it.
    fn statistics<'a>(
        &'a self,
        ds: &'a Dataset,
        segment: &'a IndexSegment,
    ) -> BoxFuture<'a, Result<Value>>;
}
