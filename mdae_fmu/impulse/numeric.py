"""The numerical restart scheme of RR-9334 §11.3 (Algorithm 14): the restart system written
for a numerical solver (`delta_form`), which the generated C solves at a decreasing standard
delta (`mdae_delta_scheme` in templates/mdae_runtime.c; `mdae_fmu.codegen.guarded`).

docs/theory.md §9.7: replace the infinitesimal d of the restart system
``H(Z, X, d) = 0`` by a small standard ``delta``, solve, discard the impulsive variables, and let
``delta -> 0`` (Theorem 91: the non-impulsive part converges to the standardized restart).
As recommended there, every impulsive variable w of finite order mu is solved for through its
rescaled value ``nu = w * delta^mu`` (well conditioned). The Python solver of the scheme, with
its convergence check, is the tests' oracle (tests/delta_oracle.py: `delta_scheme`,
`solve_at`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import comb

import sympy as sp

from .analysis import BOUND, ImpulseResult
from .problem import RestartProblem, right


def impulse_power(info) -> Fraction | None:
    """The rescaling power mu of an impulsive unknown (``w = nu * delta^-mu``): its order when
    Algorithm IA fixes it, else the upper bound of its feasible orders (an unknown whose true
    order is lower gets ``nu -> 0``, still well conditioned); None when it is not impulsive or
    the bound is not finite."""
    if info is None or info.hi is None:
        return None
    hi = Fraction(info.hi)
    if hi <= 0 or hi >= BOUND - 1e-6:
        return None
    return hi


@dataclass(frozen=True)
class DeltaForm:
    """The restart system ``H(Z, X, delta) = 0`` written for a numerical solver (scheme (186)):
    one solver variable ``z[i]`` per unknown of the problem, with

    * ``increment``: an unknown instance ``x@j`` of a variable with known instances is
      ``x@(j-1) + delta * z`` (z is the forward difference, so the jets of the next instant
      are read off without cancellation: ``der(x)+ = (x@2 - x@1)/delta`` is a ``z``);
    * ``impulse``: an impulsive unknown of order ``mu`` is ``z * delta^-mu`` (RR-9334 §11.3:
      the rescaled unknown stays finite; ``z`` is the integral over the event for ``mu = 1``);
    * ``plain``: ``z`` itself.

    ``equations`` and ``targets`` (right-limit jet symbol -> expression, the values the next
    instant reads: the new top jet of every variable and the higher jets its extra instances
    define) are expressions in ``z``, ``delta = d``, the left-limit jets and the parameters;
    ``values`` maps each original unknown to its expression."""
    d: sp.Symbol
    unknowns: tuple
    z: tuple
    kind: tuple
    power: tuple
    equations: tuple
    targets: dict
    values: dict
    level: str


def delta_form(problem: RestartProblem, impulse: ImpulseResult | None,
               level: str | None = None) -> DeltaForm:
    """`DeltaForm` of ``problem`` (see there): the restart system (186) with every impulsive
    unknown of finite order rescaled as ``w = nu * delta^-mu``, the recommendation of
    docs/theory.md §9.7 (RR-9334 §11.3); ``impulse`` gives the rescaling orders."""
    d = problem.d
    level = level or ("jet" if impulse is None or impulse.jet_level else "shift")
    ks = problem.jet_substitution()
    unknowns = list(problem.unknowns)
    z = sp.symbols(f"z0:{len(unknowns)}", real=True) if unknowns else ()
    zi = dict(zip(unknowns, z))
    by_name: dict = {}
    for s in unknowns:
        name, _, k = s.name.rpartition("@")
        if name and k.isdigit():
            by_name.setdefault(name, []).append((int(k), s))
    jets = {j.name: j for j in problem.jets}
    values, kind, power = {}, {}, {}
    for name, insts in sorted(by_name.items()):
        j = jets.get(name)
        if j is None:
            continue
        prev = j.known[-1] if j.known else None
        have = {k: ks[s] for k, s in enumerate(j.known)}
        for k, s in sorted(insts):
            base = have.get(k - 1)
            if base is None:
                continue
            values[s] = base + d * zi[s]
            have[k] = values[s]
            kind[s] = "increment"
        del prev
    for s in unknowns:
        if s in values:
            continue
        mu = impulse_power(impulse.orders.get(s)) if impulse is not None else None
        if mu is not None:
            values[s] = zi[s] * d ** (-sp.Rational(mu.numerator, mu.denominator))
            kind[s], power[s] = "impulse", mu
        else:
            values[s] = zi[s]
            kind[s] = "plain"
    sub = dict(ks)
    sub.update(values)
    equations = tuple(e.xreplace(sub) for _, e in problem.equations)
    targets = {}
    for j in problem.jets:
        if j.top is None:
            continue
        inst = {k: sub[x] for k, x in enumerate(j.known)}
        k = j.m
        while True:
            x = next((s for kk, s in by_name.get(j.name, ()) if kk == k), None)
            if x is None or x not in values:
                break
            inst[k] = values[x]
            k += 1
        p = k - 1                              # highest instance known after the instant
        if level == "shift" or j.m == 1:
            targets[right(j.name, 0)] = inst[j.m]
            first = 1 if (level == "jet" and j.m == 1) else None
        else:
            first = j.m - 1
        if first is None:
            continue
        for i in range(first, p):
            if 1 + i > p:
                break
            diff = sum((-1) ** (i - kk) * comb(i, kk) * inst[1 + kk] for kk in range(i + 1))
            targets[right(j.name, i)] = sp.cancel(sp.expand(diff) / d ** i)
    return DeltaForm(
        d=d,
        unknowns=tuple(unknowns),
        z=tuple(z),
        kind=tuple(kind[s] for s in unknowns),
        power=tuple(power.get(s, Fraction(0)) for s in unknowns),
        equations=equations,
        targets=targets,
        values={s: values[s] for s in unknowns},
        level=level,
    )
