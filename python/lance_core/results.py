"""What dataset operations report, as pylance names it: transactions, I/O counts, compaction
and cleanup results, index descriptions and data statistics. Plain values: nothing here
reads a dataset."""

from __future__ import annotations

import uuid as uuid_module
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Dict, List, Optional


@dataclass
class Transaction:
    """What a version committed, as pylance's `Transaction`: the version it was based on,
    the operation (a `LanceOperation`), its uuid and the free-form properties its writer
    recorded. Also what `LanceDataset.commit` takes instead of an operation."""

    read_version: int
    operation: Any
    uuid: str = field(default_factory=lambda: str(uuid_module.uuid4()))
    transaction_properties: Optional[Dict[str, str]] = field(default_factory=dict)


@dataclass
class IOStats:
    """Requests made through a dataset's store (`io_stats_snapshot`): a read is one
    request for an object or ranges of one; a write is one object put or one part of an
    object uploaded in parts. `num_hops` is pylance's count of network hops (0 here)."""
    read_iops: int
    read_bytes: int
    write_iops: int
    write_bytes: int
    num_hops: int = 0


class CompactionMetrics:
    """What `compact_files` changed (pylance's names)."""

    def __init__(self, fragments_removed: int, fragments_added: int, files_removed: int, files_added: int) -> None:
        self.fragments_removed = fragments_removed
        self.fragments_added = fragments_added
        self.files_removed = files_removed
        self.files_added = files_added

    def __repr__(self) -> str:
        return "CompactionMetrics(" + ", ".join(f"{k}={v}" for k, v in vars(self).items()) + ")"


@dataclass
class IndexSegmentDescription:
    """One segment of an index (pylance's `IndexSegmentDescription`)."""
    uuid: str
    fragment_ids: set
    index_version: int
    created_at: Optional[datetime]
    dataset_version_at_last_update: int
    size_bytes: int
    base_id: Optional[int]
    covering_fields: list


@dataclass
class IndexDescription:
    """An index and its segments (pylance's `IndexDescription`)."""
    name: str
    type_url: str
    index_type: str
    num_rows_indexed: int
    fields: List[int]
    field_names: List[str]
    segments: List[IndexSegmentDescription]
    total_size_bytes: int
    details: Dict[str, Any]

    @property
    def num_segments(self) -> int:
        return len(self.segments)


@dataclass
class FieldStatistics:
    """One field's size in the data files (pylance's `FieldStatistics`)."""

    id: int
    bytes_on_disk: int


@dataclass
class DataStatistics:
    """`ds.stats.data_stats()`: the fields' sizes, in schema order."""

    fields: List[FieldStatistics]


class CleanupStats:
    """What `cleanup_old_versions` removed (pylance's names)."""

    def __init__(self, bytes_removed: int, old_versions: int, data_files_removed: int = 0,
                 transaction_files_removed: int = 0, index_files_removed: int = 0,
                 deletion_files_removed: int = 0, failed_deletes: int = 0) -> None:
        self.bytes_removed = bytes_removed
        self.old_versions = old_versions
        self.data_files_removed = data_files_removed
        self.transaction_files_removed = transaction_files_removed
        self.index_files_removed = index_files_removed
        self.deletion_files_removed = deletion_files_removed
        self.failed_deletes = failed_deletes

    def __repr__(self) -> str:
        return "CleanupStats(" + ", ".join(f"{k}={v}" for k, v in vars(self).items()) + ")"


@dataclass
class CleanupCandidateFile:
    """A file a cleanup would remove (`path` in the store; `kind`: "manifest", "data",
    "deletion", "transaction" or "index"; `unverified`: no version references it)."""
    path: str
    kind: str
    unverified: bool
    size_bytes: int


@dataclass
class CleanupReferencedBranch:
    """A branch starting from a version of the cleaned line (the version stays)."""
    name: str
    referenced_version: int
    cleanup_candidate: bool


@dataclass
class CleanupExplanation:
    """What `cleanup_old_versions` would do (`explain_cleanup_old_versions`)."""
    read_version: int
    stats: CleanupStats
    candidate_files: List[CleanupCandidateFile]
    candidate_files_truncated: bool
    candidate_file_limit: int
    referenced_branches: List[CleanupReferencedBranch]
    warnings: List[str]
