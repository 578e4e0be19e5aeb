"""The randomized soak of `fault_soak.py` with a fixed seed: three writer processes on one
table behind an object store that throttles, fails and loses answers; afterwards no row
is doubled or lost against the writers' logs, and every version reads the same in
lance_core and pylance. `python tests/fault_soak.py --seconds 300` runs it for longer."""

from __future__ import annotations

import fault_soak


def test_concurrent_writers_under_faults_lose_and_double_nothing():
    report = fault_soak.soak(seconds=25, seed=11)
    print(report)
    ends = report["ends"]
    assert report["operations"] >= 30, report
    assert sum(n for k, n in ends.items() if k.endswith(" ok")) >= 20, report
    assert report["faults"].get("lost", 0) >= 3, report
    assert report["checked"]["versions"] >= 10, report
