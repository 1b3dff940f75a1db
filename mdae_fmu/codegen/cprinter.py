"""sympy -> C expression printer that addresses variables by slot, never by name.

Every symbol of a compiled model lives in a slot of one of the value arrays of the instance
(``d->r[k]`` for Reals, ``d->i[k]`` for Integers, ``d->b[k]`` for Booleans, ``d->pr[k]`` ...
for left limits, ``d->time``). The printer is given that mapping and refuses any symbol it
does not know, so a model name can never leak into C code (docs/fmi-mapping.md, "Names never
reach C"). Names only appear inside C string literals built with `c_string`, and in comments
built with `c_comment`, both of which escape everything outside printable ASCII.

Relations that the event machinery tracks (state and time events, `mdae_fmu.codegen.events`)
print as their frozen value ``d->rel[k]``: during continuous integration a relation keeps the
value it had at the last event (FMI 2.0 ME, "relations are frozen in Continuous-Time Mode").
"""

from __future__ import annotations

import sympy as sp
from sympy.printing.c import C99CodePrinter


class UnknownSymbol(KeyError):
    """A sympy symbol without a slot: a bug in the caller, never a user error."""


class SlotPrinter(C99CodePrinter):
    """C99 printer with symbols mapped to array slots and frozen relations.

    ``slots`` maps a sympy Symbol to a C lvalue string; ``relations`` maps a sympy Relational to
    the C expression of its frozen truth value; ``functions`` maps the name of an opaque sympy
    function (``initial``, ``sample`` ...) to a callable ``(printer, args) -> str``.
    """

    def __init__(self, slots: dict, relations: dict | None = None,
                 functions: dict | None = None):
        super().__init__({"strict": False})
        self.slots = slots
        self.relations = relations or {}
        self.functions = functions or {}

    # --- atoms ----------------------------------------------------------------------------
    def _print_Symbol(self, s):
        try:
            return self.slots[s]
        except KeyError:
            raise UnknownSymbol(str(s)) from None

    def _print_Dummy(self, s):
        return self._print_Symbol(s)

    def _print_Float(self, f):
        v = float(f)
        return repr(v) if v == v and v not in (float("inf"), float("-inf")) else \
            ("(1.0/0.0)" if v > 0 else "(-1.0/0.0)" if v < 0 else "(0.0/0.0)")

    def _print_Integer(self, n):
        return f"{int(n)}.0" if abs(int(n)) < 2 ** 53 else repr(float(n))

    def _print_Rational(self, q):
        return f"({int(q.p)}.0/{int(q.q)}.0)"

    def _print_BooleanTrue(self, e):
        return "1"

    def _print_BooleanFalse(self, e):
        return "0"

    # --- operators ------------------------------------------------------------------------
    def _print_Pow(self, e):
        base, ex = e.args
        if ex.is_Integer and 1 < int(ex) <= 4:
            b = self.parenthesize(base, 1000)
            return "(" + "*".join([b] * int(ex)) + ")"
        if ex.is_Integer and -4 <= int(ex) <= -1:
            b = self.parenthesize(base, 1000)
            return "(1.0/(" + "*".join([b] * -int(ex)) + "))"
        return super()._print_Pow(e)

    def _print_Piecewise(self, e):
        pieces = list(e.args)
        if pieces[-1].cond != True:  # noqa: E712  (sympy truth)
            pieces.append((sp.nan, True))
        out = self._print(pieces[-1].expr)
        for expr, cond in reversed(pieces[:-1]):
            out = f"(({self._print(cond)}) ? ({self._print(expr)}) : ({out}))"
        return out

    def _print_Relational(self, e):
        frozen = self.relations.get(e)
        if frozen is not None:
            return frozen
        op = {"==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}[e.rel_op]
        return f"({self._print(e.lhs)} {op} {self._print(e.rhs)})"

    def _print_And(self, e):
        return "(" + " && ".join(self._print(a) for a in e.args) + ")"

    def _print_Or(self, e):
        return "(" + " || ".join(self._print(a) for a in e.args) + ")"

    def _print_Not(self, e):
        return f"(!{self.parenthesize(e.args[0], 1000)})"

    def _print_sign(self, e):
        a = self._print(e.args[0])
        return f"(((({a}) > 0) ? 1.0 : 0.0) - ((({a}) < 0) ? 1.0 : 0.0))"

    def _print_Function(self, e):
        name = type(e).__name__
        handler = self.functions.get(name)
        if handler is not None:
            return handler(self, e.args)
        if name in ("integer",):
            return f"floor({self._print(e.args[0])})"
        if name == "div":
            a, b = (self._print(x) for x in e.args)
            return f"trunc(({a})/({b}))"
        if name == "mod":
            a, b = (self._print(x) for x in e.args)
            return f"(({a}) - floor(({a})/({b}))*({b}))"
        if name == "rem":
            a, b = (self._print(x) for x in e.args)
            return f"(({a}) - trunc(({a})/({b}))*({b}))"
        return super()._print_Function(e)


def c_string(text: str) -> str:
    """A C string literal holding ``text`` (UTF-8) with every byte outside printable ASCII,
    quotes, backslashes and ``?`` (trigraphs) escaped as octal: safe whatever the input."""
    out = ['"']
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if 0x20 <= byte < 0x7F and ch not in '"\\?':
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    out.append('"')
    return "".join(out)


def c_comment(text: str, limit: int = 80) -> str:
    """Text safe inside a ``/* ... */`` comment: printable ASCII only, no comment delimiters
    and no line splices (``\\`` at end of line)."""
    safe = "".join(c if 0x20 <= ord(c) < 0x7F else "?" for c in text[:limit])
    return safe.replace("*/", "* /").replace("/*", "/ *").replace("\\", "/")
