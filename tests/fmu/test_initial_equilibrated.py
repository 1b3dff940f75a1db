"""An initial system whose rows and unknowns have very different sizes is solved by the
equilibrated second attempt of the initialization's Gauss-Newton (templates/mdae_runtime.c,
``mdae_gauss_newton_rows``; issue 24, BaseModelica.jl's DemonstrateLightning).

The lightning sources of the Modelica Standard Library (Electrical.Analog.Sources
``LightningImpulse``, as BaseModelica.jl's DemonstrateLightning prints them) find their
shape parameters eta, T, T10, tau1, tau2 (``fixed = false``) from five nonlinear initial
equations whose unknowns are time constants of 1e-6 to 1e-4 s, and whose first row (``exp(-T/
tau1)/tau1 = exp(-T/tau2)/tau2``) is of size 1e5 where the others are of size 1. The plain
iteration, whose line search asks the unweighted largest residual to fall, stalls there
("Gauss-Newton did not converge (residual 0.345 ...)"); the second attempt weights each row
by its largest change for a relative change of one unknown and scales the Jacobian's
columns. Oracle: the same equations solved by scipy's ``least_squares`` from the same start
values, and the charge ``q = integral of i`` in closed form (double exponential) or by
``quad`` (Heidler function)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fmpy import simulate_fmu
from scipy.integrate import quad
from scipy.optimize import least_squares

from fmu_files import export_text

A = 1e5
START_DOUBLE = (1.0, 3.659917122121456e-5, 3.659917122121456e-7, 3.5e-4, 1e-5)
START_HEIDLER = (1.0, 2.3650464499470163e-5, 2.3650464499470163e-6, 1e-5, 3.5e-4)

LIGHTNING = f"""model Lightning
  parameter Real A = {A};
  parameter Real eta(fixed = false, start = {START_DOUBLE[0]});
  parameter Real T(fixed = false, start = {START_DOUBLE[1]!r});
  parameter Real T10(fixed = false, start = {START_DOUBLE[2]!r});
  parameter Real tau1(fixed = false, start = {START_DOUBLE[3]!r});
  parameter Real tau2(fixed = false, start = {START_DOUBLE[4]!r});
  parameter Real eta2(fixed = false, start = {START_HEIDLER[0]});
  parameter Real T2(fixed = false, start = {START_HEIDLER[1]!r});
  parameter Real T210(fixed = false, start = {START_HEIDLER[2]!r});
  parameter Real tau21(fixed = false, start = {START_HEIDLER[3]!r});
  parameter Real tau22(fixed = false, start = {START_HEIDLER[4]!r});
  Real q(start = 0, fixed = true);
  Real q2(start = 0, fixed = true);
  Real i;
  Real i2;
initial equation
  exp(-T/tau1)/tau1 = exp(-T/tau2)/tau2;
  eta = exp(-T/tau1) - exp(-T/tau2);
  0.1*eta = exp(-T10/tau1) - exp(-T10/tau2);
  0.9*eta = exp(-(T10 + 8e-6)/tau1) - exp(-(T10 + 8e-6)/tau2);
  0.5*eta = exp(-(T10 - 1e-6 + 3.5e-4)/tau1) - exp(-(T10 - 1e-6 + 3.5e-4)/tau2);
  tau22/T2*5 = 1 + (T2/tau21)^5;
  eta2 = (T2/tau21)^5/(1 + (T2/tau21)^5)*exp(-T2/tau22);
  0.1*eta2 = (T210/tau21)^5/(1 + (T210/tau21)^5)*exp(-T210/tau22);
  0.9*eta2 = ((T210 + 8e-6)/tau21)^5/(1 + ((T210 + 8e-6)/tau21)^5)*exp(-(T210 + 8e-6)/tau22);
  0.5*eta2 = ((T210 - 1e-6 + 3.5e-4)/tau21)^5/(1 + ((T210 - 1e-6 + 3.5e-4)/tau21)^5)
             *exp(-(T210 - 1e-6 + 3.5e-4)/tau22);
equation
  i = A/eta*(exp(-time/tau1) - exp(-time/tau2));
  i2 = A/eta2*(time/tau21)^5/(1 + (time/tau21)^5)*exp(-time/tau22);
  der(q) = i;
  der(q2) = i2;
end Lightning;
"""


def _heidler(x: float, tau1: float, tau2: float) -> float:
    return (x / tau1) ** 5 / (1 + (x / tau1) ** 5) * math.exp(-x / tau2)


def _double_rows(z):
    eta, t, t10, tau1, tau2 = z
    e = np.exp
    return [1e-4 * (e(-t / tau1) / tau1 - e(-t / tau2) / tau2),
            eta - (e(-t / tau1) - e(-t / tau2)),
            0.1 * eta - (e(-t10 / tau1) - e(-t10 / tau2)),
            0.9 * eta - (e(-(t10 + 8e-6) / tau1) - e(-(t10 + 8e-6) / tau2)),
            0.5 * eta - (e(-(t10 - 1e-6 + 3.5e-4) / tau1) - e(-(t10 - 1e-6 + 3.5e-4) / tau2))]


def _heidler_rows(z):
    eta, t, t10, tau1, tau2 = z
    return [tau2 / t * 5 - (1 + (t / tau1) ** 5), eta - _heidler(t, tau1, tau2),
            0.1 * eta - _heidler(t10, tau1, tau2), 0.9 * eta - _heidler(t10 + 8e-6, tau1, tau2),
            0.5 * eta - _heidler(t10 - 1e-6 + 3.5e-4, tau1, tau2)]


def _solve(rows, start) -> np.ndarray:
    """The shape parameters from ``start``, unknowns scaled by their start values."""
    scale = np.asarray(start)
    sol = least_squares(lambda u: rows(u * scale), np.ones(5), xtol=1e-15, ftol=1e-15,
                        gtol=1e-15)
    assert max(abs(v) for v in rows(sol.x * scale)) < 1e-10
    return sol.x * scale


@pytest.fixture(scope="module")
def fmu(tmp_path_factory):
    return export_text(tmp_path_factory.mktemp("lightning"), LIGHTNING, "Lightning",
                       fmi_type="both")


@pytest.mark.parametrize("fmi_type", ["ModelExchange", "CoSimulation"])
def test_lightning_shape_parameters_and_charge(fmu, fmi_type):
    """Both sources' parameters as scipy finds them (1e-8 relative), and the charge of each
    within 1e-6 of its integral over 0.2 ms."""
    double = _solve(_double_rows, START_DOUBLE)
    heidler = _solve(_heidler_rows, START_HEIDLER)
    names = ["eta", "T", "T10", "tau1", "tau2", "eta2", "T2", "T210", "tau21", "tau22"]
    r = simulate_fmu(str(fmu), fmi_type=fmi_type, stop_time=2e-4, output_interval=1e-6,
                     relative_tolerance=1e-10, output=[*names, "q", "q2"])
    for name, want in zip(names, [*double, *heidler]):
        assert r[name][0] == pytest.approx(want, rel=1e-8), name
    eta, _, _, tau1, tau2 = double
    eta2, _, _, tau21, tau22 = heidler
    for t, q, q2 in list(zip(r["time"], r["q"], r["q2"]))[::20]:
        want = A / eta * (tau1 * (1 - math.exp(-t / tau1)) - tau2 * (1 - math.exp(-t / tau2)))
        want2 = A / eta2 * quad(_heidler, 0.0, t, args=(tau21, tau22), epsabs=0,
                                epsrel=1e-12)[0] if t > 0 else 0.0
        assert q == pytest.approx(want, rel=1e-6, abs=1e-9), t
        assert q2 == pytest.approx(want2, rel=1e-6, abs=1e-9), t
