"""Weighted bipartite graph of a set of equations, maximum matching, Dulmage–Mendelsohn
decomposition and block-triangular form.

Equations and unknowns are numbered ``0..n_eqs-1`` and ``0..n_vars-1``; the graph is kept sparse
throughout (CSR arrays, rows = equations), never as a dense matrix. The edge weight σ(e, x) is
the highest derivative order of x in e, i.e. Pryce's signature matrix (docs/theory.md §2.1,
§4.1). The unweighted algorithms take plain adjacency lists (``adj[e]`` = the unknowns of
equation e) so that other stages (the multimode analysis) can run them on arbitrary
equation/unknown sets.

References: docs/theory.md §2.2 (matching), §2.3 (BTF, RR-9387 Lemma 6), §2.4 (DM, RR-9387 Def 7,
Lemma 8).
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Hashable, Iterable, Iterator, Mapping, Sequence

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sps
    from scipy.sparse import csgraph
else:   # loaded on first use (`mdae_fmu.lazy_modules`): small systems never need them
    from ..lazy_modules import csgraph, sparse as sps

from ..collector import gc_paused

# Below this many edges the pure-Python Hopcroft–Karp is used (no scipy conversion overhead).
SMALL_EDGES = 2000


# --- the weighted bipartite graph -----------------------------------------------------------

@dataclass(frozen=True, eq=False)
class WeightedGraph:
    """Sparse signature matrix: row ``i`` lists the unknowns of equation ``i`` in
    ``indices[indptr[i]:indptr[i+1]]`` (sorted) with their weights σ_ij in ``weights``
    (docs/theory.md §4.1). Non-edges are absent (σ = −∞)."""
    n_eqs: int
    n_vars: int
    indptr: np.ndarray     # int64, length n_eqs + 1
    indices: np.ndarray    # int64, length n_edges
    weights: np.ndarray    # int64, length n_edges

    @staticmethod
    def from_rows(rows: Sequence[Mapping[int, int]], n_vars: int) -> "WeightedGraph":
        """Build the graph from one ``{unknown index: σ}`` mapping per equation (docs/theory.md
        §2.1)."""
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        cols: list[int] = []
        wts: list[int] = []
        for i, row in enumerate(rows):
            for j in sorted(row):
                cols.append(j)
                wts.append(row[j])
            indptr[i + 1] = len(cols)
        return WeightedGraph(
            n_eqs=len(rows),
            n_vars=n_vars,
            indptr=indptr,
            indices=np.asarray(cols, dtype=np.int64),
            weights=np.asarray(wts, dtype=np.int64),
        )

    @staticmethod
    def from_arrays(n_eqs: int, n_vars: int, rows: np.ndarray, cols: np.ndarray,
                    weights: np.ndarray) -> "WeightedGraph":
        """Build the graph from COO edge arrays (duplicates keep their largest weight).
        Without duplicates (a signature graph's rows, one entry per name) the edges are
        sorted by one int64 key, row × n_vars + column (a stable sort of nearly sorted
        keys), and the row pointers found in the sorted keys: no int64 copy of the inputs
        and no lexicographic sort of three arrays (about 150 MB less at 10^6 equations)."""
        key = np.asarray(rows, dtype=np.int64) * max(n_vars, 1)
        key += cols
        order = np.argsort(key, kind="stable")
        key = key[order]
        if len(key) < 2 or not (key[1:] == key[:-1]).any():
            indices = np.asarray(cols)[order].astype(np.int64, copy=False)
            wts = np.asarray(weights)[order].astype(np.int64, copy=False)
            del order
            indptr = np.searchsorted(key, np.arange(n_eqs + 1, dtype=np.int64)
                                     * max(n_vars, 1)).astype(np.int64, copy=False)
            return WeightedGraph(n_eqs=n_eqs, n_vars=n_vars, indptr=indptr, indices=indices,
                                 weights=wts)
        del key, order
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        weights = np.asarray(weights, dtype=np.int64)
        order = np.lexsort((-weights, cols, rows))
        rows, cols, weights = rows[order], cols[order], weights[order]
        if len(rows):
            keep = np.ones(len(rows), dtype=bool)
            keep[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
            rows, cols, weights = rows[keep], cols[keep], weights[keep]
        indptr = np.zeros(n_eqs + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n_eqs), out=indptr[1:])
        return WeightedGraph(
            n_eqs=n_eqs, n_vars=n_vars, indptr=indptr, indices=cols, weights=weights
        )

    @property
    def n_edges(self) -> int:
        return int(self.indptr[-1])

    def row(self, i: int) -> dict[int, int]:
        """``{unknown: σ}`` of equation ``i``."""
        a, b = self.indptr[i], self.indptr[i + 1]
        return dict(zip(self.indices[a:b].tolist(), self.weights[a:b].tolist()))

    def adjacency(self) -> list[list[int]]:
        """Plain adjacency lists, for the unweighted algorithms below."""
        ind = self.indices.tolist()
        ptr = self.indptr.tolist()
        return [ind[ptr[i]:ptr[i + 1]] for i in range(self.n_eqs)]

    def edge_rows(self) -> np.ndarray:
        """The equation of every edge (COO row array)."""
        return np.repeat(np.arange(self.n_eqs, dtype=np.int64), np.diff(self.indptr))

    def csr(self) -> sps.csr_matrix:
        """0/1 incidence as a scipy CSR matrix (explicit ones, so no edge is dropped)."""
        data = np.ones(self.n_edges, dtype=np.int8)
        return sps.csr_matrix((data, self.indices, self.indptr), shape=(self.n_eqs, self.n_vars))

    def subgraph(self, keep: np.ndarray) -> "WeightedGraph":
        """The same equations and unknowns with only the edges where ``keep`` is true."""
        rows = self.edge_rows()[keep]
        return WeightedGraph.from_arrays(self.n_eqs, self.n_vars, rows, self.indices[keep],
                                         self.weights[keep])


def _csr_of_adj(adj: Sequence[Sequence[int]], n_vars: int) -> sps.csr_matrix:
    indptr = np.zeros(len(adj) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in adj], out=indptr[1:])
    indices = np.fromiter((j for r in adj for j in r), dtype=np.int64, count=int(indptr[-1]))
    data = np.ones(len(indices), dtype=np.int8)
    m = sps.csr_matrix((data, indices, indptr), shape=(len(adj), n_vars))
    m.sum_duplicates()
    return m


def _transpose(adj: Sequence[Sequence[int]], n_vars: int) -> list[list[int]]:
    """Equations of each unknown (in increasing equation order)."""
    eqs_of: list[list[int]] = [[] for _ in range(n_vars)]
    for i, row in enumerate(adj):
        for j in row:
            eqs_of[j].append(i)
    return eqs_of


# --- maximum matching (§2.2) ---------------------------------------------------------------

def classes_sharing_keys(keys: Sequence[Iterable[Hashable]]) -> list[tuple[int, ...]]:
    """The items ``0..len(keys)-1`` grouped into the connected components of the relation
    "share a key" (``keys[i]``: the keys of item i), by union-find; each class ascending, the
    classes sorted, singletons included."""
    parent = list(range(len(keys)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    owner: dict[Hashable, int] = {}
    for i, ks in enumerate(keys):
        for k in ks:
            if k in owner:
                parent[find(i)] = find(owner[k])
            else:
                owner[k] = i
    groups: dict[int, list[int]] = {}
    for i in range(len(keys)):
        groups.setdefault(find(i), []).append(i)
    return sorted(tuple(g) for g in groups.values())


def maximum_matching(adj: Sequence[Sequence[int]], n_vars: int) -> list[int]:
    """Maximum-cardinality matching of the bipartite graph ``adj`` (docs/theory.md §2.2):
    ``result[e]`` is the unknown matched to equation ``e``, or −1.

    Hopcroft–Karp, O(|E|·sqrt(|V|)): a pure-Python implementation for small graphs, scipy's
    ``maximum_bipartite_matching`` (also Hopcroft–Karp, in C) for large ones.
    """
    n_edges = sum(len(r) for r in adj)
    if n_edges <= SMALL_EDGES:
        return _hopcroft_karp(adj, n_vars)
    return matching_csr(_csr_of_adj(adj, n_vars))


def matching_csr(m: sps.csr_matrix) -> list[int]:
    """Maximum matching of a CSR incidence matrix (rows = equations), via scipy (docs/theory.md
    §2.2)."""
    if m.shape[0] == 0 or m.shape[1] == 0:
        return [-1] * m.shape[0]
    m = sps.csr_matrix(m)
    m.data = np.ones_like(m.data, dtype=np.int8)
    matching: list[int] = csgraph.maximum_bipartite_matching(m, perm_type="column").tolist()
    return matching


def _hopcroft_karp(adj: Sequence[Sequence[int]], n_vars: int) -> list[int]:
    """Maximum matching by Hopcroft–Karp (1973), the matching step of docs/theory.md §2.2
    (MaxMatching, O(|E|·sqrt(|F| + |X|))): a greedy start,
    then phases of BFS layers from the free equations and vertex-disjoint shortest augmenting
    paths found by iterative DFS, until no augmenting path exists (Berge). The matching is
    maximum, so the tests "complete" / "equation-complete" (docs/theory.md §2.2, §4.4;
    RR-9387 Def 4) and the DM decomposition (§2.4) can be read off it. ``result[e]`` = unknown
    of equation e, −1 if unmatched."""
    n = len(adj)
    match_e = [-1] * n
    match_v = [-1] * n_vars
    # greedy start
    for i in range(n):
        for j in adj[i]:
            if match_v[j] < 0:
                match_e[i] = j
                match_v[j] = i
                break
    inf = n + 1
    while True:
        dist = [inf] * n
        q: deque[int] = deque()
        for i in range(n):
            if match_e[i] < 0:
                dist[i] = 0
                q.append(i)
        found = False
        while q:
            i = q.popleft()
            for j in adj[i]:
                k = match_v[j]
                if k < 0:
                    found = True
                elif dist[k] == inf:
                    dist[k] = dist[i] + 1
                    q.append(k)
        if not found:
            return match_e
        ptr = [0] * n
        for root in range(n):
            if match_e[root] >= 0:
                continue
            # iterative DFS along the layers
            stack = [root]
            while stack:
                i = stack[-1]
                row = adj[i]
                advanced = False
                while ptr[i] < len(row):
                    j = row[ptr[i]]
                    ptr[i] += 1
                    k = match_v[j]
                    if k < 0:
                        # augment along the stack
                        for depth in range(len(stack) - 1, -1, -1):
                            e = stack[depth]
                            nxt = match_e[e]
                            match_e[e] = j
                            match_v[j] = e
                            j = nxt
                        stack = []
                        advanced = True
                        break
                    if dist[k] == dist[i] + 1:
                        stack.append(k)
                        advanced = True
                        break
                if not advanced:
                    dist[i] = inf     # dead end: never visit again in this phase
                    stack.pop()


# --- Dulmage–Mendelsohn (§2.4) -------------------------------------------------------------

@dataclass(frozen=True)
class DM:
    """Coarse Dulmage–Mendelsohn decomposition (docs/theory.md §2.4, RR-9387 Def 7): the
    over-determined part β_O, the well-determined (enabled) part β_E and the under-determined
    part β_U, each as sorted equation and unknown indices. Independent of the matching."""
    over_eqs: tuple[int, ...]
    over_vars: tuple[int, ...]
    well_eqs: tuple[int, ...]
    well_vars: tuple[int, ...]
    under_eqs: tuple[int, ...]
    under_vars: tuple[int, ...]

    @property
    def regular(self) -> bool:
        """Structurally nonsingular: β_O = β_U = ∅ (RR-9387 Lemma 8.2, docs/theory.md §2.4)."""
        return not (self.over_eqs or self.over_vars or self.under_eqs or self.under_vars)


def alternating_reach(edges: Sequence[Sequence[int]], mate: Sequence[int],
                       mate_other: Sequence[int]) -> tuple[list[bool], list[bool]]:
    """The vertices of one side (``edges[i]``: the neighbours of vertex i; ``mate``: its
    matching, -1 when unmatched) and of the other side (``mate_other``) reachable by an
    alternating path from an unmatched vertex of the first side: it is left by any edge, the
    other side by its matching edge (docs/theory.md §2.4)."""
    seen = [m < 0 for m in mate]
    seen_other = [False] * len(mate_other)
    q = deque(i for i, m in enumerate(mate) if m < 0)
    while q:
        i = q.popleft()
        for j in edges[i]:
            if not seen_other[j]:
                seen_other[j] = True
                k = mate_other[j]
                if k >= 0 and not seen[k]:
                    seen[k] = True
                    q.append(k)
    return seen, seen_other


def dulmage_mendelsohn(adj: Sequence[Sequence[int]], n_vars: int,
                       matching: Sequence[int] | None = None) -> DM:
    """Coarse DM decomposition (docs/theory.md §2.4): β_O = everything reachable by an alternating
    path from an unmatched equation, β_U = from an unmatched unknown (`alternating_reach`),
    β_E = the rest. An
    equation with no unknowns is in β_O, an unknown occurring nowhere in β_U. ``matching``
    (any maximum matching, e.g. from `maximum_matching`) is computed when not given."""
    n = len(adj)
    m_e = list(matching) if matching is not None else maximum_matching(adj, n_vars)
    m_v = [-1] * n_vars
    for i, j in enumerate(m_e):
        if j >= 0:
            m_v[j] = i
    over_e, over_v = alternating_reach(adj, m_e, m_v)
    under_v, under_e = alternating_reach(_transpose(adj, n_vars), m_v, m_e)
    if any(a and b for a, b in zip(over_e, under_e)) or \
            any(a and b for a, b in zip(over_v, under_v)):
        raise ValueError("dulmage_mendelsohn: the matching given is not maximum")
    return DM(
        over_eqs=tuple(i for i in range(n) if over_e[i]),
        over_vars=tuple(j for j in range(n_vars) if over_v[j]),
        well_eqs=tuple(i for i in range(n) if not over_e[i] and not under_e[i]),
        well_vars=tuple(j for j in range(n_vars) if not over_v[j] and not under_v[j]),
        under_eqs=tuple(i for i in range(n) if under_e[i]),
        under_vars=tuple(j for j in range(n_vars) if under_v[j]),
    )


def dulmage_mendelsohn_graph(g: "WeightedGraph",
                             matching: Sequence[int] | np.ndarray | None = None) -> DM:
    """`dulmage_mendelsohn` (docs/theory.md §2.4, RR-9387 Def 7) on a `WeightedGraph`,
    vectorized for large systems: each alternating search is one breadth-first search (scipy,
    in C) in a digraph on equations ∪ unknowns ∪ {source}: for β_O, source → unmatched
    equations, equation → each of its unknowns, unknown → its matched equation; for β_U,
    source → unmatched unknowns, unknown → each of its equations, equation → its matched
    unknown. Same result as `dulmage_mendelsohn` (independent of the maximum matching given;
    computed with `matching_csr` when not given), in O(|V| + |E|) without Python loops over
    the edges."""
    n, nv = g.n_eqs, g.n_vars
    m_e = np.asarray(matching_csr(g.csr()) if matching is None else matching, dtype=np.int64)
    m_v = np.full(nv, -1, dtype=np.int64)
    matched = np.flatnonzero(m_e >= 0)
    m_v[m_e[matched]] = matched
    rows, cols = g.edge_rows(), g.indices
    src = n + nv
    free_e, free_v = np.flatnonzero(m_e < 0), np.flatnonzero(m_v < 0)
    mv = np.flatnonzero(m_v >= 0)

    def reach(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        dg = sps.csr_matrix((np.ones(len(a), dtype=np.int8), (a, b)), shape=(src + 1, src + 1))
        out = np.zeros(src + 1, dtype=bool)
        out[csgraph.breadth_first_order(dg, src, directed=True, return_predecessors=False)] = True
        out[src] = False
        return out

    over = reach(np.concatenate([np.full(len(free_e), src), rows, n + mv]),
                 np.concatenate([free_e, n + cols, m_v[mv]]))
    under = reach(np.concatenate([np.full(len(free_v), src), n + cols, matched]),
                  np.concatenate([n + free_v, rows, n + m_e[matched]]))
    if (over & under).any():
        raise ValueError("dulmage_mendelsohn_graph: the matching given is not maximum")
    well = ~(over | under)

    def t(mask: np.ndarray) -> tuple[int, ...]:
        return tuple(np.flatnonzero(mask).tolist())

    return DM(over_eqs=t(over[:n]), over_vars=t(over[n:src]),
              well_eqs=t(well[:n]), well_vars=t(well[n:src]),
              under_eqs=t(under[:n]), under_vars=t(under[n:src]))


# --- block-triangular form (§2.3) ----------------------------------------------------------

def strong_components(n: int, src: np.ndarray, dst: np.ndarray) -> tuple[int, np.ndarray]:
    """The strongly connected components of the digraph on ``0..n-1`` with the arcs
    ``src[k] → dst[k]`` (§2.3): (their number, the component of each vertex). The labels are
    arbitrary (the callers order the blocks by `_canonical_topological_positions`, which does
    not read them). scipy's (Pearce's algorithm, in C) for large digraphs; Tarjan's in Python
    (`_tarjan`) when vertices and arcs number at most `SMALL_EDGES`, so that a small model's
    analysis never imports scipy (about 0.2 s of CPU at every start; issue 29)."""
    if n + len(src) <= SMALL_EDGES:
        count, label = _tarjan(n, src.tolist(), dst.tolist())
        return count, np.asarray(label, dtype=np.int32)
    digraph = sps.csr_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(n, n))
    n_comp, labels = csgraph.connected_components(digraph, directed=True, connection="strong")
    return int(n_comp), labels


def _tarjan(n: int, src: Sequence[int], dst: Sequence[int]) -> tuple[int, list[int]]:
    """Tarjan's strongly connected components (1972; docs/theory.md §1.7, §2.3), with an
    explicit stack of (vertex, next arc) in place of recursion: (number of components, the
    component of each vertex)."""
    succ: list[list[int]] = [[] for _ in range(n)]
    for a, b in zip(src, dst):
        succ[a].append(b)
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    label = [-1] * n
    stack: list[int] = []
    seen = comps = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        index[root] = low[root] = seen
        seen += 1
        stack.append(root)
        on_stack[root] = True
        work = [(root, 0)]
        while work:
            v, k = work[-1]
            arcs = succ[v]
            if k < len(arcs):
                work[-1] = (v, k + 1)
                w = arcs[k]
                if index[w] < 0:
                    index[w] = low[w] = seen
                    seen += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, 0))
                elif on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
                continue
            work.pop()
            if work:
                u = work[-1][0]
                if low[v] < low[u]:
                    low[u] = low[v]
            if low[v] == index[v]:
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    label[w] = comps
                    if w == v:
                        break
                comps += 1
    return comps, label


def unique_perfect_matching(adj: Sequence[Sequence[int]], matching: Sequence[int]) -> bool:
    """Whether the perfect matching ``matching`` (``matching[e]``: the unknown of equation e,
    every equation and unknown matched) of the square graph ``adj`` is its only one
    (docs/theory.md §2.8): no alternating cycle, i.e. the digraph of §2.3 (owner(x) → e for
    each unmatched edge (e, x)) is acyclic, which Kahn's algorithm decides in O(|V| + |E|)."""
    n = len(adj)
    owner = [-1] * n
    for e, x in enumerate(matching):
        owner[x] = e
    succ: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for e, row in enumerate(adj):
        for x in row:
            k = owner[x]
            if k != e:
                succ[k].append(e)
                indeg[e] += 1
    ready = [e for e in range(n) if indeg[e] == 0]
    done = 0
    while ready:
        k = ready.pop()
        done += 1
        for e in succ[k]:
            indeg[e] -= 1
            if indeg[e] == 0:
                ready.append(e)
    return done == n


def block_triangular(adj: Sequence[Sequence[int]], n_vars: int,
                     matching: Sequence[int]) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Block-triangular form by strongly connected components (docs/theory.md §2.3,
    RR-9387 Lemma 6). Orient each edge f → x if matched, x → f otherwise; the SCCs of the equation
    digraph "owner(x) → reader of x" are the blocks, in a topological (solve) order.

    Only matched equations take part (pass a square structurally regular system, e.g. β_E).
    Returns ``[(equations, unknowns), ...]`` in solve order, each sorted. The block sets and
    their partial order do not depend on the matching; ties in the topological order are
    broken by the smallest equation index, so the whole sequence is matching-independent.
    """
    n = len(adj)
    m_e = np.asarray(matching, dtype=np.int64)
    owner = np.full(n_vars, -1, dtype=np.int64)
    matched = np.flatnonzero(m_e >= 0)
    owner[m_e[matched]] = matched
    lens = np.fromiter((len(r) for r in adj), dtype=np.int64, count=n)
    total = int(lens.sum())
    rows = np.repeat(np.arange(n, dtype=np.int64), lens)
    cols = np.fromiter((j for r in adj for j in r), dtype=np.int64, count=total)
    with gc_paused():
        return _btf_arrays(n, m_e, owner, rows, cols)


def block_triangular_graph(g: WeightedGraph, matching: Sequence[int] | np.ndarray,
                           keep: np.ndarray | None = None
                           ) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Block-triangular form (docs/theory.md §2.3, RR-9387 Lemma 6) of a
    `WeightedGraph`, optionally restricted to the edges where ``keep`` is true, without
    building Python lists. With ``keep`` = the tight edges σ_ij + c_i = d_j of the Σ-method,
    the graph is the sparsity pattern of Pryce's system Jacobian, i.e. of F^c over the
    leading variables (docs/theory.md §4.6, §4.7), and the blocks are those of the index-reduced
    system. ``matching`` must be a complete matching of that restricted graph on the
    equations taking part (unmatched equations are left out, as in `block_triangular`); the
    block sets, their order and the tie-breaking are those of `block_triangular`."""
    m_e = np.asarray(matching, dtype=np.int64)
    owner = np.full(g.n_vars, -1, dtype=np.int64)
    matched = np.flatnonzero(m_e >= 0)
    owner[m_e[matched]] = matched
    with gc_paused():
        return list(iter_block_triangular_graph(g, matching, keep))


def iter_block_triangular_graph(g: WeightedGraph, matching: Sequence[int] | np.ndarray,
                                keep: np.ndarray | None = None
                                ) -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
    """`block_triangular_graph` one block at a time: the blocks are made from the sorted
    arrays as they are read, so that a caller that turns them into its own objects never
    holds both (at 10^6 equations, about 300 MB less at the peak of ``analyze``, issue 16)."""
    return _btf_blocks(g.n_eqs, *_btf_inputs(g, matching, keep))


def iter_btf_chunks(g: WeightedGraph, matching: Sequence[int] | np.ndarray,
                    keep: np.ndarray | None = None
                    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """`iter_block_triangular_graph` as arrays, `_BLOCKS_PER_CHUNK` blocks at a time: per
    chunk, the equations of its blocks one block after the other (each block's sorted), their
    matched unknowns likewise, and the bounds of the blocks in them (``cuts``, from 0): block
    k of the chunk is ``eqs[cuts[k]:cuts[k + 1]]`` over ``unknowns[cuts[k]:cuts[k + 1]]``. A
    caller that makes its own objects of the blocks makes them from arrays, not tuples
    (`mdae_fmu.structure.per_mode`, issue 29). As lazy as `iter_block_triangular_graph`: the
    graph may be freed before the first chunk is read."""
    return _btf_chunks(g.n_eqs, *_btf_inputs(g, matching, keep))


def _btf_inputs(g: WeightedGraph, matching: Sequence[int] | np.ndarray,
                keep: np.ndarray | None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The arrays the block-triangular readers start from: the matching by equation, the
    matched equation of each unknown (-1: none), and the edges' rows and columns (those of
    ``keep`` only, when given)."""
    m_e = np.asarray(matching, dtype=np.int64)
    # (positions as int32: the edge arrays of 10^6 equations are half as large)
    owner = np.full(g.n_vars, -1, dtype=np.int32)
    matched = np.flatnonzero(m_e >= 0)
    owner[m_e[matched]] = matched
    rows = np.repeat(np.arange(g.n_eqs, dtype=np.int32), np.diff(g.indptr))
    cols = g.indices
    if keep is not None:
        rows, cols = rows[keep], cols[keep]
    return m_e, owner, rows, cols


def _btf_arrays(n: int, m_e: np.ndarray, owner: np.ndarray, rows: np.ndarray,
                cols: np.ndarray) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """`_btf_blocks` as a list."""
    return list(_btf_blocks(n, m_e, owner, rows, cols))


_BLOCKS_PER_CHUNK = 4096


def _btf_blocks(n: int, m_e: np.ndarray, owner: np.ndarray, rows: np.ndarray,
                cols: np.ndarray) -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
    """SCCs (`strong_components`) of the digraph owner(x) → f, then Kahn's topological
    sort of the condensation with a min-heap on each block's smallest equation (unique per
    block, so the heap holds plain integers) (`_btf_chunks`). The blocks are converted to
    tuples `_BLOCKS_PER_CHUNK` at a time, as they are read."""
    for eqs, unknowns, c in _btf_chunks(n, m_e, owner, rows, cols):
        # (slices of tuples are tuples: one object per block and side)
        eq_t, var_t = tuple(eqs.tolist()), tuple(unknowns.tolist())
        cl = c.tolist()
        for x, y in zip(cl, cl[1:]):
            yield eq_t[x:y], var_t[x:y]


def _btf_chunks(n: int, m_e: np.ndarray, owner: np.ndarray, rows: np.ndarray,
                cols: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The blocks of `_btf_blocks` as the arrays of `iter_btf_chunks`."""
    src = owner[cols]
    sel = src >= 0
    sel &= src != rows
    sel &= (m_e >= 0)[rows]
    src, dst = src[sel], rows[sel]
    # (the edge arrays are the generator's own: freed here, not when the last block is read)
    del rows, cols, sel, owner
    n_comp, label = strong_components(n, src, dst)
    matched = np.flatnonzero(m_e >= 0)
    if len(matched) == 0:
        return
    # block key = smallest equation index in the block (components of unmatched equations
    # keep key n and are dropped)
    key = np.full(n_comp, n, dtype=np.int64)
    np.minimum.at(key, label[matched], matched)
    comp_of_key = np.full(n + 1, -1, dtype=np.int64)
    live = np.flatnonzero(key < n)
    comp_of_key[key[live]] = live
    # condensation arcs, deduplicated (int64: scipy's labels are int32, and the pair code
    # a * n_comp + b overflows int32 beyond 46 340 components)
    # (in place, the edges dropped as they are read: a few arrays of the edges' size at once)
    a, b = label[src].astype(np.int64), label[dst]
    del src, dst
    cross = a != b
    a, b = a[cross], b[cross]
    del cross
    a *= n_comp
    a += b
    del b
    # (sorted distinct codes; not `np.unique`, whose first call imports numpy.ma: 9 ms)
    a.sort()
    keep = np.ones(len(a), dtype=bool)
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    code = a[keep]
    del a, keep
    a, b = code // n_comp, code % n_comp
    pos = _canonical_topological_positions(n_comp, live, key, comp_of_key, a, b)
    # equations grouped by block position, sorted inside; their matched unknowns likewise
    bpos = pos[label[matched]]
    eq_sorted = matched[np.lexsort((matched, bpos))]
    var_sorted = m_e[matched][np.lexsort((m_e[matched], bpos))]
    bp_sorted = np.sort(bpos)
    cuts = np.concatenate(([0], np.flatnonzero(np.diff(bp_sorted)) + 1, [len(matched)]))
    # only the sorted equations, unknowns and cuts are read while the blocks are made: the
    # rest goes before the caller's objects for the blocks come (about 150 MB at 10^6
    # equations, docs/performance.md "stop 41, memory")
    del label, key, comp_of_key, live, a, b, code, pos, bpos, bp_sorted
    del m_e, matched
    for k in range(0, len(cuts) - 1, _BLOCKS_PER_CHUNK):
        c = cuts[k:k + _BLOCKS_PER_CHUNK + 1]
        lo, hi = int(c[0]), int(c[-1])
        yield eq_sorted[lo:hi], var_sorted[lo:hi], c - lo


def _canonical_topological_positions(n_comp: int, live: np.ndarray, key: np.ndarray,
                                     comp_of_key: np.ndarray, a: np.ndarray, b: np.ndarray,
                                     fast: bool = True) -> np.ndarray:
    """Position of each live component in the topological order of the condensation arcs
    a → b that always takes the ready component with the smallest key (Kahn's algorithm with
    a min-heap): a canonical order, independent of the matching. ``fast``: the same order by
    `_ranked_topological_order` (the key order itself when it is topological); otherwise by
    the heap over the components as they are (the reference of the tests)."""
    pos = np.empty(n_comp, dtype=np.int64)
    if fast:
        # the live components by key (unique among them: a block's smallest equation)
        by_key = live[np.argsort(key[live])]
        if np.all(key[a] < key[b]):
            # the order of smallest equations is already topological: it is what the heap
            # would produce (the heap always pops the smallest ready key)
            pos[by_key] = np.arange(len(live))
        else:
            rank = np.empty(n_comp, dtype=np.int32 if n_comp < 2**30 else np.int64)
            rank[by_key] = np.arange(len(by_key))
            pos[by_key[_ranked_topological_order(len(by_key), rank[a], rank[b])]] = \
                np.arange(len(by_key))
    else:
        indeg = np.bincount(b, minlength=n_comp).tolist()
        succ_ptr = np.zeros(n_comp + 1, dtype=np.int64)
        np.cumsum(np.bincount(a, minlength=n_comp), out=succ_ptr[1:])
        succ = b.tolist()                     # already grouped by a (code is sorted)
        sp_l = succ_ptr.tolist()
        key_l = key.tolist()
        cok = comp_of_key.tolist()
        heap = [key_l[c] for c in live.tolist() if indeg[c] == 0]
        heapq.heapify(heap)
        pos_l = [0] * n_comp
        t = 0
        pop, push = heapq.heappop, heapq.heappush
        while heap:
            c = cok[pop(heap)]
            pos_l[c] = t
            t += 1
            for s_ in succ[sp_l[c]:sp_l[c + 1]]:
                indeg[s_] -= 1
                if indeg[s_] == 0:
                    push(heap, key_l[s_])
        pos[:] = pos_l
    return pos


def _ranked_topological_order(m: int, ra: np.ndarray, rb: np.ndarray) -> np.ndarray:
    """The ranks 0 … m-1 (a component's rank: its place in the order of the keys) in the
    order of Kahn's algorithm that always takes the smallest ready rank, for the arcs
    ``ra → rb`` (an acyclic graph): `_canonical_topological_positions`' order, read in ranks
    so that the heap holds the ranks themselves.

    When no arc ends where another starts (every path has one arc: a component read by
    others reads none, as the cells of a chain whose loop blocks feed the equations written
    before them; issue 29), the order is computed without the heap: the components no arc
    enters (the sources) are all ready at once, so they are taken in rank order, S_0 < S_1 <
    …; a component t that arcs enter is ready once the last of its predecessors, S_R(t), is
    taken, and is taken just before the first later source larger than it, S_J(t) with
    J(t) = max(R(t) + 1, the number of sources smaller than t), after the ready ones
    smaller than it (those with the same J and a smaller rank). Otherwise the heap runs,
    taking a released component at once when it is smaller than every ready one
    (docs/theory.md §2.7)."""
    indeg_a = np.bincount(rb, minlength=m)
    if len(ra) == 0 or not indeg_a[ra].any():
        # paths of one arc: every arc starts at a source (docstring). ``before[r]``: the
        # sources of rank at most r, so S_j has before = j + 1 and a component t that arcs
        # enter has #{j : S_j < t} = before[t]; sorting on 2 J(t) for t and 2 j + 1 for S_j
        # (stable: equal values by rank) puts t just before S_J(t). (int32 and few arrays:
        # the block-triangular form is the per-mode stage's peak)
        small = np.int32 if m < 2**30 else np.int64
        source = indeg_a == 0
        del indeg_a
        before = np.cumsum(source, dtype=small)
        last = np.zeros(m, dtype=small)         # R(t) + 1, from the arcs' sources
        np.maximum.at(last, rb, before[ra])
        np.maximum(last, before, out=last)      # J(t)
        last *= 2
        last[source] = 2 * before[source] - 1
        return np.argsort(last, kind="stable")
    order = np.argsort(ra, kind="stable")
    succ = rb[order].tolist()
    ptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(ra, minlength=m), out=ptr[1:])
    ptr_l = ptr.tolist()
    indeg = indeg_a.tolist()
    heap = np.flatnonzero(indeg_a == 0).tolist()     # (ascending: a heap already)
    out: list[int] = []
    emit = out.append
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        r = pop(heap)
        while True:
            emit(r)
            nxt = -1
            for s_ in succ[ptr_l[r]:ptr_l[r + 1]]:
                indeg[s_] -= 1
                if indeg[s_] == 0:
                    if nxt >= 0:
                        push(heap, nxt)
                    nxt = s_
            # the last component released, taken now when it is smaller than every ready one
            if nxt < 0:
                break
            if heap and heap[0] < nxt:
                push(heap, nxt)
                break
            r = nxt
    return np.asarray(out, dtype=np.int64)
