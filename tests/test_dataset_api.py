"""More of pylance's dataset API (issue 27 point 6), each against pylance 14 on the same
data: `merge` (columns joined on a key), `stats.dataset_stats`, `asof`, ordered tags,
the inputs `write_dataset` takes (iterables with a schema, dicts, lists of dicts, pyarrow
datasets, a dataset as the target) and `enable_v2_manifest_paths`."""

from __future__ import annotations

import os
import uuid
import time
from datetime import datetime

import lance
import pyarrow as pa
import pyarrow.dataset as pa_ds
import pytest

import lance_core

_LIBS = {"ours": lance_core, "pylance": lance}


def test_merge_as_pylance(tmp_path):
    out = {}
    for name, lib in _LIBS.items():
        uri = str(tmp_path / name)
        ds = lib.write_dataset(pa.table({"a": range(100)}), uri, max_rows_per_file=30)
        ds.delete("a = 7")
        ds.merge(pa.table({"a": range(40), "b": range(40)}), "a")
        ds.merge(pa.table({"a2": [3, 1, 99], "d": ["x", "y", "z"]}), left_on="a", right_on="a2")
        other = lib.write_dataset(pa.table({"a": range(0, 100, 2), "c": range(50)}), str(tmp_path / f"{name}_c"))
        ds.merge(other.to_batches(), "a", schema=other.schema)
        assert ds.version == 5
        out[name] = uri
    for reader in _LIBS.values():
        assert reader.dataset(out["ours"]).to_table() == lance.dataset(out["pylance"]).to_table()
    ds = lance_core.dataset(out["ours"])
    with pytest.raises(lance_core.InvalidInputError, match="more than once"):
        ds.merge(pa.table({"a": [1, 1], "e": [1, 2]}), "a")
    with pytest.raises(lance_core.InvalidInputError, match="exist already"):
        ds.merge(pa.table({"a": [1], "b": [1]}), "a")


def test_dataset_stats_asof_and_ordered_tags(tmp_path):
    uris = {}
    stamps = []
    for name, lib in _LIBS.items():
        uri = uris[name] = str(tmp_path / name)
        lib.write_dataset(pa.table({"a": range(10)}), uri)
        time.sleep(0.05)
        stamps.append(datetime.now())
        time.sleep(0.05)
        ds = lib.write_dataset(pa.table({"a": range(2000)}), uri, mode="append")
        ds.delete("a < 3")
        ds.tags.create("second", 2)
        ds.tags.create("first", 1)
    for (name, lib), when in zip(_LIBS.items(), stamps):
        ds = lib.dataset(uris[name])
        assert lance_core.dataset(uris[name]).stats.dataset_stats() == ds.stats.dataset_stats()
        assert lance_core.dataset(uris[name]).stats.dataset_stats(5) == ds.stats.dataset_stats(5)
        assert lance_core.dataset(uris[name], asof=when).version == lance.dataset(uris[name], asof=when).version == 1
        for order in ("asc", "desc"):
            assert [t for t, _ in lance_core.dataset(uris[name]).tags.list_ordered(order)] == \
                [t for t, _ in ds.tags.list_ordered(order)]


def test_write_inputs_as_pylance(tmp_path):
    schema = pa.schema([("a", pa.int64()), ("b", pa.string())])

    def batches():
        yield pa.record_batch([pa.array([1, 2]), pa.array(["x", "y"])], schema=schema)
        yield pa.table({"a": [3], "b": ["z"]}).to_batches()[0]

    inputs = {
        "generator": (lambda: batches(), schema),
        "dict": (lambda: {"a": [1, 2, 3], "b": ["x", "y", "z"]}, None),
        "pylist": (lambda: [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}], None),
        "pyarrow dataset": (lambda: pa_ds.dataset(pa.table({"a": [5], "b": ["q"]})), None),
    }
    for what, (make, sch) in inputs.items():
        ours = lance_core.write_dataset(make(), str(tmp_path / f"o_{what}"), schema=sch)
        theirs = lance.write_dataset(make(), str(tmp_path / f"p_{what}"), schema=sch)
        assert ours.to_table() == theirs.to_table(), what
    with pytest.raises(lance_core.InvalidInputError, match="needs its schema"):
        lance_core.write_dataset(batches(), str(tmp_path / "no_schema"))
    target = lance_core.dataset(str(tmp_path / "o_dict"))
    assert lance_core.write_dataset({"a": [4], "b": ["w"]}, target, mode="append").count_rows() == 4
    with pytest.raises(lance_core.InvalidInputError, match="V2"):
        lance_core.write_dataset({"a": [4]}, str(tmp_path / "v1"), enable_v2_manifest_paths=False)


def _lock_recorder(calls):
    import contextlib

    @contextlib.contextmanager
    def lock(version):
        calls.append(("enter", version))
        yield
        calls.append(("exit", version))
    return lock


def test_scan_defaults_commit_locks_drop_and_batches_as_pylance(tmp_path):
    """default_scan_options, commit_lock (write_dataset, dataset writes, commit),
    delete's count, commit(enable_stable_row_ids=), commit_batch and drop, each as
    pylance 14 answers on the same calls."""
    out = {}
    for name, lib in _LIBS.items():
        uri, other = str(tmp_path / name), str(tmp_path / f"{name}_c")
        lib.write_dataset(pa.table({"a": range(100), "b": range(100)}), uri)
        with_ids = lib.dataset(uri, default_scan_options={"with_row_id": True})
        calls = []
        lock = _lock_recorder(calls)
        lib.write_dataset(pa.table({"a": [1], "b": [2]}), uri, mode="append", commit_lock=lock)
        deleted = lib.dataset(uri, commit_lock=lock).delete("a < 10")
        frags = lib.fragment.write_fragments(pa.table({"a": range(10)}), other) if lib is lance \
            else lib.write_fragments(pa.table({"a": range(10)}), other)
        stable = lib.LanceDataset.commit(other, lib.LanceOperation.Overwrite(pa.schema([("a", pa.int64())]), frags),
                                         enable_stable_row_ids=True)
        more = [lib.Transaction(1, lib.LanceOperation.Append(
            lib.fragment.write_fragments(pa.table({"a": [i]}), other) if lib is lance
            else lib.write_fragments(pa.table({"a": [i]}), other))) for i in (100, 101)]
        batch = lib.LanceDataset.commit_batch(other, more)
        rows = batch["dataset"].to_table(with_row_id=True).to_pydict()
        lib.LanceDataset.drop(other)
        gone = not (tmp_path / f"{name}_c").exists()
        lib.LanceDataset.drop(other, ignore_not_found=True)
        with pytest.raises(OSError):
            lib.LanceDataset.drop(other)
        out[name] = (with_ids.schema.names, with_ids.to_table(limit=2).to_pydict(), calls, deleted,
                     stable.has_stable_row_ids, batch["dataset"].version, type(batch["merged"].operation).__name__,
                     rows, gone)
    assert out["ours"] == out["pylance"]
    assert out["ours"][2] == [("enter", 2), ("exit", 2), ("enter", 3), ("exit", 3)]
    assert out["ours"][3] == {"num_deleted_rows": 11}


def test_commit_lock_errors_propagate(tmp_path):
    import contextlib

    @contextlib.contextmanager
    def failing(_version):
        try:
            yield
        finally:
            raise RuntimeError("hello world!")

    with pytest.raises(RuntimeError, match="hello world!"):
        lance_core.write_dataset(pa.table({"a": range(10)}), str(tmp_path / "t"), commit_lock=failing)

    # A lock that refuses the version (raising CommitConflictError, as pylance's locks
    # do) fails the write with a conflict naming the version; nothing is committed.
    def refusing(_version):
        raise lance_core.CommitConflictError()

    uri = str(tmp_path / "u")
    with pytest.raises(lance_core.CommitConflictError, match=r"commit lock refused version 1: CommitConflictError\(\)"):
        lance_core.write_dataset(pa.table({"a": range(10)}), uri, commit_lock=refusing)
    lance_core.write_dataset(pa.table({"a": range(10)}), uri)
    with pytest.raises(lance_core.CommitConflictError, match="refused version 2"):
        lance_core.dataset(uri, commit_lock=refusing).delete("a < 3")
    assert lance_core.dataset(uri).count_rows() == 10


def test_default_batch_size_from_the_environment(tmp_path, monkeypatch):
    lance_core.write_dataset(pa.table({"a": range(100)}), str(tmp_path / "t"))
    monkeypatch.setenv("LANCE_DEFAULT_BATCH_SIZE", "12")
    assert sorted({b.num_rows for b in lance_core.dataset(str(tmp_path / "t")).to_batches()}) == [4, 12]


def test_sql_as_pylance(tmp_path):
    """ds.sql: SELECT columns and expressions with WHERE, ORDER BY, LIMIT and OFFSET, as
    pylance answers them (the table is `dataset` unless `table_name` says otherwise);
    aggregates are refused with an error saying so."""
    queries = [("SELECT * FROM test WHERE id > 1", "test"), ("SELECT value FROM test WHERE id = 1", "test"),
               ("SELECT id as user_id, UPPER(value) as val FROM dataset WHERE id BETWEEN 1 AND 3", None),
               ("SELECT dataset.id, value FROM dataset ORDER BY id DESC LIMIT 2 OFFSET 1", None),
               ("SELECT * FROM dataset WHERE value LIKE 'b%' OR id = 3", None)]
    out = {}
    for name, lib in _LIBS.items():
        ds = lib.write_dataset(pa.table({"id": [1, 2, 3], "value": ["a", "b", "c"]}), str(tmp_path / name))
        results = []
        for sql, table in queries:
            builder = ds.sql(sql)
            if table:
                builder = builder.table_name(table)
            results.append(pa.Table.from_batches(builder.build().to_batch_records()).to_pydict())
        reader = ds.sql("SELECT * FROM dataset").with_row_id(True).build().to_stream_reader()
        results.append(reader.read_all().to_pydict())
        with pytest.raises(ValueError, match="t' not found"):
            ds.sql("SELECT * FROM t").build().to_batch_records()
        out[name] = results
    assert out["ours"] == out["pylance"]
    with pytest.raises(ValueError, match="aggregate count"):
        lance_core.dataset(str(tmp_path / "ours")).sql("SELECT count(*) FROM dataset").build()


def test_has_index_and_negative_offsets_as_pylance(tmp_path):
    for lib in (lance_core, lance):
        ds = lib.write_dataset(pa.table({"id": range(20)}), tmp_path / lib.__name__)
        assert ds.has_index is False
        with pytest.raises(ValueError, match="Offset must be non-negative"):
            ds.to_table(offset=-1, limit=10)
        with pytest.raises(ValueError, match="Limit must be non-negative"):
            ds.to_table(offset=1, limit=-1)
        ds.create_scalar_index("id", "BTREE")
        assert ds.has_index is True


def test_data_stats_as_pylance_shapes_them(tmp_path):
    """Every field, depth-first, with the bytes of its columns; a struct stored through
    its children holds none itself, its leaves do; a column added later counts too."""
    t = pa.table({"a": [1, 2, 3], "s": ["x", "y", None], "st": [{"p": 1, "q": "z"}] * 3})
    shapes = {}
    for lib in (lance_core, lance):
        ds = lib.write_dataset(t, tmp_path / lib.__name__)
        ds.add_columns({"z": "s"})
        stats = ds.stats.data_stats().fields
        shapes[lib.__name__] = [f.id for f in stats]
        if lib is lance_core:
            sizes = {f.id: f.bytes_on_disk for f in stats}
            assert sizes[2] == 0 and all(sizes[i] > 0 for i in (0, 1, 3, 4, 5))
            before = sizes[0]
            ds.insert(pa.table({"a": [5], "s": ["w"], "st": [{"p": 2, "q": "y"}], "z": ["q"]}))
            assert ds.stats.data_stats().fields[0].bytes_on_disk > before
    assert shapes["lance_core"] == shapes["lance"] == [0, 1, 2, 3, 4, 5]


@pytest.mark.parametrize("lib", ["ours", "pylance"])
def test_duckdb_and_polars_query_the_dataset_as_a_pyarrow_dataset(tmp_path, lib):
    """As with pylance's: a `pyarrow.dataset.Dataset` that duckdb and polars query
    directly, their column selections and filters pushed into `scanner()`."""
    import duckdb
    import polars as pl

    m = _LIBS[lib]
    n = 2000
    table = pa.table({"id": range(n), "meta": [f"m{i % 7}" for i in range(n)],
                      "price": [i * 0.5 for i in range(n)], "blob": pa.array([b"xy"] * n, pa.large_binary())})
    ds = m.write_dataset(table, str(tmp_path / "t"), max_rows_per_file=500)
    ds.delete("id % 100 = 0")
    assert isinstance(ds, pa_ds.Dataset)
    got = duckdb.query("SELECT id, price FROM ds WHERE meta = 'm3' AND price > 900 ORDER BY id").fetchall()
    assert got == [(i, i * 0.5) for i in range(n) if i % 7 == 3 and i * 0.5 > 900 and i % 100]
    assert duckdb.query("SELECT count(*), sum(id) FROM ds").fetchall() == \
        [(n - 20, sum(i for i in range(n) if i % 100))]
    frame = pl.scan_pyarrow_dataset(ds).filter(pl.col("id") >= 1990).select("id", "meta").collect()
    assert frame["id"].to_list() == list(range(1990, 2000))


def test_pyarrow_dataset_methods_answered_without_a_cpp_dataset(tmp_path):
    """Each method pyarrow's Dataset defines works on ours or raises a Python error (never
    reaches the C++ dataset ours does not have)."""
    ds = lance_core.write_dataset(pa.table({"id": [3, 1, 2], "s": ["c", "a", "b"]}), str(tmp_path / "t"))
    view = ds.filter(pa_ds.field("id") > 1).filter("s != 'c'")
    assert view.to_table().to_pydict() == {"id": [2], "s": ["b"]} and view.count_rows() == 1
    assert ds.sort_by("id").to_table().column("s").to_pylist() == ["a", "b", "c"]
    other = pa_ds.dataset(pa.table({"id": [1, 2], "x": [10, 20]}))
    joined = ds.join(other, "id").to_table().sort_by("id")
    assert joined.to_pydict() == {"id": [1, 2, 3], "s": ["a", "b", "c"], "x": [10, 20, None]}
    for call in (lambda: ds.partition_expression, lambda: ds.replace_schema(ds.schema),
                 lambda: ds._get_fragments(None), lambda: ds._scanner_options(None)):
        with pytest.raises(NotImplementedError):
            call()
    assert lance_core.dataset(str(tmp_path / "t")).count_rows() == 3


@pytest.mark.parametrize("lib", ["ours", "pylance"])
def test_analyze_plan_counts_rows_read_and_returned(tmp_path, lib):
    """`analyze_plan` runs the scan: rows returned, rows read before the filter (all of
    the scanned fragments', or only those a BTREE index found) and the I/O, as pylance."""
    import re

    m = _LIBS[lib]
    ds = m.write_dataset(pa.table({"a": range(100), "b": range(100)}), str(tmp_path / "t"))

    def metric(plan, name):
        found = re.search(rf"^\s*LanceRead:.*\b{name}=(\d+)", plan, re.MULTILINE)
        assert found, plan
        return int(found.group(1))

    plan = ds.scanner(columns=[], filter="a < 50", with_row_id=True).analyze_plan()
    assert (metric(plan, "output_rows"), metric(plan, "rows_scanned")) == (50, 100)
    plan = ds.scanner().analyze_plan()
    assert metric(plan, "output_rows") == 100 and metric(plan, "bytes_read") > 0 and metric(plan, "iops") > 0
    ds.create_scalar_index("a", "BTREE")
    plan = m.dataset(str(tmp_path / "t")).scanner(filter="a = 10").analyze_plan()
    assert (metric(plan, "output_rows"), metric(plan, "rows_scanned")) == (1, 1)
    assert "ScalarIndexQuery" in plan


@pytest.mark.parametrize("lib", ["ours", "pylance"])
def test_batches_are_refilled_to_batch_size(tmp_path, lib):
    """With strict_batch_size, rows come in batches of exactly batch_size (the last
    excepted), across fragment ends and after filters, as pylance returns them."""
    m = _LIBS[lib]
    n = 96
    ds = m.write_dataset(pa.table({"a": [f"r{i}" for i in range(n)], "b": range(n)}), str(tmp_path / "t"),
                         max_rows_per_file=32)
    ds.delete("b % 10 = 3")
    strict = list(ds.to_batches(batch_size=5, strict_batch_size=True))
    assert [b.num_rows for b in strict] == [5] * 17 + [1]
    assert pa.Table.from_batches(strict).column("b").to_pylist() == [i for i in range(n) if i % 10 != 3]
    for late in (True, False):
        got = list(ds.to_batches(columns=["a"], filter="b % 3 = 0", batch_size=8, late_materialization=late,
                                 strict_batch_size=True))
        expected = [f"r{i}" for i in range(0, n, 3) if i % 10 != 3]
        assert pa.Table.from_batches(got).column("a").to_pylist() == expected
        if lib == "ours":  # pylance's filtered batches follow its reads, strict or not
            assert [b.num_rows for b in got] == [8] * 3 + [4], late


def _history(lib, uri):
    """A table with three fragments, a deletion, a BTREE index, an overwrite and a stray
    file no version references."""
    ds = lib.write_dataset(pa.table({"a": range(10), "b": [str(i) for i in range(10)]}), uri, max_rows_per_file=4)
    ds.create_scalar_index("a", "BTREE")
    ds = lib.dataset(uri)
    ds.delete("a = 5")
    lib.write_dataset(pa.table({"a": range(3), "b": ["x"] * 3}), uri, mode="append")
    with open(f"{uri}/data/stray.lance", "wb") as f:
        f.write(b"x")
    return lib.dataset(uri)


def test_version_refs_get_version_slice_and_file_listings_as_pylance(tmp_path):
    ours, ref = (_history(lib, str(tmp_path / name)) for name, lib in _LIBS.items())
    assert ours.version_refs() == ref.version_refs() == [{"version": v} for v in (1, 2, 3, 4)]
    mine, theirs = ours.get_version(), ref.get_version()
    assert mine["version"] == theirs["version"] == 4
    assert mine["metadata"].keys() == theirs["metadata"].keys()
    assert {k: v for k, v in mine["metadata"].items() if k != "total_files_size"} == \
        {k: v for k, v in theirs["metadata"].items() if k != "total_files_size"}
    assert mine == ours.versions()[-1]
    for start, end in [(0, 0), (2, 7), (8, 40), (0, 12)]:
        assert ours.slice(start, end) == ref.slice(start, end)
    assert ours.slice(1, 3, columns=["b"]).to_pydict() == {"b": ["1", "2"]}
    with pytest.raises(ValueError, match="must be >= start"):
        ours.slice(5, 2)

    def tracked(ds, **kw):
        t = ds.tracked_files(**kw).read_all()
        # File names differ between the two tables; their kinds and directories per
        # version do not.
        return t.schema, sorted(zip(t["version"].to_pylist(), t["type"].to_pylist(),
                                    [p.split("/")[0] for p in t["path"].to_pylist()]))
    assert tracked(ours) == tracked(ref)
    assert tracked(ours, min_version=3) == tracked(ref, min_version=3)
    seen = []
    rows = ours.tracked_files(progress=lambda n, total: seen.append((n, total))).read_all()
    assert seen == [(n, 4) for n in range(1, 5)]
    # The rows stream, a batch per version, each told to `progress` as it comes; a
    # callback that raises ends the walk with its exception.
    seen.clear()
    reader = ours.tracked_files(progress=lambda n, total: seen.append((n, total)))
    assert reader.read_next_batch()["version"].unique().to_pylist() == [1] and seen == [(1, 4)]

    def stop(n, total):
        raise KeyError("enough")
    with pytest.raises(KeyError, match="enough"):
        ours.tracked_files(progress=stop).read_all()
    # Every path a version lists is a file of the table, and every file of the table but
    # the stray one is listed.
    present = {p: size for p, size in zip(*(ours.all_files().read_all()[c].to_pylist() for c in ("path", "size_bytes")))}
    assert set(rows["path"].to_pylist()) == set(present) - {"data/stray.lance", "_versions/latest_version_hint.json"}
    assert all(os.path.getsize(f"{ours.uri}/{p}") == size for p, size in present.items())
    mine, theirs = ours.all_files().read_all(), ref.all_files().read_all()
    assert mine.schema == theirs.schema
    assert sorted(p.split("/")[0] for p in mine["path"].to_pylist()) == \
        sorted(p.split("/")[0] for p in theirs["path"].to_pylist())
    assert set(mine["base_uri"].to_pylist()) == {ours.uri}


def test_explain_cleanup_and_chosen_versions_as_pylance(tmp_path):
    from datetime import timedelta
    tables = {name: _history(lib, str(tmp_path / name)) for name, lib in _LIBS.items()}
    explained = {}
    for name, ds in tables.items():
        for kw in [{}, {"delete_unverified": True}, {"versions": [2]}, {"retain_versions": 2}]:
            e = ds.explain_cleanup_old_versions(older_than=timedelta(0), include_files=True, **kw)
            kinds = sorted((c.kind, c.path.split("/")[-2]) for c in e.candidate_files)
            stats = e.stats
            explained[name, str(kw)] = (e.read_version, kinds, stats.old_versions, stats.data_files_removed,
                                        stats.deletion_files_removed, stats.index_files_removed,
                                        stats.transaction_files_removed)
        e = ds.explain_cleanup_old_versions(older_than=timedelta(0), include_files=True, max_files=2)
        assert (e.candidate_files_truncated, len(e.candidate_files), e.candidate_file_limit) == (True, 2, 2)
        ds.create_branch("b1", 1)
        e = ds.explain_cleanup_old_versions(older_than=timedelta(0))
        assert e.candidate_files == []
        assert [(b.name, b.referenced_version, b.cleanup_candidate) for b in e.referenced_branches] == [("b1", 1, False)]
    for key, value in explained.items():
        if key[0] == "ours":
            assert value == explained["pylance", key[1]], key
    # Explaining removed nothing; cleaning only version 2 removes only it, and both
    # libraries read every version left.
    ds = tables["ours"]
    assert [v["version"] for v in ds.versions()] == [1, 2, 3, 4]
    stats = ds.cleanup_old_versions(older_than=timedelta(0), versions=[2])
    assert stats.old_versions == 1
    assert [v["version"] for v in ds.versions()] == [1, 3, 4]
    for v in (1, 3, 4):
        assert lance.dataset(ds.uri, version=v).to_table() == ds.checkout_version(v).to_table()


def test_scanner_is_a_pyarrow_scanner(tmp_path):
    ds = _history(lance_core, str(tmp_path / "t"))
    ref = lance.dataset(ds.uri)
    s = ds.scanner(filter="a > 2")
    assert isinstance(s, pa_ds.Scanner)
    expected = ref.to_table(filter="a > 2")
    assert s.head(2) == expected.slice(0, 2)
    assert ds.scanner(filter="a > 2", limit=1).head(5) == expected.slice(0, 1)
    assert s.take([3, 0, 3]).to_pydict() == expected.take([3, 0, 3]).to_pydict()
    assert ds.scanner(columns={"x": "a * 2"}, offset=2, with_row_id=True).take([1]).to_pydict() == \
        ref.scanner(columns={"x": "a * 2"}, with_row_id=True).to_table().slice(3, 1).to_pydict()
    with pytest.raises(IndexError):
        s.take([len(expected)])
    assert s.scan_batches() and pa.Table.from_batches(s.scan_batches()) == s.to_table()
    assert lance_core.LanceScanner.from_dataset(ds, columns=["b"]).to_table() == ds.to_table(columns=["b"])
    frag = ds.get_fragments()[1]
    assert lance_core.LanceScanner.from_fragment(frag).to_table() == frag.to_table()
    assert lance_core.LanceScanner.from_batches(expected.to_batches(), schema=expected.schema).to_table() == expected


def test_fragment_delete_rows_validate_and_merge(tmp_path):
    ds = _history(lance_core, str(tmp_path / "t"))
    frags = ds.get_fragments()
    assert isinstance(frags[0], pa_ds.Fragment)
    assert frags[0].physical_schema == ds.schema and frags[0].partition_expression.equals(pa_ds.scalar(True))
    for f in frags:
        f.validate()
    # Fragment 1 has row 5 (offset 1) deleted already; offsets 0 and 1 go, 1 again is fine.
    changed = frags[1].delete_rows([0, 1])
    assert changed.deletion_file.num_deleted_rows == 2
    assert frags[2].delete_rows(range(2)) is None
    with pytest.raises(lance_core.InvalidInputError, match="past its end"):
        frags[0].delete_rows([4])
    op = lance_core.LanceOperation.Delete([changed], [frags[2].fragment_id], "picked")
    ds = lance_core.LanceDataset.commit(ds.uri, op, read_version=ds.version)
    assert ds.to_table()["a"].to_pylist() == [0, 1, 2, 3, 6, 7, 0, 1, 2]
    assert lance.dataset(ds.uri).to_table() == ds.to_table()

    merged = [f.merge(pa.table({"a": [0, 2, 7], "c": [10, 12, 17]}), "a") for f in ds.get_fragments()]
    ds = lance_core.LanceDataset.commit(ds.uri, lance_core.LanceOperation.Merge([m for m, _ in merged], merged[0][1]),
                                        read_version=ds.version)
    expected = {"a": [0, 1, 2, 3, 6, 7, 0, 1, 2], "c": [10, None, 12, None, None, 17, 10, None, 12]}
    assert ds.to_table(columns=["a", "c"]).to_pydict() == expected
    assert lance.dataset(ds.uri).to_table(columns=["a", "c"]).to_pydict() == expected
    # A missing data file is named by the fragment's validate.
    victim = ds.get_fragments()[0].data_files()[0].path
    os.remove(f"{ds.uri}/data/{victim}")
    with pytest.raises(Exception, match=victim):
        ds.get_fragments()[0].validate()
    ds.get_fragments()[1].validate()


def test_fragments_from_files_rewrites_row_key_merges_and_sessions(tmp_path):
    from lance_core.file import LanceFileWriter
    from lance_core.schema import LanceSchema
    uri = str(tmp_path / "t")
    data = pa.table({"a": range(80), "b": range(80)})
    ds = lance_core.write_dataset([], uri, schema=data.schema)
    for _ in range(2):
        name = f"{uuid.uuid4()}.lance"
        with LanceFileWriter(f"{uri}/data/{name}") as w:
            w.write_batch(data)
        frag = lance_core.LanceFragment.create_from_file(name, ds, 0)
        assert frag.physical_rows == 80 and frag.files[0].fields == [0, 1]
        ds = lance_core.LanceDataset.commit(uri, lance_core.LanceOperation.Append([frag]), read_version=ds.version)
    assert [f.fragment_id for f in ds.get_fragments()] == [0, 1] and ds.count_rows() == 160
    # A Rewrite committed by hand, as a compaction of the two fragments into one file.
    name = f"{uuid.uuid4()}.lance"
    with LanceFileWriter(f"{uri}/data/{name}") as w:
        for batch in ds.to_batches():
            w.write_batch(batch)
    group = lance_core.LanceOperation.RewriteGroup(old_fragments=[f.metadata for f in ds.get_fragments()],
                                                   new_fragments=[lance_core.LanceFragment.create_from_file(name, ds, 0)])
    ds = lance_core.LanceDataset.commit(uri, lance_core.LanceOperation.Rewrite(groups=[group], rewritten_indices=[]),
                                        read_version=ds.version)
    assert [f.fragment_id for f in ds.get_fragments()] == [2]
    assert lance.dataset(uri).to_table() == pa.concat_tables([data, data])

    # Fragment merges joined on the row ids and on the row addresses; the schemas come
    # back with their field ids, as pylance's.
    merged = []
    for frag in ds.get_fragments():
        keys = frag.scanner(with_row_id=True, columns=[]).to_table()
        merged.append(frag.merge(keys.add_column(0, "c", [list(range(len(keys)))]), "_rowid"))
    schema = merged[0][1]
    assert isinstance(schema, LanceSchema) and [f.id() for f in schema.fields()] == [0, 1, 2]
    ds = lance_core.LanceDataset.commit(uri, lance_core.LanceOperation.Merge([m for m, _ in merged], schema),
                                        read_version=ds.version)
    merged = []
    for frag in ds.get_fragments():
        keys = frag.scanner(with_row_address=True, columns=[]).to_table()
        merged.append(frag.merge(keys.add_column(0, "d", [[i + 1 for i in range(len(keys))]]), "_rowaddr"))
    ds = lance_core.LanceDataset.commit(uri, lance_core.LanceOperation.Merge([m for m, _ in merged], merged[0][1]),
                                        read_version=ds.version)
    assert lance.dataset(uri).to_table(columns=["c", "d"]).to_pydict() == {"c": list(range(160)),
                                                                          "d": list(range(1, 161))}
    session = ds.get_fragments()[0].open_session(columns=["a", "d"], with_row_address=True)
    assert session.take([3, 1]).to_pydict() == {"a": [3, 1], "d": [4, 2], "_rowaddr": [(2 << 32) + 3, (2 << 32) + 1]}


def test_not_found_is_also_a_value_error_as_in_pylance(tmp_path):
    ds = lance_core.write_dataset(pa.table({"a": [1]}), str(tmp_path / "t"))
    for call in (lambda: lance_core.dataset(str(tmp_path / "missing")), lambda: ds.checkout_version(9),
                 lambda: ds.tags.delete("nope"), lambda: lance_core.dataset(ds.uri, version="nope")):
        with pytest.raises(ValueError) as e:
            call()
        assert isinstance(e.value, (lance_core.DatasetNotFoundError, lance_core.InvalidInputError))
    with pytest.raises(OSError):
        ds.checkout_version("nope")


def test_batch_size_bytes_cuts_large_batches(tmp_path):
    """batch_size_bytes: a batch larger than that in memory comes as slices of about that
    size (10 KiB rows, 50 KiB batches: about five rows each), the rows unchanged."""
    uri = str(tmp_path / "t")
    t = pa.table({"id": pa.array(range(200), pa.int64()), "text": pa.array(["x" * 10240] * 200, pa.large_string())})
    lance_core.write_dataset(t, uri)
    ds = lance_core.dataset(uri)
    batches = list(ds.to_batches(filter="id >= 0", batch_size_bytes=50 * 1024))
    assert len(batches) >= 40 and all(b.nbytes <= 50 * 1024 for b in batches)
    assert pa.Table.from_batches(batches) == t
    assert ds.scanner(batch_size_bytes=50 * 1024).to_reader().read_all() == t
    assert len(list(ds.to_batches(batch_size_bytes=1 << 30))) == 1
    with pytest.raises(ValueError, match="batch_size_bytes must be a positive integer"):
        ds.scanner(batch_size_bytes=0)


def test_deleted_rows_read_anyway_have_null_ids_as_pylance(tmp_path):
    """scanner(include_deleted_rows=True, with_row_id=True): the deleted rows of the
    fragments still there come back with NULL _rowid and _rowaddr, as in pylance, also
    under a filter; without with_row_id it is refused in pylance's words."""
    tables = {}
    for name, lib in (("ours", lance_core), ("theirs", lance)):
        uri = str(tmp_path / name)
        lib.write_dataset(pa.table({"a": range(100), "b": range(100)}), uri, max_rows_per_file=25)
        lib.dataset(uri).delete("a < 30")
        ds = lib.dataset(uri)
        tables[name] = (ds.scanner(with_row_id=True, with_row_address=True, include_deleted_rows=True).to_table(),
                        ds.scanner(with_row_id=True, include_deleted_rows=True, filter="a < 32").to_table())
        with pytest.raises(ValueError, match="include_deleted_rows is set but with_row_id is false"):
            ds.scanner(include_deleted_rows=True, filter="a < 30").to_table()
    assert tables["ours"] == tables["theirs"]
    everything, filtered = tables["ours"]
    assert everything.num_rows == 75 and everything["_rowid"].null_count == 5
    assert filtered["a"].to_pylist() == list(range(25, 32)) and filtered["_rowid"].null_count == 5
