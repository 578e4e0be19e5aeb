"""Bad input raises an exception that names the file and the problem; nothing panics or
aborts, whatever bytes a file holds."""

from __future__ import annotations

import os
import random

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_core
from lance_core import _lance_core


def _write(uri, n=5000, **kw):
    t = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "s": pa.array([f"value-{i % 300}" for i in range(n)]),
        "l": pa.array([[i, None][: i % 3] for i in range(n)], pa.list_(pa.int32())),
    })
    return lance.write_dataset(t, uri, **kw)


def _only(directory, suffix):
    names = [n for n in os.listdir(directory) if n.endswith(suffix)]
    assert names, f"no {suffix} file in {directory}"
    return os.path.join(directory, names[0])


def test_missing_dataset(tmp_path):
    missing = str(tmp_path / "nope.lance")
    with pytest.raises(lance_core.DatasetNotFoundError, match="nope.lance") as e:
        lance_core.dataset(missing)
    assert isinstance(e.value, FileNotFoundError)


def test_bad_uri_and_arguments(tmp_uri):
    _write(tmp_uri)
    with pytest.raises(lance_core.InvalidInputError, match="unsupported URI scheme"):
        lance_core.dataset("ftp://host/x")
    ds = lance_core.dataset(tmp_uri)
    with pytest.raises(lance_core.InvalidInputError, match="no column named 'nope'"):
        ds.to_table(columns=["nope"])
    with pytest.raises(ValueError):
        ds.to_table(limit=-1)
    with pytest.raises(lance_core.InvalidInputError):
        lance_core.dataset(tmp_uri, version=1.5)


def test_truncated_manifest(tmp_uri):
    _write(tmp_uri)
    path = _only(os.path.join(tmp_uri, "_versions"), ".manifest")
    data = open(path, "rb").read()
    for cut in (len(data) - 3, len(data) // 2, 10):
        open(path, "wb").write(data[:cut])
        with pytest.raises(lance_core.CorruptFileError, match=os.path.basename(path)):
            lance_core.dataset(tmp_uri)


def test_truncated_and_corrupt_data_file(tmp_uri):
    _write(tmp_uri)
    path = _only(os.path.join(tmp_uri, "data"), ".lance")
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2])
    ds = lance_core.dataset(tmp_uri)  # the manifest is fine
    with pytest.raises(lance_core.CorruptFileError, match=os.path.basename(path) + ".*manifest records"):
        ds.to_table()
    # Unknown page encoding: rename the layout's protobuf type.
    bad = data.replace(b"/lance.encodings21.PageLayout", b"/lance.encodings99.PageLayout")
    open(path, "wb").write(bad)
    with pytest.raises(lance_core.UnsupportedFeatureError, match="encoding type '/lance.encodings99.PageLayout'"):
        lance_core.dataset(tmp_uri).to_table()
    # A file that is not Lance at all.
    open(path, "wb").write(b"PAR1" * (len(data) // 4) + b"PAR1"[: len(data) % 4])
    with pytest.raises(lance_core.CorruptFileError, match="no LANC magic"):
        lance_core.dataset(tmp_uri).to_table()


@pytest.mark.parametrize("kind", ["arrow", "bin"])
def test_corrupt_deletion_file(tmp_uri, kind):
    _write(tmp_uri, n=12000)
    lance.dataset(tmp_uri).delete("id < 6000" if kind == "bin" else "id < 10")
    path = _only(os.path.join(tmp_uri, "_deletions"), "." + kind)
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 3])
    with pytest.raises(lance_core.CorruptFileError, match=os.path.basename(path)):
        lance_core.dataset(tmp_uri).to_table()


def test_missing_data_file(tmp_uri):
    _write(tmp_uri)
    path = _only(os.path.join(tmp_uri, "data"), ".lance")
    os.remove(path)
    with pytest.raises(lance_core.DatasetNotFoundError, match=os.path.basename(path)):
        lance_core.dataset(tmp_uri).to_table()


def test_panics_become_exceptions():
    with pytest.raises(lance_core.LanceError, match="internal error in lance_core.*deliberate test panic"):
        _lance_core._panic_for_test()


@pytest.mark.parametrize("version", ["legacy", "2.0", "2.1", "2.2"])
def test_random_corruption_never_crashes(tmp_path, version):
    """Flip bytes all over a data file: every read either succeeds or raises a LanceError."""
    uri = str(tmp_path / "ds.lance")
    _write(uri, data_storage_version=version)
    path = _only(os.path.join(uri, "data"), ".lance")
    good = open(path, "rb").read()
    rng = random.Random(7)
    outcomes = {"ok": 0, "error": 0}
    for _ in range(150):
        data = bytearray(good)
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(data))
            data[i] = rng.randrange(256)
        open(path, "wb").write(bytes(data))
        try:
            lance_core.dataset(uri).to_table()
            outcomes["ok"] += 1
        except lance_core.LanceError:
            outcomes["error"] += 1
    assert outcomes["error"] > 0, outcomes
