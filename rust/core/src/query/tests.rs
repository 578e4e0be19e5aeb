//! The query layer's rule: how a read is answered never changes what it returns. Random
//! filters, offsets and limits are answered with every scalar index kind on the filtered
//! column (and late materialization) and compared with a plain scan of the same table,
//! which evaluates the filter on every row; `count_rows` likewise.
use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use futures::TryStreamExt;
use proptest::prelude::*;

use super::{count_rows, run, Query};
use crate::dataset::Dataset;
use crate::expr::parse;
use crate::index::kind_from_user;
use crate::scan::{scan, ScanOptions};
use crate::test_util::{sql, uri, write};
use crate::write::index::{create_scalar_index, ScalarIndexParams};
use crate::write::{delete, WriteMode};

const ROWS: i64 = 3000;

fn batch(ids: std::ops::Range<i64>) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("k", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let k = ids.clone().map(|i| (i % 11 != 0).then_some((i * 7) % 50));
    let s = ids.clone().map(|i| Some(format!("s{}", i % 13)));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(ids)),
            Arc::new(Int64Array::from_iter(k)),
            Arc::new(StringArray::from_iter(s)),
        ],
    )
    .unwrap()
}

/// A runtime, and the tables with what makes each (named).
type Tables = (tokio::runtime::Runtime, Vec<(String, Arc<Dataset>)>);

/// Tables per index kind on `k` (and without one), each with rows deleted after the index
/// was built: one whose fragments the index all covers, and one with a fragment appended
/// that it does not.
fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let tables = rt.block_on(async {
            let mut out = Vec::new();
            for kind in ["NONE", "BTREE", "BITMAP", "ZONEMAP", "BLOOMFILTER"] {
                let ds = write(&uri(), batch(0..ROWS), WriteMode::Create, 700).await;
                let ds = match kind_from_user(kind) {
                    Some(kind) => {
                        let params = ScalarIndexParams {
                            kind,
                            name: None,
                            replace: false,
                            page_rows: Some(256),
                            probability: None,
                        };
                        create_scalar_index(&ds, "k", &params, 0).await.unwrap()
                    }
                    None => ds,
                };
                let ds = delete(&ds, &sql("id % 17 = 3"), 0).await.unwrap();
                out.push((kind.to_string(), Arc::new(ds.clone())));
                let ds = write(ds.uri(), batch(ROWS..ROWS + 400), WriteMode::Append, 700).await;
                out.push((format!("{kind} and an unindexed fragment"), Arc::new(ds)));
            }
            out
        });
        (rt, tables)
    })
}

fn ids(batches: Vec<RecordBatch>) -> Vec<i64> {
    batches
        .iter()
        .flat_map(|b| {
            b.column_by_name("id")
                .unwrap()
                .as_primitive::<Int64Type>()
                .values()
                .to_vec()
        })
        .collect()
}

/// A condition on the indexed column `k` (or on `id`, which no index covers).
fn condition() -> impl Strategy<Value = String> {
    let c = 0..55i64;
    prop_oneof![
        // Selective conditions (about 2% of rows) are those indices answer by taking.
        3 => c.clone().prop_map(|v| format!("k = {v}")),
        1 => c.clone().prop_map(|v| format!("k < {v}")),
        1 => c.clone().prop_map(|v| format!("k >= {v}")),
        1 => (c.clone(), c.clone()).prop_map(|(a, b)| format!("k BETWEEN {a} AND {b}")),
        1 => prop::collection::vec(c.clone(), 1..4).prop_map(|vs| {
            let list: Vec<String> = vs.iter().map(|v| v.to_string()).collect();
            format!("k IN ({})", list.join(", "))
        }),
        1 => Just("k IS NULL".to_string()),
        1 => (0..ROWS + 400).prop_map(|v| format!("id < {v}")),
    ]
}

fn filter() -> impl Strategy<Value = String> {
    condition().prop_recursive(2, 6, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) AND ({b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) OR ({b})")),
            inner.prop_map(|a| format!("NOT ({a})")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn indices_and_late_reads_return_what_a_scan_returns(
        filter in filter(),
        offset in prop::option::of(0u64..200),
        limit in prop::option::of(0u64..300),
    ) {
        let (rt, tables) = tables();
        rt.block_on(async {
            let expr = parse(&filter).unwrap();
            let options = ScanOptions {
                columns: Some(vec!["id".into(), "s".into()]),
                filter: Some(expr.clone()),
                offset,
                limit,
                batch_size: 500,
                ..Default::default()
            };
            for (kind, ds) in tables {
                let plain = scan(ds.clone(), options.clone()).unwrap();
                let expected = ids(plain.batches.try_collect().await.unwrap());
                let q = run(ds.clone(), Query::from(options.clone())).unwrap();
                let got = ids(q.batches.try_collect().await.unwrap());
                prop_assert_eq!(&got, &expected, "{} index, filter {}", kind, filter);
                let counted = count_rows(ds.clone(), Some(expr.clone()), None).await.unwrap();
                let all = ScanOptions { offset: None, limit: None, ..options.clone() };
                let every = ids(scan(ds.clone(), all).unwrap().batches.try_collect().await.unwrap());
                prop_assert_eq!(counted, every.len() as u64, "{} index, filter {}", kind, filter);
            }
            Ok(())
        })?;
    }
}

#[test]
fn a_query_without_an_index_or_search_is_the_scan() {
    let (rt, tables) = tables();
    rt.block_on(async {
        let ds = tables[1].1.clone();
        let options = ScanOptions {
            columns: Some(vec!["id".into()]),
            limit: Some(5),
            offset: Some(2),
            ..Default::default()
        };
        let q = run(ds.clone(), options.clone().into()).unwrap();
        assert_eq!(
            ids(q.batches.try_collect().await.unwrap()),
            vec![2, 4, 5, 6, 7]
        );
        // Row 3 is deleted (id % 17 = 3).
        let s = scan(ds, options).unwrap();
        assert_eq!(
            ids(s.batches.try_collect().await.unwrap()),
            vec![2, 4, 5, 6, 7]
        );
    });
}
