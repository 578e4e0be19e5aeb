"""Table maintenance benchmark: lance_core vs pylance on the same datasets, in one run,
each library in its own process and on its own copy of the data.

- compaction: 200 fragments of 20,000 rows (int64, float64, a short string), 10% of rows
  deleted, compacted with pylance's defaults (`optimize.compact_files()`);
- cleanup: a dataset of 500 versions (500 appends of 1,000 rows, every tenth version an
  overwrite of the last rows so that files become unreferenced, deletes in between), all
  versions but the latest removed (`cleanup_old_versions(older_than=timedelta(0))`).

    python benches/maintenance_bench.py [--versions 500] [--fragments 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CHILD_PRELUDE, DATA, run_child  # noqa: E402

CLEANUP = CHILD_PRELUDE + """
import shutil
from datetime import timedelta
import {module} as lib
src, work, repeat = {src!r}, {work!r}, {repeat}
times, stats = [], None
for _ in range(repeat):
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(src, work)
    t0 = time.perf_counter()
    s = lib.dataset(work).cleanup_old_versions(older_than=timedelta(0))
    times.append(time.perf_counter() - t0)
    stats = dict(versions=s.old_versions, bytes=s.bytes_removed)
left = sum(len(fs) for _, _, fs in __import__("os").walk(work))
print(json.dumps(dict(seconds=min(times), files_left=left, **stats)))
"""


COMPACT = CHILD_PRELUDE + """
import shutil
import {module} as lib
src, work, repeat = {src!r}, {work!r}, {repeat}
times, m = [], None
for _ in range(repeat):
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(src, work)
    t0 = time.perf_counter()
    m = lib.dataset(work).optimize.compact_files()
    times.append(time.perf_counter() - t0)
frags = len(lib.dataset(work).get_fragments())
print(json.dumps(dict(seconds=min(times), removed=m.fragments_removed, added=m.fragments_added,
                      files_added=m.files_added, fragments_after=frags)))
"""


def fragmented_dataset(n: int) -> str:
    import lance
    import numpy as np
    import pyarrow as pa

    path = os.path.join(DATA, f"fragmented_{n}.lance")
    if os.path.exists(os.path.join(path, "_versions")):
        return path
    shutil.rmtree(path, ignore_errors=True)
    for i in range(n):
        ids = np.arange(i * 20_000, (i + 1) * 20_000)
        t = pa.table({"id": pa.array(ids), "value": pa.array(ids * 0.5),
                      "name": pa.array([f"user_{j % 100_003:06d}" for j in ids])})
        lance.write_dataset(t, path, mode="append" if i else "create")
    lance.dataset(path).delete("id % 10 = 7")
    return path


def versions_dataset(n: int) -> str:
    import lance
    import pyarrow as pa

    path = os.path.join(DATA, f"versions_{n}.lance")
    if os.path.exists(os.path.join(path, "_versions")):
        return path
    shutil.rmtree(path, ignore_errors=True)
    for v in range(n):
        t = pa.table({"id": pa.array(range(v * 1000, (v + 1) * 1000)), "x": pa.array([float(v)] * 1000)})
        if v == 0:
            lance.write_dataset(t, path)
        elif v % 10 == 5:
            lance.dataset(path).delete(f"id % 1000 = {v % 997}")
        else:
            lance.write_dataset(t, path, mode="append")
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--versions", type=int, default=500)
    ap.add_argument("--fragments", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    src = fragmented_dataset(args.fragments)
    results = {}
    for module in ("lance_core", "lance"):
        work = os.path.join(DATA, f"compact_work_{module}.lance")
        results[module] = run_child(COMPACT.format(module=module, src=src, work=work, repeat=args.repeat))
        shutil.rmtree(work, ignore_errors=True)
    ours, ref = results["lance_core"], results["lance"]
    print(f"compaction of {args.fragments} fragments x 20,000 rows, 10% deleted (best of {args.repeat})")
    for name, r in results.items():
        print(f"  {name:<11} {r['seconds'] * 1000:8.1f} ms  fragments {r['removed']} -> {r['added']} "
              f"({r['files_added']} files), {r['fragments_after']} fragments after")
    print(f"  speed {ref['seconds'] / ours['seconds']:.2f}x")
    src = versions_dataset(args.versions)
    results = {}
    for module in ("lance_core", "lance"):
        work = os.path.join(DATA, f"cleanup_work_{module}.lance")
        results[module] = run_child(CLEANUP.format(module=module, src=src, work=work, repeat=args.repeat))
        shutil.rmtree(work, ignore_errors=True)
    ours, ref = results["lance_core"], results["lance"]
    print(f"cleanup of {args.versions} versions (best of {args.repeat}); speed = pylance time / lance_core time")
    for name, r in results.items():
        print(f"  {name:<11} {r['seconds'] * 1000:8.1f} ms  versions removed {r['versions']}, "
              f"{r['bytes'] / 1e6:.1f} MB removed, {r['files_left']} files left")
    print(f"  speed {ref['seconds'] / ours['seconds']:.2f}x")


if __name__ == "__main__":
    main()
