"""Matching, Dulmage–Mendelsohn and block-triangular form (docs/theory.md §2.2–§2.4,
the worked examples of RR-9387 and RR-9334 and hand-checked cases T-MATCH/T-DM/T-BTF)."""

import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mdae_fmu.structure import graph as G
from mdae_fmu.structure.graph import (WeightedGraph, block_triangular, block_triangular_graph,
                                      dulmage_mendelsohn, maximum_matching)


def names(idx, labels):
    return {labels[i] for i in idx}


def random_adj(rng, n_e, n_v, density):
    return [sorted({j for j in range(n_v) if rng.random() < density}) for _ in range(n_e)]


def is_matching(adj, m):
    used = [j for j in m if j >= 0]
    return len(used) == len(set(used)) and all(j < 0 or j in adj[i] for i, j in enumerate(m))


# --- matching -------------------------------------------------------------------------------

def test_hopcroft_karp_matches_scipy_cardinality():
    rng = random.Random(1)
    for _ in range(200):
        n_e, n_v = rng.randint(0, 12), rng.randint(0, 12)
        adj = random_adj(rng, n_e, n_v, rng.random() * 0.5)
        m1 = G._hopcroft_karp(adj, n_v)
        m2 = G.matching_csr(G._csr_of_adj(adj, n_v)) if n_e else []
        assert is_matching(adj, m1) and is_matching(adj, m2)
        assert sum(j >= 0 for j in m1) == sum(j >= 0 for j in m2)


def test_large_matching_uses_scipy_and_is_perfect_on_permutation_graph():
    rng = np.random.default_rng(0)
    n = 5000
    perm = rng.permutation(n)
    adj = [sorted({int(perm[i]), int(rng.integers(n))}) for i in range(n)]
    m = maximum_matching(adj, n)
    assert is_matching(adj, m) and all(j >= 0 for j in m)


def test_structural_nonsingularity_via_dm():
    # a structurally singular mode: {f1(x, x'), f2(y), f3(y)} over {x, y}: no complete matching
    adj = [[0], [1], [1]]
    m = maximum_matching(adj, 2)
    assert sum(j >= 0 for j in m) == 2
    dm = dulmage_mendelsohn(adj, 2)
    assert not dm.regular
    assert dm.over_eqs == (1, 2) and dm.over_vars == (1,)
    # clutch engaged leading system {e1, e2, e3', e4} in (w1', w2', t1, t2): regular
    adj = [[0, 2], [1, 3], [0, 1], [2, 3]]
    assert dulmage_mendelsohn(adj, 4).regular


# --- Dulmage–Mendelsohn ---------------------------------------------------------------------

def test_dm_9334_oracle():
    # DM({f1(x,y), f2(x,y), f3(x), f4(z,u)}): β_O = {f1,f2,f3; x,y}, β_U = {f4; z,u}, β_E = ∅
    adj = [[0, 1], [0, 1], [0], [2, 3]]
    dm = dulmage_mendelsohn(adj, 4)
    assert dm.over_eqs == (0, 1, 2) and dm.over_vars == (0, 1)
    assert dm.under_eqs == (3,) and dm.under_vars == (2, 3)
    assert dm.well_eqs == () and dm.well_vars == ()


def test_dm_toy_003_7_2():
    # g1{a} g2{a} g3{a,b} g4{c,d,e}: β_O = ({g1,g2},{a}), β_U = ({g4},{c,d,e}), β_E = ({g3},{b})
    adj = [[0], [0], [0, 1], [2, 3, 4]]
    dm = dulmage_mendelsohn(adj, 5)
    assert (dm.over_eqs, dm.over_vars) == ((0, 1), (0,))
    assert (dm.under_eqs, dm.under_vars) == ((3,), (2, 3, 4))
    assert (dm.well_eqs, dm.well_vars) == ((2,), (1,))


def test_dm_no_unknown_equation_and_unused_variable():
    # an equation without unknowns goes alone to β_O; an unknown occurring nowhere to β_U
    dm = dulmage_mendelsohn([[], [0]], 2)
    assert dm.over_eqs == (0,) and dm.over_vars == ()
    assert dm.under_vars == (1,) and dm.under_eqs == ()
    assert dm.well_eqs == (1,) and dm.well_vars == (0,)


def test_dm_broken_released_clutch():
    # released clutch with e6 deleted and e5 duplicated
    eqs = ["e1", "e2", "e5", "e5_dup"]
    vs = ["w1", "w2", "t1", "t2"]
    adj = [[0, 2], [1, 3], [2], [2]]
    dm = dulmage_mendelsohn(adj, 4)
    assert names(dm.over_eqs, eqs) == {"e5", "e5_dup"} and names(dm.over_vars, vs) == {"t1"}
    assert names(dm.under_eqs, eqs) == {"e2"} and names(dm.under_vars, vs) == {"w2", "t2"}
    assert names(dm.well_eqs, eqs) == {"e1"} and names(dm.well_vars, vs) == {"w1"}


def test_dm_clutch_f_to_t_restart_system():
    # RR-9387's clutch (20): 9 equations, 8 unknowns; β_O = (26), β_E = {e1, e2, e3•, e4}
    eqs = ["pe1", "pe2", "pe5", "pe6", "e1", "e2", "e3", "e3s", "e4"]
    vs = ["pt1", "pt2", "w1", "w2", "t1", "t2", "w1s", "w2s"]
    ix = {v: j for j, v in enumerate(vs)}
    occ = {"pe1": ["w1", "pt1"], "pe2": ["w2", "pt2"], "pe5": ["pt1"], "pe6": ["pt2"],
           "e1": ["w1s", "w1", "t1"], "e2": ["w2s", "w2", "t2"], "e3": ["w1", "w2"],
           "e3s": ["w1s", "w2s"], "e4": ["t1", "t2"]}
    base = [[ix[v] for v in occ[e]] for e in eqs]
    rng = random.Random(3)
    seen = set()
    for _ in range(50):   # matching independence (Lemma 8.1): shuffle both sides
        pe = list(range(len(eqs)))
        pv = list(range(len(vs)))
        rng.shuffle(pe)
        rng.shuffle(pv)
        inv_v = {old: new for new, old in enumerate(pv)}
        adj = [sorted(inv_v[j] for j in base[i]) for i in pe]
        m = maximum_matching(adj, len(vs))
        seen.add(tuple(pe[i] for i, j in enumerate(m) if j < 0))
        dm = dulmage_mendelsohn(adj, len(vs))
        ov = {eqs[pe[i]] for i in dm.over_eqs}
        assert ov == {"pe1", "pe2", "pe5", "pe6", "e3"}
        assert {vs[pv[j]] for j in dm.over_vars} == {"w1", "w2", "pt1", "pt2"}
        assert not dm.under_eqs and not dm.under_vars
        assert {eqs[pe[i]] for i in dm.well_eqs} == {"e1", "e2", "e3s", "e4"}


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10), st.integers(0, 10), st.floats(0.05, 0.6), st.integers(0, 10**6))
def test_dm_properties_random(n_e, n_v, density, seed):
    rng = random.Random(seed)
    adj = random_adj(rng, n_e, n_v, density)
    dm = dulmage_mendelsohn(adj, n_v)
    # partition, disjointness, square well-determined part
    assert sorted(dm.over_eqs + dm.well_eqs + dm.under_eqs) == list(range(n_e))
    assert sorted(dm.over_vars + dm.well_vars + dm.under_vars) == list(range(n_v))
    assert len(dm.well_eqs) == len(dm.well_vars)
    over_v = set(dm.over_vars)
    under_e = set(dm.under_eqs)
    for i in dm.over_eqs:             # a β_O equation contains only β_O variables
        assert set(adj[i]) <= over_v
    for i, row in enumerate(adj):     # a β_U variable occurs only in β_U equations
        if set(row) & set(dm.under_vars):
            assert i in under_e
    assert len(dm.over_eqs) > len(dm.over_vars) or not dm.over_eqs
    assert len(dm.under_vars) > len(dm.under_eqs) or not dm.under_vars
    # independence of the matching: relabel both sides
    pe = list(range(n_e))
    pv = list(range(n_v))
    rng.shuffle(pe)
    rng.shuffle(pv)
    inv_v = {old: new for new, old in enumerate(pv)}
    adj2 = [sorted(inv_v[j] for j in adj[i]) for i in pe]
    dm2 = dulmage_mendelsohn(adj2, n_v)
    assert sorted(pe[i] for i in dm2.over_eqs) == list(dm.over_eqs)
    assert sorted(pv[j] for j in dm2.under_vars) == list(dm.under_vars)
    # Lemma 9: removing all of β_O leaves no over-determined part
    keep = [i for i in range(n_e) if i not in set(dm.over_eqs)]
    assert dulmage_mendelsohn([adj[i] for i in keep], n_v).over_eqs == ()


def test_dm_rejects_non_maximum_matching():
    with pytest.raises(ValueError):
        dulmage_mendelsohn([[0, 1], [0]], 2, matching=[0, -1])


# --- block-triangular form ------------------------------------------------------------------

def test_btf_invariance_003_7_2():
    adj = [[0, 1], [0, 1], [1, 2, 3], [2, 3], [3, 4]]
    a = block_triangular(adj, 5, [0, 1, 2, 3, 4])
    b = block_triangular(adj, 5, [1, 0, 3, 2, 4])
    assert a == b == [((0, 1), (0, 1)), ((2, 3), (2, 3)), ((4,), (4,))]


def test_btf_invariance_9334_4_9():
    adj = [[0, 1], [1, 2], [2, 0], [3, 0], [4, 5, 3], [5, 4]]
    m1 = [0, 1, 2, 3, 4, 5]
    m2 = [1, 2, 0, 3, 5, 4]
    expect = [((0, 1, 2), (0, 1, 2)), ((3,), (3,)), ((4, 5), (4, 5))]
    assert block_triangular(adj, 6, m1) == expect
    assert block_triangular(adj, 6, m2) == expect


def _check_btf(adj, m, blocks):
    """Every equation reads only unknowns of its own block or of earlier blocks."""
    where = {}
    for b, (eqs, vs) in enumerate(blocks):
        assert sorted(m[i] for i in eqs) == list(vs)
        for j in vs:
            where[j] = b
    for b, (eqs, _) in enumerate(blocks):
        for i in eqs:
            assert all(where[j] <= b for j in adj[i])


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 14), st.floats(0.05, 0.4), st.integers(0, 10**6))
def test_btf_random_regular_systems(n, density, seed):
    rng = random.Random(seed)
    perm = list(range(n))
    rng.shuffle(perm)
    adj = [sorted({perm[i]} | {j for j in range(n) if rng.random() < density})
           for i in range(n)]
    m1 = maximum_matching(adj, n)
    blocks = block_triangular(adj, n, m1)
    _check_btf(adj, m1, blocks)
    # another perfect matching: the same blocks in the same order (deterministic tie-break)
    assert block_triangular(adj, n, perm) == blocks
    # SCC blocks are maximal: merging is not needed, splitting is impossible -> compare with
    # networkx condensation on the same digraph
    import networkx as nx
    dg = nx.DiGraph()
    dg.add_nodes_from(range(n))
    owner = {j: i for i, j in enumerate(m1)}
    for i, row in enumerate(adj):
        for j in row:
            if owner[j] != i:
                dg.add_edge(owner[j], i)
    sccs = {tuple(sorted(c)) for c in nx.strongly_connected_components(dg)}
    assert sccs == {eqs for eqs, _ in blocks}


def test_btf_on_weighted_graph_with_mask():
    g = WeightedGraph.from_rows([{0: 1, 2: 0}, {1: 1, 3: 0}, {0: 0, 1: 0}, {2: 0, 3: 0}], 4)
    assert g.n_edges == 8 and g.row(0) == {0: 1, 2: 0}
    keep = np.ones(8, dtype=bool)
    # engaged clutch leading system: one 4x4 block {e1, e2, e3', e4}
    assert block_triangular_graph(g, [2, 1, 0, 3], keep) == [((0, 1, 2, 3), (0, 1, 2, 3))]
    # dropping the edges of e3 to w1/w2 (mask) splits it: e3 is then unmatched and ignored
    keep[4:6] = False
    m = [0, 1, -1, 3]
    # e2 reads t2, computed by e4, so e4 comes first
    assert block_triangular_graph(g, m, keep) == [((0,), (0,)), ((3,), (3,)), ((1,), (1,))]


def test_btf_blocks_read_one_at_a_time(monkeypatch):
    """`iter_block_triangular_graph` gives the blocks of `block_triangular_graph` lazily, in the
    same order, whatever the chunk of blocks converted at a time (issue 16)."""
    import mdae_fmu.structure.graph as G
    n = 7                       # chain: equation e defines x_e from x_{e+1}; x_6 = 1 first
    g = WeightedGraph.from_rows([{e: 0, e + 1: 0} if e + 1 < n else {e: 0} for e in range(n)], n)
    expected = [((e,), (e,)) for e in range(n - 1, -1, -1)]
    for chunk in (1, 2, 3, 7, 4096):
        monkeypatch.setattr(G, "_BLOCKS_PER_CHUNK", chunk)
        it = G.iter_block_triangular_graph(g, list(range(n)))
        assert not isinstance(it, list)
        assert list(it) == expected == block_triangular_graph(g, list(range(n)))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 14), st.floats(0.05, 0.4), st.integers(0, 10**6), st.integers(1, 5))
def test_btf_chunks_are_the_blocks(n, density, seed, chunk):
    """`iter_btf_chunks` (arrays per chunk of blocks, issue 29 stop 44) gives the blocks of
    `iter_block_triangular_graph`, in order, whatever the chunk: each block read back from
    its chunk's ``cuts``."""
    import mdae_fmu.structure.graph as G
    rng = random.Random(seed)
    perm = list(range(n))
    rng.shuffle(perm)
    rows = [{j: 0 for j in {perm[i]} | {j for j in range(n) if rng.random() < density}}
            for i in range(n)]
    g = WeightedGraph.from_rows(rows, n)
    matching = [perm[i] for i in range(n)]
    want = list(G.iter_block_triangular_graph(g, matching))
    old = G._BLOCKS_PER_CHUNK
    G._BLOCKS_PER_CHUNK = chunk
    try:
        got = [(tuple(eqs[x:y].tolist()), tuple(unknowns[x:y].tolist()))
               for eqs, unknowns, cuts in G.iter_btf_chunks(g, matching)
               for x, y in zip(cuts.tolist(), cuts[1:].tolist())]
    finally:
        G._BLOCKS_PER_CHUNK = old
    assert got == want and sum(map(len, (b for b, _ in got))) == n



@pytest.mark.parametrize("forward", [True, False])
def test_btf_order_beyond_int32_pair_codes(forward):
    """70 000 scalar blocks (more than 46 340, where the condensation's pair codes
    a * n_comp + b no longer fit in 32 bits): a chain x_i = x_{i+1}, x_n = 1 must be solved
    from its end, whether the equations are written in solve order or in reverse."""
    n = 70_000
    order = list(range(n)) if forward else list(range(n - 1, -1, -1))
    # equation e (in written order) defines x_order[e] from x_order[e]+1 (the next in the chain)
    rows = [{order[e]: 0, order[e] + 1: 0} if order[e] + 1 < n else {order[e]: 0}
            for e in range(n)]
    g = WeightedGraph.from_rows(rows, n)
    matching = np.asarray(order, dtype=np.int64)          # e defines x_order[e]
    blocks = block_triangular_graph(g, matching)
    assert len(blocks) == n
    solved = [v for _, (v,) in blocks]
    assert solved == list(range(n - 1, -1, -1))       # x_n first, x_1 last


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 30), st.floats(0.0, 0.3), st.booleans(), st.integers(0, 10**6))
def test_canonical_topological_order_fast_path_equals_heap(n, density, forward, seed):
    rng = random.Random(seed)
    keys = list(range(n))
    if not forward:
        rng.shuffle(keys)
    key = np.asarray(keys, dtype=np.int64)
    comp_of_key = np.full(n + 1, -1, dtype=np.int64)
    comp_of_key[key] = np.arange(n)
    # a DAG on components, arcs from lower to higher topological rank (rank = index)
    arcs = sorted({(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < density})
    a = np.asarray([x for x, _ in arcs], dtype=np.int64)
    b = np.asarray([y for _, y in arcs], dtype=np.int64)
    live = np.arange(n)
    fast = G._canonical_topological_positions(n, live, key, comp_of_key, a, b, fast=True)
    heap = G._canonical_topological_positions(n, live, key, comp_of_key, a, b, fast=False)
    assert (fast == heap).all()
    assert all(heap[x] < heap[y] for x, y in arcs)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 30), st.floats(0.0, 0.6), st.booleans(), st.integers(0, 10**6))
def test_ranked_topological_order_equals_heap(n, density, one_arc_paths, seed):
    """`_ranked_topological_order` (the heap over ranks, and without a heap when every path
    has one arc: sources read by components that read none, the loop chain's condensation)
    gives the positions of the heap over the components with shuffled keys (the reference,
    ``fast=False``), which are a topological order."""
    rng = random.Random(seed)
    keys = list(range(n))
    rng.shuffle(keys)
    key = np.asarray(keys, dtype=np.int64)
    comp_of_key = np.full(n + 1, -1, dtype=np.int64)
    comp_of_key[key] = np.arange(n)
    if one_arc_paths:
        sources = {i for i in range(n) if rng.random() < 0.6}
        arcs = sorted({(i, j) for i in sources for j in range(n)
                       if j not in sources and rng.random() < density})
    else:
        perm = list(range(n))
        rng.shuffle(perm)
        arcs = sorted({(perm[i], perm[j]) for i in range(n) for j in range(i + 1, n)
                       if rng.random() < density / 2})
    a = np.asarray([x for x, _ in arcs], dtype=np.int64)
    b = np.asarray([y for _, y in arcs], dtype=np.int64)
    live = np.arange(n)
    fast = G._canonical_topological_positions(n, live, key, comp_of_key, a, b, fast=True)
    heap = G._canonical_topological_positions(n, live, key, comp_of_key, a, b, fast=False)
    assert (fast == heap).all()
    assert all(heap[x] < heap[y] for x, y in arcs)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 12), st.integers(0, 12), st.floats(0.05, 0.6), st.integers(0, 10**6))
def test_vectorized_dm_equals_list_dm(n_e, n_v, density, seed):
    """`dulmage_mendelsohn_graph` (one scipy BFS per part) = `dulmage_mendelsohn` (Python
    BFS), with and without a matching given; a non-maximum matching is refused by both."""
    from mdae_fmu.structure.graph import WeightedGraph, dulmage_mendelsohn_graph
    rng = random.Random(seed)
    adj = random_adj(rng, n_e, n_v, density)
    g = WeightedGraph.from_rows([{j: 0 for j in row} for row in adj], n_v)
    want = dulmage_mendelsohn(adj, n_v)
    assert dulmage_mendelsohn_graph(g) == want
    m = maximum_matching(adj, n_v)
    assert dulmage_mendelsohn_graph(g, m) == want
    if any(j >= 0 for j in m) and any(j < 0 for j in m):
        # drop one matched pair: an augmenting path appears, both versions must notice
        k = next(i for i, j in enumerate(m) if j >= 0)
        worse = list(m)
        worse[k] = -1
        try:
            dulmage_mendelsohn(adj, n_v, worse)
            list_ok = True
        except ValueError:
            list_ok = False
        try:
            dulmage_mendelsohn_graph(g, worse)
            vec_ok = True
        except ValueError:
            vec_ok = False
        assert list_ok == vec_ok


# --- the small graphs' paths without scipy (issue 29) ----------------------------------------

def _partition(labels):
    """The classes of a labelling, as a set of frozensets (labels themselves are arbitrary)."""
    classes: dict = {}
    for v, k in enumerate(list(labels)):
        classes.setdefault(int(k), set()).add(v)
    return {frozenset(c) for c in classes.values()}


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 40), st.floats(0.0, 0.3), st.integers(0, 10**6))
def test_tarjan_components_equal_scipys(n, density, seed):
    """`strong_components` below `SMALL_EDGES` (Tarjan in Python) gives scipy's partition."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components
    rng = random.Random(seed)
    arcs = [(a, b) for a in range(n) for b in range(n) if rng.random() < density]
    src = np.asarray([a for a, _ in arcs], dtype=np.int64)
    dst = np.asarray([b for _, b in arcs], dtype=np.int64)
    count, label = G.strong_components(n, src, dst)
    ref_count, ref = connected_components(
        csr_matrix((np.ones(len(arcs)), (src, dst)), shape=(n, n)), directed=True,
        connection="strong")
    assert count == ref_count
    assert _partition(label) == _partition(ref)


def test_tarjan_components_of_a_long_cycle_and_a_long_path():
    """No recursion: a 1500-vertex cycle is one component, a 1500-vertex path 1500."""
    n = 1500
    ring = np.arange(n, dtype=np.int64)
    assert G.strong_components(0, ring[:0], ring[:0])[0] == 0
    count, label = G.strong_components(n, ring, (ring + 1) % n)
    assert count == 1 and set(label.tolist()) == {0}
    count, label = G.strong_components(n, ring[:-1], ring[1:])
    assert count == n and sorted(label.tolist()) == list(range(n))


def _perfect_matchings(adj):
    """Every perfect matching of a small square graph, by brute force (the oracle)."""
    import itertools
    n = len(adj)
    return [p for p in itertools.permutations(range(n)) if all(p[i] in adj[i] for i in range(n))]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6), st.floats(0.1, 0.7), st.integers(0, 10**6))
def test_unique_perfect_matching_against_enumeration(n, density, seed):
    rng = random.Random(seed)
    perm = list(range(n))
    rng.shuffle(perm)
    # a planted perfect matching, plus random edges
    adj = [sorted({perm[i]} | {j for j in range(n) if rng.random() < density}) for i in range(n)]
    m = maximum_matching(adj, n)
    assert G.unique_perfect_matching(adj, m) == (len(_perfect_matchings(adj)) == 1)


def test_btf_blocks_equal_with_and_without_scipy(monkeypatch):
    """The block-triangular form of the same graphs through scipy's components (no small
    path) and through Tarjan's (the small path) is the same sequence of blocks."""
    rng = random.Random(7)
    cases = []
    for _ in range(60):
        n = rng.randint(1, 25)
        perm = list(range(n))
        rng.shuffle(perm)
        adj = [sorted({perm[i]} | {j for j in range(n) if rng.random() < 0.12})
               for i in range(n)]
        cases.append((adj, n, maximum_matching(adj, n)))
    small = [block_triangular(adj, n, m) for adj, n, m in cases]
    monkeypatch.setattr(G, "SMALL_EDGES", -1)
    assert [block_triangular(adj, n, m) for adj, n, m in cases] == small
