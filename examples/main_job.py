"""The main job: a Spark pipeline on local Spark over a generated Lance dataset, with
lance_core doing all the Lance work (no jar from Maven, no pylance).

1. Generates a dataset of events (ids, amounts, users, categories, embeddings) with
   `lance_core.write_dataset`.
2. Starts Spark (`local[*]`, or the cluster `--master` names) with the `lance` data
   source: the JVM reader shipped in the wheel for reads, the Python data source for
   writes and streams.
3. Reads the events through the data source (filter pushed down) and aggregates per
   category.
4. Times a selective filter (`id IN (...)`) through the data source, builds a BTREE index
   on `id` with `lance_core.spark.create_scalar_index` (a segment per task on the
   executors, one commit), then times the same filter again, now answered from the index.
5. Builds an IVF_PQ index on the embeddings with `lance_core.spark.create_index` (the
   driver trains, the executors encode, one commit), then runs a batch of filtered
   nearest-neighbour searches with `lance_core.spark.nearest`, printing the recall
   against exact search beside the timings.
6. Writes the aggregate as a new Lance dataset with `df.write.format("lance")`.
7. Deletes some rows of it (a predicate, committed as a new version).
8. Adds a computed column with `lance_core.spark.add_columns` (executors write new data
   files; the driver commits once).
9. Streams a rate source into a Lance table (Structured Streaming, one version per
   micro-batch, exactly once; each run resumes from the checkpoint), showing each
   batch's progress, then checks the table's count with a batch read.
10. Runs Spark SQL over a directory of Lance tables (`lance_core.spark.LanceCatalog`, in
   pylance's namespace layout): a per-user table made with CREATE TABLE ... AS SELECT,
   then UPDATE, MERGE INTO, DELETE and ALTER TABLE, one version each, a read of the
   first version with VERSION AS OF, and a filtered VECTOR_SEARCH over the events through
   their IVF_PQ index.
Versions, row counts and timings are printed as it goes.

    python examples/main_job.py [--rows 2000000] [--stream-batches 8] [--dir /tmp/lance_core_main_job]
                                [--master spark://host:7077]

On a cluster, `--dir` must be a path every executor sees the same (a shared file system,
or an object store URI's local stand-in on a one-machine cluster).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import lance_core

CATEGORIES = [f"cat-{i:02d}" for i in range(16)]
DIM = 16  # embedding dimensions


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def generate(uri: str, rows: int, rows_per_fragment: int) -> lance_core.LanceDataset:
    schema = pa.schema([
        ("id", pa.int64()), ("amount", pa.float64()), ("user", pa.string()),
        ("category", pa.string()), ("embedding", pa.list_(pa.float32(), DIM)),
    ])
    rng = np.random.default_rng(7)
    cats = np.array(CATEGORIES)
    centers = rng.standard_normal((len(CATEGORIES), DIM)) * 3

    def batches():
        for start in range(0, rows, 250_000):
            n = min(250_000, rows - start)
            which = rng.integers(0, len(cats), n)
            yield pa.record_batch([
                pa.array(np.arange(start, start + n, dtype=np.int64)),
                pa.array(rng.normal(100, 15, n)),
                pa.array([f"user-{i % 50_000}" for i in range(start, start + n)]),
                pa.array(cats[which]),
                # Embeddings cluster by category, as real ones cluster by topic.
                pa.FixedSizeListArray.from_arrays(pa.array(
                    (centers[which] + rng.standard_normal((n, DIM))).astype(np.float32).ravel()), DIM),
            ], schema=schema)
            log(f"    generated {start + n:,} / {rows:,} rows")

    shutil.rmtree(uri, ignore_errors=True)
    return lance_core.write_dataset(pa.RecordBatchReader.from_batches(schema, batches()), uri,
                                    max_rows_per_file=rows_per_fragment)


def describe(ds: lance_core.LanceDataset) -> str:
    return (f"version {ds.version}, format {ds.data_storage_version}, {len(ds.get_fragments())} fragments, "
            f"{ds.count_rows():,} rows, columns {ds.schema.names}")


def index_stage(spark, uri: str, rows: int) -> bool:
    """Stage 4: a selective filter through the data source, timed before and after a BTREE
    index on `id` is built on the executors; the data source plans only the fragments the
    index does not rule out, and each task's scan looks the ids up in the index."""
    from lance_core.spark import create_scalar_index

    # A few ids from one stretch of the table: the index rules out the other fragments.
    picks = sorted({rows // 2 + (12_345 + k * 1_009) % max(rows // 4, 1) for k in range(8)})
    where = f"id IN ({', '.join(map(str, picks))})"

    def lookup():
        """Best of 3 runs (seconds), the ids found and the partitions Spark planned."""
        times = []
        for _ in range(3):
            t = time.time()
            df = spark.read.format("lance").option("columns", "id,amount").load(uri).filter(where)
            got = sorted(r.id for r in df.collect())
            times.append(time.time() - t)
        return min(times), got, df.rdd.getNumPartitions()

    log(f"4/10 a selective filter ({len(picks)} ids: id IN (...)) before and after a BTREE index on id")
    before, got, parts = lookup()
    log(f"    without an index: {len(got)} rows in {before:.2f}s ({parts} partitions planned)")
    t = time.time()
    ds = create_scalar_index(spark, uri, "id", "BTREE")
    built = time.time() - t
    segments = [i for i in ds.list_indices() if i["name"] == "id_idx"]
    log(f"    built id_idx on Spark in {built:.2f}s: {len(segments)} segments, version {ds.version}")
    after, got_indexed, parts = lookup()
    log(f"    with the index: {len(got_indexed)} rows in {after:.2f}s ({parts} partitions planned; "
        f"{before / after:.1f}x faster)")
    if got != picks or got_indexed != picks:
        log(f"the filter returned ids {got} without the index and {got_indexed} with it, expected {picks}")
        return False
    return True


def vector_stage(spark, uri: str) -> bool:
    """Stage 5: an IVF_PQ index on the embeddings built on Spark, then a batch of filtered
    nearest-neighbour searches through it on Spark, with the recall against an exact
    (exhaustive, also on Spark) search of the same queries."""
    from lance_core.spark import create_index, nearest

    log("5/10 an IVF_PQ index on the embeddings built on Spark, then a batch of filtered searches")
    t = time.time()
    ds = create_index(spark, uri, "embedding", "IVF_PQ", num_partitions=64, num_sub_vectors=8, seed=1)
    [index] = [i for i in ds.describe_indices() if i.name == "embedding_idx"]
    log(f"    built embedding_idx ({index.index_type}, {index.num_rows_indexed:,} rows indexed) "
        f"in {time.time() - t:.1f}s: version {ds.version}")
    # "More like these, within the category": queries near rows of the category searched.
    where = "category = 'cat-03'"
    sample = ds.to_table(columns=["embedding"], filter=where, offset=1000, limit=32)["embedding"]
    queries = spark.createDataFrame(
        [(i, [float(x) + 0.1 for x in v.as_py()]) for i, v in enumerate(sample)], "query_id int, embedding array<float>")
    search = dict(k=10, columns=["id", "category"], filter=where, prefilter=True, nprobes=16, refine_factor=4)
    t = time.time()
    found = nearest(spark, uri, queries, "embedding", **search).collect()
    indexed = time.time() - t
    t = time.time()
    exact = nearest(spark, uri, queries, "embedding", use_index=False, **search).collect()
    exhaustive = time.time() - t
    by_query = {}
    for r in found:
        by_query.setdefault(r.query_id, set()).add(r.id)
    truth = {}
    for r in exact:
        truth.setdefault(r.query_id, set()).add(r.id)
    recall = sum(len(by_query.get(q, set()) & ids) for q, ids in truth.items()) / max(1, sum(map(len, truth.values())))
    log(f"    {len(sample)} queries, k=10, {where}: through the index {indexed:.2f}s, exhaustive {exhaustive:.2f}s; "
        f"recall@10 {recall:.3f}")
    if any(r.category != "cat-03" for r in found) or len(found) != 10 * len(sample) or recall < 0.8:
        log("the indexed search returned rows outside the filter, too few rows, or a recall below 0.8")
        return False
    return True


def stream(spark, uri: str, checkpoint: str, batches: int, rows_per_batch: int) -> bool:
    """Stage 8: a rate source into a Lance table with Structured Streaming, then a batch
    read that checks every row arrived once."""
    from pyspark.sql import functions as F

    from lance_core.spark import count

    log(f"9/10 streaming {batches} micro-batches of {rows_per_batch:,} rows from a rate source into {uri}")
    shutil.rmtree(uri, ignore_errors=True)
    shutil.rmtree(checkpoint, ignore_errors=True)
    source = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", rows_per_batch)
              .option("numPartitions", 2).load()
              .select(F.col("value").alias("id"), F.col("timestamp"),
                      F.concat(F.lit("cat-"), F.lpad((F.col("value") % 16).cast("string"), 2, "0")).alias("category"),
                      (F.col("value") % 1000 / 10.0).alias("amount")))
    # Each run takes one micro-batch (Trigger.AvailableNow: what the rate source has now)
    # and ends; the next run resumes from the checkpoint, as a restarted job would.
    for _ in range(batches):
        query = (source.writeStream.format("lance").option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start(uri))
        query.awaitTermination()
        if query.exception() is not None:
            log(f"the stream failed: {query.exception()}")
            return False
        for p in query.recentProgress:
            if p["numInputRows"]:
                log(f"      batch {p['batchId']}: {p['numInputRows']:,} rows, "
                    f"{p.get('processedRowsPerSecond', 0):,.0f} rows/s, table version {lance_core.dataset(uri).version}")
    table = lance_core.dataset(uri)
    df = spark.read.format("lance").option("columns", "id").load(uri)
    n, distinct = df.count(), df.distinct().count()
    log(f"    batch read: {n:,} rows, {distinct:,} distinct ids; lance_core.spark.count: {count(spark, uri):,}; "
        f"{describe(table)}")
    if n != distinct or n != table.count_rows() or n % rows_per_batch or n < batches * rows_per_batch:
        log("the streamed table does not hold every row exactly once")
        return False
    return True


def sql_stage(spark, events_uri: str, root: str) -> bool:
    t = time.time()
    log(f"10/10 Spark SQL over a catalog of Lance tables at {root}")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    spark.conf.set("spark.sql.catalog.lake", "lance_core.spark.LanceCatalog")
    spark.conf.set("spark.sql.catalog.lake.root", root)
    spark.read.format("lance").load(events_uri).createOrReplaceTempView("events")
    users = "lake.analytics.users"
    statements = [
        "CREATE NAMESPACE lake.analytics",
        f"""CREATE TABLE {users} AS
            SELECT user, count(*) AS events, sum(amount) AS total FROM events GROUP BY user""",
        f"UPDATE {users} SET total = round(total, 2)",
        f"""MERGE INTO {users} AS u USING (SELECT concat('new-', id) AS user, 1L AS events, amount AS total
            FROM events WHERE id < 1000 UNION ALL SELECT 'user-1', 1L, 0.0) AS n ON u.user = n.user
            WHEN MATCHED THEN UPDATE SET events = u.events + n.events
            WHEN NOT MATCHED THEN INSERT *""",
        f"DELETE FROM {users} WHERE user LIKE 'new-%' AND total < 100",
        f"ALTER TABLE {users} ADD COLUMNS (segment string)",
    ]
    for sql in statements:
        s = time.time()
        spark.sql(sql)
        log(f"    {' '.join(sql.split())[:90]} ({time.time() - s:.1f}s)")
    first = spark.sql(f"SELECT count(*) FROM {users} VERSION AS OF 1").first()[0]
    now = spark.sql(f"SELECT count(*) FROM {users}").first()[0]
    version = dict(spark.sql(f"SHOW TBLPROPERTIES {users}").collect())["version"]
    expected = spark.sql("SELECT count(DISTINCT user) FROM events").first()[0]
    kept_new = spark.sql("SELECT count(*) FROM events WHERE id < 1000 AND amount >= 100").first()[0]
    log(f"    {users}: {first:,} users at version 1, {now:,} at version {version} ({time.time() - t:.1f}s)")
    # Five statements, five versions: CTAS, UPDATE, MERGE INTO, DELETE, ALTER TABLE.
    if (first, now, version) != (expected, expected + kept_new, "5"):
        log(f"the SQL stage went wrong: expected {expected:,} users at version 1 and "
            f"{expected + kept_new:,} at version 5")
        return False
    # lance-spark's VECTOR_SEARCH over the events (a table named by its path), through the
    # IVF_PQ index stage 5 built: the rows lance_core's own search finds.
    s = time.time()
    q = lance_core.dataset(events_uri).to_table(columns=["embedding"], limit=1)["embedding"][0].as_py()
    found = spark.sql(f"""SELECT id, _distance FROM VECTOR_SEARCH(table => '{events_uri}',
        query_vector => array({", ".join(map(repr, q))}), vector_column => 'embedding', k => 5,
        nprobes => 8, filter => 'amount > 10', columns => array('id'))""").collect()
    ours = lance_core.dataset(events_uri).to_table(columns=["id"], filter="amount > 10", nearest={
        "column": "embedding", "q": q, "k": 5, "nprobes": 8})["id"].to_pylist()
    log(f"    VECTOR_SEARCH: the 5 nearest events with amount > 10: {[r.id for r in found]} "
        f"({time.time() - s:.1f}s)")
    if [r.id for r in found] != ours:
        log(f"the SQL stage went wrong: VECTOR_SEARCH found {[r.id for r in found]}, lance_core {ours}")
        return False
    return True


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--rows-per-fragment", type=int, default=250_000)
    ap.add_argument("--stream-batches", type=int, default=8)
    ap.add_argument("--stream-rows-per-batch", type=int, default=50_000)
    ap.add_argument("--dir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "lance_core_main_job"))
    ap.add_argument("--master", default="local[*]", help="Spark's master URL (a standalone cluster: spark://host:port)")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    events_uri = os.path.join(args.dir, "events.lance")
    summary_uri = os.path.join(args.dir, "category_summary.lance")

    t0 = time.time()
    log(f"1/10 generating {args.rows:,} events into {events_uri}")
    events = generate(events_uri, args.rows, args.rows_per_fragment)
    log(f"    {describe(events)} ({time.time() - t0:.1f}s)")

    t = time.time()
    log(f"2/10 starting Spark ({args.master})")
    # Spark's Python workers run this interpreter (where lance_core is installed).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession, functions as F

    import lance_core.spark
    from lance_core.spark import add_columns

    # The JVM reader's jar (shipped in the wheel) on the classpath: `format("lance")` reads
    # on the JVM; writes and streams go to the Python data source.
    spark = lance_core.spark.session(
        SparkSession.builder.master(args.master).appName("lance_core main job")
        .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "8")
        .config("spark.ui.showConsoleProgress", "false"))
    spark.sparkContext.setLogLevel("ERROR")
    reader = "JVM reader" if lance_core.spark.jvm_reader_loaded(spark) else "Python data source"
    log(f"    Spark {spark.version}, {spark.sparkContext.defaultParallelism} cores, lance reads by the {reader} "
        f"({time.time() - t:.1f}s)")

    t = time.time()
    log("3/10 reading events through the lance data source and aggregating per category")
    df = (spark.read.format("lance").option("columns", "id,amount,user,category").load(events_uri)
          .filter(F.col("amount") > 0))
    summary = (df.groupBy("category")
               .agg(F.count("*").alias("events"), F.sum("amount").alias("total_amount"),
                    F.countDistinct("user").alias("users"), F.max("id").alias("last_id"))
               .orderBy("category")).cache()  # written below: aggregate once
    rows = summary.collect()
    total = sum(r.events for r in rows)
    log(f"    {total:,} events in {len(rows)} categories ({time.time() - t:.1f}s)")
    for r in rows[:4]:
        log(f"      {r.category}: {r.events:,} events, {r.users:,} users, total {r.total_amount:,.2f}")
    expected = events.count_rows(filter="amount > 0")
    if total != expected:
        log(f"row counts do not match: Spark saw {total:,}, lance_core counts {expected:,}")
        return 1

    if not index_stage(spark, events_uri, args.rows):
        return 1
    if not vector_stage(spark, events_uri):
        return 1

    t = time.time()
    log(f"6/10 writing the summary as a new Lance dataset: {summary_uri}")
    shutil.rmtree(summary_uri, ignore_errors=True)
    summary.coalesce(1).write.format("lance").mode("overwrite").save(summary_uri)
    out = lance_core.dataset(summary_uri)
    log(f"    {describe(out)} ({time.time() - t:.1f}s)")

    t = time.time()
    log("7/10 deleting the categories with the fewest events")
    cutoff = sorted(r.events for r in rows)[min(3, len(rows) - 1)]
    out.delete(f"events < {cutoff}")
    log(f"    deleted events < {cutoff:,}: {describe(out)} ({time.time() - t:.1f}s)")

    t = time.time()
    log("8/10 adding a computed column (average amount) on the executors with add_columns")

    def average(batch: pa.RecordBatch) -> pa.RecordBatch:
        return pa.record_batch({"avg_amount": pc.divide(batch.column("total_amount"),
                                                        pc.cast(batch.column("events"), pa.float64()))})

    out = add_columns(spark, summary_uri, average, pa.schema([("avg_amount", pa.float64())]),
                      input_columns=["total_amount", "events"])
    log(f"    {describe(out)} ({time.time() - t:.1f}s)")
    table = out.to_table(columns=["category", "events", "avg_amount"])
    for r in table.slice(0, 4).to_pylist():
        log(f"      {r['category']}: {r['events']:,} events, average {r['avg_amount']:.3f}")
    log("    versions of the summary: " + ", ".join(
        f"v{v['version']} at {v['timestamp']:%H:%M:%S}" for v in out.versions()))
    back = spark.read.format("lance").load(summary_uri).count()
    log(f"    Spark reads {back} summary rows at version {out.version}")

    t = time.time()
    stream_uri = os.path.join(args.dir, "stream.lance")
    if not stream(spark, stream_uri, os.path.join(args.dir, "stream_checkpoint"), args.stream_batches,
                  args.stream_rows_per_batch):
        return 1
    log(f"    ({time.time() - t:.1f}s)")
    if not sql_stage(spark, events_uri, os.path.join(args.dir, "lake")):
        return 1
    spark.stop()
    log(f"done in {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
