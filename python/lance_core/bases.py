"""Base paths (pylance's `DatasetBasePath`): other locations a table's data files live in.
A table registers them when it is created (`write_dataset(..., initial_bases=[...])`) or
later (`LanceDataset.add_bases`); writers choose where new files go with `target_bases`
(names or paths of registered bases). A base that `is_dataset_root` keeps its files
under `data/`, as a table does; another keeps them directly in its directory."""

from __future__ import annotations

from typing import Iterable, List, Optional, Tuple

# (id, name, is_dataset_root, path): how the core takes and gives a base path.
BaseArg = Tuple[int, Optional[str], bool, str]


class DatasetBasePath:
    """A base path: `path` (a local path or URI, kept as given), an optional `name` that
    writers target it by, whether it `is_dataset_root`, and its `id` (assigned when the
    base is registered; 0 until then)."""

    def __init__(self, path: str, name: Optional[str] = None, is_dataset_root: bool = False,
                 id: Optional[int] = None):  # noqa: A002 - pylance's keyword
        self.path = str(path)
        self.name = name
        self.is_dataset_root = bool(is_dataset_root)
        self.id = int(id or 0)

    def _arg(self) -> BaseArg:
        return (self.id, self.name, self.is_dataset_root, self.path)

    @classmethod
    def _from_arg(cls, arg: BaseArg) -> "DatasetBasePath":
        id_, name, is_dataset_root, path = arg
        return cls(path, name=name, is_dataset_root=is_dataset_root, id=id_)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DatasetBasePath) and self._arg() == other._arg()

    def __hash__(self) -> int:
        return hash(self._arg())

    def __repr__(self) -> str:
        return (f"DatasetBasePath(id={self.id}, name={self.name!r}, path={self.path}, "
                f"is_dataset_root={self.is_dataset_root})")


def bases_arg(bases: Optional[Iterable[DatasetBasePath]]) -> Optional[List[BaseArg]]:
    """Base paths as the core takes them (None for none)."""
    if bases is None:
        return None
    out = []
    for b in bases:
        if not isinstance(b, DatasetBasePath):
            raise TypeError(f"base paths are DatasetBasePath objects, not {type(b).__name__}")
        out.append(b._arg())
    return out


def targets_arg(targets: Optional[Iterable[str]]) -> Optional[List[str]]:
    """Target bases (names or paths) as the core takes them."""
    if targets is None:
        return None
    if isinstance(targets, str):
        raise TypeError("target_bases is a list of base names or paths, not one string")
    return [str(t) for t in targets]
