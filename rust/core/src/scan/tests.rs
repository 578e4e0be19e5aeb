//! Worked examples of reads: projection, filters, limit and offset, row ids and
//! addresses, row ranges, deleted rows, expressions and takes, on a small table whose
//! answers are written out by hand.
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt64Type};
use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};

use super::take::take;
use super::{Projection, ScanOptions};
use crate::dataset::Dataset;
use crate::expr::parse;
use crate::test_util::{scan_all, sql, uri, write};
use crate::write::{delete, WriteMode};

/// Ten rows in fragments of four (0..4, 4..8, 8..10); `s` is null on multiples of three;
/// rows 2 and 5 deleted.
async fn table() -> Dataset {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("s", DataType::Utf8, true),
    ]));
    let s: Vec<Option<String>> = (0..10)
        .map(|i| (i % 3 != 0).then(|| format!("v{i}")))
        .collect();
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(0..10)),
            Arc::new(StringArray::from(s)),
        ],
    )
    .unwrap();
    let ds = write(&uri(), batch, WriteMode::Create, 4).await;
    delete(&ds, &sql("id = 2 OR id = 5"), 0).await.unwrap()
}

fn int_column(b: &RecordBatch, name: &str) -> Vec<i64> {
    b.column_by_name(name)
        .unwrap()
        .as_primitive::<Int64Type>()
        .values()
        .to_vec()
}

fn u64_column(b: &RecordBatch, name: &str) -> Vec<u64> {
    b.column_by_name(name)
        .unwrap()
        .as_primitive::<UInt64Type>()
        .values()
        .to_vec()
}

fn options() -> ScanOptions {
    ScanOptions {
        batch_size: 3,
        ..Default::default()
    }
}

#[tokio::test]
async fn live_rows_in_order_with_their_addresses() {
    let ds = table().await;
    let b = scan_all(
        &ds,
        ScanOptions {
            with_row_address: true,
            with_row_id: true,
            ..options()
        },
    )
    .await;
    assert_eq!(int_column(&b, "id"), vec![0, 1, 3, 4, 6, 7, 8, 9]);
    // An address is the fragment id in the high 32 bits and the row's offset in it.
    let frag = |f: u64, o: u64| (f << 32) | o;
    assert_eq!(
        u64_column(&b, "_rowaddr"),
        vec![
            frag(0, 0),
            frag(0, 1),
            frag(0, 3),
            frag(1, 0),
            frag(1, 2),
            frag(1, 3),
            frag(2, 0),
            frag(2, 1)
        ]
    );
    // Without stable row ids the row id is the address.
    assert_eq!(u64_column(&b, "_rowid"), u64_column(&b, "_rowaddr"));
    let schema = b.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, vec!["id", "s", "_rowid", "_rowaddr"]);
}

#[tokio::test]
async fn filters_see_live_rows_and_sql_nulls() {
    let ds = table().await;
    let scan = |filter: &str| {
        let ds = ds.clone();
        let filter = parse(filter).unwrap();
        async move {
            let b = scan_all(
                &ds,
                ScanOptions {
                    filter: Some(filter),
                    ..options()
                },
            )
            .await;
            int_column(&b, "id")
        }
    };
    assert_eq!(scan("id >= 4").await, vec![4, 6, 7, 8, 9]);
    // A null `s` is neither equal nor unequal to anything.
    assert_eq!(scan("s <> 'v1'").await, vec![4, 7, 8]);
    assert_eq!(scan("s IS NULL").await, vec![0, 3, 6, 9]);
    assert_eq!(scan("NOT (s IS NOT NULL) AND id > 3").await, vec![6, 9]);
    // Deleted rows never match.
    assert_eq!(scan("id = 2 OR id = 5").await, Vec::<i64>::new());
}

#[tokio::test]
async fn limit_and_offset_count_live_rows_after_the_filter() {
    let ds = table().await;
    let b = scan_all(
        &ds,
        ScanOptions {
            filter: Some(parse("id > 0").unwrap()),
            offset: Some(2),
            limit: Some(3),
            columns: Some(vec!["id".into()]),
            ..options()
        },
    )
    .await;
    assert_eq!(int_column(&b, "id"), vec![4, 6, 7]);
    assert_eq!(b.num_columns(), 1);
}

#[tokio::test]
async fn fragments_row_ranges_and_deleted_rows() {
    let ds = table().await;
    let only = |ids: Vec<u64>, range: Option<(u64, u64)>, include_deleted: bool| {
        let ds = ds.clone();
        async move {
            let b = scan_all(
                &ds,
                ScanOptions {
                    fragment_ids: Some(ids),
                    row_range: range,
                    include_deleted,
                    ..options()
                },
            )
            .await;
            int_column(&b, "id")
        }
    };
    // Fragments in the order asked for.
    assert_eq!(only(vec![2, 0], None, false).await, vec![8, 9, 0, 1, 3]);
    // Physical rows 1..3 of each fragment, deleted ones still dropped.
    assert_eq!(only(vec![0, 1], Some((1, 3)), false).await, vec![1, 6]);
    // Every physical row, deleted ones too.
    assert_eq!(only(vec![1], None, true).await, vec![4, 5, 6, 7]);
    // A deleted row read anyway has no row id or address (NULL, as pylance shows it).
    let with_ids = |include_deleted| ScanOptions {
        fragment_ids: Some(vec![1]),
        include_deleted,
        with_row_id: true,
        with_row_address: true,
        ..options()
    };
    let live = scan_all(&ds, with_ids(false)).await;
    let all = scan_all(&ds, with_ids(true)).await;
    let live_ids = int_column(&live, "id");
    for name in ["_rowid", "_rowaddr"] {
        let shown = all
            .column_by_name(name)
            .unwrap()
            .as_primitive::<UInt64Type>();
        let ids = int_column(&all, "id");
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(
                shown.is_valid(i),
                live_ids.contains(id),
                "{name} of row {id}"
            );
        }
        let valid: Vec<u64> = shown.iter().flatten().collect();
        assert_eq!(valid, u64_column(&live, name));
    }
}

#[tokio::test]
async fn expressions_as_columns() {
    let ds = table().await;
    let b = scan_all(
        &ds,
        ScanOptions {
            projection: Some(vec![
                ("twice".into(), parse("id * 2").unwrap()),
                ("has_s".into(), parse("s IS NOT NULL").unwrap()),
            ]),
            limit: Some(3),
            ..options()
        },
    )
    .await;
    assert_eq!(int_column(&b, "twice"), vec![0, 2, 6]);
    let has: Vec<bool> = b
        .column_by_name("has_s")
        .unwrap()
        .as_boolean()
        .iter()
        .map(|v| v.unwrap())
        .collect();
    assert_eq!(has, vec![false, true, false]);
}

#[tokio::test]
async fn take_returns_rows_in_the_order_asked() {
    let ds = Arc::new(table().await);
    let addr = |f: u64, o: u64| (f << 32) | o;
    let projection = Projection {
        columns: Some(vec!["id".into(), "s".into()]),
        ..Default::default()
    };
    let b = take(
        ds.clone(),
        &[addr(2, 1), addr(0, 0), addr(1, 3), addr(2, 1)],
        &projection,
    )
    .await
    .unwrap();
    assert_eq!(int_column(&b, "id"), vec![9, 0, 7, 9]);
    let s: Vec<Option<&str>> = b.column(1).as_string::<i32>().iter().collect();
    assert_eq!(s, vec![None, None, Some("v7"), None]);
}

#[tokio::test]
async fn counting_rows_with_and_without_a_filter() {
    use crate::query::count_rows;
    let ds = Arc::new(table().await);
    assert_eq!(count_rows(ds.clone(), None, None).await.unwrap(), 8);
    // Fragment 1 holds 4..8, 5 deleted.
    assert_eq!(count_rows(ds.clone(), None, Some(1)).await.unwrap(), 3);
    let nulls = parse("s IS NULL").unwrap();
    assert_eq!(count_rows(ds.clone(), Some(nulls), None).await.unwrap(), 4);
    let big = parse("id > 4").unwrap();
    assert_eq!(count_rows(ds.clone(), Some(big), Some(1)).await.unwrap(), 2);
    assert!(count_rows(ds, None, Some(9)).await.is_err());
}

/// Six rows of `id` and `s: struct<a: int64, b: utf8, c: struct<x: int64, y: int64>>`:
/// `s` is null on row 1, `s.c` on row 2, `s.a` on row 3.
async fn struct_table() -> Dataset {
    use arrow_array::StructArray;
    use arrow_buffer::NullBuffer;
    let c_fields = arrow_schema::Fields::from(vec![
        Field::new("x", DataType::Int64, true),
        Field::new("y", DataType::Int64, true),
    ]);
    let c = StructArray::new(
        c_fields.clone(),
        vec![
            Arc::new(Int64Array::from_iter_values(10..16)),
            Arc::new(Int64Array::from_iter_values(20..26)),
        ],
        Some(NullBuffer::from(vec![true, true, false, true, true, true])),
    );
    let s_fields = arrow_schema::Fields::from(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Utf8, true),
        Field::new("c", DataType::Struct(c_fields), true),
    ]);
    let s = StructArray::new(
        s_fields.clone(),
        vec![
            Arc::new(Int64Array::from(vec![
                Some(0),
                Some(1),
                Some(2),
                None,
                Some(4),
                Some(5),
            ])),
            Arc::new(StringArray::from(vec!["k", "k", "m", "k", "m", "k"])),
            Arc::new(c),
        ],
        Some(NullBuffer::from(vec![true, false, true, true, true, true])),
    );
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("s", DataType::Struct(s_fields), true),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![Arc::new(Int64Array::from_iter_values(0..6)), Arc::new(s)],
    )
    .unwrap();
    write(&uri(), batch, WriteMode::Create, 4).await
}

#[tokio::test]
async fn dotted_columns_kept_inside_their_structs() {
    let ds = struct_table().await;
    let asked = ScanOptions {
        columns: Some(vec!["s.c.x".into(), "id".into(), "s.a".into()]),
        keep_structs: true,
        ..Default::default()
    };
    let b = scan_all(&ds, asked.clone()).await;
    // One column per top-level field, the struct's fields in the table's order.
    assert_eq!(
        b.schema()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect::<Vec<_>>(),
        vec!["s", "id"]
    );
    let s = b.column(0).as_struct();
    assert_eq!(
        s.fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect::<Vec<_>>(),
        vec!["a", "c"]
    );
    let c = s.column(1).as_struct();
    assert_eq!(c.num_columns(), 1);
    // Parent nulls survive the pruning.
    let valid = |a: &dyn Array| (0..a.len()).map(|i| a.is_valid(i)).collect::<Vec<_>>();
    assert_eq!(valid(s), vec![true, false, true, true, true, true]);
    assert_eq!(valid(c), vec![true, false, false, true, true, true]);
    assert_eq!(
        valid(s.column(0)),
        vec![true, false, true, false, true, true]
    );
    assert_eq!(c.column(0).as_primitive::<Int64Type>().value(4), 14);

    // A filter on a field not asked for is read, and left out of what is returned.
    let filtered = scan_all(
        &ds,
        ScanOptions {
            filter: Some(parse("s.b = 'm'").unwrap()),
            ..asked
        },
    )
    .await;
    assert_eq!(filtered.schema().field(0), b.schema().field(0));
    assert_eq!(int_column(&filtered, "id"), vec![2, 4]);

    // Without the flag, each dotted name is a column of its own (as in pylance).
    let flat = scan_all(
        &ds,
        ScanOptions {
            columns: Some(vec!["s.c.x".into(), "s.a".into()]),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(flat.schema().field(0).name(), "s.c.x");
    assert_eq!(flat.num_columns(), 2);
}
