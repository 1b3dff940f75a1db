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
  returned as *undecided*.
* `highest_value_matching`: a highest-value transversal in every mode of a set, by successive
  shortest augmenting paths with potentials (the assignment problem of docs/theory.md §4.2),
  distances and potentials being case functions. `transversal` takes its offsets, and the
  greedy `symbolic_matching` where that one is a highest-value transversal too, so
  that no mode is left without offsets (nor to a per-mode analysis).
"""

from __future__ import annotations

from typing import Any, Mapping  # Any: BDD nodes of the optional, untyped dd package
from collections import deque
from dataclasses import dataclass

import numpy as np

from ..structure.graph import WeightedGraph
from ..structure.sigma import NotOptimal, pryce_offsets


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


def add_guarded_entries(row: dict[int, dict[int, Any]], entries: Mapping[str, int],
                        columns: Mapping[str, int], formula: Any) -> None:
    """Add to ``row`` (a `LabelledGraph` row: column -> order -> formula) the signature
    ``entries`` (name -> order) of one branch of an equation, present where ``formula``
    holds: the formulas of an order that several branches read are joined (docs/theory.md
    §10.1, the signature as a function of the guards); names outside ``columns`` are not
    unknowns."""
    for name, k in entries.items():
        j = columns.get(name)
        if j is not None:
            cell = row.setdefault(j, {})
            cell[k] = cell[k] | formula if k in cell else formula


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
    return SymbolicMatching(match=match, singular=singular & care)


def by_degree(g: LabelledGraph) -> list[int]:
    """The equations by increasing number of unknowns they read (ties in the model's
    order): the matching order of `transversal`'s first pass. An equation with one or two
    candidates (an ideal clutch's ``w_a = w_b``, a switch's ``i = 0``) takes its unknown
    before an equation with many options claims it, so augmenting paths stay short: taken
    in the model's order, each engaged clutch of a drive line re-routed the matching along
    the whole run of engaged clutches before it (O(n^2) labelled searches)."""
    return sorted(range(len(g.rows)), key=lambda i: len(g.sig[i]))


def transversal(g: LabelledGraph):
    """``(SymbolicMatching, SymbolicOffsets)``: a highest-value transversal in every
    nonsingular mode and Pryce's canonical offsets. The offsets come from the exact
    `highest_value_matching` (Pryce's iteration converges on a highest-value transversal);
    the matching is the greedy one in the order `by_degree` wherever that one is also a
    highest-value transversal, the exact one elsewhere. A perfect matching is a
    highest-value transversal exactly when every one of its entries is tight for an optimal
    dual (complementary slackness of the LP of docs/theory.md §4.2), and the canonical offsets
    are one (the same in every highest-value transversal: docs/theory.md §4.3), so the test is
    one comparison per matched entry, with no second offsets iteration. The greedy matching
    keeps the assignment the code generation has used so far on the models where it was right
    (the drive line's and the RLC ladders' blocks); the exact one costs one labelled
    shortest-path search per equation. A graph whose formulas are all true (a model without
    guards) takes `constant_transversal`, the same result with no BDD operation.
    """
    fast = constant_transversal(g)
    if fast is not None:
        return fast
    b = g.bdd
    exact = highest_value_matching(g, g.care)
    off = symbolic_offsets(g, exact)
    greedy = symbolic_matching(g, by_degree(g), off.domain)
    wrong = b.false
    for i, row in enumerate(greedy.match):
        for j, f in row.items():
            f &= off.domain
            if f == b.false:
                continue
            tight = b.false
            for s, fs in g.sig[i][j].items():
                for vc, fc in off.c[i].items():
                    fd = off.d[j].get(vc + s)
                    if fd is not None:
                        tight |= fs & fc & fd
            wrong |= f & ~tight
    wrong |= greedy.singular & off.domain     # (no perfect matching found: cannot happen)
    return _replaced(b, greedy, exact, wrong | ~off.domain), off


def constant_transversal(g: LabelledGraph):
    """`transversal` of a graph whose formulas are all true (every mode has one structure: a
    model without guards), computed as for one mode with no BDD operation (docs/theory.md
    §10.8): the greedy matching of `symbolic_matching` in the order `by_degree`, each
    equation's highest entry first, then a breadth-first augmenting path, taken as a
    sequence of plain choices, then Pryce's offsets on it (`mdae_fmu.structure.sigma.
    pryce_offsets`, docs/theory.md §4.3). When that matching is a highest-value transversal
    (the iteration reaches a fixpoint) it is the one `transversal` keeps and the offsets are
    the canonical ones, so the result is `transversal`'s with every formula true (``sweeps``
    counts the iteration on that matching, the labelled one iterates on the exact one). None when
    a formula is not constant, the graph is not square, the matching is not perfect or not
    of highest value: the labelled algorithms then decide (and name the singular modes)."""
    b = g.bdd
    T = b.true
    n_r, n_c = len(g.rows), len(g.cols)
    if n_r != n_c or g.care != T or any(p != T for p in g.present):
        return None
    sig: list[dict[int, int]] = []
    for row in g.sig:
        plain = {}
        for j, cell in row.items():
            if len(cell) != 1:
                return None
            (s, f), = cell.items()
            if f != T:
                return None
            plain[j] = s
        sig.append(plain)
    match = _plain_matching(sig, by_degree(g), n_c)
    if match is None:
        return None
    graph = WeightedGraph.from_rows(sig, n_c)
    try:
        c, d, sweeps = pryce_offsets(graph, np.arange(n_r, dtype=np.int64),
                                     np.asarray(match, dtype=np.int64))
    except NotOptimal:
        return None
    m = SymbolicMatching(match=[{j: T} for j in match], singular=b.false)
    return m, SymbolicOffsets(c=[{int(v): T} for v in c], d=[{int(v): T} for v in d],
                              domain=T, undecided=b.false, sweeps=sweeps)


def _plain_matching(sig: list[dict[int, int]], order: list[int], n_c: int) -> list[int] | None:
    """`symbolic_matching` in one mode (``sig[i] = {j: σ_ij}``): ``match[i]`` the unknown of
    equation i, None when some equation stays unmatched. The same choices in the same
    order: the highest free entry first, then the first free unknown of a breadth-first
    search whose layers are visited in the order they are reached."""
    match = [-1] * len(sig)
    owner = [-1] * n_c
    for i0 in order:
        for j in sorted(sig[i0], key=lambda j: -sig[i0][j]):
            if owner[j] < 0:
                match[i0], owner[j] = j, i0
                break
        if match[i0] >= 0:
            continue
        parent: dict[int, int] = {}          # unknown -> the equation that reached it
        visited = [False] * n_c
        frontier = [i0]
        end = -1
        while frontier and end < 0:
            reached: list[int] = []
            for i in frontier:
                for j in sig[i]:
                    if not visited[j] and j not in parent:
                        parent[j] = i
                        reached.append(j)
            for j in reached:
                visited[j] = True
            end = next((j for j in reached if owner[j] < 0), -1)
            frontier = [owner[j] for j in reached] if end < 0 else []
        if end < 0:
            return None
        j = end
        while True:                           # flip the path back to i0
            i = parent[j]
            prev = match[i]
            match[i], owner[j] = j, i
            if i == i0:
                break
            j = prev
    return match


def _replaced(bdd, m: SymbolicMatching, other: SymbolicMatching, where) -> SymbolicMatching:
    """The matching ``m`` outside the modes ``where`` and ``other`` inside them."""
    F = bdd.false
    match = []
    for row, row2 in zip(m.match, other.match):
        merged = {j: f & ~where for j, f in row.items() if f & ~where != F}
        for j, f in row2.items():
            f &= where
            if f != F:
                merged[j] = merged.get(j, F) | f
        match.append(merged)
    return SymbolicMatching(match=match, singular=(m.singular & ~where) | (other.singular & where))


def _case_add(bdd, a: Case, k: int, f) -> Case:
    """The case function ``a`` with ``k`` added to its values in the modes ``f``."""
    out: Case = {}
    for v, fv in a.items():
        for w, fw in ((v + k, fv & f), (v, fv & ~f)):
            if fw != bdd.false:
                out[w] = out.get(w, bdd.false) | fw
    return out


def _settle(bdd, seen: dict, dist: dict, node: int, modes, delta: int):
    """The modes of ``modes`` in which the search reaches ``node`` first (at distance
    ``delta``), recorded in ``seen`` and ``dist``; false when none."""
    modes &= ~seen.get(node, bdd.false)
    if modes != bdd.false:
        seen[node] = seen.get(node, bdd.false) | modes
        d = dist.setdefault(node, {})
        d[delta] = d.get(delta, bdd.false) | modes
    return modes


def highest_value_matching(g: LabelledGraph, domain) -> SymbolicMatching:
    """A highest-value transversal in every mode of ``domain`` that has a perfect matching
    (``singular``: the others), by successive shortest augmenting paths with potentials, the
    exact method for the assignment problem (docs/theory.md §4.2: the LP and its dual), run
    on all modes at once.

    Per mode the method keeps potentials u_i (equations) and v_j (unknowns) with reduced
    costs ``r_ij = v_j − u_i − σ_ij ≥ 0`` on every edge of the equations matched so far, and
    ``r = 0`` on the matching. An equation i0 enters with ``u_i0 = min_j (v_j − σ_i0j)``;
    a Dijkstra search from i0 (row → unknown at cost r, unknown → the equation it is matched
    to at cost 0) finds the nearest free unknown at distance δ*; every node reached at
    distance δ < δ* has its potential raised by δ* − δ (all reduced costs stay ≥ 0, the path
    becomes tight) and the path is flipped. Each step keeps the matching a highest-value
    one for the equations it covers (the classical argument: the potentials are a feasible
    dual tight on it), so the last step gives a highest-value transversal.

    Here distances, potentials and reduced costs are case functions ``{value: formula}``:
    the search takes the distances in increasing order (buckets), each bucket a set of
    (node, modes) pairs; a mode leaves the search as soon as it reaches a free unknown. The
    cost grows with the equations, edges and distinct distance values, not with the number
    of modes. Modes where an equation finds no free unknown have no perfect matching."""
    b = g.bdd
    F = b.false
    n_r, n_c = len(g.rows), len(g.cols)
    domain = domain & g.care
    match: list[dict[int, Any]] = [dict() for _ in range(n_r)]
    owner: list[dict[int, Any]] = [dict() for _ in range(n_c)]
    matched = [F] * n_c
    u: list[Case] = [{} for _ in range(n_r)]
    # the column maxima (feasible for every equation, as the primal–dual start of
    # `mdae_fmu.structure.sigma`): an equation's highest entries are tight, and an entering
    # equation whose unknowns are taken finds a short path through the tight entries
    # instead of a long zero-cost one along a run of constraints
    col_rows: list[list[int]] = [[] for _ in range(n_c)]
    for i in range(n_r):
        for j in g.sig[i]:
            col_rows[j].append(i)
    v: list[Case] = []
    for j in range(n_c):
        top = case_max(b, [{0: domain}] + [restrict(b, g.sig[i][j], g.present[i] & domain)
                                          for i in col_rows[j]])
        v.append(top)
    singular = F

    def reduced(i: int, j: int, modes) -> Case:
        """``r_ij = v_j − u_i − σ_ij`` in ``modes`` (where the edge exists)."""
        out: Case = {}
        for s, fs in g.sig[i][j].items():
            fs &= modes
            if fs == F:
                continue
            for vj, fv in v[j].items():
                fsv = fs & fv
                if fsv == F:
                    continue
                for ui, fu in u[i].items():
                    f = fsv & fu
                    if f != F:
                        out[vj - ui - s] = out.get(vj - ui - s, F) | f
        return out

    for i0 in by_degree(g):
        active = g.present[i0] & domain & ~singular
        if active == F:
            continue
        # the entering equation's potential: its smallest v_j − σ_i0j (one edge tight)
        starts = []
        for j, cell in g.sig[i0].items():
            t: Case = {}
            for s, fs in cell.items():
                for vj, fv in v[j].items():
                    f = fs & fv & active
                    if f != F:
                        t[vj - s] = t.get(vj - s, F) | f
            starts.append({-x: f for x, f in t.items()})
        u[i0] = {-x: f for x, f in case_max(b, starts).items()}
        no_edge = active
        for f in u[i0].values():
            no_edge &= ~f
        singular |= no_edge
        active &= ~no_edge
        dist_r: dict[int, Case] = {}
        dist_c: dict[int, Case] = {}
        seen_r: dict[int, Any] = {}
        seen_c: dict[int, Any] = {}
        pred: dict[int, dict[int, Any]] = {}
        ends: dict[int, Any] = {}
        found: Case = {}
        buckets: dict[int, list] = {0: [(True, i0, active, -1)]}
        while buckets and active != F:
            delta = min(buckets)
            queue = deque(buckets.pop(delta))
            while queue:
                is_row, node, modes, via = queue.popleft()
                if is_row:
                    modes = _settle(b, seen_r, dist_r, node, modes & active, delta)
                    if modes == F:
                        continue
                    for j in g.sig[node]:
                        for r, fr in reduced(node, j, modes & ~seen_c.get(j, F)).items():
                            item = (False, j, fr, node)
                            if r == 0:
                                queue.append(item)
                            else:
                                buckets.setdefault(delta + r, []).append(item)
                    continue
                modes = _settle(b, seen_c, dist_c, node, modes & active, delta)
                if modes == F:
                    continue
                pj = pred.setdefault(node, {})
                pj[via] = pj.get(via, F) | modes
                free = modes & ~matched[node]
                if free != F:
                    ends[node] = ends.get(node, F) | free
                    found[delta] = found.get(delta, F) | free
                    active &= ~free
                for i2, fm in owner[node].items():
                    m2 = modes & fm & active
                    if m2 != F:
                        queue.append((True, i2, m2, node))
        # modes where i0 reached no free unknown: no perfect matching
        reached = F
        for f in found.values():
            reached |= f
        singular |= active & ~reached
        # potentials: + (δ* − δ) on every node reached before δ*
        for dists, pots in ((dist_r, u), (dist_c, v)):
            for node, dn in dists.items():
                for dl, fl in dn.items():
                    for ds, fs in found.items():
                        f = fl & fs
                        if ds > dl and f != F:
                            pots[node] = _case_add(b, pots[node], ds - dl, f)
        # flip the paths, from their free unknown back to i0 (one path per mode)
        pending = ends
        while pending:
            nxt: dict[int, Any] = {}
            for j, q in pending.items():
                for i, pm in pred[j].items():
                    m = q & pm
                    if m == F:
                        continue
                    for j2, old in list(match[i].items()):
                        mm = m & old
                        if mm != F:
                            match[i][j2] = old & ~mm
                            owner[j2][i] = owner[j2][i] & ~mm
                            nxt[j2] = nxt.get(j2, F) | mm
                    match[i][j] = match[i].get(j, F) | m
                    owner[j][i] = owner[j].get(i, F) | m
                    matched[j] |= m
            pending = nxt
    for j in range(n_c):
        singular |= domain & ~matched[j]
    match = [{j: f & ~singular for j, f in row.items() if f & ~singular != F}
             for row in match]
    return SymbolicMatching(match=match, singular=singular & domain)


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
            return SymbolicOffsets(c=new_c, d=d, domain=domain, undecided=undecided, sweeps=sweeps)
        c = new_c
