"""The message of an assertion as the importers read it (issue 13; docs/importers.md, "String
in messages"): a ``+`` chain of string literals and canonical ``String(x, minimumLength,
leftJustified, significantDigits)`` calls (`message_parts`), the kind of each value by its form
(`value_kind`), and the text of one value (`format_value`, Modelica 3.6 §3.7). The importers
check messages with it; the code generation (`mdae_fmu.codegen.messages`) and the user
functions' evaluation (`mdae_fmu.functions`) print them with it."""

from __future__ import annotations

from typing import Mapping

from . import expr as E


#: Bounds of minimumLength and significantDigits at run time (module docstring).
MAX_MIN_LENGTH = 100


MAX_DIGITS = 32


_INTEGER_CALLS = ("integer", "div", "mod", "rem", "abs", "min", "max", "sign")


def message_parts(m: E.Expr) -> list | None:
    """The string literals and ``String(...)`` calls of the message ``m`` (a ``+`` chain of
    them) in order, or None when it holds anything else."""
    out: list = []
    stack = [m]
    while stack:
        e = stack.pop()
        if isinstance(e, E.BinOp) and e.op == "+":
            stack.append(e.right)
            stack.append(e.left)
        elif isinstance(e, E.Str) or (isinstance(e, E.Call) and e.func == "String"
                                      and len(e.args) == 4):
            out.append(e)
        else:
            return None
    return out


def value_kind(e: E.Expr, types: Mapping[str, str]) -> str:
    """Real, Integer or Boolean: the type of ``e`` by its form (``types``: variable name ->
    declared type). Relations and logical operators are Boolean; integer literals, Integer
    variables and arithmetic (+ - *), integer(), div, mod... of Integers are Integer."""
    if isinstance(e, E.Const):
        v = e.value
        return "Boolean" if type(v) is bool else "Integer" if type(v) is int else "Real"
    if isinstance(e, E.Ref):
        return types.get(e.name, "Real")
    if isinstance(e, E.BinOp):
        if e.op in E.REL_OPS or e.op in E.BOOL_OPS:
            return "Boolean"
        if e.op in ("+", "-", "*", ".+", ".-", ".*") and \
                value_kind(e.left, types) == value_kind(e.right, types) == "Integer":
            return "Integer"
        return "Real"
    if isinstance(e, E.UnOp):
        return "Boolean" if e.op == "not" else value_kind(e.arg, types)
    if isinstance(e, E.If):
        a, b = value_kind(e.then, types), value_kind(e.orelse, types)
        return a if a == b else "Real"
    if isinstance(e, E.Call):
        if e.func in ("edge", "change", "initial", "terminal"):
            return "Boolean"
        if e.func in ("pre", "noEvent"):
            return value_kind(e.args[0], types)
        if e.func == "integer":
            return "Integer"
        if e.func in _INTEGER_CALLS and all(value_kind(a, types) == "Integer" for a in e.args):
            return "Integer"
    return "Real"


def format_value(kind: str, v, min_length, left, digits) -> str:
    """The text of one value (module docstring), as the C run time (``mdae_str_*`` in
    model.c) and the python-backend run time print it."""
    w = int(min(min_length, MAX_MIN_LENGTH)) if min_length >= 0 else 0
    if kind == "Boolean":
        text = "true" if v else "false"
    elif kind == "Integer":
        text = "%.0f" % round(float(v))
    else:
        p = int(min(digits, MAX_DIGITS)) if digits >= 1 else 1
        text = "%.*g" % (p, float(v))
    return text.ljust(w) if left else text.rjust(w)


__all__ = ["message_parts", "value_kind", "format_value", "MAX_MIN_LENGTH", "MAX_DIGITS"]
