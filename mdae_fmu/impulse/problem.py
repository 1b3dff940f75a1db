"""A restart instant as an algebraic problem: the input of impulse analysis and standardization.

docs/theory.md §9.1 (forms (124)/(125)): the system ``H(Z, X, d) = 0``
solved at a mode-change instant, with ``X`` the instances known from the past (finite, standard)
and ``Z`` the unknowns, here in shift form (`mdae_fmu.modes.shiftform`).

Known shift instances are written through the *jets* of their variable, the standard left
limits ``x-``, ``der(x)-``, ...: ``x@j = sum_k C(j,k) d^k der(x,k)-`` (the forward-difference
identity of the Euler semantics, RR-9334 (74), docs/theory.md §5.5). The new top instance ``x@m`` of
a variable whose ``m`` lower instances are known is read in one of two ways (Strategy 54 and the
two-instant Cup-and-Ball restart of docs/theory.md §9.6):

* **jet level**: through the new top jet ``z = der(x, m-1)+`` (the lower jets are continuous);
  for a first-order state this is just ``x+``;
* **shift level**: ``x@m`` itself is the new value ``x+`` (a finite jump of the position, the
  lower jets carried over).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import comb

import sympy as sp

from ..structure.graph import classes_sharing_keys


def jet_name(name: str, k: int) -> str:
    return name if k == 0 else (f"der({name})" if k == 1 else f"der({name},{k})")


def left(name: str, k: int = 0) -> sp.Symbol:
    """The left-limit symbol ``x-`` / ``der(x)-`` of jet k."""
    return sp.Symbol(jet_name(name, k) + "-", real=True)


def right(name: str, k: int = 0) -> sp.Symbol:
    """The right-limit symbol ``x+`` / ``der(x)+`` of jet k."""
    return sp.Symbol(jet_name(name, k) + "+", real=True)


@dataclass(frozen=True)
class StateJet:
    """A variable with ``m`` known shift instances ``x@0..x@(m-1)`` at the instant; ``top`` is
    the unknown instance ``x@m`` when the instant computes it."""
    name: str
    m: int
    known: tuple
    top: sp.Symbol | None


@dataclass(frozen=True)
class RestartProblem:
    """One restart instant: labelled shift-form equations, unknown and known instance symbols,
    the jets of the known variables, and, per equation, the once-less-shifted instance when it is
    a fact (``"fact"``) or was erased at this instant (``"erased"``)."""
    label: str
    equations: tuple
    unknowns: tuple
    jets: tuple
    d: sp.Symbol
    lower: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)

    def jet_substitution(self) -> dict:
        """Known instances written through the standard left-limit jets."""
        sub = {}
        for j in self.jets:
            for i, s in enumerate(j.known):
                sub[s] = sum(comb(i, k) * self.d ** k * left(j.name, k) for k in range(i + 1))
        return sub

    def top_substitution(self, level: str) -> dict:
        """``x@m`` through the new top jet (``level="jet"``) or as the new value
        (``level="shift"``)."""
        sub = {}
        ks = self.jet_substitution()
        for j in self.jets:
            if j.top is None:
                continue
            m = j.m
            if level == "shift" or m == 1:
                sub[j.top] = right(j.name, 0)
            else:
                # Delta^(m-1) x@1 = d^(m-1) z, solved for x@m (the i = m-1 term)
                z = right(j.name, m - 1)
                rest = sum((-1) ** (m - 1 - i) * comb(m - 1, i) * j.known[1 + i]
                           for i in range(m - 1 - 1 + 1) if 1 + i < m)
                sub[j.top] = (self.d ** (m - 1) * z - rest).xreplace(ks)
        return sub

    def targets(self, level: str) -> dict:
        """The right-limit symbols the instant determines, by variable name."""
        out = {}
        for j in self.jets:
            if j.top is not None:
                out[j.name] = right(j.name, 0 if (level == "shift" or j.m == 1) else j.m - 1)
        return out


def split_problem(problem: RestartProblem) -> list[RestartProblem]:
    """The independent parts of a restart system: connected components of the graph whose
    vertices are the equations, two equations being linked when they share an unknown. A
    block-diagonal restart system is standardized part by part (smaller impulse analyses)."""
    unknowns = set(problem.unknowns)
    classes = classes_sharing_keys([e.free_symbols & unknowns for _, e in problem.equations])
    if len(classes) <= 1:
        return [problem]
    out = []
    for idx in classes:
        eqs = tuple(problem.equations[i] for i in idx)
        syms = set().union(*(e.free_symbols for _, e in eqs))
        unk = tuple(s for s in problem.unknowns if s in syms)
        jets = tuple(
            StateJet(name=j.name, m=j.m, known=j.known, top=j.top if j.top in syms else None)
            for j in problem.jets
        )
        labels = {lab for lab, _ in eqs}
        out.append(
            RestartProblem(
                label=problem.label,
                equations=eqs,
                unknowns=unk,
                jets=jets,
                d=problem.d,
                lower={k: v for k, v in problem.lower.items() if k in labels},
                params=problem.params,
            )
        )
    return out


def presolve(problem: RestartProblem) -> tuple[RestartProblem, dict]:
    """Eliminate the algebraic unknowns that an equation gives explicitly from known values, with
    no d (``c = 0``, ``x1 = R1*j1`` with j1 known): their values are finite or zero (never
    impulsive) and substituting them only shrinks (and often decouples) the restart system.
    Repeated to a fixpoint, each time with the first such equation in the system's order; an
    equation is examined again only when a substitution changed it (a circuit of a few hundred
    equations was re-expanded whole after each elimination: MSL 3.1 NandGate). Returns the
    reduced problem and ``{instance symbol: value}``."""
    tops = {j.top for j in problem.jets if j.top is not None}
    unk = set(problem.unknowns)
    eqs = dict(enumerate(problem.equations))
    users: dict = {}
    for i, (_lab, e) in eqs.items():
        for s in e.free_symbols & unk:
            users.setdefault(s, []).append(i)
    eligible = {}
    for i, (_lab, e) in eqs.items():
        found = _explicit_unknown(e, unk, tops, problem.d)
        if found is not None:
            eligible[i] = found
    solved: dict = {}
    while eligible:
        i = min(eligible)
        u, val = eligible.pop(i)
        del eqs[i]
        unk.discard(u)
        solved[u] = val              # val reads no unknown: earlier values stay as they are
        for k in users.pop(u, ()):
            if k not in eqs:
                continue
            lab, q = eqs[k]
            eqs[k] = (lab, q.xreplace({u: val}))
            found = _explicit_unknown(eqs[k][1], unk, tops, problem.d)
            if found is None:
                eligible.pop(k, None)
            else:
                eligible[k] = found
    if not solved:
        return problem, {}
    kept = tuple(eqs[i] for i in sorted(eqs))
    labels = {lab for lab, _ in kept}
    reduced = RestartProblem(
        label=problem.label,
        equations=kept,
        unknowns=tuple(s for s in problem.unknowns if s in unk),
        jets=problem.jets,
        d=problem.d,
        lower={k: v for k, v in problem.lower.items() if k in labels},
        params=problem.params,
    )
    return reduced, solved


def _explicit_unknown(e: sp.Expr, unk: set, tops: set, d: sp.Symbol):
    """``(u, value)`` when ``e = 0`` is linear in its only unknown ``u`` (not a top instance)
    with a coefficient of known values and no d, and the value has no if-expression; otherwise
    None. Such a value is left to its equation: substituted into the conditions of other
    if-expressions it makes sympy simplify ever larger nested conditions (MSL 3.1 NandGate's
    MOSFETs, where ``ugst`` enters the conditions of ``id``: no answer in 600 s), and leaving
    an equation in the system changes nothing of its solution."""
    us = e.free_symbols & unk
    if len(us) != 1:
        return None
    u = next(iter(us))
    if u in tops or d in e.free_symbols:
        return None
    ex = sp.expand(e)
    a = ex.diff(u)
    if a == 0 or a.free_symbols & (unk | {d}):
        return None
    b = ex.xreplace({u: 0})
    if sp.expand(ex - a * u - b) != 0:
        return None                   # not linear in u
    val = -b / a
    return None if val.has(sp.Piecewise) else (u, val)
