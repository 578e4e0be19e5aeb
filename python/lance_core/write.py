"""Committing operations written elsewhere (`commit`); `write_dataset` is defined beside
`LanceDataset` (as in pylance: `LanceDataset.insert` is a `write_dataset`) and named here
too."""

from __future__ import annotations

import os
from typing import Dict, Optional, Union

from .dataset import LanceDataset, write_dataset  # noqa: F401
from .fragment_metadata import _commit_native


def commit(
    uri: Union[str, os.PathLike],
    operation,
    read_version: Optional[int] = None,
    storage_options: Optional[Dict[str, str]] = None,
    transaction_properties: Optional[Dict[str, str]] = None,
) -> LanceDataset:
    """Commit `operation` (a `LanceOperation`) as one new version; `read_version` is the
    version it was prepared against (the latest when None). Concurrent commits are checked
    against it. `transaction_properties` are recorded in the version's transaction
    (`LanceDataset.read_transaction`). When the commit fails, the operation's files stay:
    they can be committed again."""
    return LanceDataset(_commit_native(uri, operation, read_version, storage_options, transaction_properties))
