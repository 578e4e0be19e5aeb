"""The table's config and metadata maps (issue 27 point 3): `config`, `update_config`,
`delete_config_keys`, `metadata`, `update_metadata`, `schema_metadata`,
`update_schema_metadata`, `update_field_metadata` and the deprecated `replace_*`, each one
version as in pylance 14; the same calls give the same maps in both libraries, and each
reads the other's."""

from __future__ import annotations

import warnings

import lance
import pyarrow as pa
import pytest

import lance_core
from lance_core.errors import InvalidInputError


def _steps(ds):
    """The same calls on either library's dataset; what each leaves."""
    out = [ds.update_config({"k1": "v1", "k2": "v2"}),
           ds.update_config({"k1": None, "k3": "v3"}),
           ds.update_config({"z": "1"}, replace=True)]
    ds.delete_config_keys(["z", "missing"])
    out.append(ds.config())
    out.append(ds.update_metadata({"m": "1", "n": "2"}))
    out.append(ds.update_metadata({"n": None}))
    out.append(ds.update_schema_metadata({"sm": "2"}))
    ds.update_field_metadata({"a": {"fa": "x"}, "s.x": {"fx": "y"}})
    ds.update_field_metadata({"a": {"fb": "z"}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        ds.replace_field_metadata("s", {"r": "1"})
        ds.replace_schema_metadata({"only": "this"})
    ds.update_config({"after": "all"})
    return out, ds.version


def _state(ds):
    return (ds.config(), ds.metadata, ds.schema_metadata, ds.schema.field("a").metadata,
            ds.schema.field("s").metadata, ds.schema.field("s").type.field("x").metadata)


def test_config_and_metadata_as_pylance_both_ways(tmp_path):
    t = pa.table({"a": [1, 2], "s": pa.array([{"x": 1}, {"x": 2}])})
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    lance_core.write_dataset(t, ours)
    lance.write_dataset(t, theirs)
    assert _steps(lance_core.dataset(ours)) == _steps(lance.dataset(theirs))
    expected = ({"after": "all"}, {"m": "1"}, {"only": "this"}, {b"fa": b"x", b"fb": b"z"},
                {b"r": b"1"}, {b"fx": b"y"})
    for reader in (lance_core.dataset(ours), lance.dataset(ours), lance_core.dataset(theirs), lance.dataset(theirs)):
        assert _state(reader) == expected
    assert lance_core.dataset(ours).to_table().equals(t)
    # Each change is one version, recorded as pylance records it.
    assert [v["version"] for v in lance.dataset(ours).versions()] == list(range(1, 14))
    txn = lance.dataset(ours).get_transactions(1)[0]
    assert type(txn.operation).__name__ == "UpdateConfig"
    assert txn.operation.config_updates.updates == {"after": "all"}
    # An old version keeps its maps.
    assert lance_core.dataset(ours, version=3).config() == {"k2": "v2", "k3": "v3"}


def test_config_changes_refuse_bad_input_and_meet_concurrent_ones(tmp_path):
    path = str(tmp_path / "t")
    ds = lance_core.write_dataset(pa.table({"a": [1]}), path)
    with pytest.raises(InvalidInputError, match="Column \"nope\" does not exist"):
        ds.update_field_metadata({"nope": {"a": "b"}})
    with pytest.raises(InvalidInputError, match="keys and values are strings"):
        ds.update_config({"k": 1})
    with pytest.raises(InvalidInputError, match="not a string"):
        ds.delete_config_keys("k")
    assert ds.version == 1
    # Two writers from the same version: other keys both land; the same key is retried
    # on the new version, so the later call wins.
    a, b = lance_core.dataset(path), lance_core.dataset(path)
    a.update_config({"x": "1"})
    b.update_config({"y": "2"})
    c, d = lance_core.dataset(path), lance_core.dataset(path)
    c.update_config({"x": "3"})
    d.update_config({"x": "4"})  # met c's change of x: retried on the new version
    assert lance_core.dataset(path).config() == {"x": "4", "y": "2"}
    assert lance.dataset(path).config() == {"x": "4", "y": "2"}
    assert lance_core.dataset(path).version == 5
