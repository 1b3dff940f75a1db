"""Models of one long mode with when-clauses on the one analysis (issue 26 Deliver 1): their
mode changes come from the one analysis' event checks (`mdae_fmu.implicit.when_checks`) and
the changes into single events cascaded on their regions
(`mdae_fmu.implicit.when_checks.event_automaton_of`), with no transient mode enumerated.

Oracle: the enumerated analysis (``implicit=False``, every transient mode and pair explored):
the same verdict and diagnostic codes on the reference, corpus and seed models of one long
mode with when-clauses; the same standardized restart of every change the one analysis lists
(up to the identities of the states outside the event's region, which restart nothing); and
the FMU built from the enumerated analysis (which export accepts for a model of one mode)
gives the default FMU's trajectories in FMPy, Model Exchange and Co-Simulation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mdae_fmu.analysis import analyze
from mdae_fmu.importers.flat_modelica import load_modelica, parse_modelica

ROOT = Path(__file__).resolve().parents[2]

FILES = ["reference_models/BouncingBall.mo", "reference_models/CupAndBallElastic.mo",
         "reference_models/Stair.mo", "tests/corpus/rumoca/Ball.mo",
         "tests/corpus/rumoca/GalecCounter.mo", "tests/data/CsToggle.mo",
         "tests/data/CsNoState.mo", "tests/data/CsTerminate.mo"]

COUNT_AND_BOUNCE = """model CountAndBounce
  discrete Real c(start = 0, fixed = true);
  Real x(start = 1, fixed = true);
  Real h(start = 1, fixed = true);
  Real v(start = 0, fixed = true);
equation
  der(x) = -x;
  der(h) = v;
  der(v) = -9.81;
  when x < 0.5 then
    c = pre(c) + 1;
  end when;
  when h < 0 then
    reinit(v, -0.5 * pre(v));
  end when;
end CountAndBounce;
"""

PING_PONG = """class PingPong
  Real x(start = 0.0, fixed = true);
  Real y(start = 0.0, fixed = true);
equation
  der(x) = 1.0;
  der(y) = 1.0;
  when y >= 1.0 then
    reinit(x, 2.0);
  end when;
  when x >= 1.0 then
    reinit(y, 2.0);
  end when;
end PingPong;
"""

# a bounce beside an index-3 pendulum: the bounce's instant, on the whole system, determines
# the pendulum's multiplier with its future positions (E-TRANSIENT-FUTURE)
BALL_PENDULUM = """model BallPendulum
  parameter Real L = 1, g = 9.81, m = 1;
  Real h(start = 1, fixed = true);
  Real vh(start = 0, fixed = true);
  Real px(start = 1, fixed = true);
  Real py(start = 0);
  Real pvx(start = 0, fixed = true);
  Real pvy(start = 0);
  Real lambda;
equation
  der(h) = vh;
  der(vh) = -g;
  der(px) = pvx;
  der(py) = pvy;
  m * der(pvx) = -lambda * px;
  m * der(pvy) = -lambda * py - m * g;
  px ^ 2 + py ^ 2 = L ^ 2;
  when h < 0 then
    reinit(vh, -0.8 * pre(vh));
  end when;
end BallPendulum;
"""

WHEN_LOOP = """class Loop
  discrete Real a(start = 0);
  discrete Real b(start = 0);
  Real x(start = 0, fixed = true);
equation
  der(x) = 1;
  when x > 0.5 then
    a = b + 1;
    b = 2*a;
  end when;
end Loop;
"""

# two clauses on one state, one of them kicking a bounce's velocity (a restart beside states
# outside its region)
CLASH = """model Clash
  Real x(start = 0, fixed = true);
  Real y(start = 0, fixed = true);
  Real h(start = 1, fixed = true);
  Real v(start = 0, fixed = true);
equation
  der(x) = 1;
  der(y) = 1;
  der(h) = v;
  der(v) = -9.81;
  when time > 0.5 then
    reinit(x, pre(x) + 1);
  end when;
  when y > 0.7 then
    reinit(x, 10);
  end when;
  when h < 0 then
    reinit(v, -0.7 * pre(v));
  end when;
end Clash;
"""

INLINE = {"CountAndBounce": COUNT_AND_BOUNCE, "PingPong": PING_PONG,
          "BallPendulum": BALL_PENDULUM, "Loop": WHEN_LOOP, "Clash": CLASH}


def _model(name: str):
    if name in INLINE:
        return parse_modelica(INLINE[name], f"{name}.mo")
    return load_modelica(ROOT / name)


def _codes(a) -> list[str]:
    return sorted({m.split(":", 1)[0] for m in a.messages if m[:2] in ("E-", "W-")})


def _moving(restart) -> set:
    """The restart equations that move something (identities ``x+ = x-`` dropped)."""
    return {eq for eq in restart if str(eq.rhs) != str(eq.lhs)[:-1] + "-"}


@pytest.mark.parametrize("name", FILES + sorted(INLINE))
def test_same_verdict_codes_and_restarts_as_the_enumerated_oracle(name):
    model = _model(name)
    a = analyze(model)
    oracle = analyze(model, implicit=False)
    assert a.modes is not None and len(a.modes.modes) == 1
    n_events = sum(g.kind == "transient" for g in model.guards())
    # no transient mode enumerated: the long mode and at most one transient mode per event
    # (no automaton when the when-clauses are rejected before: E-WHEN-LOOP)
    assert a.automaton is None or len(a.automaton.modes) <= 1 + n_events
    assert a.accepted == oracle.accepted, (a.messages, oracle.messages)
    assert _codes(a) == _codes(oracle)
    if not a.accepted:
        return
    assert a.guarded is not None and a.guarded.single is not None
    for change in a.automaton.changes:
        assert change.accepted
        theirs = oracle.automaton.change(change.src_label, change.dst_label)
        assert _moving(change.restart) == _moving(theirs.restart), change.dst_label


def test_rejections_name_the_mode_and_the_reason():
    """The one route's rejections read as the enumerated ones: the change, the transient
    mode and what fails (one mode: no formula suffix), once each."""
    a = analyze(parse_modelica(BALL_PENDULUM, "BallPendulum.mo"))
    [error] = a.errors
    assert error.startswith(
        "E-TRANSIENT-FUTURE: when switching not edge(h < 0) -> edge(h < 0): at transient mode "
        "[edge(h < 0)]: the values {lambda, pvx^o, pvy^o} computed at the transient instant are "
        "determined together with the future values {px^o2, py^o2}"), error
    model = parse_modelica(PING_PONG, "PingPong.mo")
    a = analyze(model)
    assert sorted(a.errors) == sorted(analyze(model, implicit=False).errors)
    assert {e.split(":", 1)[0] for e in a.errors} == {"E-CASCADE-INFINITE"}
    assert ("the events {edge(y >= 1.0)} -> {edge(x >= 1.0)} -> {edge(y >= 1.0)} -> "
            "{edge(x >= 1.0)} can re-trigger each other forever") in a.errors[0]
    a = analyze(parse_modelica(WHEN_LOOP, "Loop.mo"))
    assert "algebraic loop among the equations of when-clauses (E-WHEN-LOOP)" in a.errors[0]


@pytest.mark.long
@pytest.mark.parametrize("name", ["reference_models/BouncingBall.mo",
                                  "reference_models/CupAndBallElastic.mo", "CountAndBounce",
                                  "Clash"])
def test_fmu_trajectories_equal_the_enumerated_routes(name, tmp_path):
    """The default FMU against the FMU of the enumerated analysis (the oracle route), ME and
    CS in FMPy: the same trajectories to 1e-10."""
    fmpy = pytest.importorskip("fmpy")
    from mdae_fmu import api
    model = _model(name)
    one, enumerated = tmp_path / "one.fmu", tmp_path / "enumerated.fmu"
    api.export_fmu(model, one, fmi_type="both", progress=False)
    api.export_fmu(model, enumerated, fmi_type="both", progress=False,
                   analysis=analyze(model, implicit=False))
    for fmi_type in ("ModelExchange", "CoSimulation"):
        runs = [fmpy.simulate_fmu(str(p), fmi_type=fmi_type, stop_time=2.0,
                                  relative_tolerance=1e-8, output_interval=0.01)
                for p in (one, enumerated)]
        assert runs[0].dtype.names == runs[1].dtype.names
        assert len(runs[0]) == len(runs[1]) > 100
        for col in runs[0].dtype.names:
            np.testing.assert_allclose(runs[0][col], runs[1][col], rtol=0, atol=1e-10,
                                       err_msg=f"{name} {fmi_type} {col}")
