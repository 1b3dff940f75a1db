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
from typing import Callable, Mapping, Union

import sympy as sp

from .. import expr as E
from ..assert_messages import MAX_DIGITS, MAX_MIN_LENGTH, format_value, message_parts, value_kind
from .cprinter import SlotPrinter, c_string


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
Message = tuple[Part, ...]

def plan_message(to_sympy: Callable[[E.Expr], sp.Basic], m: E.Expr,
                 types: Mapping[str, str]) -> Message:
    """The `Message` of ``m`` (adjacent literals joined); ``to_sympy`` converts the values.
    A message of another form (a String variable, an if-expression...) is the literal
    "assertion failed"."""
    parts = message_parts(m)
    if parts is None:
        return ("assertion failed",)
    out: list[Part] = []
    for p in parts:
        if type(p) is E.Str:
            if out and type(out[-1]) is str:
                out[-1] += p.value
            else:
                out.append(p.value)
        else:
            x, n, left, digits = p.args
            out.append(
                Formatted(
                    kind=value_kind(x, types),
                    value=to_sympy(x),
                    min_length=to_sympy(n),
                    left=to_sympy(left),
                    digits=to_sympy(digits),
                )
            )
    return tuple(out)


def message_text(msg: Message) -> str:
    """The message with every value shown as ``<value>`` (for reports)."""
    return "".join(p if type(p) is str else "<value>" for p in msg)


def message_format(p: SlotPrinter, msg: Message) -> tuple[str, str, list[str]]:
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


__all__ = ["Formatted", "Message", "message_parts", "value_kind", "plan_message",
           "message_text", "format_value", "MAX_MIN_LENGTH", "MAX_DIGITS"]
