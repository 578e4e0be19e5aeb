"""One run of everything lance_core does on Spark, as a user would call it: reads of
`format("lance")` (count, filter, groupBy, a nested column, a version and a tag), writes
(`format("lance")` append and overwrite, `lance_python`), `read_fragments`, `aggregate`,
`add_columns`, `compact`, `update`, `merge_insert`, `create_scalar_index`,
`optimize_indices`, `count`, `create_index`, `nearest`, the streaming source and sink,
`foreachBatch(LanceBatchWriter(...))`, and SQL over `LanceCatalog`. `run(spark, work)` returns each step's answer,
so that a run on a cluster can be compared with one in `local[*]` (or only the reads, writes
and `read_fragments`, with `only_reads_and_writes`).

    python tests/spark_steps.py --master spark://127.0.0.1:7077 --work /tmp/w --out answers.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from typing import Any, Dict

import pyarrow as pa

ROWS = 3000


def table(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "g": pa.array([i % 7 for i in ids], pa.int64()),
        "s": pa.array([{"a": i * 2, "b": f"b{i}"} for i in ids]),
        "vec": pa.FixedSizeListArray.from_arrays(
            pa.array([float(i) + d / 10 for i in ids for d in range(4)], pa.float32()), 4),
    })


def run(spark, work: str, only_reads_and_writes: bool = False) -> Dict[str, Any]:
    import lance_core
    from lance_core.spark import (add_columns, aggregate, compact, count, create_index, create_scalar_index,
                                  merge_insert, nearest, optimize_indices, read_fragments, update)

    def tripled(batch: pa.RecordBatch) -> pa.RecordBatch:
        # Defined here, so that it is pickled by value: executors cannot import this module.
        import pyarrow.compute as pc

        return pa.RecordBatch.from_arrays([pc.multiply(batch.column("id"), 3)], names=["tripled"])

    out: Dict[str, Any] = {}
    uri = os.path.join(work, "t.lance")
    lance_core.write_dataset(table(0, ROWS), uri, max_rows_per_file=1000)
    lance_core.dataset(uri).tags.create("first", 1)
    lance_core.write_dataset(table(ROWS, 100), uri, mode="append")

    # Reads.
    df = spark.read.format("lance").load(uri)
    out["count"] = df.count()
    out["filtered count"] = df.filter("id >= 2990 AND g = 3").count()
    out["groupBy"] = sorted(tuple(r) for r in df.groupBy("g").count().collect())
    out["nested column"] = sorted(r[0] for r in df.filter("id < 20").select("s.a").collect())
    out["version 1"] = spark.read.format("lance").option("version", 1).load(uri).count()
    out["tag first"] = spark.read.format("lance").option("version", "first").load(uri).count()

    # Writes.
    copy = os.path.join(work, "copy.lance")
    df.filter("id < 500").write.format("lance").mode("overwrite").save(copy)
    df.filter("id >= 2500").write.format("lance").mode("append").save(copy)
    py_copy = os.path.join(work, "python-copy.lance")
    spark.read.format("lance_python").load(uri).filter("g = 1").write.format("lance_python").mode("append").save(py_copy)
    out["written"] = [lance_core.dataset(copy).count_rows(), lance_core.dataset(py_copy).count_rows()]

    out["read_fragments"] = read_fragments(spark, uri, columns=["id"], filter="id > 10").count()
    if only_reads_and_writes:
        return out

    # The pipeline functions.
    agg = aggregate(spark, uri, {"total": ("sum", "id"), "n": ("count", "*")}, by="g")
    out["aggregate"] = sorted(tuple(r) for r in agg.collect())
    add_columns(spark, copy, tripled, pa.schema([("tripled", pa.int64())]), input_columns=["id"])
    out["add_columns"] = lance_core.dataset(copy).to_table(filter="id = 7")["tripled"].to_pylist()
    compact(spark, copy, target_rows_per_fragment=10_000)
    out["compact"] = len(lance_core.dataset(copy).get_fragments())
    out["update"] = update(spark, copy, {"g": "g + 100"}, where="id < 10")
    changes = spark.createDataFrame(table(3050, 100).to_pandas()[["id", "g"]]).selectExpr("id", "g + 1000 as g")
    out["merge_insert"] = merge_insert(changes, copy, "id").when_matched_update_all().execute()
    create_scalar_index(spark, copy, "id", "BTREE")
    out["create_scalar_index"] = sorted({(i["name"], i["type"]) for i in lance_core.dataset(copy).list_indices()})
    spark.read.format("lance").load(copy).filter("id < 50") \
        .selectExpr("id + 9000 as id", "g", "s", "vec", "tripled").write.format("lance").mode("append").save(copy)
    optimize_indices(spark, copy)
    out["optimize_indices"] = lance_core.dataset(copy).stats.index_stats("id_idx")["num_unindexed_rows"]
    out["lance_core.spark.count"] = [count(spark, copy), count(spark, copy, filter="g >= 100")]
    create_index(spark, uri, "vec", "IVF_FLAT", num_partitions=2)
    queries = spark.createDataFrame([(1, [7.0, 7.1, 7.2, 7.3]), (2, [2000.0, 2000.1, 2000.2, 2000.3])],
                                    "query_id int, vec array<float>")
    found = nearest(spark, uri, queries, "vec", k=3, columns=["id"], nprobes=2).collect()
    out["nearest"] = sorted((r["query_id"], r["id"]) for r in found)

    # Streaming: the source reads the table, the sink writes a copy.
    stream_copy = os.path.join(work, "stream.lance")
    q = (spark.readStream.format("lance").option("maxRowsPerTrigger", 1000).load(uri)
         .select("id", "g").writeStream.format("lance")
         .option("checkpointLocation", os.path.join(work, "checkpoint"))
         .trigger(availableNow=True).start(stream_copy))
    q.awaitTermination(300)
    out["streaming"] = [lance_core.dataset(stream_copy).count_rows(), lance_core.dataset(stream_copy).version]
    out["LanceBatchWriter"] = batch_writer(spark, uri, work)
    out["SQL"] = sql_steps(spark, work)
    return out


def sql_steps(spark, work: str) -> Any:
    """Spark SQL over `lance_core.spark.LanceCatalog`: a table made, written, updated,
    merged into, deleted from, altered, tagged, compacted and indexed, each statement one
    version (a tag none), then read, with its metadata tables; a table of vectors searched."""
    root = os.path.join(work, "lake")
    os.makedirs(root, exist_ok=True)
    # A catalog of its own per call: Spark keeps a catalog it loaded for the session, so a
    # second call in one session would otherwise find the first one's root.
    cat = "lake_steps_" + uuid.uuid4().hex[:8]
    spark.conf.set(f"spark.sql.catalog.{cat}", "lance_core.spark.LanceCatalog")
    spark.conf.set(f"spark.sql.catalog.{cat}.root", root)
    t = f"{cat}.db.t"
    spark.sql(f"CREATE NAMESPACE {cat}.db")
    spark.sql(f"CREATE TABLE {t} AS SELECT id, id % 5 AS k FROM range(0, 1000, 1, 4)")
    spark.sql(f"INSERT INTO {t} SELECT id, 9 FROM range(1000, 1010)")
    spark.sql(f"UPDATE {t} SET k = k + 10 WHERE k = 1")
    spark.sql(f"""MERGE INTO {t} AS t USING (SELECT id, 7 AS k FROM range(995, 1015)) AS s ON t.id = s.id
                  WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")
    spark.sql(f"DELETE FROM {t} WHERE k = 0")
    spark.sql(f"ALTER TABLE {t} ADD COLUMNS (note string)")
    # The SQL extension's statements (a Connect server has them from spark.sql.extensions).
    spark.sql(f"ALTER TABLE {t} CREATE TAG steps_tag")
    spark.sql(f"OPTIMIZE {t} WITH (target_rows_per_fragment = 100000)")
    spark.sql(f"ALTER TABLE {t} CREATE INDEX k_idx USING btree (k) WITH (zone_size = 100)")  # on the executors
    v = f"{cat}.db.v"
    spark.sql(f"""CREATE TABLE {v} (id BIGINT NOT NULL, vector ARRAY<FLOAT> NOT NULL)
                  TBLPROPERTIES ('vector.arrow.fixed-size-list.size' = '2')""")
    spark.sql(f"INSERT INTO {v} SELECT id, array(CAST(id AS FLOAT), CAST(id % 7 AS FLOAT)) FROM range(0, 200, 1, 2)")
    return [[tuple(r) for r in spark.sql(q).collect()] for q in (
        f"SELECT k, count(*), count(note) FROM {t} GROUP BY k ORDER BY k",
        f"SELECT count(*) FROM {t} VERSION AS OF 1",
        f"SHOW TBLPROPERTIES {t} ('version')",
        f"SHOW TABLES IN {cat}.db",
        f"SELECT name, version FROM {t}.tags",
        f"SELECT count(*), sum(num_rows) FROM {t}.fragments",
        f"SELECT name, fields, index_type, num_indexed_rows FROM {t}.indices",
        f"SELECT count(*) FROM {t} WHERE k = 7",
        f"SELECT id, round(CAST(_distance AS DOUBLE), 4) FROM VECTOR_SEARCH('{v}', array(50.2, 1.0), 3)",  # in a task
    )]


def batch_writer(spark, uri: str, work: str) -> Any:
    """A stream written by `foreachBatch(LanceBatchWriter(...))`: the rows it wrote, or,
    where it cannot run (Spark Connect), the error it stopped the query with."""
    import lance_core
    from lance_core.spark import LanceBatchWriter

    target = os.path.join(work, "batch-writer.lance")
    q = (spark.readStream.format("lance").load(uri).select("id").writeStream
         .foreachBatch(LanceBatchWriter(target)).option("checkpointLocation", os.path.join(work, "checkpoint-bw"))
         .trigger(availableNow=True).start())
    try:
        q.awaitTermination(300)
    except Exception as e:  # the query's error, as Spark raises it
        return "refused: " + ("Spark Connect" if "Spark Connect" in str(e) else str(e)[:500])
    return lance_core.dataset(target).count_rows()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--master", help="Spark's master URL")
    where.add_argument("--remote", help="a Spark Connect server's URL (sc://host:port)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--archives", help="spark.archives: a packed Python environment for the executors")
    ap.add_argument("--only-reads-and-writes", action="store_true", help="the reads, writes and read_fragments")
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import lance_core.spark

    if args.remote:
        builder = SparkSession.builder.remote(args.remote)
    else:
        builder = (SparkSession.builder.master(args.master).appName("lance_core-steps")
                   .config("spark.ui.enabled", "false").config("spark.executor.memory", "1g"))
        if args.archives:
            builder = builder.config("spark.archives", args.archives)
    spark = lance_core.spark.session(builder)
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    try:
        answers = run(spark, args.work, args.only_reads_and_writes)
    finally:
        spark.stop()
    with open(args.out, "w") as f:
        json.dump(answers, f)


if __name__ == "__main__":
    main()
