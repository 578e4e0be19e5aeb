"""`LanceDataset.commit` with pylance's operations (issue 27 points 3 and 6): UpdateConfig
with UpdateMap, Restore, a `Transaction` in place of an operation, commit messages; and
`get_transactions` / `read_transaction` giving each version's operation as the
`LanceOperation` pylance gives for it, whichever library wrote it."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_core
from lance_core.errors import InvalidInputError

_LIBS = {"ours": lance_core, "pylance": lance}


def _table(lib, uri):
    lib.write_dataset(pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]}), uri)
    return lib.write_dataset(pa.table({"a": [4], "b": ["w"]}), uri, mode="append")


@pytest.mark.parametrize("writer", ["ours", "pylance"])
def test_update_config_and_restore_operations(tmp_path, writer):
    """The same UpdateConfig and Restore operations, committed by either library, leave the
    same maps and rows, and the other library reads them."""
    lib = _LIBS[writer]
    uri = str(tmp_path / "t.lance")
    _table(lib, uri)
    Op = lib.LanceOperation
    op = Op.UpdateConfig(config_updates=Op.UpdateMap({"k": "1", "gone": None}),
                         table_metadata_updates=Op.UpdateMap({"owner": "me"}),
                         schema_metadata_updates=Op.UpdateMap({"s": "2"}, replace=True),
                         field_metadata_updates={1: Op.UpdateMap({"unit": "cm"})})
    ds = lib.LanceDataset.commit(uri, op, read_version=2)
    assert ds.version == 3
    restored = lib.LanceDataset.commit(uri, Op.Restore(1))
    assert restored.version == 4
    for reader in (lance, lance_core):
        at3 = reader.dataset(uri, version=3)
        assert at3.config() == {"k": "1"} and at3.metadata == {"owner": "me"}
        assert at3.schema.metadata == {b"s": b"2"} and at3.schema.field("b").metadata == {b"unit": b"cm"}
        latest = reader.dataset(uri)
        assert latest.version == 4 and latest.count_rows() == 3 and latest.config() == {}


def test_commit_rules_match_pylance(tmp_path):
    """What `LanceDataset.commit` refuses, as pylance refuses it."""
    uri = str(tmp_path / "t.lance")
    _table(lance_core, uri)
    Op = lance_core.LanceOperation
    with pytest.raises(ValueError, match="read_version is required"):
        lance_core.LanceDataset.commit(uri, Op.UpdateConfig(config_updates=Op.UpdateMap({"k": "v"})))
    with pytest.raises(TypeError, match="operation must be"):
        lance_core.LanceDataset.commit(uri, "append")
    with pytest.raises(InvalidInputError, match="field with id 7"):
        lance_core.LanceDataset.commit(uri, Op.UpdateConfig(field_metadata_updates={7: Op.UpdateMap({"m": "v"})}),
                                       read_version=2)
    with pytest.raises(lance_core.DatasetNotFoundError):
        lance_core.LanceDataset.commit(uri, Op.Restore(99))
    assert lance_core.dataset(uri).version == 2


def test_transaction_and_commit_message(tmp_path):
    """A `Transaction` commits its operation at its read version with its properties; a
    commit message is recorded where pylance records it."""
    uri = str(tmp_path / "t.lance")
    ds = _table(lance_core, uri)
    frags = lance_core.write_fragments(pa.table({"a": [9], "b": ["q"]}), uri)
    t = lance_core.Transaction(ds.version, lance_core.LanceOperation.Append(frags), transaction_properties={"p": "q"})
    ds = lance_core.LanceDataset.commit(uri, t)
    assert ds.version == 3 and ds.count_rows() == 5
    assert lance.dataset(uri).read_transaction(3).transaction_properties == {"p": "q"}
    frags = lance_core.write_fragments(pa.table({"a": [10], "b": ["r"]}), uri)
    ds = lance_core.LanceDataset.commit(ds, lance_core.LanceOperation.Append(frags), read_version=3,
                                        commit_message="nightly load")
    theirs = lance.dataset(uri).read_transaction(4).transaction_properties
    assert theirs == {"__lance_commit_message": "nightly load"}
    lance.write_dataset(pa.table({"a": [11], "b": ["s"]}), uri, mode="append", commit_message="by pylance")
    assert lance_core.dataset(uri).read_transaction(5).transaction_properties == {"__lance_commit_message": "by pylance"}


def _describe(t):
    """A transaction's operation, as comparable plain values."""
    if t is None:
        return None
    op = t.operation
    name = type(op).__name__
    if name in ("Append", "Overwrite"):
        return name, t.read_version, [f.physical_rows for f in op.fragments]
    if name == "Delete":
        return name, t.read_version, op.predicate, sorted(op.deleted_fragment_ids), len(op.updated_fragments)
    if name == "Update":
        return name, t.read_version, sorted(op.removed_fragment_ids), len(op.new_fragments)
    if name == "Restore":
        return name, op.version
    if name == "UpdateConfig":
        return name, t.read_version, op.config_updates.updates, op.config_updates.replace
    if name == "Rewrite":
        return name, t.read_version, [(len(g.old_fragments), len(g.new_fragments)) for g in op.groups]
    return name, t.read_version


def test_get_transactions_like_pylance(tmp_path):
    """A history written by both libraries (create, append, delete, update, config,
    compaction, restore): each version's operation reads back as the same `LanceOperation`
    from either library, newest first."""
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(pa.table({"a": list(range(10)), "b": ["x"] * 10}), uri)
    lance_core.write_dataset(pa.table({"a": [10, 11], "b": ["y", "y"]}), uri, mode="append")
    lance_core.dataset(uri).delete("a < 3")
    lance.dataset(uri).update({"b": "'z'"}, where="a = 5")
    lance_core.dataset(uri).update_config({"k": "v"})
    lance_core.dataset(uri).optimize.compact_files()
    lance.LanceDataset.commit(uri, lance.LanceOperation.Restore(2))
    ours = [_describe(t) for t in lance_core.dataset(uri).get_transactions(20)]
    theirs = [_describe(t) for t in lance.dataset(uri).get_transactions(20)]
    assert ours == theirs
    # The compaction reserved its fragment ids first (pylance shows that as a BaseOperation).
    assert [o[0] for o in ours] == ["Restore", "Rewrite", "BaseOperation", "UpdateConfig", "Update", "Delete",
                                    "Append", "Overwrite"]
    assert [_describe(t) for t in lance_core.dataset(uri, version=3).get_transactions(2)] == theirs[5:7]


def test_dataset_api_names_as_pylance(tmp_path):
    """has_stable_row_ids, max_field_id, fragment_ids, checkout_latest, insert,
    truncate_table and write_dataset's commit_message / transaction_properties answer as
    pylance's do on the same table."""
    out = {}
    for name, lib in _LIBS.items():
        uri = str(tmp_path / name)
        ds = lib.write_dataset(pa.table({"a": [1, 2], "s": [{"x": 1}, {"x": 2}]}), uri, max_rows_per_file=1,
                               enable_stable_row_ids=True, commit_message="first",
                               transaction_properties={"job": "7"})
        old = lib.dataset(uri)
        ds.insert(pa.table({"a": [3], "s": [{"x": 3}]}))
        old.checkout_latest()
        rows_after_insert = old.count_rows()
        ds.truncate_table()
        out[name] = (ds.has_stable_row_ids, ds.max_field_id, list(old.fragment_ids()), rows_after_insert,
                     ds.count_rows(), ds.schema.names, ds.version, type(ds.read_transaction(3).operation).__name__,
                     lance.dataset(uri).read_transaction(1).transaction_properties)
    assert out["ours"] == out["pylance"]
    assert out["ours"][-1] == {"__lance_commit_message": "first", "job": "7"}
    from lance_core.dataset import LANCE_COMMIT_MESSAGE_KEY
    assert LANCE_COMMIT_MESSAGE_KEY == "__lance_commit_message"


def test_validate_passes_good_tables_and_names_what_is_wrong(tmp_path):
    """validate() passes on tables either library wrote (with deletions and new columns),
    and names the file when a data file lost rows."""
    import os
    import shutil

    for name, lib in _LIBS.items():
        uri = str(tmp_path / name)
        lib.write_dataset(pa.table({"a": list(range(100))}), uri, max_rows_per_file=30)
        lib.dataset(uri).delete("a % 7 = 0")
        lib.dataset(uri).add_columns({"b": "a * 2"})
        lance_core.dataset(uri).validate()
        lance.dataset(uri).validate()
    # A data file replaced by a shorter one: found, and the file named.
    uri = str(tmp_path / "ours")
    ds = lance_core.dataset(uri)
    frag = ds.get_fragments()[0]
    victim = os.path.join(uri, "data", frag.data_files()[0].path)
    other = lance_core.write_dataset(pa.table({"a": [1, 2]}), str(tmp_path / "short"))
    shutil.copy(os.path.join(str(tmp_path / "short"), "data", other.get_fragments()[0].data_files()[0].path), victim)
    with pytest.raises(lance_core.CorruptFileError, match=os.path.basename(victim)):
        lance_core.dataset(uri).validate()
