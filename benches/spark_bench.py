"""Spark benchmark: one aggregate (count, sum of a double, distinct of a low-cardinality
string, max of a string) over the benchmark dataset (4M rows), on local Spark with as many
cores as the machine has, read three ways in the same run:

  lance     the `lance` data source of lance_core (columns option: Python data sources get
            no column pruning from Spark, so the query names the columns it reads)
  parquet   Spark's own Parquet reader on the same rows (pyarrow-written Parquet)
  pylance   pylance in `mapInArrow`, one task per fragment (the usual hand-written glue)
  frags     lance_core.spark.read_fragments: lance_core in `mapInArrow` (the same Spark plan
            as pylance's, so the two differ only in the Python worker's work)

Then a narrow query, `groupBy("category").agg(sum("value"))` (2 of the 6 columns), and
`count()`, through each path lance_core offers against Spark's Parquet reader: the data
source as is (Spark 4.3 prunes no columns of a Python data source), with the `columns`
option, `read_fragments(columns=...)`, `lance_core.spark.aggregate` (partial aggregation
inside the read tasks), and for the count `lance_core.spark.count` (the manifest and
deletion files only). Beside them, a Python data source that serves the two columns from
memory after a first read: the floor Spark sets for any Python source on that query.

Last, the streaming sink: the same `rate-micro-batch` source into the `lance` sink and into
Spark's Parquet file sink, as rows per second of micro-batch time (Spark's own
`triggerExecution` duration of each batch, the first left out as warm-up), for narrow rows
(the rate source's timestamp and value) and wide ones (plus a unique 64-character string,
a repeated category, doubles and a 16-float array), in small batches (10k rows: the
per-batch commit dominates) and large ones (500k rows). A Python sink that drops its rows
runs beside them: the floor Spark sets for any Python data source sink. So does
`foreachBatch(LanceBatchWriter(uri))`, which collects each micro-batch on the driver as
Arrow and writes it there, with no Python worker.

The JVM reader (`--only jvm`, and first in a full run): `format("lance")` with the jar
the wheel ships on the classpath (`lance_core.spark.session`), against Spark's Parquet
reader, on the 4M-row dataset and on a wide 40-column variant (a quarter of the rows):
the narrow groupBy, the 4-column aggregate, a selective filter (0.1% of the rows, three
columns collected), `count()`, and a full scan into Spark's no-op sink.

Each is run once to warm up, then timed `--repeat` times in interleaved rounds. Prints the
best and median times and their ratios, and (on Linux) the median CPU time each query took in
the JVM and in the Python workers, to show where the time goes.

    python benches/spark_bench.py [--rows 4000000] [--repeat 5] [--only narrow|streaming]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import parquet_file, reference_dataset, wide_dataset  # noqa: E402

COLUMNS = ["value", "category", "name"]


def aggregate(df):
    from pyspark.sql import functions as F

    return df.agg(F.count("*").alias("rows"), F.sum("value").alias("sum_value"),
                  F.countDistinct("category").alias("categories"), F.max("name").alias("max_name")).collect()[0]


def cpu_seconds():
    """CPU seconds used so far by this process's descendants, as (JVM, Python workers):
    Spark's JVM is our child and its Python workers are the JVM's. A process's own time plus
    that of its finished children, so workers that exited still count. None off Linux."""
    if not os.path.isdir("/proc/self/task"):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    procs = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                name, rest = f.read().rsplit(")", 1)
        except OSError:
            continue
        fields = rest.split()
        cpu = sum(int(x) for x in fields[11:15]) / tick  # utime, stime, cutime, cstime
        procs[int(pid)] = (int(fields[1]), name.split("(", 1)[1], cpu)
    jvm = workers = 0.0
    for pid, (_, name, cpu) in procs.items():
        chain, p = [], pid
        while p in procs and p != os.getpid() and len(chain) < 32:
            chain.append(procs[p][1])
            p = procs[p][0]
        if p != os.getpid() or not chain:
            continue  # not a descendant
        if name == "java":
            jvm += cpu
        elif "java" in chain[1:]:
            workers += cpu
    return jvm, workers


def timed(jobs: dict, repeat: int) -> dict:
    """Best time of each job (after a warm-up run), rounds interleaved; and its answer."""
    answers = {name: job() for name, job in jobs.items()}
    times = {name: [] for name in jobs}
    for _ in range(repeat):
        for name, job in jobs.items():
            t0 = time.perf_counter()
            job()
            times[name].append(time.perf_counter() - t0)
    return {name: (min(ts), answers[name]) for name, ts in times.items()}


def cached_source_class():
    """A Python data source that serves each fragment's `category` and `value` columns from
    memory once a worker has read them: the floor of any Python data source on the narrow
    query, i.e. what Spark alone costs to take Arrow batches from Python workers."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class CachedReader(DataSourceReader):
        def __init__(self, uri):
            self.uri = uri

        def partitions(self):
            import lance_core

            return [InputPartition(f.fragment_id) for f in lance_core.dataset(self.uri).get_fragments()]

        def read(self, partition):
            import types

            import lance_core

            # Kept in a module of the worker process: Spark reuses workers between tasks.
            cache = sys.modules.setdefault("_bench_batch_cache", types.ModuleType("_bench_batch_cache")).__dict__
            key = (self.uri, partition.value)
            if key not in cache:
                frag = lance_core.dataset(self.uri).get_fragment(partition.value)
                cache[key] = list(frag.to_batches(["category", "value"], batch_size=1 << 20))
            yield from cache[key]

    class CachedBatches(DataSource):
        @classmethod
        def name(cls):
            return "python-cached-batches"

        def schema(self):
            return "category string, value double"

        def reader(self, schema):
            return CachedReader(self.options["path"])

    return CachedBatches


def narrow_and_count(spark, uri: str, parquet: str, repeat: int) -> None:
    from pyspark.sql import functions as F

    from lance_core.spark import aggregate as lance_aggregate, count, read_fragments

    def narrow(df):
        return sorted(tuple(r) for r in df.groupBy("category").agg(F.sum("value").alias("s")).collect())

    lance = lambda: spark.read.format("lance")  # noqa: E731
    queries = {
        "parquet": lambda: narrow(spark.read.parquet(parquet)),
        "lance (all columns)": lambda: narrow(lance().load(uri)),
        "lance columns=": lambda: narrow(lance().option("columns", "category,value").load(uri)),
        "read_fragments": lambda: narrow(read_fragments(spark, uri, columns=["category", "value"])),
        "aggregate": lambda: sorted(tuple(r) for r in lance_aggregate(spark, uri, {"s": ("sum", "value")},
                                                                      by="category").collect()),
        # Not a lance_core path: the floor Spark sets for any Python data source.
        "python source floor": lambda: narrow(spark.read.format("python-cached-batches").load(uri)),
    }
    spark.dataSource.register(cached_source_class())
    print("narrow query: groupBy(category).agg(sum(value)), best of", repeat, flush=True)
    res = timed(queries, repeat)
    base = res["parquet"][0]
    for name, (t, answer) in res.items():
        same = all(a[0] == b[0] and abs(a[1] - b[1]) <= 1e-9 * abs(b[1]) for a, b in zip(answer, res["parquet"][1]))
        print(f"  {name:20s} {t:6.2f}s  {base / t:5.2f}x Parquet's speed{'' if same else '  ANSWER DIFFERS'}")
    counts = {
        "parquet": lambda: spark.read.parquet(parquet).count(),
        "lance df.count()": lambda: lance().load(uri).count(),
        "lance columns=id": lambda: lance().option("columns", "id").load(uri).count(),
        "lance_core.spark.count": lambda: count(spark, uri),
    }
    print("count(), best of", repeat, flush=True)
    res = timed(counts, repeat)
    base = res["parquet"][0]
    for name, (t, answer) in res.items():
        print(f"  {name:22s} {t * 1000:8.1f} ms  {base / t:7.2f}x Parquet's speed  ({answer:,} rows)")


def jvm_reader(spark, rows: int, repeat: int) -> None:
    """The JVM reader against Spark's Parquet reader, query by query, on the benchmark
    dataset and on its wide variant."""
    from pyspark.sql import functions as F

    def queries(load, n):
        return {
            "narrow groupBy": lambda: sorted(tuple(r) for r in
                                             load().groupBy("category").agg(F.sum("value").alias("s")).collect()),
            "4-column aggregate": lambda: tuple(aggregate(load())),
            "filter 0.1%": lambda: sorted(tuple(r) for r in
                                          load().filter(F.col("id") < n // 1000).select("id", "value", "name").collect()),
            # 1/24 of the rows, under an aggregate Spark computes: tasks, as without the
            # read while planning (`local_result_rows`).
            "filter 4%, summed": lambda: tuple(load().filter(F.col("category") == "category-07")
                                               .agg(F.sum("value"), F.count("*")).first()),
            # 4% again, collected: more rows than a read while planning returns (16,384), so
            # the reader reads until one more passes, then plans tasks (that read's worst case).
            "filter 4%, collected": lambda: load().filter(F.col("category") == "category-07")
                                                .select("id", "value").toArrow().num_rows,
            "  collected, no probe": lambda: load(local_result_rows="0")
                                                .filter(F.col("category") == "category-07")
                                                .select("id", "value").toArrow().num_rows,
            "count()": lambda: load().count(),
            "full scan (noop)": lambda: load().write.format("noop").mode("overwrite").save(),
        }

    for label, uri, parquet, n in (
            (f"{rows:,} rows, 6 columns", reference_dataset(rows), parquet_file(rows), rows),
            (f"{rows // 4:,} rows, 40 columns", wide_dataset(rows // 4), parquet_file(rows // 4, wide=True), rows // 4)):
        print(f"JVM reader vs Spark's Parquet reader: {label}, best of {repeat}", flush=True)
        lance_q = queries(lambda uri=uri, **options: spark.read.format("lance").options(**options).load(uri), n)
        parquet_q = queries(lambda parquet=parquet, **_: spark.read.parquet(parquet), n)
        for name in lance_q:
            res = timed({"lance": lance_q[name], "parquet": parquet_q[name]}, repeat)
            (tl, al), (tp, ap) = res["lance"], res["parquet"]
            same = _close(al, ap)
            print(f"  {name:20s} lance {tl:6.3f}s  parquet {tp:6.3f}s  {tp / tl:5.2f}x Parquet's speed"
                  f"{'' if same else '  ANSWER DIFFERS'}", flush=True)


def _close(a, b) -> bool:
    """Answers equal but for float rounding (sums in another order)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1.0)
    return a == b


def stream_rows_per_second(spark, fmt: str, source, out: str, batches: int) -> float:
    """Run `source` into sink `fmt` at `out` for `batches` micro-batches (plus one of
    warm-up); rows per second of Spark's triggerExecution time over the timed ones."""
    import shutil

    for d in (out, out + ".ck"):
        shutil.rmtree(d, ignore_errors=True)
    w = source.writeStream.option("checkpointLocation", out + ".ck").trigger(processingTime="0 seconds")
    if fmt == "lance foreachBatch":
        from lance_core.spark import LanceBatchWriter

        q = w.foreachBatch(LanceBatchWriter(out)).start()
    else:
        q = w.format(fmt).option("path", out).start()
    try:
        while q.exception() is None:
            progress = [p for p in q.recentProgress if p["numInputRows"]]
            if len(progress) > batches:
                break
            time.sleep(0.02)
    finally:
        q.stop()
    if q.exception() is not None:
        raise RuntimeError(f"{fmt} stream failed: {q.exception()}")
    timed_batches = progress[1:batches + 1]
    rows = sum(p["numInputRows"] for p in timed_batches)
    return rows / (sum(p["durationMs"]["triggerExecution"] for p in timed_batches) / 1000)


def null_sink_class():
    """A Python streaming sink that drops every batch: the floor of any Python data source
    sink, i.e. what Spark alone costs to hand a micro-batch's rows to Python workers as
    Arrow and run the driver-side commit."""
    from pyspark.sql.datasource import DataSource, DataSourceStreamArrowWriter, WriterCommitMessage

    class DropWriter(DataSourceStreamArrowWriter):
        def write(self, iterator):
            for _ in iterator:
                pass
            return WriterCommitMessage()

        def commit(self, messages, batchId):
            pass

    class PythonNullSink(DataSource):
        @classmethod
        def name(cls):
            return "python-null-sink"

        def streamWriter(self, schema, overwrite):
            return DropWriter()

    return PythonNullSink


def streaming_sink(spark, workdir: str, repeat: int) -> None:
    from pyspark.sql import functions as F

    spark.dataSource.register(null_sink_class())

    def rate(rows: int, wide: bool):
        df = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", rows).option(
            "numPartitions", os.cpu_count() or 2).load()
        if wide:
            df = df.select("timestamp", "value", F.sha2(F.col("value").cast("string"), 256).alias("unique_text"),
                           F.concat(F.lit("category-"), (F.col("value") % 20).cast("string")).alias("category"),
                           (F.col("value") * 0.5).alias("x"), F.rand(7).alias("y"),
                           F.array(*[(F.col("value") % (k + 2)).cast("float") for k in range(16)]).alias("vec"))
        return df

    print(f"streaming sink: rate-micro-batch into each sink, rows/s of micro-batch time, best of {repeat}", flush=True)
    for rows, batches in ((10_000, 20), (500_000, 8)):
        for wide in (False, True):
            best = {}
            for _ in range(repeat):
                for fmt in ("parquet", "lance", "lance foreachBatch", "python-null-sink"):
                    out = os.path.join(workdir, f"stream_{fmt.replace(' ', '_')}")
                    rps = stream_rows_per_second(spark, fmt, rate(rows, wide), out, batches)
                    best[fmt] = max(best.get(fmt, 0.0), rps)
            shape = "wide (7 columns)" if wide else "narrow (2 columns)"
            floor = best["python-null-sink"]
            fb = best["lance foreachBatch"]
            print(f"  {rows:>7,} rows/batch, {shape:18s} parquet {best['parquet']:>10,.0f} rows/s  "
                  f"lance {best['lance']:>10,.0f} rows/s  {best['lance'] / best['parquet']:5.2f}x Parquet's speed  "
                  f"(a Python sink that drops the rows: {floor:>10,.0f} rows/s, {floor / best['parquet']:4.2f}x "
                  f"Parquet's; lance at {best['lance'] / floor:4.2f}x of it)  "
                  f"LanceBatchWriter {fb:>10,.0f} rows/s  {fb / best['parquet']:5.2f}x Parquet's speed", flush=True)


def pylance_frame(spark, uri):
    import lance
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema

    ds = lance.dataset(uri)
    schema = pa.schema([ds.schema.field(c) for c in COLUMNS])
    ids = [f.fragment_id for f in ds.get_fragments()]

    def read(batches):
        local = lance.dataset(uri)
        for b in batches:
            for fid in b.column(0).to_pylist():
                yield from local.get_fragment(fid).to_batches(columns=COLUMNS)

    work = spark.createDataFrame(spark.sparkContext.parallelize([(i,) for i in ids], len(ids)), "fragment_id long")
    return work.mapInArrow(read, from_arrow_schema(schema))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", choices=["jvm", "narrow", "streaming"], help="run only this part")
    args = ap.parse_args()
    uri = reference_dataset(args.rows)
    parquet = parquet_file(args.rows)

    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers use this interpreter
    import lance_core.spark
    from lance_core.spark import read_fragments

    # With the JVM reader's jar: `format("lance")` reads on the JVM.
    spark = lance_core.spark.session(
        SparkSession.builder.master("local[*]").appName("lance_core spark bench")
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(os.cpu_count() or 2)))
    spark.sparkContext.setLogLevel("ERROR")
    print(f"JVM reader: {'loaded' if lance_core.spark.jvm_reader_loaded(spark) else 'NOT LOADED (Python data source)'}")
    workdir = os.path.join(os.environ.get("TMPDIR", "/tmp"), "lance_core_spark_bench")
    if args.only == "streaming":
        streaming_sink(spark, workdir, args.repeat)
        return 0
    if args.only == "narrow":
        narrow_and_count(spark, uri, parquet, args.repeat)
        return 0
    jvm_reader(spark, args.rows, args.repeat)
    if args.only == "jvm":
        return 0
    readers = {
        "lance": lambda: spark.read.format("lance").option("columns", ",".join(COLUMNS)).load(uri),
        "parquet": lambda: spark.read.parquet(parquet),
        "pylance": lambda: pylance_frame(spark, uri),
        "frags": lambda: read_fragments(spark, uri, columns=COLUMNS),
    }
    print(f"{args.rows:,} rows, Spark {spark.version} local[*] on {os.cpu_count()} cores; "
          f"query: count(*), sum(value), count(distinct category), max(name)")
    answers = {name: aggregate(frame()) for name, frame in readers.items()}  # warm-up, and the answers
    # Rounds interleave the readers, so drift in the machine's speed hits all of them.
    times = {name: [] for name in readers}
    cpu = {name: [] for name in readers}
    for _ in range(args.repeat):
        for name, frame in readers.items():
            c0, t0 = cpu_seconds(), time.perf_counter()
            aggregate(frame())
            times[name].append(time.perf_counter() - t0)
            c1 = cpu_seconds()
            if c0 and c1:
                cpu[name].append((c1[0] - c0[0], c1[1] - c0[1]))
    best = {name: min(ts) for name, ts in times.items()}
    median = {name: sorted(ts)[len(ts) // 2] for name, ts in times.items()}
    for name, ts in times.items():
        line = f"  {name:8s} best {best[name]:.2f}s  median {median[name]:.2f}s  (runs: {', '.join(f'{t:.2f}' for t in ts)})"
        if cpu[name]:
            jvm, workers = (sorted(c[i] for c in cpu[name])[len(cpu[name]) // 2] for i in (0, 1))
            line += f"  CPU median: JVM {jvm:.2f}s, Python workers {workers:.2f}s"
        print(line, flush=True)
    first = answers["lance"]
    for name, row in answers.items():
        if (row.rows, row.categories, row.max_name) != (first.rows, first.categories, first.max_name) or \
                abs(row.sum_value - first.sum_value) > 1e-6 * abs(first.sum_value):
            print(f"  ANSWERS DIFFER: {name} {row} vs lance {first}")
            return 1
    print(f"  answer: {first.asDict()}")
    for stat, d in (("best", best), ("median", median)):
        print(f"  {stat:6s}: lance is {d['parquet'] / d['lance']:.2f}x the speed of Spark's Parquet reader, "
              f"{d['pylance'] / d['lance']:.2f}x the speed of pylance+mapInArrow "
              f"(pylance+mapInArrow: {d['parquet'] / d['pylance']:.2f}x Parquet's); "
              f"read_fragments is {d['pylance'] / d['frags']:.2f}x the speed of pylance+mapInArrow")
    narrow_and_count(spark, uri, parquet, args.repeat)
    streaming_sink(spark, workdir, min(args.repeat, 3))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
