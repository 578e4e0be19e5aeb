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
