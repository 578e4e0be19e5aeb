"""Datasets whose data files are format 2.0 (pylance's `data_storage_version="2.0"`, the
default of older releases): every type pylance writes in 2.0, read back value for value."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

import lance_core
from conftest import assert_reads_like_pylance as check
from conftest import assert_same, lance


def write20(table, path, **kw):
    lance.write_dataset(table, path, data_storage_version="2.0", **kw)
    return path


def every(n, k, start=0):
    m = np.zeros(n, dtype=bool)
    m[start::k] = True
    return m


def test_primitives_and_temporal(tmp_path):
    n = 30_000
    i = np.arange(n)
    t = pa.table({
        "i32": pa.array((i * 7 - 1000).astype(np.int32)),
        "i32_nulls": pa.array((i % 1000).astype(np.int32), mask=every(n, 3)),
        "u8": pa.array((i % 256).astype(np.uint8)),
        "i16": pa.array((i % 30000 - 15000).astype(np.int16)),
        "u64": pa.array(i.astype(np.uint64) * np.uint64(3)),
        "f16": pa.array((i % 100).astype(np.float16)),
        "f32": pa.array((i * 0.5).astype(np.float32)),
        "f64_nulls": pa.array(i * 1.5, mask=every(n, 7)),
        "bool": pa.array(i % 3 == 0),
        "bool_nulls": pa.array(i % 2 == 0, mask=every(n, 4, 2)),
        "date32": pa.array((i % 20000).astype(np.int32)).cast(pa.date32()),
        "date64": pa.array(((i % 20000) * 86_400_000).astype(np.int64)).cast(pa.date64()),
        "ts_ns_utc": pa.array((1_600_000_000_000_000_000 + i).astype(np.int64), mask=every(n, 11))
        .cast(pa.timestamp("ns", tz="UTC")),
        "time64": pa.array((i % 86_400) * 1_000_000).cast(pa.time64("us")),
        "dur": pa.array(i.astype(np.int64)).cast(pa.duration("ms")),
        "dec": pa.array([None if k % 13 == 0 else Decimal(k * 12345).scaleb(-4) for k in range(n)],
                        type=pa.decimal128(20, 4)),
        "all_null": pa.nulls(n, type=pa.int32()),
        "all_null_str": pa.nulls(n, type=pa.string()),
    })
    path = write20(t, str(tmp_path / "prims.lance"))
    ds = lance_core.dataset(path)
    assert ds.data_storage_version == "2.0"
    check(path)
    check(path, columns=["bool_nulls", "dec"], filter="i32 > 1000 AND i32_nulls IS NOT NULL")


def test_strings_binaries_and_dictionaries(tmp_path):
    n = 30_000
    words = ["alpha", "beta", "gamma", "delta", "epsilon"]
    t = pa.table({
        "str": pa.array([None if k % 10 == 3 else f"s{k}" for k in range(n)]),
        "large_str": pa.array([None if k % 9 == 0 else "x" * (k % 17) for k in range(n)], pa.large_string()),
        # few distinct values: pylance stores these pages as dictionaries
        "low_card": pa.array([None if k % 17 == 5 else words[k % 5] for k in range(n)]),
        "bin": pa.array([None if k % 6 == 1 else bytes([k % 256]) * (k % 5) for k in range(n)], pa.binary()),
        "large_bin": pa.array([bytes([k % 7]) * (k % 3) for k in range(n)], pa.large_binary()),
        "arrow_dict": pa.array([None if k % 8 == 0 else words[k % 4] for k in range(n)])
        .dictionary_encode(),
    })
    path = write20(t, str(tmp_path / "strings.lance"))
    check(path)
    check(path, filter="low_card = 'beta'", columns=["str", "low_card"])


def test_compressed_and_packed_fields(tmp_path):
    n = 20_000
    meta = lambda scheme: {"lance-encoding:compression": scheme}  # noqa: E731
    schema = pa.schema([
        pa.field("zstd_str", pa.string(), metadata=meta("zstd")),
        pa.field("lz4_bin", pa.binary(), metadata=meta("lz4")),
        pa.field("fsst_str", pa.string(), metadata=meta("fsst")),
        pa.field("packed", pa.struct([("x", pa.int32()), ("y", pa.float64()), ("z", pa.uint8())]),
                 metadata={"packed": "true"}),
    ])
    t = pa.table({
        "zstd_str": [None if k % 5 == 0 else f"zstd value {k % 300}" for k in range(n)],
        "lz4_bin": [f"lz4-{k % 50}".encode() * 3 for k in range(n)],
        "fsst_str": [f"https://example.com/items/{k % 997}/page" for k in range(n)],
        "packed": [{"x": k, "y": k / 2, "z": k % 256} for k in range(n)],
    }, schema=schema)
    path = write20(t, str(tmp_path / "meta.lance"))
    check(path)


def test_vectors_fixed_binary_and_structs(tmp_path):
    n = 10_000
    vec = pa.FixedSizeListArray.from_arrays(pa.array((np.arange(n * 16) % 1000).astype(np.float32)), 16)
    items = pa.array([None if k % 7 == 0 else k for k in range(n * 4)], pa.int32())
    small = pa.FixedSizeListArray.from_arrays(items, 4, mask=pa.array(every(n, 5)))
    st = pa.StructArray.from_arrays(
        [pa.array([None if k % 5 == 0 else k for k in range(n)], pa.int32()),
         pa.array([None if k % 7 == 0 else f"b{k}" for k in range(n)])], names=["a", "b"])
    inner = pa.StructArray.from_arrays([pa.array(np.arange(n, dtype=np.int64) * 2)], names=["y"])
    nested = pa.StructArray.from_arrays([inner, pa.array(np.arange(n) % 2 == 0)], names=["x", "flag"])
    t = pa.table({
        "vec": vec, "small": small,
        "fsb": pa.array([None if k % 4 == 0 else k.to_bytes(16, "little") for k in range(n)], pa.binary(16)),
        "st": st, "nested": nested,
    })
    path = write20(t, str(tmp_path / "fixed.lance"))
    check(path)
    check(path, columns=["nested.x.y", "st.b"], filter="st.a > 100")


def test_many_files_pages_and_deletions(tmp_path):
    """Several files and pages per column (page boundaries differ between columns), rows
    deleted by pylance and by lance_core, rows appended by lance_core in 2.0."""
    n = 400_000
    i = np.arange(n)
    t = pa.table({
        "id": pa.array(i.astype(np.int64)),
        "v": pa.array((i % 1000).astype(np.int32), mask=every(n, 13)),
        "s": pa.array([f"row-{k:07d}" if k >= n // 2 else f"w{k % 10}" for k in range(n)]),
    })
    path = write20(pa.Table.from_batches(t.to_batches(max_chunksize=50_000)), str(tmp_path / "big.lance"),
                   max_rows_per_file=150_000)
    lance.dataset(path).delete("id % 10 = 3")
    check(path)
    check(path, columns=["s"], offset=123_456, limit=1000)
    lance_core.write_dataset(t.slice(0, 1000), path, mode="append")
    lance_core.dataset(path).delete("id % 10 = 4")
    assert lance.dataset(path).count_rows() == n - 2 * (n // 10) + 900  # the appended rows lose 100
    check(path)


def list_table(n):
    ints, strs, structs, nested = [], [], [], []
    for k in range(n):
        ints.append(None if k % 10 == 0 else [] if k % 10 == 1 else
                    [k * 100 + j if j % 4 != 3 else None for j in range(k % 6)])
        strs.append(None if k % 8 == 2 else [None if j == 1 else f"w{k}_{j}" for j in range(k % 4)])
        structs.append(None if k % 9 == 0 else [{"p": k + j, "q": f"q{j % 3}"} for j in range(k % 3)])
        nested.append(None if k % 11 == 0 else [[k, k + 1], [], None, [k]][: k % 5])
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "ints": pa.array(ints, pa.list_(pa.int64())),
        "strs": pa.array(strs, pa.list_(pa.string())),
        "large": pa.array(ints, pa.large_list(pa.int64())),
        "structs": pa.array(structs, pa.list_(pa.struct([("p", pa.int32()), ("q", pa.string())]))),
        "nested": pa.array(nested, pa.list_(pa.list_(pa.int32()))),
        "in_struct": pa.StructArray.from_arrays([pa.array(ints, pa.list_(pa.int64()))], names=["l"]),
    })


def test_lists(tmp_path):
    """Lists of every kind: 2.0 keeps each list's offsets in a column of its own, with
    offsets relative to each page and nulls marked by an adjustment."""
    path = write20(list_table(20_000), str(tmp_path / "lists.lance"))
    check(path)
    check(path, columns=["structs", "nested"], filter="id % 3 = 1")
    check(path, columns=["in_struct.l", "strs"], offset=777, limit=5000)


def test_list_pages_do_not_line_up_with_item_pages(tmp_path):
    """Many pages: the offsets column's pages and the items' pages break at different
    places, and some null lists still cover items (pyarrow allows that)."""
    n = 1_200_000  # in one file: 4 pages of offsets, 12 of items
    lengths = np.arange(n) % 4
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    lists = pa.ListArray.from_arrays(pa.array(offsets), pa.array(np.arange(offsets[-1], dtype=np.int64)),
                                     mask=pa.array(every(n, 13)))
    t = pa.table({"id": pa.array(np.arange(n)), "l": lists})
    path = write20(pa.Table.from_batches(t.to_batches(max_chunksize=100_000)), str(tmp_path / "pages.lance"),
                   max_rows_per_file=10_000_000)
    lance.dataset(path).delete("id % 1000 = 999")
    ours = check(path)
    batches = list(lance_core.dataset(path).to_batches(batch_size=10_007))
    assert_same(pa.Table.from_batches(batches), ours, "batches")
    check(path, offset=550_001, limit=100_000)


def test_writing_format_20_tables_both_libraries_read(tmp_path):
    """Tables in format 2.0 (older pylance's default) stay in it when lance_core writes to
    them: created, appended to, updated, merged into, compacted and given new columns;
    pylance reads every version as we do. What 2.0 cannot store (a NULL struct, a map)
    is refused as pylance refuses it."""
    import sys

    sys.path.insert(0, __import__("os").path.dirname(__file__))
    from datagen import nested_columns, primitive_columns

    t = pa.table(primitive_columns(3000))
    ours = str(tmp_path / "ours")
    lance_core.write_dataset(t, ours, data_storage_version="2.0", max_rows_per_file=1000)
    assert lance.dataset(ours).data_storage_version == "2.0"
    assert_same(lance.dataset(ours).to_table(), t, "pylance reads our 2.0 primitives")
    assert_same(lance_core.dataset(ours).to_table(), t, "we read our 2.0 primitives")
    nested = {k: v for k, v in nested_columns(2000, with_map=False).items()
              if k in ("struct_nonnull", "list_int", "large_list_str", "list_list", "list_fsl")}
    nested = pa.table(nested)
    lance_core.write_dataset(nested, str(tmp_path / "nested"), data_storage_version="2.0")
    assert_same(lance.dataset(str(tmp_path / "nested")).to_table(), nested, "pylance reads our 2.0 nested")

    # A table pylance wrote in 2.0, changed by lance_core in every way that writes data.
    uri = write20(pa.table({"id": pa.array(range(100), pa.int64()), "s": [f"v{i}" for i in range(100)]}),
                  str(tmp_path / "theirs"), max_rows_per_file=40)
    lance_core.write_dataset(pa.table({"id": pa.array(range(100, 130), pa.int64()),
                                       "s": [f"v{i}" for i in range(100, 130)]}), uri, mode="append")
    ds = lance_core.dataset(uri)
    ds.update({"s": "upper(s)"}, where="id % 10 = 0")
    ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
        pa.table({"id": pa.array([5, 200], pa.int64()), "s": ["five", "new"]}))
    ds.optimize.compact_files(target_rows_per_fragment=1000)
    ds.add_columns({"twice": "id * 2"})
    want = {i: (f"V{i}" if i % 10 == 0 else f"v{i}") for i in range(130)}
    want.update({5: "five", 200: "new"})
    for lib in (lance_core, lance):
        got = lib.dataset(uri).to_table().sort_by("id")
        assert got["id"].to_pylist() == sorted(want)
        assert got["s"].to_pylist() == [want[i] for i in sorted(want)]
        assert got["twice"].to_pylist() == [2 * i for i in sorted(want)]
        assert lib.dataset(uri).data_storage_version == "2.0"
    assert {(f.file_major_version, f.file_minor_version) for frag in lance.dataset(uri).get_fragments()
            for f in frag.data_files()} == {(2, 0)}

    bad = pa.table({"s": pa.array([{"x": 1}, None], pa.struct([("x", pa.int32())]))})
    with pytest.raises(lance_core.InvalidInputError, match="2.0 cannot store"):
        lance_core.write_dataset(bad, str(tmp_path / "bad"), data_storage_version="2.0")
    with pytest.raises(lance_core.UnsupportedFeatureError, match="map field"):
        lance_core.write_dataset(pa.table({"m": pa.array([[("a", 1)]], pa.map_(pa.string(), pa.int32()))}),
                                 str(tmp_path / "map"), data_storage_version="2.0")
