"""The unenforced primary key (issue 27 point 4): declared in field metadata on create,
stored in the manifest's Field messages, used by `merge_insert()` without `on`, and fixed
once set. Every case runs on both libraries, which must agree (and read each other's)."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_core

PK = "lance-schema:unenforced-primary-key"
POS = PK + ":position"
_LIBS = {"ours": lance_core, "pylance": lance}


def _keyed(ids, vals, nullable=False):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=nullable, metadata={PK: "true"}), pa.field("v", pa.string())])
    return pa.table({"id": ids, "v": vals}, schema=schema)


def _outcome(f):
    """What a call did: its result, or that it failed (with any error: pylance raises
    OSError for what we raise InvalidInputError)."""
    try:
        return ("ok", f())
    except (OSError, ValueError, TypeError) as e:
        return ("error", type(e).__name__ in ("OSError", "InvalidInputError", "ValueError"))


def _metadata(ds, name):
    return ds.schema.field(name).metadata


def _cases(lib, root):
    """Each case's outcome, in order, on library `lib`."""
    out = {}
    u = f"{root}/keyed"
    lib.write_dataset(_keyed([1, 2, 3], ["a", "b", "c"]), u)
    out["created"] = _metadata(lib.dataset(u), "id")
    merge = lib.dataset(u).merge_insert().when_matched_update_all().when_not_matched_insert_all()
    out["merge without on"] = _outcome(lambda: merge.execute(_keyed([3, 4], ["C", "d"])))
    out["rows"] = sorted(lib.dataset(u).to_table().to_pylist(), key=lambda r: r["id"])
    for name, change in [("remove", {"id": {PK: None}}), ("false", {"id": {PK: "false"}}),
                         ("same value", {"id": {PK: "true"}}), ("position", {"id": {POS: "1"}}),
                         ("second column", {"v": {PK: "true"}}), ("other key", {"id": {"x": "y"}})]:
        out[name] = _outcome(lambda change=change: lib.dataset(u).update_field_metadata(change))
    out["replace key column"] = _outcome(lambda: lib.dataset(u).replace_field_metadata("id", {PK: "true"}))
    out["after"] = _metadata(lib.dataset(u), "id"), _metadata(lib.dataset(u), "v")
    out["make nullable"] = _outcome(lambda: lib.dataset(u).alter_columns({"path": "id", "nullable": True}))
    out["rename"] = _outcome(lambda: lib.dataset(u).alter_columns({"path": "id", "name": "key"}))
    out["renamed"] = _metadata(lib.dataset(u), "key")

    out["nullable"] = _outcome(lambda: lib.write_dataset(_keyed([1], ["a"], nullable=True), f"{root}/n").version)
    struct = pa.struct([pa.field("x", pa.int64(), nullable=False, metadata={PK: "true"})])
    nested = pa.schema([pa.field("s", struct, nullable=True)])
    out["nullable parent"] = _outcome(lambda: lib.write_dataset(pa.table({"s": [{"x": 1}]}, schema=nested),
                                                                f"{root}/np").version)
    nested = pa.schema([pa.field("s", struct, nullable=False)])
    out["nested"] = _outcome(lambda: lib.write_dataset(pa.table({"s": [{"x": 1}]}, schema=nested), f"{root}/s").version)
    listed = pa.schema([pa.field("l", pa.list_(pa.int32()), nullable=False, metadata={PK: "true"})])
    out["list"] = _outcome(lambda: lib.write_dataset(pa.table({"l": [[1]]}, schema=listed), f"{root}/l").version)

    # A composite key, ordered by position: (b, a).
    m = f"{root}/multi"
    two = pa.schema([pa.field("a", pa.int64(), nullable=False, metadata={PK: "true", POS: "2"}),
                     pa.field("b", pa.int64(), nullable=False, metadata={PK: "true", POS: "1"}),
                     pa.field("v", pa.string())])
    lib.write_dataset(pa.table({"a": [1, 1], "b": [1, 2], "v": ["x", "y"]}, schema=two), m)
    merge = lib.dataset(m).merge_insert().when_matched_update_all().when_not_matched_insert_all()
    out["composite merge"] = _outcome(lambda: merge.execute(pa.table({"a": [1, 2], "b": [2, 2], "v": ["Y", "n"]},
                                                                     schema=two)))
    out["composite rows"] = sorted(tuple(r.values()) for r in lib.dataset(m).to_table().to_pylist())
    by_pos = pa.schema([pa.field("x", pa.int64(), nullable=False, metadata={POS: "1"})])
    out["position only"] = _metadata(lib.write_dataset(pa.table({"x": [1]}, schema=by_pos), f"{root}/p"), "x")

    # A table without a key may be given one (valid values only), then not again.
    p = f"{root}/plain"
    lib.write_dataset(pa.table({"id": [1], "v": ["a"]}, schema=pa.schema([pa.field("id", pa.int64(), nullable=False),
                                                                           pa.field("v", pa.string())])), p)
    out["no key: merge without on"] = _outcome(lambda: lib.dataset(p).merge_insert())
    out["set false"] = _outcome(lambda: lib.dataset(p).update_field_metadata({"id": {PK: "false"}}))
    out["set on nullable"] = _outcome(lambda: lib.dataset(p).update_field_metadata({"v": {PK: "true"}}))
    out["set"] = _outcome(lambda: lib.dataset(p).update_field_metadata({"id": {PK: "true"}}))
    out["set again"] = _outcome(lambda: lib.dataset(p).update_field_metadata({"v": {PK: "true"}}))
    merge = lib.dataset(p).merge_insert().when_matched_update_all().when_not_matched_insert_all()
    out["merge on the new key"] = _outcome(lambda: merge.execute(pa.table({"id": [1, 2], "v": ["A", "b"]})))
    return out


def test_primary_key_cases_agree_with_pylance(tmp_path):
    ours = _cases(lance_core, str(tmp_path / "ours"))
    theirs = _cases(lance, str(tmp_path / "theirs"))
    for case in theirs:
        assert ours[case] == theirs[case], case
    assert theirs["merge without on"] == ("ok", {"num_inserted_rows": 1, "num_updated_rows": 1,
                                                 "num_deleted_rows": 0})
    assert theirs["remove"] == ("error", True) and theirs["other key"][0] == "ok"


@pytest.mark.parametrize("writer", ["ours", "pylance"])
def test_each_reads_the_others_key(tmp_path, writer):
    """A key declared by one library is the other's key: its merge without `on` uses it."""
    uri = str(tmp_path / "t.lance")
    two = pa.schema([pa.field("a", pa.int64(), nullable=False, metadata={PK: "true", POS: "2"}),
                     pa.field("b", pa.int64(), nullable=False, metadata={POS: "1"}),
                     pa.field("v", pa.string())])
    _LIBS[writer].write_dataset(pa.table({"a": [1, 1], "b": [1, 2], "v": ["x", "y"]}, schema=two), uri)
    reader = lance_core if writer == "pylance" else lance
    ds = reader.dataset(uri)
    assert ds.schema.field("b").metadata == {POS.encode(): b"1"}
    ds.merge_insert().when_matched_update_all().execute(pa.table({"a": [1], "b": [2], "v": ["Y"]}, schema=two))
    assert sorted(tuple(r.values()) for r in _LIBS[writer].dataset(uri).to_table().to_pylist()) == [(1, 1, "x"),
                                                                                                    (1, 2, "Y")]
    assert lance_core.dataset(uri).primary_key == ["b", "a"]
