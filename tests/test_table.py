"""The table layer against datasets pylance writes: versions, tags, naming schemes,
deletions of both kinds, stable row ids, schema evolution, base paths, fragments."""

from __future__ import annotations

import os
import shutil

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_core
from conftest import assert_same


def _table(n, start=0):
    return pa.table({
        "id": pa.array(np.arange(start, start + n, dtype=np.int64)),
        "s": pa.array([f"r{i}" for i in range(start, start + n)]),
        "st": pa.array([{"a": i, "b": float(i)} for i in range(start, start + n)]),
    })


def test_versions_time_travel_and_tags(tmp_uri):
    lance.write_dataset(_table(100), tmp_uri)
    lance.write_dataset(_table(50, 100), tmp_uri, mode="append")
    ref = lance.write_dataset(_table(10, 500), tmp_uri, mode="overwrite")
    ref.tags.create("first", 1)
    ref.tags.create("second", 2)

    ours = lance_core.dataset(tmp_uri)
    assert ours.version == 3 and ours.latest_version == 3
    assert [v["version"] for v in ours.versions()] == [v["version"] for v in ref.versions()]
    assert [v["timestamp"] for v in ours.versions()] == [v["timestamp"] for v in ref.versions()]
    assert [v["metadata"] for v in ours.versions()] == [v["metadata"] for v in ref.versions()]
    for v in (1, 2, 3):
        assert_same(lance_core.dataset(tmp_uri, version=v).to_table(), lance.dataset(tmp_uri, version=v).to_table(), f"v{v}")
    assert lance_core.dataset(tmp_uri, version="first").version == 1
    assert_same(lance_core.dataset(tmp_uri, version="second").to_table(), lance.dataset(tmp_uri, version=2).to_table(), "tag")
    assert ours.tags.list() == ref.tags.list()
    assert ours.tags.get_version("second") == 2
    assert ours.checkout_version(1).count_rows() == 100
    with pytest.raises(lance_core.DatasetNotFoundError, match="version 9 does not exist"):
        lance_core.dataset(tmp_uri, version=9)
    with pytest.raises(lance_core.DatasetNotFoundError, match="tag 'nope' does not exist"):
        lance_core.dataset(tmp_uri, version="nope")


def test_v1_manifest_names_and_hint(tmp_uri):
    lance.write_dataset(_table(10), tmp_uri, enable_v2_manifest_paths=False)
    lance.write_dataset(_table(10, 10), tmp_uri, mode="append")
    names = sorted(os.listdir(os.path.join(tmp_uri, "_versions")))
    assert "1.manifest" in names and "2.manifest" in names
    assert_same(lance_core.dataset(tmp_uri).to_table(), lance.dataset(tmp_uri).to_table(), "v1 names")
    assert lance_core.dataset(tmp_uri, version=1).count_rows() == 10
    # A stale or garbage hint never changes the answer.
    hint = os.path.join(tmp_uri, "_versions", "latest_version_hint.json")
    for content in ('{"version":1}', '{"version":99}', "garbage"):
        with open(hint, "w") as f:
            f.write(content)
        assert lance_core.dataset(tmp_uri).version == 2


def test_mixed_naming_schemes_are_refused(tmp_uri):
    lance.write_dataset(_table(10), tmp_uri)
    lance.write_dataset(_table(10), tmp_uri, mode="append")
    d = os.path.join(tmp_uri, "_versions")
    v2name = [n for n in os.listdir(d) if n.endswith(".manifest")][0]
    shutil.copy(os.path.join(d, v2name), os.path.join(d, "1.manifest"))
    with pytest.raises(lance_core.CorruptFileError, match="both manifest naming schemes"):
        lance_core.dataset(tmp_uri)


def test_deletions_arrow_and_roaring(tmp_uri):
    n = 20000
    lance.write_dataset(_table(n), tmp_uri, max_rows_per_file=10000)
    ref = lance.dataset(tmp_uri)
    ref.delete("id % 97 = 3")  # sparse: Arrow deletion files
    ref.delete("id >= 10000 and id < 16000")  # 6000 rows in fragment 1: a roaring bitmap
    ref = lance.dataset(tmp_uri)
    files = os.listdir(os.path.join(tmp_uri, "_deletions"))
    assert any(f.endswith(".arrow") for f in files) and any(f.endswith(".bin") for f in files)
    ours = lance_core.dataset(tmp_uri)
    assert ours.count_rows() == ref.count_rows()
    assert_same(ours.to_table(), ref.to_table(), "deletions")
    assert_same(ours.to_table(with_row_address=True), ref.to_table(with_row_address=True), "row addresses")
    for frag in ref.get_fragments():
        f = ours.get_fragment(frag.fragment_id)
        assert f.count_rows() == frag.count_rows()
        assert_same(f.to_table(), frag.to_table(), f"fragment {frag.fragment_id}")
    # A fragment whose every row is deleted disappears; the count stays right.
    ref.delete("id < 10000")
    assert lance_core.dataset(tmp_uri).count_rows() == lance.dataset(tmp_uri).count_rows()


def test_count_rows_reads_no_data_pages(tmp_uri):
    lance.write_dataset(_table(1000), tmp_uri)
    lance.dataset(tmp_uri).delete("id < 10")
    for f in os.listdir(os.path.join(tmp_uri, "data")):
        with open(os.path.join(tmp_uri, "data", f), "wb") as fh:
            fh.write(b"gone")  # data files are unreadable now
    assert lance_core.dataset(tmp_uri).count_rows() == 990
    with pytest.raises(lance_core.CorruptFileError):
        lance_core.dataset(tmp_uri).to_table()


def test_limit_offset_and_row_columns(tmp_uri):
    lance.write_dataset(_table(3000), tmp_uri, max_rows_per_file=1000)
    lance.dataset(tmp_uri).delete("id % 10 = 0")
    ours, ref = lance_core.dataset(tmp_uri), lance.dataset(tmp_uri)
    for limit, offset in [(10, 0), (10, 5), (500, 850), (None, 2000), (5000, 0), (0, 0), (7, 2699)]:
        assert_same(ours.to_table(limit=limit, offset=offset), ref.to_table(limit=limit, offset=offset), f"{limit}/{offset}")
    a = ours.to_table(columns=["s"], with_row_id=True, with_row_address=True)
    b = ref.to_table(columns=["s"], with_row_id=True, with_row_address=True)
    assert_same(a, b, "row id columns")
    assert_same(ours.to_table(columns=[], with_row_id=True), ref.to_table(columns=[], with_row_id=True), "only row ids")
    batches = list(ours.to_batches(batch_size=100))
    assert max(b.num_rows for b in batches) <= 100
    assert sum(b.num_rows for b in batches) == ref.count_rows()
    reader = ours.scanner(columns=["id"]).to_reader()
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.read_all().num_rows == ref.count_rows()


def test_stable_row_ids_after_compaction(tmp_uri):
    lance.write_dataset(_table(2000), tmp_uri, enable_stable_row_ids=True, max_rows_per_file=500)
    lance.write_dataset(_table(700, 2000), tmp_uri, mode="append", max_rows_per_file=500)
    ref = lance.dataset(tmp_uri)
    ref.delete("id % 3 = 0")
    ref.update({"s": "'updated'"}, where="id % 7 = 1")
    ref = lance.dataset(tmp_uri)
    ref.optimize.compact_files(target_rows_per_fragment=100000)
    ref = lance.dataset(tmp_uri)
    ours = lance_core.dataset(tmp_uri)
    a = ours.to_table(with_row_id=True, with_row_address=True)
    b = ref.to_table(with_row_id=True, with_row_address=True)
    assert_same(a, b, "stable row ids")
    assert a.column("_rowid") != a.column("_rowaddr")


def test_schema_evolution(tmp_uri):
    lance.write_dataset(_table(1000), tmp_uri, max_rows_per_file=400)
    ds = lance.dataset(tmp_uri)
    ds.add_columns({"double_id": "id * 2"})
    ds = lance.dataset(tmp_uri)
    ds.add_columns(pa.field("empty", pa.float64()))
    ds = lance.dataset(tmp_uri)
    ds.drop_columns(["s"])
    ds = lance.dataset(tmp_uri)
    ds.alter_columns({"path": "double_id", "name": "twice"})
    ref = lance.dataset(tmp_uri)
    assert max(len(f.data_files()) for f in ref.get_fragments()) >= 2
    ours = lance_core.dataset(tmp_uri)
    assert ours.schema == ref.schema
    assert_same(ours.to_table(), ref.to_table(), "evolved")
    assert_same(ours.to_table(columns=["twice", "id"]), ref.to_table(columns=["twice", "id"]), "evolved subset")
    # Ids 0-4 came with the table; the added column got 5 and kept it through the rename.
    assert ours.field_ids()["twice"] == 5 and ours.field_ids()["empty"] == 6


def test_field_ids_follow_the_manifest(tmp_uri):
    lance.write_dataset(_table(10), tmp_uri)
    ids = lance_core.dataset(tmp_uri).field_ids()
    assert ids == {"id": 0, "s": 1, "st": 2, "st.a": 3, "st.b": 4}


def test_base_paths(tmp_path):
    from lance import DatasetBasePath

    root, other = str(tmp_path / "main"), str(tmp_path / "other")
    lance.write_dataset(_table(300), root, initial_bases=[DatasetBasePath(other, name="other", is_dataset_root=True)],
                        target_bases=["other"])
    lance.write_dataset(_table(200, 300), root, mode="append")
    lance.dataset(root).delete("id % 4 = 0")
    assert os.listdir(os.path.join(other, "data"))
    assert_same(lance_core.dataset(root).to_table(), lance.dataset(root).to_table(), "base paths")


def test_unknown_reader_feature_flag_is_refused(tmp_uri):
    lance.write_dataset(_table(10), tmp_uri)
    d = os.path.join(tmp_uri, "_versions")
    name = [n for n in os.listdir(d) if n.endswith(".manifest")][0]
    _set_reader_flags(os.path.join(d, name), 1 << 12)
    with pytest.raises(lance_core.UnsupportedFeatureError, match="reader features"):
        lance_core.dataset(tmp_uri)


def _varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _set_reader_flags(path, flags):
    """Append a reader_feature_flags field to the manifest protobuf (the last value of a
    field wins) and fix the length prefix and footer."""
    import struct

    data = open(path, "rb").read()
    pos = struct.unpack("<q", data[-16:-8])[0]
    (length,) = struct.unpack("<I", data[pos:pos + 4])
    body = data[pos + 4:pos + 4 + length] + bytes([9 << 3]) + _varint(flags)
    out = data[:pos] + struct.pack("<I", len(body)) + body + data[-16:]
    open(path, "wb").write(out)


def test_tombstoned_fields_are_skipped(tmp_uri):
    """merge_insert rewriting a column leaves the old column in place, marked -2."""
    n = 500
    base = pa.table({"id": pa.array(range(n), pa.int64()), "a": pa.array([i * 1.0 for i in range(n)]),
                     "b": pa.array([f"b{i}" for i in range(n)])})
    lance.write_dataset(base, tmp_uri)
    update = pa.table({"id": pa.array(range(0, n, 2), pa.int64()), "b": pa.array([f"new{i}" for i in range(0, n, 2)])})
    ds = lance.dataset(tmp_uri)
    (ds.merge_insert("id").when_matched_update_all().write_mode("rewrite_columns").execute(update))
    ref = lance.dataset(tmp_uri)
    fields = [f for frag in ref.get_fragments() for df in frag.metadata.files for f in df.fields]
    assert -2 in fields, "pylance 14 tombstones the rewritten column; the case this test is for"
    assert_same(lance_core.dataset(tmp_uri).to_table(), ref.to_table(), "tombstones")


def test_tag_on_a_branch(tmp_uri):
    lance.write_dataset(_table(100), tmp_uri)
    ds = lance.dataset(tmp_uri)
    branch = ds.create_branch("feature")
    lance.write_dataset(_table(30, 100), branch, mode="append")
    ds = lance.dataset(tmp_uri)
    ds.tags.create("on_branch", ("feature", 2))
    ours = lance_core.dataset(tmp_uri, version="on_branch")
    assert ours.count_rows() == 130
    assert_same(ours.to_table(), lance.dataset(tmp_uri, version="on_branch").to_table(), "branch tag")
    assert lance_core.dataset(tmp_uri).count_rows() == 100


def test_scanner_count_rows(tmp_uri):
    lance.write_dataset(_table(3000), tmp_uri, max_rows_per_file=1000)
    lance.dataset(tmp_uri).delete("id % 3 = 0")
    ours, ref = lance_core.dataset(tmp_uri), lance.dataset(tmp_uri)
    assert ours.scanner().count_rows() == ref.count_rows() == 2000
    assert ours.scanner(limit=10, offset=5).count_rows() == 10
    frag = ours.get_fragments()[1]
    assert ours.scanner(fragments=[frag]).count_rows() == frag.count_rows() == len(frag.to_table())


def test_tags_written_by_either_library_read_by_the_other(tmp_uri):
    lance.write_dataset(_table(100), tmp_uri)
    lance.write_dataset(_table(50, 100), tmp_uri, mode="append")
    lance.write_dataset(_table(10, 500), tmp_uri, mode="append")
    ours, ref = lance_core.dataset(tmp_uri), lance.dataset(tmp_uri)
    ours.tags.create("ours", 1)
    ours.tags.create("latest")                      # None: the latest version
    ours.tags.create("same", "ours")                # another tag's version
    ref.tags.create("theirs", 2)
    assert lance.dataset(tmp_uri).tags.list() == lance_core.dataset(tmp_uri).tags.list()
    got = ref.tags.list()
    assert {n: t["version"] for n, t in got.items()} == {"ours": 1, "latest": 3, "same": 1, "theirs": 2}
    assert got["ours"]["manifest_size"] > 0 and got["ours"]["created_at"] is not None
    assert lance.dataset(tmp_uri, version="ours").count_rows() == 100

    ours.tags.update("ours", 2)
    ref.tags.update("theirs", 3)
    assert lance.dataset(tmp_uri).tags.list() == lance_core.dataset(tmp_uri).tags.list()
    assert lance.dataset(tmp_uri, version="ours").count_rows() == 150
    assert lance_core.dataset(tmp_uri, version="theirs").count_rows() == 160
    after = ref.tags.list()["ours"]
    assert after["created_at"] == got["ours"]["created_at"] and after["updated_at"] >= got["ours"]["updated_at"]

    ours.tags.delete("theirs")
    ref.tags.delete("latest")
    assert sorted(lance.dataset(tmp_uri).tags.list()) == sorted(lance_core.dataset(tmp_uri).tags.list()) == ["ours", "same"]

    for call, match in [(lambda: ours.tags.create("ours", 1), "already exists"),
                        (lambda: ours.tags.create("new", 99), "version 99 does not exist"),
                        (lambda: ours.tags.update("nope", 1), "tag 'nope' does not exist"),
                        (lambda: ours.tags.delete("nope"), "tag 'nope' does not exist"),
                        (lambda: ours.tags.create("a/b", 1), "invalid tag name"),
                        (lambda: ours.tags.create("../x", 1), "invalid tag name")]:
        with pytest.raises(lance_core.LanceError, match=match):
            call()
    assert sorted(ref.tags.list()) == ["ours", "same"]


@pytest.mark.parametrize("stable_row_ids", [False, True])
def test_restore_matches_pylance(tmp_path, stable_row_ids):
    """Restore commits an old version as the newest; fragment ids and row ids keep counting
    from the latest version, as pylance's restore does, and pylance reads the result."""
    results = {}
    for lib in (lance, lance_core):
        uri = str(tmp_path / f"{lib.__name__}.lance")
        lance.write_dataset(_table(100), uri, enable_stable_row_ids=stable_row_ids)
        lance.write_dataset(_table(50, 100), uri, mode="append")
        lance.dataset(uri).delete("id < 10")
        old = lib.dataset(uri, version=1)
        old.restore()
        assert old.version == 4
        lance.write_dataset(_table(5, 900), uri, mode="append")
        ref = lance.dataset(uri)
        results[lib.__name__] = (
            ref.version,
            [f.fragment_id for f in ref.get_fragments()],
            ref.to_table(with_row_id=True).to_pydict(),
            [v["metadata"] for v in ref.versions()][3:],
            ref.data_storage_version,
        )
        assert_same(lance_core.dataset(uri).to_table(), ref.to_table(), f"{lib.__name__} after restore")
        assert lance_core.dataset(uri, version=4).count_rows() == 100
    assert results["lance_core"] == results["lance"]

