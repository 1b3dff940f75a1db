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

Parts (docs/theory.md §4.10). The check is made separately on each connected component of
the model's graph (`connected_parts`: equations joined to the unknowns they read in any branch
or condition and to the atoms of their conditions, atoms joined when their consistency can
depend on each other; the components without atoms gathered into one part): the Σ-method of a
mode, of a union, and the consistent modes are the union or product of the parts', so
(a)–(c) for a set of atoms hold iff they hold in every part for its own atoms, and a part's
modes are the valuations of its own atoms. As before the decomposition, a singular mode
anywhere refutes every union (the whole model's mode containing it is singular): the parts
without a demoted atom must have regular modes (a part without candidates and with more than
`MAX_ENUMERATED_MODES` modes is not checked and refutes nothing; the later analysis reports
its singular modes).

Cost: a part with at most `ENUMERATE_UP_TO` (2^8) consistent valuations of its atoms
(`enumerate_valuations`) costs at most one Σ-method per mode, of the part's size, each
computed when a group first needs it, so a union that fails stops at its first differing
group, and one per union tried, before any mode-change analysis. n independent cells cost 2n
small Σ-methods, not 2^n (the enumeration of the whole model stopped at 2^12: 13 cells under
``noEvent`` were refused, docs/multimode.md, "Acceptance of issue 26", stop 43). A part with
more is checked on formulas over its atoms (`mdae_fmu.implicit.demotion.SymbolicPart`,
docs/theory.md §4.11), whatever the number of its modes: one labelled Σ-method of the part
over all its modes, then for each union tried a quantification of its offsets and, unless
that refutes it, one labelled Σ-method of the union (one component of 13 coupled cells, 8 192
modes: demoted, where the enumeration stopped at 2^12 and kept them structural;
HeatingNPN_OrGate's 12 atoms, 4 096 modes: 0.7 s instead of 10 s of Σ-methods). Below 2^9
modes the enumeration is the cheaper (the formulas cost the import of ``dd`` and a BDD
operation per entry). A part without candidates is enumerated only to check that its modes
are regular, up to `MAX_ENUMERATED_MODES`. All candidates are tried together first; when
that fails, each part's atoms are tried
greedily in order of appearance: an atom is kept when (a)–(c) hold in its part for the atoms of
the part kept so far with it. Either way the check is made group by group (a group being the
valuations that agree outside the demoted atoms), so a set of atoms demoted together is checked
together, not only one toggle at a time (on formulas the rule is the same, decided by one
check when the atoms that pass its necessary tests alone hold together: the check is
monotone, docs/theory.md §4.11). The verdict is the one of the enumeration of the whole model
wherever that enumeration ran (tests/structure/test_demotion.py, the whole model as one part
for oracle, and every part on formulas against its enumeration).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from .. import expr as E
from ..ir import Equation, Model
from .signature import signature_graph
from .sigma import sigma_method
from .valuations import (MAX_ENUMERATED_MODES, TooManyModes, enumerate_valuations,
                         StructuralConditions, guard_definitions, long_guard_atoms_under,
                         specialize)
from .variables import VariableClasses, classify_variables, discrete_equation_flags

if TYPE_CHECKING:
    from ..implicit.demotion import SymbolicPart
    import scipy.sparse as sparse
    from scipy.sparse import csgraph
else:   # loaded on first use (`mdae_fmu.lazy_modules`): a model without conditions never needs them
    from ..lazy_modules import csgraph, sparse

# offsets of a mode: (equation ids, c, d); None for a mode without offsets (singular)
Offsets = tuple[tuple[str, ...], tuple[int, ...], tuple[int, ...]]

#: A part with candidates and more consistent valuations than this is checked on formulas
#: (`mdae_fmu.implicit.demotion.SymbolicPart`, docs/theory.md §4.11) instead of one Σ-method
#: per valuation (module docstring, "Cost"; the tests set 0, every such part on formulas, or
#: more, the enumeration as their oracle)
ENUMERATE_UP_TO = 2 ** 8


def demotable_atoms(model: Model, classes: StructuralConditions, candidates: Sequence[E.Expr]
                    ) -> tuple[E.Expr, ...]:
    """The atoms of ``candidates`` (structural by incidence only, `conditionals._Deferred`)
    that satisfy (a)–(c) of the module docstring under ``classes`` (the classification by
    incidence); in order of appearance. Checked part by part (`connected_parts`,
    docs/theory.md §4.10): the modes of one part are the valuations of its own atoms."""
    cls = classify_variables(model)
    discrete = frozenset(eq.id for eq, d in zip(model.equations, discrete_equation_flags(model))
                         if d)
    positions = [i for i, eq in enumerate(model.equations) if eq.id not in discrete]
    atoms = long_guard_atoms_under(model, [model.equations[i] for i in positions], classes)
    wanted = set(candidates)
    order = [a for a in atoms if a in wanted]
    if not order:
        return ()
    definitions = guard_definitions(model, cls)
    mentioning = _mentioning(model)
    parts: list[_Part | SymbolicPart] = []
    for eqs, unknowns, part_atoms in connected_parts(model, positions, cls.continuous, atoms,
                                                     definitions):
        own = [a for a in part_atoms if a in wanted]
        try:
            valuations, _ = enumerate_valuations(
                part_atoms, definitions, limit=ENUMERATE_UP_TO if own else MAX_ENUMERATED_MODES)
        except TooManyModes:
            if not own:
                continue      # not checked (module docstring, "Cost")
            # (the BDD analysis loaded only for a part this large: a model without such a
            # part never imports mdae_fmu.implicit, tests/workflows/test_startup_imports.py)
            from ..implicit.demotion import SymbolicPart
            symbolic = SymbolicPart(model, eqs, unknowns, part_atoms, own, definitions,
                                    mentioning)
            if symbolic.empty:
                return tuple(order)       # (as below)
            parts.append(symbolic)
            continue
        if not valuations:
            # no consistent mode at all: every union holds vacuously, as it did for the
            # enumeration of the whole model
            return tuple(order)
        system = _Modes(model, cls, discrete, eqs, unknowns)
        parts.append(_Part(system, valuations, own, mentioning))
    # the parts with candidates first: a failing union is found before the other parts'
    # modes are computed (those only need to be regular, (a) with nothing demoted)
    parts.sort(key=lambda p: not p.candidates)
    if all(p.holds(p.candidates) for p in parts):
        tried = {a for p in parts for a in p.candidates}
        return tuple(a for a in order if a in tried)   # the common case: all of them
    kept: set[E.Expr] = set()
    for p in parts:
        kept.update(p.greedy())
    # a singular mode of any part refutes every union (the whole model's mode is singular)
    if not kept or not all(p.holds([]) for p in parts if kept.isdisjoint(p.candidates)):
        return ()
    return tuple(a for a in order if a in kept)


def connected_parts(model: Model, positions: Sequence[int], continuous: Sequence[str],
                    atoms: Sequence[E.Expr], definitions: Mapping[E.Expr, E.Expr]
                    ) -> list[tuple[list[int], list[str], list[E.Expr]]]:
    """The equations (positions in ``model.equations`` among ``positions``), unknowns (of
    ``continuous``) and atoms (of ``atoms``) of the parts of the model whose Σ-methods are
    independent (docs/theory.md §4.10), each in its given order: the connected components of
    the graph joining an equation to every unknown it reads in any branch or condition (its
    signature row with the if-expressions kept whole, which contains the row of the equation
    in every mode and in every union), to the sub-expressions (numbers aside) of its
    conditions and guards, and an atom to the sub-expressions of its Boolean definition
    (`guard_definitions`). Atoms whose consistency can depend on each other (relations on a
    shared expression, a composite and its parts, a definition: `valuations._GuardFacts`)
    share a sub-expression, so the consistent valuations of the whole are the product of the
    parts'. The components without atoms are gathered into one part (one mode, one
    Σ-method); a part with atoms keeps its own."""
    eqs = [model.equations[i] for i in positions]
    ne, nv = len(eqs), len(continuous)
    g = signature_graph(eqs, continuous, model=model)[0]
    csr = g.csr()
    rows: list[Any] = [np.repeat(np.arange(ne, dtype=np.int64), np.diff(csr.indptr)),
                       np.arange(ne + nv, dtype=np.int64)]
    cols: list[Any] = [np.asarray(csr.indices, dtype=np.int64) + ne,
                       np.arange(ne + nv, dtype=np.int64)]
    symbol: dict[E.Expr, int] = {}
    extra_r: list[int] = []
    extra_c: list[int] = []

    def link(node: int, e: E.Expr) -> None:
        for sub in E.walk(e):
            if isinstance(sub, E.Const) and not isinstance(sub.value, bool):
                continue
            extra_r.append(node)
            extra_c.append(symbol.setdefault(sub, ne + nv + len(symbol)))

    for k, (i, eq) in enumerate(zip(positions, eqs)):
        for lit in eq.guard:
            link(k, lit.cond)
        for cond in model.if_conditions[i]:
            link(k, cond)
    for a in atoms:
        node = symbol.setdefault(a, ne + nv + len(symbol))
        link(node, a)
        d = definitions.get(a)
        if d is not None:
            link(node, d)
    rows.append(np.asarray(extra_r, dtype=np.int64))
    cols.append(np.asarray(extra_c, dtype=np.int64))
    n = ne + nv + len(symbol)
    r, c = np.concatenate(rows), np.concatenate(cols)
    graph = sparse.coo_matrix((np.ones(len(r), dtype=np.int8), (r, c)), shape=(n, n))
    labels = csgraph.connected_components(graph, directed=False)[1]
    atom_label = {a: int(labels[symbol[a]]) for a in atoms}
    with_atoms = set(atom_label.values())
    rest = -1                       # the label of the part without atoms
    parts: dict[int, tuple[list[int], list[str], list[E.Expr]]] = {}

    def part(label: int) -> tuple[list[int], list[str], list[E.Expr]]:
        return parts.setdefault(label if label in with_atoms else rest, ([], [], []))

    for k, i in enumerate(positions):
        part(int(labels[k]))[0].append(i)
    for j, x in enumerate(continuous):
        part(int(labels[ne + j]))[1].append(x)
    for a in atoms:
        part(atom_label[a])[2].append(a)
    return list(parts.values())


class _Modes:
    """Specialization and Σ-method of the modes of one part of a model (`valuations.specialize`
    restricted to the part's equations, `signature.signature_graph` over its unknowns,
    `sigma.sigma_method`), as the per-mode stage does them for the whole model."""

    def __init__(self, model: Model, classes: VariableClasses, discrete: frozenset[str],
                 positions: Sequence[int], unknowns: Sequence[str]):
        self.model, self.classes, self.discrete = model, classes, discrete
        self.positions, self.unknowns = positions, unknowns

    def equations(self, valuation: Mapping[E.Expr, bool]) -> list[Equation]:
        return specialize(self.model, valuation, classes=self.classes,
                          discrete_ids=self.discrete, only=self.positions)

    def offsets(self, valuation: Mapping[E.Expr, bool]) -> Offsets | None:
        """Canonical offsets of the mode selected by ``valuation`` (None if singular)."""
        return self.offsets_of(self.equations(valuation))

    def offsets_of(self, eqs: list[Equation]) -> Offsets | None:
        """Canonical offsets (equation ids, c, d) of the system ``eqs`` over the part's
        unknowns; None if singular (a regular system is square)."""
        if len(eqs) != len(self.unknowns):
            return None
        if not eqs:
            return ((), (), ())
        res = sigma_method(signature_graph(eqs, self.unknowns)[0])
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


class _Part:
    """One part of the model (`connected_parts`) with its consistent valuations, the
    candidates among its atoms, and the verdicts of (a)–(c) already found."""

    def __init__(self, system: _Modes, valuations: Sequence[Mapping[E.Expr, bool]],
                 candidates: list[E.Expr], mentioning: Mapping[E.Expr, frozenset[str]]):
        self.system, self.valuations, self.candidates = system, valuations, candidates
        self.offsets = _LazyOffsets(system, valuations)
        self.mentioning = mentioning
        self.verdicts: dict[frozenset[E.Expr], bool] = {}

    def greedy(self) -> list[E.Expr]:
        """The candidates kept one by one in order of appearance, each when (a)–(c) hold
        for it with those kept before it (module docstring, "Cost")."""
        mine: list[E.Expr] = []
        for a in self.candidates:
            if self.holds(mine + [a]):
                mine.append(a)
        return mine

    def holds(self, demoted: Sequence[E.Expr]) -> bool:
        """(a)–(c) in this part for the atoms ``demoted`` (of this part) together; with
        none, whether every mode of the part is regular (`_union_holds`)."""
        key = frozenset(demoted)
        if not key:
            # (with nothing demoted each group is one mode, its own union)
            return all(self.offsets[i] is not None for i in range(len(self.valuations)))
        if key not in self.verdicts:
            ids = frozenset().union(*(self.mentioning.get(a, frozenset()) for a in key))
            self.verdicts[key] = _union_holds(self.system, self.valuations, self.offsets, key,
                                              ids)
        return self.verdicts[key]


def _mentioning(model: Model) -> dict[E.Expr, frozenset[str]]:
    """For each if-condition atom (``not`` stripped), the ids of the model's equations with
    an if-expression on it (`_mentions`)."""
    out: dict[E.Expr, set[str]] = {}
    for eq, conds in zip(model.equations, model.if_conditions):
        for c in conds:
            out.setdefault(E.strip_not(c)[0], set()).add(eq.id)
    return {a: frozenset(ids) for a, ids in out.items()}


def _union_holds(system: _Modes, valuations: Sequence[Mapping[E.Expr, bool]],
                 offsets: _LazyOffsets, demoted: frozenset[E.Expr], mentioning: frozenset[str]
                 ) -> bool:
    """Conditions (a)–(c) of the module docstring for the atoms ``demoted`` together, in one
    part of the model: for every group of valuations that agree outside ``demoted``, one
    regular offset vector shared by the group and by the group's union system, with c = 0 on
    its equations that contain a demoted atom (``mentioning``: the ids of the model's
    equations with an if-expression on one). The groups are checked one after the other,
    each mode's offsets computed when its group is reached (`_LazyOffsets`): the first
    failure decides."""
    # (c) in every mode, also where another atom masks the demoted one: an equation whose
    # branch is chosen by a demoted atom is then never differentiated, so no restart system
    # (docs/theory.md §11) contains the atom's if-expression
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
