//! Data evolution: new columns for the existing rows of a fragment, written as one more
//! data file beside the fragment's others, so nothing already written is rewritten.
//! Every writer of one change numbers the new fields the same way (after every id the
//! read version has used), so tasks on different machines agree without talking.
use arrow_schema::Schema;
use futures::{Stream, StreamExt};

use super::file::DataFileWriter;
use super::{commit_schema_change, conform, leaves, writable_version};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::proto::table::DataFragment;
use crate::table::schema::LanceSchema;
use crate::table::transaction::{Operation, Staged};
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
    let op = Operation::Project {
        fields,
        tightens: false,
    };
    commit_schema_change(ds, op).await
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
/// `file_prefix` (a job's token, or empty). Once written the file is the caller's.
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
    let staged = Staged::new(ds.storage());
    let written = write_columns_into(ds, fragment_id, added, batches, file_prefix, &staged);
    let fragment = staged.guard(written).await?;
    staged.keep();
    Ok(fragment)
}

/// `write_columns`, staging the new file in `staged`.
pub(super) async fn write_columns_into<S>(
    ds: &Dataset,
    fragment_id: u64,
    added: &LanceSchema,
    batches: S,
    file_prefix: &str,
    staged: &Staged,
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
    let name = format!("{file_prefix}{}.lance", uuid::Uuid::new_v4().simple());
    let specs = leaves::leaves(added, version.minor >= 2)?;
    let mut writer = DataFileWriter::create(staged.storage(), name, version, &specs);
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
    let file = writer.finish(added).await?;
    staged.add_data_file(&file.path);
    fragment.files.push(file);
    Ok(fragment)
}
