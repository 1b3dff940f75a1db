"""The initial system of a multimode FMU holds the consistency equations of the mode the FMU
starts in (issue 24: a fixed = true state was moved at initialization).

The ideal clutch, engaged when the Boolean ``g`` holds (docs/theory.md §13.1): engaged, the
constraint w1 = w2 is a consistency equation of the mode. Which mode is initial is decided at
run time (here: the host sets the input ``g`` before initialization), so the export-time
initial mode's equations are not enough: the FMU used to start engaged with w1 = 1, w2 = 1.5
and the first projection moved both to 1.25, the fixed w1 included.

Closed forms: engaged, j1 w1' = -k1 w1 + f1, j2 w2' = -k2 w2 - f1, w1 = w2 = w, so
(j1 + j2) w' = -(k1 + k2) w and w(t) = w(0) exp(-(k1 + k2) t / (j1 + j2)); released, each
shaft decays alone, w_i(t) = w_i(0) exp(-k_i t / j_i). Modelica 3.6 §8.6: a fixed start
value is an initial equation; with the mode's constraint it may over-determine the
initialization, which is an error naming the equation and the fixed values, never a move."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fmpy import extract, read_model_description, simulate_fmu
from fmpy.fmi2 import FMU2Model

from fmu_files import export_text, failed_run_log

J1, J2, K1, K2 = 1.0, 2.0, 0.01, 0.0125

CLUTCH = """class ClutchInput "engage signal as a Boolean input"
  parameter Real j1 = 1.0;
  parameter Real j2 = 2.0;
  parameter Real k1 = 0.01;
  parameter Real k2 = 0.0125;
  input Boolean g(start = false);
  Real w1(start = 1.0, fixed = true);
  Real w2(start = 1.5{fixed2});
  Real f1;
  Real f2;
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
end ClutchInput;
"""

# engaged from t = 0 by a guard on time (the export-time initial mode is the engaged one)
ENGAGED = """class ClutchEngaged
  parameter Real j1 = 1.0;
  parameter Real j2 = 2.0;
  parameter Real k1 = 0.01;
  parameter Real k2 = 0.0125;
  Boolean g;
  Real w1(start = 1.0, fixed = true);
  Real w2(start = 0.0);
  Real f1;
  Real f2;
equation
  g = time <= 7.0;
  j1 * der(w1) = -k1 * w1 + f1;
  j2 * der(w2) = (-k2) * w2 + f2;
  0.0 = if g then w1 - w2 else f1;
  f1 + f2 = 0.0;
end ClutchEngaged;
"""

def _engaged(w0: float, t):
    return w0 * np.exp(-(K1 + K2) * np.asarray(t) / (J1 + J2))


def _initial(fmu, start: dict) -> list[float]:
    """w1, w2 right after fmi2ExitInitializationMode with ``start`` set by the host."""
    md = read_model_description(str(fmu))
    vr = {v.name: v for v in md.modelVariables}
    inst = FMU2Model(guid=md.guid, unzipDirectory=extract(str(fmu)),
                     modelIdentifier=md.modelExchange.modelIdentifier, instanceName="i")
    inst.instantiate()
    try:
        inst.setupExperiment(startTime=0.0)
        for name, value in start.items():
            if isinstance(value, bool):
                inst.setBoolean([vr[name].valueReference], [value])
            else:
                inst.setReal([vr[name].valueReference], [value])
        inst.enterInitializationMode()
        inst.exitInitializationMode()
        return list(inst.getReal([vr["w1"].valueReference, vr["w2"].valueReference]))
    finally:
        inst.freeInstance()


def test_host_selected_mode_keeps_the_fixed_state(tmp_path):
    """g = true set by the host: w2 (free) takes w1's fixed start, w1 stays 1; then the
    engaged closed form."""
    fmu = export_text(tmp_path, CLUTCH.format(fixed2=""), "ClutchInput")
    assert _initial(fmu, {"g": True}) == pytest.approx([1.0, 1.0], abs=1e-12)
    r = simulate_fmu(str(fmu), start_values={"g": True}, stop_time=2.0, output_interval=0.5,
                     relative_tolerance=1e-10, output=["w1", "w2"])
    for name in ("w1", "w2"):
        assert r[name] == pytest.approx(_engaged(1.0, r["time"]), rel=1e-7)


def test_host_selected_mode_over_determined_is_an_error(tmp_path):
    """g = true with w1 and w2 both fixed (1 and 1.5): w1 = w2 cannot hold, the
    initialization fails naming the equation, its mode and the fixed start values."""
    fmu = export_text(tmp_path, CLUTCH.format(fixed2=", fixed = true"), "ClutchBoth")
    log = failed_run_log(fmu, "fmi2ExitInitializationMode", start_values={"g": True},
                         stop_time=1.0)
    named = [m for m in log if "over-determines the initialization" in m]
    assert named, log
    assert "equation e3 (" in named[0] and "ClutchBoth.mo:15:5)" in named[0]
    assert "mode [g]" in named[0]
    assert "fixed start values of w1, w2" in named[0] and "residual -0.5" in named[0]


def test_default_mode_unchanged(tmp_path):
    """g = false (its start): released, no constraint; each shaft decays from its start."""
    fmu = export_text(tmp_path, CLUTCH.format(fixed2=""), "ClutchInput")
    r = simulate_fmu(str(fmu), stop_time=2.0, output_interval=0.5, relative_tolerance=1e-10,
                     output=["w1", "w2"])
    assert r["w1"] == pytest.approx(np.exp(-K1 / J1 * r["time"]), rel=1e-7)
    assert r["w2"] == pytest.approx(1.5 * np.exp(-K2 / J2 * r["time"]), rel=1e-7)


def test_engaged_at_start_free_state_follows_the_fixed_one(tmp_path):
    """Engaged from t = 0 by the time guard: w2 = w1 = the fixed start, also when the host
    sets another start value for w1 (2.0); the engaged closed form up to t = 2."""
    fmu = export_text(tmp_path, ENGAGED, "ClutchEngaged")
    assert _initial(fmu, {}) == pytest.approx([1.0, 1.0], abs=1e-12)
    assert _initial(fmu, {"w1": 2.0}) == pytest.approx([2.0, 2.0], abs=1e-12)
    r = simulate_fmu(str(fmu), start_values={"w1": 2.0}, stop_time=2.0, output_interval=0.5,
                     relative_tolerance=1e-10, output=["w1", "w2"])
    assert r["w2"] == pytest.approx(_engaged(2.0, r["time"]), rel=1e-7)
    assert math.isclose(r["w1"][-1], 2.0 * math.exp(-2 * (K1 + K2) / (J1 + J2)), rel_tol=1e-7)


def test_python_backend_host_selected_mode(tmp_path):
    """The python backend's Co-Simulation FMU (the same initial system, evaluated after the
    discrete equations): g = true set by the host gives w1 = w2 = 1, then the engaged closed
    form; g = false the two released decays."""
    pytest.importorskip("pythonfmu")
    fmu = export_text(tmp_path, CLUTCH.format(fixed2=""), "ClutchInput", backend="python",
                      fmi_type="cs")
    r = simulate_fmu(str(fmu), start_values={"g": True}, stop_time=2.0, output_interval=0.5,
                     output=["w1", "w2"])
    for name in ("w1", "w2"):
        assert r[name] == pytest.approx(_engaged(1.0, r["time"]), rel=1e-6)
    r = simulate_fmu(str(fmu), stop_time=2.0, output_interval=0.5, output=["w1", "w2"])
    assert r["w1"] == pytest.approx(np.exp(-K1 / J1 * r["time"]), rel=1e-6)
    assert r["w2"] == pytest.approx(1.5 * np.exp(-K2 / J2 * r["time"]), rel=1e-6)


INIT_ALGEBRAIC = """class InitAlg "an initial equation on a variable that a linear block computes"
  Real x(start = 1.0);
  Real y;
  Real z;
equation
  der(x) = -y;
  y + z = x;
  y - z = 0.5 * x;
initial equation
  y = 2.0;
end InitAlg;
"""


def test_initial_equation_on_a_linear_block_variable(tmp_path):
    """The initial system's residual runs the schedule (y is computed by the 2x2 linear block
    {y + z = x, y - z = x/2}), whose solver used the Gauss-Newton's scratch: the
    initialization failed ("residual -3.5"). y = 3x/4 = 2 gives x(0) = 8/3, then
    x(t) = 8/3 exp(-3t/4)."""
    fmu = export_text(tmp_path, INIT_ALGEBRAIC, "InitAlg")
    r = simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.5, relative_tolerance=1e-10,
                     output=["x", "y"])
    assert r["x"] == pytest.approx(8 / 3 * np.exp(-0.75 * r["time"]), rel=1e-7)
    assert r["y"][0] == pytest.approx(2.0, abs=1e-10)
