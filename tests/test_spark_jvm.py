"""The JVM reader (`java/`, `rust/jni`): `format("lance")` on a session built by
`lance_core.spark.session`, checked against the Python data source (registered as
`lance_python` in the same session) and against pylance; its pushdowns as Spark's plans
show them; its failures; and its memory over many scans. The other Spark test modules run
on it too, and `test_data_source_suite_on_the_python_reader` runs them again on the Python
data source."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_core.spark
from datagen import nested_columns, primitive_columns

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(autouse=True)
def _needs_the_jvm_reader(spark):
    if not lance_core.spark.jvm_reader_loaded(spark):
        pytest.fail("these tests need the JVM reader (not LANCE_CORE_SPARK_READER=python)")


def both(spark, uri, **options):
    """The table as the JVM reader and as the Python data source give it (Arrow)."""
    out = []
    for fmt in ("lance", "lance_python"):
        reader = spark.read.format(fmt)
        for k, v in options.items():
            reader = reader.option(k, v)
        out.append(reader.load(uri))
    return out


def sorted_table(df, key="id") -> pa.Table:
    t = df.toArrow()
    return t.sort_by(key) if key in t.column_names else t


def test_every_type_as_the_python_source_reads_it(spark, tmp_path):
    uri = str(tmp_path / "types.lance")
    cols = primitive_columns(700)
    cols.update(nested_columns(700))
    cols["id"] = pa.array(range(700))
    lance.write_dataset(pa.table(cols), uri, max_rows_per_file=300)
    ds = lance.dataset(uri)
    ds.delete("id % 11 = 3")
    jvm, py = both(spark, uri)
    assert "BatchScan lance:" in jvm._jdf.queryExecution().executedPlan().toString()
    assert jvm.schema == py.schema
    a, b = sorted_table(jvm), sorted_table(py)
    assert a.num_rows == 700 - len(range(3, 700, 11))
    for name in b.column_names:
        assert a.column(name).equals(b.column(name)), name


def test_options_as_the_python_source_reads_them(spark, tmp_path):
    uri = str(tmp_path / "o.lance")
    lance.write_dataset(pa.table({"id": range(100), "s": [str(i) for i in range(100)]}), uri)
    lance.write_dataset(pa.table({"id": range(100, 150), "s": ["x"] * 50}), uri, mode="append")
    lance.dataset(uri).tags.create("first", 1)
    for options in ({"version": "1"}, {"version": "first"}, {"columns": "s", "with_row_id": "true"},
                    {"rows_per_partition": "10", "batch_size": "7"}):
        jvm, py = both(spark, uri, **options)
        assert jvm.schema == py.schema, options
        assert sorted(jvm.collect()) == sorted(py.collect()), options
    with pytest.raises(Exception, match="timestamp_nanos is 'truncate' or 'error'"):
        spark.read.format("lance").option("timestamp_nanos", "round").load(uri).collect()


def plan(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


@pytest.fixture(scope="module")
def filter_table(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("f") / "f.lance")
    n = 3000
    rng = np.random.default_rng(3)
    lance.write_dataset(pa.table({
        "id": pa.array(range(n)),
        "x": pa.array([None if i % 13 == 0 else float(v) for i, v in enumerate(rng.normal(size=n))]),
        "s": pa.array([None if i % 17 == 0 else f"k_{i % 50}%" for i in range(n)]),
        "d": pa.array((np.datetime64("2024-01-01") + np.arange(n) % 400).astype("datetime64[D]")),
        "st": pa.array([{"a": i % 7, "b": str(i)} for i in range(n)]),
    }), uri, max_rows_per_file=1000)
    return uri


@pytest.mark.parametrize("condition", [
    "id < 40", "id >= 2990 OR id = 5", "x > 0.5", "x IS NULL", "s = 'k_3%'", "s LIKE 'k\\\\_1%'",
    "s LIKE '%0%%'", "s IN ('k_1%', 'k_2%')", "NOT (id IN (1, 2, 3))", "d = DATE '2024-02-01'",
    "st.a = 3 AND id < 100", "id <=> 7", "x != x",
])
def test_filters_give_the_python_sources_rows(spark, filter_table, condition):
    # Read while planning (few rows pass on this small table), then by tasks.
    for local_rows in ("16384", "0"):
        jvm, py = both(spark, filter_table, local_result_rows=local_rows)
        got, expected = jvm.filter(condition), py.filter(condition)
        assert sorted(got.collect()) == sorted(expected.collect()), (condition, local_rows)
    if condition in ("id < 40", "s = 'k_3%'", "st.a = 3 AND id < 100", "d = DATE '2024-02-01'"):
        assert "pushed filters" in plan(got), plan(got)


def test_columns_pruned_and_count_and_limit_pushed(spark, filter_table):
    df = spark.read.format("lance").load(filter_table)
    narrow = df.select("s")
    assert "ReadSchema: struct<s:string>" in narrow._jdf.queryExecution().executedPlan().toString() or \
        "[s#" in plan(narrow)
    assert narrow.count() == 3000
    # count(*) is known while planning: the plan is a local relation, and no job runs.
    assert plan(df.groupBy().count()).startswith("LocalTableScan"), plan(df.groupBy().count())
    assert df.count() == 3000
    # Under a filter: counted while planning on a table this small, else by one task.
    assert plan(df.filter("id < 5").groupBy().count()).startswith("LocalTableScan")
    tasks = spark.read.format("lance").option("local_result_rows", "0").load(filter_table)
    assert "count(*)" in plan(tasks.filter("id < 5").groupBy().count())
    assert tasks.filter("id < 5").count() == 5
    assert df.filter("id < 1000 AND s IS NOT NULL").count() == \
        spark.read.format("lance_python").load(filter_table).filter("id < 1000 AND s IS NOT NULL").count()
    assert len(df.limit(7).collect()) == 7
    assert len(df.filter("id > 100").limit(3).collect()) == 3


@pytest.mark.parametrize("order", [["id"], ["s", "id"], ["-d", "id"], ["s nulls first", "-id"]])
@pytest.mark.parametrize("where", [None, "id > 100 AND s IS NOT NULL"])
def test_sort_under_a_limit_pushed_as_a_top_n(spark, filter_table, order, where):
    """Each task returns its partition's first rows in order (the core's order_by under a
    limit); Spark sorts those again. The rows are the Python source's (where Spark sorts
    every row itself), and the plan shows the top-N pushed."""
    from pyspark.sql import functions as F

    def keys(df):
        out = []
        for o in order:
            name, _, nulls = o.lstrip("-").partition(" ")
            c = F.col(name)
            if o.startswith("-"):
                out.append(c.desc_nulls_first() if nulls else c.desc_nulls_last())
            else:
                out.append(c.asc_nulls_first() if nulls else c.asc_nulls_last())
        return out

    # Several partitions per fragment, then (under a filter) the rows read while planning.
    for rows_per_partition, local in (("300", "0"), ("1000", "16384")):
        jvm, py = both(spark, filter_table, rows_per_partition=rows_per_partition, local_result_rows=local)
        if where:
            jvm, py = jvm.filter(where), py.filter(where)
        got = jvm.orderBy(*keys(jvm)).limit(17)
        want = py.orderBy(*keys(py)).limit(17)
        assert got.collect() == want.collect(), (order, where, rows_per_partition)
        if local == "0" or not where:
            assert "top 17 by" in plan(got), plan(got)
    # Floats are sorted by Spark alone (NaN and -0.0 order differently there).
    df = spark.read.format("lance").load(filter_table)
    assert "top " not in plan(df.orderBy("x").limit(3))


def read_schema(df) -> str:
    """The ReadSchema of the plan's lance scan."""
    text = plan(df)
    assert "ReadSchema: " in text, text
    return text[text.index("ReadSchema: ") + len("ReadSchema: "):].split(" ")[0]


def test_nested_columns_pruned(spark, tmp_path):
    """Spark's nested column pruning: only the fields of a struct a query uses are read,
    inside their struct and with its nulls (children stay valid under a null parent here,
    so a reader that dropped the parent's nulls would show it)."""
    uri = str(tmp_path / "n.lance")
    n = 500
    c = pa.StructArray.from_arrays(
        [pa.array(range(n), pa.int64()), pa.array([f"y{i}" for i in range(n)])], ["x", "y"],
        mask=pa.array([i % 7 == 2 for i in range(n)]))
    s = pa.StructArray.from_arrays(
        [pa.array([None if i % 5 == 3 else i for i in range(n)], pa.int64()),
         pa.array(["m" if i % 3 == 0 else "k" for i in range(n)]), c], ["a", "b", "c"],
        mask=pa.array([i % 4 == 1 for i in range(n)]))
    packed = pa.field("p", pa.struct([("u", pa.int32()), ("v", pa.int32())]), metadata={"packed": "true"})
    p = pa.array([{"u": i, "v": -i} for i in range(n)], packed.type)
    table = pa.Table.from_arrays([pa.array(range(n)), s, p],
                                 schema=pa.schema([pa.field("id", pa.int64()), pa.field("s", s.type), packed]))
    lance.write_dataset(table, uri, max_rows_per_file=200)
    from pyspark.sql import functions as F
    queries = {
        "s.a, s.c.x": lambda df: df.select("id", "s.a", "s.c.x"),
        "null checks": lambda df: df.select("id", F.col("s.c").isNull().alias("c_null"), F.col("s.a")),
        "filter on another field": lambda df: df.filter("s.b = 'm'").select("id", "s.c.y"),
        "a whole inner struct": lambda df: df.select("id", "s.c"),
        "a packed struct": lambda df: df.select("id", "p.v"),
        "aggregate": lambda df: df.groupBy("s.b").agg(F.sum("s.c.x").alias("t")),
    }
    for name, q in queries.items():
        # A DataFrame each: Spark reuses a Python source's reader that once took filters.
        jvm, py = both(spark, uri)
        got, expected = q(jvm), q(py)
        key = "id" if "id" in got.columns else got.columns[0]
        assert sorted_table(got, key).equals(sorted_table(expected, key)), name
    assert read_schema(jvm.select("s.a", "s.c.x")) == "struct<s:struct<a:bigint,c:struct<x:bigint>>>", \
        plan(jvm.select("s.a", "s.c.x"))
    assert read_schema(jvm.select("s.c")) == "struct<s:struct<c:struct<x:bigint,y:string>>>"
    # A packed struct is stored as one value: read whole.
    assert read_schema(jvm.select("p.v")) == "struct<p:struct<u:int,v:int>>"
    # Parent nulls: s is null on i % 4 == 1, c on i % 7 == 2.
    nulls = {r.id: r.c_null for r in queries["null checks"](jvm).collect()}
    assert all(nulls[i] == (i % 4 == 1 or i % 7 == 2) for i in range(n))


def test_min_and_max_answered_from_indices(spark, tmp_path):
    """min/max (and count(*)) of indexed columns come from their indices while planning: no
    Spark job, and the same answers as reading the column, after deletes and appends the
    indices do not cover."""
    from pyspark.sql import functions as F

    uri = str(tmp_path / "mm.lance")
    n = 20_000
    ds = lance.write_dataset(pa.table({
        "id": pa.array(range(n)),
        "v": pa.array([None if i % 10 == 0 else (i * 7919) % 100_003 - 50_000 for i in range(n)]),
        "s": pa.array([f"k{(i * 31) % n:06d}" for i in range(n)]),
        "d": pa.array((np.datetime64("2020-01-01") + np.arange(n) % 3000).astype("datetime64[D]")),
        "x": pa.array(np.arange(n, dtype=np.float64)),
    }), uri, max_rows_per_file=6000)
    ds.create_scalar_index("v", "BTREE")
    ds.create_scalar_index("s", "BTREE")
    ds.create_scalar_index("d", "ZONEMAP")
    ds.create_scalar_index("x", "BTREE")
    aggs = [F.min("v"), F.max("v"), F.min("s"), F.max("s"), F.min("d"), F.max("d"), F.count("*")]

    def check(expect_local: bool):
        jvm, py = both(spark, uri)
        got = jvm.agg(*aggs)
        assert got.collect() == py.agg(*aggs).collect()
        assert plan(got).startswith("LocalTableScan") == expect_local, plan(got)

    check(True)
    # The extremes deleted, and rows appended that no index covers.
    ds = lance.dataset(uri)
    ds.delete("v = 49999 OR v = -50000 OR s = 'k000000'")
    lance.write_dataset(pa.table({"id": pa.array([n, n + 1]), "v": pa.array([-60_000, None]),
                                  "s": pa.array(["a", "zz"]),
                                  "d": pa.array(np.array(["2019-05-05", "2031-01-01"], dtype="datetime64[D]")),
                                  "x": pa.array([1.5, float("nan")])}), uri, mode="append")
    check(True)
    # Not answered from indices: an unindexed column, a float (NaN orders last), a filter.
    jvm, py = both(spark, uri)
    for q in (lambda df: df.agg(F.min("id")), lambda df: df.agg(F.max("x")),
              lambda df: df.filter("id > 5").agg(F.min("v"))):
        assert str(q(jvm).collect()) == str(q(py).collect())  # NaN == NaN, as text
        assert not plan(q(jvm)).startswith("LocalTableScan"), plan(q(jvm))


def test_small_results_read_while_planning(spark, tmp_path):
    """A filtered read that few rows pass is answered while planning (no Spark job), up to
    `local_result_rows`; more rows, nested columns or `local_result_rows=0` run as tasks."""
    uri = str(tmp_path / "small.lance")
    n = 50_000
    lance.write_dataset(pa.table({
        "id": pa.array(range(n)), "s": pa.array([f"v{i}" for i in range(n)]),
        "b": pa.array([bytes([i % 256]) * 3 for i in range(n)]),
        "dec": pa.array([i for i in range(n)], pa.decimal128(12, 2)),
        "l": pa.array([[i] for i in range(n)]),
    }), uri, max_rows_per_file=20_000)
    lance.dataset(uri).delete("id = 10")

    def read(condition, columns=("id", "s", "b", "dec"), **options):
        jvm, py = both(spark, uri, local_result_rows="100", **options)
        got = jvm.filter(condition).select(*columns)
        assert sorted(got.collect()) == sorted(py.filter(condition).select(*columns).collect()), condition
        return plan(got)

    assert read("id < 101").startswith("LocalTableScan")  # 100 live rows: id 10 is deleted
    assert "BatchScan" in read("id < 102")  # 101 rows
    assert "BatchScan" in read("id < 5", columns=("id", "l"))  # lists are read by tasks
    df = spark.read.format("lance").option("local_result_rows", "100").load(uri).select("id", "s")
    assert df.filter("id < 200").limit(7).count() == 7
    assert "BatchScan" not in plan(df.filter("id < 200").limit(7))
    assert plan(df.filter("s = 'v7'").groupBy().count()).startswith("LocalTableScan")
    assert df.filter("s = 'v7' OR id = 10").count() == 1
    # The default: up to 16,384 rows.
    default = spark.read.format("lance").load(uri).select("id", "s")
    assert plan(default.filter("id >= 33616")).startswith("LocalTableScan")  # 16,384 rows
    assert "BatchScan" in plan(default.filter("id >= 33615"))
    # An aggregate Spark computes runs a job anyway: no read while planning.
    assert "BatchScan" in plan(default.filter("id < 5").groupBy("s").count())


def test_missing_table_and_corrupt_file_are_clear_errors(spark, tmp_path):
    missing = str(tmp_path / "nope.lance")
    with pytest.raises(Exception, match="nope.lance"):
        spark.read.format("lance").load(missing)
    uri = str(tmp_path / "c.lance")
    lance.write_dataset(pa.table({"id": range(5000), "v": [float(i) for i in range(5000)]}), uri,
                        max_rows_per_file=2500)
    data = sorted(os.listdir(os.path.join(uri, "data")))
    victim = os.path.join(uri, "data", data[0])
    size = os.path.getsize(victim)
    with open(victim, "r+b") as f:
        f.truncate(size // 2)
    with pytest.raises(Exception) as err:
        spark.read.format("lance").load(uri).agg({"v": "sum"}).collect()
    assert data[0] in str(err.value)
    # The executor JVM lives on: the next query runs.
    assert spark.range(10).count() == 10


def java_check(jar: str, extra_props=()) -> subprocess.CompletedProcess:
    import pyspark

    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")
    return subprocess.run(["java", *extra_props, "-cp", f"{jars}{os.pathsep}{jar}", "lance_core.spark.NativeCheck"],
                          capture_output=True, text=True, timeout=120)


def _rewritten_jar(jar: str, to: str, change) -> str:
    """A copy of `jar` at `to` with each entry's bytes passed through `change(name, data)`
    (None drops the entry)."""
    os.makedirs(os.path.dirname(to), exist_ok=True)
    with zipfile.ZipFile(jar) as src, zipfile.ZipFile(to, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            data = change(item.filename, src.read(item.filename))
            if data is not None:
                dst.writestr(item, data)
    return to


def test_native_library_comes_from_the_jar(tmp_path):
    """The jar alone is enough (an executor on a cluster has nothing else): its library is
    extracted once into a directory named by its SHA-256, and loaded from there."""
    jar = lance_core.spark.jar_path()
    alone = str(tmp_path / "alone" / "lance-core-spark.jar")
    os.makedirs(os.path.dirname(alone))
    shutil.copy(jar, alone)
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    for _ in range(2):  # extracted by the first JVM, reused by the second
        ok = java_check(alone, [f"-Djava.io.tmpdir={tmp}"])
        assert ok.returncode == 0 and ok.stdout.startswith("ok "), ok.stdout + ok.stderr
    with zipfile.ZipFile(jar) as z:
        sha = z.read("lance_core/spark/native/liblance_core_jni.so.sha256").decode().strip()
    extracted = tmp / f"lance_core-{sha[:16]}" / "liblance_core_jni.so"
    assert ok.stdout.split()[1] == str(extracted)
    assert sorted(os.listdir(extracted.parent)) == ["liblance_core_jni.so"]  # no part file left
    assert not os.path.exists(os.path.join(os.path.dirname(jar), "liblance_core_jni.so"))  # one copy


def test_native_library_missing_or_from_another_build(tmp_path):
    jar = lance_core.spark.jar_path()
    # A jar without its library.
    bare = _rewritten_jar(jar, str(tmp_path / "bare" / "lance-core-spark.jar"),
                          lambda name, data: None if name.endswith("liblance_core_jni.so") else data)
    missing = java_check(bare, [f"-Djava.io.tmpdir={tmp_path}"])
    assert missing.returncode == 1 and "carries no native library" in missing.stdout, missing.stdout
    # A jar from another build: its expected version differs from the library's.
    other = _rewritten_jar(jar, str(tmp_path / "other" / "lance-core-spark.jar"),
                           lambda name, data: b"0.0.1-elsewhere\n" if name == "lance_core/spark/native.version" else data)
    mismatch = java_check(other, [f"-Djava.io.tmpdir={tmp_path}"])
    assert mismatch.returncode == 1 and "different builds" in mismatch.stdout and "0.0.1-elsewhere" in mismatch.stdout
    # Not lance_core's library at all; a library that is not there.
    bogus = java_check(jar, ["-Dlance_core.native_library=" + jar])
    assert bogus.returncode == 1 and "cannot load its native library" in bogus.stdout, bogus.stdout
    gone = java_check(jar, ["-Dlance_core.native_library=" + str(tmp_path / "nowhere.so")])
    assert gone.returncode == 1 and "nowhere.so is missing" in gone.stdout, gone.stdout


def _jvm_rss_mb(spark) -> float:
    pid = spark._jvm.java.lang.ProcessHandle.current().pid()
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_long_scans_release_their_batches(spark, tmp_path):
    """Each scan hands Spark ~16 MB of batches: RSS stays flat over 100 scans."""
    uri = str(tmp_path / "m.lance")
    n = 400_000
    lance.write_dataset(pa.table({"id": pa.array(np.arange(n)), "v": pa.array(np.random.rand(n)),
                                  "s": pa.array([f"row-{i:08d}" for i in range(n)])}), uri, max_rows_per_file=100_000)
    df = spark.read.format("lance").load(uri)

    def scan():
        df.write.format("noop").mode("overwrite").save()

    # The JVM's heap settles over the first scans; a leak keeps growing after that (the
    # last 50 scans would add 800 MB). With nothing leaked, the JVM still commits heap
    # regions late: fresh-clone CI runs measured up to 152 MB of growth here.
    for _ in range(50):
        scan()
    before = _jvm_rss_mb(spark)
    for _ in range(50):
        scan()
    after = _jvm_rss_mb(spark)
    assert after - before < 300, f"JVM RSS grew from {before:.0f} MB to {after:.0f} MB over 50 scans"


@pytest.mark.parametrize("module", ["test_spark.py", "test_spark_s3.py", "test_spark_streaming.py"])
def test_data_source_suite_on_the_python_reader(module):
    """The data source's test modules pass on the Python data source too (a session
    without the jar, where it is `lance`); one module per test, so parallel runs spread them."""
    env = {**os.environ, "LANCE_CORE_SPARK_READER": "python"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", module],
                         cwd=HERE, env=env, capture_output=True, text=True, timeout=1800)
    tail = run.stdout[-3000:]
    assert run.returncode == 0, tail
    assert " passed" in tail and "failed" not in tail and "skipped" not in tail, tail


def test_fragments_an_index_rules_out_get_no_task(spark, tmp_path):
    uri = str(tmp_path / "ix.lance")
    lance.write_dataset(pa.table({"id": range(4000), "v": [i % 10 for i in range(4000)]}), uri,
                        max_rows_per_file=1000)
    # Tasks, not a read while planning (which so small a result would get).
    df = spark.read.format("lance").option("local_result_rows", "0").load(uri)
    assert df.filter("id = 1500").rdd.getNumPartitions() == 4
    lance.dataset(uri).create_scalar_index("id", "BTREE")
    df = spark.read.format("lance").option("local_result_rows", "0").load(uri)
    hit = df.filter("id = 1500")
    assert hit.rdd.getNumPartitions() == 1
    assert [r.id for r in hit.collect()] == [1500]
    assert df.filter("id = 99999").collect() == []
    assert df.filter("id >= 3998").count() == 2


def test_count_follows_new_versions(spark, tmp_path):
    uri = str(tmp_path / "n.lance")
    lance.write_dataset(pa.table({"id": range(10)}), uri)
    df = spark.read.format("lance").load(uri)
    assert df.count() == 10
    lance.write_dataset(pa.table({"id": range(10, 15)}), uri, mode="append")
    assert df.count() == 15  # each query reads the latest version when it is planned
    lance.dataset(uri).delete("id < 3")
    assert spark.read.format("lance").load(uri).count() == 12
    assert spark.read.format("lance").option("version", "1").load(uri).count() == 10
