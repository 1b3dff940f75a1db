"""Event semantics regressions of issue 14 (Deliver item 0), each on a small model.

* the equations of when-bodies are solved in the order of their dependencies (an equation reads
  the values assigned at the same instant, also through the continuous equations), a cycle
  among them is rejected (E-WHEN-LOOP); the event iteration re-evaluates when-conditions on the
  new discrete values;
* a guard on the left limit ``pre(w)`` of a continuous ``w`` switches where ``w`` crosses its
  threshold (closed-form switching times);
* ``der(y)`` of an algebraic ``y`` read by a when-clause is named by the importer
  (``$der_y = der(y)``) and simulates as the hand-written fix; read by an assertion it is
  rejected at analysis (E-EVENT-DER) with that fix;
* models with if-equation modes and no restart export warning-free (gcc -Werror).

Oracles: closed forms (sin crossings at k*pi, counters, products by a gain)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fmpy")
from fmpy import simulate_fmu  # noqa: E402

from mdae_fmu.analysis import analyze  # noqa: E402
from mdae_fmu.cli import main  # noqa: E402
from mdae_fmu.diagnostics import ModelRejected  # noqa: E402
from mdae_fmu.fmu.export import export  # noqa: E402
from mdae_fmu.importers.flat_modelica import parse_modelica  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from strict_driver import simulate_strict  # noqa: E402

# y and y2 are written before count in the when-body, and the second when-clause reads z,
# which the continuous equations compute from count: every one of them must read the new count.
# `when big` rises in the event iteration that follows the one where count reaches 3.
COUNTER = """class Counter
  parameter Real gain = 2.5;
  Integer count(start = 0);
  discrete Real y(start = 0);
  discrete Real y2(start = 0);
  discrete Real yz(start = 0);
  Boolean big(start = false);
  Integer m(start = 0);
  Real z;
  Real x(start = 0, fixed = true);
equation
  der(x) = 1;
  z = 3*count;
  when sample(0, 0.001) then
    y2 = 2*y;
    y = gain*count;
    count = pre(count) + 1;
    big = count >= 3;
  end when;
  when sample(0, 0.001) then
    yz = z;
  end when;
  when big then
    m = pre(m) + 10;
  end when;
end Counter;
"""


def _check_counter(count, y, y2, yz, x, m, big):
    assert len(count) > 10 and count.max() >= 10
    np.testing.assert_array_equal(y, 2.5 * count)          # exact: 2.5*n is exact in binary
    np.testing.assert_array_equal(y2, 5.0 * count)
    np.testing.assert_array_equal(yz, 3.0 * count)
    np.testing.assert_array_equal(big, count >= 3)
    np.testing.assert_array_equal(m, np.where(count >= 3, 10, 0))


def test_when_body_equations_read_the_values_of_the_instant(tmp_path):
    fmu = export(parse_modelica(COUNTER, "Counter.mo"), tmp_path / "Counter.fmu",
                 progress=False)
    names = ["count", "y", "y2", "yz", "x", "m", "big"]
    r = simulate_fmu(str(fmu), stop_time=0.0105, output_interval=0.0005, output=names)
    _check_counter(*(np.asarray(r[n], dtype=float) for n in names))
    # after the event at t = k ms, count = k + 1 (sample fires at 0 too)
    t = r["time"]
    last = np.nonzero(np.isclose(t, 0.0105))[0][-1]
    assert r["count"][last] == 11
    res = simulate_strict(fmu, stop_time=0.0105, step=2.5e-4, host_safe=True)
    assert not res.violations
    _check_counter(*(np.asarray(res.values[n], dtype=float) for n in names))
    assert res.at("count", 0.0105) == 11


LOOP = """class Loop
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


def test_cycle_among_when_equations_is_rejected(tmp_path, capsys):
    model = parse_modelica(LOOP, "Loop.mo")
    a = analyze(model)
    assert not a.accepted
    msg = a.rejection
    assert msg.startswith("algebraic loop among the equations of when-clauses (E-WHEN-LOOP): "
                          "a, b depend on each other at the same instant")
    assert "the equation of a in a when-clause (Loop.mo:8) reads b" in msg
    assert "the equation of b in a when-clause (Loop.mo:9) reads a" in msg
    with pytest.raises(ModelRejected, match="E-WHEN-LOOP"):
        export(model, tmp_path / "Loop.fmu", progress=False)
    assert not (tmp_path / "Loop.fmu").exists()
    # the suggested fix breaks the loop
    fixed = parse_modelica(LOOP.replace("b + 1", "pre(b) + 1"), "Loop.mo")
    assert analyze(fixed).accepted


# A guard on pre(w), w = sin(time): an if-equation and an if-expression on it (two modes, no
# restart: the export also covers gcc -Werror on models without reinit). x' = +-1 switches at
# k*pi, xs' = max(sin, 0) in the limit. The when-clause counts seconds in a multimode model.
PREW = """class PreW
  Real w;
  Real y;
  Real x(start = 0, fixed = true);
  Real xs(start = 0, fixed = true);
  Integer n(start = 0);
equation
  w = sin(time);
  y = if pre(w) > 0 then w else 0;
  der(xs) = y;
  if pre(w) > 0 then
    der(x) = 1;
  else
    der(x) = -1;
  end if;
  when sample(0, 1) then
    n = pre(n) + 1;
  end when;
end PreW;
"""


def _x_closed(t):
    """x' = sign(sin t) (x' = -1 at t = 0, where sin = 0 is not > 0; the first crossing is
    right after 0): x = t - 2*pi*k on [2k pi, (2k+1) pi], (2k+2) pi - t on the next."""
    k = np.floor(t / math.pi)
    phase = t - k * math.pi
    return np.where(k % 2 == 0, phase, math.pi - phase)


def _xs_closed(t):
    k = np.floor(t / math.pi)
    full = 2.0 * np.ceil(k / 2)                     # completed positive half-waves
    return np.where(k % 2 == 0, full + 1 - np.cos(t - k * math.pi), full)


def test_guard_on_left_limit_of_continuous_variable_switches(tmp_path):
    fmu = export(parse_modelica(PREW, "PreW.mo"), tmp_path / "PreW.fmu", progress=False)
    r = simulate_fmu(str(fmu), stop_time=7.0, output_interval=0.05,
                     output=["x", "xs", "w", "n"], relative_tolerance=1e-10)
    t = r["time"]
    away = np.abs(t - np.round(t)) > 1e-6
    np.testing.assert_array_equal(r["n"][away], np.floor(t[away]) + 1)
    np.testing.assert_allclose(r["x"], _x_closed(t), atol=1e-6)
    np.testing.assert_allclose(r["xs"], _xs_closed(t), atol=1e-6)
    # the switches are events located at k*pi (rows on both sides of each)
    for k in (1, 2):
        assert np.any(np.abs(t - k * math.pi) < 1e-8)
    res = simulate_strict(fmu, stop_time=7.0, step=1e-3, host_safe=True)
    assert not res.violations
    assert abs(res.at("x", 3.0) - 3.0) < 1e-6 and abs(res.at("x", 4.0) - (2 * math.pi - 4.0)) < 1e-6
    switch = [e.time for e in res.events if "state" in e.causes]
    assert res.at("n", 6.5) == 7
    assert len(switch) == 3 and np.allclose(switch[1:], [math.pi, 2 * math.pi], atol=1e-8)


PWL = """class Pwl
  parameter Real C = 1;
  parameter Real Ga = -0.5;
  parameter Real Gb = 0.2;
  parameter Real Ve = 1;
  Real vc(start = 0.5, fixed = true);
  Real v;
  Real i;
equation
  C*der(vc) = -i;
  v = vc;
  i = if v < -Ve then Gb*(v + Ve) - Ga*Ve elseif v > Ve then Gb*(v - Ve) + Ga*Ve else Ga*v;
end Pwl;
"""

DERY = """class DerY
  Real x(start = 1, fixed = true);
  Real y;
  Integer n(start = 0);
equation
  der(x) = -x;
  y = sin(time);
  when der(y) < 0 then
    n = pre(n) + 1;
  end when;
end DerY;
"""


def test_derivative_of_algebraic_variable_at_events(tmp_path, capsys):
    """``when der(y) < 0`` with an algebraic y: the importer names the derivative (``$der_y =
    der(y)``, the fix E-EVENT-DER suggests; OpenModelica's events/derInWhenCondition), so it
    exports and n counts the maxima of sin (der(y) = cos(t) falls through 0), as the model
    with the fix written by hand does."""
    def counts(text, name):
        fmu = export(parse_modelica(text, "DerY.mo"), tmp_path / f"{name}.fmu", progress=False)
        return simulate_fmu(str(fmu), stop_time=10.0, output_interval=0.01, output=["n"])
    fixed = DERY.replace("  Integer n", "  Real d_y;\n  Integer n").replace(
        "  when der(y) < 0", "  d_y = der(y);\n  when d_y < 0")
    for text, name in ((DERY, "DerY"), (fixed, "DerYFix")):
        r = counts(text, name)
        t, n = r["time"], r["n"]
        expected = np.floor((t - math.pi / 2) / (2 * math.pi)) + 1
        away = np.min(np.abs(t[:, None] - (math.pi / 2 + 2 * math.pi * np.arange(2))),
                      axis=1) > 1e-6
        np.testing.assert_array_equal(n[away], expected[away])


def test_derivative_read_by_an_assertion_is_rejected(tmp_path, capsys):
    """An assertion outside when-clauses that reads der(y) of an algebraic y is not rewritten:
    E-EVENT-DER with the line and the fix."""
    src = tmp_path / "DerY.mo"
    src.write_text(DERY.replace("  when der(y) < 0 then\n    n = pre(n) + 1;\n  end when;",
                                '  assert(der(y) < 2, "bounded slope");'))
    code = main(["analyze", str(src)])
    out = capsys.readouterr()
    text = out.out + out.err
    assert code == 1
    assert ("derivative not computed (E-EVENT-DER): an assertion (DerY.mo:8) reads der(y), "
            "which the analysis does not compute") in text
    assert "fix: name the derivative in an equation, e.g. declare Real d_y; add the " \
           "equation d_y = der(y); and read d_y" in text
    assert "Traceback" not in text


WITHOUT_RESTART = {
    # two modes switched by a time guard, no reinit, no restart equation
    "TimeSwitch": """class TimeSwitch
  Real x(start = 1, fixed = true);
equation
  if time > 0.5 then
    der(x) = -x;
  else
    der(x) = x;
  end if;
end TimeSwitch;
""",
    # a mode guard assigned by a when-clause (multimode export with a when-clause)
    "Fly": """class Fly
  Real v(start = 0, fixed = true);
  Boolean flying(start = true);
equation
  der(v) = if flying then -1 else 0;
  when time > 0.5 then
    flying = false;
  end when;
end Fly;
""",
    # the piecewise-linear resistor with guards on the left limit (three modes)
    "PwlPre": PWL.replace("Pwl", "PwlPre").replace("if v < -Ve", "if pre(v) < -Ve")
                 .replace("elseif v > Ve", "elseif pre(v) > Ve"),
}


@pytest.mark.parametrize("name", sorted(WITHOUT_RESTART))
def test_models_without_restart_export_warning_free(tmp_path, name):
    """Generated C compiles with -Werror (fmu/build.py) for if-equation modes with no restart,
    and the FMU runs: TimeSwitch x = e^0.5 e^-(t-0.5) after 0.5; Fly v = -min(t, 0.5);
    PwlPre stays in the middle
    segment (x' = 0.5 x from 0.5 up to Ve = 1 at t = 2 ln 2, then the outer segment)."""
    fmu = export(parse_modelica(WITHOUT_RESTART[name], f"{name}.mo"), tmp_path / f"{name}.fmu",
                 progress=False)
    if name == "TimeSwitch":
        r = simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.25, output=["x"],
                         relative_tolerance=1e-10)
        np.testing.assert_allclose(r["x"][-1], math.exp(0.5) * math.exp(-0.5), rtol=1e-7)
    elif name == "Fly":
        r = simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.25, output=["v"])
        np.testing.assert_allclose(r["v"], -np.minimum(r["time"], 0.5), atol=1e-9)
    else:
        r = simulate_fmu(str(fmu), stop_time=1.2, output_interval=0.05, output=["vc"],
                         relative_tolerance=1e-10)
        t = r["time"]
        np.testing.assert_allclose(r["vc"], 0.5 * np.exp(0.5 * t), rtol=1e-7)
        r = simulate_fmu(str(fmu), stop_time=2.0, output_interval=0.05, output=["vc", "i"],
                         relative_tolerance=1e-10, start_values={"vc": 0.9})
        # ln(1/0.9)/0.5 to reach Ve, then i = Gb (v - Ve) + Ga Ve: v' = -0.2 (v - 1) + 0.5
        ts = 2 * math.log(1 / 0.9)
        t = r["time"]
        after = t > ts + 1e-6
        v_out = 1 + 2.5 * (1 - np.exp(-0.2 * (t[after] - ts)))
        np.testing.assert_allclose(r["vc"][after], v_out, rtol=1e-6)


# --- issue 14 Deliver item 3: when-clauses as Modelica defines them -----------------------------

# x: a vector condition (its edges never coincide); z: two when-clauses that reinit the same
# state on time conditions against different constants; u: elsewhen priority, the second
# branch only acts when the first does not fire at the same instant.
VECTOR = """class Vector
  Real x(start = 0, fixed = true);
  Real z(start = 0, fixed = true);
  Integer n(start = 0);
equation
  der(x) = 0;
  der(z) = 0;
  when {time > 0.1, time > 0.2} then
    reinit(x, x + 1);
  end when;
  when time > 0.1 then
    reinit(z, z + 1);
  end when;
  when time > 0.2 then
    reinit(z, 2*z + 1);
  end when;
  when time > 0.15 then
    n = pre(n) + 1;
  elsewhen time > 0.15 then
    n = pre(n) + 100;
  elsewhen time > 0.25 then
    n = pre(n) + 10;
  end when;
end Vector;
"""


def test_vector_when_and_clauses_reinit_the_same_state_at_different_times(tmp_path):
    model = parse_modelica(VECTOR, "Vector.mo")
    assert analyze(model).accepted
    fmu = export(model, tmp_path / "Vector.fmu", progress=False)
    r = simulate_fmu(str(fmu), stop_time=0.3, output_interval=0.025, output=["x", "z", "n"])
    t = r["time"]
    for k in range(len(t)):
        # rows at an event time: the first is the left limit, the last the right limit
        right = k + 1 == len(t) or t[k + 1] != t[k]

        def after(c, tk=t[k], right=right):
            return tk > c + 1e-9 or (abs(tk - c) <= 1e-9 and right)

        assert r["x"][k] == (0 if not after(0.1) else 1 if not after(0.2) else 2)
        assert r["z"][k] == (0 if not after(0.1) else 1 if not after(0.2) else 3)
        assert r["n"][k] == (0 if not after(0.15) else 1 if not after(0.25) else 11)


BALL = """class KickedBall
  parameter Real e = 0.8;
  parameter Real g = 9.81;
  Real h(start = 1, fixed = true);
  Real v(start = 0, fixed = true);
equation
  der(h) = v;
  der(v) = -g;
  when h <= 0 then
    reinit(v, -e*pre(v));
  end when;
  when time >= 0.3 then
    reinit(v, v + 2);
  end when;
end KickedBall;
"""


def _ball_impacts(n: int) -> list[float]:
    """Closed form: free fall from h = 1 until the kick v += 2 at t = 0.3, fall to the floor
    (a quadratic), then bounces of duration 2 e |v| / g, |v| shrinking by e each time."""
    g, e = 9.81, 0.8
    h, v = 1 - g * 0.3 ** 2 / 2, -g * 0.3 + 2
    tau = (v + math.sqrt(v * v + 2 * g * h)) / g          # h + v tau - g tau^2 / 2 = 0
    t, speed = 0.3 + tau, abs(v - g * tau)
    out = [t]
    for _ in range(n - 1):
        speed *= e
        t += 2 * speed / g
        out.append(t)
    return out


def test_ball_with_two_clauses_reinit_of_the_same_velocity(tmp_path):
    """Impact and kick reinit v; h <= 0 and time >= 0.3 could coincide in principle (not
    decidable at compile time): accepted, and checked at run time (next test)."""
    model = parse_modelica(BALL, "KickedBall.mo")
    assert analyze(model).accepted
    fmu = export(model, tmp_path / "KickedBall.fmu", progress=False)
    res = simulate_strict(fmu, stop_time=1.6, step=1e-3, host_safe=True)
    assert not res.violations
    # the first state event of each bounce (the next one, microseconds later: h <= 0 turning
    # false again as the ball leaves the floor)
    impacts = []
    for ev in res.events:
        if "state" in ev.causes and not (impacts and ev.time - impacts[-1] < 1e-3):
            impacts.append(ev.time)
    np.testing.assert_allclose(impacts, _ball_impacts(len(impacts)), atol=1e-8)
    assert len(impacts) == 3
    kick = [ev for ev in res.events if "time" in ev.causes]
    assert len(kick) == 1 and abs(kick[0].time - 0.3) < 1e-12
    assert abs(res.at("v", 0.3) - (2 - 9.81 * 0.3)) < 1e-9


CLASH = """class Clash
  Real x(start = 0, fixed = true);
  Real y(start = 0, fixed = true);
equation
  der(x) = 0;
  der(y) = 1;
  when time > 0.5 then
    reinit(x, x + 1);
  end when;
  when y > 0.5 then
    reinit(x, 10);
  end when;
end Clash;
"""


def test_simultaneous_reinits_of_one_variable_are_a_runtime_error(tmp_path):
    """y is a clock (y = time): both clauses fire at t = 0.5; fmi2Error names both lines."""
    model = parse_modelica(CLASH, "Clash.mo")
    assert analyze(model).accepted
    fmu = export(model, tmp_path / "Clash.fmu", progress=False)
    messages = []
    with pytest.raises(Exception, match="fmi2NewDiscreteStates"):
        simulate_fmu(str(fmu), stop_time=1.0, output=["x"],
                     logger=lambda *a: messages.append(a[-1].decode()))
    assert ("t = 0.5: reinit(x, ...) at Clash.mo:8 and at Clash.mo:11 at the same instant "
            "(two when-clauses re-initialize the same variable only at different instants)"
            in messages)
