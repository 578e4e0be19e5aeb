"""A streaming driver for tests/test_spark_streaming.py, run as its own process so the test
can kill it: a `rate-micro-batch` source (deterministic: batch n holds values
n*rows..(n+1)*rows-1 whatever the time) into a Lance table, until the table holds
`target` rows.

    python stream_driver.py <table uri> <checkpoint dir> <rows per batch> <target rows>
"""

import os
import sys
import time

from pyspark.sql import SparkSession

import lance_core
from lance_core.errors import DatasetNotFoundError
import lance_core.spark


def main(uri: str, checkpoint: str, rows_per_batch: int, target: int) -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    builder = (SparkSession.builder.master("local[2]").appName("lance_core-stream-driver")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2"))
    spark = lance_core.spark.session(builder, jvm_reader=os.environ.get("LANCE_CORE_SPARK_READER") != "python")
    spark.sparkContext.setLogLevel("ERROR")
    source = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", rows_per_batch)
              .option("numPartitions", 2).load())
    query = (source.writeStream.format("lance").option("checkpointLocation", checkpoint)
             .trigger(processingTime="100 milliseconds").start(uri))
    print("started", flush=True)
    while True:
        if query.exception() is not None:
            raise SystemExit(f"stream failed: {query.exception()}")
        try:
            if lance_core.dataset(uri).count_rows() >= target:
                break
        except DatasetNotFoundError:
            pass
        time.sleep(0.05)
    query.stop()
    spark.stop()
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
