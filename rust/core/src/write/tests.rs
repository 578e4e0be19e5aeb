//! Worked examples of every writer, read back through `scan`: small tables whose expected
//! contents after each change are written out by hand.
use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::compact::{compact_files, CompactionOptions};
use super::merge_insert::{merge_insert, MergeInsert, SourceIs::InMemory, WhenMatched};
use super::*;
use crate::table::transaction::Staged;
use crate::test_util::{files, read, sql, uri, write};

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
        Field::new("score", DataType::Float64, true),
    ]))
}

fn rows(ids: std::ops::Range<i64>) -> RecordBatch {
    let names: Vec<Option<String>> = ids
        .clone()
        .map(|i| (i % 5 != 0).then(|| format!("n{i}")))
        .collect();
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from_iter_values(ids.clone())),
            Arc::new(StringArray::from(names)),
            Arc::new(Float64Array::from_iter_values(ids.map(|i| i as f64 / 2.0))),
        ],
    )
    .unwrap()
}

fn ids(b: &RecordBatch) -> Vec<i64> {
    b.column(0).as_primitive::<Int64Type>().values().to_vec()
}

fn scores(b: &RecordBatch) -> Vec<f64> {
    b.column(2).as_primitive::<Float64Type>().values().to_vec()
}

fn names(b: &RecordBatch) -> Vec<Option<String>> {
    b.column(1)
        .as_string::<i32>()
        .iter()
        .map(|s| s.map(str::to_string))
        .collect()
}

#[tokio::test]
async fn create_append_overwrite() {
    let uri = uri();
    let ds = write(&uri, rows(0..10), WriteMode::Create, 4).await;
    assert_eq!(ds.version(), 1);
    // 10 rows at 4 per file: 4 + 4 + 2.
    let sizes: Vec<u64> = ds.fragments().iter().map(|f| f.physical_rows).collect();
    assert_eq!(sizes, vec![4, 4, 2]);
    assert_eq!(ids(&read(&ds).await), (0..10).collect::<Vec<_>>());

    let ds = write(&uri, rows(10..13), WriteMode::Append, 4).await;
    assert_eq!(ds.version(), 2);
    let ids_of_fragments: Vec<u64> = ds.fragments().iter().map(|f| f.id).collect();
    assert_eq!(ids_of_fragments, vec![0, 1, 2, 3]);
    let all = read(&ds).await;
    assert_eq!(ids(&all), (0..13).collect::<Vec<_>>());
    assert_eq!(names(&all)[5], None);
    assert_eq!(names(&all)[6].as_deref(), Some("n6"));

    // Creating over an existing table is refused; overwriting replaces it.
    let opts = WriteOptions::default();
    let b = rows(0..1);
    let again = write_dataset(&uri, b.schema(), futures::stream::iter(vec![Ok(b)]), opts).await;
    assert!(matches!(again, Err(Error::InvalidInput(_))), "{again:?}");
    let ds = write(&uri, rows(100..102), WriteMode::Overwrite, 4).await;
    assert_eq!(ds.version(), 3);
    assert_eq!(ids(&read(&ds).await), vec![100, 101]);
}

#[tokio::test]
async fn append_with_other_columns_is_refused_and_writes_nothing() {
    let uri = uri();
    let ds = write(&uri, rows(0..3), WriteMode::Create, 100).await;
    let before = files(&ds).await;
    let other = Arc::new(Schema::new(vec![Field::new("id", DataType::Utf8, false)]));
    let b =
        RecordBatch::try_new(other.clone(), vec![Arc::new(StringArray::from(vec!["x"]))]).unwrap();
    let opts = WriteOptions {
        mode: WriteMode::Append,
        ..Default::default()
    };
    let r = write_dataset(&uri, other, futures::stream::iter(vec![Ok(b)]), opts).await;
    assert!(matches!(r, Err(Error::SchemaMismatch(_))), "{r:?}");
    assert_eq!(files(&ds).await, before);
}

#[tokio::test]
async fn deletes_merge_with_earlier_deletions() {
    let uri = uri();
    let ds = write(&uri, rows(0..10), WriteMode::Create, 5).await;
    let ds = delete(&ds, &sql("id % 3 = 0"), 0).await.unwrap();
    assert_eq!(ids(&read(&ds).await), vec![1, 2, 4, 5, 7, 8]);
    let ds = delete(&ds, &sql("id = 4 OR id = 8"), 0).await.unwrap();
    assert_eq!(ids(&read(&ds).await), vec![1, 2, 5, 7]);
    // The first fragment (0..5) keeps 1, 2; its deletion file lists 0, 3, 4.
    let first = &ds.fragments()[0];
    assert_eq!(first.deletion_file.as_ref().unwrap().num_deleted_rows, 3);
    // Deleting every row of a fragment removes it from the manifest.
    let ds = delete(&ds, &sql("id < 5"), 0).await.unwrap();
    assert_eq!(ds.fragments().len(), 1);
    assert_eq!(ids(&read(&ds).await), vec![5, 7]);
}

#[tokio::test]
async fn update_moves_changed_rows_to_new_fragments() {
    let uri = uri();
    let ds = write(&uri, rows(0..6), WriteMode::Create, 100).await;
    let updates = vec![("score".to_string(), "score * 10 + 1".to_string())];
    let (ds, n) = update::update(&ds, &updates, Some(&crate::test_util::sql("id >= 4")), 0)
        .await
        .unwrap();
    assert_eq!(n, 2);
    let all = read(&ds).await;
    // Unchanged rows stay where they were; changed ones follow in a new fragment.
    assert_eq!(ids(&all), vec![0, 1, 2, 3, 4, 5]);
    assert_eq!(scores(&all), vec![0.0, 0.5, 1.0, 1.5, 21.0, 26.0]);
    assert_eq!(ds.fragments().len(), 2);
    // A value of the wrong type is refused before anything is written.
    let bad = vec![("id".to_string(), "'text'".to_string())];
    let before = files(&ds).await;
    assert!(update::update(&ds, &bad, None, 0).await.is_err());
    assert_eq!(files(&ds).await, before);
}

fn one_batch(b: RecordBatch) -> super::merge_insert::SourceStream {
    Box::pin(futures::stream::iter(vec![Ok(b)]))
}

#[tokio::test]
async fn merge_insert_updates_matches_and_inserts_the_rest() {
    let uri = uri();
    let ds = write(&uri, rows(0..5), WriteMode::Create, 100).await;
    let source = RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from(vec![3, 4, 7])),
            Arc::new(StringArray::from(vec![Some("three"), None, Some("seven")])),
            Arc::new(Float64Array::from(vec![30.0, 40.0, 70.0])),
        ],
    )
    .unwrap();
    let params = MergeInsert {
        on: vec!["id".into()],
        when_matched: WhenMatched::UpdateAll { condition: None },
        insert_not_matched: true,
        delete_not_matched_by_source: None,
        conflict_retries: 0,
    };
    let (ds, stats) = merge_insert(&ds, one_batch(source.clone()), schema(), InMemory, &params)
        .await
        .unwrap();
    assert_eq!((stats.inserted, stats.updated, stats.deleted), (1, 2, 0));
    let all = read(&ds).await;
    let mut by_id: Vec<(i64, f64)> = ids(&all).into_iter().zip(scores(&all)).collect();
    by_id.sort_by_key(|p| p.0);
    assert_eq!(
        by_id,
        vec![
            (0, 0.0),
            (1, 0.5),
            (2, 1.0),
            (3, 30.0),
            (4, 40.0),
            (7, 70.0)
        ]
    );
    // Two source rows on one table row are refused.
    let twice = arrow_select::concat::concat_batches(&schema(), &[source.clone(), source]).unwrap();
    let r = merge_insert(&ds, one_batch(twice), schema(), InMemory, &params).await;
    assert!(matches!(r, Err(Error::InvalidInput(_))), "{r:?}");
}

#[tokio::test]
async fn compaction_merges_small_fragments_and_drops_deleted_rows() {
    let uri = uri();
    let ds = write(&uri, rows(0..12), WriteMode::Create, 3).await;
    assert_eq!(ds.fragments().len(), 4);
    let ds = delete(&ds, &sql("id = 1 OR id = 7"), 0).await.unwrap();
    let opts = CompactionOptions {
        target_rows_per_fragment: 100,
        ..Default::default()
    };
    let (ds, metrics) = compact_files(&ds, &opts).await.unwrap();
    assert_eq!(metrics.fragments_removed, 4);
    assert_eq!(metrics.fragments_added, 1);
    assert_eq!(ds.fragments().len(), 1);
    assert!(ds.fragments()[0].deletion_file.is_none());
    let expected: Vec<i64> = (0..12).filter(|i| *i != 1 && *i != 7).collect();
    assert_eq!(ids(&read(&ds).await), expected);
    // Nothing left to do: no new version.
    let (again, m) = compact_files(&ds, &opts).await.unwrap();
    assert_eq!((again.version(), m.fragments_added), (ds.version(), 0));
}

#[tokio::test]
async fn a_stale_writer_that_cannot_commit_leaves_no_file() {
    let uri = uri();
    let stale = write(&uri, rows(0..10), WriteMode::Create, 5).await;
    let latest = write(&uri, rows(50..52), WriteMode::Overwrite, 5).await;
    let before = files(&latest).await;

    let r = delete(&stale, &sql("id < 7"), 3).await;
    assert!(matches!(r, Err(Error::Incompatible(_))), "{r:?}");
    let updates = vec![("name".to_string(), "'x'".to_string())];
    let r = update::update(&stale, &updates, None, 3).await;
    assert!(matches!(r, Err(Error::Incompatible(_))), "{r:?}");
    let r = compact_files(
        &stale,
        &CompactionOptions {
            target_rows_per_fragment: 100,
            ..Default::default()
        },
    )
    .await;
    assert!(matches!(r, Err(Error::Incompatible(_))), "{r:?}");
    assert_eq!(files(&latest).await, before);
    let now = Dataset::open(&uri, None, Default::default()).await.unwrap();
    assert_eq!(ids(&read(&now).await), vec![50, 51]);
}

#[tokio::test]
async fn a_commit_checks_against_what_was_committed_since_its_read_version() {
    let uri = uri();
    let ds = write(&uri, rows(0..4), WriteMode::Create, 2).await;
    // Fragments written elsewhere, committed later as an append on top of a delete.
    let storage = ds.storage().clone();
    let staged = Staged::new(&storage);
    let fragments = write_fragments(
        &staged,
        &ds.schema,
        writable_version(&ds.data_storage_version(), &uri).unwrap(),
        Box::pin(futures::stream::iter(vec![Ok(rows(10..12))])),
        &WriteOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(staged.len(), 1);
    let after_delete = delete(&ds, &sql("id = 0"), 0).await.unwrap();
    let props = HashMap::from([("job".to_string(), "j1".to_string())]);
    let op = Operation::Append { fragments };
    let new = commit(ReadFrom::Version(&ds), op, staged, props)
        .await
        .unwrap();
    assert_eq!(new.version(), after_delete.version() + 1);
    assert_eq!(ids(&read(&new).await), vec![1, 2, 3, 10, 11]);
    // The appended fragment got the next id after those the table has used.
    assert_eq!(new.fragments().last().unwrap().id, 2);
}

#[test]
fn data_files_are_named_as_pylance_names_them() {
    let name = super::new_data_file_name("p_");
    let stem = name
        .strip_prefix("p_")
        .unwrap()
        .strip_suffix(".lance")
        .unwrap();
    assert_eq!(stem.len(), 50);
    assert!(stem[..24].chars().all(|c| c == '0' || c == '1'));
    assert!(stem[24..]
        .chars()
        .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    assert_ne!(name, super::new_data_file_name("p_"));
}
