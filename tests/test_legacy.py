"""Datasets in the legacy file format 0.1 (pylance's `data_storage_version="legacy"`, the
default of releases before 2.0): every type pylance writes there, read back exactly as
pylance reads them. Legacy files keep no validity, so pylance returns the bytes under a
null (0, false, an empty list) and reads an empty string of a nullable column as null;
lance_core returns the same."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

import lance_core
from conftest import assert_reads_like_pylance as check
from conftest import assert_same, lance


def write01(table, path, **kw):
    lance.write_dataset(table, path, data_storage_version="legacy", **kw)
    return path


def test_primitives_strings_and_dictionaries(tmp_path):
    n = 5000
    words = ["red", "green", "blue", ""]
    t = pa.table({
        "i32": pa.array([None if k % 3 == 0 else k for k in range(n)], pa.int32()),
        "u16": pa.array(np.arange(n) % 60000, pa.uint16()),
        "f64": pa.array(np.arange(n) * 0.5),
        "f16": pa.array((np.arange(n) % 100).astype(np.float16)),
        "bool": pa.array([None if k % 5 == 0 else k % 2 == 0 for k in range(n)]),
        "date": pa.array(np.arange(n) % 20000, pa.int32()).cast(pa.date32()),
        "ts": pa.array(np.arange(n, dtype=np.int64) * 1000).cast(pa.timestamp("us", tz="UTC")),
        "dec": pa.array([Decimal(k).scaleb(-2) for k in range(n)], pa.decimal128(10, 2)),
        "null": pa.nulls(n),
        "s": pa.array([None if k % 7 == 0 else "" if k % 7 == 1 else f"s{k}" for k in range(n)]),
        "ls": pa.array([f"large {k}" for k in range(n)], pa.large_string()),
        "b": pa.array([bytes([k % 256]) * (k % 4) for k in range(n)], pa.binary()),
        "fsb": pa.array([k.to_bytes(4, "little") for k in range(n)], pa.binary(4)),
        "d": pa.array([words[k % 4] for k in range(n)]).dictionary_encode(),
    })
    schema = t.schema.set(t.schema.get_field_index("ls"), pa.field("ls", pa.large_string(), nullable=False))
    path = write01(t.cast(schema), str(tmp_path / "prims.lance"), max_rows_per_group=700)
    ds = lance_core.dataset(path)
    assert ds.data_storage_version == "0.1"
    ours = check(path)
    assert ours.column("s").null_count > 0  # empty strings of a nullable column read as null
    check(path, columns=["s", "d", "bool"], filter="i32 > 100 AND s IS NOT NULL")
    check(path, offset=1234, limit=2000)


def test_vectors_structs_and_lists(tmp_path):
    n = 3000
    vec = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(n * 8, dtype=np.float32)), 8)
    st = pa.StructArray.from_arrays([pa.array(range(n), pa.int32()), pa.array([f"y{k}" for k in range(n)])],
                                    names=["x", "y"])
    ints = [None if k % 10 == 0 else [] if k % 10 == 1 else list(range(k % 6)) for k in range(n)]
    t = pa.table({
        "vec": vec,
        "st": st,
        "ints": pa.array(ints, pa.list_(pa.int64())),
        "strs": pa.array([[f"w{k}", ""][: k % 3] for k in range(n)], pa.list_(pa.string())),
        "large": pa.array(ints, pa.large_list(pa.int32())),
        "structs": pa.array([[{"a": k, "b": f"b{j}"} for j in range(k % 3)] for k in range(n)],
                            pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())]))),
        "nested": pa.array([[[k], [], [k, k]][: k % 4] for k in range(n)], pa.list_(pa.list_(pa.int32()))),
        "bools": pa.FixedSizeListArray.from_arrays(pa.array([k % 3 == 0 for k in range(n * 3)]), 3),
    })
    path = write01(t, str(tmp_path / "nested.lance"), max_rows_per_group=512)
    check(path)
    check(path, columns=["st.y", "nested", "structs"], offset=700, limit=1500)
    batches = list(lance_core.dataset(path).to_batches(batch_size=333))
    assert_same(pa.Table.from_batches(batches), lance.dataset(path).to_table(), "batches")


def test_fragments_deletions_and_evolution(tmp_path):
    n = 12_000
    t = pa.table({"id": pa.array(np.arange(n)), "v": pa.array(np.arange(n) % 97, pa.int32())})
    path = write01(t, str(tmp_path / "frag.lance"), max_rows_per_file=5000, max_rows_per_group=1024)
    lance.dataset(path).delete("id % 3 = 0")  # a roaring deletion file in each fragment
    lance.dataset(path).delete("id = 1")
    lance.dataset(path).add_columns({"twice": "v * 2"})  # a second data file per fragment
    lance.dataset(path).drop_columns(["v"])  # its id stays in the first files
    check(path)
    check(path, filter="twice > 100", with_row_id=True)
    # lance_core deletes on legacy datasets too; it writes no legacy data files.
    lance_core.dataset(path).delete("id < 100")
    check(path)
    more = pa.table({"id": pa.array([n]), "twice": pa.array([0], pa.int32())})
    with pytest.raises(lance_core.UnsupportedFeatureError, match="frag.lance.*'0.1'"):
        lance_core.write_dataset(more, path, mode="append")
