"""Logging (pylance's `lance.log`). The Rust core logs through its own logger, set by
the environment: `LANCE_LOG` (a filter such as `debug` or `lance_core=debug,warn`),
`LANCE_LOG_FILE` and `LANCE_LOG_TS_PRECISION`. `LOGGER` is the Python side's logger, at
the first plain level `LANCE_LOG` names (INFO by default); `set_logger` adds a handler."""

from __future__ import annotations

import logging
import os
from typing import Optional

ENV_NAME_PYLANCE_LOGGING_LEVEL = "LANCE_LOG"


def get_python_log_level(rust_log_level: str) -> str:
    """A Rust level name as Python's (Rust's `trace` is Python's DEBUG)."""
    return "DEBUG" if rust_log_level.lower() == "trace" else rust_log_level


def get_log_level() -> str:
    """The first entry of `LANCE_LOG` that is a bare level (not `target=level`), or INFO."""
    entries = [e for e in os.environ.get(ENV_NAME_PYLANCE_LOGGING_LEVEL, "INFO").upper().split(",")
               if e and "=" not in e]
    return get_python_log_level(entries[0]) if entries else "INFO"


LOGGER = logging.getLogger("lance_core")
LOGGER.setLevel(get_log_level())


def set_logger(file_path: Optional[str] = "lance_core.log", name: str = "lance_core", level: int = logging.INFO,
               format_string: Optional[str] = None, log_handler: Optional[logging.Handler] = None) -> None:
    """Make `LOGGER` the logger `name` at `level`, writing to `log_handler` (a file
    handler on `file_path` when None) in `format_string`."""
    global LOGGER
    LOGGER = logging.getLogger(name)
    LOGGER.setLevel(level)
    handler = log_handler if log_handler is not None else logging.FileHandler(file_path)
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter(
        format_string or "%(asctime)s %(name)s [%(levelname)s] %(filename)s:%(lineno)d %(funcName)s : %(message)s"))
    LOGGER.addHandler(handler)
