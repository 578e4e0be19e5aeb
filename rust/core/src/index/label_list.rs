//! LABEL_LIST indices: a BITMAP over the items of a list column (`keys` of the item type,
//! one set of rows per distinct item, NULL items under the NULL key), in the same file
//! as a BITMAP, plus the set of rows whose list is NULL, kept as global buffer 1 and
//! named by the schema metadata `lance:label_list_nulls` (index version 1).
//!
//! They answer the list searches: `array_has_any(l, [a, b])` is the union of the sets of
//! the keys equal to `a` or `b`, `array_has_all` the intersection of those of each value,
//! and the NULL lists are where the search is NULL. Keys are matched by running the
//! search itself on one-item lists of them, so that the index compares as a scan does.
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, LargeListArray, ListArray, RecordBatch};
use arrow_array::{UInt32Array, UInt64Array};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, Schema};

use super::bitmap::{read_id_set, write_id_set, Bitmap, LIST_NULLS_KEY};
use futures::future::BoxFuture;
use serde_json::Value;

use super::kind::{BuildParams, IndexFileData, ScalarIndexKind};
use super::remap::AddressMap;
use super::selection::{Found, IdSet};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::expr::{Expr, ListSearch};
use crate::table::index_segments::IndexSegment;

/// The index version whose files keep the NULL lists.
pub const INDEX_VERSION: i32 = 1;

impl Bitmap {
    /// The rows for which list search `condition` on column `name` is TRUE and those for
    /// which it is NULL; None when it is not a list search the index answers (`nulls`:
    /// the NULL rows are needed, which an index without its NULL lists cannot tell).
    pub fn search_lists(&self, name: &str, condition: &Expr, nulls: bool) -> Result<Option<Found>> {
        let Expr::ListHas {
            list,
            values,
            search,
        } = condition
        else {
            return Ok(None);
        };
        // With no values the answer does not depend on the rows (FALSE or TRUE, even
        // for NULL lists); a scan gives it.
        if !matches!(**list, Expr::Column(_)) || values.is_empty() {
            return Ok(None);
        }
        let list_nulls = match &self.list_nulls {
            Some(n) => n.clone(),
            None if !nulls => IdSet::default(),
            None => return Ok(None),
        };
        // One list per key, holding just that key.
        let item = Arc::new(Field::new("item", self.keys.data_type().clone(), true));
        let singles: ArrayRef = Arc::new(ListArray::try_new(
            item.clone(),
            OffsetBuffer::from_lengths(std::iter::repeat_n(1, self.keys.len())),
            self.keys.clone(),
            None,
        )?);
        let schema = Arc::new(Schema::new(vec![Field::new(
            name,
            DataType::List(item),
            true,
        )]));
        let batch = RecordBatch::try_new(schema.clone(), vec![singles])?;
        // All of several values: each looked up alone, and the rows intersected.
        let groups: Vec<(Vec<Expr>, ListSearch)> = match search {
            ListSearch::All => values
                .iter()
                .map(|v| (vec![v.clone()], ListSearch::Any))
                .collect(),
            s => vec![(values.clone(), *s)],
        };
        let mut yes: Option<IdSet> = None;
        for (values, search) in groups {
            let one = Expr::ListHas {
                list: list.clone(),
                values,
                search,
            };
            let Ok(bound) = crate::expr::bind_filter(&one, &schema) else {
                return Ok(None);
            };
            let pass = crate::expr::evaluate(&bound, &batch)?;
            let pass = pass.as_boolean();
            if pass.null_count() > 0 {
                // NULL whatever the list (`array_has(l, NULL)`).
                return Ok(None);
            }
            let mut rows = IdSet::default();
            for k in (0..pass.len()).filter(|&k| pass.value(k)) {
                if self.bitmaps.is_valid(k) {
                    read_id_set(self.bitmaps.value(k), &mut rows).map_err(|e| {
                        Error::corrupt(&self.shown, format!("the rows of key {k}: {e}"))
                    })?;
                }
            }
            yes = Some(match yes {
                None => rows,
                Some(prev) => prev.intersection(&rows),
            });
        }
        Ok(Some(Found {
            yes: yes.unwrap_or_default(),
            nulls: list_nulls,
            exact: true,
        }))
    }
}

/// The items of a list column and the position of each item's list, leaving out the
/// items under NULL lists; and which lists are NULL.
fn flatten(lists: &ArrayRef) -> Result<(ArrayRef, Vec<u32>, Vec<usize>)> {
    let (items, spans): (ArrayRef, Vec<(usize, usize)>) = match lists.data_type() {
        DataType::List(_) => {
            let l: &ListArray = lists.as_list::<i32>();
            let spans = l
                .offsets()
                .windows(2)
                .map(|w| (w[0] as usize, w[1] as usize));
            (l.values().clone(), spans.collect())
        }
        DataType::LargeList(_) => {
            let l: &LargeListArray = lists.as_list::<i64>();
            let spans = l
                .offsets()
                .windows(2)
                .map(|w| (w[0] as usize, w[1] as usize));
            (l.values().clone(), spans.collect())
        }
        other => {
            return Err(Error::invalid(format!(
                "a LABEL_LIST index needs a list column, not {other}"
            )))
        }
    };
    let mut take = Vec::new();
    let mut owner = Vec::new();
    let mut null_lists = Vec::new();
    for (row, &(start, end)) in spans.iter().enumerate() {
        if lists.is_null(row) {
            null_lists.push(row);
            continue;
        }
        for i in start..end {
            take.push(i as u32);
            owner.push(row as u32);
        }
    }
    let items = arrow_select::take::take(&items, &UInt32Array::from(take), None)?;
    Ok((items, owner, null_lists))
}

/// The file of a LABEL_LIST over `lists` (one per row) and the rows' `ids`: a BITMAP of
/// the items, with the set of NULL lists to write as global buffer 1.
pub fn build(lists: &ArrayRef, ids: &UInt64Array) -> Result<(RecordBatch, Vec<u8>)> {
    let (items, owner, null_lists) = flatten(lists)?;
    let item_ids = UInt64Array::from_iter_values(owner.iter().map(|&r| ids.value(r as usize)));
    let mut nulls = IdSet::default();
    nulls.extend(null_lists.iter().map(|&r| ids.value(r)).collect());
    build_from_items(&items, &item_ids, &nulls)
}

/// The file of a LABEL_LIST from its items (one per item of a list, with the list's row
/// id) and the ids of the NULL lists.
pub fn build_from_items(
    items: &ArrayRef,
    item_ids: &UInt64Array,
    nulls: &IdSet,
) -> Result<(RecordBatch, Vec<u8>)> {
    let batch = super::bitmap::build(items, item_ids)?;
    let mut metadata = batch.schema().metadata().clone();
    metadata.insert(LIST_NULLS_KEY.to_string(), "1".to_string());
    let schema = Arc::new(Schema::new_with_metadata(
        batch.schema().fields().clone(),
        metadata,
    ));
    Ok((batch.with_schema(schema)?, write_id_set(nulls)))
}

/// LABEL_LIST, as the registry lists it (`super::registry`): a BITMAP over the items of a
/// list column, with the rows whose list is NULL.
#[derive(Debug)]
pub struct LabelListKind;

impl ScalarIndexKind for LabelListKind {
    fn name(&self) -> &'static str {
        "LabelList"
    }

    /// pylance's names for it: the index type and the plug-in.
    fn user_names(&self) -> &'static [&'static str] {
        &["LABEL_LIST", "LABELLIST"]
    }

    fn type_url(&self) -> &'static str {
        "/lance.table.LabelListIndexDetails"
    }

    fn reads(&self, index_version: i32) -> bool {
        index_version <= INDEX_VERSION
    }

    fn version_written(&self, _stable_row_ids: bool) -> i32 {
        INDEX_VERSION
    }

    fn holds_row_ids(&self, _index_version: i32) -> bool {
        true
    }

    fn keyed_type<'a>(
        &self,
        column: &str,
        data_type: &'a DataType,
    ) -> std::result::Result<&'a DataType, String> {
        match data_type {
            DataType::List(item) | DataType::LargeList(item) => Ok(item.data_type()),
            _ => Err(format!(
                "a LABEL_LIST index needs a list column, and '{column}' is {data_type}"
            )),
        }
    }

    fn build(
        &self,
        values: &ArrayRef,
        ids: &UInt64Array,
        _params: &BuildParams,
    ) -> Result<Vec<IndexFileData>> {
        let (batch, list_nulls) = build(values, ids)?;
        Ok(vec![IndexFileData::with_buffer(
            super::bitmap::FILE,
            batch,
            list_nulls,
        )])
    }

    fn search<'a>(
        &'a self,
        ds: &'a Dataset,
        segment: &'a IndexSegment,
        column: &'a str,
        e: &'a Expr,
        nulls: bool,
    ) -> BoxFuture<'a, Result<Option<Found>>> {
        Box::pin(async move {
            Bitmap::load(ds, segment)
                .await?
                .search_lists(column, e, nulls)
        })
    }

    fn remaps(&self) -> bool {
        true
    }

    fn remap<'a>(
        &'a self,
        ds: &'a Dataset,
        segment: &'a IndexSegment,
        map: &'a AddressMap,
    ) -> BoxFuture<'a, Result<Option<Vec<IndexFileData>>>> {
        Box::pin(async move {
            let index = Bitmap::load(ds, segment).await?;
            let (items, ids) = index.entries()?;
            let (items, ids) = map.apply(&items, &ids)?;
            let nulls = map.map_set(&index.list_nulls().cloned().unwrap_or_default());
            let (batch, nulls) = build_from_items(&items, &ids, &nulls)?;
            Ok(Some(vec![IndexFileData::with_buffer(
                super::bitmap::FILE,
                batch,
                nulls,
            )]))
        })
    }

    fn statistics<'a>(
        &'a self,
        ds: &'a Dataset,
        segment: &'a IndexSegment,
    ) -> BoxFuture<'a, Result<Value>> {
        // The same file as a BITMAP's, described alike.
        super::bitmap::BitmapKind.statistics(ds, segment)
    }
}
