"""Shared benchmark helpers: the reference dataset and measurements in child processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")

SCHEMA = pa.schema([
    pa.field("id", pa.int64()),
    pa.field("value", pa.float64()),
    pa.field("count", pa.int32()),
    pa.field("name", pa.string()),
    pa.field("category", pa.string()),
    pa.field("vector", pa.list_(pa.float32(), 32)),
])
NUMERIC = ["id", "value", "count"]
CATEGORIES = [f"category-{i:02d}" for i in range(24)]


def batches(rows: int, batch_rows: int = 100_000, seed: int = 42):
    """The benchmark rows, generated batch by batch so memory stays small."""
    rng = np.random.default_rng(seed)
    cats = np.array(CATEGORIES)
    for start in range(0, rows, batch_rows):
        n = min(batch_rows, rows - start)
        ids = np.arange(start, start + n, dtype=np.int64)
        names = [f"user_{i % 100_003:06d}" for i in ids]
        yield pa.record_batch([
            pa.array(ids),
            pa.array(rng.normal(1000.0, 250.0, n)),
            pa.array(rng.integers(0, 10_000, n, dtype=np.int32)),
            pa.array(names),
            pa.array(cats[rng.integers(0, len(cats), n)]),
            pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 32).astype(np.float32)), 32),
        ], schema=SCHEMA)


def reference_dataset(rows: int, version: str | None = None) -> str:
    """The benchmark dataset written by pylance (1M rows per file), built once and reused;
    in pylance's default file format, or in `version` ("2.0", "2.1", ...)."""
    import lance

    suffix = f"_v{version}" if version else ""
    path = os.path.join(DATA, f"bench_{rows}{suffix}.lance")
    if not os.path.exists(os.path.join(path, "_versions")):
        os.makedirs(DATA, exist_ok=True)
        t0 = time.time()
        reader = pa.RecordBatchReader.from_batches(SCHEMA, batches(rows))
        extra = {"data_storage_version": version} if version else {}
        lance.write_dataset(reader, path, max_rows_per_file=1_000_000, mode="overwrite", **extra)
        print(f"built {path} with pylance in {time.time() - t0:.1f}s", flush=True)
    return path


def parquet_file(rows: int, wide: bool = False) -> str:
    """The same rows as a Parquet file (pyarrow defaults: snappy, dictionary), built once."""
    import pyarrow.parquet as pq

    path = os.path.join(DATA, f"bench_{'wide_' if wide else ''}{rows}.parquet")
    if not os.path.exists(path):
        os.makedirs(DATA, exist_ok=True)
        with pq.ParquetWriter(path + ".tmp", WIDE_SCHEMA if wide else SCHEMA) as w:
            for b in (wide_batches(rows) if wide else batches(rows)):
                w.write_batch(b, row_group_size=1_000_000)
        os.rename(path + ".tmp", path)
    return path


# The wide variant: 40 columns (the benchmark's id, value, name and category, then 36
# more: doubles, ints, unique strings and repeated ones), for queries that read few of many.
WIDE_SCHEMA = pa.schema(
    [pa.field("id", pa.int64()), pa.field("value", pa.float64()), pa.field("name", pa.string()),
     pa.field("category", pa.string())]
    + [pa.field(f"d{i:02d}", pa.float64()) for i in range(18)]
    + [pa.field(f"i{i:02d}", pa.int32()) for i in range(12)]
    + [pa.field(f"u{i}", pa.string()) for i in range(3)]
    + [pa.field(f"r{i}", pa.string()) for i in range(3)])


def wide_batches(rows: int, batch_rows: int = 100_000, seed: int = 43):
    rng = np.random.default_rng(seed)
    cats = np.array(CATEGORIES)
    for start in range(0, rows, batch_rows):
        n = min(batch_rows, rows - start)
        ids = np.arange(start, start + n, dtype=np.int64)
        cols = [pa.array(ids), pa.array(rng.normal(1000.0, 250.0, n)),
                pa.array([f"user_{i % 100_003:06d}" for i in ids]), pa.array(cats[rng.integers(0, len(cats), n)])]
        cols += [pa.array(rng.standard_normal(n)) for _ in range(18)]
        cols += [pa.array(rng.integers(0, 1 << 20, n, dtype=np.int32)) for _ in range(12)]
        cols += [pa.array([f"{k}-{i:012d}-{j}" for i, j in zip(ids, rng.integers(0, 1 << 30, n))]) for k in range(3)]
        cols += [pa.array(cats[rng.integers(0, len(cats), n)]) for _ in range(3)]
        yield pa.record_batch(cols, schema=WIDE_SCHEMA)


def wide_dataset(rows: int) -> str:
    """The wide variant written by pylance (1M rows per file), built once."""
    import lance

    path = os.path.join(DATA, f"bench_wide_{rows}.lance")
    if not os.path.exists(os.path.join(path, "_versions")):
        os.makedirs(DATA, exist_ok=True)
        reader = pa.RecordBatchReader.from_batches(WIDE_SCHEMA, wide_batches(rows))
        lance.write_dataset(reader, path, max_rows_per_file=1_000_000, mode="overwrite")
    return path


def remote_table_rows(rows: int) -> pa.Table:
    """The rows of the object-store benchmarks' table (id int64, x float64, a 24-character
    string s)."""
    return pa.table({"id": pa.array(range(rows), pa.int64()),
                     "x": pa.array([i * 0.25 for i in range(rows)]),
                     "s": pa.array([f"row-{i:020d}" for i in range(rows)])})


def run_child(code: str) -> dict:
    """Run a measurement in a fresh interpreter and return the JSON it prints last."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


CHILD_PRELUDE = """
import json, time, gc
import pyarrow as pa
def _status_mb(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024
def reset_peak():
    # Peak RSS counts from now (Linux: writing 5 to clear_refs resets VmHWM); ru_maxrss
    # would include the parent process's memory at fork.
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status_mb("VmRSS:")
def peak_mb():
    return _status_mb("VmHWM:")
def timed_writes(write, dest, repeat):
    # Seconds of each of `repeat` runs of `write()`, each into an emptied `dest`.
    import shutil
    times = []
    for _ in range(repeat):
        shutil.rmtree(dest, ignore_errors=True)
        t0 = time.perf_counter()
        write()
        times.append(time.perf_counter() - t0)
    return times
"""
