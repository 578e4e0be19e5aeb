"""Write benchmark: lance_core vs pylance writing the same rows, in one run, each library
in its own process, on three inputs:

- `batches`: the scan benchmark's 4M rows (ints, doubles, repeated short strings,
  categories, 32-dim vectors) as 100K-row batches, loaded from its Parquet copy;
- `one chunk`: the same rows as a single 4M-row chunk per column;
- `unique names`: the same rows as one chunk, with the `name` column replaced by 4M
  unique random 14-character names (the hard case for dictionaries and FSST).

Also times writing each input's string columns alone (`name`, then `category`). Prints
seconds, throughput, the size of the data files and peak memory, and the ratios.

    python benches/write_bench.py [--rows 4000000] [--repeat 3] [--inputs batches,chunk,unique]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CHILD_PRELUDE, DATA, parquet_file, run_child  # noqa: E402

WRITE = CHILD_PRELUDE + """
import os
import numpy as np
import pyarrow.parquet as pq
import {module} as lib
src, dest, repeat, kind, columns = {src!r}, {dest!r}, {repeat}, {kind!r}, {columns!r}
table = pq.read_table(src)
if kind in ("chunk", "unique"):
    table = table.combine_chunks()
if kind == "unique":
    rng = np.random.default_rng(7)
    letters = rng.integers(97, 123, size=(table.num_rows, 14), dtype=np.uint8)
    names = pa.array(letters.view("S14").ravel()).cast(pa.string())
    table = table.set_column(table.schema.get_field_index("name"), "name", names)
if columns:
    table = table.select(columns)
gc.collect()
base = reset_peak()
times = timed_writes(lambda: lib.write_dataset(table, dest, max_rows_per_file=1_000_000), dest, repeat)
size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(os.path.join(dest, "data")) for f in fs)
print(json.dumps(dict(seconds=min(times), rows=table.num_rows, bytes=table.nbytes, size=size, peak_mb=peak_mb() - base)))
"""

INPUTS = {
    "batches": "4M rows in 100K-row batches",
    "chunk": "4M rows as one chunk",
    "unique": "4M rows as one chunk, 4M unique 14-char names",
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--inputs", default="batches,chunk,unique")
    ap.add_argument("--no-columns", action="store_true", help="skip the single-column writes")
    args = ap.parse_args()
    src = parquet_file(args.rows)
    print(f"writing {args.rows:,} rows (best of {args.repeat}); lance_core / pylance ratios are throughput "
          f"(above 1: lance_core faster) and file size (below 1: lance_core smaller)")
    print(f"{'input':<46}{'library':<12}{'seconds':>9}{'MB/s':>8}{'files MB':>10}{'peak MB':>9}{'speed':>8}{'size':>7}")
    cases = []
    for kind in args.inputs.split(","):
        cases.append((kind, INPUTS[kind], None))
        if not args.no_columns and kind != "chunk":
            cases.append((kind, f"  {kind}: name column only", ["name"]))
    if not args.no_columns:
        cases.append(("batches", "  batches: category column only", ["category"]))
    for kind, label, columns in cases:
        results = {}
        for module in ("lance_core", "lance"):
            dest = os.path.join(DATA, f"write_{module}.lance")
            r = run_child(WRITE.format(module=module, src=src, dest=dest, repeat=args.repeat, kind=kind,
                                       columns=columns))
            shutil.rmtree(dest, ignore_errors=True)
            results[module] = r
        ours, ref = results["lance_core"], results["lance"]
        for module, r in results.items():
            name = "pylance" if module == "lance" else module
            ratio = (f"{ref['seconds'] / ours['seconds']:>7.2f}x{ours['size'] / ref['size']:>6.3f}x"
                     if module == "lance_core" else "")
            print(f"{label:<46}{name:<12}{r['seconds']:>9.3f}{r['bytes'] / r['seconds'] / 1e6:>8.0f}"
                  f"{r['size'] / 1e6:>10.1f}{r['peak_mb']:>9.0f}{ratio}", flush=True)


if __name__ == "__main__":
    main()
