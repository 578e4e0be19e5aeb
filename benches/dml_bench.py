"""Row-level changes benchmark: lance_core vs pylance on copies of the same dataset, in one
run, each library in its own process.

The 4M-row benchmark dataset (id, value, count, name, category, a 32-float vector;
pylance-written, 1M rows per file):
- merge_insert: upsert 1M source rows on `id`: 500,000 matching (the even ids below 1M,
  so every matched row is in the first file) and 500,000 new ids;
  when_matched_update_all + when_not_matched_insert_all;
- update: 10% of the rows (`count < 1000`, spread over every fragment) get
  `value = value * 2` and `name = 'updated'`.

Then the same merge and update through `lance_core.spark` on Spark local[2], the source
read from a Parquet copy of the same 1M rows (after one warm-up run, which starts Spark's
Python workers), against pylance's in-process times from the same run; and, in the same
session, Spark SQL through `lance_core.spark.LanceCatalog` against those functions: `MERGE
INTO` of the same 1M rows, `UPDATE` of 1% of the rows (`count < 100`, against `update`
with the same condition), `DELETE` of that 1% (whether any data file changed), and a
`SELECT ... GROUP BY category` through the catalog against the same query on
`format("lance")`.

With --big, a merge whose source does not fit a small memory: a 4 GB source (4M rows of
an int64 `id` and a 1,000-byte binary `payload`) upserted into a 4 GB table of the same
shape (pylance-written, 1M rows per file), half of the source's ids matching (the even
ids) and half new, both in every batch; when_matched_update_all +
when_not_matched_insert_all, the source read from an Arrow IPC stream file (plain reads,
not memory-mapped, so the merging process's RSS holds only what it keeps). Each library
runs once in its own process on a fresh copy of the table; its wall time and peak RSS
(VmHWM, reset just before the merge; the interpreter's RSS before it is shown apart) are
reported. Needs about 20 GB of disk: the table and source under benches/data/ (built
once), a copy of the table, the merge's new files and its source kept for retries.

    python benches/dml_bench.py [--rows 4000000] [--repeat 3] [--no-spark] [--big] [--no-small]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CHILD_PRELUDE, DATA, SCHEMA, batches, reference_dataset, run_child  # noqa: E402

MERGE = CHILD_PRELUDE + """
import shutil
import pyarrow as pa
import {module} as lib
src, work, repeat, source = {src!r}, {work!r}, {repeat}, {source!r}
data = pa.ipc.open_file(source).read_all()
times, res = [], None
for _ in range(repeat):
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(src, work)
    ds = lib.dataset(work)
    t0 = time.perf_counter()
    res = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(data)
    times.append(time.perf_counter() - t0)
n = lib.dataset(work).count_rows()
print(json.dumps(dict(seconds=min(times), rows_after=n, **res)))
"""

UPDATE = CHILD_PRELUDE + """
import shutil
import {module} as lib
src, work, repeat = {src!r}, {work!r}, {repeat}
times, res = [], None
for _ in range(repeat):
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(src, work)
    ds = lib.dataset(work)
    t0 = time.perf_counter()
    res = ds.update({{"value": "value * 2", "name": "'updated'"}}, where="count < 1000")
    times.append(time.perf_counter() - t0)
n = lib.dataset(work).count_rows(filter="name = 'updated'")
print(json.dumps(dict(seconds=min(times), updated_rows_read_back=n, **res)))
"""


BIG_MERGE = CHILD_PRELUDE + """
import resource
import pyarrow as pa
import {module} as lib
work, source = {work!r}, {source!r}
ds = lib.dataset(work)
reader = pa.ipc.open_stream(pa.OSFile(source))
before = reset_peak()
t0 = time.perf_counter()
res = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(reader)
seconds = time.perf_counter() - t0
peak = peak_mb()
n = lib.dataset(work).count_rows()
print(json.dumps(dict(seconds=seconds, peak_mb=peak, before_mb=before, rows_after=n,
                      maxrss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, **res)))
"""

SPARK = CHILD_PRELUDE + """
import os, shutil, sys
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
from pyspark.sql import SparkSession
import lance_core.spark
from lance_core.spark import merge_insert, update
import lance_core
src, work, repeat, parquet = {src!r}, {work!r}, {repeat}, {parquet!r}
# With the jar: the catalog (Spark SQL) and the JVM reader; the functions as before.
spark = lance_core.spark.session(SparkSession.builder.master("local[2]").appName("dml bench")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "2"))
spark.sparkContext.setLogLevel("ERROR")
# SQL works on the same copy, found by the catalog as the root table `t`.
root = os.path.dirname(work)
table = os.path.join(root, "t.lance")
spark.conf.set("spark.sql.catalog.lake", "lance_core.spark.LanceCatalog")
spark.conf.set("spark.sql.catalog.lake.root", root)
spark.read.parquet(parquet).createOrReplaceTempView("src")

def fresh():
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    shutil.copytree(src, table)

def data_files():
    return sorted(os.listdir(os.path.join(table, "data")))

def merge():
    df = spark.read.parquet(parquet)
    return merge_insert(df, table, "id").when_matched_update_all().when_not_matched_insert_all().execute()

def sql(text):
    def run():
        spark.sql(text)
        return {{}}
    return run

def sql_delete():
    before = data_files()
    spark.sql("DELETE FROM lake.t WHERE count < 100")
    return dict(data_files_unchanged=data_files() == before)

def upd(where):
    return lambda: update(spark, table, {{"value": "value * 2", "name": "'updated'"}}, where=where)

jobs = (
    ("merge", merge),
    ("sql merge", sql("MERGE INTO lake.t AS t USING src AS s ON t.id = s.id "
                      "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")),
    ("update", upd("count < 1000")),
    ("update 1%", upd("count < 100")),
    ("sql update 1%", sql("UPDATE lake.t SET value = value * 2, name = 'updated' WHERE count < 100")),
    ("sql delete 1%", sql_delete),
)
out = {{}}
for name, job in jobs:
    fresh()
    job()  # warm-up
    times = []
    for _ in range(repeat):
        fresh()
        t0 = time.perf_counter()
        res = job()
        times.append(time.perf_counter() - t0)
    out[name] = dict(seconds=min(times), rows_after=lance_core.dataset(table).count_rows(), **res)

# Reads: the same aggregate through the catalog and through format("lance").
fresh()
query = "SELECT category, sum(value), count(*) FROM {{}} GROUP BY category"
spark.read.format("lance").load(table).createOrReplaceTempView("by_path")
reads = {{"sql select": "lake.t", "format(lance)": "by_path"}}
best = {{name: float("inf") for name in reads}}
for round in range(repeat + 1):
    for name, t in reads.items():
        t0 = time.perf_counter()
        rows = sorted(spark.sql(query.format(t)).collect())
        if round > 0:  # the first round warms up
            best[name] = min(best[name], time.perf_counter() - t0)
        out.setdefault("answers " + name, [[str(v) for v in r] for r in rows])
for name, seconds in best.items():
    out[name] = dict(seconds=seconds, rows_after=lance_core.dataset(table).count_rows())
shutil.rmtree(root, ignore_errors=True)
print(json.dumps(out))
"""


def merge_source(rows: int) -> str:
    """1M upsert rows as an Arrow IPC file: the even ids below 1M (matching) and 500,000
    new ids past the end, with new values."""
    import numpy as np
    import pyarrow as pa

    path = os.path.join(DATA, f"merge_source_{rows}.arrow")
    if os.path.exists(path):
        return path
    n = 500_000
    ids = np.concatenate([np.arange(0, 2 * n, 2), np.arange(rows, rows + n)]).astype(np.int64)
    template = next(batches(len(ids), batch_rows=len(ids), seed=7))
    t = pa.Table.from_batches([template]).set_column(0, "id", pa.array(ids))
    with pa.ipc.new_file(path + ".tmp", SCHEMA) as w:
        w.write_table(t)
    os.rename(path + ".tmp", path)
    return path


def parquet_copy(arrow_path: str) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = arrow_path.replace(".arrow", ".parquet")
    if not os.path.exists(path):
        pq.write_table(pa.ipc.open_file(arrow_path).read_all(), path + ".tmp")
        os.rename(path + ".tmp", path)
    return path


BIG_PAYLOAD = 1000  # bytes per row
BIG_BATCH = 32 * 1024


def _wide_batch(ids, rng):
    """`id` and a random `payload` of BIG_PAYLOAD bytes per row, built from one buffer."""
    import numpy as np
    import pyarrow as pa

    n = len(ids)
    offsets = pa.py_buffer((np.arange(n + 1, dtype=np.int32) * BIG_PAYLOAD).tobytes())
    payload = pa.Array.from_buffers(pa.binary(), n, [None, offsets, pa.py_buffer(rng.bytes(n * BIG_PAYLOAD))])
    return pa.record_batch([pa.array(ids, pa.int64()), payload], names=["id", "payload"])


def big_data(rows: int) -> tuple:
    """The --big case's table (pylance-written, ids 0..rows) and source (an Arrow IPC stream
    file: the even ids below `rows` and as many new ids past them, half of each batch
    each), built once under benches/data/."""
    import numpy as np
    import pyarrow as pa

    import lance

    os.makedirs(DATA, exist_ok=True)
    table = os.path.join(DATA, f"merge_wide_table_{rows}.lance")
    if not os.path.exists(os.path.join(table, "_versions")):
        rng = np.random.default_rng(11)
        batches = (_wide_batch(np.arange(o, min(o + BIG_BATCH, rows)), rng) for o in range(0, rows, BIG_BATCH))
        schema = pa.schema([("id", pa.int64()), ("payload", pa.binary())])
        lance.write_dataset(pa.RecordBatchReader.from_batches(schema, batches), table, max_rows_per_file=1_000_000,
                            mode="overwrite")
    source = os.path.join(DATA, f"merge_wide_source_{rows}.arrows")
    if not os.path.exists(source):
        rng = np.random.default_rng(12)
        half = BIG_BATCH // 2
        with pa.OSFile(source + ".tmp", "wb") as f:
            writer = None
            for o in range(0, rows // 2, half):
                n = min(half, rows // 2 - o)
                ids = np.empty(2 * n, dtype=np.int64)
                ids[0::2] = 2 * np.arange(o, o + n)        # matching: even ids below `rows`
                ids[1::2] = rows + np.arange(o, o + n)     # new ids
                b = _wide_batch(ids, rng)
                writer = writer or pa.ipc.new_stream(f, b.schema)
                writer.write_batch(b)
            writer.close()
        os.rename(source + ".tmp", source)
    return table, source


def big_merge(rows: int) -> None:
    table, source = big_data(rows)
    gb = rows * (BIG_PAYLOAD + 8) / 1e9
    results = {}
    for module in ("lance_core", "lance"):
        work = os.path.join(DATA, f"dml_big_work_{module}.lance")
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(table, work)
        try:
            results[module] = run_child(BIG_MERGE.format(module=module, work=work, source=source))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print(f"merge_insert of a {gb:.1f} GB source ({rows:,} rows, half matching) into a {gb:.1f} GB table "
          f"({rows:,} rows of an int64 and {BIG_PAYLOAD} bytes), one run each")
    for name, r in results.items():
        print(f"  {name:<11} {r['seconds']:8.1f} s  peak RSS {r['peak_mb']:7.0f} MB (interpreter before: "
              f"{r['before_mb']:.0f} MB)  inserted {r['num_inserted_rows']}, updated {r['num_updated_rows']}, "
              f"{r['rows_after']} rows after")
    ours, theirs = results["lance_core"], results["lance"]
    print(f"  speed {theirs['seconds'] / ours['seconds']:.2f}x (pylance time / lance_core time), "
          f"peak RSS {ours['peak_mb'] / theirs['peak_mb']:.2f}x pylance's")


def compare(title: str, code: str, extra: dict, show) -> dict:
    results = {}
    for module in ("lance_core", "lance"):
        work = os.path.join(DATA, f"dml_work_{module}.lance")
        results[module] = run_child(code.format(module=module, work=work, **extra))
        shutil.rmtree(work, ignore_errors=True)
    print(title)
    for name, r in results.items():
        print(f"  {name:<11} {r['seconds'] * 1000:8.1f} ms  {show(r)}")
    print(f"  speed {results['lance']['seconds'] / results['lance_core']['seconds']:.2f}x "
          "(pylance time / lance_core time)")
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--big", action="store_true", help="also the 4 GB source into 4 GB table merge")
    ap.add_argument("--big-rows", type=int, default=4_000_000)
    ap.add_argument("--no-small", action="store_true", help="only the --big case")
    args = ap.parse_args()
    if args.big:
        big_merge(args.big_rows)
    if args.no_small:
        return
    src = reference_dataset(args.rows)
    source = merge_source(args.rows)
    merged = compare(f"merge_insert of 1,000,000 rows (half matching) into {args.rows:,} rows (best of {args.repeat})",
            MERGE, dict(src=src, repeat=args.repeat, source=source),
            lambda r: f"inserted {r['num_inserted_rows']}, updated {r['num_updated_rows']}, "
                      f"{r['rows_after']} rows after")
    updated = compare(f"update of 10% of {args.rows:,} rows (best of {args.repeat})",
            UPDATE, dict(src=src, repeat=args.repeat),
            lambda r: f"updated {r['num_rows_updated']} ({r['updated_rows_read_back']} read back)")
    if args.no_spark:
        return
    work = os.path.join(DATA, "dml_work_spark", "t.lance")
    spark = run_child(SPARK.format(src=src, work=work, repeat=args.repeat, parquet=parquet_copy(source)))
    print(f"lance_core.spark on local[2] (best of {args.repeat}, after a warm-up run)")
    for name, python in (("merge", merged), ("update", updated)):
        r = spark[name]
        counts = {k: v for k, v in r.items() if k.startswith("num_")}
        print(f"  {name:<7} {r['seconds'] * 1000:8.1f} ms  {counts}, {r['rows_after']} rows after; "
              f"{python['lance']['seconds'] / r['seconds']:.2f}x pylance, "
              f"{python['lance_core']['seconds'] / r['seconds']:.2f}x lance_core in one process")
    print("Spark SQL through lance_core.spark.LanceCatalog against the lance_core.spark functions (and format(\"lance\"))")
    for sql_name, function in (("sql merge", "merge"), ("sql update 1%", "update 1%"), ("sql select", "format(lance)")):
        a, b = spark[sql_name], spark[function]
        print(f"  {sql_name:<14} {a['seconds'] * 1000:8.1f} ms, {a['rows_after']} rows after; {function}: "
              f"{b['seconds'] * 1000:.1f} ms, {b['rows_after']} rows after; SQL is {b['seconds'] / a['seconds']:.2f}x its speed")
    d = spark["sql delete 1%"]
    print(f"  sql delete 1% {d['seconds'] * 1000:8.1f} ms, {d['rows_after']} rows after; "
          f"data files untouched: {d['data_files_unchanged']}")
    if spark["answers sql select"] != spark["answers format(lance)"]:
        print("  ANSWERS DIFFER between the catalog and format(\"lance\")")

if __name__ == "__main__":
    main()
