"""The MSL Gear (issue 26 acceptance): OpenModelica's flattening of Modelica 2.2's
``Mechanics.Rotational.Examples.Gear`` accepted, exported and simulated; and a small model with
its mode pattern (a housing fixed or free by a Boolean parameter, an elasto-backlash as omc
flattens it) against an independent scipy solution. The Gear file is fetched, not committed
(OSMC licence: benchmarks/fetch_corpus.py); its test is skipped when the file is absent."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from mdae_fmu import api
from mdae_fmu.expr import BinOp, Const, Ref, residual
from mdae_fmu.structure.per_mode import analyze_modes

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from fetch_corpus import DEFAULT_OUT, MANIFEST, corpus_file  # noqa: E402

PATTERN = ROOT / "tests" / "data" / "GearPattern.mo"


def _pattern_reference(stop: float):
    """GearPattern with the housing fixed (phi_h = 0), integrated by scipy piece by piece
    between the backlash's contact events: states phi1, w1, phi2, w2; phi_rel = phi1/ratio -
    phi2; tau = c (phi_rel -+ b2) + d w_rel in contact, 0 in the gap."""
    from scipy.integrate import solve_ivp
    ratio, J1, J2, k2, d2, c, d, b2 = 2.0, 1.0, 2.0, 20.0, 0.5, 1000.0, 5.0, 0.05

    def rhs(side):
        def f(t, y):
            pr, wr = y[0] / ratio - y[2], y[1] / ratio - y[3]
            tau = 0.0 if side == 0 else c * (pr - side * b2) + d * wr
            return [y[1], (10 * math.sin(3 * t) - tau / ratio) / J1, y[3],
                    (tau - k2 * y[2] - d2 * y[3]) / J2]
        return f

    def events(side):
        def hi(t, y):
            return y[0] / ratio - y[2] - b2

        def lo(t, y):
            return y[0] / ratio - y[2] + b2
        hi.terminal = lo.terminal = True
        hi.direction, lo.direction = (1, -1) if side == 0 else (-1, 1)
        # from the gap into contact on either side; from contact back into the gap
        return {0: ([hi, lo], (1, -1)), 1: ([hi], (0,)), -1: ([lo], (0,))}[side]

    pieces, t, y, side = [], 0.0, np.zeros(4), 0
    while t < stop - 1e-12 and len(pieces) < 1000:
        evs, nxt = events(side)
        sol = solve_ivp(rhs(side), (t, stop), y, method="DOP853", rtol=1e-12, atol=1e-12,
                        events=evs, dense_output=True)
        pieces.append(sol)
        t, y = sol.t[-1], sol.y[:, -1]
        if sol.status == 1:
            side = nxt[next(k for k, e in enumerate(sol.t_events) if e.size)]

    def at(tq):
        return next(p for p in pieces if p.t[0] <= tq <= p.t[-1]).sol(tq)
    return at, len(pieces)


def test_gear_pattern_is_rejected_as_guards_and_accepted_with_the_parameter_evaluated():
    model = api.load(PATTERN)
    # bearingConnected as a guard: the connected mode with a gap leaves the massless gear
    # and housing without equations for their angles (the MSL Gear's rejection)
    rep = analyze_modes(model)
    assert rep.exit_code == 1
    bad = [m for m in rep.modes if not m.ok]
    assert bad and all(dict(m.valuation)["bearingConnected"] for m in bad)
    a = api.analyze(model)
    assert a.accepted
    # b2 = 0.5*b is a variable bound to parameters: "b2 > 1e-10" (the gap is open) is a
    # parameter condition, evaluated like bearingConnected, and b2 with b become constants
    assert [(p.name, p.value) for p in a.fixed_parameters] == [
        ("b", 0.1), ("b2", 0.05), ("bearingConnected", False)]
    assert "b2 > 1e-10 is true: it selects branches that differ in incidence" \
        in a.fixed_parameters[1].reason
    # one structure left: the backlash's conditions are event conditions of it
    assert len(a.modes.modes) == 1


def test_gear_pattern_simulates_like_scipy(tmp_path):
    from fmpy import simulate_fmu
    fmu = tmp_path / "GearPattern.fmu"
    api.export_fmu(api.load(PATTERN), fmu, progress=False)
    res = simulate_fmu(str(fmu), stop_time=5.0, output=["phi1", "w1", "phi2", "w2", "tau"],
                       relative_tolerance=1e-10, output_interval=0.01)
    at, pieces = _pattern_reference(5.0)
    assert pieces > 10                      # contacts made and lost: the events are exercised
    for row in res:
        ref = at(row["time"])
        for k, name in enumerate(("phi1", "w1", "phi2", "w2")):
            assert row[name] == pytest.approx(ref[k], abs=1e-5), (name, row["time"])


def test_residual_keeps_a_boolean_equation_to_false():
    """``free = false`` (the Gear's bearing friction) is an equation of ``free``, not ``0 =
    free``'s numeric residual."""
    assert residual(Ref("free"), Const(False)) == BinOp("-", Ref("free"), Const(False))
    assert residual(Ref("x"), Const(0.0)) == Ref("x")


def test_initial_in_a_boolean_expression_exports(tmp_path):
    """``initial() and w > 0`` (the MSL friction's ``startForward``) in a discrete equation:
    ``initial()`` is an opaque function for sympy, taken as ``initial() != 0`` under
    and/or/not (it raised "expecting bool or Boolean"). After initialization it is false:
    ``b`` false, ``c`` equal to ``x > 0.5``."""
    from fmpy import simulate_fmu
    from fmu_files import export_text
    fmu = export_text(tmp_path, """
model InitAnd
  Real x(start = 1.0, fixed = true);
  Boolean b;
  Boolean c;
equation
  der(x) = -x;
  b = initial() and x > 0.5;
  c = not initial() and x > 0.5;
end InitAnd;
""", "InitAnd")
    res = simulate_fmu(str(fmu), stop_time=1.0, output=["b", "c", "x"], output_interval=0.05)
    assert not any(res["b"])
    for x, c in zip(res["x"], res["c"]):
        if abs(x - 0.5) > 1e-6:
            assert c == (x > 0.5)


def _gear_file() -> Path:
    entry = next(m for m in json.loads(MANIFEST.read_text())["models"]
                 if m["id"] == "om/msl/Gear")
    path = corpus_file(entry, DEFAULT_OUT)
    if not path.exists():
        pytest.skip(f"{path} not fetched (python benchmarks/fetch_corpus.py)")
    return path


@pytest.fixture(scope="module")
def gear():
    """The Gear and its analysis, computed once for the tests below (about 2 min CPU)."""
    model = api.load(_gear_file(), "Gear")
    return model, api.analyze(model)


def test_msl_gear_is_accepted_with_bearing_connected_evaluated(gear):
    """The Gear's analysis: accepted (it was rejected: the connected-bearing mode with a
    backlash gap is singular), the one structural parameter named."""
    _, a = gear
    assert a.accepted, a.messages
    # the backlash's half gap b2 = 0.5*b is bound to parameters: "b2 > 1e-10" is a parameter
    # condition too (b = 0: no gap), which leaves the friction's two modes
    assert [p.name for p in a.fixed_parameters] == [
        "gear1.adapter.bearingConnected", "gear1.b", "gear1.elastoBacklash.b",
        "gear1.elastoBacklash.b2"]
    assert a.modes is None and a.implicit_json["modes"] == 2     # the one analysis


@pytest.mark.slow
@pytest.mark.requires_sundials
def test_msl_gear_is_accepted_and_simulated(gear, tmp_path):
    """Gear: a sine torque on inertia2, a spring-damper, the gear (ratio 2, efficiency 1,
    Coulomb bearing friction of 1 N.m, a stiff backlash without gap), inertia1 and a
    spring-damper to the ground. Exported (its restarts read the friction's discrete
    ``pre(mode)``: tests/modes/test_shiftform.py) and simulated over MSL's 0.5 s, Model Exchange
    and Co-Simulation: the gear's kinematics hold and the energy balance closes: the work
    of the source equals the change of kinetic and spring energy plus the dissipation of
    the dampers and of the friction (non-negative); the friction unlocks at t = 0.0889 (its
    restart keeps every position and speed: peak = 1, no jump) and slides forward to the end,
    within 1e-6 of `_gear_reference` (measured: 1.4e-7 on inertia2.w in ME, 3e-8 in CS)."""
    from fmpy import simulate_fmu
    model, a = gear
    fmu = tmp_path / "Gear.fmu"
    api.export_fmu(model, fmu, fmi_type="both", analysis=a, progress=False)
    names = ["inertia1.w", "inertia2.w", "inertia1.phi", "inertia2.phi", "torque1.tau",
             "springDamper1.phi_rel", "springDamper1.w_rel", "springDamper2.phi_rel",
             "springDamper2.w_rel", "gear1.elastoBacklash.phi_rel", "gear1.bearingFriction.tau",
             "gear1.bearingFriction.w", "gear1.bearingFriction.phi", "gear1.flange_a.phi"]
    me = simulate_fmu(str(fmu), fmi_type="ModelExchange", stop_time=0.5,
                      output=names + ["gear1.bearingFriction.locked"],
                      relative_tolerance=1e-9, output_interval=1e-4)
    _check_gear_run(me, 1e-3)
    cs = simulate_fmu(str(fmu), fmi_type="CoSimulation", stop_time=0.5, output=names,
                      relative_tolerance=1e-9, output_interval=1e-3)
    _check_gear_run(cs, 1e-2)
    # against the independent solution: the friction unlocks once (forward) and slides on
    at, phases = _gear_reference(0.5)
    assert [s for _, _, s in phases] == [0, 1]
    unlocked = me["time"][1:][np.diff(me["gear1.bearingFriction.locked"].astype(int)) != 0]
    assert len(unlocked) == 1 and unlocked[0] == pytest.approx(phases[0][1], abs=1e-6)
    for res in (me, cs):
        for row in res:
            ref = at(row["time"])
            for name in ("inertia2.phi", "inertia2.w", "gear1.bearingFriction.phi",
                         "inertia1.phi", "inertia1.w", "gear1.bearingFriction.w"):
                assert row[name] == pytest.approx(ref[name], abs=1e-6), (name, row["time"])
    # the two runs agree where both have a point
    for name in ("inertia1.w", "inertia2.w", "gear1.bearingFriction.w"):
        ref = np.interp(cs["time"], me["time"], me[name])
        assert np.max(np.abs(cs[name] - ref)) < 1e-3 * max(1.0, np.max(np.abs(ref))), name


def _gear_reference(stop: float):
    """The Gear by scipy (Radau, rtol 1e-11), written from the flat model's equations with the
    housing fixed: inertia2 (phi2, w2) driven by sin(2 pi t) and springDamper2 (c 1000, d 10)
    on phi_rel2 = 2 phi_f - phi2; the friction's massless shaft phi_f; the backlash (c 1e5,
    no gap) on phi1 - phi_f; inertia1 (phi1, w1) and springDamper1 (c 10, d 1) to the ground.
    Friction torque balance tau = -2 tau2 + tau_b: stuck (w_f = 0) while |tau| <= 1 (peak 1,
    tau0 1), sliding with tau = s (s = +-1), which gives w_f. ``at(t)``: the values by name;
    phases ``(start, end, s)``."""
    from scipy.integrate import solve_ivp

    def w_slide(y, s):
        phi2, w2, pf, phi1, _ = y
        return (-2000.0 * (2 * pf - phi2) + 20.0 * w2 + 1e5 * (phi1 - pf) - s) / 40.0

    def friction(y):                    # the torque the stuck shaft holds (w_f = 0)
        phi2, w2, pf, phi1, _ = y
        return -2 * (1000.0 * (2 * pf - phi2) - 10.0 * w2) + 1e5 * (phi1 - pf)

    def rhs(t, y, s):
        wf = 0.0 if s == 0 else w_slide(y, s)
        tau2 = 1000.0 * (2 * y[2] - y[0]) + 10.0 * (2 * wf - y[1])
        return [y[1], math.sin(2 * math.pi * t) + tau2, wf, y[4],
                -1e5 * (y[3] - y[2]) - 10.0 * y[3] - y[4]]

    def unlock(t, y, s):
        return abs(friction(y)) - 1.0

    def stick(t, y, s):
        return w_slide(y, s)
    unlock.terminal = stick.terminal = True
    unlock.direction = 1
    pieces, t, y, s = [], 0.0, np.zeros(5), 0
    while t < stop - 1e-12 and len(pieces) < 50:
        stick.direction = -s
        sol = solve_ivp(rhs, (t, stop), y, method="Radau", rtol=1e-11, atol=1e-13, args=(s,),
                        events=[stick if s else unlock], dense_output=True)
        pieces.append((sol, s))
        t, y = sol.t[-1], sol.y[:, -1]
        if sol.status == 1:
            s = 0 if s else (1 if friction(y) > 0 else -1)

    def at(tq):
        sol, side = next((p, sd) for p, sd in pieces if p.t[0] <= tq <= p.t[-1])
        y = sol.sol(tq)
        return {"inertia2.phi": y[0], "inertia2.w": y[1], "gear1.bearingFriction.phi": y[2],
                "inertia1.phi": y[3], "inertia1.w": y[4],
                "gear1.bearingFriction.w": 0.0 if side == 0 else w_slide(y, side)}
    return at, [(p.t[0], p.t[-1], sd) for p, sd in pieces]


def _check_gear_run(res, balance_tol: float) -> None:
    """The Gear's kinematics and energy balance on one run (see the test above)."""
    t = res["time"]
    assert t[-1] == pytest.approx(0.5)
    # the gear's ratio 2 between its input flange and the friction's shaft (housing fixed)
    assert np.max(np.abs(res["gear1.flange_a.phi"] - 2 * res["gear1.bearingFriction.phi"])) \
        < 1e-9 * max(1.0, np.max(np.abs(res["gear1.flange_a.phi"])))
    energy = (0.5 * res["inertia1.w"] ** 2 + 0.5 * res["inertia2.w"] ** 2
              + 0.5 * 10.0 * res["springDamper1.phi_rel"] ** 2
              + 0.5 * 1000.0 * res["springDamper2.phi_rel"] ** 2
              + 0.5 * 1e5 * res["gear1.elastoBacklash.phi_rel"] ** 2)
    source = res["torque1.tau"] * res["inertia2.w"]
    damping = 1.0 * res["springDamper1.w_rel"] ** 2 + 10.0 * res["springDamper2.w_rel"] ** 2
    friction = res["gear1.bearingFriction.tau"] * res["gear1.bearingFriction.w"]
    assert np.min(friction) >= -1e-9            # the friction never gives energy back
    power = source - damping - friction
    balance = energy - energy[0] - np.concatenate(
        ([0.0], np.cumsum(0.5 * np.diff(t) * (power[1:] + power[:-1]))))
    work = float(np.sum(0.5 * np.diff(t) * (np.abs(source[1:]) + np.abs(source[:-1]))))
    assert work > 1e-3
    assert np.max(np.abs(balance)) < balance_tol * work
