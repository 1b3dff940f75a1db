"""Blocks whose Jacobian is numerically singular at a point of the trajectory (issue 13:
MSL 3.1 ShowSaturatingInductor, OpenModelica's NBackend/basic_IR): the runtime's
``singular_step`` (templates/mdae_runtime.c) takes the regularized least-squares step there,
so an unknown the equations leave free at that point keeps its guess and the others are
solved; an inconsistent singular system is still an error (tests/fmu/test_fmu_runtime.py,
``SINGULAR``), whose message names the unknowns the block leaves undetermined and the zero
parameter that typically causes it (MSL 3.1 HeatingNPN_OrGate, every capacitance 0).

Oracles: scipy's root of the saturating coil's flux law, the closed forms x = exp(t^2/4) and
of an RC charge.
"""

import math

import pytest

fmpy = pytest.importorskip("fmpy")
optimize = pytest.importorskip("scipy.optimize")

from fmu_files import export_text  # noqa: E402

# MSL 3.1 SaturatingInductor's equations: at i = 0 (Psi = 0, t = 0 here) the inductance L is
# not determined (0 = 0) and the Newton block {i, L} has a singular Jacobian
COIL = """\
model SaturatingCoil
  parameter Real Lzer = 2;
  parameter Real Linf = 0.5;
  parameter Real Ipar = 0.25;
  Real Psi(start = 0, fixed = true);
  Real i;
  Real L(start = 2);
equation
  der(Psi) = cos(time);
  (L - Linf) * i / Ipar = (Lzer - Linf) * atan(i / Ipar);
  Psi = L * i;
end SaturatingCoil;
"""

# both rows of the linear block {a, b} carry the factor time except x = a + b: singular and
# consistent at t = 0; for t > 0, a = b = x / 2 and x' = x t / 2
TIME_FACTOR = """\
model TimeFactor
  Real x(start = 1, fixed = true);
  Real a;
  Real b;
equation
  der(x) = a * time;
  x = a + b;
  b * time = a * time;
end TimeFactor;
"""


# two nodes: a (capacitance Ca to ground, Cab to b) fed from u = time through R, b (Cb to
# ground) discharged through R. The structural analysis takes Ca, Cab for nonzero, so der(va)
# and der(vb) are solved from the 2x2 linear block; with Ca = Cab = 0 (as written) the column of
# der(va) is 0 and node a's balance (u - va)/R = 0 is violated as soon as u > va = 0
ZERO_CAP = """\
model ZeroCap
  parameter Real R = 1;
  parameter Real Ca = 0;
  parameter Real Cab = 0;
  parameter Real Cb = 1;
  Real va(start = 0, fixed = true);
  Real vb(start = 0, fixed = true);
  Real u;
equation
  u = time;
  (u - va) / R = Ca * der(va) + Cab * (der(va) - der(vb));
  Cab * (der(va) - der(vb)) = Cb * der(vb) + vb / R;
end ZeroCap;
"""




def _simulate(tmp_path, text, name, outputs, stop):
    return fmpy.simulate_fmu(str(export_text(tmp_path, text, name)), stop_time=stop, output=outputs,
                             relative_tolerance=1e-9, output_interval=stop / 50)


def test_newton_block_through_a_singular_point(tmp_path):
    res = _simulate(tmp_path, COIL, "SaturatingCoil", ["Psi", "i", "L"], 2 * math.pi)

    def current(psi):
        def law(i):
            return 0.5 * i + 1.5 * 0.25 * math.atan(i / 0.25) - psi
        return 0.0 if psi == 0 else optimize.brentq(law, -10, 10, xtol=1e-14)
    assert res["time"][-1] == pytest.approx(2 * math.pi)
    for t, psi, i, L in zip(res["time"], res["Psi"], res["i"], res["L"]):
        assert psi == pytest.approx(math.sin(t), abs=1e-7)
        assert i == pytest.approx(current(math.sin(t)), abs=2e-7)
        if abs(i) > 1e-3:
            assert L * i == pytest.approx(psi, abs=1e-9)
    assert res["L"][0] == pytest.approx(2.0)          # the limit L(i -> 0) = Lzer: its guess


def test_linear_block_singular_and_consistent_at_the_start(tmp_path):
    res = _simulate(tmp_path, TIME_FACTOR, "TimeFactor", ["x", "a", "b"], 1.0)
    assert res["a"][0] == pytest.approx(0.5) and res["b"][0] == pytest.approx(0.5)
    for t, x in zip(res["time"], res["x"]):
        assert x == pytest.approx(math.exp(t * t / 4), rel=1e-6)


def test_zero_capacitance_names_the_undetermined_derivative(tmp_path):
    fmu = str(export_text(tmp_path, ZERO_CAP, "ZeroCap"))
    # the same FMU with Ca = 0.5 is an RC charge: va = t - R Ca (1 - exp(-t / (R Ca))), vb = 0
    res = fmpy.simulate_fmu(fmu, stop_time=2.0, output=["va", "vb"], relative_tolerance=1e-9,
                            output_interval=0.04, start_values={"Ca": 0.5})
    for t, va, vb in zip(res["time"], res["va"], res["vb"]):
        assert va == pytest.approx(t - 0.5 * (1 - math.exp(-t / 0.5)), abs=1e-7)
        assert vb == pytest.approx(0.0, abs=1e-12)
    errors = []

    def logger(_env, _name, status, _category, message):
        if status >= 3:
            errors.append(message.decode() if isinstance(message, bytes) else message)
    with pytest.raises(RuntimeError, match="CVode error"):     # every fmi2GetDerivatives discards
        fmpy.simulate_fmu(fmu, stop_time=2.0, logger=logger)
    assert errors, "the FMU reports no error"
    msg = errors[0]
    assert "linear system is numerically singular and has no solution" in msg, msg
    assert "it does not determine der(va) (" in msg, msg     # der(vb) is determined
    assert "der(vb)" not in msg and "such as C in i = C*der(v)" in msg, msg
