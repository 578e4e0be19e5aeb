"""Random filters run in lance_core and pylance and compared (tests/differential.py). Each
run takes a new seed, printed on failure; `LANCE_CORE_DIFFERENTIAL_SEED` replays one, and
`python tests/differential.py` is the long mode."""

from __future__ import annotations

import os
import time

import differential

SEED = int(os.environ.get("LANCE_CORE_DIFFERENTIAL_SEED", time.time_ns() % 2 ** 31))
FILTERS = int(os.environ.get("LANCE_CORE_DIFFERENTIAL_FILTERS", "400"))


def described(report) -> str:
    summary = f"seed {SEED} (LANCE_CORE_DIFFERENTIAL_SEED={SEED} replays it)\n{report.summary()}"
    print(summary)
    return summary


def test_random_filters_give_pylances_rows(tmp_path):
    report = differential.run_filters(str(tmp_path), FILTERS, SEED, log=None)
    summary = described(report)
    assert not report.bugs, summary
    accepted = report.filters - report.pylance_refused - report.both_refused
    # The target is at most 1% refused; a few hundred filters allow one.
    assert len(report.we_refused) <= max(1, accepted // 100), summary
    # The generator must reach far: most filters run in both libraries.
    assert report.agreed > FILTERS // 2, summary


SEQUENCES = int(os.environ.get("LANCE_CORE_DIFFERENTIAL_SEQUENCES", "60"))


def test_random_row_changes_leave_pylances_table(tmp_path):
    report = differential.run_sequences(str(tmp_path), SEQUENCES, SEED, log=None)
    summary = described(report)
    assert not report.bugs, summary
    assert report.steps - report.refused_by_both > SEQUENCES, summary


SPARK_FILTERS = int(os.environ.get("LANCE_CORE_DIFFERENTIAL_SPARK_FILTERS", "120"))


def test_spark_pushed_filters_give_sparks_rows(spark, tmp_path):
    """Random conditions on a DataFrame of the `lance` source (which takes the filters it
    can evaluate exactly) against the same conditions Spark evaluates itself over a Parquet
    copy of the same rows."""
    import random

    import lance
    import pyarrow.parquet as pq

    rng = random.Random(SEED)
    path, copy = str(tmp_path / "t.lance"), str(tmp_path / "t.parquet")
    table = differential.build_table(300, SEED).select(differential.SPARK_COLUMNS)
    lance.write_dataset(table, path, max_rows_per_file=120)
    lance.dataset(path).delete("id % 7 = 3")
    pq.write_table(lance.dataset(path).to_table(), copy)
    types = {f.name: f.type for f in table.schema}
    # Spark's own answer: its Parquet reader skips row groups by their statistics, which
    # leave NaN out, so `f = NaN` would find none; with that off Spark filters every row.
    previous = spark.conf.get("spark.sql.parquet.filterPushdown")
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    try:
        checked, pushed = _compare_spark(spark, rng, types, path, copy)
    finally:
        spark.conf.set("spark.sql.parquet.filterPushdown", previous)
    assert checked > SPARK_FILTERS // 2, f"seed {SEED}: only {checked} conditions ran"
    assert pushed > checked // 4, f"seed {SEED}: only {pushed} of {checked} conditions were pushed whole"


def _compare_spark(spark, rng, types, path, copy):
    checked = pushed = 0
    for _ in range(SPARK_FILTERS):
        cond = differential.spark_condition(rng, types, rng.randint(0, 2))
        ours = spark.read.format("lance").load(path).filter(cond).select("id")
        theirs = spark.read.parquet(copy).filter(cond).select("id")
        try:
            expected = sorted(r.id for r in theirs.collect())
        except Exception:  # a condition Spark itself does not take
            continue
        got = sorted(r.id for r in ours.collect())
        assert got == expected, f"seed {SEED}: {cond}: lance {len(got)} rows, Spark {len(expected)}"
        checked += 1
        # With every filter taken by the source, Spark's plan keeps no Filter node of its own.
        plan = ours._jdf.queryExecution().executedPlan().toString().splitlines()
        pushed += not any(line.lstrip(" +-:*()0123456789").startswith("Filter ") for line in plan)
    return checked, pushed
