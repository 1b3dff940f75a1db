"""Faster construction of the frozen slots dataclasses built by the million (expression nodes,
source locations, equations, variables).

The ``__init__`` that `dataclasses` generates for a frozen class stores each field with
``object.__setattr__(self, name, value)`` to get around the class's own ``__setattr__``; that
look-up by name costs about as much as the rest of the construction. `quick_init` replaces it
with an ``__init__`` of the same signature (same parameter names, order and defaults) that
stores the fields through their slot descriptors, about twice as fast. Equality, hashing,
``repr``, `dataclasses.replace` and pickling are those of the dataclass, unchanged.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import TypeVar

C = TypeVar("C", bound=type)


def quick_init(cls: C) -> C:
    """Give the frozen slots dataclass ``cls`` the descriptor-based ``__init__`` (module
    docstring). Fields with a ``default_factory`` or ``init=False`` are not supported."""
    params = []
    body = []
    namespace: dict = {}
    for k, f in enumerate(fields(cls)):
        if f.default_factory is not MISSING or not f.init:
            raise TypeError(f"quick_init: field {f.name!r} of {cls.__name__} is not supported")
        # names are the class's own field names (identifiers of this package's source)
        namespace[f"_set{k}"] = getattr(cls, f.name).__set__
        if f.default is MISSING:
            params.append(f.name)
        else:
            namespace[f"_default{k}"] = f.default
            params.append(f"{f.name}=_default{k}")
        body.append(f"    _set{k}(self, {f.name})\n")
    if not body:
        return cls                      # no field: the generated __init__ does nothing
    exec(f"def __init__(self, {', '.join(params)}):\n{''.join(body)}",  # noqa: S102
         namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init  # type: ignore[misc]
    return cls


__all__ = ["quick_init"]
