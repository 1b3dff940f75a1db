"""Whether two ``sample`` clocks can fire at the same instant, decided at compile time.

``sample(t0, T)`` fires at the instants ``t0 + k*T``, ``k = 0, 1, 2, ...`` (Modelica 3.6
§3.7.5, "sample"). Modelica 3.6 §8.3.6 allows ``reinit`` of one variable in one when-equation
only; like OpenModelica, and as issue 14 asks, the tool also accepts several when-clauses that
reinit the same state, provided they never act at the same instant. When both conditions are
sample clocks whose start and interval are known at compile time, that is decided here
exactly; otherwise the generated code checks it at run time
(`mdae_fmu.codegen.events.reinit_conflicts`).

The argument (`first_coincidence`). Known at compile time means: literals, arithmetic on
literals, and ``constant`` variables bound to such expressions (a ``parameter`` is not known:
the host may set it before initialization). Each value is read as an exact rational: a float
literal through its shortest decimal text (``0.1`` is 1/10, not the binary double nearest
to it), which is the text written in the model for every literal of at most 17 significant
digits. With ``D`` the least common denominator of ``t0a, Ta, t0b, Tb``, the integers
``a0 = t0a*D``, ``A = Ta*D``, ``b0 = t0b*D``, ``B = Tb*D`` turn the question
"``t0a + k*Ta = t0b + m*Tb`` for some integers ``k, m >= 0``" into the linear Diophantine
equation ``A*k - B*m = b0 - a0``. With ``g = gcd(A, B)`` it has integer solutions iff ``g``
divides ``b0 - a0`` (Bézout). The solutions are ``k = k0 + (B/g)*s``, ``m = m0 + (A/g)*s``
for integer ``s``, so ``k`` and ``m`` are both nonnegative for every large enough ``s``: the
sign constraint never removes the coincidence, the clocks then coincide at infinitely many
instants ``t1 + j*L`` (``j >= 0``), ``L = lcm(A, B)/D`` the common period and ``t1`` the
first instant at or after both starts. ``k0`` is ``(b0 - a0)/g`` times the inverse of
``A/g`` modulo ``B/g`` (they are coprime). If ``g`` does not divide ``b0 - a0`` the clocks
never coincide, whatever the stop time.

The run-time sample instants are computed in floating point and compared with a tolerance
of about ``1e-12*max(1, |t|)`` (docs/fmi-mapping.md, "Events"): two rational instants that
differ are apart by at least ``1/D``, far more than that tolerance for the literals of
models."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction

from .. import expr as E
from ..ir import Model, Reinit, WhenBranch, WhenClause

#: nesting bound when resolving constants bound to constants (a cycle is not a literal)
_MAX_DEPTH = 50


@dataclass(frozen=True)
class Clock:
    """``sample(start, interval)`` with both known exactly (``interval > 0``)."""
    start: Fraction
    interval: Fraction

    def text(self) -> str:
        return f"sample({_num(self.start)}, {_num(self.interval)})"


def _num(q: Fraction) -> str:
    """A rational as the user would write it: ``0.4``, ``3``, or ``1/3`` when no decimal
    text of a double is exactly ``q``."""
    if q.denominator == 1:
        return str(q.numerator)
    text = repr(float(q))
    return text if Fraction(text) == q else f"{q.numerator}/{q.denominator}"


def literal_value(e: E.Expr, constants: dict[str, E.Expr], depth: int = 0) -> Fraction | None:
    """The exact value of ``e`` when it is known at compile time (module docstring): numeric
    literals, ``-``, ``+``, ``-``, ``*``, ``/`` (nonzero divisor) and ``constants`` (names of
    ``constant`` variables -> their binding); None otherwise."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(e, E.Const):
        v = e.value
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return None
        return Fraction(v) if isinstance(v, int) else Fraction(repr(v))
    if isinstance(e, E.UnOp) and e.op in ("-", "+"):
        q = literal_value(e.arg, constants, depth + 1)
        return None if q is None else (-q if e.op == "-" else q)
    if isinstance(e, E.BinOp) and e.op in ("+", "-", "*", "/"):
        a = literal_value(e.left, constants, depth + 1)
        b = literal_value(e.right, constants, depth + 1)
        if a is None or b is None:
            return None
        if e.op == "+":
            return a + b
        if e.op == "-":
            return a - b
        if e.op == "*":
            return a * b
        return None if b == 0 else a / b
    if isinstance(e, E.Ref) and e.name in constants:
        return literal_value(constants[e.name], constants, depth + 1)
    return None


def constant_bindings(model: Model) -> dict[str, E.Expr]:
    """The bindings of the model's ``constant`` variables (the host cannot change them)."""
    return {v.name: v.binding for v in model.variables
            if v.variability == "constant" and v.binding is not None}


def sample_clock(cond: E.Expr, constants: dict[str, E.Expr]) -> Clock | None:
    """The clock of a condition ``sample(start, interval)`` known at compile time, else None
    (another condition, a parameter argument, an interval that is not positive)."""
    if not (isinstance(cond, E.Call) and cond.func == "sample" and len(cond.args) == 2):
        return None
    start = literal_value(cond.args[0], constants)
    interval = literal_value(cond.args[1], constants)
    if start is None or interval is None or interval <= 0:
        return None
    return Clock(start=start, interval=interval)


def first_coincidence(a: Clock, b: Clock) -> tuple[Fraction, Fraction] | None:
    """``(t1, L)``: the clocks fire together exactly at ``t1 + j*L``, ``j = 0, 1, ...``, or
    None when they never do (the Diophantine argument of the module docstring)."""
    den = math.lcm(a.start.denominator, a.interval.denominator,
                   b.start.denominator, b.interval.denominator)
    a0, big_a = int(a.start * den), int(a.interval * den)
    b0, big_b = int(b.start * den), int(b.interval * den)
    g = math.gcd(big_a, big_b)
    c = b0 - a0
    if c % g:
        return None
    modulus = big_b // g
    k0 = (c // g) * pow(big_a // g, -1, modulus) % modulus if modulus > 1 else 0
    period = big_a * modulus                 # lcm(A, B)
    t = a0 + big_a * k0                      # a common instant, with k0 >= 0
    # k0 < B/g is the least k >= 0, so t is the first common instant at or after a0; if it
    # is before b0 (m < 0), the first one at or after b0 is whole periods later
    if t < b0:
        t += -(-(b0 - t) // period) * period
    return Fraction(t, den), Fraction(period, den)


def never_coincide(cond_a: E.Expr, cond_b: E.Expr, constants: dict[str, E.Expr]) -> bool:
    """True when both conditions are sample clocks known at compile time that never fire at
    the same instant (`first_coincidence`); False when they do or when it is not known."""
    a = sample_clock(cond_a, constants)
    b = sample_clock(cond_b, constants)
    return a is not None and b is not None and first_coincidence(a, b) is None


def simultaneous_reinit_problems(model: Model) -> list[str]:
    """Rejection messages (E-REINIT-SAME-INSTANT) for two branches of different when-clauses
    that reinit the same variable on sample clocks that fire together (module docstring):
    both clauses with their lines, the clocks, the instants where they coincide and a fix.
    Pairs whose clocks never coincide, or are not known at compile time, give nothing (the
    latter are checked at run time)."""
    constants = constant_bindings(model)
    by_var: dict[str, list[tuple[int, WhenClause, WhenBranch, Reinit, Clock]]] = {}
    for c, w in enumerate(model.whens):
        for br in w.branches:
            clock = sample_clock(br.condition, constants)
            if clock is None:
                continue
            for act in br.actions:
                if isinstance(act, Reinit):
                    by_var.setdefault(act.var, []).append((c, w, br, act, clock))
    out = []
    seen = set()
    for var, found in by_var.items():
        for (c1, w1, br1, r1, k1), (c2, w2, br2, r2, k2) in itertools.combinations(found, 2):
            if c1 == c2 or (c1, c2, var) in seen:
                continue
            hit = first_coincidence(k1, k2)
            if hit is None:
                continue
            seen.add((c1, c2, var))
            t1, period = hit
            l1 = r1.loc or br1.loc or w1.loc
            l2 = r2.loc or br2.loc or w2.loc
            prefix = f"{l1}: " if l1 else ""
            out.append(
                f"{prefix}two when-clauses reinit {var} at the same instants "
                f"(E-REINIT-SAME-INSTANT): when {k1.text()} "
                f"({w1.id}, {l1.short() if l1 else 'line unknown'}) and when {k2.text()} "
                f"({w2.id}, {l2.short() if l2 else 'line unknown'}) both fire at "
                f"t = {_num(t1)} + {_num(period)}*j, j = 0, 1, 2, ...; Modelica lets several "
                "when-clauses reinit one variable only at different instants\n"
                f"  fix: merge them into one when-clause, `when {k1.text()} then ... elsewhen "
                f"{k2.text()} then ... end when;` (the first branch wins when both fire), "
                "or choose starts and intervals that never coincide")
    return out
