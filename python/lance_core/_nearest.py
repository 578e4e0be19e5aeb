"""pylance's `nearest={...}` query, checked and normalized for the native scan."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

import pyarrow as pa

from .errors import InvalidInputError

_KEYS = {"column", "q", "k", "metric", "nprobes", "minimum_nprobes", "maximum_nprobes", "refine_factor",
         "use_index", "ef", "distance_range"}


def _vectors(q: Any) -> Tuple[List[float], int, bool]:
    """The query vectors flattened, how many there are, and whether `q` held several
    (2-D: a list of vectors, a 2-D numpy array, a list or fixed-size list array)."""
    if isinstance(q, pa.ChunkedArray):
        q = q.combine_chunks()
    if isinstance(q, (pa.Array, pa.Scalar)):
        q = q.as_py() if isinstance(q, pa.Scalar) else q.to_pylist()
    elif hasattr(q, "tolist"):
        q = q.tolist()
    if not isinstance(q, (list, tuple)):
        raise InvalidInputError(f"nearest: q must be a vector (a list, numpy array or pyarrow array), got {type(q).__name__}")
    rows = list(q)
    several = bool(rows) and all(isinstance(r, (list, tuple)) or hasattr(r, "tolist") for r in rows)
    if not several:
        rows = [rows]
    flat: List[float] = []
    dim = None
    for r in rows:
        r = r.tolist() if hasattr(r, "tolist") else list(r)
        if dim is not None and len(r) != dim:
            raise InvalidInputError(f"nearest: the query vectors have different lengths ({dim} and {len(r)})")
        dim = len(r)
        for v in r:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise InvalidInputError(f"nearest: a query vector holds {v!r}; its values must be numbers")
            flat.append(float(v))
    return flat, len(rows), several


def _count(nearest: Dict[str, Any], key: str) -> Optional[int]:
    v = nearest.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise InvalidInputError(f"nearest: {key} must be a non-negative integer, got {v!r}")
    return v


def normalize(nearest: Dict[str, Any], prefilter: Optional[bool], project_distance: bool,
              limit: Optional[int], fast_search: bool = False) -> Dict[str, Any]:
    """The dict the native scan takes for pylance's `nearest`, checked. Without `k` the
    search finds `limit` rows (10 without a limit either), as pylance's does."""
    if not isinstance(nearest, dict):
        raise InvalidInputError(f"nearest must be a dict, got {type(nearest).__name__}")
    unknown = sorted(set(nearest) - _KEYS)
    if unknown:
        raise TypeError(f"nearest got an unexpected key '{unknown[0]}' (expected one of {', '.join(sorted(_KEYS))})")
    column = nearest.get("column")
    if not isinstance(column, str):
        raise InvalidInputError(f"nearest: column must be a column name, got {column!r}")
    if "q" not in nearest or nearest["q"] is None:
        raise InvalidInputError("nearest: q (the query vector) is missing")
    q, num_queries, batch = _vectors(nearest["q"])
    k = nearest.get("k")
    if k is None:
        k = limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else 10
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise InvalidInputError(f"nearest: k must be an integer greater than 0, got {k!r}")
    metric = nearest.get("metric")
    if metric is not None and not isinstance(metric, str):
        raise InvalidInputError(f"nearest: metric must be a name (l2, cosine, dot, hamming), got {metric!r}")
    lower = upper = None
    if nearest.get("distance_range") is not None:
        try:
            lower, upper = nearest["distance_range"]
        except (TypeError, ValueError):
            raise InvalidInputError(f"nearest: distance_range must be (lower, upper), "
                                    f"got {nearest['distance_range']!r}") from None
        for end in (lower, upper):
            if end is not None and (isinstance(end, bool) or not isinstance(end, (int, float)) or math.isnan(end)):
                raise InvalidInputError(f"nearest: distance_range ends must be numbers or None, got {end!r}")
    use_index = nearest.get("use_index", True)
    return dict(column=column, q=q, num_queries=num_queries, batch=batch, k=k, metric=metric,
                lower=None if lower is None else float(lower), upper=None if upper is None else float(upper),
                prefilter=bool(prefilter), use_index=True if use_index is None else bool(use_index),
                fast_search=fast_search,
                nprobes=_count(nearest, "nprobes"), minimum_nprobes=_count(nearest, "minimum_nprobes"),
                maximum_nprobes=_count(nearest, "maximum_nprobes"), refine_factor=_count(nearest, "refine_factor"),
                ef=_count(nearest, "ef"), project_distance=project_distance)
