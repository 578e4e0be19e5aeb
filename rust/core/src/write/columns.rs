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
/// `ds`'s schema with the fields of `schema` it lacks (by name) added as new columns: the
/// schema a Merge of columns computed outside commits.
pub fn merged_schema(ds: &Dataset, schema: &Schema) -> Result<LanceSchema> {
    let new: Vec<_> = schema
        .fields()
        .iter()
        .filter(|f| ds.schema.field(f.name()).is_none())
        .cloned()
        .collect();
    Ok(schema_with(ds, &new_columns(ds, &Schema::new(new))?))
}

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
    let mut fragment = ds.fragment_or_err(fragment_id)?.clone();
    let rows = ds.physical_rows(&fragment).await?;
    let version = writable_version(&ds.data_storage_version(), ds.uri())?;
    let target = std::sync::Arc::new(added.to_arrow()?);
    let name = super::new_data_file_name(file_prefix);
    let specs = leaves::for_version(added, version)?;
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

/// New values for existing columns of fragment `fragment_id` (pylance's
/// `LanceFragment.update_columns`): each row of `data` whose `right_on` value equals a
/// fragment row's `left_on` value (a column, or a system column such as `_rowid`) gives
/// that row the values of `data`'s other columns; the other rows keep theirs. The updated
/// columns are written whole for the fragment as one new data file, and the fragment's
/// older files stop serving them. Returns the fragment (not committed; commit it in an
/// `Update` with the ids returned as `fields_modified`) and the updated top-level fields'
/// ids. The new file is the caller's once written.
pub async fn update_columns(
    ds: &Dataset,
    fragment_id: u64,
    data: (arrow_schema::SchemaRef, Vec<RecordBatch>),
    left_on: &str,
    right_on: &str,
) -> Result<(DataFragment, Vec<u32>)> {
    use std::sync::Arc;

    use arrow_array::{Array, ArrayRef};
    use arrow_row::{RowConverter, SortField};

    let uri = ds.uri();
    let data = arrow_select::concat::concat_batches(&data.0, &data.1)?;
    let key = data.column_by_name(right_on).cloned().ok_or_else(|| {
        Error::invalid(format!(
            "{uri}: update_columns: the new data has no join column '{right_on}'"
        ))
    })?;
    let mut names = Vec::new();
    for f in data.schema().fields() {
        let name = f.name();
        if name == right_on {
            continue;
        }
        if crate::scan::system::SystemColumn::named(ds, name).is_some() {
            return Err(Error::invalid(format!(
                "{uri}: update_columns: '{name}' is a metadata column and cannot be updated"
            )));
        }
        if ds.schema.field(name).is_none() {
            return Err(Error::invalid(format!(
                "{uri}: update_columns: column '{name}' does not exist in the dataset"
            )));
        }
        if name == left_on {
            return Err(Error::invalid(format!(
                "{uri}: update_columns: the join column '{name}' cannot be updated"
            )));
        }
        names.push(name.clone());
    }
    if names.is_empty() {
        return Err(Error::invalid(format!(
            "{uri}: update_columns: the new data has no column to update besides '{right_on}'"
        )));
    }
    // Every physical row's current values and key (deleted rows too: the new file must
    // hold a value for each).
    let mut columns = names.clone();
    columns.push(left_on.to_string());
    let options = crate::scan::ScanOptions {
        columns: Some(columns),
        fragment_ids: Some(vec![fragment_id]),
        include_deleted: true,
        ..Default::default()
    };
    ds.fragment_or_err(fragment_id)?;
    let scan = crate::scan::scan(Arc::new(ds.clone()), options)?;
    let schema = scan.schema.clone();
    let batches: Vec<RecordBatch> = futures::TryStreamExt::try_collect(scan.batches).await?;
    let current = arrow_select::concat::concat_batches(&schema, &batches)?;
    let left_key = current.column(names.len()).clone();
    // The new data's keys as the fragment's key type, hashed by their row encoding.
    let key = arrow_cast::cast(&key, left_key.data_type()).map_err(|e| {
        Error::invalid(format!(
            "{uri}: update_columns: join column '{right_on}' ({}) cannot be compared with \
             '{left_on}' ({}): {e}",
            key.data_type(),
            left_key.data_type()
        ))
    })?;
    let converter = RowConverter::new(vec![SortField::new(left_key.data_type().clone())])?;
    let right_rows = converter.convert_columns(std::slice::from_ref(&key))?;
    let mut by_key = std::collections::HashMap::with_capacity(key.len());
    for j in 0..key.len() {
        if key.is_valid(j) {
            by_key.insert(right_rows.row(j), j);
        }
    }
    let left_rows = converter.convert_columns(std::slice::from_ref(&left_key))?;
    let picks: Vec<(usize, usize)> = (0..current.num_rows())
        .map(|i| match left_key.is_valid(i) {
            true => by_key.get(&left_rows.row(i)).map_or((0, i), |&j| (1, j)),
            false => (0, i),
        })
        .collect();
    let mut updated: Vec<ArrayRef> = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let old = current.column(i);
        let new = data.column_by_name(name).expect("checked");
        let new = arrow_cast::cast(new, old.data_type()).map_err(|e| {
            Error::invalid(format!(
                "{uri}: update_columns: column '{name}' ({}) cannot be stored as {}: {e}",
                new.data_type(),
                old.data_type()
            ))
        })?;
        updated.push(arrow_select::interleave::interleave(
            &[old.as_ref(), new.as_ref()],
            &picks,
        )?);
    }
    // The updated fields keep their ids: the new file serves them from now on.
    let subset = LanceSchema {
        fields: names
            .iter()
            .map(|n| ds.schema.field(n).expect("checked").clone())
            .collect(),
        metadata: Default::default(),
    };
    let arrow = Arc::new(subset.to_arrow()?);
    let batch = RecordBatch::try_new(arrow, updated)?;
    let staged = Staged::new(ds.storage());
    let batches = futures::stream::iter([Ok(batch)]);
    let written = write_columns_into(ds, fragment_id, &subset, batches, "", &staged);
    let mut fragment = staged.guard(written).await?;
    staged.keep();
    let new_ids: std::collections::HashSet<i32> = super::leaves::leaves(&subset, true)?
        .iter()
        .map(|l| l.field_id)
        .chain(subset.field_ids())
        .collect();
    let last = fragment.files.len() - 1;
    for file in &mut fragment.files[..last] {
        for id in file.fields.iter_mut().filter(|id| new_ids.contains(id)) {
            *id = -2;
        }
    }
    fragment
        .files
        .retain(|f| f.fields.iter().any(|&id| id >= 0));
    let top: Vec<u32> = subset.fields.iter().map(|f| f.id as u32).collect();
    Ok((fragment, top))
}
