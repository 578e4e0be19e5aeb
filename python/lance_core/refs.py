"""Tags and branches: names for versions and lines of versions, stored as pylance stores
them (`_refs/tags/`, `_refs/branches/`)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from .errors import InvalidInputError

if TYPE_CHECKING:
    from .dataset import LanceDataset


def _rfc3339(text: Optional[str]) -> Optional[datetime]:
    """A tag file's time (RFC 3339, nanoseconds, UTC) as a datetime in UTC."""
    if not text:
        return None
    head, _, frac = text.rstrip("Z").partition(".")
    micros = int((frac + "000000")[:6]) if frac else 0
    return datetime.strptime(head, "%Y-%m-%dT%H:%M:%S").replace(microsecond=micros, tzinfo=timezone.utc)


class Tags:
    """Names for versions, stored as pylance stores them (`_refs/tags/{name}.json`), so
    either library reads the other's tags; tagged versions are kept by cleanup."""

    def __init__(self, ds: "LanceDataset") -> None:
        self._dataset = ds

    def _target(self, reference: Any) -> Tuple[Optional[str], int]:
        """(branch, version) of a reference: None (the latest version of this dataset's
        branch), a number (on this dataset's branch), a tag, or (branch, version or None)."""
        ds = self._dataset
        if reference is None:
            return ds.branch, ds.latest_version
        if isinstance(reference, tuple):
            if len(reference) != 2:
                raise InvalidInputError(f"a (branch, version) reference has two parts, got {reference!r}")
            branch, version = reference
            branch = None if branch in (None, "main") else branch
            line = ds.checkout_version((branch, version))
            return branch, line.version
        if isinstance(reference, str):
            tag = self.list().get(reference)
            if tag is None:
                raise InvalidInputError(f"{ds.uri}: tag '{reference}' does not exist")
            return tag["branch"], tag["version"]
        if isinstance(reference, bool) or not isinstance(reference, int) or reference < 0:
            raise InvalidInputError(f"a tag names a version number, a tag, (branch, version) or None, got {reference!r}")
        return ds.branch, reference

    def list(self) -> Dict[str, Dict[str, Any]]:
        """Every tag: name → branch, version, created_at, updated_at, manifest_size, metadata."""
        out = {}
        for name, branch, version, created, updated, size, metadata in self._dataset._ds.tag_list():
            out[name] = {"branch": branch, "version": version, "created_at": _rfc3339(created),
                         "updated_at": _rfc3339(updated), "manifest_size": size, "metadata": dict(metadata)}
        return out

    def get_version(self, tag: str) -> int:
        tags = self.list()
        if tag not in tags:
            raise InvalidInputError(f"{self._dataset.uri}: tag '{tag}' does not exist")
        return tags[tag]["version"]

    def create(self, tag: str, reference: Any = None) -> None:
        """Tag version `reference` (a number, another tag, or None for the latest)."""
        self._dataset._ds.tag_set(tag, *self._target(reference), False)

    def update(self, tag: str, reference: Any = None) -> None:
        """Point an existing tag at another version."""
        self._dataset._ds.tag_set(tag, *self._target(reference), True)

    def delete(self, tag: str) -> None:
        self._dataset._ds.tag_delete(tag)

    def list_ordered(self, order: str = "desc") -> List[Tuple[str, Dict[str, Any]]]:
        """Every tag as (name, contents), by the version it names ("desc": newest first)."""
        if order not in ("asc", "desc"):
            raise InvalidInputError(f"order must be 'asc' or 'desc', got {order!r}")
        return sorted(self.list().items(), key=lambda kv: (kv[1]["version"], kv[0]), reverse=order == "desc")

    def __repr__(self) -> str:
        return f"Tags({self.list()!r})"


class Branches:
    """The table's branches, stored as pylance stores them (`_refs/branches/{name}.json`
    and the branch's versions in `tree/{name}/`), so either library reads and changes the
    other's branches."""

    def __init__(self, ds: "LanceDataset") -> None:
        self._dataset = ds

    def list(self) -> Dict[str, Dict[str, Any]]:
        """Every branch: name → parent_branch (None: main), branch_identifier (the lineage:
        (version, id) per branch point), parent_version, create_at (unix seconds),
        manifest_size, metadata."""
        out = {}
        for name, parent, lineage, version, created, size, metadata in self._dataset._ds.branch_list():
            out[name] = {"parent_branch": parent, "branch_identifier": [tuple(p) for p in lineage],
                         "parent_version": version, "create_at": created, "manifest_size": size,
                         "metadata": dict(metadata)}
        return out

    def list_ordered(self, order: Optional[str] = None) -> List[Tuple[str, Dict[str, Any]]]:
        """Every branch as (name, contents), by the parent version it starts from
        ("desc", the default: newest first; ties by name)."""
        order = order or "desc"
        if order not in ("asc", "desc"):
            raise InvalidInputError(f"order must be 'asc' or 'desc', got {order!r}")
        items = sorted(self.list().items(), key=lambda kv: kv[0])
        return sorted(items, key=lambda kv: kv[1]["parent_version"], reverse=order == "desc")

    def delete(self, branch: str) -> None:
        """Delete a branch: its description and its directory (refused while branches
        made from it exist)."""
        self._dataset._ds.branch_delete(branch)

    def __repr__(self) -> str:
        return f"Branches({self.list()!r})"
