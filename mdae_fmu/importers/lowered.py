"""What the lowering (`mdae_fmu.importers.lowering`) produces besides expressions, shared by
its parts (array functions, algorithms): record values, the element an array for-index stands
for, and the error that stops lowering one construct."""

from __future__ import annotations

from dataclasses import dataclass


class LowerError(Exception):
    """A construct the lowering refuses: ``message`` and where (a syntax node or location)."""

    def __init__(self, message: str, where=None):
        super().__init__(message)
        self.message = message
        self.where = where


@dataclass(frozen=True, slots=True)
class Rec:
    """A record value: its type and one value per field (in declaration order)."""
    type: str
    fields: tuple           # ((name, value), ...)


class ElementAlias:
    """The value of a for-index that runs over the elements of an array of variables (``for v
    in x loop`` in a function, Modelica 3.6 §11.2.2.2): the element of the current iteration,
    a lowered expression (`algorithm_lowering`)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


__all__ = ["LowerError", "Rec", "ElementAlias"]
