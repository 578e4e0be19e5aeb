"""Distributed compaction with pylance's names: plan on one process, execute the tasks
anywhere (they pickle), commit the results once.

>>> plan = Compaction.plan(ds, {"target_rows_per_fragment": 1_000_000})
>>> results = [task.execute(ds) for task in plan.tasks]      # on any workers
>>> metrics = Compaction.commit(ds, results)
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from .errors import InvalidInputError
from .fragment_metadata import FragmentMetadata
from .results import CompactionMetrics
from .table_config import AutoCleanupConfig, auto_cleanup_keys

if TYPE_CHECKING:
    from .dataset import LanceDataset

_KNOWN = {"target_rows_per_fragment", "max_rows_per_group", "max_bytes_per_file", "materialize_deletions",
          "materialize_deletions_threshold", "num_threads", "batch_size", "defer_index_remap"}


def _options(options: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """pylance's compaction options, checked, as the core takes them."""
    options = dict(options or {})
    unknown = set(options) - _KNOWN
    if unknown:
        raise InvalidInputError(f"unknown compaction options {sorted(unknown)}")
    target = options.get("target_rows_per_fragment")
    out = {"target_rows_per_fragment": 1024 * 1024 if target is None else int(target),
           "materialize_deletions": options.get("materialize_deletions", True) is not False,
           "materialize_deletions_threshold": float(options.get("materialize_deletions_threshold", 0.1)),
           "batch_size": options.get("batch_size"), "max_bytes_per_file": options.get("max_bytes_per_file")}
    if out["target_rows_per_fragment"] < 1:
        raise InvalidInputError("target_rows_per_fragment must be positive")
    if not 0 <= out["materialize_deletions_threshold"] <= 1:
        raise InvalidInputError("materialize_deletions_threshold is a share of rows, between 0 and 1")
    for key in ("batch_size", "max_bytes_per_file"):
        if out[key] is not None and int(out[key]) < 1:
            raise InvalidInputError(f"{key} must be positive")
    return out


def _at(ds: "LanceDataset", version: int) -> "LanceDataset":
    return ds if ds.version == version else ds.checkout_version(version)


def _metrics(old: List[FragmentMetadata], new: List[FragmentMetadata]) -> CompactionMetrics:
    """What replacing `old` by `new` counts (the core's rule: a deletion file is a file)."""
    return CompactionMetrics(len(old), len(new),
                             sum(len(f.files) + (f.deletion_file is not None) for f in old),
                             sum(len(f.files) for f in new))


class RewriteResult:
    """What one task wrote: the fragments it replaces (`original_fragments`) and their
    replacements (`new_fragments`, not committed), with the task's `metrics`."""

    def __init__(self, read_version: int, original_fragments: List[FragmentMetadata],
                 new_fragments: List[FragmentMetadata]) -> None:
        self.read_version = read_version
        self.original_fragments = list(original_fragments)
        self.new_fragments = list(new_fragments)

    @property
    def fragment_ids(self) -> List[int]:
        return [f.id for f in self.original_fragments]

    @property
    def metrics(self) -> CompactionMetrics:
        return _metrics(self.original_fragments, self.new_fragments)

    def json(self) -> str:
        return json.dumps({"read_version": self.read_version,
                           "original_fragments": [f.to_json() for f in self.original_fragments],
                           "new_fragments": [f.to_json() for f in self.new_fragments]})

    @staticmethod
    def from_json(text: str) -> "RewriteResult":
        obj = json.loads(text)
        return RewriteResult(obj["read_version"], [FragmentMetadata.from_json(f) for f in obj["original_fragments"]],
                             [FragmentMetadata.from_json(f) for f in obj["new_fragments"]])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RewriteResult) and (self.read_version, self.original_fragments, self.new_fragments) \
            == (other.read_version, other.original_fragments, other.new_fragments)

    def __repr__(self) -> str:
        return (f"RewriteResult(read_version={self.read_version}, new_fragments={self.new_fragments!r}, "
                f"old_fragments={self.original_fragments!r})")


class CompactionTask:
    """Neighbouring fragments of version `read_version` (`fragments`, their metadata) to
    rewrite together."""

    def __init__(self, read_version: int, fragments: List[FragmentMetadata], rows: int,
                 options: Dict[str, Any]) -> None:
        self.read_version = read_version
        self.fragments = list(fragments)
        self.rows = rows
        self.options = options

    @property
    def fragment_ids(self) -> List[int]:
        return [f.id for f in self.fragments]

    def execute(self, dataset: "LanceDataset", file_prefix: Optional[str] = None) -> RewriteResult:
        """Write the new fragments (nothing is committed)."""
        ds = _at(dataset, self.read_version)
        new = ds._ds.execute_compaction_task(self.fragment_ids, self.rows, self.options, file_prefix)
        return RewriteResult(self.read_version, self.fragments, [FragmentMetadata._from_bytes(f) for f in new])

    def json(self) -> str:
        return json.dumps({"read_version": self.read_version, "fragments": [f.to_json() for f in self.fragments],
                           "rows": self.rows, "options": self.options})

    @staticmethod
    def from_json(text: str) -> "CompactionTask":
        obj = json.loads(text)
        return CompactionTask(obj["read_version"], [FragmentMetadata.from_json(f) for f in obj["fragments"]],
                              obj["rows"], obj["options"])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CompactionTask) and (self.read_version, self.fragments, self.rows, self.options) \
            == (other.read_version, other.fragments, other.rows, other.options)

    def __repr__(self) -> str:
        return f"CompactionTask(read_version={self.read_version}, fragments={self.fragments!r})"


class CompactionPlan:
    def __init__(self, read_version: int, tasks: List[CompactionTask]) -> None:
        self.read_version = read_version
        self.tasks = tasks

    def num_tasks(self) -> int:
        return len(self.tasks)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CompactionPlan) and (self.read_version, self.tasks) == (other.read_version,
                                                                                          other.tasks)

    def __repr__(self) -> str:
        return f"CompactionPlan(read_version={self.read_version}, tasks=<{len(self.tasks)} compaction tasks>)"


class Compaction:
    @staticmethod
    def plan(dataset: "LanceDataset", options: Optional[Dict[str, Any]] = None) -> CompactionPlan:
        """The tasks that compact `dataset` at its version (pylance's rules)."""
        opts = _options(options)
        raw = dataset._ds.plan_compaction(opts)
        def metadata(ids: List[int]) -> List[FragmentMetadata]:
            return [FragmentMetadata._from_bytes(dataset._ds.fragment_metadata(i)) for i in ids]
        return CompactionPlan(dataset.version,
                              [CompactionTask(dataset.version, metadata(ids), rows, opts) for ids, rows in raw])

    @staticmethod
    def commit(dataset: "LanceDataset", rewrites: List[RewriteResult]) -> "CompactionMetrics":
        """Commit every task's result as one new version (a `Rewrite`); `dataset` moves to it.
        Appends made since the plan are kept; a delete of the same fragments is a conflict
        (the new files are then removed; plan again)."""
        versions = {r.read_version for r in rewrites}
        if len(versions) > 1:
            raise InvalidInputError(f"results of plans of different versions {sorted(versions)}")
        if not rewrites:
            return CompactionMetrics(0, 0, 0, 0)
        base = _at(dataset, versions.pop())
        new, m = base._ds.commit_compaction([(r.fragment_ids, [f.data for f in r.new_fragments]) for r in rewrites])
        dataset._ds = new
        return CompactionMetrics(*m)


class DatasetOptimizer:
    """`ds.optimize`: compaction, and bringing indices up to date."""

    def __init__(self, ds: "LanceDataset") -> None:
        self._dataset = ds

    def optimize_indices(self, *, index_names: Optional[List[str]] = None, num_indices_to_merge: int = 1,
                         retrain: bool = False, **kwargs: Any) -> None:
        """Index the fragments added since each index was built, as pylance does: by
        default (`num_indices_to_merge` > 0, or `retrain`) each index becomes one segment
        over every fragment; with `num_indices_to_merge=0` a new segment over just the new
        fragments joins the old ones (a delta). Vector indices keep their trained model
        (new vectors encoded with its centroids and codebook; `retrain` does not retrain
        them); IVF_HNSW indices are left as they are (their new fragments are searched
        exhaustively). `index_names` limits it to those indices. One new version, or none
        when every index is up to date."""
        merge = bool(retrain) or int(num_indices_to_merge) > 0
        names = list(index_names) if index_names is not None else None
        self._dataset._ds = self._dataset._ds.optimize_indices(names, merge)

    def compact_files(self, *, target_rows_per_fragment: int = 1024 * 1024, max_rows_per_group: int = 1024,
                      max_bytes_per_file: Optional[int] = None, materialize_deletions: bool = True,
                      materialize_deletions_threshold: float = 0.1, num_threads: Optional[int] = None,
                      batch_size: Optional[int] = None, **kwargs: Any) -> CompactionMetrics:
        """Merge runs of neighbouring fragments smaller than `target_rows_per_fragment`
        and rewrite fragments with more than `materialize_deletions_threshold` of their
        rows deleted, in one new version (a `Rewrite`); rows keep their order and their
        stable row ids. A new file is cut once `max_bytes_per_file` of it are written (as
        in pylance, pages go out about 8 MiB at a time). `max_rows_per_group` and
        `num_threads` are accepted for pylance's sake (2.x files have no row groups).
        Appends committed meanwhile are kept; a delete of the same fragments makes this
        fail, to retry."""
        options = _options({"target_rows_per_fragment": target_rows_per_fragment,
                            "materialize_deletions": materialize_deletions,
                            "materialize_deletions_threshold": materialize_deletions_threshold,
                            "batch_size": batch_size, "max_bytes_per_file": max_bytes_per_file})
        ds = self._dataset
        new, m = ds._ds.compact_files(options)
        ds._ds = new
        return CompactionMetrics(*m)

    def enable_auto_cleanup(self, auto_cleanup_config: AutoCleanupConfig, **kwargs: Any) -> None:
        """From now on, every `interval`-th commit removes the versions older than
        `older_than_seconds` (a config change: one new version)."""
        self._dataset.update_config(auto_cleanup_keys(auto_cleanup_config))

    def disable_auto_cleanup(self, **kwargs: Any) -> None:
        """Stop cleaning up on commit (a config change: one new version)."""
        self._dataset.delete_config_keys(["lance.auto_cleanup.interval", "lance.auto_cleanup.older_than"])
