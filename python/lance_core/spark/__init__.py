"""Spark integration: the `lance` data source (batch and Structured Streaming, source and
sink), `mapInArrow` pipeline helpers, distributed `update` and `merge_insert`, scalar
and vector indices built on the executors (`create_scalar_index`, `create_index`,
`optimize_indices`), and batch vector search (`nearest`).

    from lance_core.spark import LanceDataSource
    spark.dataSource.register(LanceDataSource)
    spark.read.format("lance").load(uri)

Needs pyspark >= 4.1 (Python data sources with filter pushdown and Arrow batches).
"""

try:
    from pyspark.sql.datasource import DataSource  # noqa: F401  (pyspark >= 4.1 has it)
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("lance_core.spark needs pyspark >= 4.1 (pip install 'pyspark>=4.1')") from e

from .datasource import LanceDataSource, LancePartition, LanceReader, LanceWriter
from .aggregate import aggregate
from .indices import create_scalar_index, optimize_indices
from .pipeline import add_columns, compact, count, read_fragments
from .row_changes import SparkMergeInsert, merge_insert, update
from .streaming import LanceBatchWriter, LanceStreamReader, LanceStreamWriter
from .types import spark_schema
from .vectors import create_index, nearest

__all__ = ["LanceBatchWriter", "LanceDataSource", "LancePartition", "LanceReader", "LanceStreamReader", "LanceStreamWriter",
           "LanceWriter", "SparkMergeInsert", "add_columns", "aggregate", "compact", "count", "create_index",
           "create_scalar_index", "merge_insert", "nearest", "optimize_indices", "read_fragments", "spark_schema", "register", "update"]


def register(spark) -> None:
    """Register the `lance` data source with `spark` (the same as
    `spark.dataSource.register(LanceDataSource)`)."""
    spark.dataSource.register(LanceDataSource)
