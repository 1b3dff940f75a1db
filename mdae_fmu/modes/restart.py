"""From a structural instant to its symbolic restart problem (the input of `mdae_fmu.impulse`).

docs/theory.md §9 and docs/theory.md §9.1: the restart system of a
mode-change instant is the solved part H (BTF blocks) in shift form; the known instances are the
left limits and the erased equations (SolveConflict's beta_O) are what the impulse analysis
starts from (RR-9334 §10.1.2).
"""

from __future__ import annotations

from ..impulse.problem import RestartProblem, StateJet
from .runs import Instant, eq_label
from .shiftform import ShiftForm, parameter_values


def restart_problem(sf: ShiftForm, inst: Instant, label: str = "") -> RestartProblem:
    """The `RestartProblem` of one instant (form (125), docs/theory.md §9.1): H in BTF order,
    unknown and known instance symbols, the jets of the known variables, and the lower-shift
    facts / erasures of each equation."""
    order = [k for b in inst.blocks for k in b.equations]
    eqs = tuple((eq_label(k), sf.equation(k)) for k in order)
    unknowns = tuple(sf.X(n, j) for n, j in sorted(inst.unknowns))
    by_var: dict[str, set[int]] = {}
    for n, j in inst.known:
        by_var.setdefault(n, set()).add(j)
    jets = []
    for n in sorted(by_var):
        m = 0
        while m in by_var[n]:
            m += 1
        top = sf.X(n, m) if (n, m) in inst.unknowns else None
        jets.append(StateJet(name=n, m=m, known=tuple(sf.X(n, j) for j in range(m)), top=top))
    lower = {}
    for k in order:
        e, s = k
        if s >= 1 and (e, s - 1) in inst.facts:
            lower[eq_label(k)] = ("fact", sf.equation((e, s - 1)))
        elif s >= 1 and (e, s - 1) in inst.erased:
            lower[eq_label(k)] = ("erased", sf.equation((e, s - 1)))
    return RestartProblem(
        label=label,
        equations=eqs,
        unknowns=unknowns,
        jets=tuple(j for j in jets if j.m > 0),
        d=sf.d,
        lower=lower,
        params=parameter_values(sf.system),
    )
