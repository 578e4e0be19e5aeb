"""pytest plugin for run_pylance_suite.py: streams each test's outcome to a JSON-lines file.

Loaded with `-p suite_recorder` in both runs (it does not touch `lance`). Unlike
--junitxml, which is written at the end, every line is flushed at once, so a run that
crashes or hangs still tells which tests finished and which one was running.

Environment: PYLANCE_SUITE_RECORD (the file to append to), PYLANCE_SUITE_TARGET
("pylance" or "lance_core") and, for lance_core, PYLANCE_SUITE_PYLANCE_DIR (pylance's
package directory: a run that loaded any module from there is flagged as a leak).
"""

from __future__ import annotations

import json
import os
import sys

_PATH = os.environ.get("PYLANCE_SUITE_RECORD")
_TARGET = os.environ.get("PYLANCE_SUITE_TARGET", "")


def _write(record: dict) -> None:
    if not _PATH:
        return
    with open(_PATH, "a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


def _message(report) -> str:
    """The exception type and message of a failure (or the reason of a skip)."""
    longrepr = report.longrepr
    if longrepr is None:
        return ""
    if isinstance(longrepr, tuple):  # a skip: (file, line, reason)
        return str(longrepr[2])
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None and crash.message:
        return crash.message
    return str(longrepr)[-2000:]


def _pylance_leaks() -> list:
    pylance_dir = os.environ.get("PYLANCE_SUITE_PYLANCE_DIR")
    if _TARGET != "lance_core" or not pylance_dir:
        return []
    prefix = os.path.join(os.path.realpath(pylance_dir), "")
    leaks = []
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if path and os.path.realpath(path).startswith(prefix):
            leaks.append(name)
    return leaks


def pytest_sessionstart(session):
    shim = sys.modules.get("lance_shim")
    _write({"event": "session", "target": _TARGET, "pid": os.getpid(),
            "shim": bool(shim and shim.installed())})
    if _TARGET == "lance_core" and not (shim and shim.installed()):
        raise RuntimeError("suite_recorder: the lance_core run has no lance_shim installed")


def pytest_collectreport(report):
    if report.failed:
        _write({"event": "collect", "nodeid": report.nodeid, "outcome": "failed", "message": _message(report)})


def pytest_runtest_logstart(nodeid, location):
    _write({"event": "start", "nodeid": nodeid})


def pytest_runtest_logreport(report):
    _write({"event": "report", "nodeid": report.nodeid, "when": report.when, "outcome": report.outcome,
            "xfail": hasattr(report, "wasxfail"), "duration": round(report.duration, 3),
            "message": _message(report) if report.outcome != "passed" else ""})


def pytest_sessionfinish(session, exitstatus):
    _write({"event": "finish", "exitstatus": int(exitstatus), "pylance_leaks": _pylance_leaks()})
