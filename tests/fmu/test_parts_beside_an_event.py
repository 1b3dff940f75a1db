"""A bouncing ball beside a part that shares no variable with it (docs/theory.md §7.5): two
capacitors that an input switch puts in parallel (PAIR of
tests/modes/test_one_analysis_event_diagnostics.py, under-determined at shift 0 while
switched, which made DiffArray reject the bounce before). The model is exported and simulated
in Model Exchange (FMPy, record_events) over 3 bounces.

Oracles: the FMU of the ball alone (the same bounce instants, heights and velocities, the
same restart ``v = -e v-``, to 1e-10), the closed form of the ball (free fall between the
bounces, each at h = 0) and the pair's own solution by scipy (switch open: ``u2' = -u2/2``,
``u1' = sin t + u2``, to 1e-7)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("dd")
pytest.importorskip("fmpy")

from mdae_fmu import api  # noqa: E402
from mdae_fmu.analysis import analyze  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
for sub in ("tests", "tests/modes", "tests/workflows", "benchmarks"):
    sys.path.insert(0, str(ROOT / sub))
from test_one_analysis_event_diagnostics import ACCEPTED, PAIR, _beside  # noqa: E402

BALL = ACCEPTED["BouncingSwitch"]
# the pair started away from rest, so that its solution is not zero
BALL_PAIR = _beside(BALL, PAIR).replace("u2(start = 0", "u2(start = 1")
STOP, G, E = 2.0, 9.81, 0.8


def bounces(stop: float) -> list[tuple[float, float, float]]:
    """The ball's bounces up to ``stop`` in closed form: ``(t, v-, v+)``, from h = 1 at rest,
    free fall between them (the switch ``damped`` keeps its start value, false)."""
    t, v0, out = math.sqrt(2 / G), 0.0, []
    v = -G * t
    while t <= stop:
        v0 = -E * v
        out.append((t, v, v0))
        t += 2 * v0 / G
        v = -v0
    return out


def pair_solution(times: np.ndarray) -> np.ndarray:
    """``(u1, u2)`` at ``times`` by scipy's solve_ivp on the pair alone, the switch open."""
    from scipy.integrate import solve_ivp
    sol = solve_ivp(lambda t, u: [math.sin(t) + u[1], -u[1] / 2], (0.0, float(times[-1])),
                    [0.0, 1.0], method="DOP853", rtol=1e-13, atol=1e-13, dense_output=True)
    return sol.sol(times).T


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """The Model Exchange runs of the ball alone and of the ball beside the pair."""
    from fmpy import simulate_fmu
    sys.path.insert(0, str(ROOT / "tests" / "modes"))
    from test_one_analysis_event_diagnostics import _model
    out = {}
    for key, text, names in (("ball", BALL, ["h", "v"]),
                             ("pair", BALL_PAIR, ["h", "v", "u1", "u2"])):
        fmu = tmp_path_factory.mktemp(key) / f"{key}.fmu"
        api.export_fmu(_model(text), fmu, fmi_type="me", progress=False,
                       default_experiment={"stopTime": STOP, "tolerance": 1e-12})
        out[key] = simulate_fmu(str(fmu), fmi_type="ModelExchange", stop_time=STOP,
                                relative_tolerance=1e-12, output_interval=0.01, output=names,
                                record_events=True)
    return out


def test_both_analyses_accept_the_ball_beside_the_pair():
    """The enumerated analysis (the oracle) and the one analysis accept the model."""
    from test_one_analysis_event_diagnostics import _model
    model = _model(BALL_PAIR)
    for implicit in (False, True):
        a = analyze(model, implicit=implicit)
        assert a.accepted, (implicit, a.rejection)


def test_the_ball_bounces_as_alone(runs):
    """3 bounces at the closed form's instants (1e-9) with its restart v+ = -e v-; every row
    of the ball beside the pair equals the ball alone's (the same instants, 1e-10)."""
    ball, pair = runs["ball"], runs["pair"]
    expected = bounces(STOP)
    assert len(expected) == 3
    for r in (ball, pair):
        t = np.asarray(r["time"])
        at = [i for i in range(1, len(t)) if t[i] == t[i - 1]]
        assert len(at) == 3
        for i, (te, v_left, v_right) in zip(at, expected):
            assert t[i] == pytest.approx(te, abs=1e-9)
            assert r["v"][i - 1] == pytest.approx(v_left, abs=1e-8)
            assert r["v"][i] == pytest.approx(v_right, abs=1e-8)
            assert abs(r["h"][i]) < 1e-8
    assert len(ball) == len(pair)
    for n in ("time", "h", "v"):
        assert np.max(np.abs(np.asarray(ball[n]) - np.asarray(pair[n]))) < 1e-10, n


def test_the_pair_follows_its_own_solution(runs):
    """The pair's voltages at every output row (bounce rows included: the bounce does not
    touch them) against scipy's solution of the pair alone, to 1e-7."""
    pair = runs["pair"]
    t = np.asarray(pair["time"])
    got = np.column_stack([pair["u1"], pair["u2"]])
    assert np.max(np.abs(got - pair_solution(t))) < 1e-7
