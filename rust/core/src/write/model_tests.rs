//! Writers checked against a model: random sequences of appends, deletes, updates,
//! compactions, overwrites and restores applied to a table and to a plain `Vec` of its
//! rows give the same rows, in the same order, at the same version numbers, with stable
//! row ids kept by every change but those that replace rows; and two writers that read
//! the same version meet as the conflict rules say, the loser leaving no file.
use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt64Type};
use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use futures::TryStreamExt;
use proptest::prelude::*;

use super::compact::{compact_files, CompactionOptions};
use super::*;
use crate::dataset::VersionRef;
use crate::scan::{scan, ScanOptions};
use crate::table::deletion::deletion_file_name;
use crate::table::transaction::Staged;
use crate::test_util::{files, sql, uri};

fn rt() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Runtime::new().unwrap())
}

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Int64, false),
        Field::new("v", DataType::Int64, true),
    ]))
}

/// The value a new row with `key` gets: NULL on multiples of three.
fn v_of(key: i64) -> Option<i64> {
    (key % 3 != 0).then_some(key)
}

fn rows(keys: std::ops::Range<i64>) -> RecordBatch {
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from_iter_values(keys.clone())),
            Arc::new(Int64Array::from_iter(keys.map(v_of))),
        ],
    )
    .unwrap()
}

/// A row of the model; `row_id` is learnt from the first read that shows the row (its
/// stable row id, which no later change but a replacement may alter). With stable row
/// ids a row also knows the version that created it and the one that last updated it
/// (row lineage; every row reads as version 1 without them).
#[derive(Clone, Debug, PartialEq)]
struct Row {
    key: i64,
    v: Option<i64>,
    row_id: Option<u64>,
    created: u64,
    updated: u64,
}

impl Row {
    /// A row new to the table, committed in `version` (lineage kept or not).
    fn new(key: i64, version: u64) -> Row {
        Row {
            key,
            v: v_of(key),
            row_id: None,
            created: version,
            updated: version,
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Append(i64),
    /// Rows with `key % m = r`.
    Delete(i64, i64),
    /// `v = v + 1` on rows with `key % m = r`.
    Update(i64, i64),
    Compact(u64),
    Overwrite(i64),
    /// Restore the version this many before the latest (the first at least).
    Restore(u64),
}

fn op() -> impl Strategy<Value = Op> {
    let modulo = || (2i64..5).prop_flat_map(|m| (Just(m), 0..m));
    prop_oneof![
        3 => (1i64..7).prop_map(Op::Append),
        3 => modulo().prop_map(|(m, r)| Op::Delete(m, r)),
        3 => modulo().prop_map(|(m, r)| Op::Update(m, r)),
        2 => prop::sample::select(vec![2u64, 5, 100]).prop_map(Op::Compact),
        1 => (1i64..7).prop_map(Op::Overwrite),
        1 => (1u64..4).prop_map(Op::Restore),
    ]
}

/// The table's versions as the model has them (index 0: version 1), and the next key.
struct Model {
    versions: Vec<Vec<Row>>,
    next_key: i64,
    stable: bool,
}

impl Model {
    /// `n` rows with new keys, committed in the next version.
    fn new_rows(&mut self, n: i64) -> Vec<Row> {
        let keys = self.next_key..self.next_key + n;
        self.next_key += n;
        let version = self.lineage_version();
        keys.map(|key| Row::new(key, version)).collect()
    }

    /// The version lineage records for a row created or updated by the next commit.
    fn lineage_version(&self) -> u64 {
        match self.stable {
            true => self.versions.len() as u64 + 1,
            false => 1,
        }
    }

    fn latest(&self) -> &Vec<Row> {
        self.versions.last().unwrap()
    }
}

fn write_opts(mode: WriteMode, rows_per_file: u64, stable: bool) -> WriteOptions {
    WriteOptions {
        mode,
        max_rows_per_file: rows_per_file,
        enable_stable_row_ids: stable,
        ..Default::default()
    }
}

async fn write_rows(uri: &str, batch: RecordBatch, opts: WriteOptions) -> Dataset {
    write_dataset(uri, schema(), futures::stream::iter(vec![Ok(batch)]), opts)
        .await
        .unwrap()
}

/// Every live row of `ds` as (key, v, created at, last updated at, _rowid).
async fn read_rows(ds: &Dataset) -> Vec<(i64, Option<i64>, u64, u64, u64)> {
    let options = ScanOptions {
        columns: Some(
            [
                "key",
                "v",
                "_row_created_at_version",
                "_row_last_updated_at_version",
            ]
            .map(String::from)
            .to_vec(),
        ),
        with_row_id: true,
        batch_size: 7,
        ..Default::default()
    };
    let s = scan(Arc::new(ds.clone()), options).unwrap();
    let batches: Vec<RecordBatch> = s.batches.try_collect().await.unwrap();
    let mut out = Vec::new();
    for b in &batches {
        let key = b.column(0).as_primitive::<Int64Type>();
        let v = b.column(1).as_primitive::<Int64Type>();
        let u = |c: usize| b.column(c).as_primitive::<UInt64Type>().clone();
        let (created, updated, id) = (u(2), u(3), u(4));
        for i in 0..b.num_rows() {
            let v = v.is_valid(i).then(|| v.value(i));
            out.push((
                key.value(i),
                v,
                created.value(i),
                updated.value(i),
                id.value(i),
            ));
        }
    }
    out
}

/// Checks `ds` against the model's rows `expected` (keys, values and lineage, in
/// order); with stable row ids, a row the model has seen keeps its id, and no two rows
/// share one. Returns the rows with every id learnt.
async fn check(ds: &Dataset, expected: &[Row], stable: bool, ops: &[Op]) -> Vec<Row> {
    let got = read_rows(ds).await;
    let keys: Vec<(i64, Option<i64>, u64, u64)> =
        got.iter().map(|r| (r.0, r.1, r.2, r.3)).collect();
    let want: Vec<(i64, Option<i64>, u64, u64)> = expected
        .iter()
        .map(|r| (r.key, r.v, r.created, r.updated))
        .collect();
    assert_eq!(keys, want, "rows of version {} after {ops:?}", ds.version());
    assert_eq!(ds.count_rows().await.unwrap(), expected.len() as u64);
    let mut out = expected.to_vec();
    if stable {
        let ids: HashSet<u64> = got.iter().map(|r| r.4).collect();
        assert_eq!(
            ids.len(),
            got.len(),
            "row ids repeat after {ops:?}: {got:?}"
        );
        for (row, g) in out.iter_mut().zip(&got) {
            if let Some(id) = row.row_id {
                assert_eq!(id, g.4, "row id of key {} after {ops:?}", row.key);
            }
            row.row_id = Some(g.4);
        }
    }
    out
}

/// Every data and deletion file under the table's root, and those its versions use:
/// they must be the same (a write that commits keeps its files; one that does not, or a
/// compaction with nothing to do, leaves none).
async fn files_on_disk_and_used(ds: &Dataset) -> (BTreeSet<String>, BTreeSet<String>) {
    let storage = ds.storage();
    let mut on_disk = BTreeSet::new();
    for dir in ["data", "_deletions"] {
        for m in storage.list_all(dir).await.unwrap() {
            on_disk.insert(storage.relative(&m.location).to_string());
        }
    }
    let mut used = BTreeSet::new();
    for v in 1..=ds.version() {
        let at = Dataset::open(ds.uri(), Some(VersionRef::Number(v)), Default::default())
            .await
            .unwrap();
        for f in at.fragments() {
            for file in &f.files {
                used.insert(format!("data/{}", file.path));
            }
            if let Some(d) = &f.deletion_file {
                used.insert(format!("_deletions/{}", deletion_file_name(f.id, d)));
            }
        }
    }
    (on_disk, used)
}

/// Apply `op` to `ds` and to the model; returns the new dataset.
async fn apply(
    ds: Dataset,
    op: &Op,
    model: &mut Model,
    rows_per_file: u64,
    stable: bool,
) -> Dataset {
    let mut now = model.latest().clone();
    let version = ds.version();
    let ds = match *op {
        Op::Append(n) => {
            let start = model.next_key;
            now.extend(model.new_rows(n));
            let opts = write_opts(WriteMode::Append, rows_per_file, stable);
            write_rows(ds.uri(), rows(start..start + n), opts).await
        }
        Op::Delete(m, r) => {
            let (new, n) =
                delete_counted(&ds, &crate::test_util::sql(&format!("key % {m} = {r}")), 0)
                    .await
                    .unwrap();
            let before = now.len();
            now.retain(|row| row.key % m != r);
            assert_eq!(n, (before - now.len()) as u64, "rows deleted by {op:?}");
            new
        }
        Op::Update(m, r) => {
            let set = vec![("v".to_string(), "v + 1".to_string())];
            let (new, n) = update(&ds, &set, Some(&sql(&format!("key % {m} = {r}"))), 0)
                .await
                .unwrap();
            // Changed rows leave their fragments and follow, in order, in new ones.
            let (mut changed, kept): (Vec<Row>, Vec<Row>) =
                now.into_iter().partition(|row| row.key % m == r);
            assert_eq!(n, changed.len() as u64, "rows updated by {op:?}");
            let version = model.lineage_version();
            for row in &mut changed {
                row.v = row.v.map(|v| v + 1);
                row.updated = version;
            }
            now = kept;
            now.extend(changed);
            new
        }
        Op::Compact(target) => {
            let opts = CompactionOptions {
                target_rows_per_fragment: target,
                ..Default::default()
            };
            let (new, metrics) = compact_files(&ds, &opts).await.unwrap();
            if metrics.fragments_removed == 0 {
                // Nothing to do commits nothing.
                assert_eq!(new.version(), version, "{op:?}: {metrics:?}");
                return new;
            }
            // The new fragments' ids are reserved in a version of their own first (as
            // pylance does), which changes no row.
            model.versions.push(now.clone());
            new
        }
        Op::Overwrite(n) => {
            let start = model.next_key;
            now = model.new_rows(n);
            let opts = write_opts(WriteMode::Overwrite, rows_per_file, false);
            write_rows(ds.uri(), rows(start..start + n), opts).await
        }
        Op::Restore(back) => {
            let target = version.saturating_sub(back).max(1);
            now = model.versions[target as usize - 1].clone();
            let old = Dataset::open(
                ds.uri(),
                Some(VersionRef::Number(target)),
                Default::default(),
            )
            .await
            .unwrap();
            restore(&old).await.unwrap()
        }
    };
    model.versions.push(now);
    assert_eq!(
        ds.version(),
        model.versions.len() as u64,
        "version after {op:?}"
    );
    ds
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Any sequence of writes leaves the table as the model: each version's rows (read
    /// at the time and again by version number at the end), its number, its row count,
    /// stable row ids kept, and no file no version uses.
    #[test]
    fn writes_change_the_table_as_they_change_the_model(
        initial in 1i64..10,
        rows_per_file in 1u64..5,
        stable in any::<bool>(),
        ops in prop::collection::vec(op(), 1..9),
    ) {
        rt().block_on(async {
            let mut model = Model { versions: vec![], next_key: 0, stable };
            let first = model.new_rows(initial);
            let opts = write_opts(WriteMode::Create, rows_per_file, stable);
            let mut ds = write_rows(&uri(), rows(0..initial), opts).await;
            assert_eq!(ds.version(), 1);
            assert_eq!(ds.has_stable_row_ids(), stable);
            model.versions.push(check(&ds, &first, stable, &[]).await);
            for (i, op) in ops.iter().enumerate() {
                ds = apply(ds, op, &mut model, rows_per_file, stable).await;
                // The overwrite keeps the table's stable row ids although its writer did
                // not ask for them.
                assert_eq!(ds.has_stable_row_ids(), stable, "after {:?}", &ops[..=i]);
                let learnt = check(&ds, model.latest(), stable, &ops[..=i]).await;
                *model.versions.last_mut().unwrap() = learnt;
            }
            let latest = Dataset::open(ds.uri(), None, Default::default()).await.unwrap();
            prop_assert_eq!(latest.version(), model.versions.len() as u64);
            for (i, rows) in model.versions.iter().enumerate() {
                let at = Dataset::open(
                    ds.uri(),
                    Some(VersionRef::Number(i as u64 + 1)),
                    Default::default(),
                )
                .await
                .unwrap();
                check(&at, rows, stable, &ops).await;
            }
            let (on_disk, used) = files_on_disk_and_used(&ds).await;
            prop_assert_eq!(on_disk, used, "after {:?}", ops);
            Ok(())
        })?;
    }
}

/// What the first writer commits in the conflict test.
#[derive(Clone, Copy, Debug)]
enum First {
    Append,
    DeleteIn0,
    DeleteIn1,
    UpdateIn0,
    Compact,
    Overwrite,
    Restore,
}

/// What the second writer, from the same read version, tries.
#[derive(Clone, Copy, Debug)]
enum Second {
    Append,
    DeleteIn0,
    DeleteIn1,
    UpdateIn1,
    Compact,
}

#[derive(Debug, PartialEq)]
enum Outcome {
    Committed,
    Retryable,
    Incompatible,
}

/// The conflict rules (table/transaction/conflict.rs) for these pairs: what replaced the
/// table refuses everything; deletes, updates and compactions lose to changes of the
/// fragments they change (a retry then runs them again on the new version); appends and
/// changes of other fragments pass.
fn expected(first: First, second: Second) -> Outcome {
    use First as F;
    use Second as S;
    // Fragments each changes in place (the compaction merges all three).
    let changed_by_first: &[u64] = match first {
        F::DeleteIn0 | F::UpdateIn0 => &[0],
        F::DeleteIn1 => &[1],
        F::Compact => &[0, 1, 2],
        F::Append | F::Overwrite | F::Restore => &[],
    };
    let changed_by_second: &[u64] = match second {
        S::DeleteIn0 => &[0],
        S::DeleteIn1 | S::UpdateIn1 => &[1],
        S::Compact => &[0, 1, 2],
        S::Append => &[],
    };
    match first {
        F::Overwrite | F::Restore => Outcome::Incompatible,
        _ if changed_by_first
            .iter()
            .any(|f| changed_by_second.contains(f)) =>
        {
            Outcome::Retryable
        }
        _ => Outcome::Committed,
    }
}

const DELETE_IN_0: &str = "key = 1";
const DELETE_IN_1: &str = "key = 5";
const UPDATE_IN_0: &str = "key = 2";
const SECOND_DELETE_IN_0: &str = "key = 3 OR key = 2";
const SECOND_DELETE_IN_1: &str = "key = 6";
const SECOND_UPDATE_IN_1: &str = "key = 4 OR key = 5";

/// `rows` after `first` or `second` (what the writer does, on the model).
fn on_model(rows: &mut Vec<Row>, what: &str, next: &mut i64) {
    let matches = |pred: &str, key: i64| {
        pred.split(" OR ")
            .any(|p| p.trim_start_matches("key = ").parse::<i64>().unwrap() == key)
    };
    match what.split_once(':').unwrap() {
        ("append", _) => {
            rows.extend((*next..*next + 3).map(|key| Row::new(key, 1)));
            *next += 3;
        }
        ("delete", pred) => rows.retain(|r| !matches(pred, r.key)),
        ("update", pred) => {
            let (mut changed, kept): (Vec<Row>, Vec<Row>) =
                rows.drain(..).partition(|r| matches(pred, r.key));
            for r in &mut changed {
                r.v = r.v.map(|v| v * 10);
            }
            *rows = kept;
            rows.extend(changed);
        }
        ("overwrite", _) => *rows = (100..102).map(|key| Row::new(key, 1)).collect(),
        _ => {}
    }
}

async fn run_update(ds: &Dataset, pred: &str, retries: u32) -> Result<Dataset> {
    let set = vec![("v".to_string(), "v * 10".to_string())];
    Ok(update(ds, &set, Some(&sql(pred)), retries).await?.0)
}

/// Two writers prepare a change from the same version; the first commits, then the
/// second (without and with one retry): it commits on top, is refused as retryable, or
/// as incompatible, as `expected` says; when it commits the table holds both changes
/// (the second's predicate evaluated again on a retry), and when it does not, the files
/// under the table are those the first writer left.
#[test]
fn two_writers_from_one_read_version_meet_as_the_conflict_rules_say() {
    let firsts = [
        First::Append,
        First::DeleteIn0,
        First::DeleteIn1,
        First::UpdateIn0,
        First::Compact,
        First::Overwrite,
        First::Restore,
    ];
    let seconds = [
        Second::Append,
        Second::DeleteIn0,
        Second::DeleteIn1,
        Second::UpdateIn1,
        Second::Compact,
    ];
    rt().block_on(async {
        for first in firsts {
            for second in seconds {
                for retries in [0u32, 1] {
                    two_writers(first, second, retries).await;
                }
            }
        }
    });
}

async fn two_writers(first: First, second: Second, retries: u32) {
    let case = format!("{first:?} then {second:?} with {retries} retries");
    // Version 1: keys 0..8 in fragments 0 and 1; version 2: keys 8..12 in fragment 2.
    let uri = uri();
    let opts = |mode| write_opts(mode, 4, false);
    write_rows(&uri, rows(0..8), opts(WriteMode::Create)).await;
    let stale = write_rows(&uri, rows(8..12), opts(WriteMode::Append)).await;
    let mut model: Vec<Row> = (0..12).map(|key| Row::new(key, 1)).collect();
    let mut next = 12;
    let compaction = CompactionOptions {
        target_rows_per_fragment: 100,
        ..Default::default()
    };

    let first_ds = match first {
        First::Append => {
            on_model(&mut model, "append:", &mut next);
            write_rows(&uri, rows(12..15), opts(WriteMode::Append)).await
        }
        First::DeleteIn0 | First::DeleteIn1 => {
            let pred = match first {
                First::DeleteIn0 => DELETE_IN_0,
                _ => DELETE_IN_1,
            };
            on_model(&mut model, &format!("delete:{pred}"), &mut next);
            delete(&stale, &sql(pred), 0).await.unwrap()
        }
        First::UpdateIn0 => {
            on_model(&mut model, &format!("update:{UPDATE_IN_0}"), &mut next);
            run_update(&stale, UPDATE_IN_0, 0).await.unwrap()
        }
        First::Compact => compact_files(&stale, &compaction).await.unwrap().0,
        First::Overwrite => {
            on_model(&mut model, "overwrite:", &mut next);
            write_rows(&uri, rows(100..102), opts(WriteMode::Overwrite)).await
        }
        First::Restore => {
            model.truncate(8);
            let v1 = Dataset::open(&uri, Some(VersionRef::Number(1)), Default::default())
                .await
                .unwrap();
            restore(&v1).await.unwrap()
        }
    };
    // A compaction commits twice: its fragment ids reserved, then the rewrite.
    let commits = |compaction: bool| if compaction { 2 } else { 1 };
    let first_version = 2 + commits(matches!(first, First::Compact));
    assert_eq!(first_ds.version(), first_version, "{case}");
    let before = files(&first_ds).await;

    let result = match second {
        Second::Append => {
            // Files written against the stale version, committed from it.
            let staged = Staged::new(stale.storage());
            let version = writable_version(&stale.data_storage_version(), &uri).unwrap();
            let batches = Box::pin(futures::stream::iter(vec![Ok(rows(next..next + 3))]));
            let fragments = write_fragments(
                &staged,
                &stale.schema,
                version,
                batches,
                &Default::default(),
            )
            .await
            .unwrap();
            let op = Operation::Append { fragments };
            commit(ReadFrom::Version(&stale), op, staged, Default::default()).await
        }
        Second::DeleteIn0 => delete(&stale, &sql(SECOND_DELETE_IN_0), retries).await,
        Second::DeleteIn1 => delete(&stale, &sql(SECOND_DELETE_IN_1), retries).await,
        Second::UpdateIn1 => run_update(&stale, SECOND_UPDATE_IN_1, retries).await,
        Second::Compact => compact_files(&stale, &compaction).await.map(|r| r.0),
    };
    // Appends and compactions are not retried by the writer.
    let retried = retries > 0 && !matches!(second, Second::Append | Second::Compact);
    let want = match expected(first, second) {
        Outcome::Retryable if retried => Outcome::Committed,
        other => other,
    };
    let got = match &result {
        Ok(_) => Outcome::Committed,
        Err(Error::Conflict(_)) => Outcome::Retryable,
        Err(Error::Incompatible(_)) => Outcome::Incompatible,
        Err(e) => panic!("{case}: {e}"),
    };
    assert_eq!(got, want, "{case}: {result:?}");
    match result {
        Ok(ds) => {
            let second_commits = commits(matches!(second, Second::Compact));
            assert_eq!(ds.version(), first_version + second_commits, "{case}");
            match second {
                Second::Append => on_model(&mut model, "append:", &mut next),
                Second::DeleteIn0 => on_model(
                    &mut model,
                    &format!("delete:{SECOND_DELETE_IN_0}"),
                    &mut next,
                ),
                Second::DeleteIn1 => on_model(
                    &mut model,
                    &format!("delete:{SECOND_DELETE_IN_1}"),
                    &mut next,
                ),
                Second::UpdateIn1 => on_model(
                    &mut model,
                    &format!("update:{SECOND_UPDATE_IN_1}"),
                    &mut next,
                ),
                Second::Compact => {}
            }
            let got: Vec<(i64, Option<i64>)> =
                read_rows(&ds).await.iter().map(|r| (r.0, r.1)).collect();
            let want: Vec<(i64, Option<i64>)> = model.iter().map(|r| (r.key, r.v)).collect();
            assert_eq!(got, want, "{case}");
        }
        Err(_) => {
            assert_eq!(files(&first_ds).await, before, "{case}");
            let latest = Dataset::open(&uri, None, Default::default()).await.unwrap();
            assert_eq!(latest.version(), first_version, "{case}");
        }
    }
}

/// A write whose input fails part way (after files were finished, with one file per
/// row) commits nothing and leaves no file, whether it creates the table or appends.
#[test]
fn a_write_whose_input_fails_leaves_nothing() {
    rt().block_on(async {
        for good_batches in 0..3i64 {
            let uri = uri();
            let failing = || {
                let mut input: Vec<Result<RecordBatch>> = (0..good_batches)
                    .map(|b| Ok(rows(b * 2..b * 2 + 2)))
                    .collect();
                input.push(Err(Error::invalid("the input broke")));
                futures::stream::iter(input)
            };
            let case = format!("{good_batches} batches before the error");
            let opts = |mode| write_opts(mode, 1, false);
            let created = write_dataset(&uri, schema(), failing(), opts(WriteMode::Create)).await;
            assert!(
                created.is_err_and(|e| e.to_string().contains("the input broke")),
                "{case}"
            );
            let storage = crate::storage::Storage::open(&uri, &Default::default()).unwrap();
            assert_eq!(storage.list_all("").await.unwrap().len(), 0, "{case}");
            assert!(Dataset::open(&uri, None, Default::default()).await.is_err());

            let ds = write_rows(&uri, rows(100..103), opts(WriteMode::Create)).await;
            let before = files(&ds).await;
            for mode in [WriteMode::Append, WriteMode::Overwrite] {
                let r = write_dataset(&uri, schema(), failing(), opts(mode)).await;
                assert!(r.is_err(), "{case}, {mode:?}");
                assert_eq!(files(&ds).await, before, "{case}, {mode:?}");
                let latest = Dataset::open(&uri, None, Default::default()).await.unwrap();
                assert_eq!(latest.version(), 1, "{case}, {mode:?}");
            }
        }
    });
}
