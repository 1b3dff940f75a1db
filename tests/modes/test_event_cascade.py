"""Event iteration on jumps (issue 24, Deliver 1): at an event, once the equations of an
instant are solved again, every relation is evaluated again, and the iteration goes on while
one changed (Modelica 3.6 §8.6; docs/theory.md §8.3, cascades). A
when-condition that becomes true because a variable *jumps* at another event fires at that
event, whatever made the variable jump: a time event, a state event, an input set by the
host, a mode change's restart.

Oracles: closed forms (switching times, counters, the levels of two tanks in series, each
phase a linear ODE with constant coefficients). The values just after an event are the
second of FMPy's two Model Exchange result rows at the event time; Co-Simulation values at
a communication point are right limits. Each model is run in Model Exchange and in
Co-Simulation (the same event iteration, mdae_runtime.c), a few by the Python backend
(pyfmu_runtime.py), and the multimode ones (the guarded schedule)."""

from __future__ import annotations

import hashlib
import importlib.util
import math

import numpy as np
import pytest

pytest.importorskip("fmpy")
from fmpy import simulate_fmu  # noqa: E402

from cosim_util import sundials_available  # noqa: E402
from fmu_files import export_text  # noqa: E402

ME = "ModelExchange"
CS = pytest.param("CoSimulation", marks=pytest.mark.requires_sundials)
# the Python backend needs the 'python' extra
python_backend = pytest.mark.skipif(importlib.util.find_spec("pythonfmu") is None,
                                    reason="pythonfmu is not installed")

# The model of issue 24, as written there.
WHEN_JUMP = """model WhenJump
  Real x(start = 0, fixed = true); Real y; discrete Integer n(start = 0, fixed = true);
equation
  y = if time < 0.5 then 1.0 else -1.0;  der(x) = 1;
  when y < 0 then n = pre(n) + 1; end when;
end WhenJump;
"""

# The same with a state event: x = 1 - exp(-2 t) reaches 0.5 at t = ln(2)/2.
WHEN_JUMP_STATE = """model WhenJumpState
  Real x(start = 0, fixed = true); Real y; discrete Integer n(start = 0, fixed = true);
equation
  y = if x < 0.5 then 1.0 else -1.0;  der(x) = 2*(1 - x);
  when y < 0 then n = pre(n) + 1; end when;
end WhenJumpState;
"""
T_STATE = math.log(2.0) / 2.0

# Two tanks in series, the first with an overflow over its rim into the second, written the
# way a modeller writes it: the overflow starts when the level reaches the rim and stops
# when the spill would become negative, which happens at once when the pump stops (qin
# jumps to 0 at tOff). Before the fix the overflow never stopped (qover = -q1 < 0, h1 held
# at the rim for ever).
TWO_TANKS = """model TwoTanks "a pump fills tank 1, which drains and spills into tank 2"
  parameter Real A1 = 1 "cross-section of tank 1";
  parameter Real A2 = 2 "cross-section of tank 2";
  parameter Real k1 = 0.5 "outflow coefficient of tank 1";
  parameter Real k2 = 0.25 "outflow coefficient of tank 2";
  parameter Real qpump = 1 "pump flow";
  parameter Real tOff = 6 "the pump stops";
  parameter Real rim = 1 "height of tank 1's rim";
  Real h1(start = 0, fixed = true) "level in tank 1";
  Real h2(start = 0, fixed = true) "level in tank 2";
  Real qin "pump flow";
  Real q1 "outflow of tank 1";
  Real q2 "outflow of tank 2";
  Real qover "spill over the rim of tank 1";
  Boolean full(start = false, fixed = true) "tank 1 is full";
equation
  qin = if time < tOff then qpump else 0;
  q1 = k1*h1;
  q2 = k2*h2;
  qover = if full then qin - q1 else 0;
  A1*der(h1) = qin - q1 - qover;
  A2*der(h2) = q1 + qover - q2;
  when h1 >= rim then
    full = true;
  elsewhen qover < 0 then
    full = false;
  end when;
end TwoTanks;
"""
A1, A2, K1, K2, QPUMP, T_OFF, RIM = 1.0, 2.0, 0.5, 0.25, 1.0, 6.0, 1.0
T_FULL = -(A1 / K1) * math.log(1.0 - K1 * RIM / QPUMP)        # h1 reaches the rim


def two_tanks(t):
    """Closed form of TwoTanks: (h1, h2, qover, full) at the times ``t`` (right limits).
    Each phase is linear with constant coefficients; a = k1/A1, b = k2/A2:
    filling, h1 = (qpump/k1)(1 - e^{-a t}), A2 h2' = k1 h1 - k2 h2 from 0; overflowing
    (T_FULL <= t < tOff), h1 = rim, tank 2 receives the whole pump flow; pump off, h1 =
    rim e^{-a s}, tank 2 receives k1 h1 (s = t - tOff)."""
    a, b = K1 / A1, K2 / A2

    def fill_h2(t):
        return (QPUMP / K2) * (1 - np.exp(-b * t)) \
            - (QPUMP / A2) * (np.exp(-a * t) - np.exp(-b * t)) / (b - a)

    def over_h2(t):
        return QPUMP / K2 + (fill_h2(T_FULL) - QPUMP / K2) * np.exp(-b * (t - T_FULL))

    s = t - T_OFF
    h1 = np.where(t < T_FULL, (QPUMP / K1) * (1 - np.exp(-a * t)),
                  np.where(t < T_OFF, RIM, RIM * np.exp(-a * s)))
    h2 = np.where(t < T_FULL, fill_h2(t), np.where(
        t < T_OFF, over_h2(t),
        over_h2(T_OFF) * np.exp(-b * s) + (K1 * RIM / A2) * (np.exp(-a * s) - np.exp(-b * s))
        / (b - a)))
    full = (t >= T_FULL) & (t < T_OFF)
    return h1, h2, np.where(full, QPUMP - K1 * RIM, 0.0), full


# A counter of the crossings of 0 by a square wave that jumps (state events of
# cos(2 pi x) > 0, x = t): down-jumps at k + 1/4, up-jumps at k + 3/4.
COUNTER = """model Crossings "counts the down- and up-jumps of a square wave"
  Real x(start = 0, fixed = true);
  Real y "square wave";
  discrete Integer down(start = 0, fixed = true);
  discrete Integer up(start = 0, fixed = true);
equation
  der(x) = 1;
  y = if cos(6.283185307179586*x) > 0 then 1.0 else -1.0;
  when y < 0 then down = pre(down) + 1; end when;
  when y > 0 then up = pre(up) + 1; end when;
end Crossings;
"""

# Three relays in a chain: the switch closes at t = 0.4 and the coil voltage of relay 1
# jumps; relay 1's contact applies the voltage to relay 2's coil, and so on. Each when-clause
# is triggered by the jump the previous one causes: all three fire at t = 0.4.
RELAYS = """model Relays "three relays in a chain, each switching the coil of the next"
  parameter Real Vs = 10 "supply voltage";
  parameter Real Vpick = 5 "pick-up voltage of a relay";
  Real x(start = 0, fixed = true) "clock";
  Real v1 "coil voltage of relay 1";
  Real v2 "coil voltage of relay 2";
  Real v3 "coil voltage of relay 3";
  Boolean c1(start = false, fixed = true) "contact of relay 1";
  Boolean c2(start = false, fixed = true) "contact of relay 2";
  Boolean c3(start = false, fixed = true) "contact of relay 3";
  discrete Real t1(start = -1, fixed = true);
  discrete Real t2(start = -1, fixed = true);
  discrete Real t3(start = -1, fixed = true);
equation
  der(x) = 1;
  v1 = if x > 0.4 then Vs else 0;
  v2 = if c1 then Vs else 0;
  v3 = if c2 then Vs else 0;
  when v1 > Vpick then c1 = true; t1 = time; end when;
  when v2 > Vpick then c2 = true; t2 = time; end when;
  when v3 > Vpick then c3 = true; t3 = time; end when;
end Relays;
"""

# A host input that jumps: y = 2 u crosses 1 when u steps from 0 to 1 at t = 0.5.
INPUT_JUMP = """model InputJump
  input Real u(start = 0);
  Real x(start = 0, fixed = true);
  Real y;
  discrete Integer n(start = 0, fixed = true);
equation
  der(x) = u;
  y = 2*u;
  when y > 1 then n = pre(n) + 1; end when;
end InputJump;
"""

# A mode change's restart: the clutch engages at t = 5 (ClutchGuardedTime), w1 jumps to
# (j1 w1 + j2 w2)/(j1 + j2) = 1.286 and the torque f1 from 0 to 0.0025 w > 0.001; and the
# jump of issue 24 in a multimode model: y falls from 1 to -1 at the time event t = 2.
CLUTCH = """model ClutchJump
  parameter Real j1 = 1.0; parameter Real j2 = 2.0;
  parameter Real k1 = 0.01; parameter Real k2 = 0.0125;
  Real t(start = 0.0, fixed = true);
  Boolean g(start = false);
  Real w1(start = 1.0, fixed = true);
  Real w2(start = 1.5, fixed = true);
  Real f1; Real f2;
  discrete Integer nw(start = 0, fixed = true);
  discrete Integer nf(start = 0, fixed = true);
  Real y; discrete Integer ny(start = 0, fixed = true);
equation
  j1 * der(w1) = (-k1) * w1 + f1;
  j2 * der(w2) = (-k2) * w2 + f2;
  if g then
    w1 - w2 = 0.0;
    f1 + f2 = 0.0;
  else
    f1 = 0.0;
    f2 = 0.0;
  end if;
  der(t) = 1.0;
  g = t >= 5.0;
  when w1 > 1.2 then nw = pre(nw) + 1; end when;
  when f1 > 0.001 then nf = pre(nf) + 1; end when;
  y = if time < 2 then 1.0 else -1.0;
  when y < 0 then ny = pre(ny) + 1; end when;
end ClutchJump;
"""


@pytest.fixture(scope="module")
def fmus(tmp_path_factory):
    """(model text, export options) -> FMU, built on first use (once per run: `export_text`
    shares its builds between the workers)."""
    out = tmp_path_factory.mktemp("cascade")
    cache: dict = {}

    def get(text: str, **options):
        key = (text, repr(sorted(options.items())))
        if key not in cache:
            tag = hashlib.sha256(repr(key).encode()).hexdigest()[:8]
            cache[key] = export_text(out, text, f"{text.split()[1]}_{tag}", **options)
        return cache[key]
    return get


def both(fmus, text: str, **options):
    """The C FMU with both interfaces (Model Exchange only without SUNDIALS: the
    Co-Simulation tests are skipped then)."""
    return fmus(text, fmi_type="both" if sundials_available() else "me", **options)


def event_rows(t: np.ndarray, te: float, tol: float) -> tuple[int, int]:
    """Indices of the rows just before and just after the first event within ``tol`` of
    ``te`` (FMPy records the values on both sides of an event at the same time; an input
    step is followed by a second event of FMPy's input handling 1e-14 later)."""
    at = [i for i in np.nonzero(np.abs(t - te) <= tol)[0][:-1] if t[i] == t[i + 1]]
    assert at, f"no event near t = {te}"
    first = last = at[0]
    while last + 1 < len(t) and t[last + 1] == t[first]:
        last += 1
    return int(first), int(last)


def away(t: np.ndarray, events, margin: float = 1e-6) -> np.ndarray:
    return np.all([np.abs(t - te) > margin for te in events], axis=0)


@pytest.mark.parametrize("fmi_type", [ME, CS])
@pytest.mark.parametrize("text,te", [(WHEN_JUMP, 0.5), (WHEN_JUMP_STATE, T_STATE)],
                         ids=["time-event", "state-event"])
def test_when_condition_on_a_jump_fires(fmus, fmi_type, text, te):
    r = simulate_fmu(str(both(fmus, text)), fmi_type=fmi_type, stop_time=1.0,
                     output_interval=0.01, relative_tolerance=1e-10, output=["n", "y", "x"])
    t = r["time"]
    expected = np.where(t >= te + 1e-7, 1, 0)
    ok = away(t, [te])
    np.testing.assert_array_equal(r["n"][ok], expected[ok])
    np.testing.assert_array_equal(r["y"][ok], np.where(t >= te + 1e-7, -1.0, 1.0)[ok])
    assert r["n"][-1] == 1
    if fmi_type == ME:
        before, after = event_rows(t, te, 1e-6)
        assert (r["n"][before], r["y"][before]) == (0, 1.0)
        assert (r["n"][after], r["y"][after]) == (1, -1.0)


@python_backend
def test_when_condition_on_a_jump_fires_in_the_python_backend(fmus):
    r = simulate_fmu(str(fmus(WHEN_JUMP, fmi_type="cs", backend="python")), stop_time=1.0,
                     output_interval=0.05, output=["n", "y"])
    t = r["time"]
    ok = away(t, [0.5])     # (the backend locates time events as state events, 1e-10 late)
    np.testing.assert_array_equal(r["n"][ok], np.where(t >= 0.5, 1, 0)[ok])
    np.testing.assert_array_equal(r["y"][ok], np.where(t >= 0.5, -1.0, 1.0)[ok])
    assert r["n"][-1] == 1


def check_two_tanks(r, rows_at_events: bool):
    t = r["time"]
    h1, h2, qover, full = two_tanks(t)
    ok = away(t, [T_FULL, T_OFF], 1e-5)
    np.testing.assert_allclose(r["h1"][ok], h1[ok], rtol=0, atol=1e-6)
    np.testing.assert_allclose(r["h2"][ok], h2[ok], rtol=0, atol=1e-6)
    np.testing.assert_allclose(r["qover"][ok], qover[ok], rtol=0, atol=1e-6)
    np.testing.assert_array_equal(r["full"][ok], full[ok])
    assert r["qover"].min() > -1e-9, "the overflow never runs backwards"
    if rows_at_events:
        before, after = event_rows(t, T_OFF, 1e-9)
        assert r["full"][before] and not r["full"][after]
        assert r["qover"][before] == pytest.approx(QPUMP - K1 * RIM, abs=1e-6)
        assert r["qover"][after] == 0.0
        before, after = event_rows(t, T_FULL, 1e-6)
        assert not r["full"][before] and r["full"][after]


@pytest.mark.parametrize("fmi_type", [ME, CS])
def test_two_tanks_overflow_stops_with_the_pump(fmus, fmi_type):
    r = simulate_fmu(str(both(fmus, TWO_TANKS)), fmi_type=fmi_type, stop_time=12.0,
                     output_interval=0.02, relative_tolerance=1e-10,
                     output=["h1", "h2", "qover", "full"])
    check_two_tanks(r, fmi_type == ME)
    assert r["h1"][-1] == pytest.approx(RIM * math.exp(-K1 / A1 * 6.0), abs=1e-6)


@python_backend
def test_two_tanks_in_the_python_backend(fmus):
    fmu = fmus(TWO_TANKS, fmi_type="cs", backend="python",
               default_experiment={"tolerance": 1e-10})
    r = simulate_fmu(str(fmu), stop_time=12.0, output_interval=0.1,
                     output=["h1", "h2", "qover", "full"])
    check_two_tanks(r, False)


@pytest.mark.parametrize("fmi_type", [ME, CS])
def test_counter_of_the_jumps_of_a_square_wave(fmus, fmi_type):
    r = simulate_fmu(str(both(fmus, COUNTER)), fmi_type=fmi_type, stop_time=3.0,
                     output_interval=0.01, relative_tolerance=1e-10,
                     output=["down", "up", "y"])
    t = r["time"]
    downs = [k + 0.25 for k in range(3)]
    ups = [k + 0.75 for k in range(3)]
    ok = away(t, downs + ups, 1e-5)
    np.testing.assert_array_equal(r["down"][ok], np.floor(t + 0.75)[ok])
    np.testing.assert_array_equal(r["up"][ok], np.floor(t + 0.25)[ok])
    assert (r["down"][-1], r["up"][-1]) == (3, 3)
    if fmi_type == ME:
        for k, te in enumerate(downs):
            before, after = event_rows(t, te, 1e-6)
            assert (r["down"][before], r["down"][after]) == (k, k + 1)
            assert (r["y"][before], r["y"][after]) == (1.0, -1.0)
        for k, te in enumerate(ups):
            before, after = event_rows(t, te, 1e-6)
            assert (r["up"][before], r["up"][after]) == (k, k + 1)


@pytest.mark.parametrize("fmi_type", [ME, CS])
def test_chain_of_three_when_clauses_fires_at_one_instant(fmus, fmi_type):
    r = simulate_fmu(str(both(fmus, RELAYS)), fmi_type=fmi_type, stop_time=1.0,
                     output_interval=0.01, output=["c1", "c2", "c3", "t1", "t2", "t3"])
    t = r["time"]
    ok = away(t, [0.4], 1e-9)
    for k in (1, 2, 3):
        assert r[f"t{k}"][-1] == pytest.approx(0.4, abs=1e-12)
        np.testing.assert_array_equal(r[f"c{k}"][ok], (t >= 0.4)[ok])
    if fmi_type == ME:
        before, after = event_rows(t, 0.4, 1e-12)
        assert not any(r[f"c{k}"][before] for k in (1, 2, 3))
        assert all(r[f"c{k}"][after] for k in (1, 2, 3))
        assert [r[f"t{k}"][after] for k in (1, 2, 3)] == [t[after]] * 3


@python_backend
def test_chain_of_three_when_clauses_in_the_python_backend(fmus):
    r = simulate_fmu(str(fmus(RELAYS, fmi_type="cs", backend="python")), stop_time=1.0,
                     output_interval=0.05, output=["c3", "t3"])
    assert r["t3"][-1] == pytest.approx(0.4, abs=1e-9)
    ok = away(r["time"], [0.4])
    np.testing.assert_array_equal(r["c3"][ok], (r["time"] >= 0.4)[ok])


@pytest.mark.parametrize("fmi_type", [ME, CS])
def test_input_jump_fires_a_when_clause(fmus, fmi_type):
    u = np.array([(0.0, 0.0), (0.5, 0.0), (0.5, 1.0), (1.0, 1.0)],
                 dtype=[("time", np.float64), ("u", np.float64)])
    r = simulate_fmu(str(both(fmus, INPUT_JUMP)), fmi_type=fmi_type, stop_time=1.0,
                     output_interval=0.01, input=u, output=["n", "x"])
    t = r["time"]
    ok = away(t, [0.5])
    np.testing.assert_array_equal(r["n"][ok], np.where(t >= 0.5, 1, 0)[ok])
    np.testing.assert_allclose(r["x"][ok], np.maximum(t - 0.5, 0.0)[ok], atol=1e-6)
    if fmi_type == ME:
        before, after = event_rows(t, 0.5, 1e-9)
        assert (r["n"][before], r["n"][after]) == (0, 1)


@pytest.mark.parametrize("fmi_type", [ME, CS])
def test_jumps_in_a_multimode_model_fire_when_clauses(fmus, fmi_type):
    r = simulate_fmu(str(both(fmus, CLUTCH)), fmi_type=fmi_type,
                     stop_time=8.0, output_interval=0.05, relative_tolerance=1e-10,
                     output=["nw", "nf", "ny", "w1", "f1"])
    t = r["time"]
    ok = away(t, [2.0, 5.0])
    np.testing.assert_array_equal(r["ny"][ok], np.where(t >= 2.0, 1, 0)[ok])
    engaged = np.where(t >= 5.0, 1, 0)
    np.testing.assert_array_equal(r["nw"][ok], engaged[ok])
    np.testing.assert_array_equal(r["nf"][ok], engaged[ok])
    w_plus = (math.exp(-0.05) + 2 * 1.5 * math.exp(-0.0125 * 5 / 2)) / 3
    np.testing.assert_allclose(r["w1"][t > 5.0],
                               w_plus * np.exp(-0.0075 * (t[t > 5.0] - 5.0)), rtol=1e-6)
    np.testing.assert_allclose(r["f1"][t > 5.0], 0.0025 * r["w1"][t > 5.0], rtol=1e-6)
    if fmi_type == ME:
        before, after = event_rows(t, 5.0, 1e-9)
        assert (r["nw"][before], r["nf"][before]) == (0, 0)
        assert (r["nw"][after], r["nf"][after]) == (1, 1)
        before, after = event_rows(t, 2.0, 1e-9)
        assert (r["ny"][before], r["ny"][after]) == (0, 1)
