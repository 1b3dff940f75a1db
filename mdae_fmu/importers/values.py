"""Numbers the FMU can hold: literals, constant sub-expressions and parameter values checked in
IEEE double arithmetic (docs/importers.md, "Numbers").

The generated C code computes in ``double`` and stores Integers in FMI 2.0's 32-bit
``fmi2Integer``. A value that has no such representation is refused where it is written,
instead of becoming ``inf`` in modelDescription.xml, a wrapped integer in C, a compiler error
or an exception of the symbolic stage:

* a literal that does not fit a double (``1e400``, an integer of 400 digits), or a non-zero
  literal that rounds to zero (``1e-400``);
* a constant sub-expression whose value is not a finite real number (``1/0``, ``0.0/0.0``,
  ``sqrt(-1)``, ``log(0)``, ``10^400``); the importers evaluate them while parsing
  (`fold`), without changing the expression;
* a parameter, or a start value, that evaluates (with the default values of the parameters it
  uses) to such a value, and an Integer whose value is outside -2^31 .. 2^31-1 (`check_model`).

Every evaluation is bounded: floats only (``^`` is ``math.pow``), so no exponent can make
Python compute a huge integer.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Callable

from .. import expr as E

#: FMI 2.0 fmi2Integer is a C int: 32 bits.
INT_MIN, INT_MAX = -2 ** 31, 2 ** 31 - 1
#: More digits than any finite double has before its decimal point.
MAX_INT_DIGITS = 309


class ValueProblem(ValueError):
    """A value without a finite double representation; the text says why."""


def literal(text: str) -> int | float:
    """The value of a NUMBER token; raises `ValueProblem` for one that a double cannot hold."""
    if text.isdigit():
        digits = text.lstrip("0")
        if len(digits) > MAX_INT_DIGITS or (digits and int(digits) > sys.float_info.max):
            raise ValueProblem(f"the number {_short(text)} is too large for a double "
                               f"(the largest is about {sys.float_info.max:.3g})")
        return int(text)
    v = float(text)
    if math.isinf(v):
        raise ValueProblem(f"the number {_short(text)} is too large for a double (the largest "
                           f"is about {sys.float_info.max:.3g})")
    if v == 0.0 and any(c in "123456789" for c in text.split("e")[0].split("E")[0]):
        raise ValueProblem(f"the number {_short(text)} is too small for a double: it would "
                           "become 0 (the smallest positive double is about 4.9e-324)")
    return v


def _short(text: str) -> str:
    return text if len(text) <= 30 else f"{text[:12]}...{text[-8:]} ({len(text)} characters)"


def _finite(v, what: str):
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueProblem(f"{what} is not a finite number ({v})")
    return v


_ARITH = {"+", "-", "*", "/", "^"}
_RELATIONS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
              ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "<>": lambda a, b: a != b}


def binary(op: str, a, b):
    """``a op b`` in double arithmetic (Modelica's ``^`` and ``/`` give Reals); raises
    `ValueProblem` when the result is not a finite real number. Relations and ``and``/``or``
    give booleans."""
    if len(op) == 2 and op[0] == ".":
        op = op[1]
    if op in _RELATIONS:
        return _RELATIONS[op](a, b)
    if op == "and":
        return bool(a) and bool(b)
    if op == "or":
        return bool(a) or bool(b)
    x, y = float(a), float(b)
    try:
        if op == "+":
            r = x + y
        elif op == "-":
            r = x - y
        elif op == "*":
            r = x * y
        elif op == "/":
            r = x / y
        else:
            r = math.pow(x, y)
    except ZeroDivisionError:
        raise ValueProblem(f"division by zero ({_num(a)} {op} {_num(b)})") from None
    except OverflowError:
        raise ValueProblem(f"{_num(a)} {op} {_num(b)} is too large for a double") from None
    except ValueError:
        if x == 0.0 and y < 0:
            raise ValueProblem(f"division by zero ({_num(a)} ^ {_num(b)})") from None
        raise ValueProblem(f"{_num(a)} ^ {_num(b)} is not a real number (a negative number to "
                           "a non-integer power)") from None
    if type(a) is int and type(b) is int and op in "+-*" and abs(r) < 2 ** 53:
        r = int(r)
    return _finite(r, f"{_num(a)} {op} {_num(b)}")


def _num(v) -> str:
    return repr(v)


def _div(a, b):
    return math.trunc(a / b)


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos,
    "atan": math.atan, "atan2": math.atan2, "sinh": math.sinh, "cosh": math.cosh,
    "tanh": math.tanh, "exp": math.exp, "log": math.log, "log10": math.log10,
    "sqrt": math.sqrt, "abs": abs, "sign": lambda a: (a > 0) - (a < 0),
    "min": min, "max": max, "floor": math.floor, "ceil": math.ceil,
    "integer": math.floor, "div": _div,
    "mod": lambda a, b: a - math.floor(a / b) * b,
    "rem": lambda a, b: a - math.trunc(a / b) * b,
    "noEvent": lambda a: a, "smooth": lambda p, a: a, "homotopy": lambda a, s: a,
    "semiLinear": lambda x, p, n: p * x if x >= 0 else n * x,
}


def call(name: str, args: tuple):
    """``name(args)`` for a built-in math function of constant arguments, None when ``name``
    is not one (event operators); raises `ValueProblem` when the result is not a finite real
    number (outside the domain, division by zero, overflow)."""
    f = _FUNCTIONS.get(name)
    if f is None or any(isinstance(a, bool) for a in args):
        return None
    shown = f"{name}({', '.join(_num(a) for a in args)})"
    try:
        r = f(*args)
    except ZeroDivisionError:
        raise ValueProblem(f"division by zero in {shown}") from None
    except OverflowError:
        raise ValueProblem(f"{shown} is too large for a double") from None
    except ValueError:
        raise ValueProblem(f"{shown} is outside the domain of {name} (its value would not be "
                           "a real number)") from None
    return _finite(r, shown)


def evaluate(e: E.Expr, values: dict):
    """The value of ``e`` when it uses only names of ``values`` (and literals), else None.
    Raises `ValueProblem` as `binary` and `call` do."""
    t = type(e)
    if t is E.Const:
        assert isinstance(e, E.Const)
        return e.value
    if t is E.Ref:
        assert isinstance(e, E.Ref)
        return values.get(e.name)
    if t is E.BinOp:
        assert isinstance(e, E.BinOp)
        a = evaluate(e.left, values)
        if a is None:
            return None
        b = evaluate(e.right, values)
        if b is None:
            return None
        return binary(e.op, a, b)
    if t is E.UnOp:
        assert isinstance(e, E.UnOp)
        a = evaluate(e.arg, values)
        if a is None:
            return None
        if e.op == "not":
            return not a
        return -a if e.op == "-" else a
    if t is E.If:
        assert isinstance(e, E.If)
        c = evaluate(e.cond, values)
        if c is None:
            return None
        return evaluate(e.then if c else e.orelse, values)
    if t is E.Call:
        assert isinstance(e, E.Call)
        args = []
        for a in e.args:
            v = evaluate(a, values)
            if v is None:
                return None
            args.append(v)
        return call(e.func, tuple(args))
    return None


def check_integer(v, what: str) -> None:
    """Refuse an Integer value outside FMI 2.0's 32-bit range (or not an integer number)."""
    if isinstance(v, bool):
        return
    if isinstance(v, float) and not v.is_integer():
        return          # a Real expression for an Integer: the importer's type rules decide
    if not INT_MIN <= v <= INT_MAX:
        raise ValueProblem(f"{what} {_num(v)} is outside the range of an FMI 2.0 Integer "
                           f"(32 bits: {INT_MIN} .. {INT_MAX})")


def check_model(variables, assignments=()) -> list[tuple[object, str]]:
    """The value problems of the declarations ``variables`` (`mdae_fmu.ir.Variable`, in
    declaration order): parameters and constants are evaluated from their bindings (else
    their start values) with the values of the parameters they use, then every start value
    that can be evaluated, then the values ``assignments`` ``[(variable, expression,
    location)]`` (when-clause assignments) give Integer variables. Returns
    ``[(location, message)]``."""
    problems = []
    values: dict = {}
    pending = [v for v in variables if v.variability in ("parameter", "constant")]
    bad = set()
    while pending:
        left = []
        for v in pending:
            e = v.binding if v.binding is not None else v.start
            if e is None:
                values[v.name] = False if v.type == "Boolean" else 0
                continue
            try:
                val = evaluate(e, values)
                if val is not None and v.type == "Integer":
                    check_integer(val, "the value")
            except ValueProblem as p:
                problems.append((v.loc, f"{v.variability} '{v.name}': {p}"))
                bad.add(v.name)
                continue
            if val is None:
                left.append(v)
            else:
                values[v.name] = val
        if len(left) == len(pending):
            problems.extend(binding_cycles(left))
            break
        pending = left
    const = E.Const
    for v in variables:
        start = v.start
        if (start is None or type(start) is const and v.type != "Integer") \
                and v.nominal is None and v.min is None and v.max is None:
            continue            # (the usual declaration: nothing that can fail to evaluate)
        if v.name in bad:
            continue
        for attr in ("start",) if v.variability in ("parameter", "constant") and \
                v.binding is None else ("start", "nominal", "min", "max"):
            e = getattr(v, attr)
            if e is None or type(e) is E.Const and attr != "start":
                continue
            try:
                val = evaluate(e, values)
                if val is not None and v.type == "Integer" and attr == "start":
                    check_integer(val, "the start value")
            except ValueProblem as p:
                problems.append((v.loc, f"{attr} of '{v.name}': {p}"))
                break
    for v, e, loc in assignments:
        if v.type != "Integer":
            continue
        try:
            val = evaluate(e, values)
            if val is not None:
                check_integer(val, f"the value assigned to '{v.name}',")
        except ValueProblem as p:
            problems.append((loc, str(p)))
    return problems


def binding_cycles(params) -> list[tuple[object, str]]:
    """A binding of the parameters ``params`` that depends on itself through bindings of
    ``params`` (``parameter Real 'a.x[1]' = ('f'('a.x'))[1]``, OpenModelica's Scalarize6):
    ``[(location, message)]`` naming the cycle, at the declaration of its first parameter in
    ``params``' order; at most one cycle is reported. Without it the analysis accepted such a
    model and the export refused it."""
    bound = {v.name: v for v in params if v.binding is not None}
    state: dict = {}                    # name -> 1 on the path, 2 done

    def cycle_from(name):
        path = [name]
        stack = [iter(sorted(E.refs(bound[name].binding) & bound.keys()))]
        state[name] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
                continue
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(E.refs(bound[nxt].binding) & bound.keys())))
        return None

    for name in bound:
        if name not in state:
            cyc = cycle_from(name)
            if cyc is not None:
                first = bound[cyc[0]]
                return [(first.loc, f"{first.variability} '{first.name}': its binding depends "
                                    f"on itself ({' -> '.join(cyc)})")]
    return []


__all__ = ["ValueProblem", "literal", "binary", "call", "evaluate", "check_integer",
           "check_model", "binding_cycles", "INT_MIN", "INT_MAX"]
