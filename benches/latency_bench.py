"""Object-store latency benchmark: lance_core vs pylance on an S3-compatible server (moto,
on this machine) behind a proxy that delays every request by `--delay` ms (20 by
default), as a distant object store would, in one run, each library in its own process.

The table (written by pylance): 400,000 rows (id int64, x float64, a 24-character string
s) in 4 fragments of 100,000 rows, and the same rows in 40 fragments of 10,000. Measured,
best of `--repeat`, each in a fresh process (so no cache of either library carries file
metadata from one open to the next): open + full scan, open + filtered scan
(`id >= 390000`, the last 2.5%), open + take of 20 random rows (the same rows in both
libraries); with the requests each made.

    python benches/latency_bench.py [--delay 20] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))  # the moto server and proxy
from common import remote_table_rows, run_child  # noqa: E402

ROWS = 400_000

CHILD = """
import json, random, time
import {module} as lib
uri, opts, op, seed = {uri!r}, {opts!r}, {op!r}, {seed}
rows = sorted(random.Random(seed).sample(range({rows}), 20))
t0 = time.perf_counter()
ds = lib.dataset(uri, storage_options=opts)
if op == "open + scan":
    ds.to_table()
elif op == "open + filtered scan":
    ds.to_table(filter="id >= 390000")
elif op == "open + take 20":
    ds.take(rows)
print(json.dumps(dict(seconds=time.perf_counter() - t0)))
"""

OPS = ["open + scan", "open + filtered scan", "open + take 20"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--delay", type=float, default=20.0, help="ms added to every request")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    import lance
    from s3_proxy import S3Server

    server = S3Server()
    table = remote_table_rows(ROWS)
    uris = {}
    for frags in (4, 40):
        uri = uris[frags] = f"s3://bucket/latency-{frags}.lance"
        lance.write_dataset(table, uri, storage_options=server.options(), max_rows_per_file=ROWS // frags)
    proxy = server.proxy(delay=args.delay / 1000)
    print(f"{ROWS:,} rows; every request delayed {args.delay:g} ms; best of {args.repeat}; "
          "speed = pylance time / lance_core time", flush=True)
    print(f"{'table':<14} {'operation':<22} {'lance_core':>12} {'pylance':>10} {'speed':>7}  requests (lance_core / pylance)")
    for frags, uri in uris.items():
        for op in OPS:
            res = {}
            for module in ("lance_core", "lance"):
                times, requests = [], 0
                for seed in range(args.repeat):
                    proxy.take()
                    code = CHILD.format(module=module, uri=uri, opts=proxy.options(), op=op, seed=seed,
                                        rows=ROWS)
                    times.append(run_child(code)["seconds"])
                    requests += len(proxy.take())
                res[module] = (min(times), requests // args.repeat)
            (ours, our_n), (theirs, their_n) = res["lance_core"], res["lance"]
            print(f"{frags:>3} fragments  {op:<22} {ours * 1e3:>10.0f}ms {theirs * 1e3:>8.0f}ms "
                  f"{theirs / ours:>6.2f}x  {our_n} / {their_n}", flush=True)
    proxy.close()
    server.stop()


if __name__ == "__main__":
    main()
