"""Unit consistency of a model's equations (issue 28 Deliver 5): ``W-UNIT`` warnings.

Every variable, parameter and constant whose ``unit`` attribute reads (`mdae_fmu.units`,
Modelica 3.6 §19.1) has a unit; ``time`` is in s. The unit of an expression follows from them
by SI base-unit algebra: products and quotients add and subtract the exponents, ``der(x)`` is
the unit of x per second, ``x^n`` and ``sqrt`` scale them (n a literal), ``pre``, ``abs``,
``noEvent``, ``smooth`` keep them. What the check compares must have one unit: the terms of a
sum, the two sides of an equation, relation, ``reinit`` or binding, the branches of an
if-expression, the arguments of ``min``, ``max``, ``mod``, ``rem``, ``atan2``, ``homotopy``;
``exp``, ``log``, ``sinh``... and the trigonometric functions take a dimensionless argument.
Two units are the same when their exponents and factors agree (``mm`` is not ``m``).

What is not known is never a warning:

* a variable without a ``unit`` (or with one that does not read) has an unknown unit, and so
  has every product, quotient or function result it enters; in a sum, an unknown term takes
  the unit of the others (no inference across equations);
* a literal takes the unit it needs (MLS §19, a number has no unit of its own): ``2*x`` has an
  unknown unit, so conversions written with factors (``x_mm = 1000*x_m``) are accepted;
* user functions' results are unknown (their arguments are still checked inside).

The radian is dimensionless (SI: rad = m/m), so ``v = w*r`` with v in m/s, w in rad/s, r in m
holds, but it is kept in the units shown. ``degC``, ``degF`` are offset units: in products and
derivatives they are temperature differences (K), and an offset counts only where two
variables are equated as they are (``T_K = T_degC`` is a warning, ``T_K = T_degC + 273.15``
is a conversion).

`check_units` returns the warnings in equation order, at most one per equation (the first
mismatch found, with the equation's ``file:line:col`` and both units); with ``--strict-units``
they reject the model (`mdae_fmu.analysis`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

from . import expr as E
from .diagnostics import SourceLoc
from .ir import Assign, Model, Reinit
from .modelica_printer import print_expr
from .units import BASE, base_unit

#: Base units compared by the check: all but rad (the last of `BASE`), dimensionless in SI.
_COMPARED = len(BASE) - 1
_ONE_EXPS = (Fraction(0),) * len(BASE)
#: Functions whose argument must be dimensionless (rad counts as dimensionless).
_DIMENSIONLESS_ARG = frozenset(("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
                                "tanh", "exp", "log", "log10", "erf", "erfc"))
#: Functions whose result has the unit of their (first) argument.
_SAME_UNIT = frozenset(("abs", "pre", "noEvent", "floor", "ceil", "integer"))
#: Functions whose arguments must share one unit, which is the result's.
_SHARED_ARGS = frozenset(("min", "max", "mod", "rem", "homotopy"))
#: Longest expression quoted in a message (characters).
_QUOTE = 60


@dataclass(frozen=True, slots=True)
class Unit:
    """The unit of an expression: exponents over `mdae_fmu.units.BASE`, the factor to the base
    units, the offset of a variable read as it is (None for any other expression), and the
    text shown in messages (the declared string for a variable)."""
    exps: tuple[Fraction, ...]
    factor: float
    offset: float | None
    text: str

    def same(self, other: "Unit") -> bool:
        """One unit for the check: same exponents (rad aside) and factor; offsets apart."""
        return (self.exps[:_COMPARED] == other.exps[:_COMPARED]
                and math.isclose(self.factor, other.factor, rel_tol=1e-9))

    @property
    def dimensionless(self) -> bool:
        return all(x == 0 for x in self.exps[:_COMPARED]) and math.isclose(self.factor, 1.0)


ONE = Unit(exps=_ONE_EXPS, factor=1.0, offset=None, text="1")


@dataclass(frozen=True, slots=True)
class UnitWarning:
    """One inconsistency: where (the equation's or declaration's location, None when the
    input has none), what (``where``: the equation or declaration as text) and why."""
    loc: SourceLoc | None
    where: str
    reason: str

    def __str__(self) -> str:
        return self.text()

    def text(self, strict: bool = False) -> str:
        """``W-UNIT: file:line:col: equation: reason`` (``E-UNIT`` with ``--strict-units``)."""
        at = f"{self.loc}: " if self.loc is not None else ""
        return f"{'E' if strict else 'W'}-UNIT: {at}{self.where}: {self.reason}"

    def to_json(self) -> dict:
        return {"file": None if self.loc is None else self.loc.file,
                "line": None if self.loc is None else self.loc.line,
                "col": None if self.loc is None else self.loc.col,
                "where": self.where, "reason": self.reason}


class _Mismatch(Exception):
    """The first inconsistency found in one equation (its reason)."""


def unit_text(exps: tuple[Fraction, ...], factor: float = 1.0) -> str:
    """Modelica unit syntax for base-unit exponents: ``kg.m2/s2``, ``1/s``, ``1``; a factor
    other than 1 is shown before it (``1000 m``)."""
    num = [_factor(s, x) for s, x in zip(BASE, exps) if x > 0]
    den = [_factor(s, -x) for s, x in zip(BASE, exps) if x < 0]
    text = ".".join(num) or "1"
    if den:
        text += "/" + (den[0] if len(den) == 1 else f"({'.'.join(den)})")
    return text if math.isclose(factor, 1.0) else f"{factor:g} {text}"


def _factor(symbol: str, x: Fraction) -> str:
    if x == 1:
        return symbol
    return f"{symbol}{x}" if x.denominator == 1 else f"({symbol}){x}"


def declared_unit(text: str | None) -> Unit | None:
    """The `Unit` of a ``unit`` attribute, None when it is absent, empty or does not read."""
    if not text:
        return None
    b = base_unit(text)
    if b is None:
        return None
    return Unit(
        exps=tuple(Fraction(x) for x in b.exponents), factor=b.factor, offset=b.offset, text=text
    )


def _quote(e: E.Expr) -> str:
    text = print_expr(e)
    return text if len(text) <= _QUOTE else text[:_QUOTE - 3] + "..."


class _Checker:
    """The units of one model's variables, and the unit of any of its expressions."""

    def __init__(self, model: Model):
        self.units: dict[str, Unit] = {}
        for v in model.variables:
            u = declared_unit(v.unit)
            if u is not None:
                self.units[v.name] = u

    # --- the unit of an expression (None: unknown), raising _Mismatch ------------------------
    def unit(self, e: E.Expr) -> Unit | None:
        if isinstance(e, E.Ref):
            return self.units.get(e.name)
        if isinstance(e, E.Time):
            return Unit(exps=_exps(s=1), factor=1.0, offset=0.0, text="s")
        if isinstance(e, (E.Const, E.Str)):
            return None
        if isinstance(e, E.Der):
            return _times(
                self.unit(e.arg), Unit(exps=_exps(s=1), factor=1.0, offset=None, text="s"), -1
            )
        if isinstance(e, E.UnOp):
            u = self.unit(e.arg)
            return None if e.op == "not" or u is None else _derived(u)
        if isinstance(e, E.BinOp):
            return self._binop(e)
        if isinstance(e, E.If):
            self.condition(e.cond)
            return self._shared([e.then, e.orelse], "the branches of an if-expression")
        if isinstance(e, E.Call):
            return self._call(e)
        return None

    def _binop(self, e: E.BinOp) -> Unit | None:
        op = e.op.lstrip(".") if len(e.op) > 1 and e.op[0] == "." else e.op
        if op in ("+", "-"):
            return self.sum(e)
        if op in ("*", "/"):
            a, b = self.unit(e.left), self.unit(e.right)
            return _times(a, b, 1 if op == "*" else -1)
        if op == "^":
            return self._power(self.unit(e.left), e.right)
        # relations and logical operators: Boolean, no unit
        if op in E.REL_OPS:
            self.sides(e.left, e.right, "the two sides of a relation")
        else:
            self.condition(e.left)
            self.condition(e.right)
        return None

    def sum(self, e: E.Expr) -> Unit | None:
        """The unit of a sum: its terms (`_terms`) share one unit."""
        terms = list(_terms(e))
        return self._shared(terms, "the terms of a sum")

    def _shared(self, parts: list[E.Expr], what: str, offsets: bool = False) -> Unit | None:
        """The one unit of ``parts`` (unknown ones adapt), or `_Mismatch` naming ``what``."""
        first: tuple[E.Expr, Unit] | None = None
        for p in parts:
            u = self.unit(p)
            if u is None:
                continue
            if first is None:
                first = (p, u)
                continue
            _agree(first, (p, u), what, offsets)
        if first is None:
            return None
        return first[1] if len(parts) == 1 else _derived(first[1])

    def condition(self, e: E.Expr) -> None:
        """Check a Boolean expression (relations inside it)."""
        self.unit(e)

    def _power(self, base: Unit | None, exponent: E.Expr) -> Unit | None:
        self.unit(exponent)
        if base is None:
            return None
        p = _rational(exponent)
        if p is None:
            return ONE if base.dimensionless else None
        try:
            factor = base.factor ** float(p)
        except (OverflowError, ZeroDivisionError):
            return None
        return Unit(exps=tuple(x * p for x in base.exps), factor=factor, offset=None,
                    text=unit_text(tuple(x * p for x in base.exps), factor))

    def _call(self, e: E.Call) -> Unit | None:
        f, args = e.func, e.args
        if f in _DIMENSIONLESS_ARG and len(args) == 1:
            u = self.unit(args[0])
            if u is not None and not u.dimensionless:
                raise _Mismatch(f"{f}() takes a dimensionless argument but '{_quote(args[0])}'"
                                f" is in {u.text}")
            return ONE
        if f == "sqrt" and len(args) == 1:
            return self._power(self.unit(args[0]), E.Const(0.5))
        if f in _SAME_UNIT and len(args) == 1:
            u = self.unit(args[0])
            return u if f == "pre" else (None if u is None else _derived(u))
        if f == "sign" and len(args) == 1:
            self.unit(args[0])
            return ONE
        if f == "smooth" and len(args) == 2:
            return self.unit(args[1])
        if f in _SHARED_ARGS and len(args) == 2:
            return self._shared(list(args), f"the arguments of {f}()")
        if f == "atan2" and len(args) == 2:
            self._shared(list(args), "the arguments of atan2()")
            return ONE
        if f == "div" and len(args) == 2:
            return _times(self.unit(args[0]), self.unit(args[1]), -1)
        if f == "semiLinear" and len(args) == 3:
            x = self.unit(args[0])
            k = self._shared([args[1], args[2]], "the slopes of semiLinear()")
            return _times(x, k, 1)
        for a in args:          # events, user functions: Boolean or unknown results
            self.unit(a)
        return None

    # --- what is checked ----------------------------------------------------------------------
    def equation(self, residual: E.Expr) -> None:
        """The two sides of ``lhs = rhs`` (the residual ``lhs - rhs``) share one unit; in
        ``0 = if c then a else b`` each branch is an equation of its own (``0 = a`` when c),
        so the branches need not share a unit."""
        if isinstance(residual, E.BinOp) and residual.op == "-":
            self.sides(residual.left, residual.right, "the two sides of the equation")
        elif isinstance(residual, E.If):
            self.condition(residual.cond)
            self.equation(residual.then)
            self.equation(residual.orelse)
        else:
            self.unit(residual)

    def sides(self, lhs: E.Expr, rhs: E.Expr, what: str) -> None:
        """``lhs`` and ``rhs`` (each a sum) share one unit (`_agree`, offsets compared)."""
        ul, ur = self.sum(lhs), self.sum(rhs)
        if ul is not None and ur is not None:
            _agree((lhs, ul), (rhs, ur), what, offsets=True)

    def assignment(self, var: str, value: E.Expr, what: str) -> None:
        """``var`` takes the value ``value`` (binding, start, reinit, when-assignment)."""
        u = self.units.get(var)
        v = self.unit(value)
        if u is not None and v is not None:
            _agree((E.Ref(var), u), (value, v), what, offsets=True)


def _exps(**powers: int) -> tuple[Fraction, ...]:
    return tuple(Fraction(powers.get(b, 0)) for b in BASE)


def _derived(u: Unit) -> Unit:
    """``u`` as the unit of an expression other than a variable read as it is (no offset)."""
    return u if u.offset is None else Unit(exps=u.exps, factor=u.factor, offset=None, text=u.text)


def _times(a: Unit | None, b: Unit | None, power: int) -> Unit | None:
    """``a * b`` (power 1) or ``a / b`` (power -1); unknown when either is."""
    if a is None or b is None:
        return None
    if b.dimensionless and b.exps == _ONE_EXPS:
        return _derived(a)
    if power == 1 and a.dimensionless and a.exps == _ONE_EXPS:
        return _derived(b)
    exps = tuple(x + power * y for x, y in zip(a.exps, b.exps))
    factor = a.factor * b.factor ** power
    return Unit(exps=exps, factor=factor, offset=None, text=unit_text(exps, factor))


def _agree(a: tuple[E.Expr, Unit], b: tuple[E.Expr, Unit], what: str, offsets: bool) -> None:
    """`_Mismatch` when the units of the two expressions differ (or, with ``offsets``, when
    both are variables read as they are with different offsets)."""
    (ea, ua), (eb, ub) = a, b
    if not ua.same(ub):
        raise _Mismatch(f"'{_quote(ea)}' is in {ua.text} but '{_quote(eb)}' is in {ub.text} "
                        f"({what} must have one unit)")
    if offsets and ua.offset is not None and ub.offset is not None \
            and not math.isclose(ua.offset, ub.offset, abs_tol=1e-9):
        diff = ua.offset - ub.offset
        raise _Mismatch(f"'{_quote(ea)}' is in {ua.text} but '{_quote(eb)}' is in {ub.text}, "
                        f"units whose zeros differ by {abs(diff):g} {unit_text(ua.exps)} "
                        "(a conversion adds the offset)")


def _terms(e: E.Expr) -> Iterator[E.Expr]:
    """The terms of a sum (``a - (b + c)`` gives a, b, c; unary signs dropped)."""
    stack = [e]
    while stack:
        n = stack.pop()
        if isinstance(n, E.BinOp) and n.op in ("+", "-", ".+", ".-"):
            stack.append(n.right)
            stack.append(n.left)
        elif isinstance(n, E.UnOp) and n.op in ("-", "+"):
            stack.append(n.arg)
        else:
            yield n


def _rational(e: E.Expr) -> Fraction | None:
    """The value of a literal exponent (``2``, ``-1``, ``1/3``, ``0.5``) as a fraction, None
    when it is not a literal or not a simple fraction."""
    v = _literal_value(e)
    if v is None or not math.isfinite(v) or abs(v) > 64:
        return None
    f = Fraction(v).limit_denominator(12)
    return f if math.isclose(float(f), v, rel_tol=1e-12, abs_tol=1e-12) else None


def _literal_value(e: E.Expr) -> float | None:
    if isinstance(e, E.Const):
        return None if isinstance(e.value, bool) else float(e.value)
    if isinstance(e, E.UnOp) and e.op in ("-", "+"):
        v = _literal_value(e.arg)
        return None if v is None else (-v if e.op == "-" else v)
    if isinstance(e, E.BinOp) and e.op in ("+", "-", "*", "/"):
        a, b = _literal_value(e.left), _literal_value(e.right)
        if a is None or b is None or (e.op == "/" and b == 0):
            return None
        return {"+": a + b, "-": a - b, "*": a * b, "/": a / b if b else 0.0}[e.op]
    return None


def _where_equation(residual: E.Expr) -> str:
    from .modelica_printer import print_equation_body
    text = print_equation_body(residual)
    return text if len(text) <= 2 * _QUOTE else text[:2 * _QUOTE - 3] + "..."


def check_units(model: Model) -> tuple[UnitWarning, ...]:
    """The ``W-UNIT`` warnings of ``model`` (module docstring): equations, initial
    equations, bindings and start values, when-clauses (conditions, reinit, assignments),
    assertions. Empty, at the cost of one pass over the declarations, when no variable
    declares a unit."""
    if not any(v.unit for v in model.variables):
        return ()
    c = _Checker(model)
    if not c.units:
        return ()
    out: list[UnitWarning] = []

    def run(loc, where, check, *args) -> None:
        try:
            check(*args)
        except _Mismatch as err:
            out.append(
                UnitWarning(loc=loc, where=where() if callable(where) else where, reason=str(err))
            )

    for v in model.variables:
        if v.binding is not None:
            run(v.loc, f"{v.name} = {_quote(v.binding)}", c.assignment, v.name, v.binding,
                "a variable and its binding")
        if v.start is not None:
            run(v.loc, f"{v.name}(start = {_quote(v.start)})", c.assignment, v.name, v.start,
                "a variable and its start value")
    seen: set = set()
    for eq in (*model.equations, *model.initial_equations):
        for g in eq.guard:
            if g.cond not in seen:
                seen.add(g.cond)
                run(eq.loc, f"if {_quote(g.cond)}", c.condition, g.cond)
        run(eq.loc, lambda eq=eq: _where_equation(eq.residual), c.equation, eq.residual)
    for w in model.whens:
        for br in w.branches:
            run(br.loc or w.loc, f"when {_quote(br.condition)}", c.condition, br.condition)
            for a in br.actions:
                if isinstance(a, Reinit):
                    run(a.loc or br.loc, f"reinit({a.var}, {_quote(a.value)})", c.assignment,
                        a.var, a.value, "the variable and the value of a reinit")
                elif isinstance(a, Assign):
                    run(a.loc or br.loc, f"{a.var} := {_quote(a.value)}", c.assignment,
                        a.var, a.value, "the two sides of an assignment")
    for asrt in model.assertions:
        run(asrt.loc, f"assert({_quote(asrt.cond)}, ...)", c.condition, asrt.cond)
    return tuple(out)


__all__ = ["Unit", "UnitWarning", "check_units", "declared_unit", "unit_text"]
