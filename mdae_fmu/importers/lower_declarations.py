"""Declarations in the lowering (Modelica 3.6 §4.4, §7.2, §10.1): one declaration resolved
through its type (`lower_types.resolve`) and its dimensions, evaluated as parameter
expressions, into scalar declarations named like OpenModelica's flat output (``x[2,1]``,
``r.f``, ``r[2].f``), in two passes: `plan_declaration` names the elements and registers
them (pass 1, before any expression is lowered), `emit_declaration` gives them their values
and modifiers (pass 2)."""

from __future__ import annotations

import math

from .. import expr as E
from . import arrays as A
from . import types as T
from .lower_constants import const, learn_prefixes, literal_or_none
from .lower_context import (MAX_ELEMENTS, LowerContext, StringVar, is_builtin_literal,
                            refs_in)
from .lower_expressions import value
from .lower_types import resolve
from .lowered import LowerError, Rec
from .syntax import Decl


def is_param(prefixes, explicit=None) -> bool:
    """Parameter or constant, by its prefixes (or, XML, its explicit variability)."""
    if explicit and "variability" in explicit:
        return explicit["variability"] in ("parameter", "constant")
    return any(p in ("parameter", "constant") for p, _ in prefixes)


def merge_prefixes(outer, inner) -> tuple:
    """Prefixes of a record field: the instance's variability/causality, then the field's
    own (Modelica 3.6 §4.5: a parameter record has parameter fields)."""
    have = {p for p, _ in inner}
    return tuple(inner) + tuple(p for p in outer if p[0] not in have and not (
        p[0] in ("parameter", "constant", "discrete") and have & {"parameter", "constant"}))


def fixed_discrete(lw: LowerContext, d) -> bool:
    """A discrete-valued variable (Integer, Boolean, enumeration, or declared
    ``discrete``) that is not an input and has a binding: ``Integer n = 1``. Its binding
    equation holds at every instant (Modelica 3.6 §4.4.3), so where a constant is needed
    (a for-range, an array subscript) a binding that is a parameter expression gives its
    value; ``pre(n)`` is not a parameter expression and is never folded this way."""
    words = {p for p, _ in d.prefixes}
    if words & {"input", "parameter", "constant"} or d.explicit:
        return False
    return "discrete" in words or d.type_name in ("Integer", "Boolean") or \
        type(lw.types.get(d.type_name)) is T.EnumDef


def declaration_shape(lw: LowerContext, dims, where, binding=None) -> tuple:
    """The sizes of ``dims``, Integer parameter expressions (Modelica 3.6 §10.1); a ``:``
    takes its size from the binding (``parameter Real table[:, 2] = [...]``)."""
    sizes = []
    bound = None
    for k, s in enumerate(dims):
        if s is A.COLON:
            if bound is None and binding is not None:
                try:
                    bound = A.shape_of(value(lw, binding, {}, where))
                except LowerError:
                    bound = ()
            if not bound or len(bound) != len(dims):
                lw.fail("array dimension ':' needs a binding of that many dimensions "
                        "(give the size)", where)
            sizes.append(bound[k])
            continue
        if type(s) is E.Ref and (s.name == "Boolean" or
                                 type(lw.types.get(s.name)) is T.EnumDef):
            index = "(if b then 2 else 1)" if s.name == "Boolean" else "Integer(e)"
            lw.fail(f"arrays indexed by the type '{s.name}' are not supported (use an "
                    f"Integer dimension and {index} as the index)", where)
        if type(s) is A.ArrayCons:
            lw.fail("an array dimension given as a vector of sizes (a ragged array, "
                    "which Modelica does not have; OpenModelica prints it for arrays of "
                    "components of different sizes with -d=-nfScalarize): export the "
                    "model scalarized (without -d=-nfScalarize)", where)
        v = const(lw, s, {})
        if type(v) is not int or v < 0:
            bad = sorted({r.name for r in refs_in(s) if const(lw, r, {}) is None})
            why = f" ('{bad[0]}' has no parameter value)" if bad else ""
            lw.fail("array dimension must be a non-negative Integer parameter "
                    "expression" + why, where)
        sizes.append(v)
    if math.prod(sizes) > MAX_ELEMENTS:
        lw.fail(f"array too large (more than {MAX_ELEMENTS:,} elements)", where)
    return tuple(sizes)


def plan_declaration(lw: LowerContext, d, name, type_name, dims, modifiers, binding, prefixes):
    """Names, shapes and record structure of one declaration (pass 1)."""
    kind, base, tmods, tdims, tdef = resolve(lw, type_name, d.type_loc)
    if dims and all(type(x) is E.Ref and "." in x.name and (
            literal_or_none(lw, x.name) is not None or const(lw, x, {}) is None)
            for x in dims):
        # OpenModelica's scalarized element of an array indexed by an enumeration whose
        # type the flat file does not declare: `Real x[P.Color.green];` is one scalar
        name = f"{name}[{','.join(x.name for x in dims)}]"
        lw.resolved.update(x.name for x in dims)
        dims = ()
    names = {m[0] for m in modifiers}
    mods = list(modifiers) + [m for m in tmods if m[0] not in names]
    shape = declaration_shape(lw, tuple(dims) + tdims, d.loc, binding)
    if shape:
        lw.shapes[name] = shape
    elements = [A.element_name(name, i) for i in A.indices(shape)] if shape else [name]
    fields = None
    if kind == "record":
        if tdef.name in lw.expanding:
            lw.fail(f"record '{tdef.name}' contains itself", d.type_loc)
        lw.expanding.add(tdef.name)
        fields = {}
        for el in elements:
            lw.records[el] = tdef
            for f in tdef.fields:
                if isinstance(f, Decl):
                    fields[(el, f.name)] = plan_declaration(
                        lw, f, f"{el}.{f.name}", f.type_name, f.dims, f.modifiers,
                        f.binding, f.prefixes)
        lw.expanding.discard(tdef.name)
    elif kind == "string":
        for el in elements:
            lw.strings[el] = StringVar(el)
    else:
        lw.scalars.update(elements)
        for el in elements:
            lw.base_types[el] = base
        if kind == "enum":
            learn_prefixes(lw, binding, tdef)
            for m in mods:
                if m[0] == "start":
                    learn_prefixes(lw, m[1], tdef)
            for el in elements:
                lw.enum_vars[el] = tdef
    return (name, kind, base, mods, shape, elements, binding, tdef, fields)


def emit_declaration(lw: LowerContext, planned, d, out, prefixes=None, outer_mods=(),
                     outer_binding=None):
    """The scalar declarations of the declaration ``d`` planned as ``planned`` (pass 2), with
    their bindings and modifiers split element by element; a record's fields take the
    values of the record's binding and modifiers (``outer_mods``, ``outer_binding``)."""
    name, kind, base, mods, shape, elements, binding, tdef, fields = planned
    prefixes = d.prefixes if prefixes is None else prefixes
    if outer_mods:
        names = {m[0] for m in outer_mods}
        mods = list(outer_mods) + [m for m in mods if m[0] not in names]
    if outer_binding is not None:
        binding = outer_binding
    bound = None if binding is None else value(lw, binding, {}, d.loc)
    if kind == "string":
        if type(bound) is E.Str and is_param(prefixes, d.explicit):
            for el in elements:
                lw.strings[el] = bound
        if (bound is None or type(bound) is E.Str) and is_param(prefixes, d.explicit) \
                and not shape:
            constant = any(p == "constant" for p, _ in prefixes)
            lw.ctx.string_params.append(
                (name, "" if bound is None else bound.value, constant, d.description,
                 d.loc))
        return
    values = split_value(lw, bound, shape, elements, name, d.loc)
    if kind == "record":
        if any(v is not None and type(v) is not Rec for v in values):
            lw.fail(f"the value of record '{name}' is not a record (write "
                    f"{tdef.name}(...))", d.loc)
        for el, v in zip(elements, values):
            fmods = {}
            for mname, mval, mloc, nested in mods:
                if type(mval) is T.Nested or not nested:
                    fmods[mname] = (mval, mloc)
            for (inst, fname), fplan in fields.items():
                if inst != el:
                    continue
                fvalue = None
                fnested: tuple | list = ()
                if v is not None:
                    fvalue = dict(v.fields).get(fname)
                if fname in fmods:
                    mval, _ = fmods.pop(fname)
                    if type(mval) is T.Nested:
                        fnested = mval.modifiers
                        mval = mval.binding
                    if mval is not None:
                        fvalue = mval
                fdecl = tdef.field(fname)
                emit_declaration(lw, fplan, fdecl, out,
                                 merge_prefixes(prefixes, fdecl.prefixes), fnested, fvalue)
            for mname, (_, mloc) in fmods.items():
                if mname not in ("each", "final"):
                    lw.fail(f"record '{tdef.name}' has no field '{mname}'", mloc)
        return
    mod_values = []
    for mname, mval, mloc, nested in mods:
        if mname == "stateSelect" and is_builtin_literal(mval):
            mod_values.append((mname, [mval] * len(elements), mloc, nested))
            continue
        if type(mval) is T.Nested:
            mod_values.append((mname, [mval.binding] * len(elements), mloc, True))
            continue
        if mval is None:
            mod_values.append((mname, [None] * len(elements), mloc, nested))
            continue
        v = value(lw, mval, {}, mloc)
        mod_values.append((mname, split_value(lw, v, shape, elements, f"{mname} of {name}",
                                              mloc), mloc, nested))
    for k, el in enumerate(elements):
        b = values[k]
        if b is not None and is_param(prefixes, d.explicit):
            lw.params[el] = b
        out.append(Decl(name=el, loc=d.loc, type_name=base, type_loc=d.type_loc,
                        prefixes=prefixes,
                        modifiers=[(m, vals[k], mloc, nested) for m, vals, mloc, nested
                                   in mod_values],
                        binding=b, description=d.description, explicit=d.explicit))


def split_value(lw: LowerContext, value, shape, elements, what, where) -> list:
    """One value per element of a declaration of ``shape``: the elements of an array
    value of that shape, or a scalar value for every element (``each``, Modelica 3.6
    §7.2.5)."""
    if value is None:
        return [None] * len(elements)
    if not shape:
        if type(value) is A.Arr:
            lw.fail(f"'{what}' is a scalar but its value is an array of size "
                    f"{list(value.shape)}", where)
        return [value]
    if type(value) is not A.Arr:
        return [value] * len(elements)
    if value.shape != shape:
        lw.fail(f"'{what}' has size {list(shape)} but its value has size "
                f"{list(value.shape)}", where)
    return list(value.items)


__all__ = ["is_param", "merge_prefixes", "fixed_discrete", "declaration_shape",
           "plan_declaration", "emit_declaration", "split_value"]
