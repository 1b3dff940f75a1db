"""sympy -> C expression printer that addresses variables by slot, never by name.

Every symbol of a compiled model lives in a slot of one of the value arrays of the instance
(a typed `slots.Slot`: ``d->r[k]`` for Reals, ``d->i[k]`` for Integers, ``d->b[k]`` for
Booleans, ``d->pr[k]`` ... for left limits, ``d->time``), printed by `slots.c_slot`. The
printer is given that mapping (a slot, or the C text of a derived value such as a common
subexpression) and refuses any symbol it does not know, so a model name can never leak into C
code (docs/fmi-mapping.md, "Names never reach C"). Names only appear inside C string literals
built with `c_string`, and in comments built with `c_comment` or `slots.plain_name`, all of
which escape everything outside printable ASCII.

Relations that the event machinery tracks (state and time events, `mdae_fmu.codegen.events`)
print as their frozen value ``d->rel[k]``: during continuous integration a relation keeps the
value it had at the last event (FMI 2.0 ME, "relations are frozen in Continuous-Time Mode").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Union

import sympy as sp

from ..symbolic import as_sympy
from .slots import Slot, c_slot, hole


#: sympy names of user-function calls (`functions.FunctionTable.sympy_name`), C functions of
#: ``mdae_functions.c`` taking the ModelData pointer ``d`` first.
_USER_CALL = re.compile(r"mdae_fn\d+_o\d+\Z")


#: what the slot map gives a symbol: its `Slot`, or the C text of a derived value
SlotValue = Union[Slot, str]
#: the printer of an opaque sympy function: ``(printer, args) -> C text``
FunctionHandler = Callable[["SlotPrinter", Sequence[sp.Basic]], str]


class UnknownSymbol(KeyError):
    """A sympy symbol without a slot: a bug in the caller, never a user error."""


_C_FUNCS = {
    "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan",
    "atan2": "atan2", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "exp": "exp",
    "log": "log", "Abs": "fabs", "floor": "floor", "ceiling": "ceil", "erf": "erf",
    "erfc": "erfc",
}


class SlotPrinter:
    """sympy -> C99 printer with symbols mapped to array slots and frozen relations.

    ``slots`` maps a sympy Symbol to its `Slot` (or to C text: a temporary, a derived value);
    ``relations`` maps a sympy Relational to the C expression of its frozen truth value;
    ``functions`` maps the name of an opaque sympy function (``initial``, ``sample`` ...) to a
    callable ``(printer, args) -> str``. ``local``: Reals through the schedule functions'
    local pointer ``r``. While a block is printed (`collect`) its Real slots are printed as
    holes (`slots.hole`), numbered in order of first use.

    A direct recursive walk over the sympy tree: no term ordering, no ``fraction()`` pass, no
    assumption queries, which makes it one to two orders of magnitude faster than sympy's
    ``C99CodePrinter`` on large models. Every compound sub-expression is parenthesized, so C
    precedence never matters.
    """

    def __init__(self, slots: dict[sp.Basic, SlotValue],
                 relations: dict[sp.Basic, str] | None = None,
                 functions: dict[str, FunctionHandler] | None = None,
                 local: bool = False) -> None:
        self.slots = slots
        self.relations = relations or {}
        self.functions = functions or {}
        self.local = local
        self.holes: dict[Slot, int] | None = None
        #: the C of blocks on the tree printed once per shape (`mdae_fmu.codegen.blocks`):
        #: `trees.tree_shape` key -> what the next blocks of that key reuse
        self.printed: dict[object, object] = {}
        #: what `trees.tree_shape` read of the slot map, per symbol table (`trees.ShapeCache`)
        self.shape_caches: dict[int, Any] = {}

    def value(self, v: SlotValue) -> str:
        """C text of a value of the slot map: a `Slot` (a hole while collecting) or text."""
        if not isinstance(v, Slot):
            return v
        if self.holes is not None and v.real:
            return hole(self.holes.setdefault(v, len(self.holes)))
        return _slot_text(v, v.name, self.local)

    def symbol(self, sym: sp.Basic) -> str:
        """C text of ``sym``'s value; `UnknownSymbol` when it has none."""
        try:
            v = self.slots[sym]
        except KeyError:
            raise UnknownSymbol(str(sym)) from None
        return self.value(v)

    @contextmanager
    def collect(self) -> Iterator[dict[Slot, int]]:
        """Print the Real slots as holes: yields the dict ``Slot -> hole number`` that the
        printing fills (the block's slots, `mdae_fmu.codegen.blocks.BlockCode`)."""
        outer = self.holes
        holes: dict[Slot, int] = {}
        self.holes = holes
        try:
            yield holes
        finally:
            self.holes = outer

    def doprint(self, e: object) -> str:
        return self._print(as_sympy(e))

    def _print(self, e: sp.Basic) -> str:
        if e.is_Symbol:
            return self.symbol(e)
        if e.is_Number:
            return _number(e)
        if e.is_Add:
            return "(" + " + ".join(self._print(a) for a in e.args) + ")"
        if e.is_Mul:
            return self._mul(e)
        if e.is_Pow:
            return self._pow(e.args[0], e.args[1])
        if isinstance(e, sp.Piecewise):
            return self._piecewise(e)
        if isinstance(e, sp.core.relational.Relational):
            frozen = self.relations.get(e)
            if frozen is not None:
                return frozen
            op = {"==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}[e.rel_op]
            return f"({self._print(e.lhs)} {op} {self._print(e.rhs)})"
        if e is sp.true:
            return "1"
        if e is sp.false:
            return "0"
        if isinstance(e, sp.And):
            return "(" + " && ".join(self._print(a) for a in e.args) + ")"
        if isinstance(e, sp.Or):
            return "(" + " || ".join(self._print(a) for a in e.args) + ")"
        if isinstance(e, sp.Not):
            return f"(!{self._print(e.args[0])})"
        if isinstance(e, sp.ITE):       # sympy's Boolean if-then-else: a relation of an
            c, a, b = (self._print(x) for x in e.args)     # if-expression, `(if c then
            return f"(({c}) ? ({a}) : ({b}))"               # u else v) < k`
        if isinstance(e, sp.Xor):
            return "(" + " ^ ".join(f"(!!{self._print(a)})" for a in e.args) + ")"
        if isinstance(e, sp.Equivalent):
            first, *rest = (f"(!!{self._print(a)})" for a in e.args)
            return "(" + " && ".join(f"({first} == {r})" for r in rest) + ")"
        if isinstance(e, sp.Implies):
            return f"((!{self._print(e.args[0])}) || {self._print(e.args[1])})"
        if isinstance(e, (sp.Function, sp.Min, sp.Max)):
            return self._function(e)
        if e.is_number:
            return _number(sp.Float(e, 17))
        raise TypeError(f"no C form for {type(e).__name__}: {e}")

    def _mul(self, e: sp.Basic) -> str:
        num, den = [], []
        for f in e.args:
            if f.is_Pow and f.args[1].is_Number and f.args[1].is_negative:
                den.append(self._pow(f.args[0], -f.args[1]))
            elif f.is_Rational and not f.is_Integer:
                num.append(f"{int(f.p)}.0")
                den.append(f"{int(f.q)}.0")
            else:
                num.append(self._print(f))
        if num == ["-1.0"] and not den:
            return "(-1.0)"
        if num and num[0] == "-1.0" and len(num) > 1:
            out = "(-" + "*".join(num[1:]) + ")" if len(num) > 2 else f"(-{num[1]})"
        else:
            out = "(" + "*".join(num or ["1.0"]) + ")"
        if den:
            out = f"({out}/({'*'.join(den)}))"
        return out

    def _pow(self, base: sp.Basic, ex: sp.Basic) -> str:
        b = self._print(base)
        if ex.is_Integer:
            k = int(ex)
            if k == 0:
                return "1.0"
            if 1 <= k <= 4:
                return "(" + "*".join([b] * k) + ")"
            if -4 <= k <= -1:
                return "(1.0/(" + "*".join([b] * -k) + "))"
            return f"pow({b}, {k}.0)"
        if ex == sp.Rational(1, 2):
            return f"sqrt({b})"
        if ex == sp.Rational(-1, 2):
            return f"(1.0/sqrt({b}))"
        if ex == sp.Rational(1, 3):
            return f"cbrt({b})"
        return f"pow({b}, {self._print(ex)})"

    def _piecewise(self, e: sp.Basic) -> str:
        pieces = list(e.args)
        out = self._print(pieces[-1].expr) if pieces[-1].cond == True else "(0.0/0.0)"  # noqa
        if pieces[-1].cond == True:  # noqa: E712  (sympy truth)
            pieces = pieces[:-1]
        for expr, cond in reversed(pieces):
            out = f"(({self._print(cond)}) ? ({self._print(expr)}) : ({out}))"
        return out

    def _function(self, e: sp.Basic) -> str:
        name = type(e).__name__
        handler = self.functions.get(name)
        if handler is not None:
            return handler(self, e.args)
        args = [self._print(a) for a in e.args]
        if name in _C_FUNCS:
            return f"{_C_FUNCS[name]}({', '.join(args)})"
        if name == "sign":
            a = args[0]
            return f"(((({a}) > 0) ? 1.0 : 0.0) - ((({a}) < 0) ? 1.0 : 0.0))"
        if name in ("Min", "Max"):
            f = "fmin" if name == "Min" else "fmax"
            out = args[0]
            for a in args[1:]:
                out = f"{f}({out}, {a})"
            return out
        if name == "integer":
            return f"floor({args[0]})"
        if name == "div":
            return f"trunc(({args[0]})/({args[1]}))"
        if name == "mod":
            return f"(({args[0]}) - floor(({args[0]})/({args[1]}))*({args[1]}))"
        if name == "rem":
            return f"(({args[0]}) - trunc(({args[0]})/({args[1]}))*({args[1]}))"
        if _USER_CALL.match(name):      # a user function (codegen/functions.py): the
            return f"{name}(d{''.join(', ' + a for a in args)})"   # name is ours, not the model's
        raise TypeError(f"no C form for function {name}()")


@lru_cache(maxsize=1 << 16)
def _slot_text(slot: Slot, name: str, local: bool) -> str:
    """`c_slot` memoized; ``name`` is part of the key (slots compare without their names)."""
    return c_slot(slot, local)


def _number(n: sp.Basic) -> str:
    if n.is_Integer:
        v = int(n)
        if abs(v) < 2 ** 53:
            return f"{v}.0"
        if abs(v) > 1.7976931348623157e308:
            raise ValueError(f"a constant of the model folds to an integer of "
                             f"{v.bit_length()} bits, too large for a double")
        return repr(float(v))
    if n.is_Rational:
        return f"({int(n.p)}.0/{int(n.q)}.0)"
    try:
        x = float(n)
    except (TypeError, OverflowError):
        x = float("nan")
    if x != x or x in (float("inf"), float("-inf")):
        # constants of the model folded by sympy (1e300 * x * 1e300): the importer refuses
        # non-finite constant sub-expressions (importers/values.py), this catches the rest
        raise ValueError(f"a constant of the model folds to {n}, which is not a finite "
                         "double")
    return repr(x) if x >= 0 else f"({x!r})"


_PLAIN_STRING = re.compile(r'[ !#-/0-9:;<=>@-\[\]-~]*')


def c_string(text: str) -> str:
    """A C string literal holding ``text`` (UTF-8) with every byte outside printable ASCII,
    quotes, backslashes and ``?`` (trigraphs) escaped as octal: safe whatever the input."""
    if _PLAIN_STRING.fullmatch(text):       # nothing to escape (most names): one scan
        return f'"{text}"'
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
    and no line splices (``\\`` at end of line). Backslashes become ``/`` before the
    delimiters are broken up, so that ``*\\`` cannot turn into a closing ``*/``."""
    safe = "".join(c if 0x20 <= ord(c) < 0x7F else "?" for c in text[:limit])
    return safe.replace("\\", "/").replace("*/", "* /").replace("/*", "/ *")
