"""Pryce's Σ-method on a weighted bipartite graph: highest-value transversal, smallest offsets,
tight edges, and the non-square extension (Algorithm 2′).

Purely structural and sparse: no sympy here (latent equations are built by
`mdae_fmu.structure.latent` only when asked), so the offsets and the block-triangular form of a
10^5-equation system cost a few seconds at most.

References: docs/theory.md §4.1–§4.7 (RR-9387 §4, Algorithms 2 and 2′; Pryce 2001).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .graph import (DM, SMALL_EDGES, WeightedGraph, alternating_reach, dulmage_mendelsohn_graph,
                    matching_csr, maximum_matching, unique_perfect_matching)

if TYPE_CHECKING:
    import scipy.sparse as sps
    from scipy.sparse import csgraph
else:   # loaded on first use (`mdae_fmu.lazy_modules`): small systems never need them
    from ..lazy_modules import csgraph, sparse as sps

# scipy's LAPJVsp up to this many unknowns; the vectorized primal–dual method above.
_DENSE_MAX = 400
# Jacobi sweeps of Pryce's iteration before switching to the ordered (Gauss–Seidel) sweep.
_JACOBI_CAP = 64


class NotOptimal(Exception):
    """Pryce's iteration did not reach a fixpoint within its bound: the transversal given is
    not of highest value (docs/theory.md §4.4, RR-9387 Lemma 17: FAIL_NOT_OPTIMAL)."""


@dataclass(frozen=True, eq=False)
class SigmaResult:
    """Outcome of the Σ-method on one system (docs/theory.md §4, §4.4).

    ``status``: ``"ok"`` (square, offsets found), ``"underdetermined"`` (fewer equations than
    unknowns but an equation-complete matching: offsets from Algorithm 2′, ``dm`` lists the
    undetermined leading variables; an unknown occurring in no equation has d = −1),
    ``"singular"`` (no complete / equation-complete matching:
    no offsets; ``dm`` is the DM decomposition of the original graph naming the culprits).
    ``matching[i]`` is the unknown matched to equation i (−1 if none); ``c``, ``d`` are the
    canonical (elementwise smallest) offsets, ``None`` when singular. ``value`` is Val(Σ),
    ``sweeps`` the number of sweeps of Pryce's iteration.
    """
    status: str
    matching: np.ndarray
    c: np.ndarray | None = None
    d: np.ndarray | None = None
    dm: DM | None = None
    value: int | None = None
    sweeps: int = 0
    owner_eq: np.ndarray | None = field(default=None, repr=False)
    owner_var: np.ndarray | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


# --- highest-value transversal (§4.2) ------------------------------------------------------

def highest_value_transversal(g: WeightedGraph) -> np.ndarray | None:
    """Maximum-weight complete matching of a square graph (docs/theory.md §4.2, primal LP (57)):
    ``result[i]`` = unknown of equation i, or None when no complete matching exists.

    scipy's LAPJVsp (`_hvt_lapjvsp`) for small systems; for large sparse ones the vectorized
    primal–dual method (`_hvt_primal_dual`), falling back to LAPJVsp if that needs unusually
    many phases.
    """
    n = g.n_eqs
    if n != g.n_vars:
        raise ValueError("highest_value_transversal needs a square system")
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if n <= _DENSE_MAX:
        # (scipy's LAPJVsp: no import of scipy.optimize, whose import alone cost 0.16 s of CPU
        # per process, most of a small export's fixed cost; issue 29)
        return _hvt_lapjvsp(g)
    found, decided = _hvt_primal_dual(g)
    if decided:
        return found
    return _hvt_lapjvsp(g)


def _hvt_lapjvsp(g: WeightedGraph) -> np.ndarray | None:
    """HVT by scipy's LAPJVsp on weights σ + 1 (maximize), so that no weight is an explicit
    zero, which scipy would drop (docs/theory.md §4.2)."""
    n = g.n_eqs
    m = sps.csr_matrix(((g.weights + 1).astype(np.float64), g.indices, g.indptr), shape=(n, n))
    try:
        r, cidx = csgraph.min_weight_full_bipartite_matching(m, maximize=True)
    except ValueError:          # no full matching
        return None
    out = np.empty(n, dtype=np.int64)
    out[r] = cidx
    return out


_PD_MAX_PHASES = 256


def _hvt_primal_dual(g: WeightedGraph) -> tuple[np.ndarray | None, bool]:
    """Highest-value transversal by the Hungarian primal–dual method with whole-phase dual
    updates (the primal and dual linear programs of docs/theory.md §4.2), vectorized for large
    sparse systems.

    Start from the dual c = 0, d_j = max_i σ_ij (feasible: d_j − c_i ≥ σ_ij). Each phase takes
    a maximum matching of the tight graph {σ_ij + c_i = d_j} (Hopcroft–Karp in C). If it is
    perfect, it is a complete matching on tight edges of a feasible dual, hence optimal by
    complementary slackness (62). Otherwise let R be the equations and unknowns reachable by
    alternating paths from the unmatched equations (β_O of the tight graph, docs/theory.md §2.4);
    raise c_i and d_j on R by δ = the smallest slack d_j − c_i − σ_ij of an edge leaving R. This
    keeps the dual feasible and the matching tight, and strictly grows R or the matching, so
    the method terminates; δ = ∞ means no complete matching (returns None).

    Physical systems need a few phases (about the index). Returns (matching or None,
    decided); after ``_PD_MAX_PHASES`` phases it gives up (decided = False) and the caller
    uses scipy's LAPJVsp instead.
    """
    n, nv = g.n_eqs, g.n_vars
    # (int32 positions, slacks computed in place, the phase's graphs built as CSR arrays:
    # about half the memory of COO arrays at 10^6 equations, docs/performance.md "stop 41,
    # memory"; the same graphs, hence the same matchings)
    rows = np.repeat(np.arange(n, dtype=np.int32), np.diff(g.indptr))
    cols, w = g.indices, g.weights
    cols32 = cols.astype(np.int32)
    c = np.zeros(n, dtype=np.int64)
    d = np.full(nv, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(d, cols, w)
    if np.any(d == np.iinfo(np.int64).min):
        return None, True
    src_nodes = n + nv                                 # a super-source
    for _ in range(_PD_MAX_PHASES):
        # slack d_j − c_i − σ_ij ≥ 0 of every edge; the tight ones have none
        slack = d[cols]
        slack -= c[rows]
        slack -= w
        tight = slack == 0
        ends = np.zeros(len(tight) + 1, dtype=np.int64)
        np.cumsum(tight, out=ends[1:])
        t_ptr = ends[g.indptr].astype(np.int32)
        del ends
        tc = cols32[tight]
        del tight
        tg = sps.csr_matrix((np.ones(len(tc), dtype=np.int8), tc, t_ptr), shape=(n, nv))
        m = np.asarray(csgraph.maximum_bipartite_matching(tg, perm_type="column"),
                       dtype=np.int64)
        del tg
        free = m < 0
        if not free.any():
            return m, True
        # alternating reachability from the free equations: eq i -> var j (tight) -> mate(j),
        # one CSR digraph on equations, unknowns and the source, row by row
        matched = np.flatnonzero(~free)
        mate = np.full(nv, -1, dtype=np.int64)
        mate[m[matched]] = matched
        has_mate = mate >= 0
        free_eqs = np.flatnonzero(free)
        n_t = int(t_ptr[-1])
        ptr = np.empty(src_nodes + 2, dtype=np.int32)
        ptr[:n + 1] = t_ptr
        ptr[n + 1:src_nodes + 1] = n_t + np.cumsum(has_mate, dtype=np.int32)
        ptr[src_nodes + 1] = ptr[src_nodes] + len(free_eqs)
        tc += n
        ind = np.concatenate([tc, mate[has_mate].astype(np.int32),
                              free_eqs.astype(np.int32)])
        del tc, t_ptr
        dg = sps.csr_matrix((np.ones(len(ind), dtype=np.int8), ind, ptr),
                            shape=(src_nodes + 1, src_nodes + 1))
        reach = csgraph.breadth_first_order(dg, src_nodes, directed=True,
                                            return_predecessors=False)
        del dg, ind, ptr
        in_r = np.zeros(src_nodes + 1, dtype=bool)
        in_r[reach] = True
        r_eq, r_var = in_r[:n], in_r[n:src_nodes]
        leaving = r_eq[rows]
        leaving &= ~r_var[cols]
        if not leaving.any():
            return None, True
        delta = int(slack[leaving].min())
        del slack, leaving
        c[r_eq] += delta
        d[r_var] += delta
    return None, False


# --- Pryce's smallest offsets (§4.3) -------------------------------------------------------

def pryce_offsets(g: WeightedGraph, owner_eq: np.ndarray, owner_var: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, int]:
    """Smallest offsets (c, d) by Pryce's fixed-point iteration (docs/theory.md §4.3, RR-9387
    Algorithm 2, §4.4, RR-9387 Algorithm 2′): from c = 0 repeat
    (a) d_j = max{σ_ij + c_i : (i,j) ∈ E},  (b) c_i = max{d_j − σ_ij : j ∈ own(i)}
    until c is unchanged. ``own`` is given as pairs (``owner_eq[p]``, ``owner_var[p]``): the
    transversal in the square case, the subgraph 𝒢_ξ in the non-square case.

    Termination bound: at most n_e + 1 sweeps; more means a positive cycle, i.e. the owner map
    is not optimal, and `NotOptimal` is raised. Sweeps run vectorized (Jacobi order) up to a
    cap; beyond it the same monotone iteration continues in topological order of the
    dependency graph (`_pryce_ordered`), which converges in one pass on acyclic parts.
    Returns (c, d, sweeps).
    """
    n_e = g.n_eqs
    cols = g.indices
    # the edges grouped by unknown (stable: by equation inside), as the rows and weights
    # that step (a) reads: no column copy, one temporary per sweep (docs/performance.md,
    # "stop 41, memory")
    order_v = np.argsort(cols, kind="stable")
    rows_v = np.repeat(np.arange(n_e, dtype=np.int32), np.diff(g.indptr))[order_v]
    w_v = g.weights[order_v]
    del order_v
    n_edges = len(cols)
    per_var = np.bincount(cols, minlength=g.n_vars)
    starts = np.zeros(g.n_vars, dtype=np.int64)
    np.cumsum(per_var[:-1], out=starts[1:])
    has_edge = per_var > 0
    del per_var
    o_sort = np.argsort(owner_eq, kind="stable")
    oi, oj = owner_eq[o_sort], owner_var[o_sort]
    osig = _edge_weights(g, oi, oj)
    o_starts = np.searchsorted(oi, np.arange(n_e))
    has_owner = np.bincount(oi, minlength=n_e) > 0
    safe_v = np.minimum(starts, max(n_edges - 1, 0))
    safe_o = np.minimum(o_starts, max(len(oi) - 1, 0))

    def var_offsets(c: np.ndarray) -> np.ndarray:
        if n_edges == 0:
            return np.zeros(g.n_vars, dtype=np.int64)
        vals = c[rows_v]
        vals += w_v
        d = np.maximum.reduceat(vals, safe_v)
        return np.where(has_edge, d, 0)

    c = np.zeros(n_e, dtype=np.int64)
    limit = n_e + 1
    sweeps = 0
    while True:
        d = var_offsets(c)
        sweeps += 1
        if len(oi):
            cn = np.maximum.reduceat(d[oj] - osig, safe_o)
            cn = np.where(has_owner, np.maximum(cn, 0), 0)
        else:
            cn = np.zeros(n_e, dtype=np.int64)
        if np.array_equal(cn, c):
            return c, d, sweeps
        c = cn
        if sweeps >= limit:
            raise NotOptimal(f"no fixpoint after {sweeps} sweeps")
        if sweeps >= _JACOBI_CAP:
            c = _pryce_ordered(g, c, oi, oj, osig)
            return c, var_offsets(c), sweeps + 1


def _edge_weights(g: WeightedGraph, oi: np.ndarray, oj: np.ndarray) -> np.ndarray:
    """σ of the edges (oi[p], oj[p]); each must be an edge (rows are sorted, so the keys
    row·n_vars + col of the edges are sorted and one vectorized search finds them)."""
    keys = g.edge_rows()
    keys *= g.n_vars
    keys += g.indices
    want = np.asarray(oi, dtype=np.int64) * g.n_vars + np.asarray(oj, dtype=np.int64)
    pos = np.searchsorted(keys, want)
    ok = pos < len(keys)
    ok[ok] = keys[pos[ok]] == want[ok]
    if not ok.all():
        p = int(np.flatnonzero(~ok)[0])
        raise ValueError(f"owner pair ({oi[p]}, {oj[p]}) is not an edge")
    return g.weights[pos]


def _pryce_ordered(g: WeightedGraph, c0: np.ndarray, oi: np.ndarray, oj: np.ndarray,
                   osig: np.ndarray) -> np.ndarray:
    """Pryce's iteration (docs/theory.md §4.3) eliminated to equations, c_i = max(c_i, c_k + σ_kj −
    σ_ij) for
    j ∈ own(i) and k an equation of j, swept in topological order of the strongly connected
    components of that dependency graph (Gauss–Seidel). One pass settles acyclic parts; inside
    a component at most |component| + 1 sweeps are allowed (Bellman–Ford bound), else
    `NotOptimal`. Starts from any c0 below the least fixpoint (e.g. a Jacobi iterate)."""
    n = g.n_eqs
    # equations of each unknown (CSC)
    rows = g.edge_rows()
    order_v = np.argsort(g.indices, kind="stable")
    eq_of = rows[order_v]
    sig_of = g.weights[order_v]
    vptr = np.zeros(g.n_vars + 1, dtype=np.int64)
    np.cumsum(np.bincount(g.indices, minlength=g.n_vars), out=vptr[1:])
    deg = vptr[oj + 1] - vptr[oj]
    # arcs k -> i with weight σ_kj − σ_ij
    pair = np.repeat(np.arange(len(oi)), deg)
    pos = np.arange(int(deg.sum())) - np.repeat(np.cumsum(deg) - deg, deg) + vptr[oj][pair]
    src = eq_of[pos]
    dst = oi[pair]
    wt = sig_of[pos] - osig[pair]
    sel = src != dst
    src, dst, wt = src[sel], dst[sel], wt[sel]
    n_comp, label = csgraph.connected_components(
        sps.csr_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(n, n)),
        directed=True, connection="strong")
    # topological order of the components (Kahn)
    a, b = label[src], label[dst]
    cross = a != b
    arcs = np.unique(np.stack([a[cross], b[cross]]), axis=1) if cross.any() \
        else np.zeros((2, 0), dtype=np.int64)
    indeg = np.bincount(arcs[1], minlength=n_comp).tolist()
    sptr = np.zeros(n_comp + 1, dtype=np.int64)
    np.cumsum(np.bincount(arcs[0], minlength=n_comp), out=sptr[1:])
    succ = arcs[1][np.argsort(arcs[0], kind="stable")].tolist()
    sptr_l = sptr.tolist()
    q = deque(k for k in range(n_comp) if indeg[k] == 0)
    topo = []
    while q:
        k = q.popleft()
        topo.append(k)
        for s in succ[sptr_l[k]:sptr_l[k + 1]]:
            indeg[s] -= 1
            if indeg[s] == 0:
                q.append(s)
    members = np.argsort(label, kind="stable").tolist()
    mptr = np.zeros(n_comp + 1, dtype=np.int64)
    np.cumsum(np.bincount(label, minlength=n_comp), out=mptr[1:])
    mptr_l = mptr.tolist()
    # incoming arcs per equation
    o = np.argsort(dst, kind="stable")
    in_src = src[o].tolist()
    in_w = wt[o].tolist()
    iptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=iptr[1:])
    iptr_l = iptr.tolist()
    c = c0.tolist()
    for k in topo:
        mem = members[mptr_l[k]:mptr_l[k + 1]]
        for _ in range(len(mem) + 1 if len(mem) > 1 else 1):
            changed = False
            for i in mem:
                best = c[i]
                for p in range(iptr_l[i], iptr_l[i + 1]):
                    v = c[in_src[p]] + in_w[p]
                    if v > best:
                        best = v
                if best != c[i]:
                    c[i] = best
                    changed = True
            if not changed:
                break
        else:
            if len(mem) > 1:
                raise NotOptimal("positive cycle in Pryce's dependency graph")
    return np.asarray(c, dtype=np.int64)


def tight_edges(g: WeightedGraph, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Mask of the tight edges σ_ij + c_i = d_j: the pattern of Pryce's system Jacobian, i.e.
    of ∂F^c/∂(leading variables) (docs/theory.md §4.6, §4.7)."""
    # (in place: one temporary of the edges' size at a time)
    lhs = c[np.repeat(np.arange(g.n_eqs, dtype=np.int32), np.diff(g.indptr))]
    lhs += g.weights
    mask: np.ndarray = lhs == d[g.indices]
    return mask


# --- the Σ-method driver (§4, §4.4) ----------------------------------------------------------

def sigma_method(g: WeightedGraph) -> SigmaResult:
    """Σ-method for one system (docs/theory.md §4, and §4.4 for fewer equations than unknowns).

    1. maximum matching; if it does not cover every equation (or, square, every unknown), the
       system is structurally singular: return the DM decomposition of the original graph;
    2. square: highest-value transversal (§4.2) then Pryce's offsets (§4.3);
       non-square (n_e < n_v, equation-complete): Algorithm 2′ (`nonsquare_owners` + §4.3 with
       max aggregation), and the DM of the tight graph names the undetermined leading variables.
    """
    hvt = _only_transversal(g)
    if hvt is not None:
        m = hvt
    else:
        m = np.asarray(matching_csr(g.csr()), dtype=np.int64) if g.n_eqs else \
            np.zeros(0, dtype=np.int64)
    n_matched = int((m >= 0).sum())
    if n_matched < g.n_eqs or (g.n_eqs == g.n_vars and n_matched < g.n_vars):
        return SigmaResult(status="singular", matching=m,
                           dm=dulmage_mendelsohn_graph(g, m))
    if g.n_eqs == g.n_vars:
        if hvt is None:
            hvt = highest_value_transversal(g)
        if hvt is None:      # cannot happen after the matching check
            return SigmaResult(status="singular", matching=m,
                               dm=dulmage_mendelsohn_graph(g, m))
        oi = np.arange(g.n_eqs, dtype=np.int64)
        c, d, sweeps = pryce_offsets(g, oi, hvt)
        value = int(d.sum() - c.sum())
        return SigmaResult(
            status="ok",
            matching=hvt,
            c=c,
            d=d,
            dm=None,
            value=value,
            sweeps=sweeps,
            owner_eq=oi,
            owner_var=hvt,
        )
    return _underdetermined(g)


def _only_transversal(g: WeightedGraph) -> np.ndarray | None:
    """The highest-value transversal of a small square graph that has exactly one
    (docs/theory.md §2.8), without scipy; None when the graph is not square, has more than
    `SMALL_EDGES` vertices and edges, has no complete matching or several highest-value
    transversals (the caller then runs the general path, so its results are unchanged).

    The primal–dual method of `_hvt_primal_dual` in plain Python (the tight graph's maximum
    matching by `maximum_matching`, the alternating search by a breadth-first search) gives
    a complete matching of the tight graph of an optimal dual; the highest-value transversals
    are exactly the perfect matchings of that tight graph (complementary slackness, §4.2), so
    when `unique_perfect_matching` holds it is the only one, the one scipy's assignment
    solver returns too. A model whose modes all have a unique transversal (an ODE, most small
    models without algebraic loops) thus never imports scipy (issue 29)."""
    n = g.n_eqs
    if n == 0 or n != g.n_vars or 2 * n + g.n_edges > SMALL_EDGES:
        return None
    adj = g.adjacency()
    wts = g.weights.tolist()
    ptr = g.indptr.tolist()
    sig = [wts[ptr[i]:ptr[i + 1]] for i in range(n)]
    c = [0] * n
    d: list[int | None] = [None] * n
    for row, ws in zip(adj, sig):
        for j, w in zip(row, ws):
            dj = d[j]
            if dj is None or w > dj:
                d[j] = w
    if any(dj is None for dj in d):
        return None                          # an unknown in no equation
    dd: list[int] = [int(dj) for dj in d if dj is not None]
    for _ in range(_PD_MAX_PHASES):
        tight = [[j for j, w in zip(row, ws) if dd[j] - c[i] == w]
                 for i, (row, ws) in enumerate(zip(adj, sig))]
        m = maximum_matching(tight, n)
        free = [i for i in range(n) if m[i] < 0]
        if not free:
            if not unique_perfect_matching(tight, m):
                return None
            return np.asarray(m, dtype=np.int64)
        # β_O of the tight graph: reached from the free equations by alternating paths
        mate = [-1] * n
        for i, j in enumerate(m):
            if j >= 0:
                mate[j] = i
        in_e, in_v = alternating_reach(tight, m, mate)
        delta = min((dd[j] - c[i] - w for i in range(n) if in_e[i]
                     for j, w in zip(adj[i], sig[i]) if not in_v[j]), default=None)
        if delta is None:
            return None                      # no complete matching
        for i in range(n):
            if in_e[i]:
                c[i] += delta
            if in_v[i]:
                dd[i] += delta
    return None


def _underdetermined(g: WeightedGraph) -> SigmaResult:
    """A8 for n_e < n_v with an equation-complete matching. Unknowns occurring in no equation
    are left out of the LP (docs/theory.md §4.4): they get d = −1 and land in β_U."""
    deg = np.bincount(g.indices, minlength=g.n_vars)
    used = np.flatnonzero(deg > 0)
    remap = np.full(g.n_vars, -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    g2 = WeightedGraph(
        n_eqs=g.n_eqs,
        n_vars=len(used),
        indptr=g.indptr,
        indices=remap[g.indices],
        weights=g.weights,
    )
    if g2.n_eqs == g2.n_vars:
        oi = np.arange(g.n_eqs, dtype=np.int64)
        square = highest_value_transversal(g2)
        if square is None:      # (the equation-complete matching of g is one of g2)
            raise RuntimeError("_underdetermined: no complete matching of the square system")
        oj2 = square
    else:
        oi, oj2, _ = nonsquare_owners(g2)
    c, d2, sweeps = pryce_offsets(g2, oi, oj2)
    value = int(d2.sum() - c.sum())
    d = np.full(g.n_vars, -1, dtype=np.int64)
    d[used] = d2
    oj = used[oj2]
    tight = tight_edges(g, c, d)
    tg = g.subgraph(tight)
    # one owned unknown per equation, as a matching of the tight graph (for BTF of β_E)
    mt = np.asarray(matching_csr(tg.csr()), dtype=np.int64)
    dm = dulmage_mendelsohn_graph(tg, mt)
    return SigmaResult(
        status="underdetermined",
        matching=mt,
        c=c,
        d=d,
        dm=dm,
        value=value,
        sweeps=sweeps,
        owner_eq=oi,
        owner_var=oj,
    )


def nonsquare_owners(g: WeightedGraph) -> tuple[np.ndarray, np.ndarray, int]:
    """Primal optimum ξ of the linear program of docs/theory.md §4.2 for n_e < n_v (the
    non-square case, docs/theory.md §4.4), by a sparse reduction to a square assignment problem.

    A feasible ξ attaches every unknown to one equation and every equation to at least one
    unknown. Choosing one attached unknown per equation gives an equation-complete matching M;
    every other unknown is best attached to an equation where its weight is maximal
    (v_j = max_i σ_ij). So val(ξ) = Σ_{(i,j)∈M} σ_ij + Σ_{j∉M} v_j, and LP (57) is the
    maximum-weight equation-complete matching problem for that objective.

    The plain reduction gives every unknown an edge to each of the n_v − n_e free slots:
    n_v·(n_v − n_e) edges, a dense block. Here each unknown j gets one private slot j' instead
    (weight v_j: "j is not in M"), and the slots that are not used absorb the equations
    through a transposed copy of the graph (edge (j', i') of weight 0 for each edge (i, j)).
    The square graph on (equations ∪ slots) × (unknowns ∪ equation copies), n_e + n_v
    vertices per side and 2|E| + n_v edges, has a perfect matching for every
    equation-complete matching M of the original graph (M itself, the transposed pairs
    (j', i') of M, and (j', j) for j ∉ M) and conversely (real equations can only be matched
    to unknowns), with the same value; its highest-value transversal (§4.2, sparse primal–dual
    method) therefore yields an optimal M.

    Returns the pairs of 𝒢_ξ as (equation array, unknown array): one per unknown, the unknown
    of M for each equation and, for every other unknown, its argmax equation (smallest index
    among ties; Lemma 17 makes the smallest offsets independent of these choices), and
    val(ξ). Unknowns without any edge must be removed by the caller."""
    n_e, n_v = g.n_eqs, g.n_vars
    rows = g.edge_rows()
    vmax = np.full(n_v, -1, dtype=np.int64)
    np.maximum.at(vmax, g.indices, g.weights)
    if np.any(vmax < 0):
        raise ValueError("nonsquare_owners: an unknown occurs in no equation")
    n = n_e + n_v
    slots = np.arange(n_v, dtype=np.int64)
    # rows: equations 0..n_e-1, slots n_e..n-1; columns: unknowns 0..n_v-1, equation copies
    # n_v..n-1
    s_rows = np.concatenate([rows, n_e + slots, n_e + g.indices])
    s_cols = np.concatenate([g.indices, slots, n_v + rows])
    s_w = np.concatenate([g.weights, vmax, np.zeros(g.n_edges, dtype=np.int64)])
    sq = WeightedGraph.from_arrays(n, n, s_rows, s_cols, s_w)
    assign = highest_value_transversal(sq)
    if assign is None:
        raise ValueError("nonsquare_owners: no equation-complete matching")
    matched = assign[:n_e]                   # M: the unknown of each equation
    # argmax equation of each unknown (smallest index among ties)
    order = np.lexsort((rows, -g.weights, g.indices))
    first = np.searchsorted(g.indices[order], slots)
    oi = rows[order][first]
    oi[matched] = np.arange(n_e, dtype=np.int64)
    value = int(_edge_weights(g, oi, slots).sum())
    return oi, slots, value
