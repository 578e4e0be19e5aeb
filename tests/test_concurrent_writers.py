"""Every pair of writers of the conflict matrix, run at the same moment from two processes
on the same table with lance_core, both starting from version 1: whichever committed
first, the table afterwards and the other writer's outcome are those of the matrix's
deterministic run of the pair in that order (the second prepared from the version the
first started from, as in `test_conflict_matrix.py`, which compares that run with
pylance's): nothing committed is lost, a change applies on top of one it did not see
only where the conflict rules allow it, each loser ends in an error a program can act
on, and no loser leaves a file behind.

Here the two processes race (both commit behind a barrier), so the commit loop's own
retries and both interleavings are exercised."""

from __future__ import annotations

import multiprocessing as mp

import pytest

import lance_core
from test_conflict_matrix import (CALLER_FILES, PAIRS, TWO_PHASE, WRITERS, _outcome, _present_files, _referenced_files,
                                  _rows, _run, _step, _table)

# Outcomes a loser may end with: lost to the other (retryable or incompatible), or
# refused by the version it retried on (an update of a column the other dropped).
LOSING = ("retryable", "incompatible", "refused")


def _writer_process(conn, barrier):
    """Run the writers the test sends (table URI, writer name) until it sends None."""
    while (job := conn.recv()) is not None:
        conn.send(_race(*job, barrier))


def _race(uri, name, barrier):
    """Writer `name` on a handle of version 1 of `uri`, committing behind `barrier`:
    (outcome, version committed, caller files)."""
    CALLER_FILES.clear()
    h = lance_core.dataset(uri)
    prepared = WRITERS[name](lance_core, h) if name in TWO_PHASE else None
    committed = {}

    def run():
        barrier.wait(timeout=60)
        if prepared is not None:
            committed["version"] = prepared().version
        else:
            _step(lance_core, name, h)
            committed["version"] = h.version

    outcome = _outcome(run)
    return outcome, committed.get("version"), sorted(CALLER_FILES)


@pytest.fixture(scope="module")
def writers():
    ctx = mp.get_context("spawn")  # a fork would copy the tokio runtime's threads' state
    barrier = ctx.Barrier(2)
    pipes, procs = [], []
    for _ in range(2):
        ours, theirs = ctx.Pipe()
        p = ctx.Process(target=_writer_process, args=(theirs, barrier), daemon=True)
        p.start()
        pipes.append(ours)
        procs.append(p)
    yield pipes
    for conn, p in zip(pipes, procs):
        conn.send(None)
        p.join(timeout=30)


@pytest.mark.parametrize("first,second", PAIRS, ids=[f"{a} and {b}" for a, b in PAIRS])
def test_racing_pair(tmp_path, writers, first, second):
    uri = str(tmp_path / "raced.lance")
    lance_core.write_dataset(_table(), uri, max_rows_per_file=25)
    for conn, name in zip(writers, (first, second)):
        conn.send((uri, name))
    results = [conn.recv() for conn in writers]
    ends = {name: outcome for name, (outcome, _, _) in zip((first, second), results)}
    for name, (outcome, _, _) in zip((first, second), results):
        assert outcome == "committed" or outcome.startswith(LOSING), f"{name}: {outcome}"

    # The first to commit: the lower version (a tag makes none: it counts as first).
    order = sorted(zip((first, second), results), key=lambda r: (r[1][0] != "committed", r[1][1] or 0))
    (winner, (won, _, _)), (other, (outcome, _, _)) = order
    if won == "committed":
        expected = str(tmp_path / "expected.lance")
        expected_outcome = _run(lance_core, expected, winner, other)
        assert outcome == expected_outcome, f"{winner} then {other}: {outcome}, the matrix's run {expected_outcome}"
        assert _rows(uri).equals(_rows(expected)), f"{winner} then {other} ({ends}): not the matrix's table"

    caller = {f for _, _, files in results for f in files}
    left = _present_files(uri) - _referenced_files(uri) - caller
    assert not left, f"{first} and {second} ({ends}): files no version refers to: {sorted(left)}"
