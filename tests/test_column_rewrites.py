"""Columns rewritten in place (issue 27 point 6): `LanceFragment.update_columns` committed
as `LanceOperation.Update`, `LanceOperation.DataReplacement` with `DataFile.create`, and
what they do to indices and concurrent writers; each checked against pylance 14."""

from __future__ import annotations

import uuid

import lance
import lance.file
import lance.fragment
import pyarrow as pa
import pytest

import lance_core
import lance_core.file

_LIBS = {"ours": lance_core, "pylance": lance}
_FILES = {"ours": lance_core.file, "pylance": lance.file}
_DATA_FILE = {"ours": lance_core.DataFile, "pylance": lance.fragment.DataFile}


def _people():
    return pa.table({"id": [1, 2, 3, 4], "name": ["Alice", "Bob", "Charlie", "David"], "value": [10, 20, 30, 40]})


@pytest.mark.parametrize("update,keys", [
    (pa.table({"_rowid": pa.array([0, 2], pa.uint64()), "name": ["A2", "C2"], "value": [100, 300]}), {}),
    (pa.table({"id": [1, 3], "value": [95, None]}), {"left_on": "id", "right_on": "id"}),
    (pa.table({"key": [4, 9], "name": ["D2", "nobody"]}), {"left_on": "id", "right_on": "key"}),
])
def test_update_columns_as_pylance(tmp_path, update, keys):
    out = {}
    for name, lib in _LIBS.items():
        uri = str(tmp_path / name)
        ds = lib.write_dataset(_people(), uri)
        frag, fields = ds.get_fragment(0).update_columns(update, **keys)
        op = lib.LanceOperation.Update(updated_fragments=[frag], fields_modified=fields)
        lib.LanceDataset.commit(uri, op, read_version=ds.version)
        out[name] = (lib.dataset(uri).to_table().to_pydict(), sorted(fields))
    assert out["ours"] == out["pylance"]
    # Each reads what the other wrote.
    assert lance.dataset(str(tmp_path / "ours")).to_table().to_pydict() == out["ours"][0]
    assert lance_core.dataset(str(tmp_path / "pylance")).to_table().to_pydict() == out["ours"][0]


def test_update_columns_refuses_what_pylance_refuses(tmp_path):
    uri = str(tmp_path / "t")
    ds = lance_core.write_dataset(_people(), uri)
    frag = ds.get_fragment(0)
    with pytest.raises(ValueError, match="does not exist"):
        frag.update_columns(pa.table({"_rowid": pa.array([0], pa.uint64()), "nope": [1]}))
    with pytest.raises(ValueError, match="metadata column"):
        frag.update_columns(pa.table({"id": [1], "_rowaddr": pa.array([5], pa.uint64())}), left_on="id")
    with pytest.raises(ValueError, match="no join column"):
        frag.update_columns(pa.table({"value": [1]}))


def _write_file(lib_name, uri, table):
    name = f"{uuid.uuid4()}.lance"
    with _FILES[lib_name].LanceFileWriter(f"{uri}/data/{name}", table.schema) as w:
        w.write_batch(table)
    return name


def _replaced_b(name, lib, uri, values):
    """A table of `a` and `b` (added as a column: a file of its own), and `b`'s file
    replaced by one holding `values`; the dataset before and the new file's entry."""
    ds = lib.write_dataset(pa.table({"a": range(100)}), uri)
    ds.add_columns({"b": "a + 1"})
    before = lib.dataset(uri)
    new = _DATA_FILE[name].create(before, _write_file(name, uri, pa.table({"b": values})))
    lib.LanceDataset.commit(uri, lib.LanceOperation.DataReplacement(
        [lib.LanceOperation.DataReplacementGroup(0, new)]), read_version=before.version)
    return before, new


def test_data_replacement_with_data_file_create(tmp_path):
    out = {}
    for name, lib in _LIBS.items():
        uri = str(tmp_path / name)
        ds, new = _replaced_b(name, lib, uri, range(200, 300))
        both = _DATA_FILE[name].create(ds, _write_file(name, uri, pa.table({"a": range(5), "b": range(5)})))
        out[name] = (new.fields, new.column_indices, both.fields, lib.dataset(uri).to_table().to_pydict())
    assert out["ours"] == out["pylance"]
    assert out["ours"][-1]["b"] == list(range(200, 300))
    assert lance.dataset(str(tmp_path / "ours")).to_table().to_pydict() == out["ours"][-1]
    with pytest.raises(ValueError, match="'z'"):
        lance_core.DataFile.create(lance_core.dataset(str(tmp_path / "ours")),
                                   _write_file("ours", str(tmp_path / "ours"), pa.table({"z": [1]})))


def test_data_replacement_meets_indices_as_pylance(tmp_path):
    """An index on a replaced column conflicts with the replacement (retryable: pylance
    raises, our index builds retry), one on another column does not; a replacement that
    matches no data file is refused."""
    for name, lib in _LIBS.items():
        uri = str(tmp_path / name)
        before, new = _replaced_b(name, lib, uri, range(100, 200))
        lib.dataset(uri, version=before.version).create_scalar_index("a", "BTREE")
        stale = lib.dataset(uri, version=before.version)
        if lib is lance:
            with pytest.raises(OSError, match="Retryable commit conflict for version 3"):
                stale.create_scalar_index("b", "BTREE")
            lib.dataset(uri).create_scalar_index("b", "BTREE")
        else:
            # Our index builds retry a retryable conflict themselves: built again on the
            # replaced values.
            stale.create_scalar_index("b", "BTREE")
        assert lib.dataset(uri).describe_indices()[-1].name == "b_idx", name
        assert lib.dataset(uri).to_table(filter="b = 150").to_pydict() == {"a": [50], "b": [150]}, name
    # A file that claims fields two data files hold: pylance 14 commits it as the
    # fragment's only file, and the table can no longer be read; we refuse it.
    uri = str(tmp_path / "ours")
    new = lance_core.DataFile.create(lance_core.dataset(uri), _write_file("ours", uri, pa.table({"b": range(100)})))
    odd = lance_core.DataFile(new.path, [0, 1], [0, 1], new.file_major_version, new.file_minor_version)
    with pytest.raises(ValueError, match="matches none of its data files"):
        lance_core.LanceDataset.commit(uri, lance_core.LanceOperation.DataReplacement(
            [lance_core.LanceOperation.DataReplacementGroup(0, odd)]), read_version=lance_core.dataset(uri).version)
    assert lance_core.dataset(uri).count_rows() == 100
