"""A randomized soak of concurrent writers on an object store that fails requests the way
real ones do: moto on 127.0.0.1 behind `s3_proxy.Faults` (throttling, server errors,
lost answers to writes, connection resets, truncated reads), three writer processes
running mixed operations on one table, each logging what it did and what it was told.

Afterwards the table is checked against the logs: every acknowledged append is there
exactly once (unless an acknowledged delete of its rows followed), no failed one is
there, an operation whose outcome was unknown is there at most once; acknowledged
updates hold their last value; every version is readable by lance_core and pylance.

    python tests/fault_soak.py --seconds 300 --seed 11     # the long mode
    pytest tests/test_fault_soak.py                        # CI: a fixed seed, at most 60 s
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

ROWS = 50  # rows per append: ids worker * 10**7 + seq * ROWS + [0, ROWS)
RATES = {"throttle": 0.05, "error": 0.02, "lost": 0.06, "reset": 0.01, "dropped": 0.01, "truncated": 0.03}
# The store client retries quickly here, so that a soak of a minute runs many operations.
CLIENT = {"client_backoff_initial_ms": "10", "client_backoff_max_ms": "200"}


def _rows(ids: List[int], v: int):
    import pyarrow as pa

    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([v] * len(ids), pa.int64()),
                     "s": pa.array([f"row-{i}" for i in ids])})


def worker(uri: str, opts: Dict[str, str], who: int, seconds: float, seed: int, log_path: str) -> None:
    """Run random operations on `uri` for `seconds`, appending one JSON line per
    operation to `log_path`: what it was and how it ended (ok, failed, unknown)."""
    import lance_core
    from lance_core.errors import LanceError, OutcomeUnknownError

    rng = random.Random(seed * 1000 + who)
    appended: List[int] = []  # this worker's append sequence numbers, not yet deleted
    seq = 0
    end = time.monotonic() + seconds
    with open(log_path, "a") as log:
        while time.monotonic() < end:
            seq += 1
            roll = rng.random()
            if roll < 0.55 or not appended:
                op = {"op": "append", "seq": seq}
            elif roll < 0.70:
                op = {"op": "delete", "of": appended.pop(rng.randrange(len(appended)))}
            elif roll < 0.85:
                op = {"op": "update", "of": rng.choice(appended), "v": seq}
            elif roll < 0.95:
                op = {"op": "upsert", "of": rng.choice(appended), "v": seq}
            else:
                op = {"op": "compact"}
            op["who"] = who
            try:
                run(lance_core, uri, opts, op)
                op["end"] = "ok"
            except OutcomeUnknownError as e:
                op["end"], op["error"] = "unknown", str(e)
            except LanceError as e:
                op["end"], op["error"] = "failed", f"{type(e).__name__}: {e}"
            if op["op"] == "append" and op["end"] != "failed":
                appended.append(seq)
            log.write(json.dumps(op) + "\n")
            log.flush()


def _range(who: int, seq: int) -> List[int]:
    start = who * 10**7 + seq * ROWS
    return list(range(start, start + ROWS))


def run(lance_core, uri: str, opts: Dict[str, str], op: dict) -> None:
    kind = op["op"]
    if kind == "append":
        lance_core.write_dataset(_rows(_range(op["who"], op["seq"]), 0), uri, mode="append", storage_options=opts)
        return
    ds = lance_core.dataset(uri, storage_options=opts)
    if kind in ("delete", "update", "upsert"):
        ids = _range(op["who"], op["of"])
        where = f"id >= {ids[0]} and id <= {ids[-1]}"
        if kind == "delete":
            ds.delete(where)
        elif kind == "update":
            ds.update({"v": str(op["v"])}, where=where)
        else:
            ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all() \
                .execute(_rows(ids, op["v"]))
    elif kind == "compact":
        ds.optimize.compact_files(target_rows_per_fragment=10 * ROWS)


def read_log(path: str) -> List[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def check(uri: str, opts: Dict[str, str], logs: List[dict]) -> Dict[str, int]:
    """Check the table against the operations' logs (see the module comment); returns
    counts of what was checked. Raises AssertionError naming what does not hold."""
    import lance
    import lance_core

    table = lance_core.dataset(uri, storage_options=opts).to_table()
    ids = Counter(table["id"].to_pylist())
    doubled = {i: n for i, n in ids.items() if n > 1}
    assert not doubled, f"{len(doubled)} rows present more than once, e.g. {sorted(doubled)[:5]}"
    values = dict(zip(table["id"].to_pylist(), table["v"].to_pylist()))

    by_range: Dict[tuple, List[dict]] = {}
    for op in logs:
        key = (op["who"], op.get("seq") if op["op"] == "append" else op.get("of"))
        if op["op"] != "compact":
            by_range.setdefault(key, []).append(op)
    checked = Counter()
    for (who, seq), ops in by_range.items():
        # A worker touches a range only after appending it (unless that failed) and never
        # after deleting it (whatever the delete's end), one operation at a time.
        append = next(o for o in ops if o["op"] == "append")
        delete = next((o for o in ops if o["op"] == "delete"), None)
        changes = [o for o in ops if o["op"] in ("update", "upsert") and o["end"] != "failed"]
        rows = _range(who, seq)
        present = [i in ids for i in rows]
        assert all(present) or not any(present), f"rows of append {who}/{seq} partly present"
        here = all(present)
        checked[f"append {append['end']}"] += 1
        # Where the rows must be, may be, or must not be.
        if delete is not None and delete["end"] == "ok":
            assert not here, f"rows of {who}/{seq} present after an acknowledged delete"
        elif append["end"] == "failed":
            assert not here, f"failed append {who}/{seq} was applied"
        elif append["end"] == "ok" and (delete is None or delete["end"] == "failed"):
            assert here, f"acknowledged append {who}/{seq} is missing"
        if here:
            # Their value: the last acknowledged change's, or that of a later change whose
            # outcome is unknown.
            last_ok = max((i for i, o in enumerate(changes) if o["end"] == "ok"), default=-1)
            allowed = {changes[last_ok]["v"] if last_ok >= 0 else 0}
            allowed |= {o["v"] for o in changes[last_ok + 1:]}
            got = {values[i] for i in rows}
            assert len(got) == 1 and got <= allowed, f"rows of {who}/{seq} hold v={got}, expected one of {allowed}"
            checked["values checked"] += 1

    # Every version is readable by both libraries, every file it names present.
    ours = lance_core.dataset(uri, storage_options=opts)
    ref = lance.dataset(uri, storage_options=opts)
    versions = [v["version"] for v in ours.versions()]
    assert versions == [v["version"] for v in ref.versions()]
    for v in versions:
        a = ours.checkout_version(v).to_table().sort_by("id")
        b = ref.checkout_version(v).to_table().sort_by("id")
        assert a.equals(b), f"version {v} reads differently in the two libraries"
    checked["versions"] = len(versions)
    return dict(checked)


def soak(seconds: float, seed: int, writers: int = 3) -> Dict[str, object]:
    """Run the soak (see the module comment); returns what was done and checked."""
    import lance_core

    from s3_proxy import Faults, S3Server

    server = S3Server()
    faults = Faults(seed=seed, rates=RATES)
    proxy = server.proxy(faults=faults)
    try:
        uri = f"s3://bucket/soak-{seed}.lance"
        lance_core.write_dataset(_rows(list(range(ROWS)), 0), uri, storage_options=server.options())
        opts = {**proxy.options(), **CLIENT}
        with tempfile.TemporaryDirectory() as tmp:
            logs = [os.path.join(tmp, f"writer-{w}.jsonl") for w in range(writers)]
            procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(w + 1), "--uri", uri,
                                       "--options", json.dumps(opts), "--seconds", str(seconds),
                                       "--seed", str(seed), "--log", logs[w]])
                     for w in range(writers)]
            try:
                for p in procs:
                    assert p.wait(timeout=seconds + 120) == 0, f"a writer exited with {p.returncode}"
            finally:
                for p in procs:
                    if p.poll() is None:
                        p.kill()
            entries = [op for path in logs for op in read_log(path)]
        # The initial rows belong to no worker: they stay as written.
        entries.append({"op": "append", "who": 0, "seq": 0, "end": "ok"})
        checked = check(uri, server.options(), entries)
        ends = Counter((op["op"], op["end"]) for op in entries)
        errors = Counter(op["error"].split(":")[0] for op in entries if "error" in op)
        return {"operations": len(entries) - 1, "ends": {f"{k[0]} {k[1]}": n for k, n in sorted(ends.items())},
                "errors": dict(errors), "first errors": [op["error"][:300] for op in entries if "error" in op][:5],
                "checked": checked, "faults": Counter(k for k, _, _ in faults.injected)}
    finally:
        proxy.close()
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--writers", type=int, default=3)
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--uri", help=argparse.SUPPRESS)
    parser.add_argument("--options", help=argparse.SUPPRESS)
    parser.add_argument("--log", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.uri, json.loads(args.options), args.worker, args.seconds, args.seed, args.log)
        return
    print(json.dumps(soak(args.seconds, args.seed, args.writers), indent=2, default=dict))


if __name__ == "__main__":
    main()
