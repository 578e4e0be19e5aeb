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
Python workers), against pylance's in-process times from the same run.

    python benches/dml_bench.py [--rows 4000000] [--repeat 3] [--no-spark]
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


SPARK = CHILD_PRELUDE + """
import os, shutil, sys
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
from pyspark.sql import SparkSession
from lance_core.spark import LanceDataSource, merge_insert, update
import lance_core
src, work, repeat, parquet = {src!r}, {work!r}, {repeat}, {parquet!r}
spark = (SparkSession.builder.master("local[2]").appName("dml bench")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "2").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
spark.dataSource.register(LanceDataSource)

def fresh():
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(src, work)

def merge():
    df = spark.read.parquet(parquet)
    return merge_insert(df, work, "id").when_matched_update_all().when_not_matched_insert_all().execute()

def upd():
    return update(spark, work, {{"value": "value * 2", "name": "'updated'"}}, where="count < 1000")

out = {{}}
for name, job in (("merge", merge), ("update", upd)):
    fresh()
    job()  # warm-up
    times = []
    for _ in range(repeat):
        fresh()
        t0 = time.perf_counter()
        res = job()
        times.append(time.perf_counter() - t0)
    out[name] = dict(seconds=min(times), rows_after=lance_core.dataset(work).count_rows(), **res)
shutil.rmtree(work, ignore_errors=True)
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
    args = ap.parse_args()
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
    work = os.path.join(DATA, "dml_work_spark.lance")
    spark = run_child(SPARK.format(src=src, work=work, repeat=args.repeat, parquet=parquet_copy(source)))
    print(f"lance_core.spark on local[2] (best of {args.repeat}, after a warm-up run)")
    for name, python in (("merge", merged), ("update", updated)):
        r = spark[name]
        counts = {k: v for k, v in r.items() if k.startswith("num_")}
        print(f"  {name:<7} {r['seconds'] * 1000:8.1f} ms  {counts}, {r['rows_after']} rows after; "
              f"{python['lance']['seconds'] / r['seconds']:.2f}x pylance, "
              f"{python['lance_core']['seconds'] / r['seconds']:.2f}x lance_core in one process")


if __name__ == "__main__":
    main()
