//! Reads checked against a model: random small tables (several fragments, deleted rows,
//! with and without stable row ids) are scanned and taken from with random options, and
//! what comes back is compared with the same read computed on a plain `Vec` of the rows.
use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt64Type};
use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use futures::TryStreamExt;
use proptest::prelude::*;

use super::take::{take, take_where};
use super::{scan, Projection, ScanOptions};
use crate::dataset::Dataset;
use crate::expr::parse;
use crate::test_util::{sql, uri};
use crate::write::compact::{compact_files, CompactionOptions};
use crate::write::{delete, write_dataset, WriteOptions};

fn rt() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Runtime::new().unwrap())
}

/// A table as the test asks for it: row `i` has `id = i`, `v = values[i]` and
/// `s = "r{i}"` unless `i % 4 == 3`; `rows_per_file` rows per fragment.
#[derive(Clone, Debug)]
struct Spec {
    values: Vec<Option<i64>>,
    deleted: Vec<bool>,
    rows_per_file: u64,
    stable: bool,
}

/// One row of the model, with where it is.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    id: i64,
    v: Option<i64>,
    s: Option<String>,
    row_id: u64,
    address: u64,
    deleted: bool,
    /// Among the table's live rows (`_rowoffset`); None for a deleted row.
    position: Option<u64>,
}

fn spec() -> impl Strategy<Value = Spec> {
    (1usize..30, 1u64..6, any::<bool>()).prop_flat_map(|(n, rows_per_file, stable)| {
        (
            prop::collection::vec(prop::option::weighted(0.8, -3i64..6), n),
            prop::collection::vec(prop::bool::weighted(0.3), n),
        )
            .prop_map(move |(values, deleted)| Spec {
                values,
                deleted,
                rows_per_file,
                stable,
            })
    })
}

fn s_of(i: i64) -> Option<String> {
    (i % 4 != 3).then(|| format!("r{i}"))
}

impl Spec {
    /// Every physical row, deleted ones too, as written: fragment `i / rows_per_file`,
    /// offset `i % rows_per_file`; stable row ids are handed out from 0 in write order.
    fn all_rows(&self) -> Vec<(Row, bool)> {
        let mut live = 0..;
        (0..self.values.len())
            .map(|i| {
                let address =
                    ((i as u64 / self.rows_per_file) << 32) | (i as u64 % self.rows_per_file);
                let row = Row {
                    id: i as i64,
                    v: self.values[i],
                    s: s_of(i as i64),
                    row_id: if self.stable { i as u64 } else { address },
                    address,
                    deleted: self.deleted[i],
                    position: (!self.deleted[i]).then(|| live.next().unwrap()),
                };
                (row, self.deleted[i])
            })
            .collect()
    }

    fn live(&self) -> Vec<Row> {
        self.all_rows()
            .into_iter()
            .filter(|(_, d)| !d)
            .map(|(r, _)| r)
            .collect()
    }

    /// Fragments left in the manifest: those with a live row (a fragment whose rows are
    /// all deleted leaves it), in id order.
    fn fragments(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self.live().iter().map(|r| r.address >> 32).collect();
        ids.dedup();
        ids
    }

    async fn build(&self) -> Dataset {
        let n = self.values.len() as i64;
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("v", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter_values(0..n)),
                Arc::new(Int64Array::from(self.values.clone())),
                Arc::new(StringArray::from_iter((0..n).map(s_of))),
            ],
        )
        .unwrap();
        let opts = WriteOptions {
            max_rows_per_file: self.rows_per_file,
            enable_stable_row_ids: self.stable,
            ..Default::default()
        };
        let ds = write_dataset(&uri(), schema, futures::stream::iter(vec![Ok(batch)]), opts)
            .await
            .unwrap();
        let gone: Vec<String> = (0..n)
            .filter(|&i| self.deleted[i as usize])
            .map(|i| i.to_string())
            .collect();
        match gone.is_empty() {
            true => ds,
            false => delete(&ds, &sql(&format!("id IN ({})", gone.join(", "))), 0)
                .await
                .unwrap(),
        }
    }
}

/// A filter, as SQL and as the model evaluates it (SQL's three values: None is NULL).
#[derive(Clone, Debug)]
enum Filter {
    VAbove(i64),
    VIsNull,
    IdMod(i64, i64),
    HasSAndVBelow(i64),
    NotVAtLeast(i64),
    IdModOrVNull(i64, i64),
}

impl Filter {
    fn sql(&self) -> String {
        match self {
            Filter::VAbove(c) => format!("v > {c}"),
            Filter::VIsNull => "v IS NULL".into(),
            Filter::IdMod(m, r) => format!("id % {m} = {r}"),
            Filter::HasSAndVBelow(c) => format!("s IS NOT NULL AND v < {c}"),
            Filter::NotVAtLeast(c) => format!("NOT (v >= {c})"),
            Filter::IdModOrVNull(m, r) => format!("id % {m} = {r} OR v IS NULL"),
        }
    }

    fn eval(&self, r: &Row) -> Option<bool> {
        let and = |a: Option<bool>, b: Option<bool>| match (a, b) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        };
        let or = |a: Option<bool>, b: Option<bool>| match (a, b) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        };
        match self {
            Filter::VAbove(c) => r.v.map(|v| v > *c),
            Filter::VIsNull => Some(r.v.is_none()),
            Filter::IdMod(m, rem) => Some(r.id % m == *rem),
            Filter::HasSAndVBelow(c) => and(Some(r.s.is_some()), r.v.map(|v| v < *c)),
            Filter::NotVAtLeast(c) => r.v.map(|v| v < *c),
            Filter::IdModOrVNull(m, rem) => or(Some(r.id % m == *rem), Some(r.v.is_none())),
        }
    }
}

fn filter() -> impl Strategy<Value = Filter> {
    prop_oneof![
        (-4i64..7).prop_map(Filter::VAbove),
        Just(Filter::VIsNull),
        (2i64..5)
            .prop_flat_map(|m| (Just(m), 0..m))
            .prop_map(|(m, r)| Filter::IdMod(m, r)),
        (-4i64..7).prop_map(Filter::HasSAndVBelow),
        (-4i64..7).prop_map(Filter::NotVAtLeast),
        (2i64..5)
            .prop_flat_map(|m| (Just(m), 0..m))
            .prop_map(|(m, r)| Filter::IdModOrVNull(m, r)),
    ]
}

/// The data columns asked for (None: all of them).
fn columns() -> impl Strategy<Value = Option<Vec<String>>> {
    prop_oneof![
        Just(None),
        Just(Some(vec!["id".to_string()])),
        Just(Some(vec!["v".to_string(), "id".to_string()])),
        Just(Some(vec!["s".to_string()])),
        Just(Some(vec![
            "s".to_string(),
            "v".to_string(),
            "id".to_string()
        ])),
        Just(Some(vec!["_rowoffset".to_string(), "id".to_string()])),
    ]
}

/// A value of a returned row, by column.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    I(Option<i64>),
    S(Option<String>),
    U(Option<u64>),
}

/// A deleted row read anyway has no row id or address (NULL, as pylance shows it).
fn model_value(r: &Row, name: &str) -> Val {
    match name {
        "id" => Val::I(Some(r.id)),
        "v" => Val::I(r.v),
        "s" => Val::S(r.s.clone()),
        "_rowid" => Val::U((!r.deleted).then_some(r.row_id)),
        "_rowaddr" => Val::U((!r.deleted).then_some(r.address)),
        "_rowoffset" => Val::U(r.position),
        other => panic!("no column {other} in the model"),
    }
}

/// The names a read returns: the data columns asked for, then `_rowid`, `_rowaddr`.
fn names(columns: &Option<Vec<String>>, with_row_id: bool, with_row_address: bool) -> Vec<String> {
    let mut out = columns
        .clone()
        .unwrap_or_else(|| vec!["id".into(), "v".into(), "s".into()]);
    if with_row_id {
        out.push("_rowid".into());
    }
    if with_row_address {
        out.push("_rowaddr".into());
    }
    out
}

/// The rows of `b`, column by column as the model shows them.
fn rows_of(b: &RecordBatch) -> Vec<Vec<Val>> {
    let cols: Vec<Vec<Val>> = b
        .columns()
        .iter()
        .map(|c| match c.data_type() {
            DataType::Int64 => c.as_primitive::<Int64Type>().iter().map(Val::I).collect(),
            DataType::UInt64 => c.as_primitive::<UInt64Type>().iter().map(Val::U).collect(),
            DataType::Utf8 => c
                .as_string::<i32>()
                .iter()
                .map(|s| Val::S(s.map(str::to_string)))
                .collect(),
            other => panic!("unexpected column type {other}"),
        })
        .collect();
    (0..b.num_rows())
        .map(|i| cols.iter().map(|c| c[i].clone()).collect())
        .collect()
}

fn schema_names(b: &RecordBatch) -> Vec<String> {
    b.schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect()
}

#[derive(Clone, Debug)]
struct Read {
    columns: Option<Vec<String>>,
    filter: Option<Filter>,
    offset: Option<u64>,
    limit: Option<u64>,
    with_row_id: bool,
    with_row_address: bool,
    batch_size: usize,
    strict_batch_size: bool,
    /// Picks among the fragments left (by index, modulo their number; repeats dropped).
    fragments: Option<Vec<usize>>,
    /// Physical rows `start..start + len` of each fragment.
    row_range: Option<(u64, u64)>,
    /// Deleted rows too (of the fragments still in the manifest).
    include_deleted: bool,
}

fn read() -> impl Strategy<Value = Read> {
    (
        columns(),
        prop::option::of(filter()),
        prop::option::of(0u64..8),
        prop::option::of(0u64..10),
        any::<(bool, bool, bool)>(),
        1usize..8,
        prop::option::weighted(0.3, prop::collection::vec(0usize..8, 1..4)),
        prop::option::weighted(0.2, (0u64..5, 0u64..5)),
        prop::bool::weighted(0.2),
    )
        .prop_map(
            |(
                columns,
                filter,
                offset,
                limit,
                (rid, raddr, strict),
                batch_size,
                fragments,
                range,
                include_deleted,
            )| {
                // Where a deleted row read anyway would be among the live ones is not
                // defined: `_rowoffset` is read without them.
                let columns = columns.map(|c| {
                    c.into_iter()
                        .filter(|n| !include_deleted || n != "_rowoffset")
                        .collect::<Vec<_>>()
                });
                Read {
                    include_deleted,
                    columns,
                    filter,
                    offset,
                    limit,
                    with_row_id: rid,
                    with_row_address: raddr,
                    batch_size,
                    strict_batch_size: strict,
                    fragments,
                    row_range: range,
                }
            },
        )
}

impl Read {
    /// The fragment ids asked for, from those `spec` leaves.
    fn fragment_ids(&self, spec: &Spec) -> Option<Vec<u64>> {
        let left = spec.fragments();
        let picks = self.fragments.as_ref().filter(|_| !left.is_empty())?;
        let mut ids: Vec<u64> = Vec::new();
        for p in picks {
            let id = left[p % left.len()];
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        Some(ids)
    }

    fn options(&self, spec: &Spec) -> ScanOptions {
        ScanOptions {
            columns: self.columns.clone(),
            filter: self.filter.as_ref().map(|f| parse(&f.sql()).unwrap()),
            offset: self.offset,
            limit: self.limit,
            with_row_id: self.with_row_id,
            with_row_address: self.with_row_address,
            batch_size: self.batch_size,
            strict_batch_size: self.strict_batch_size,
            fragment_ids: self.fragment_ids(spec),
            row_range: self.row_range.map(|(start, len)| (start, start + len)),
            include_deleted: self.include_deleted,
            ..Default::default()
        }
    }

    /// What the read returns, computed on the model: live rows (every physical row with
    /// `include_deleted`) of the fragments asked for (in that order) within the row
    /// range, those the filter holds for (NULL is not true), then the offset skipped and
    /// the limit kept.
    fn expected(&self, spec: &Spec) -> Vec<Vec<Val>> {
        let live: Vec<Row> = spec
            .all_rows()
            .into_iter()
            .filter(|(_, deleted)| self.include_deleted || !deleted)
            .map(|(r, _)| r)
            .collect();
        let order = self.fragment_ids(spec).unwrap_or_else(|| spec.fragments());
        let in_range = |r: &Row| {
            self.row_range.is_none_or(|(start, len)| {
                (start..start + len).contains(&(r.address & 0xFFFF_FFFF))
            })
        };
        let names = names(&self.columns, self.with_row_id, self.with_row_address);
        order
            .iter()
            .flat_map(|f| live.iter().filter(move |r| r.address >> 32 == *f))
            .filter(|r| in_range(r))
            .filter(|r| self.filter.as_ref().is_none_or(|f| f.eval(r) == Some(true)))
            .skip(self.offset.unwrap_or(0) as usize)
            .take(self.limit.map_or(usize::MAX, |l| l as usize))
            .map(|r| names.iter().map(|n| model_value(r, n)).collect())
            .collect()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// A scan returns the model's rows, columns and order, in batches of at most
    /// `batch_size` rows (exactly that many but the last with `strict_batch_size`).
    #[test]
    fn a_scan_returns_what_the_model_reads(spec in spec(), read in read()) {
        rt().block_on(async {
            let ds = Arc::new(spec.build().await);
            let s = scan(ds, read.options(&spec)).unwrap();
            let schema = s.schema.clone();
            let batches: Vec<RecordBatch> = s.batches.try_collect().await.unwrap();
            let sizes: Vec<usize> = batches.iter().map(|b| b.num_rows()).collect();
            for (i, &n) in sizes.iter().enumerate() {
                prop_assert!(n <= read.batch_size, "batch sizes {:?}", sizes);
                if read.strict_batch_size {
                    let last = i + 1 == sizes.len();
                    prop_assert!(n == read.batch_size || (last && n > 0), "batch sizes {:?}", sizes);
                }
            }
            let all = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
            let expected_names = names(&read.columns, read.with_row_id, read.with_row_address);
            prop_assert_eq!(schema_names(&all), expected_names);
            prop_assert_eq!(rows_of(&all), read.expected(&spec));
            Ok(())
        })?;
    }

    /// A take returns the rows at the addresses asked for, in that order, repeats
    /// included; with a filter, those of them it holds for. Addresses of visible rows
    /// are found by position among the live rows and by row id (a deleted row's id, or
    /// one never handed out, finds nothing).
    #[test]
    fn a_take_returns_the_rows_asked_for_in_order(
        spec in spec(),
        picks in prop::collection::vec(0usize..64, 0..10),
        columns in columns(),
        flags in any::<(bool, bool)>(),
        filter in prop::option::of(filter()),
    ) {
        rt().block_on(async {
            let ds = Arc::new(spec.build().await);
            let live = spec.live();
            if live.is_empty() {
                prop_assert_eq!(ds.count_rows().await.unwrap(), 0);
                return Ok(());
            }
            let chosen: Vec<&Row> = picks.iter().map(|p| &live[p % live.len()]).collect();
            let addresses: Vec<u64> = chosen.iter().map(|r| r.address).collect();
            let (with_row_id, with_row_address) = flags;
            let projection = Projection {
                columns: columns.clone(),
                with_row_id,
                with_row_address,
                ..Default::default()
            };
            let names = names(&columns, with_row_id, with_row_address);
            let sql = filter.as_ref().map(|f| parse(&f.sql()).unwrap());
            let got = take_where(ds.clone(), &addresses, &projection, sql.as_ref()).await.unwrap();
            prop_assert_eq!(schema_names(&got), names.clone());
            let expected: Vec<Vec<Val>> = chosen
                .iter()
                .filter(|r| filter.as_ref().is_none_or(|f| f.eval(r) == Some(true)))
                .map(|r| names.iter().map(|n| model_value(r, n)).collect())
                .collect();
            prop_assert_eq!(rows_of(&got), expected);

            // Positions among the live rows, and row ids, lead to the same addresses.
            let positions: Vec<u64> = picks.iter().map(|p| (p % live.len()) as u64).collect();
            prop_assert_eq!(ds.addresses_of_indices(&positions).await.unwrap(), addresses.clone());
            // Errors name the table.
            let names_table = |e: crate::Error| e.to_string().contains(ds.uri());
            let past_end = ds.addresses_of_indices(&[live.len() as u64]).await;
            prop_assert!(past_end.is_err_and(names_table));
            let ids: Vec<u64> = chosen.iter().map(|r| r.row_id).collect();
            let found = ds.addresses_of_row_ids(&ids).await.unwrap();
            prop_assert_eq!(found, addresses.iter().map(|&a| Some(a)).collect::<Vec<_>>());
            let left = spec.fragments();
            for (row, deleted) in spec.all_rows() {
                if !deleted {
                    continue;
                }
                let found = ds.addresses_of_row_ids(&[row.row_id]).await;
                // Without stable ids, a row id is an address: one in a fragment that left
                // the manifest (all its rows deleted) is an error.
                let fragment_left = !spec.stable && !left.contains(&(row.address >> 32));
                match fragment_left {
                    true => prop_assert!(found.is_err(), "row {} gave {:?}", row.id, found),
                    false => prop_assert_eq!(found.unwrap(), vec![None], "row {}", row.id),
                }
            }
            if spec.stable {
                let never = spec.values.len() as u64 + 7;
                prop_assert_eq!(ds.addresses_of_row_ids(&[never]).await.unwrap(), vec![None]);
            } else {
                // Past the end of a fragment, or in a fragment the table does not have.
                let f = left[0];
                let past = (f << 32) | spec.rows_per_file;
                let found = ds.addresses_of_row_ids(&[past]).await;
                prop_assert!(found.is_err_and(names_table));
                let taken = take(ds.clone(), &[99 << 32], &projection).await;
                prop_assert!(taken.is_err_and(names_table));
            }
            Ok(())
        })?;
    }

    /// Compaction moves rows to new fragments but keeps their stable row ids: every
    /// row found by id before is found by the same id after, with the same values, and
    /// a scan shows the same ids on the same rows in the same order.
    #[test]
    fn stable_row_ids_survive_compaction(
        spec in spec().prop_map(|s| Spec { stable: true, ..s }),
        target in 2u64..12,
    ) {
        rt().block_on(async {
            let ds = spec.build().await;
            let opts = CompactionOptions { target_rows_per_fragment: target, ..Default::default() };
            let (compacted, _) = compact_files(&ds, &opts).await.unwrap();
            let compacted = Arc::new(compacted);
            let live = spec.live();
            let with_ids = ScanOptions {
                columns: Some(vec!["id".into(), "v".into(), "s".into()]),
                with_row_id: true,
                ..Default::default()
            };
            let s = scan(compacted.clone(), with_ids).unwrap();
            let schema = s.schema.clone();
            let batches: Vec<RecordBatch> = s.batches.try_collect().await.unwrap();
            let all = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
            let expected: Vec<Vec<Val>> = live
                .iter()
                .map(|r| ["id", "v", "s", "_rowid"].iter().map(|n| model_value(r, n)).collect())
                .collect();
            prop_assert_eq!(rows_of(&all), expected);

            let ids: Vec<u64> = live.iter().rev().map(|r| r.row_id).collect();
            let found = compacted.addresses_of_row_ids(&ids).await.unwrap();
            prop_assert!(found.iter().all(Option::is_some), "{:?}", found);
            let addresses: Vec<u64> = found.into_iter().flatten().collect();
            let projection = Projection { with_row_id: true, ..Default::default() };
            let got = take(compacted.clone(), &addresses, &projection).await.unwrap();
            let expected: Vec<Vec<Val>> = live
                .iter()
                .rev()
                .map(|r| ["id", "v", "s", "_rowid"].iter().map(|n| model_value(r, n)).collect())
                .collect();
            prop_assert_eq!(rows_of(&got), expected);
            let gone: Vec<u64> = spec
                .all_rows()
                .into_iter()
                .filter(|(_, d)| *d)
                .map(|(r, _)| r.row_id)
                .collect();
            let found = compacted.addresses_of_row_ids(&gone).await.unwrap();
            prop_assert!(found.iter().all(Option::is_none), "{:?}", found);
            Ok(())
        })?;
    }
}
