"""Type definitions in the lowering (Modelica 3.6 §4.8, §4.9.5, §12.6): enumerations, type
aliases and records of the file registered and a type name resolved through its aliases; the
arrays OpenModelica's scalarized output declares element by element (``Real x[3];`` alone, or
``x[1]``, ``x[2]``) read as the arrays they are."""

from __future__ import annotations

import math
from dataclasses import replace

from .. import expr as E
from . import arrays as A
from . import types as T
from .lower_context import BUILTIN_ENUMS, LAST_SUBS, LowerContext
from .syntax import Decl

_ARRAY_VALUES = (A.ArrayCons, A.MatrixCons, A.Comprehension, A.ArrayCall)


def literal_arrays(lists: list):
    """``Real x[3];`` is read as the name ``x[3]`` (OpenModelica's scalarized output declares
    its elements ``x[1]``, ``x[2]``, ... that way). A subscripted name that is the only
    declaration of its array is the declaration of the whole array: its dimensions are the
    literals (``x[1]`` alone is both). Rewritten in place."""
    groups: dict = {}
    for decls in lists:
        for k, d in enumerate(decls):
            if type(d) is Decl and d.name[-1:] == "]" and not d.dims:
                m = LAST_SUBS.match(d.name)
                # (`r.a[1].z[3] = {0, 0, 0}`, an array field of an element of a record array
                # in OpenModelica's scalarized output, when its value is an array)
                if m is not None and ("[" not in m.group(1) or type(d.binding) in _ARRAY_VALUES):
                    groups.setdefault(m.group(1), []).append((decls, k, m.group(2)))
    for base, members in groups.items():
        if len(members) != 1:
            continue
        decls, k, subs = members[0]
        dims = tuple(E.Const(int(x)) for x in subs.replace(" ", "").replace("\t", "").split(","))
        d = decls[k]
        decls[k] = replace(d, name=base, dims=dims)


def scalarized_shapes(lw: LowerContext):
    """Shapes of the arrays declared element by element (``Real x[1]; Real x[2];``, as
    OpenModelica prints them), so that ``x`` and ``x[i]`` can be used."""
    found: dict = {}
    for name in lw.scalars | set(lw.records) | set(lw.strings):
        if name[-1:] == "]":
            m = LAST_SUBS.match(name)
            if m is not None:
                try:
                    idx = tuple(int(x) for x in m.group(2).split(","))
                except ValueError:
                    continue
                found.setdefault(m.group(1), []).append(idx)
    for base, idxs in found.items():
        if base in lw.shapes or base in lw.scalars:
            continue
        nd = {len(i) for i in idxs}
        if len(nd) != 1:
            continue
        shape = tuple(max(i[k] for i in idxs) for k in range(nd.pop()))
        if math.prod(shape) == len(set(idxs)):      # a complete box
            lw.shapes[base] = shape


def define(lw: LowerContext, d):
    """Register the type definition ``d`` (an enumeration, alias or record) of the file."""
    if type(d) is T.RecordDef:            # `Real y[2];` in a record: an array field
        fields = list(d.fields)
        literal_arrays([fields])
        d = replace(d, fields=tuple(fields))
    if d.name in lw.types:
        lw.ctx.error(lw.ctx.where_loc(d.where), f"duplicate definition of type '{d.name}'")
        return
    lw.types[d.name] = d
    if type(d) is T.EnumDef:
        lw.enums.append(d)


def resolve(lw: LowerContext, type_name: str, where):
    """(kind, base, modifiers, dims, definition) of a type name through its aliases:
    kind is "builtin", "enum", "record" or "string"."""
    mods: list = []
    dims: tuple = ()
    seen = set()
    while True:
        if type_name in T.BUILTIN_TYPES:
            return "builtin", type_name, mods, dims, None
        if type_name == "String":
            return "string", type_name, mods, dims, None
        d = lw.types.get(type_name)
        if d is None and type_name in BUILTIN_ENUMS:
            # a predefined enumeration as a type (OpenModelica prints the MSL's `parameter
            # StateSelect stateSelect = StateSelect.default`): an enumeration variable
            d = lw.types[type_name] = T.EnumDef(name=type_name, where=None,
                                                literals=BUILTIN_ENUMS[type_name])
        if d is None and type_name == "Clock":
            lw.fail("variables of type Clock (synchronous Modelica) are not supported: "
                    "write the sampled part with when sample(start, interval) clauses",
                    where)
        if d is None:
            lw.fail(f"unknown type '{type_name}' (not Real, Integer, Boolean, String "
                    "nor a type, record or enumeration defined in the file)", where)
        if type(d) is T.EnumDef:
            return "enum", "Integer", mods, dims, d
        if type(d) is T.RecordDef:
            return "record", type_name, mods, dims, d
        if type_name in seen:
            lw.fail(f"type '{type_name}' is defined through itself", where)
        seen.add(type_name)
        # the declaration's (outer) modifiers win over the alias's
        names = {m[0] for m in mods}
        mods = mods + [m for m in d.modifiers if m[0] not in names]
        dims = dims + tuple(d.dims)
        type_name = d.base


__all__ = ["literal_arrays", "scalarized_shapes", "define", "resolve"]
