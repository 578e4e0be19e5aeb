//! Projection planning: which leaf columns a scan reads, the path from each top-level
//! field down to each leaf, and how leaf arrays are put back together into the
//! requested fields.
use std::ops::Range;
use std::sync::Arc;

use arrow_array::{
    new_null_array, Array, ArrayRef, GenericListArray, MapArray, OffsetSizeTrait, StructArray,
};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, FieldRef, Fields, Schema, SchemaRef};

use crate::encoding::levels::PathStep;
use crate::error::{corrupt, Error, Result};
use crate::table::schema::{LanceField, LanceSchema, EXTENSION_NAME};

/// Conversions applied to a leaf's values after decoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Post {
    None,
    /// JSON columns are stored as JSONB; users get JSON text.
    JsonbToText,
}

/// A leaf column to read: the field id that owns it, and its path from the top level.
#[derive(Clone, Debug)]
pub struct LeafPlan {
    pub field_id: i32,
    pub path: Vec<PathStep>,
    pub post: Post,
    /// Field ids of the lists on the path, outermost first (format 2.0 files keep each
    /// list's offsets in a column of its own).
    pub list_ids: Vec<i32>,
}

/// How to rebuild one requested field from its leaves.
#[derive(Clone, Debug)]
pub enum FieldPlan {
    Leaf {
        leaf: usize,
        field: FieldRef,
        post: Post,
    },
    Struct {
        field: FieldRef,
        children: Vec<FieldPlan>,
        leaves: Range<usize>,
    },
    List {
        field: FieldRef,
        large: bool,
        child: Box<FieldPlan>,
        leaves: Range<usize>,
    },
    Map {
        field: FieldRef,
        sorted: bool,
        entries: Box<FieldPlan>,
        leaves: Range<usize>,
    },
    /// A fixed-size list of structs: its struct's leaves are read with the list's
    /// levels, `dim` entries per row.
    FixedSizeList {
        field: FieldRef,
        dim: i32,
        child: Box<FieldPlan>,
        leaves: Range<usize>,
    },
    /// A field inside structs requested by its dotted name ("s.x"): the top-level struct
    /// is read with only that branch, then the field is taken out of it.
    Nested {
        field: FieldRef,
        top: Box<FieldPlan>,
        /// Structs between the top level and the field.
        depth: usize,
    },
}

#[derive(Clone, Debug)]
pub struct ScanPlan {
    pub fields: Vec<FieldPlan>,
    pub leaves: Vec<LeafPlan>,
    /// The schema of the projected columns (without system columns).
    pub schema: SchemaRef,
    /// The system columns read after them, in this order.
    pub system: Vec<super::system::SystemColumn>,
}

/// Descriptor struct returned for blob columns stored in the v1 layout.
pub fn blob_v1_descriptor() -> DataType {
    DataType::Struct(Fields::from(vec![
        Field::new("position", DataType::UInt64, true),
        Field::new("size", DataType::UInt64, true),
    ]))
}

/// Descriptor struct returned for blob v2 columns.
pub fn blob_v2_descriptor() -> DataType {
    DataType::Struct(Fields::from(vec![
        Field::new("kind", DataType::UInt8, false),
        Field::new("position", DataType::UInt64, false),
        Field::new("size", DataType::UInt64, false),
        Field::new("blob_id", DataType::UInt32, false),
        Field::new("blob_uri", DataType::Utf8, false),
    ]))
}

impl FieldPlan {
    pub fn field(&self) -> &FieldRef {
        match self {
            FieldPlan::Leaf { field, .. }
            | FieldPlan::Struct { field, .. }
            | FieldPlan::List { field, .. }
            | FieldPlan::Map { field, .. }
            | FieldPlan::FixedSizeList { field, .. }
            | FieldPlan::Nested { field, .. } => field,
        }
    }

    pub fn leaves(&self) -> Range<usize> {
        match self {
            FieldPlan::Leaf { leaf, .. } => *leaf..*leaf + 1,
            FieldPlan::Struct { leaves, .. }
            | FieldPlan::List { leaves, .. }
            | FieldPlan::Map { leaves, .. }
            | FieldPlan::FixedSizeList { leaves, .. } => leaves.clone(),
            FieldPlan::Nested { top, .. } => top.leaves(),
        }
    }
}

struct Planner {
    leaves: Vec<LeafPlan>,
    /// Ids of the lists around the field being planned.
    lists: Vec<i32>,
}

fn field_with(f: &LanceField, dt: DataType) -> FieldRef {
    Arc::new(Field::new(&f.name, dt, f.nullable).with_metadata(f.metadata.clone()))
}

impl Planner {
    fn leaf(
        &mut self,
        f: &LanceField,
        path: &[PathStep],
        read_type: DataType,
        out: FieldRef,
        post: Post,
    ) -> FieldPlan {
        let mut p = path.to_vec();
        p.push(PathStep::Leaf(Arc::new(Field::new(
            &f.name, read_type, f.nullable,
        ))));
        self.leaves.push(LeafPlan {
            field_id: f.id,
            path: p,
            post,
            list_ids: self.lists.clone(),
        });
        FieldPlan::Leaf {
            leaf: self.leaves.len() - 1,
            field: out,
            post,
        }
    }

    fn plan(&mut self, f: &LanceField, path: &[PathStep]) -> Result<FieldPlan> {
        let start = self.leaves.len();
        let lt = f.logical_type.as_str();
        if f.is_blob_v1() {
            let dt = blob_v1_descriptor();
            return Ok(self.leaf(f, path, dt.clone(), field_with(f, dt), Post::None));
        }
        if f.is_blob_v2() {
            let dt = blob_v2_descriptor();
            let mut md = f.metadata.clone();
            md.remove(EXTENSION_NAME);
            md.remove("ARROW:extension:metadata");
            // As pylance marks the descriptors it returns.
            for key in ["lance-encoding:blob", "lance-encoding:packed"] {
                md.insert(key.to_string(), "true".to_string());
            }
            let out = Arc::new(Field::new(&f.name, dt.clone(), f.nullable).with_metadata(md));
            return Ok(self.leaf(f, path, dt, out, Post::None));
        }
        if lt == "json" {
            let out = Arc::new(f.to_arrow()?);
            return Ok(self.leaf(f, path, DataType::LargeBinary, out, Post::JsonbToText));
        }
        match lt {
            "struct" if f.is_packed_struct() || f.children.is_empty() => {
                let dt = f.data_type()?;
                Ok(self.leaf(f, path, dt.clone(), field_with(f, dt), Post::None))
            }
            "struct" => {
                let own = field_with(f, f.data_type()?);
                let mut p = path.to_vec();
                p.push(PathStep::Struct(own));
                let children = f
                    .children
                    .iter()
                    .map(|c| self.plan(c, &p))
                    .collect::<Result<Vec<_>>>()?;
                let fields: Fields = children.iter().map(|c| c.field().clone()).collect();
                Ok(FieldPlan::Struct {
                    field: field_with(f, DataType::Struct(fields)),
                    children,
                    leaves: start..self.leaves.len(),
                })
            }
            "list" | "list.struct" | "large_list" | "large_list.struct" | "map" => {
                let large = lt.starts_with("large_");
                let own = field_with(f, f.data_type()?);
                let mut p = path.to_vec();
                p.push(PathStep::List { field: own, large });
                let item = f
                    .children
                    .first()
                    .ok_or_else(|| corrupt(format!("list field '{}' has no item field", f.name)))?;
                self.lists.push(f.id);
                let child = self.plan(item, &p);
                self.lists.pop();
                let child = child?;
                let leaves = start..self.leaves.len();
                if lt == "map" {
                    let field = field_with(f, DataType::Map(child.field().clone(), false));
                    Ok(FieldPlan::Map {
                        field,
                        sorted: false,
                        entries: Box::new(child),
                        leaves,
                    })
                } else {
                    let dt = if large {
                        DataType::LargeList(child.field().clone())
                    } else {
                        DataType::List(child.field().clone())
                    };
                    Ok(FieldPlan::List {
                        field: field_with(f, dt),
                        large,
                        child: Box::new(child),
                        leaves,
                    })
                }
            }
            lt if lt.starts_with("fixed_size_list:struct") => {
                let DataType::FixedSizeList(_, dim) = f.data_type()? else {
                    unreachable!("fixed_size_list types are fixed-size lists")
                };
                let item = f.children.first().ok_or_else(|| {
                    corrupt(format!("fixed-size list '{}' has no item field", f.name))
                })?;
                let mut p = path.to_vec();
                p.push(PathStep::FixedSizeList {
                    field: field_with(f, f.data_type()?),
                    dim,
                });
                let child = self.plan(item, &p)?;
                Ok(FieldPlan::FixedSizeList {
                    field: field_with(f, DataType::FixedSizeList(child.field().clone(), dim)),
                    dim,
                    child: Box::new(child),
                    leaves: start..self.leaves.len(),
                })
            }
            _ => {
                let dt = f.data_type()?;
                Ok(self.leaf(f, path, dt.clone(), Arc::new(f.to_arrow()?), Post::None))
            }
        }
    }
}

impl Planner {
    /// Plan struct `f` holding only the branches that lead to `paths` (field names below
    /// `f`; an empty path is the whole of `f`), its fields in the table's order.
    /// `lenient`: a packed struct or a blob on the way is read whole rather than refused.
    fn plan_subset(
        &mut self,
        f: &LanceField,
        paths: &[&[&str]],
        path: &[PathStep],
        lenient: bool,
    ) -> Result<FieldPlan> {
        if paths.is_empty() || paths.iter().any(|p| p.is_empty()) {
            return self.plan(f, path);
        }
        if f.logical_type != "struct" || f.is_packed_struct() || f.is_blob_v2() {
            if lenient {
                return self.plan(f, path);
            }
            return Err(Error::invalid(format!(
                "'{}' is not a struct, so it has no field '{}'",
                f.name, paths[0][0]
            )));
        }
        if let Some(missing) = paths
            .iter()
            .find(|p| !f.children.iter().any(|c| c.name == p[0]))
        {
            let known: Vec<&str> = f.children.iter().map(|c| c.name.as_str()).collect();
            return Err(Error::invalid(format!(
                "struct '{}' has no field '{}' (fields are {})",
                f.name,
                missing[0],
                known.join(", ")
            )));
        }
        let start = self.leaves.len();
        let mut p = path.to_vec();
        p.push(PathStep::Struct(field_with(f, f.data_type()?)));
        let mut children = Vec::new();
        for child in &f.children {
            let below: Vec<&[&str]> = paths
                .iter()
                .filter(|q| q[0] == child.name)
                .map(|q| &q[1..])
                .collect();
            if !below.is_empty() {
                children.push(self.plan_subset(child, &below, &p, lenient)?);
            }
        }
        let fields: Fields = children.iter().map(|c| c.field().clone()).collect();
        Ok(FieldPlan::Struct {
            field: field_with(f, DataType::Struct(fields)),
            children,
            leaves: start..self.leaves.len(),
        })
    }
}

/// The top-level field a column name reads, and the path below it: the whole field when
/// the name is a top-level column, else a dotted path into structs ("s.x").
fn split_column<'a, 's>(
    schema: &'s LanceSchema,
    name: &'a str,
) -> Result<(&'s LanceField, Vec<&'a str>)> {
    if let Some(f) = schema.field(name) {
        return Ok((f, vec![]));
    }
    let parts: Vec<&str> = name.split('.').collect();
    (parts.len() > 1)
        .then(|| schema.field(parts[0]))
        .flatten()
        .map(|top| (top, parts[1..].to_vec()))
        .ok_or_else(|| {
            let names: Vec<&str> = schema.fields.iter().map(|f| f.name.as_str()).collect();
            Error::invalid(format!(
                "no column named '{name}' (columns are {})",
                names.join(", ")
            ))
        })
}

/// The top-level column that `name` reads (see `split_column`).
pub fn top_column<'s>(schema: &'s LanceSchema, name: &str) -> Result<&'s str> {
    Ok(split_column(schema, name)?.0.name.as_str())
}

/// Plan one column by name, as a column of its own: a field inside structs is read with
/// only its branch, then taken out of them.
fn plan_column(planner: &mut Planner, schema: &LanceSchema, name: &str) -> Result<FieldPlan> {
    let (top, below) = split_column(schema, name)?;
    if below.is_empty() {
        return planner.plan(top, &[]);
    }
    let top = planner.plan_subset(top, &[&below], &[], false)?;
    let mut inner = &top;
    for _ in 0..below.len() {
        let FieldPlan::Struct { children, .. } = inner else {
            unreachable!("branches are structs")
        };
        inner = &children[0];
    }
    let inner = inner.field();
    let field = Arc::new(
        Field::new(name, inner.data_type().clone(), true).with_metadata(inner.metadata().clone()),
    );
    Ok(FieldPlan::Nested {
        field,
        top: Box::new(top),
        depth: below.len(),
    })
}

/// Plan a scan of `columns` (all when None). A dotted name reaches into structs: as a
/// column of its own named by its path (pylance's `columns=["s.x"]`), or with
/// `keep_structs` inside its top-level struct, which then holds only the fields named
/// (Spark's nested column pruning: `s.x` and `s.y.z` read as one column `s`; packed
/// structs and blobs on the way are read whole).
pub fn plan_scan(
    schema: &LanceSchema,
    columns: Option<&[String]>,
    keep_structs: bool,
) -> Result<ScanPlan> {
    let mut planner = Planner {
        leaves: vec![],
        lists: vec![],
    };
    let fields = match columns {
        None => schema
            .fields
            .iter()
            .map(|f| planner.plan(f, &[]))
            .collect::<Result<Vec<_>>>()?,
        Some(cols) if keep_structs => {
            // The paths asked for under each top-level field, in order of first mention.
            let mut groups: Vec<(&LanceField, Vec<Vec<&str>>)> = Vec::new();
            for c in cols {
                let (top, below) = split_column(schema, c)?;
                match groups.iter_mut().find(|(f, _)| f.id == top.id) {
                    Some((_, paths)) => paths.push(below),
                    None => groups.push((top, vec![below])),
                }
            }
            groups
                .iter()
                .map(|(top, paths)| {
                    let paths: Vec<&[&str]> = paths.iter().map(Vec::as_slice).collect();
                    planner.plan_subset(top, &paths, &[], true)
                })
                .collect::<Result<Vec<_>>>()?
        }
        Some(cols) => cols
            .iter()
            .map(|c| plan_column(&mut planner, schema, c))
            .collect::<Result<Vec<_>>>()?,
    };
    let schema = Arc::new(Schema::new_with_metadata(
        fields.iter().map(|f| f.field().clone()).collect::<Vec<_>>(),
        schema.metadata.clone(),
    ));
    Ok(ScanPlan {
        fields,
        leaves: planner.leaves,
        schema,
        system: vec![],
    })
}

/// Rebuild a field from the arrays of its leaves (each shaped like the field, pruned to
/// the path of its leaf), `len` rows. Leaves with no data are filled with nulls.
pub fn assemble(plan: &FieldPlan, arrays: Vec<(usize, ArrayRef)>, len: usize) -> Result<ArrayRef> {
    if arrays.is_empty() {
        return Ok(new_null_array(plan.field().data_type(), len));
    }
    match plan {
        FieldPlan::Leaf { field, post, .. } => {
            let array = arrays.into_iter().next().unwrap().1;
            match post {
                Post::None => Ok(array),
                Post::JsonbToText => crate::scan::json::jsonb_to_text(&array, field),
            }
        }
        FieldPlan::Struct {
            field, children, ..
        } => {
            let DataType::Struct(fields) = field.data_type() else {
                unreachable!()
            };
            let first = as_struct(&arrays[0].1)?;
            let nulls = first.nulls().cloned();
            let mut columns = Vec::with_capacity(children.len());
            for child in children {
                let range = child.leaves();
                let parts = arrays
                    .iter()
                    .filter(|(leaf, _)| range.contains(leaf))
                    .map(|(leaf, a)| Ok((*leaf, as_struct(a)?.column(0).clone())))
                    .collect::<Result<Vec<_>>>()?;
                columns.push(assemble(child, parts, len)?);
            }
            Ok(Arc::new(StructArray::try_new(
                fields.clone(),
                columns,
                nulls,
            )?))
        }
        FieldPlan::Nested { top, depth, .. } => {
            // Take the field out of its structs; a null struct makes it null.
            let mut array = assemble(top, arrays, len)?;
            for _ in 0..*depth {
                let s = as_struct(&array)?;
                let child = s.column(0).clone();
                let nulls = arrow_buffer::NullBuffer::union(s.nulls(), child.nulls());
                array = crate::encoding::values::with_nulls(child, nulls)?;
            }
            Ok(array)
        }
        FieldPlan::List {
            field,
            large: false,
            child,
            ..
        } => rebuild_list::<i32>(field, child, arrays),
        FieldPlan::List {
            field,
            large: true,
            child,
            ..
        } => rebuild_list::<i64>(field, child, arrays),
        FieldPlan::FixedSizeList {
            field, dim, child, ..
        } => {
            // Every leaf carries the list's validity: take it from the first.
            let mut nulls = None;
            let mut parts = Vec::with_capacity(arrays.len());
            for (i, (leaf, a)) in arrays.into_iter().enumerate() {
                let list = a
                    .as_any()
                    .downcast_ref::<arrow_array::FixedSizeListArray>()
                    .ok_or_else(|| {
                        corrupt(format!(
                            "expected fixed-size list data, found {}",
                            a.data_type()
                        ))
                    })?;
                if i == 0 {
                    nulls = list.nulls().cloned();
                }
                parts.push((leaf, list.values().clone()));
            }
            let values = assemble(child, parts, len * *dim as usize)?;
            let DataType::FixedSizeList(item, _) = field.data_type() else {
                unreachable!()
            };
            Ok(Arc::new(arrow_array::FixedSizeListArray::try_new(
                item.clone(),
                *dim,
                values,
                nulls,
            )?))
        }
        FieldPlan::Map {
            field,
            sorted,
            entries,
            ..
        } => {
            let list = rebuild_list::<i32>(field, entries, arrays)?;
            let list = list
                .as_any()
                .downcast_ref::<GenericListArray<i32>>()
                .unwrap();
            let DataType::Map(entries_field, _) = field.data_type() else {
                unreachable!()
            };
            let values = list
                .values()
                .as_any()
                .downcast_ref::<StructArray>()
                .ok_or_else(|| corrupt("map entries are not a struct"))?;
            Ok(Arc::new(MapArray::try_new(
                entries_field.clone(),
                list.offsets().clone(),
                values.clone(),
                list.nulls().cloned(),
                *sorted,
            )?))
        }
    }
}

fn as_struct(a: &ArrayRef) -> Result<&StructArray> {
    a.as_any()
        .downcast_ref::<StructArray>()
        .ok_or_else(|| corrupt(format!("expected struct data, found {}", a.data_type())))
}

/// Each leaf's list array has the same lists (they share the levels); take offsets and
/// validity from the first and the items of every leaf, rebased to start at 0.
/// The items of a list leaf (`values`, under `offsets`) arranged under the offsets of the
/// list's first leaf (`lead`, rebased to 0). Leaves in different data files agree on every
/// live row, but a file written later may hold a deleted row as a null list where an older
/// one kept its items (pylance's data evolution does), and those rows are only dropped
/// after assembly: pad or cut such rows so that every leaf has the same shape.
fn align_items<O: OffsetSizeTrait>(
    lead: &OffsetBuffer<O>,
    offsets: &OffsetBuffer<O>,
    values: ArrayRef,
) -> Result<ArrayRef> {
    let base = offsets[0];
    if lead.len() == offsets.len()
        && lead
            .iter()
            .zip(offsets.iter())
            .all(|(&a, &b)| a == b - base)
    {
        return Ok(values);
    }
    if lead.len() != offsets.len() {
        return Err(corrupt(format!(
            "the leaves of a list column hold {} and {} rows",
            lead.len() - 1,
            offsets.len() - 1
        )));
    }
    let mut indices =
        arrow_array::builder::UInt64Builder::with_capacity(lead[lead.len() - 1].as_usize());
    for (want, have) in lead.windows(2).zip(offsets.windows(2)) {
        let (want, at) = ((want[1] - want[0]).as_usize(), (have[0] - base).as_usize());
        let have = (have[1] - have[0]).as_usize();
        for k in 0..want {
            indices.append_option((k < have).then_some((at + k) as u64));
        }
    }
    Ok(arrow_select::take::take(&values, &indices.finish(), None)?)
}

fn rebuild_list<O: OffsetSizeTrait>(
    field: &FieldRef,
    child: &FieldPlan,
    arrays: Vec<(usize, ArrayRef)>,
) -> Result<ArrayRef> {
    let mut parts = Vec::with_capacity(arrays.len());
    let mut first: Option<(OffsetBuffer<O>, Option<arrow_buffer::NullBuffer>)> = None;
    for (leaf, a) in arrays {
        let list = a
            .as_any()
            .downcast_ref::<GenericListArray<O>>()
            .ok_or_else(|| corrupt(format!("expected list data, found {}", a.data_type())))?;
        let offsets = list.offsets();
        let start = offsets[0].as_usize();
        let end = offsets[offsets.len() - 1].as_usize();
        let values = list.values().slice(start, end - start);
        match &first {
            None => {
                let rebased: Vec<O> = offsets.iter().map(|&o| o - offsets[0]).collect();
                first = Some((OffsetBuffer::new(rebased.into()), list.nulls().cloned()));
                parts.push((leaf, values));
            }
            Some((lead, _)) => parts.push((leaf, align_items(lead, offsets, values)?)),
        }
    }
    let (offsets, nulls) = first.unwrap();
    let items = offsets[offsets.len() - 1].as_usize();
    let values = assemble(child, parts, items)?;
    let item_field = match field.data_type() {
        DataType::List(f) | DataType::LargeList(f) | DataType::Map(f, _) => f.clone(),
        _ => unreachable!(),
    };
    Ok(Arc::new(GenericListArray::<O>::try_new(
        item_field, offsets, values, nulls,
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Int32Array;

    #[test]
    fn list_leaves_from_two_files_agree_after_alignment() {
        // Row 1 is deleted: one file kept its two items, the other holds it as empty.
        let lead = OffsetBuffer::<i32>::new(vec![0, 1, 1, 3].into());
        let other = OffsetBuffer::<i32>::new(vec![5, 6, 8, 10].into());
        let values: ArrayRef = Arc::new(Int32Array::from(vec![10, 11, 12, 13, 14]));
        let aligned = align_items(&lead, &other, values).unwrap();
        let aligned = aligned.as_any().downcast_ref::<Int32Array>().unwrap();
        assert_eq!(
            aligned.iter().collect::<Vec<_>>(),
            [Some(10), Some(13), Some(14)]
        );
        // and the other way round: missing items are padded with nulls
        let values: ArrayRef = Arc::new(Int32Array::from(vec![1, 2, 3]));
        let aligned = align_items(&other, &lead, values).unwrap();
        let aligned = aligned.as_any().downcast_ref::<Int32Array>().unwrap();
        assert_eq!(
            aligned.iter().collect::<Vec<_>>(),
            [Some(1), None, None, Some(2), Some(3)]
        );
        let short = OffsetBuffer::<i32>::new(vec![0, 1].into());
        assert!(align_items(&lead, &short, Arc::new(Int32Array::from(vec![1]))).is_err());
    }
}
