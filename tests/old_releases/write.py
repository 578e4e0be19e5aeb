"""Runs under an OLD pylance release (selected by PYTHONPATH) and writes datasets with it.

    python write.py ROOT NAME=ACTION [NAME=ACTION ...]

Each ACTION is applied, in order, to ROOT/NAME.lance. Creating actions start from an empty
directory; the others (append2, delete50, ...) modify what an earlier run left there, so a
dataset can be written by one release and then changed by another ("migrated" tables).
Any failure exits non-zero: the set of datasets is fixed, nothing is skipped silently.

Works with pylance 0.7 ... 4.x. Only what the tests need is here; see test_old_releases.py
for what each dataset covers.
"""
import datetime
import inspect
import os
import shutil
import sys

import lance
import pyarrow as pa

PARAMS = set(inspect.signature(lance.write_dataset).parameters)

# Format suffix of an action name -> write_dataset options. A release that does not accept
# the option must fail instead of silently writing its default format.
FORMATS = {
    "": {},
    "_v2": {"use_legacy_format": False},  # 0.13 .. 0.15: 0.3 (2.0) files
    "_dsvlegacy": {"data_storage_version": "legacy"},  # 0.16+
}


def write(table, path, fmt, **kw):
    missing = set(fmt) - PARAMS
    if missing:
        raise SystemExit(f"pylance {lance.__version__} has no write_dataset option {sorted(missing)}")
    kw = {k: v for k, v in kw.items() if k in PARAMS}
    return lance.write_dataset(table, path, **fmt, **kw)


def types_table(n, drop=()):
    """One column per type; nulls every 5th row (where the type allows them)."""
    rows = range(n)
    null = lambda i: i % 5 == 4  # noqa: E731
    day0 = datetime.date(2020, 1, 1)
    t0 = datetime.datetime(2021, 3, 4, 5, 6, 7)
    cols = {
        "i": pa.array(list(rows), pa.int64()),
        "i32": pa.array([None if null(i) else i * 3 - 50 for i in rows], pa.int32()),
        "u8": pa.array([i % 256 for i in rows], pa.uint8()),
        "f64": pa.array([None if null(i) else i / 4.0 for i in rows], pa.float64()),
        "f32": pa.array([i * 0.5 for i in rows], pa.float32()),
        "b": pa.array([None if null(i) else i % 3 == 0 for i in rows], pa.bool_()),
        "s": pa.array([None if null(i) else ("" if i % 7 == 0 else f"str{i}" * (i % 4 + 1)) for i in rows]),
        "ls": pa.array([None if null(i) else f"large{i}" for i in rows], pa.large_string()),
        "bin": pa.array([None if null(i) else bytes([i % 256]) * (i % 6) for i in rows], pa.binary()),
        "lbin": pa.array([None if null(i) else b"L" + bytes([i % 256]) * (i % 3) for i in rows], pa.large_binary()),
        "d": pa.array([None if null(i) else day0 + datetime.timedelta(days=i) for i in rows], pa.date32()),
        "ts": pa.array([None if null(i) else t0 + datetime.timedelta(seconds=61 * i) for i in rows], pa.timestamp("us")),
        "tstz": pa.array([t0 + datetime.timedelta(minutes=i) for i in rows], pa.timestamp("us", tz="UTC")),
        "li": pa.array([None if null(i) else list(range(i % 4)) for i in rows], pa.list_(pa.int64())),
        "lstr": pa.array([None if null(i) else [f"a{i}", None if i % 2 else "", f"c{i}"][: i % 4] for i in rows],
                         pa.list_(pa.string())),
        "st": pa.array([None if i % 10 == 9 else {"a": None if null(i) else i, "b": f"b{i}"} for i in rows],
                       pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "fsl": pa.array([[float(i), i + 0.5, -i, 1.0] for i in rows], pa.list_(pa.float32(), 4)),
        "dict": pa.array([None if null(i) else ["red", "green", "blue"][i % 3] for i in rows]).dictionary_encode(),
    }
    return pa.table({k: v for k, v in cols.items() if k not in drop})


# ------------------------------------------------------------------ creating actions
def basic(path, fmt):
    """x 0..99 in 3 files (40/40/20), 11 rows deleted, then 100..104 appended (a 4th file;
    0.13-0.15 write that one as a legacy file even with use_legacy_format=False)."""
    write(pa.table({"x": pa.array(range(100), pa.int64())}), path, fmt, max_rows_per_file=40)
    lance.dataset(path).delete("(x >= 10 and x < 20) or x = 95")
    write(pa.table({"x": pa.array(range(100, 105), pa.int64())}), path, fmt, mode="append")


def types(path, fmt):
    """Every type, 30 rows in 3 files (12/12/6), rows i % 7 == 3 deleted."""
    # 0.13-0.15 panic on a dictionary column in a 0.3 file ("not yet implemented").
    drop = ("dict",) if fmt == FORMATS["_v2"] else ()
    write(types_table(30, drop), path, fmt, max_rows_per_file=12)
    lance.dataset(path).delete("i % 7 = 3")


def strings(path, fmt):
    """250 rows in 2 files (200/50). The 200-row page of the low-cardinality columns is
    what makes 0.14+ 2.0 writers pick the Dictionary page encoding."""
    n = 250
    colors = ["red", "green", "blue", "", "yellow"]
    write(pa.table({
        "id": pa.array(range(n), pa.int64()),
        "cat": pa.array([None if i % 11 == 5 else colors[i % 5] for i in range(n)]),
        "cat_nn": pa.array([colors[i % 3] for i in range(n)]),
        "name": pa.array([None if i % 13 == 0 else f"name-{i}-" + "x" * (i % 17) for i in range(n)]),
        "blob": pa.array([None if i % 9 == 0 else bytes(range(i % 7)) for i in range(n)], pa.binary()),
    }), path, fmt, max_rows_per_file=200)
    lance.dataset(path).delete("id % 10 = 7")


def empty(path, fmt):
    """A schema and no fragment (0.13-0.15 v2: no data_format, writer flag 4 only)."""
    schema = pa.schema([("x", pa.int64()), ("s", pa.string())])
    write(pa.Table.from_pylist([], schema=schema), path, fmt)


def w075(path):
    """One 100-row file, 10 rows deleted: with 0.7.5 no physical_rows, no num_deleted_rows,
    no writer_version."""
    lance.write_dataset(pa.table({"x": pa.array(range(100), pa.int64())}), path)
    lance.dataset(path).delete("x >= 10 and x < 20")


def w075_multi(path):
    lance.write_dataset(pa.table({"x": pa.array(range(100), pa.int64()), "s": pa.array([f"s{i}" for i in range(100)])}),
                        path, max_rows_per_file=40)
    lance.dataset(path).delete("(x >= 10 and x < 20) or x = 95")


def overwrite_with_v2_fragments(path):
    """0.16: fragments of 0.3 files committed by Overwrite get the default storage version
    "0.1" in the manifest (the bug pylance 0.17+ repairs on the next commit)."""
    from lance.fragment import LanceFragment

    schema = pa.schema([("x", pa.int64())])
    lance.write_dataset(pa.Table.from_pylist([], schema=schema), path, data_storage_version="stable")
    frags = [LanceFragment.create(path, pa.table({"x": pa.array([i, i + 10], pa.int64())}), fragment_id=i,
                                  data_storage_version="stable") for i in range(3)]
    lance.LanceDataset.commit(path, lance.LanceOperation.Overwrite(schema, frags), read_version=1)


def wrong_version_no_fix(path):
    """As can_fix, then one legacy file appended: 0.1 and 0.3 files mixed under "0.1"."""
    from lance.fragment import LanceFragment

    overwrite_with_v2_fragments(path)
    frag = LanceFragment.create(path, pa.table({"x": pa.array([100], pa.int64())}), fragment_id=3,
                                data_storage_version="legacy")
    lance.LanceDataset.commit(path, lance.LanceOperation.Append([frag]), read_version=2)


# ------------------------------------------------------------------ modifying actions
def append2(path):
    lance.write_dataset(pa.table({"x": pa.array(range(2), pa.int64())}), path, mode="append")


def append2_multi(path):
    lance.write_dataset(pa.table({"x": pa.array(range(2), pa.int64()), "s": pa.array(["a", "b"])}), path,
                        mode="append")


def delete50(path):
    lance.dataset(path).delete("x = 50")


CREATE = {"basic": basic, "types": types, "strings": strings, "empty": empty}
OTHER_CREATE = {"w075": w075, "w075_multi": w075_multi, "wrong_version_can_fix": overwrite_with_v2_fragments,
                "wrong_version_no_fix": wrong_version_no_fix}
MODIFY = {"append2": append2, "append2_multi": append2_multi, "delete50": delete50}


def run(path, action):
    if action in MODIFY:
        MODIFY[action](path)
        return
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if action in OTHER_CREATE:
        OTHER_CREATE[action](path)
        return
    base, _, suffix = action.partition("_")
    if base not in CREATE or ("_" + suffix if suffix else "") not in FORMATS:
        raise SystemExit(f"unknown action {action!r}")
    CREATE[base](path, FORMATS["_" + suffix if suffix else ""])


def main():
    root = sys.argv[1]
    print(f"pylance {lance.__version__}, pyarrow {pa.__version__}", flush=True)
    for arg in sys.argv[2:]:
        name, action = arg.split("=")
        path = os.path.join(root, name + ".lance")
        run(path, action)
        ds = lance.dataset(path)  # what the writing release itself reads back, for the log
        print(f"{name} <- {action}: version {ds.version}, {ds.count_rows()} rows", flush=True)


if __name__ == "__main__":
    main()
