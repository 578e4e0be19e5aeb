"""Exceptions raised by lance_core.

Every error names the file (or dataset) involved and what is wrong with it. Each class
also derives from the closest builtin, so ``except FileNotFoundError`` or
``except ValueError`` work as a pylance user would expect.
"""


class LanceError(Exception):
    """Base class of every lance_core error."""


class DatasetNotFoundError(LanceError, FileNotFoundError):
    """The dataset, version, tag or a file it references does not exist."""


class CorruptFileError(LanceError, OSError):
    """A file exists but its bytes are not valid Lance data (truncated, damaged)."""


class UnsupportedFeatureError(LanceError, NotImplementedError):
    """Valid Lance data that uses a feature, encoding or version lance_core cannot read yet."""


class InvalidInputError(LanceError, ValueError):
    """An argument is invalid (an unknown column, a bad version, ...)."""


class CommitConflictError(InvalidInputError):
    """Another writer committed a change this one cannot be applied on top of; re-read the
    dataset and try again (update and merge_insert retry by themselves)."""


class LanceIOError(LanceError, OSError):
    """The storage backend failed (permissions, network, ...)."""


__all__ = [
    "LanceError",
    "DatasetNotFoundError",
    "CorruptFileError",
    "UnsupportedFeatureError",
    "InvalidInputError",
    "CommitConflictError",
    "LanceIOError",
]
