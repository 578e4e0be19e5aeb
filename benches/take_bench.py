"""Random access benchmark: lance_core vs pylance on the scan benchmark's 4M-row dataset
(pylance 14 defaults, 1M rows per file, 6 columns), in one run, each library in its own
process, best of several warm repeats:

- take of 1,000 and of 100,000 random offsets, sorted and shuffled (all columns);
- take_rows of 10,000 stable row ids from a dataset of 200 fragments x 20,000 rows with 10%
  of rows deleted, after pylance compacted it (with the row-id index's build time);
- head(10);
- filtered scans at about 0.025%, 0.1%, 12.5% and 50% selectivity (all columns).

    python benches/take_bench.py [--rows 4000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CHILD_PRELUDE, DATA, reference_dataset, run_child  # noqa: E402

FILTERS = [
    ("id < 1000", "0.025%"),
    ("count < 10", "0.1%"),
    ("category IN ('category-01', 'category-02', 'category-03')", "12.5%"),
    ("value > 1000", "50%"),
]

MEASURE = CHILD_PRELUDE + """
import random
import {module} as lib
path, compacted, repeat = {path!r}, {compacted!r}, {repeat}
ds = lib.dataset(path)
n = ds.count_rows()
rng = random.Random(42)
out = {{}}
def best(f):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter(); r = f(); times.append(time.perf_counter() - t0)
    return min(times), r
for k in (1000, 100_000):
    idx = rng.sample(range(n), k)
    out[f"take {{k:,}} shuffled"], r = best(lambda: ds.take(idx))
    assert r.num_rows == k
    s = sorted(idx)
    out[f"take {{k:,}} sorted"], r = best(lambda: ds.take(s))
out["head(10)"], r = best(lambda: ds.head(10))
assert r.num_rows == 10
for flt, label in {filters!r}:
    out[f"filter {{label}}: {{flt}}"], r = best(lambda: ds.to_table(filter=flt))
# take_rows by stable row id after a compaction; the first call builds the row-id index
c = lib.dataset(compacted)
ids = c.to_table(columns=[], with_row_id=True).column("_rowid").to_pylist()
want = rng.sample(ids, 10_000)
base = reset_peak()
t0 = time.perf_counter(); r = c._take_rows(want); first = time.perf_counter() - t0
out["take_rows 10,000 (first call, builds the index)"] = first
out["take_rows 10,000"], r = best(lambda: c._take_rows(want))
assert r.num_rows == 10_000
out["peak MB during take_rows"] = peak_mb() - base
print(json.dumps(out))
"""


def compacted_dataset() -> str:
    """200 fragments x 20,000 rows with stable row ids, 10% deleted, compacted by pylance."""
    import lance
    import numpy as np
    import pyarrow as pa

    path = os.path.join(DATA, "take_rows_compacted.lance")
    if os.path.exists(os.path.join(path, "_versions")):
        return path
    for i in range(200):
        ids = np.arange(i * 20_000, (i + 1) * 20_000)
        t = pa.table({"id": pa.array(ids), "value": pa.array(ids * 0.5),
                      "name": pa.array([f"user_{j % 100_003:06d}" for j in ids])})
        lance.write_dataset(t, path, mode="append" if i else "create", enable_stable_row_ids=True)
    ds = lance.dataset(path)
    ds.delete("id % 10 = 7")
    ds.optimize.compact_files(target_rows_per_fragment=1_048_576)
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    path = reference_dataset(args.rows)
    compacted = compacted_dataset()
    results = {}
    for module in ("lance_core", "lance"):
        results[module] = run_child(MEASURE.format(module=module, path=path, compacted=compacted,
                                                   repeat=args.repeat, filters=FILTERS))
    ours, ref = results["lance_core"], results["lance"]
    print(f"{args.rows:,} rows; best of {args.repeat}; speed = pylance time / lance_core time")
    print(f"{'query':<78}{'lance_core':>11}{'pylance':>10}{'speed':>8}")
    for key in ref:
        if key.startswith("peak"):
            print(f"{key:<78}{ours[key]:>9.0f}MB{ref[key]:>8.0f}MB")
            continue
        print(f"{key:<78}{ours[key] * 1000:>9.1f}ms{ref[key] * 1000:>8.1f}ms{ref[key] / ours[key]:>7.2f}x")


if __name__ == "__main__":
    main()
