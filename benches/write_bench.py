"""Write benchmark: lance_core vs pylance writing the same rows (the scan benchmark's
4M rows of ints, doubles, strings, categories and 32-dim vectors), in one run.

The rows are loaded from the benchmark's Parquet copy before timing; each library writes
in its own process. Prints write throughput and the size of the data files written.

    python benches/write_bench.py [--rows 4000000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CHILD_PRELUDE, DATA, parquet_file, run_child  # noqa: E402

WRITE = CHILD_PRELUDE + """
import os, shutil
import pyarrow.parquet as pq
import {module} as lib
src, dest, repeat = {src!r}, {dest!r}, {repeat}
table = pq.read_table(src)
gc.collect()
base = reset_peak()
times = []
for _ in range(repeat):
    shutil.rmtree(dest, ignore_errors=True)
    t0 = time.perf_counter()
    lib.write_dataset(table, dest, max_rows_per_file=1_000_000)
    times.append(time.perf_counter() - t0)
size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(os.path.join(dest, "data")) for f in fs)
print(json.dumps(dict(seconds=min(times), rows=table.num_rows, bytes=table.nbytes, size=size, peak_mb=peak_mb() - base)))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    src = parquet_file(args.rows)
    print(f"writing {args.rows:,} rows (best of {args.repeat})")
    print(f"{'library':<12}{'seconds':>9}{'Mrows/s':>10}{'MB/s':>9}{'files MB':>10}{'peak MB':>9}")
    results = {}
    for module in ("lance_core", "lance"):
        dest = os.path.join(DATA, f"write_{module}.lance")
        r = run_child(WRITE.format(module=module, src=src, dest=dest, repeat=args.repeat))
        shutil.rmtree(dest, ignore_errors=True)
        results[module] = r
        name = "pylance" if module == "lance" else module
        print(f"{name:<12}{r['seconds']:>9.3f}{r['rows'] / r['seconds'] / 1e6:>10.2f}{r['bytes'] / r['seconds'] / 1e6:>9.0f}"
              f"{r['size'] / 1e6:>10.1f}{r['peak_mb']:>9.0f}", flush=True)
    ours, ref = results["lance_core"], results["lance"]
    print(f"ratio: write throughput lance_core/pylance = {ref['seconds'] / ours['seconds']:.2f}x, "
          f"file size lance_core/pylance = {ours['size'] / ref['size']:.3f}x")


if __name__ == "__main__":
    main()
