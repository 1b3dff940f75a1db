"""Continuations of transient modes and the static bound on cascades of events.

docs/theory.md §7.3, §7.4 (RR-9334 §7.4.3; how ``X(mu)`` is identified is the project's reading):

* ``X(mu)``, the variables a transient mode *resets*: those whose next instance is defined by an
  equation enabled only when a transient guard is true (a reinit, or a when-equation mentioning
  ``x^o``), as in Example 47;
* ``M(Y)``, the transient guards whose definition reads (directly or through a derivative) a
  variable of Y;
* ``Continuations(mu_0)``: ``M_0`` = the transient guards true in mu_0, ``M_k = M(X(M_(k-1)))``
  minus the guards of ``M_(k-1)`` (a rising edge cannot hold at two consecutive instants,
  docs/theory.md §7.4); the chain must reach the empty set within ``|Gamma_transient| + 1`` steps
  (Assumption 4), otherwise E-CASCADE-INFINITE.
"""

from __future__ import annotations

from dataclasses import dataclass

from .normalize import Mode, MultimodeSystem


@dataclass(frozen=True)
class ContinuationChain:
    steps: tuple          # ((guard names), (reset variables)) per step
    finite: bool
    equations: tuple = ()     # ids of the equations that reset the variables, over all steps


def _resets(system: MultimodeSystem, guards: frozenset):
    """``(equation id, variables it resets)`` for the equations enabled only under transient
    guards of ``guards``: a reinit resets its variable, another when-equation the variables
    whose next instance it mentions (docs/theory.md §7.3)."""
    return [(e.id, vs) for e, lits, vs in _reset_equations(system) if lits <= guards]


def _reset_equations(system: MultimodeSystem):
    """``(equation, its transient guards, variables it resets)`` for every equation that a
    transient guard enables and that resets a variable (`_resets`)."""
    out = []
    for e in system.equations:
        lits = frozenset(i for i, p in e.guard if p and system.guards[i].kind == "transient")
        if not lits:
            continue
        vs = {e.reinit} if e.reinit else {n for n, k in e.orders if k >= 1}
        if vs:
            out.append((e, lits, vs))
    return out


def triggered_by(system: MultimodeSystem, variables: frozenset) -> frozenset:
    """``M(Y)``: transient guards whose definition reads a variable of Y (RR-9334 §7.4.3,
    docs/theory.md §7.4)."""
    return frozenset(i for i, g in enumerate(system.guards)
                     if g.kind == "transient" and (g.reads | _pre_reads(g)) & variables)


def _pre_reads(g) -> set:
    from .. import expr as E
    return E.refs(g.definition)


def continuations(system: MultimodeSystem, mode: Mode) -> ContinuationChain:
    """The chain ``M_0, M_1, ...`` of a transient mode (docs/theory.md §7.3) and whether it
    terminates."""
    cur = frozenset(i for i, (g, v) in enumerate(zip(system.guards, mode))
                    if v and g.kind == "transient")
    n_tr = sum(g.kind == "transient" for g in system.guards)
    steps = []
    eqs: list[str] = []
    for _ in range(n_tr + 2):
        rs = _resets(system, cur)
        xs = frozenset(v for _, vs in rs for v in vs)
        eqs.extend(e for e, _ in rs if e not in eqs)
        steps.append((tuple(system.guards[i].name for i in sorted(cur)), tuple(sorted(xs))))
        if not xs:
            return ContinuationChain(steps=tuple(steps), finite=True, equations=tuple(eqs))
        nxt = triggered_by(system, xs) - cur
        if not nxt:
            return ContinuationChain(steps=tuple(steps), finite=True, equations=tuple(eqs))
        cur = nxt
    return ContinuationChain(steps=tuple(steps), finite=False, equations=tuple(eqs))


def may_trigger(system: MultimodeSystem) -> dict[int, frozenset]:
    """For each transient guard i, the transient guards j != i that an instant where i holds
    may make true at the next one: those reading (`triggered_by`) a variable reset by an
    equation that i enables together with other transient guards (`_resets` over all of
    them). Every step ``M_k -> M_(k+1)`` of a chain (`continuations`) follows these edges (each
    guard of ``M_(k+1)`` is read from a reset of an equation whose transient guards are all
    in ``M_k``, and is not in ``M_k``), so when they have no cycle, every chain ends within
    ``|Gamma_transient|`` steps: no transient mode breaks Assumption 4 (docs/theory.md §7.4)."""
    out: dict[int, set] = {i: set() for i, g in enumerate(system.guards)
                           if g.kind == "transient"}
    for _, lits, vs in _reset_equations(system):
        hit = triggered_by(system, frozenset(vs))
        for i in lits:
            out[i] |= hit - {i}
    return {i: frozenset(js) for i, js in out.items()}
