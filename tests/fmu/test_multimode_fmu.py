"""Multimode Model Exchange FMUs (docs/multimode-fmu.md): schedules, restarts of the
mode changes, guards as event indicators and inputs, impulse outputs, run-time failures. The
FMUs are the default ones: the guarded block schedule (issue 26; the per-mode FMU these tests
ran before is recorded, tests/fmu/test_reference_trajectories.py).

Oracles: closed forms of the clutch (docs/theory.md §13.1: conservation of j1 w1 + j2 w2 at
engagement, exponential decay of each shaft), reference_models/*.csv (closed forms), the
rope constraint and the energy balance of Cup-and-Ball (docs/theory.md §13.2), the restart
formulas of the RLDC2 circuit (docs/theory.md §13.4: charge and flux sharing)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from fmpy import simulate_fmu
from fmpy.fmi1 import FMICallException
from fmpy.validation import validate_fmu

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mdae_fmu import load  # noqa: E402
from mdae_fmu.diagnostics import ModelRejected  # noqa: E402
from mdae_fmu.fmu.export import export  # noqa: E402
from mdae_fmu.importers.flat_modelica import parse_modelica  # noqa: E402

from fmu_files import model_fmu  # noqa: E402

ROOT = Path(__file__).resolve().parents[2] / "reference_models"
J1, J2, K1, K2 = 1.0, 2.0, 0.01, 0.0125


@pytest.fixture(scope="module")
def fmus():
    """The default FMU of a reference model, built once per run (`model_fmu`)."""
    def get(name):
        return model_fmu(ROOT / f"{name}.mo")
    return get


def _reference(name):
    return np.genfromtxt(ROOT / f"{name}.csv", delimiter=",", names=True)


def _event_rows(r, t, tol=1e-6):
    idx = np.nonzero(np.abs(r["time"] - t) < tol)[0]
    return r[idx[0]], r[idx[-1]]


def _check_clutch(r):
    t, w1, w2 = r["time"], r["w1"], r["w2"]
    # engaged on (5, 7): one speed
    eng = (t > 5.0 + 1e-6) & (t < 7.0 - 1e-6)
    assert eng.sum() > 100
    assert np.max(np.abs(w1[eng] - w2[eng])) < 1e-8
    # engagement: the restart conserves the angular momentum
    left, right = _event_rows(r, 5.0)
    assert left["w1"] != pytest.approx(left["w2"], rel=1e-3)
    assert right["w1"] == pytest.approx(1.286309709, rel=1e-6)
    assert right["w2"] == pytest.approx(1.286309709, rel=1e-6)
    p_left = J1 * left["w1"] + J2 * left["w2"]
    assert J1 * right["w1"] + J2 * right["w2"] == pytest.approx(p_left, rel=1e-9)
    # release: continuous, then each shaft decays at its own rate
    left7, right7 = _event_rows(r, 7.0)
    assert J1 * right7["w1"] + J2 * right7["w2"] == pytest.approx(
        J1 * left7["w1"] + J2 * left7["w2"], rel=1e-9)
    after = t > 7.0 + 1e-6
    dt = t[after] - right7["time"]
    np.testing.assert_allclose(w1[after], right7["w1"] * np.exp(-K1 / J1 * dt), rtol=1e-7)
    np.testing.assert_allclose(w2[after], right7["w2"] * np.exp(-K2 / J2 * dt), rtol=1e-7)
    # the closed-form reference (rows away from the two event instants)
    ref = _reference("ClutchBasic")
    keep = (np.abs(ref["time"] - 5.0) > 1e-9) & (np.abs(ref["time"] - 7.0) > 1e-9)
    grid = (np.abs(t - 5.0) > 1e-6) & (np.abs(t - 7.0) > 1e-6)
    for n in ("w1", "w2"):
        got = np.interp(ref["time"][keep], t[grid], r[n][grid])
        np.testing.assert_allclose(got, ref[n][keep], rtol=1e-6)
    return right


def test_clutch_basic_end_to_end(fmus):
    r = simulate_fmu(str(fmus("ClutchBasic")), stop_time=10.0, relative_tolerance=1e-10,
                     output_interval=0.01,
                     output=["w1", "w2", "mdae_mode", "impulse(f1)", "impulse(f2)"])
    right = _check_clutch(r)
    left, _ = _event_rows(r, 5.0)
    # impulses: the angular momentum transferred at engagement
    assert right["impulse(f1)"] == pytest.approx(J1 * (right["w1"] - left["w1"]), rel=1e-9)
    assert right["impulse(f2)"] == pytest.approx(-right["impulse(f1)"], rel=1e-9)
    assert right["impulse(f1)"] > 0.3
    # mode index: released, engaged, released
    assert left["mdae_mode"] != right["mdae_mode"]
    assert r["mdae_mode"][0] == r["mdae_mode"][-1] == left["mdae_mode"]
    _, right7 = _event_rows(r, 7.0)
    assert right7["impulse(f1)"] == 0.0     # release: no impulse


def test_clutch_guarded_boolean_input(fmus):
    table = np.array([(0.0, False), (5.0, False), (5.0, True), (7.0, True), (7.0, False),
                      (10.0, False)], dtype=[("time", float), ("g", bool)])
    r = simulate_fmu(str(fmus("ClutchGuarded")), stop_time=10.0, relative_tolerance=1e-10,
                     output_interval=0.01, input=table, output=["w1", "w2", "mdae_mode"])
    _check_clutch(r)


def test_clutch_non_semilinear_restart(fmus):
    """Standardized restart (194): w1+ = w2+ = w2- (docs/theory.md §13.5)."""
    r = simulate_fmu(str(fmus("ClutchNonSemilinear")), stop_time=10.0,
                     relative_tolerance=1e-10, output_interval=0.01, output=["w1", "w2"])
    left, right = _event_rows(r, 5.0)
    assert right["w1"] == right["w2"] == pytest.approx(left["w2"], rel=1e-12)
    ref = _reference("ClutchNonSemilinear")
    keep = (np.abs(ref["time"] - 5.0) > 1e-9) & (np.abs(ref["time"] - 7.0) > 1e-9) \
        & (ref["time"] <= 10.0)
    grid = (np.abs(r["time"] - 5.0) > 1e-6) & (np.abs(r["time"] - 7.0) > 1e-6)
    for n in ("w1", "w2"):
        got = np.interp(ref["time"][keep], r["time"][grid], r[n][grid])
        np.testing.assert_allclose(got, ref[n][keep], rtol=1e-6)


def test_cup_and_ball(fmus):
    L, g = 1.0, 9.81
    r = simulate_fmu(str(fmus("CupAndBall")), stop_time=2.0, relative_tolerance=1e-10,
                     output_interval=0.001,
                     output=["x", "y", "der(x)", "der(y)", "taut", "mdae_mode"])
    x, y, vx, vy, taut = r["x"], r["y"], r["der(x)"], r["der(y)"], r["taut"]
    assert taut.any() and not taut.all()
    assert np.max(np.abs(x[taut] ** 2 + y[taut] ** 2 - L ** 2)) < 1e-6
    energy = 0.5 * (vx ** 2 + vy ** 2) + g * y
    changes = np.nonzero(np.diff(r["mdae_mode"]))[0]
    assert len(changes) >= 2
    tightenings = 0
    for i in changes:
        assert r["time"][i + 1] == r["time"][i]           # event rows: left, right limit
        # never increases at an event; the left limit is first projected onto the taut
        # mode's consistency equations (drift up to MDAE_DRIFT_TOL = 1e-9 in the residuals),
        # which moves the energy by a few 1e-9
        assert energy[i + 1] <= energy[i] + 1e-8
        if taut[i + 1] and not taut[i]:
            tightenings += 1
            # radial velocity removed by the inelastic impact
            assert abs(x[i + 1] * vx[i + 1] + y[i + 1] * vy[i + 1]) < 1e-8
            assert x[i + 1] ** 2 + y[i + 1] ** 2 == pytest.approx(L ** 2, abs=1e-9)
    assert tightenings >= 1
    # first tightening at about 0.065 s (reference_models/CupAndBall.mo)
    assert r["time"][changes[0]] == pytest.approx(0.065, abs=5e-3)


def _split_events(r, tol=1e-12):
    """Rows of a result (FMPy output or reference CSV) split into grid rows and event pairs
    (left limit, right limit) at the repeated times."""
    t = r["time"]
    dup = np.nonzero(np.abs(np.diff(t)) <= tol)[0]
    at_event = np.zeros(len(t), bool)
    at_event[dup] = at_event[dup + 1] = True
    return np.nonzero(~at_event)[0], [(i, i + 1) for i in dup]


def test_cup_and_ball_elastic_bounces(fmus):
    """The elastic Cup-and-Ball (docs/theory.md §13.2): the impact law reinitializes vy only,
    but the FMU applies the analysed restart of the transient impact mode, the radial
    reflection v+ = v- - (1 + e) ((p.v-)/|p|^2) p of both components. The whole trajectory
    (x, y, vx, vy, 0-2 s, every impact) matches CupAndBallElastic.csv; the ball never leaves the
    cup; at each impact the radial kinetic energy is multiplied by e^2 and the tangential
    velocity is kept."""
    e, L = 0.8, 1.0
    r = simulate_fmu(str(fmus("CupAndBallElastic")), stop_time=2.0, relative_tolerance=1e-10,
                     output_interval=0.005, output=["x", "y", "vx", "vy"])
    ref = _reference("CupAndBallElastic")
    assert np.max(np.hypot(r["x"], r["y"])) <= L + 1e-9
    grid_ref, events_ref = _split_events(ref)
    _, events = _split_events(r)
    # impacts (the falling edge of contact right after an impact is an event without a jump)
    impacts = [(i, j) for i, j in events if abs(r["vx"][j] - r["vx"][i]) > 1e-6]
    assert len(impacts) == len(events_ref) == 4
    for (i, j), (ri, rj) in zip(impacts, events_ref):
        assert r["time"][i] == pytest.approx(ref["time"][ri], abs=1e-8)
        for n in ("x", "y", "vx", "vy"):
            assert r[n][i] == pytest.approx(ref[n][ri], abs=1e-6), n
            assert r[n][j] == pytest.approx(ref[n][rj], abs=1e-6), n
        p = np.array([r["x"][i], r["y"][i]])
        v0 = np.array([r["vx"][i], r["vy"][i]])
        v1 = np.array([r["vx"][j], r["vy"][j]])
        rad0, rad1 = p @ v0 / np.linalg.norm(p), p @ v1 / np.linalg.norm(p)
        assert rad0 > 0 > rad1                        # outward before, inward after
        assert 0.5 * rad1 ** 2 == pytest.approx(e ** 2 * 0.5 * rad0 ** 2, rel=1e-9)
        tang = np.array([-p[1], p[0]]) / np.linalg.norm(p)
        assert tang @ v1 == pytest.approx(tang @ v0, rel=1e-9, abs=1e-12)
    # every grid point of the reference, over the full span
    times = {round(t, 9): k for k, t in enumerate(r["time"])}
    rows = [times[round(t, 9)] for t in ref["time"][grid_ref]]
    for n in ("x", "y", "vx", "vy"):
        np.testing.assert_allclose(r[n][rows], ref[n][grid_ref], rtol=1e-6, atol=1e-7)
    assert r["time"][-1] == pytest.approx(2.0) and ref["time"][-1] == pytest.approx(2.0)


class _Me:
    """A raw Model Exchange instance (FMPy's FMU2Model) with the FMU's log kept."""

    def __init__(self, path, tmp):
        import ctypes
        from fmpy import extract, read_model_description
        from fmpy.fmi2 import (FMU2Model, defaultCallbacks, fmi2CallbackFunctions,
                               fmi2CallbackLoggerTYPE)
        self.md = read_model_description(str(path))
        self.vr = {v.name: v.valueReference for v in self.md.modelVariables}
        ders = self.md.derivatives
        self.states = [u.variable.derivative.name for u in ders]
        self.nx = len(self.states)
        self.messages = []
        self.fmu = FMU2Model(guid=self.md.guid, unzipDirectory=extract(str(path), str(tmp)),
                             modelIdentifier=self.md.modelExchange.modelIdentifier,
                             instanceName="t")
        cb = fmi2CallbackFunctions()
        cb.logger = fmi2CallbackLoggerTYPE(
            lambda c, n, st, cat, msg: self.messages.append(msg.decode()))
        cb.allocateMemory = defaultCallbacks.allocateMemory
        cb.freeMemory = defaultCallbacks.freeMemory
        self._cb = cb
        self.fmu.instantiate(callbacks=cb, loggingOn=True)
        self._c = ctypes

    def init(self):
        self.fmu.setupExperiment(startTime=0.0)
        self.fmu.enterInitializationMode()
        self.fmu.exitInitializationMode()
        while self.fmu.newDiscreteStates()[0]:
            pass
        self.fmu.enterContinuousTimeMode()

    def get_x(self):
        x = np.zeros(self.nx)
        self.fmu.getContinuousStates(x.ctypes.data_as(self._c.POINTER(self._c.c_double)),
                                     self.nx)
        return x

    def set_x(self, x):
        x = np.ascontiguousarray(x, dtype=float)
        self.fmu.setContinuousStates(x.ctypes.data_as(self._c.POINTER(self._c.c_double)),
                                     self.nx)

    def set_states(self, time, **values):
        self.fmu.setTime(time)
        x = self.get_x()
        for n, v in values.items():
            x[self.states.index(n)] = v
        self.set_x(x)

    def get(self, *names):
        return self.fmu.getReal([self.vr[n] for n in names])

    def free(self):
        self.fmu.terminate()
        self.fmu.freeInstance()


def test_union_state_vector_belongs_to_the_host(fmus, tmp_path):
    """One state vector for all modes (docs/theory.md §11, docs/fmi-mapping.md): RLDC2's mode FF
    computes the diode voltages u1, u2 (states of TT) as algebraic variables; their state vector
    entries (mdae_state(u1), mdae_state(u2)) are never written by a compute: Get after Set
    returns exactly what was set, fmi2GetReal(u1) is FF's algebraic value, and the strict
    driver's FMU-state rollback reproduces the run bitwise."""
    from strict_driver import simulate_strict
    path = fmus("RLDC2")
    m = _Me(path, tmp_path / "x")
    assert "mdae_state(u1)" in m.states and "mdae_state(u2)" in m.states
    m.init()
    x = m.get_x() + np.linspace(0.01, 0.07, m.nx)
    m.fmu.setTime(0.25)
    m.set_x(x)
    m.fmu.getDerivatives(np.zeros(m.nx).ctypes.data_as(
        __import__("ctypes").POINTER(__import__("ctypes").c_double)), m.nx)
    u1, x1, w1, v1, su1 = m.get("u1", "x1", "w1", "v1", "mdae_state(u1)")
    assert m.get_x().tobytes() == x.tobytes()             # Get after Set: exactly
    assert su1 == x[m.states.index("mdae_state(u1)")]
    assert u1 == pytest.approx(x1 + w1 - v1, abs=1e-12)   # FF: K2 gives u1
    assert u1 != su1
    m.free()
    res = simulate_strict(path, stop_time=1.0, step=1e-3, host_safe=True)  # + FMU state
    assert res.time[-1] == pytest.approx(1.0)


def test_whole_cascade_in_one_new_discrete_states(fmus, tmp_path):
    """fmi2NewDiscreteStates runs the whole event iteration (docs/fmi-mapping.md, "Events in
    third-party hosts"): Cup-and-Ball's tightening (docs/theory.md §9.6, §13.2) projects the
    position (p+ = L p-/|p-|), removes the radial velocity (v+ = v- - (p.v-) p/L^2) and
    re-evaluates the guards, all in ONE call, which reports
    newDiscreteStatesNeeded = false and valuesOfContinuousStatesChanged = true. A host that
    keeps only the last eventInfo (the FMU Compliance Checker) thus reads the restarted
    states."""
    L = 1.0
    m = _Me(fmus("CupAndBall"), tmp_path / "x")
    m.init()
    p0 = np.array([0.3, -0.97])                      # |p| = 1.0153 L: just past the circle
    v0 = np.array([2.0, -1.0])                       # moving outward
    m.set_states(0.1, x=p0[0], y=p0[1], **{"der(x)": v0[0], "der(y)": v0[1]})
    free = m.fmu.getInteger([m.vr["mdae_mode"]])[0]
    m.fmu.enterEventMode()
    info = m.fmu.newDiscreteStates()
    assert (info[0], info[3]) == (False, True)
    values = m.get("x", "y", "der(x)", "der(y)") + m.fmu.getInteger([m.vr["mdae_mode"]])
    p1 = L * p0 / np.linalg.norm(p0)
    v2 = v0 - (p1 @ v0) * p1 / L ** 2
    # the restart solves the rope's position constraint first (Gauss-Newton from the left
    # limits, to its tolerance: 1.5e-10 from the radial projection, measured), then the
    # velocities at the new position
    np.testing.assert_allclose(values[:2], p1, rtol=0, atol=1e-9)
    np.testing.assert_allclose(values[2:4], v2, rtol=0, atol=1e-9)
    assert np.hypot(values[0], values[1]) == pytest.approx(L, abs=1e-9)
    assert np.dot(values[:2], values[2:4]) == pytest.approx(0.0, abs=1e-12)     # tangent
    assert values[4] != free                                        # taut
    # a second call (legal) finds nothing more to do
    info = m.fmu.newDiscreteStates()
    assert (info[0], info[3]) == (False, False)
    m.free()
    # the clutch: engagement restart and guard re-evaluation in one call
    m = _Me(fmus("ClutchBasic"), tmp_path / "y")
    m.init()
    m.set_states(5.0 + 1e-9, t=5.0 + 1e-9)
    m.fmu.enterEventMode()
    info = m.fmu.newDiscreteStates()
    assert (info[0], info[3]) == (False, True)
    w1, w2 = m.get("w1", "w2")
    assert w1 == pytest.approx(w2, rel=1e-15, abs=0)       # one speed, to rounding
    m.free()


def test_mode_switch_without_jump_sets_the_values_flag(fmus, tmp_path):
    """The clutch's release at t = 7 changes the mode but no state (w1 = w2 stay continuous):
    valuesOfContinuousStatesChanged is still true, because the equations that define the
    derivatives changed (fmusim restarts CVode only on this flag); the derivatives before and
    after differ. An event that changes nothing reports false."""
    m = _Me(fmus("ClutchBasic"), tmp_path / "z")
    m.init()
    m.set_states(5.0 + 1e-9, t=5.0 + 1e-9)
    m.fmu.enterEventMode()
    assert not m.fmu.newDiscreteStates()[0]                        # engaged in one call
    m.fmu.enterContinuousTimeMode()
    w = m.get("w1")[0]
    m.set_states(7.0 + 1e-9, t=7.0 + 1e-9, w1=w, w2=w)
    x = m.get_x()
    before = m.get("der(w1)", "der(w2)")
    m.fmu.enterEventMode()
    info = m.fmu.newDiscreteStates()
    assert (info[0], info[3]) == (False, True)
    assert np.array_equal(m.get_x(), x)                             # no state moved
    after = m.get("der(w1)", "der(w2)")
    assert before[0] == pytest.approx(before[1], rel=1e-12)         # engaged: one speed
    assert w == pytest.approx(4 / 3, rel=1e-12)     # (j1 w01 + j2 w02)/(j1 + j2)
    assert after == pytest.approx([-0.01 * w / 1.0, -0.0125 * w / 2.0], rel=1e-12)  # -k w/j
    info = m.fmu.newDiscreteStates()                                # nothing left to do
    assert (info[0], info[3]) == (False, False)
    m.free()


def _at_grid(r, ref, names, atol):
    """Compare a result with a reference CSV at the reference's grid points (the result has
    the same output grid) and at its mode changes (left and right limits)."""
    grid_ref, events_ref = _split_events(ref)
    _, events = _split_events(r)
    times = {round(t, 9): k for k, t in enumerate(r["time"])}
    rows = [times[round(t, 9)] for t in ref["time"][grid_ref]]
    for n in names:
        np.testing.assert_allclose(r[n][rows], ref[n][grid_ref], rtol=0, atol=atol, err_msg=n)
    changes = [(i, j) for i, j in events if r["mdae_mode"][i] != r["mdae_mode"][j]]
    assert len(changes) == len(events_ref)
    for (i, j), (ri, rj) in zip(changes, events_ref):
        assert r["time"][i] == pytest.approx(ref["time"][ri], abs=atol)
        for n in names:
            assert r[n][i] == pytest.approx(ref[n][ri], abs=atol), n
            assert r[n][j] == pytest.approx(ref[n][rj], abs=atol), n


@pytest.mark.parametrize("rtol, atol", [(1e-6, 5e-3), (1e-10, 1e-5)])
def test_cup_and_ball_first_order(fmus, rtol, atol):
    """CupAndBallFirstOrder (velocities as explicit states) used to cycle taut <-> slack at
    the slack-off (t = 0.4727) until the iteration bound: the taut mode's drift (up to the
    drift-control tolerance 1e-9) left x^2 + y^2 - L^2 outside the left-limit guard's band
    (half the 1e-10 hysteresis), so the slack mode's s = L^2 - x^2 - y^2 selected taut again.
    A mode change now starts from left limits projected onto the old mode's consistency
    equations and ends with the right limits projected onto the new mode's (to 1e-12):
    0-3 s with FMPy CVode matches CupAndBall.csv (same physics) within 1e-5 at rtol 1e-10;
    at rtol 1e-6 CVode's own error (the second-order CupAndBall.mo gives 1.6e-3 there) is
    what remains."""
    r = simulate_fmu(str(fmus("CupAndBallFirstOrder")), stop_time=3.0, relative_tolerance=rtol,
                     output_interval=0.005, output=["x", "y", "vx", "vy", "mdae_mode"])
    assert r["time"][-1] == pytest.approx(3.0)
    _at_grid(r, _reference("CupAndBall"), ("x", "y", "vx", "vy"), atol)


def test_cup_and_ball_first_order_strict(fmus):
    from strict_driver import simulate_strict
    res = simulate_strict(fmus("CupAndBallFirstOrder"), stop_time=3.0, step=1e-3,
                          host_safe=True)
    assert res.time[-1] == pytest.approx(3.0)
    # every mode change (three or more, each with a two-instant restart cascade) completes
    # inside one fmi2NewDiscreteStates
    assert sum(1 for e in res.events if e.values_changed and e.x_after != e.x_before) >= 3
    assert all(e.iterations == 1 for e in res.events)


def test_rldc2_restarts_share_charge_and_flux():
    """Examples note §2.4: TF/FT -> TT charge sharing, TF/FT -> FF flux sharing, as the
    analysis' restarts of the mode changes (`ModeChange.restart`, the enumerated automaton)
    state them; the FMU's run of the same changes: test_rldc2_reference_run."""
    from mdae_fmu.analysis import analyze
    a = analyze(load(ROOT / "RLDC2.mo"), implicit=False)
    changes = [ch for ch in a.automaton.changes if ch.accepted]
    assert len({m.label for m in a.automaton.modes if m.ok}) == 4 and len(changes) == 12
    c1, c2, l1, l2, v1, v2, j1, j2 = sp.symbols("C1 C2 L1 L2 v1- v2- j1- j2-", real=True)
    seen = set()
    for ch in changes:
        byname = {str(eq.lhs)[:-1]: eq.rhs.xreplace({s: sp.Symbol(s.name, real=True)
                                                     for s in eq.rhs.free_symbols})
                  for eq in ch.restart}
        src, dst = ch.src_label, ch.dst_label
        if dst == "g1,g2" and src != "not g1,not g2":
            for n in ("v1", "v2"):
                assert sp.simplify(byname[n] - (c1 * v1 + c2 * v2) / (c1 + c2)) == 0
            seen.add("charge")
        if dst == "not g1,not g2" and src in ("g1,not g2", "not g1,g2"):
            assert sp.simplify(byname["j1"] - (l1 * j1 - l2 * j2) / (l1 + l2)) == 0
            assert sp.simplify(byname["j2"] + byname["j1"]) == 0
            seen.add("flux")
    assert seen == {"charge", "flux"}


def test_rldc2_reference_run(fmus):
    r = simulate_fmu(str(fmus("RLDC2")), stop_time=1.0, relative_tolerance=1e-10,
                     output_interval=0.002, output=["j1", "j2", "v1", "v2", "u1", "u2"])
    ref = _reference("RLDC2")
    keep = ref["time"] <= 1.0
    for n in ("j1", "j2", "v1", "v2", "u1", "u2"):
        got = np.interp(ref["time"][keep], r["time"], r[n])
        np.testing.assert_allclose(got, ref[n][keep], rtol=1e-6, atol=1e-9)


def test_validate_and_strict_driver(fmus):
    from strict_driver import simulate_strict
    for name, stop in (("ClutchBasic", 10.0), ("ClutchGuardedTime", 10.0),
                       ("CupAndBall", 1.5), ("ClutchNonSemilinear", 10.0)):
        path = fmus(name)
        assert validate_fmu(str(path)) == [], name
        res = simulate_strict(path, stop_time=stop, step=1e-3, host_safe=True)
        assert res.time[-1] == pytest.approx(stop), name


def test_valgrind_memcheck(fmus, tmp_path):
    from valgrind_util import build_host, have_valgrind, run_fmu_in_host
    if not have_valgrind():
        pytest.skip("valgrind not installed")
    host = build_host(tmp_path)
    for name, stop in (("ClutchBasic", 7.5), ("CupAndBall", 0.3)):
        run = run_fmu_in_host(host, fmus(name), tmp_path / name, stop_time=stop, step=1e-2)
        assert run.returncode == 0, (name, run.stdout[-500:], run.stderr[-500:])
        assert run.report.errors == (), (name, run.report.errors[:3])


SINGULAR = """
class SingularClutch "engagement of two shafts whose inertias cancel: singular restart"
  parameter Real j1 = 1.0;
  parameter Real j2 = -1.0;
  Real t(start = 0.0, fixed = true);
  Boolean g(start = false);
  Real w1(start = 1.0, fixed = true);
  Real w2(start = 2.0, fixed = true);
  Real f1;
  Real f2;
equation
  der(t) = 1.0;
  g = t >= 0.5;
  j1 * der(w1) = f1;
  j2 * der(w2) = f2;
  0.0 = if g then w1 - w2 else f1;
  f1 + f2 = 0.0;
end SingularClutch;
"""


def _failed_run_log(path, stop_time=1.0) -> str:
    """Simulate ``path`` with FMPy, which must fail; the FMU's log messages."""
    messages = []
    with pytest.raises(FMICallException):
        simulate_fmu(str(path), stop_time=stop_time, output_interval=0.01,
                     logger=lambda *a: messages.append(a[-1].decode()), debug_logging=False)
    return "\n".join(messages)


# the singular and numerically singular restarts (j1 + j2 = 0, 1.1e-16) of SINGULAR:
# tests/fmu/test_one_pipeline.py::test_numerically_singular_restart_is_named


def test_export_is_reproducible_across_hash_seeds(tmp_path, fmus):
    """Byte-identical FMUs from two processes with different PYTHONHASHSEED: every ordering in
    code generation (relations and event indicators, guard conjunctions, banded relations,
    restarts) follows a canonical order, never a set's iteration order. One process is the
    one that built the run's shared FMU (`model_fmu`, a random seed unless PYTHONHASHSEED is
    set), the other a command line with a fixed seed that differs from the environment's,
    exporting both models (one Python start-up instead of four)."""
    import os
    import subprocess
    names = ("ClutchBasic", "CupAndBall")
    seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    env = dict(os.environ, PYTHONHASHSEED=seed)
    env.pop("MDAE_FMU_BUILD_CACHE", None)       # gcc runs in both processes
    script = ("import sys\nfrom mdae_fmu.cli import main\n"
              "for m, o in zip(sys.argv[1::2], sys.argv[2::2]):\n"
              "    assert main(['export', m, '-o', o]) == 0\n")
    args = [str(p) for name in names for p in (ROOT / f"{name}.mo", tmp_path / f"{name}.fmu")]
    subprocess.run([sys.executable, "-c", script, *args], check=True, env=env,
                   capture_output=True)
    for name in names:
        assert (tmp_path / f"{name}.fmu").read_bytes() == fmus(name).read_bytes(), name


#: a clutch whose shaft-1 torque enters through sinh (no power-law impulse order), recorded
#: as one_pipeline.ClutchSinh (tests/fmu/test_reference_trajectories.py)
SINH = (Path(__file__).resolve().parents[1] / "data" / "one_pipeline" /
        "ClutchSinh.mo").read_text()


def _instant_problem(model, src, dst, k=0):
    from mdae_fmu.impulse.analysis import impulse_analysis
    from mdae_fmu.modes.explore import analyze_multimode
    from mdae_fmu.modes.restart import restart_problem
    from mdae_fmu.modes.shiftform import ShiftForm
    a = analyze_multimode(model)
    ri = a.change(src, dst).instants[k]
    prob = restart_problem(ShiftForm(a.system), ri.instant)
    return ri, prob, impulse_analysis(prob)


def _delta_of(messages):
    import re
    line = next(m for m in messages if "delta-scheme converged" in m)
    return float(re.search(r"delta = ([0-9.eE+-]+)", line).group(1))


def test_s3_restart_is_the_delta_scheme(tmp_path):
    """An instant without closed form (S3: the torque enters through sinh, no power order,
    W-IMPULSE-ORDER) is restarted by the generated delta-scheme (Algorithm 14: h = 1e-2, 5e-3,
    ..., damped Newton with the analytic Jacobian, warm starts, two consecutive changes below
    1e-8): the FMU's right limits equal Python's `delta_scheme` limit within 1e-6, and both
    reach the standardized value w1+ = w2+ = w2- (docs/theory.md §9.7)."""
    from delta_oracle import delta_scheme
    model = parse_modelica(SINH, "ClutchSinh.mo")
    ri, prob, ia = _instant_problem(model, "not g", "g")
    assert ri.method == "S3"
    m = _Me(export(model, tmp_path / "ClutchSinh.fmu", progress=False),
            tmp_path / "x")
    m.init()
    m.set_states(0.5 + 1e-9, t=0.5 + 1e-9)
    w1, w2, t = m.get("w1", "w2", "t")
    m.fmu.enterEventMode()
    info = m.fmu.newDiscreteStates()
    assert not info[0] and info[3]                  # the whole change in one call
    v1, v2 = m.get("w1", "w2")
    assert _delta_of(m.messages) < 1e-6
    py = delta_scheme(prob, ia, {("w1", 0): w1, ("w2", 0): w2, ("t", 0): t}, eps=1e-9)
    assert py.converged
    vals = {str(k): v for k, v in py.values.items()}
    assert v1 == pytest.approx(vals["w1+"], rel=1e-6)
    assert v2 == pytest.approx(vals["w2+"], rel=1e-6)
    assert v1 == pytest.approx(w2, rel=1e-6) and v2 == pytest.approx(w2, rel=1e-6)
    m.free()


def test_first_order_cup_and_ball_tightening_from_off_the_rope(fmus, tmp_path):
    """CupAndBallFirstOrder's tightening (velocities as states): from a left limit where a
    located crossing leaves it (|p|^2 = L^2 + 2e-10) and from one 5 % outside the rope
    (|p| = 1.05 L, set with fmi2SetContinuousStates before the event), one
    fmi2NewDiscreteStates restarts by the standardized closed form (docs/theory.md §13.2): the
    position projected onto the rope, p+ = L p-/|p-| (by Gauss-Newton from the left limits,
    to its tolerance: 3.3e-10 measured), the velocity's radial part removed,
    v+ = v- - (p+.v-) p+/L^2, to 1e-9, the velocity tangent to 1e-12 (the per-mode FMU,
    whose instant was the delta-scheme, reached them to O(delta); its located crossings are
    in the recorded runs)."""
    th, v = 0.4, np.array([2.0, -1.0])
    for k, radius in enumerate((np.sqrt(1 + 2e-10), 1.05)):
        p = radius * np.array([np.sin(th), -np.cos(th)])
        m = _Me(fmus("CupAndBallFirstOrder"), tmp_path / f"x{k}")
        m.init()
        m.set_states(0.1, x=p[0], y=p[1], vx=v[0], vy=v[1])
        m.fmu.enterEventMode()
        info = m.fmu.newDiscreteStates()             # the restart, then the guards
        assert not info[0] and info[3]
        x, y, vx, vy = m.get("x", "y", "vx", "vy")
        pn = p / np.linalg.norm(p)
        np.testing.assert_allclose([x, y], pn, rtol=0, atol=1e-9)
        np.testing.assert_allclose([vx, vy], v - (pn @ v) * pn, rtol=0, atol=1e-9)
        assert np.hypot(x, y) == pytest.approx(1.0, abs=1e-9)
        assert x * vx + y * vy == pytest.approx(0.0, abs=1e-12)
        m.free()


def test_delta_scheme_without_solution_is_a_runtime_error(tmp_path):
    """An S3 instant whose restart system has no real solution (the engaged clutch requires
    w1^2 = w2 with w2 < 0): the delta-scheme's Newton fails and the FMU returns fmi2Error
    naming the block, its instant and the time, then the mode change."""
    model = parse_modelica(SINH.replace("ClutchSinh", "ClutchNoRoot")
                           .replace("w2(start = 5.0", "w2(start = -5.0")
                           .replace("if g then w1 - w2", "if g then w1 * w1 - w2"),
                           "ClutchNoRoot.mo")
    path = export(model, tmp_path / "n.fmu", progress=False)
    text = _failed_run_log(path)
    assert "t = 0.5: mode change into block e3+e4+e5'+e6 (instant 0): the restart system " \
        "has no solution near the left limits (delta-scheme at delta" in text
    assert "t = 0.5: mode change [not g] -> [g]: the restart of block 0 (equations " \
        "e3+e4+e5'+e6) failed" in text


def test_non_semilinear_clutch_restart_is_the_delta_scheme_limit(fmus):
    """ClutchNonSemilinear (docs/theory.md §13.5): the FMU applies the rescaled (S2) closed form;
    Python's delta-scheme (Algorithm 14) on the same instant from the FMU's left limits
    converges to the same right limits (1e-6)."""
    from delta_oracle import delta_scheme
    _, prob, ia = _instant_problem(load(ROOT / "ClutchNonSemilinear.mo"), "not g", "g")
    r = simulate_fmu(str(fmus("ClutchNonSemilinear")), stop_time=6.0,
                     relative_tolerance=1e-10, output_interval=0.01, output=["w1", "w2", "t"])
    left, right = _event_rows(r, 5.0)
    py = delta_scheme(prob, ia, {("w1", 0): left["w1"], ("w2", 0): left["w2"],
                                 ("t", 0): left["t"]}, eps=1e-9)
    assert py.converged
    vals = {str(k): v for k, v in py.values.items()}
    assert right["w1"] == pytest.approx(vals["w1+"], rel=1e-6)
    assert right["w2"] == pytest.approx(vals["w2+"], rel=1e-6)


def test_impulse_outputs(fmus):
    """impulse(v): the integral of each impulsive variable of order 1 over the last mode change
    (docs/multimode-fmu.md, "Impulses"), checked against hand-derived values at every change.

    * Cup-and-Ball, inelastic tightening: der(der(x)) = -lam x gives x Δvx + y Δvy = -|p|^2 ∫lam
      and the impact removes the radial velocity v_r- = p.v-/|p|, so L ∫lam = v_r- (the radial
      momentum per unit mass the rope absorbs); 0 when the rope goes slack;
    * the elastic variant (single long mode, when-clause): the radial velocity is reversed
      with restitution e, L ∫lam = (1 + e) v_r-; s = -lam gives ∫s = -∫lam;
    * RLDC2Switched: closing a switch on unequal capacitor voltages moves the charge
      ∫i1 = C1 C2 (v2- - v1-)/(C1 + C2) = -∫i2; opening on non-cancelling inductor currents
      ∫w1 = ∫w2 = -L1 L2 (j1- + j2-)/(L1 + L2) (the flux each inductor loses);
    * AirBrake: the valve opens at a physical crossing (W-FAKE-IMPULSE): the inferred flows
      carry no impulse, their integrals vanish to the crossing's accuracy."""
    L, e = 1.0, 0.8
    r = simulate_fmu(str(fmus("CupAndBall")), stop_time=2.0, relative_tolerance=1e-10,
                     output_interval=0.01,
                     output=["x", "y", "der(x)", "der(y)", "taut", "impulse(lam)"])
    changes = np.nonzero(np.diff(r["taut"]))[0]
    assert len(changes) >= 3
    for i in changes:
        p = np.array([r["x"][i], r["y"][i]])
        v = np.array([r["der(x)"][i], r["der(y)"][i]])
        if r["taut"][i + 1]:
            assert L * r["impulse(lam)"][i + 1] == pytest.approx(p @ v / np.linalg.norm(p),
                                                                 rel=1e-9)
            assert r["impulse(lam)"][i + 1] > 0
        else:
            assert r["impulse(lam)"][i + 1] == 0.0
    r = simulate_fmu(str(fmus("CupAndBallElastic")), stop_time=2.0, relative_tolerance=1e-10,
                     output_interval=0.01, output=["x", "y", "vx", "vy", "impulse(lam)",
                                                   "impulse(s)"])
    _, events = _split_events(r)
    impacts = [(i, j) for i, j in events if r["vx"][i] != r["vx"][j]]
    assert len(impacts) == 4
    for i, j in impacts:
        p = np.array([r["x"][i], r["y"][i]])
        v = np.array([r["vx"][i], r["vy"][i]])
        assert L * r["impulse(lam)"][j] == pytest.approx(
            (1 + e) * (p @ v) / np.linalg.norm(p), rel=1e-9)
        assert r["impulse(s)"][j] == -r["impulse(lam)"][j]
    # RLDC2Switched under its reference input schedule
    c1, c2, l1, l2 = 0.1, 0.15, 1.0, 1.5
    sched = ((0.0, True, False), (0.05, True, True), (0.1, False, True), (0.15, False, False),
             (0.2, True, True), (0.25, False, False), (0.3, True, False))
    rows = []
    for k, (t, g1, g2) in enumerate(sched):
        if k:
            rows.append((t, sched[k - 1][1], sched[k - 1][2]))
        rows.append((t, g1, g2))
    rows.append((1.0, True, False))
    table = np.array(rows, dtype=[("time", float), ("g1", np.bool_), ("g2", np.bool_)])
    r = simulate_fmu(str(fmus("RLDC2Switched")), stop_time=0.35, relative_tolerance=1e-10,
                     output_interval=1e-3, input=table, record_events=True,
                     output=["j1", "j2", "v1", "v2", "impulse(i1)", "impulse(i2)",
                             "impulse(w1)", "impulse(w2)"])
    for te, kind in ((0.05, "charge"), (0.15, "flux"), (0.2, "charge"), (0.25, "flux")):
        idx = np.flatnonzero(np.abs(r["time"] - te) < 1e-9)
        i, j = idx[0], idx[-1]
        if kind == "charge":
            q = c1 * c2 * (r["v2"][i] - r["v1"][i]) / (c1 + c2)
            assert abs(q) > 1e-3
            assert r["impulse(i1)"][j] == pytest.approx(q, rel=1e-9)
            assert r["impulse(i2)"][j] == pytest.approx(-q, rel=1e-9)
        else:
            phi = -l1 * l2 * (r["j1"][i] + r["j2"][i]) / (l1 + l2)
            assert abs(phi) > 1e-4
            assert r["impulse(w1)"][j] == pytest.approx(phi, rel=1e-9)
            assert r["impulse(w2)"][j] == pytest.approx(phi, rel=1e-9)
    table = np.array([(0.0, 1.0), (100.0, 1.0)], dtype=[("time", float), ("pb", float)])
    r = simulate_fmu(str(fmus("AirBrake")), stop_time=1.0, relative_tolerance=1e-10,
                     output_interval=0.01, input=table,
                     output=["g", "impulse(fch)", "impulse(fcl)", "impulse(ft)"])
    assert r["g"][-1]
    for n in ("impulse(fch)", "impulse(fcl)", "impulse(ft)"):
        assert abs(r[n][-1]) < 1e-9, n


def test_mode_description_lists_modes(fmus):
    import zipfile
    with zipfile.ZipFile(fmus("ClutchBasic")) as z:
        md = z.read("modelDescription.xml").decode()
    assert 'name="mdae_mode"' in md and "[not g]" in md and 'name="impulse(f1)"' in md


def test_air_brake_through_its_mode_change(fmus):
    """The shipped AirBrake.mo, unmodified, through the whole reference span: the valve opens
    when pt - pr reaches 0 (docs/theory.md §13.3) at the reference time. Its assertion
    ``x >= 0 and x <= L`` sits exactly on the guard (x = s/K): the located crossing is 1e-10
    past s = 0, so x- = -1e-11, and while the valve is open x = 0 up to rounding. Assertion
    relations hold up to a relative tolerance of 1e-8 (docs/multimode-fmu.md, "Assertions"),
    so this noise does not fire it."""
    text = (ROOT / "AirBrake.mo").read_text()
    assert "assert(x >= 0.0 and x <= L" in text
    table = np.array([(0.0, 1.0), (100.0, 1.0)], dtype=[("time", float), ("pb", float)])
    ref = _reference("AirBrake")
    stop = float(ref["time"][-1])
    assert stop == pytest.approx(10.0)
    r = simulate_fmu(str(fmus("AirBrake")), stop_time=stop, relative_tolerance=1e-10,
                     output_interval=0.01, input=table,
                     output=["pr", "pt", "x", "b", "fb", "g", "mdae_mode"])
    assert r["time"][-1] == pytest.approx(stop)
    assert r["g"][0] == 0 and r["g"][-1] == 1          # the valve opened
    assert -1e-9 < r["x"].min() < 0.0                  # the noise the tolerance accepts
    t_open = r["time"][np.argmax(r["g"])]
    ref_open = ref["time"][np.argmax(ref["s"] < 0)]
    assert t_open == pytest.approx(ref_open, abs=1e-6)
    keep = np.abs(ref["time"] - ref_open) > 1e-6
    grid = np.abs(r["time"] - t_open) > 1e-6
    for n in ("pr", "pt", "x", "b", "fb"):
        got = np.interp(ref["time"][keep], r["time"][grid], r[n][grid])
        np.testing.assert_allclose(got, ref[n][keep], rtol=1e-6, atol=1e-9, err_msg=n)


def test_assertion_violation_beyond_the_tolerance_fires(tmp_path):
    """A relation of an assertion has an event indicator at its violation threshold
    a - b = -1e-8 max(1, |a|, |b|): x = 1 - t violates x >= 0 at t = 1 + 1e-8, where the
    FMU returns fmi2Error with the assertion's message."""
    model = parse_modelica("""
class A
  Real x(start = 1.0, fixed = true);
equation
  der(x) = -1.0;
  assert(x >= 0.0, "x negative");
end A;
""", "A.mo")
    path = export(model, tmp_path / "A.fmu", progress=False)
    messages = []
    with pytest.raises(FMICallException):
        simulate_fmu(str(path), stop_time=2.0, relative_tolerance=1e-10,
                     logger=lambda *a: messages.append(a[-1].decode()), debug_logging=False)
    line = next(m for m in messages if "assertion failed: x negative" in m)
    assert float(line.split("t = ")[1].split(":")[0]) == pytest.approx(1.0 + 1e-8, abs=1e-9)


def test_rejected_models_are_not_exported(tmp_path):
    """E-FIXPOINT (an event iteration that provably never settles): ModelRejected, exit code
    1, no FMU."""
    from mdae_fmu.cli import main as cli_main
    chatter = Path(__file__).resolve().parents[1] / "data" / "conditionals" / "Chatter.mo"
    with pytest.raises(ModelRejected, match="E-FIXPOINT"):
        export(load(chatter), tmp_path / "c.fmu", progress=False)
    assert not (tmp_path / "c.fmu").exists()
    assert cli_main(["export", str(chatter), "-o", str(tmp_path / "x.fmu")]) == 1
    assert not (tmp_path / "x.fmu").exists()


OM_BOUNCING_BALL = """model BB
  parameter Real e = 0.7;
  parameter Real g = 9.81;
  Real h(start = 1, fixed = true);
  Real v(start = 0, fixed = true);
  Boolean flying(start = true);
equation
  der(h) = v;
  if flying then
    der(v) = -g;
  else
    der(v) = 0;
  end if;
  when h <= 0 then
    flying = v < -3.0;
    reinit(v, -e*pre(v));
  end when;
end BB;
"""


def test_reinit_in_a_when_clause_of_a_multimode_model(tmp_path):
    """The OpenModelica bouncing-ball pattern (a Boolean assigned in the when-clause that
    reinits v, an if-equation on it): bounce times and rebound velocities of the closed form
    t1 = sqrt(2 h0/g), v_k = e^k sqrt(2 g h0), t_{k+1} = t_k + 2 v_k/g. The flag switches the
    mode at the third impact (|v-| = e^2 sqrt(2 g) < 3): from then on der(v) = 0, the ball
    rises at v3 = e^3 sqrt(2 g) forever. Also run by the strict ME driver."""
    from strict_driver import simulate_strict
    g, e = 9.81, 0.7
    path = export(parse_modelica(OM_BOUNCING_BALL, "BB.mo"), tmp_path / "bb.fmu",
                  progress=False)
    vk = [e ** k * np.sqrt(2 * g) for k in range(4)]
    tk = [np.sqrt(2 / g)]
    for k in (1, 2):
        tk.append(tk[-1] + 2 * vk[k] / g)
    r = simulate_fmu(str(path), stop_time=2.0, output_interval=1e-3,
                     output=["h", "v", "flying", "mdae_mode"], validate=False)
    for k, t in enumerate(tk):
        before, after = _event_rows(r, t, tol=1e-5)
        assert before["v"] == pytest.approx(-vk[k], abs=1e-4), k
        assert after["v"] == pytest.approx(vk[k + 1], abs=1e-4), k
        assert bool(after["flying"]) == (k < 2), k
    end = r[-1]
    assert end["v"] == pytest.approx(vk[3], abs=1e-4)
    assert end["h"] == pytest.approx(vk[3] * (2.0 - tk[2]), abs=1e-4)
    assert not end["flying"] and int(end["mdae_mode"]) != int(r[0]["mdae_mode"])
    res = simulate_strict(path, stop_time=2.0, step=1e-3, host_safe=True)
    assert res.time[-1] == pytest.approx(2.0)


COUPLED_IMPACT = """model C
  Real x1(start = 1, fixed = true);
  Real v1(start = 0, fixed = true);
  Real x2(start = 1, fixed = true);
  Real v2(start = 0, fixed = true);
  Real f;
  input Boolean stuck(start = true);
equation
  der(x1) = v1;
  der(x2) = v2;
  der(v1) = -9.81 + f;
  der(v2) = -9.81 - f;
  if stuck then
    x1 = x2;
  else
    f = 0;
  end if;
  when x1 <= 0 then
    reinit(v1, -pre(v1));
  end when;
end C;
"""


def test_reinit_whose_analysed_restart_moves_another_state_is_one_verdict(tmp_path, capsys):
    """With the masses stuck (x1 = x2) the analysed impact restart also moves v2
    (v2+ = 2 v1- + v2-), which the literal reinit(v1, ...) does not: analyze and export both
    reject it, exit 1, with the same message naming the when-clause and its line. The
    enumerated analysis (``--list-modes``, the debugging view, which exports nothing) accepts
    the mode changes and shows the restart that moves v2."""
    from mdae_fmu.cli import main
    path = tmp_path / "C.mo"
    path.write_text(COUPLED_IMPACT)
    assert main(["analyze", "--list-modes", str(path)]) == 0
    listing = capsys.readouterr().out
    assert ("  not stuck,not edge(x1 <= 0) -> stuck,edge(x1 <= 0): 2 instant(s) until "
            "steady, impulsive\n") in listing
    assert "standardized (S1, jet level): v1+ = -v1-; v2+ = 2*v1- + v2-;" in listing
    # the one analysis (the default, what export runs): its guarded schedule cannot be built,
    # for the block variant whose restart moves more than the reinitialized state: v2 alone
    # (the positions x1, x2 stay; der(x1), der(x2) follow v1, v2), with the value the
    # variant's restart gives it once the reinit has set v1 (the masses move together)
    message = ("E-NO-SCHEDULE: the guarded block schedule cannot be built: "
               "model C: when-clause w1 (C.mo:19): in the modes stuck the restart of block "
               "e1'+e2'+e3+e4+e5'' also moves v2 (v2+ = -v1-), which the branch does not "
               "reinit; "
               "the exporter runs reinit statements as written and supports only restarts "
               "that move the reinitialized states alone")
    assert main(["analyze", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"verdict: rejected\n  {message}" in out
    assert main(["export", str(path), "-o", str(tmp_path / "c.fmu")]) == 1
    err = capsys.readouterr().err
    assert f"rejected by the analysis (mdae-fmu analyze gives the full report):\n  {message}" \
        in err
    assert not (tmp_path / "c.fmu").exists()
