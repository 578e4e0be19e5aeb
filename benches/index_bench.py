"""Scalar index benchmark: lance_core vs pylance 14, in one run, each library in its own
process, on a 4M-row table pylance wrote (1M rows per file, 6 columns: `id` int64 0..4M in
order, `key` int64 a random permutation of it, `cat8` a string of 8 values, `name` a
unique string, `value` float64, `labels` a list of 1-3 of 20 strings).

- queries through each library's reading of the same indices pylance built (BTREE on `id`
  and `key`, BITMAP on `cat8`, LABEL_LIST on `labels`, NGRAM on `name`), all columns
  returned, best of several warm repeats: `key = X` (a point query on unsorted data), `id = X`,
  `key IN (100 values)`, `id BETWEEN` (0.1%), `key BETWEEN` (0.1%, rows scattered), bitmap
  equality (12.5%), `array_has_any` of 2 labels (19%) and `array_has_all` of 2 (1.3%),
  `contains(name, ...)` through an NGRAM index; and the point query repeated on one row (all
  pages warm), beside the median over distinct rows (each a read of pages the library has
  not read yet); and lance_core's point query without the index (the unindexed filter it
  replaces). The table's files are read into the OS page cache before each library's
  queries: the machine keeps little in its page cache, and a disk read of an index page
  (0.3-1 ms here, varying with other I/O) would otherwise be most of a point query's time,
  in both libraries;
- builds, each on a fresh copy of the table without indices: BTREE on `id` (sorted
  input), on `key` (random order) and on `name` (unique strings), BITMAP on `cat8`,
  LABEL_LIST on `labels`, ZONEMAP on `id`, BLOOMFILTER on `key`, NGRAM on `name`
  (default parameters);
- Spark builds: `lance_core.spark.create_scalar_index` on local[2] (one segment per task,
  one commit; the session started and its Python workers warmed by a first build before
  any timing) against pylance's single-process `create_scalar_index`, same run, same
  fresh copies: BTREE on `id`, `key` and `name`, BITMAP on `cat8`.

    python benches/index_bench.py [--rows 4000000] [--repeat 15] [--spark-repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CHILD_PRELUDE, DATA, run_child  # noqa: E402

BUILDS = [("id", "BTREE"), ("key", "BTREE"), ("name", "BTREE"), ("cat8", "BITMAP"), ("labels", "LABEL_LIST"),
          ("id", "ZONEMAP"), ("key", "BLOOMFILTER"), ("name", "NGRAM")]

QUERIES = """
import random
import {module} as lib
path, repeat, rows = {path!r}, {repeat}, {rows}
ds = lib.dataset(path)
rng = random.Random(7)
out = {{}}
def best(f, n=repeat):
    times = []
    for _ in range(n):
        t0 = time.perf_counter(); r = f(); times.append(time.perf_counter() - t0)
    return min(times), r
points = [rng.randrange(rows) for _ in range(repeat)]
def each_point(column):
    times = []
    for x in points:
        t0 = time.perf_counter(); r = ds.to_table(filter=f"{{column}} = {{x}}"); times.append(time.perf_counter() - t0)
        assert r.num_rows == 1
    ds.to_table(filter=f"{{column}} = {{points[0]}}")
    return sorted(times)[len(times) // 2]
# Warm: each data file opened (a row of every fragment taken) and the index lookups loaded.
ds.take([int(f.count_rows()) - 1 + sum(g.count_rows() for g in ds.get_fragments()[:i])
         for i, f in enumerate(ds.get_fragments())])
ds.to_table(filter=f"key = {{points[0]}}")
ds.to_table(filter=f"id = {{points[0]}}")
out["key = X (median of distinct X)"] = each_point("key")
out["id = X (median of distinct X)"] = each_point("id")
# The same row again and again: index page, data pages and plans all warm.
out["key = X (same X, warm)"], r = best(lambda: ds.to_table(filter=f"key = {{points[0]}}"))
many = ", ".join(str(rng.randrange(rows)) for _ in range(100))
out["key IN (100 values)"], r = best(lambda: ds.to_table(filter=f"key IN ({{many}})"))
assert r.num_rows == 100
lo = rows // 2
hi = lo + rows // 1000
out["id BETWEEN (0.1%, contiguous)"], r = best(lambda: ds.to_table(filter=f"id BETWEEN {{lo}} AND {{hi - 1}}"))
assert r.num_rows == hi - lo
out["key BETWEEN (0.1%, scattered)"], r = best(lambda: ds.to_table(filter=f"key BETWEEN {{lo}} AND {{hi - 1}}"))
assert r.num_rows == hi - lo
out["cat8 = 'c3' (BITMAP, 12.5%)"], r = best(lambda: ds.to_table(filter="cat8 = 'c3'"), max(2, repeat // 2))
out["array_has_any(labels, 2 labels) (19%)"], r = best(
    lambda: ds.to_table(filter="array_has_any(labels, ['label-03', 'label-07'])"), max(2, repeat // 3))
out["array_has_all(labels, 2 labels) (1.3%)"], r = best(
    lambda: ds.to_table(filter="array_has_all(labels, ['label-03', 'label-07'])"), max(2, repeat // 2))
out["contains(name, 8 characters) (NGRAM)"], r = best(lambda: ds.to_table(filter="contains(name, '00123456')"))
assert r.num_rows >= 1
if {module!r} == "lance_core":
    out["key = X without the index"], r = best(
        lambda: ds.to_table(filter=f"key = {{points[0]}}", use_scalar_index=False), 3)
print(json.dumps(out))
"""

BUILD = """
import shutil
import {module} as lib
src, work = {src!r}, {work!r}
out = {{}}
for column, kind in {builds!r}:
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(src, work)
    ds = lib.dataset(work)
    t0 = time.perf_counter()
    ds.create_scalar_index(column, kind)
    out[f"build {{kind}} on {{column}}"] = time.perf_counter() - t0
shutil.rmtree(work, ignore_errors=True)
print(json.dumps(out))
"""

SPARK_BUILDS = [("id", "BTREE"), ("key", "BTREE"), ("name", "BTREE"), ("cat8", "BITMAP")]

# Best of `repeat` builds of each index on Spark, each on a fresh copy (the copy not timed).
SPARK_BUILD = """
import os, shutil, sys
os.environ["PYSPARK_PYTHON"] = sys.executable
from pyspark.sql import SparkSession
import lance_core
from lance_core.spark import create_scalar_index
src, work, repeat = {src!r}, {work!r}, {repeat}
spark = (SparkSession.builder.master("local[2]").appName("index bench").config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
def fresh():
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(src, work)
# Warm-up: the JVM, the Python workers (lance_core imported in each) and the job path.
fresh()
create_scalar_index(spark, work, "value", "BTREE")
out = {{}}
for column, kind in {builds!r}:
    times = []
    for _ in range(repeat):
        fresh()
        t0 = time.perf_counter()
        ds = create_scalar_index(spark, work, column, kind)
        times.append(time.perf_counter() - t0)
    assert ds.count_rows() == lance_core.dataset(src).count_rows()
    out[f"build {{kind}} on {{column}}"] = min(times)
    out[f"segments {{kind}} on {{column}}"] = len(ds.list_indices())
spark.stop()
shutil.rmtree(work, ignore_errors=True)
print(json.dumps(out))
"""


def cache_files(path: str) -> None:
    """Read every file under `path` once, so that the queries find them in the OS page
    cache (as the unindexed scans they are compared with do after their first run)."""
    for root, _, names in os.walk(path):
        for name in names:
            with open(os.path.join(root, name), "rb") as f:
                while f.read(1 << 22):
                    pass


def table_path(rows: int) -> str:
    """The table (built once with pylance), without indices."""
    import lance
    import numpy as np
    import pyarrow as pa

    path = os.path.join(DATA, f"index_{rows}.lance")
    if os.path.exists(os.path.join(path, "_versions")):
        return path
    rng = np.random.default_rng(11)
    keys = rng.permutation(rows).astype(np.int64)
    cats = np.array([f"c{i}" for i in range(8)])
    labels = np.array([f"label-{i:02d}" for i in range(20)])

    def batches():
        for start in range(0, rows, 250_000):
            n = min(250_000, rows - start)
            ids = np.arange(start, start + n, dtype=np.int64)
            lens = rng.integers(1, 4, n)
            offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
            yield pa.record_batch({
                "id": pa.array(ids),
                "key": pa.array(keys[start:start + n]),
                "cat8": pa.array(cats[rng.integers(0, 8, n)]),
                "name": pa.array([f"user-{i:09d}-{i * 7919 % 1000003}" for i in ids]),
                "value": pa.array(rng.normal(0, 1, n)),
                "labels": pa.ListArray.from_arrays(pa.array(offsets), pa.array(labels[rng.integers(0, 20, offsets[-1])])),
            })
    first = next(batches())
    reader = pa.RecordBatchReader.from_batches(first.schema, batches())
    lance.write_dataset(reader, path, max_rows_per_file=1_000_000)
    return path


def indexed_path(rows: int) -> str:
    """The table with pylance's indices: BTREE on id and key, BITMAP on cat8, LABEL_LIST on
    labels, NGRAM on name."""
    import lance

    path = os.path.join(DATA, f"index_{rows}_indexed.lance")
    if not os.path.exists(os.path.join(path, "_versions")):
        shutil.copytree(table_path(rows), path)
    have = {d.name for d in lance.dataset(path).describe_indices()}
    for column, kind in [("id", "BTREE"), ("key", "BTREE"), ("cat8", "BITMAP"), ("labels", "LABEL_LIST"),
                         ("name", "NGRAM")]:
        if f"{column}_idx" not in have:
            lance.dataset(path).create_scalar_index(column, kind)
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--spark-repeat", type=int, default=3)
    args = ap.parse_args()
    src, indexed = table_path(args.rows), indexed_path(args.rows)
    results = {}
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        for module in ("lance_core", "lance"):
            cache_files(indexed)
            q = run_child(CHILD_PRELUDE + QUERIES.format(module=module, path=indexed, repeat=args.repeat,
                                                         rows=args.rows))
            b = run_child(CHILD_PRELUDE + BUILD.format(module=module, src=src, work=os.path.join(tmp, "t.lance"),
                                                       builds=BUILDS))
            results[module] = {**q, **b}
        on_spark = run_child(CHILD_PRELUDE + SPARK_BUILD.format(src=src, work=os.path.join(tmp, "s.lance"),
                                                                repeat=args.spark_repeat, builds=SPARK_BUILDS))
    ours, ref = results["lance_core"], results["lance"]
    print(f"{args.rows:,} rows; speed = pylance time / lance_core time")
    print(f"{'measurement':<44}{'lance_core':>12}{'pylance':>12}{'speed':>8}")
    for key in ours:
        if key not in ref:
            continue
        print(f"{key:<44}{ours[key] * 1000:>10.2f}ms{ref[key] * 1000:>10.2f}ms{ref[key] / ours[key]:>7.2f}x")
    unindexed = ours["key = X without the index"]
    point, warm = ours["key = X (median of distinct X)"], ours["key = X (same X, warm)"]
    print(f"lance_core's point query: {unindexed * 1000:.1f} ms without the index (best of 3, warm); with "
          f"it {point * 1000:.2f} ms for distinct rows ({unindexed / point:.0f}x), {warm * 1000:.2f} ms "
          f"for the same row ({unindexed / warm:.0f}x)")
    print("builds on Spark local[2] (lance_core.spark.create_scalar_index, best of "
          f"{args.spark_repeat}) vs pylance's single-process build; speed = pylance time / Spark time")
    print(f"{'measurement':<44}{'Spark':>12}{'pylance':>12}{'speed':>8}{'segments':>10}")
    for column, kind in SPARK_BUILDS:
        key = f"build {kind} on {column}"
        spark_s, ref_s = on_spark[key], ref[key]
        print(f"{key:<44}{spark_s * 1000:>10.2f}ms{ref_s * 1000:>10.2f}ms{ref_s / spark_s:>7.2f}x"
              f"{on_spark[f'segments {kind} on {column}']:>10}")


if __name__ == "__main__":
    main()
