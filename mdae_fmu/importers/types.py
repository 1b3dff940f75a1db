"""Type definitions of flat Modelica and Base Modelica (issue 13): enumerations, type aliases
(short class definitions such as ``type Voltage = Real(unit = "V")``) and records.

The parser callbacks produce these plain records; `lowering` resolves declarations through
them into scalar declarations of Real, Integer and Boolean (docs/importers.md, "Types,
records and arrays"):

* an enumeration is an Integer whose value is the literal's position (1, 2, ...; Modelica 3.6
  §4.9.5.2 ``Integer(E.a) = 1``), its literals are constants;
* an alias gives its base type and its modifiers to the declarations of its name (the
  declaration's own modifiers win, Modelica 3.6 §7.2.4), dimensions included;
* a record variable is one scalar per field, named ``r.field`` (Modelica 3.6 §4.7).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EnumDef:
    """``type E = enumeration(a, b, c)`` (or OpenModelica's inline ``enumeration(a, b) x``)."""
    name: str
    literals: tuple
    where: object
    literal_wheres: tuple = ()
    descriptions: tuple = ()

    def value(self, literal: str) -> int | None:
        """Position of ``literal`` from 1, None if it is not a literal of this type."""
        try:
            return self.literals.index(literal) + 1
        except ValueError:
            return None


@dataclass(frozen=True, slots=True)
class AliasDef:
    """``type N = Base[dims](modifiers) "description"``."""
    name: str
    where: object
    base: str
    base_where: object
    dims: tuple
    modifiers: list
    description: str | None = None


@dataclass(frozen=True, slots=True)
class RecordDef:
    """``record R ... end R;``: its fields are declarations (`syntax.Decl`)."""
    name: str
    where: object
    fields: tuple

    def field(self, name: str):
        return next((f for f in self.fields if f.name == name), None)


@dataclass(frozen=True, slots=True)
class Nested:
    """The value of a nested modification ``r(x(start = 1) = 2)``: its own modifiers and its
    binding (None when it has none)."""
    modifiers: list
    binding: object = None


def record_from_constructor(name: str, where, decls) -> RecordDef | None:
    """The record of a record constructor function as OpenModelica prints it (``function R
    "Automatically generated record constructor for R" input Real x = 1; ... output R res;
    end R;``): its inputs are the fields (with their defaults, protected elements are
    fields too); None when the function is not one (no ``output R``)."""
    outputs = [d for d in decls if any(p == "output" for p, _ in d.prefixes)]
    if len(outputs) != 1 or outputs[0].type_name != name:
        return None
    fields = tuple(d for d in decls if d is not outputs[0])
    return RecordDef(name=name, where=where, fields=tuple(
        type(d)(**{**{k: getattr(d, k) for k in d.__slots__},
                   "prefixes": tuple(p for p in d.prefixes if p[0] != "input")})
        for d in fields))


BUILTIN_TYPES = ("Real", "Integer", "Boolean")
TYPE_DEFS = (EnumDef, AliasDef, RecordDef)

__all__ = ["EnumDef", "AliasDef", "RecordDef", "Nested", "BUILTIN_TYPES", "TYPE_DEFS",
           "record_from_constructor"]
