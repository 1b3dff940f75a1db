"""Pryce's Σ-method: offsets, HVT, divergence bound, non-square extension (docs/theory.md §4,
on the clutch, the pendulum, hand-checked cases and the T-SIG-* cases)."""

import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.optimize import linprog

from mdae_fmu.structure import sigma as S
from mdae_fmu.structure.graph import WeightedGraph, maximum_matching
from mdae_fmu.structure.sigma import (NotOptimal, highest_value_transversal, pryce_offsets,
                                      sigma_method, tight_edges)

from pantelides import pantelides_offsets

PENDULUM = [{0: 2, 2: 0}, {1: 2, 2: 0}, {0: 0, 1: 0}]            # x, y, lam
CLUTCH_ENGAGED = [{0: 1, 2: 0}, {1: 1, 3: 0}, {0: 0, 1: 0}, {2: 0, 3: 0}]   # w1 w2 t1 t2
CLUTCH_RELEASED = [{0: 1, 2: 0}, {1: 1, 3: 0}, {2: 0}, {3: 0}]


def graph(rows, n_vars=None):
    n_vars = n_vars if n_vars is not None else 1 + max((j for r in rows for j in r), default=-1)
    return WeightedGraph.from_rows(rows, n_vars)


def offsets_with(rows, matching):
    g = graph(rows)
    c, d, _ = pryce_offsets(g, np.arange(g.n_eqs), np.asarray(matching))
    return c.tolist(), d.tolist()


def test_pendulum():
    g = graph(PENDULUM)
    r = sigma_method(g)
    assert r.ok and r.c.tolist() == [0, 0, 2] and r.d.tolist() == [2, 2, 0]
    assert r.value == 2 and r.sweeps == 2          # converges in 2 sweeps
    assert tight_edges(g, r.c, r.d).all()          # all 6 entries tight
    # both HVTs give the same canonical offsets (docs/theory.md §4.3)
    assert offsets_with(PENDULUM, [0, 2, 1]) == offsets_with(PENDULUM, [2, 1, 0]) \
        == ([0, 0, 2], [2, 2, 0])


def test_pendulum_index1_variant_and_scaling():
    # {f1, f2, f3'}: c = (0, 0, 1), d = (2, 2, 0)
    r = sigma_method(graph([{0: 2, 2: 0}, {1: 2, 2: 0}, {0: 1, 1: 1}]))
    assert r.c.tolist() == [0, 0, 1] and r.d.tolist() == [2, 2, 0]
    # Lemma 16: pendulum with σ × 3 gives c = (0,0,6), d = (6,6,0)
    r = sigma_method(graph([{j: 3 * s for j, s in row.items()} for row in PENDULUM]))
    assert r.c.tolist() == [0, 0, 6] and r.d.tolist() == [6, 6, 0]


def test_clutch_both_modes():
    r = sigma_method(graph(CLUTCH_ENGAGED))
    assert r.c.tolist() == [0, 0, 1, 0] and r.d.tolist() == [1, 1, 0, 0]
    assert r.value == 1 and r.sweeps == 2     # one update sweep plus a confirming one (§7.1)
    # both HVTs of the engaged clutch
    assert offsets_with(CLUTCH_ENGAGED, [2, 1, 0, 3]) == offsets_with(CLUTCH_ENGAGED, [0, 3, 1, 2])
    r = sigma_method(graph(CLUTCH_RELEASED))
    assert r.c.tolist() == [0, 0, 0, 0] and r.d.tolist() == [1, 1, 0, 0] and r.value == 2


def test_hessenberg_index2():
    # h1: x' = f(x, z), h2: 0 = g(x): c = (0, 1), d = (1, 0)
    r = sigma_method(graph([{0: 1, 1: 0}, {0: 0}]))
    assert r.c.tolist() == [0, 1] and r.d.tolist() == [1, 0]


def test_non_optimal_matching_diverges_within_bound():
    # f1: x' + y, f2: x + y
    rows = [{0: 1, 1: 0}, {0: 0, 1: 0}]
    assert offsets_with(rows, [0, 1]) == ([0, 0], [1, 0])
    g = graph(rows)
    with pytest.raises(NotOptimal, match="after 3 sweeps"):   # n_e + 1 = 3
        pryce_offsets(g, np.arange(2), np.array([1, 0]))


def test_non_optimal_detected_by_ordered_sweep(monkeypatch):
    monkeypatch.setattr(S, "_JACOBI_CAP", 1)
    rows = [{0: 1, 1: 0}, {0: 0, 1: 0}] + [{2 + k: 0} for k in range(5)]
    g = graph(rows)
    with pytest.raises(NotOptimal):
        pryce_offsets(g, np.arange(7), np.array([1, 0, 2, 3, 4, 5, 6]))


def test_structurally_singular_reports_dm():
    # {f1(x), f2(x)} over {x, y}
    r = sigma_method(graph([{0: 0}, {0: 1}], 2))
    assert r.status == "singular" and r.c is None
    assert r.dm.over_eqs == (0, 1) and r.dm.over_vars == (0,) and r.dm.under_vars == (1,)
    # more equations than unknowns
    r = sigma_method(graph([{0: 0}, {0: 0}, {0: 1}], 1))
    assert r.status == "singular" and r.dm.over_eqs == (0, 1, 2)


def test_non_square_pendulum_with_unknown_g():
    # pendulum with unknown gravity: unknowns x, y, lam, g
    rows = [{0: 2, 2: 0}, {1: 2, 2: 0, 3: 0}, {0: 0, 1: 0}]
    g = graph(rows, 4)
    r = sigma_method(g)
    assert r.status == "underdetermined"
    assert r.c.tolist() == [0, 0, 2] and r.d.tolist() == [2, 2, 0, 0] and r.value == 2
    assert r.dm.over_eqs == () and r.dm.under_vars      # β_O = ∅, β_U ≠ ∅
    # LP (57) primal optimum is 2 too
    assert _primal_lp(rows, 4) == pytest.approx(2)
    # smaller case: f1: x' + y, f2: x + y + z → c = (0, 0), d = (1, 0, 0)
    r = sigma_method(graph([{0: 1, 1: 0}, {0: 0, 1: 0, 2: 0}], 3))
    assert r.c.tolist() == [0, 0] and r.d.tolist() == [1, 0, 0]


def _dense_slot_owners(g):
    """The plain reduction of docs/theory.md §4.4 (oracle for the sparse one): rows = unknowns,
    columns = equations plus n_v − n_e free slots, weight(x_j, slot) = max_i σ_ij; dense."""
    n_e, n_v = g.n_eqs, g.n_vars
    rows = g.edge_rows()
    vmax = np.full(n_v, -1, dtype=np.int64)
    np.maximum.at(vmax, g.indices, g.weights)
    n_slot = n_v - n_e
    t = WeightedGraph.from_arrays(
        n_v, n_v, np.concatenate([g.indices, np.repeat(np.arange(n_v), n_slot)]),
        np.concatenate([rows, np.tile(np.arange(n_e, n_v), n_v)]),
        np.concatenate([g.weights, np.repeat(vmax, n_slot)]))
    assign = highest_value_transversal(t)
    order = np.lexsort((rows, -g.weights, g.indices))
    argmax_eq = rows[order][np.searchsorted(g.indices[order], np.arange(n_v))]
    oi = np.where(assign >= n_e, argmax_eq, assign)
    return oi, np.arange(n_v)


def random_nonsquare(rng, n_e, n_extra, density, max_sigma):
    """An equation-complete system of n_e equations over n_e + n_extra unknowns, every
    unknown used: a random matching, random extra edges, extra unknowns spread over rows."""
    n_v = n_e + n_extra
    perm = list(range(n_v))
    rng.shuffle(perm)
    rows = [{perm[i]: rng.randint(0, max_sigma)} for i in range(n_e)]
    for j in perm[n_e:]:
        rows[rng.randrange(n_e)][j] = rng.randint(0, max_sigma)
    for row in rows:
        for j in range(n_v):
            if rng.random() < density:
                row[j] = rng.randint(0, max_sigma)
    return rows, n_v


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 9), st.integers(1, 6), st.floats(0.0, 0.5), st.integers(0, 3),
       st.integers(0, 10**6), st.booleans())
def test_sparse_nonsquare_owners_are_optimal(n_e, n_extra, density, max_sigma, seed, sparse):
    """Algorithm 2′ with the sparse reduction (private slots + transposed copy): 𝒢_ξ attaches
    every unknown once and every equation at least once, val(ξ) is the LP (57) optimum, and
    Pryce's offsets equal those from the dense free-slot reduction of docs/theory.md §4.4."""
    rows, n_v = random_nonsquare(random.Random(seed), n_e, n_extra, density, max_sigma)
    g = graph(rows, n_v)
    if sparse:      # exercise the sparse primal–dual HVT on the square reduction too
        S._DENSE_MAX, saved = 0, S._DENSE_MAX
    try:
        oi, oj, value = S.nonsquare_owners(g)
    finally:
        if sparse:
            S._DENSE_MAX = saved
    assert sorted(oj.tolist()) == list(range(n_v))
    assert set(oi.tolist()) == set(range(n_e))
    assert all(oj[p] in rows[oi[p]] for p in range(n_v))
    assert value == sum(rows[oi[p]][oj[p]] for p in range(n_v))
    assert value == pytest.approx(_primal_lp(rows, n_v))
    c, d, _ = pryce_offsets(g, oi, oj)
    c0, d0, _ = pryce_offsets(g, *_dense_slot_owners(g))
    assert (c == c0).all() and (d == d0).all()
    assert int(d.sum() - c.sum()) == value          # strong duality, DOF = Val


def coupled_pendulums_unknown_g(n_cells):
    """Cells k = 0..n−1 of the pendulum case above (pendulum with unknown gravity g_k), coupled by
    y_{k+1} in f2_k; odd cells also carry an unknown u_k with der(u_k) in their constraint:
        f1: x'' = λ x,   f2: y'' = λ y − g + κ (y_{k+1} − y),   f3: x² + y² (+ u') = L².
    Unknowns per cell: x, y, λ, g (, u). Closed form: even cells c = (0, 0, 2),
    d = (2, 2, 0, 0); odd cells c = (0, 0, 0), d = (2, 2, 0, 0, 1) (f3 takes u')."""
    rows, col = [], 0
    firsts = []
    for k in range(n_cells):
        firsts.append(col)
        col += 5 if k % 2 else 4
    c_exp, d_exp = [], [0] * col
    for k in range(n_cells):
        x, y, lam, g = (firsts[k] + t for t in range(4))
        rows.append({x: 2, lam: 0})
        f2 = {y: 2, lam: 0, g: 0}
        if k + 1 < n_cells:
            f2[firsts[k + 1] + 1] = 0
        rows.append(f2)
        f3 = {x: 0, y: 0}
        d_exp[x] = d_exp[y] = 2
        if k % 2:
            f3[firsts[k] + 4] = 1
            d_exp[firsts[k] + 4] = 1
            c_exp += [0, 0, 0]
        else:
            c_exp += [0, 0, 2]
        rows.append(f3)
    return rows, col, c_exp, d_exp


def test_nonsquare_closed_form_small():
    rows, n_v, c_exp, d_exp = coupled_pendulums_unknown_g(4)
    r = sigma_method(graph(rows, n_v))
    assert r.status == "underdetermined"
    assert r.c.tolist() == c_exp and r.d.tolist() == d_exp
    assert r.value == _primal_lp(rows, n_v) == sum(d_exp) - sum(c_exp)


def test_nonsquare_at_20000_equations_is_sparse_and_fast():
    """20 001 equations over 30 003 unknowns: the dense free-slot reduction would need
    n_v·(n_v − n_e) ≈ 3·10^8 slot edges (tens of GB); the sparse one has 2|E| + n_v."""
    import time
    rows, n_v, c_exp, d_exp = coupled_pendulums_unknown_g(6667)
    g = graph(rows, n_v)
    t0 = time.perf_counter()
    r = sigma_method(g)
    elapsed = time.perf_counter() - t0
    assert g.n_eqs == 20001 and r.status == "underdetermined"
    assert r.c.tolist() == c_exp and r.d.tolist() == d_exp
    assert r.value == sum(d_exp) - sum(c_exp)
    assert r.dm.over_eqs == () and len(r.dm.under_vars) > 0
    assert elapsed < 5.0, f"non-square Σ-method took {elapsed:.2f} s at 2·10^4 equations"


def _primal_lp(rows, n_vars):
    edges = [(i, j, s) for i, r in enumerate(rows) for j, s in r.items()]
    n_e = len(rows)
    a_eq = np.zeros((n_vars, len(edges)))
    a_ub = np.zeros((n_e, len(edges)))
    for k, (i, j, _) in enumerate(edges):
        a_eq[j, k] = 1
        a_ub[i, k] = -1
    res = linprog([-s for _, _, s in edges], A_ub=a_ub, b_ub=-np.ones(n_e), A_eq=a_eq,
                  b_eq=np.ones(n_vars), bounds=(0, None), method="highs")
    return -res.fun


def random_regular(rng, n, density, max_sigma):
    perm = list(range(n))
    rng.shuffle(perm)
    rows = []
    for i in range(n):
        row = {perm[i]: rng.randint(0, max_sigma)}
        for j in range(n):
            if rng.random() < density:
                row[j] = rng.randint(0, max_sigma)
        rows.append(row)
    return rows


def transversal_value(rows: list[dict[int, int]], matching) -> int:
    """val(ξ) = Σ_i σ_{i,ξ(i)}: the value of a transversal, equation i matched to matching[i]."""
    return sum(rows[i][matching[i]] for i in range(len(rows)))


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 8), st.floats(0.0, 0.5), st.integers(0, 3), st.integers(0, 10**6))
def test_offsets_agree_with_pantelides(n, density, max_sigma, seed):
    """Theorem 21: Pantelides' differentiation counts equal the Σ-method's c."""
    rows = random_regular(random.Random(seed), n, density, max_sigma)
    r = sigma_method(graph(rows, n))
    assert r.ok
    c, d = pantelides_offsets(rows, n)
    assert r.c.tolist() == c and r.d.tolist() == d


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 7), st.floats(0.0, 0.6), st.integers(0, 3), st.integers(0, 10**6))
def test_offsets_are_smallest_dual_optimum(n, density, max_sigma, seed):
    """9334 T-SIG-6: dual feasible, equality on the HVT, optimal, and ≤ an LP dual optimum."""
    rows = random_regular(random.Random(seed), n, density, max_sigma)
    g = graph(rows, n)
    r = sigma_method(g)
    c, d = r.c, r.d
    for i, row in enumerate(rows):
        for j, s in row.items():
            assert d[j] - c[i] >= s
        assert d[r.matching[i]] - c[i] == rows[i][r.matching[i]]
    assert c.min() == 0
    # dual LP: min Σd − Σc, d_j − c_i ≥ σ_ij, c ≥ 0 (variables: c then d)
    edges = [(i, j, s) for i, row in enumerate(rows) for j, s in row.items()]
    a = np.zeros((len(edges), 2 * n))
    for k, (i, j, _) in enumerate(edges):
        a[k, i] = 1
        a[k, n + j] = -1
    res = linprog(np.r_[-np.ones(n), np.ones(n)], A_ub=a, b_ub=[-s for *_, s in edges],
                  bounds=[(0, None)] * n + [(None, None)] * n, method="highs")
    assert res.status == 0
    assert res.fun == pytest.approx(r.value)
    assert np.all(c <= np.round(res.x[:n]) + 1e-9) and np.all(d <= np.round(res.x[n:]) + 1e-9)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 7), st.floats(0.0, 0.5), st.integers(0, 3), st.integers(2, 3),
       st.integers(0, 10**6))
def test_scaling_lemma_random(n, density, max_sigma, k, seed):
    rows = random_regular(random.Random(seed), n, density, max_sigma)
    r1 = sigma_method(graph(rows, n))
    r2 = sigma_method(graph([{j: k * s for j, s in row.items()} for row in rows], n))
    assert (r2.c == k * r1.c).all() and (r2.d == k * r1.d).all()


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 7), st.floats(0.0, 0.6), st.integers(0, 3), st.integers(0, 10**6))
def test_lemma18_zero_offsets_iff_leading_pattern_matches(n, density, max_sigma, seed):
    rows = random_regular(random.Random(seed), n, density, max_sigma)
    r = sigma_method(graph(rows, n))
    top = [max(row.get(j, -1) for row in rows) for j in range(n)]
    lead = [[j for j, s in row.items() if s == top[j]] for row in rows]
    complete = all(j >= 0 for j in maximum_matching(lead, n))
    assert complete == (r.c.max() == 0)


def test_sparse_and_dense_hvt_agree(monkeypatch):
    rng = random.Random(5)
    for _ in range(30):
        n = rng.randint(2, 30)
        rows = random_regular(rng, n, 0.15, 3)
        g = graph(rows, n)
        dense = highest_value_transversal(g)
        monkeypatch.setattr(S, "_DENSE_MAX", 0)
        sparse = highest_value_transversal(g)
        monkeypatch.setattr(S, "_DENSE_MAX", 400)
        assert transversal_value(rows, dense) == transversal_value(rows, sparse)
        # explicit-zero pitfall: all-zero weights still give a full matching
        z = graph([{j: 0 for j in row} for row in rows], n)
        monkeypatch.setattr(S, "_DENSE_MAX", 0)
        assert highest_value_transversal(z) is not None
        monkeypatch.setattr(S, "_DENSE_MAX", 400)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 25), st.floats(0.0, 0.4), st.integers(0, 4), st.integers(0, 10**6))
def test_three_hvt_methods_agree(n, density, max_sigma, seed):
    """Dense LSA, the vectorized primal–dual method and LAPJVsp give transversals of the same
    (maximum) value, and Pryce's offsets from each are identical (canonical, docs/theory.md
    §4.3)."""
    rows = random_regular(random.Random(seed), n, density, max_sigma)
    g = graph(rows, n)
    dense = highest_value_transversal(g)
    pd, decided = S._hvt_primal_dual(g)
    lap = S._hvt_lapjvsp(g)
    assert decided
    assert sorted(pd.tolist()) == list(range(n)) and sorted(lap.tolist()) == list(range(n))
    assert (transversal_value(rows, dense) == transversal_value(rows, pd)
            == transversal_value(rows, lap))
    offs = [pryce_offsets(g, np.arange(n), m)[:2] for m in (dense, pd, lap)]
    for c, d in offs[1:]:
        assert (c == offs[0][0]).all() and (d == offs[0][1]).all()


def test_primal_dual_gives_up_to_lapjvsp(monkeypatch):
    monkeypatch.setattr(S, "_PD_MAX_PHASES", 1)
    monkeypatch.setattr(S, "_DENSE_MAX", 0)
    g = graph(PENDULUM)
    assert S._hvt_primal_dual(g) == (None, False)
    r = sigma_method(g)
    assert r.c.tolist() == [0, 0, 2]
    # and a singular graph is recognised by the primal-dual method itself
    monkeypatch.setattr(S, "_PD_MAX_PHASES", 256)
    assert S._hvt_primal_dual(graph([{0: 1, 1: 0}, {0: 0}, {0: 2}], 2 + 1)) == (None, True)
    # square, every unknown used, no complete matching: δ = ∞ in the first phase
    assert S._hvt_primal_dual(graph([{0: 0}, {0: 1}, {0: 0, 1: 0, 2: 0}], 3)) == (None, True)


def test_no_transversal_returns_none(monkeypatch):
    g = graph([{0: 1}, {0: 0}], 2)
    assert highest_value_transversal(g) is None
    monkeypatch.setattr(S, "_DENSE_MAX", 0)
    assert highest_value_transversal(g) is None


def alias_chain_pendulum(n_alias):
    """Pendulum whose constraint passes through a chain of algebraic aliases:
    x'' + x lam, y'' + y lam - g, a_1 = x^2 + y^2, a_{k+1} = a_k, a_N = L^2.
    Every alias equation needs c = 2; Jacobi sweeps need ~N of them."""
    rows = [{0: 2, 2: 0}, {1: 2, 2: 0}, {0: 0, 1: 0, 3: 0}]
    for k in range(n_alias - 1):
        rows.append({3 + k: 0, 4 + k: 0})
    rows.append({3 + n_alias - 1: 0})
    return rows


def test_ordered_sweep_matches_jacobi(monkeypatch):
    rows = alias_chain_pendulum(40)
    g = graph(rows)
    r_full = sigma_method(g)
    assert r_full.c.tolist() == [0, 0] + [2] * 41
    monkeypatch.setattr(S, "_JACOBI_CAP", 3)
    r_ord = sigma_method(g)
    assert (r_ord.c == r_full.c).all() and (r_ord.d == r_full.d).all()
    rng = random.Random(11)
    for _ in range(40):
        rows = random_regular(rng, rng.randint(2, 12), 0.25, 3)
        n = len(rows)
        monkeypatch.setattr(S, "_JACOBI_CAP", 64)
        a = sigma_method(graph(rows, n))
        monkeypatch.setattr(S, "_JACOBI_CAP", 1)
        b = sigma_method(graph(rows, n))
        assert (a.c == b.c).all() and (a.d == b.d).all()


def test_tight_graph_btf_of_pendulum_is_one_block():
    from mdae_fmu.structure.graph import block_triangular_graph
    g = graph(PENDULUM)
    r = sigma_method(g)
    blocks = block_triangular_graph(g, r.matching, tight_edges(g, r.c, r.d))
    assert blocks == [((0, 1, 2), (0, 1, 2))]


# --- the only transversal of a small system (docs/theory.md §2.8; issue 29) -------------------

def test_only_transversal_is_scipys_hvt_and_none_when_there_are_several():
    """A triangular system has one transversal; the ODE q = 2 (T1 − T2), T1' = −q,
    T2' = q − 0.1 T2 has six but one of highest value, 2 (T1' and T2' from their own
    equations): the small path returns it, as scipy's assignment solver does. The pendulum
    and the engaged clutch have two of highest value each: the small path defers to scipy."""
    tri = graph([{0: 1}, {0: 0, 1: 1}, {1: 0, 2: 2}])
    only = S._only_transversal(tri)
    assert only is not None and only.tolist() == [0, 1, 2]
    assert only.tolist() == S._hvt_lapjvsp(tri).tolist()
    heat = graph([{0: 0, 1: 0, 2: 0}, {0: 1, 2: 0}, {1: 1, 2: 0}])      # T1, T2, q
    only = S._only_transversal(heat)
    assert only is not None and only.tolist() == [2, 0, 1]
    assert only.tolist() == S._hvt_lapjvsp(heat).tolist()
    assert S._only_transversal(graph(PENDULUM)) is None
    assert S._only_transversal(graph(CLUTCH_ENGAGED)) is None
    assert S._only_transversal(graph([{0: 0}, {0: 1}])) is None      # singular (2 eqs, 1 var)
    assert S._only_transversal(graph([{0: 0}, {0: 1}], 2)) is None   # no complete matching


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 9), st.floats(0.0, 0.5), st.integers(0, 10**6))
def test_sigma_method_equal_with_and_without_the_small_path(n, density, seed):
    """The Σ-method's result (status, matching, offsets, value, sweeps) is the same whether
    the small path finds the only transversal or scipy's solvers run (oracle: the path with
    `SMALL_EDGES` = -1, i.e. the code before issue 29's change)."""
    rng = random.Random(seed)
    perm = list(range(n))
    rng.shuffle(perm)
    rows = []
    for i in range(n):
        row = {perm[i]: rng.randint(0, 2)}
        for j in range(n):
            if j != perm[i] and rng.random() < density:
                row[j] = rng.randint(0, 2)
        rows.append(row)
    g = graph(rows, n)
    small = sigma_method(g)
    saved = S.SMALL_EDGES
    try:
        S.SMALL_EDGES = -1
        ref = sigma_method(g)
    finally:
        S.SMALL_EDGES = saved
    assert (small.status, small.value, small.sweeps) == (ref.status, ref.value, ref.sweeps)
    assert small.matching.tolist() == ref.matching.tolist()
    assert small.c.tolist() == ref.c.tolist() and small.d.tolist() == ref.d.tolist()


# --- columns of the rows' names (`signature.name_columns`, issue 29) -------------------------

_NAME_POOL = [f"v{k}" for k in range(8)]


def _copy(name: str) -> str:
    """An equal string that is another object."""
    out = "".join(list(name))
    assert out == name and out is not name
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.booleans()), max_size=8,
                unique_by=lambda t: t[0]),
       st.lists(st.tuples(st.integers(0, 7), st.booleans()), max_size=30),
       st.booleans())
def test_name_columns_answer_as_the_dict(continuous, names, by_identity):
    """`name_columns` gives each name's position in ``continuous`` (distinct names) as the
    dict of positions does (-1 for an absent one), whether the strings are the
    same objects as those of ``continuous`` or equal copies, on both of its paths."""
    from mdae_fmu.structure import signature as SG
    cont = [_copy(_NAME_POOL[k]) if copy else _NAME_POOL[k] for k, copy in continuous]
    # a name taken from `cont` itself (its very object) or from the pool (maybe a copy)
    used = [cont[k % len(cont)] if own and cont else
            (_copy(_NAME_POOL[k]) if own else _NAME_POOL[k]) for k, own in names]
    oracle = dict(zip(cont, range(len(cont))))
    expected = [oracle.get(n, -1) for n in used]
    old = SG.IDENTITY_MIN
    SG.IDENTITY_MIN = 0 if by_identity else 1 << 30
    try:
        got = SG.name_columns(used, cont)
    finally:
        SG.IDENTITY_MIN = old
    assert got.dtype == np.int32 and got.tolist() == expected
