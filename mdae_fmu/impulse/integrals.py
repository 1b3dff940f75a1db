"""Integrals of the impulsive variables over a restart instant (issue deliverable 4: the impulses
are physics users want to see).

An impulsive unknown ``w`` of order 1 (Algorithm IA, docs/theory.md §9.2) is ``w = nu / d`` with
``nu`` finite: ``nu = d * w`` is the integral of ``w`` over the nonstandard instant (the Dirac
weight). Written with ``w = nu * d^-1`` (the upper bound of its orders when only a range is
known; a lower true order gives ``nu = 0``), the known instances through the left jets and the
new top instances through the right jets of the instant's level (`RestartProblem`), each
equation of the restart system has a leading order in ``d`` (`standardize.leading_order`). Those
leading orders that contain no other unknown are linear equations in the ``nu``'s, with
coefficients and right-hand sides over the left and right limits:

* clutch (docs/theory.md §13.1): ``j1*der(w1) = -k1*w1 + f1`` gives ``j1*(w1+ - w1-) = nu_f1``,
  the transferred angular momentum;
* Cup-and-Ball (docs/theory.md §13.2): ``der(vx) = -lam*x``, ``der(vy) = -lam*y - g`` give
  ``vx+ - vx- = -x*nu``, ``vy+ - vy- = -y*nu``; neither alone is well conditioned everywhere
  (x = 0 at the bottom of the cup), so each ``nu`` is the **least-squares** solution of the
  equations where it is the only undetermined one: ``nu = sum(c_i*b_i) / sum(c_i^2)``, here
  ``-(x*(vx+ - vx-) + y*(vy+ - vy-)) / (x^2 + y^2)``, the radial momentum change over |p|^2;
* RLDC2 (docs/theory.md §13.4): ``i1 = C1*der(v1)`` gives ``nu_i1 = C1*(v1+ - v1-)``, the charge
transferred.

Equations where several ``nu``'s appear (``f1 + f2 = 0``) determine one once the others are
known (``nu_f2 = -nu_f1``). An impulsive unknown of order above 1 (a position projection, whose
integral is infinite unless the position does not jump, i.e. at an exact crossing) gets no
integral; orders below 1 give 0 and are not listed.
"""

from __future__ import annotations

import sympy as sp

from .analysis import ImpulseResult
from .numeric import impulse_power
from .problem import RestartProblem
from .standardize import level_form, leading_order


def impulse_integrals(problem: RestartProblem, impulse: ImpulseResult | None,
                      level: str) -> dict:
    """``{variable name: (num, den)}``, the integral over the instant ``num/den`` of each
    impulsive unknown of order 1 (orders of Algorithm IA, docs/theory.md §9.2, §9.3), as sympy
    expressions of the left (``x-``) and right (``x+``) limits and the parameters (module
    docstring); ``den`` vanishes where the equations do not determine it."""
    if impulse is None:
        return {}
    d = problem.d
    nus: dict = {}
    powers: dict = {}
    for s in problem.unknowns:
        mu = impulse_power(impulse.orders.get(s))
        if mu is None:
            continue
        name, _, k = s.name.rpartition("@")
        nu = sp.Symbol(f"mdae_nu_{len(nus)}", real=True)
        nus[s] = (nu, name or s.name)
        powers[nu] = mu
    if not nus:
        return {}
    eqs, _, others = level_form(problem, level, impulse)
    sub = {s: nu * d ** (-sp.Rational(powers[nu].numerator, powers[nu].denominator))
           for s, (nu, _) in nus.items()}
    unknown = set(others) - set(nus)
    wanted = {nu for nu, _ in nus.values() if powers[nu] == 1}
    rows = []
    for e in eqs:
        ex = e.xreplace(sub)
        if ex.free_symbols & unknown:
            continue
        try:
            lead = sp.expand(leading_order(ex, d))
        except (ValueError, TypeError, ZeroDivisionError):
            continue
        if lead == 0 or d in lead.free_symbols:
            continue
        present = {nu for nu, _ in nus.values() if nu in lead.free_symbols}
        if not present or not present <= wanted:
            continue
        if any(sp.diff(lead, a).free_symbols & present for a in present):
            continue                                  # not linear in the integrals
        rows.append((lead, present))
    solved: dict = {}
    parts: dict = {}
    changed = True
    while changed:
        changed = False
        for nu in sorted(wanted - set(solved), key=str):
            num, den = sp.Integer(0), sp.Integer(0)
            for lead, present in rows:
                if nu not in present or (present - {nu}) - set(solved):
                    continue
                c = sp.diff(lead, nu)
                b = -(lead - c * nu).xreplace(solved)
                num += c * b
                den += c * c
            if den != 0:
                solved[nu] = num / den
                parts[nu] = (num, den)
                changed = True
    out = {}
    for nu, name in nus.values():
        if nu in solved:
            out[name] = parts[nu]
    return dict(sorted(out.items()))
