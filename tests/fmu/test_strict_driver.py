"""The strict ME driver (tests/strict_driver.py): proven on the hand-written baselines
(closed forms, conservation, an independent solve_ivp solution), shown to catch deliberately
broken FMUs, then run on the exporter's FMUs of the single-mode reference models."""

from __future__ import annotations

import math
import shutil
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from cosim_util import (INPUT_SIGNALS, REFERENCE, REFERENCE_MODELS, bounce_times, build_me,
                        reference_entry, reference_stop, relative_errors)
from strict_driver import FMIViolation, simulate_strict

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from fmu_files import baseline_fmu  # noqa: E402

G, E, V_MIN, H0 = 9.81, 0.7, 0.1, 1.0


@pytest.fixture(scope="module")
def fmu():
    """name, *bugs -> the baseline FMU, built once per run (`fmu_files.baseline_fmu`)."""
    return baseline_fmu


# ----------------------------------------------------------------------------- correct FMUs

def test_bouncing_ball_matches_closed_form(fmu):
    res = simulate_strict(fmu("BouncingBall"), stop_time=3.0, step=1e-3)
    assert res.violations == ()
    expected = bounce_times(3.0, V_MIN, H0, G, E)
    bounces = [e for e in res.events if "state" in e.causes]
    assert len(bounces) == len(expected) == 11
    # RK4 is exact on h'' = const, so only the bisection tolerance and rounding remain
    assert np.allclose([e.time for e in bounces], expected, atol=1e-9, rtol=0)
    assert all(e.values_changed and e.x_after[0] > 0 for e in bounces)
    assert res.values["h"].min() > -1e-9
    # at rest after the last bounce
    assert res.values["v"][-1] == 0.0 and res.values["h"][-1] < 1e-300
    # energy between bounces: v^2/2 + g h is constant on each flight
    t, h, v = res.time, res.values["h"], res.values["v"]
    seg = (t > expected[0] + 1e-6) & (t < expected[1] - 1e-6)
    energy = v[seg] ** 2 / 2 + G * h[seg]
    assert np.ptp(energy) < 1e-9


def test_van_der_pol_matches_independent_solution(fmu):
    from scipy.integrate import solve_ivp
    res = simulate_strict(fmu("VanDerPol"), stop_time=8.0, step=2e-3)
    assert res.violations == ()
    assert [e.causes for e in res.events] == [("init",)]
    ref = solve_ivp(lambda t, x: [x[1], (1 - x[0] ** 2) * x[1] - x[0]], (0, 8), [2.0, 0.0],
                    method="DOP853", rtol=1e-12, atol=1e-12, dense_output=True)
    for tq in (1.0, 3.3, 5.0, 8.0):
        x0, x1 = ref.sol(tq)
        assert res.at("x0", tq) == pytest.approx(x0, abs=1e-8)
        assert res.at("x1", tq) == pytest.approx(x1, abs=1e-8)


def clutch_closed_form(t):
    """ClutchBasic (docs/theory.md §13.1): released decay rates
    k_i/j_i, engaged rate (k1+k2)/(j1+j2), restart (j1 w1 + j2 w2)/(j1 + j2) at t1 = 5,
    release at t2 = 7 (right limits at the event times)."""
    j1, j2, k1, k2 = 1.0, 2.0, 0.01, 0.0125
    if t < 5:
        return math.exp(-k1 / j1 * t), 1.5 * math.exp(-k2 / j2 * t)
    w5 = (j1 * math.exp(-5 * k1 / j1) + j2 * 1.5 * math.exp(-5 * k2 / j2)) / (j1 + j2)
    if t < 7:
        w = w5 * math.exp(-(k1 + k2) / (j1 + j2) * (t - 5))
        return w, w
    w7 = w5 * math.exp(-(k1 + k2) / (j1 + j2) * 2)
    return w7 * math.exp(-k1 / j1 * (t - 7)), w7 * math.exp(-k2 / j2 * (t - 7))


def test_clutch_restart_and_release(fmu):
    res = simulate_strict(fmu("ClutchBasic"), stop_time=10.0, step=1e-2)
    assert res.violations == ()
    ev = {e.time: e for e in res.events}
    assert set(ev) == {0.0, 5.0, 7.0}
    assert ev[5.0].causes == ("time",) and ev[5.0].values_changed
    assert ev[7.0].causes == ("time",) and not ev[7.0].values_changed
    assert ev[0.0].next_event_time == 5.0 and ev[5.0].next_event_time == 7.0
    assert ev[7.0].next_event_time is None
    # angular momentum is conserved by the restart (both sides of the event)
    (a1, a2), (b1, b2) = ev[5.0].x_before, ev[5.0].x_after
    assert a1 + 2 * a2 == pytest.approx(b1 + 2 * b2, rel=1e-15)
    assert b1 == b2 == pytest.approx((a1 + 2 * a2) / 3, rel=1e-15)
    for tq in (2.5, 5.0, 6.0, 7.0, 9.0, 10.0):
        w1, w2 = clutch_closed_form(tq)
        assert res.at("w1", tq) == pytest.approx(w1, rel=1e-10)
        assert res.at("w2", tq) == pytest.approx(w2, rel=1e-10)
    assert res.at("g", 6.0) == 1.0 and res.at("g", 4.0) == 0.0 and res.at("g", 8.0) == 0.0


def test_start_values_are_applied(fmu):
    res = simulate_strict(fmu("BouncingBall"), stop_time=1.0, step=1e-3,
                          start_values={"h": 2.0, "e": 0.5})
    first = next(e for e in res.events if "state" in e.causes)
    assert first.time == pytest.approx(math.sqrt(2 * 2.0 / G), abs=1e-9)
    assert res.values["h"][0] == 2.0


# ----------------------------------------------------------------------------- broken FMUs

@pytest.mark.parametrize("model, bug, kind", [
    ("BouncingBall", "BUG_VALUES_FLAG", "values-flag"),
    ("BouncingBall", "BUG_NEEDED_FOREVER", "iteration-bound"),
    ("BouncingBall", "BUG_ZERO_INDICATOR", "zero-indicator"),
    ("BouncingBall", "BUG_STALE_CACHE", "stale-cache"),
    ("BouncingBall", "BUG_NOMINALS_FLAG", "nominals-flag"),
    ("ClutchBasic", "BUG_NEXT_EVENT_STALE", "next-event-time"),
    ("VanDerPol", "BUG_FMUSTATE_PARTIAL", "fmu-state"),
])
def test_driver_reports_broken_fmu(fmu, model, bug, kind):
    with pytest.raises(FMIViolation) as exc:
        simulate_strict(fmu(model, bug), stop_time=3.0 if model == "BouncingBall" else 8.0,
                        step=1e-3)
    assert exc.value.kind == kind, str(exc.value)


def test_wrong_values_flag_is_honoured_and_visible(fmu):
    """With the flag honoured (as FMPy 0.3.29 did) the ball falls through the floor; FMPy
    0.3.32 re-reads the states anyway and hides the bug (docs/fmi-testing.md)."""
    bad = fmu("BouncingBall", "BUG_VALUES_FLAG")
    res = simulate_strict(bad, stop_time=1.0, step=1e-3, fail_fast=False)
    assert {v.kind for v in res.violations} == {"values-flag"}
    assert res.values["h"].min() < -0.5          # the integrator kept the pre-bounce states
    from fmpy import simulate_fmu
    good = simulate_fmu(str(fmu("BouncingBall")), stop_time=1.0, output_interval=0.01)
    hidden = simulate_fmu(str(bad), stop_time=1.0, output_interval=0.01)
    assert np.array_equal(good["h"], hidden["h"])   # FMPy cannot tell them apart


def test_error_status_is_reported(fmu):
    with pytest.raises(FMIViolation) as exc:
        simulate_strict(fmu("BouncingBall"), stop_time=0.1, start_values={"e": float("nan")})
    assert exc.value.kind == "status" and "fmi2SetReal returned fmi2Error" in str(exc.value)


def test_guid_mismatch_is_reported(fmu, tmp_path):
    with zipfile.ZipFile(fmu("VanDerPol")) as z:
        z.extractall(tmp_path)
    xml = tmp_path / "modelDescription.xml"
    xml.write_text(xml.read_text().replace("{15e9b95f", "{25e9b95f"))
    with pytest.raises(FMIViolation) as exc:
        simulate_strict(tmp_path, stop_time=0.1)
    assert exc.value.kind == "instantiate" and "GUID" in str(exc.value)


# ----------------------------------------------------------------------------- exported FMUs

# RK4 step per model: 1e-3 on the short horizons with state events, larger on the 10-20 s
# ones (RK4's error there stays below the 1e-5 trajectory check)
STEP = {"VanDerPol": 5e-3, "Dahlquist": 1e-2, "Pendulum": 1e-2, "Stair": 1e-2,
        "ClutchBasic": 1e-2, "ClutchGuarded": 1e-2, "ClutchGuardedTime": 1e-2,
        "ClutchNonSemilinear": 1e-2, "AirBrake": 1e-2}

# models whose FMU has a known run-time bug: name -> description; the test is then marked
# xfail(strict=True) (it turns red when the bug is fixed). Empty: CupAndBallFirstOrder's event
# cycling, AirBrake's assertion at the valve opening and RLDC2's union-state overwrite were
# fixed by the multimode work (1f71d4f, b0ad077).
KNOWN_BUGS: dict[str, str] = {}


def _param(name, bugs=KNOWN_BUGS):
    if name in bugs:
        return pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=bugs[name]))
    return name


def reference_columns(name):
    """(time, {FMU variable name: reference column}) of the model's reference CSV."""
    entry = reference_entry(name)
    data = np.genfromtxt(REFERENCE / entry["csv"], delimiter=",", names=True,
                         deletechars="")
    aliases = entry.get("aliases", {}).get(name, {})
    return data["time"], {aliases.get(c, c): data[c] for c in data.dtype.names[1:]}, \
        entry.get("events", [])


@pytest.mark.parametrize("name", [_param(n) for n in REFERENCE_MODELS])
def test_exported_reference_model_passes_strict_driver(name):
    """Every accepted reference model (issue 4: single-mode; issue 6: multimode), over its
    whole DefaultExperiment horizon (= the reference result's): no FMI violation (flags,
    iteration bound, nextEventTime, zero indicators, getters, FMU-state round trip at mid-run,
    also serialized), every reference event seen, and the RK4 trajectory on the reference CSV
    within 1e-5 relative (ClutchGuarded: its Boolean input g driven true on [5, 7])."""
    fmu = build_me(name)
    inputs = INPUT_SIGNALS.get(name)
    h = STEP.get(name, 1e-3)
    res = simulate_strict(fmu, step=h, inputs=inputs, host_safe=True)  # stop: DE
    stop = reference_stop(name)
    assert res.violations == ()
    assert res.time[-1] == pytest.approx(stop, abs=1e-12) and res.steps >= stop / h
    t_ref, cols, ref_events = reference_columns(name)
    seen = [e.time for e in res.events if e.causes != ("step",)]
    for te in ref_events:
        if te < stop:
            assert min(abs(np.array(seen) - te)) <= 1e-6, (te, seen[:20])
    for var, ref in cols.items():
        if var not in res.values:
            continue
        keep = np.ones(len(t_ref), dtype=bool)
        for te in ref_events:
            keep &= np.abs(t_ref - te) > 1e-6 * max(1.0, te)
        got = np.array([res.at(var, tq) for tq in t_ref[keep]])
        err = relative_errors(got, ref[keep], ref)
        assert err.max() <= 1e-5, (var, float(err.max()), float(t_ref[keep][err.argmax()]))


def test_copy_of_fmu_directory_is_accepted(fmu, tmp_path):
    """The driver accepts an extracted FMU directory as well as the .fmu archive."""
    shutil.unpack_archive(str(fmu("VanDerPol")), tmp_path, format="zip")
    res = simulate_strict(tmp_path, stop_time=0.5, step=1e-2)
    assert res.violations == () and res.time[-1] == pytest.approx(0.5)


def test_exported_clutch_passes_strict_driver_and_closed_form():
    """The multimode export of reference_models/ClutchBasic.mo: flags honoured, restart
    w+ = (j1 w1- + j2 w2-)/(j1 + j2) at t1 = 5, release at t2 = 7 (closed form)."""
    out = build_me("ClutchBasic")
    res = simulate_strict(out, stop_time=10.0, step=1e-2, host_safe=True)
    assert res.violations == ()
    jumps = [e for e in res.events if e.x_after != e.x_before]
    assert len(jumps) == 1 and jumps[0].time == pytest.approx(5.0, abs=1e-6)
    # the release at t2 = 7 moves no state but switches the vector field: flag true
    release = [e for e in res.events if e.time == pytest.approx(7.0, abs=1e-6)]
    assert len(release) == 1 and release[0].values_changed and \
        release[0].x_after == release[0].x_before
    from fmpy import read_model_description
    order = [d.variable.derivative.name for d in read_model_description(str(out)).derivatives]
    i1, i2 = order.index("w1"), order.index("w2")
    a1, a2 = jumps[0].x_before[i1], jumps[0].x_before[i2]
    b1, b2 = jumps[0].x_after[i1], jumps[0].x_after[i2]
    assert b1 == pytest.approx(b2, rel=1e-12)
    assert b1 == pytest.approx((a1 + 2 * a2) / 3, rel=1e-9)     # momentum conserved
    for tq in (2.5, 6.0, 9.0, 10.0):
        w1, w2 = clutch_closed_form(tq)
        assert res.at("w1", tq) == pytest.approx(w1, rel=1e-8)
        assert res.at("w2", tq) == pytest.approx(w2, rel=1e-8)
