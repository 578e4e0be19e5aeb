//! The merge's matching rules against a reference computed in memory: random tables
//! (several fragments, deleted rows, duplicate and null keys) and sources (several
//! batches, duplicate and null keys, with or without the table's `w` column), every
//! clause; then retries that read a spilled source again.
use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use futures::StreamExt;
use proptest::prelude::*;

use super::source::SourceBatches;
use super::*;
use crate::test_util::{read, uri};
use crate::write::{write_dataset, WriteMode, WriteOptions};

/// A row: key, value, tag (which row it was written as), and w (which a partial source
/// lacks).
type Row = (Option<i64>, i64, String, Option<i64>);

fn table_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("v", DataType::Int64, false),
        Field::new("tag", DataType::Utf8, false),
        Field::new("w", DataType::Int64, true),
    ]))
}

fn batch(rows: &[Row], with_w: bool) -> RecordBatch {
    let mut fields = table_schema().fields().to_vec();
    let mut columns: Vec<Arc<dyn Array>> = vec![
        Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.0))),
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| &r.2))),
        Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.3))),
    ];
    if !with_w {
        fields.pop();
        columns.pop();
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

fn rows_of(b: &RecordBatch) -> Vec<Row> {
    let k = b.column_by_name("k").unwrap().as_primitive::<Int64Type>();
    let v = b.column_by_name("v").unwrap().as_primitive::<Int64Type>();
    let tag = b.column_by_name("tag").unwrap().as_string::<i32>();
    let w = b.column_by_name("w").unwrap().as_primitive::<Int64Type>();
    let mut out: Vec<Row> = (0..b.num_rows())
        .map(|i| {
            (
                k.is_valid(i).then(|| k.value(i)),
                v.value(i),
                tag.value(i).to_string(),
                w.is_valid(i).then(|| w.value(i)),
            )
        })
        .collect();
    out.sort();
    out
}

/// A table of `rows`, `per_file` rows per fragment, with the rows whose value is a
/// multiple of 7 deleted.
async fn table(rows: &[Row], per_file: u64, stable: bool) -> Dataset {
    let opts = WriteOptions {
        mode: WriteMode::Create,
        max_rows_per_file: per_file,
        enable_stable_row_ids: stable,
        ..Default::default()
    };
    let b = batch(rows, true);
    let ds = write_dataset(&uri(), b.schema(), futures::stream::iter([Ok(b)]), opts)
        .await
        .unwrap();
    crate::write::delete(&ds, &crate::test_util::sql("v % 7 = 0"), 0)
        .await
        .unwrap()
}

/// The source as a stream of batches of `sizes` rows (the rest in a last one).
fn stream(source: &[Row], with_w: bool, sizes: &[usize]) -> (SourceStream, SchemaRef) {
    let all = batch(source, with_w);
    let schema = all.schema();
    let mut batches = vec![];
    let mut at = 0;
    for &n in sizes.iter().chain([&usize::MAX]) {
        let n = n.min(all.num_rows() - at);
        batches.push(Ok(all.slice(at, n)));
        at += n;
        if at == all.num_rows() {
            break;
        }
    }
    (futures::stream::iter(batches).boxed(), schema)
}

#[derive(Clone, Debug)]
struct Clauses {
    when_matched: WhenMatched,
    insert: bool,
    by_source: Option<Option<crate::expr::Expr>>,
}

impl Clauses {
    fn params(&self, retries: u32) -> MergeInsert {
        MergeInsert {
            on: vec!["k".into()],
            when_matched: self.when_matched.clone(),
            insert_not_matched: self.insert,
            delete_not_matched_by_source: self.by_source.clone(),
            conflict_retries: retries,
        }
    }
}

/// What the merge should do, computed row by row: the table's rows after it and the
/// counts, or None for an error.
fn expected(
    live: &[Row],
    source: &[Row],
    c: &Clauses,
    with_w: bool,
) -> Option<(Vec<Row>, MergeStats)> {
    let changes_nothing =
        c.when_matched == WhenMatched::DoNothing && !c.insert && c.by_source.is_none();
    if changes_nothing {
        return None;
    }
    let matches = |s: &Row| -> Vec<usize> {
        (0..live.len())
            .filter(|&t| s.0.is_some() && live[t].0 == s.0)
            .collect()
    };
    let mut stats = MergeStats::default();
    let mut changed = HashSet::new();
    let mut matched = HashSet::new();
    let mut new_rows = vec![];
    for s in source {
        let m = matches(s);
        if m.is_empty() && c.insert {
            let w = if with_w { s.3 } else { None };
            new_rows.push((s.0, s.1, s.2.clone(), w));
            stats.inserted += 1;
        }
        for t in m {
            matched.insert(t);
            let change = match &c.when_matched {
                WhenMatched::DoNothing => false,
                WhenMatched::Fail => return None,
                WhenMatched::Delete => {
                    stats.deleted += 1;
                    true
                }
                WhenMatched::UpdateAll { condition } => {
                    // The one condition generated: source.v > target.v.
                    let holds = condition.is_none() || s.1 > live[t].1;
                    if holds {
                        let w = if with_w { s.3 } else { live[t].3 };
                        new_rows.push((s.0, s.1, s.2.clone(), w));
                        stats.updated += 1;
                    }
                    holds
                }
            };
            if change && !changed.insert(t) {
                return None; // two source rows change one table row
            }
        }
    }
    let mut out = new_rows;
    for (t, row) in live.iter().enumerate() {
        let by_source = match &c.by_source {
            Some(None) => true,
            // The one predicate generated: v < 50.
            Some(Some(_)) => row.1 < 50,
            None => false,
        };
        if changed.contains(&t) {
            continue;
        }
        if by_source && !matched.contains(&t) {
            stats.deleted += 1;
            continue;
        }
        out.push(row.clone());
    }
    out.sort();
    Some((out, stats))
}

fn key() -> impl Strategy<Value = Option<i64>> {
    prop_oneof![1 => Just(None), 6 => (0i64..10).prop_map(Some)]
}

fn rows(prefix: &'static str, n: std::ops::Range<usize>) -> impl Strategy<Value = Vec<Row>> {
    prop::collection::vec((key(), 0i64..100, prop::option::of(0i64..5)), n).prop_map(move |rs| {
        rs.into_iter()
            .enumerate()
            .map(|(i, (k, v, w))| (k, v, format!("{prefix}{i}"), w))
            .collect()
    })
}

fn clauses() -> impl Strategy<Value = Clauses> {
    let when_matched = prop_oneof![
        Just(WhenMatched::DoNothing),
        Just(WhenMatched::UpdateAll { condition: None }),
        Just(WhenMatched::UpdateAll {
            condition: Some(crate::test_util::sql("source.v > target.v"))
        }),
        Just(WhenMatched::Delete),
        Just(WhenMatched::Fail),
    ];
    let by_source = prop_oneof![
        Just(None),
        Just(Some(None)),
        Just(Some(Some(crate::test_util::sql("v < 50"))))
    ];
    (when_matched, any::<bool>(), by_source).prop_map(|(when_matched, insert, by_source)| Clauses {
        when_matched,
        insert,
        by_source,
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn a_streamed_merge_does_what_the_rules_say(
        table_rows in rows("t", 0..24),
        source in rows("s", 0..24),
        clauses in clauses(),
        sizes in prop::collection::vec(1usize..8, 0..4),
        per_file in 3u64..10,
        with_w in any::<bool>(),
        stable in any::<bool>(),
        spill in any::<bool>(),
    ) {
        runtime().block_on(async {
            let ds = table(&table_rows, per_file, stable).await;
            let live = rows_of(&read(&ds).await);
            let want = expected(&live, &source, &clauses, with_w);
            let (stream, schema) = stream(&source, with_w, &sizes);
            // Kept for a retry (all in the file when `spill`) or read once.
            let keep = if spill { Some(0) } else { None };
            let got = merge_batches(&ds, SourceBatches::new(schema, stream, keep), &clauses.params(0)).await;
            match (got, want) {
                (Ok((new, stats)), Some((rows, want_stats))) => {
                    prop_assert_eq!(rows_of(&read(&new).await), rows);
                    prop_assert_eq!(stats, want_stats);
                    prop_assert_eq!(new.version(), ds.version() + 1);
                }
                (Err(Error::InvalidInput(_)), None) => {}
                (got, want) => prop_assert!(false, "merge gave {:?}, expected {:?}", got.map(|r| r.1), want),
            }
            Ok(())
        })?;
    }
}

#[test]
fn a_retry_reads_the_spilled_source_again() {
    runtime().block_on(async {
        let rows: Vec<Row> = (0..20)
            .map(|i| (Some(i), i + 1, format!("t{i}"), None))
            .collect();
        let stale = table(&rows, 10, true).await;
        // Another writer deletes row 3 meanwhile (the merge's commit then conflicts).
        crate::write::delete(&stale, &crate::test_util::sql("k = 3"), 0)
            .await
            .unwrap();
        let source: Vec<Row> = [3, 4, 30, 31]
            .iter()
            .map(|&k| (Some(k), 1000 + k, format!("s{k}"), Some(1)))
            .collect();
        let (stream, schema) = stream(&source, true, &[1, 1, 1]);
        let clauses = Clauses {
            when_matched: WhenMatched::UpdateAll { condition: None },
            insert: true,
            by_source: None,
        };
        let mut src = SourceBatches::new(schema.clone(), stream, Some(0));
        // Read once and rewound as a first attempt leaves it: the retry reads the file.
        while src.next().await.unwrap().is_some() {}
        assert!(src.spilled());
        let (new, stats) = merge_batches(&stale, src, &clauses.params(1))
            .await
            .unwrap();
        // 3 is gone by the time the merge re-ran: inserted, not updated.
        assert_eq!((stats.inserted, stats.updated, stats.deleted), (3, 1, 0));
        let got = rows_of(&read(&new).await);
        let keys: Vec<i64> = got.iter().map(|r| r.0.unwrap()).collect();
        let mut want: Vec<i64> = (0..20).filter(|&k| k != 6 && k != 13).collect();
        want.extend([30, 31]);
        want.sort();
        assert_eq!(keys, want);
        assert!(got.iter().any(|r| r.2 == "s3") && got.iter().any(|r| r.2 == "s4"));
        // Without retries the source is not kept, and cannot be read twice.
        let (stream, schema) = stream_of(&source);
        let mut once = SourceBatches::new(schema, stream, None);
        once.rewind().await.unwrap();
        while once.next().await.unwrap().is_some() {}
        assert!(matches!(once.rewind().await, Err(Error::InvalidInput(_))));
    });
}

fn stream_of(source: &[Row]) -> (SourceStream, SchemaRef) {
    stream(source, true, &[2])
}

#[test]
fn kept_batches_come_back_in_order_and_the_file_goes() {
    runtime().block_on(async {
        let source: Vec<Row> = (0..50)
            .map(|i| (Some(i), i, format!("s{i}"), None))
            .collect();
        let (s, schema) = stream(&source, true, &[5; 9]);
        // Some in memory (the first two batches fit), the rest in the file.
        let first = batch(&source[..5], true).get_array_memory_size();
        let mut src = SourceBatches::new(schema, s, Some(2 * first + 1));
        let mut passes = vec![];
        for _ in 0..3 {
            src.rewind().await.unwrap();
            let mut seen = vec![];
            // The first pass stops early, as an attempt that failed would.
            let stop = if passes.is_empty() { 4 } else { usize::MAX };
            while seen.len() < stop {
                match src.next().await.unwrap() {
                    Some(b) => seen.extend(rows_of_partial(&b)),
                    None => break,
                }
            }
            passes.push(seen);
        }
        let all: Vec<i64> = (0..50).collect();
        assert_eq!(passes[1], all);
        assert_eq!(passes[2], all);
        assert!(src.spilled());
        let path = src.spill_path().unwrap();
        assert!(path.exists());
        drop(src);
        assert!(!path.exists(), "the temporary file is removed");
    });
}

/// The keys of a source batch.
fn rows_of_partial(b: &RecordBatch) -> Vec<i64> {
    let k = b.column_by_name("k").unwrap().as_primitive::<Int64Type>();
    k.values().to_vec()
}
