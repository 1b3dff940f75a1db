"""The ModelStructure closure (`mdae_fmu.fmu.dependencies.closure`, docs/theory.md §11.1):
one pass over the strongly connected components gives every node the sorted tuple of the
sources reachable from it. Oracle: a breadth-first search from each node of random read
graphs with cycles, self-loops, reads of nodes outside the graph and sources without reads;
and a chain of 10^5 nodes read backwards (the worst order for a round-robin fixpoint), in
one pass."""

from __future__ import annotations

import random
from collections import deque

import pytest

from mdae_fmu.fmu.dependencies import Dependencies, closure

pytestmark = pytest.mark.quick


def _reachable_sources(reads, sources, start):
    seen, todo = {start}, deque([start])
    while todo:
        n = todo.popleft()
        for m in reads.get(n, ()):
            if m not in seen:
                seen.add(m)
                todo.append(m)
    out = set()
    for n in seen:
        out |= sources.get(n, set())
    return out


@pytest.mark.parametrize("seed", range(40))
def test_closure_is_the_reachable_sources(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 40)
    reads = {}
    for node in range(n):
        if rng.random() < 0.8:
            # reads of other nodes, of itself, and of nodes that are not in the graph (-1)
            reads[node] = {rng.randrange(-1, n) for _ in range(rng.randint(0, 4))}
    sources = {node: {f"k{node}"} for node in range(-3, n) if rng.random() < 0.4}
    got = closure(reads, sources)
    assert set(got) == set(reads) | set(sources)
    for node in got:
        want = tuple(sorted(_reachable_sources(reads, sources, node)))
        assert got[node] == want, (seed, node)


def test_a_cycle_shares_the_union_of_its_members():
    reads = {1: {2}, 2: {3}, 3: {1, 4}, 4: set()}
    got = closure(reads, {1: {"a"}, 4: {"b"}, 5: {"c"}})
    assert got[1] == got[2] == got[3] == ("a", "b")
    assert got[1] is got[2] is got[3]
    assert got[4] == ("b",) and got[5] == ("c",)


def test_a_long_chain_read_backwards():
    n = 100_000
    reads = {k: {k + 1} for k in range(n)}
    got = closure(reads, {n: {"state"}})
    assert all(got[k] == ("state",) for k in range(0, n + 1, 997))


def test_dependencies_leave_out_the_hidden_nodes():
    """Nodes above ``last`` are hidden slots (no ScalarVariable): never listed."""
    deps = Dependencies({"a": 1, "b": 2, "c": 5}, {1: (1, 3), 2: (4,), 5: ()}, 2)
    assert deps["a"] == (1,) and deps.get("a") == (1,)
    assert deps["b"] == () and deps.get("b") == () and deps.get("c") == ()
    assert deps.get("d") is None and "d" not in deps and "a" in deps
    assert list(deps) == ["a", "b", "c"] and len(deps) == 3
