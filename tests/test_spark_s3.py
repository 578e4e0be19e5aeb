"""Spark on an S3-compatible server (moto on 127.0.0.1): every path that opens the table
again on an executor or the driver — write tasks, read tasks, the streaming source and
sink, foreachBatch, compaction, update and merge tasks — uses the storage options the
job was given. conftest sets AWS_EC2_METADATA_DISABLED, so a path that forgot them fails
here instead of asking the instance metadata service for credentials."""

from __future__ import annotations

import lance
import pytest

from s3_proxy import S3Server


@pytest.fixture(scope="module")
def server():
    srv = S3Server()
    yield srv
    srv.stop()


def test_every_spark_path_keeps_the_storage_options(spark, server, tmp_path):
    from lance_core.spark import LanceBatchWriter, compact, merge_insert, update

    opts = server.options()
    spark_opts = {f"storage.{k}": v for k, v in opts.items()}
    uri, copy = "s3://bucket/spark.lance", "s3://bucket/spark-stream.lance"

    # Write tasks, then read tasks with a pushed filter.
    df = spark.range(0, 3000, numPartitions=3).selectExpr("id", "cast(id % 7 as string) as g")
    df.write.format("lance").options(**spark_opts).mode("overwrite").save(uri)
    read = spark.read.format("lance").options(**spark_opts).load(uri)
    assert read.filter("id >= 2990").count() == 10

    # A micro-batch through foreachBatch's writer, and compaction tasks.
    sc = spark.sparkContext
    try:
        sc.setLocalProperty("sql.streaming.queryId", "s3-query")  # as Spark sets it in foreachBatch
        LanceBatchWriter(uri, storage_options=opts)(spark.range(3000, 3100).selectExpr("id", "'b' as g"), 0)
    finally:
        sc.setLocalProperty("sql.streaming.queryId", None)
    compact(spark, uri, storage_options=opts, target_rows_per_fragment=10_000)
    assert len(lance.dataset(uri, storage_options=opts).get_fragments()) == 1

    # Update and merge tasks.
    assert update(spark, uri, {"g": "'seven'"}, where="id % 7 = 0", storage_options=opts)["num_rows_updated"] == 443
    source = spark.range(3050, 3200).selectExpr("id", "'merged' as g")
    merge_insert(source, uri, on="id", storage_options=opts) \
        .when_matched_update_all().when_not_matched_insert_all().execute()

    # The streaming source reads it, the streaming sink writes a copy.
    ck = str(tmp_path / "checkpoint")
    q = (spark.readStream.format("lance").options(**spark_opts).load(uri)
         .writeStream.format("lance").options(**spark_opts).option("checkpointLocation", ck)
         .trigger(availableNow=True).start(copy))
    q.awaitTermination()

    for table_uri in (uri, copy):
        t = lance.dataset(table_uri, storage_options=opts).to_table().sort_by("id")
        assert t["id"].to_pylist() == list(range(3200)), table_uri
        g = dict(zip(t["id"].to_pylist(), t["g"].to_pylist()))
        assert (g[7], g[8], g[3011], g[3060], g[3150]) == ("seven", "1", "b", "merged", "merged"), table_uri


def test_a_job_whose_commit_outcome_is_unknown_keeps_its_files(spark, server):
    """The commit's manifest is written but every answer about it is lost, so the job
    fails with its outcome unknown and Spark aborts it: the abort sees that the latest
    version refers to the job's files and removes none of them."""
    import lance_core
    from s3_proxy import DROPPED, RESET, Faults

    uri = "s3://bucket/spark-unknown.lance"
    opts = server.options()
    lance_core.write_dataset(spark.range(0, 100).toArrow(), uri, storage_options=opts)
    second = "/_versions/18446744073709551613.manifest"  # version 2, as v2 manifest paths name it
    faults = Faults().add(RESET, "PUT", second).add(DROPPED, "GET", second, times=2)
    proxy = server.proxy(faults=faults)
    retries = {"client_max_retries": "0", "client_backoff_initial_ms": "5"}
    spark_opts = {f"storage.{k}": v for k, v in {**proxy.options(), **retries}.items()}
    try:
        with pytest.raises(Exception, match="OutcomeUnknownError|outcome unknown"):
            spark.range(100, 150, numPartitions=2).write.format("lance").options(**spark_opts) \
                .mode("append").save(uri)
    finally:
        proxy.close()
    assert [k for k, _, _ in faults.injected] == [RESET, DROPPED, DROPPED], faults.injected
    ds = lance.dataset(uri, storage_options=opts)
    assert ds.version == 2
    assert sorted(ds.to_table()["id"].to_pylist()) == list(range(150))


def test_the_streaming_sink_commits_each_batch_once_when_answers_are_lost(spark, server, tmp_path):
    """Every micro-batch's commit loses its answer (the manifest is written, the sink is
    told 500, its retry meets 412): each batch is still one version, each row there once."""
    import pyarrow as pa

    import lance_core
    from s3_proxy import LOST, Faults

    src, dst = str(tmp_path / "src.lance"), "s3://bucket/spark-stream-lost.lance"
    lance_core.write_dataset(pa.table({"id": pa.array(range(100), pa.int64())}), src)
    for start in (100, 250):
        lance_core.write_dataset(pa.table({"id": pa.array(range(start, start + 150), pa.int64())}), src,
                                 mode="append")
    faults = Faults().add(LOST, "PUT", "/_versions/", times=10)
    proxy = server.proxy(faults=faults)
    sink = {f"storage.{k}": v for k, v in {**proxy.options(), "client_backoff_initial_ms": "5"}.items()}
    try:
        q = (spark.readStream.format("lance").option("startingVersion", "1").option("maxRowsPerTrigger", "150")
             .load(src).writeStream.format("lance").options(**sink)
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start(dst))
        q.awaitTermination(180)
    finally:
        proxy.close()
    assert faults.count(LOST) >= 3, faults.injected
    ds = lance.dataset(dst, storage_options=server.options())
    assert sorted(ds.to_table()["id"].to_pylist()) == list(range(400))
    assert ds.version == len([p for p in q.recentProgress if p["numInputRows"]])


def test_a_spark_write_survives_every_fault_kind(spark, server):
    """A distributed append (tasks writing fragments, the driver committing them) through
    a store failing each kind of request at least once, and many at random."""
    import lance_core
    from s3_proxy import KINDS, every_kind

    uri = "s3://bucket/spark-faults.lance"
    lance_core.write_dataset(spark.range(0, 1000).toArrow(), uri, storage_options=server.options())
    faults = every_kind(seed=5)
    proxy = server.proxy(faults=faults)
    client = {"client_backoff_initial_ms": "5", "client_backoff_max_ms": "100"}
    spark_opts = {f"storage.{k}": v for k, v in {**proxy.options(), **client}.items()}
    try:
        spark.range(1000, 3000, numPartitions=4).write.format("lance").options(**spark_opts) \
            .mode("append").save(uri)
    finally:
        proxy.close()
    assert faults.kinds() == set(KINDS), faults.injected
    for ds in (lance.dataset(uri, storage_options=server.options()),
               lance_core.dataset(uri, storage_options=server.options())):
        assert ds.version == 2
        assert sorted(ds.to_table()["id"].to_pylist()) == list(range(3000))
