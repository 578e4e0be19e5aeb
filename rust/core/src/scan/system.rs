//! System columns: values a read can return or filter on that no data file holds, made
//! from where each row is and from the fragment's metadata.
//!
//! - `_rowid`: the stable row id, or the row address in tables without stable ids;
//! - `_rowaddr`: `fragment id << 32 | physical row offset`;
//! - `_rowoffset`: the row's position among the table's live rows (fragments in
//!   manifest order), counted before any filter;
//! - `_row_created_at_version`, `_row_last_updated_at_version`: row lineage (see
//!   `table::row_versions`), version 1 where a fragment keeps none.
use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, UInt64Array};
use arrow_schema::{DataType, Field};
use roaring::RoaringBitmap;

use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::proto::table::DataFragment;
use crate::table::row_versions::{Lineage, DEFAULT_VERSION};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SystemColumn {
    RowId,
    RowAddress,
    RowOffset,
    CreatedAt,
    LastUpdatedAt,
}

impl SystemColumn {
    pub const ALL: [SystemColumn; 5] = [
        SystemColumn::RowId,
        SystemColumn::RowAddress,
        SystemColumn::RowOffset,
        SystemColumn::CreatedAt,
        SystemColumn::LastUpdatedAt,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SystemColumn::RowId => super::ROW_ID,
            SystemColumn::RowAddress => super::ROW_ADDRESS,
            SystemColumn::RowOffset => "_rowoffset",
            SystemColumn::CreatedAt => "_row_created_at_version",
            SystemColumn::LastUpdatedAt => "_row_last_updated_at_version",
        }
    }

    /// The system column `name` names in `ds` (a data column of that name wins).
    pub fn named(ds: &Dataset, name: &str) -> Option<SystemColumn> {
        let c = Self::ALL.into_iter().find(|c| c.name() == name)?;
        (!ds.schema.fields.iter().any(|f| f.name == name)).then_some(c)
    }

    pub fn field(self) -> Field {
        Field::new(self.name(), DataType::UInt64, true)
    }
}

/// What making the system columns of one fragment's rows needs, loaded once per
/// fragment.
#[derive(Clone, Debug, Default)]
pub struct FragmentSystem {
    pub fragment_id: u64,
    row_ids: Option<Arc<Vec<u64>>>,
    created: Option<Arc<Vec<u64>>>,
    updated: Option<Arc<Vec<u64>>>,
    /// Live rows of the fragments before this one (for `_rowoffset`).
    offset_base: u64,
    deletions: Option<Arc<RoaringBitmap>>,
    /// Deleted rows read anyway (`include_deleted`): they have no row id or address, and
    /// show NULL there, as in pylance.
    shown_deleted: Option<Arc<RoaringBitmap>>,
}

/// Live rows of the fragments before each fragment of `ds`, in manifest order: what
/// `_rowoffset` counts from. Computed once per read that asks for it.
pub async fn offset_bases(ds: &Dataset) -> Result<Arc<HashMap<u64, u64>>> {
    let mut out = HashMap::with_capacity(ds.fragments().len());
    let mut total = 0u64;
    for f in ds.fragments() {
        out.insert(f.id, total);
        total += ds.fragment_rows(f).await?;
    }
    Ok(Arc::new(out))
}

impl FragmentSystem {
    /// Load what `wanted` needs of `frag`; `bases` must be given when `_rowoffset` is
    /// wanted, and `deletions` are the fragment's (None when it has none or they are
    /// not applied).
    pub async fn load(
        ds: &Dataset,
        frag: &DataFragment,
        wanted: &[SystemColumn],
        bases: Option<&HashMap<u64, u64>>,
        deletions: Option<Arc<RoaringBitmap>>,
    ) -> Result<Self> {
        let has = |c| wanted.contains(&c);
        let physical_rows = ds.physical_rows(frag).await?;
        let row_ids = match has(SystemColumn::RowId) && ds.has_stable_row_ids() {
            true => {
                let ids = ds.row_ids(frag).await?.unwrap_or_default();
                if ids.len() as u64 != physical_rows {
                    return Err(Error::corrupt(
                        ds.uri(),
                        format!(
                            "fragment {} has {} row ids for {physical_rows} rows",
                            frag.id,
                            ids.len()
                        ),
                    ));
                }
                Some(Arc::new(ids))
            }
            false => None,
        };
        let versions = |c, which| async move {
            match has(c) {
                true => Ok::<_, Error>(ds.row_versions(frag, which).await?.map(Arc::new)),
                false => Ok(None),
            }
        };
        let created = versions(SystemColumn::CreatedAt, Lineage::CreatedAt).await?;
        let updated = versions(SystemColumn::LastUpdatedAt, Lineage::LastUpdatedAt).await?;
        let (offset_base, deletions) = match has(SystemColumn::RowOffset) {
            true => {
                let base = bases
                    .and_then(|b| b.get(&frag.id).copied())
                    .ok_or_else(|| {
                        Error::invalid(format!(
                            "{}: fragment {} is not in version {}",
                            ds.uri(),
                            frag.id,
                            ds.version()
                        ))
                    })?;
                let deletions = match deletions {
                    Some(d) => Some(d),
                    None => ds.deletions(frag).await?,
                };
                (base, deletions)
            }
            false => (0, None),
        };
        Ok(FragmentSystem {
            fragment_id: frag.id,
            row_ids,
            created,
            updated,
            offset_base,
            deletions,
            shown_deleted: None,
        })
    }

    /// The same, for a read that returns the deleted rows `deleted` too.
    pub fn showing_deleted(mut self, deleted: Option<Arc<RoaringBitmap>>) -> Self {
        self.shown_deleted = deleted;
        self
    }

    /// The `wanted` columns for the fragment's physical rows `offsets` (ascending or not).
    pub fn columns(&self, wanted: &[SystemColumn], offsets: &[u64]) -> Vec<ArrayRef> {
        wanted.iter().map(|&c| self.column(c, offsets)).collect()
    }

    /// As `columns`, for the physical rows `start..end`.
    pub fn columns_in(&self, wanted: &[SystemColumn], start: u64, end: u64) -> Vec<ArrayRef> {
        if wanted.is_empty() {
            return vec![];
        }
        let offsets: Vec<u64> = (start..end).collect();
        self.columns(wanted, &offsets)
    }

    fn column(&self, c: SystemColumn, offsets: &[u64]) -> ArrayRef {
        let address = |o: u64| (self.fragment_id << 32) | o;
        let per_row = |v: &Option<Arc<Vec<u64>>>, default: &dyn Fn(u64) -> u64| -> UInt64Array {
            match v {
                Some(v) => offsets
                    .iter()
                    .map(|&o| v.get(o as usize).copied().unwrap_or_else(|| default(o)))
                    .collect(),
                None => offsets.iter().map(|&o| default(o)).collect(),
            }
        };
        let deleted = |o: u64| {
            self.shown_deleted
                .as_ref()
                .is_some_and(|d| d.contains(o as u32))
        };
        let unless_deleted = |ids: UInt64Array| -> UInt64Array {
            match &self.shown_deleted {
                None => ids,
                Some(_) => offsets
                    .iter()
                    .zip(ids.values().iter())
                    .map(|(&o, &id)| (!deleted(o)).then_some(id))
                    .collect(),
            }
        };
        Arc::new(match c {
            SystemColumn::RowId => unless_deleted(per_row(&self.row_ids, &address)),
            SystemColumn::RowAddress => {
                unless_deleted(offsets.iter().map(|&o| address(o)).collect())
            }
            SystemColumn::CreatedAt => per_row(&self.created, &|_| DEFAULT_VERSION),
            SystemColumn::LastUpdatedAt => per_row(&self.updated, &|_| DEFAULT_VERSION),
            SystemColumn::RowOffset => offsets
                .iter()
                .map(|&o| {
                    let deleted_before = match (&self.deletions, o) {
                        (Some(d), o) if o > 0 => d.rank(o as u32 - 1),
                        _ => 0,
                    };
                    self.offset_base + o - deleted_before
                })
                .collect::<UInt64Array>(),
        })
    }
}
