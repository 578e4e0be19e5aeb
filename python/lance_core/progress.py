"""Progress of a write, fragment by fragment (pylance's `lance.progress`): pass an object
of a `FragmentWriteProgress` subclass as `progress=` to `write_dataset`, `write_fragments`
or `LanceFragment.create`, and it hears of each fragment as it is begun and completed."""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Dict, Literal, Optional

from .fragment_metadata import FragmentMetadata


@dataclass(frozen=True)
class IndexProgress:
    """One event of an index build: a stage starting, progressing or completing."""

    event: Literal["start", "progress", "complete"]
    stage: str
    completed: Optional[int] = None
    total: Optional[int] = None
    unit: str = ""

    @property
    def fraction(self) -> Optional[float]:
        """completed / total (at most 1), or None while either is unknown."""
        if self.completed is None or not self.total:
            return None
        return min(self.completed / self.total, 1.0)


class FragmentWriteProgress(ABC):
    """Told about each fragment a write makes. `begin` comes before the fragment's data
    file is written (its path is known, its row count is 0, its id may not be final);
    `complete` once the file is finished. An exception from either stops the write."""

    # The core calls these with the fragment as pylance's JSON.
    def _do_begin(self, fragment_json: str, **kwargs) -> None:
        return self.begin(FragmentMetadata.from_json(fragment_json), **kwargs)

    def _do_complete(self, fragment_json: str, **kwargs) -> None:
        return self.complete(FragmentMetadata.from_json(fragment_json), **kwargs)

    @abstractmethod
    def begin(self, fragment: "FragmentMetadata", **kwargs) -> None:
        """A fragment is about to be written."""

    @abstractmethod
    def complete(self, fragment: "FragmentMetadata", **kwargs) -> None:
        """A fragment's data is written."""


class NoopFragmentWriteProgress(FragmentWriteProgress):
    """Hears nothing (the default)."""

    def begin(self, fragment: "FragmentMetadata", **kwargs) -> None:
        pass

    def complete(self, fragment: "FragmentMetadata", **kwargs) -> None:
        pass


class FileSystemFragmentWriteProgress(FragmentWriteProgress):
    """Keeps a write's state in files under `base_uri`, so another process can find what a
    crashed writer left: `fragment_<id>.in_progress` (the id and this tracker's
    `metadata`) from `begin` until `complete`, and `fragment_<id>.json` (the fragment's
    metadata as begun)."""

    PROGRESS_EXT: str = ".in_progress"

    def __init__(self, base_uri: str, metadata: Optional[Dict[str, str]] = None):
        from pyarrow.fs import FileSystem

        self._fs, self._base_path = FileSystem.from_uri(os.fspath(base_uri))
        self._metadata = dict(metadata or {})

    def _in_progress_path(self, fragment: "FragmentMetadata") -> str:
        return f"{self._base_path}/fragment_{fragment.id}{self.PROGRESS_EXT}"

    def _fragment_file(self, fragment: "FragmentMetadata") -> str:
        return f"{self._base_path}/fragment_{fragment.id}.json"

    def begin(self, fragment: "FragmentMetadata", **kwargs) -> None:
        self._fs.create_dir(self._base_path, recursive=True)
        state = {"fragment_id": fragment.id, "metadata": self._metadata}
        with self._fs.open_output_stream(self._in_progress_path(fragment)) as out:
            out.write(json.dumps(state).encode("utf-8"))
        with self._fs.open_output_stream(self._fragment_file(fragment)) as out:
            out.write(json.dumps(fragment.to_json()).encode("utf-8"))

    def complete(self, fragment: "FragmentMetadata", **kwargs) -> None:
        self._fs.delete_file(self._in_progress_path(fragment))
