"""The table's indices, with pylance's `LanceDataset` methods: listing and describing
them, their statistics, building scalar and vector indices, dropping one. `LanceDataset`
takes these methods from here; the Spark builds check their arguments with
`scalar_index_params` and `ivf_params` too."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from . import _lance_core
from .errors import ColumnNotFoundError, InvalidInputError
from .results import IndexDescription, IndexSegmentDescription

if TYPE_CHECKING:
    from .dataset import LanceDataset


def scalar_index_params(uri: str, index_type: Any, kwargs: Dict[str, Any]) -> Tuple[str, Optional[int], Optional[float]]:
    """The index type named by `index_type` (a string or pylance's `IndexConfig`) and the
    rows per page or zone and false-match probability that it and `kwargs` (as
    `create_scalar_index` takes them) ask for, checked (errors name the table `uri`)."""
    params = dict(kwargs)
    if not isinstance(index_type, str):
        # pylance's IndexConfig(index_type, parameters)
        params.update(getattr(index_type, "parameters", None) or {})
        index_type = getattr(index_type, "index_type", None)
        if not isinstance(index_type, str):
            raise InvalidInputError(f"{uri}: index_type must be a string such as 'BTREE' or an IndexConfig")
    # Rows per BTREE page, ZONEMAP zone or BLOOMFILTER zone.
    size_name = {"ZONEMAP": "rows_per_zone", "BLOOMFILTER": "number_of_items"}.get(index_type.upper(), "zone_size")
    probability = params.pop("probability", None)
    if probability is not None and not (isinstance(probability, (int, float)) and 0 <= probability < 1):
        raise InvalidInputError(f"{uri}: probability must be a number in [0, 1), got {probability!r}")
    zone_size = params.pop(size_name, None)
    if zone_size is not None and (not isinstance(zone_size, int) or zone_size <= 0):
        raise InvalidInputError(f"{uri}: {size_name} must be a positive integer, got {zone_size!r}")
    for ignored in ("train", "index_uuid", "use_seeds"):
        params.pop(ignored, None)
    if params.get("fragment_ids") is not None:
        raise InvalidInputError(f"{uri}: create_scalar_index builds over every fragment; fragment_ids is not supported")
    params.pop("fragment_ids", None)
    return index_type, zone_size, probability


def index_kind(index_type: str) -> Optional[Tuple[str, str, bool]]:
    """The kind a user names (any case), by the core's registry of scalar and vector kinds:
    its family ("scalar" or "vector"), its name, and whether lance_core builds it; None for
    a kind lance_core does not know."""
    return _lance_core._Dataset.index_kind(str(index_type))


def is_vector_kind(index_type: str, built: bool = False) -> bool:
    """Whether `index_type` names a vector index kind (one lance_core builds, when `built`)."""
    found = index_kind(index_type)
    return found is not None and found[0] == "vector" and (found[2] or not built)


def ivf_params(index_type: str, metric: str = "L2", num_partitions: Optional[int] = None,
               num_sub_vectors: Optional[int] = None, *, num_bits: int = 8, sample_rate: int = 256,
               max_iters: int = 50, target_partition_size: Optional[int] = None,
               seed: Optional[int] = None) -> Dict[str, Any]:
    """pylance's `create_index` arguments for an IVF build, checked, as the core takes them
    (shared by `LanceDataset.create_index` and the Spark build)."""
    kind = str(index_type).upper()
    if kind == "IVF_PQ" and num_sub_vectors is None:
        raise InvalidInputError("num_partitions and num_sub_vectors are required for IVF_PQ")
    for arg, value in (("num_partitions", num_partitions), ("num_sub_vectors", num_sub_vectors),
                       ("target_partition_size", target_partition_size)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise InvalidInputError(f"{arg} must be a positive integer, got {value!r}")
    for arg, value in (("num_bits", num_bits), ("sample_rate", sample_rate), ("max_iters", max_iters)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise InvalidInputError(f"{arg} must be a positive integer, got {value!r}")
    return {"index_type": kind, "metric": str(metric), "num_partitions": num_partitions,
            "target_partition_size": target_partition_size, "num_sub_vectors": num_sub_vectors,
            "num_bits": num_bits, "sample_rate": sample_rate, "max_iters": max_iters, "seed": seed}


class TableIndices:
    """Mixed into `LanceDataset` (which holds the native dataset as `_ds`)."""

    _ds: Any

    @property
    def has_index(self) -> bool:
        """Whether this version has any index (pylance's property)."""
        return bool(self._ds.index_segments())

    def list_indices(self) -> List[Dict[str, Any]]:
        """The index segments of this version, as pylance lists them, sorted by name: name,
        type ("BTree", "Bitmap", "LabelList", "NGram", "ZoneMap", "BloomFilter", "Inverted",
        "IVF_PQ", ...), uuid, fields (column names), version (the dataset version the
        segment was built from), fragment_ids (the fragments it was built over, as
        recorded) and base_id. Several segments with one name make up one index."""
        out = [{"name": s["name"], "type": s["type"], "uuid": s["uuid"], "fields": s["field_names"],
                "version": s["dataset_version"], "fragment_ids": set(s["fragment_ids"] or ()),
                "base_id": s["base_id"]} for s in self._ds.index_segments()]
        return sorted(out, key=lambda d: d["name"])

    def describe_indices(self) -> List["IndexDescription"]:
        """Every index of this version, as pylance describes it: one `IndexDescription`
        per name (its segments, the rows they cover, the files' total size)."""
        segments = self._ds.index_segments()
        rows = self._ds.index_rows_covered()
        by_name: Dict[str, List[Tuple[Dict[str, Any], int]]] = {}
        for s, n in zip(segments, rows):
            by_name.setdefault(s["name"], []).append((s, n))
        out = []
        for name, parts in by_name.items():
            first = parts[0][0]
            segs = [IndexSegmentDescription(
                uuid=s["uuid"], fragment_ids=set(s["fragment_ids"] or ()), index_version=s["index_version"],
                created_at=(datetime.fromtimestamp(s["created_at_ms"] / 1000, timezone.utc)
                            if s["created_at_ms"] is not None else None),
                dataset_version_at_last_update=s["dataset_version"], size_bytes=sum(sz for _, sz in s["files"]),
                base_id=s["base_id"], covering_fields=[]) for s, _ in parts]
            out.append(IndexDescription(
                name=name, type_url=first["type_url"], index_type=first["type"],
                num_rows_indexed=sum(n for _, n in parts), fields=list(first["fields"]),
                field_names=list(first["field_names"]), segments=segs,
                total_size_bytes=sum(x.size_bytes for x in segs), details={}))
        return sorted(out, key=lambda d: d.name)

    def index_statistics(self, name: str) -> Dict[str, Any]:
        """pylance's statistics of index `name`: its kind, segments, what each segment's
        files say (a BTREE's value range and pages, a BITMAP's keys) and the rows and
        fragments it covers and does not."""
        return json.loads(self._ds.index_statistics(name))

    def create_scalar_index(self, column: str, index_type: Any, name: Optional[str] = None, *,
                            replace: bool = True, conflict_retries: int = 10, **kwargs: Any) -> "LanceDataset":
        """Build a scalar index on `column` and commit it, as pylance does: `index_type`
        "BTREE", "BITMAP", "LABEL_LIST" (on a list column, for `array_has_any`,
        `array_has_all` and `array_has`), "ZONEMAP" (value ranges per `rows_per_zone`
        rows, 8192) or "BLOOMFILTER" (a Bloom filter per `number_of_items` rows, 8192, with
        false-match `probability` 0.00057), "NGRAM" (the rows holding each trigram of a
        string column, for LIKE and `contains`), or pylance's `IndexConfig`; the index is named `name`
        (`<column>_idx` by default) and replaces one of that name unless `replace=False`.
        A BTREE's rows per page are `zone_size` (4096), given as a keyword or in an
        `IndexConfig`'s parameters. pylance reads and uses the index built. A concurrent
        commit that moved the indexed rows (a compaction) or changed the same index makes
        it build again from the new version, up to `conflict_retries` times."""
        index_type, zone_size, probability = scalar_index_params(self.uri, index_type, kwargs)
        self._ds = self._ds.create_scalar_index(column, index_type, name, bool(replace), zone_size,
                                                int(conflict_retries),
                                                None if probability is None else float(probability))
        return self

    def create_index(self, column: str, index_type: str, name: Optional[str] = None, metric: str = "L2",
                     replace: bool = True, num_partitions: Optional[int] = None, num_sub_vectors: Optional[int] = None,
                     *, num_bits: int = 8, sample_rate: int = 256, max_iters: int = 50,
                     target_partition_size: Optional[int] = None, seed: Optional[int] = None,
                     conflict_retries: int = 10, **kwargs: Any) -> "LanceDataset":
        """Build a vector index on `column` and commit it, as pylance does: `index_type`
        "IVF_FLAT", "IVF_PQ" (needs `num_sub_vectors` dividing the dimension; `num_bits` 8
        or 4) or "IVF_SQ"; `metric` "l2", "cosine" or "dot"; `num_partitions` (else one per
        4096 (FLAT) or 8192 rows); k-means on `num_partitions x sample_rate` rows for at
        most `max_iters` rounds (`seed` makes it reproducible). Scalar index types go to
        `create_scalar_index`. pylance reads and uses the index built."""
        if column not in self.field_ids():
            raise ColumnNotFoundError(f"{self.uri}: no column {column!r} to index (columns: "
                                      f"{', '.join(self.schema.names)})")
        kind = str(index_type).upper()
        if not is_vector_kind(kind):
            return self.create_scalar_index(column, kind, name, replace=replace, **kwargs)
        ignored = {"accelerator", "index_file_version", "shuffle_partition_batches", "shuffle_partition_concurrency",
                   "one_pass_ivfpq", "storage_options", "train", "kmeans_redos"}
        unknown = sorted(set(kwargs) - ignored)
        if unknown:
            raise TypeError(f"create_index() got an unexpected keyword argument '{unknown[0]}'")
        params = ivf_params(kind, metric, num_partitions, num_sub_vectors, num_bits=num_bits,
                            sample_rate=sample_rate, max_iters=max_iters,
                            target_partition_size=target_partition_size, seed=seed)
        self._ds = self._ds.create_vector_index(column, name, bool(replace), params, int(conflict_retries))
        return self

    def drop_index(self, name: str) -> None:
        """Remove index `name` from the table (a new version; its files stay until cleanup
        removes the versions that list it)."""
        self._ds = self._ds.drop_index(name)
