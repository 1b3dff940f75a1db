"""Subscripted names in the lowering: ``x[i, :]`` of a declared array, a variable subscript as
an if-chain with its range check, the paths ``a[i].b[j].c`` through arrays of records and
``(e)[s]`` of an array value (Modelica 3.6 §10.5, §10.6.8)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping

from .. import expr as E
from . import arrays as A
from .lower_constants import const
from .lower_context import LowerContext, StringVar
from .lower_names import field_of, pick_value, picks, ref
from .lowered import ElementAlias, Rec
from .syntax import Stmt

_MAX_CHAIN = 1_000             # elements a variable subscript may select among


def subscript(lw: LowerContext, e: A.Subscripted, env):
    """The value of ``x[s]``: the element, or the array of the elements, ``s`` selects."""
    name = e.name
    shape = lw.shapes.get(name)
    if shape is not None and lw.range_checks is not None:
        chosen = variable_subscript(lw, e, shape, env)
        if chosen is not None:
            return chosen
    if shape is None and all(type(x) is E.Ref for x in e.subs):
        element = f"{name}[{','.join(x.name for x in e.subs)}]"
        if element in lw.scalars:
            lw.resolved.update(x.name for x in e.subs)
            return E.Ref(element)
    if shape is None:
        if name in lw.scalars or name in lw.records:
            lw.fail(f"'{name}' is not an array", e.where)
        lw.fail(f"undefined array '{name}'", e.where)
    selected = picks(lw, name, shape, e.subs, env, e.where)
    out_shape = tuple(len(idx) for idx, keep in selected if keep)
    items = tuple(ref(lw, A.element_name(name, combo), env, e.where)
                  for combo in itertools.product(*(idx for idx, _ in selected)))
    if not out_shape:
        return items[0]
    return A.Arr(out_shape, items)


class Typed(Mapping[str, str]):
    """Declared base types (Real, Integer, Boolean) for `assert_messages.value_kind`; a name
    without one (a for-index) reads as Integer."""
    __slots__ = ("types",)

    def __init__(self, types: Mapping[str, str]):
        self.types = types

    def __getitem__(self, name: str) -> str:
        return self.types.get(name, "Integer")

    def __iter__(self) -> Iterator[str]:
        return iter(self.types)

    def __len__(self) -> int:
        return len(self.types)


def variable_subscript(lw: LowerContext, e: A.Subscripted, shape, env):
    """``u[i, :]`` with a subscript ``i`` that is a variable expression (not a parameter
    expression) of a dimension of known size n: the if-chain ``if i == 1 then u[1, :] elseif
    ... else u[n, :]``, and a range check ``assert(i >= 1 and i <= n)`` of the equation or
    statement (`LowerContext.range_checks`). A Boolean subscript picks element 1 (false) or 2
    (true), as OpenModelica does; an enumeration subscript is its position. None when every
    subscript is a parameter expression."""
    if all(type(x) is E.Const or x is A.COLON or (type(x) is E.Ref and x.name in env and
                                                   type(env[x.name]) is not ElementAlias)
           for x in e.subs):
        return None                 # (the common case, without evaluating)
    for k, sub in enumerate(e.subs[:len(shape)]):
        if sub is A.COLON:
            continue
        n = shape[k]
        v = lw.parts.value(lw, sub, {**env, "end": n}, e.where)  # (every subscript)
        if type(v) is not A.Arr and type(v) is not Rec and \
                type(v) is not StringVar and const(lw, v, env) is None:
            break
    else:
        return None
    from ..assert_messages import value_kind
    from ..modelica_printer import print_expr
    if n > _MAX_CHAIN:
        lw.fail(f"a variable subscript of '{e.name}' selects among {n} elements (at most "
                f"{_MAX_CHAIN} supported)", e.where)

    def pick(j):
        subs = e.subs[:k] + (E.Const(j),) + e.subs[k + 1:]
        return subscript(lw, A.Subscripted(e.name, subs, e.where), env)

    kind = value_kind(v, Typed(lw.base_types))
    if kind == "Real":
        lw.fail(f"array subscript of '{e.name}' must be an Integer, Boolean or enumeration "
                f"expression ({print_expr(v)} is Real)", e.where)
    if kind == "Boolean":
        if n != 2:
            lw.fail(f"a Boolean subscript of '{e.name}' needs a dimension of size 2 "
                    f"(dimension {k + 1} has size {n})", e.where)
        return A.elementwise(lambda a, b: E.If(v, a, b), pick(2), pick(1))
    check = E.BinOp("and", E.BinOp(">=", v, E.Const(1)), E.BinOp("<=", v, E.Const(n)))
    text = f"array index out of range: {print_expr(v)} for dimension {k + 1} of " \
           f"'{e.name}' (size {n})"
    stmt = Stmt(func="assert", args=[check, E.Str(text)], named={},
                loc=lw.ctx.where_loc(e.where))
    checks = lw.range_checks
    assert checks is not None           # collected: `subscript` calls only then
    if all(c.args[0] != check for c in checks):
        checks.append(stmt)
        lw.check_ids.add(id(stmt))
    out = pick(n)
    for j in range(n - 1, 0, -1):
        c = E.BinOp("==", v, E.Const(j))
        out = A.elementwise(lambda a, b, c=c: E.If(c, a, b), pick(j), out)
    return out


def path(lw: LowerContext, e: A.Path, env):
    """``a[i].b[j].c``: subscripts of a record array, then fields and their subscripts, step
    by step on values (a field of an array of records is the array of the fields, Modelica
    3.6 §10.6.8)."""
    merged = merged_path(lw, e)
    if merged is not None:
        return subscript(lw, merged, env)
    v = subscript(lw, A.Subscripted(e.name, e.subs, e.where), env)
    shown = e.name + "[...]"
    for name, subs in e.steps:
        v = field_of(lw, v, name, subs, shown, env, e.where)
        shown += "." + name
    return v


def merged_path(lw: LowerContext, e: A.Path):
    """``m2[i].m1[j].x`` in OpenModelica's non-scalarized output (``-d=-nfScalarize``,
    ``mergeComponents``), where ``Real[3, 10] m2.m1.x`` declares the array of the component
    arrays' elements: the element ``m2.m1.x[i, j]`` (the subscripts in path order). None when
    ``e.name`` is an array or record of the file, or the joined name is no array."""
    if e.name in lw.shapes or e.name in lw.records or e.name in lw.scalars:
        return None
    joined = e.name + "".join("." + f for f, _s in e.steps)
    subs = tuple(e.subs) + tuple(x for _f, s in e.steps for x in (s or ()))
    shape = lw.shapes.get(joined)
    if shape is None:
        return None
    if len(subs) != len(shape):
        lw.fail(f"'{e.name}' is not declared and '{joined}', the array its path names, has "
                f"{len(shape)} dimension{'s' * (len(shape) != 1)}: {len(subs)} subscripts "
                "given along the path", e.where)
    return A.Subscripted(joined, subs, e.where)


def indexed(lw: LowerContext, e: A.Indexed, env):
    """``(e)[s]``, ``f(x)[s]``: the elements ``s`` selects of the array value of ``e``
    (Modelica 3.6 §10.5, as for a variable)."""
    v = lw.value_of(e.value, env)
    shown = f"{e.value.func}(...)" if type(e.value) is E.Call else "(...)"
    return pick_value(lw, v, shown, e.subs, env, e.where)


__all__ = ["subscript", "variable_subscript", "path", "merged_path", "indexed", "Typed"]
