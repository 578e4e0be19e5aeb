"""Exceptions raised by lance_core.

Every error names the file (or dataset) involved and what is wrong with it. Each class
also derives from the closest builtin, so ``except FileNotFoundError`` or
``except ValueError`` work as a pylance user would expect.
"""


class LanceError(Exception):
    """Base class of every lance_core error."""


class DatasetNotFoundError(LanceError, FileNotFoundError, ValueError):
    """The dataset, version, tag or a file it references does not exist: a
    `FileNotFoundError`, and a `ValueError` as pylance raises for every one of these."""


class CorruptFileError(LanceError, OSError):
    """A file exists but its bytes are not valid Lance data (truncated, damaged)."""


class UnsupportedFeatureError(LanceError, NotImplementedError):
    """Valid Lance data that uses a feature, encoding or version lance_core cannot read yet."""


class InvalidInputError(LanceError, ValueError):
    """An argument is invalid (an unknown column, a bad version, ...)."""


class ColumnNotFoundError(InvalidInputError, KeyError):
    """A column named by the caller is not in the dataset: a `ValueError` like every
    invalid argument, and a `KeyError` as pylance raises for it."""

    __str__ = Exception.__str__


class SchemaMismatchError(InvalidInputError, OSError):
    """Data given to an existing table does not fit its schema (a column missing, extra or
    of another type): a `ValueError` like every invalid argument, and an `OSError` as
    pylance raises it."""


class CommitConflictError(LanceError, OSError):
    """Another writer committed first, and this change, as prepared, cannot be applied on
    top of theirs; re-running it against the new version can succeed (update, delete and
    merge_insert do so by themselves). An `OSError` with `retryable`, as pylance's
    `lance.commit.CommitConflictError`."""

    retryable = True


class IncompatibleTransactionError(CommitConflictError):
    """Another writer committed a change this one cannot follow at all (it replaced the
    table this change was written for): re-running will not help. `retryable` is False."""

    retryable = False


class LanceIOError(LanceError, OSError):
    """The storage backend failed (permissions, network, ...). When a write fails so,
    nothing was committed and it is safe to run it again; the one exception is
    `OutcomeUnknownError`."""


class OutcomeUnknownError(LanceIOError):
    """A write (a commit, a tag) was sent but whether it happened cannot be told: the
    store's answers were lost, even after retries, and reading back did not settle it. A
    commit in this state may be a new version or none; the files it wrote are kept. Open
    the table to see: a version whose transaction carries the operation's properties is
    it. Not safe to run again blindly."""


__all__ = [
    "LanceError",
    "DatasetNotFoundError",
    "CorruptFileError",
    "UnsupportedFeatureError",
    "InvalidInputError",
    "ColumnNotFoundError",
    "SchemaMismatchError",
    "CommitConflictError",
    "IncompatibleTransactionError",
    "LanceIOError",
    "OutcomeUnknownError",
]
