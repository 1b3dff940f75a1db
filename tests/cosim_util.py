"""Helpers of the FMU tests: the reference models and their horizons, FMUs built once per
test session (shared by every module: strict driver, valgrind, FMPy, libcosim), the ME
reference result of each model, and a thin FMPy ``FMU2Slave`` wrapper that records the log
messages and the status of every call."""

from __future__ import annotations

import json
import math
import shutil
from ctypes import byref, c_void_p
from dataclasses import dataclass, field
from pathlib import Path

from fmpy import extract, read_model_description
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import (FMU2Model, FMU2Slave, defaultCallbacks, fmi2CallbackFunctions,
                       fmi2CallbackLoggerTYPE)
from fmu_files import export_environment, shared_build

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "reference_models"
DATA = Path(__file__).resolve().parent / "data"
REFS = json.loads((REFERENCE / "references.json").read_text())

# the accepted reference models (reference_models/README.md); the others are rejected by the
# analysis on purpose
SINGLE_MODE = ("Dahlquist", "VanDerPol", "BouncingBall", "Pendulum", "Stair")
MULTIMODE = ("ClutchBasic", "ClutchGuarded", "ClutchGuardedTime", "ClutchNonSemilinear",
             "CupAndBall", "CupAndBallFirstOrder", "CupAndBallElastic", "AirBrake", "RLDC2",
             "RLDC2Switched", "RLDC2Diodes")
REFERENCE_MODELS = SINGLE_MODE + MULTIMODE

# The input signals (piecewise constant: (time, value) from that time on) under which the
# models with Boolean inputs give their reference results (references.json): ClutchGuarded's
# engage signal is true exactly on [5, 7] (ClutchBasic.csv); RLDC2Switched's switches follow
# RLDC2_SWITCHED_SCHEDULE of reference_models/make_references.py, on multiples of 0.1 so that
# every communication grid of the CS tests holds the switching times.
CLUTCH_SIGNAL = ((0.0, False), (5.0, True), (7.0, False))
INPUT_SIGNALS = {
    "ClutchGuarded": {"g": CLUTCH_SIGNAL},
    "RLDC2Switched": {"g1": ((0.0, True), (0.2, False), (0.4, True), (0.5, False), (0.6, True)),
                      "g2": ((0.0, False), (0.1, True), (0.3, False), (0.4, True),
                             (0.5, False))},
    # the generated models of benchmarks/record_reference_trajectories.GENERATED
    "generated.ClutchChain2": {"g0": ((0.0, False), (0.68, True), (2.63, False), (3.46, True)),
                               "g1": ((0.0, False), (1.09, True), (2.88, False), (4.69, True))},
    "generated.FaultChain1": {"open0": ((0.0, False), (0.73, True), (3.46, False)),
                              "short0": ((0.0, False), (1.53, True), (2.88, False),
                                         (4.69, True))},
}

# DefaultExperiment tolerance of the shared FMUs: the CS integrator's tolerance when the host
# gives none (libcosim never does). CS against ME at 1e-5 relative needs both results far
# more accurate than that (docs/fmi-testing.md).
TOLERANCE = 1e-12

_CACHE: dict[tuple, Path] = {}


def reference_entry(name: str) -> dict:
    """The references.json entry whose CSV applies to model ``name``."""
    for entry in REFS.values():
        if name in entry["models"]:
            return entry
    raise KeyError(name)


def bounce_times(stop: float, v_min: float = 0.0, h0: float = 1.0, g: float = 9.81,
                 e: float = 0.7) -> list[float]:
    """Closed form of a bouncing ball dropped from h0 (restitution e): its impacts in
    [0, stop], t_0 = sqrt(2 h0/g), t_{k+1} = t_k + 2 e^{k+1} u_0/g (u_0 = g t_0), until the
    first bounce whose rebound speed is below v_min (the Reference-FMUs' ball rests then)."""
    t = math.sqrt(2 * h0 / g)
    u = g * t
    times = []
    while t <= stop:
        times.append(t)
        u *= e
        if u < v_min:
            break
        t += 2 * u / g
    return times


def reference_stop(name: str) -> float:
    """The horizon of the reference result of ``name`` (its DefaultExperiment stopTime)."""
    return float(reference_entry(name)["stop"])


def model_path(name: str) -> Path:
    p = REFERENCE / f"{name}.mo"
    return p if p.exists() else DATA / f"{name}.mo"


def sundials_available() -> bool:
    from mdae_fmu.fmu.cosim import sundials_missing
    return sundials_missing() is None


def build(name: str, fmi_type: str = "both", tolerance: float | None = TOLERANCE,
          stop_time: float | None = None) -> Path:
    """The FMU of model ``name`` (reference_models/ or tests/data/), built once per test
    session. Its DefaultExperiment: stopTime = ``stop_time``, else the reference horizon
    (references.json) for reference models, else 1; tolerance = ``tolerance``."""
    from mdae_fmu import load
    from mdae_fmu.fmu.export import export
    if stop_time is None and (REFERENCE / f"{name}.mo").exists():
        try:
            stop_time = reference_stop(name)
        except KeyError:
            pass
    key = (name, fmi_type, tolerance, stop_time)
    if key not in _CACHE:
        path = model_path(name)
        de = {"tolerance": tolerance, "stopTime": stop_time}
        file_name = f"{name}_{fmi_type}_{tolerance}_{stop_time}.fmu"
        _CACHE[key] = shared_build(
            ("cosim_util", *key, path.read_text(), export_environment()), file_name,
            lambda fmu: export(load(path), fmu, fmi_type=fmi_type, default_experiment=de,
                               progress=False))
    return _CACHE[key]


def build_me(name: str, **kw) -> Path:
    """An FMU whose Model Exchange interface the ME tests use: the shared ``both`` FMU when
    SUNDIALS is installed (one build per model for every test), else an ME-only one."""
    return build(name, "both" if sundials_available() else "me", **kw)


def cleanup() -> None:
    """Forget the session's FMUs (conftest.py calls it at the end of the session; their
    directory, `fmu_files.shared_dir`, is removed by conftest.py)."""
    _CACHE.clear()
    _ME.clear()


@dataclass
class Slave:
    """A Co-Simulation (or Model Exchange) instance driven call by call. ``messages``:
    (status, category, text) of every log call. `call` returns the status instead of
    raising."""
    fmu: FMU2Slave | FMU2Model
    vrs: dict
    messages: list = field(default_factory=list)

    def call(self, fname: str, *args) -> int:
        try:
            r = getattr(self.fmu, fname)(*args)
        except FMICallException as e:
            return e.status
        return 0 if r is None else r

    def get(self, names):
        return self.fmu.getReal([self.vrs[n] for n in names])

    def errors(self):
        return [m for m in self.messages if m[0] >= 3]


def open_slave(fmu_path: Path, start_time: float = 0.0, stop_time: float | None = None,
               tolerance: float | None = None, logging: bool = False,
               init: bool = True, model_exchange: bool = False) -> Slave:
    """Instantiate (and by default initialize) the CS interface of ``fmu_path``, or its ME
    interface (`FMU2Model`, left in Event Mode) with ``model_exchange``."""
    md = read_model_description(str(fmu_path))
    unzip = extract(str(fmu_path))
    if model_exchange:
        fmu = FMU2Model(guid=md.guid, unzipDirectory=unzip,
                        modelIdentifier=md.modelExchange.modelIdentifier, instanceName="me")
    else:
        fmu = FMU2Slave(guid=md.guid, unzipDirectory=unzip,
                        modelIdentifier=md.coSimulation.modelIdentifier, instanceName="cs")
    slave = Slave(fmu, {v.name: v.valueReference for v in md.modelVariables})

    def log(env, instance, status, category, message):
        slave.messages.append((status, category.decode(), message.decode()))

    cb = fmi2CallbackFunctions()
    cb.logger = fmi2CallbackLoggerTYPE(log)
    cb.allocateMemory = defaultCallbacks.allocateMemory
    cb.freeMemory = defaultCallbacks.freeMemory
    slave._callbacks = cb                       # keep the ctypes callbacks alive
    fmu.instantiate(callbacks=cb, loggingOn=logging)
    slave._unzip = unzip
    if init:
        fmu.setupExperiment(tolerance=tolerance, startTime=start_time, stopTime=stop_time)
        fmu.enterInitializationMode()
        fmu.exitInitializationMode()
    return slave


def close_slave(slave: Slave) -> None:
    try:
        slave.fmu.terminate()
    except FMICallException:
        pass
    slave.fmu.freeInstance()
    shutil.rmtree(slave._unzip, ignore_errors=True)





#: Absolute floor of every comparison: ten times the exporter's event hysteresis (1e-10).
#: A value below it is an event-location artifact, e.g. RLDC2Diodes' impulse outputs at its
#: physical (continuous) switches, 1e-10, whose last digits depend on where each integrator
#: located the crossing inside the hysteresis band.
EVENT_RESOLUTION_FLOOR = 1e-9


def zero_floor(signal) -> float:
    """Absolute floor of the relative metric for one reference signal (docs/fmi-testing.md,
    "Metrics"): 1e-3 of its largest magnitude when it reaches or crosses zero (near a zero
    crossing a time-phase error of the order of the tolerance gives an unbounded relative
    error), else none: a signal of one sign, e.g. the decay exp(-t) down to 4.5e-5, is
    checked purely relatively; never below `EVENT_RESOLUTION_FLOOR`."""
    import numpy as np
    s = np.asarray(signal, dtype=float)
    if s.size and s.min() <= 0.0 <= s.max():
        return max(1e-3 * float(np.max(np.abs(s))), EVENT_RESOLUTION_FLOOR)
    return EVENT_RESOLUTION_FLOOR


def relative_errors(got, ref, signal=None):
    """|got - ref| / max(|ref|, zero_floor(signal)) elementwise (``signal``: the whole
    reference signal, default ``ref``); 0 where both are exactly 0."""
    import numpy as np
    got = np.asarray(got, dtype=float)
    ref = np.asarray(ref, dtype=float)
    floor = zero_floor(ref if signal is None else signal)
    den = np.maximum(np.abs(ref), floor)
    diff = np.abs(got - ref)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(diff == 0.0, 0.0, diff / den)


# ---------------------------------------------------------------------------------------------
# Co-Simulation against Model Exchange (issue 7): the ME oracle and the comparison
# ---------------------------------------------------------------------------------------------

ME_TOLERANCE = 1e-12
_ME: dict = {}


def recorded(fmu) -> list[str]:
    """Every non-parameter Real/Integer variable except derivatives."""
    md = read_model_description(str(fmu))
    return [v.name for v in md.modelVariables
            if v.causality in ("local", "output") and v.type in ("Real", "Integer")
            and not v.name.startswith("der(") and v.variability != "constant"]


def input_table(name: str):
    """FMPy's input table of model ``name`` (None if it has no input signal): values before
    and after every switch at the same time."""
    import numpy as np
    if name not in INPUT_SIGNALS:
        return None
    signals = INPUT_SIGNALS[name]

    def value(signal, t, before=False):
        v = signal[0][1]
        for ts, vs in signal:
            if ts < t or (ts == t and not before):
                v = vs
        return v
    rows = [(0.0, *(value(s, 0.0) for s in signals.values()))]
    for t in input_switch_times(name):
        rows.append((t, *(value(s, t, before=True) for s in signals.values())))
        rows.append((t, *(value(s, t) for s in signals.values())))
    return np.array(rows, dtype=[("time", float)] + [(var, type(s[0][1]))
                                                     for var, s in signals.items()])


def input_switch_times(name: str) -> tuple[float, ...]:
    """The times at which some input of ``name`` switches, sorted."""
    return tuple(sorted({t for s in INPUT_SIGNALS.get(name, {}).values() for t, _ in s[1:]}))


def me_reference(name: str):
    """The ME result of the shared FMU of ``name`` (FMPy's CVode, rtol 1e-12, outputs every
    1e-3 over the reference horizon, events recorded, input signal applied): the oracle of
    the CS tests (FMPy and libcosim), computed once per session."""
    from fmpy import simulate_fmu
    if name not in _ME:
        fmu = build(name)
        _ME[name] = simulate_fmu(str(fmu), fmi_type="ModelExchange",
                                 stop_time=reference_stop(name), output=recorded(fmu),
                                 relative_tolerance=ME_TOLERANCE, output_interval=1e-3,
                                 input=input_table(name))
    return _ME[name]


def cs_vs_me_errors(name: str, times, values: dict) -> dict:
    """Worst `relative_errors` per variable of CS values (``values[var][k]`` at communication
    point ``times[k]``) against the ME result at the same time: the right limit at an event
    time, but the left limit where an input switches (an input set at a communication point
    acts from the step that starts there, docs/cosimulation.md)."""
    import numpy as np
    me = me_reference(name)
    switches = input_switch_times(name)
    rows = []
    for t in times:
        idx = np.nonzero(np.abs(me["time"] - t) <= 1e-12 * max(1.0, abs(t)))[0]
        assert len(idx), f"no ME row at t = {t}"
        left = any(abs(t - ts) <= 1e-12 * max(1.0, ts) for ts in switches)
        rows.append(idx[0] if left else idx[-1])
    worst = {}
    for var, got in values.items():
        err = relative_errors(got, me[var][rows], me[var])
        k = int(np.argmax(err))
        worst[var] = (float(err[k]), float(times[k]))
    return worst


__all__ = ["build", "build_me", "open_slave", "close_slave", "Slave", "cleanup", "byref",
           "c_void_p", "REFERENCE_MODELS", "SINGLE_MODE", "MULTIMODE", "reference_stop",
           "reference_entry", "INPUT_SIGNALS", "TOLERANCE", "sundials_available",
           "relative_errors", "zero_floor", "recorded", "input_table", "me_reference",
           "cs_vs_me_errors", "input_switch_times"]
