//! Changing a column's type (`alter_columns` with `data_type`): only that column's data is
//! rewritten. Every fragment gets one more data file holding the cast column (inside its
//! parents, when nested), and the fragment's older files mark the column's field ids as
//! tombstones (-2), so their other columns are kept as they are. One `Merge` commit.
use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, GenericListArray, OffsetSizeTrait, RecordBatch, StructArray};
use arrow_schema::{DataType, Field, Schema};
use futures::StreamExt;

use super::columns::{max_field_id, write_columns_into};
use super::project::{rename_and_relax, rename_only};
use super::{commit, Alteration, ReadFrom};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::proto::table::{DataFile, DataFragment};
use crate::scan::{scan, ScanOptions};
use crate::table::schema::{LanceField, LanceSchema};
use crate::table::transaction::{Operation, Staged};

/// The casts pylance allows: within one family (integers, floats, temporal types, strings,
/// binaries, decimals, lists of such), where Arrow can cast. Values that do not fit the new
/// type are still an error, found while the data is rewritten.
pub fn castable(from: &DataType, to: &DataType) -> bool {
    fn same_family(from: &DataType, to: &DataType) -> bool {
        use DataType::*;
        match from {
            f if f.is_integer() => to.is_integer(),
            f if f.is_floating() => to.is_floating(),
            f if f.is_temporal() => to.is_temporal(),
            Boolean => matches!(to, Boolean),
            Utf8 | LargeUtf8 => matches!(to, Utf8 | LargeUtf8),
            Binary | LargeBinary => matches!(to, Binary | LargeBinary),
            Decimal128(..) | Decimal256(..) => matches!(to, Decimal128(..) | Decimal256(..)),
            List(a) | LargeList(a) | FixedSizeList(a, _) => match to {
                List(b) | LargeList(b) | FixedSizeList(b, _) => {
                    same_family(a.data_type(), b.data_type())
                }
                _ => false,
            },
            _ => false,
        }
    }
    same_family(from, to) && arrow_cast::can_cast_types(from, to)
}

/// The fields from the top-level column down to the one at `path` (dot-separated child
/// names; a list's child is named, usually `item`). Only structs and lists may be crossed.
fn resolve<'a>(ds: &Dataset, schema: &'a LanceSchema, path: &str) -> Result<Vec<&'a LanceField>> {
    let missing = || Error::no_column(ds.uri(), path);
    let mut parts = path.split('.');
    let top = schema
        .field(parts.next().unwrap_or_default())
        .ok_or_else(missing)?;
    let mut chain = vec![top];
    for part in parts {
        let parent = *chain.last().unwrap();
        let crossable = matches!(
            parent.logical_type.as_str(),
            "struct" | "list" | "list.struct" | "large_list" | "large_list.struct"
        );
        if !crossable || parent.is_packed_struct() {
            return Err(Error::unsupported(
                ds.uri(),
                format!(
                    "changing the type of {path}: {} is a {} column",
                    parent.name, parent.logical_type
                ),
            ));
        }
        let child = parent
            .children
            .iter()
            .find(|c| c.name == part)
            .ok_or_else(missing)?;
        chain.push(child);
    }
    Ok(chain)
}

/// Field ids, depth-first.
fn ids(f: &LanceField, out: &mut Vec<i32>) {
    out.push(f.id);
    for c in &f.children {
        ids(c, out);
    }
}

/// Number the new field's nodes with the old field's ids (depth-first) while they last, then
/// with fresh ones: every old id is a tombstone in the older files, so any of them may
/// name new data.
fn renumber(f: &mut LanceField, old: &mut std::vec::IntoIter<i32>, fresh: &mut i32) {
    f.id = old.next().unwrap_or_else(|| {
        *fresh += 1;
        *fresh
    });
    for c in &mut f.children {
        renumber(c, old, fresh);
    }
}

/// `chain`'s top field with only the children on the way down to `changed`, which replaces
/// the last field of the chain.
fn pruned(chain: &[&LanceField], changed: &LanceField) -> LanceField {
    match chain {
        [] | [_] => changed.clone(),
        [top, rest @ ..] => LanceField {
            children: vec![pruned(rest, changed)],
            ..(*top).clone()
        },
    }
}

/// `schema` with the field of id `id` replaced by `by`.
fn replaced(fields: &mut [LanceField], id: i32, by: &LanceField) -> bool {
    for f in fields {
        if f.id == id {
            *f = by.clone();
            return true;
        }
        if replaced(&mut f.children, id, by) {
            return true;
        }
    }
    false
}

/// `array` (of the chain's top field) reduced to the path down the chain, the last field's
/// values cast to `to`. Parents keep their validity and offsets.
fn prune_and_cast(
    array: &ArrayRef,
    chain: &[&LanceField],
    to: &DataType,
    path: &str,
) -> Result<ArrayRef> {
    let Some(next) = chain.get(1) else {
        let opts = arrow_cast::CastOptions {
            safe: false,
            ..Default::default()
        };
        return arrow_cast::cast_with_options(array, to, &opts).map_err(|e| {
            Error::invalid(format!(
                "column {path}: its values cannot all be cast to {to}: {e}"
            ))
        });
    };
    let rest = &chain[1..];
    let child_field = |child: &ArrayRef| {
        Arc::new(Field::new(
            &next.name,
            child.data_type().clone(),
            next.nullable,
        ))
    };
    fn list<O: OffsetSizeTrait>(
        a: &ArrayRef,
        cast: impl Fn(&ArrayRef) -> Result<ArrayRef>,
        field: impl Fn(&ArrayRef) -> Arc<Field>,
    ) -> Result<ArrayRef> {
        let l = a.as_any().downcast_ref::<GenericListArray<O>>().unwrap();
        let values = cast(l.values())?;
        Ok(Arc::new(GenericListArray::<O>::try_new(
            field(&values),
            l.offsets().clone(),
            values,
            l.nulls().cloned(),
        )?))
    }
    let cast = |child: &ArrayRef| prune_and_cast(child, rest, to, path);
    match array.data_type() {
        DataType::Struct(fields) => {
            let s = array.as_any().downcast_ref::<StructArray>().unwrap();
            let i = fields
                .iter()
                .position(|f| f.name() == &next.name)
                .ok_or_else(|| {
                    Error::invalid(format!("column {path}: {} is missing", next.name))
                })?;
            let child = cast(s.column(i))?;
            Ok(Arc::new(StructArray::try_new(
                vec![child_field(&child)].into(),
                vec![child],
                s.nulls().cloned(),
            )?))
        }
        DataType::List(_) => list::<i32>(array, cast, child_field),
        DataType::LargeList(_) => list::<i64>(array, cast, child_field),
        other => Err(Error::invalid(format!(
            "column {path}: cannot descend into {other}"
        ))),
    }
}

/// One column's type change, planned against the read version.
struct Cast {
    path: String,
    /// The fields from the top-level column down to the changed one, as they were.
    chain: Vec<LanceField>,
    to: DataType,
    /// The changed field's ids before (each a tombstone in the older files afterwards).
    old_ids: Vec<i32>,
    /// The changed field, renumbered.
    changed: LanceField,
}

impl Cast {
    /// The schema of the new data files: the top-level column pruned to the changed field.
    fn file_schema(&self) -> LanceSchema {
        let chain: Vec<&LanceField> = self.chain.iter().collect();
        LanceSchema {
            fields: vec![pruned(&chain, &self.changed)],
            metadata: Default::default(),
        }
    }
}

/// Plan the cast of the column at `path` to `to`, numbering fresh ids after `fresh`; None
/// when the type does not change.
fn plan(ds: &Dataset, path: &str, to: &DataType, fresh: &mut i32) -> Result<Option<Cast>> {
    let chain = resolve(ds, &ds.schema, path)?;
    let old = *chain.last().unwrap();
    let from = old.data_type()?;
    if &from == to {
        return Ok(None);
    }
    if !castable(&from, to) {
        return Err(Error::invalid(format!(
            "{}: Cannot cast column \"{path}\" from {from} to {to}",
            ds.uri()
        )));
    }
    // The changed field as a new Arrow field would give it (no old metadata: it described
    // the old type), numbered with the old field's ids.
    let as_arrow = Schema::new(vec![Field::new(&old.name, to.clone(), old.nullable)]);
    let mut changed = LanceSchema::from_arrow(&as_arrow, 0)?.fields.remove(0);
    let mut old_ids = vec![];
    ids(old, &mut old_ids);
    renumber(&mut changed, &mut old_ids.clone().into_iter(), fresh);
    Ok(Some(Cast {
        path: path.to_string(),
        chain: chain.into_iter().cloned().collect(),
        to: to.clone(),
        old_ids,
        changed,
    }))
}

/// Write the cast column of every fragment: one new data file each, in fragment order.
async fn write_cast(
    ds: &Dataset,
    cast: &Cast,
    written: &mut Vec<DataFile>,
    staged: &Staged,
) -> Result<()> {
    let ds_arc = Arc::new(ds.clone());
    let added = cast.file_schema();
    let name = added.fields[0].name.clone();
    for frag in ds.fragments() {
        let options = ScanOptions {
            columns: Some(vec![cast.chain[0].name.clone()]),
            fragment_ids: Some(vec![frag.id]),
            include_deleted: true,
            ..Default::default()
        };
        let s = scan(ds_arc.clone(), options)?;
        let (chain, to, path, name) = (
            cast.chain.clone(),
            cast.to.clone(),
            cast.path.clone(),
            name.clone(),
        );
        let values = s.batches.map(move |b| {
            let b = b?;
            let chain: Vec<&LanceField> = chain.iter().collect();
            let values = prune_and_cast(b.column(0), &chain, &to, &path)?;
            let schema = Arc::new(Schema::new(vec![Field::new(
                &name,
                values.data_type().clone(),
                true,
            )]));
            Ok(RecordBatch::try_new(schema, vec![values])?)
        });
        let f = write_columns_into(ds, frag.id, &added, Box::pin(values), "", staged).await?;
        written.push(f.files.last().expect("write_columns adds a file").clone());
    }
    Ok(())
}

/// Rename columns, change their nullability or their types, in one version. Without a type
/// change no data is rewritten (a `Project`); with one, only the cast columns' data is (a
/// `Merge`). Making a column non-nullable is the caller's to check against the data (it
/// has the scan); here it only marks the commit as one that appends made meanwhile
/// conflict with.
pub async fn alter_columns(ds: &Dataset, alterations: &[Alteration]) -> Result<Dataset> {
    if alterations.iter().any(|a| a.data_type.is_some()) {
        return alter_with_casts(ds, alterations).await;
    }
    rename_only(ds, alterations).await
}

/// `alter_columns` with at least one `data_type`: every cast column is written anew, then
/// the renames and nullability are applied, all in one `Merge` commit.
pub async fn alter_with_casts(ds: &Dataset, alterations: &[Alteration]) -> Result<Dataset> {
    let mut fresh = max_field_id(ds);
    let mut casts = vec![];
    for a in alterations {
        let Some(to) = &a.data_type else { continue };
        if let Some(cast) = plan(ds, &a.path, to, &mut fresh)? {
            let overlaps = casts.iter().any(|c: &Cast| {
                c.old_ids.iter().any(|id| cast.old_ids.contains(id))
                    || c.chain.iter().any(|f| f.id == cast.changed.id)
                    || cast.chain.iter().any(|f| f.id == c.changed.id)
            });
            if overlaps {
                return Err(Error::invalid(format!(
                    "{}: column {} is cast twice in one alteration",
                    ds.uri(),
                    a.path
                )));
            }
            casts.push(cast);
        }
    }
    if casts.is_empty() {
        // No type changes after all: a metadata-only alteration, if any.
        if alterations
            .iter()
            .all(|a| a.name.is_none() && a.nullable.is_none())
        {
            return Ok(ds.clone());
        }
        return rename_only(ds, alterations).await;
    }

    let staged = Staged::new(ds.storage());
    let prepared = async {
        let mut written: Vec<DataFile> = vec![];
        for cast in &casts {
            write_cast(ds, cast, &mut written, &staged).await?;
        }
        cast_fragments(ds, &casts, &written, alterations)
    };
    let (fragments, schema) = staged.guard(prepared).await?;
    let op = Operation::Merge { fragments, schema };
    commit(ReadFrom::Version(ds), op, staged, Default::default()).await
}

/// The fragments and schema after `casts`, whose new data files are `written` (one per
/// fragment, cast after cast), and the renames and nullability changes of `alterations`.
fn cast_fragments(
    ds: &Dataset,
    casts: &[Cast],
    written: &[DataFile],
    alterations: &[Alteration],
) -> Result<(Vec<DataFragment>, LanceSchema)> {
    let mut fragments: Vec<DataFragment> = ds.fragments().to_vec();
    let mut schema = (*ds.schema).clone();
    for (k, cast) in casts.iter().enumerate() {
        replaced(
            &mut schema.fields,
            cast.chain.last().unwrap().id,
            &cast.changed,
        );
        let files = &written[k * fragments.len()..(k + 1) * fragments.len()];
        for (frag, file) in fragments.iter_mut().zip(files) {
            // The older files keep their bytes; the changed ids now live in the new file.
            for d in frag.files.iter_mut() {
                for id in d.fields.iter_mut().filter(|id| cast.old_ids.contains(id)) {
                    *id = -2;
                }
            }
            frag.files.push(file.clone());
        }
    }
    // A file left with no column of the new schema is never read again.
    let kept: HashSet<i32> = schema.field_ids().into_iter().collect();
    for frag in &mut fragments {
        frag.files
            .retain(|d| d.fields.iter().any(|id| kept.contains(id)));
    }
    let mut fields = schema.to_proto();
    rename_and_relax(ds, &mut fields, alterations)?;
    let schema = LanceSchema::from_proto(&fields, &schema.metadata_proto())?;
    Ok((fragments, schema))
}
