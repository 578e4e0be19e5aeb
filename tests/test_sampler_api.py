"""`lance_core.sampler` against pylance 14's `lance.sampler`: for the same dataset and
seeds both pick the same rows, in the same batches and order, and return the same types;
errors are raised where pylance raises them."""

from __future__ import annotations

import random
import subprocess
import sys
import warnings

import lance
import lance.sampler as ref
import numpy as np
import pyarrow as pa
import pytest

import lance_core
import lance_core.sampler as ours


def _write(path, rows=1000, max_rows_per_file=300, delete=None):
    table = pa.table({
        "id": pa.array(range(rows), pa.int64()),
        "value": pa.array(np.arange(rows, dtype=np.float64) / 7),
        "text": [f"text_{i}" for i in range(rows)],
        "maybe": pa.array([None if i % 7 == 0 else float(i) for i in range(rows)]),
    })
    lance.write_dataset(table, path, max_rows_per_file=max_rows_per_file)
    if delete:
        lance.dataset(path).delete(delete)
    return str(path)


@pytest.fixture
def uri(tmp_path):
    return _write(tmp_path / "plain.lance")


@pytest.fixture
def uri_with_deletions(tmp_path):
    return _write(tmp_path / "deleted.lance", delete="id >= 100 AND id < 150 OR id % 11 = 3")


def _both(path):
    return lance_core.dataset(path), lance.dataset(path)


def _same_batches(mine, theirs, what=""):
    mine, theirs = list(mine), list(theirs)
    assert [b.num_rows for b in mine] == [b.num_rows for b in theirs], what
    for i, (a, b) in enumerate(zip(mine, theirs)):
        assert isinstance(a, pa.RecordBatch), what
        assert a.schema.names == b.schema.names, f"{what}: batch {i}"
        assert a.equals(b), f"{what}: batch {i} differs"
    return mine


def _same_rows(mine, theirs, what=""):
    mine, theirs = list(mine), list(theirs)
    assert pa.Table.from_batches(mine).equals(pa.Table.from_batches(theirs)), what
    return mine


# ---------------------------------------------------------------------------------------
# ShardedFixedBatchSampler as a torch batch_sampler
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("total,world,batch", [(1000, 4, 250), (1000, 4, 100), (500, 2, 128), (100, 1, 250),
                                               (2, 4, 10), (4, 2, 1), (5, 1, 3), (1003, 3, 64), (0, 3, 8)])
@pytest.mark.parametrize("randomize", [False, True])
def test_fixed_batch_offsets_match_pylance(total, world, batch, randomize):
    for rank in range(world):
        kw = dict(rank=rank, world_size=world, batch_size=batch, total_num_rows=total, randomize=randomize, seed=11)
        mine, theirs = ours.ShardedFixedBatchSampler(**kw), ref.ShardedFixedBatchSampler(**kw)
        assert len(mine) == len(theirs)
        for epoch in (0, 1, 5):
            mine.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(mine) == list(theirs), (kw, epoch)


def test_fixed_batch_blocks_cover_every_row_once():
    seen = []
    for rank in range(3):
        for batch in ours.ShardedFixedBatchSampler(rank, 3, randomize=True, seed=2, batch_size=7,
                                                    total_num_rows=100):
            assert batch == list(range(batch[0], batch[0] + len(batch)))
            seen.extend(batch)
    assert sorted(seen) == list(range(100))


def test_fixed_batch_defaults_and_zero_batch_size():
    assert len(ours.ShardedFixedBatchSampler(0, 4)) == len(ref.ShardedFixedBatchSampler(0, 4)) == 0
    assert list(ours.ShardedFixedBatchSampler(0, 4)) == []
    for module in (ours, ref):
        with pytest.raises(ZeroDivisionError):
            module.ShardedFixedBatchSampler(0, 2, batch_size=0, total_num_rows=10)


def test_randomized_epochs_differ():
    sampler = ours.ShardedFixedBatchSampler(0, 4, randomize=True, seed=42, batch_size=25, total_num_rows=2000)
    sampler.set_epoch(1)
    first = list(sampler)
    sampler.set_epoch(2)
    assert list(sampler) != first
    sampler.set_epoch(1)
    assert list(sampler) == first


# ---------------------------------------------------------------------------------------
# ShardedBatchSampler (and the dataset call of ShardedFixedBatchSampler)
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("cls", ["ShardedBatchSampler", "ShardedFixedBatchSampler"])
@pytest.mark.parametrize("randomize", [False, True])
@pytest.mark.parametrize("batch_size", [7, 70, 333, 5000])
def test_unfiltered_batches_match_pylance(uri_with_deletions, cls, randomize, batch_size):
    """Runs of row offsets (deleted rows skipped), one batch per run, as a reader."""
    mine_ds, ref_ds = _both(uri_with_deletions)
    for rank in range(3):
        mine = getattr(ours, cls)(rank, 3, randomize=randomize, seed=9)(mine_ds, batch_size=batch_size,
                                                                         columns=["id", "text"])
        theirs = getattr(ref, cls)(rank, 3, randomize=randomize, seed=9)(ref_ds, batch_size=batch_size,
                                                                          columns=["id", "text"])
        assert isinstance(mine, pa.RecordBatchReader) and isinstance(theirs, pa.RecordBatchReader)
        assert mine.schema == theirs.schema
        _same_batches(mine, theirs, f"rank {rank}")


def test_unfiltered_all_columns_and_shards_partition(uri):
    mine_ds, ref_ds = _both(uri)
    ids = []
    for rank in range(4):
        got = _same_batches(ours.ShardedBatchSampler(rank, 4)(mine_ds, batch_size=64),
                            ref.ShardedBatchSampler(rank, 4)(ref_ds, batch_size=64), f"rank {rank}")
        assert all(b.schema.names == ["id", "value", "text", "maybe"] for b in got)
        ids.extend(i for b in got for i in b["id"].to_pylist())
    assert sorted(ids) == list(range(1000))


@pytest.mark.parametrize("randomize", [False, True])
@pytest.mark.parametrize("batch_size", [1, 30, 100, 250, 2000])
def test_filtered_batches_match_pylance(uri_with_deletions, randomize, batch_size):
    """Every world_size-th matching row from the rank-th, in batch_size batches, shuffled
    with seed + epoch when randomized; a generator, as pylance's."""
    mine_ds, ref_ds = _both(uri_with_deletions)
    for rank in range(3):
        for epoch in (0, 3):
            mine, theirs = ours.ShardedBatchSampler(rank, 3, randomize, 5), ref.ShardedBatchSampler(rank, 3, randomize, 5)
            mine.set_epoch(epoch)
            theirs.set_epoch(epoch)
            out_mine = mine(mine_ds, batch_size=batch_size, filter="id % 3 != 1", columns=["id", "value"])
            out_theirs = theirs(ref_ds, batch_size=batch_size, filter="id % 3 != 1", columns=["id", "value"])
            assert not isinstance(out_mine, pa.RecordBatchReader)
            _same_batches(out_mine, out_theirs, f"rank {rank} epoch {epoch}")


def test_filtered_shards_keep_every_nth_matching_row(uri):
    ds = lance_core.dataset(uri)
    matching = [i for i in range(1000) if i < 500]
    for rank in range(4):
        got = [i for b in ours.ShardedFixedBatchSampler(rank, 4)(ds, batch_size=100, filter="id < 500",
                                                                 columns=["id"]) for i in b["id"].to_pylist()]
        assert got == matching[rank::4]


def test_with_row_id_warns_without_filter_and_is_ignored(uri):
    mine_ds, ref_ds = _both(uri)
    with pytest.warns(UserWarning, match="with_row_id"):
        mine = list(ours.ShardedBatchSampler(0, 2)(mine_ds, batch_size=300, with_row_id=True))
    with pytest.warns(UserWarning, match="with_row_id"):
        theirs = list(ref.ShardedBatchSampler(0, 2)(ref_ds, batch_size=300, with_row_id=True))
    _same_batches(mine, theirs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # With a filter it is ignored silently, in both.
        _same_batches(ours.ShardedBatchSampler(1, 2)(mine_ds, batch_size=64, filter="id > 10", with_row_id=True),
                      ref.ShardedBatchSampler(1, 2)(ref_ds, batch_size=64, filter="id > 10", with_row_id=True))


def test_sharded_batch_sampler_errors(uri):
    mine_ds, ref_ds = _both(uri)
    with pytest.raises(ValueError):
        ref.ShardedBatchSampler(0, 1)(ref_ds, columns=["nope"])
    with pytest.raises(ValueError):
        ours.ShardedBatchSampler(0, 1)(mine_ds, columns=["nope"])
    for module, ds in ((ours, mine_ds), (ref, ref_ds)):
        with pytest.raises(ValueError):
            module.ShardedBatchSampler(0, 1)(ds, batch_size=0)
    with pytest.raises(TypeError):
        len(ours.ShardedBatchSampler(0, 1))


def test_samplers_keep_global_random_state(uri):
    ds = lance_core.dataset(uri)
    random.seed(123)
    before = random.getstate()
    list(ours.ShardedBatchSampler(0, 2, randomize=True, seed=1)(ds, batch_size=50))
    list(ours.ShardedBatchSampler(0, 2, randomize=True, seed=1)(ds, batch_size=50, filter="id > 3"))
    list(ours.ShardedFragmentSampler(0, 2, randomize=True, seed=1)(ds))
    list(ours.ShardedFixedBatchSampler(0, 2, randomize=True, seed=1, batch_size=5, total_num_rows=50))
    assert random.getstate() == before


# ---------------------------------------------------------------------------------------
# Fragment samplers
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("randomize", [False, True])
@pytest.mark.parametrize("world", [1, 2, 3, 5])
def test_sharded_fragments_match_pylance(tmp_path, randomize, world):
    path = _write(tmp_path / "frags.lance", rows=1000, max_rows_per_file=90)
    mine_ds, ref_ds = _both(path)
    ids = []
    for rank in range(world):
        mine_sampler = ours.ShardedFragmentSampler(rank, world, randomize=randomize, seed=3)
        ref_sampler = ref.ShardedFragmentSampler(rank, world, randomize=randomize, seed=3)
        assert ([f.fragment_id for f in mine_sampler.iter_fragments(mine_ds)]
                == [f.fragment_id for f in ref_sampler.iter_fragments(ref_ds)])
        got = _same_batches(mine_sampler(mine_ds, batch_size=32, columns=["id", "text"], with_row_id=True),
                            ref_sampler(ref_ds, batch_size=32, columns=["id", "text"], with_row_id=True),
                            f"rank {rank}")
        assert all(b.schema.names == ["id", "text", "_rowid"] for b in got)
        ids.extend(i for b in got for i in b["id"].to_pylist())
    assert sorted(ids) == list(range(1000))


def test_fragment_samplers_with_filter_and_deletions(uri_with_deletions):
    """Same rows in the same order (batch boundaries of a filtered or deleted-row scan are
    the scanner's business, so only the rows are compared here)."""
    mine_ds, ref_ds = _both(uri_with_deletions)
    _same_rows(ours.FullScanSampler()(mine_ds, batch_size=50, filter="value > 20"),
               ref.FullScanSampler()(ref_ds, batch_size=50, filter="value > 20"))
    for rank in range(2):
        _same_rows(ours.ShardedFragmentSampler(rank, 2, True, 8)(mine_ds, batch_size=50, filter="id % 2 = 0"),
                   ref.ShardedFragmentSampler(rank, 2, True, 8)(ref_ds, batch_size=50, filter="id % 2 = 0"))


def test_full_scan_sampler_matches_pylance(uri):
    mine_ds, ref_ds = _both(uri)
    _same_batches(ours.FullScanSampler()(mine_ds, batch_size=64, columns=["id", "maybe"]),
                  ref.FullScanSampler()(ref_ds, batch_size=64, columns=["id", "maybe"]))


def test_custom_fragment_sampler(uri):
    """A subclass only says which fragments, in which order."""

    def reversed_sampler(module):
        class Reversed(module.FragmentSampler):
            def iter_fragments(self, ds, **kwargs):
                yield from reversed(ds.get_fragments())
        return Reversed()

    mine_ds, ref_ds = _both(uri)
    got = _same_batches(reversed_sampler(ours)(mine_ds, batch_size=100, columns=["id"]),
                        reversed_sampler(ref)(ref_ds, batch_size=100, columns=["id"]))
    assert got[0]["id"][0].as_py() == 900


def test_abstract_samplers_cannot_be_instantiated():
    for module in (ours, ref):
        with pytest.raises(TypeError):
            module.Sampler()
        with pytest.raises(TypeError):
            module.FragmentSampler()


# ---------------------------------------------------------------------------------------
# maybe_sample and reservoir_sampling
# ---------------------------------------------------------------------------------------

def _seeded_sample(module, ds, *args, **kwargs):
    np.random.seed(17)
    random.seed(17)
    return list(module.maybe_sample(ds, *args, **kwargs))


@pytest.mark.parametrize("args,kwargs", [
    ((128, ["value"]), {}),  # distinct random rows
    ((128, "id"), {"batch_size": 50}),
    ((128, ["value", "id"]), {"max_takes": 32}),  # runs of rows, one per chunk
    ((700, ["id"]), {"max_takes": 64, "batch_size": 100}),
    ((700, ["id", "text"]), {"max_takes": 7, "batch_size": 100}),
    ((999, ["id"]), {"max_takes": 333, "batch_size": 300}),
    ((1000, ["id"]), {"batch_size": 300}),  # everything: a plain scan
    ((5000, ["id"]), {"batch_size": 300, "filt": "id > 100"}),
    ((100, ["maybe"]), {"batch_size": 10, "max_takes": 2, "filt": "maybe is not null"}),
    ((100, ["maybe"]), {"batch_size": 30, "max_takes": 20, "filt": "maybe IS NOT NULL"}),
    ((600, ["maybe"]), {"batch_size": 256, "max_takes": 20, "filt": "maybe is not null"}),
])
def test_maybe_sample_matches_pylance(uri, args, kwargs):
    mine_ds, ref_ds = _both(uri)
    _same_batches(_seeded_sample(ours, mine_ds, *args, **kwargs), _seeded_sample(ref, ref_ds, *args, **kwargs),
                  f"{args} {kwargs}")


def test_maybe_sample_with_deletions_and_from_a_path(uri_with_deletions):
    mine_ds, ref_ds = _both(uri_with_deletions)
    # 16 runs of 200 // 16 rows: 192 rows, as in pylance.
    for kwargs, rows in (({}, 200), ({"max_takes": 16}, 192)):
        got = _same_batches(_seeded_sample(ours, uri_with_deletions, 200, ["id"], **kwargs),
                            _seeded_sample(ref, ref_ds, 200, ["id"], **kwargs))
        assert sum(b.num_rows for b in got) == rows
    got = _seeded_sample(ours, mine_ds, 100, ["id"])
    ids = got[0]["id"].to_pylist()
    assert len(set(ids)) == 100 and not any(100 <= i < 150 or i % 11 == 3 for i in ids)


def test_maybe_sample_fixed_size_lists(tmp_path):
    rows = 10240 + 97
    vectors = pa.FixedSizeListArray.from_arrays(np.random.random(rows * 8).astype("f"), 8)
    path = str(tmp_path / "vec.lance")
    lance.write_dataset(pa.table({"vec": vectors}), path)
    mine_ds, ref_ds = _both(path)
    for kwargs in ({}, {"max_takes": 32}):
        got = _same_batches(_seeded_sample(ours, mine_ds, 128, ["vec"], **kwargs),
                            _seeded_sample(ref, ref_ds, 128, ["vec"], **kwargs))
        assert len(got) == 1 and got[0].schema == pa.schema([pa.field("vec", vectors.type)])


def test_maybe_sample_unsupported_filter(uri):
    mine_ds, ref_ds = _both(uri)
    for module, ds in ((ours, mine_ds), (ref, ref_ds)):
        for columns, filt in ((["maybe", "id"], "maybe is not null"), (["id"], "id > 3")):
            with pytest.raises(NotImplementedError, match="in-memory"):
                _seeded_sample(module, ds, 100, columns, filt=filt)


def test_reservoir_sampling():
    picked = ours.reservoir_sampling(iter(range(1000)), 10)
    assert len(picked) == 10 and len(set(picked)) == 10 and set(picked) <= set(range(1000))
    assert sorted(ours.reservoir_sampling(range(5), 10)) == [0, 1, 2, 3, 4]
    assert ours.reservoir_sampling([], 3) == []
    item = ours.PrioritizedItem(1, object())
    assert item < ours.PrioritizedItem(2, object()) and item == ours.PrioritizedItem(1, "other")


# ---------------------------------------------------------------------------------------
# The module itself
# ---------------------------------------------------------------------------------------

def test_public_names_match_pylance():
    public = {n for n in dir(ref) if not n.startswith("_") and callable(getattr(ref, n))
              and getattr(getattr(ref, n), "__module__", None) == ref.__name__}
    assert public <= set(dir(ours)), public - set(dir(ours))
    assert set(ref.__all__) <= set(ours.__all__)
    for name in ("ShardedFragmentSampler", "ShardedBatchSampler", "ShardedFixedBatchSampler"):
        assert callable(getattr(ours, name).from_torch)


def test_does_not_import_pylance():
    code = ("import sys, lance_core.sampler as s, lance_core; "
            "assert not any(m == 'lance' or m.startswith('lance.') for m in sys.modules), 'pylance imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
