"""Scan benchmark: lance_core vs pylance (and pyarrow reading the same rows as Parquet)
on the same pylance-written dataset, in one run.

Builds (once, cached in benches/data/) a dataset of int64, float64, int32, short strings,
low-cardinality strings and 32-dim float32 vectors, 1M rows per file; then times a full
streaming scan and a numeric-columns scan with each library, each in its own process so
peak memory (max RSS above the process's baseline after imports) is measured separately.

    python benches/scan_bench.py [--rows 4000000] [--repeat 3] [--format 2.0]

`--format` has pylance write the dataset in that file format (default: pylance's own).
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CHILD_PRELUDE, NUMERIC, parquet_file, reference_dataset, run_child  # noqa: E402

SCAN = CHILD_PRELUDE + """
import {module} as lib
path, columns, repeat = {path!r}, {columns!r}, {repeat}
ds = lib.dataset(path)
gc.collect()
base = reset_peak()
times, rows, nbytes = [], 0, 0
for _ in range(repeat):
    t0 = time.perf_counter()
    rows = nbytes = 0
    for b in ds.to_batches(columns=columns):
        rows += b.num_rows
        nbytes += b.nbytes
    times.append(time.perf_counter() - t0)
print(json.dumps(dict(seconds=min(times), rows=rows, bytes=nbytes, peak_mb=peak_mb() - base)))
"""


PARQUET = CHILD_PRELUDE + """
import pyarrow.parquet as pq
path, columns, repeat = {path!r}, {columns!r}, {repeat}
gc.collect()
base = reset_peak()
times, rows, nbytes = [], 0, 0
for _ in range(repeat):
    t0 = time.perf_counter()
    rows = nbytes = 0
    for b in pq.ParquetFile(path).iter_batches(columns=columns, batch_size=8192):
        rows += b.num_rows
        nbytes += b.nbytes
    times.append(time.perf_counter() - t0)
print(json.dumps(dict(seconds=min(times), rows=rows, bytes=nbytes, peak_mb=peak_mb() - base)))
"""


def measure(module: str, path: str, columns, repeat: int) -> dict:
    if module == "parquet":
        return run_child(PARQUET.format(path=path, columns=columns, repeat=repeat))
    return run_child(SCAN.format(module=module, path=path, columns=columns, repeat=repeat))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--format", default=None, help="file format of the dataset, e.g. 2.0")
    args = ap.parse_args()
    path = reference_dataset(args.rows, args.format)
    pq_path = parquet_file(args.rows)
    print(f"dataset: {path} ({args.rows:,} rows), best of {args.repeat}, 2 cores" if os.cpu_count() == 2 else f"dataset: {path}")
    print(f"{'scan':<16}{'library':<12}{'seconds':>9}{'Mrows/s':>10}{'MB/s':>9}{'peak MB':>9}")
    results = {}
    for label, cols in [("full", None), ("numeric", NUMERIC)]:
        for module in ("lance_core", "lance", "parquet"):
            r = measure(module, pq_path if module == "parquet" else path, cols, args.repeat)
            results[(label, module)] = r
            name = {"lance": "pylance", "parquet": "pyarrow-pq"}.get(module, module)
            print(f"{label:<16}{name:<12}{r['seconds']:>9.3f}{r['rows'] / r['seconds'] / 1e6:>10.2f}"
                  f"{r['bytes'] / r['seconds'] / 1e6:>9.0f}{r['peak_mb']:>9.0f}", flush=True)
        ours, ref = results[(label, "lance_core")], results[(label, "lance")]
        assert ours["rows"] == ref["rows"], f"row counts differ: {ours['rows']} vs {ref['rows']}"
        pq_r = results[(label, "parquet")]
        print(f"{label:<16}{'ratio':<12}throughput lance_core/pylance = {ref['seconds'] / ours['seconds']:.2f}x, "
              f"peak memory lance_core/pylance = {ours['peak_mb'] / max(ref['peak_mb'], 1):.2f}x, "
              f"throughput lance_core/parquet = {pq_r['seconds'] / ours['seconds']:.2f}x", flush=True)


if __name__ == "__main__":
    main()
