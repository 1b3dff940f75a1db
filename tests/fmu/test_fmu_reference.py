"""End-to-end: every accepted reference model exports a complete modelDescription.xml
(FMPy's validation, DefaultExperiment, ModelStructure dependencies checked numerically), and
every single-mode one simulates with CVode and Euler and matches its reference CSV
(reference_models/, closed forms or high-accuracy solutions computed independently of
mdae_fmu).

Each FMU is built once per session (tests/cosim_util.py, shared with the other FMU tests)."""

from __future__ import annotations

import csv
import ctypes
import math

import numpy as np
import pytest

fmpy = pytest.importorskip("fmpy")
from fmpy import extract, read_model_description  # noqa: E402
from fmpy import simulate_fmu as _simulate_fmu  # noqa: E402
from fmpy.fmi2 import FMU2Model  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402

from cosim_util import (INPUT_SIGNALS, REFERENCE, REFERENCE_MODELS, REFS,  # noqa: E402
                        SINGLE_MODE, build_me, input_table, reference_entry, reference_stop,
                        relative_errors)

ROOT = REFERENCE


def reference_fmu(name: str):
    return build_me(name)


def simulate_fmu(path, **kw):
    """FMPy's simulate_fmu on the Model Exchange interface (the shared FMUs offer both; FMPy
    would pick Co-Simulation)."""
    return _simulate_fmu(path, fmi_type="ModelExchange", **kw)


def read_csv(name: str):
    with open(ROOT / reference_entry(name)["csv"]) as f:
        rows = list(csv.reader(f))
    header = rows[0]
    data = np.array([[float(x) for x in r] for r in rows[1:]])
    return header, data


def away_from_events(name: str, t: np.ndarray, margin: float = 1e-3) -> np.ndarray:
    events = reference_entry(name).get("events", [])
    keep = np.ones(len(t), dtype=bool)
    for te in events:
        keep &= np.abs(t - te) > margin
    return keep


# ---------------------------------------------------------------------------------------------
# modelDescription.xml
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", REFERENCE_MODELS)
def test_validates(name):
    """fmpy.validation.validate_fmu reports nothing, and the FMU carries a DefaultExperiment
    (start 0, stop = the reference horizon, the tolerance it was exported with)."""
    fmu = reference_fmu(name)
    assert validate_fmu(str(fmu)) == []
    de = read_model_description(str(fmu)).defaultExperiment
    assert de is not None
    assert float(de.startTime) == 0.0 and float(de.stopTime) == reference_stop(name)
    assert float(de.tolerance) > 0 and float(de.stepSize) > 0


def _ct_knowns(md):
    states = {d.variable.derivative for d in md.derivatives}
    return states | {v for v in md.modelVariables if v.causality == "input"}


def _init_knowns(md):
    return {v for v in md.modelVariables
            if v.causality == "input" or (v.initial == "exact" and v.variability != "constant")}


@pytest.mark.parametrize("name", REFERENCE_MODELS)
def test_model_structure_lists_legal_knowns(name):
    """Every Outputs/Derivatives entry of a continuous unknown and every InitialUnknowns entry
    carries ``dependencies`` (FMI 2.0 section 2.2.8), listing only knowns of its kind, in
    ascending order, and at least one known for a derivative that is not constant."""
    md = read_model_description(str(reference_fmu(name)))
    index = {v: k for k, v in enumerate(md.modelVariables)}
    for group, knowns in ((md.outputs, _ct_knowns(md)), (md.derivatives, _ct_knowns(md)),
                          (md.initialUnknowns, _init_knowns(md))):
        for u in group:
            if u.variable.variability == "discrete" and group is not md.initialUnknowns:
                assert u.dependencies is None          # set at events: all knowns
                continue
            assert u.dependencies is not None, u.variable.name
            assert set(u.dependencies) <= knowns, (u.variable.name, u.dependencies)
            idx = [index[d] for d in u.dependencies]
            assert idx == sorted(idx)
    assert md.initialUnknowns or not any(v.initial == "approx" for v in md.modelVariables)


class _Probe:
    """Checks, inside a running FMPy ME simulation (step_finished callback, Continuous-Time
    Mode), that perturbing a state or a continuous input leaves every Outputs/Derivatives
    unknown that does not list it bitwise unchanged."""

    def __init__(self, md, every: int):
        self.md = md
        self.every = every
        self.calls = self.checks = 0
        self.nx = len(md.derivatives)
        self.states = [d.variable.derivative for d in md.derivatives]
        self.unknowns = [u for u in list(md.derivatives) + list(md.outputs)
                         if u.dependencies is not None]
        self.vrs = [u.variable.valueReference for u in self.unknowns]
        self.inputs = [v for v in md.modelVariables
                       if v.causality == "input" and v.type == "Real"]
        self.problems = []

    def values(self, fmu):
        return np.array(fmu.getReal(self.vrs)) if self.vrs else np.zeros(0)

    def __call__(self, time, recorder):
        self.calls += 1
        if self.calls % self.every:
            return True
        fmu = recorder.fmu
        x = (ctypes.c_double * max(self.nx, 1))()
        if self.nx:
            fmu.getContinuousStates(x, self.nx)
        base = self.values(fmu)
        knowns = [(s, "state", j) for j, s in enumerate(self.states)] + \
                 [(v, "input", None) for v in self.inputs]
        for known, kind, j in knowns:
            if kind == "state":
                xp = (ctypes.c_double * self.nx)(*x[:self.nx])
                xp[j] += 1e-7 * max(1.0, abs(xp[j]))
                fmu.setContinuousStates(xp, self.nx)
            else:
                u0 = fmu.getReal([known.valueReference])[0]
                fmu.setReal([known.valueReference], [u0 + 1e-7 * max(1.0, abs(u0))])
            got = self.values(fmu)
            for k, u in enumerate(self.unknowns):
                if known not in u.dependencies and got[k] != base[k]:
                    self.problems.append((time, u.variable.name, known.name, base[k], got[k]))
            if kind == "state":
                fmu.setContinuousStates(x, self.nx)
            else:
                fmu.setReal([known.valueReference], [u0])
        self.checks += 1
        return True


@pytest.mark.parametrize("name", REFERENCE_MODELS)
def test_continuous_dependencies_hold_numerically(name):
    """The Outputs/Derivatives dependencies are supersets of the numerical ones: at 20
    points of the whole reference run (every mode the run visits), a perturbed state or
    continuous input changes no unknown that does not list it."""
    fmu = reference_fmu(name)
    md = read_model_description(str(fmu))
    probe = _Probe(md, every=1)
    kw = {"input": input_table(name)} if name in INPUT_SIGNALS else {}
    stop = reference_stop(name)
    simulate_fmu(str(fmu), stop_time=stop, output_interval=stop / 20,
                 relative_tolerance=1e-8, step_finished=probe, **kw)
    assert probe.checks >= 20 and probe.problems == [], probe.problems[:5]


def _initial_values(path, md, unzip, vrs, override=None):
    """Values of ``vrs`` right after fmi2ExitInitializationMode, with ``override`` =
    (variable, value) set before initialization; None if the initialization fails."""
    fmu = FMU2Model(guid=md.guid, unzipDirectory=unzip,
                    modelIdentifier=md.modelExchange.modelIdentifier, instanceName="init")
    fmu.instantiate()
    try:
        fmu.setupExperiment(startTime=0.0)
        if override is not None:
            v, value = override
            if v.type == "Real":
                fmu.setReal([v.valueReference], [value])
            elif v.type == "Boolean":
                fmu.setBoolean([v.valueReference], [value])
            else:
                fmu.setInteger([v.valueReference], [value])
        fmu.enterInitializationMode()
        fmu.exitInitializationMode()
        return np.array(fmu.getReal(vrs))
    except Exception:
        return None
    finally:
        fmu.freeInstance()


@pytest.mark.parametrize("name", REFERENCE_MODELS)
def test_initial_dependencies_hold_numerically(name, tmp_path):
    """InitialUnknowns dependencies: changing a known before initialization (a parameter,
    a fixed start, an input) changes no initial unknown that does not list it, and every
    initial unknown that does change lists it (perturbations that make the initialization
    fail are skipped)."""
    fmu = reference_fmu(name)
    md = read_model_description(str(fmu))
    unzip = extract(str(fmu))
    unknowns = [u for u in md.initialUnknowns if u.variable.type == "Real"]
    vrs = [u.variable.valueReference for u in unknowns]
    base = _initial_values(fmu, md, unzip, vrs)
    assert base is not None
    tried = 0
    for v in sorted(_init_knowns(md), key=lambda v: v.valueReference):
        if v.type == "Real":
            start = float(v.start)
            value = start * (1 + 1e-3) + 1e-3
        elif v.type == "Boolean":
            value = v.start not in ("true", "1", True)
        else:
            value = int(v.start) + 1
        got = _initial_values(fmu, md, unzip, vrs, (v, value))
        if got is None:
            continue
        tried += 1
        for k, u in enumerate(unknowns):
            if got[k] != base[k]:
                assert v in u.dependencies, (u.variable.name, v.name, base[k], got[k])
    assert tried >= 1 or not unknowns


# ---------------------------------------------------------------------------------------------
# simulation against the reference results
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", SINGLE_MODE)
def test_cvode_matches_reference(name):
    """Closed forms and high-accuracy references within 1e-6 relative (`relative_errors`:
    purely relative for a signal of one sign, e.g. Dahlquist's exp(-t) down to 4.5e-5;
    an absolute floor of 1e-3 max|ref| only for signals that cross zero: Van der Pol, the
    pendulum's x, the ball's velocity). CVode at rtol 1e-12: FMPy's absolute tolerance is
    rtol x the states' nominal (1), i.e. 1e-12, far below Dahlquist's smallest value 4.5e-5
    (measured relative error 3.8e-9). At rtol 1e-10 the Van der Pol and pendulum errors
    reach 2e-5 relative near zero crossings (absolute 1e-8 and 2e-7 of their ranges)."""
    header, data = read_csv(name)
    stop = REFS[name]["stop"]
    names = header[1:]
    t = data[:, 0]
    r = simulate_fmu(str(reference_fmu(name)), stop_time=stop, solver="CVode",
                     relative_tolerance=1e-12, output=names, output_interval=t[1] - t[0])
    # rows at an event time (left and right limits) cannot be interpolated
    keep = away_from_events(name, t, margin=1e-6)
    for k, var in enumerate(names):
        got = np.interp(t[keep], r["time"], r[var])
        err = relative_errors(got, data[keep, k + 1], data[:, k + 1])
        assert err.max() <= 1e-6, (name, var, err.max(), t[keep][err.argmax()])


def test_bouncing_ball_bounce_times():
    r = simulate_fmu(str(reference_fmu("BouncingBall")), stop_time=2.0, solver="CVode",
                     relative_tolerance=1e-10, output=["h", "v"], record_events=True)
    t, v = r["time"], r["v"]
    bounces = [t[i] for i in range(1, len(t)) if t[i] == t[i - 1] and v[i] > 0 > v[i - 1]]
    expected = reference_entry("BouncingBall")["events"]
    assert len(bounces) == len(expected)
    assert np.max(np.abs(np.array(bounces) - expected)) < 1e-6
    # restitution: v+ = -e v- at each bounce
    for i in range(1, len(t)):
        if t[i] == t[i - 1] and v[i] != v[i - 1]:
            assert v[i] == pytest.approx(-0.7 * v[i - 1], rel=1e-12)


def test_pendulum_stays_on_constraint():
    """Drift control: |x^2 + y^2 - L^2| < 1e-6 over 10 s with CVode (docs/fmi-mapping.md)."""
    r = simulate_fmu(str(reference_fmu("Pendulum")), stop_time=10.0, solver="CVode",
                     relative_tolerance=1e-10, output=["x", "y", "vx", "vy"],
                     output_interval=0.001)
    res = np.abs(r["x"] ** 2 + r["y"] ** 2 - 1.0)
    assert res.max() < 1e-6
    # velocity constraint (hidden, index reduction) as well
    assert np.abs(r["x"] * r["vx"] + r["y"] * r["vy"]).max() < 1e-6


def test_pendulum_initialization_is_consistent():
    """x and vx fixed, y and vy free: the initial system puts the mass on the circle with a
    velocity tangent to it (docs/theory.md §8.5, §11)."""
    r = simulate_fmu(str(reference_fmu("Pendulum")), stop_time=0.01, solver="CVode",
                     output=["x", "y", "vx", "vy"],
                     start_values={"y": -0.5, "vy": 0.3})  # poor guesses, still the same root
    assert r["x"][0] == 0.6 and r["vx"][0] == 0.0
    assert r["y"][0] == pytest.approx(-0.8, abs=1e-12)
    assert r["vy"][0] == pytest.approx(0.0, abs=1e-12)


def test_euler():
    """Fixed-step Euler (FMPy steps at the output interval): first-order accurate results,
    exact event handling for time events, the pendulum projected back at every step."""
    h = 1e-3
    r = simulate_fmu(str(reference_fmu("Dahlquist")), stop_time=1.0, solver="Euler",
                     output_interval=h, step_size=h, output=["x"])
    assert abs(r["x"][-1] - math.exp(-1.0)) < 1e-3
    r = simulate_fmu(str(reference_fmu("Stair")), stop_time=10.0, solver="Euler",
                     output_interval=0.01, step_size=0.01, output=["x", "n"])
    assert r["x"][-1] == pytest.approx(45.0, rel=1e-9)
    r = simulate_fmu(str(reference_fmu("BouncingBall")), stop_time=1.0, solver="Euler",
                     output_interval=1e-4, step_size=1e-4, output=["h", "v"])
    t, v = r["time"], r["v"]
    first = t[np.argmax(v > 0)]
    assert abs(first - reference_entry("BouncingBall")["events"][0]) < 1e-3
    r = simulate_fmu(str(reference_fmu("Pendulum")), stop_time=2.0, solver="Euler",
                     output_interval=h, step_size=h, output=["x", "y"], record_events=True)
    res = np.abs(r["x"] ** 2 + r["y"] ** 2 - 1.0)
    assert res.max() < 1e-4            # one Euler step of drift at most, then projected
    _, data = read_csv("Pendulum")
    k = np.searchsorted(data[:, 0], 2.0)
    assert abs(r["x"][-1] - data[k, 1]) < 0.05
    r = simulate_fmu(str(reference_fmu("VanDerPol")), stop_time=1.0, solver="Euler",
                     output_interval=h, step_size=h, output=["x0"])
    _, data = read_csv("VanDerPol")
    k = np.searchsorted(data[:, 0], 1.0)
    assert abs(r["x0"][-1] - data[k, 1]) < 1e-2
