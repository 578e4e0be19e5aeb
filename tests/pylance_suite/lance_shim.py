"""`import lance` gives lance_core: a name map, nothing more.

Used by run_pylance_suite.py to run pylance's own tests against lance_core. The rule
(strict): this module only says which lance_core module answers for which pylance
module. It implements nothing: a name lance_core lacks stays missing (ImportError,
ModuleNotFoundError or AttributeError), so no test can pass because of the shim.

`install()` puts a finder first on sys.meta_path that owns `lance` and every `lance.*`
name, so pylance's own package (installed beside lance_core) can never be reached:

- `lance` is an alias module: its attributes are lance_core's, then the mapped
  submodules below (lance_core has a `dataset` function, which wins over the
  `lance.dataset` submodule, as in pylance).
- A pylance submodule in MODULES is the lance_core module (or, for several, an alias
  module that looks a name up in each of them, in order) that defines the same names.
- Any other `lance.*` module is missing.

run_pylance_suite.py installs it through a sitecustomize.py and, for processes a test
starts with an environment of its own, a .pth file in the venv that runs the lance_core
tests: every interpreter of a run (pytest and the processes it spawns) sees the same
mapping, and none can reach pylance.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from typing import Dict, List, Optional, Sequence

# pylance module -> the lance_core modules that define its names (looked up in order).
MODULES: Dict[str, List[str]] = {
    "lance": ["lance_core"],
    # LanceDataset, LanceScanner, MergeInsertBuilder, Transaction, ... (the module: lance_core.dataset,
    # the attribute, is the function that opens a dataset).
    "lance.dataset": ["lance_core.dataset"],
    # pylance's lance.fragment has FragmentMetadata and write_fragments (lance_core.fragment_metadata)
    # and LanceFragment (lance_core.dataset).
    "lance.fragment": ["lance_core.fragment_metadata", "lance_core.dataset"],
    "lance.blob": ["lance_core.blob"],
    "lance.arrow": ["lance_core.arrow"],
    "lance.file": ["lance_core.file"],
    "lance.optimize": ["lance_core.optimize"],
    # pylance's lance.commit defines CommitConflictError.
    "lance.commit": ["lance_core.errors"],
    "lance.vector": ["lance_core.vector"],
    "lance.progress": ["lance_core.progress"],
    "lance.schema": ["lance_core.schema"],
    "lance.debug": ["lance_core.debug"],
    "lance.util": ["lance_core.util"],
    "lance.log": ["lance_core.log"],
    "lance.namespace": ["lance_core.namespace"],
    "lance._dataset.sharded_batch_iterator": ["lance_core.sharded_batch_iterator"],
    "lance.sampler": ["lance_core.sampler"],
    # The native extension (pylance's Compaction lives there; ours in lance_core.optimize).
    "lance.lance": ["lance_core._lance_core", "lance_core.optimize"],
}


class AliasModule(types.ModuleType):
    """A module whose names are those of other modules (the first that has the name)."""

    def __init__(self, name: str, targets: Sequence[types.ModuleType], submodules: Optional[Dict] = None):
        super().__init__(name)
        object.__setattr__(self, "_shim_targets", tuple(targets))
        object.__setattr__(self, "_shim_submodules", dict(submodules or {}))
        self.__doc__ = f"Alias of {', '.join(t.__name__ for t in targets)} (lance_shim)."

    def __getattr__(self, name: str):
        for target in self._shim_targets:
            try:
                return getattr(target, name)
            except AttributeError:
                pass
        if name in self._shim_submodules:
            return self._shim_submodules[name]
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r} "
                             f"(lance_shim: not in {', '.join(t.__name__ for t in self._shim_targets)})")

    def __dir__(self):
        names = set(super().__dir__())
        for target in self._shim_targets:
            names.update(dir(target))
        names.update(self._shim_submodules)
        return sorted(names)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Owns `lance` and `lance.*`: `lance` loads the aliases of every mapped module at once
    (so `import lance.dataset` finds them in sys.modules and never rebinds `lance.dataset`);
    any other `lance.*` is not found."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "lance":
            return importlib.machinery.ModuleSpec("lance", self, is_package=True)
        if fullname.startswith("lance."):
            # Not in MODULES (those are in sys.modules once `lance` is): pylance has it,
            # lance_core does not. Raising here stops the other finders (pylance's package).
            raise ModuleNotFoundError(f"No module named {fullname!r} (lance_shim: lance_core has no such module)",
                                      name=fullname)
        return None

    def create_module(self, spec):
        modules = {}
        for name, targets in MODULES.items():
            if name == "lance":
                continue
            found = [importlib.import_module(t) for t in targets]
            # One target: the lance_core module itself (its classes, its functions, monkeypatching reaches it).
            modules[name] = found[0] if len(found) == 1 else AliasModule(name, found)
        top = AliasModule("lance", [importlib.import_module(t) for t in MODULES["lance"]],
                          {name[len("lance."):]: module for name, module in modules.items()})
        top.__path__ = []  # a package, whose submodules are only the ones above
        sys.modules.update(modules)
        return top

    def exec_module(self, module):
        pass


_FINDER = _Finder()


def install() -> None:
    """Make `lance` lance_core for this interpreter. Fails if pylance was imported already."""
    leaked = [name for name in sys.modules if name == "lance" or name.startswith("lance.")]
    if leaked and not isinstance(sys.modules.get("lance"), AliasModule):
        raise RuntimeError(f"lance_shim: pylance was imported before the shim: {leaked[:5]}")
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def installed() -> bool:
    return _FINDER in sys.meta_path
