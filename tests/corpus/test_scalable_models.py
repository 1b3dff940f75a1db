"""The ScalableTestSuite families of benchmarks/gen_scalable.py (issue 29 Deliver 6), at small
sizes: each generated flat Modelica file is accepted with the expected counts, and its FMU
follows the exact solution of the same physics written independently as ``der(x) = A x + b``
(`gen_scalable.linear_system`, solved with the matrix exponential). The transmission line also
shows its physics: closed on its characteristic resistance, the far end follows the filtered
step delayed by ``TD = length * sqrt(ind * cap)``."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from fmpy import simulate_fmu
from scipy.linalg import expm

from mdae_fmu import api

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import gen_scalable  # noqa: E402

CASES = {"heat": (6, 3.0), "grid": (3, 0.5), "transmission": (12, 2e-6)}


def _exact(family: str, n: int, times: np.ndarray) -> tuple[list[str], np.ndarray]:
    """States of the family at the increasing ``times`` from zero initial states: the
    exponential of the augmented matrix [[A, b], [0, 0]] applied to (0, 1), stepped from one
    time to the next (one exponential per distinct step)."""
    names, a, b = gen_scalable.linear_system(family, n)
    m = len(names)
    aug = np.zeros((m + 1, m + 1))
    aug[:m, :m], aug[:m, m] = a, b
    x = np.zeros(m + 1)
    x[m] = 1.0
    step: dict[float, np.ndarray] = {}
    out, last = [], 0.0
    for t in times:
        dt = float(t) - last
        if dt:
            key = round(dt, 15)
            if key not in step:
                step[key] = expm(aug * dt)
            x = step[key] @ x
        out.append(x[:m].copy())
        last = float(t)
    return names, np.array(out)


def _first_crossing(values: np.ndarray, level: float, times: np.ndarray) -> float:
    """The first time ``values`` reaches ``level``, interpolated linearly between samples."""
    k = int(np.argmax(values >= level))
    assert k > 0 and values[k] >= level
    return float(np.interp(level, values[k - 1:k + 1], times[k - 1:k + 1]))


@pytest.mark.parametrize("family", sorted(CASES))
def test_generated_family_follows_the_exact_solution(family, tmp_path):
    n, stop = CASES[family]
    text = gen_scalable.FAMILIES[family][0](n)
    src = tmp_path / f"{family}.mo"
    src.write_text(text)
    model = api.load(src)
    assert len(model.equations) == gen_scalable.equation_count(family, n)
    analysis = api.analyze(model)
    assert analysis.accepted
    fmu = tmp_path / f"{family}.fmu"
    api.export_fmu(model, fmu, analysis=analysis, progress=False)
    names, _, _ = gen_scalable.linear_system(family, n)
    r = simulate_fmu(str(fmu), stop_time=stop, output_interval=stop / 40,
                     relative_tolerance=1e-10, output=names)
    _, exact = _exact(family, n, r["time"])
    got = np.column_stack([r[v] for v in names])
    scale = np.max(np.abs(exact))
    assert scale > 0.1
    assert np.max(np.abs(got - exact)) < 1e-6 * scale


def test_transmission_line_delays_the_filtered_step_by_its_travel_time():
    """50 % of the far end's rise comes TD after 50 % of the input's (the filter's 50 % point
    is t = 1.678 / w for a critically damped second-order filter); the lumped line of 200
    segments has the continuous line's delay to 2 %. Exact solution, no FMU: this checks the
    physics of the generator, the test above checks the pipeline against it."""
    n = 200
    p = gen_scalable.LINE
    td = p["length"] * math.sqrt(p["ind"] * p["cap"])
    names, a, b = gen_scalable.linear_system("transmission", n)
    # the steady state is the unit step divided between the load and the resistance of the
    # n - 1 segments that carry a current
    steady = np.linalg.solve(a, -b)
    rl = math.sqrt(p["ind"] / p["cap"])
    line = p["res"] * p["length"] * (n - 1) / n
    assert steady[names.index(f"vol[{n}]")] == pytest.approx(rl / (rl + line), rel=1e-9)
    times = np.linspace(0.0, 3 * td, 601)
    _, x = _exact("transmission", n, times)
    first, last = x[:, names.index("vol[1]")], x[:, names.index(f"vol[{n}]")]
    t_in = _first_crossing(first, 0.5, times)
    t_out = _first_crossing(last, 0.5 * steady[names.index(f"vol[{n}]")], times)
    assert t_in == pytest.approx(1.678 / p["w"], rel=0.01)
    assert t_out - t_in == pytest.approx(td, rel=0.02)


@pytest.mark.parametrize("family", sorted(CASES))
def test_size_by_equation_count(family):
    """The size picked for an equation count is the nearest one (the grid grows by about
    6n equations a step: 5 % at 10^3)."""
    for count in (1e3, 1e4, 1e5, 1e6):
        n = gen_scalable.by_equations(family, count)
        got = gen_scalable.equation_count(family, n)
        assert abs(got - count) <= 0.05 * count
        assert all(abs(gen_scalable.equation_count(family, k) - count) >= abs(got - count)
                   for k in (n - 1, n + 1) if k >= 1)
