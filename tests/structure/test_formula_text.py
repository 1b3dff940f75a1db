"""The readable formulas of the guard space (`GuardSpace.text`): each path of the BDD is
widened to an implicant by one shared walk (`mdae_fmu.implicit.formulas._widen`); the oracle
is the definition, literal by literal with fresh BDDs (a literal is dropped when the product
of the others and ~u is false)."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("dd")
from dd.autoref import BDD  # noqa: E402

from mdae_fmu.implicit.formulas import _cubes, _implied, _widen  # noqa: E402


def _widen_by_definition(b, u, path: dict, order: dict) -> dict:
    cube = dict(path)
    for v in sorted(path, key=order.get):
        wider = {k: x for k, x in cube.items() if k != v}
        if b.cube(wider) & ~u == b.false:
            cube = wider
    return cube


def _random_formula(rng: random.Random, b: BDD, names: list[str]):
    u = b.false
    for _ in range(rng.randint(1, 6)):
        t = b.true
        for v in rng.sample(names, rng.randint(1, len(names))):
            t &= b.var(v) if rng.random() < 0.5 else ~b.var(v)
        u = (u | t) if rng.random() < 0.8 else (u & ~t)
    return u


@pytest.mark.parametrize("seed", range(4))
def test_widening_and_cover_test_agree_with_the_definition(seed):
    rng = random.Random(seed)
    checked = 0
    for _ in range(60):
        n = rng.randint(1, 9)
        b = BDD()
        names = [f"g{k}" for k in range(n)]
        b.declare(*names)
        order = {v: k for k, v in enumerate(names)}
        u = _random_formula(rng, b, names)
        covered = b.false
        for path in _cubes(b, u):
            wide = _widen(u, path)
            assert wide == _widen_by_definition(b, u, path, order)
            assert b.cube(wide) & ~u == b.false          # an implicant of u
            for v in wide:                                  # and a prime one
                rest = {k: x for k, x in wide.items() if k != v}
                assert b.cube(rest) & ~u != b.false
            assert _implied(covered, path) == (b.cube(path) & ~covered == b.false)
            covered |= b.cube(wide)
            checked += 1
    assert checked > 100


def test_a_disjunction_of_many_guards_reads_as_one_literal_per_guard():
    """The formula of the modes with some clutch engaged, over 120 guards: one path per
    guard, whose 1 to 120 literals widen to the guard alone (each path tested literal by
    literal was O(n^2) BDD operations, O(n^3) for the formula: minutes at n = 200)."""
    from mdae_fmu import expr as E
    from mdae_fmu.implicit.formulas import GuardSpace
    atoms = [E.Ref(name=f"c{k}") for k in range(120)]
    space = GuardSpace(atoms, {}, {})
    u = space.bdd.false
    for a in atoms:
        u |= space.bdd.var(space.var_of[a])
    assert space.text(u, 10 ** 6) == " or ".join(f"c{k}" for k in range(120))
    assert space.text(~u, 10 ** 6) == "(" + " and ".join(f"not c{k}" for k in range(120)) + ")"
