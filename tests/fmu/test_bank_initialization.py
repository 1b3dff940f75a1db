"""The diode bank of two diodes started with its capacitors at -1 V (benchmarks/gen_multimode
``diode_bank(2)``): both diodes conduct at t = 0 (pre(s) = 0), and its initial system holds
the consistency rows of every mode, the non-conducting modes' rows vanishing and the diode
currents (states of another mode) read by no row of the conducting one. The Gauss-Newton
normal matrix was singular there and the initialization failed on both the guarded and the
per-mode FMU, blaming the fixed start values (issue 26); the runtime now steps on the
independent rows (templates/mdae_runtime.c, ``mdae_gauss_newton_rows``).

Closed form (both diodes conducting, u_k = 0): the capacitors are in parallel, v0 = v1 = V = v
with C = C0 + C1, and with the source, L j' = E - R j - v, j = C v', a series RLC circuit:
v(t) = E + exp(-a t) (A cos(w t) + B sin(w t)), a = R/(2L), w = sqrt(1/(L C) - a^2),
A = v(0) - E, B = a A / w (j(0) = 0), so j(t) = -A exp(-a t) sin(w t) / (L w) and
i_k = C_k v' = (C_k / C) j. The current returns to 0 at t_off = pi / w, where both diodes
turn off together (s_k = i_k < 0): then i_k = j = 0, v_k keep v(t_off), the source gives
V = E and the diode voltages are u_k = s_k = E - v(t_off)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("dd")
from fmpy import extract, read_model_description, simulate_fmu  # noqa: E402
from fmpy.fmi2 import FMU2Model  # noqa: E402

from mdae_fmu.fmu.export import export  # noqa: E402

# the bank is exported with both interfaces (fmi_type="both": CVODE embedded)
pytestmark = pytest.mark.requires_sundials

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from gen_multimode import diode_bank  # noqa: E402

E, R, L, C0, C1, V0 = 1.0, 1.0, 1.0, 0.1, 0.2, -1.0
A_DAMP = R / (2 * L)
OMEGA = math.sqrt(1 / (L * (C0 + C1)) - A_DAMP ** 2)
T_OFF = math.pi / OMEGA
NAMES = ["j", "V", "v0", "v1", "i0", "i1", "u0", "u1"]


def exact(t: float) -> dict[str, float]:
    """The bank's values at time t (module docstring), the right limits at t_off."""
    a0 = V0 - E
    b0 = A_DAMP * a0 / OMEGA
    tc = min(t, T_OFF)
    v = E + math.exp(-A_DAMP * tc) * (a0 * math.cos(OMEGA * tc) + b0 * math.sin(OMEGA * tc))
    if t >= T_OFF:
        return dict(j=0.0, V=E, v0=v, v1=v, i0=0.0, i1=0.0, u0=E - v, u1=E - v)
    j = -a0 * math.exp(-A_DAMP * t) * math.sin(OMEGA * t) / (L * OMEGA)
    return dict(j=j, V=v, v0=v, v1=v, i0=C0 / (C0 + C1) * j, i1=C1 / (C0 + C1) * j,
                u0=0.0, u1=0.0)


@pytest.fixture(scope="module")
def fmus(tmp_path_factory):
    """bank2 exported (the guarded schedule), ME and CS."""
    d = tmp_path_factory.mktemp("bank2")
    return {"guarded": export(diode_bank(2), d / "bank2_guarded.fmu", fmi_type="both",
                              progress=False)}


PATHS = ["guarded"]


@pytest.mark.parametrize("path", PATHS)
def test_bank2_initial_values(fmus, path):
    """Right after fmi2ExitInitializationMode: the fixed starts kept (v_k = -1, j = 0), the
    conducting mode's consistency rows solved (V = v_k, u_k = 0, i_k = 0), the flags on."""
    md = read_model_description(str(fmus[path]))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    fmu = FMU2Model(guid=md.guid, unzipDirectory=extract(str(fmus[path])),
                    modelIdentifier=md.modelExchange.modelIdentifier, instanceName="b")
    fmu.instantiate()
    try:
        fmu.setupExperiment(startTime=0.0)
        fmu.enterInitializationMode()
        fmu.exitInitializationMode()
        values = dict(zip(NAMES, fmu.getReal([vr[n] for n in NAMES])))
        assert list(fmu.getBoolean([vr["g0"], vr["g1"]])) == [True, True]
    finally:
        fmu.freeInstance()
    want = exact(0.0)
    for name in NAMES:
        assert values[name] == pytest.approx(want[name], abs=1e-12), name


@pytest.mark.parametrize("fmi_type,tol", [("ModelExchange", 1e-7), ("CoSimulation", 1e-5)],
                         ids=["me", "cs"])
@pytest.mark.parametrize("path", PATHS)
def test_bank2_follows_the_closed_form(fmus, path, fmi_type, tol):
    """Three seconds: the charging RLC arc, the joint turn-off at t_off = pi / w (the ME
    run's event row), the frozen capacitor voltages after it, every value against the closed
    form (module docstring); rows within 1e-6 of t_off are compared by their side."""
    r = simulate_fmu(str(fmus[path]), fmi_type=fmi_type, stop_time=3.0, output_interval=0.05,
                     relative_tolerance=1e-10 if fmi_type == "ModelExchange" else 1e-8,
                     output=NAMES, record_events=True)
    if fmi_type == "ModelExchange":
        at = np.flatnonzero(np.diff(r["time"]) == 0)
        assert len(at) == 1 and abs(r["time"][at[0]] - T_OFF) < 1e-8
    for k, t in enumerate(r["time"]):
        if abs(t - T_OFF) < 1e-6:
            continue
        want = exact(t)
        for name in NAMES:
            assert r[name][k] == pytest.approx(want[name], abs=tol), (name, t)
    assert r["v0"][-1] == pytest.approx(exact(3.0)["v0"], abs=tol)
    assert exact(3.0)["v0"] == pytest.approx(1.8175745, abs=1e-6)   # 1 + 2 exp(-pi a / w)
