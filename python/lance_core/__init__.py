"""lance_core: a fast reader of the Lance table format, with pylance's API.

>>> import lance_core
>>> ds = lance_core.dataset("/data/my_table.lance")
>>> ds.to_table(columns=["id", "vector"], limit=10)
"""

import os as _os

# The extension allocates with mimalloc, which by default returns freed memory to the
# system after 10 ms; a scan frees and allocates the same sizes batch after batch, and
# each fresh page then costs a fault and zeroing by the kernel (a fifth of a filtered
# scan's time). Kept for five seconds, memory is reused; it goes back to the system once
# they have passed (at the allocator's next activity). Peak memory does not grow.
# Read when the extension loads; a value the user set wins.
_os.environ.setdefault("MIMALLOC_PURGE_DELAY", "5000")

from ._lance_core import __version__  # noqa: E402
from ._lance_core import bytes_read_counter, iops_counter  # noqa: E402
from ._lance_core import Session  # noqa: E402
from .dataset import (CleanupCandidateFile, CleanupExplanation, CleanupReferencedBranch, CleanupStats,  # noqa: E402
                      LanceDataset, LanceFragment, LanceScanner, Transaction, dataset)
from .fragment_metadata import DataFile, DeletionFile, FragmentMetadata, LanceOperation, write_fragments
from .write import commit, write_dataset
from .blob import (Blob, BlobArray, BlobColumn, BlobDescriptor, BlobDescriptorArrayBuilder, BlobFile,  # noqa: E402
                   blob_array, blob_field)
from . import optimize  # noqa: E402,F401  (lance_core.optimize.Compaction)
from .udf import BatchUDF, batch_udf  # noqa: E402
from .bases import DatasetBasePath  # noqa: E402
from .schema import json_to_schema, schema_to_json  # noqa: E402
from .errors import (
    CorruptFileError,
    DatasetNotFoundError,
    InvalidInputError,
    SchemaMismatchError,
    CommitConflictError,
    IncompatibleTransactionError,
    LanceError,
    LanceIOError,
    OutcomeUnknownError,
    UnsupportedFeatureError,
)

# Short names, for users who prefer them.
Dataset = LanceDataset
Fragment = LanceFragment
Scanner = LanceScanner

__all__ = [
    "__version__",
    "Blob",
    "BlobArray",
    "BlobColumn",
    "BlobFile",
    "BlobDescriptor",
    "BlobDescriptorArrayBuilder",
    "blob_array",
    "blob_field",
    "BatchUDF",
    "DatasetBasePath",
    "batch_udf",
    "iops_counter",
    "schema_to_json",
    "json_to_schema",
    "bytes_read_counter",
    "dataset",
    "write_dataset",
    "write_fragments",
    "commit",
    "DataFile",
    "DeletionFile",
    "FragmentMetadata",
    "LanceOperation",
    "Session",
    "Transaction",
    "CleanupStats",
    "CleanupExplanation",
    "CleanupCandidateFile",
    "CleanupReferencedBranch",
    "Dataset",
    "Fragment",
    "Scanner",
    "LanceDataset",
    "LanceFragment",
    "LanceScanner",
    "LanceError",
    "DatasetNotFoundError",
    "CorruptFileError",
    "UnsupportedFeatureError",
    "InvalidInputError",
    "SchemaMismatchError",
    "CommitConflictError",
    "IncompatibleTransactionError",
    "LanceIOError",
    "OutcomeUnknownError",
]
