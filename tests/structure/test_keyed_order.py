"""`mdae_fmu.structure.keyed`: the DM over keys does not depend on their order (issue 16)."""

import random

from mdae_fmu.structure.keyed import dm


def test_dm_does_not_depend_on_the_key_order():
    # x + y = 0, x - y = 1, x = 2 over {x, y}: one equation too many, all three over-determined
    # (docs/theory.md §2.4); z = 0 alone is well-determined; w occurs in no equation of its own
    occ = {("e1", 0): {("x", 0), ("y", 0)}, ("e2", 0): {("x", 0), ("y", 0)},
           ("e3", 0): {("x", 0)}, ("e4", 0): {("z", 0)}, ("e5", 0): {("w", 0), ("v", 0)}}
    unknowns = {("x", 0), ("y", 0), ("z", 0), ("w", 0), ("v", 0)}
    rng = random.Random(3)
    results = set()
    for _ in range(20):
        eqs = list(occ)
        rng.shuffle(eqs)
        results.add(dm(eqs, occ, unknowns))
    assert len(results) == 1
    r = results.pop()
    assert r.over_eqs == {("e1", 0), ("e2", 0), ("e3", 0)}
    assert r.over_vars == {("x", 0), ("y", 0)}
    assert r.well_eqs == {("e4", 0)} and r.well_vars == {("z", 0)}
    assert r.under_eqs == {("e5", 0)} and r.under_vars == {("w", 0), ("v", 0)}


def test_dm_large_graph_matches_small_graph_path():
    # a chain x_i + x_{i+1} = 0 (i < n) and x_n = 0 is well-determined; one more equation on
    # x_1 makes the whole chain over-determined. 3000 equations take the array path.
    for n in (10, 3000):
        occ = {(f"c{i}", 0): {(f"x{i}", 0), (f"x{i + 1}", 0)} for i in range(1, n)}
        occ[("last", 0)] = {(f"x{n}", 0)}
        unknowns = {(f"x{i}", 0) for i in range(1, n + 1)}
        r = dm(occ, occ, unknowns)
        assert r.well_eqs == set(occ) and not r.over_eqs and not r.under_vars
        occ[("extra", 0)] = {("x1", 0)}
        r = dm(occ, occ, unknowns)
        assert r.over_eqs == set(occ) and r.over_vars == unknowns and not r.well_eqs
