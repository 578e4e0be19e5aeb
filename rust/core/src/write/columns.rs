//! Data evolution: new columns for the existing rows of a fragment, written as one more
//! data file beside the fragment's others, so nothing already written is rewritten.
//! Every writer of one change numbers the new fields the same way (after every id the
//! read version has used), so tasks on different machines agree without talking.
use arrow_schema::Schema;
use futures::{Stream, StreamExt};

use super::file::DataFileWriter;
use super::{conform, leaves, writable_version};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::proto::table::DataFragment;
use crate::table::schema::LanceSchema;
use arrow_array::RecordBatch;

/// The largest field id the dataset has used: its schema's and those its data files
/// still list. A dropped column's id must never be given to a new one, or the new column
/// would read the old column's data.
pub fn max_field_id(ds: &Dataset) -> i32 {
    let in_files = ds
        .fragments()
        .iter()
        .flat_map(|f| f.files.iter())
        .flat_map(|d| d.fields.iter().copied())
        .max()
        .unwrap_or(-1);
    ds.schema.max_field_id().max(in_files)
}

/// Lance fields for the columns of `new`, numbered after every id the dataset has used.
/// A name the dataset already has is an error.
pub fn new_columns(ds: &Dataset, new: &Schema) -> Result<LanceSchema> {
    if new.fields().is_empty() {
        return Err(Error::invalid(format!("{}: no columns to add", ds.uri())));
    }
    for f in new.fields() {
        if ds.schema.field(f.name()).is_some() {
            return Err(Error::invalid(format!(
                "{}: cannot add column '{}': the dataset already has one",
                ds.uri(),
                f.name()
            )));
        }
    }
    let mut added = LanceSchema::from_arrow(new, max_field_id(ds) + 1)?;
    added.metadata.clear();
    Ok(added)
}

/// Add all-null columns `new` without writing data: a schema change only (no data file
/// holds the new field ids, so every row reads as null), as pylance does for columns given
/// as Arrow fields. A non-nullable column cannot start all null.
pub async fn add_null_columns(ds: &Dataset, new: &Schema) -> Result<Dataset> {
    if let Some(f) = new.fields().iter().find(|f| !f.is_nullable()) {
        return Err(Error::invalid(format!(
            "{}: column '{}' is not nullable, so it cannot be added without values",
            ds.uri(),
            f.name()
        )));
    }
    let added = new_columns(ds, new)?;
    let mut fields = ds.manifest.fields.clone();
    fields.extend(added.to_proto());
    let op = crate::table::commit::Operation::Project {
        fields,
        tightens: false,
    };
    super::commit_operation(
        ds.uri(),
        op,
        Some(ds.version()),
        ds.storage_options().clone(),
    )
    .await
}

/// The dataset's schema with the `added` columns at the end.
pub fn schema_with(ds: &Dataset, added: &LanceSchema) -> LanceSchema {
    let mut schema = (*ds.schema).clone();
    schema.fields.extend(added.fields.iter().cloned());
    schema
}

/// Write the `added` columns of fragment `fragment_id`: `batches` hold one value per
/// physical row, deleted rows included, in row order. Returns the fragment with the new
/// data file listed last; commit it with `Operation::Merge`. The file's name starts with
/// `file_prefix` (a job's token, or empty).
pub async fn write_columns<S>(
    ds: &Dataset,
    fragment_id: u64,
    added: &LanceSchema,
    batches: S,
    file_prefix: &str,
) -> Result<DataFragment>
where
    S: Stream<Item = Result<RecordBatch>> + Unpin,
{
    let mut fragment = ds
        .fragment(fragment_id)
        .ok_or_else(|| {
            Error::invalid(format!(
                "{}: version {} has no fragment {fragment_id}",
                ds.uri(),
                ds.version()
            ))
        })?
        .clone();
    let rows = ds.physical_rows(&fragment).await?;
    let version = writable_version(&ds.data_storage_version(), ds.uri())?;
    let target = std::sync::Arc::new(added.to_arrow()?);
    let storage = crate::storage::Storage::open(ds.uri(), ds.storage_options())?;
    let name = format!("{file_prefix}{}.lance", uuid::Uuid::new_v4().simple());
    let specs = leaves::leaves(added, version.minor >= 2)?;
    let mut writer = DataFileWriter::create(&storage, name, version, &specs);
    let mut batches = batches;
    // Rows received, which may be more than were written when there are too many.
    let mut seen = 0u64;
    let written: Result<()> = async {
        while let Some(batch) = batches.next().await {
            let batch = conform(batch?, &target)?;
            seen += batch.num_rows() as u64;
            if seen <= rows {
                writer.write(&batch).await?;
            }
        }
        if seen != rows {
            return Err(Error::invalid(format!(
                "{}: the new columns of fragment {fragment_id} must have one value per row \
                 ({rows}, deleted rows included), got {seen}",
                ds.uri()
            )));
        }
        Ok(())
    }
    .await;
    if let Err(e) = written {
        writer.abort().await;
        return Err(e);
    }
    fragment.files.push(writer.finish(added).await?);
    Ok(fragment)
}

/// Change the type of top-level column `name` to `to` (a cast; values that do not fit are
/// an error): every fragment gets a new data file with the cast column under the same field
/// id, and its older files mark that id as a tombstone (-2), so no other column is
/// rewritten; one `Merge` commit. Columns with children (structs, lists) are not supported.
pub async fn change_column_type(
    ds: &Dataset,
    name: &str,
    to: &arrow_schema::DataType,
) -> Result<Dataset> {
    use std::sync::Arc;

    use crate::scan::{scan, ScanOptions};
    use crate::table::commit::Operation;
    let field = ds.schema.field(name).cloned().ok_or_else(|| {
        Error::invalid(format!(
            "{}: column {name} does not exist in the dataset",
            ds.uri()
        ))
    })?;
    let nested = |dt: &arrow_schema::DataType| dt.is_nested();
    if !field.children.is_empty() || nested(to) {
        return Err(Error::unsupported(
            ds.uri(),
            format!("changing the type of {name} to or from a nested type"),
        ));
    }
    let mut changed = field.clone();
    changed.logical_type = crate::table::schema::logical_type_of(to, None)?;
    let added = LanceSchema {
        fields: vec![changed.clone()],
        metadata: Default::default(),
    };
    let ds_arc = Arc::new(ds.clone());
    let storage = crate::storage::Storage::open(ds.uri(), ds.storage_options())?;
    let mut fragments = Vec::with_capacity(ds.fragments().len());
    let result: Result<()> = async {
        for frag in ds.fragments() {
            let options = ScanOptions {
                columns: Some(vec![name.to_string()]),
                fragment_ids: Some(vec![frag.id]),
                include_deleted: true,
                late_materialization: false,
                ..Default::default()
            };
            let s = scan(ds_arc.clone(), options)?;
            let target = to.clone();
            let column = name.to_string();
            let cast = s.batches.map(move |b| {
                let b = b?;
                let opts = arrow_cast::CastOptions {
                    safe: false,
                    ..Default::default()
                };
                let values =
                    arrow_cast::cast_with_options(b.column(0), &target, &opts).map_err(|e| {
                        Error::invalid(format!(
                            "column {column}: its values cannot all be cast to {target}: {e}"
                        ))
                    })?;
                let schema = Arc::new(Schema::new(vec![arrow_schema::Field::new(
                    &column,
                    target.clone(),
                    true,
                )]));
                Ok(RecordBatch::try_new(schema, vec![values])?)
            });
            let mut f = write_columns(ds, frag.id, &added, Box::pin(cast), "").await?;
            // The older files keep their bytes; the field id now lives in the new file only.
            let last = f.files.len() - 1;
            for file in &mut f.files[..last] {
                for id in file.fields.iter_mut().filter(|id| **id == field.id) {
                    *id = -2;
                }
            }
            fragments.push(f);
        }
        Ok(())
    }
    .await;
    if let Err(e) = result {
        for f in &fragments {
            if let Some(file) = f.files.last() {
                let _ = storage
                    .delete(&storage.path(&format!("data/{}", file.path)))
                    .await;
            }
        }
        return Err(e);
    }
    let mut schema = (*ds.schema).clone();
    if let Some(slot) = schema.fields.iter_mut().find(|f| f.id == field.id) {
        *slot = changed;
    }
    let op = Operation::Merge { fragments, schema };
    super::commit_operation(
        ds.uri(),
        op,
        Some(ds.version()),
        ds.storage_options().clone(),
    )
    .await
}
