"""Published examples of the Σ-method's failures and their conversions (structure/conversion.py,
Tan–Nedialkov–Pryce's linear combination and expression substitution; issue 24 Deliver 5).

The "modified pendulum" of Tan, Nedialkov and Pryce (the planar pendulum x'' = x λ,
y'' = y λ - g, x² + y² = 1 written in x1 = x, x4 = x', x5 = y' and two variables x2, x3 with
y = x2 sin x3, λ = x2 cos x3), as the DAE Preprocessing Toolbox of Oki et al. reproduces it
(github.com/OptMist-Tokyo/DAEPreprocessingToolbox, test/problem.m, with the consistent point
x1 = 0.5, x2 = 8.5311195044981, x3 = -3.03990380183, x4 = x5 = 0, g = 9.8). The Σ-method
finds index 1 where the pendulum has index 3: e3 and e5 read x2, x3 only through
x2 sin x3. Oracle: the angle θ of the same pendulum (x = sin θ, y = -cos θ,
θ'' = -g sin θ, θ(0) = π/6, θ'(0) = 0) by scipy at rtol 1e-12."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from mdae_fmu import api

MODIFIED_PENDULUM = """model ModifiedPendulum
  parameter Real g = 9.8;
  Real x1(start = 0.5, fixed = true);
  Real x2(start = 8.5311195044981);
  Real x3(start = -3.03990380183);
  Real x4(start = 0, fixed = true);
  Real x5(start = 0);
equation
  der(x4) = x1*x2*cos(x3);
  der(x5) = x2^2*cos(x3)*sin(x3) - g;
  x1^2 + x2^2*sin(x3)^2 = 1;
  tanh(der(x1) - x4) = 0;
  der(x2)*sin(x3) + x2*der(x3)*cos(x3) = x5;
end ModifiedPendulum;
"""


def _pendulum_state(t):
    """θ and θ' at the times ``t`` (scipy, rtol 1e-12)."""
    sol = solve_ivp(lambda _t, s: [s[1], -9.8 * math.sin(s[0])], (0.0, float(t[-1])),
                    [math.pi / 6, 0.0], t_eval=t, rtol=1e-12, atol=1e-12)
    return sol.y[0], sol.y[1]


def test_the_oracle_starts_at_the_published_point():
    """The published consistent point is the pendulum at θ = π/6 at rest: x1 = sin θ,
    x2 sin x3 = -cos θ, x2 cos x3 = λ = -g cos θ (zero velocity), x4' = x1 λ."""
    x2, x3 = 8.5311195044981, -3.03990380183
    assert x2 * math.sin(x3) == pytest.approx(-math.cos(math.pi / 6), abs=1e-10)
    assert x2 * math.cos(x3) == pytest.approx(-9.8 * math.cos(math.pi / 6), abs=1e-9)
    assert 0.5 * x2 * math.cos(x3) == pytest.approx(-4.2435244785437, abs=1e-9)


def test_modified_pendulum_is_converted_and_follows_the_pendulum(tmp_path):
    """Two conversions (docs/theory.md §4.9): the linear combination
    -(1/(2 x2 sin x3)) e3' + e5 removes der(x2), der(x3) and replaces e5; the block {e3, e5}
    in x2, x3 is then still singular (both read x2 sin x3 only, its null vector
    (x2 cos x3, -sin x3) is not constant), and the nonlinear expression substitution
    y = x2 sin x3 (x2 = y / sin x3 in e3, e5) leaves the pendulum's 2 degrees of freedom.
    The FMU starts at the published point and follows θ; λ = x2 cos x3 = -g cos θ - θ'^2
    (x'' = x λ with x = sin θ)."""
    src = tmp_path / "ModifiedPendulum.mo"
    src.write_text(MODIFIED_PENDULUM)
    model = api.load(src)
    analysis = api.analyze(model)
    assert analysis.accepted, analysis.messages
    lc, es = analysis.conversions
    assert (lc.method, lc.replaced, lc.block) == ("linear combination", "e5", ("e3", "e5"))
    assert (es.method, es.combination) == ("expression substitution", "x2 * sin(x3)")
    assert es.new_equations == ("e6",) and es.new_variables == ("_es1",)
    (mode,) = analysis.modes.modes
    assert mode.dof == 2
    fmu = tmp_path / "ModifiedPendulum.fmu"
    api.export_fmu(model, fmu, progress=False)
    from fmpy import simulate_fmu
    r = simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.05, relative_tolerance=1e-10,
                     output=["x1", "x2", "x3", "x4", "x5"])
    t = np.asarray(r["time"], dtype=float)
    theta, omega = _pendulum_state(t)
    # the published consistent point
    assert (r["x1"][0], r["x4"][0], r["x5"][0]) == pytest.approx((0.5, 0.0, 0.0), abs=1e-9)
    assert r["x2"][0] == pytest.approx(8.5311195044981, abs=1e-8)
    assert r["x3"][0] == pytest.approx(-3.03990380183, abs=1e-8)
    assert r["x1"] == pytest.approx(np.sin(theta), abs=1e-6)
    assert r["x2"] * np.sin(r["x3"]) == pytest.approx(-np.cos(theta), abs=1e-6)
    assert r["x4"] == pytest.approx(np.cos(theta) * omega, abs=1e-5)
    assert r["x5"] == pytest.approx(np.sin(theta) * omega, abs=1e-5)
    assert r["x2"] * np.cos(r["x3"]) == pytest.approx(-9.8 * np.cos(theta) - omega ** 2,
                                                      abs=1e-4)
