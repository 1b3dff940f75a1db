"""sympy expressions of a saved analysis as JSON trees, read back without evaluating text.

A node is a JSON value (docs/decisions.md §11, "Expressions"):

* an integer: ``Integer``; ``["Rational", p, q]``; ``["Float", m, e, prec]``, the number
  m·2^e of precision ``prec`` bits (exact, as sympy holds it);
* ``["Symbol", name, {assumption: bool}]``, ``["Dummy", name, index, {assumption: bool}]``;
* ``[name]`` for the constants of `CONSTANTS` (``pi``, ``oo``, ``true``...);
* ``[head, arg...]`` for the classes of `CLASSES` (``Add``, ``Pow``, ``sin``, ``Piecewise``...);
* ``["opaque", name, arg...]`` for the discrete operators kept as undefined functions
  (`mdae_fmu.symbolic.opaque_function`: ``edge``, ``mod``...);
* ``["call", t, function, k, arg...]``: output ``k`` of the user function ``function`` of the
  t-th function table listed with the expression (`mdae_fmu.functions.FunctionTable`).

Reading (`SympyReader`) looks every head up in these tables, built here in code, and calls the
class on sympy objects only: no text is parsed, no name from the file reaches a constructor
except a symbol's own name (stored as is). Each node is then checked to be in sympy's
canonical form (rebuilding it gives the same node with the same arguments), so sympy's
evaluation at construction combines nothing: the numbers of the result are the numbers of the
file, within the bounds of `mdae_fmu.saved.limits`. Before a power is built its exponent and
the size of its numeric base are bounded, since that is the one place evaluation computes
before the check.
"""

from __future__ import annotations

from collections.abc import Callable

import sympy as sp
from sympy.core.function import AppliedUndef
from sympy.functions.elementary.piecewise import ExprCondPair

from ..functions import call_name, split_call_name
from ..symbolic import OPAQUE_FUNCTIONS, opaque_function
from .limits import (MAX_EXPONENT, MAX_EXPR_DEPTH, MAX_FIELD_INTEGER_BITS, MAX_INTEGER_BITS,
                     MAX_ITEMS, MAX_NAME, MAX_ORDER, MAX_PRECISION, MAX_ROOT_BASE_BITS,
                     Refused, too_big_int)

#: The sympy classes a saved expression may use, by the head that names them in the file:
#: what `mdae_fmu.symbolic.SymbolTable.to_sympy` makes and what sympy's algebra over it
#: (differentiation, solving, substitution) gives.
CLASSES: dict[str, type] = {c.__name__: c for c in (
    sp.Add, sp.Mul, sp.Pow,
    sp.sin, sp.cos, sp.tan, sp.asin, sp.acos, sp.atan, sp.atan2, sp.sinh, sp.cosh, sp.tanh,
    sp.exp, sp.log, sp.Abs, sp.sign, sp.floor, sp.ceiling, sp.erf, sp.erfc, sp.Min, sp.Max,
    sp.Heaviside, sp.DiracDelta, sp.Piecewise, ExprCondPair,
    sp.Equality, sp.Unequality, sp.StrictLessThan, sp.LessThan, sp.StrictGreaterThan,
    sp.GreaterThan, sp.And, sp.Or, sp.Not, sp.Xor,
    sp.Derivative, sp.Subs, sp.Tuple)}
#: The constants, by name.
CONSTANTS: dict[str, sp.Basic] = {
    "pi": sp.pi, "E": sp.E, "I": sp.I, "oo": sp.oo, "-oo": -sp.oo, "zoo": sp.zoo,
    "nan": sp.nan, "true": sp.true, "false": sp.false}
#: The assumptions a saved symbol may carry: the package makes real symbols, positive ones
#: for steps, and symbols without assumptions (the guarded schedule's own, sympy's dummies).
ASSUMPTIONS: tuple[dict[str, bool], ...] = ({"real": True}, {"positive": True}, {})
DUMMY_ASSUMPTIONS = ASSUMPTIONS

_CLASS_NAMES = {c: n for n, c in CLASSES.items()}
_CONSTANT_NAMES = {id(v): k for k, v in CONSTANTS.items()}


class SympyFormatError(ValueError):
    """A node that is not a saved sympy expression; ``path`` is relative to the expression."""

    def __init__(self, path: str, message: str):
        super().__init__(message)
        self.path = path


def function_table_of(cls):
    """The `mdae_fmu.functions.FunctionTable` whose ``sympy_function`` made the sympy function
    class ``cls`` (its ``fdiff`` closes over the table), else None."""
    for cell in getattr(cls.fdiff, "__closure__", None) or ():
        if type(cell.cell_contents).__name__ == "FunctionTable":
            return cell.cell_contents
    return None


def write(e, table_index: Callable[[object], int]):
    """The JSON tree of the sympy expression ``e``; ``table_index(table)`` gives the number
    of a user function's table in the list saved with the expression. `TypeError` for a node
    outside the tables above (the saved form would not read back)."""
    stack: list = []
    return _write(e, table_index, stack)


def _write(e, table_index, stack):
    if isinstance(e, sp.Integer):
        return int(e)
    if isinstance(e, sp.Rational):
        return ["Rational", int(e.p), int(e.q)]
    if isinstance(e, sp.Float):
        sign, man, exp, _ = e._mpf_
        if man == 0 and exp != 0:
            raise TypeError(f"cannot save the sympy Float {e} (not finite)")
        return ["Float", -man if sign else man, exp, int(e._prec)]
    if isinstance(e, sp.Dummy):
        return ["Dummy", e.name, e.dummy_index, dict(e._assumptions_orig)]
    if isinstance(e, sp.Symbol):
        return ["Symbol", e.name, dict(e._assumptions_orig)]
    name = _CONSTANT_NAMES.get(id(e))
    if name is not None:
        return [name]
    args = [_write(a, table_index, stack) for a in e.args]
    cls = type(e)
    head = _CLASS_NAMES.get(cls)
    if head is not None:
        return [head, *args]
    if isinstance(e, AppliedUndef):
        call = getattr(cls, "_mdae_call", None)
        if call is not None:
            table = function_table_of(cls)
            if table is None:
                raise TypeError(f"cannot save the sympy function {cls} (no function table)")
            base, k = split_call_name(call)
            return ["call", table_index(table), base, k, *args]
        if opaque_function(cls.__name__) is cls:
            return ["opaque", cls.__name__, *args]
    raise TypeError(f"cannot save the sympy expression {e} (a {cls.__name__}: not one of "
                    "the classes of mdae_fmu.saved.sympy_json)")


class SympyReader:
    """JSON tree -> sympy expression (module docstring). ``tables``: the function tables saved
    with the expression, for the ``call`` nodes."""

    def __init__(self, tables: list):
        self.tables = tables

    def read(self, j) -> sp.Basic:
        return self._node(j, "", 0)

    def _node(self, j, path: str, depth: int):
        if depth > MAX_EXPR_DEPTH:
            raise SympyFormatError(path, f"expression nested deeper than {MAX_EXPR_DEPTH} "
                                         "levels")
        if isinstance(j, Refused):
            raise SympyFormatError(path, j.reason)
        if type(j) is int:
            why = too_big_int(j)
            if why:
                raise SympyFormatError(path, why)
            return sp.Integer(j)
        if type(j) is not list or not j or type(j[0]) is not str:
            raise SympyFormatError(path, f"expected a sympy node ([head, ...] or an integer), "
                                         f"found {_kind(j)}")
        head = j[0]
        if head in CONSTANTS:
            _arity(j, path, 1)
            return CONSTANTS[head]
        if head == "Rational":
            return self._rational(j, path)
        if head == "Float":
            return _float(j, path)
        if head == "Symbol":
            _arity(j, path, 3)
            return sp.Symbol(_name(j[1], path + "[1]"),
                             **_assumptions(j[2], path + "[2]", ASSUMPTIONS))
        if head == "Dummy":
            _arity(j, path, 4)
            index = j[2]
            if type(index) is not int or index.bit_length() > MAX_FIELD_INTEGER_BITS:
                raise SympyFormatError(path + "[2]", "expected a 64-bit integer (the index of "
                                                     f"the Dummy), found {_kind(index)}")
            return sp.Dummy(_name(j[1], path + "[1]"), dummy_index=index,
                            **_assumptions(j[3], path + "[3]", DUMMY_ASSUMPTIONS))
        if len(j) - 1 > MAX_ITEMS:
            raise SympyFormatError(path, f"{len(j) - 1} arguments exceed the limit {MAX_ITEMS}")
        if head == "opaque":
            if len(j) < 2 or type(j[1]) is not str or j[1] not in OPAQUE_FUNCTIONS:
                raise SympyFormatError(path + "[1]", "expected the name of an operator kept "
                                       f"as a function ({', '.join(sorted(OPAQUE_FUNCTIONS))})"
                                       f", found {_kind(j[1] if len(j) > 1 else None)}")
            f = opaque_function(j[1])
            args = self._args(j, 2, path, depth)
            return _canonical(f, args, path, f"{j[1]}(...)")
        if head == "call":
            f = self._user_function(j, path)
            args = self._args(j, 4, path, depth)
            return _canonical(f, args, path, f"{j[2]}(...)")
        cls = CLASSES.get(head)
        if cls is None:
            raise SympyFormatError(path + "[0]", f"unknown sympy node {head!r} (not one of the "
                                   "classes a saved analysis uses)")
        args = self._args(j, 1, path, depth)
        _precheck(cls, args, path)
        return _canonical(cls, args, path, head)

    def _args(self, j: list, first: int, path: str, depth: int) -> tuple:
        return tuple(self._node(a, f"{path}[{k}]", depth + 1)
                     for k, a in enumerate(j[first:], first))

    def _rational(self, j, path):
        _arity(j, path, 3)
        p, q = j[1], j[2]
        for k, v in ((1, p), (2, q)):
            if type(v) is not int:
                raise SympyFormatError(f"{path}[{k}]", f"expected an integer, found {_kind(v)}")
            why = too_big_int(v)
            if why:
                raise SympyFormatError(f"{path}[{k}]", why)
        if q <= 1:
            raise SympyFormatError(path, f"Rational {p}/{q}: the denominator must be above 1")
        r = sp.Rational(p, q)
        if r.q != q:
            raise SympyFormatError(path, f"Rational {p}/{q} is not in lowest terms")
        return r

    def _user_function(self, j, path):
        if len(j) < 4:
            raise SympyFormatError(path, "a call node is [\"call\", table, function, output, "
                                         "arg...]")
        t, name, k = j[1], j[2], j[3]
        if type(t) is not int or not 0 <= t < len(self.tables):
            raise SympyFormatError(path + "[1]", f"function table {t!r} out of range (the "
                                   f"expression lists {len(self.tables)})")
        table = self.tables[t]
        if type(name) is not str or name not in table.functions:
            raise SympyFormatError(path + "[2]", f"unknown function {_short(name)} (the table "
                                   f"has {', '.join(sorted(table.functions)) or 'none'})")
        n_out = len(table.functions[name].outputs)
        if type(k) is not int or not 0 <= k < n_out:
            raise SympyFormatError(path + "[3]", f"output {k!r} of {name} out of range (it "
                                   f"has {n_out})")
        return table.sympy_function(call_name(name, k))


def _arity(j: list, path: str, n: int) -> None:
    if len(j) != n:
        raise SympyFormatError(path, f"a {j[0]} node has {n} entries, found {len(j)}")


def _name(v, path: str) -> str:
    if type(v) is not str:
        raise SympyFormatError(path, f"expected a name (a string), found {_kind(v)}")
    if not v or len(v) > MAX_NAME:
        raise SympyFormatError(path, f"a name of {len(v)} characters (1 to {MAX_NAME})")
    return v


def _assumptions(v, path: str, allowed: tuple) -> dict:
    if type(v) is not dict or not any(v == a and all(type(b) is bool for b in v.values())
                                      for a in allowed):
        shown = " or ".join(json_text(a) for a in allowed)
        raise SympyFormatError(path, f"expected the symbol's assumptions ({shown}), found "
                                     f"{_kind(v) if type(v) is not dict else json_text(v)}")
    return v


def json_text(v) -> str:
    import json
    return _short(json.dumps(v), 80)


def _float(j, path):
    _arity(j, path, 4)
    m, e, prec = j[1], j[2], j[3]
    for k, v in ((1, m), (2, e), (3, prec)):
        if type(v) is not int:
            raise SympyFormatError(f"{path}[{k}]", f"expected an integer, found {_kind(v)}")
    if not 1 <= prec <= MAX_PRECISION:
        raise SympyFormatError(path + "[3]", f"Float precision {prec} bits outside 1 .. "
                                             f"{MAX_PRECISION}")
    if abs(m).bit_length() > prec:
        raise SympyFormatError(path + "[1]", f"Float mantissa of {abs(m).bit_length()} bits "
                                             f"exceeds its precision of {prec} bits")
    if m:
        top = e + abs(m).bit_length()           # 2^(top-1) <= |value| < 2^top
        if not -1074 < top <= 1024:
            raise SympyFormatError(path, f"Float {m}*2^{e} outside the range of a double")
    elif e:
        raise SympyFormatError(path + "[2]", "Float zero with a nonzero exponent (not finite)")
    num = sp.Rational(m * 2 ** max(e, 0), 2 ** max(-e, 0))
    f = sp.Float(num, precision=prec)
    if not isinstance(f, sp.Float) or int(f._prec) != prec:
        raise SympyFormatError(path, f"Float {m}*2^{e} is not exact at {prec} bits")
    return f


def _digits_bits(n: sp.Rational) -> int:
    return max(abs(int(n.p)).bit_length(), int(n.q).bit_length())


def _precheck(cls: type, args: tuple, path: str) -> None:
    """Bounds checked before ``cls(*args)`` runs: the work sympy's evaluation would do that
    the canonical check after it cannot bound (module docstring)."""
    if cls in (sp.Add, sp.Mul, sp.Pow):
        bad = next((k for k, a in enumerate(args) if not isinstance(a, sp.Expr)), None)
        if bad is not None:
            raise SympyFormatError(f"{path}[{bad + 1}]", f"{cls.__name__} of a "
                                   f"{type(args[bad]).__name__} (arithmetic takes expressions)")
    if cls is sp.Pow:
        if len(args) != 2:
            raise SympyFormatError(path, f"Pow takes 2 arguments, found {len(args)}")
        base, ex = args
        if isinstance(ex, sp.Rational):
            p, q = abs(int(ex.p)), int(ex.q)
            if p > MAX_EXPONENT or q > MAX_EXPONENT:
                shown = ex.p if q == 1 else ex
                raise SympyFormatError(path + "[2]", f"Pow exponent {shown} exceeds the limit "
                                                     f"{MAX_EXPONENT}")
            coeff = base if isinstance(base, sp.Rational) else (
                base.args[0] if isinstance(base, sp.Mul) and isinstance(base.args[0],
                                                                       sp.Rational) else None)
            if coeff is not None:
                bits = _digits_bits(coeff)
                if q > 1 and bits > MAX_ROOT_BASE_BITS:
                    raise SympyFormatError(path, f"Pow: a root of a number of {bits} bits "
                                           f"(the limit under a fractional exponent is "
                                           f"{MAX_ROOT_BASE_BITS} bits)")
                if bits * p > MAX_INTEGER_BITS and bits > 1:
                    raise SympyFormatError(path, f"Pow: a number of {bits} bits to the power "
                                           f"{p} exceeds the limit of {MAX_INTEGER_BITS} bits")
        elif isinstance(ex, sp.Float) and abs(ex) > MAX_EXPONENT:
            raise SympyFormatError(path + "[2]", f"Pow exponent {ex} exceeds the limit "
                                                 f"{MAX_EXPONENT}")
    elif cls in (sp.Add, sp.Mul):
        if sum(1 for a in args if isinstance(a, sp.Number)) > 1:
            raise SympyFormatError(path, f"{cls.__name__} with several numbers (not in "
                                         "sympy's canonical form)")
    elif cls is sp.Derivative or cls is sp.Subs:
        for k, a in enumerate(args[1:], 2):
            if cls is sp.Derivative and isinstance(a, sp.Tuple) and len(a) == 2 and \
                    not (isinstance(a[1], sp.Integer) and 0 < a[1] <= MAX_ORDER):
                raise SympyFormatError(f"{path}[{k}]", f"Derivative order {a[1]} outside "
                                                       f"1 .. {MAX_ORDER}")
            if not isinstance(a, sp.Tuple):
                raise SympyFormatError(f"{path}[{k}]", f"{cls.__name__}: expected a Tuple")
    elif cls is sp.DiracDelta and len(args) == 2:
        if not (isinstance(args[1], sp.Integer) and 0 <= args[1] <= MAX_ORDER):
            raise SympyFormatError(path + "[2]", f"DiracDelta order {args[1]} outside 0 .. "
                                                 f"{MAX_ORDER}")


def _canonical(cls, args: tuple, path: str, what: str) -> sp.Basic:
    """``cls(*args)``, refused unless sympy keeps it as it is (module docstring)."""
    try:
        e = cls(*args)
    except (TypeError, ValueError, AttributeError, IndexError, ArithmeticError) as err:
        raise SympyFormatError(path, f"{what}: {type(err).__name__}: "
                                     f"{_short(str(err), 200)}") from None
    if type(e) is not cls and not (isinstance(cls, type) and issubclass(type(e), cls)
                                   and type(e).__name__ == cls.__name__):
        raise SympyFormatError(path, f"{what} is not in sympy's canonical form (it evaluates "
                                     f"to a {type(e).__name__})")
    if e.args != args:
        raise SympyFormatError(path, f"{what} is not in sympy's canonical form (its arguments "
                                     "change when it is built)")
    return e


def _kind(v) -> str:
    if isinstance(v, Refused):
        return v.reason
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a number"
    if isinstance(v, str):
        return f"the string {_short(v)}"
    if isinstance(v, list):
        return f"a list of {len(v)}"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


def _short(v, n: int = 60) -> str:
    s = repr(v)
    return s if len(s) <= n else s[:n] + "..."
