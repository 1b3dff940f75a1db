"""Block-triangular decomposition with mode formulas: the blocks of every regular mode's
index-reduced system, each with the formula of the modes in which it is a block (docs/theory.md
§10.2: the "mDAE interpreter", equation blocks labelled by guard formulas).

In a mode, equation i depends on equation i' when i has a tight entry (``d_j − c_i = σ_ij``)
on the unknown j that the transversal assigns to i'; the blocks are the strongly connected
components of that graph (as `mdae_fmu.structure.graph.block_triangular_graph` per mode). Here
the dependency edges carry formulas. The strongly connected components of their *union* give a
mode-independent order that every mode's decomposition refines; inside a union component of
more than one equation the per-mode components are found by labelled reachability (the modes
in which i reaches i'), when the component has at most ``max_component`` equations, at most
``max_blocks`` distinct blocks whose sizes add up to at most ``size_factor`` times the
component's (or ``min_size``), and its reachability formulas stay under ``max_nodes`` BDD
nodes. Otherwise it is reported as one *coarse* block (a valid schedule for every mode,
solved as one system), flagged as such. The size bound keeps the listing linear in the
model: a chain of n switched couplings (clutches, switches) has a block per run of engaged
couplings, O(n^2) blocks of O(n) equations, which code generation would turn into O(n^3)
lines (docs/decisions.md §9.1). These bounds choose how a component is scheduled, never a
verdict: the checks that read the blocks see a coarse block's per-mode blocks (E-WHEN-LOOP,
`implicit.when_checks._coarse_edges`, docs/theory.md §10.11), list them with formulas under a
budget of their own (`component_blocks`, the singularity test of `implicit.conversion`,
§10.13, after its interface certificate of §10.15, which needs no block but the singular
ones, `block_formula`; beyond it, concrete modes and W-SINGULAR-UNCHECKED), or restart it whole
(`implicit.variants`, §10.6).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any  # BDD nodes of the optional, untyped dd package
from dataclasses import dataclass



@dataclass(frozen=True)
class ConditionalBlock:
    """``equations`` solved together for ``unknowns`` in the modes of ``formula``; ``coarse``
    when it is a union component not split per mode (its unknowns then vary with the mode and
    are all the unknowns its equations are assigned in some mode)."""
    equations: tuple[str, ...]
    unknowns: tuple[str, ...]
    formula: Any
    coarse: bool = False


def conditional_blocks(a, max_component: int = 64, max_blocks: int = 2048,
                       max_nodes: int = 250_000, size_factor: int = 8,
                       min_size: int = 512
                       ) -> list[ConditionalBlock]:
    """The blocks of every regular mode with their formulas (module docstring), in an order
    valid for every mode (a block after the blocks it reads)."""
    fast = _constant_blocks(a, max_component)
    if fast is not None:
        return fast
    g, space = a.graph, a.space
    b = space.bdd
    F = b.false
    regular = space.care & ~a.singular & ~a.undecided
    n_r = len(g.rows)
    T, dep = tight_dependencies(a, range(n_r))
    present = [g.present[i] & regular for i in range(n_r)]
    import networkx as nx   # (imported on use: about 0.1 s)
    union = nx.DiGraph()
    union.add_nodes_from(i for i in range(n_r) if present[i] != F)
    union.add_edges_from((i, i2) for i in range(n_r) for i2 in dep[i])
    cond = nx.condensation(union)
    out: list[ConditionalBlock] = []
    # an edge i -> i2 means i reads the unknown of i2: solve the components in reverse order
    for comp in reversed(list(nx.topological_sort(cond))):
        members = sorted(cond.nodes[comp]["members"])
        if len(members) == 1 or len(members) > max_component:
            out.extend(_whole(a, members, T, present, coarse=len(members) > 1))
            continue
        max_size = max(min_size, size_factor * len(members))
        found = _split(a, members, dep, T, present, min(max_blocks, max_size), max_nodes,
                       max_size)
        out.extend(found if found is not None else _whole(a, members, T, present, True))
    return out


def tight_dependencies(a, rows) -> tuple[list[dict[int, Any]], list[dict[int, Any]]]:
    """The assignment and the labelled dependency graph of `conditional_blocks` (module
    docstring) over the rows ``rows`` of the analysis ``a`` (every row: the whole graph):
    per row i, ``{column j: the regular modes where i is assigned j}`` and ``{row i2: the
    regular modes where i has a tight entry on the unknown assigned to i2}``, both indexed
    by row over all the rows of ``a.graph`` (empty outside ``rows``)."""
    g, space = a.graph, a.space
    b = space.bdd
    F = b.false
    regular = space.care & ~a.singular & ~a.undecided
    n_r = len(g.rows)
    rows = list(rows)
    T: list[dict[int, Any]] = [dict() for _ in range(n_r)]
    for i in rows:
        T[i] = {j: f & regular for j, f in a.match[i].items() if f & regular != F}
    owner: dict[int, list[int]] = {}
    for i in rows:
        for j in T[i]:
            owner.setdefault(j, []).append(i)
    dep: list[dict[int, Any]] = [dict() for _ in range(n_r)]
    for i in rows:
        for j, cell in g.sig[i].items():
            tight = F
            for s, fs in cell.items():
                for vc, fc in a.c[i].items():
                    fd = a.d[j].get(vc + s)
                    if fd is not None:
                        tight |= fs & fc & fd
            tight &= regular
            if tight == F:
                continue
            for i2 in owner.get(j, ()):
                if i2 != i:
                    e = tight & T[i2][j]
                    if e != F:
                        dep[i][i2] = dep[i].get(i2, F) | e
    return T, dep


def _constant_blocks(a, max_component: int) -> list[ConditionalBlock] | None:
    """`conditional_blocks` of an analysis whose formulas are all true (a model without
    guards, `mdae_fmu.implicit.sigma.constant_transversal`; docs/theory.md §10.8), with no
    BDD operation: the
    strongly connected components of the tight dependency graph in the same order, each one
    block of formula true (a component of more than ``max_component`` equations coarse, as
    `_whole` makes it; a smaller one is what `_split` finds when every member reaches every
    other in every mode: one block of all its members). None when some formula is not
    constant."""
    g, space = a.graph, a.space
    T = space.bdd.true
    if (space.care != T or a.singular != space.bdd.false or a.undecided != space.bdd.false
            or any(p != T for p in g.present)):
        return None
    match: list[int] = []
    c: list[int] = []
    d: list[int] = []
    for row in a.match:
        if len(row) != 1 or next(iter(row.values())) != T:
            return None
        match.append(next(iter(row)))
    for cases, values in ((a.c, c), (a.d, d)):
        for case in cases:
            if len(case) != 1 or next(iter(case.values())) != T:
                return None
            values.append(next(iter(case)))
    n_r = len(g.rows)
    owner = {j: i for i, j in enumerate(match)}
    dep: list[list[int]] = [[] for _ in range(n_r)]
    for i in range(n_r):
        for j, cell in g.sig[i].items():
            if len(cell) != 1 or next(iter(cell.values())) != T:
                return None
            i2 = owner.get(j)
            if i2 is not None and i2 != i and next(iter(cell)) + c[i] == d[j]:
                dep[i].append(i2)
    out: list[ConditionalBlock] = []
    for members in reversed(condensation_order(dep)):
        out.append(ConditionalBlock(
            equations=tuple(g.rows[i] for i in members),
            unknowns=tuple(g.cols[j] for j in sorted(match[i] for i in members)),
            formula=T, coarse=len(members) > max_component))
    return out


def condensation_order(succ: list[list[int]]) -> list[list[int]]:
    """The strongly connected components of the directed graph on nodes ``0..n-1`` with
    the edges ``v -> w`` for ``w`` in ``succ[v]``, each as its sorted members, in the order
    ``networkx.topological_sort(networkx.condensation(G))`` lists them, for G built with its
    nodes in order and its edges in the order of ``succ`` (so that `_constant_blocks` orders
    its blocks as `conditional_blocks` does with networkx, without importing it: about 0.2 s
    of CPU, most of the analysis of a small model without guards). The components come
    from the non-recursive Tarjan search with Nuutila's lowlink rule that networkx runs
    (nodes in order, neighbours in edge order), numbered as found; the order is Kahn's, by
    generations of components without a remaining predecessor, each generation in the order
    its members became free (docs/theory.md §10.8)."""
    n = len(succ)
    adj = [list(dict.fromkeys(ws)) for ws in succ]     # (a DiGraph keeps one edge per pair)
    preorder = [0] * n
    lowlink = [0] * n
    found = [False] * n
    nxt = [0] * n                    # the next neighbour of each node to look at
    comps: list[list[int]] = []
    stack: list[int] = []            # visited nodes not yet in a component
    counter = 0
    for source in range(n):
        if found[source]:
            continue
        queue = [source]
        while queue:
            v = queue[-1]
            if not preorder[v]:
                counter += 1
                preorder[v] = counter
            done = True
            while nxt[v] < len(adj[v]):
                w = adj[v][nxt[v]]
                nxt[v] += 1
                if not preorder[w]:
                    queue.append(w)
                    done = False
                    break
            if not done:
                continue
            low = preorder[v]
            for w in adj[v]:
                if not found[w]:
                    low = min(low, lowlink[w] if preorder[w] > preorder[v] else preorder[w])
            lowlink[v] = low
            queue.pop()
            if low == preorder[v]:
                comp = [v]
                while stack and preorder[stack[-1]] > preorder[v]:
                    comp.append(stack.pop())
                for u in comp:
                    found[u] = True
                comps.append(comp)
            else:
                stack.append(v)
    comp_of = [0] * n
    for c, comp in enumerate(comps):
        for u in comp:
            comp_of[u] = c
    csucc: list[dict[int, None]] = [{} for _ in comps]
    indegree = [0] * len(comps)
    for v in range(n):
        for w in adj[v]:
            cv, cw = comp_of[v], comp_of[w]
            if cv != cw and cw not in csucc[cv]:
                csucc[cv][cw] = None
                indegree[cw] += 1
    order: list[int] = []
    free = [c for c in range(len(comps)) if indegree[c] == 0]
    while free:
        generation, free = free, []
        for c in generation:
            for d in csucc[c]:
                indegree[d] -= 1
                if indegree[d] == 0:
                    free.append(d)
        order.extend(generation)
    return [sorted(comps[c]) for c in order]


def _whole(a, members, T, present, coarse: bool) -> list[ConditionalBlock]:
    """One block per member set: a single equation split by its assigned unknown, or a coarse
    union component."""
    b = a.space.bdd
    if not coarse:
        (i,) = members
        return [
            ConditionalBlock(equations=(a.graph.rows[i],), unknowns=(a.graph.cols[j],), formula=f)
            for j, f in T[i].items()
        ]
    f = b.false
    unknowns = set()
    for i in members:
        f |= present[i]
        unknowns |= set(T[i])
    return [
        ConditionalBlock(
            equations=tuple(a.graph.rows[i] for i in members),
            unknowns=tuple(a.graph.cols[j] for j in sorted(unknowns)),
            formula=f,
            coarse=True,
        )
    ]


def _labelled_reach(s: int, start: Any,
                    edges: Sequence[Mapping[int, Any]] | Mapping[int, Mapping[int, Any]],
                    F: Any, inside: set[int]) -> dict[int, Any]:
    """The modes where ``s`` (present in the modes ``start``) reaches each node of ``inside``
    along ``edges``, each edge labelled by the modes where it exists: a frontier search in
    which only what a node newly gains propagates again (docs/theory.md §10.13; `_split`
    runs it from every member, `block_formula` forwards and backwards from one)."""
    r = {s: start}
    frontier = {s: start}
    while frontier:
        nxt: dict[int, Any] = {}
        for i, modes in frontier.items():
            for i2, e in edges[i].items():
                if i2 not in inside:
                    continue
                m = modes & e
                if m == F:
                    continue
                old = r.get(i2, F)
                grown = old | m
                if grown != old:
                    r[i2] = grown
                    nxt[i2] = nxt[i2] | m if i2 in nxt else m
        frontier = nxt
    return r


def _split(a, members, dep, T, present, max_blocks, max_nodes, max_size):
    """Per-mode strongly connected components inside one union component, by labelled
    forward reachability from each member; None when more than ``max_blocks`` blocks, when
    their equations add up to more than ``max_size``, or when the reachability formulas or
    the blocks' take the BDD past ``max_nodes`` nodes."""
    b = a.space.bdd
    F = b.false
    inside = set(members)
    reach: dict[int, dict[int, Any]] = {}
    for s in members:
        reach[s] = _labelled_reach(s, present[s], dep, F, inside)
        if len(b) > max_nodes:
            return None
    out: list[ConditionalBlock] = []
    size = 0
    for k, s in enumerate(members):
        same = {t: reach[s].get(t, F) & reach[t].get(s, F) for t in members if t != s}
        rep = present[s]
        for t in members[:k]:
            rep &= ~same[t]
        if rep == F:
            continue
        cands = [t for t in members[k + 1:] if same[t] & rep != F]
        stack = [(0, rep, (s,))]
        while stack:
            pos, f, mem = stack.pop()
            if pos == len(cands):
                size += len(mem)
                if size > max_size:
                    return None
                for unk, fu in _assigned(a, mem, T, f):
                    out.append(ConditionalBlock(equations=tuple(a.graph.rows[i] for i in mem),
                                                unknowns=unk, formula=fu))
                if len(out) > max_blocks or len(b) > max_nodes:
                    return None
                continue
            t = cands[pos]
            fin, fout = f & same[t], f & ~same[t]
            if fout != F:
                stack.append((pos + 1, fout, mem))
            if fin != F:
                stack.append((pos + 1, fin, mem + (t,)))
    return out


def _assigned(a, members, T, f):
    """Split ``f`` by the unknowns the members are assigned: [(unknown names, formula)].
    A member after the first (``f`` lies in the modes where the first reaches it through an
    edge into it, within the modes where it is assigned) with one possible unknown keeps
    ``f`` whole, without a conjunction."""
    b = a.space.bdd
    parts = [((), f)]
    for k, i in enumerate(members):
        if k and len(T[i]) == 1:
            (j,) = T[i]
            parts = [(unk + (j,), fu) for unk, fu in parts]
            continue
        nxt = []
        for unk, fu in parts:
            for j, fj in T[i].items():
                m = fu & fj
                if m != b.false:
                    nxt.append((unk + (j,), m))
        parts = nxt
    return [(tuple(a.graph.cols[j] for j in sorted(unk)), fu) for unk, fu in parts]


def component_blocks(a, equations, max_blocks: int, max_size: int,
                     max_nodes: int) -> list[ConditionalBlock] | None:
    """The per-mode blocks of the union component of the equations ``equations`` (the rows of
    a coarse block of ``a``), each with the formula of the modes where it is a block with its
    unknowns: `_split` of `conditional_blocks` with a budget of the caller's (``max_blocks``
    blocks whose equations add up to at most ``max_size``, ``max_nodes`` BDD nodes more than
    the analysis has), None beyond it. For the checks that need every mode's diagonal
    blocks (docs/theory.md §10.13), not for the schedule: its own budget bounds generated
    code."""
    g, space = a.graph, a.space
    rows = {r: i for i, r in enumerate(g.rows)}
    members = sorted(rows[e] for e in equations)
    regular = space.care & ~a.singular & ~a.undecided
    T, dep = tight_dependencies(a, members)
    present = {i: g.present[i] & regular for i in members}
    return _split(a, members, dep, T, present, max_blocks, len(space.bdd) + max_nodes,
                  max_size)


def block_formula(a, equations, block, unknowns) -> Any:
    """The modes where the equations ``block`` are a per-mode block of the union component of
    the equations ``equations`` (rows of a coarse block of ``a``) with the unknowns
    ``unknowns``: the formula `_split` gives that block, from two labelled searches
    from its first member (the modes where it reaches each member, and where each reaches it)
    instead of one per member (docs/theory.md §10.15: for the one block the numerical test
    finds singular, not for every block)."""
    g, space = a.graph, a.space
    b = space.bdd
    F = b.false
    rows = {r: i for i, r in enumerate(g.rows)}
    members = sorted(rows[e] for e in equations)
    mem = sorted(rows[e] for e in block)
    regular = space.care & ~a.singular & ~a.undecided
    T, dep = tight_dependencies(a, members)
    present = {i: g.present[i] & regular for i in members}
    inside = set(members)
    back: dict[int, dict[int, Any]] = {i: {} for i in members}
    for i in members:
        for i2, e in dep[i].items():
            if i2 in inside:
                back[i2][i] = e
    s = mem[0]
    fwd = _labelled_reach(s, present[s], dep, F, inside)
    bwd = _labelled_reach(s, present[s], back, F, inside)
    inner = set(mem)
    f = present[s]
    for t in members:
        if t == s:
            continue
        same = fwd.get(t, F) & bwd.get(t, F) & present[t]
        f &= same if t in inner else ~same
        if f == F:
            return F
    for unk, fu in _assigned(a, tuple(mem), T, f):
        if unk == tuple(unknowns):
            return fu
    return F
