"""`ShardedBatchIterator` (pylance's `lance._dataset.sharded_batch_iterator`): shard
`rank` of `world_size` of a dataset's batches, by fragment or by fixed-size row batch,
for data-parallel training."""

from __future__ import annotations

import os
import warnings
from typing import Dict, Iterator, List, Literal, Optional, Union

import pyarrow as pa

from .dataset import LanceDataset, dataset

__all__ = ["ShardedBatchIterator"]


class ShardedBatchIterator:
    """The record batches of shard `rank` of `world_size`: with `granularity="fragment"`
    every `world_size`-th fragment from `rank`; with `"batch"` every `world_size`-th run
    of `batch_size` rows from row `rank * batch_size`."""

    def __init__(self, data, rank: int, world_size: int, *,
                 columns: Optional[Union[List[str], Dict[str, str]]] = None, batch_size: int = 1024 * 10,
                 granularity: Literal["fragment", "batch"] = "fragment", batch_readahead: int = 8,
                 with_row_id: bool = False):
        warnings.warn("ShardedBatchIterator is deprecated, use :class:`Sampler` instead", stacklevel=2)
        self._ds = data if isinstance(data, LanceDataset) else dataset(os.fspath(data))
        self._rank, self._world_size = rank, world_size
        self._columns, self._batch_size = columns, batch_size
        self._granularity, self._with_row_id = granularity, with_row_id

    @staticmethod
    def from_torch(data, **kwargs) -> "ShardedBatchIterator":
        """The shard of this process in a `torch.distributed` job."""
        import torch
        return ShardedBatchIterator(data, torch.distributed.get_rank(), torch.distributed.get_world_size(),
                                    **kwargs)

    def _by_fragment(self) -> Iterator[pa.RecordBatch]:
        fragments = self._ds.get_fragments()
        for fragment in fragments[self._rank::self._world_size]:
            yield from fragment.to_batches(columns=self._columns, batch_size=self._batch_size,
                                           with_row_id=self._with_row_id)

    def _by_batch(self) -> Iterator[pa.RecordBatch]:
        if self._with_row_id:
            raise NotImplementedError("with_row_id is not supported for batch sharding yet")
        total = self._ds.count_rows()
        step = self._world_size * self._batch_size
        for start in range(self._rank * self._batch_size, total, step):
            table = self._ds.to_table(columns=self._columns, offset=start,
                                      limit=min(self._batch_size, total - start))
            yield from table.combine_chunks().to_batches()

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        if self._granularity == "fragment":
            return self._by_fragment()
        if self._granularity == "batch":
            return self._by_batch()
        raise ValueError(f"Unrecognized granularity: {self._granularity}")
