//! Repetition and definition levels → Arrow validity bitmaps and list offsets.
//!
//! Every struct, list and leaf on the path from a top-level field down to a leaf column
//! contributes one layer, listed inner-most first. Definition levels count up from the
//! inside: 0 is "valid everywhere", and each nullable (or emptyable) layer takes the next
//! level(s) for "null here" (or "empty here"). Repetition levels count only list layers:
//! `rep = k > 0` starts a new list at the k-th list layer from the inside (and every
//! layer inside it), so `rep == number of lists` starts a new row.
//!
//! Unravelling walks the layers from the inside out, like the encoder in reverse: an item
//! layer yields a validity bitmap over the current items; a list layer yields offsets
//! and validity and collapses the levels to one entry per list for the layers above it.
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, GenericListArray, OffsetSizeTrait, StructArray};
use arrow_buffer::{BooleanBuffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, FieldRef, Fields};

use super::layout::{DecodedPage, Layer};
use crate::error::{corrupt, unsupported, Result};

/// One step on the path from a top-level field to a leaf column.
#[derive(Clone, Debug)]
pub enum PathStep {
    /// A struct (its own field; only the child on the path is kept).
    Struct(FieldRef),
    /// A list, large list or map (read as a list of its entries).
    List { field: FieldRef, large: bool },
    /// A fixed-size list of structs: an item layer whose levels repeat for each of the
    /// `dim` items of a row.
    FixedSizeList { field: FieldRef, dim: i32 },
    /// The leaf column, with the Arrow type its values are read as.
    Leaf(FieldRef),
}

/// Level-walking state across the layers of one page.
struct Unraveler<'a> {
    layers: &'a [Layer],
    next: usize,
    rep: Option<Vec<u16>>,
    def: Option<Vec<u16>>,
    /// For each definition level, how many list layers lie inside the layer that owns it;
    /// an entry belongs to the current layer only if its level is not owned by an outer list.
    levels_to_rep: Vec<u16>,
    def_cmp: u16,
    rep_cmp: u16,
}

impl<'a> Unraveler<'a> {
    fn new(
        layers: &'a [Layer],
        rep: Option<&ScalarBuffer<u16>>,
        def: Option<&ScalarBuffer<u16>>,
    ) -> Self {
        let mut levels_to_rep = vec![0u16];
        let mut rc = 0u16;
        for l in layers {
            match l {
                Layer::AllValidItem => {}
                // No levels of its own, but the layers above it lie outside one more list.
                Layer::AllValidList => rc += 1,
                Layer::NullableItem => levels_to_rep.push(rc),
                Layer::NullableList | Layer::EmptyableList => {
                    rc += 1;
                    levels_to_rep.push(rc);
                }
                Layer::NullAndEmptyList => {
                    rc += 1;
                    levels_to_rep.push(rc);
                    levels_to_rep.push(rc);
                }
            }
        }
        Unraveler {
            layers,
            next: 0,
            rep: rep.map(|r| r.to_vec()),
            def: def.map(|d| d.to_vec()),
            levels_to_rep,
            def_cmp: 0,
            rep_cmp: 0,
        }
    }

    fn layer(&mut self) -> Result<Layer> {
        let l = *self
            .layers
            .get(self.next)
            .ok_or_else(|| corrupt("page has fewer structural layers than its field"))?;
        self.next += 1;
        Ok(l)
    }

    /// The validity of the current items (a leaf or struct layer), expecting `len` items.
    fn item_validity(&mut self, len: usize) -> Result<Option<NullBuffer>> {
        let layer = self.layer()?;
        match layer {
            Layer::AllValidItem => Ok(None),
            Layer::NullableItem => {
                let Some(def) = &self.def else {
                    return Ok(None);
                };
                let cmp = self.def_cmp;
                self.def_cmp += 1;
                let bits = if self.rep_cmp == 0 && self.rep.is_none() {
                    BooleanBuffer::collect_bool(def.len(), |i| def[i] <= cmp)
                } else {
                    let keep = self.keep_mask()?;
                    def.iter()
                        .filter(|&&d| keep[d as usize])
                        .map(|&d| d <= cmp)
                        .collect()
                };
                if bits.len() != len {
                    return Err(corrupt(format!(
                        "{} validity levels for {len} items",
                        bits.len()
                    )));
                }
                Ok(Some(NullBuffer::new(bits)))
            }
            l => Err(corrupt(format!(
                "found a layer of {l} where a struct or value layer belongs"
            ))),
        }
    }

    /// For each definition level, whether entries at that level belong to the current layer.
    fn keep_mask(&self) -> Result<Vec<bool>> {
        let max = self
            .def
            .as_ref()
            .map(|d| d.iter().copied().max().unwrap_or(0))
            .unwrap_or(0) as usize;
        if max >= self.levels_to_rep.len() {
            return Err(corrupt(format!(
                "definition level {max} beyond the page's {} levels",
                self.levels_to_rep.len() - 1
            )));
        }
        Ok(self
            .levels_to_rep
            .iter()
            .map(|&r| r <= self.rep_cmp)
            .collect())
    }

    /// Offsets and validity of a list layer; the levels collapse to one entry per list.
    fn list(&mut self) -> Result<(Vec<i64>, Option<NullBuffer>)> {
        let layer = self.layer()?;
        let valid = self.def_cmp;
        let (null, empty) = match layer {
            Layer::AllValidList => (None, None),
            Layer::NullableList => (Some(valid + 1), None),
            Layer::EmptyableList => (None, Some(valid + 1)),
            Layer::NullAndEmptyList => (Some(valid + 1), Some(valid + 2)),
            l => {
                return Err(corrupt(format!(
                    "found a layer of {l} where a list layer belongs"
                )))
            }
        };
        self.def_cmp += layer.def_levels();
        // Levels of the structs directly above this list also hide its entries; a level
        // past all of them belongs to an outer list.
        let upper_null = valid.max(null.unwrap_or(0)).max(empty.unwrap_or(0));
        let mut max_level = upper_null;
        for l in &self.layers[self.next..] {
            match l {
                Layer::NullableItem => max_level += 1,
                Layer::AllValidItem => {}
                _ => break,
            }
        }
        self.rep_cmp += 1;
        let rep = self
            .rep
            .take()
            .ok_or_else(|| corrupt("list layer in a page without repetition levels"))?;
        let def = self.def.take();
        if def.as_ref().is_some_and(|d| d.len() != rep.len()) {
            return Err(corrupt(format!(
                "{} repetition levels but {} definition levels",
                rep.len(),
                def.map_or(0, |d| d.len())
            )));
        }
        let mut offsets = Vec::with_capacity(rep.len() / 2 + 1);
        let mut validity: Vec<bool> = Vec::with_capacity(rep.len() / 2);
        let mut new_rep = Vec::with_capacity(rep.len() / 2);
        let mut new_def = def.as_ref().map(|_| Vec::with_capacity(rep.len() / 2));
        let mut len = 0i64;
        for (i, &r) in rep.iter().enumerate() {
            let d = def.as_ref().map_or(0, |d| d[i]);
            if r == 0 {
                if i == 0 {
                    return Err(corrupt("levels start in the middle of a list"));
                }
                len += 1;
                continue;
            }
            new_rep.push(r - 1);
            if let Some(nd) = new_def.as_mut() {
                nd.push(d);
            }
            if d == 0 {
                offsets.push(len);
                len += 1;
                validity.push(true);
            } else if d > max_level {
                // Hidden by an outer empty or null list: not a list of this layer.
            } else if Some(d) == null || d > upper_null {
                offsets.push(len);
                validity.push(false);
            } else if Some(d) == empty {
                offsets.push(len);
                validity.push(true);
            } else {
                // A list whose first item is null at an inner layer.
                offsets.push(len);
                len += 1;
                validity.push(true);
            }
        }
        offsets.push(len);
        self.rep = Some(new_rep);
        self.def = new_def;
        let nulls = if validity.iter().all(|v| *v) {
            None
        } else {
            Some(NullBuffer::from(validity))
        };
        Ok((offsets, nulls))
    }
}

/// The pruned field of an array built for a path: the original field with `data_type`.
pub fn with_type(f: &Field, data_type: DataType) -> FieldRef {
    Arc::new(Field::new(f.name(), data_type, f.is_nullable()).with_metadata(f.metadata().clone()))
}

pub fn list_array<O: OffsetSizeTrait>(
    item: FieldRef,
    offsets: &[i64],
    values: ArrayRef,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef> {
    let offs: Vec<O> = offsets
        .iter()
        .map(|&o| {
            O::from_usize(o as usize).ok_or_else(|| corrupt("list offsets overflow a 32-bit list"))
        })
        .collect::<Result<_>>()?;
    Ok(Arc::new(GenericListArray::<O>::try_new(
        item,
        OffsetBuffer::new(offs.into()),
        values,
        nulls,
    )?))
}

/// Every `step`-th bit of `n`.
fn every(n: &NullBuffer, step: usize) -> NullBuffer {
    if step == 1 {
        return n.clone();
    }
    NullBuffer::from_iter((0..n.len() / step).map(|r| n.is_valid(r * step)))
}

/// How many level entries (and page "rows") one top-level row has for a leaf with this
/// path: the product of the dimensions of the fixed-size lists of structs on it.
pub fn items_per_row(path: &[PathStep]) -> u64 {
    path.iter()
        .map(|s| match s {
            PathStep::FixedSizeList { dim, .. } => (*dim).max(0) as u64,
            _ => 1,
        })
        .fold(1u64, |a, d| a.saturating_mul(d))
        .max(1)
}

/// Turn one decoded page of a leaf column into an array for its path: the top-level
/// field with only the structs and lists on the way to this leaf.
pub fn unravel(page: DecodedPage, path: &[PathStep]) -> Result<ArrayRef> {
    if page.layers.len() != path.len() {
        return Err(corrupt(format!(
            "page has {} structural layers but its field has {}",
            page.layers.len(),
            path.len()
        )));
    }
    let mut u = Unraveler::new(&page.layers, page.rep.as_ref(), page.def.as_ref());
    let Some(PathStep::Leaf(leaf)) = path.last() else {
        return Err(corrupt("internal: a column path must end at a leaf"));
    };
    let n = page.values.len();
    let nulls = u.item_validity(n)?;
    let mut array = page.values.into_array(leaf.data_type(), nulls)?;
    let mut field = with_type(leaf, array.data_type().clone());
    // Level entries per array slot: above a fixed-size list of structs every layer
    // still has one entry per item of the list, so its validity is taken every `repeat`.
    let mut repeat = 1usize;
    for step in path[..path.len() - 1].iter().rev() {
        match step {
            PathStep::Struct(f) => {
                let slots = array
                    .len()
                    .checked_mul(repeat)
                    .ok_or_else(|| corrupt("fixed-size lists nested too deep"))?;
                let nulls = u.item_validity(slots)?.map(|n| every(&n, repeat));
                let fields = Fields::from(vec![field.clone()]);
                array = Arc::new(StructArray::try_new(fields.clone(), vec![array], nulls)?);
                field = with_type(f, DataType::Struct(fields));
            }
            PathStep::List { .. } if repeat > 1 => {
                return Err(unsupported(
                    "lists of fixed-size lists of structs (pylance does not write them)",
                ))
            }
            PathStep::List { field: f, large } => {
                let (offsets, nulls) = u.list()?;
                let child_len = *offsets.last().unwrap() as usize;
                if child_len != array.len() {
                    return Err(corrupt(format!(
                        "lists cover {child_len} items but {} were decoded",
                        array.len()
                    )));
                }
                if *large {
                    array = list_array::<i64>(field.clone(), &offsets, array, nulls)?;
                    field = with_type(f, DataType::LargeList(field.clone()));
                } else {
                    array = list_array::<i32>(field.clone(), &offsets, array, nulls)?;
                    field = with_type(f, DataType::List(field.clone()));
                }
            }
            PathStep::FixedSizeList { field: f, dim } => {
                // One level entry per item; a row's items all carry the row's level.
                let dim = usize::try_from(*dim)
                    .ok()
                    .filter(|d| *d > 0)
                    .ok_or_else(|| corrupt(format!("fixed-size lists of {dim} items")))?;
                repeat = repeat
                    .checked_mul(dim)
                    .ok_or_else(|| corrupt("fixed-size lists nested too deep"))?;
                let slots = array
                    .len()
                    .checked_mul(repeat / dim)
                    .ok_or_else(|| corrupt("fixed-size lists nested too deep"))?;
                let nulls = u.item_validity(slots)?.map(|n| every(&n, repeat));
                array = Arc::new(arrow_array::FixedSizeListArray::try_new(
                    field.clone(),
                    dim as i32,
                    array,
                    nulls,
                )?);
                field = with_type(f, DataType::FixedSizeList(field.clone(), dim as i32));
            }
            PathStep::Leaf(_) => {
                return Err(corrupt("internal: a leaf in the middle of a column path"))
            }
        }
    }
    // Pages of leaves inside fixed-size lists count items, not rows.
    let per_row = items_per_row(path);
    if (array.len() as u64).checked_mul(per_row) != Some(page.num_rows) {
        return Err(corrupt(format!(
            "page decoded {} rows, expected {}",
            array.len(),
            page.num_rows / per_row
        )));
    }
    Ok(array)
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int32Type;
    use arrow_array::{Int32Array, ListArray};
    use arrow_schema::Field;

    use super::*;
    use crate::encoding::layout::PageValues;

    fn f(name: &str, dt: DataType) -> FieldRef {
        Arc::new(Field::new(name, dt, true))
    }

    fn page(
        layers: Vec<Layer>,
        rep: Option<Vec<u16>>,
        def: Option<Vec<u16>>,
        values: Vec<i32>,
        rows: u64,
    ) -> DecodedPage {
        DecodedPage {
            num_rows: rows,
            layers,
            rep: rep.map(Into::into),
            def: def.map(Into::into),
            values: PageValues::Array(Arc::new(Int32Array::from(values))),
        }
    }

    fn list_path(item: FieldRef) -> Vec<PathStep> {
        vec![
            PathStep::List {
                field: f("l", DataType::List(item.clone())),
                large: false,
            },
            PathStep::Leaf(item),
        ]
    }

    #[test]
    fn list_with_null_and_empty_lists() {
        // [[1, 2], [], None, [3, None], [4]]
        let p = page(
            vec![Layer::NullableItem, Layer::NullAndEmptyList],
            Some(vec![1, 0, 1, 1, 1, 0, 1]),
            Some(vec![0, 0, 3, 2, 0, 1, 0]),
            vec![1, 2, 3, 0, 4],
            5,
        );
        let a = unravel(p, &list_path(f("item", DataType::Int32))).unwrap();
        let l = a.as_any().downcast_ref::<ListArray>().unwrap();
        assert_eq!(l.value_offsets(), &[0, 2, 2, 2, 4, 5]);
        assert!(l.is_valid(1) && l.is_null(2));
        let items = l.values().as_primitive::<Int32Type>();
        assert_eq!(
            items.iter().collect::<Vec<_>>(),
            vec![Some(1), Some(2), Some(3), None, Some(4)]
        );
    }

    #[test]
    fn struct_around_a_list() {
        // [{l: [1, 2]}, {l: None}, None, {l: []}, {l: [None]}]
        let item = f("item", DataType::Int32);
        let list = f("l", DataType::List(item.clone()));
        let st = f("s", DataType::Struct(vec![list.clone()].into()));
        let path = vec![
            PathStep::Struct(st),
            PathStep::List {
                field: list,
                large: false,
            },
            PathStep::Leaf(item),
        ];
        let p = page(
            vec![
                Layer::NullableItem,
                Layer::NullAndEmptyList,
                Layer::NullableItem,
            ],
            Some(vec![1, 0, 1, 1, 1, 1]),
            Some(vec![0, 0, 2, 4, 3, 1]),
            vec![1, 2, 0],
            5,
        );
        let a = unravel(p, &path).unwrap();
        let s = a.as_struct();
        assert_eq!(
            s.nulls().unwrap().iter().collect::<Vec<_>>(),
            vec![true, true, false, true, true]
        );
        let l = s.column(0).as_list::<i32>();
        assert_eq!(l.value_offsets(), &[0, 2, 2, 2, 2, 3]);
        assert!(l.is_null(1) && l.is_null(2) && l.is_valid(3));
        assert_eq!(
            l.values()
                .as_primitive::<Int32Type>()
                .iter()
                .collect::<Vec<_>>(),
            vec![Some(1), Some(2), None]
        );
    }

    #[test]
    fn null_struct_above_a_list_without_levels() {
        // [None, {l: [2]}]: the list has no null or empty level of its own, so the struct's
        // null level (2) must still be told apart from the item's (1).
        let item = f("item", DataType::Int32);
        let list = f("l", DataType::List(item.clone()));
        let st = f("s", DataType::Struct(vec![list.clone()].into()));
        let path = vec![
            PathStep::Struct(st),
            PathStep::List {
                field: list,
                large: false,
            },
            PathStep::Leaf(item),
        ];
        let p = page(
            vec![
                Layer::NullableItem,
                Layer::AllValidList,
                Layer::NullableItem,
            ],
            Some(vec![1, 1]),
            Some(vec![2, 0]),
            vec![2],
            2,
        );
        let a = unravel(p, &path).unwrap();
        let s = a.as_struct();
        assert!(s.is_null(0) && s.is_valid(1));
        let l = s.column(0).as_list::<i32>();
        assert_eq!(l.value_offsets(), &[0, 0, 1]);
        assert_eq!(l.values().null_count(), 0);
    }

    #[test]
    fn nested_lists() {
        // [[[0, 1], [], [2]], [[3]], [], None, [[None], None]]
        let item = f("item", DataType::Int32);
        let inner = f("item", DataType::List(item.clone()));
        let outer = f("ll", DataType::List(inner.clone()));
        let path = vec![
            PathStep::List {
                field: outer,
                large: false,
            },
            PathStep::List {
                field: inner,
                large: false,
            },
            PathStep::Leaf(item),
        ];
        let p = page(
            vec![
                Layer::NullableItem,
                Layer::NullAndEmptyList,
                Layer::NullAndEmptyList,
            ],
            Some(vec![2, 0, 1, 1, 2, 2, 2, 2, 1]),
            Some(vec![0, 0, 3, 0, 0, 5, 4, 1, 2]),
            vec![0, 1, 2, 3, 0],
            5,
        );
        let a = unravel(p, &path).unwrap();
        let outer = a.as_list::<i32>();
        assert_eq!(outer.value_offsets(), &[0, 3, 4, 4, 4, 6]);
        assert!(outer.is_null(3) && outer.is_valid(2));
        let inner = outer.values().as_list::<i32>();
        assert_eq!(inner.value_offsets(), &[0, 2, 2, 3, 4, 5, 5]);
        assert!(inner.is_null(5) && inner.is_valid(1));
    }

    #[test]
    fn mismatched_levels_are_errors() {
        let p = page(
            vec![Layer::NullableItem],
            None,
            Some(vec![0, 1]),
            vec![1, 2, 3],
            3,
        );
        assert!(unravel(p, &[PathStep::Leaf(f("x", DataType::Int32))])
            .unwrap_err()
            .to_string()
            .contains("validity levels"));
        // A page that starts in the middle of a list.
        let p = page(
            vec![Layer::AllValidItem, Layer::AllValidList],
            Some(vec![0, 1]),
            None,
            vec![1, 2],
            1,
        );
        assert!(unravel(p, &list_path(f("item", DataType::Int32))).is_err());
    }

    #[test]
    fn fewer_definition_than_repetition_levels_is_an_error() {
        // Found by fuzzing: the list walk indexed past the definition levels.
        let p = page(
            vec![Layer::AllValidItem, Layer::NullableList],
            Some(vec![1, 0, 1]),
            Some(vec![0]),
            vec![1, 2],
            2,
        );
        let err = unravel(p, &list_path(f("item", DataType::Int32))).unwrap_err();
        assert!(
            err.to_string().contains("3 repetition levels but 1"),
            "{err}"
        );
    }

    #[test]
    fn fixed_size_lists_of_structs_repeat_levels_per_item() {
        // 4 rows of FSL<struct<a>> (dim 2), every layer nullable: def 1 = a null,
        // 2 = struct item null, 3 = row null (both items of row 1 carry it).
        let a = f("a", DataType::Int32);
        let item = f("item", DataType::Struct(vec![a.clone()].into()));
        let path = vec![
            PathStep::FixedSizeList {
                field: f("f", DataType::FixedSizeList(item.clone(), 2)),
                dim: 2,
            },
            PathStep::Struct(item),
            PathStep::Leaf(a),
        ];
        let layers = vec![Layer::NullableItem; 3];
        let p = page(
            layers.clone(),
            None,
            Some(vec![0, 1, 3, 3, 0, 0, 0, 2]),
            vec![10, 0, 12, 13, 14, 15, 16, 17],
            8,
        );
        let out = unravel(p, &path).unwrap();
        let rows = out.as_fixed_size_list();
        assert_eq!(rows.len(), 4);
        let valid: Vec<bool> = (0..4).map(|r| rows.is_valid(r)).collect();
        assert_eq!(valid, vec![true, false, true, true]);
        let items = rows.values().as_struct();
        let item_valid: Vec<bool> = (0..8).map(|i| items.is_valid(i)).collect();
        assert_eq!(
            item_valid,
            vec![true, true, false, false, true, true, true, false]
        );
        let a: Vec<Option<i32>> = items.column(0).as_primitive::<Int32Type>().iter().collect();
        assert_eq!(&a[..2], &[Some(10), None]);
        assert_eq!(a[4..7], [Some(14), Some(15), Some(16)]);
        // A page whose items do not make whole rows is corrupt.
        let odd = page(layers, None, Some(vec![0, 0, 0]), vec![1, 2, 3], 3);
        assert!(unravel(odd, &path).is_err());
    }
}
