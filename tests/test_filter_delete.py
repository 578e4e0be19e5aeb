"""One predicate language for filters and deletes, checked against pylance."""

from __future__ import annotations

import os

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_core
from conftest import assert_same
from datagen import primitive_columns


def _table(n=6000):
    cols = primitive_columns(n, seed=3)
    cols["st"] = pa.array([None if i % 13 == 0 else {"x": i % 50, "y": f"y{i % 7}"} for i in range(n)])
    return pa.table(cols)


FILTERS = [
    "int64 > 0",
    "int32 <= 100 AND int32 >= -100000000",
    "NOT (bool) OR bool IS NULL",
    "small_int32 IN (1, 2, 3, 42)",
    "small_int32 NOT IN (1, 2, 3)",
    "small_int32 BETWEEN 10 AND 20",
    "string LIKE 'alpha%'",
    "string NOT LIKE '%-1%'",
    "lowcard_string = 'beta'",
    "lowcard_string != 'beta' AND lowcard_string IS NOT NULL",
    "double > 0.5 OR float < -1.5",
    "date32 >= DATE '1990-01-01'",
    "timestamp_us > TIMESTAMP '2000-01-01 00:00:00'",
    "timestamp_us_utc < TIMESTAMP '2010-06-01 12:00:00+00:00'",
    "decimal128 > 1000",
    "uint64 > 9000000000000000000",
    "st.x = 7",
    "st.y = 'y3' AND st.x > 20",
    "string IS NULL",
    "halffloat > 0.5",
    "dict_string = 'gamma'",
    "seq_int64 < 100",
    "uint8 > 100 AND uint8 < 200",
    "lowcard_string IN ('beta', 'gamma')",
    "lowcard_string NOT IN ('beta', 'gamma', 'delta')",
    "lowcard_string IN ('beta', NULL)",
    "lowcard_string NOT IN ('beta', NULL)",
    "dict_string IN ('gamma', 'alpha')",
]


@pytest.mark.parametrize("predicate", FILTERS)
def test_filters_match_pylance(tmp_path, predicate):
    uri = str(tmp_path / "ds.lance")
    t = _table()
    lance.write_dataset(t, uri, max_rows_per_file=2000)
    ref, ours = lance.dataset(uri), lance_core.dataset(uri)
    expected = ref.to_table(filter=predicate)
    assert_same(ours.to_table(filter=predicate), expected, predicate)
    assert ours.count_rows(filter=predicate) == ref.count_rows(filter=predicate) == expected.num_rows
    cols = ["seq_int64", "string"]
    assert_same(ours.to_table(columns=cols, filter=predicate), ref.to_table(columns=cols, filter=predicate), predicate + " (subset)")


@pytest.mark.parametrize("count", [1, 3, 12])
def test_string_in_lists_of_values_found_in_the_data(tmp_path, count):
    """IN lists on strings of every length (short ones compared as words, long ones byte
    by byte, many values through a hash set) match pylance."""
    uri = str(tmp_path / "ds.lance")
    n = 5000
    vals = [None if i % 11 == 0 else ("long-prefix-" * (i % 4)) + f"v{i % 300}" for i in range(n)]
    lance.write_dataset(pa.table({"i": pa.array(range(n)), "s": pa.array(vals), "b": pa.array(vals, pa.large_binary())}), uri)
    ref, ours = lance.dataset(uri), lance_core.dataset(uri)
    wanted = sorted({v for v in vals if v is not None})[::7][:count]
    quoted = ", ".join(f"'{w}'" for w in wanted)
    for predicate in [f"s IN ({quoted})", f"s NOT IN ({quoted})", f"s IN ({quoted}, NULL)"]:
        assert_same(ours.to_table(filter=predicate), ref.to_table(filter=predicate), predicate)
    assert ours.to_table(filter=f"s IN ({quoted})").num_rows > 0


def test_filter_with_limit_offset_and_row_ids(tmp_uri):
    lance.write_dataset(_table(), tmp_uri, max_rows_per_file=1000)
    lance.dataset(tmp_uri).delete("seq_int64 % 7 = 0")
    ref, ours = lance.dataset(tmp_uri), lance_core.dataset(tmp_uri)
    for limit, offset in [(10, 0), (10, 25), (500, 1200), (None, 2500)]:
        kw = dict(filter="small_int32 < 50", limit=limit, offset=offset, with_row_address=True)
        assert_same(ours.to_table(**kw), ref.to_table(**kw), f"{limit}/{offset}")


def test_fractional_literal_against_integers(tmp_uri):
    """pylance refuses `int_col > 2.5`; we compare as doubles, as SQL would."""
    lance.write_dataset(pa.table({"i": pa.array(range(6), pa.int32())}), tmp_uri)
    assert lance_core.dataset(tmp_uri).to_table(filter="i > 2.5")["i"].to_pylist() == [3, 4, 5]


def test_bad_filters_are_clear_errors(tmp_uri):
    lance.write_dataset(_table(100), tmp_uri)
    ds = lance_core.dataset(tmp_uri)
    with pytest.raises(lance_core.InvalidInputError, match="cannot use filter"):
        ds.to_table(filter="int64 >")
    with pytest.raises(lance_core.InvalidInputError, match="'nope', which is not a column"):
        ds.to_table(filter="nope = 1")
    with pytest.raises(lance_core.InvalidInputError, match="cannot use"):
        ds.to_table(filter="date32 = 'not a date'")


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_deletes_read_by_pylance(tmp_path, version):
    uri = str(tmp_path / "ds.lance")
    n = 30000
    t = pa.table({"id": pa.array(np.arange(n)), "s": pa.array([f"s{i % 100}" for i in range(n)]),
                  "st": pa.array([{"x": i % 10} for i in range(n)])})
    lance_core.write_dataset(t, uri, max_rows_per_file=10000, data_storage_version=version)
    ds = lance_core.dataset(uri)
    ds.delete("id % 10 = 3")            # sparse: Arrow deletion files
    ds.delete("id >= 10000 AND id < 16000")  # 6000 more in fragment 1: a roaring bitmap
    ds.delete("id < 10000 AND s = 's5'")     # merged with fragment 0's earlier deletions
    ds.delete("id >= 20000")                 # fragment 2 disappears
    assert ds.version == 5
    files = os.listdir(os.path.join(uri, "_deletions"))
    assert any(f.endswith(".arrow") for f in files) and any(f.endswith(".bin") for f in files)
    ref = lance.dataset(uri)
    ids = np.arange(n)
    keep = (ids % 10 != 3) & ~((ids >= 10000) & (ids < 16000)) & ~((ids < 10000) & (ids % 100 == 5)) & (ids < 20000)
    expected = t.filter(pa.array(keep))
    assert_same(ref.to_table(), expected, "pylance reads our deletes")
    assert_same(ds.to_table(), expected, "we read our deletes")
    assert ref.count_rows() == ds.count_rows() == int(keep.sum())
    assert [f.fragment_id for f in ref.get_fragments()] == [0, 1]
    # A delete that matches nothing still makes a version, as in pylance.
    ds.delete("id < 0")
    assert lance.dataset(uri).version == 6
    # pylance can keep deleting on top of ours, and we read its deletions.
    ref = lance.dataset(uri)
    ref.delete("id = 1")
    assert lance_core.dataset(uri).count_rows() == int(keep.sum()) - 1


def test_delete_on_a_pylance_dataset_with_stable_row_ids(tmp_uri):
    lance.write_dataset(pa.table({"id": pa.array(range(1000))}), tmp_uri, enable_stable_row_ids=True)
    ds = lance_core.dataset(tmp_uri)
    ds.delete("id < 10")
    ref = lance.dataset(tmp_uri)
    assert_same(ds.to_table(with_row_id=True), ref.to_table(with_row_id=True), "row ids after our delete")


def _mixed_selectivity_table():
    """30 fragments of 200 rows: in blocks of three, the filter `k < 5` passes 1 row of a
    fragment, then none, then all 200, so a late-materialized read switches between
    taking rows and reading fragments whole, and reads ahead of both."""
    ks = []
    for f in range(30):
        kind = f % 3
        ks += [0 if (kind == 0 and i == 7) or kind == 2 else 10 + i for i in range(200)]
    n = len(ks)
    return pa.table({"id": pa.array(range(n), pa.int64()), "k": pa.array(ks, pa.int32()),
                     "s": pa.array([f"row-{i}" for i in range(n)])})


MIXED_READS = [dict(), dict(limit=5), dict(limit=300, offset=150), dict(offset=199), dict(offset=201, limit=1),
               dict(limit=1000, offset=1001), dict(offset=5000), dict(columns=["s"]), dict(with_row_id=True, limit=450)]


def test_late_materialization_mixed_selectivity(tmp_uri):
    lance.write_dataset(_mixed_selectivity_table(), tmp_uri, max_rows_per_file=200)
    lance.dataset(tmp_uri).delete("id % 13 = 0")
    ref, ours = lance.dataset(tmp_uri), lance_core.dataset(tmp_uri)
    for kw in MIXED_READS:
        assert_same(ours.to_table(filter="k < 5", **kw), ref.to_table(filter="k < 5", **kw), str(kw))
