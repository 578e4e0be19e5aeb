"""Structured Streaming on local[2]: the `lance` sink (one version per micro-batch, a
replayed batch never committed twice, a killed driver restarted from its checkpoint with
every row exactly once) and the `lance` source (offsets are versions: the snapshot, then
what appends add; limits; change commits reported or skipped)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from datetime import timedelta

import lance
import pyarrow as pa
import pytest

import lance_core

import pyspark  # noqa: F401

from lance_core.spark.streaming import (BATCH_ID, QUERY_ID, LanceStreamCommitMessage,  # noqa: E402
                                        LanceStreamWriter, last_committed_batch)
from pyspark.sql.types import LongType, StringType, StructField, StructType  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def _batch_ids(uri: str, query_id: str):
    """The batch ids of the versions `query_id` committed, oldest first."""
    ds = lance_core.dataset(uri)
    out = []
    for v in range(1, ds.version + 1):
        t = ds.read_transaction(v)
        if t is not None and t.transaction_properties.get(QUERY_ID) == query_id:
            out.append(int(t.transaction_properties[BATCH_ID]))
    return out


def _assert_exactly_once(uri: str, column: str = "value"):
    """Every value 0..n-1 once, read by pylance and by lance_core alike, at one version: a
    killed driver's Python workers are not in its process group (pyspark's daemon makes its
    own), and one may still finish a commit after the kill."""
    ds = lance_core.dataset(uri)
    ours = ds.to_table(columns=[column])[column].to_pylist()
    ref = lance.dataset(uri, version=ds.version).to_table(columns=[column])[column].to_pylist()
    assert sorted(ours) == sorted(ref)
    assert sorted(ours) == list(range(len(ours))), "a row is missing or was written twice"
    return len(ours)


def _run_until_version(q, uri: str, version: int, timeout: float = 120) -> None:
    """Let streaming query `q` run until the table at `uri` reaches `version`, then stop it;
    it must not have failed."""
    try:
        deadline = time.time() + timeout
        while time.time() < deadline and q.exception() is None:
            if os.path.isdir(os.path.join(uri, "_versions")) and lance_core.dataset(uri).version >= version:
                break
            time.sleep(0.1)
    finally:
        q.stop()
    assert q.exception() is None


def test_sink_commits_each_batch_once(spark, tmp_path):
    uri, ck = str(tmp_path / "t.lance"), str(tmp_path / "ck")
    source = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 500).option("numPartitions", 2).load()
    q = source.writeStream.format("lance").option("checkpointLocation", ck).trigger(processingTime="0 seconds").start(uri)
    _run_until_version(q, uri, 4)
    n = _assert_exactly_once(uri)
    assert n >= 2000 and n % 500 == 0
    # One version per batch: the first creates the table; each records the query and batch.
    ids = _batch_ids(uri, q.id)
    assert ids == list(range(len(ids))) and len(ids) == lance_core.dataset(uri).version
    assert lance.dataset(uri).read_transaction(2).transaction_properties == {QUERY_ID: q.id, BATCH_ID: "1"}
    assert lance.dataset(uri).schema.names == ["timestamp", "value"]


def _task_output(uri: str, writer: LanceStreamWriter, batch_id: int, values, query_id: str):
    """What a task of `batch_id` would send the driver after writing `values`."""
    from lance_core.spark.datasource import write_task

    batch = pa.record_batch({"id": pa.array(values, pa.int64()), "s": pa.array([str(v) for v in values])})
    existing = os.path.isdir(os.path.join(uri, "_versions"))
    target = lance_core.dataset(uri).schema if existing else writer.spark_arrow
    frags = write_task(iter([batch]), uri, target, not existing, writer._files(batch_id), writer.settings)
    return LanceStreamCommitMessage(frags, query_id)


def test_replayed_batch_is_not_committed_twice(tmp_path):
    uri = str(tmp_path / "t.lance")
    schema = StructType([StructField("id", LongType()), StructField("s", StringType())])
    writer = LanceStreamWriter(uri, schema, False, {"path": uri})
    writer.commit([_task_output(uri, writer, 0, [0, 1], "q1")], 0)
    writer.commit([_task_output(uri, writer, 1, [2, 3], "q1")], 1)
    files = sorted(os.listdir(os.path.join(uri, "data")))
    # Spark replays batch 1 (its end was not in the checkpoint): nothing new is committed,
    # and the replay's files are removed.
    writer.commit([_task_output(uri, writer, 1, [2, 3], "q1")], 1)
    assert lance_core.dataset(uri).version == 2
    assert sorted(os.listdir(os.path.join(uri, "data"))) == files
    assert last_committed_batch(lance_core.dataset(uri), "q1") == 1
    # Another query (a new checkpoint, a new writer) counts its batches from 0 again, and
    # commits them.
    writer = LanceStreamWriter(uri, schema, False, {"path": uri})
    writer.commit([_task_output(uri, writer, 0, [4], "q2")], 0)
    assert lance_core.dataset(uri).version == 3
    assert sorted(lance.dataset(uri).to_table()["id"].to_pylist()) == [0, 1, 2, 3, 4]
    # Tasks that found no table (and numbered the fields themselves) cannot be appended to
    # one another writer created meanwhile: the batch fails, its files go.
    before = sorted(os.listdir(os.path.join(uri, "data")))
    msg = _task_output(uri, writer, 2, [9], "q2")
    msg.created = True
    with pytest.raises(lance_core.CommitConflictError, match="created by another writer"):
        writer.commit([msg], 2)
    assert sorted(os.listdir(os.path.join(uri, "data"))) == before
    # An aborted batch leaves no file.
    before = sorted(os.listdir(os.path.join(uri, "data")))
    msg = _task_output(uri, writer, 1, [5], "q2")
    assert len(os.listdir(os.path.join(uri, "data"))) == len(before) + 1
    writer.abort([msg, None], 1)
    assert sorted(os.listdir(os.path.join(uri, "data"))) == before
    assert lance_core.dataset(uri).version == 3


def _run_driver(uri: str, ck: str, target: int, kill_after_versions=None) -> int:
    """Run tests/stream_driver.py; with `kill_after_versions`, SIGKILL its whole process
    group (Python driver and JVM) at a random moment once the table has that many
    versions. Returns the exit code."""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "stream_driver.py"), uri, ck, "300", str(target)],
                            env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        if kill_after_versions is None:
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err.decode(errors="replace")[-3000:]
            return proc.returncode
        deadline = time.time() + 240
        while time.time() < deadline and proc.poll() is None:
            if os.path.isdir(os.path.join(uri, "_versions")) and lance_core.dataset(uri).version >= kill_after_versions:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the driver ended before it could be killed"
        time.sleep(random.uniform(0.0, 0.5))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        return proc.returncode
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_killed_driver_restarts_with_every_row_once(tmp_path):
    uri, ck = str(tmp_path / "t.lance"), str(tmp_path / "ck")
    assert _run_driver(uri, ck, 10**9, kill_after_versions=3) == -signal.SIGKILL
    committed = lance_core.dataset(uri).version
    # Put the checkpoint in the state a kill just after the table commit leaves, if the
    # kill came later: the last planned batch is in the table, but Spark has not recorded
    # it as done, so the restarted query replays it (and the sink must not commit it again).
    with open(os.path.join(ck, "metadata")) as f:
        query_id = json.load(f)["id"]
    in_table = _batch_ids(uri, query_id)
    assert in_table == list(range(committed))
    planned = max(int(n) for n in os.listdir(os.path.join(ck, "offsets")) if n.isdigit())
    done = max((int(n) for n in os.listdir(os.path.join(ck, "commits")) if n.isdigit()), default=-1)
    if planned == done == in_table[-1]:
        for name in (str(done), f".{done}.crc"):
            if os.path.exists(os.path.join(ck, "commits", name)):
                os.remove(os.path.join(ck, "commits", name))
    assert planned in (in_table[-1], in_table[-1] + 1)
    _assert_exactly_once(uri)

    # A second kill, at a random moment of the restarted stream, then a run to the end.
    assert _run_driver(uri, ck, 10**9, kill_after_versions=committed + 2) == -signal.SIGKILL
    _assert_exactly_once(uri)
    target = (lance_core.dataset(uri).count_rows() // 300 + 3) * 300
    _run_driver(uri, ck, target)
    n = _assert_exactly_once(uri)
    assert n >= target
    ids = _batch_ids(uri, query_id)
    assert ids == list(range(len(ids))), f"batches committed twice or skipped: {ids}"


def _write(uri, start, n, mode="append", **kw):
    t = pa.table({"id": pa.array(range(start, start + n), pa.int64()), "s": [f"r{i}" for i in range(start, start + n)]})
    return lance.write_dataset(t, uri, mode=mode, **kw)


def _stream_into(spark, src: str, dst: str, ck: str, **options):
    """Run a Lance-to-Lance stream with Trigger.AvailableNow; returns rows per batch."""
    reader = spark.readStream.format("lance")
    for k, v in options.items():
        reader = reader.option(k, v)
    q = reader.load(src).writeStream.format("lance").option("checkpointLocation", ck).trigger(
        availableNow=True).start(dst)
    q.awaitTermination(180)
    return [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]


def test_source_reads_snapshot_then_appends(spark, tmp_path):
    src, dst, ck = str(tmp_path / "src.lance"), str(tmp_path / "dst.lance"), str(tmp_path / "ck")
    _write(src, 0, 1000, mode="create")
    _write(src, 1000, 500)
    lance.dataset(src).delete("id < 10")  # the snapshot is read with its deletions
    assert _stream_into(spark, src, dst, ck) == [1490]
    _write(src, 1500, 300)
    ds = _write(src, 1800, 200)
    ds.optimize.compact_files()  # compaction changes no rows: passed over silently
    _write(src, 2000, 100)
    assert _stream_into(spark, src, dst, ck) == [600]
    got = sorted(lance.dataset(dst).to_table()["id"].to_pylist())
    assert got == list(range(10, 2100))
    # No new version: nothing to read, no batch.
    assert _stream_into(spark, src, dst, ck) == []


def test_source_starting_version_and_max_rows(spark, tmp_path):
    src, dst, ck = str(tmp_path / "src.lance"), str(tmp_path / "dst.lance"), str(tmp_path / "ck")
    _write(src, 0, 100, mode="create")
    _write(src, 100, 1000)
    _write(src, 1100, 250)
    sizes = _stream_into(spark, src, dst, ck, startingVersion="2", maxRowsPerTrigger="400")
    assert sizes == [400, 400, 400, 50]
    assert sorted(lance_core.dataset(dst).to_table()["id"].to_pylist()) == list(range(100, 1350))
    assert lance_core.dataset(dst).version == 4

    latest_dst, latest_ck = str(tmp_path / "d2.lance"), str(tmp_path / "ck2")
    assert _stream_into(spark, src, latest_dst, latest_ck, startingVersion="latest") == []
    _write(src, 1350, 5)
    assert _stream_into(spark, src, latest_dst, latest_ck, startingVersion="latest") == [5]


def test_source_reports_change_commits(spark, tmp_path):
    src, dst, ck = str(tmp_path / "src.lance"), str(tmp_path / "dst.lance"), str(tmp_path / "ck")
    _write(src, 0, 100, mode="create")
    assert _stream_into(spark, src, dst, ck) == [100]
    _write(src, 100, 50)
    lance.dataset(src).delete("id = 3")  # version 3
    _write(src, 150, 50)
    reader = spark.readStream.format("lance").load(src)
    q = reader.writeStream.format("lance").option("checkpointLocation", ck).trigger(availableNow=True).start(dst)
    with pytest.raises(Exception, match=r"version 3 is a delete.*skipChangeCommits"):
        q.awaitTermination(180)
    # The rows appended before the delete were delivered first.
    assert sorted(lance.dataset(dst).to_table()["id"].to_pylist()) == list(range(150))
    assert _stream_into(spark, src, dst, ck, skipChangeCommits="true") == [50]
    assert sorted(lance.dataset(dst).to_table()["id"].to_pylist()) == list(range(200))
    # Versions the stream has not read yet, removed by cleanup: a clear error, no guess.
    _write(src, 200, 10)
    _write(src, 210, 10)
    lance_core.dataset(src).cleanup_old_versions(older_than=timedelta(0))
    q = reader.writeStream.format("lance").option("checkpointLocation", ck).trigger(availableNow=True).start(dst)
    with pytest.raises(Exception, match=r"stream is at version 5.*removed by cleanup_old_versions.*new checkpoint"):
        q.awaitTermination(180)
    assert lance.dataset(dst).count_rows() == 200


def test_sink_complete_mode_replaces_the_rows(spark, tmp_path):
    """Complete output mode: each batch's result replaces the table's rows (an Overwrite),
    still one version per batch with its ids."""
    from pyspark.sql import functions as F

    uri, ck = str(tmp_path / "agg.lance"), str(tmp_path / "ck")
    counts = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 30).load()
              .groupBy((F.col("value") % 3).alias("g")).count())
    for _ in range(2):  # two runs of one batch each, the second resuming from the checkpoint
        q = (counts.writeStream.format("lance").outputMode("complete").option("checkpointLocation", ck)
             .trigger(availableNow=True).start(uri))
        q.awaitTermination(120)
        assert q.exception() is None
    rows = sorted(tuple(r.values()) for r in lance.dataset(uri).to_table().to_pylist())
    assert rows == [(0, 20), (1, 20), (2, 20)]
    ds = lance_core.dataset(uri)
    assert ds.version == 2 and isinstance(ds.read_transaction().operation, lance_core.LanceOperation.Overwrite)
    assert ds.read_transaction().transaction_properties[BATCH_ID] == "1"


def test_foreach_batch_writer_once_per_batch(spark, tmp_path):
    """`LanceBatchWriter` in `foreachBatch`: a version per batch recording the query and
    batch ids, a replayed batch not written again, a new query counting from 0, overwrite
    mode replacing the rows, and a clear error outside a stream."""
    from lance_core.spark import LanceBatchWriter

    uri, ck = str(tmp_path / "fb.lance"), str(tmp_path / "ck")
    source = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 300).option("numPartitions", 2).load()
    for run in range(2):  # a restart from the checkpoint goes on where the first run ended
        q = source.writeStream.foreachBatch(LanceBatchWriter(uri)).option("checkpointLocation", ck).trigger(
            processingTime="0 seconds").start()
        _run_until_version(q, uri, 3 * (run + 1))
    n = _assert_exactly_once(uri)
    assert n >= 1800 and n % 300 == 0
    ids = _batch_ids(uri, q.id)
    assert ids == list(range(len(ids))) and len(ids) == lance_core.dataset(uri).version
    assert lance.dataset(uri).schema.names == ["timestamp", "value"]

    # Called as Spark calls it, with the query id Spark sets on the driver's thread.
    df = spark.createDataFrame([(i, f"r{i}") for i in range(5)], "id long, s string")
    with pytest.raises(lance_core.InvalidInputError, match="no streaming query is running"):
        LanceBatchWriter(str(tmp_path / "x.lance"))(df, 0)
    sc = spark.sparkContext
    other = str(tmp_path / "other.lance")
    try:
        sc.setLocalProperty("sql.streaming.queryId", "q1")
        writer = LanceBatchWriter(other)
        writer(df, 0)
        writer(df, 1)
        writer(df, 1)  # a replay: committed already
        assert lance_core.dataset(other).version == 2 and lance_core.dataset(other).count_rows() == 10
        writer(df.limit(0), 2)  # empty: no version
        assert lance_core.dataset(other).version == 2
        sc.setLocalProperty("sql.streaming.queryId", "q2")
        writer(df, 0)
        assert lance_core.dataset(other).count_rows() == 15
        LanceBatchWriter(other, mode="overwrite")(df.limit(2), 1)
        ds = lance_core.dataset(other)
        assert sorted(ds.to_table()["id"].to_pylist()) == [0, 1]
        assert lance.dataset(other).read_transaction(ds.version).transaction_properties == {QUERY_ID: "q2", BATCH_ID: "1"}
        with pytest.raises(lance_core.InvalidInputError, match="cannot append"):
            writer(spark.createDataFrame([(1,)], "other long"), 5)
    finally:
        sc.setLocalProperty("sql.streaming.queryId", None)


def test_blobs_stream_as_bytes_into_a_blob_table(spark, tmp_path):
    """A blob table read as a stream with `blob_handling=all_binary` gives the bytes; a
    stream of bytes appended to a blob v2 table is stored as blobs (inline and packed
    sidecars by size) that pylance reads back."""
    from lance_core.blob import blob_array, blob_field

    src, dst, ck = str(tmp_path / "src.lance"), str(tmp_path / "dst.lance"), str(tmp_path / "ck")
    schema = pa.schema([pa.field("id", pa.int64()), blob_field("b")])
    payloads = [os.urandom(n) for n in (10, 0, 200_000, 3_000)] + [None]
    lance_core.write_dataset(pa.table({"id": pa.array(range(5), pa.int64()), "b": blob_array(payloads)},
                                      schema=schema), src)
    lance_core.write_dataset(pa.table({"id": pa.array([-1], pa.int64()), "b": blob_array([b"first"])},
                                      schema=schema), dst)
    assert _stream_into(spark, src, dst, ck, blob_handling="all_binary") == [5]
    ref = lance.dataset(dst)
    got = {i: b for i, b in zip(ref.to_table(columns=["id"])["id"].to_pylist(),
                                ref.to_table(blob_handling="all_binary")["b"].to_pylist())}
    assert got == {-1: b"first", **dict(enumerate(payloads))}
    kinds = {b.size(): b.kind for b in lance_core.dataset(dst).take_blobs("b", indices=list(range(6))) if b}
    assert kinds[200_000] == "packed" and kinds[3_000] == "inline"
