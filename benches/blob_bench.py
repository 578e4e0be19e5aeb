"""Blob benchmark: lance_core vs pylance writing and reading the same blob column, in one
run, each library in its own process (best of `--repeat`).

The data is 2 GB of incompressible bytes in a `large_binary` column marked
`lance-encoding:blob`: 10,000 blobs of 200 KB (100 per batch), then 20 blobs of 100 MB (one
per batch), streamed from a reader so neither library holds the input. Written twice:

- format 2.1: blob v1 (the bytes beside the descriptors in the data file);
- format 2.2: blob v2 (200 KB blobs packed into shared `.blob` sidecars, 100 MB blobs in
  sidecars of their own).

Then, on each library's own table, `take_blobs` of the same 1,000 random rows:
- `read whole`: each blob file read to its end;
- `first 4 KB`: 4,096 bytes read from the start of each.

Prints seconds, throughput and peak memory (resident, above the process's size before the
operation), and lance_core's ratios: speed (above 1: lance_core faster) and extra peak
memory in MB (the target allows two blobs' size, 200 MB, more than pylance).

    python benches/blob_bench.py [--small 10000] [--large 20] [--repeat 3] [--versions 2.1,2.2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CHILD_PRELUDE, DATA, run_child  # noqa: E402

SMALL, LARGE = 200_000, 100_000_000

# One pool of random bytes; each blob is a window of it at its own offset, built zero-copy,
# so making the input costs nothing inside the timed region and stays out of peak memory.
INPUT = """
import numpy as np
SMALL, LARGE, n_small, n_large = {small_size}, {large_size}, {small}, {large}
pool = np.random.default_rng(3).integers(0, 256, LARGE + SMALL * 100, dtype=np.uint8)
pool_buf = pa.py_buffer(pool)
FIELD = pa.field("blob", pa.large_binary(), metadata={{"lance-encoding:blob": "true"}})
SCHEMA = pa.schema([pa.field("id", pa.int64()), FIELD])

def _batch(first, sizes):
    offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    start = (first * 7919) % SMALL
    data = pool_buf.slice(start, int(offsets[-1]))
    blobs = pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(sizes), [None, pa.py_buffer(offsets), data])
    return pa.record_batch([pa.array(np.arange(first, first + len(sizes), dtype=np.int64)), blobs], schema=SCHEMA)

def batches():
    for first in range(0, n_small, 100):
        yield _batch(first, [SMALL] * min(100, n_small - first))
    for i in range(n_large):
        yield _batch(n_small + i, [LARGE])

def reader():
    return pa.RecordBatchReader.from_batches(SCHEMA, batches())
"""

WRITE = CHILD_PRELUDE + INPUT + """
import os
import {module} as lib
dest, repeat, version = {dest!r}, {repeat}, {version!r}
gc.collect()
base = reset_peak()
times = timed_writes(lambda: lib.write_dataset(reader(), dest, data_storage_version=version,
                                               max_rows_per_file=1 << 30, max_bytes_per_file=1 << 40),
                     dest, repeat)
size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(dest) for f in fs)
print(json.dumps(dict(seconds=min(times), bytes=SMALL * n_small + LARGE * n_large, size=size,
                      peak_mb=peak_mb() - base)))
"""

READ = CHILD_PRELUDE + """
import random
import {module} as lib
path, repeat, n, mode = {path!r}, {repeat}, {n}, {mode!r}
ds = lib.dataset(path)
rows = sorted(random.Random(11).sample(range(ds.count_rows()), n))
gc.collect()
base = reset_peak()
times = []
for _ in range(repeat):
    t0 = time.perf_counter()
    got = 0
    for f in ds.take_blobs("blob", indices=rows):
        with f:
            got += len(f.read() if mode == "whole" else f.read(4096))
    times.append(time.perf_counter() - t0)
print(json.dumps(dict(seconds=min(times), bytes=got, peak_mb=peak_mb() - base)))
"""


def _row(label, module, r, ref=None):
    name = "pylance" if module == "lance" else module
    ratio = "" if ref is None else f"{ref['seconds'] / r['seconds']:>8.2f}x{r['peak_mb'] - ref['peak_mb']:>+10.0f}"
    print(f"{label:<34}{name:<12}{r['seconds']:>9.3f}{r['bytes'] / r['seconds'] / 1e6:>9.0f}"
          f"{r['peak_mb']:>9.0f}{ratio}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", type=int, default=10_000, help="200 KB blobs")
    ap.add_argument("--large", type=int, default=20, help="100 MB blobs")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reads", type=int, default=1_000)
    ap.add_argument("--versions", default="2.1,2.2")
    args = ap.parse_args()
    total = (args.small * SMALL + args.large * LARGE) / 1e9
    print(f"{args.small:,} x 200 KB + {args.large} x 100 MB blobs ({total:.1f} GB), best of {args.repeat}; "
          f"speed ratio above 1: lance_core faster; +MB: lance_core's peak above pylance's")
    print(f"{'case':<34}{'library':<12}{'seconds':>9}{'MB/s':>9}{'peak MB':>9}{'speed':>9}{'+peak MB':>10}")
    inputs = dict(small_size=SMALL, large_size=LARGE, small=args.small, large=args.large)
    for version in args.versions.split(","):
        paths, results = {}, {}
        for module in ("lance_core", "lance"):
            paths[module] = os.path.join(DATA, f"blobs_{module}_{version}.lance")
            results[module] = run_child(WRITE.format(module=module, dest=paths[module], repeat=args.repeat,
                                                     version=version, **inputs))
        ref = results["lance"]
        _row(f"write {version}", "lance", ref)
        _row(f"write {version}", "lance_core", results["lance_core"], ref)
        for mode, label in (("whole", "read whole"), ("head", "first 4 KB")):
            reads = {m: run_child(READ.format(module=m, path=paths[m], repeat=args.repeat, n=args.reads, mode=mode))
                     for m in ("lance_core", "lance")}
            _row(f"  {version} {args.reads} rows, {label}", "lance", reads["lance"])
            _row(f"  {version} {args.reads} rows, {label}", "lance_core", reads["lance_core"], reads["lance"])
        for p in paths.values():
            shutil.rmtree(p, ignore_errors=True)


if __name__ == "__main__":
    main()
