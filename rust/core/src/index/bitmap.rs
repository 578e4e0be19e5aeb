//! BITMAP indices: one row per distinct value of the column (`keys`, NULL among them),
//! with the set of rows holding it (`bitmaps`), in `bitmap_page_lookup.lance`.
//!
//! A condition on the column is run on the keys themselves, so that any condition on
//! that one column is answered exactly as a scan answers it; the rows are the union of
//! the sets of the keys that pass.
//!
//! A set of rows is written as a count (u32) of groups, then per group its high 32 bits
//! (the fragment, for addresses; u32), the size of its part (u32) and the low 32 bits as
//! a portable 32-bit roaring bitmap; a size of 0 means every row of the fragment. All
//! little-endian.
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use roaring::RoaringBitmap;

use futures::future::BoxFuture;
use serde_json::Value;

use super::kind::{BuildParams, IndexFileData, ScalarIndexKind};
use super::remap::AddressMap;
use super::selection::{Found, IdSet};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::table::index_segments::IndexSegment;

pub const FILE: &str = "bitmap_page_lookup.lance";

pub struct Bitmap {
    pub(super) shown: String,
    pub(super) keys: ArrayRef,
    pub(super) bitmaps: BinaryArray,
    /// LABEL_LIST: the rows whose list is NULL (global buffer `LIST_NULLS_KEY` names);
    /// None when the file has none (written before pylance kept them).
    pub(super) list_nulls: Option<IdSet>,
}

/// The schema metadata naming the global buffer of a LABEL_LIST's NULL lists.
pub const LIST_NULLS_KEY: &str = "lance:label_list_nulls";

impl Bitmap {
    pub async fn load(ds: &Dataset, segment: &IndexSegment) -> Result<Arc<Bitmap>> {
        super::load_whole(ds, segment, FILE, |whole| async move {
            let list_nulls = id_set_in_buffer(&whole.file, LIST_NULLS_KEY, &whole.shown).await?;
            let c = whole.columns();
            let (keys, bitmaps) = (c.any("keys")?, c.binary("bitmaps")?);
            Ok(Bitmap {
                shown: whole.shown,
                keys,
                bitmaps,
                list_nulls,
            })
        })
        .await
    }

    /// Each key once per row holding it, with that row's id (for rewriting the index).
    pub fn entries(&self) -> Result<(ArrayRef, arrow_array::UInt64Array)> {
        let (mut keys, mut ids) = (Vec::new(), Vec::new());
        for k in 0..self.keys.len() {
            if !self.bitmaps.is_valid(k) {
                continue;
            }
            let mut set = IdSet::default();
            read_id_set(self.bitmaps.value(k), &mut set)
                .map_err(|e| Error::corrupt(&self.shown, format!("the rows of key {k}: {e}")))?;
            for id in set.iter() {
                keys.push(k as u32);
                ids.push(id);
            }
        }
        let keys =
            arrow_select::take::take(&self.keys, &arrow_array::UInt32Array::from(keys), None)?;
        Ok((keys, arrow_array::UInt64Array::from(ids)))
    }

    /// LABEL_LIST: the rows whose list is NULL, as recorded.
    pub fn list_nulls(&self) -> Option<&IdSet> {
        self.list_nulls.as_ref()
    }

    /// Distinct values (NULL among them).
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn key_type(&self) -> &DataType {
        self.keys.data_type()
    }

    /// The ids of the rows for which `condition` (on column `name`) is TRUE and those
    /// for which it is NULL; None when it cannot be run on the keys.
    pub fn search(&self, name: &str, condition: &Expr) -> Result<Option<Found>> {
        let schema = Arc::new(Schema::new(vec![Field::new(
            name,
            self.keys.data_type().clone(),
            true,
        )]));
        let Ok(bound) = crate::expr::bind_filter(condition, &schema) else {
            return Ok(None);
        };
        let keys = RecordBatch::try_new(schema, vec![self.keys.clone()])?;
        let pass = crate::expr::evaluate_filter(&bound, &keys)?;
        let mut found = Found {
            exact: true,
            ..Default::default()
        };
        for k in 0..pass.len() {
            let into = match pass.is_null(k) {
                true => &mut found.nulls,
                false if pass.value(k) => &mut found.yes,
                false => continue,
            };
            if self.bitmaps.is_valid(k) {
                read_id_set(self.bitmaps.value(k), into).map_err(|e| {
                    Error::corrupt(&self.shown, format!("the rows of key {k}: {e}"))
                })?;
            }
        }
        Ok(Some(found))
    }
}

/// The set of ids kept as the global buffer that schema metadata `key` of index file
/// `file` names (`shown` in errors); None when the file names none.
pub async fn id_set_in_buffer(file: &Dataset, key: &str, shown: &str) -> Result<Option<IdSet>> {
    let Some(k) = file.arrow_schema.metadata().get(key) else {
        return Ok(None);
    };
    let k: usize = k
        .parse()
        .map_err(|_| Error::corrupt(shown, format!("{key} is '{k}', not a number")))?;
    let reader = file.open_file(&file.fragments()[0].files[0], None).await?;
    let mut set = IdSet::default();
    read_id_set(&reader.global_buffer(k).await?, &mut set)
        .map_err(|e| Error::corrupt(shown, format!("the set of rows in global buffer {k}: {e}")))?;
    Ok(Some(set))
}

/// Add the ids of a serialized set to `into`.
pub fn read_id_set(mut bytes: &[u8], into: &mut IdSet) -> std::result::Result<(), String> {
    let u32_at = |bytes: &mut &[u8]| -> std::result::Result<u32, String> {
        let (head, rest) = bytes
            .split_first_chunk::<4>()
            .ok_or("the set is cut short")?;
        *bytes = rest;
        Ok(u32::from_le_bytes(*head))
    };
    let groups = u32_at(&mut bytes)?;
    for _ in 0..groups {
        let high = u32_at(&mut bytes)?;
        let size = u32_at(&mut bytes)? as usize;
        if size == 0 {
            let mut all = RoaringBitmap::new();
            all.insert_range(..);
            into.union_with(high, &all);
            continue;
        }
        if bytes.len() < size {
            return Err("the set is cut short".into());
        }
        let (part, rest) = bytes.split_at(size);
        let low = RoaringBitmap::deserialize_from(part).map_err(|e| e.to_string())?;
        into.union_with(high, &low);
        bytes = rest;
    }
    Ok(())
}

/// A set of ids as BITMAP indices write it.
pub fn write_id_set(ids: &IdSet) -> Vec<u8> {
    let mut out = Vec::new();
    let groups: Vec<_> = ids.0.iter().filter(|(_, b)| !b.is_empty()).collect();
    out.extend_from_slice(&(groups.len() as u32).to_le_bytes());
    for (high, low) in groups {
        out.extend_from_slice(&high.to_le_bytes());
        out.extend_from_slice(&(low.serialized_size() as u32).to_le_bytes());
        low.serialize_into(&mut out).expect("writing to memory");
    }
    out
}

/// The file of a BITMAP over `values` (one per row) and the rows' `ids`: each distinct
/// value (NULL first, then ascending; floats in total order) with the set of its rows.
pub fn build(values: &ArrayRef, ids: &arrow_array::UInt64Array) -> Result<RecordBatch> {
    // Values grouped by their bytes in arrow's row format, whose byte order is the value
    // order wanted (NULL first, floats in total order): one pass to group, then only the
    // distinct values are sorted.
    let converter = arrow_row::RowConverter::new(vec![arrow_row::SortField::new_with_options(
        values.data_type().clone(),
        arrow_schema::SortOptions {
            descending: false,
            nulls_first: true,
        },
    )])?;
    let rows = converter.convert_columns(std::slice::from_ref(values))?;
    /// A distinct value: where it first is, and the ids of its rows.
    struct Group {
        first: u32,
        ids: Vec<u64>,
    }
    let mut groups: std::collections::HashMap<&[u8], Group, foldhash::fast::FixedState> =
        Default::default();
    for i in 0..values.len() {
        groups
            .entry(rows.row(i).data())
            .or_insert_with(|| Group {
                first: i as u32,
                ids: Vec::new(),
            })
            .ids
            .push(ids.value(i));
    }
    let mut groups: Vec<(&[u8], Group)> = groups.into_iter().collect();
    groups.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut firsts: Vec<u32> = Vec::with_capacity(groups.len());
    let mut sets = arrow_array::builder::BinaryBuilder::new();
    for (_, group) in groups {
        firsts.push(group.first);
        let mut set = IdSet::default();
        set.extend(group.ids);
        sets.append_value(write_id_set(&set));
    }
    let keys = arrow_select::take::take(values, &arrow_array::UInt32Array::from(firsts), None)?;
    let metadata: std::collections::HashMap<String, String> = [(
        "lance:index_stats".to_string(),
        format!("{{\"num_bitmaps\":{}}}", keys.len()),
    )]
    .into_iter()
    .collect();
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new_with_metadata(
            vec![
                Field::new("keys", keys.data_type().clone(), true),
                Field::new("bitmaps", DataType::Binary, true),
            ],
            metadata,
        )),
        vec![keys, Arc::new(sets.finish())],
    )?)
}

/// BITMAP, as the registry lists it (`super::registry`).
#[derive(Debug)]
pub struct BitmapKind;

impl ScalarIndexKind for BitmapKind {
    fn name(&self) -> &'static str {
        "Bitmap"
    }

    fn user_names(&self) -> &'static [&'static str] {
        &["BITMAP"]
    }

    fn type_url(&self) -> &'static str {
        "/lance.table.BitmapIndexDetails"
    }

    fn holds_row_ids(&self, _index_version: i32) -> bool {
        true
    }

    fn build(
        &self,
        values: &ArrayRef,
        ids: &arrow_array::UInt64Array,
        _params: &BuildParams,
    ) -> Result<Vec<IndexFileData>> {
        Ok(vec![IndexFileData::new(FILE, build(values, ids)?)])
    }

    fn search<'a>(
        &'a self,
        ds: &'a Dataset,
        segment: &'a IndexSegment,
        column: &'a str,
        e: &'a Expr,
        _nulls: bool,
    ) -> BoxFuture<'a, Result<Option<Found>>> {
        Box::pin(async move { Bitmap::load(ds, segment).await?.search(column, e) })
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
            let (keys, ids) = Bitmap::load(ds, segment).await?.entries()?;
            let (keys, ids) = map.apply(&keys, &ids)?;
            Ok(Some(vec![IndexFileData::new(FILE, build(&keys, &ids)?)]))
        })
    }

    fn statistics<'a>(
        &'a self,
        ds: &'a Dataset,
        segment: &'a IndexSegment,
    ) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            let bitmap = Bitmap::load(ds, segment).await?;
            Ok(serde_json::json!({ "num_bitmaps": bitmap.len() }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_sets_round_trip_and_reject_short_input() {
        let mut ids = IdSet::default();
        for id in [0u64, 7, 1 << 32, (3 << 32) | 99] {
            ids.insert(id);
        }
        let bytes = write_id_set(&ids);
        let mut back = IdSet::default();
        read_id_set(&bytes, &mut back).unwrap();
        assert_eq!(back, ids);
        assert!(read_id_set(&bytes[..bytes.len() - 1], &mut IdSet::default()).is_err());
        // Size 0: the whole group.
        let mut back = IdSet::default();
        read_id_set(&[1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0], &mut back).unwrap();
        assert_eq!(back.0[&5].len(), 1 << 32);
    }
}
