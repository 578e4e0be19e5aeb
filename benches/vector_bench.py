"""Vector search benchmark: lance_core vs pylance 14, in one run, each library in its own
process, on a table pylance wrote: `rows` (1M) 128-dim float32 vectors drawn from a mixture
of 1,000 clusters, each spread along 8 directions of its own plus a little noise (so that
IVF_PQ can reach recall@10 >= 0.9; isotropic gaussians cannot), an `id` and a `cat` column of
10 values (for 10%-selective filters), 1M rows per file; queries are stored vectors plus
noise.

- exact search (no index): k=10, all columns but the vector, best of several queries;
- IVF_PQ build (256 partitions, 16 sub-vectors, 8 bits, l2) by each library on a fresh copy
  of the table: seconds, and the peak memory above the process's resident memory before;
- indexed search through each library's own index: queries per second (one query after
  another, 200 queries, after one warm pass) and recall@10 against exact search, for
  nprobes 10/20/40 without and with refine_factor 5;
- a filtered search (`cat = 3`, 10%, pre-filter) through the index;
- the same IVF_PQ build on Spark local[2] (`lance_core.spark.create_index`: the driver
  trains, two tasks encode, one commit; the session's start not counted), its recall at
  nprobes 20 + refine 5, and a batch of every query at once through it
  (`lance_core.spark.nearest`), against pylance's local build above.

    python benches/vector_bench.py [--rows 1000000] [--queries 200] [--no-spark]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CHILD_PRELUDE, DATA, run_child  # noqa: E402

DIM = 128


def table_path(rows: int) -> str:
    import lance
    import numpy as np
    import pyarrow as pa

    path = os.path.join(DATA, f"vectors8_{rows}.lance")
    if os.path.exists(os.path.join(path, "_versions")):
        return path
    rng = np.random.default_rng(17)
    # Each cluster spreads along 8 directions of its own (embeddings have few degrees of
    # freedom; isotropic noise in 128 dimensions makes every neighbour equally far).
    centers = rng.standard_normal((1000, DIM)).astype(np.float32) * 2
    axes = rng.standard_normal((1000, 8, DIM)).astype(np.float32) * 0.4

    def batches():
        for start in range(0, rows, 100_000):
            n = min(100_000, rows - start)
            c = rng.integers(0, len(centers), n)
            z = rng.standard_normal((n, 8)).astype(np.float32)
            v = (centers[c] + np.einsum("nk,nkd->nd", z, axes[c])
                 + rng.standard_normal((n, DIM)).astype(np.float32) * 0.05)
            yield pa.record_batch({
                "id": pa.array(np.arange(start, start + n)),
                "cat": pa.array((np.arange(start, start + n) * 7919 % 10).astype(np.int32)),
                "vec": pa.FixedSizeListArray.from_arrays(pa.array(v.astype(np.float32).ravel()), DIM),
            })
    first = next(batches())
    reader = pa.RecordBatchReader.from_batches(first.schema, batches())
    os.makedirs(DATA, exist_ok=True)
    lance.write_dataset(reader, path, max_rows_per_file=1_000_000)
    return path


def queries_path(rows: int, n: int) -> str:
    """Query vectors near stored ones (each a stored vector plus a little noise)."""
    import lance
    import numpy as np

    path = os.path.join(DATA, f"vector8_queries_{rows}_{n}.npy")
    if not os.path.exists(path):
        rng = np.random.default_rng(5)
        ds = lance.dataset(table_path(rows))
        picks = sorted(rng.choice(rows, n, replace=False).tolist())
        v = np.array(ds.take(picks, columns=["vec"])["vec"].to_pylist(), dtype=np.float32)
        np.save(path, v + rng.standard_normal(v.shape).astype(np.float32) * 0.05)
    return path


# Exact search, then the index build on a fresh copy, then indexed searches.
CHILD = """
import shutil
import numpy as np
import {module} as lib
src, work, qpath = {src!r}, {work!r}, {qpath!r}
qs = np.load(qpath)
out = {{}}
ds = lib.dataset(src)
cols = ["id", "cat", "_distance"]
ds.to_table(nearest={{"column": "vec", "q": qs[0], "k": 10}}, columns=cols)
times = []
exact = []
for q in qs[:{exact_queries}]:
    t0 = time.perf_counter()
    r = ds.to_table(nearest={{"column": "vec", "q": q, "k": 10}}, columns=cols)
    times.append(time.perf_counter() - t0)
    exact.append(set(r["id"].to_pylist()))
out["exact search (k=10), median"] = sorted(times)[len(times) // 2]
truth = []
for q in qs:
    truth.append(set(ds.to_table(nearest={{"column": "vec", "q": q, "k": 10, "use_index": False}},
                                 columns=["id", "_distance"])["id"].to_pylist()))

shutil.rmtree(work, ignore_errors=True)
shutil.copytree(src, work)
base = reset_peak()
t0 = time.perf_counter()
lib.dataset(work).create_index("vec", "IVF_PQ", num_partitions=256, num_sub_vectors=16, metric="l2")
out["build IVF_PQ (256 partitions, 16 sub-vectors)"] = time.perf_counter() - t0
out["build peak MB above start"] = peak_mb() - base

ds = lib.dataset(work)
# Warm: every partition a query probes read once (each library keeps them in memory).
for q in qs:
    ds.to_table(nearest={{"column": "vec", "q": q, "k": 10, "nprobes": 40}}, columns=["id", "_distance"])
for nprobes in (10, 20, 40):
    for refine in (None, 5):
        n = {{"column": "vec", "k": 10, "nprobes": nprobes}}
        if refine:
            n["refine_factor"] = refine
        ds.to_table(nearest={{**n, "q": qs[0]}}, columns=["id", "_distance"])
        t0 = time.perf_counter()
        found = [set(ds.to_table(nearest={{**n, "q": q}}, columns=["id", "_distance"])["id"].to_pylist()) for q in qs]
        elapsed = time.perf_counter() - t0
        recall = sum(len(f & t) / 10 for f, t in zip(found, truth)) / len(qs)
        out[f"nprobes={{nprobes}} refine={{refine}}"] = [len(qs) / elapsed, recall]
times = []
for q in qs[:50]:
    t0 = time.perf_counter()
    ds.to_table(nearest={{"column": "vec", "q": q, "k": 10, "nprobes": 20}}, filter="cat = 3", prefilter=True,
                columns=["id", "_distance"])
    times.append(time.perf_counter() - t0)
out["filtered search (cat = 3, 10%, prefilter), median"] = sorted(times)[len(times) // 2]
shutil.rmtree(work, ignore_errors=True)
print(json.dumps(out))
"""


# The build on Spark local[2], its recall, and a batch search through it.
SPARK_CHILD = """
import os, shutil, sys
import numpy as np
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
from pyspark.sql import SparkSession
import lance_core
from lance_core.spark import create_index, nearest
src, work, qpath = {src!r}, {work!r}, {qpath!r}
qs = np.load(qpath)
spark = (SparkSession.builder.master("local[2]").appName("vector bench")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "2").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
ds = lance_core.dataset(src)
truth = [set(ds.to_table(nearest={{"column": "vec", "q": q, "k": 10, "use_index": False}},
                         columns=["id", "_distance"])["id"].to_pylist()) for q in qs]
shutil.rmtree(work, ignore_errors=True)
shutil.copytree(src, work)
out = {{}}
t0 = time.perf_counter()
create_index(spark, work, "vec", "IVF_PQ", num_partitions=256, num_sub_vectors=16, metric="l2")
out["spark build"] = time.perf_counter() - t0
ds = lance_core.dataset(work)
n = {{"column": "vec", "k": 10, "nprobes": 20, "refine_factor": 5}}
found = [set(ds.to_table(nearest={{**n, "q": q}}, columns=["id", "_distance"])["id"].to_pylist()) for q in qs]
out["recall"] = sum(len(f & t) / 10 for f, t in zip(found, truth)) / len(qs)
queries = spark.createDataFrame([(i, q.tolist()) for i, q in enumerate(qs)], "query_id int, vec array<float>")
t0 = time.perf_counter()
rows = nearest(spark, work, queries, "vec", k=10, columns=["id"], nprobes=20, refine_factor=5).collect()
out["spark batch search"] = time.perf_counter() - t0
got = {{}}
for r in rows:
    got.setdefault(r.query_id, set()).add(r.id)
out["batch recall"] = sum(len(got.get(i, set()) & t) / 10 for i, t in enumerate(truth)) / len(qs)
shutil.rmtree(work, ignore_errors=True)
print(json.dumps(out))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--exact-queries", type=int, default=10)
    ap.add_argument("--no-spark", action="store_true")
    args = ap.parse_args()
    src, qpath = table_path(args.rows), queries_path(args.rows, args.queries)
    results = {}
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        for module in ("lance_core", "lance"):
            results[module] = run_child(CHILD_PRELUDE + CHILD.format(
                module=module, src=src, work=os.path.join(tmp, "t.lance"), qpath=qpath,
                exact_queries=args.exact_queries))
        if not args.no_spark:
            results["spark"] = run_child(CHILD_PRELUDE + SPARK_CHILD.format(
                src=src, work=os.path.join(tmp, "t.lance"), qpath=qpath))
    ours, ref = results["lance_core"], results["lance"]
    print(f"{args.rows:,} rows of {DIM}-dim float32 (1,000 clusters); speed = pylance time / lance_core time")
    print(f"{'measurement':<52}{'lance_core':>12}{'pylance':>12}{'speed':>8}")
    for key in ("exact search (k=10), median", "build IVF_PQ (256 partitions, 16 sub-vectors)",
                "filtered search (cat = 3, 10%, prefilter), median"):
        print(f"{key:<52}{ours[key] * 1000:>10.1f}ms{ref[key] * 1000:>10.1f}ms{ref[key] / ours[key]:>7.2f}x")
    key = "build peak MB above start"
    print(f"{key:<52}{ours[key]:>10.0f}MB{ref[key]:>10.0f}MB")
    print("indexed search, each library through its own index: queries/s (recall@10)")
    for key in ours:
        if key.startswith("nprobes="):
            (qa, ra), (qb, rb) = ours[key], ref[key]
            print(f"  {key:<50}{qa:>8.0f} ({ra:.3f}){qb:>8.0f} ({rb:.3f}){qa / qb:>7.2f}x")
    if "spark" in results:
        sp, key = results["spark"], "build IVF_PQ (256 partitions, 16 sub-vectors)"
        print("Spark local[2] (lance_core.spark), against pylance's local build above:")
        print(f"  {'build IVF_PQ on Spark':<50}{sp['spark build']:>10.2f}s{ref[key]:>10.2f}s"
              f"{ref[key] / sp['spark build']:>7.2f}x")
        print(f"  {'recall@10 of the Spark-built index (nprobes 20, refine 5)':<60}{sp['recall']:.3f}")
        print(f"  {'batch search of every query (nearest)':<50}{sp['spark batch search']:>10.2f}s"
              f"  recall@10 {sp['batch recall']:.3f}")


if __name__ == "__main__":
    main()
