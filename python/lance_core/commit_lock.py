"""pylance's `commit_lock`: a context manager factory called with the version about to be
committed and held while a write commits it. lance_core's commits need no lock; it serves
callers who coordinate with other writers through it."""

from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, Dict, Optional

from . import _lance_core
from .errors import CommitConflictError, DatasetNotFoundError


def run_under_lock(lock: Callable, version: int, uri: str, run: Callable) -> Any:
    """`run()` inside `lock(version)`, pylance's `commit_lock` (a context manager factory
    given the version about to be committed). What the lock raises, on entry or exit, is
    raised; a `CommitConflictError` on entry (the lock refusing the version) is raised as
    one that says so and names the lock's error."""
    try:
        held = lock(version)
        held.__enter__()
    except CommitConflictError as e:
        raise CommitConflictError(f"{uri}: the commit lock refused version {version}: {e!r}") from e
    with contextlib.ExitStack() as stack:
        stack.push(held)
        return run()


def under_commit_lock(lock: Any, uri: Any, storage_options: Optional[Dict[str, str]], run: Any) -> Any:
    """`run()` (a write that commits one version) inside `lock(version)`, pylance's
    `commit_lock`, given the version about to be committed (see `run_under_lock`)."""
    if lock is None:
        return run()
    try:
        version = _lance_core._Dataset.open(os.fspath(uri), None, storage_options).version + 1
    except DatasetNotFoundError:
        version = 1
    return run_under_lock(lock, version, os.fspath(uri), run)
