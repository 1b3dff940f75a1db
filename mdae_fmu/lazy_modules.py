"""Heavy third-party modules loaded on first use, so that a command whose model never needs
them does not pay for their import (issue 29: sympy alone is about a second of CPU at every
start; `mdae-fmu analyze` of a model with no differentiated equation, no mode and no restart
never touches it).

``from .lazy_modules import sympy as sp`` gives a module object whose first attribute access
imports the real module and copies its namespace in, so later accesses cost what a plain
module attribute does. Type checkers see the real module (the importing module writes
``if TYPE_CHECKING: import sympy as sp``); module-level code must not read an attribute,
or the import happens at once.

`after_import` runs a function on a module as soon as it is imported, by whichever code
imports it first (a lazy access or a plain ``import sympy`` elsewhere): `mdae_fmu.symbolic`
installs its rewrite rule into sympy this way.
"""

from __future__ import annotations

import importlib
import importlib.abc
import sys
import types
from typing import Any, Callable

_HOOKS: dict[str, list[Callable[[Any], None]]] = {}


class LazyModule(types.ModuleType):
    """The module ``name``, imported when one of its attributes is first read."""

    def __getattr__(self, attr: str) -> Any:
        real = importlib.import_module(self.__name__)
        self.__dict__.update(real.__dict__)
        return getattr(real, attr)


class _AfterLoader(importlib.abc.Loader):
    """A module's own loader, then the hooks of `after_import` on the loaded module."""

    def __init__(self, loader: Any, name: str) -> None:
        self.loader, self.name = loader, name

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self.loader.exec_module(module)
        module.__loader__ = self.loader       # (its resources are read through its own)
        for hook in _HOOKS.pop(self.name, ()):
            hook(module)


class _AfterFinder(importlib.abc.MetaPathFinder):
    """Finds the modules that have hooks with the other finders and wraps their loaders."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in _HOOKS:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _AfterLoader(spec.loader, name)
                return spec
        return None


_FINDER = _AfterFinder()


def after_import(name: str, hook: Callable[[Any], None]) -> None:
    """Call ``hook(module)`` once the top-level module ``name`` is imported: now if it is
    already, else right after its import, whoever imports it."""
    module = sys.modules.get(name)
    if module is not None and not isinstance(module, LazyModule):
        hook(module)
        return
    _HOOKS.setdefault(name, []).append(hook)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


sympy = LazyModule("sympy")
networkx = LazyModule("networkx")
#: scipy's sparse matrices and graph algorithms (`structure.graph`, `structure.sigma`):
#: about 0.2 s of CPU to import (its array-API layer loads most of numpy's submodules, and
#: ``csgraph`` loads ``scipy.sparse.linalg`` and ``scipy.linalg``), which the analysis of a
#: small model does without (`structure.graph.SMALL_EDGES`; issue 29)
sparse = LazyModule("scipy.sparse")
csgraph = LazyModule("scipy.sparse.csgraph")
