"""lance_core through Spark Connect: a server started as docs/spark.md says
(`spark_cluster.ConnectServer`: pyspark's `spark-submit` of the Connect server with the jar
and lance_core's session extensions, `local[2]`, loopback) and a client session built with
`lance_core.spark.session(SparkSession.builder.remote(url))` in a driver process of its own.
Every step of `spark_steps.run` gives the answers it gives in `local[*]`, but
`foreachBatch(LanceBatchWriter(...))`, which needs the SparkContext a Connect client has not
and stops its query with an error that says so."""

from __future__ import annotations

import pytest

from spark_cluster import ConnectServer, steps_in_a_driver


# With pytest -n, one worker runs both modules that compare with `local_answers`, which then
# is computed once.
pytestmark = pytest.mark.xdist_group("local_answers")

@pytest.fixture(scope="module")
def server():
    with ConnectServer() as s:
        yield s


def test_every_step_through_spark_connect(server, local_answers, tmp_path):
    answers = steps_in_a_driver(["--remote", server.url], tmp_path, logs=server.log)
    assert answers.pop("LanceBatchWriter") == "refused: Spark Connect"
    assert answers == {k: v for k, v in local_answers.items() if k != "LanceBatchWriter"}
