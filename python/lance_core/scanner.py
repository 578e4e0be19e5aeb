"""Scans: `LanceScanner` (what `dataset.scanner(...)` and `fragment.scanner(...)` return)
and what reads share: sort keys (`ColumnOrdering`), pylance's scan hints, filters given
as pyarrow expressions, row indices given as lists or arrays."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Tuple, Union

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pa_ds

from . import _lance_core
from .errors import InvalidInputError

if TYPE_CHECKING:
    from .dataset import LanceDataset


class LanceScanner(pa_ds.Scanner):
    """A configured scan of a dataset (or of some of its fragments). A
    `pyarrow.dataset.Scanner`, as pylance's is; every method of pyarrow's is answered here
    (the inherited ones would reach into a C++ scanner there is none of)."""

    def __init__(
        self,
        dataset: "LanceDataset",
        columns: Optional[Union[List[str], Dict[str, str]]] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        batch_size: Optional[int] = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        fragment_ids: Optional[List[int]] = None,
        io_buffer_size: Optional[int] = None,
        filter: Optional[Union[str, pc.Expression]] = None,
        row_range: Optional[Tuple[int, int]] = None,
        include_deleted: bool = False,
        late_materialization: bool = True,
        use_scalar_index: bool = True,
        nearest: Optional[Dict[str, Any]] = None,
        blob_handling: Optional[str] = None,
        order_by: Optional[List[Union["ColumnOrdering", str]]] = None,
        strict_batch_size: bool = False,
        batch_size_bytes: Optional[int] = None,
    ):
        """`columns` is a list of column names (dotted for fields of structs), or a dict of
        output names to SQL expressions (`{"total": "price * qty", "x": "l[1].x"}`).
        `row_range=(start, end)` reads only physical rows start..end of each fragment
        (so several tasks can share a large fragment); `include_deleted=True` returns
        deleted rows too (every physical row, in order). `order_by` sorts the result
        (a list of `ColumnOrdering` or column names, ascending with nulls last); the
        offset and limit then apply to the sorted rows. `batch_size_bytes` cuts a batch
        larger than that in memory into slices of about that size (no copy)."""
        if batch_size_bytes is not None and (not isinstance(batch_size_bytes, int) or batch_size_bytes < 1):
            raise InvalidInputError(f"batch_size_bytes must be a positive integer, got {batch_size_bytes!r}")
        self._batch_bytes = batch_size_bytes
        filter = _filter(filter)
        if isinstance(columns, str):
            raise InvalidInputError("columns must be a list of column names, not a string")
        projection = None
        if isinstance(columns, dict):
            for name, expr in columns.items():
                if not isinstance(name, str) or not isinstance(expr, str):
                    raise InvalidInputError(f"columns given as a dict map output names to SQL expressions "
                                            f"(str → str), got {name!r}: {expr!r}")
            projection, columns = list(columns.items()), None
        for name, value in (("limit", limit), ("offset", offset), ("batch_size", batch_size), ("io_buffer_size", io_buffer_size)):
            if value is not None and (not isinstance(value, int) or value < 0):
                # pylance's wording ("Offset must be non-negative"), then what was given.
                raise InvalidInputError(f"{name.capitalize()} must be non-negative: {name} must be a non-negative "
                                        f"integer, got {value!r}")
        if batch_size == 0:
            raise InvalidInputError("batch_size must be positive")
        if batch_size is None and os.environ.get("LANCE_DEFAULT_BATCH_SIZE"):
            # pylance's environment default.
            batch_size = int(os.environ["LANCE_DEFAULT_BATCH_SIZE"])
        if row_range is not None:
            start, end = row_range
            if not (isinstance(start, int) and isinstance(end, int)) or start < 0 or end < start:
                raise InvalidInputError(f"row_range must be (start, end) with 0 <= start <= end, got {row_range!r}")
            row_range = (start, end)
        if blob_handling not in (None, "all_binary", "blobs_descriptions", "all_descriptions"):
            raise InvalidInputError(f"blob_handling must be 'all_binary', 'blobs_descriptions' or "
                                    f"'all_descriptions', got {blob_handling!r}")
        self._dataset = dataset
        self._args = dict(
            columns=list(columns) if columns is not None else None,
            limit=limit,
            offset=offset,
            batch_size=batch_size,
            with_row_id=bool(with_row_id),
            with_row_address=bool(with_row_address),
            fragment_ids=fragment_ids,
            io_buffer_size=io_buffer_size,
            filter=filter,
            row_range=row_range,
            include_deleted=bool(include_deleted),
            projection=projection,
            late_materialization=bool(late_materialization),
            use_scalar_index=bool(use_scalar_index),
            nearest=nearest,
            # Blob columns returned as their bytes rather than descriptors.
            blob_bytes=blob_handling == "all_binary",
            # Batches of exactly batch_size rows, across fragment ends and after the filter.
            strict_batch_size=bool(strict_batch_size),
            # Sorted in the core (a top-N when there is a limit), as (column, ascending,
            # nulls first) per key.
            order_by=[(o.column_name, o.ascending, o.nulls_first) for o in _orderings(order_by)] or None,
        )

    def _native(self) -> "_lance_core._BatchIterator":
        return self._dataset._ds.scan(**self._args)

    @property
    def projected_schema(self) -> pa.Schema:
        return pa.schema(self._native().schema)

    @property
    def dataset_schema(self) -> pa.Schema:
        """The schema of the dataset scanned (before projection)."""
        return self._dataset.schema

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """Stream the result; memory stays bounded whatever the dataset's size (unless it
        is sorted without a limit: `order_by` then holds every matching row)."""
        for batch in self._native():
            yield from _cut_by_bytes(pa.record_batch(batch), self._batch_bytes)

    def to_reader(self) -> pa.RecordBatchReader:
        if self._batch_bytes is not None:
            return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())
        return pa.RecordBatchReader.from_stream(self._native())

    def to_table(self) -> pa.Table:
        it = self._native()
        schema = pa.schema(it.schema)
        return pa.Table.from_batches([pa.record_batch(b) for b in it], schema=schema)

    def analyze_plan(self) -> str:
        """Run the scan and say what it did, as pylance's `analyze_plan`: the plan
        (`explain_plan`) under a `LanceRead` line with the run's metrics: `output_rows`,
        `output_batches`, `rows_scanned` (rows read before the filter: all rows of the
        fragments scanned, or those an index found), `bytes_read`, `iops` and `requests`.
        The counts are the process's storage and scan counters over the run: other reads
        running at the same time are counted too."""
        a = self._args
        counters = (_lance_core.iops_counter, _lance_core.bytes_read_counter, _lance_core._rows_scanned_counter)
        before = [c() for c in counters]
        started = time.perf_counter()
        rows = batches = 0
        for batch in self.to_batches():
            rows += batch.num_rows
            batches += 1
        elapsed = time.perf_counter() - started
        iops, bytes_read, scanned = (c() - b for c, b in zip(counters, before))
        plan = self.explain_plan(verbose=True).splitlines()
        read = (f"LanceRead: elapsed={elapsed * 1000:.3f}ms, uri={self._dataset.uri}, "
                f"projection=[{plan[0].split('columns [', 1)[1].split(']', 1)[0]}], "
                f"row_id={str(bool(a['with_row_id'])).lower()}, row_addr={str(bool(a['with_row_address'])).lower()}, "
                f"full_filter={a['filter'] if a['filter'] is not None else '--'}, "
                f"metrics=[output_rows={rows}, output_batches={batches}, rows_scanned={scanned}, "
                f"bytes_read={bytes_read}, iops={iops}, requests={iops}]")
        return "\n".join([f"AnalyzeExec verbose=true, elapsed={elapsed * 1000:.3f}ms, "
                          f"metrics=[output_rows={rows}]", "  " + read] + ["    " + line for line in plan])

    def explain_plan(self, verbose: bool = False) -> str:
        """How the scan runs: the columns it returns, the filter, each condition a
        scalar index answers (``ScalarIndexQuery``, as in pylance's plans) and the
        fragments read with the filter."""
        a = self._args
        ds = self._dataset
        ids = a["fragment_ids"] if a["fragment_ids"] is not None else [f.fragment_id for f in ds.get_fragments()]
        names = [n for n, _ in a["projection"]] if a["projection"] is not None else (
            a["columns"] if a["columns"] is not None else ds.schema.names)
        lines = [f"Scan: {len(ids)} fragments, columns [{', '.join(names)}]"
                 + (f", limit {a['limit']}" if a["limit"] is not None else "")
                 + (f", offset {a['offset']}" if a["offset"] is not None else "")]
        n = a["nearest"]
        if n is not None:
            # pylance's node names: ANNSubIndex / ANNIvfPartition through an index,
            # KNNVectorDistance for an exhaustive search.
            index = ds._ds.vector_index_for(n) if a["fragment_ids"] is None else None
            how = (", prefilter" if n["prefilter"] else ", postfilter" if a["filter"] is not None else "") + (
                f", queries={n['num_queries']}" if n["batch"] else "")
            if index is not None:
                name, kind, metric, uuids = index
                lines.append(f"  ANNSubIndex: name={name}, type={kind}, k={n['k']}, deltas={len(uuids)}, "
                             f"metric={metric}{how}")
                lines.append(f"    ANNIvfPartition: uuid={uuids[0]}, minimum_nprobes={n['nprobes'] or n['minimum_nprobes']}, "
                             f"maximum_nprobes={n['nprobes'] or n['maximum_nprobes']}, deltas={len(uuids)}"
                             + (f", refine_factor={n['refine_factor']}" if n["refine_factor"] else ""))
            else:
                lines.append(f"  KNNVectorDistance: column={n['column']}, metric={n['metric'] or 'default'}, "
                             f"k={n['k']}{how}")
        if a["filter"] is None:
            return "\n".join(lines)
        lines.append(f"  Filter: {a['filter']}")
        scanned = ids
        if a["use_scalar_index"] and a["row_range"] is None and not a["include_deleted"]:
            answered, rest = ds._ds.explain_filter(a["filter"])
            lines += ["  " + line for line in answered]
            scanned = [i for i in ids if i in set(rest)]
        lines.append(f"  Filtered scan of {len(scanned)} fragments"
                     + (f": {scanned}" if verbose else ""))
        return "\n".join(lines)

    def to_pandas(self, blob_mode: str = "lazy", **kwargs) -> "Any":
        """The result as a pandas DataFrame (`pyarrow.Table.to_pandas(**kwargs)`); an index
        written from pandas comes back as the index. Blob columns hold, as pylance's
        `blob_mode` says: "lazy" a `BlobFile` per row (read when asked), "bytes" the
        bytes, "descriptions" the descriptors `to_table` returns (None for NULL)."""
        if blob_mode not in ("lazy", "bytes", "descriptions"):
            raise ValueError("blob_mode must be one of: 'lazy', 'bytes', 'descriptions'")
        a = self._args
        wanted = a["columns"] if a["columns"] is not None else self._dataset.schema.names
        blobs = [] if blob_mode == "descriptions" or a["projection"] is not None or a["blob_bytes"] else \
            [c for c in _blob_columns(self._dataset.schema) if c in wanted]
        if not blobs:
            return self.to_table().to_pandas(**kwargs)
        if blob_mode == "bytes":
            return self._with(blob_bytes=True).to_table().to_pandas(**kwargs)
        table = self._with(with_row_address=True).to_table()
        addresses = table["_rowaddr"].to_pylist()
        files = {c: self._dataset.take_blobs(c, addresses=addresses) for c in blobs}
        positions = {c: table.schema.get_field_index(c) for c in blobs}
        drop = blobs + ([] if a["with_row_address"] else ["_rowaddr"])
        df = table.drop_columns(drop).to_pandas(**kwargs)
        for c in sorted(blobs, key=positions.get):
            df.insert(min(positions[c], len(df.columns)), c, files[c])
        return df

    def _with(self, **args: Any) -> "LanceScanner":
        """This scan with some of its arguments changed."""
        other = LanceScanner.__new__(LanceScanner)
        other._dataset = self._dataset
        other._args = {**self._args, **args}
        other._batch_bytes = self._batch_bytes
        return other

    @staticmethod
    def from_dataset(dataset: Any, **kwargs: Any) -> Any:
        """`dataset.scanner(**kwargs)`: a `LanceScanner` for a Lance dataset, pyarrow's
        scanner for any other pyarrow dataset."""
        if getattr(dataset, "_builds_lance_scanners", False):
            return dataset.scanner(**kwargs)
        return pa_ds.Scanner.from_dataset(dataset, **kwargs)

    @staticmethod
    def from_fragment(fragment: Any, **kwargs: Any) -> Any:
        """`fragment.scanner(**kwargs)` for a `LanceFragment`; pyarrow's for others."""
        if getattr(fragment, "_builds_lance_scanners", False):
            return fragment.scanner(**kwargs)
        return pa_ds.Scanner.from_fragment(fragment, **kwargs)

    @staticmethod
    def from_batches(*args: Any, **kwargs: Any) -> pa_ds.Scanner:
        """pyarrow's scanner over batches (nothing Lance is involved)."""
        return pa_ds.Scanner.from_batches(*args, **kwargs)

    def scan_batches(self) -> List[pa.RecordBatch]:
        """The result's batches, as a list (as pylance's `scan_batches`)."""
        return list(self.to_batches())

    def head(self, num_rows: int) -> pa.Table:
        """The first `num_rows` rows of the result (read as a limit: no more is read)."""
        if not isinstance(num_rows, int) or num_rows < 0:
            raise InvalidInputError(f"head() takes a non-negative number of rows, got {num_rows!r}")
        limit = self._args["limit"]
        return self._with(limit=num_rows if limit is None else min(limit, num_rows)).to_table()

    def take(self, indices: Any) -> pa.Table:
        """Rows at positions `indices` of the result, in the order given: the positions are
        found from a scan of row addresses alone, then only those rows are read (a sorted,
        nearest-neighbour or deleted-rows scan is read whole first)."""
        positions = pa.array(_indices(indices, "indices"), pa.uint64())
        a = self._args
        if a["order_by"] or a["nearest"] is not None or a["include_deleted"] or a["blob_bytes"]:
            return self.to_table().take(positions)
        found = self._with(columns=[], projection=None, with_row_id=False, with_row_address=True,
                           limit=a["limit"], offset=a["offset"]).to_table()["_rowaddr"]
        if len(positions) and pc.max(positions).as_py() >= len(found):
            raise IndexError(f"take: index {pc.max(positions).as_py()} is out of bounds for a scan of "
                             f"{len(found)} rows")
        columns: Any = dict(a["projection"]) if a["projection"] is not None else a["columns"]
        return self._dataset._take_addresses(found.take(positions).to_pylist(), columns, a["with_row_id"],
                                             a["with_row_address"])

    def count_rows(self) -> int:
        """Rows the scan returns; without a limit or offset no data page is read."""
        a = self._args
        if a["row_range"] is not None or a["include_deleted"] or a["projection"] is not None \
                or (a["filter"] is not None and not a["use_scalar_index"]):
            return sum(b.num_rows for b in self.to_batches())
        if a["filter"] is not None and a["limit"] is None and a["offset"] is None:
            ids = a["fragment_ids"]
            if ids is None:
                return self._dataset._ds.count_rows(None, a["filter"])
            return sum(self._dataset._ds.count_rows(i, a["filter"]) for i in ids)
        if a["limit"] is None and a["offset"] is None:
            ids = a["fragment_ids"]
            if ids is None:
                return self._dataset._ds.count_rows()
            return sum(self._dataset._ds.count_rows(i) for i in ids)
        return sum(b.num_rows for b in self.to_batches())


_HINTS = {"batch_readahead", "fragment_readahead", "scan_in_order", "prefilter", "use_stats", "fast_search",
          "late_materialization", "use_scalar_index", "blob_handling", "strict_batch_size",
          "disable_scoring_autoprojection", "scan_stats_callback", "index_segments"}


def _blob_columns(schema: pa.Schema) -> List[str]:
    """The top-level columns of `schema` that hold blobs (v1 field metadata, or v2)."""
    out = []
    for f in schema:
        meta = f.metadata or {}
        if meta.get(b"lance-encoding:blob", b"").lower() == b"true" or "lance.blob" in str(f.type):
            out.append(f.name)
    return out


def _filter(f: Any) -> Optional["_lance_core._Filter"]:
    """A filter argument as the core's typed filter: SQL text is parsed here, once (a bad
    one fails where it was given), a pyarrow compute expression (`pc.field("a") > 5`) is
    read from the form pyarrow pickles it in, never printed to SQL. None or blank text is
    no filter."""
    if f is None or isinstance(f, _lance_core._Filter):
        return f
    if isinstance(f, pc.Expression):
        return _lance_core._Filter.pyarrow(f.__reduce__()[1][0].to_pybytes())
    if isinstance(f, str):
        return _lance_core._Filter.sql(f) if f.strip() else None
    raise InvalidInputError(f"a filter is SQL text or a pyarrow compute expression, got {f!r}")


def _predicate(f: Any, what: str) -> "_lance_core._Filter":
    """`_filter` where a filter must be given (`what` names the call, for the error)."""
    where = _filter(f)
    if where is None:
        raise InvalidInputError(f"{what} takes a predicate (SQL text or a pyarrow compute expression), got {f!r}")
    return where


@dataclass
class ColumnOrdering:
    """A sort key of `scanner(order_by=[...])`, as pylance's: a column, its direction and
    where its nulls go."""

    column_name: str
    ascending: bool = True
    nulls_first: bool = False


def _orderings(order_by: Any) -> List[ColumnOrdering]:
    """`order_by` as a list of `ColumnOrdering` (a name: ascending, nulls last)."""
    if order_by is None:
        return []
    out = []
    for o in order_by:
        if isinstance(o, str):
            out.append(ColumnOrdering(o))
        elif isinstance(o, ColumnOrdering):
            out.append(o)
        else:
            raise InvalidInputError(f"order_by takes ColumnOrdering objects or column names, got {o!r}")
    return out


def _check_hints(hints: Dict[str, Any]) -> None:
    for name, value in hints.items():
        if name in ("full_text_query", "row_addr_allowlist", "row_addr_blocklist") and value is not None:
            raise InvalidInputError(f"{name}= is not supported by lance_core")
        if name not in _HINTS and name not in ("full_text_query", "order_by", "row_addr_allowlist",
                                               "row_addr_blocklist"):
            raise TypeError(f"scanner() got an unexpected keyword argument '{name}'")


def _indices(values: Any, what: str) -> List[int]:
    """Indices or row ids from a list, a numpy array or a pyarrow array, as Python ints."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = values.to_pylist()
    elif hasattr(values, "tolist"):
        values = values.tolist()
    out = list(values)
    for v in out:
        if isinstance(v, bool) or not isinstance(v, int):
            raise InvalidInputError(f"{what} must be integers, got {v!r}")
        if v < 0:
            raise InvalidInputError(f"{what} must not be negative, got {v}")
    return out


def _cut_by_bytes(batch: pa.RecordBatch, target: Optional[int]) -> Iterator[pa.RecordBatch]:
    """`batch`, or slices of it of about `target` bytes each (at least a row) when it is
    larger in memory."""
    if target is None or batch.num_rows <= 1 or batch.nbytes <= target:
        yield batch
        return
    rows = max(1, batch.num_rows * target // batch.nbytes)
    for start in range(0, batch.num_rows, rows):
        yield batch.slice(start, rows)
