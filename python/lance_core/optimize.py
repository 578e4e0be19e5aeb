"""Distributed compaction with pylance's names: plan on one process, execute the tasks
anywhere (they pickle), commit the results once.

>>> plan = Compaction.plan(ds, {"target_rows_per_fragment": 1_000_000})
>>> results = [task.execute(ds) for task in plan.tasks]      # on any workers
>>> metrics = Compaction.commit(ds, results)
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from .dataset import CompactionMetrics, LanceDataset
from .errors import InvalidInputError

_KNOWN = {"target_rows_per_fragment", "max_rows_per_group", "max_bytes_per_file", "materialize_deletions",
          "materialize_deletions_threshold", "num_threads", "batch_size", "defer_index_remap"}


def _options(options: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    options = dict(options or {})
    unknown = set(options) - _KNOWN
    if unknown:
        raise InvalidInputError(f"unknown compaction options {sorted(unknown)}")
    out = {"target_rows_per_fragment": int(options.get("target_rows_per_fragment") or 1024 * 1024),
           "materialize_deletions": options.get("materialize_deletions", True) is not False,
           "materialize_deletions_threshold": float(options.get("materialize_deletions_threshold", 0.1)),
           "batch_size": options.get("batch_size")}
    if out["target_rows_per_fragment"] < 1:
        raise InvalidInputError("target_rows_per_fragment must be positive")
    if not 0 <= out["materialize_deletions_threshold"] <= 1:
        raise InvalidInputError("materialize_deletions_threshold is a share of rows, between 0 and 1")
    return out


def _at(ds: "LanceDataset", version: int) -> "LanceDataset":
    return ds if ds.version == version else ds.checkout_version(version)


class RewriteResult:
    """What one task wrote: the fragments it replaces and their new metadata (not committed)."""

    def __init__(self, read_version: int, fragment_ids: List[int], new_fragments: List[bytes]) -> None:
        self.read_version = read_version
        self.fragment_ids = list(fragment_ids)
        self.new_fragments = list(new_fragments)

    def __repr__(self) -> str:
        return f"RewriteResult(fragments {self.fragment_ids} -> {len(self.new_fragments)} new)"


class CompactionTask:
    """Neighbouring fragments of version `read_version` to rewrite together."""

    def __init__(self, read_version: int, fragment_ids: List[int], rows: int, options: Dict[str, Any]) -> None:
        self.read_version = read_version
        self.fragment_ids = list(fragment_ids)
        self.rows = rows
        self.options = options

    def execute(self, dataset: "LanceDataset", file_prefix: Optional[str] = None) -> RewriteResult:
        """Write the new fragments (nothing is committed)."""
        ds = _at(dataset, self.read_version)
        new = ds._ds.execute_compaction_task(self.fragment_ids, self.rows, self.options["target_rows_per_fragment"],
                                             self.options["batch_size"], file_prefix)
        return RewriteResult(self.read_version, self.fragment_ids, new)

    def __repr__(self) -> str:
        return f"CompactionTask(version={self.read_version}, fragments={self.fragment_ids}, rows={self.rows})"


class CompactionPlan:
    def __init__(self, read_version: int, tasks: List[CompactionTask]) -> None:
        self.read_version = read_version
        self.tasks = tasks

    def num_tasks(self) -> int:
        return len(self.tasks)

    def __repr__(self) -> str:
        return f"CompactionPlan(version={self.read_version}, tasks={len(self.tasks)})"


class Compaction:
    @staticmethod
    def plan(dataset: "LanceDataset", options: Optional[Dict[str, Any]] = None) -> CompactionPlan:
        """The tasks that compact `dataset` at its version (pylance's rules)."""
        opts = _options(options)
        raw = dataset._ds.plan_compaction(opts["target_rows_per_fragment"], opts["materialize_deletions"],
                                          opts["materialize_deletions_threshold"])
        return CompactionPlan(dataset.version, [CompactionTask(dataset.version, ids, rows, opts) for ids, rows in raw])

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
        new, m = base._ds.commit_compaction([(r.fragment_ids, r.new_fragments) for r in rewrites])
        dataset._ds = new
        return CompactionMetrics(*m)
