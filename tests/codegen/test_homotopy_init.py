"""Initialization by homotopy continuation (Modelica 3.6 §3.7.4.4; templates/mdae_runtime.c,
``homotopy_initialization``): ``homotopy(actual, simplified)`` is ``lambda * actual + (1 -
lambda) * simplified``, the initial system is solved from lambda = 0 to 1, and lambda is 1
during the simulation. OpenModelica's equations/ticket-5206 in small: a saturation that is
flat in the unknowns at their start values.

Oracles: the closed-form steady state (x = y_ref / k, y0 = y_ref + x) and scipy's integration
of the actual (saturated) dynamics from it.
"""

import zipfile

import pytest

fmpy = pytest.importorskip("fmpy")
integrate = pytest.importorskip("scipy.integrate")

from fmu_files import export_text, failed_run_log  # noqa: E402

SATURATED = """\
model SatInit
  parameter Real k = 10;
  parameter Real y_ref = 8;
  parameter Real y0(fixed = false, start = 8);
  Real x(start = 1);
  Real u(start = 2);
  Real usat;
equation
  der(x) = usat - x;
  u = y0 - k * x + 10 * time;
  usat = homotopy(actual = if u > 1 then 1 else if u < 0 then 0 else u, simplified = u);
initial equation
  der(x) = 0;
  k * x = y_ref;
end SatInit;
"""


def _continuation_flag(fmu) -> str:
    """MDAE_HOMOTOPY of the FMU's config.h: 1 when the initialization runs the continuation."""
    with zipfile.ZipFile(fmu) as z:
        config = z.read("sources/config.h").decode()
    return config.split("#define MDAE_HOMOTOPY ")[1].split()[0]


def _saturate(u):
    return min(1.0, max(0.0, u))


@pytest.mark.parametrize("y_ref", [8.0, 5.0])
def test_homotopy_continuation_reaches_the_steady_state(tmp_path, y_ref):
    fmu = export_text(tmp_path, SATURATED, "SatInit")
    assert _continuation_flag(fmu) == "1"
    res = fmpy.simulate_fmu(str(fmu), start_values={"y_ref": y_ref}, stop_time=1.0,
                            output=["x", "y0", "usat"], relative_tolerance=1e-10,
                            output_interval=0.05)
    x0 = y_ref / 10
    assert res["x"][0] == pytest.approx(x0, abs=1e-9)
    assert res["y0"][0] == res["y0"][-1] == pytest.approx(y_ref + x0, abs=1e-9)
    assert res["usat"][0] == pytest.approx(x0, abs=1e-9)
    # afterwards lambda = 1: the actual, saturated law drives x (usat reaches 1)
    sol = integrate.solve_ivp(
        lambda t, x: [_saturate(y_ref + x0 - 10 * x[0] + 10 * t) - x[0]], (0.0, 1.0), [x0],
        rtol=1e-11, atol=1e-13, dense_output=True, max_step=1e-3)
    for t, x in zip(res["time"], res["x"]):
        assert x == pytest.approx(sol.sol(t)[0], abs=1e-6)
    assert max(res["usat"]) == pytest.approx(1.0)


def test_without_homotopy_the_flat_start_is_reported(tmp_path):
    """The same model without homotopy(): the relations taken at the start values (u = 2 >
    1) saturate usat, no row then depends on y0, and the message says so."""
    text = SATURATED.replace("homotopy(actual = ", "(").replace(", simplified = u)", ")")
    assert "homotopy" not in text
    fmu = export_text(tmp_path, text, "SatInit")
    assert _continuation_flag(fmu) == "0"   # generic code naming the slot does not count
    log = failed_run_log(fmu, "fmi2ExitInitializationMode")
    assert any("no equation depends on y0" in m for m in log), log
