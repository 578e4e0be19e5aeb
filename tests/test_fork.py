"""A process forked after using lance_core (multiprocessing's default start method on
Linux) reads, filters and writes in the child: the worker threads are made again there."""

from __future__ import annotations

import multiprocessing

import pyarrow as pa

import lance_core


def _child_work(uri: str) -> int:
    n = lance_core.dataset(uri).to_table(filter="a >= 10").num_rows
    lance_core.write_dataset(pa.table({"a": [-1], "s": ["child"]}), uri, mode="append")
    return n


def test_forked_child_reads_and_writes(tmp_path):
    uri = str(tmp_path / "t.lance")
    lance_core.write_dataset(pa.table({"a": list(range(200_000)), "s": [str(i) for i in range(200_000)]}), uri)
    # The parent's pools are running before the fork.
    assert lance_core.dataset(uri).to_table(filter="a < 10").num_rows == 10
    with multiprocessing.get_context("fork").Pool(2) as pool:
        result = pool.map_async(_child_work, [uri])
        assert result.get(timeout=120) == [199_990]
    ds = lance_core.dataset(uri)
    assert ds.count_rows() == 200_001 and ds.to_table(filter="s = 'child'").num_rows == 1
