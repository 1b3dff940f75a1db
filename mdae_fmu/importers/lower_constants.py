"""Parameter expressions of the lowering evaluated to Python values (Modelica 3.6 §4.5, the
sizes, subscripts and for-ranges that must be known before the model is built), and the
enumeration literals they use (Modelica 3.6 §4.9.5)."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from .. import expr as E
from . import arrays as A
from . import types as T
from .lower_context import BUILTIN_ENUMS, LowerContext
from .lowered import ElementAlias, LowerError, Rec
from .syntax import ENUM_PREFIXES

_PY_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
           "^": operator.pow, "and": lambda a, b: a and b, "or": lambda a, b: a or b,
           "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
           "==": operator.eq, "<>": operator.ne}


def apply_op(op, a, b):
    """``a op b`` of Python values; None when it is not defined (1/0...)."""
    f = _PY_OPS.get(op)
    if f is None:
        return None
    try:
        return f(a, b)
    except (ZeroDivisionError, OverflowError, TypeError):
        return None


_CONST_FUNCS: dict[str, Callable[..., Any]] = {
    "abs": abs, "min": min, "max": max, "integer": math.floor, "floor": math.floor,
    "ceil": math.ceil, "div": lambda a, b: int(a / b),
    "mod": lambda a, b: a - math.floor(a / b) * b,
    "sqrt": math.sqrt, "sin": math.sin, "cos": math.cos, "exp": math.exp, "log": math.log,
}


def const(lw: LowerContext, e, env):
    """The Python value of a parameter expression, None if it is not one."""
    t = type(e)
    if t is E.Const:
        return e.value
    if t is E.Ref:
        name = e.name
        if name in env:
            v = env[name]
            return None if type(v) is ElementAlias else v
        lit = enum_literal(lw, name)
        if lit is not None:
            return lit
        b = lw.params.get(name)
        if b is None or name in lw.evaluating:
            return None
        lw.evaluating.add(name)
        try:
            return const(lw, b, {})
        finally:
            lw.evaluating.discard(name)
    if t is E.UnOp:
        a = const(lw, e.arg, env)
        if a is None:
            return None
        return (not a) if e.op == "not" else (-a if e.op == "-" else a)
    if t is E.BinOp:
        a = const(lw, e.left, env)
        if a is None:
            return None
        b = const(lw, e.right, env)
        if b is None:
            return None
        return apply_op(e.op.lstrip(".") if len(e.op) == 2 and e.op[0] == "." else e.op, a, b)
    if t is E.If:
        c = const(lw, e.cond, env)
        if c is None:
            return None
        return const(lw, e.then if c else e.orelse, env)
    if t is E.Call and e.func in _CONST_FUNCS:
        args = [const(lw, a, env) for a in e.args]
        if any(a is None for a in args):
            return None
        try:
            return _CONST_FUNCS[e.func](*args)
        except (ValueError, ZeroDivisionError, OverflowError):
            return None
    if e is A.END:
        return env.get("end")
    if t in (A.ArrayCall, A.Subscripted):
        try:
            v = lw.value(e, env, None)
        except LowerError:
            return None
        return None if type(v) in (A.Arr, Rec) else const(lw, v, env)
    return None


def fold(lw: LowerContext, c, original):
    """A condition that lowering turned into a constant expression (``i == 1`` in a
    for-equation) as a Const; conditions on parameters or variables stay as they are (they
    are guards of the model)."""
    if type(c) is E.Const or type(original) is E.Const or \
            any(type(n) in (E.Ref, E.Time, E.Call, E.Der) for n in E.walk(c)):
        return c
    v = const(lw, c, {})
    return c if v is None else E.Const(v)


def enum_literal(lw: LowerContext, name: str):
    """The value of an enumeration literal ``E.a`` (also ``P.E.a`` and OpenModelica's
    ``E$x.a`` when the type is not declared in the flat file), else None."""
    if "." not in name or name in lw.scalars:
        return None
    if name.startswith(ENUM_PREFIXES):     # the built-in enumerations, as values
        prefix, lit = name.split(".", 1)
        lits = BUILTIN_ENUMS[prefix]
        return lits.index(lit) + 1 if lit in lits else None
    prefix, lit = name.rsplit(".", 1)
    d = lw.types.get(prefix) or lw.prefix_types.get(prefix)
    if type(d) is T.EnumDef:
        v = d.value(lit)
        if v is None:
            lw.fail(f"'{lit}' is not a literal of the enumeration '{prefix}' "
                    f"({', '.join(d.literals)})")
        return v
    if prefix in lw.records or prefix in lw.scalars or prefix in lw.shapes:
        return None
    values = {e.value(lit) for e in lw.enums} - {None}
    if len(values) == 1:
        return values.pop()
    if len(values) > 1:
        lw.fail(f"ambiguous enumeration literal '{name}': '{lit}' has different positions in "
                "the enumerations of the file")
    return None


def literal_or_none(lw: LowerContext, name: str):
    """`enum_literal`, None where it would be an error."""
    try:
        return enum_literal(lw, name)
    except LowerError:
        return None


def learn_prefixes(lw: LowerContext, value, tdef):
    """``E v = P.E.a`` tells that ``P.E`` is the enumeration of ``v`` (OpenModelica's flat
    output does not declare it): other literals ``P.E.x`` are read in that type."""
    if type(value) is E.Ref and "." in value.name:
        prefix, lit = value.name.rsplit(".", 1)
        if tdef.value(lit) is not None and prefix not in lw.types:
            lw.prefix_types.setdefault(prefix, tdef)


__all__ = ["const", "fold", "enum_literal", "literal_or_none", "learn_prefixes", "apply_op"]
