"""The independent Cup-and-Ball solution (benchmarks/cup_and_ball_exact.py), the oracle of the
three Cup-and-Ball reference models in test_reference_trajectories.py: its stored CSVs are what
the script computes, and the solution satisfies the closed-form facts of the physics
(docs/theory.md §13.2) at its events."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from cup_and_ball_exact import (FMU_HYSTERESIS, G, MODELS, OUT, L, solve,  # noqa: E402
                                table)
from record_reference_trajectories import read_csv  # noqa: E402


@pytest.mark.parametrize("key", ["CupAndBallOriginal", "CupAndBallFirstOrder"])
def test_stored_solutions_are_the_scripts(key):
    """``<key>.exact.csv`` and ``<key>.exact-h1e-10.csv`` are the script's output (the same
    times and values to 1e-12 relative: another libm may change the last bits)."""
    stop, columns = MODELS[key]
    for h, name in ((0.0, f"{key}.exact.csv"), (FMU_HYSTERESIS, f"{key}.exact-h1e-10.csv")):
        header, rows = read_csv(OUT / name)
        assert header == ["time", *columns]
        stored, computed = np.array(rows), np.array(table(solve(stop, hysteresis=h), columns))
        assert stored.shape == computed.shape, name
        assert np.max(np.abs(stored - computed) / (1 + np.abs(computed))) < 1e-12, name


def test_solution_satisfies_the_closed_forms_at_its_events():
    """At the first tightening the thrown ball's parabola meets the circle; the impact keeps
    the tangential velocity, removes the radial one and its impulse is p.v-/L^2; while taut,
    |p| = L and the pendulum's energy is constant; at the slackening lam = 0 and p.v = 0, so
    the flight's s(tau) = g vy tau^3 - g^2 tau^4 / 4 and the rope tightens again after
    4 vy / g."""
    columns = MODELS["CupAndBallFirstOrder"][1]
    sol = solve(3.0)
    rows = np.array(table(sol, columns))
    col = {n: j + 1 for j, n in enumerate(columns)}
    t1, t2, t3 = sol.events
    assert abs(t1 - 0.065028692049) < 1e-12 and abs(t2 - 0.472690698096) < 1e-12
    x, y = 6.0 * t1, -0.9 - 0.5 * G * t1 * t1            # the .mo's start: (0, -0.9), 6 m/s
    assert abs(x * x + y * y - L * L) < 1e-15
    at = {t: rows[rows[:, 0] == t] for t in sol.events}
    for t in (t1, t3):                                   # impacts: left, right rows
        left, right = at[t]
        p = left[[col["x"], col["y"]]]
        v_left, v_right = left[[col["vx"], col["vy"]]], right[[col["vx"], col["vy"]]]
        tangent = np.array([-p[1], p[0]]) / L
        assert abs(p @ v_right) < 1e-14
        assert abs(tangent @ v_left - tangent @ v_right) < 1e-14
        assert abs(right[col["impulse(lam)"]] - p @ v_left / L ** 2) < 1e-14
    taut = rows[(rows[:, 0] > t1) & (rows[:, 0] < t2)]
    radius = np.hypot(taut[:, col["x"]], taut[:, col["y"]])
    assert np.max(np.abs(radius - L)) < 1e-15
    energy = 0.5 * (taut[:, col["vx"]] ** 2 + taut[:, col["vy"]] ** 2) + G * taut[:, col["y"]]
    assert np.max(np.abs(energy - energy[0])) < 1e-13 * abs(energy[0])
    left, right = at[t2]
    assert abs(left[col["lam"]]) < 1e-14 and right[col["lam"]] == 0.0
    assert abs(left[[col["x"], col["y"]]] @ left[[col["vx"], col["vy"]]]) < 1e-14
    assert math.isclose(t3 - t2, 4.0 * right[col["vy"]] / G, rel_tol=1e-12)
