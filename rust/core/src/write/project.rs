//! Schema changes that rewrite no data (a `Project` transaction): dropping columns, nested
//! ones too, and renaming them or making them nullable. The manifest's field list is edited
//! in place, so everything else a field carries (encodings, dictionaries, metadata) stays.
use std::collections::HashSet;

use super::commit_schema_change;
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::proto::file::Field;
use crate::table::transaction::Operation;

/// One change to a column, as pylance's alteration dicts: `path` (nested with dots), a new
/// `name`, a new `nullable`, a new `data_type` (a cast; see `column_type`).
#[derive(Clone, Debug, Default)]
pub struct Alteration {
    pub path: String,
    pub name: Option<String>,
    pub nullable: Option<bool>,
    pub data_type: Option<arrow_schema::DataType>,
}

/// The id of the field at `path` (`a.b.c`: child `c` of `b` of top-level `a`).
pub(super) fn field_id(fields: &[Field], ds: &Dataset, path: &str) -> Result<i32> {
    let mut parent = -1;
    let mut found = None;
    for part in path.split('.') {
        found = fields
            .iter()
            .find(|f| f.parent_id == parent && f.name == part);
        match found {
            Some(f) => parent = f.id,
            None => return Err(Error::no_column(ds.uri(), path)),
        }
    }
    found
        .map(|f| f.id)
        .ok_or_else(|| Error::invalid(format!("{}: an empty column path", ds.uri())))
}

/// Field `id` and every field below it.
fn subtree(fields: &[Field], id: i32) -> HashSet<i32> {
    let mut out = HashSet::from([id]);
    // Fields are listed parents first, so one pass in order finds every descendant.
    for f in fields {
        if out.contains(&f.parent_id) {
            out.insert(f.id);
        }
    }
    out
}

/// Drop the columns at `paths`; data files keep their bytes (cleanup removes files no
/// version needs). Dropping every column is refused, as pylance does.
pub async fn drop_columns(ds: &Dataset, paths: &[String]) -> Result<Dataset> {
    let fields = ds.manifest.fields.clone();
    let mut dropped = HashSet::new();
    for p in paths {
        dropped.extend(subtree(&fields, field_id(&fields, ds, p)?));
    }
    let kept: Vec<Field> = fields
        .into_iter()
        .filter(|f| !dropped.contains(&f.id))
        .collect();
    if !kept.iter().any(|f| f.parent_id == -1) {
        return Err(Error::invalid(format!(
            "{}: cannot drop all columns from a dataset",
            ds.uri()
        )));
    }
    let op = Operation::Project {
        fields: kept,
        tightens: false,
    };
    commit_schema_change(ds, op).await
}

/// The alterations' renames and nullability, a metadata-only version (their data types
/// are ignored).
pub(super) async fn rename_only(ds: &Dataset, alterations: &[Alteration]) -> Result<Dataset> {
    let mut fields = ds.manifest.fields.clone();
    let tightens = rename_and_relax(ds, &mut fields, alterations)?;
    let op = Operation::Project { fields, tightens };
    commit_schema_change(ds, op).await
}

/// Apply the alterations' new names and nullability to `fields` (a manifest's field list).
/// Returns whether a column was made non-nullable.
pub(super) fn rename_and_relax(
    ds: &Dataset,
    fields: &mut [Field],
    alterations: &[Alteration],
) -> Result<bool> {
    // Every path names a field of the schema as it was, whatever else is renamed.
    let ids = alterations
        .iter()
        .map(|a| field_id(fields, ds, &a.path))
        .collect::<Result<Vec<_>>>()?;
    let mut tightens = false;
    for (a, id) in alterations.iter().zip(ids) {
        let i = fields.iter().position(|f| f.id == id).expect("found above");
        if let Some(name) = &a.name {
            if name.is_empty() || name.contains('.') {
                return Err(Error::invalid(format!(
                    "{}: invalid column name '{name}' (empty, or with a '.')",
                    ds.uri()
                )));
            }
            let parent = fields[i].parent_id;
            if fields
                .iter()
                .any(|f| f.parent_id == parent && f.id != id && &f.name == name)
            {
                return Err(Error::invalid(format!(
                    "{}: cannot rename {} to {name}: a column of that name exists",
                    ds.uri(),
                    a.path
                )));
            }
            fields[i].name = name.clone();
        }
        if let Some(nullable) = a.nullable {
            tightens |= fields[i].nullable && !nullable;
            fields[i].nullable = nullable;
        }
    }
    Ok(tightens)
}

/// The Project operation that gives `ds` the schema `fields` (ids of `ds`'s fields, new
/// names, nullability and order; see `External::Project`).
pub(super) fn projected(ds: &Dataset, fields: &[Field]) -> Result<Operation> {
    let mut tightens = false;
    let mut out = Vec::with_capacity(fields.len());
    for new in fields {
        let old = ds
            .manifest
            .fields
            .iter()
            .find(|f| f.id == new.id)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "{}: a Project cannot add fields: field '{}' (id {}) is not in the table",
                    ds.uri(),
                    new.name,
                    new.id
                ))
            })?;
        if old.logical_type != new.logical_type || old.parent_id != new.parent_id {
            return Err(Error::invalid(format!(
                "{}: a Project cannot change field {} ('{}', {}) into '{}' ({}) under another \
                 parent or type",
                ds.uri(),
                old.id,
                old.name,
                old.logical_type,
                new.name,
                new.logical_type
            )));
        }
        tightens |= old.nullable && !new.nullable;
        out.push(Field {
            name: new.name.clone(),
            nullable: new.nullable,
            ..old.clone()
        });
    }
    if !out.iter().any(|f| f.parent_id == -1) {
        return Err(Error::invalid(format!(
            "{}: cannot drop all columns from a dataset",
            ds.uri()
        )));
    }
    Ok(Operation::Project {
        fields: out,
        tightens,
    })
}
