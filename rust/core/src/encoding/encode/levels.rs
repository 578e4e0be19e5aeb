//! Arrow arrays → repetition and definition levels (the inverse of `encoding::levels`).
//!
//! For one leaf column, the path from the top-level field down to the leaf decides the
//! layers; the data decides each layer's kind (whether it has nulls, empty lists), which
//! fixes the definition level numbers. Then the rows are walked from the top: every leaf
//! item gets a level, and so does every null or empty list, or list hidden by a null
//! struct ("specials", which have no value unless they sit below the first list).
use std::sync::Arc;

use arrow_array::{
    new_null_array, Array, ArrayRef, GenericListArray, MapArray, OffsetSizeTrait, StructArray,
    UInt32Array,
};
use arrow_schema::DataType;

use crate::encoding::layout::Layer;
use crate::error::{corrupt, Result};

/// How to go from a top-level array to one leaf: the child index at each struct, or a
/// step into a list's items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    StructChild(usize),
    ListItems,
}

/// A leaf column of one page, ready to encode.
pub struct LeafLevels {
    /// Inner-most first.
    pub layers: Vec<Layer>,
    pub rep: Option<Vec<u16>>,
    pub def: Option<Vec<u16>>,
    /// One value per visible level (null slots hold whatever the array holds there).
    pub values: ArrayRef,
    pub num_rows: usize,
}

impl LeafLevels {
    /// Repetition level of a new row: the number of list layers.
    pub fn max_rep(&self) -> u16 {
        self.layers.iter().filter(|l| l.is_list()).count() as u16
    }

    /// Definition levels at or below this have a value slot.
    pub fn max_visible_def(&self) -> u16 {
        crate::encoding::layout::max_visible_def(&self.layers)
    }
}

/// The list offsets (as usize ranges) and validity of a list or map array.
fn list_parts(a: &dyn Array) -> Result<(Vec<usize>, ArrayRef)> {
    fn parts<O: OffsetSizeTrait>(l: &GenericListArray<O>) -> (Vec<usize>, ArrayRef) {
        (
            l.value_offsets().iter().map(|o| o.as_usize()).collect(),
            l.values().clone(),
        )
    }
    if let Some(l) = a.as_any().downcast_ref::<GenericListArray<i32>>() {
        return Ok(parts(l));
    }
    if let Some(l) = a.as_any().downcast_ref::<GenericListArray<i64>>() {
        return Ok(parts(l));
    }
    if let Some(m) = a.as_any().downcast_ref::<MapArray>() {
        return Ok((
            m.value_offsets().iter().map(|o| *o as usize).collect(),
            Arc::new(m.entries().clone()),
        ));
    }
    Err(corrupt(format!("expected a list, found {}", a.data_type())))
}

fn struct_child(a: &dyn Array, i: usize) -> Result<ArrayRef> {
    let s = a
        .as_any()
        .downcast_ref::<StructArray>()
        .ok_or_else(|| corrupt(format!("expected a struct, found {}", a.data_type())))?;
    Ok(s.column(i).clone())
}

/// One level of the walk: an array position (None for a special) with its levels.
#[derive(Clone, Copy)]
struct Entry {
    index: Option<usize>,
    rep: u16,
    def: u16,
}

/// Compute the levels of the leaf at `steps` below `array` (`num_rows` top-level rows).
pub fn leaf_levels(array: &ArrayRef, steps: &[Step]) -> Result<LeafLevels> {
    let num_rows = array.len();
    // The arrays along the path, outer first (the top-level array, ..., the leaf).
    let mut arrays = vec![array.clone()];
    for s in steps {
        let cur = arrays.last().unwrap();
        let next = match s {
            Step::StructChild(i) => struct_child(cur.as_ref(), *i)?,
            Step::ListItems => list_parts(cur.as_ref())?.1,
        };
        arrays.push(next);
    }
    let is_list = |k: usize| k < steps.len() && steps[k] == Step::ListItems;

    // Layer kinds, outer first (node k is arrays[k]; the leaf is last).
    let mut kinds = Vec::with_capacity(arrays.len());
    // Whether a struct since the last list (or the top) has nulls. A list below one is
    // written as nullable even if it has no nulls of its own, as pylance does: pylance's
    // reader misplaces the struct's null level above a list that has no levels.
    let mut struct_nulls_above = false;
    for (k, a) in arrays.iter().enumerate() {
        let own_nulls = a.null_count() > 0 && !matches!(a.data_type(), DataType::Null);
        if is_list(k) {
            let nulls = own_nulls || struct_nulls_above;
            struct_nulls_above = false;
            let (offsets, _) = list_parts(a.as_ref())?;
            let empty = (0..a.len()).any(|i| a.is_valid(i) && offsets[i] == offsets[i + 1]);
            kinds.push(match (nulls, empty) {
                (false, false) => Layer::AllValidList,
                (true, false) => Layer::NullableList,
                (false, true) => Layer::EmptyableList,
                (true, true) => Layer::NullAndEmptyList,
            });
        } else {
            struct_nulls_above |= own_nulls;
            kinds.push(if own_nulls || matches!(a.data_type(), DataType::Null) {
                Layer::NullableItem
            } else {
                Layer::AllValidItem
            });
        }
    }
    // Definition levels, numbered from the inside: (null level, empty level) per node.
    let mut levels = vec![(0u16, 0u16); kinds.len()];
    let mut base = 0u16;
    for k in (0..kinds.len()).rev() {
        levels[k] = match kinds[k] {
            Layer::AllValidItem | Layer::AllValidList => (0, 0),
            Layer::NullableItem | Layer::NullableList => (base + 1, 0),
            Layer::EmptyableList => (0, base + 1),
            Layer::NullAndEmptyList => (base + 1, base + 2),
        };
        base += kinds[k].def_levels();
    }
    let max_rep = steps.iter().filter(|s| **s == Step::ListItems).count() as u16;
    let layers: Vec<Layer> = kinds.iter().rev().copied().collect();
    let has_def = base > 0;

    if max_rep == 0 {
        // No lists: one level per row, and the leaf array already has one value per row.
        let def = has_def.then(|| {
            (0..num_rows)
                .map(|i| {
                    // The outer-most null wins.
                    for (k, a) in arrays.iter().enumerate() {
                        if levels[k].0 > 0 && a.is_null(i) {
                            return levels[k].0;
                        }
                    }
                    0
                })
                .collect()
        });
        return Ok(LeafLevels {
            layers,
            rep: None,
            def,
            values: arrays.last().unwrap().clone(),
            num_rows,
        });
    }

    // Walk from the top. At each list, its first item keeps the entry's rep; later items
    // start new lists one layer further in (rep = layers inside this list).
    let mut entries: Vec<Entry> = (0..num_rows)
        .map(|i| Entry {
            index: Some(i),
            rep: max_rep,
            def: 0,
        })
        .collect();
    let mut lists_seen = 0u16;
    for (k, a) in arrays.iter().enumerate() {
        let (null_level, empty_level) = levels[k];
        let last = k + 1 == arrays.len();
        if is_list(k) {
            lists_seen += 1;
            let inner_rep = max_rep - lists_seen;
            let (offsets, _) = list_parts(a.as_ref())?;
            let mut next = Vec::with_capacity(entries.len() + offsets.last().copied().unwrap_or(0));
            for e in &entries {
                let Some(i) = e.index else {
                    next.push(*e);
                    continue;
                };
                if null_level > 0 && a.is_null(i) {
                    next.push(Entry {
                        index: None,
                        rep: e.rep,
                        def: null_level,
                    });
                } else if offsets[i] == offsets[i + 1] {
                    next.push(Entry {
                        index: None,
                        rep: e.rep,
                        def: empty_level,
                    });
                } else {
                    for (n, j) in (offsets[i]..offsets[i + 1]).enumerate() {
                        next.push(Entry {
                            index: Some(j),
                            rep: if n == 0 { e.rep } else { inner_rep },
                            def: 0,
                        });
                    }
                }
            }
            entries = next;
        } else if !last && null_level > 0 {
            // A struct: a null one hides its children at its own level.
            for e in entries.iter_mut() {
                if let Some(i) = e.index {
                    if a.is_null(i) {
                        *e = Entry {
                            index: None,
                            rep: e.rep,
                            def: null_level,
                        };
                    }
                }
            }
        } else if last && null_level > 0 {
            for e in entries.iter_mut() {
                if let Some(i) = e.index {
                    if a.is_null(i) {
                        e.def = null_level;
                    }
                }
            }
        }
    }
    // Values: one per visible level (the specials below the first list are visible and
    // take a null slot; the others have none).
    let max_visible: u16 = layers
        .iter()
        .take_while(|l| !l.is_list())
        .map(|l| l.def_levels())
        .sum();
    let leaf = arrays.last().unwrap();
    let indices: UInt32Array = entries
        .iter()
        .filter(|e| e.index.is_some() || e.def <= max_visible)
        .map(|e| e.index.map(|i| i as u32))
        .collect();
    let values = if indices.null_count() == 0
        && indices.len() == leaf.len()
        && indices
            .values()
            .iter()
            .enumerate()
            .all(|(n, &i)| n as u32 == i)
    {
        leaf.clone()
    } else if indices.is_empty() {
        new_null_array(leaf.data_type(), 0)
    } else {
        arrow_select::take::take(leaf.as_ref(), &indices, None)?
    };
    let rep = Some(entries.iter().map(|e| e.rep).collect());
    let def = has_def.then(|| entries.iter().map(|e| e.def).collect());
    Ok(LeafLevels {
        layers,
        rep,
        def,
        values,
        num_rows,
    })
}

#[cfg(test)]
mod tests {
    use arrow_array::builder::{Int32Builder, ListBuilder};

    use super::*;

    #[test]
    fn a_list_below_a_null_struct_is_written_nullable() {
        // [None (hiding [None]), {l: [2]}]: the hidden null item gets no level, and the
        // list is nullable like the struct above it (what pylance's reader expects).
        let mut b = ListBuilder::new(Int32Builder::new());
        b.append_value([None]);
        b.append_value([Some(2)]);
        let l: ArrayRef = Arc::new(b.finish());
        let field = arrow_schema::Field::new("l", l.data_type().clone(), true);
        let s: ArrayRef = Arc::new(StructArray::new(
            vec![field].into(),
            vec![l],
            Some(arrow_buffer::NullBuffer::from(vec![false, true])),
        ));
        let levels = leaf_levels(&s, &[Step::StructChild(0), Step::ListItems]).unwrap();
        assert_eq!(levels.layers[1], Layer::NullableList);
        assert_eq!(levels.rep.unwrap(), vec![1, 1]);
        assert_eq!(levels.def.unwrap(), vec![3, 0]);
        assert_eq!(levels.values.len(), 1);
    }

    #[test]
    fn list_levels_match_the_format() {
        // [[1, 2], [], None, [3, None], [4]] → rep 1 0 1 1 1 0 1, def 0 0 3 2 0 1 0
        let mut b = ListBuilder::new(Int32Builder::new());
        b.append_value([Some(1), Some(2)]);
        b.append_value([] as [Option<i32>; 0]);
        b.append_null();
        b.append_value([Some(3), None]);
        b.append_value([Some(4)]);
        let a: ArrayRef = Arc::new(b.finish());
        let l = leaf_levels(&a, &[Step::ListItems]).unwrap();
        assert_eq!(l.layers, vec![Layer::NullableItem, Layer::NullAndEmptyList]);
        assert_eq!(l.rep.unwrap(), vec![1, 0, 1, 1, 1, 0, 1]);
        assert_eq!(l.def.unwrap(), vec![0, 0, 3, 2, 0, 1, 0]);
        assert_eq!(l.values.len(), 5);
    }
}
