"""lance_core: a fast reader of the Lance table format, with pylance's API.

>>> import lance_core
>>> ds = lance_core.dataset("/data/my_table.lance")
>>> ds.to_table(columns=["id", "vector"], limit=10)
"""

from ._lance_core import __version__
from .dataset import LanceDataset, LanceFragment, LanceScanner, dataset
from .fragment_metadata import FragmentMetadata, LanceOperation, commit, write_fragments
from .write import write_dataset
from .errors import (
    CorruptFileError,
    DatasetNotFoundError,
    InvalidInputError,
    LanceError,
    LanceIOError,
    UnsupportedFeatureError,
)

# Short names, for users who prefer them.
Dataset = LanceDataset
Fragment = LanceFragment
Scanner = LanceScanner

__all__ = [
    "__version__",
    "dataset",
    "write_dataset",
    "write_fragments",
    "commit",
    "FragmentMetadata",
    "LanceOperation",
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
    "LanceIOError",
]
