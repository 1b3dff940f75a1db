"""Coulomb bearing friction written the way the Modelica Standard Library writes it (the MSL
Gear's ``bearingFriction``, tests/corpus/test_gear.py): a friction mode held in ``pre(mode)``,
``startForward``/``startBackward`` and ``locked`` Booleans, the path parameter ``sa`` that is
the friction torque while stuck and the acceleration while sliding, and a sliding torque read
from a function of the velocity. An inertia driven by a sine torque sticks and slips; the
exported FMU is checked against the closed form of each phase (docs/corpus.md, the Gear line).

A massless friction shaft behind a spring-damper (the Gear's own pattern: its bearing friction
sits between the gear and the elastic backlash) with a static torque above the sliding one
jumps to a positive speed when it unlocks and slides forward until its speed is 0 again
(issue 24: the event iteration re-evaluates ``mode`` after the restart) and sticks when its speed
is 0 again: the instant's mixed system is first solved with ``startBackward`` at its previous
value (the held trial, docs/multimode-fmu.md "Event iteration"), not from the sliding
solution's path parameter."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fmpy import simulate_fmu
from fmu_files import export_text
from scipy.optimize import brentq

SLIDE = """
function slide "sliding torque of a one-row characteristic (MSL tempInterpol1 with one row)"
  input Real w;
  input Real tau0;
  output Real y;
algorithm
  y := tau0;
end slide;
"""

#: the MSL friction equations (Modelica 2.2 BearingFriction as OpenModelica flattens it) over
#: the shaft's w and a, the friction torque tau and the driving side's torque balance
FRICTION = """
  tau0_max = peak * tau0;
  free = false;
  tau = if locked then sa else if startForward then slide(w, tau0) else if startBackward then \
-slide(-w, tau0) else if pre(mode) == 1 then slide(w, tau0) else -slide(-w, tau0);
  startForward = pre(mode) == 0 and (sa > tau0_max or pre(startForward) and sa > tau0) or \
pre(mode) == -1 and w > w_small or initial() and w > 0.0;
  startBackward = pre(mode) == 0 and (sa < (-tau0_max) or pre(startBackward) and \
sa < (-tau0)) or pre(mode) == 1 and w < (-w_small) or initial() and w < 0.0;
  locked = not free and not (pre(mode) == 1 or startForward or pre(mode) == -1 or \
startBackward);
  a = if locked then 0.0 else if free then sa else if startForward then sa - tau0 else if \
startBackward then sa + tau0 else if pre(mode) == 1 then sa - tau0 else sa + tau0;
  mode = if free then 2 else if (pre(mode) == 1 or pre(mode) == 2 or startForward) and \
w > 0.0 then 1 else if (pre(mode) == -1 or pre(mode) == 2 or startBackward) and w < 0.0 then \
-1 else 0;
"""

DECLARATIONS = """
  parameter Real A = 2.0 "amplitude of the driving torque";
  parameter Real f = 1.0 "its frequency";
  parameter Real tau0 = 1.0 "sliding (Coulomb) friction torque";
  parameter Real peak = 1.5 "peak*tau0: the largest torque while stuck";
  parameter Real w_small = 1e10;
  Real a;
  Real tau_drive;
  Real tau;
  Real sa;
  Real tau0_max;
  Boolean free;
  Boolean startForward(start = false, fixed = true);
  Boolean startBackward(start = false, fixed = true);
  Boolean locked;
  Integer mode(min = -1, max = 3, start = 3, fixed = true);
"""

INERTIA = SLIDE + """
model InertiaFriction
  parameter Real J = 1.0;""" + DECLARATIONS + """
  Real phi(start = 0.0, fixed = true);
  Real w(start = 0.0, fixed = true);
equation
  tau_drive = A * sin(6.283185307179586 * f * time);
  der(phi) = w;
  der(w) = a;
  J * a = tau_drive - tau;""" + FRICTION + """end InertiaFriction;
"""

SHAFT = SLIDE + """
model ShaftFriction
  parameter Real J = 1.0;
  parameter Real c = 100.0 "spring between the inertia and the friction shaft";
  parameter Real d = 2.0 "its damper";""" + DECLARATIONS + """
  Real phi1(start = 0.0, fixed = true);
  Real w1(start = 0.0, fixed = true);
  Real phi;
  Real w;
  Real tau_c;
equation
  tau_drive = A * sin(6.283185307179586 * f * time);
  der(phi1) = w1;
  J * der(w1) = tau_drive - tau_c;
  tau_c = c * (phi1 - phi) + d * (w1 - w);
  der(phi) = w;
  der(w) = a;
  0 = tau_c - tau;""" + FRICTION + """end ShaftFriction;
"""

J, A, OMEGA, TAU0, PEAK = 1.0, 2.0, 2 * math.pi, 1.0, 1.5


def _first_root(g, t0: float, stop: float) -> float | None:
    """The first sign change of ``g`` after ``t0`` (scanned by 1e-3, refined by brentq)."""
    a, ga = t0 + 1e-9, g(t0 + 1e-9)
    while a < stop:
        b = min(a + 1e-3, stop)
        gb = g(b)
        if ga * gb <= 0:
            return brentq(g, a, b, xtol=1e-15, rtol=1e-15)
        a, ga = b, gb
    return None


def _inertia_phases(stop: float) -> list[tuple[float, float, int, float]]:
    """The closed form of InertiaFriction: ``(start, end, s, phi at start)`` per phase, s = 0
    stuck (w = 0, the friction holds the drive while |A sin(wt)| <= peak*tau0), s = +-1
    sliding from rest at t0 with J w' = A sin(wt) - s tau0:
    w = A/(J w) (cos(w t0) - cos(w t)) - s tau0 (t - t0)/J, until w is 0 again; the shaft then
    sticks if the drive is within the static limit, else slides on."""
    def drive(t):
        return A * math.sin(OMEGA * t)
    out, t, phi, s = [], 0.0, 0.0, 0
    while t < stop and len(out) < 100:
        if s == 0:
            end = _first_root(lambda x: abs(drive(x)) - PEAK * TAU0, t, stop)
        else:
            end = _first_root(lambda x, t0=t, s=s: _slide_w(t0, s, x), t, stop)
        out.append((t, stop if end is None else end, s, phi))
        if end is None:
            break
        if s != 0:
            phi = _slide_phi(phi, t, s, end)
        t = end
        s = 0 if s != 0 and abs(drive(end)) <= PEAK * TAU0 else (1 if drive(end) > 0 else -1)
    return out


def _slide_w(t0: float, s: int, t: float) -> float:
    return A / (J * OMEGA) * (math.cos(OMEGA * t0) - math.cos(OMEGA * t)) - s * TAU0 * (t - t0) / J


def _slide_phi(phi0: float, t0: float, s: int, t: float) -> float:
    return (phi0 + A / (J * OMEGA) * (math.cos(OMEGA * t0) * (t - t0)
                                      - (math.sin(OMEGA * t) - math.sin(OMEGA * t0)) / OMEGA)
            - s * TAU0 * (t - t0) ** 2 / (2 * J))


def _inertia_at(phases, t: float) -> tuple[float, float]:
    for t0, t1, s, phi0 in phases:
        if t0 <= t <= t1:
            return (0.0, phi0) if s == 0 else (_slide_w(t0, s, t), _slide_phi(phi0, t0, s, t))
    raise AssertionError(t)


@pytest.mark.requires_sundials
def test_inertia_with_bearing_friction_sticks_and_slips_like_the_closed_form(tmp_path):
    """Stuck until the drive exceeds peak*tau0 = 1.5 (t = asin(0.75)/2pi), sliding forward
    until w is 0 again (the drive is then -1.19, within the static limit: stuck), backward
    from t = 0.5 + asin(0.75)/2pi, ... 11 stick/slip instants in 3 s. Model Exchange: every
    instant within 1e-8 of the closed form, w and phi within 1e-7 at every point; Co-Simulation
    (events located inside the step) the same values at its communication points."""
    fmu = export_text(tmp_path, INERTIA, "InertiaFriction", fmi_type="both")
    phases = _inertia_phases(3.0)
    assert [s for _, _, s, _ in phases] == [0, 1, 0, -1] * 3
    assert phases[0][1] == pytest.approx(math.asin(0.75) / OMEGA, abs=1e-14)
    for kind, step in (("ModelExchange", 0.01), ("CoSimulation", 0.01)):
        res = simulate_fmu(str(fmu), fmi_type=kind, stop_time=3.0, relative_tolerance=1e-10,
                           output_interval=step, output=["w", "phi", "locked", "tau"])
        for row in res:
            w, phi = _inertia_at(phases, row["time"])
            assert row["w"] == pytest.approx(w, abs=1e-7), (kind, row["time"])
            assert row["phi"] == pytest.approx(phi, abs=1e-7), (kind, row["time"])
            # the friction never drives the shaft: tau w >= 0
            assert row["tau"] * row["w"] >= -1e-9, (kind, row["time"])
        if kind == "ModelExchange":
            locked = res["locked"].astype(int)
            instants = res["time"][1:][np.diff(locked) != 0]
            assert len(instants) == len(phases) - 1
            for got, (_, end, _, _) in zip(instants, phases):
                assert got == pytest.approx(end, abs=1e-8)


C, D = 100.0, 2.0


def _shaft_reference(stop: float, peak: float = PEAK):
    """ShaftFriction by scipy, phase by phase (rtol 1e-12): stuck, the shaft at rest (phi
    fixed) and the inertia on the spring-damper, until |sa| = |c (phi1 - phi) + d w1| exceeds
    ``peak``*tau0; sliding (s = +-1), the spring-damper's torque is s*tau0, so
    J w1' = A sin(wt) - s tau0 and w = w1 + (c (phi1 - phi) - s tau0)/d (at the unlocking
    w jumps from 0 to (peak - 1) tau0/d, the positions stay), until w is 0 again, where the
    shaft sticks (|sa| = tau0 <= peak*tau0). ``at(t)``: (phi1, w1, phi, w)."""
    from scipy.integrate import solve_ivp
    pieces, t, y, s = [], 0.0, np.zeros(3), 0          # y = phi1, w1, phi

    def w_shaft(yy, side):
        return 0.0 if side == 0 else yy[1] + (C * (yy[0] - yy[2]) - side * TAU0) / D

    while t < stop - 1e-12 and len(pieces) < 100:
        side = s

        def rhs(tt, yy, side=side):
            tau_c = C * (yy[0] - yy[2]) + D * yy[1] if side == 0 else side * TAU0
            return [yy[1], (A * math.sin(OMEGA * tt) - tau_c) / J, w_shaft(yy, side)]

        def unlock(tt, yy):
            return abs(C * (yy[0] - yy[2]) + D * yy[1]) - peak * TAU0

        def stick(tt, yy, side=side):
            return w_shaft(yy, side)
        event = unlock if side == 0 else stick
        event.terminal = True
        event.direction = 1 if side == 0 else -side
        sol = solve_ivp(rhs, (t, stop), y, method="DOP853", rtol=1e-12, atol=1e-12,
                        events=[event], dense_output=True)
        pieces.append((sol, side))
        t, y = sol.t[-1], sol.y[:, -1]
        if sol.status == 1:
            s = 0 if side != 0 else (1 if C * (y[0] - y[2]) + D * y[1] > 0 else -1)

    def at(tq, right=False):
        """The state at ``tq``: at an instant (within 1e-6), its left limit, or its right
        limit if ``right``."""
        inside = [(p, sd) for p, sd in pieces if p.t[0] - 1e-6 <= tq <= p.t[-1] + 1e-6]
        sol, side = inside[-1] if right else inside[0]
        yy = sol.sol(tq)
        return yy[0], yy[1], yy[2], w_shaft(yy, side)
    return at, [p.t[-1] for p, _ in pieces[:-1]]


@pytest.mark.parametrize("peak", [1.5, 1.1])
def test_massless_friction_shaft_slides_forward_after_the_unlocking(tmp_path, peak):
    """The unlocking of the massless friction shaft (issue 24): the restart moves w from 0 to
    (peak - 1) tau0/d (0.25, 0.05) and the event iteration re-evaluates ``mode`` with that
    speed (``mdae_settle_discrete``), so the next instant reads pre(mode) = 1 and the shaft
    slides forward (tau = tau0) until w is 0 again, as `_shaft_reference` (scipy, rtol 1e-12):
    the unlocking and the end of the slide within 1e-6, the states within 1e-5 until then, the
    friction's power tau*w never negative. Before the fix, the next instant read
    startForward from the sliding shaft's path parameter sa (-3.8 for peak 1.5) and slid
    backward with w > 0, re-locking at 0.2196 instead of 0.6365."""
    fmu = export_text(tmp_path, SHAFT, "ShaftFriction")
    at, instants = _shaft_reference(1.5, peak)
    unlock, restick = instants[0], instants[1]
    res = simulate_fmu(str(fmu), stop_time=restick - 1e-4, relative_tolerance=1e-10,
                       output_interval=0.005, start_values={"peak": peak},
                       output=["phi1", "w1", "phi", "w", "tau", "locked", "mode"])
    assert len(res) > 100
    for i, row in enumerate(res):
        assert row["tau"] * row["w"] >= -1e-9, row["time"]
        ref = at(row["time"], right=i > 0 and row["time"] == res["time"][i - 1])
        for k, name in enumerate(("phi1", "w1", "phi", "w")):
            assert row[name] == pytest.approx(ref[k], abs=1e-5), (name, row["time"])
    changes = np.flatnonzero(np.diff(res["locked"].astype(int))) + 1
    assert len(changes) == 1 and abs(res["time"][changes[0]] - unlock) < 1e-6
    after = res[changes[0]:]
    assert after[0]["w"] == pytest.approx((peak - 1) * TAU0 / D, rel=1e-8)
    assert set(after["mode"]) == {1} and set(after["tau"]) == {TAU0}
    # the end of the slide: w = 0 at the instant scipy finds
    end = simulate_fmu(str(fmu), stop_time=restick + 1e-3, relative_tolerance=1e-10,
                       output_interval=0.005, start_values={"peak": peak}, output=["w", "mode"])
    ends = end["time"][1:][np.diff(end["mode"]) != 0]
    assert len(ends) >= 2, ends
    assert abs(ends[0] - unlock) < 1e-6 and abs(ends[1] - restick) < 1e-6, ends


@pytest.mark.requires_sundials
@pytest.mark.parametrize("peak, bound", [(1.5, 1e-7), (1.1, 2e-7), (2.0, 5e-7), (3.0, 1e-6),
                                         (1.0, 1e-7)])
def test_massless_friction_shaft_unlocks_like_scipy(tmp_path, peak, bound):
    """The Gear's pattern (the friction on a massless shaft, its speed given by the
    spring-damper's torque while it slides: two modes) with a static torque above the sliding
    one: at the unlocking w jumps to (peak - 1) tau0/d = 0.25, the positions stay; when w is
    0 again (0.6365) the shaft sticks, 11 stick/slip instants in 3 s. Model Exchange and
    Co-Simulation against `_shaft_reference`: the states within ``bound`` (measured, ME and
    CS: 2.6e-8 at peak 1.5, 5.5e-8 at 1.1, 1.5e-7 at 2, 4.6e-7 at 3), the friction's power
    tau*w never negative; ME: the instants within 1e-6 (measured 1e-8) and no position or
    speed moved at the re-stick; CS: each lock change at the first communication point
    after its instant.

    The re-stick's instant with pre(mode) = 0 reads startBackward from sa of the sliding
    solution (its deceleration, a + tau0 = -1.51 < -peak*tau0): before the held trial
    (docs/multimode-fmu.md, "Event iteration") that selected tau = -tau0 inside the sliding
    mode and the drift projection moved phi1 by -0.009996 and phi by +0.009996 (w1, w by
    -/+0.0002); the shaft slid backward, 5 lock changes in 3 s instead of 11, the states 0.28
    off. With startBackward held at its previous value (false) the guards select locked,
    whose solution gives sa = tau_c = 1 and startBackward false again: it sticks. At peak 2
    and 3 the plain reading already locks, but the left limits of that change, the sliding
    mode recomputed with pre(mode) = 0 (tau = -tau0), were projected the same way (states
    0.5 and 1 off before); they are now the previous instant's values. At peak = 1 (the MSL
    Gear's value) the locked torque at the re-stick equals the static limit: the left limits
    projected onto the sliding mode's equations to the projection tolerance and the relations
    on sa taken at their threshold within it (``held_thresholds``), it sticks (measured 3.4e-8
    ME, 3.7e-8 CS; before, 0.135 and 0.216 off, 9 and 7 lock changes)."""
    fmu = export_text(tmp_path, SHAFT, "ShaftFriction", fmi_type="both")
    at, instants = _shaft_reference(3.0, peak)
    assert len(instants) == 11
    for kind in ("ModelExchange", "CoSimulation"):
        res = simulate_fmu(str(fmu), fmi_type=kind, stop_time=3.0, relative_tolerance=1e-10,
                           output_interval=0.01, start_values={"peak": peak},
                           output=["phi1", "w1", "phi", "w", "tau", "locked"])
        for i, row in enumerate(res):
            assert row["tau"] * row["w"] >= -1e-9, (kind, row["time"])
            ref = at(row["time"], right=i > 0 and row["time"] == res["time"][i - 1])
            for k, name in enumerate(("phi1", "w1", "phi", "w")):
                assert row[name] == pytest.approx(ref[k], abs=bound), (kind, name, row["time"])
        got = res["time"][1:][np.diff(res["locked"].astype(int)) != 0]
        assert len(got) == len(instants), kind
        if kind == "ModelExchange":
            assert np.max(np.abs(got - np.array(instants))) < 1e-6
            at_restick = res[res["time"] == got[1]]
            assert len(at_restick) >= 2
            for name in ("phi1", "w1", "phi", "w"):
                assert at_restick[name][-1] == at_restick[name][0], name
        else:
            assert np.all((got > np.array(instants)) & (got <= np.array(instants) + 0.01 + 1e-9))


#: ShaftFriction with the one-row characteristic written inline (slide(w, tau0) = tau0): the
#: python backend does not run user functions
SHAFT_INLINE = SHAFT.replace(SLIDE, "").replace("-slide(-w, tau0)", "-tau0").replace(
    "slide(w, tau0)", "tau0")


@pytest.mark.parametrize("peak", [1.5, 1.0])
def test_massless_friction_shaft_slides_forward_on_the_python_backend(tmp_path, peak):
    """The python backend settles the instant after the unlocking's restart as the C FMU does
    (`Simulator._settle`, the C FMU's ``mdae_settle_discrete``): ``mode`` is re-evaluated
    with the speed the restart gave (0.25), the next instant reads pre(mode) = 1 and the
    shaft slides forward (tau = tau0 > 0, w > 0) until w is 0 again, where it sticks (the
    held trial, `GuardedRun.held_trial`, as the C FMU's) and unlocks backward at 0.7712, as
    `_shaft_reference` (scipy, rtol 1e-12): on the 1e-3 communication grid to t = 1, the
    states within 1e-4 (LSODA; measured 2.6e-9), the friction's power tau*w never negative,
    stuck at rest before the unlocking and between the re-stick and the backward unlocking,
    each lock change at the first communication point after its instant; at peak = 1 (the
    locked torque at the re-stick equals the static limit) as well, through the relations at
    their threshold (`GuardedRun.held_thresholds`; measured 6.1e-9 to t = 1.5, 0.14 off
    before). Without the settle,
    the next instant read startForward from sa = -3.8 and slid backward with w > 0
    (tau*w = -0.25 at t = 0.207); without the held trial the re-stick slid backward (the
    states 0.14 off at t < 1)."""
    pytest.importorskip("pythonfmu")
    from mdae_fmu import api
    src = tmp_path / "ShaftFriction.mo"
    src.write_text(SHAFT_INLINE)
    at, instants = _shaft_reference(1.5, peak)
    unlock, restick, backward = instants[0], instants[1], instants[2]
    fmu = api.export_fmu(api.load(src), tmp_path / "ShaftFriction.fmu", fmi_type="cs",
                         backend="python", progress=False,
                         default_experiment={"stopTime": 1.0, "tolerance": 1e-10})
    res = simulate_fmu(str(fmu), stop_time=1.0, relative_tolerance=1e-10,
                       output_interval=1e-3, start_values={"peak": peak},
                       output=["phi1", "w1", "phi", "w", "tau", "mode", "locked"])
    assert len(res) > 900
    for row in res:
        assert row["tau"] * row["w"] >= -1e-9, row["time"]
        ref = at(row["time"], right=True)
        for k, name in enumerate(("phi1", "w1", "phi", "w")):
            assert row[name] == pytest.approx(ref[k], abs=1e-4), (name, row["time"])
    sliding = res[(res["time"] > unlock + 1e-3) & (res["time"] < restick - 1e-3)]
    assert len(sliding) > 100
    assert set(sliding["mode"]) == {1} and set(sliding["tau"]) == {TAU0}
    assert min(sliding["w"]) > 0
    before = res[res["time"] < unlock - 1e-3]
    assert set(before["mode"]) == {0} and max(abs(before["w"])) == 0.0
    stuck = res[(res["time"] > restick + 1e-3) & (res["time"] < backward - 1e-3)]
    assert len(stuck) > 100 and set(stuck["locked"]) == {True}
    got = res["time"][1:][np.diff(res["locked"].astype(int)) != 0]
    assert len(got) == 3
    assert np.all((got > np.array(instants[:3])) & (got <= np.array(instants[:3]) + 1e-3 + 1e-9))
