"""A restart that leaves a state on its own event surface is one event, not two (issue 29,
Deliver 5): after the bounce of reference_models/BouncingBall.mo the height is still on the
surface of `h <= 0` (within the event hysteresis) and the velocity points away from it. The
relation takes its right limit (false: the solution leaves the surface) and its event
indicator stays away from zero while the height crosses the hysteresis band, so no second,
empty event follows 1e-10 s later (docs/fmi-mapping.md, "Events"). The Reference-FMUs'
BouncingBall gets the same count by resetting h to exactly 0, an indicator of exactly 0 that
CVODE does not report as a root when it leaves it.

Oracles: the closed-form bounce times t_0 = sqrt(2 h0/g), t_{k+1} = t_k + 2 e^{k+1} u_0/g
(u_0 = sqrt(2 g h0), `cosim_util.bounce_times`); the events a host sees are counted from
FMPy's result rows (two rows at each event time, Model Exchange), from the FMU's log
(Co-Simulation) and from the Python runtime's counter of located crossings, and compared with
the hand-written baseline FMU of the Reference-FMUs' ball (benchmarks/baselines)."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

pytest.importorskip("fmpy")
from fmpy import simulate_fmu  # noqa: E402

from fmu_files import export_text  # noqa: E402
from mdae_fmu import api  # noqa: E402

from cosim_util import REFERENCE, bounce_times, sundials_available  # noqa: E402

G, E, H0 = 9.81, 0.7, 1.0      # the defaults of cosim_util.bounce_times

# The Reference-FMUs' BouncingBall (stops bouncing when the rebound speed falls below
# v_min), written as a modeller writes it in Modelica.
BALL_STOP = """model BallStop "bouncing ball that comes to rest below v_min"
  parameter Real g = 9.81; parameter Real e = 0.7; parameter Real v_min = 0.1;
  Real h(start = 1, fixed = true) "height";
  Real v(start = 0, fixed = true) "velocity";
  Boolean flying(start = true, fixed = true);
  discrete Real rebound(start = 0, fixed = true) "speed after the last bounce";
  discrete Integer bounces(start = 0, fixed = true);
equation
  der(h) = v;
  der(v) = if flying then -g else 0;
  when h <= 0 then
    rebound = -e*pre(v);
    flying = rebound >= v_min;
    bounces = pre(bounces) + 1;
    reinit(v, if rebound >= v_min then rebound else 0);
  end when;
end BallStop;
"""
V_MIN = 0.1


def event_times(t: np.ndarray) -> list[float]:
    """The times of the events FMPy recorded (two or more rows at one time)."""
    return sorted({float(t[i]) for i in range(len(t) - 1) if t[i] == t[i + 1]})


def state_events_logged(fmu, **options) -> list[float]:
    """The times of the state events the Co-Simulation FMU logged."""
    log: list[str] = []

    def logger(*args):
        log.append(args[-1].decode() if isinstance(args[-1], bytes) else str(args[-1]))
    simulate_fmu(str(fmu), fmi_type="CoSimulation", debug_logging=True, logger=logger,
                 **options)
    return [float(m.split(":")[0].split("=")[1]) for m in log if ": state event," in m]


@pytest.fixture(scope="module")
def balls(tmp_path_factory):
    out = tmp_path_factory.mktemp("balls")
    kind = "both" if sundials_available() else "me"
    ball = api.export_fmu(api.load(REFERENCE / "BouncingBall.mo"), out / "BouncingBall.fmu",
                          fmi_type=kind, progress=False)
    stop = export_text(out, BALL_STOP, "BallStop", fmi_type=kind)
    return {"BouncingBall": (ball, 2.0, 0.0), "BallStop": (stop, 3.0, V_MIN)}


@pytest.mark.parametrize("name", ["BouncingBall", "BallStop"])
def test_one_event_per_bounce_in_model_exchange(balls, name):
    fmu, stop, v_min = balls[name]
    r = simulate_fmu(str(fmu), fmi_type="ModelExchange", stop_time=stop,
                     relative_tolerance=1e-10,
                     output_interval=0.01, output=["h", "v"])
    t = r["time"]
    expected = bounce_times(stop, v_min)
    assert len(expected) == (4 if name == "BouncingBall" else 11)
    found = event_times(t)
    assert len(found) == len(expected), found
    np.testing.assert_allclose(found, expected, rtol=0, atol=1e-6)
    for te in found:
        rows = np.nonzero(t == te)[0]
        assert len(rows) == 2                     # left and right limit, nothing else
        before, after = rows
        assert abs(r["h"][before]) < 1e-9 and abs(r["h"][after]) < 1e-9
        rebound = -E * r["v"][before]
        assert r["v"][after] == pytest.approx(rebound if rebound >= v_min else 0.0,
                                              rel=1e-12, abs=0)
    if name == "BallStop":                        # at rest on the floor
        late = t > expected[-1] + 1e-6
        np.testing.assert_array_equal(r["v"][late], 0.0)
        assert np.all(np.abs(r["h"][late]) < 1e-9)


@pytest.mark.requires_sundials
@pytest.mark.parametrize("name", ["BouncingBall", "BallStop"])
def test_one_event_per_bounce_in_co_simulation(balls, name):
    fmu, stop, v_min = balls[name]
    found = state_events_logged(fmu, stop_time=stop, relative_tolerance=1e-10,
                                output_interval=0.01)
    expected = bounce_times(stop, v_min)
    assert len(found) == len(expected), found
    np.testing.assert_allclose(found, expected, rtol=0, atol=1e-6)


def test_bounces_counted_by_the_model(balls):
    r = simulate_fmu(str(balls["BallStop"][0]), fmi_type="ModelExchange", stop_time=3.0,
                     relative_tolerance=1e-10,
                     output_interval=0.01, output=["bounces", "flying"])
    t = r["time"]
    expected = bounce_times(3.0, V_MIN)
    away = np.all([np.abs(t - te) > 1e-6 for te in expected], axis=0)
    count = np.searchsorted(expected, t, side="right")
    np.testing.assert_array_equal(r["bounces"][away], count[away])
    np.testing.assert_array_equal(r["flying"][away], (count < len(expected))[away])


def test_python_runtime_locates_one_crossing_per_bounce():
    """The plan of the Python backend run in-process: its counter of located crossings."""
    from mdae_fmu.analysis import analyze
    from mdae_fmu.fmu.pyfmu_runtime import Simulator
    from mdae_fmu.fmu.python_backend import python_plan
    model = api.load(REFERENCE / "BouncingBall.mo")
    sim = Simulator(python_plan(model, analyze(model)))
    sim.set_tolerance(1e-10)
    slot = {v["name"]: v["vr"] for v in sim.plan["variables"] if v["type"] == "Real"}
    sim.initialize(0.0)
    for k in range(200):
        sim.do_step(k * 0.01, 0.01, 2.0)
    assert sim.events == len(bounce_times(2.0)) == 4
    # the height at t = 2: the parabola after the fourth bounce
    t4 = bounce_times(2.0)[-1]
    u4 = math.sqrt(2 * G * H0) * E ** 4
    assert sim.r[slot["h"]] == pytest.approx(u4 * (2.0 - t4) - G * (2.0 - t4) ** 2 / 2,
                                             abs=1e-6)


def test_as_many_events_as_the_hand_written_ball(balls, tmp_path):
    """The hand-written ME FMU of the Reference-FMUs' ball (benchmarks/baselines: indicator
    h, h set just above 0 at a bounce) under the same host: the same events."""
    if str(REFERENCE.parent) not in sys.path:
        sys.path.insert(0, str(REFERENCE.parent))
    from benchmarks.baselines.build import build_baseline

    def events(fmu):
        r = simulate_fmu(str(fmu), fmi_type="ModelExchange", stop_time=3.0,
                         relative_tolerance=1e-10, output_interval=0.01, output=["h"])
        return event_times(r["time"])
    ours, theirs = events(balls["BallStop"][0]), events(build_baseline("BouncingBall", tmp_path))
    assert len(ours) == len(theirs) == 11
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6)
