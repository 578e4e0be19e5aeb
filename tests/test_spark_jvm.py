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
    jvm, py = both(spark, filter_table)
    got, expected = jvm.filter(condition), py.filter(condition)
    assert sorted(got.collect()) == sorted(expected.collect()), condition
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
    assert "count(*)" in plan(df.filter("id < 5").groupBy().count())
    assert df.filter("id < 1000 AND s IS NOT NULL").count() == \
        spark.read.format("lance_python").load(filter_table).filter("id < 1000 AND s IS NOT NULL").count()
    assert len(df.limit(7).collect()) == 7
    assert len(df.filter("id > 100").limit(3).collect()) == 3


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


def test_native_library_missing_or_from_another_build(tmp_path):
    jar = lance_core.spark.jar_path()
    ok = java_check(jar)
    assert ok.returncode == 0 and ok.stdout.startswith("ok "), ok.stdout + ok.stderr
    # The jar alone, without its library beside it.
    alone = str(tmp_path / "alone" / "lance-core-spark.jar")
    os.makedirs(os.path.dirname(alone))
    shutil.copy(jar, alone)
    missing = java_check(alone)
    assert missing.returncode == 1 and "liblance_core_jni.so is missing" in missing.stdout, missing.stdout
    # A jar from another build: its expected version differs from the library's.
    other = str(tmp_path / "other" / "lance-core-spark.jar")
    os.makedirs(os.path.dirname(other))
    with zipfile.ZipFile(jar) as src, zipfile.ZipFile(other, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "lance_core/spark/native.version":
                data = b"0.0.1-elsewhere\n"
            dst.writestr(item, data)
    library = os.path.join(os.path.dirname(jar), "liblance_core_jni.so")
    os.symlink(library, os.path.join(os.path.dirname(other), "liblance_core_jni.so"))
    mismatch = java_check(other)
    assert mismatch.returncode == 1 and "different builds" in mismatch.stdout and "0.0.1-elsewhere" in mismatch.stdout
    # Not lance_core's library at all.
    bogus = java_check(jar, ["-Dlance_core.native_library=" + str(tmp_path / "alone" / "lance-core-spark.jar")])
    assert bogus.returncode == 1 and "cannot load its native library" in bogus.stdout, bogus.stdout


def _jvm_rss_mb(spark) -> float:
    pid = spark._jvm.java.lang.ProcessHandle.current().pid()
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_long_scans_release_their_batches(spark, tmp_path):
    """Each scan hands Spark ~16 MB of batches; 100 scans leaking them would grow the JVM by
    1.6 GB."""
    uri = str(tmp_path / "m.lance")
    n = 400_000
    lance.write_dataset(pa.table({"id": pa.array(np.arange(n)), "v": pa.array(np.random.rand(n)),
                                  "s": pa.array([f"row-{i:08d}" for i in range(n)])}), uri, max_rows_per_file=100_000)
    df = spark.read.format("lance").load(uri)

    def scan():
        df.write.format("noop").mode("overwrite").save()

    for _ in range(15):
        scan()
    before = _jvm_rss_mb(spark)
    for _ in range(100):
        scan()
    after = _jvm_rss_mb(spark)
    assert after - before < 200, f"JVM RSS grew from {before:.0f} MB to {after:.0f} MB over 100 scans"


def test_data_source_suite_on_the_python_reader():
    """The data source's test modules pass on the Python data source too (a session
    without the jar, where it is `lance`)."""
    modules = ["test_spark.py", "test_spark_s3.py", "test_spark_streaming.py"]
    env = {**os.environ, "LANCE_CORE_SPARK_READER": "python"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *modules],
                         cwd=HERE, env=env, capture_output=True, text=True, timeout=1800)
    tail = run.stdout[-3000:]
    assert run.returncode == 0, tail
    assert " passed" in tail and "failed" not in tail and "skipped" not in tail, tail


def test_fragments_an_index_rules_out_get_no_task(spark, tmp_path):
    uri = str(tmp_path / "ix.lance")
    lance.write_dataset(pa.table({"id": range(4000), "v": [i % 10 for i in range(4000)]}), uri,
                        max_rows_per_file=1000)
    df = spark.read.format("lance").load(uri)
    assert df.filter("id = 1500").rdd.getNumPartitions() == 4
    lance.dataset(uri).create_scalar_index("id", "BTREE")
    df = spark.read.format("lance").load(uri)
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
