"""pylance's fragment-level API (issue 27 point 6): `FragmentMetadata` and `DataFile` in
pylance's shape and JSON, `progress=` hooks, `LanceFragment.create/delete/deletion_file`,
`LanceSchema` and `LanceOperation.Project`, auto cleanup from the table's config,
`ShardedBatchIterator` and the `debug` dumps; each checked against pylance 14."""

from __future__ import annotations

import json
import multiprocessing
import pickle
import time

import lance
import pyarrow as pa
import pytest

import lance_core
from lance_core.debug import format_fragment, list_transactions
from lance_core.progress import FileSystemFragmentWriteProgress, FragmentWriteProgress
from lance_core.schema import LanceSchema

_LIBS = {"ours": lance_core, "pylance": lance}


def _fragment_json(lib, uri):
    return [f.metadata.to_json() for f in lib.dataset(uri).get_fragments()]


@pytest.mark.parametrize("stable_row_ids", [False, True])
def test_fragment_metadata_json_is_pylances(tmp_path, stable_row_ids):
    """Both libraries give the same JSON for the same fragments, read each other's, and
    ours travels by pickle and JSON unchanged."""
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(pa.table({"a": range(20), "b": [str(i) for i in range(20)]}), uri,
                        max_rows_per_file=8, enable_stable_row_ids=stable_row_ids)
    lance.dataset(uri).delete("a % 3 = 0")
    theirs = _fragment_json(lance, uri)
    ours = _fragment_json(lance_core, uri)
    assert ours == theirs
    for meta in (f.metadata for f in lance_core.dataset(uri).get_fragments()):
        assert pickle.loads(pickle.dumps(meta)) == meta
        back = lance_core.FragmentMetadata.from_json(json.dumps(meta.to_json()))
        assert back == meta and back.data == meta.data
        assert lance.fragment.FragmentMetadata.from_json(json.dumps(meta.to_json())).to_json() == meta.to_json()
        assert meta.num_rows == meta.physical_rows - meta.num_deletions


def test_fragment_metadata_from_old_json_and_bad_json():
    """Keys old writers left out take pylance's defaults; a wrong one is named."""
    meta = lance_core.FragmentMetadata.from_json(json.dumps({
        "id": 0, "files": [{"path": "0.lance", "fields": [0], "file_size_bytes": 100}, {"path": "1.lance",
                                                                                         "fields": [1]}],
        "deletion_file": None, "physical_rows": 100}))
    assert [f.path for f in meta.files] == ["0.lance", "1.lance"]
    assert meta.files[1].file_size_bytes is None and meta.files[1].column_indices == []
    with pytest.warns(DeprecationWarning):
        assert meta.files[0].path() == "0.lance"
    assert lance_core.FragmentMetadata._from_bytes(meta.data) == meta
    bad = lance_core.FragmentMetadata(id=1, files=[], physical_rows=1,
                                      deletion_file=lance_core.fragment_metadata.DeletionFile(1, 2, "zip", 1))
    with pytest.raises(lance_core.InvalidInputError, match="file_type 'zip'"):
        _ = bad.data


class _Counting(FragmentWriteProgress):
    def __init__(self):
        self.begun, self.completed = [], []

    def begin(self, fragment, **kwargs):
        self.begun.append(fragment)

    def complete(self, fragment, **kwargs):
        self.completed.append(fragment)


@pytest.mark.parametrize("lib_name", ["ours", "pylance"])
def test_progress_hears_every_fragment(tmp_path, lib_name):
    """`progress=` on write_dataset and write_fragments: one begin and one complete per
    fragment; begin knows the file's path, complete its rows."""
    lib = _LIBS[lib_name]
    write_fragments = lance.fragment.write_fragments if lib is lance else lance_core.write_fragments
    p = _Counting()
    ds = lib.write_dataset(pa.table({"a": range(10)}), str(tmp_path / "a"), max_rows_per_file=4, progress=p)
    # pylance 14's write_dataset does not call `complete` for its last fragment; ours does.
    assert (len(p.begun), len(p.completed)) == ((3, 3) if lib is lance_core else (3, 2))
    assert [f.physical_rows for f in p.completed] == [4, 4, 2][:len(p.completed)]
    if lib is lance_core:  # pylance's write_dataset begins fragments with no file listed
        paths = [d.path for f in ds.get_fragments() for d in f.data_files()]
        assert [str(f.files[0].path) for f in p.begun] == paths
    p = _Counting()
    frags = write_fragments(pa.table({"a": range(10)}), str(tmp_path / "a"), max_rows_per_file=5, progress=p)
    assert (len(p.begun), len(p.completed), len(frags)) == (2, 2, 2)


def _failing_write(progress_uri, dataset_uri):
    batch = pa.record_batch([pa.array(range(100))], names=["a"])

    def data():
        yield batch
        raise RuntimeError("the source broke")

    progress = FileSystemFragmentWriteProgress(progress_uri, metadata={"worker": "7"})
    reader = pa.RecordBatchReader.from_batches(batch.schema, data())
    with pytest.raises(lance_core.InvalidInputError, match="the source broke"):
        lance_core.LanceFragment.create(dataset_uri, reader, fragment_id=1, progress=progress)


def test_file_system_progress_leaves_what_a_crash_left(tmp_path):
    """A finished fragment leaves its metadata and no `.in_progress` file; a failed one
    leaves both, with the tracker's metadata, as pylance's tracker does."""
    progress_uri, dataset_uri = tmp_path / "progress", str(tmp_path / "t.lance")
    fragment = lance_core.LanceFragment.create(dataset_uri, pa.table({"a": range(100)}),
                                               progress=FileSystemFragmentWriteProgress(str(progress_uri)))
    assert not (progress_uri / "fragment_0.in_progress").exists()
    saved = json.loads((progress_uri / "fragment_0.json").read_text())
    assert saved["id"] == 0 and saved["files"][0]["path"] == fragment.files[0].path
    p = multiprocessing.get_context("spawn").Process(target=_failing_write, args=(str(progress_uri), dataset_uri))
    p.start()
    p.join()
    assert p.exitcode == 0  # the write failed as expected (the child checks how)
    state = json.loads((progress_uri / "fragment_1.in_progress").read_text())
    assert state == {"fragment_id": 1, "metadata": {"worker": "7"}}
    assert json.loads((progress_uri / "fragment_1.json").read_text())["id"] == 1


def test_fragment_create_delete_and_commit(tmp_path):
    """Fragments written and rows deleted per fragment, uncommitted, then committed: both
    libraries read the result, and pylance's fragment.delete gives the same rows."""
    uris = {name: str(tmp_path / name) for name in _LIBS}
    for name, lib in _LIBS.items():
        uri = uris[name]
        ds = lib.write_dataset(pa.table({"a": range(10)}), uri, max_rows_per_file=5)
        frag = lib.LanceFragment.create(uri, pa.table({"a": [100, 101, 102]}), fragment_id=9)
        assert frag.id == 9 and frag.physical_rows == 3
        ds = lib.LanceDataset.commit(uri, lib.LanceOperation.Append([frag]), read_version=ds.version)
        first = ds.get_fragment(0)
        updated = first.delete("a < 2")
        assert updated.deletion_file.num_deleted_rows == 2 and first.deletion_file() is None
        gone = ds.get_fragment(1).delete("a >= 5")
        assert gone is None
        ds = lib.LanceDataset.commit(uri, lib.LanceOperation.Delete([updated], [1], "a < 2 or a >= 5"),
                                     read_version=ds.version)
        assert ds.get_fragment(0).deletion_file() == updated.deletion_file.path(0)
    for reader in _LIBS.values():
        for uri in uris.values():
            assert sorted(reader.dataset(uri).to_table()["a"].to_pylist()) == [2, 3, 4, 100, 101, 102]
    frag = lance_core.dataset(uris["ours"]).get_fragment(0)
    assert pickle.loads(pickle.dumps(frag)).to_table() == frag.to_table()
    assert frag.head(2)["a"].to_pylist() == [2, 3]


def test_lance_schema_and_project(tmp_path):
    """Field ids as pylance numbers them; a Project by ids renames, reorders and drops
    columns, and pylance reads the result."""
    data = pa.table({"x": range(2), "s": [{"a": 1, "b": "h"}, {"a": 2, "b": "w"}], "y": [[1.0], [2.0]]})
    uri = str(tmp_path / "t.lance")
    ds = lance_core.write_dataset(data, uri)

    def tree(fields):
        return [(f.name(), f.id(), tree(f.children())) for f in fields]
    assert tree(ds.lance_schema.fields()) == tree(lance.dataset(uri).lance_schema.fields())
    assert ds.lance_schema == LanceSchema.from_pyarrow(data.schema)
    assert pickle.loads(pickle.dumps(ds.lance_schema)) == ds.lance_schema
    assert ds.lance_schema.to_pyarrow() == data.schema
    uri = str(tmp_path / "p.lance")
    for lib in (lance, lance_core):  # the same Project, committed by either library
        ds = lib.write_dataset(pa.table({"a": range(3), "b": range(10, 13), "c": range(20, 23)}), uri,
                               mode="overwrite")
        swapped = lib.schema.LanceSchema.from_pyarrow(pa.schema([("b", pa.int64()), ("a", pa.int64())]))
        ds = lib.LanceDataset.commit(uri, lib.LanceOperation.Project(swapped), read_version=ds.version)
        for reader in (lance, lance_core):
            assert reader.dataset(uri).to_table() == pa.table({"b": range(3), "a": range(10, 13)})
    ds = lance_core.dataset(uri)
    bad = LanceSchema.from_pyarrow(pa.schema([("a", pa.string())]))
    with pytest.raises(lance_core.InvalidInputError, match="cannot change field 0"):
        lance_core.LanceDataset.commit(uri, lance_core.LanceOperation.Project(bad), read_version=ds.version)


@pytest.mark.parametrize("creator", ["ours", "pylance"])
def test_auto_cleanup_from_config(tmp_path, creator):
    """`auto_cleanup_options` on create sets pylance's config keys; every commit, by either
    library, then cleans up as pylance does (keeping the version it committed on)."""
    uri = str(tmp_path / "t.lance")
    table = pa.table({"a": range(10)})
    options = {"interval": 1, "older_than_seconds": 1}
    _LIBS[creator].write_dataset(table, uri, auto_cleanup_options=options)
    assert lance_core.dataset(uri).config() == {"lance.auto_cleanup.interval": "1",
                                                "lance.auto_cleanup.older_than": "1s"}
    for lib in (lance_core, lance, lance_core):
        lib.write_dataset(table, uri, mode="append")
    time.sleep(1.2)
    lance_core.write_dataset(table, uri, mode="append")
    assert [v["version"] for v in lance.dataset(uri).versions()] == [4, 5]
    assert lance.dataset(uri).count_rows() == 50
    # Given on append it changes nothing (as in pylance); once disabled, versions stay.
    ds = lance_core.write_dataset(table, uri, mode="append", auto_cleanup_options={"interval": 1,
                                                                                    "older_than_seconds": 0})
    ds.optimize.disable_auto_cleanup()
    time.sleep(1.2)
    lance_core.write_dataset(table, uri, mode="append")
    assert [v["version"] for v in lance.dataset(uri).versions()] == [5, 6, 7, 8]


def test_sharded_batch_iterator_as_pylances(tmp_path):
    from lance._dataset.sharded_batch_iterator import ShardedBatchIterator as Theirs

    from lance_core.sharded_batch_iterator import ShardedBatchIterator as Ours

    uri = str(tmp_path / "t.lance")
    lance.write_dataset(pa.table({"a": range(1186)}), uri, max_rows_per_file=100)
    for kwargs in ({}, {"batch_size": 15, "granularity": "batch"}, {"batch_size": 100, "granularity": "batch"}):
        with pytest.warns(UserWarning):
            ours = pa.concat_arrays([b["a"] for b in Ours(uri, 1, 3, columns=["a"], **kwargs)])
            theirs = pa.concat_arrays([b["a"] for b in Theirs(uri, 1, 3, columns=["a"], **kwargs)])
        assert ours == theirs, kwargs


def test_debug_dumps(tmp_path):
    uri = str(tmp_path / "t.lance")
    ds = lance_core.write_dataset(pa.table({"x": range(10)}), uri)
    ds = lance_core.write_dataset(pa.table({"x": range(10)}), uri, mode="append")
    ds.delete("x = 5")
    text = format_fragment(ds.get_fragments()[0].metadata, ds)
    assert text.startswith("PrettyPrintableFragment {") and "major_version: 2" in text and "name: \"x\"" in text
    found = list_transactions(ds)
    assert [t.split("operation: ")[1].split(" ")[0] for t in found] == ["Delete", "Append", "Overwrite"]
    assert list_transactions(ds, max_transactions=2) == found[:2]
