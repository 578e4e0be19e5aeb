"""Shared helpers: datasets are written by pylance (the reference) inside the tests."""

from __future__ import annotations

import os

# No test may reach the instance metadata service (it is on the network, not this machine):
# a store left without credentials then fails at once, in lance_core and in pylance.
os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
# Every Spark JVM the tests start (local sessions, their subprocesses, drivers of clusters and
# Connect servers) binds to loopback, not the address the host name resolves to.
os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"

import pyarrow as pa  # noqa: E402
import pytest  # noqa: E402

import lance  # noqa: E402  the reference (pylance): a test dependency that must be installed


def pytest_runtest_setup(item):
    """Tests that share an expensive fixture (a Spark cluster, the local answers) are
    grouped onto one worker with `xdist_group`; pytest-xdist marks a grouped test by
    suffixing its node id with the group. When a pytest/xdist pairing loses that (as
    pytest 9.2 with xdist 3.8 did), every group is spread over the workers and each of
    them pays for the fixture: fail instead of running slower unnoticed."""
    if getattr(item.config.option, "loadgroup", False) and any(item.iter_markers("xdist_group")) \
            and "@" not in item.nodeid:
        pytest.fail("pytest-xdist did not group this test onto one worker: this pytest and "
                    "pytest-xdist do not work together (see pyproject.toml)", pytrace=False)


def pytest_sessionfinish(session, exitstatus):
    """CI must not pass while testing less: a skipped test fails the run (the README says
    every test runs). LANCE_CORE_ALLOW_SKIPS=1 allows skips for a local partial setup."""
    import os

    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if skipped and os.environ.get("LANCE_CORE_ALLOW_SKIPS") != "1" and session.exitstatus == 0:
        for rep in skipped:
            reporter.write_line(f"SKIPPED (not allowed): {rep.nodeid}: {rep.longrepr}", red=True)
        session.exitstatus = 1


def canonical(t: pa.Table) -> pa.Table:
    return t.combine_chunks()


def assert_same(ours: pa.Table, ref: pa.Table, what: str = ""):
    """Equal schemas (names, types, nullability) and equal values, column by column, so a
    failure names the column."""
    assert ours.num_rows == ref.num_rows, f"{what}: {ours.num_rows} rows, reference {ref.num_rows}"
    assert ours.column_names == ref.column_names, f"{what}: columns {ours.column_names} vs {ref.column_names}"
    for name in ref.column_names:
        a, b = ours.column(name).combine_chunks(), ref.column(name).combine_chunks()
        assert a.type == b.type, f"{what}: column {name}: type {a.type} vs reference {b.type}"
        if pa.types.is_dictionary(a.type):
            # Equal values may come with different dictionaries.
            a, b = a.cast(a.type.value_type), b.cast(b.type.value_type)
        if not a.equals(b):
            for i in range(len(b)):
                if a[i] != b[i]:
                    raise AssertionError(f"{what}: column {name} row {i}: {a[i]!r} vs reference {b[i]!r}")
            raise AssertionError(f"{what}: column {name} differs")


def assert_reads_like_pylance(path: str, **scan) -> pa.Table:
    """lance_core's `to_table(**scan)` of the dataset at `path` equals pylance's; returns ours."""
    import lance_core

    ours = lance_core.dataset(path).to_table(**scan)
    assert_same(ours, lance.dataset(path).to_table(**scan), path)
    return ours


@pytest.fixture
def tmp_uri(tmp_path):
    return str(tmp_path / "ds.lance")


@pytest.fixture(scope="session")
def spark():
    """One local[2] SparkSession for every Spark test module (starting one takes seconds).
    `format("lance")` reads with the JVM reader (the jar built into lance_core/jars), and
    the Python data source is `lance_python`; with LANCE_CORE_SPARK_READER=python the
    session has no jar and the Python data source is `lance` for everything."""
    import os
    import sys

    from pyspark.sql import SparkSession

    import lance_core.spark

    # Spark's Python workers must run this interpreter (the one lance_core is installed in),
    # not whatever `python3` is first on PATH.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    python_reader = os.environ.get("LANCE_CORE_SPARK_READER", "jvm") == "python"
    assert python_reader or lance_core.spark.jar_path() is not None, \
        "the JVM reader is not built: run java/build.sh (make setup does)"
    builder = (SparkSession.builder.master("local[2]").appName("lance_core-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC"))
    session = lance_core.spark.session(builder, jvm_reader=not python_reader)
    session.sparkContext.setLogLevel("ERROR")
    assert lance_core.spark.jvm_reader_loaded(session) != python_reader
    yield session
    session.stop()


@pytest.fixture(scope="session")
def local_answers(spark, tmp_path_factory):
    """`spark_steps.run`'s answers in the tests' `local[2]` session, which the runs on a
    cluster and through Spark Connect must give too."""
    import json

    import spark_steps

    return json.loads(json.dumps(spark_steps.run(spark, str(tmp_path_factory.mktemp("local-steps")))))
