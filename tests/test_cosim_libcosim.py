"""Our Co-Simulation FMUs in libcosim (DNV's C++ co-simulation engine, through libcosimpy):
single FMUs against the ME result, and a two-FMU system (DC motor driving a shaft, each FMU
exported by mdae_fmu) against the energy balances and a monolithic solution."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("libcosimpy")
fmpy = pytest.importorskip("fmpy")
from fmpy import read_model_description, simulate_fmu  # noqa: E402
from libcosimpy.CosimExecution import CosimExecution  # noqa: E402
from libcosimpy.CosimLogging import CosimLogLevel, log_output_level  # noqa: E402
from libcosimpy.CosimObserver import CosimObserver  # noqa: E402
from libcosimpy.CosimSlave import CosimLocalSlave  # noqa: E402
from scipy.integrate import solve_ivp  # noqa: E402

from cosim_util import build, cleanup  # noqa: E402

NS = 1_000_000_000


@pytest.fixture(scope="module", autouse=True)
def _setup():
    log_output_level(CosimLogLevel.WARNING)
    yield
    cleanup()


def vrs(fmu) -> dict[str, int]:
    md = read_model_description(str(fmu))
    return {v.name: v.valueReference for v in md.modelVariables if v.type == "Real"}


@pytest.mark.parametrize("name,stop", [("VanDerPol", 20.0), ("BouncingBall", 2.0),
                                       ("Pendulum", 5.0), ("Stair", 10.0),
                                       ("ClutchBasic", 10.0)])
def test_single_fmu_matches_me(name, stop):
    """libcosim gives no tolerance to fmi2SetupExperiment: the FMU then uses its
    DefaultExperiment tolerance (here 1e-10)."""
    fmu = build(name)
    ref = vrs(fmu)
    names = [n for n in ref if not n.startswith("der(") and n in
             {v.name for v in read_model_description(str(fmu)).modelVariables
              if v.causality in ("local", "output")}]
    me = simulate_fmu(str(fmu), fmi_type="ModelExchange", stop_time=stop, output=names,
                      relative_tolerance=1e-11, output_interval=0.1)
    ex = CosimExecution.from_step_size(int(0.1 * NS))
    k = ex.add_local_slave(CosimLocalSlave(fmu_path=str(fmu), instance_name="m"))
    obs = CosimObserver.create_last_value()
    ex.add_observer(obs)
    worst = 0.0
    for _ in range(int(round(stop / 0.1))):
        assert ex.step(1)
        t = ex.status().current_time / NS
        row = np.nonzero(np.abs(me["time"] - t) <= 1e-12 * max(1.0, t))[0][-1]
        got = obs.last_real_values(k, [ref[n] for n in names])
        for n, x in zip(names, got):
            scale = max(1.0, float(np.max(np.abs(me[n]))))
            worst = max(worst, abs(x - me[n][row]) / scale)
    assert worst <= 1e-5


def motor_and_shaft(step: float, stop: float = 10.0):
    """Run CsMotor (torque output, speed input) and CsShaft (torque input, speed output)
    connected both ways in libcosim; the final values of both FMUs by name."""
    motor, shaft = build("CsMotor"), build("CsShaft")
    vm, vs = vrs(motor), vrs(shaft)
    ex = CosimExecution.from_step_size(int(round(step * NS)))
    m = ex.add_local_slave(CosimLocalSlave(fmu_path=str(motor), instance_name="motor"))
    s = ex.add_local_slave(CosimLocalSlave(fmu_path=str(shaft), instance_name="shaft"))
    ex.connect_real_variables(m, vm["tau"], s, vs["tau"])
    ex.connect_real_variables(s, vs["w"], m, vm["w"])
    obs = CosimObserver.create_last_value()
    ex.add_observer(obs)
    assert ex.simulate_until(int(round(stop * NS)))
    assert abs(ex.status().current_time / NS - stop) < 1e-9
    mv = dict(zip(vm, obs.last_real_values(m, list(vm.values()))))
    sv = dict(zip(vs, obs.last_real_values(s, list(vs.values()))))
    return mv, sv


def monolithic(stop: float = 10.0) -> tuple[float, float]:
    """The coupled motor + shaft ODE solved in one piece (rtol 1e-12): (i, w) at ``stop``."""
    V, R, L, k, J, d = 2.0, 1.0, 0.05, 0.5, 0.5, 0.1

    def f(t, y):
        i, w = y
        return [(V - R * i - k * w) / L, (k * i - d * w) / J]
    sol = solve_ivp(f, (0.0, stop), [0.0, 0.0], method="Radau", rtol=1e-12, atol=1e-14)
    return float(sol.y[0, -1]), float(sol.y[1, -1])


def test_two_fmu_system_conserves_energy_and_converges():
    i_ref, w_ref = monolithic()
    errors = []
    for step in (1e-2, 1e-3):
        mv, sv = motor_and_shaft(step)
        # each FMU's own energy balance, exact up to the integrator tolerance (restarted at
        # every step by the new input: the local errors add up over 1e4 steps)
        assert abs(sv["Ekin"] + sv["Ediss"] - sv["Win"]) <= 1e-6 * sv["Win"]
        assert abs(mv["Eres"] + mv["Emag"] + mv["Wmech"] - mv["Esup"]) <= 1e-6 * mv["Esup"]
        # the mechanical work leaving the motor reaches the shaft, up to the coupling delay
        assert abs(mv["Wmech"] - sv["Win"]) <= 20 * step * sv["Win"]
        # outputs reached the inputs: the speed converges to the monolithic solution
        assert sv["w"] > 1.0
        errors.append(abs(sv["w"] - w_ref) / w_ref)
        assert abs(mv["i"] - i_ref) <= 20 * step * abs(i_ref)
    # first-order convergence of the explicit coupling (Jacobi, zero-order hold)
    assert errors[1] <= 1e-2
    assert 5.0 <= errors[0] / errors[1] <= 20.0
