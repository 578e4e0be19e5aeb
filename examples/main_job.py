"""The main job: a Spark pipeline on local Spark over a generated Lance dataset.

1. Generates a dataset (fragments of ids, doubles, strings, categories, vectors). Until
   lance_core can write (next milestone), pylance writes it.
2. Reads it on Spark, one task per fragment, through lance_core in `mapInArrow`, and
   aggregates per category.
3. Prints versions, row counts and timings as it goes.

    python examples/main_job.py [--rows 2000000] [--dir /tmp/lance_core_main_job]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

import numpy as np
import pyarrow as pa

import lance_core


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def generate(path: str, rows: int, rows_per_fragment: int) -> None:
    import lance  # the reference implementation writes the input for now

    schema = pa.schema([
        ("id", pa.int64()), ("value", pa.float64()), ("name", pa.string()),
        ("category", pa.string()), ("vector", pa.list_(pa.float32(), 8)),
    ])
    rng = np.random.default_rng(7)
    cats = np.array([f"cat-{i:02d}" for i in range(16)])

    def batches():
        for start in range(0, rows, 250_000):
            n = min(250_000, rows - start)
            yield pa.record_batch([
                pa.array(np.arange(start, start + n, dtype=np.int64)),
                pa.array(rng.normal(100, 15, n)),
                pa.array([f"user-{i % 50_000}" for i in range(start, start + n)]),
                pa.array(cats[rng.integers(0, len(cats), n)]),
                pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 8).astype(np.float32)), 8),
            ], schema=schema)
        log(f"  generated {rows:,} rows")

    shutil.rmtree(path, ignore_errors=True)
    lance.write_dataset(pa.RecordBatchReader.from_batches(schema, batches()), path, max_rows_per_file=rows_per_fragment)


def read_fragments(uri: str, columns):
    """A mapInArrow function: each input row names a fragment; yield its batches."""

    def run(batches):
        ds = lance_core.dataset(uri)
        for batch in batches:
            for fid in batch.column("fragment_id").to_pylist():
                yield from ds.get_fragment(fid).to_batches(columns=columns)

    return run


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--rows-per-fragment", type=int, default=250_000)
    ap.add_argument("--dir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "lance_core_main_job"))
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    uri = os.path.join(args.dir, "events.lance")

    t0 = time.time()
    log(f"1/3 generating {args.rows:,} rows into {uri}")
    generate(uri, args.rows, args.rows_per_fragment)
    ds = lance_core.dataset(uri)
    log(f"    version {ds.version}, format {ds.data_storage_version}, {len(ds.get_fragments())} fragments, "
        f"{ds.count_rows():,} rows ({time.time() - t0:.1f}s)")

    t1 = time.time()
    log("2/3 starting local Spark")
    from pyspark.sql import SparkSession, functions as F

    spark = (SparkSession.builder.master("local[*]").appName("lance_core main job")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    log(f"    Spark {spark.version} up ({time.time() - t1:.1f}s)")

    t2 = time.time()
    log("3/3 reading fragments with lance_core in mapInArrow and aggregating per category")
    columns = ["id", "value", "category"]
    schema = pa.schema([f for f in ds.schema if f.name in columns])
    from pyspark.sql.pandas.types import from_arrow_schema

    frags = spark.createDataFrame([(f.fragment_id,) for f in ds.get_fragments()], "fragment_id long")
    frags = frags.repartition(len(ds.get_fragments()))
    rows = frags.mapInArrow(read_fragments(uri, columns), from_arrow_schema(schema))
    result = (rows.groupBy("category")
              .agg(F.count("*").alias("rows"), F.sum("value").alias("sum_value"), F.max("id").alias("max_id"))
              .orderBy("category"))
    out = result.toPandas()
    log(f"    aggregated {int(out['rows'].sum()):,} rows into {len(out)} categories ({time.time() - t2:.1f}s)")
    print(out.head(16).to_string(index=False), flush=True)
    if int(out["rows"].sum()) != ds.count_rows():
        log("row counts do not match!")
        return 1
    spark.stop()
    log(f"done in {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
