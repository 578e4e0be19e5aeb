"""Checks on a dataset's indices (pylance's `lance.util`)."""

from __future__ import annotations

from typing import Optional

import numpy as np


def validate_vector_index(dataset, column: str, refine_factor: int = 5, sample_size: Optional[int] = None,
                          pass_threshold: float = 1.0) -> None:
    """Query the vector index of `column` with vectors of the table itself (all, or
    `sample_size` of them) and check that each finds itself (distance 0) as its nearest
    neighbour; raise ValueError when fewer than `pass_threshold` of them do."""
    data = dataset.to_table() if sample_size is None else dataset.sample(sample_size)
    vectors = data[column].to_numpy(zero_copy_only=False)
    passes, total = 0, len(vectors)
    for vector in vectors:
        if np.isnan(vector).any():
            total -= 1
            continue
        nearest = {"column": column, "q": vector, "k": 1, "nprobes": 1, "refine_factor": refine_factor}
        distance = dataset.to_table(nearest=nearest)["_distance"].to_pylist()[0]
        passes += abs(distance) < 1e-6
    if total and passes / total < pass_threshold:
        raise ValueError(f"Vector index failed sanity check, only {passes}/{total} passed")
