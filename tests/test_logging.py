"""The core's log records under pylance's environment variables (LANCE_LOG,
LANCE_LOG_FILE, LANCE_LOG_TS_PRECISION), and `lance_core.log` (pylance's `lance.log`)."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from unittest import mock

import pytest

from lance_core import log

_WRITE = "import lance_core, pyarrow as pa; lance_core.write_dataset(pa.table({'x': range(10)}), 'memory://t')"


def _run(env):
    return subprocess.run([sys.executable, "-c", _WRITE], capture_output=True, text=True, check=True,
                          env=dict(env, PATH=os.environ.get("PATH", "")))


def test_log_file_gets_the_records_and_stderr_none(tmp_path):
    path = tmp_path / "logs" / "nested" / "core.log"
    out = _run({"LANCE_LOG": "debug", "LANCE_LOG_FILE": str(path)})
    text = path.read_text()
    assert "INFO  lance_core::write::commit] memory://t: committed version 1 (overwrite)" in text
    assert "DEBUG" not in out.stderr and "INFO" not in out.stderr


@pytest.mark.parametrize("precision, fraction", [("s", ""), ("ms", r"\.\d{3}"), ("us", r"\.\d{6}"),
                                                 ("ns", r"\.\d{9}")])
def test_timestamp_precision(precision, fraction):
    first = _run({"LANCE_LOG": "info", "LANCE_LOG_TS_PRECISION": precision}).stderr.splitlines()[0]
    assert re.match(r"^\[\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}" + fraction + r"Z INFO ", first), first


def test_quiet_by_default_and_a_bad_file_falls_back_to_stderr(tmp_path):
    assert _run({}).stderr == ""
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    out = _run({"LANCE_LOG": "info", "LANCE_LOG_FILE": str(blocker / "core.log")})
    assert "cannot log to LANCE_LOG_FILE" in out.stderr and "committed version 1" in out.stderr


@pytest.mark.parametrize("value, level", [("DEBUG", "DEBUG"), ("", "INFO"), ("lance_core=debug,WARNING", "WARNING"),
                                          ("trace", "DEBUG")])
def test_python_side_level(value, level):
    with mock.patch.dict(os.environ, {log.ENV_NAME_PYLANCE_LOGGING_LEVEL: value}):
        assert log.get_log_level() == level


def test_set_logger(tmp_path):
    handler = logging.StreamHandler()
    try:
        log.set_logger(level=logging.DEBUG, log_handler=handler, format_string="%(message)s")
        assert log.LOGGER.level == logging.DEBUG and handler in log.LOGGER.handlers
        assert handler.formatter._fmt == "%(message)s"
    finally:
        log.LOGGER.removeHandler(handler)
        log.LOGGER.setLevel(logging.INFO)
