"""Scale benchmark: how each operation grows with the number of fragments and of versions,
lance_core vs pylance on the same tables, in one run, each measurement in a fresh process
(best of `--repeat`).

Tables (written by pylance, cached in benches/data/):
- fragments: 100, 1,000, 10,000 fragments of 100 rows (id int64, x float64, s string),
  one row deleted in every fragment (a deletion file each), 3 versions;
- versions: 100 fragments as above, then deletes that match nothing (each a version)
  up to 100, 1,000, 10,000 versions. pylance 14 leaves `_versions/latest_version_hint.json`
  after each commit, as lance_core does; lance_core's open follows it while nothing in
  `_versions/` changed after it (else it reads the directory's names).

Operations: open (latest), filtered count (`x > 100.0`), full scan, take of 100 random
rows, open of version 2 and its count, `versions()`, append of 100 rows, cleanup of
every old version, compaction (the last three on a fresh copy each time).

    python benches/scale_bench.py [--fragments 100,1000,10000] [--versions 100,1000,10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CHILD_PRELUDE, DATA, run_child  # noqa: E402

ROWS_PER_FRAGMENT = 100


def _rows(start: int, n: int):
    import pyarrow as pa

    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "x": pa.array([float(i % 997) for i in range(start, start + n)]),
                     "s": pa.array([f"name-{i:08d}" for i in range(start, start + n)])})


def table(fragments: int, versions: int) -> str:
    """The table with `fragments` fragments and `versions` versions, built once."""
    import lance

    path = os.path.join(DATA, f"scale_f{fragments}_v{versions}.lance")
    if os.path.exists(os.path.join(path, "_versions")):
        return path
    t0 = time.time()
    tmp = path + ".building"
    shutil.rmtree(tmp, ignore_errors=True)
    rows = fragments * ROWS_PER_FRAGMENT
    lance.write_dataset(_rows(0, rows), tmp, max_rows_per_file=ROWS_PER_FRAGMENT)
    ds = lance.dataset(tmp)
    ds.delete(f"id % {ROWS_PER_FRAGMENT} = 0")  # a deletion file on every fragment
    for _ in range(versions - 2):
        ds.delete("id = -1")  # deletes nothing, commits a version
    os.rename(tmp, path)
    print(f"built {path} with pylance in {time.time() - t0:.1f}s", flush=True)
    return path


READ = CHILD_PRELUDE + """
import random
import {module} as lib
uri, op, repeat = {uri!r}, {op!r}, {repeat}
random.seed(7)
def run():
    if op == "open":
        return lib.dataset(uri)
    if op == "old version":
        return lib.dataset(uri, version=2).count_rows()
    ds = lib.dataset(uri)
    if op == "filtered count":
        return ds.count_rows("x > 100.0")
    if op == "scan":
        return ds.to_table().num_rows
    if op == "take":
        n = ds.count_rows()
        return ds.take(sorted(random.sample(range(n), 100))).num_rows
    if op == "versions()":
        return len(ds.versions())
times, peak = [], 0.0
for _ in range(repeat):
    base = reset_peak()
    t0 = time.perf_counter()
    run()
    times.append(time.perf_counter() - t0)
    peak = max(peak, peak_mb() - base)
print(json.dumps(dict(seconds=min(times), peak=peak)))
"""

WRITE = CHILD_PRELUDE + """
import shutil
from datetime import timedelta
import pyarrow as pa
import {module} as lib
src, work, op, repeat = {src!r}, {work!r}, {op!r}, {repeat}
new = pa.table({{"id": pa.array(range(100), pa.int64()), "x": pa.array([0.5] * 100),
                 "s": pa.array(["appended"] * 100)}})
times, peak = [], 0.0
for _ in range(repeat):
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(src, work)
    base = reset_peak()
    t0 = time.perf_counter()
    if op == "append":
        lib.write_dataset(new, work, mode="append")
    elif op == "cleanup":
        lib.dataset(work).cleanup_old_versions(older_than=timedelta(0))
    elif op == "compaction":
        lib.dataset(work).optimize.compact_files()
    times.append(time.perf_counter() - t0)
    peak = max(peak, peak_mb() - base)
shutil.rmtree(work, ignore_errors=True)
print(json.dumps(dict(seconds=min(times), peak=peak)))
"""

# Opening and appending on an S3-compatible server (moto on this machine, no added delay):
# the latest version is found from the listing's first page.
ON_S3 = CHILD_PRELUDE + """
import pyarrow as pa
import {module} as lib
uri, opts, op, repeat = {uri!r}, {opts!r}, {op!r}, {repeat}
new = pa.table({{"id": pa.array(range(100), pa.int64()), "x": pa.array([0.5] * 100),
                 "s": pa.array(["appended"] * 100)}})
times = []
for _ in range(repeat):
    t0 = time.perf_counter()
    if op == "open":
        lib.dataset(uri, storage_options=opts)
    else:
        lib.write_dataset(new, uri, mode="append", storage_options=opts)
    times.append(time.perf_counter() - t0)
print(json.dumps(dict(seconds=min(times), peak=0.0)))
"""

READS = ["open", "filtered count", "scan", "take", "old version", "versions()"]
WRITES = ["append", "cleanup", "compaction"]


def measure(uri: str, op: str, module: str, repeat: int) -> dict:
    if op in WRITES:
        work = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"scale_bench_{module}.lance")
        code = WRITE.format(module=module, src=uri, work=work, op=op, repeat=repeat)
    else:
        code = READ.format(module=module, uri=uri, op=op, repeat=repeat)
    return run_child(code)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fragments", default="100,1000,10000")
    ap.add_argument("--versions", default="100,1000,10000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--s3-versions", default="100,10000",
                    help="version counts whose open and append are also measured on moto ('' for none)")
    args = ap.parse_args()
    cases = [(f"{f} fragments", table(int(f), 3)) for f in args.fragments.split(",") if f]
    for v in filter(None, args.versions.split(",")):
        cases.append((f"{v} versions", table(100, int(v))))
    print(f"best of {args.repeat}; ms; speed = pylance time / lance_core time; peak MB above the "
          "process's memory before the operation", flush=True)
    print(f"{'table':<22} {'operation':<16} {'lance_core':>11} {'pylance':>10} {'speed':>7} {'peak MB':>15}")
    for name, uri in cases:
        for op in READS + WRITES:
            ours = measure(uri, op, "lance_core", args.repeat)
            theirs = measure(uri, op, "lance", args.repeat)
            speed = theirs["seconds"] / ours["seconds"]
            peaks = f"{ours['peak']:.0f} / {theirs['peak']:.0f}"
            print(f"{name:<22} {op:<16} {ours['seconds'] * 1e3:>11.1f} {theirs['seconds'] * 1e3:>10.1f} "
                  f"{speed:>6.2f}x {peaks:>15}", flush=True)
    if args.s3_versions:
        on_s3([int(v) for v in args.s3_versions.split(",")], args.repeat)


def on_s3(version_counts, repeat):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
    from s3_proxy import S3Server

    server = S3Server()
    try:
        for v in version_counts:
            uri = server.upload(table(100, v), f"scale_f100_v{v}.lance")
            name = f"{v} versions, S3"
            for op in ("open", "append"):
                res = {m: run_child(ON_S3.format(module=m, uri=uri, opts=server.options(), op=op, repeat=repeat))
                       for m in ("lance_core", "lance")}
                ours, theirs = res["lance_core"]["seconds"], res["lance"]["seconds"]
                print(f"{name:<22} {op:<16} {ours * 1e3:>11.1f} {theirs * 1e3:>10.1f} {theirs / ours:>6.2f}x",
                      flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
