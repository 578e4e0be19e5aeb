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

from ..errors import InvalidInputError
from .jobs import is_connect

from .datasource import LanceDataSource, LancePartition, LancePythonDataSource, LanceReader, LanceWriter
from .aggregate import aggregate
from .indices import create_scalar_index, optimize_indices
from .pipeline import add_columns, compact, count, read_fragments
from .row_changes import SparkMergeInsert, merge_insert, update
from .streaming import LanceBatchWriter, LanceStreamReader, LanceStreamWriter
from .types import spark_schema
from .vectors import create_index, nearest

__all__ = ["LanceBatchWriter", "LanceDataSource", "LancePythonDataSource", "connect_server_command", "jar_path", "jvm_reader_loaded", "session", "LancePartition", "LanceReader", "LanceStreamReader", "LanceStreamWriter",
           "LanceWriter", "SparkMergeInsert", "add_columns", "aggregate", "compact", "count", "create_index",
           "create_scalar_index", "merge_insert", "nearest", "optimize_indices", "read_fragments", "spark_schema", "register", "update"]


# The JVM side's session extensions (its SQL statements and planning rule).
EXTENSIONS = "lance_core.spark.LanceExtensions"


def register(spark) -> None:
    """Register the Python data source with `spark`: as `lance` (the same as
    `spark.dataSource.register(LanceDataSource)`), or as `lance_python` when the JVM
    reader is on the session's classpath (it is then `lance`, and hands writes and streams
    to the Python data source). Works on a Spark Connect session too (the class is sent to
    the server)."""
    if jvm_reader_loaded(spark):
        spark.dataSource.register(LancePythonDataSource)
        if not is_connect(spark):
            # count(), min and max answered while planning then run no Spark job (see
            # AnsweredScanRule): among the last optimizations, where the local relation it
            # makes is the whole plan (the extensions' copy runs earlier, for Connect).
            spark._jvm.lance_core.spark.AnsweredScanRule.install(spark._jsparkSession)
    else:
        spark.dataSource.register(LanceDataSource)


def jar_path() -> Optional[str]:
    """The JVM reader's jar in this installation (carrying its native library), or None
    when it was not built."""
    jar = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "jars", "lance-core-spark.jar")
    return jar if os.path.isfile(jar) else None


def jvm_reader_loaded(spark) -> bool:
    """Whether `spark`'s JVM can load the JVM reader (its jar is on the classpath); for a
    Spark Connect session, whether the server was started with the jar (`spark.jars`)."""
    if is_connect(spark):
        return "lance-core-spark" in (spark.conf.get("spark.jars", "") or "")
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
    that already exists keeps its classpath (and the Python data source is used). A Spark
    Connect builder (`builder.remote(url)`) gets what its server was started with (see
    `connect_server_command`)."""
    from pyspark.sql import SparkSession

    builder = builder if builder is not None else SparkSession.builder
    jar = jar_path() if jvm_reader and "spark.remote" not in builder._options else None
    if jar is not None:
        given = builder._options.get("spark.jars")
        builder = builder.config("spark.jars", ",".join(j for j in (given, jar) if j))
        # The SQL statements Spark's parser lacks (OPTIMIZE, VACUUM, tags, ...) and the
        # rule answering count/min/max while planning: see LanceExtensions.
        extensions = builder._options.get("spark.sql.extensions")
        if EXTENSIONS not in (extensions or ""):
            builder = builder.config("spark.sql.extensions", ",".join(e for e in (extensions, EXTENSIONS) if e))
    spark = builder.getOrCreate()
    register(spark)
    return spark


def connect_server_command(port: int = 15002, host: str = "localhost", master: str = "local[*]",
                           conf: Optional[dict] = None) -> list:
    """The command that starts a Spark Connect server in the foreground with lance_core's
    JVM reader: pyspark's `spark-submit` of the server class, with the jar and its session
    extensions (what `$SPARK_HOME/sbin/start-connect-server.sh` runs, without detaching).
    Clients then use `lance_core.spark.session(SparkSession.builder.remote(f"sc://{host}:{port}"))`;
    the server's Python workers must have lance_core (`PYSPARK_PYTHON`)."""
    import pyspark

    jar = jar_path()
    if jar is None:
        raise InvalidInputError("the JVM reader's jar is not built (run java/build.sh)")
    settings = {"spark.connect.grpc.binding.address": host, "spark.connect.grpc.binding.port": str(port),
                "spark.sql.extensions": EXTENSIONS, **(conf or {})}
    command = [os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit"),
               "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
               "--name", "Spark Connect server", "--master", master, "--jars", jar]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    return command

