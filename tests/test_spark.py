"""The `lance` Spark data source and the mapInArrow helpers, on a local[2] SparkSession,
against datasets pylance writes and reads."""

from __future__ import annotations

import os
import time

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_core
from datagen import nested_columns, primitive_columns

from lance_core.spark import LanceDataSource, add_columns, read_fragments  # noqa: E402


def _scan_rows(df) -> int:
    """Rows the lance scan handed to Spark in the last run of `df` (its SQL metric)."""
    plan = df._jdf.queryExecution().executedPlan()
    leaves = plan.collectLeaves()
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        if "BatchScan" in leaf.nodeName():
            return int(leaf.metrics().apply("numOutputRows").value())
    raise AssertionError("no BatchScan in the plan")


def _wait_for_tasks(spark) -> None:
    """Tasks of a failed job may still be finishing after the job's error is raised."""
    tracker = spark.sparkContext.statusTracker()
    for _ in range(200):
        if not tracker.getActiveStageIds():
            return
        time.sleep(0.05)


def _type_table(n=600, every=False) -> pa.Table:
    cols = primitive_columns(n)
    cols.update(nested_columns(n))
    if every:
        # Values Spark has no exact home for: sub-microsecond times (truncated) and
        # decimals of more than 38 digits (read as text).
        cols["timestamp_ns_sub_micro"] = pa.array([None if i % 7 == 0 else 1_700_000_000_123_456_789 + i * 1001
                                                   for i in range(n)], pa.timestamp("ns"))
        cols["time64_ns_sub_micro"] = pa.array([i * 1_000_003 for i in range(n)], pa.time64("ns"))
        return pa.table(cols)
    # Not written back by Spark as they were: the nanosecond duration has sub-microsecond
    # values and decimal256(40) more than 38 digits.
    for name in ("duration_ns", "decimal256"):
        del cols[name]
    return pa.table(cols)


def test_read_every_type(spark, tmp_path):
    """Every type of the type table arrives in Spark, read as a whole table, with the
    values pylance reads (compared in Arrow, each column cast as PySpark casts pandas data:
    nanoseconds dropped)."""
    uri = str(tmp_path / "types.lance")
    t = _type_table(every=True)
    lance.write_dataset(t, uri, max_rows_per_file=250)
    ref = lance.dataset(uri).to_table()
    got = spark.read.format("lance").load(uri).toArrow()
    assert got.column_names == ref.column_names
    assert got.num_rows == ref.num_rows
    for name in ref.column_names:
        expected = pc.cast(ref.column(name), got.schema.field(name).type, safe=False)
        assert expected.equals(got.column(name)), name
    assert got.schema.field("decimal256").type == pa.string()
    assert got.column("timestamp_ns_sub_micro")[1].value == (1_700_000_000_123_456_789 + 1001) // 1000


def test_write_type_table_read_by_pylance(spark, tmp_path):
    """Spark writes what it read; pylance reads the same values back."""
    src, dst = str(tmp_path / "src.lance"), str(tmp_path / "dst.lance")
    lance.write_dataset(_type_table(), src)
    df = spark.read.format("lance").load(src)
    df.write.format("lance").mode("append").save(dst)  # append creates the dataset
    ref = lance.dataset(dst).to_table()
    spark_side = df.toArrow()
    assert ref.num_rows == spark_side.num_rows
    for name in spark_side.column_names:
        assert ref.column(name).equals(pc.cast(spark_side.column(name), ref.schema.field(name).type)), name
    # and appending again converts Spark's types to the dataset's
    df.write.format("lance").mode("append").save(dst)
    assert lance.dataset(dst).count_rows() == 2 * ref.num_rows
    assert lance.dataset(dst).version == 2


def test_nanoseconds_truncated_or_refused(spark, tmp_path):
    """A pandas datetime column (timestamp[ns]) never stops a read: nanoseconds are dropped
    as PySpark drops them, or refused with timestamp_nanos=error, naming the column."""
    import pandas as pd

    uri = str(tmp_path / "ns.lance")
    frame = pd.DataFrame({"id": [1, 2], "ts_ns": pd.to_datetime([1_000_000_001_001, -1_001], unit="ns")})
    lance.write_dataset(frame, uri)
    rows = spark.read.format("lance").load(uri).select("id", "ts_ns").toArrow()
    assert rows.column("ts_ns").cast(pa.int64()).to_pylist() == [1_000_000_001, -1]  # toward zero, as Arrow's cast
    assert spark.read.format("lance").load(uri).select("id").collect()[0].id == 1
    with pytest.raises(Exception, match="column 'ts_ns'.*would lose data.*timestamp_nanos"):
        spark.read.format("lance").option("timestamp_nanos", "error").load(uri).collect()
    with pytest.raises(Exception, match="timestamp_nanos is 'truncate' or 'error'"):
        spark.read.format("lance").option("timestamp_nanos", "round").load(uri).collect()
    wide = str(tmp_path / "wide.lance")
    lance.write_dataset(pa.table({"d": pa.array([10**39, None], pa.decimal256(40, 0))}), wide)
    assert [r.d for r in spark.read.format("lance").load(wide).collect()] == [str(10**39), None]


def test_reader_hooks_prune_columns_and_push_limit(tmp_path):
    """pruneColumns (SPARK-51713) and pushLimit (SPARK-58551), called as an engine that
    supports them would: only the required columns are read, and only the partitions that
    hold the first rows."""
    from pyspark.sql.types import LongType, StructField, StructType

    uri = str(tmp_path / "hooks.lance")
    n = 1000
    lance.write_dataset(pa.table({"id": pa.array(range(n), pa.int64()), "s": [f"s{i}" for i in range(n)],
                                  "x": pa.array(np.arange(n) / 2)}), uri, max_rows_per_file=100)
    lance.dataset(uri).delete("id < 150")  # the first fragment is gone, the second half deleted
    source = LanceDataSource({"path": uri})
    reader = source.reader(source.schema())
    assert len(reader.partitions()) == 9
    pruned = reader.pruneColumns(StructType([StructField("x", LongType()), StructField("id", LongType())]))
    assert pruned.fieldNames() == ["id", "x"]  # the source's order, the source's types
    assert reader.pushLimit(120) is True
    parts = reader.partitions()
    assert [p.fragment_id for p in parts] == [1, 2]  # 50 + 100 live rows reach 120
    batches = [b for p in parts for b in reader.read(p)]
    assert all(b.schema.names == ["id", "x"] for b in batches)
    got = pa.Table.from_batches(batches)
    assert got.num_rows <= 2 * 120 and got.column("id").to_pylist()[:120] == list(range(150, 270))
    # With a pushed filter every partition is read, each stopping at the limit.
    reader = source.reader(source.schema())
    reader.predicates.append("id % 2 = 0")
    reader.pushLimit(10)
    assert len(reader.partitions()) == 9
    assert all(sum(b.num_rows for b in reader.read(p)) <= 10 for p in reader.partitions())


def test_count_from_metadata(spark, tmp_path):
    from lance_core.spark import count

    uri = str(tmp_path / "count.lance")
    lance.write_dataset(pa.table({"id": pa.array(range(1000), pa.int64())}), uri, max_rows_per_file=300)
    lance.dataset(uri).delete("id % 10 = 0")
    assert count(spark, uri) == 900 == spark.read.format("lance").load(uri).count()
    assert count(spark, uri, filter="id < 100") == 90
    assert count(None, uri, version=1) == 1000


def test_aggregate_matches_spark_group_by(spark, tmp_path):
    """`lance_core.spark.aggregate` (partial aggregation in the read tasks) gives the very
    rows and types of Spark's groupBy over the data source: null keys and values, deleted
    rows, a filter, fragments cut into ranges, an empty result."""
    from pyspark.sql import functions as F

    from lance_core.spark import aggregate

    rng = np.random.default_rng(3)
    n = 6000
    t = pa.table({"k": pa.array(rng.choice(["a", "b", None], n).tolist()),
                  "k2": pa.array(rng.integers(0, 3, n), pa.uint8()),
                  "i": pa.array(np.where(rng.random(n) < 0.2, None, rng.integers(-5, 5, n)).tolist(), pa.int32()),
                  "f": pa.array(rng.random(n), pa.float32()),
                  "s": pa.array([f"s{v}" for v in rng.integers(0, 99, n)])})
    uri = str(tmp_path / "agg.lance")
    lance.write_dataset(t, uri, max_rows_per_file=2500)
    lance.dataset(uri).delete("s = 's5'")
    where = "i IS NOT NULL OR f > 0.5"
    got = aggregate(spark, uri, {"n": ("count", "*"), "ni": ("count", "i"), "si": ("sum", "i"), "mi": ("mean", "i"),
                                 "sf": ("sum", "f"), "mx": ("max", "s"), "mn": ("min", "f"), "av": ("avg", "f")},
                    by=["k", "k2"], filter=where, rows_per_partition=1000)
    df = spark.read.format("lance").load(uri).filter(where)
    want = df.groupBy("k", "k2").agg(F.count("*").alias("n"), F.count("i").alias("ni"), F.sum("i").alias("si"),
                                     F.mean("i").alias("mi"), F.sum("f").alias("sf"), F.max("s").alias("mx"),
                                     F.min("f").alias("mn"), F.avg("f").alias("av"))
    assert got.schema == want.schema
    key = lambda r: (str(r.k), r.k2)  # noqa: E731
    rows, expected = sorted(got.collect(), key=key), sorted(want.collect(), key=key)
    assert len(rows) == 9
    for a, b in zip(rows, expected):
        assert (a.k, a.k2, a.n, a.ni, a.si, a.mx, a.mn) == (b.k, b.k2, b.n, b.ni, b.si, b.mx, b.mn)
        for c in ("mi", "sf", "av"):
            assert a[c] == pytest.approx(b[c], rel=1e-12)
    # No keys: one row, also when nothing matches.
    assert aggregate(spark, uri, {"n": ("count", "*")}).collect()[0].n == lance.dataset(uri).count_rows()
    empty = aggregate(spark, uri, {"n": ("count", "*"), "m": ("mean", "i"), "s": ("sum", "i")}, filter="i > 100")
    assert [tuple(r) for r in empty.collect()] == [(0, None, None)]
    for bad, match in (({"x": ("median", "i")}, "unknown function"), ({"x": ("sum", "s")}, "cannot sum column 's'"),
                       ({"x": ("max", "nope")}, "not a column"), ({"x": ("sum", "*")}, "only count")):
        with pytest.raises(lance_core.InvalidInputError, match=match):
            aggregate(spark, uri, bad)
    with pytest.raises(lance_core.InvalidInputError, match="cannot group by"):
        aggregate(spark, uri, {"n": ("count", "*")}, by="nope")


def test_aggregate_long_overflow_as_spark(spark, tmp_path):
    """A long sum that leaves the long range fails as Spark's (ANSI mode, the default) or
    wraps around as Spark's (ANSI off); a mean of the same values does not overflow."""
    from pyspark.sql import functions as F

    from lance_core.spark import aggregate

    big = 1 << 62
    uri = str(tmp_path / "big.lance")
    lance.write_dataset(pa.table({"k": ["a", "a", "b", "a"], "v": pa.array([big, big, 5, big], pa.int64())}), uri)
    aggs = {"s": ("sum", "v"), "m": ("mean", "v")}
    with pytest.raises(Exception, match="sum of column 'v' overflows a long"):
        aggregate(spark, uri, aggs, by="k").collect()
    means = sorted(tuple(r) for r in aggregate(spark, uri, {"m": ("mean", "v")}, by="k").collect())
    assert means == [("a", float(big)), ("b", 5.0)]
    spark.conf.set("spark.sql.ansi.enabled", "false")
    try:
        got = sorted(tuple(r) for r in aggregate(spark, uri, aggs, by="k").collect())
        df = spark.read.format("lance").load(uri)
        want = sorted(tuple(r) for r in df.groupBy("k").agg(F.sum("v").alias("s"), F.mean("v").alias("m")).collect())
    finally:
        spark.conf.unset("spark.sql.ansi.enabled")
    assert got == want == [("a", -big, float(big)), ("b", 5, 5.0)]
    # Values that cancel out: the exact sum fits in a long, and is returned.
    uri = str(tmp_path / "cancel.lance")
    lance.write_dataset(pa.table({"v": pa.array([big, big, big, -big, -big], pa.int64())}), uri)
    assert aggregate(spark, uri, {"s": ("sum", "v")}).collect()[0].s == big


def test_extension_types(spark, tmp_path):
    """bfloat16 vectors read as float arrays, JSON as text."""
    from lance.arrow import BFloat16Type

    n = 100
    bits = [bytes([0, 63 + i % 2]) for i in range(n * 2)]  # 0.5 and 2.0
    bf16 = pa.ExtensionArray.from_storage(BFloat16Type(), pa.array(bits, pa.binary(2)))
    t = pa.table({"v": pa.FixedSizeListArray.from_arrays(bf16, 2),
                  "doc": pa.array(['{"a": %d}' % i for i in range(n)], pa.json_(pa.string()))})
    uri = str(tmp_path / "ext.lance")
    lance.write_dataset(t, uri)
    rows = spark.read.format("lance").load(uri).collect()
    assert rows[0].v == [0.5, 2.0] and rows[1].v == [0.5, 2.0]
    assert [r.doc for r in rows[:2]] == ['{"a":0}', '{"a":1}']


def test_versions_tags_columns_and_row_ids(spark, tmp_path):
    uri = str(tmp_path / "tt.lance")
    lance.write_dataset(pa.table({"id": range(100), "s": [str(i) for i in range(100)]}), uri)
    lance.write_dataset(pa.table({"id": range(100, 150), "s": ["x"] * 50}), uri, mode="append")
    lance.dataset(uri).tags.create("first", 1)
    def read():  # a reader keeps the options it was given: a fresh one each time
        return spark.read.format("lance")

    assert read().load(uri).count() == 150
    assert read().option("version", "1").load(uri).count() == 100
    assert read().option("version", "first").load(uri).count() == 100
    df = read().option("columns", "s").option("with_row_id", "true").load(uri)
    assert df.columns == ["s", "_rowid"]
    ref = lance.dataset(uri).to_table(columns=["s"], with_row_id=True)
    assert sorted(df.collect()) == sorted(zip(ref.column("s").to_pylist(), ref.column("_rowid").to_pylist()))
    # a user schema that is a subset projects too
    assert spark.read.format("lance").schema("id long").load(uri).columns == ["id"]


@pytest.mark.parametrize("version", [None, "2.0", "legacy"])
def test_deleted_rows_never_appear_and_large_fragments_split(spark, tmp_path, version):
    """Also for datasets in the older formats, whose pages are read differently."""
    uri = str(tmp_path / "big.lance")
    n = 600_000
    extra = {"data_storage_version": version} if version else {}
    lance.write_dataset(pa.table({"id": np.arange(n), "g": np.arange(n) % 7}), uri, **extra)  # one fragment
    lance.dataset(uri).delete("g = 3")
    def load(pushdown="true"):
        return (spark.read.format("lance").option("rows_per_partition", "200000").option("pushdown", pushdown)
                .load(uri))

    assert load().rdd.getNumPartitions() == 3
    assert load().count() == n - len(range(3, n, 7))
    assert load().filter("g = 3").count() == 0
    assert load().agg({"id": "sum"}).collect()[0][0] == sum(i for i in range(n) if i % 7 != 3)
    # Spark reuses the reader of a DataFrame's filtered query for its later unfiltered
    # ones; without pushdown a DataFrame can be reused freely.
    df = load("false")
    assert df.filter("g = 4").count() == len(range(4, n, 7))
    assert df.count() == n - len(range(3, n, 7))


FILTERS = [
    ("id = 7", "id = 7"),
    ("id > 990", "id > 990"),
    ("id >= 990", "id >= 990"),
    ("id < 5", "id < 5"),
    ("id <= 5", "id <= 5"),
    ("id <> 5 AND id < 10", "id != 5 AND id < 10"),
    ("s IN ('a', 'b%')", "s IN ('a', 'b%')"),
    ("s IS NULL", "s IS NULL"),
    ("s IS NOT NULL AND id < 20", "s IS NOT NULL AND id < 20"),
    ("s LIKE 'a%'", "s LIKE 'a%'"),
    ("endswith(s, '_z')", "s LIKE '%\\_z'"),
    ("contains(s, '%')", "s LIKE '%\\%%'"),
    ("contains(s, \"'\")", "s LIKE '%''%'"),
    ("startswith(s, 'a')", "s LIKE 'a%'"),
    ("s <=> 'a'", "s = 'a'"),
    ("s <=> NULL", "s IS NULL"),
    ("NOT (id > 3) AND d > 0.5", "NOT (id > 3) AND d > 0.5"),
    ("flag", "flag = TRUE"),
    ("day = DATE '2024-01-03'", "day = DATE '2024-01-03'"),
    ("u > 18446744073709551000", "u > 18446744073709551000"),
    ("st.x >= 995", "st.x >= 995"),
    ("st.y = 'y3'", "st.y = 'y3'"),
]


@pytest.fixture(scope="module")
def filter_dataset(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("filters") / "f.lance")
    n = 1000
    words = ["a", "b%", "c_z", "a'b", "50%", None, "abc"]
    import datetime as dt
    t = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "s": pa.array([words[i % 7] for i in range(n)]),
        "d": pa.array([(i % 10) / 10 for i in range(n)]),
        "flag": pa.array([i % 3 == 0 for i in range(n)]),
        "day": pa.array([dt.date(2024, 1, 1 + i % 5) for i in range(n)]),
        "u": pa.array([2**64 - 1 - i for i in range(n)], pa.uint64()),
        "st": pa.array([None if i % 11 == 0 else {"x": i, "y": f"y{i % 4}"} for i in range(n)],
                       pa.struct([("x", pa.int32()), ("y", pa.string())])),
    })
    lance.write_dataset(t, uri, max_rows_per_file=400)
    return uri


@pytest.mark.parametrize("spark_filter,lance_filter", FILTERS)
def test_filters_pushed_down(spark, filter_dataset, spark_filter, lance_filter):
    """Each filter is taken by the source (the scan hands Spark only matching rows) and
    gives the rows pylance's own filter gives."""
    expected = lance.dataset(filter_dataset).to_table(filter=lance_filter, columns=["id"]).column("id").to_pylist()
    # Read by tasks (not while planning, as so few rows would be): their scan's metric counts.
    df = spark.read.format("lance").option("local_result_rows", "0").load(filter_dataset) \
        .filter(spark_filter).select("id")
    got = sorted(r.id for r in df.collect())
    assert got == sorted(expected)
    assert _scan_rows(df) == len(expected)


def test_filters_not_taken_are_left_to_spark(spark, filter_dataset):
    df = spark.read.format("lance").option("local_result_rows", "0").load(filter_dataset) \
        .filter("id % 100 = 1 AND id < 500")
    assert sorted(r.id for r in df.collect()) == [1, 101, 201, 301, 401]
    assert _scan_rows(df) == 500  # id < 500 pushed; the modulo evaluated by Spark


def test_append_and_overwrite(spark, tmp_path):
    uri = str(tmp_path / "w.lance")
    df = spark.range(0, 1000).selectExpr("id", "cast(id % 5 as string) as g")
    df.write.format("lance").mode("overwrite").save(uri)  # overwrite of nothing creates
    df.write.format("lance").mode("append").save(uri)
    ds = lance.dataset(uri)
    assert (ds.version, ds.count_rows()) == (2, 2000)
    spark.range(0, 10).selectExpr("id * 2 as x").write.format("lance").mode("overwrite").save(uri)
    ds = lance.dataset(uri)
    assert ds.version == 3 and ds.schema.names == ["x"] and ds.count_rows() == 10
    assert spark.read.format("lance").option("version", "2").load(uri).count() == 2000
    with pytest.raises(Exception, match="cannot append"):
        spark.range(3).selectExpr("id as nope").write.format("lance").mode("append").save(uri)
    assert lance.dataset(uri).version == 3


def test_two_jobs_appending_at_once(spark, tmp_path):
    uri = str(tmp_path / "c.lance")
    spark.range(0, 10).write.format("lance").mode("append").save(uri)
    errors = []

    def job(start):
        # Python data sources are registered per session, and a JVM thread started for a
        # Python thread has no active session: give it one.
        spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
        try:
            spark.range(start, start + 5000, numPartitions=2).write.format("lance").mode("append").save(uri)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(str(e)[:300] + str(getattr(e, "java_exception", ""))[:600])

    from pyspark import InheritableThread

    threads = [InheritableThread(target=job, args=(s,)) for s in (100_000, 200_000)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    ds = lance_core.dataset(uri)
    assert ds.version == 3
    ids = sorted(ds.to_table().column("id").to_pylist())
    assert ids == list(range(10)) + list(range(100_000, 105_000)) + list(range(200_000, 205_000))


def test_failed_job_leaves_no_version_and_no_files(spark, tmp_path):
    uri = str(tmp_path / "f.lance")
    spark.range(0, 100).write.format("lance").mode("append").save(uri)
    before = sorted(os.listdir(os.path.join(uri, "data")))

    from pyspark.sql.functions import udf

    @udf("long")
    def boom(x):
        if x == 7777:
            raise ValueError("task failure on purpose")
        return x

    bad = spark.range(0, 10000, numPartitions=4).select(boom("id").alias("id"))
    with pytest.raises(Exception, match="task failure on purpose"):
        bad.write.format("lance").mode("append").save(uri)
    _wait_for_tasks(spark)
    assert lance.dataset(uri).version == 1
    assert sorted(os.listdir(os.path.join(uri, "data"))) == before


def test_read_fragments(spark, tmp_path):
    uri = str(tmp_path / "rf.lance")
    lance.write_dataset(pa.table({"id": range(5000), "s": [f"v{i % 9}" for i in range(5000)]}), uri,
                        max_rows_per_file=1500)
    lance.dataset(uri).delete("id % 10 = 0")
    df = read_fragments(spark, uri, columns=["id", "s"], filter="s = 'v3' AND id > 100")
    expected = lance.dataset(uri).to_table(filter="s = 'v3' AND id > 100")
    assert sorted(r.id for r in df.collect()) == sorted(expected.column("id").to_pylist())
    assert read_fragments(spark, uri, version=1).count() == 5000


def test_add_columns(spark, tmp_path):
    """New columns computed on the executors: one new version, one new file per fragment,
    existing files untouched, deleted rows kept aligned, pylance reads the result."""
    uri = str(tmp_path / "ac.lance")
    lance.write_dataset(pa.table({"id": pa.array(range(3000), pa.int64()), "x": [float(i) for i in range(3000)]}),
                        uri, max_rows_per_file=1000)
    lance.dataset(uri).delete("id % 3 = 0")
    files_before = {f.fragment_id: [d.path for d in f.data_files()] for f in lance.dataset(uri).get_fragments()}

    def double(batch: pa.RecordBatch) -> pa.RecordBatch:
        return pa.record_batch({"twice": pc.multiply(batch.column("x"), 2.0),
                                "label": pc.cast(batch.column("id"), pa.string())})

    out = pa.schema([("twice", pa.float64()), ("label", pa.string())])
    ds = add_columns(spark, uri, double, out, input_columns=["x", "id"])
    assert ds.version == 3
    ref = lance.dataset(uri)
    t = ref.to_table()
    assert t.num_rows == 2000
    assert pc.all(pc.equal(t.column("twice"), pc.multiply(t.column("x"), 2.0))).as_py()
    assert t.column("label").to_pylist() == [str(i) for i in t.column("id").to_pylist()]
    for f in ref.get_fragments():
        paths = [d.path for d in f.data_files()]
        assert paths[:-1] == files_before[f.fragment_id] and len(paths) == 2
    assert lance_core.dataset(uri).to_table().equals(t)
    with pytest.raises(Exception, match="already has one"):
        add_columns(spark, uri, double, out, input_columns=["x", "id"])


def test_abort_deletes_files_of_lost_and_late_tasks(tmp_path):
    """A task whose message never reached the driver, and one that finishes after the
    abort: neither leaves a file behind."""
    from pyspark.sql.types import LongType, StructField, StructType

    from lance_core.spark import LanceWriter

    uri = str(tmp_path / "ab.lance")
    writer = LanceWriter(uri, StructType([StructField("id", LongType())]), False, {})
    batch = pa.record_batch({"id": pa.array([1, 2], pa.int64())})
    writer.write(iter([batch]))  # its message is lost
    data = os.path.join(uri, "data")
    assert len(os.listdir(data)) == 1
    writer.abort([])
    assert os.listdir(data) == []
    late = writer.write(iter([batch]))
    assert late.fragments == [] and os.listdir(data) == []
    with pytest.raises(lance_core.DatasetNotFoundError):
        lance_core.dataset(uri)


def test_failed_add_columns_leaves_nothing(spark, tmp_path):
    uri = str(tmp_path / "acf.lance")
    lance.write_dataset(pa.table({"id": pa.array(range(4000), pa.int64())}), uri, max_rows_per_file=1000)
    before = sorted(os.listdir(os.path.join(uri, "data")))

    def sometimes(batch: pa.RecordBatch) -> pa.RecordBatch:
        if pc.max(batch.column("id")).as_py() >= 3000:
            raise ValueError("column function failed on purpose")
        return pa.record_batch({"y": batch.column("id")})

    with pytest.raises(Exception, match="failed on purpose"):
        add_columns(spark, uri, sometimes, pa.schema([("y", pa.int64())]), input_columns=["id"])
    _wait_for_tasks(spark)
    assert lance.dataset(uri).version == 1
    assert sorted(os.listdir(os.path.join(uri, "data"))) == before


def test_compact_on_spark(spark, tmp_path):
    """Compaction tasks run on the executors, one commit on the driver: the same fragments
    and rows (and stable row ids) as pylance's own compaction of the same data."""
    from lance_core.spark import compact

    def build(uri):
        for i in range(12):
            lance.write_dataset(pa.table({"id": pa.array(range(i * 500, (i + 1) * 500), pa.int64())}), uri,
                                mode="append" if i else "create", enable_stable_row_ids=True)
        lance.dataset(uri).delete("id % 4 = 1")

    ours, ref = str(tmp_path / "ours.lance"), str(tmp_path / "ref.lance")
    build(ours)
    build(ref)
    before = lance.dataset(ours).to_table(with_row_id=True)
    m = compact(spark, ours, target_rows_per_fragment=1000)
    r = lance.dataset(ref).optimize.compact_files(target_rows_per_fragment=1000)
    assert (m.fragments_removed, m.fragments_added) == (r.fragments_removed, r.fragments_added) == (12, 4)
    assert lance.dataset(ours).to_table(with_row_id=True).equals(before)
    assert sorted(f.count_rows() for f in lance.dataset(ours).get_fragments()) == \
        sorted(f.count_rows() for f in lance.dataset(ref).get_fragments())
    assert not any("spark-" in n for n in os.listdir(os.path.join(ours, "_versions")))


def test_blob_columns_as_descriptors_or_bytes(spark, tmp_path):
    """A blob column reads as pylance's descriptors by default (a table pylance wrote in
    format 2.1, blob v1) and as its bytes with `blob_handling=all_binary`."""
    schema = pa.schema([pa.field("id", pa.int64()),
                        pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])
    values = [b"a" * 10, None, b"", os.urandom(100_000)]
    table = pa.table({"id": pa.array(range(4), pa.int64()), "b": pa.array(values, pa.large_binary())}, schema=schema)
    path = str(tmp_path / "blobs")
    lance.write_dataset(table, path, data_storage_version="2.1")
    descriptors = spark.read.format("lance").load(path).orderBy("id").collect()
    expected = lance.dataset(path).to_table()["b"].to_pylist()
    assert [None if r.b is None else {"position": int(r.b.position), "size": int(r.b.size)}
            for r in descriptors] == expected
    rows = spark.read.format("lance").option("blob_handling", "all_binary").load(path) \
        .filter("id >= 1").orderBy("id").collect()
    assert [r.b for r in rows] == values[1:]


def test_blob_columns_written_from_spark(spark, tmp_path):
    """`blob_columns` stores binary columns as blobs (blob v1 in format 2.1, v2 in 2.2);
    appends keep them blobs; pylance reads the bytes and takes them as files."""
    path = str(tmp_path / "from_spark")
    payloads = [os.urandom(n) for n in (10, 0, 70_000)]
    df = spark.createDataFrame([(i, p) for i, p in enumerate(payloads)] + [(3, None)], "id long, b binary")
    df.write.format("lance").mode("overwrite").option("blob_columns", "b") \
        .option("data_storage_version", "2.1").save(path)
    df.filter("id = 2").write.format("lance").mode("append").save(path)
    ref = lance.dataset(path)
    assert ref.schema.field("b").metadata == {b"lance-encoding:blob": b"true"}
    got = ref.to_table(blob_handling="all_binary").sort_by("id")["b"].to_pylist()
    assert got == payloads[:2] + [payloads[2], payloads[2], None]
    assert ref.take_blobs("b", indices=[2])[0].readall() == payloads[2]
    with pytest.raises(Exception, match="blob column 'id' must be binary"):
        df.write.format("lance").mode("overwrite").option("blob_columns", "id").save(str(tmp_path / "bad"))
    # format 2.2: blob v2, as pylance stores a binary column marked as blob
    v2 = str(tmp_path / "v2")
    df.write.format("lance").mode("overwrite").option("blob_columns", "b").save(v2)
    df.filter("id = 2").write.format("lance").mode("append").save(v2)
    ref = lance.dataset(v2)
    assert ref.to_table()["b"].type.field(0).name == "kind"
    assert ref.to_table(blob_handling="all_binary").sort_by("id")["b"].to_pylist() == \
        payloads[:2] + [payloads[2], payloads[2], None]
    assert sorted(b.kind for b in lance_core.dataset(v2).take_blobs("b", indices=[0, 1, 2, 3, 4]) if b) == \
        ["inline", "inline", "packed", "packed"]
