"""The Σ-method computed once for all modes, on a signature graph whose entries carry the
formula of the modes where they hold (docs/theory.md §10.2, the implicit structural analysis of
IsamDAE; the Σ-method itself is docs/theory.md §4).

Values that depend on the mode are *case functions*: ``{value: BDD}`` with pairwise disjoint
formulas, undefined outside their union. Two algorithms, each the per-mode algorithm run on
all modes at once (every set operation on modes is a BDD operation):

* `symbolic_matching`: a maximum matching of the equations onto the unknowns in every mode,
  by augmenting paths (one breadth-first search per equation, its layers labelled by the modes
  reaching them). Modes in which some equation or unknown stays unmatched are structurally
  singular (docs/theory.md §10.2); the others have a perfect matching T(mode).
* `symbolic_offsets`: Pryce's fixpoint iteration for the offsets (docs/theory.md §4.1, §4.6):
  ``d_j = max_i σ_ij + c_i``, ``c_i = d_T(i) − σ_iT(i)``, from c = 0. Its least fixpoint is
  the canonical offsets when T is a highest-value transversal; when T is not, the iteration
  has no fixpoint (a positive cycle), values grow beyond any valid offset, and those modes are
  returned as *undecided* (the caller analyses them one by one).
"""

from __future__ import annotations

from typing import Any  # BDD nodes of the optional, untyped dd package
from dataclasses import dataclass


Case = dict          # value -> BDD, disjoint formulas


@dataclass
class LabelledGraph:
    """Signature graph over all modes: ``sig[i][j] = {σ_ij: formula}`` (σ_ij the highest
    derivative order of unknown j in equation i in the modes of the formula), ``present[i]``
    the formula of the modes in which equation i exists."""
    bdd: Any
    care: Any
    rows: list[str]
    cols: list[str]
    sig: list[dict[int, Case]]
    present: list[Any]

    def edge(self, i: int, j: int):
        b = self.bdd.false
        for f in self.sig[i][j].values():
            b |= f
        return b


@dataclass
class SymbolicMatching:
    """``match[i] = {j: formula}``: equation i is assigned unknown j in those modes;
    ``singular``: the modes with no perfect matching."""
    match: list[dict[int, Any]]
    singular: Any


def symbolic_matching(g: LabelledGraph, order=None, domain=None) -> SymbolicMatching:
    """Maximum matching in every mode of ``domain`` (default: the care set; module
    docstring). Equations are taken in ``order`` (default: the model's); each is first
    matched greedily (highest σ first, to start close to a highest-value transversal), then
    by one labelled breadth-first augmenting-path search for the modes left. An equation not
    matched when its search ends is never matched later (the classical argument for
    augmenting-path matching holds mode by mode), so the result is maximum in every mode."""
    b = g.bdd
    F = b.false
    n_r, n_c = len(g.rows), len(g.cols)
    care = g.care if domain is None else g.care & domain
    edges = [{j: g.edge(i, j) for j in g.sig[i]} for i in range(n_r)]
    match: list[dict[int, Any]] = [dict() for _ in range(n_r)]
    owner: list[dict[int, Any]] = [dict() for _ in range(n_c)]   # transpose of match
    matched = [F] * n_c
    unmatched_rows = F

    def assign(i, j, modes):
        match[i][j] = match[i].get(j, F) | modes
        owner[j][i] = owner[j].get(i, F) | modes

    def unassign(i, j, modes):
        match[i][j] = match[i][j] & ~modes
        owner[j][i] = owner[j][i] & ~modes

    for i0 in (range(n_r) if order is None else order):
        todo = g.present[i0] & care
        # greedy, highest order first
        for j, _s, f in sorted(((j, s, f) for j, cs in g.sig[i0].items() for s, f in cs.items()),
                              key=lambda t: -t[1]):
            if todo == F:
                break
            m = todo & f & ~matched[j]
            if m != F:
                assign(i0, j, m)
                matched[j] |= m
                todo &= ~m
        if todo == F:
            continue
        # breadth-first augmenting paths, layers labelled by modes
        frontier = {i0: todo}
        visited = [F] * n_c
        done = F
        parents_by_layer, ends_by_layer = [], []
        while frontier:
            parents: dict[int, dict[int, Any]] = {}
            reached: dict[int, Any] = {}
            for i, S in frontier.items():
                for j, e in edges[i].items():
                    m = S & e & ~visited[j] & ~reached.get(j, F)
                    if m == F:
                        continue
                    parents.setdefault(j, {})[i] = m
                    reached[j] = reached.get(j, F) | m
            ends: dict[int, Any] = {}
            nxt: dict[int, Any] = {}
            for j, R in reached.items():
                visited[j] |= R
                free = R & ~matched[j] & ~done
                if free != F:
                    ends[j] = free
                    done |= free
            for j, R in reached.items():
                R2 = R & matched[j] & ~done
                if R2 == F:
                    continue
                for i2, m in owner[j].items():
                    mm = R2 & m
                    if mm != F:
                        nxt[i2] = nxt.get(i2, F) | mm
            parents_by_layer.append(parents)
            ends_by_layer.append(ends)
            frontier = nxt
        # flip the paths, last layer first; a mode follows one path
        pending = [dict(e) for e in ends_by_layer]
        for L in range(len(pending) - 1, -1, -1):
            for j, q in pending[L].items():
                for i, pm in parents_by_layer[L][j].items():
                    m = q & pm
                    if m == F:
                        continue
                    if L > 0:
                        for j2, old in list(match[i].items()):
                            mm = m & old
                            if mm != F:
                                unassign(i, j2, mm)
                                pending[L - 1][j2] = pending[L - 1].get(j2, F) | mm
                    assign(i, j, m)
                    matched[j] |= m
        unmatched_rows |= todo & ~done
    singular = unmatched_rows
    for j in range(n_c):
        singular |= care & ~matched[j]
    match = [{j: f for j, f in row.items() if f != F} for row in match]
    return SymbolicMatching(match, singular & care)


def by_degree(g: LabelledGraph) -> list[int]:
    """The equations by increasing number of unknowns they read (ties in the model's
    order): the matching order of `transversal`'s first pass. An equation with one or two
    candidates (an ideal clutch's ``w_a = w_b``, a switch's ``i = 0``) takes its unknown
    before an equation with many options claims it, so augmenting paths stay short: taken
    in the model's order, each engaged clutch of a drive line re-routed the matching along
    the whole run of engaged clutches before it (O(n^2) labelled searches)."""
    return sorted(range(len(g.rows)), key=lambda i: len(g.sig[i]))


def transversal(g: LabelledGraph):
    """``(SymbolicMatching, SymbolicOffsets)``: a perfect matching in every nonsingular mode
    and Pryce's offsets where it is a highest-value transversal. Two greedy orders are
    tried: `by_degree` on every mode, then the model's order on the modes where the first
    one is not a highest-value transversal (its offsets iteration finds no fixpoint:
    `symbolic_offsets`), whose matching there replaces the first one's; the modes still
    undecided are left to the caller. Which order gives a highest-value transversal depends
    on the model (the drive line and the RLC ladders by degree, the fault chain in the
    model's order); each pass costs one labelled matching."""
    b = g.bdd
    m = symbolic_matching(g, by_degree(g))
    off = symbolic_offsets(g, m)
    if off.undecided == b.false:
        return m, off
    u = off.undecided
    m2 = symbolic_matching(g, None, u)
    match = []
    for row, row2 in zip(m.match, m2.match):
        merged = {j: f & ~u for j, f in row.items() if f & ~u != b.false}
        for j, f in row2.items():
            merged[j] = merged.get(j, b.false) | f
        match.append(merged)
    combined = SymbolicMatching(match, (m.singular & ~u) | m2.singular)
    return combined, symbolic_offsets(g, combined)


def case_max(bdd, cases) -> Case:
    """Pointwise maximum of case functions (each undefined outside its formulas)."""
    by_value: dict[int, Any] = {}
    for c in cases:
        for v, f in c.items():
            by_value[v] = by_value.get(v, bdd.false) | f
    out, covered = {}, bdd.false
    for v in sorted(by_value, reverse=True):
        f = by_value[v] & ~covered
        if f != bdd.false:
            out[v] = f
            covered |= f
    return out


def restrict(bdd, c: Case, domain) -> Case:
    out = {}
    for v, f in c.items():
        f = f & domain
        if f != bdd.false:
            out[v] = f
    return out


@dataclass
class SymbolicOffsets:
    """Offsets as case functions over the decided modes; ``undecided``: modes where the
    matching was not a highest-value transversal (no fixpoint within the bound)."""
    c: list[Case]
    d: list[Case]
    domain: Any
    undecided: Any
    sweeps: int


def symbolic_offsets(g: LabelledGraph, m: SymbolicMatching) -> SymbolicOffsets:
    """Pryce's iteration on every nonsingular mode at once (module docstring). The bound on
    valid offsets: c_i ≤ (number of equations)·max σ, the weight of a longest path of the
    iteration's graph without positive cycle; a mode exceeding it has a positive cycle."""
    b = g.bdd
    F = b.false
    domain = g.care & ~m.singular
    n_r, n_c = len(g.rows), len(g.cols)
    max_sig = max((s for row in g.sig for cs in row.values() for s in cs), default=0)
    bound = n_r * max(max_sig, 1)
    c = [restrict(b, {0: g.present[i]}, domain) for i in range(n_r)]
    col_rows: list[list[int]] = [[] for _ in range(n_c)]
    for i in range(n_r):
        for j in g.sig[i]:
            col_rows[j].append(i)
    undecided = F
    sweeps = 0
    while True:
        sweeps += 1
        d = []
        for j in range(n_c):
            terms = []
            for i in col_rows[j]:
                t: Case = {}
                for s, fs in g.sig[i][j].items():
                    for v, fv in c[i].items():
                        f = fs & fv
                        if f != F:
                            t[v + s] = t.get(v + s, F) | f
                terms.append(t)
            d.append(case_max(b, terms))
        new_c = []
        for i in range(n_r):
            t = {}
            for j, fm in m.match[i].items():
                for s, fs in g.sig[i][j].items():
                    for v, fv in d[j].items():
                        f = fm & fs & fv
                        if f != F:
                            t[v - s] = t.get(v - s, F) | f
            new_c.append(t)
        over = F
        for t in new_c:
            for v, f in t.items():
                if v > bound:
                    over |= f
        if over != F:
            undecided |= over
            domain &= ~over
            new_c = [restrict(b, t, domain) for t in new_c]
            d = [restrict(b, t, domain) for t in d]
        if new_c == [restrict(b, t, domain) for t in c]:
            return SymbolicOffsets(new_c, d, domain, undecided, sweeps)
        c = new_c
