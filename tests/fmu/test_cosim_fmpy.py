"""Co-Simulation FMUs (embedded CVODE, docs/cosimulation.md) driven by FMPy.

Oracles: the Model Exchange interface of the same FMU integrated by FMPy's CVode at tight
tolerance (an independent integrator loop), closed forms (bouncing ball bounce times and
velocities, shaft speed under a constant torque, counters), energy balances, and bit
equality for rollback. Every FMU here is built once per session (tests/cosim_util.py)."""

from __future__ import annotations

import math
import struct
import subprocess
import zipfile

import numpy as np
import pytest

fmpy = pytest.importorskip("fmpy")
from fmpy import read_model_description, simulate_fmu  # noqa: E402
from fmpy.fmi2 import fmi2LastSuccessfulTime, fmi2Terminated  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402

from cosim_util import (REFERENCE_MODELS, SINGLE_MODE, TOLERANCE, build,  # noqa: E402
                        close_slave, cs_vs_me_errors, input_table, open_slave, recorded,
                        reference_entry, reference_stop)

pytestmark = pytest.mark.requires_sundials
OK, WARNING, DISCARD, ERROR = 0, 1, 2, 3

# models whose ME oracle or CS run fails on a known run-time bug: name -> description, marked
# xfail(strict=True) in the CS-vs-ME tests (FMPy and libcosim). Empty since the multimode
# fixes (CupAndBallFirstOrder's event cycling, AirBrake's assertion: 1f71d4f, b0ad077).
ME_BUGS: dict[str, str] = {}


def at_time(res, t):
    """Row of the right limit at ``t`` (last row with that time)."""
    # the grid times of FMPy's ME output and CS steps are the same doubles; the tolerance
    # must stay below the event hysteresis (1e-10): an event at 5 + 1e-10 is after the
    # communication point 5
    idx = np.nonzero(np.abs(res["time"] - t) <= 1e-12 * max(1.0, abs(t)))[0]
    assert len(idx), f"no row at t = {t}"
    return res[idx[-1]]


# ---------------------------------------------------------------------------------------------
# static properties
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmi_type", ["cs", "both"])
def test_validates(fmi_type):
    fmu = build("BouncingBall", fmi_type)
    assert validate_fmu(str(fmu)) == []
    md = read_model_description(str(fmu))
    assert md.coSimulation is not None
    assert (md.modelExchange is not None) == (fmi_type == "both")
    cs = md.coSimulation
    assert cs.canHandleVariableCommunicationStepSize and cs.canGetAndSetFMUstate
    assert not cs.canInterpolateInputs and cs.maxOutputDerivativeOrder == 0


@pytest.mark.parametrize("name", SINGLE_MODE)
def test_reference_models_validate(name):
    assert validate_fmu(str(build(name))) == []


def test_binary_is_self_contained(tmp_path):
    """ldd: libc and libm only; the dynamic symbol table exports only fmi2* functions."""
    fmu = build("VanDerPol")
    with zipfile.ZipFile(fmu) as z:
        so = [n for n in z.namelist() if n.startswith("binaries/linux64/")][0]
        z.extract(so, tmp_path)
    lib = tmp_path / so
    out = subprocess.run(["ldd", str(lib)], capture_output=True, text=True, check=True).stdout
    libs = {line.split()[0] for line in out.splitlines() if line.strip()}
    allowed = {"linux-vdso.so.1", "libc.so.6", "libm.so.6", "/lib64/ld-linux-x86-64.so.2"}
    assert libs <= allowed, libs
    nm = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True,
                        text=True, check=True).stdout
    exported = [line.split()[-1] for line in nm.splitlines() if line.strip()]
    assert exported and all(s.startswith("fmi2") for s in exported), \
        [s for s in exported if not s.startswith("fmi2")]
    assert "fmi2DoStep" in exported and "CVode" not in exported


def test_interface_types_are_enforced():
    """A CS-only FMU cannot be instantiated as ME and vice versa (NULL + log)."""
    from fmpy.fmi2 import FMU2Model
    for fmi_type, wrong in (("cs", "me"), ("me", "cs")):
        fmu = build("Dahlquist", fmi_type)
        md = read_model_description(str(fmu))
        unzip = fmpy.extract(str(fmu))
        ident = (md.coSimulation or md.modelExchange).modelIdentifier
        cls = FMU2Model if wrong == "me" else fmpy.fmi2.FMU2Slave
        inst = cls(guid=md.guid, unzipDirectory=unzip, modelIdentifier=ident,
                   instanceName="wrong")
        with pytest.raises(Exception, match="instantiate"):
            inst.instantiate()
        inst.freeLibrary()


# ---------------------------------------------------------------------------------------------
# CS against ME (FMPy CVode, tight tolerances) at every communication point
# ---------------------------------------------------------------------------------------------

def cs_cases(bugs=ME_BUGS):
    """(model, communication step) for every accepted reference model and both steps of
    issue 7, xfail where the model has a known run-time bug."""
    out = []
    for name in REFERENCE_MODELS:
        for step in (1e-3, 0.1):
            marks = [pytest.mark.xfail(strict=True, reason=bugs[name])] if name in bugs else []
            out.append(pytest.param(name, step, marks=marks, id=f"{name}-{step:g}"))
    return out


@pytest.mark.parametrize("name,step", cs_cases())
def test_cs_matches_me(name, step):
    """Issue 7: the CS FMU in FMPy (CoSimulation, communication step ``step``, the whole
    reference horizon) matches the ME result (FMPy CVode, rtol 1e-12) at every communication
    point within 1e-5 relative (`cosim_util.relative_errors`: an absolute floor of 1e-3 of
    the signal's largest magnitude only for signals that reach zero). ClutchGuarded: the
    Boolean input switches at 5 and 7 through FMPy's input table."""
    fmu = build(name)
    names = recorded(fmu)
    stop = reference_stop(name)
    cs = simulate_fmu(str(fmu), fmi_type="CoSimulation", stop_time=stop, output=names,
                      relative_tolerance=TOLERANCE, output_interval=step,
                      input=input_table(name))
    assert len(cs) == int(round(stop / step)) + 1
    worst = cs_vs_me_errors(name, cs["time"], {v: cs[v] for v in names})
    bad = {v: w for v, w in worst.items() if w[0] > 1e-5}
    assert not bad, bad


def test_events_are_located_inside_steps():
    """Step 0.3: the bounces (closed form) are located to 1e-6, not rounded to the grid; the
    velocities at the communication points follow the closed form."""
    slave = open_slave(build("BouncingBall"), stop_time=2.1, tolerance=1e-10,
                       logging=True)
    t, h, rows = 0.0, 0.3, []
    while t < 2.0:
        step = min(h, 2.0 - t)
        assert slave.call("doStep", t, step) == OK
        t += step
        rows.append((t, *slave.get(["h", "v"])))
    close_slave(slave)
    bounces = [float(m[2].split(":")[0].split("=")[1]) for m in slave.messages
               if "state event" in m[2] and "states changed" in m[2]]
    exact = reference_entry("BouncingBall")["events"]
    assert len(bounces) == len(exact)
    for got, ref in zip(bounces, exact):
        assert abs(got - ref) <= 1e-6, (got, ref)
    g, e = 9.81, 0.7
    for (t, hh, v) in rows:
        tb, vb = exact[0], -g * exact[0]
        k = 0
        while k + 1 < len(exact) and exact[k + 1] <= t:
            k += 1
        tb, vb = exact[k], e * g * exact[0] * e ** k
        if t < exact[0]:
            tb, vb, h0 = 0.0, 0.0, 1.0
        else:
            h0 = 0.0
        assert abs(v - (vb - g * (t - tb))) <= 1e-6
        assert abs(hh - (h0 + vb * (t - tb) - g / 2 * (t - tb) ** 2)) <= 1e-6


def test_time_events_exact_with_coarse_steps():
    """Stair with step 0.3 (no grid point on the integers): x(t) = n(n-1)/2 + n(t - n)."""
    r = simulate_fmu(str(build("Stair")), fmi_type="CoSimulation", stop_time=9.0,
                     output_interval=0.3, output=["x", "n"], relative_tolerance=1e-8)
    for row in r:
        t = row["time"]
        n = math.floor(t + 1e-12)
        assert row["n"] == n
        assert abs(row["x"] - (n * (n - 1) / 2 + n * (t - n))) <= 1e-7


# ---------------------------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------------------------

def test_real_input_takes_effect_at_next_step():
    """CsShaft: a constant torque from t = 0.5 on; w = tau/d (1 - exp(-d (t - 0.5)/J)), and the
    energy balance kinetic + dissipated = work of the input holds."""
    sig = np.array([(0.0, 0.0), (0.5, 0.0), (0.5, 1.5)], dtype=[("time", float), ("tau", float)])
    r = simulate_fmu(str(build("CsShaft")), fmi_type="CoSimulation", stop_time=3.0,
                     output_interval=0.1, input=sig, relative_tolerance=1e-10,
                     output=["w", "Ekin", "Ediss", "Win"])
    J, d = 0.5, 0.1
    for row in r:
        t = row["time"]
        ref = 0.0 if t <= 0.5 else 1.5 / d * (1 - math.exp(-d * (t - 0.5) / J))
        assert abs(row["w"] - ref) <= 1e-8
        assert abs(row["Ekin"] + row["Ediss"] - row["Win"]) <= 1e-8


def test_boolean_input_triggers_the_event_cascade():
    """CsToggle: each rising edge of the Boolean input increments n at the start of the next
    step (when-clause fired by an input event), x integrates n."""
    sig = np.array([(0.0, False), (0.25, True), (0.5, False), (0.75, True)],
                   dtype=[("time", float), ("on", bool)])
    r = simulate_fmu(str(build("CsToggle")), fmi_type="CoSimulation", stop_time=1.0,
                     output_interval=0.1, input=sig, output=["n", "x"])
    for row in r:
        t = row["time"]
        # the input set at a communication point acts from the step that starts there: the
        # row recorded at 0.25 (end of the previous step) still has n = 0
        n = int(t > 0.25 + 1e-12) + int(t > 0.75 + 1e-12)
        x = max(0.0, t - 0.25) + max(0.0, t - 0.75)
        assert row["n"] == n, t
        assert abs(row["x"] - x) <= 1e-9, t


def test_terminate_ends_the_step_early():
    slave = open_slave(build("CsTerminate"), stop_time=1.0)
    assert slave.call("doStep", 0.0, 0.5) == OK
    assert slave.call("doStep", 0.5, 0.5) == DISCARD
    assert slave.fmu.getBooleanStatus(fmi2Terminated)
    assert abs(slave.fmu.getRealStatus(fmi2LastSuccessfulTime) - 0.55) <= 1e-9
    assert abs(slave.get(["x"])[0] - 0.55) <= 1e-9
    assert slave.call("doStep", 0.55, 0.1) == ERROR
    close_slave(slave)


# ---------------------------------------------------------------------------------------------
# rollback
# ---------------------------------------------------------------------------------------------

def bits(values):
    return struct.pack(f"{len(values)}d", *values)


@pytest.mark.parametrize("name", ["BouncingBall", "VanDerPol", "Pendulum", "Stair"])
def test_rollback_is_bit_identical(name):
    """fmi2GetFMUstate, steps, fmi2SetFMUstate, the same steps again: identical bits; also
    through fmi2SerializeFMUstate/fmi2DeSerializeFMUstate."""
    fmu = build(name)
    names = recorded(fmu)
    slave = open_slave(fmu, stop_time=10.0, tolerance=1e-6)
    t, h = 0.0, 0.3
    for _ in range(2):
        assert slave.call("doStep", t, h) == OK
        t += h
    state = slave.fmu.getFMUstate()
    serialized = slave.fmu.serializeFMUstate(state)

    def run():
        tt, out = t, []
        for _ in range(4):
            assert slave.call("doStep", tt, h) == OK
            tt += h
            out.append(bits(slave.get(names)))
        return out

    first = run()
    slave.fmu.setFMUstate(state)
    second = run()
    restored = slave.fmu.deSerializeFMUstate(serialized)
    slave.fmu.setFMUstate(restored)
    third = run()
    assert first == second == third
    slave.fmu.freeFMUstate(state)
    slave.fmu.freeFMUstate(restored)
    close_slave(slave)


def test_rollback_with_input_change():
    fmu = build("CsShaft")
    slave = open_slave(fmu, stop_time=10.0)
    tau = slave.vrs["tau"]
    assert slave.call("doStep", 0.0, 0.5) == OK
    state = slave.fmu.getFMUstate()
    outs = []
    for _ in range(2):
        slave.fmu.setReal([tau], [2.0])
        assert slave.call("doStep", 0.5, 0.25) == OK
        outs.append(bits(slave.get(["w", "phi", "Win"])))
        slave.fmu.setFMUstate(state)
    assert outs[0] == outs[1]
    close_slave(slave)


# ---------------------------------------------------------------------------------------------
# misuse
# ---------------------------------------------------------------------------------------------

def test_bad_use_returns_error_with_message():
    fmu = build("CsShaft")
    s = open_slave(fmu, stop_time=2.0)
    assert s.call("doStep", 0.0, -0.1) == ERROR
    assert any("step size" in m[2] for m in s.errors())
    n = len(s.messages)
    assert s.call("doStep", 0.0, 0.1) == ERROR          # a step after an error
    assert any("illegal call sequence" in m[2] for m in s.messages[n:])
    close_slave(s)

    s = open_slave(fmu, stop_time=2.0)
    assert s.call("setReal", [s.vrs["tau"]], [float("nan")]) == ERROR
    assert any("not finite" in m[2] for m in s.errors())
    close_slave(s)

    s = open_slave(fmu, stop_time=2.0)
    assert s.call("doStep", 0.0, float("nan")) == ERROR
    close_slave(s)

    s = open_slave(fmu, stop_time=2.0)
    assert s.call("doStep", 0.0, 0.5) == OK
    assert s.fmu.getRealStatus(fmi2LastSuccessfulTime) == 0.5
    assert not s.fmu.getBooleanStatus(fmi2Terminated)
    assert s.call("doStep", 0.25, 0.5) == ERROR        # not the current communication point
    assert any("currentCommunicationPoint" in m[2] for m in s.errors())
    close_slave(s)

    s = open_slave(fmu, stop_time=2.0)
    assert s.call("doStep", 0.0, 2.5) == ERROR          # beyond the stop time
    assert any("stop time" in m[2] for m in s.errors())
    close_slave(s)

    for f in ("fmi2SetRealInputDerivatives", "fmi2GetRealOutputDerivatives"):
        s = open_slave(fmu, stop_time=2.0)
        from ctypes import c_double, c_int, c_uint
        vr, order, val = (c_uint * 1)(s.vrs["tau"]), (c_int * 1)(1), (c_double * 1)(0.0)
        assert s.call(f, s.fmu.component, vr, 1, order, val) == ERROR
        assert any("Derivatives" in m[2] for m in s.errors())
        close_slave(s)

    s = open_slave(fmu, stop_time=2.0)
    assert s.call("fmi2CancelStep", s.fmu.component) == ERROR
    close_slave(s)
