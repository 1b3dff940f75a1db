"""The implicit Σ-method of a graph without guards (`implicit.sigma.constant_transversal`,
docs/theory.md §10.8) against the labelled algorithms it stands for (the same transversal
and offsets) and against the one-mode Σ-method (`structure.sigma.sigma_method`: the
canonical offsets)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from mdae_fmu.implicit import sigma as S
from mdae_fmu.implicit.formulas import bdd_manager
from mdae_fmu.structure.graph import WeightedGraph
from mdae_fmu.structure.sigma import sigma_method


def _graph(rows: list[dict[int, int]], n_cols: int) -> S.LabelledGraph:
    """``rows[i] = {j: σ_ij}`` as a labelled graph whose formulas are all true."""
    bdd = bdd_manager()
    T = bdd.true
    return S.LabelledGraph(bdd=bdd, care=T, rows=[f"e{i}" for i in range(len(rows))],
                           cols=[f"x{j}" for j in range(n_cols)],
                           sig=[{j: {s: T} for j, s in r.items()} for r in rows],
                           present=[T] * len(rows))


def _labelled(g: S.LabelledGraph, monkeypatch):
    """`transversal` by the labelled algorithms alone (BDD matching and offsets)."""
    with monkeypatch.context() as mp:
        mp.setattr(S, "constant_transversal", lambda g: None)
        return S.transversal(g)


def _random_rows(rng: random.Random, n: int) -> list[dict[int, int]]:
    """A square signature with a planted perfect matching (so structurally nonsingular)
    and a few more entries, σ in 0..3, rows listed in a random order of unknowns."""
    perm = list(range(n))
    rng.shuffle(perm)
    rows: list[dict[int, int]] = []
    for i in range(n):
        cols = {perm[i]} | {rng.randrange(n) for _ in range(rng.randrange(4))}
        order = list(cols)
        rng.shuffle(order)
        rows.append({j: rng.choice((0, 0, 1, 1, 2, 3)) for j in order})
    return rows


def test_random_graphs_match_the_labelled_algorithms(monkeypatch):
    """On 300 random square graphs the fast path gives what the labelled algorithms give
    wherever it answers (matching and offsets; its sweeps are those of Pryce's iteration
    on the greedy transversal, the labelled ones on the exact one), its offsets are the one-mode
    Σ-method's, and it declines (None) exactly where greedy matching is no highest-value
    transversal; both outcomes occur."""
    rng = random.Random(2611)
    answered = declined = 0
    for _ in range(300):
        n = rng.randrange(1, 12)
        rows = _random_rows(rng, n)
        g = _graph(rows, n)
        fast = S.constant_transversal(g)
        m, off = _labelled(g, monkeypatch)
        one = sigma_method(WeightedGraph.from_rows(rows, n))
        assert one.ok and off.undecided == g.bdd.false
        if fast is None:
            declined += 1
            greedy = S._plain_matching(rows, S.by_degree(g), n)
            assert greedy is not None
            value = sum(rows[i][j] for i, j in enumerate(greedy))
            assert value < sum(rows[i][int(j)] for i, j in enumerate(one.matching))
            continue
        answered += 1
        fm, foff = fast
        assert fm.match == m.match and fm.singular == m.singular
        assert foff.c == off.c and foff.d == off.d and foff.sweeps >= 1
        assert [next(iter(c)) for c in foff.c] == list(one.c)
        assert [next(iter(d)) for d in foff.d] == list(one.d)
    assert answered > 200 and declined > 0


def test_augmenting_path_follows_the_labelled_search(monkeypatch):
    """Equations that all want the same first unknown force breadth-first augmenting
    paths; the assignment is the labelled search's, entry for entry."""
    n = 7
    rows = [{0: 1, **{j: 0 for j in range(1, i + 1)}} for i in range(n)]
    g = _graph(rows, n)
    fast = S.constant_transversal(g)
    assert fast is not None
    m, off = _labelled(g, monkeypatch)
    assert fast[0].match == m.match and fast[1].c == off.c and fast[1].d == off.d
    assert sorted(next(iter(r)) for r in fast[0].match) == list(range(n))


@pytest.mark.parametrize("rows, n_cols", [
    ([{0: 0}, {0: 1}], 2),                  # structurally singular: x1 in no equation
    ([{0: 0, 1: 0}], 2),                    # fewer equations than unknowns
])
def test_singular_and_nonsquare_graphs_are_left_to_the_labelled_algorithms(rows, n_cols):
    assert S.constant_transversal(_graph(rows, n_cols)) is None


def test_a_guarded_formula_is_left_to_the_labelled_algorithms():
    g = _graph([{0: 0}], 1)
    g.bdd.declare("g0")
    g.sig[0][0] = {0: g.bdd.var("g0"), 1: ~g.bdd.var("g0")}
    assert S.constant_transversal(g) is None


def test_pendulum_offsets():
    """The simple pendulum (x'' + λx, y'' + λy - g, x² + y² - L²; index 3): c = (0, 0, 2),
    d = (2, 2, 0), as the one-mode Σ-method finds."""
    rows = [{0: 2, 2: 0}, {1: 2, 2: 0}, {0: 0, 1: 0}]
    fast = S.constant_transversal(_graph(rows, 3))
    assert fast is not None
    m, off = fast
    assert [next(iter(c)) for c in off.c] == [0, 0, 2]
    assert [next(iter(d)) for d in off.d] == [2, 2, 0]
    assert np.array_equal(sigma_method(WeightedGraph.from_rows(rows, 3)).c, [0, 0, 2])


@pytest.mark.parametrize("name", ["reference_models/Pendulum.mo", "tests/data/heating_diode.mo",
                                  "tests/data/heating_diode_tree.mo"])
def test_blocks_without_guards_are_the_labelled_ones(name, monkeypatch):
    """`implicit.blocks._constant_blocks` (no BDD operation) gives the blocks, order and
    formulas of the labelled `conditional_blocks`, with components split and kept coarse
    (``max_component``); these models have blocks of 5, 12 and 7 equations."""
    from pathlib import Path

    from mdae_fmu.importers.reading import load
    from mdae_fmu.implicit import blocks as B
    from mdae_fmu.implicit.analysis import analyze_implicit
    ia = analyze_implicit(load(Path(__file__).resolve().parents[2] / name))
    fast = [B._constant_blocks(ia, m) for m in (64, 2)]
    assert fast[0] is not None and max(len(b.equations) for b in fast[0]) >= 5
    assert any(b.coarse for b in fast[1])
    with monkeypatch.context() as mp:
        mp.setattr(B, "_constant_blocks", lambda a, m: None)
        assert fast == [B.conditional_blocks(ia), B.conditional_blocks(ia, max_component=2)]


def test_condensation_order_is_networkx_order():
    """`implicit.blocks.condensation_order` (the blocks of a model without guards, without
    importing networkx) against its oracle, networkx's condensation in topological order,
    on 400 random digraphs (self-loops, repeated edges, cycles of every size, nodes without
    edges), as `conditional_blocks` builds its graph: nodes in order, edges in list order."""
    nx = pytest.importorskip("networkx")
    from mdae_fmu.implicit.blocks import condensation_order
    rng = random.Random(7)
    for trial in range(400):
        n = rng.randint(0, 30)
        density = rng.choice([0.02, 0.08, 0.2, 0.5])
        succ = [[w for w in range(n) for _ in range(rng.choice([1, 1, 2]))
                 if rng.random() < density] for _ in range(n)]
        for ws in succ:
            rng.shuffle(ws)
        g = nx.DiGraph()
        g.add_nodes_from(range(n))
        g.add_edges_from((v, w) for v in range(n) for w in succ[v])
        cond = nx.condensation(g)
        expected = [sorted(cond.nodes[c]["members"]) for c in nx.topological_sort(cond)]
        assert condensation_order(succ) == expected, (trial, succ)
