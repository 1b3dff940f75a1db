"""The demotion check of one connected part, made on formulas over the part's atoms instead of
one Σ-method per mode (docs/theory.md §4.11; `mdae_fmu.structure.demotion`, conditions
(a)–(c) of its module docstring).

`mdae_fmu.structure.demotion` checks each connected part of a model (docs/theory.md §4.10)
with the consistent valuations of its own atoms, one Σ-method per valuation. A part whose
atoms have more than `MAX_ENUMERATED_MODES` consistent valuations (13 semiconductor-like cells
coupled into one component: 8 192) is checked here, with the one (BDD) analysis of
`mdae_fmu.implicit.sigma`, on two labelled signature graphs over the part's equations and
unknowns, both with the care set of all the part's atoms (`GuardSpace`):

* the *modes* graph: every if-expression whose condition the part's atoms decide is split
  into its branches, each branch's entries labelled by the formula of the modes that select
  it, as `mdae_fmu.structure.valuations.specialize` selects them in one mode;
* the *union* graph of a set D of demoted atoms: the same, but a condition is decided by the
  other atoms only (D left undecided, as `specialize` leaves the atoms a valuation does not
  give): an if-expression on an atom of D is kept whole, its entries the maximum over its
  branches and condition (`signature.signature_row`), in the modes of each group (the
  valuations that agree outside D).

`transversal` gives the canonical offsets of every mode of each graph as case functions
``{value: formula}``. The atoms D are demotable (docs/theory.md §4.11) iff no mode of the
modes graph is singular, no mode of the union graph is singular, every case function of the
union's offsets equals the modes graph's, and every equation with an if-expression on an atom
of D has c = 0 in every mode. Two cheaper refutations come first: each case formula of the
modes graph must be invariant under existential quantification over D (the offsets do not
depend on D), and the c = 0 test; only then is the union graph built and analysed. The modes
graph is the same for every D: analysed once per part.

The care set is `GuardSpace`'s, the one the implicit analysis of the model uses: the rules of
the enumeration's `consistent_valuation` as constraints, plus the exclusion of three relations
that no point satisfies (`GuardSpace._plane_constraint`), which the enumeration does not
apply; a part checked here therefore has the modes the later analysis has.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from .. import expr as E
from ..ir import Model
from ..structure.signature import signature_row
from ..structure.valuations import fixed_guard_values, is_composite
from ..structure.zero_terms import drop_zero_terms
from .formulas import GuardSpace
from .sigma import LabelledGraph, add_guarded_entries, transversal

# the truth of a condition as (formula where it is true, formula where it is false); in the
# modes of neither the condition is undecided (the if-expression kept whole)
Truth = tuple[Any, Any]


class SymbolicPart:
    """One part of a model (`structure.demotion.connected_parts`) checked on formulas (module
    docstring): ``holds(demoted)`` answers what `structure.demotion._union_holds` answers
    for the part's consistent valuations, and with nothing demoted whether every mode of the
    part is structurally regular. ``empty``: the part has no consistent mode (every union
    then holds vacuously, as for an enumeration that finds no valuation)."""

    def __init__(self, model: Model, positions: Sequence[int], unknowns: Sequence[str],
                 atoms: Sequence[E.Expr], candidates: Sequence[E.Expr],
                 definitions: Mapping[E.Expr, E.Expr],
                 mentioning: Mapping[E.Expr, frozenset[str]]):
        self.model = model
        self.positions = list(positions)
        self.unknowns = list(unknowns)
        self.candidates = list(candidates)
        self.mentioning = mentioning
        self.space = GuardSpace(list(atoms), fixed_guard_values(atoms), definitions)
        self.bdd = self.space.bdd
        self.care = self.space.care
        self.empty = self.care == self.bdd.false
        # the free atoms (a fixed one, a constant or an event guard, is a constant formula)
        self.free = {a: self.space.var_of[a] for a in self.space.atoms}
        self.verdicts: dict[frozenset[E.Expr], bool] = {}
        self._modes: tuple[bool, Any] | None = None

    # --- the two graphs -----------------------------------------------------------------
    def truth(self, c: E.Expr, undecided: frozenset[E.Expr]) -> Truth:
        """The truth of condition ``c`` under the part's atoms less ``undecided``: the
        three-valued `structure.valuations.eval_condition` (a valued atom, a Boolean
        constant, ``not``, and/or from their parts; anything else undecided), on formulas."""
        b = self.bdd
        base, positive = E.strip_not(c)
        if base is not c:
            t, f = self.truth(base, undecided)
            return (t, f) if positive else (f, t)
        fixed = self.space.fixed.get(c)
        if fixed is not None:
            return (b.true, b.false) if fixed else (b.false, b.true)
        name = self.free.get(c)
        if name is not None and c not in undecided:
            v = b.var(name)
            return v, ~v
        if isinstance(c, E.Const) and isinstance(c.value, bool):
            return (b.true, b.false) if c.value else (b.false, b.true)
        if is_composite(c):
            lt, lf = self.truth(c.left, undecided)
            rt, rf = self.truth(c.right, undecided)
            return ((lt & rt, lf | rf) if c.op == "and" else (lt | rt, lf & rf))
        return b.false, b.false

    def graph(self, undecided: frozenset[E.Expr]) -> LabelledGraph | None:
        """The labelled signature graph of the part's equations over its unknowns with the
        conditions decided by the atoms outside ``undecided`` (module docstring); None when
        some equation's guard is not decided there (no group has one system)."""
        b, care = self.bdd, self.care
        col = {x: j for j, x in enumerate(self.unknowns)}
        rows, sig, present = [], [], []
        truths: dict[E.Expr, Truth] = {}

        def truth(c: E.Expr) -> Truth:
            if c not in truths:
                truths[c] = self.truth(c, undecided)
            return truths[c]

        for i in self.positions:
            eq = self.model.equations[i]
            f = care
            for lit in eq.guard:
                t, fl = truth(lit.cond)
                if care & ~(t | fl) != b.false:
                    return None
                f &= t if lit.positive else fl
            row: dict[int, dict[int, Any]] = {}
            pieces = (select_cases(b, eq.residual, f, truth) if self.model.if_conditions[i]
                      else [(f, eq.residual)])
            for bf, res in pieces:
                # (a branch's literal-zero coefficients read nothing, as in `specialize`)
                entries = signature_row(res if res is eq.residual else drop_zero_terms(res))
                add_guarded_entries(row, entries, col, bf)
            rows.append(eq.id)
            sig.append(row)
            present.append(f)
        return LabelledGraph(bdd=b, care=care, rows=rows, cols=self.unknowns, sig=sig,
                             present=present)

    def offsets(self, undecided: frozenset[E.Expr]) -> tuple[list[Any], list[Any]] | None:
        """The canonical offsets (c, d) of every mode of the graph (`graph`) as case
        functions; None when some mode is structurally singular (or a guard undecided)."""
        g = self.graph(undecided)
        if g is None:
            return None
        m, off = transversal(g)
        if m.singular != self.bdd.false or off.undecided != self.bdd.false:
            return None
        return off.c, off.d

    def modes(self) -> tuple[bool, Any]:
        """(every mode regular, the modes graph's offsets), computed once."""
        if self._modes is None:
            off = self.offsets(frozenset())
            self._modes = (off is not None, off)
        return self._modes

    # --- the check ----------------------------------------------------------------------
    def holds(self, demoted: Sequence[E.Expr]) -> bool:
        """(a)–(c) of `structure.demotion` for the atoms ``demoted`` (of this part)
        together, on formulas (module docstring); with none, whether every mode of the part
        is regular."""
        key = frozenset(demoted)
        if key not in self.verdicts:
            self.verdicts[key] = self.empty or self._holds(key)
        return self.verdicts[key]

    def greedy(self) -> list[E.Expr]:
        """The greedy rule of `structure.demotion` (each candidate in order kept when the
        check holds for it with those kept before it), with one check where it can: the
        check is monotone (docs/theory.md §4.11: it holds for every subset of a set for which
        it holds, and fails for every superset of an atom that fails the cheap tests alone),
        so when it holds for the atoms that pass the cheap tests alone, those are the greedy
        rule's answer; otherwise the rule is run step by step."""
        if self.empty:
            return list(self.candidates)
        if not self.modes()[0]:
            return []
        alone = [a for a in self.candidates if self._cheap(frozenset([a]))]
        if self.holds(alone):
            return alone
        mine: list[E.Expr] = []
        for a in self.candidates:
            if self.holds(mine + [a]):
                mine.append(a)
        return mine

    def _holds(self, demoted: frozenset[E.Expr]) -> bool:
        if not self.modes()[0]:
            return False
        if not demoted:
            return True
        if not self._cheap(demoted):
            return False
        # (a), (b): the union of each group is regular with the group's offsets
        c, d = self.modes()[1]
        union = self.offsets(demoted)
        return union is not None and union[0] == c and union[1] == d

    def _cheap(self, demoted: frozenset[E.Expr]) -> bool:
        """The necessary conditions tested before the union: the offsets of the modes do
        not depend on the atoms ``demoted`` within a group, and (c)."""
        c, d = self.modes()[1]
        b, care = self.bdd, self.care
        names = [self.free[a] for a in demoted if a in self.free]
        # (a) cheaply refuted: an offset whose formula depends on a demoted atom (each
        # distinct formula once; the care set itself is a union of whole groups)
        seen = {care}
        for case in (*c, *d):
            for f in case.values():
                if f not in seen:
                    if b.exist(names, f) & care != f:
                        return False
                    seen.add(f)
        # (c): c = 0 in every mode on the equations with an if-expression on a demoted atom
        ids = frozenset().union(*(self.mentioning.get(a, frozenset()) for a in demoted))
        for eq_id, case in zip(self.rows(), c):
            if eq_id.split("|")[0] in ids and any(v > 0 and f != b.false
                                                  for v, f in case.items()):
                return False
        return True

    def rows(self) -> list[str]:
        return [self.model.equations[i].id for i in self.positions]


def select_cases(bdd: Any, e: E.Expr, f: Any, truth: Callable[[E.Expr], Truth]
                 ) -> list[tuple[Any, E.Expr]]:
    """``[(formula, expression)]``: ``e`` with its if-expressions replaced by the branch
    their condition selects, for the modes of each formula (disjoint, covering ``f``): the
    symbolic form of `structure.valuations.specialize`'s selection, node by node (a decided
    condition takes its branch without looking at the other; an undecided one keeps the
    if-expression with its parts selected). A sub-tree where nothing is selected is returned
    as the same object."""
    F = bdd.false
    if isinstance(e, E.If):
        t, fl = truth(e.cond)
        out: list[tuple[Any, E.Expr]] = []
        for g, branch in ((f & t, e.then), (f & fl, e.orelse)):
            if g != F:
                out += select_cases(bdd, branch, g, truth)
        rest = f & ~t & ~fl
        if rest != F:
            for g1, c in select_cases(bdd, e.cond, rest, truth):
                for g2, a in select_cases(bdd, e.then, g1, truth):
                    for g3, x in select_cases(bdd, e.orelse, g2, truth):
                        same = c is e.cond and a is e.then and x is e.orelse
                        out.append((g3, e if same else E.If(c, a, x)))
        return out
    if isinstance(e, E.BinOp):
        return [(g2, e if (a is e.left and x is e.right) else E.BinOp(e.op, a, x))
                for g1, a in select_cases(bdd, e.left, f, truth)
                for g2, x in select_cases(bdd, e.right, g1, truth)]
    if isinstance(e, E.UnOp):
        return [(g, e if a is e.arg else E.UnOp(e.op, a))
                for g, a in select_cases(bdd, e.arg, f, truth)]
    if isinstance(e, E.Der):
        return [(g, e if a is e.arg else E.Der(a)) for g, a in select_cases(bdd, e.arg, f, truth)]
    if isinstance(e, E.Call):
        done: list[tuple[Any, tuple[E.Expr, ...]]] = [(f, ())]
        for arg in e.args:
            done = [(g2, args + (a,)) for g1, args in done
                    for g2, a in select_cases(bdd, arg, g1, truth)]
        return [(g, e if all(x is y for x, y in zip(args, e.args)) else E.Call(e.func, args))
                for g, args in done]
    return [(f, e)]


__all__ = ["SymbolicPart", "select_cases"]
