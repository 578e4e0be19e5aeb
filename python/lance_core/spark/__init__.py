"""Spark integration: the `lance` data source (batch and Structured Streaming, source and
sink), `mapInArrow` pipeline helpers, distributed `update` and `merge_insert`, scalar
and vector indices built on the executors (`create_scalar_index`, `create_index`,
`optimize_indices`), and batch vector search (`nearest`).

    import lance_core.spark
    spark = lance_core.spark.session(SparkSession.builder.master("local[*]"))
    spark.read.format("lance").load(uri)

`session` puts the JVM reader shipped in the wheel (`jars/lance-core-spark.jar` and its
native library) on the session's classpath: batch reads of `format("lance")` then run on
the JVM, calling the Rust core through JNI and handing Spark columnar batches, while
writes and streams go to the Python data source (registered as `lance_python`). Without
the jar (`session(builder, jvm_reader=False)`, or `register(spark)` on a session built
without it) the Python data source is `lance` for everything.

Needs pyspark >= 4.1 (Python data sources with filter pushdown and Arrow batches).
"""

try:
    from pyspark.sql.datasource import DataSource  # noqa: F401  (pyspark >= 4.1 has it)
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("lance_core.spark needs pyspark >= 4.1 (pip install 'pyspark>=4.1')") from e

import os
from typing import Optional

from .datasource import LanceDataSource, LancePartition, LancePythonDataSource, LanceReader, LanceWriter
from .aggregate import aggregate
from .indices import create_scalar_index, optimize_indices
from .pipeline import add_columns, compact, count, read_fragments
from .row_changes import SparkMergeInsert, merge_insert, update
from .streaming import LanceBatchWriter, LanceStreamReader, LanceStreamWriter
from .types import spark_schema
from .vectors import create_index, nearest

__all__ = ["LanceBatchWriter", "LanceDataSource", "LancePythonDataSource", "jar_path", "jvm_reader_loaded", "session", "LancePartition", "LanceReader", "LanceStreamReader", "LanceStreamWriter",
           "LanceWriter", "SparkMergeInsert", "add_columns", "aggregate", "compact", "count", "create_index",
           "create_scalar_index", "merge_insert", "nearest", "optimize_indices", "read_fragments", "spark_schema", "register", "update"]


def register(spark) -> None:
    """Register the Python data source with `spark`: as `lance` (the same as
    `spark.dataSource.register(LanceDataSource)`), or as `lance_python` when the JVM
    reader is on the session's classpath (it is then `lance`, and hands writes and streams
    to the Python data source)."""
    if jvm_reader_loaded(spark):
        spark.dataSource.register(LancePythonDataSource)
        # count(), min and max answered while planning then run no Spark job (see AnsweredScanRule).
        spark._jvm.lance_core.spark.AnsweredScanRule.install(spark._jsparkSession)
    else:
        spark.dataSource.register(LanceDataSource)


def jar_path() -> Optional[str]:
    """The JVM reader's jar in this installation (its native library beside it), or None
    when it was not built."""
    jar = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "jars", "lance-core-spark.jar")
    return jar if os.path.isfile(jar) else None


def jvm_reader_loaded(spark) -> bool:
    """Whether `spark`'s JVM can load the JVM reader (its jar is on the classpath)."""
    jvm = spark._jvm
    try:
        loader = jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
        jvm.java.lang.Class.forName("lance_core.spark.LanceDataSource", False, loader)
        return True
    except Exception:
        return False


def session(builder=None, jvm_reader: bool = True):
    """Build (or get) a SparkSession from `builder` (default `SparkSession.builder`) with
    lance_core's data source registered, and, unless `jvm_reader=False`, its JVM reader's
    jar on the classpath. The jar must be given before the session's JVM starts: a session
    that already exists keeps its classpath (and the Python data source is used)."""
    from pyspark.sql import SparkSession

    builder = builder if builder is not None else SparkSession.builder
    jar = jar_path() if jvm_reader else None
    if jar is not None:
        given = builder._options.get("spark.jars")
        builder = builder.config("spark.jars", ",".join(j for j in (given, jar) if j))
    spark = builder.getOrCreate()
    register(spark)
    return spark
