"""Speed under throttling: lance_core vs pylance on an S3-compatible server (moto, on this
machine) behind a proxy that delays every request by `--delay` ms (20 by default) and,
in the faulty runs, answers `--throttle` of them (5% by default) with `503 SlowDown`
without passing them on, as a busy S3 prefix does. Each library in its own processes, in
one run.

The table (written by pylance): the latency benchmark's 4-fragment table, 400,000 rows
(id int64, x float64, a 24-character string s) in 4 fragments of 100,000 rows. Measured,
each in a fresh process, `--repeat` times (the mean and the median; throttling is random,
so the best run says little): open + full scan, and open + append of 10,000 rows (to a
copy per library, which grows by one fragment per run).

    python benches/fault_bench.py [--delay 20] [--throttle 0.05] [--repeat 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))  # the moto server and proxy
from common import remote_table_rows, run_child  # noqa: E402

ROWS = 400_000

CHILD = """
import json, time
import pyarrow as pa
import {module} as lib
uri, opts, op, seed = {uri!r}, {opts!r}, {op!r}, {seed}
new = pa.table({{"id": pa.array(range(10_000), pa.int64()), "x": pa.array([0.5] * 10_000),
                "s": pa.array([f"new-{{i:020d}}" for i in range(10_000)])}})
t0 = time.perf_counter()
if op == "open + scan":
    lib.dataset(uri, storage_options=opts).to_table()
elif op == "open + append":
    lib.write_dataset(new, uri, mode="append", storage_options=opts)
print(json.dumps(dict(seconds=time.perf_counter() - t0)))
"""

OPS = ["open + scan", "open + append"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--delay", type=float, default=20.0, help="ms added to every request")
    ap.add_argument("--throttle", type=float, default=0.05, help="share of requests answered 503 SlowDown")
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    import lance
    from s3_proxy import THROTTLE, Faults, S3Server

    server = S3Server()
    table = remote_table_rows(ROWS)
    uris = {}
    for module in ("lance_core", "lance"):
        uri = uris[module] = f"s3://bucket/faults-{module}.lance"
        lance.write_dataset(table, uri, storage_options=server.options(), max_rows_per_file=ROWS // 4)
    print(f"{ROWS:,} rows in 4 fragments; every request delayed {args.delay:g} ms; "
          f"{args.throttle:.0%} of requests throttled in the faulty runs; {args.repeat} runs each, each in a "
          "fresh process; slowdown = time with throttling / time without", flush=True)
    print(f"{'operation':<15} {'library':<11} {'no faults (mean / median)':>27} "
          f"{'throttled (mean / median)':>27} {'slowdown (mean / median)':>26}  throttled requests")
    for op in OPS:
        for module in ("lance_core", "lance"):
            res = {}
            for rate in (0.0, args.throttle):
                times, injected = [], 0
                for seed in range(args.repeat):
                    faults = Faults(seed=seed, rates={THROTTLE: rate} if rate else {})
                    proxy = server.proxy(delay=args.delay / 1000, faults=faults)
                    code = CHILD.format(module=module, uri=uris[module], opts=proxy.options(), op=op, seed=seed)
                    times.append(run_child(code)["seconds"])
                    injected += len(faults.injected)
                    proxy.close()
                res[rate] = (statistics.mean(times), statistics.median(times), injected)
            (m0, md0, _), (m1, md1, n1) = res[0.0], res[args.throttle]
            name = "pylance" if module == "lance" else module
            print(f"{op:<15} {name:<11} {m0 * 1e3:>12.0f} / {md0 * 1e3:>6.0f} ms {m1 * 1e3:>12.0f} / "
                  f"{md1 * 1e3:>6.0f} ms {m1 / m0:>15.2f}x / {md1 / md0:.2f}x  {n1} in {args.repeat} runs",
                  flush=True)
    server.stop()


if __name__ == "__main__":
    main()
