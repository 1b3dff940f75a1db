"""Messages of assertions built at run time: string literals joined with ``String(...)`` of
values (issue 13; docs/importers.md, "String in messages").

The importer reads ``String(x, ...)`` as the canonical call ``String(x, minimumLength,
leftJustified, significantDigits)`` (`mdae_fmu.importers.flat_modelica`, only inside the
message of an assert). Here a message ``"a" + String(x, ...) + "b"`` becomes a
`Message`: its literal parts and its `Formatted` values, whose sympy expressions the C and
Python printers evaluate when the assertion fails, so the log shows the value at that time.

Formatting (Modelica 3.6 §3.7, String conversion): a Real with ``significantDigits``
significant digits as C's ``%.<d>g``, an Integer in decimal, a Boolean as ``true``/``false``;
padded with blanks to ``minimumLength`` characters, on the right when ``leftJustified`` (the
default) and on the left otherwise. The run time clamps minimumLength to 0..100 and
significantDigits to 1..32 (the C buffers hold 128 bytes). The kind of the value is read from
its form (`value_kind`): an enumeration value, lowered to its Integer position, prints as
that number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Union

import sympy as sp

from .. import expr as E
from .cprinter import c_string

#: Bounds of minimumLength and significantDigits at run time (module docstring).
MAX_MIN_LENGTH = 100
MAX_DIGITS = 32


@dataclass(frozen=True)
class Formatted:
    """One ``String(value, minimumLength, leftJustified, significantDigits)`` of a message;
    ``kind`` is Real, Integer or Boolean (`value_kind`)."""
    kind: str
    value: sp.Basic
    min_length: sp.Basic
    left: sp.Basic
    digits: sp.Basic


Part = Union[str, Formatted]
Message = tuple  # tuple[Part, ...]

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


def plan_message(to_sympy, m: E.Expr, types: Mapping[str, str]) -> Message:
    """The `Message` of ``m`` (adjacent literals joined); ``to_sympy`` converts the values.
    A message of another form (a String variable, an if-expression...) is the literal
    "assertion failed"."""
    parts = message_parts(m)
    if parts is None:
        return ("assertion failed",)
    out: list = []
    for p in parts:
        if type(p) is E.Str:
            if out and type(out[-1]) is str:
                out[-1] += p.value
            else:
                out.append(p.value)
        else:
            x, n, left, digits = p.args
            out.append(Formatted(value_kind(x, types), to_sympy(x), to_sympy(n),
                                 to_sympy(left), to_sympy(digits)))
    return tuple(out)


def message_text(msg: Message) -> str:
    """The message with every value shown as ``<value>`` (for reports)."""
    return "".join(p if type(p) is str else "<value>" for p in msg)


def message_format(p, msg: Message) -> tuple[str, str, list[str]]:
    """``(format, arguments, buffers)`` of a message for mdae_log: the literal parts as
    escaped C string literals (`c_string`) with every '%' doubled, a ``%s`` per value
    printed by ``mdae_str_real/int/bool`` (mdae_model.h) into its own buffer ``s<k>``;
    ``p``: the `cprinter.SlotPrinter` of the values."""
    fmt: list[str] = []
    args: list[str] = []
    bufs: list[str] = []
    for part in msg:
        if isinstance(part, str):
            if part:
                fmt.append(" " + c_string(part.replace("%", "%%")))
            continue
        k = len(bufs)
        bufs.append(f"s{k}[MDAE_STR_LEN]")
        fmt.append(' "%s"')
        opts = [p.doprint(part.min_length), p.doprint(part.left)]
        if part.kind == "Real":
            opts.append(p.doprint(part.digits))
        args.append(f", mdae_str_{part.kind.lower()}(s{k}, {p.doprint(part.value)}, "
                    f"{', '.join(opts)})")
    return "".join(fmt), "".join(args), bufs


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


__all__ = ["Formatted", "Message", "message_parts", "value_kind", "plan_message",
           "message_text", "format_value", "MAX_MIN_LENGTH", "MAX_DIGITS"]
