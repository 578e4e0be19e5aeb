"""Datasets lance_core writes must read back identically in pylance (the reference), and
the two must be able to append to each other's datasets."""

from __future__ import annotations

import os

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_core
from conftest import assert_same
from datagen import nested_columns, primitive_columns

VERSIONS = ["2.1", "2.2"]


def _flat(n=5000):
    return pa.table(primitive_columns(n))


@pytest.mark.parametrize("version", VERSIONS)
def test_primitive_types_written_read_by_pylance(tmp_uri, version):
    t = _flat()
    ds = lance_core.write_dataset(t, tmp_uri, data_storage_version=version, max_rows_per_file=2000)
    assert ds.data_storage_version == version
    ref = lance.dataset(tmp_uri)
    assert ref.schema == t.schema
    assert len(ref.get_fragments()) == 3
    assert_same(ref.to_table(), t, f"v{version} pylance reads ours")
    assert_same(lance_core.dataset(tmp_uri).to_table(), t, f"v{version} we read ours")


@pytest.mark.parametrize("version", VERSIONS)
def test_nested_types_written_read_by_pylance(tmp_uri, version):
    t = pa.table(nested_columns(3000, with_map=(version == "2.2")))
    lance_core.write_dataset(t, tmp_uri, data_storage_version=version, max_rows_per_file=1000)
    ref = lance.dataset(tmp_uri)
    assert ref.schema == t.schema
    assert_same(ref.to_table(), t, f"v{version} nested")
    for frag in ref.get_fragments():
        assert_same(frag.to_table(), t.slice(frag.fragment_id * 1000, 1000), f"fragment {frag.fragment_id}")


@pytest.mark.parametrize("version", VERSIONS)
def test_wide_and_special_values(tmp_uri, version):
    rng = np.random.default_rng(5)
    n = 2000
    long_strs = [None if i % 17 == 0 else "x" * int(rng.integers(250, 600)) + str(i) for i in range(n)]
    vec = rng.standard_normal((n, 128)).astype(np.float32)
    t = pa.table({
        "long_str": pa.array(long_strs),
        "huge_bin": pa.array([b"y" * 40000 if i % 100 == 1 else None if i % 50 == 0 else b"small" for i in range(n)], pa.large_binary()),
        "vec128": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), 128),
        "vec_null": pa.array([None if i % 7 == 0 else list(map(float, vec[i])) for i in range(n)], pa.list_(pa.float32(), 128)),
        "list_long": pa.array([None if i % 9 == 0 else [long_strs[i], None, "s"] for i in range(n)], pa.list_(pa.string())),
        "all_null": pa.array([None] * n, pa.int64()),
        "null_type": pa.nulls(n),
        "const": pa.array([7] * n, pa.int32()),
        "empty_lists": pa.array([[] if i % 2 else None for i in range(n)], pa.list_(pa.int16())),
        "bools": pa.array([None if i % 5 == 0 else i % 3 == 0 for i in range(n)]),
        "big_strings_page": pa.array([f"https://example.com/item/{i}/details?ref={i * 7 % 1000}" for i in range(n)]),
    })
    lance_core.write_dataset(t, tmp_uri, data_storage_version=version)
    assert_same(lance.dataset(tmp_uri).to_table(), t, f"v{version} wide")
    assert_same(lance_core.dataset(tmp_uri).to_table(), t, f"v{version} wide (ours)")


@pytest.mark.parametrize("version", VERSIONS)
def test_compression_metadata_is_honoured(tmp_uri, version):
    n = 20000
    md = lambda **kw: {f"lance-encoding:{k.replace('_', '-')}": v for k, v in kw.items()}  # noqa: E731
    schema = pa.schema([
        pa.field("z", pa.float64(), metadata=md(compression="zstd", compression_level="9")),
        pa.field("l", pa.int64(), metadata=md(compression="lz4")),
        pa.field("s", pa.string(), metadata=md(compression="zstd")),
        pa.field("fz", pa.string(), metadata=md(structural_encoding="fullzip")),
    ])
    t = pa.table([pa.array(np.round(np.random.default_rng(1).normal(100, 5, n), 2)), pa.array(np.arange(n)),
                  pa.array([f"text value {i % 321}" for i in range(n)]), pa.array([f"v{i}" for i in range(n)])], schema=schema)
    lance_core.write_dataset(t, tmp_uri, data_storage_version=version)
    ref = lance.dataset(tmp_uri)
    assert_same(ref.to_table(), t, "compression")
    assert ref.schema == schema


def test_appends_in_both_directions(tmp_uri):
    a, b, c = _flat(1000), _flat(1500), _flat(700)
    lance_core.write_dataset(a, tmp_uri)
    lance.write_dataset(b, tmp_uri, mode="append")
    ds = lance_core.write_dataset(c, tmp_uri, mode="append")
    assert ds.version == 3
    expected = pa.concat_tables([a, b, c])
    assert_same(lance.dataset(tmp_uri).to_table(), expected, "pylance reads mixed appends")
    assert_same(lance_core.dataset(tmp_uri).to_table(), expected, "we read mixed appends")
    assert [f.fragment_id for f in lance.dataset(tmp_uri).get_fragments()] == [0, 1, 2]


def test_append_to_a_pylance_dataset_keeps_its_version(tmp_path):
    uri = str(tmp_path / "ds21.lance")
    lance.write_dataset(_flat(100), uri, data_storage_version="2.1")
    ds = lance_core.write_dataset(_flat(50), uri, mode="append")
    assert ds.data_storage_version == "2.1"
    frag = lance.dataset(uri).get_fragments()[-1]
    assert frag.metadata.files[0].file_minor_version == 1
    assert lance.dataset(uri).count_rows() == 150


def test_modes_and_schema_checks(tmp_uri):
    t = _flat(100)
    lance_core.write_dataset(t, tmp_uri)
    with pytest.raises(lance_core.InvalidInputError, match="already exists"):
        lance_core.write_dataset(t, tmp_uri)
    bad = t.set_column(t.schema.get_field_index("int32"), "int32", t.column("int32").cast(pa.int64()))
    with pytest.raises(lance_core.InvalidInputError, match="column .int32. is Int32 in the dataset but Int64"):
        lance_core.write_dataset(bad, tmp_uri, mode="append")
    with pytest.raises(lance_core.InvalidInputError, match="has no column 'extra'"):
        lance_core.write_dataset(t.append_column("extra", pa.array(range(100))), tmp_uri, mode="append")
    assert lance.dataset(tmp_uri).version == 1  # nothing was committed
    ds = lance_core.write_dataset(pa.table({"x": [1, 2, 3]}), tmp_uri, mode="overwrite")
    assert ds.version == 2 and lance.dataset(tmp_uri).to_table().column_names == ["x"]
    assert lance.dataset(tmp_uri, version=1).count_rows() == 100
    # Append creates a missing dataset; columns may come in another order.
    other = tmp_uri + "_new"
    lance_core.write_dataset(pa.table({"a": [1], "b": ["x"]}), other, mode="append")
    lance_core.write_dataset(pa.table({"b": ["y"], "a": [2]}), other, mode="append")
    assert lance.dataset(other).to_table().to_pylist() == [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]


def test_inputs_of_every_shape(tmp_uri):
    t = _flat(3000)
    chunked = pa.concat_tables([t.slice(0, 1000), t.slice(1000, 1000), t.slice(2000)])
    lance_core.write_dataset(chunked, tmp_uri)
    lance_core.write_dataset(t.to_batches(max_chunksize=333), tmp_uri, mode="append")
    lance_core.write_dataset(pa.RecordBatchReader.from_batches(t.schema, t.to_batches(500)), tmp_uri, mode="append")
    lance_core.write_dataset(t.slice(17, 100).to_batches()[0], tmp_uri, mode="append")
    expected = pa.concat_tables([t, t, t, t.slice(17, 100)])
    assert_same(lance.dataset(tmp_uri).to_table(), expected, "every shape")


def test_unaligned_buffers_do_not_panic(tmp_uri):
    """Arrow IPC from Spark can hand over buffers that are not aligned; the reference
    panics on them, we must not."""
    t = pa.table({"i": pa.array(range(1000), pa.int64()), "f": pa.array([i / 3 for i in range(1000)]),
                  "s": pa.array([str(i) for i in range(1000)])})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    raw = sink.getvalue().to_pybytes()
    # Place the IPC bytes at an odd address so every buffer read from it is misaligned.
    shifted = pa.py_buffer(b"\x00" + raw)[1:]
    reader = pa.ipc.open_stream(shifted)
    batches = list(reader)
    assert any(b.column(0).buffers()[1].address % 8 for b in batches)
    lance_core.write_dataset(batches, tmp_uri)
    assert_same(lance.dataset(tmp_uri).to_table(), t, "unaligned")


def test_json_columns_round_trip(tmp_uri):
    from datagen import json_column

    t = pa.table({"id": pa.array(range(500)), "doc": json_column(500)})
    lance_core.write_dataset(t, tmp_uri)
    ref = lance.dataset(tmp_uri)
    assert ref.schema == lance_core.dataset(tmp_uri).schema
    assert_same(lance_core.dataset(tmp_uri).to_table(), ref.to_table(), "json (ours vs pylance)")
    docs = [None if d is None else __import__("json").loads(d) for d in ref.to_table()["doc"].to_pylist()]
    assert docs == [None if d is None else __import__("json").loads(d) for d in t["doc"].to_pylist()]
    with pytest.raises(lance_core.InvalidInputError, match="row 1 is not valid JSON"):
        lance_core.write_dataset(pa.table({"doc": pa.array(['{"a": 1}', "{nope"], pa.json_(pa.string()))}), tmp_uri + "_bad")


@pytest.mark.parametrize("version", VERSIONS)
def test_stable_row_ids(tmp_uri, version):
    lance_core.write_dataset(_flat(3000), tmp_uri, enable_stable_row_ids=True, max_rows_per_file=1000, data_storage_version=version)
    lance_core.write_dataset(_flat(500), tmp_uri, mode="append")
    ds = lance_core.dataset(tmp_uri)
    ds.delete("seq_int64 % 4 = 0")
    ref = lance.dataset(tmp_uri)
    a = ref.to_table(columns=["seq_int64"], with_row_id=True, with_row_address=True)
    assert a["_rowid"].to_pylist() == sorted(a["_rowid"].to_pylist())
    assert a["_rowid"].to_pylist()[-1] == 3499
    assert_same(ds.to_table(columns=["seq_int64"], with_row_id=True, with_row_address=True), a, "row ids")
    # pylance keeps them stable through compaction of our dataset.
    ref.optimize.compact_files(target_rows_per_fragment=100000)
    ref = lance.dataset(tmp_uri)
    assert_same(lance_core.dataset(tmp_uri).to_table(columns=["seq_int64"], with_row_id=True),
                ref.to_table(columns=["seq_int64"], with_row_id=True), "after compaction")
    assert set(ref.to_table(with_row_id=True)["_rowid"].to_pylist()) == set(a["_rowid"].to_pylist())


def test_memory_store_writes():
    t = _flat(2000)
    ds = lance_core.write_dataset(t, "memory://writes/ds", max_rows_per_file=700)
    assert ds.count_rows() == 2000 and len(ds.get_fragments()) == 3
    lance_core.write_dataset(t, "memory://writes/ds", mode="append")
    assert_same(lance_core.dataset("memory://writes/ds").to_table(), pa.concat_tables([t, t]), "memory")
    lance_core.dataset("memory://writes/ds").delete("int64 > 0")
    assert lance_core.dataset("memory://writes/ds").count_rows() == pa.concat_tables([t, t]).filter(
        pa.compute.invert(pa.compute.fill_null(pa.compute.greater(pa.concat_tables([t, t])["int64"], 0), False))).num_rows


def test_write_from_a_lance_core_scan(tmp_path):
    """A scan of one dataset feeding a write of another: the stream calls back into
    lance_core while the write runs."""
    src, dst = str(tmp_path / "src.lance"), str(tmp_path / "dst.lance")
    t = pa.table({"id": pa.array(range(50_000), pa.int64()), "s": [f"v{i % 13}" for i in range(50_000)]})
    lance.write_dataset(t, src, max_rows_per_file=20_000)
    lance_core.write_dataset(lance_core.dataset(src), dst)
    lance_core.write_dataset(lance_core.dataset(src).scanner(filter="id < 10").to_reader(), dst, mode="append")
    assert lance.dataset(dst).count_rows() == 50_010
    assert lance.dataset(dst).to_table().slice(0, 50_000).equals(t)


def test_tilde_is_the_home_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    t = pa.table({"x": [1, 2, 3]})
    ds = lance_core.write_dataset(t, "~/t.lance")
    assert os.path.isdir(tmp_path / "t.lance" / "_versions")
    assert not os.path.exists(tmp_path / "~")
    assert ds.uri == str(tmp_path / "t.lance")
    assert lance_core.dataset("~/t.lance").to_table().equals(t)
    assert lance.dataset(str(tmp_path / "t.lance")).to_table().equals(t)


def test_pandas_index_round_trips_like_pylance(tmp_path):
    import pandas as pd
    frames = {
        "named": pd.DataFrame({"x": [1, 2, 3], "y": ["a", "b", "c"]}, index=pd.Index([10, 20, 30], name="idx")),
        "unnamed": pd.DataFrame({"x": [1, 2, 3]}, index=[5, 6, 7]),
        "range": pd.DataFrame({"x": [1, 2, 3]}),
    }
    for name, df in frames.items():
        ours, ref = str(tmp_path / f"{name}_ours.lance"), str(tmp_path / f"{name}_ref.lance")
        lance_core.write_dataset(df, ours)
        lance.write_dataset(df, ref)
        got = lance_core.dataset(ours).to_pandas()
        pd.testing.assert_frame_equal(got, df)
        pd.testing.assert_frame_equal(got, lance.dataset(ref).to_pandas())
        # pylance reads our dataset back the same way, and we read pylance's.
        pd.testing.assert_frame_equal(lance.dataset(ours).to_pandas(), df)
        pd.testing.assert_frame_equal(lance_core.dataset(ref).to_pandas(), df)
        pd.testing.assert_frame_equal(lance_core.dataset(ours).scanner().to_pandas(), df)
    ds = lance_core.dataset(str(tmp_path / "named_ours.lance"))
    assert list(ds.to_pandas(columns=["x"], filter="x > 1")["x"]) == [2, 3]


def test_overwrite_keeps_the_tables_format_as_pylance(tmp_path):
    t = pa.table({"a": pa.array([1, 2], pa.int64())})
    for lib in (lance, lance_core):
        path = str(tmp_path / lib.__name__)
        lib.write_dataset(t, path, data_storage_version="2.1")
        assert lib.write_dataset(t, path, mode="overwrite").data_storage_version == "2.1"
        assert lib.write_dataset(t, path, mode="overwrite", data_storage_version="2.2").data_storage_version == "2.2"
        assert lance.dataset(path).data_storage_version == "2.2"


@pytest.mark.parametrize("writer", [lance_core, lance])
def test_appending_data_without_some_nullable_columns(tmp_path, writer):
    """As pylance: the new fragment's files hold only the columns given; the others read
    as nulls there. Missing non-nullable columns, unknown columns and other types are
    refused with an error that is both a ValueError and (as pylance's) an OSError."""
    uri = str(tmp_path / "t")
    schema = pa.schema([pa.field("a", pa.int64()), pa.field("b", pa.string()),
                        pa.field("s", pa.struct([("p", pa.int64())])), pa.field("k", pa.int64(), False)])
    writer.write_dataset(pa.table({"a": [1, 2], "b": ["x", "y"], "s": [{"p": 1}, {"p": 2}], "k": [0, 0]},
                                  schema=schema), uri)
    nn = pa.field("k", pa.int64(), False)
    lance_core.write_dataset(pa.table({"k": [1], "a": [3]}, schema=pa.schema([nn, pa.field("a", pa.int64())])),
                             uri, mode="append")
    lance_core.dataset(uri).insert(pa.table({"s": [{"p": 5}], "b": ["z"], "k": [2]},
                                            schema=pa.schema([schema.field("s"), schema.field("b"), nn])))
    expected = {"a": [1, 2, 3, None], "b": ["x", "y", None, "z"], "s": [{"p": 1}, {"p": 2}, None, {"p": 5}],
                "k": [0, 0, 1, 2]}
    for reader in (lance_core, lance):
        ds = reader.dataset(uri)
        assert ds.to_table().to_pydict() == expected
        assert ds.to_table(columns=["b"], filter="s.p = 5 OR a = 3").to_pydict() == {"b": [None, "z"]}
    last = lance_core.dataset(uri).get_fragments()[-1]
    assert [f.fields for f in last.data_files()] == [[1, 3, 4]]  # b, s.p, k
    for bad, what in [(pa.table({"a": [1]}), "no column 'k'"), (pa.table({"k": [1], "zz": [1]}), "no column 'zz'"),
                      (pa.table({"k": ["x"]}), "column 'k' is Int64")]:
        with pytest.raises(lance_core.SchemaMismatchError, match=what) as e:
            lance_core.write_dataset(bad, uri, mode="append")
        assert isinstance(e.value, OSError) and isinstance(e.value, ValueError)
    assert lance_core.dataset(uri).count_rows() == 4


def test_max_bytes_per_file_cuts_files_where_pylance_does(tmp_path):
    """A file is cut once max_bytes_per_file of it are out: with pages going out about
    8 MiB at a time, in writes and in compaction, the files hold the rows pylance's do."""
    from lance.fragment import write_fragments as pylance_write_fragments
    from lance_core.fragment_metadata import write_fragments

    schema = pa.schema([pa.field("a", pa.string())])

    def batches():  # two batches of 8 MiB of strings
        return pa.RecordBatchReader.from_batches(schema, [pa.record_batch([pa.array(["0" * 1024] * 8192)], schema=schema)] * 2)

    ours = write_fragments(batches(), str(tmp_path / "f1"), max_bytes_per_file=1024)
    theirs = pylance_write_fragments(batches(), str(tmp_path / "f2"), max_bytes_per_file=1024)
    assert [f.physical_rows for f in ours] == [f.physical_rows for f in theirs] == [8192, 8192]
    # Small data stays in one file whatever the limit (nothing is out before the end).
    small = pa.table({"a": pa.array(range(20_000), pa.int64())})
    assert len(lance_core.write_dataset(small, str(tmp_path / "s"), max_bytes_per_file=1024).get_fragments()) == 1

    # Compaction: 4096 rows of 8 KiB vectors in two fragments, rewritten 128 rows at a time.
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(range(4 * 1024 * 1024), pa.int64()), 1024)
    data = pa.table({"a": vectors})
    rows = {}
    for name, lib in (("ours", lance_core), ("theirs", lance)):
        uri = str(tmp_path / name)
        ds = lib.write_dataset(data, uri, max_rows_per_file=2048)
        m = ds.optimize.compact_files(target_rows_per_fragment=100 * 1024, materialize_deletions=False,
                                      max_bytes_per_file=1000, batch_size=128)
        assert (m.fragments_removed, m.files_removed) == (2, 2)
        rows[name] = [f.physical_rows for f in lib.dataset(uri).get_fragments()]
        assert m.fragments_added == len(rows[name])
    assert rows["ours"] == rows["theirs"] and len(rows["ours"]) > 2
    assert lance.dataset(str(tmp_path / "ours")).to_table() == data
    with pytest.raises(lance_core.InvalidInputError, match="max_bytes_per_file must be positive"):
        lance_core.dataset(str(tmp_path / "ours")).optimize.compact_files(max_bytes_per_file=0)
