"""Scalar indices built on Spark: the driver checks the request and splits the fragments
into tasks of about equal rows, each task builds one segment of the index over its
fragments on an executor (files under `_indices/<uuid>/`, nothing committed), and the
driver commits every segment in one new version. Several segments with one name are one
index to pylance and to lance_core, each answering for its own fragments.

    from lance_core.spark import create_scalar_index, optimize_indices
    create_scalar_index(spark, uri, "id", "BTREE")
    optimize_indices(spark, uri)          # after appends: the new fragments indexed
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from pyspark.sql import SparkSession

from .. import _lance_core
from ..dataset import LanceDataset, dataset
from ..indices import is_vector_kind, scalar_index_params
from ..errors import InvalidInputError
from .jobs import JobFiles, parallelism, run_tasks

# One segment per task: (index name, its fragment ids, the segment's uuid).
_Task = Tuple[str, List[int], str]


def balanced_groups(fragments: List[Tuple[int, int]], n: int) -> List[List[int]]:
    """`fragments` ((id, rows) pairs) in at most `n` groups of about equal rows (largest
    first, each into the lightest group), never an empty group; ids sorted in each. The
    core's rule, which the JVM side's `CREATE INDEX` uses too."""
    return _lance_core._balanced_groups([(int(f), int(r)) for f, r in fragments], int(n))


def _tasks_of(spark: SparkSession, ds: LanceDataset, name: str, fragment_ids: List[int],
              files: JobFiles) -> List[_Task]:
    rows = {f.fragment_id: f.physical_rows for f in ds.get_fragments()}
    groups = balanced_groups([(f, rows[f]) for f in fragment_ids], parallelism(spark))
    return [(name, g, files.new_index_uuid()) for g in groups]


def _run_segments(spark: SparkSession, ds: LanceDataset, tasks: List[_Task], files: JobFiles,
                  build: Callable[[LanceDataset, int, _Task], bytes]) -> List[bytes]:
    """Run one Spark task per entry of `tasks`, each calling `build(dataset, i, task)` on
    an executor (the dataset at `ds`'s version) for what the i-th task makes (a segment's
    metadata); those in task order. Call inside `files.removed_on_error()`."""

    def run(local: LanceDataset, i: int) -> Optional[bytes]:
        segment = build(local, i, tasks[i])
        return segment if files.keep([], [tasks[i][2]]) else None

    done = run_tasks(spark, ds, files.storage_options, list(range(len(tasks))), run, "index segments")
    return [done[i] for i in range(len(tasks))]


def create_scalar_index(spark: SparkSession, uri: str, column: str, index_type: Any, name: Optional[str] = None,
                        replace: bool = True, storage_options: Optional[Dict[str, str]] = None,
                        **params: Any) -> LanceDataset:
    """Build a scalar index on `column` on Spark and commit it, as
    `LanceDataset.create_scalar_index` would (same `index_type`, `name`, `replace` and
    `params`: zone_size, rows_per_zone, number_of_items, probability): the driver checks
    the column, type, kind and name before any task runs; about
    `spark.sparkContext.defaultParallelism` tasks (never more than fragments) each build a
    segment over fragments holding about equal rows; one commit. A failed job leaves no
    index file and no new version; a compaction or update of the indexed rows committed
    meanwhile makes the commit fail (`CommitConflictError`: run it again). Returns the
    dataset at the new version."""
    ds = dataset(uri, storage_options=storage_options)
    index_type, page_rows, probability = scalar_index_params(ds.uri, index_type, params)
    name = ds._ds.check_new_index(column, index_type, name, bool(replace))
    files = JobFiles(ds.uri, storage_options)
    fragment_ids = [f.fragment_id for f in ds.get_fragments()]
    # A table without fragments still gets its (empty) index, as the local build gives it.
    tasks = _tasks_of(spark, ds, name, fragment_ids, files) or [(name, [], files.new_index_uuid())]

    def build(local: LanceDataset, i: int, task: _Task) -> bytes:
        return local._ds.build_index_segment(column, index_type, task[0], task[1], page_rows, probability, task[2])

    with files.removed_on_error():  # nothing committed: no segment the job built stays
        segments = _run_segments(spark, ds, tasks, files, build)
        return LanceDataset(ds._ds.commit_index_segments(segments, name, bool(replace)))


def optimize_indices(spark: SparkSession, uri: str, index_names: Optional[List[str]] = None,
                     storage_options: Optional[Dict[str, str]] = None) -> LanceDataset:
    """Bring indices (those in `index_names`, else all) up to date on Spark: for each
    scalar index, the fragments none of its segments covers are indexed by tasks as in
    `create_scalar_index` (new segments set up as its others; the existing segments stay),
    and the driver commits every new segment of every index in one new version. IVF_FLAT,
    IVF_PQ and IVF_SQ indices get a delta segment encoded on the driver with their own
    model (one more version). Nothing to index: the dataset is returned as it is, no new
    version. Returns the dataset."""
    ds = dataset(uri, storage_options=storage_options)
    if index_names is not None:
        known = {i["name"] for i in ds.list_indices()}
        unknown = [n for n in index_names if n not in known]
        if unknown:
            raise InvalidInputError(f"{ds.uri}: there is no index named '{unknown[0]}'")
    deltas = ds._ds.index_deltas(index_names)
    vector = sorted({i["name"] for i in ds.list_indices() if is_vector_kind(i["type"], built=True)
                     and (index_names is None or i["name"] in index_names)})
    if deltas:
        files = JobFiles(ds.uri, storage_options)
        tasks = [t for name, fragment_ids in deltas for t in _tasks_of(spark, ds, name, fragment_ids, files)]

        def build(local: LanceDataset, i: int, task: _Task) -> bytes:
            return local._ds.build_index_delta(task[0], task[1], task[2])

        with files.removed_on_error():  # nothing committed: no segment the job built stays
            segments = _run_segments(spark, ds, tasks, files, build)
            ds = LanceDataset(ds._ds.commit_index_segments(segments))
    if vector:
        # Vector indices: the new fragments encoded with each index's model, on the driver
        # (both cores), as a delta segment; a version of its own when there is any.
        ds.optimize.optimize_indices(index_names=vector, num_indices_to_merge=0)
    return ds
