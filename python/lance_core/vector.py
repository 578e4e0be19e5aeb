"""Vector helpers with pylance's names (`lance.vector`)."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Union

import pyarrow as pa

from .errors import InvalidInputError


def _dimension(vectors: Sequence[Any], ndim: Optional[int], check: bool) -> int:
    """The vectors' common length: `ndim`, or the first vector's; with `check`, every
    vector must have it."""
    for v in vectors:
        if ndim is None:
            ndim = len(v)
        elif check and len(v) != ndim:
            raise InvalidInputError(f"Expected {ndim} dimensions but got {len(v)} for {v}")
        if not check:
            break
    if ndim is None:
        raise InvalidInputError("cannot tell the vectors' dimension from no vectors; pass ndim")
    return ndim


def _fixed_size_list(vectors: Any, ndim: int) -> pa.FixedSizeListArray:
    import numpy as np

    flat = np.asarray(vectors, dtype=np.float32).reshape(-1)
    if ndim and flat.size % ndim:
        raise InvalidInputError(f"{flat.size} values do not make vectors of {ndim} dimensions")
    return pa.FixedSizeListArray.from_arrays(pa.array(flat), list_size=ndim)


def vec_to_table(data: Union[dict, list, Any], names: Optional[Union[str, List[str]]] = None,
                 ndim: Optional[int] = None, check_ndim: bool = True) -> pa.Table:
    """A table of float32 vectors (a `fixed_size_list<float>` column), as pylance's
    `vec_to_table`: from a dict (its keys become an "id" column beside "vector"), a
    list of vectors, or a 2-D numpy array (one vector per row). `names` renames the
    columns; `ndim` gives the dimension (otherwise the first vector's)."""
    import numpy as np

    if isinstance(data, dict):
        names = ["id", "vector"] if names is None else names
        if isinstance(names, str) or len(names) != 2:
            raise InvalidInputError("If data is a dict, names must be a list or tuple of 2 strings")
        values = list(data.values())
        dim = _dimension(values, ndim, check_ndim)
        return pa.Table.from_arrays([pa.array(list(data.keys())), _fixed_size_list(values, dim)], names=list(names))
    if isinstance(data, (list, np.ndarray)):
        names = ["vector"] if names is None else [names] if isinstance(names, str) else list(names)
        if len(names) != 1:
            raise InvalidInputError(f"names cannot be more than 1 got {len(names)}")
        dim = _dimension(data, ndim, check_ndim)
        return pa.Table.from_arrays([_fixed_size_list(data, dim)], names=names)
    raise NotImplementedError(f"data must be dict, list, or ndarray, got {type(data)} instead")
