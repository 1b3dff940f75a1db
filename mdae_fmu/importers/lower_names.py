"""Names in the lowering: the value a name stands for (a scalar reference, the array of an
array's elements, the record of a record's fields, a constant), the elements that subscripts
select (Modelica 3.6 §10.5) and the fields of record values (§10.6.8), with the errors of an
index out of range or a field that does not exist."""

from __future__ import annotations

import itertools
import math
import re

from .. import expr as E
from . import arrays as A
from .lower_constants import const, enum_literal
from .lower_context import LAST_SUBS, LowerContext
from .lowered import ElementAlias, Rec
from .syntax import Decl

#: a subscripted part followed by a field in a scalarized name: ``m.ra[2]`` of ``m.ra[2].x``
_ELEMENT_PREFIX = re.compile(r"(?=^(.*?)\[([0-9, ]+)\]\.)")


def ref(lw: LowerContext, name, env, where):
    """The value of the name ``name`` (`resolve_ref`), noting whether it was found."""
    v = resolve_ref(lw, name, env, where)
    if type(v) is E.Ref:
        if name not in lw.scalars:
            lw.unresolved.add(name)
    else:
        lw.resolved.add(name)
    return v


def resolve_ref(lw: LowerContext, name, env, where):
    """The value of ``name``: a for-index's value, a declared scalar, the array or record
    value of a declared array or record, a String, an enumeration literal, a field of a
    record array; else the reference itself (an undeclared name)."""
    if name in env:
        v = env[name]
        return v.value if type(v) is ElementAlias else E.Const(v)
    if name in lw.scalars:
        return E.Ref(name)
    shape = lw.shapes.get(name)
    if shape is not None:
        return A.Arr(shape, tuple(ref(lw, A.element_name(name, i), env, where)
                                  for i in A.indices(shape)))
    rec = lw.records.get(name)
    if rec is not None:
        return Rec(
            type=rec.name,
            fields=tuple(
                (f.name, ref(lw, f"{name}.{f.name}", env, where))
                for f in rec.fields
                if isinstance(f, Decl)
            ),
        )
    s = lw.strings.get(name)
    if s is not None:
        return s
    lit = enum_literal(lw, name)
    if lit is not None:
        return E.Const(lit)
    if name[-1:] == "]":
        check_element(lw, name)
    if "." in name:
        prefix, fname = name.rsplit(".", 1)
        rec = lw.records.get(prefix)
        if rec is not None:
            lw.fail(f"record '{prefix}' (of type {rec.name}) has no field '{fname}' "
                    f"(fields: {', '.join(f.name for f in rec.fields)})",
                    lw.use_where(name) or where)
        parts = name.split(".")
        for k in range(len(parts) - 1, 0, -1):      # `p.x` of an array of records `p`
            prefix = ".".join(parts[:k])
            if is_record_array(lw, prefix):
                at = lw.use_where(name) or where
                v = resolve_ref(lw, prefix, env, where)
                for f in parts[k:]:
                    m = LAST_SUBS.match(f)
                    subs = () if m is None else tuple(
                        E.Const(int(x)) for x in m.group(2).replace(" ", "").split(","))
                    v = field_of(lw, v, f if m is None else m.group(1), subs, prefix, env, at)
                return v
        v = scalarized_field(lw, name, parts, env, where)
        if v is not None:
            return v
    return E.Ref(name)


def check_element(lw: LowerContext, name):
    """An undeclared element ``x[i,j]`` (subscripts read as part of the name): the index out
    of range, or too many subscripts, or ``x`` is not an array."""
    m = LAST_SUBS.match(name)
    if m is None:
        return
    base = m.group(1)
    idx = [int(x) for x in m.group(2).replace(" ", "").replace("\t", "").split(",")]
    where = lw.use_where(name)
    shape = lw.shapes.get(base)
    if shape is None:
        if base in lw.scalars or base in lw.records:
            lw.fail(f"'{base}' is not an array", where)
        return
    check_indices(lw, base, shape, idx, where)


def check_indices(lw: LowerContext, name, shape, idx, where):
    """The literal indices ``idx`` of ``name`` against its ``shape``."""
    if len(idx) > len(shape):
        lw.fail(f"'{name}' has {len(shape)} dimension{'s' * (len(shape) != 1)}, "
                f"{len(idx)} subscripts given", where)
    for k, i in enumerate(idx):
        if not 1 <= i <= shape[k]:
            lw.fail(f"array index {i} out of range for dimension {k + 1} of "
                    f"'{name}' (size {shape[k]})", where)


def picks(lw: LowerContext, name, shape, subs, env, where) -> list:
    """Per dimension of ``shape``: (the indices ``subs`` select, whether the dimension is
    kept), Modelica 3.6 §10.5 (a scalar index drops it, a vector or ``:`` keeps it)."""
    if len(subs) > len(shape):
        check_indices(lw, name, shape, [1] * len(subs), where)
    out = []
    for k, n in enumerate(shape):
        if k >= len(subs) or subs[k] is A.COLON:
            out.append((list(range(1, n + 1)), True))
            continue
        sub_env = dict(env)
        sub_env["end"] = n
        v = lw.parts.value(lw, subs[k], sub_env, where)  # (every subscript: no hop)
        if type(v) is A.Arr:
            idx = [const(lw, x, sub_env) for x in v.items]
            keep = True
        else:
            idx = [const(lw, v, sub_env)]
            keep = False
        for i in idx:
            if type(i) is bool or type(i) is not int:
                lw.fail(f"array subscript of '{name}' must be an Integer parameter "
                        "expression (a constant, a parameter or a for-index)", where)
            if not 1 <= i <= n:
                lw.fail(f"array index {i} out of range for dimension {k + 1} of "
                        f"'{name}' (size {n})", where)
        out.append((idx, keep))
    return out


def pick_value(lw: LowerContext, v, shown, subs, env, where):
    """The elements of the array value ``v`` that ``subs`` select (``shown`` names it in
    messages)."""
    if type(v) is not A.Arr:
        lw.fail(f"'{shown}' is not an array", where)
    chosen = picks(lw, shown, v.shape, subs, env, where)
    strides = [math.prod(v.shape[k + 1:]) for k in range(len(v.shape))]
    items = tuple(v.items[sum((i - 1) * s for i, s in zip(combo, strides))]
                  for combo in itertools.product(*(idx for idx, _ in chosen)))
    out_shape = tuple(len(idx) for idx, keep in chosen if keep)
    return A.Arr(out_shape, items) if out_shape else items[0]


def field(lw: LowerContext, v, name, shown, where):
    """The field ``name`` of the record value ``v`` (of every element of an array of
    records)."""
    if type(v) is Rec:
        fields = dict(v.fields)
        if name not in fields:
            lw.fail(f"record '{shown}' (of type {v.type}) has no field '{name}' "
                    f"(fields: {', '.join(fields)})", where)
        return fields[name]
    if type(v) is A.Arr:
        return A.stack_shaped(v.shape, [field(lw, x, name, shown, where) for x in v.items])
    lw.fail(f"'{shown}' is not a record: it has no field '{name}'", where)


def field_of(lw: LowerContext, v, name, subs, shown, env, where):
    """The field ``name[subs]`` of the record value ``v``: of an array of records, the array
    of the fields, whose subscripts select in the field's own dimensions (``ra.z[1]`` is
    ``ra[:].z[1]``, Modelica 3.6 §10.6.8)."""
    lead = len(v.shape) if type(v) is A.Arr else 0
    v = field(lw, v, name, shown, where)
    if subs:
        v = pick_value(lw, v, f"{shown}.{name}", (A.COLON,) * lead + tuple(subs), env, where)
    return v


def scalarized_field(lw: LowerContext, name, parts, env, where):
    """``m.ra.x`` where the file declares the elements ``m.ra[1].x``, ``m.ra[2].x``...
    (OpenModelica's scalarized output of an array of records): the array of those elements,
    None when ``name`` is not such a path."""
    arrays = element_arrays(lw)
    for k in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[:k])
        shape = arrays.get(prefix)
        if shape is None:
            continue
        rest = ".".join(parts[k:])
        items = [resolve_ref(lw, f"{A.element_name(prefix, idx)}.{rest}", env, where)
                 for idx in A.indices(shape)]
        if any(type(x) is E.Ref and x.name not in lw.scalars for x in items):
            return None
        return A.stack_shaped(shape, items)
    return None


def element_arrays(lw: LowerContext) -> dict:
    """Base name -> shape of the arrays whose elements are records declared field by field
    (``m.ra[1].x``, ``m.ra[2].x``: ``m.ra`` of shape (2,)), complete boxes only."""
    cached = lw.element_arrays_cache
    if cached is not None and cached[0] == len(lw.scalars):
        return cached[1]
    idxs: dict = {}
    for n in lw.scalars:
        for m in _ELEMENT_PREFIX.finditer(n):
            try:
                idx = tuple(int(x) for x in m.group(2).split(","))
            except ValueError:
                continue
            idxs.setdefault(m.group(1), set()).add(idx)
    found = {}
    for base, got in idxs.items():
        if len({len(i) for i in got}) != 1:
            continue
        shape = tuple(max(i[d] for i in got) for d in range(len(next(iter(got)))))
        if math.prod(shape) == len(got):
            found[base] = shape
    lw.element_arrays_cache = (len(lw.scalars), found)
    return found


def is_record_array(lw: LowerContext, name: str) -> bool:
    """``name`` is an array of records (its elements are records)."""
    shape = lw.shapes.get(name)
    return shape is not None and A.element_name(name, (1,) * len(shape)) in lw.records


__all__ = ["ref", "resolve_ref", "check_element", "check_indices", "picks", "pick_value",
           "field", "field_of", "scalarized_field", "element_arrays", "is_record_array"]
