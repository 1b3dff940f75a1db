"""FMU behaviour beyond the reference models: hostile names, independent instances,
reproducible builds, misuse of the FMI API (exact statuses), run-time block failures at
initialization and in Continuous-Time Mode (status, block and time in the message), block
solvers, events (sample, terminate, initial), fmpy compile (ME and CS), CLI."""

from __future__ import annotations

import ctypes
import math
import shutil
import subprocess
import sys
import zipfile
from io import StringIO
from pathlib import Path

import numpy as np
import pytest

fmpy = pytest.importorskip("fmpy")
from fmpy import extract, read_model_description, simulate_fmu  # noqa: E402
from fmpy.fmi1 import FMICallException  # noqa: E402
from fmpy.fmi2 import FMU2Model  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402

from mdae_fmu import expr as E  # noqa: E402
from mdae_fmu.cli import main as cli_main  # noqa: E402
from mdae_fmu.fmu.export import Progress, export  # noqa: E402
from mdae_fmu.importers.flat_modelica import parse_modelica  # noqa: E402
from mdae_fmu.ir import Equation, Model, Variable  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FMI_DISCARD, FMI_ERROR = 2, 3
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def build(tmp_path, text: str, name: str = "M") -> Path:
    model = parse_modelica(text, f"{name}.mo")
    return export(model, tmp_path / f"{name}.fmu", progress=False)


def sim(path, **kw):
    kw.setdefault("relative_tolerance", 1e-10)
    return simulate_fmu(str(path), **kw)


# --- names --------------------------------------------------------------------------------

HOSTILE = ['a"b', "back\\slash", "c*/d", "new\nline", "ünï€ code", "q'uote", "%s%n%x",
           "/* open", "??=trigraph"]


def test_hostile_names_compile_and_run(tmp_path, monkeypatch):
    """Base Modelica quoted identifiers may contain anything; the FMU still compiles with
    -Wall -Wextra -Werror, validates and runs (names only reach C as escaped literals, and as
    reduced comments next to their slots: every block printed on its own here, not as a
    loop, so that every name is written)."""
    from mdae_fmu.codegen import runs
    monkeypatch.setattr(runs, "MIN_REPEATS", 10 ** 9)
    n = len(HOSTILE)
    variables = [Variable(nm, start=E.Const(float(k + 1)), fixed=True, causality="output")
                 for k, nm in enumerate(HOSTILE)]
    variables.append(Variable("k\"*/\\", variability="parameter", binding=E.Const(0.5)))
    eqs = [Equation(f"e{k}\n*/", E.residual(E.Der(E.Ref(nm)),
                                            E.BinOp("*", E.UnOp("-", E.Ref("k\"*/\\")),
                                                    E.Ref(nm))))
           for k, nm in enumerate(HOSTILE)]
    model = Model(name='Hostile "model" */ ü\n', variables=tuple(variables), equations=tuple(eqs))
    path = export(model, tmp_path / "hostile.fmu", progress=False)
    assert validate_fmu(str(path)) == []
    md = read_model_description(str(path))
    # control characters are not allowed in XML names: written as backslash escapes
    fmi_names = [nm.replace("\n", "\\n") for nm in HOSTILE]
    assert [v.name for v in md.modelVariables][:n] == fmi_names
    r = sim(path, stop_time=1.0, output=fmi_names)
    for k, nm in enumerate(fmi_names):
        assert r[nm][-1] == pytest.approx((k + 1) * math.exp(-0.5), rel=1e-8)
    with zipfile.ZipFile(path) as zf:
        code = "".join(zf.read(f).decode() for f in zf.namelist()
                       if f.startswith("sources/") and f.endswith((".c", ".h")))
    # no raw name outside an escaped string literal: the escaper turns every quote,
    # backslash, newline and non-ASCII byte into an octal escape
    for nm in ('a"b', "new\nline", "ünï€", "back\\slash"):
        assert nm not in code
    # the slots are addressed by identifiers made of the names' ASCII letters and digits
    # (readable C, issue 27 Deliver 4), one per variable
    for ident in ("R_a_b", "R_back_slash", "R_c_d", "R_new_line", "R_n_code", "R_q_uote",
                  "R_s_n_x", "R_open", "R_trigraph"):
        assert f"r[{ident}]" in code and f"    {ident} = " in code, ident


# --- instances, reproducibility -------------------------------------------------------------

DAHLQUIST = """class Dahlquist
  parameter Real k = 1.0;
  Real x(start = 1.0, fixed = true);
equation
  der(x) = -k * x;
end Dahlquist;
"""


class _Log:
    def __init__(self):
        self.messages = []

    def __call__(self, component, instanceName, status, category, message):
        self.messages.append((status, category.decode(), message.decode()))


def _instance(path, name, log=None):
    md = read_model_description(str(path))
    unzip = extract(str(path))
    fmu = FMU2Model(guid=md.guid, unzipDirectory=unzip,
                    modelIdentifier=md.modelExchange.modelIdentifier, instanceName=name)
    if log is None:
        fmu.instantiate()
    else:
        from fmpy.fmi2 import defaultCallbacks, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE
        cb = fmi2CallbackFunctions()
        cb.logger = fmi2CallbackLoggerTYPE(log)
        cb.allocateMemory = defaultCallbacks.allocateMemory
        cb.freeMemory = defaultCallbacks.freeMemory
        fmu._keep = cb
        fmu.instantiate(callbacks=cb, loggingOn=True)
    return fmu, md


def _init(fmu):
    fmu.setupExperiment(startTime=0.0)
    fmu.enterInitializationMode()
    fmu.exitInitializationMode()
    info = fmu.newDiscreteStates()
    fmu.enterContinuousTimeMode()
    return info


def _euler_steps(fmu, n, h):
    x = (ctypes.c_double * 1)()
    dx = (ctypes.c_double * 1)()
    t = 0.0
    for _ in range(n):
        fmu.getContinuousStates(x, 1)
        fmu.getDerivatives(dx, 1)
        x[0] += h * dx[0]
        t += h
        fmu.setTime(t)
        fmu.setContinuousStates(x, 1)
    return x[0]


def test_two_instances_are_independent(tmp_path):
    """Two instances of one FMU in one process, interleaved, different parameters: each
    follows its own Euler recursion x_n = (1 - k h)^n exactly."""
    path = build(tmp_path, DAHLQUIST, "Dahlquist")
    a, md = _instance(path, "a")
    b, _ = _instance(path, "b")
    vr_k = next(v.valueReference for v in md.modelVariables if v.name == "k")
    a.setReal([vr_k], [1.0])
    b.setReal([vr_k], [3.0])
    _init(a)
    _init(b)
    h = 0.01
    for _ in range(10):
        _euler_steps(a, 5, h)
        _euler_steps(b, 3, h)
    vr_x = next(v.valueReference for v in md.modelVariables if v.name == "x")
    xa = a.getReal([vr_x])[0]
    xb = b.getReal([vr_x])[0]
    assert xa == pytest.approx((1 - 1.0 * h) ** 50, rel=1e-13)
    assert xb == pytest.approx((1 - 3.0 * h) ** 30, rel=1e-13)
    for f in (a, b):
        f.terminate()
        f.freeInstance()


def test_byte_identical_rebuild_and_content_guid(tmp_path, monkeypatch):
    monkeypatch.delenv("MDAE_FMU_BUILD_CACHE", raising=False)   # gcc runs twice
    model = parse_modelica(DAHLQUIST, "Dahlquist.mo")
    p1 = export(model, tmp_path / "one.fmu", progress=False)
    p2 = export(model, tmp_path / "two.fmu", progress=False)
    assert p1.read_bytes() == p2.read_bytes()
    other = parse_modelica(DAHLQUIST.replace("k = 1.0", "k = 2.0"), "Dahlquist.mo")
    p3 = export(other, tmp_path / "three.fmu", progress=False)
    assert read_model_description(str(p3)).guid != read_model_description(str(p1)).guid


# --- misuse ---------------------------------------------------------------------------------

def test_misuse_returns_error_and_logs(tmp_path):
    """Wrong call order, unknown value reference, NaN, a fixed parameter after
    initialization: exactly fmi2Error and a log message each; wrong GUID: NULL."""
    path = build(tmp_path, DAHLQUIST, "Dahlquist")
    log = _Log()
    fmu, md = _instance(path, "m", log)
    assert _status(fmu.exitInitializationMode) == FMI_ERROR    # before EnterInitialization
    assert any("illegal call sequence" in m for _, _, m in log.messages)
    fmu.reset()
    assert _status(fmu.setReal, [12345], [1.0]) == FMI_ERROR  # unknown value reference
    assert any("unknown value reference 12345" in m for _, _, m in log.messages)
    fmu.reset()
    vr_k = next(v.valueReference for v in md.modelVariables if v.name == "k")
    assert _status(fmu.setReal, [vr_k], [float("nan")]) == FMI_ERROR
    assert any("not finite" in m for _, _, m in log.messages)
    fmu.reset()
    _init(fmu)
    n = len(log.messages)
    assert _status(fmu.setReal, [vr_k], [2.0]) == FMI_ERROR   # fixed parameter after init
    assert len(log.messages) > n
    fmu.freeInstance()
    # wrong GUID: fmi2Instantiate returns NULL
    unzip = extract(str(path))
    bad = FMU2Model(guid="{wrong}", unzipDirectory=unzip,
                    modelIdentifier=md.modelExchange.modelIdentifier, instanceName="x")
    with pytest.raises(Exception, match="instantiate"):
        bad.instantiate()


# --- run-time failures ----------------------------------------------------------------------

NO_ROOT = """class NoRoot
  Real x(start = 0.0, fixed = true);
  Real y(start = 1.0);
equation
  der(x) = 1.0;
  y * y + x - 0.5 = 0.0;
end NoRoot;"""

SINGULAR = """class Singular
  Real x(start = 0.0, fixed = true);
  Real a;
  Real b;
equation
  der(x) = 1.0;
  x * a + b = 1.0;
  a + b = 2.0;
end Singular;"""


def _status(call, *args) -> int:
    """The fmi2Status an FMPy call returned (0 when it did not raise)."""
    try:
        call(*args)
    except FMICallException as err:
        return err.status
    return 0


def _continuous_time_instance(path, log):
    fmu, md = _instance(path, "m", log)
    _init(fmu)
    return fmu


def _derivative_status(fmu, t: float, x: float) -> int:
    fmu.setTime(t)
    fmu.setContinuousStates((ctypes.c_double * 1)(x), 1)
    return _status(fmu.getDerivatives, (ctypes.c_double * 1)(), 1)


@pytest.mark.parametrize("text, label, bad_x, message", [
    (NO_ROOT, "e2", 0.75, "Newton"),
    (SINGULAR, "e2+e3", 1.0, "singular"),
])
def test_block_failure_in_continuous_time_is_a_discard(tmp_path, text, label, bad_x, message):
    """Issue 4: a Newton iteration that does not converge (y^2 = 0.5 - x has no root for
    x > 0.5) or a numerically singular linear block (det = x - 1) in Continuous-Time Mode:
    fmi2GetDerivatives returns exactly fmi2Discard (the host may retry with a smaller step)
    and logs the block and the time; the instance stays usable at a good state."""
    path = build(tmp_path, text, text.split()[1])
    log = _Log()
    fmu = _continuous_time_instance(path, log)
    assert _derivative_status(fmu, 0.25, 0.25) == 0
    n = len(log.messages)
    assert _derivative_status(fmu, 0.625, bad_x) == FMI_DISCARD
    errors = [m for st, _, m in log.messages[n:] if st >= FMI_DISCARD]
    assert errors, log.messages[n:]
    assert "t = 0.625" in errors[0] and message in errors[0], errors
    assert f"[{label}]" in errors[0], errors
    fmu.terminate()
    fmu.freeInstance()


@pytest.mark.parametrize("text, bad_x", [
    (NO_ROOT, 0.75),
    (SINGULAR, 1.0),
])
def test_block_recovers_after_a_discard(tmp_path, text, bad_x):
    """After fmi2Discard the host retries from a good state (a smaller step): the block
    solves again there."""
    path = build(tmp_path, text, text.split()[1])
    fmu = _continuous_time_instance(path, _Log())
    assert _derivative_status(fmu, 0.25, 0.25) == 0
    assert _derivative_status(fmu, 0.625, bad_x) == FMI_DISCARD
    assert _derivative_status(fmu, 0.3, 0.3) == 0
    fmu.terminate()
    fmu.freeInstance()


def test_newton_failure_during_a_run_names_the_block_and_the_time(tmp_path):
    """The same failure reached by an integrator (FMPy's CVode): the run stops after
    t = 0.5, and the FMU's message gives the time at which the block failed."""
    path = build(tmp_path, NO_ROOT, "NoRoot")
    log = []

    def logger(*a):
        log.append((a[2], a[-1].decode() if isinstance(a[-1], bytes) else str(a[-1])))
    with pytest.raises(FMICallException):
        sim(path, stop_time=1.0, logger=logger, output_interval=0.01)
    failures = [m for st, m in log if st >= FMI_DISCARD and "Newton" in m]
    assert failures, log
    times = [float(m.split(":")[0].split("=")[1]) for m in failures]
    assert all(0.49 < t < 0.6 for t in times), failures      # x = t crosses 0.5
    assert all("e2" in m for m in failures)


def _initialization_error(path) -> str:
    """fmi2ExitInitializationMode must return fmi2Error; the error messages it logged."""
    log = _Log()
    fmu, _ = _instance(path, "m", log)
    fmu.setupExperiment(startTime=0.0)
    fmu.enterInitializationMode()
    assert _status(fmu.exitInitializationMode) == FMI_ERROR
    fmu.freeInstance()
    return "\n".join(m for st, _, m in log.messages if st >= FMI_ERROR)


def test_newton_failure_at_initialization_is_an_error(tmp_path):
    """At t = 0 (fmi2ExitInitializationMode) the same failure is fmi2Error, naming the block
    and the time."""
    path = build(tmp_path, NO_ROOT.replace("start = 0.0, fixed", "start = 0.75, fixed"),
                 "NoRoot")
    text = _initialization_error(path)
    assert "Newton" in text and "e2" in text and "t = 0" in text


def test_singular_linear_block_at_initialization_is_an_error(tmp_path):
    path = build(tmp_path, SINGULAR.replace("start = 0.0, fixed", "start = 1.0, fixed"),
                 "Singular")
    text = _initialization_error(path)
    assert "singular" in text and "[e2+e3]" in text and "t = 0" in text


INPUT_MODEL = """class WithInput
  input Real u(start = 1.0);
  Real x(start = 0.0, fixed = true);
equation
  der(x) = u;
end WithInput;"""


def test_bound_top_level_input_is_computed_by_its_binding(tmp_path):
    """``input Real u(start = 5) = k*time`` is the equation u = k t (Modelica 3.6 §4.7,
    docs/importers.md), so u is a computed variable (causality local), not an FMU input; the
    input without binding, w, is the only one. x' = u + w with w = 1: x = 3 t^2/2 + t, and
    the output y = x follows it (closed form)."""
    path = build(tmp_path, INPUT_MODEL.replace(
        "input Real u(start = 1.0);", "parameter Real k = 3;\n  input Real u(start = 5) = k*time;"
        "\n  input Real w(start = 0);\n  output Real y;").replace(
        "der(x) = u;", "der(x) = u + w;\n  y = x;"), "WithInput")
    assert validate_fmu(str(path)) == []
    md = read_model_description(str(path))
    causality = {v.name: v.causality for v in md.modelVariables}
    assert causality["u"] == "local" and causality["w"] == "input" and causality["y"] == "output"
    assert [v.name for v in md.modelVariables if v.causality == "input"] == ["w"]
    r = simulate_fmu(str(path), stop_time=1.0, output_interval=0.05, relative_tolerance=1e-10,
                     output=["x", "u", "y"], start_values={"w": 1.0})
    t = r["time"]
    assert np.max(np.abs(r["u"] - 3 * t)) < 1e-12
    assert np.max(np.abs(r["y"] - (1.5 * t**2 + t))) < 1e-8


def test_nan_input_is_an_error(tmp_path):
    """Issue 4: a NaN input gets fmi2Error (the status exactly) and a log message, before
    initialization and in Continuous-Time Mode; a finite value is accepted."""
    path = build(tmp_path, INPUT_MODEL, "WithInput")
    md = read_model_description(str(path))
    vr = next(v.valueReference for v in md.modelVariables if v.name == "u")
    for in_ct_mode in (False, True):
        log = _Log()
        fmu, _ = _instance(path, "m", log)
        if in_ct_mode:
            _init(fmu)
            assert _status(fmu.setReal, [vr], [2.0]) == 0
        assert _status(fmu.setReal, [vr], [float("nan")]) == FMI_ERROR
        assert any(st == FMI_ERROR and "not finite" in m for st, _, m in log.messages)
        assert _status(fmu.setReal, [vr], [float("inf")]) == FMI_ERROR   # error state now
        fmu.freeInstance()


def test_linear_and_newton_blocks(tmp_path):
    path = build(tmp_path, """class Blocks
  Real x(start = 0.0, fixed = true);
  Real a;
  Real b;
  Real y(start = 0.5);
equation
  der(x) = 1.0;
  a + b = x;
  a - 2.0 * b = 2.0 + x * b;
  y ^ 3 + y = x + 1.0;
end Blocks;""", "Blocks")
    r = sim(path, stop_time=2.0, output=["x", "a", "b", "y"], output_interval=0.1)
    x, a, b, y = r["x"], r["a"], r["b"], r["y"]
    assert np.allclose(a + b, x, atol=1e-12)
    assert np.allclose(a - 2.0 * b, 2.0 + x * b, atol=1e-12)
    assert np.abs(y ** 3 + y - x - 1.0).max() < 1e-10


#: A blocking thyristor in series with R and L on a sine source (MSL 3.1 ThyristorBehaviourTest
#: in its off state): the element's current is tiny (30 V over a megohm), its voltage is the
#: unknown of a Newton block (exponential breakdown branch below -VRRM), and the circuit's time
#: constant L/(R + Roff) is 2 ps.
OFF_STATE = """class OffState
  parameter Real Roff = 1e6;
  parameter Real R = 10.0;
  parameter Real L = 2e-6;
  parameter Real V = 30.0;
  parameter Real f = 1e4;
  Real i(start = 0.0, fixed = true);
  Real v;
equation
  i = if v < -100.0 then -100.0 * exp((-v - 100.0) / 0.0296) / Roff else v / Roff;
  L * der(i) = V * sin(2 * 3.141592653589793 * f * time) - v - R * i;
end OffState;"""


def test_newton_block_follows_changes_below_any_residual_threshold(tmp_path):
    """A change of the state of 1e-16 A changes the residual of the Newton block by 1e-16 A:
    the block still takes its Newton step (its convergence is judged on the step, in the units
    of the unknown), so the difference quotient of der(i) is the exact -(R + Roff)/L. With an
    absolute residual threshold (|F| <= 1e-14) the voltage stayed at its guess and the quotient
    was -R/L, five orders too small: CVode's Jacobian was wrong and its steps stayed at the
    2 ps time constant (ThyristorBehaviourTest, mxstep at t = 8.1e-10 s)."""
    path = build(tmp_path, OFF_STATE, "OffState")
    with zipfile.ZipFile(path) as z:          # v is solved by the runtime's Newton iteration
        assert any("mdae_newton_block(" in z.read(n).decode() for n in z.namelist()
                   if n.startswith("sources/model_schedule"))
    fmu, _ = _instance(path, "m")
    _init(fmu)
    x = (ctypes.c_double * 1)()
    dx = (ctypes.c_double * 1)()

    def der(i):
        x[0] = i
        fmu.setContinuousStates(x, 1)
        fmu.getDerivatives(dx, 1)
        return dx[0]

    fmu.setTime(5e-10)
    i0 = 30.0 * math.sin(2 * math.pi * 1e4 * 5e-10) / (1e6 + 10.0)   # quasi-static current
    base = der(i0)
    for delta in (1e-16, 1e-15, 1e-13):
        quotient = (der(i0 + delta) - base) / delta
        assert quotient == pytest.approx(-(1e6 + 10.0) / 2e-6, rel=1e-4), delta
    fmu.terminate()
    fmu.freeInstance()


def test_stiff_off_state_simulates_with_cvode(tmp_path):
    """Two periods of the source (the MSL example's StopTime) with FMPy's CVode (at most 500
    steps per output interval, 500 intervals) simulate: the current is the closed form of
    L i' + (R + Roff) i = V sin(wt), i(0) = 0."""
    path = build(tmp_path, OFF_STATE, "OffState")
    r = sim(path, stop_time=2e-4, relative_tolerance=1e-10, output_interval=4e-7, output=["i"])
    t = r["time"]
    w, rt, wl = 2 * math.pi * 1e4, 1e6 + 10.0, 2e-6 * 2 * math.pi * 1e4
    z2 = rt ** 2 + wl ** 2
    exact = 30.0 / z2 * (rt * np.sin(w * t) - wl * np.cos(w * t) + wl * np.exp(-t * rt / 2e-6))
    assert t[-1] == pytest.approx(2e-4)
    # CVode's absolute tolerance is rtol * nominal = 1e-10 A: a few of them, 1e-5 of the amplitude
    assert np.abs(r["i"] - exact).max() < 1e-5 * 30.0 / rt


# --- events ---------------------------------------------------------------------------------

def test_sample_terminate_and_initial(tmp_path):
    path = build(tmp_path, """class Events
  Integer n(start = 0, fixed = true);
  Integer m(start = 0, fixed = true);
  Real x(start = 0.0, fixed = true);
equation
  der(x) = 1.0;
  when sample(0.0, 0.25) then
    n = pre(n) + 1;
  end when;
  when initial() then
    m = 7;
  end when;
  when x >= 1.6 then
    terminate("x reached 1.6");
  end when;
end Events;""", "Events")
    r = sim(path, stop_time=3.0, output=["n", "m", "x"], output_interval=0.05)
    t = r["time"]
    assert t[-1] == pytest.approx(1.6, abs=1e-8)           # terminate() stops the run
    assert r["m"][0] == 7                                   # when initial()
    k = np.searchsorted(t, 0.9)
    assert r["n"][k] == 4                                   # samples at 0, .25, .5, .75
    assert r["n"][-1] == 7                                  # ... and 1, 1.25, 1.5


def test_event_iteration_that_does_not_settle_is_an_error_naming_the_variable(tmp_path):
    """fmi2NewDiscreteStates runs the whole event iteration (docs/fmi-mapping.md, "Events in
    third-party hosts"), bounded: a discrete equation that flips its own left limit at every
    instant never settles; after MDAE_MAX_EVENT_ITERATIONS (100) instants the call returns
    fmi2Error with a message naming the variable that keeps changing."""
    path = build(tmp_path, """class Chatter
  Boolean b(start = false, fixed = true);
  Real x(start = 0.0, fixed = true);
equation
  der(x) = 1.0;
  b = if x > 0.5 then not pre(b) else pre(b);
end Chatter;""", "Chatter")
    log = []
    fmu, md = _instance(path, "chatter", lambda env, name, status, cat, msg:
                        log.append((status, msg.decode())))
    info = _init(fmu)
    assert not info[0]                                    # settled at the start
    vr = next(v.valueReference for v in md.modelVariables if v.name == "b")
    fmu.setTime(0.75)
    fmu.setContinuousStates((ctypes.c_double * 1)(0.75), 1)
    fmu.enterEventMode()
    assert _status(fmu.newDiscreteStates) == FMI_ERROR
    errors = [msg for status, msg in log if status >= FMI_ERROR]
    assert errors == [f"t = 0.75: the event iteration does not settle after 100 instants: "
                      f"the Boolean of value reference {vr} (modelDescription.xml) keeps "
                      "changing"]


def test_mode_switch_that_does_not_settle_names_the_guard_valuations(tmp_path):
    """A multimode model whose guard undoes itself at every instant (g = time > 0.5 and not
    pre(g)): the event iteration at the time event t = 0.5 switches [not g] -> [g] -> [not g]
    ... and once the mode has changed more often than there are modes at one instant,
    fmi2NewDiscreteStates returns fmi2Error naming the last switch and the guard that keeps
    changing (the mode-change bound of model_guarded.c.j2 comes before the wrapper's bound of
    100 instants)."""
    path = build(tmp_path, """class ModeChatter
  Real x(start = 1.0, fixed = true);
  Boolean g(start = false, fixed = true);
equation
  g = time > 0.5 and not pre(g);
  if g then
    der(x) = -1.0;
  else
    der(x) = 1.0;
  end if;
end ModeChatter;""", "ModeChatter")
    log = []
    with pytest.raises(FMICallException, match="fmi2NewDiscreteStates failed with status 3"):
        sim(path, stop_time=1.0, logger=lambda c, n, status, cat, msg:
            log.append((status, msg.decode())))
    assert [m for st, m in log if st >= FMI_ERROR] == [
        "t = 0.5: the event iteration does not settle: 3 mode changes at this instant, the "
        "last [not g] -> [g]; guards that keep changing: g"]


def test_mode_switch_that_does_not_settle_cuts_long_guard_valuations(tmp_path):
    """Six guards whose names are about 110 characters each, all undoing themselves at t = 0.5
    (2^6 modes, the guarded FMU): the bound is the consistent modes' number, at most 25, and
    each valuation and the list of guards in the message is cut at about 600 characters with
    "...", so the message stays under the logger's 2048 bytes and names the first guards."""
    name = "g_{}_" + "whose_name_is_long_enough_that_six_of_them_do_not_fit_in_the_text_of_one" \
        "_valuation_of_the_message"
    text = "class LongChatter\n" + "".join(
        f"  Real x{k}(start = 1.0, fixed = true);\n"
        f"  Boolean {name.format(k)}(start = false, fixed = true);\n" for k in range(6)) \
        + "equation\n" + "".join(
            f"  {name.format(k)} = time > 0.5 and not pre({name.format(k)});\n"
            f"  if {name.format(k)} then der(x{k}) = -1.0; else der(x{k}) = 1.0; end if;\n"
            for k in range(6)) + "end LongChatter;\n"
    path = build(tmp_path, text, "LongChatter")
    log = []
    with pytest.raises(FMICallException, match="fmi2NewDiscreteStates failed with status 3"):
        sim(path, stop_time=1.0, logger=lambda c, n, status, cat, msg:
            log.append((status, msg.decode())))
    errors = [m for st, m in log if st >= FMI_ERROR]
    assert len(errors) == 1 and len(errors[0]) < 2000
    head = ("t = 0.5: the event iteration does not settle: 26 mode changes at this instant, "
            "the last [")
    assert errors[0].startswith(head + name.format(0) + "," + name.format(1) + ",")
    src, rest = errors[0][len(head):].split("] -> [")
    dst, names = rest.split("]; guards that keep changing: ")
    assert dst.startswith("not " + name.format(0) + ",not " + name.format(1) + ",")
    assert names.startswith(name.format(0) + ", " + name.format(1) + ", ")
    for part in (src, dst, names):
        assert part.endswith("...") and len(part) == 599, part
        assert name.format(5) not in part


# --- sources, CLI, progress -------------------------------------------------------------------

def _rebuild(fmu, tmp_path, tag, **kw):
    """Unzip ``fmu``, delete its binary, rebuild it from sources/ with FMPy (CMake)."""
    from fmpy.build import build_platform_binary
    unzip = tmp_path / f"unzip_{tag}"
    with zipfile.ZipFile(fmu) as zf:
        zf.extractall(unzip)
    shutil.rmtree(unzip / "binaries")
    (tmp_path / f"build_{tag}").mkdir()
    build_platform_binary(unzip, build_dir=tmp_path / f"build_{tag}", **kw)
    return unzip


def test_source_fmu_rebuilds_with_fmpy(tmp_path):
    if not shutil.which("cmake"):
        pytest.skip("cmake not available")
    path = build(tmp_path, DAHLQUIST, "Dahlquist")
    unzip = _rebuild(path, tmp_path, "me")
    assert (unzip / "binaries" / "linux64" / "Dahlquist.so").exists()
    r = simulate_fmu(str(unzip), stop_time=1.0, relative_tolerance=1e-10, output=["x"])
    assert r["x"][-1] == pytest.approx(math.exp(-1.0), rel=1e-7)


@pytest.mark.requires_sundials
def test_cs_source_fmu_rebuilds_with_fmpy(tmp_path):
    """A Co-Simulation source FMU (ClutchBasic, both interfaces) rebuilt with fmpy.build:
    plainly (what `fmpy compile` does: no SUNDIALS) the binary loads, Model Exchange works and
    fmi2Instantiate refuses Co-Simulation with a message naming the fix; with
    cmake_options=mdae_fmu.fmu.cosim.rebuild_cmake_options() Co-Simulation works too and
    gives the original binary's result. buildDescription.xml names the definition and the
    library."""
    if not shutil.which("cmake"):
        pytest.skip("cmake not available")
    from cosim_util import build as build_shared
    from fmpy.model_description import read_build_description
    from mdae_fmu.fmu.cosim import rebuild_cmake_options
    fmu = build_shared("ClutchBasic")
    (bc,) = read_build_description(str(fmu))
    sfs = bc.sourceFileSets[0]
    assert [(d.name, d.optional) for d in sfs.preprocessorDefinitions] == \
        [("MDAE_WITH_SUNDIALS", True)]
    kw = dict(stop_time=10.0, output=["w1", "w2"], relative_tolerance=1e-10,
              output_interval=0.5)
    original = {t: simulate_fmu(str(fmu), fmi_type=t, **kw)
                for t in ("ModelExchange", "CoSimulation")}

    plain = _rebuild(fmu, tmp_path, "plain")
    me = simulate_fmu(str(plain), fmi_type="ModelExchange", **kw)
    assert np.allclose(me["w1"], original["ModelExchange"]["w1"], rtol=1e-9, atol=0)
    messages = []
    with pytest.raises(Exception, match="Failed to instantiate model"):   # fmi2Instantiate: NULL
        simulate_fmu(str(plain), fmi_type="CoSimulation",
                     logger=lambda *a: messages.append(str(a[-1])), **kw)
    assert any("without SUNDIALS CVODE" in m and "MDAE_WITH_SUNDIALS" in m for m in messages)

    full = _rebuild(fmu, tmp_path, "full", cmake_options=rebuild_cmake_options())
    for t in ("ModelExchange", "CoSimulation"):
        r = simulate_fmu(str(full), fmi_type=t, **kw)
        assert np.allclose(r["w1"], original[t]["w1"], rtol=1e-9, atol=0), t
        assert np.allclose(r["w2"], original[t]["w2"], rtol=1e-9, atol=0), t
    so = full / "binaries" / "linux64" / "ClutchBasic.so"
    nm = subprocess.run(["nm", "-D", "--defined-only", str(so)], capture_output=True,
                        text=True, check=True).stdout
    assert "fmi2DoStep" in nm and "CVode" not in nm      # SUNDIALS kept local


def test_cli_export(tmp_path, capsys):
    out = tmp_path / "cli.fmu"
    assert cli_main(["export", str(ROOT / "reference_models" / "Dahlquist.mo"),
                     "-o", str(out)]) == 0
    assert validate_fmu(str(out)) == []
    assert "wrote" in capsys.readouterr().out
    de = read_model_description(str(out)).defaultExperiment       # the defaults
    assert (float(de.startTime), float(de.stopTime), float(de.tolerance),
            float(de.stepSize)) == (0.0, 1.0, 1e-6, 0.002)
    assert cli_main(["export", str(ROOT / "reference_models" / "Dahlquist.mo"), "-o", str(out),
                     "--stop-time", "10", "--tolerance", "1e-8"]) == 0
    de = read_model_description(str(out)).defaultExperiment
    assert (float(de.startTime), float(de.stopTime), float(de.tolerance),
            float(de.stepSize)) == (0.0, 10.0, 1e-8, 0.02)
    capsys.readouterr()
    assert cli_main(["export", str(ROOT / "reference_models" / "Dahlquist.mo"), "-o", str(out),
                     "--stop-time", "-1"]) == 2
    assert "stop time" in capsys.readouterr().err
    # a model the analysis rejects: exit code 1 and a message, no traceback
    bad = tmp_path / "Bad.mo"
    bad.write_text("class Bad\n  Real x;\n  Real y;\nequation\n  der(x) = 1.0;\n"
                   "  der(x) = 2.0;\nend Bad;\n")
    assert cli_main(["export", str(bad), "-o", str(tmp_path / "bad.fmu")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip()


def test_progress_display_after_delay():
    s = StringIO()
    p = Progress(stream=s, delay=0.0, enabled=True)
    p("compiling 3 C files")
    p("compiling 3 C files")
    assert s.getvalue().count("compiling 3 C files") == 1
    quiet = StringIO()
    Progress(stream=quiet, delay=60.0, enabled=True)("anything")
    assert quiet.getvalue() == ""
    piped = StringIO()             # not a terminal: quiet unless forced (issue 16 item 4)
    Progress(stream=piped, delay=0.0)("anything")
    assert piped.getvalue() == ""


def test_inputs_discrete_equations_and_edge(tmp_path):
    """An input drives a state; a Boolean defined by a discrete equation on a relation
    (state event) and a when-clause on edge() of it."""
    path = build(tmp_path, """class Disc
  input Real u(start = 1.0);
  Real x(start = 0.0, fixed = true);
  Boolean b(start = false, fixed = true);
  Integer k(start = 0, fixed = true);
equation
  der(x) = u;
  b = x > 0.5;
  when edge(b) then
    k = pre(k) + 10;
  end when;
end Disc;""", "Disc")
    assert validate_fmu(str(path)) == []
    signal = np.array([(0.0, 2.0), (1.0, 2.0)], dtype=[("time", np.float64), ("u", np.float64)])
    r = sim(path, stop_time=1.0, input=signal, output=["x", "b", "k"], output_interval=0.01)
    t = r["time"]
    assert r["x"][-1] == pytest.approx(2.0, rel=1e-9)
    first = t[np.argmax(r["b"] > 0)]
    assert first == pytest.approx(0.25, abs=1e-8)           # x = 2 t crosses 0.5
    assert r["k"][-1] == 10                                 # edge fires once


def test_calculated_parameter_follows_its_inputs(tmp_path):
    path = build(tmp_path, """class Calc
  parameter Real k = 1.0;
  parameter Real k2 = 2.0 * k;
  Real x(start = 1.0, fixed = true);
equation
  der(x) = -k2 * x;
end Calc;""", "Calc")
    assert validate_fmu(str(path)) == []
    md = read_model_description(str(path))
    assert {v.name: v.causality for v in md.modelVariables}["k2"] == "calculatedParameter"
    r = sim(path, stop_time=1.0, start_values={"k": 0.25}, output=["x", "k2"])
    assert r["k2"][-1] == 0.5
    assert r["x"][-1] == pytest.approx(math.exp(-0.5), rel=1e-8)


def test_projection_on_a_large_pendulum(tmp_path):
    """Drift control where the constraint is large (L = 100 m): the projection reaches the
    acceptance tolerance even when rounding prevents the strict one; no error."""
    text = (ROOT / "reference_models" / "Pendulum.mo").read_text()
    text = text.replace("L = 1.0", "L = 100.0").replace("start = 0.6", "start = 60.0") \
        .replace("start = -0.8", "start = -80.0")
    path = build(tmp_path, text, "BigPendulum")
    for solver, kw in (("CVode", {"relative_tolerance": 1e-8}),
                       ("Euler", {"step_size": 1e-3, "output_interval": 1e-3})):
        r = simulate_fmu(str(path), stop_time=3.0, solver=solver, output=["x", "y"], **kw)
        res = np.abs(r["x"] ** 2 + r["y"] ** 2 - 1e4)
        assert res.max() < 1e-2          # relative 1e-6 of L^2


def test_state_start_follows_its_parameter_unless_set(tmp_path):
    """``Real x(start = x0, fixed = true)``: the host changes ``x0`` and x(0) follows it, as in
    Modelica; a start the host sets on ``x`` itself wins (docs/fmi-mapping.md,
    "Initialization"). Closed form x = x(0) exp(-t)."""
    path = build(tmp_path, """class S
  parameter Real x0 = 1.0;
  parameter Real a = 2.0;
  Real x(start = a * x0, fixed = true);
equation
  der(x) = -x;
end S;""", "S")
    for start_values, x_init in (({}, 2.0), ({"x0": 3.0}, 6.0), ({"x0": 3.0, "x": 5.0}, 5.0),
                                 ({"x": 5.0, "x0": 3.0}, 5.0)):
        r = sim(path, stop_time=1.0, output=["x"], start_values=start_values)
        assert r["x"][0] == pytest.approx(x_init, rel=1e-12), start_values
        assert r["x"][-1] == pytest.approx(x_init * math.exp(-1.0), rel=1e-7), start_values
