"""Samplers over a dataset (pylance's `lance.sampler`).

Two families live here:

- `maybe_sample` draws about `n` random rows from a dataset, e.g. to train an index;
  `reservoir_sampling` keeps `k` random items of a stream.
- `Sampler` subclasses decide which record batches a process of a data-parallel job
  reads: whole fragments (`FullScanSampler`, `ShardedFragmentSampler`), or runs of
  `batch_size` rows (`ShardedBatchSampler`); `ShardedFixedBatchSampler` also yields
  lists of row offsets, as a torch `batch_sampler`.

The random choices follow pylance's exactly: `maybe_sample` draws from the global
`numpy.random` and `random` states (seed them to repeat a sample), and the samplers
shuffle with a `random.Random` seeded as pylance seeds the global one, so one seed picks
the same rows, in the same batches and order, with either library. Unlike pylance, the
samplers leave the global `random` state alone.
"""

from __future__ import annotations

import gc
import math
import os
import random
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from heapq import heappush, heappushpop
from pathlib import Path
from typing import Dict, Generic, Iterable, Iterator, List, Optional, Tuple, TypeVar, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .dataset import LanceDataset, LanceFragment, dataset
from .log import LOGGER

__all__ = [
    "maybe_sample",
    "reservoir_sampling",
    "PrioritizedItem",
    "Sampler",
    "FragmentSampler",
    "FullScanSampler",
    "ShardedFragmentSampler",
    "ShardedBatchSampler",
    "ShardedFixedBatchSampler",
]

Columns = Optional[Union[List[str], Dict[str, str]]]
T = TypeVar("T")


def _open(data: Union[str, Path, "LanceDataset"]) -> "LanceDataset":
    if isinstance(data, (str, Path)):
        return dataset(os.fspath(data))
    return data


def _one_batch(parts: Union[pa.Table, List[pa.RecordBatch]]) -> pa.RecordBatch:
    """`parts` (a table or non-empty list of batches) as a single record batch."""
    table = parts if isinstance(parts, pa.Table) else pa.Table.from_batches(parts)
    return table.combine_chunks().to_batches()[0]


# --------------------------------------------------------------------------------------
# maybe_sample
# --------------------------------------------------------------------------------------


def _sample_by_chunks(ds: "LanceDataset", n: int, columns: Columns, batch_size: int,
                      max_takes: int) -> Iterator[pa.RecordBatch]:
    """About `n` rows as at most `max_takes` contiguous runs, one per equal chunk of the
    dataset, each run starting at a random place in its chunk. Runs are gathered until
    there are `batch_size` rows or more, which go out as one batch."""
    total = len(ds)
    chunk = total // max_takes
    per_chunk = n // max_takes
    pending: List[pa.RecordBatch] = []
    pending_rows = 0
    taken = 0
    for number, chunk_start in enumerate(range(0, total, chunk)):
        if taken >= n:
            break
        taken += per_chunk
        chunk_len = min(chunk, total - chunk_start)
        run_len = min(per_chunk, chunk_len)
        start = chunk_start
        if run_len < chunk_len:
            start += np.random.randint(0, chunk_len - run_len)
        run = ds.take(list(range(start, start + run_len)), columns=columns)
        pending.extend(run.to_batches())
        pending_rows += run.num_rows
        if number % 50 == 0:
            LOGGER.info("sampled %s rows at offset %s", per_chunk, start)
        if pending_rows >= batch_size:
            yield _one_batch(pending)
            pending, pending_rows = [], 0
    if pending:
        yield _one_batch(pending)


def _sample_not_null(ds: "LanceDataset", n: int, columns: List[str], batch_size: int,
                     target_takes: int, filt: str) -> Iterator[pa.RecordBatch]:
    """`n` rows that pass `filt` (only "<column> IS NOT NULL" on the one column read is
    understood), read as shards of ceil(n / target_takes) rows in a random order.

    The batching bookkeeping, including its quirks (a shard larger than the batch left
    over after a yield is carried, not flushed, and what is still held when `n` rows
    have been read is dropped), is pylance's, so a seed gives the same batches."""
    total = len(ds)
    shard_len = math.ceil(n / target_takes)
    order = list(range(math.ceil(total / shard_len)))
    random.shuffle(order)
    held: List[pa.Table] = []
    rows_left = n
    batch_room = min(batch_size, n)
    for shard in order:
        lo = shard * shard_len
        hi = min(lo + shard_len, total)
        table = ds.to_table(columns=columns, offset=lo, limit=hi - lo, batch_size=shard_len)
        if len(columns) == 1 and filt.lower() == f"{columns[0]} is not null".lower():
            table = pc.drop_null(table)
        else:
            raise NotImplementedError(f"Can't yet run filter <{filt}> in-memory")
        if table.num_rows == 0:
            continue
        if table.num_rows > rows_left:
            table = table.slice(0, rows_left)
        held.append(table)
        rows_left -= table.num_rows
        batch_room -= table.num_rows
        if batch_room <= 0:
            joined = pa.concat_tables(held).combine_chunks()
            yield _one_batch(joined.slice(0, batch_size))
            batch_room = min(batch_size, rows_left)
            held = []
            if joined.num_rows > batch_size:
                rest = joined.slice(batch_size)
                held.append(rest)
                batch_room -= rest.num_rows
        if rows_left <= 0:
            break


def maybe_sample(dataset: Union[str, Path, "LanceDataset"], n: int, columns: Union[List[str], str],
                 batch_size: int = 10240, max_takes: int = 2048,
                 filt: Optional[str] = None) -> Iterator[pa.RecordBatch]:
    """Yield record batches holding about `n` random rows of `columns` of `dataset` (a
    dataset or its uri).

    - `n` >= the number of rows: every row (that passes `filt`), in `batch_size` batches.
    - with `filt` (only "<column> IS NOT NULL" on a single column is supported): runs of
      consecutive rows, visited in a random order, until `n` rows passed.
    - `n` > `max_takes`: at most `max_takes` runs of consecutive rows, spread evenly over
      the dataset, to bound the number of random reads.
    - otherwise `n` distinct random rows, in batches of `batch_size`.

    The randomness comes from `numpy.random` and `random` (seed those to repeat a sample).
    """
    ds = _open(dataset)
    if isinstance(columns, str):
        columns = [columns]
    if n >= len(ds):
        yield from ds.to_batches(columns=columns, batch_size=batch_size, filter=filt)
    elif filt is not None:
        yield from _sample_not_null(ds, n, columns, batch_size, max_takes, filt)
    elif n > max_takes:
        yield from _sample_by_chunks(ds, n, columns, batch_size, max_takes)
    else:
        picked = np.random.choice(len(ds), n, replace=False)
        for lo in range(0, len(picked), batch_size):
            yield _one_batch(ds.take(picked[lo:lo + batch_size], columns=columns))


# --------------------------------------------------------------------------------------
# reservoir sampling
# --------------------------------------------------------------------------------------


@dataclass(order=True)
class PrioritizedItem(Generic[T]):
    """An item in a heap, ordered by `priority` alone."""

    priority: int
    item: T = field(compare=False)


def reservoir_sampling(stream: Iterable[T], k: int) -> List[T]:
    """Up to `k` items of `stream`, picked at random (unseeded), in no particular order."""
    rng = np.random.default_rng()
    kept: List[PrioritizedItem[T]] = []
    for count, item in enumerate(stream):
        entry = PrioritizedItem(int(rng.integers(0, k * 2)), item)
        if len(kept) < k:
            heappush(kept, entry)
        else:
            heappushpop(kept, entry)
        if count % 10240 == 0:
            # Items can be large batches; let dropped ones go promptly.
            gc.collect()
    return [entry.item for entry in kept]


# --------------------------------------------------------------------------------------
# Samplers
# --------------------------------------------------------------------------------------


def _torch_rank_and_world() -> Tuple[int, int]:
    import torch
    return torch.distributed.get_rank(), torch.distributed.get_world_size()


class Sampler(ABC):
    """Decides which record batches of a dataset a reader gets: calling it with a dataset
    (and scan options) gives an iterator of `pyarrow.RecordBatch`."""

    @abstractmethod
    def __call__(self, ds: "LanceDataset", *args, batch_size: int = 128, columns: Columns = None,
                 filter: Optional[str] = None, batch_readahead: int = 16, with_row_id: bool = False,
                 **kwargs) -> Iterator[pa.RecordBatch]:
        """The record batches of `ds` this sampler picks."""


class FragmentSampler(Sampler):
    """A sampler that picks whole fragments: subclasses say which, in which order, with
    `iter_fragments`; the batches are a scan of those fragments."""

    def __call__(self, dataset: "LanceDataset", *args, batch_size: int = 128, columns: Columns = None,
                 filter: Optional[str] = None, batch_readahead: int = 16, with_row_id: bool = False,
                 **kwargs) -> Iterator[pa.RecordBatch]:
        chosen = list(self.iter_fragments(dataset, *args, **kwargs))
        scanner = dataset.scanner(columns=columns, filter=filter, batch_size=batch_size,
                                  batch_readahead=batch_readahead, fragments=chosen, with_row_id=with_row_id)
        yield from scanner.to_batches()

    @abstractmethod
    def iter_fragments(self, ds: "LanceDataset", *args, **kwargs) -> Iterator["LanceFragment"]:
        """The fragments to read, in reading order."""


class FullScanSampler(FragmentSampler):
    """Every fragment, in the dataset's order (a plain full scan)."""

    def iter_fragments(self, dataset: "LanceDataset", **kwargs) -> Iterator["LanceFragment"]:
        yield from dataset.get_fragments()


class ShardedFragmentSampler(FragmentSampler):
    """Fragments `rank`, `rank + world_size`, `rank + 2 * world_size`, ... of the dataset
    (of its fragments shuffled with `seed` when `randomize`): each of `world_size`
    processes reads its own share of whole fragments. Reading whole fragments is cheaper
    than `ShardedBatchSampler`'s row ranges, but shares are only as even as the
    fragments."""

    def __init__(self, rank: int, world_size: int, randomize: bool = False, seed: int = 0):
        super().__init__()
        self._rank = rank
        self._world_size = world_size
        self._randomize = randomize
        self._seed = seed
        self._epoch = 0

    def set_epoch(self, epoch: int):
        """Record the epoch (pylance keeps it too; the fragment order does not use it)."""
        self._epoch = epoch

    @staticmethod
    def from_torch(randomize: bool = False, seed: int = 0) -> "ShardedFragmentSampler":
        """The sampler for this process of a `torch.distributed` job."""
        rank, world_size = _torch_rank_and_world()
        return ShardedFragmentSampler(rank, world_size, randomize=randomize, seed=seed)

    def iter_fragments(self, dataset: "LanceDataset", **kwargs) -> Iterator["LanceFragment"]:
        fragments = list(dataset.get_fragments())
        if self._randomize:
            random.Random(self._seed).shuffle(fragments)
        yield from fragments[self._rank::self._world_size]


class ShardedBatchSampler(Sampler):
    """Rows in runs of `batch_size`, dealt round-robin to `world_size` processes.

    Without a filter, the dataset's rows (in order, deleted rows skipped) are cut into
    runs of `batch_size`; this process reads runs `rank`, `rank + world_size`, ... (in an
    order shuffled with `seed` when `randomize`), one batch per run, and only those rows
    are read. The result is a `pyarrow.RecordBatchReader`.

    With a filter, which rows pass is unknown up front: every process scans all the
    matching rows, keeps every `world_size`-th one from the `rank`-th, and batches what it
    keeps in `batch_size` rows. With `randomize` the batches are reordered by a bounded
    heap (256 batches, priorities drawn with `seed + epoch`), which is a cheap and
    approximate shuffle. The result is a generator.
    """

    _RESERVOIR = 256

    def __init__(self, rank: int, world_size: int, randomize: bool = False, seed: int = 0):
        self._rank = rank
        self._world_size = world_size
        self._randomize = randomize
        self._seed = seed
        self._epoch = 0

    def __len__(self) -> int:
        raise TypeError(f"{type(self).__name__} has no length: the number of batches depends on the dataset")

    def set_epoch(self, epoch: int):
        """Set the epoch, which seeds the shuffle of filtered batches (`seed + epoch`)."""
        self._epoch = epoch

    @staticmethod
    def from_torch(randomize: bool = False, seed: int = 0) -> "ShardedBatchSampler":
        """The sampler for this process of a `torch.distributed` job."""
        rank, world_size = _torch_rank_and_world()
        return ShardedBatchSampler(rank, world_size, randomize=randomize, seed=seed)

    # -- filtered -------------------------------------------------------------------------

    def _shard_scan(self, dataset: "LanceDataset", batch_size: int, columns: Columns, batch_readahead: int,
                    filter: str) -> Iterator[pa.RecordBatch]:
        """Every `world_size`-th matching row from the `rank`-th, in scan order, in
        batches of `batch_size` rows (the last one possibly shorter)."""
        scanner = dataset.scanner(columns=columns, filter=filter, batch_readahead=batch_readahead,
                                  scan_in_order=True)
        # `skip`: rows of the next scanned batch before this rank's first row in it.
        skip = self._rank
        kept: List[pa.RecordBatch] = []
        kept_rows = 0
        for batch in scanner.to_batches():
            rows = batch.num_rows
            if skip < rows:
                mine = batch.take(pa.array(range(skip, rows, self._world_size), type=pa.int64()))
                kept.append(mine)
                kept_rows += mine.num_rows
                skip = (skip - rows) % self._world_size
            else:
                skip -= rows
            if kept_rows > batch_size:
                joined = _one_batch(kept)
                at = 0
                while joined.num_rows - at > batch_size:
                    yield joined.slice(at, batch_size)
                    at += batch_size
                kept = [joined.slice(at)]
                kept_rows = joined.num_rows - at
        if kept_rows > 0:
            yield _one_batch(kept)

    def _sample_filtered(self, dataset: "LanceDataset", batch_size: int, columns: Columns,
                         batch_readahead: int, filter: str) -> Iterator[pa.RecordBatch]:
        batches = self._shard_scan(dataset, batch_size, columns, batch_readahead, filter)
        if not self._randomize:
            yield from batches
            return
        # An approximate shuffle that holds at most _RESERVOIR batches: each batch gets a
        # random priority, and once the heap is full the lowest-priority one goes out.
        rng = random.Random(self._seed + self._epoch)
        room = self._RESERVOIR
        heap: List[PrioritizedItem[pa.RecordBatch]] = []
        for batch in batches:
            entry = PrioritizedItem(rng.randint(0, room * 2 - 1), batch)
            if len(heap) < room:
                heappush(heap, entry)
            else:
                yield heappushpop(heap, entry).item
        for entry in heap:
            yield entry.item

    # -- unfiltered -----------------------------------------------------------------------

    def _sample_all(self, dataset: "LanceDataset", batch_size: int, columns: Columns,
                    batch_readahead: int) -> pa.RecordBatchReader:
        total = dataset.count_rows()
        step = self._world_size * batch_size
        runs = [(lo, min(lo + batch_size, total)) for lo in range(self._rank * batch_size, total, step)]
        if self._randomize:
            random.Random(self._seed).shuffle(runs)
        # The schema now, so that a bad column fails at the call, as in pylance.
        schema = dataset.scanner(columns=columns).projected_schema

        def read() -> Iterator[pa.RecordBatch]:
            for lo, hi in runs:
                table = dataset.take(list(range(lo, hi)), columns=columns)
                if table.schema != schema:
                    table = table.cast(schema)
                yield _one_batch(table)

        return pa.RecordBatchReader.from_batches(schema, read())

    def __call__(self, dataset: "LanceDataset", *args, batch_size: int = 128, columns: Columns = None,
                 filter: Optional[str] = None, batch_readahead: int = 16, with_row_id: Optional[bool] = None,
                 **kwargs) -> Union[pa.RecordBatchReader, Iterator[pa.RecordBatch]]:
        if filter is not None:
            return self._sample_filtered(dataset, batch_size, columns, batch_readahead, filter)
        if with_row_id is not None:
            warnings.warn("with_row_id is not supported for ShardedBatchSampler", stacklevel=2)
        return self._sample_all(dataset, batch_size, columns, batch_readahead)


class ShardedFixedBatchSampler(ShardedBatchSampler):
    """Row offsets for a fixed-size dataset, as a torch `batch_sampler`.

    The `total_num_rows` rows are split into `world_size` consecutive blocks of
    ceil(total_num_rows / world_size) rows (the last ones shorter or empty); iterating
    yields block `rank` as lists of `batch_size` consecutive offsets (the last possibly
    shorter), in an order shuffled with `seed + epoch` when `randomize`. `len()` is the
    number of lists of the largest block.

    Called with a dataset it reads batches as `ShardedBatchSampler` does (with the call's
    `batch_size`).
    """

    def __init__(self, rank: int, world_size: int, randomize: bool = False, seed: int = 0, batch_size: int = 0,
                 total_num_rows: int = 0):
        super().__init__(rank, world_size, randomize, seed)
        self._total_num_rows = total_num_rows
        self._batch_size = batch_size
        self._len = self._compute_length()

    def _block(self) -> Tuple[int, int]:
        size = math.ceil(self._total_num_rows / self._world_size)
        lo = self._rank * size
        return lo, min(lo + size, self._total_num_rows)

    def _compute_length(self) -> int:
        if self._batch_size == 0 and self._total_num_rows == 0:
            return 0
        return math.ceil(math.ceil(self._total_num_rows / self._world_size) / self._batch_size)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[List[int]]:
        lo, hi = self._block()
        batches = [list(range(at, min(at + self._batch_size, hi))) for at in range(lo, hi, self._batch_size or 1)]
        if self._randomize:
            random.Random(self._seed + self._epoch).shuffle(batches)
        yield from batches

    @staticmethod
    def from_torch(batch_size: int, total_num_rows: int, randomize: bool = False,
                   seed: int = 0) -> "ShardedFixedBatchSampler":
        """The sampler for this process of a `torch.distributed` job."""
        rank, world_size = _torch_rank_and_world()
        return ShardedFixedBatchSampler(rank, world_size, randomize, seed, batch_size, total_num_rows)

