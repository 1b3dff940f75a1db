"""Demotion of conditions that are structural by incidence only but leave every mode's
structure unchanged (issue 13; docs/decisions.md, "Demoting conditions of one structure").

`mdae_fmu.structure.conditionals` calls a condition structural when two branches of an
if-expression read different unknowns or orders. The Modelica Standard Library's
semiconductors are written ``ibc = smooth(1, if vbc/Vt < EMin then Is*(ExMin*(...)) + ... else
...)`` where ``ExMin = exp(EMin)`` is an unknown read by one branch only: each of these
conditions doubles the modes (DifferenceAmplifier: 8 atoms, 256 modes) although every mode has
the same offsets, states and blocks, and the mode-change analysis over all their transitions
does not finish. A condition atom ``a`` of that kind (not an if-equation guard, not a
when-condition, no event operator) is demoted to the event-only class (no-event class under
``noEvent``) when, for the modes of the remaining structural atoms,

(a) every mode ``mu`` it covers (the valuations of all structural atoms that agree with ``mu``
    outside the demoted atoms: the "branches") is structurally regular and has the same
    canonical Pryce offsets (c, d) (docs/theory.md §4: the elementwise smallest dual
    solution, Pryce Thm 3.6);
(b) the union system of ``mu`` (the demoted if-expressions kept whole, whose signature
    entry is the entry-wise maximum over the branches and the condition, as for every
    event-only if-expression, `signature.signature_graph`) has those same offsets; and
(c) every equation that contains a demoted atom has c = 0 there (it is never
    differentiated).

Why the union then stands for every branch (docs/theory.md §4, §5.3, §11):

* Offsets. For a branch β, (c, d) is dual feasible (d_j − c_i ≥ σ^β_ij) with a tight
  transversal M_β. For the union σ^U ≥ σ^β entry-wise; when (c, d) is also feasible for σ^U
  (condition (b) checks it, and it holds by itself when the condition reads no derivative,
  since c = 0 there), M_β stays tight (σ^β ≤ σ^U ≤ d − c on M_β), so (c, d) is optimal for U;
  conversely U's canonical offsets are feasible for β with the same value Val, hence optimal
  for β, hence ≥ (c, d) by minimality: the canonical offsets coincide. (b) computes them.
* Blocks. The leading pattern of β (its tight edges) is contained in U's. U's block-triangular
  form (docs/theory.md §2.3, §4.6: the evaluation order of the long-mode right-hand side) stays
  block triangular for the sub-pattern of β, and β is structurally nonsingular on it (M_β); a
  perfect matching of a sub-pattern of a block-triangular pattern lies in the diagonal blocks, so
  every diagonal block of U's BTF is structurally nonsingular in every branch. In particular a 1×1
  block {e; x} is matched e–x in every branch: no branch lacks the unknown its scalar block solves
  for (and the code generator solves an equation for x explicitly only where x occurs linearly
  outside every if-expression, `codegen.blocks.linear_terms`; otherwise by Newton, whose Jacobian
  is then the branch's).
* Mode changes. With c = 0 on every equation containing the atom, no latent or consistency
  equation (f^(k), k < c_f: RR-9334 Def 24, docs/theory.md §4.6) contains it; states and leading
  variables are the same on both sides, so toggling the atom is the change of an event-only
  condition (docs/theory.md §11: the relation is held between events and watched by an event
  indicator; at the event the same block-triangular system is solved again with the other
  branch), not a mode change with a restart (docs/theory.md §11). OpenModelica always analyses this
  union.

Cost: at most one Σ-method per mode of the structural atoms (`enumerate_valuations`, at
most `MAX_ENUMERATED_MODES`; beyond that nothing is demoted), each computed when a group
first needs it, so a union that fails stops at its first differing group, and one per union
tried, before any mode-change analysis (an enumeration of modes on the product path, issue
26 Deliver 1: docs/multimode.md, "Acceptance of issue 26", stop 43). All candidates are
tried together first; when that fails, atoms are tried greedily in order of appearance: an
atom is kept when (a)–(c) hold for the atoms kept so far with it. Either way the check is
made group by group (a group being the valuations that agree outside the demoted atoms), so
a set of atoms demoted together is checked together, not only one toggle at a time.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .. import expr as E
from ..ir import Equation, Model
from .signature import signature_graph
from .sigma import sigma_method
from .valuations import (MAX_ENUMERATED_MODES, TooManyModes, enumerate_valuations,
                         StructuralConditions, guard_definitions, long_guard_atoms_under,
                         specialize)
from .variables import VariableClasses, classify_variables, discrete_equation_flags

# offsets of a mode: (equation ids, c, d); None for a mode without offsets (singular)
Offsets = tuple[tuple[str, ...], tuple[int, ...], tuple[int, ...]]


def demotable_atoms(model: Model, classes: StructuralConditions, candidates: Sequence[E.Expr]
                    ) -> tuple[E.Expr, ...]:
    """The atoms of ``candidates`` (structural by incidence only, `conditionals._Deferred`)
    that satisfy (a)–(c) of the module docstring under ``classes`` (the classification by
    incidence); in order of appearance."""
    cls = classify_variables(model)
    discrete = frozenset(eq.id for eq, d in zip(model.equations, discrete_equation_flags(model))
                         if d)
    dae = [eq for eq in model.equations if eq.id not in discrete]
    atoms = long_guard_atoms_under(model, dae, classes)
    wanted = set(candidates)
    order = [a for a in atoms if a in wanted]
    if not order:
        return ()
    try:
        valuations, _ = enumerate_valuations(atoms, guard_definitions(model, cls),
                                             limit=MAX_ENUMERATED_MODES)
    except TooManyModes:
        return ()
    system = _Modes(model, cls, discrete)
    offsets = _LazyOffsets(system, valuations)
    if _union_holds(system, valuations, offsets, frozenset(order)):
        return tuple(order)       # the common case: all of them, one union per group
    kept: list[E.Expr] = []
    for a in order:
        if _union_holds(system, valuations, offsets, frozenset(kept + [a])):
            kept.append(a)
    return tuple(kept)


class _Modes:
    """Specialization and Σ-method of the modes of one model (`valuations.specialize`,
    `signature.signature_graph`, `sigma.sigma_method`), as the per-mode stage does them."""

    def __init__(self, model: Model, classes: VariableClasses, discrete: frozenset[str]):
        self.model, self.classes, self.discrete = model, classes, discrete

    def equations(self, valuation: Mapping[E.Expr, bool]) -> list[Equation]:
        return specialize(self.model, valuation, classes=self.classes,
                          discrete_ids=self.discrete)

    def offsets(self, valuation: Mapping[E.Expr, bool]) -> Offsets | None:
        """Canonical offsets of the mode selected by ``valuation`` (None if singular)."""
        return self.offsets_of(self.equations(valuation))

    def offsets_of(self, eqs: list[Equation]) -> Offsets | None:
        """Canonical offsets (equation ids, c, d) of the system ``eqs``; None if singular."""
        res = sigma_method(signature_graph(eqs, self.classes.continuous)[0])
        if not res.ok or res.c is None or res.d is None:
            return None
        return (tuple(eq.id for eq in eqs), tuple(int(x) for x in res.c),
                tuple(int(x) for x in res.d))


class _LazyOffsets:
    """The offsets of each valuation (`_Modes.offsets`), each computed when first read: a
    union that fails is refuted by its first group that differs, without a Σ-method of
    every mode (the RLC ladder of 12 ideal diodes: a few Σ-methods instead of 4096)."""

    def __init__(self, system: _Modes, valuations: Sequence[Mapping[E.Expr, bool]]):
        self.system, self.valuations = system, valuations
        self.known: dict[int, Offsets | None] = {}

    def __getitem__(self, i: int) -> Offsets | None:
        if i not in self.known:
            self.known[i] = self.system.offsets(self.valuations[i])
        return self.known[i]


def _union_holds(system: _Modes, valuations: Sequence[Mapping[E.Expr, bool]],
                 offsets: _LazyOffsets, demoted: frozenset[E.Expr]) -> bool:
    """Conditions (a)–(c) of the module docstring for the atoms ``demoted`` together: for
    every group of valuations that agree outside ``demoted``, one regular offset vector
    shared by the group and by the group's union system, with c = 0 on its equations that
    contain a demoted atom. The groups are checked one after the other, each mode's offsets
    computed when its group is reached (`_LazyOffsets`): the first failure decides."""
    # (c) in every mode, also where another atom masks the demoted one: an equation whose
    # branch is chosen by a demoted atom is then never differentiated, so no restart system
    # (docs/theory.md §11) contains the atom's if-expression
    mentioning = {eq.id for eq in system.model.equations if _mentions(eq.residual, demoted)}
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, val in enumerate(valuations):
        # (every valuation lists the atoms in the same order: `enumerate_valuations`)
        key = tuple((a, v) for a, v in val.items() if a not in demoted)
        groups.setdefault(key, []).append(i)
    for key, members in groups.items():
        first = offsets[members[0]]
        # ((c) on the group's first mode is (c) on each of them once they all share its
        # offsets, checked next one mode at a time)
        if first is None or any(k > 0 and eq_id.split("|")[0] in mentioning
                                for eq_id, k in zip(first[0], first[1])):
            return False
        if any(offsets[i] != first for i in members[1:]):
            return False
        equations = system.equations(dict(key))
        if system.offsets_of(equations) != first:
            return False
        if any(k > 0 and _mentions(eq.residual, demoted) for eq, k in zip(equations, first[1])):
            return False
    return True


def _mentions(e: E.Expr, atoms: frozenset[E.Expr]) -> bool:
    """Whether an if-expression of ``e`` has its condition (``not`` stripped) in ``atoms``."""
    return any(isinstance(n, E.If) and E.strip_not(n.cond)[0] in atoms for n in E.walk(e))


__all__ = ["demotable_atoms"]
