"""Exact nearest-neighbour search (`nearest=`), against numpy brute force and pylance on the
same datasets: every metric and vector type, filters before and after, several queries at
once, offsets and limits, deletions and stable row ids, and bad queries."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_core
from lance_core.errors import InvalidInputError

DIM = 24
ROWS = 3000


def _vectors(values: np.ndarray, dtype, null_rows=()) -> pa.FixedSizeListArray:
    flat = pa.array(values.astype(dtype).ravel())
    mask = None
    if null_rows:
        m = np.zeros(len(values), bool)
        m[[r for r in null_rows if r < len(values)]] = True
        mask = pa.array(m)
    return pa.FixedSizeListArray.from_arrays(flat, values.shape[1], mask=mask)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    floats = rng.standard_normal((ROWS, DIM)).astype(np.float32)
    bytes_ = rng.integers(0, 256, (ROWS, 8)).astype(np.uint8)
    return floats, bytes_


def _table(floats, bytes_):
    return pa.table({
        "id": np.arange(len(floats)),
        "cat": pa.array([f"c{i % 7}" for i in range(len(floats))]),
        "f32": _vectors(floats, np.float32, null_rows=(11, 2500)),
        "f16": _vectors(floats, np.float16),
        "f64": _vectors(floats, np.float64),
        "u8": _vectors(bytes_, np.uint8),
    })


@pytest.fixture(scope="module", params=[False, True], ids=["addresses", "stable_row_ids"])
def dataset(request, tmp_path_factory, data):
    """Three fragments written by pylance, with some rows deleted."""
    path = str(tmp_path_factory.mktemp("vec") / "t.lance")
    lance.write_dataset(_table(*data), path, max_rows_per_file=1000, enable_stable_row_ids=request.param)
    lance.dataset(path).delete("id % 10 = 3")
    return path


def _brute_force(data, column, q, metric, k):
    """numpy's answer: the ids and distances of the k nearest live rows (ties by id, which
    orders like the row id here)."""
    floats, bytes_ = data
    ids = np.arange(ROWS)
    live = ids % 10 != 3
    if column == "f32":
        live &= ~np.isin(ids, [11, 2500])
    if column == "u8":
        d = np.unpackbits(bytes_ ^ np.asarray(q, np.uint8), axis=1).sum(1).astype(np.float64)
    else:
        dtype = {"f16": np.float16, "f32": np.float32, "f64": np.float64}[column]
        x = floats.astype(dtype).astype(np.float64)
        qq = np.asarray(q).astype(dtype).astype(np.float64)
        dot = x @ qq
        if metric == "l2":
            d = ((x - qq) ** 2).sum(1)
        elif metric == "dot":
            d = 1 - dot
        else:
            d = 1 - dot / (np.linalg.norm(x, axis=1) * np.linalg.norm(qq))
    order = np.lexsort((ids[live], d[live]))[:k]
    return ids[live][order], d[live][order]


@pytest.mark.parametrize("column,metric", [("f32", "l2"), ("f32", "cosine"), ("f32", "dot"), ("f16", "l2"),
                                           ("f16", "cosine"), ("f64", "dot"), ("f64", "l2"), ("u8", "hamming"),
                                           ("u8", None)])
def test_exact_search_equals_numpy_brute_force(dataset, data, column, metric):
    rng = np.random.default_rng(abs(hash((column, metric))) % 1000)
    ds = lance_core.dataset(dataset)
    for _ in range(3):
        q = rng.integers(0, 256, 8) if column == "u8" else rng.standard_normal(DIM)
        nearest = {"column": column, "q": q, "k": 15}
        if metric is not None:
            nearest["metric"] = metric
        got = ds.to_table(nearest=nearest, columns=["id"])
        want_ids, want_d = _brute_force(data, column, q, metric or "hamming", 15)
        if column == "u8":
            # Hamming distances tie often: the same distances, and ties broken by row id.
            assert got["_distance"].to_pylist() == list(want_d)
            assert got["id"].to_pylist() == list(want_ids)
        else:
            assert got["id"].to_pylist() == list(want_ids)
            np.testing.assert_allclose(got["_distance"].to_numpy(), want_d, rtol=1e-4, atol=1e-4)
        assert got.schema.field("_distance").type == pa.float32()


def _same(ours: pa.Table, ref: pa.Table, what: str):
    assert ours.column_names == ref.column_names, what
    assert ours.schema.field(ours.column_names[0]).type == ref.schema.field(ref.column_names[0]).type, what
    for name in ref.column_names:
        if name == "_distance":
            np.testing.assert_allclose(ours[name].to_numpy(), ref[name].to_numpy(), rtol=1e-5, atol=1e-5,
                                       err_msg=what)
        else:
            assert ours[name].to_pylist() == ref[name].to_pylist(), f"{what}: column {name}"


def test_results_and_their_shape_equal_pylances(dataset, data):
    floats, _ = data
    ours, ref = lance_core.dataset(dataset), lance.dataset(dataset)
    q = floats[42] + 0.05
    cases = [
        dict(nearest={"column": "f32", "q": q}),
        dict(nearest={"column": "f32", "q": q, "k": 7}, columns=["id", "cat"]),
        dict(nearest={"column": "f32", "q": q, "k": 7}, columns=["_distance", "id"]),
        dict(nearest={"column": "f32", "q": q, "k": 7}, columns=["id"], with_row_id=True),
        dict(nearest={"column": "f32", "q": q, "k": 7, "metric": "cosine"}, columns=["id"], limit=3, offset=2),
        dict(nearest={"column": "f32", "q": q, "k": 20}, columns=["id"], filter="cat = 'c2'"),
        dict(nearest={"column": "f32", "q": q, "k": 20}, columns=["id"], filter="cat = 'c2'", prefilter=True),
        dict(nearest={"column": "f32", "q": q, "k": 20, "distance_range": (40.0, None)}, columns=["id"]),
        dict(nearest={"column": "f32", "q": q, "k": 20, "distance_range": (None, 45.0)}, columns=["id"]),
        dict(nearest={"column": "f32", "q": q, "k": 5000}, columns=["id"]),
        dict(nearest={"column": "f32", "q": q}, columns=["id"], limit=25, offset=3),
        dict(nearest={"column": "f64", "q": floats[[1, 2, 3]], "k": 4}, columns=["id"]),
        dict(nearest={"column": "f64", "q": floats[[1, 2, 3]], "k": 4}, columns=["id"], limit=5, offset=2,
             with_row_id=True),
        dict(nearest={"column": "f32", "q": list(map(float, q)), "k": 3}, columns=["id"],
             disable_scoring_autoprojection=True),
        dict(nearest={"column": "f16", "q": pa.array(q, pa.float32()), "k": 5, "metric": "dot"},
             columns=["id"], filter="id > 1000", prefilter=True),
    ]
    for case in cases:
        what = repr({k: v for k, v in case.items() if k != "nearest"} | {"nearest": {
            k: v for k, v in case["nearest"].items() if k != "q"}})
        _same(ours.to_table(**case), ref.to_table(**case), what)


def test_scanners_batches_and_plans(dataset, data):
    floats, _ = data
    ds = lance_core.dataset(dataset)
    nearest = {"column": "f32", "q": floats[7], "k": 30}
    batches = list(ds.to_batches(nearest=nearest, columns=["id"], batch_size=4))
    assert sum(b.num_rows for b in batches) == 30
    scanner = ds.scanner(nearest=nearest, columns=["id"], filter="cat = 'c1'", prefilter=True)
    assert scanner.projected_schema.names == ["id", "_distance"]
    assert "KNNVectorDistance" in scanner.explain_plan() and "prefilter" in scanner.explain_plan()
    got = scanner.to_table()
    assert set(got["id"].to_pylist()) <= set(range(1, ROWS, 7))
    assert got.num_rows == 30


def test_a_search_after_changes_sees_the_current_rows(tmp_path, data):
    """Appends, deletes and updates (by pylance) change what the search finds."""
    floats, bytes_ = data
    path = str(tmp_path / "t.lance")
    lance.write_dataset(_table(floats[:1000], bytes_[:1000]), path)
    q = floats[500]
    assert lance_core.dataset(path).to_table(nearest={"column": "f32", "q": q, "k": 1}, columns=["id"])[
        "id"].to_pylist() == [500]
    lance.dataset(path).delete("id = 500")
    extra = _table(floats[1000:1200], bytes_[1000:1200])
    extra = extra.set_column(0, "id", pa.array(np.arange(1000, 1200)))
    lance.write_dataset(extra, path, mode="append")
    ours = lance_core.dataset(path).to_table(nearest={"column": "f32", "q": floats[1100], "k": 3}, columns=["id"])
    ref = lance.dataset(path).to_table(nearest={"column": "f32", "q": floats[1100], "k": 3}, columns=["id"])
    assert ours["id"].to_pylist() == ref["id"].to_pylist()
    assert ours["id"][0].as_py() == 1100
    assert 500 not in lance_core.dataset(path).to_table(nearest={"column": "f32", "q": q, "k": 5}, columns=["id"])[
        "id"].to_pylist()


@pytest.mark.parametrize("nearest,message", [
    ({"column": "nope", "q": [0.0] * DIM}, "column 'nope' is not in the dataset"),
    ({"column": "id", "q": [0.0] * DIM}, "column 'id' is Int64, not a vector column"),
    ({"column": "f32", "q": [0.0] * 5}, "the query has 5 dimensions, column 'f32' has 24"),
    ({"column": "f32", "q": [0.0] * DIM, "k": 0}, "k must be an integer greater than 0"),
    ({"column": "f32", "q": [float("nan")] * DIM}, "every value must be a finite number"),
    ({"column": "f32", "q": [0.0] * DIM, "metric": "hamming"}, "metric hamming does not apply to column 'f32'"),
    ({"column": "u8", "q": [0] * 8, "metric": "l2"}, "metric l2 does not apply to column 'u8'"),
    ({"column": "u8", "q": [300] * 8}, "integers 0..=255"),
    ({"column": "f32", "q": [0.0] * DIM, "metric": "manhattan"}, "metric 'manhattan' is not supported"),
    ({"column": "f32", "q": [[0.0] * DIM, [0.0] * 3]}, "different lengths"),
    ({"column": "f32", "q": "abc"}, "q must be a vector"),
    ({"column": "f32"}, "q (the query vector) is missing"),
])
def test_bad_queries_are_clear_errors(dataset, nearest, message):
    ds = lance_core.dataset(dataset)
    with pytest.raises(InvalidInputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ds.to_table(nearest=nearest)


def test_an_unknown_key_is_a_type_error(dataset):
    with pytest.raises(TypeError, match="unexpected key 'bogus'"):
        lance_core.dataset(dataset).to_table(nearest={"column": "f32", "q": [0.0] * DIM, "bogus": 1})
