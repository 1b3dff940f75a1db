"""MSL's DemonstrateLightning as BaseModelica.jl prints it (tests/corpus/basemodelica_jl,
issue 24): its two lightning sources compute five ``fixed = false`` parameters each (eta, T,
T10, tau1, tau2) from their rise and decay times by initial equations of sizes 1e5 and 1, which
the whole initial system's Gauss-Newton did not solve ("Gauss-Newton did not converge
(residual 0.345 > 1e-10)"). Those rows read only the parameters: the leading blocks of the
initial system (`codegen.initialization.parameter_blocks`), now solved first, each by a
scaled Newton iteration (docs/corpus.md, "Base Modelica corpus").

Oracles: the ten equations solved by scipy from the file's start values, the source's
defining property (its current peaks at the amplitude, 1e5 A, at startTime + T), the closed
form of the double exponential and of its integral, and scipy's quadrature of the Heidler
current."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from mdae_fmu.codegen.initialization import parameter_blocks

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "tests" / "corpus" / "basemodelica_jl" / "DemonstrateLightning.bmo"
T0, AMP = 1e-5, 1e5       # startTime and amplitude of both sources


def test_parameter_blocks_are_the_square_groups_of_parameter_rows():
    """Rows that read parameters only, grouped by shared parameters; a group is a block when
    it has as many rows as parameters; rows that read a state stay in the whole system."""
    a, b, c, p, q, x = sp.symbols("a b c p q x")
    rows = [a + b - 1, x - a,            # 0: {a, b}; 1 reads the state x
            a * b - 2,                   # 2: joins row 0 -> {a, b}, 2 rows: a block
            c**2 - 3,                    # 3: {c}, 1 row: a block
            p - 1, p + q, q - 2]         # 4-6: 3 rows for {p, q}: not square
    slots = {a: 10, b: 11, c: 12, p: 13, q: 14}
    assert parameter_blocks(rows, slots) == (((0, 2), (10, 11)), ((3,), (12,)))
    assert parameter_blocks(rows, {a: 10}) == ()      # b is not a free parameter


def _double_exponential() -> np.ndarray:
    """eta, T, T10, tau1, tau2 of lightning1 (MSL's double exponential) by scipy."""
    from scipy.optimize import least_squares

    def rows(z):
        eta, T, T10, t1, t2 = z * START1
        e = lambda t: np.exp(-t / t1) - np.exp(-t / t2)       # noqa: E731
        return [(np.exp(-T / t1) / t1 - np.exp(-T / t2) / t2) * t2, eta - e(T),
                0.1 * eta - e(T10), 0.9 * eta - e(T10 + 8e-6), 0.5 * eta - e(T10 + 3.49e-4)]
    sol = least_squares(rows, np.ones(5), xtol=1e-15, ftol=1e-15, gtol=1e-15)
    assert max(abs(np.array(rows(sol.x)))) < 1e-12
    return sol.x * START1


def _heidler() -> np.ndarray:
    """eta, T, T10, tau1, tau2 of lightning2 (Heidler's function, m = 5) by scipy."""
    from scipy.optimize import least_squares

    def h(t, t1, t2):
        r = (t / t1) ** 5
        return r / (1 + r) * np.exp(-t / t2)

    def rows(z):
        eta, T, T10, t1, t2 = z * START2
        return [t2 / T * 5 - (1 + (T / t1) ** 5), eta - h(T, t1, t2), 0.1 * eta - h(T10, t1, t2),
                0.9 * eta - h(T10 + 8e-6, t1, t2), 0.5 * eta - h(T10 + 3.49e-4, t1, t2)]
    sol = least_squares(rows, np.ones(5), xtol=1e-15, ftol=1e-15, gtol=1e-15)
    assert max(abs(np.array(rows(sol.x)))) < 1e-12
    return sol.x * START2


# the file's start values (eta, T, T10, tau1, tau2)
START1 = np.array([1.0, 3.659917122121456e-5, 3.659917122121456e-7, 3.5e-4, 1e-5])
START2 = np.array([1.0, 2.3650464499470163e-5, 2.3650464499470163e-6, 1e-5, 3.5e-4])
NAMES = ("eta", "T", "T10", "tau1", "tau2")


@pytest.fixture(scope="module")
def lightning_fmu(tmp_path_factory):
    from mdae_fmu import api
    out = tmp_path_factory.mktemp("lightning") / "DemonstrateLightning.fmu"
    api.export_fmu(api.load(MODEL), out, fmi_type="both", progress=False)
    return out


@pytest.mark.long
@pytest.mark.parametrize("fmi_type", ["ModelExchange", "CoSimulation"])
def test_lightning_sources_initialize_and_match_their_closed_forms(lightning_fmu, fmi_type):
    from scipy.integrate import quad

    from fmpy import simulate_fmu
    params = {f"lightning{k}.signalSource.{n}": v for k, sol in ((1, _double_exponential()),
                                                            (2, _heidler()))
              for n, v in zip(NAMES, sol)}
    outputs = ["currentSensor1.i", "currentSensor2.i", "integrator1.y", "integrator2.y"]
    r = simulate_fmu(str(lightning_fmu), fmi_type=fmi_type, stop_time=1e-3,
                     relative_tolerance=1e-10, output_interval=1e-6,
                     output=[*outputs, *params])
    for name, value in params.items():
        assert r[name][-1] == pytest.approx(value, rel=1e-8), name
    eta, T, _, t1, t2 = (params[f"lightning1.signalSource.{n}"] for n in NAMES)
    # the defining property of eta: the current peaks at the amplitude at startTime + T
    assert AMP / eta * (np.exp(-T / t1) - np.exp(-T / t2)) == pytest.approx(AMP, rel=1e-10)
    t = r["time"]
    s = np.maximum(t - T0, 0.0)
    i1 = np.where(t >= T0, AMP / eta * (np.exp(-s / t1) - np.exp(-s / t2)), 0.0)
    assert np.max(np.abs(r["currentSensor1.i"] - i1)) < 1e-6 * AMP
    q1 = AMP / eta * (t1 * (1 - np.exp(-s[-1] / t1)) - t2 * (1 - np.exp(-s[-1] / t2)))
    assert r["integrator1.y"][-1] == pytest.approx(q1, rel=1e-6)
    eta2, _, _, u1, u2 = (params[f"lightning2.signalSource.{n}"] for n in NAMES)

    def heidler(x):
        return AMP / eta2 * (x / u1) ** 5 / (1 + (x / u1) ** 5) * np.exp(-x / u2)
    assert np.max(np.abs(r["currentSensor2.i"] - np.where(t >= T0, heidler(s), 0.0))) \
        < 1e-6 * AMP
    q2, _ = quad(heidler, 0.0, s[-1], epsabs=0, epsrel=1e-12, limit=200)
    assert r["integrator2.y"][-1] == pytest.approx(q2, rel=1e-6)
