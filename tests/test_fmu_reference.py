"""End-to-end: every single-mode reference model exports, validates with FMPy, simulates with
CVode and Euler and matches its reference CSV (reference_models/, closed forms or
high-accuracy solutions computed independently of mdae_fmu).

Each FMU is built once per session (`reference_fmu`)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

fmpy = pytest.importorskip("fmpy")
from fmpy import simulate_fmu  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402

from mdae_fmu import load  # noqa: E402
from mdae_fmu.fmu.export import export  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent / "reference_models"
SINGLE_MODE = ("Dahlquist", "VanDerPol", "BouncingBall", "Pendulum", "Stair")
REFS = json.loads((ROOT / "references.json").read_text())


@pytest.fixture(scope="session")
def reference_fmu(tmp_path_factory):
    """name -> path of the FMU of reference model ``name``, built once per session."""
    cache: dict[str, Path] = {}
    out = tmp_path_factory.mktemp("reference_fmus")

    def get(name: str) -> Path:
        if name not in cache:
            model = load(ROOT / f"{name}.mo")
            cache[name] = export(model, out / f"{name}.fmu", progress=False)
        return cache[name]
    return get


def read_csv(name: str):
    with open(ROOT / REFS[name]["csv"]) as f:
        rows = list(csv.reader(f))
    header = rows[0]
    data = np.array([[float(x) for x in r] for r in rows[1:]])
    return header, data


def away_from_events(name: str, t: np.ndarray, margin: float = 1e-3) -> np.ndarray:
    events = REFS[name].get("events", [])
    keep = np.ones(len(t), dtype=bool)
    for te in events:
        keep &= np.abs(t - te) > margin
    return keep


@pytest.mark.parametrize("name", SINGLE_MODE)
def test_validates(reference_fmu, name):
    assert validate_fmu(str(reference_fmu(name))) == []


@pytest.mark.parametrize("name", ["Dahlquist", "VanDerPol", "BouncingBall", "Pendulum", "Stair"])
def test_cvode_matches_reference(reference_fmu, name):
    header, data = read_csv(name)
    stop = REFS[name]["stop"]
    names = header[1:]
    t = data[:, 0]
    r = simulate_fmu(str(reference_fmu(name)), stop_time=stop, solver="CVode",
                     relative_tolerance=1e-10, output=names, output_interval=t[1] - t[0])
    keep = away_from_events(name, t)
    # Pendulum and Van der Pol references are numerical (rtol 1e-12): same bound, they are
    # far more accurate than 1e-6
    for k, var in enumerate(names):
        if var == "lambda":
            continue   # algebraic, not recorded by default; checked through the dynamics
        got = np.interp(t[keep], r["time"], r[var])
        ref = data[keep, k + 1]
        err = np.abs(got - ref) / np.maximum(1.0, np.abs(ref))
        assert err.max() < 1e-6, (name, var, err.max())


def test_bouncing_ball_bounce_times(reference_fmu):
    r = simulate_fmu(str(reference_fmu("BouncingBall")), stop_time=2.0, solver="CVode",
                     relative_tolerance=1e-10, output=["h", "v"], record_events=True)
    t, v = r["time"], r["v"]
    bounces = [t[i] for i in range(1, len(t)) if t[i] == t[i - 1] and v[i] > 0 > v[i - 1]]
    expected = REFS["BouncingBall"]["events"]
    assert len(bounces) == len(expected)
    assert np.max(np.abs(np.array(bounces) - expected)) < 1e-6
    # restitution: v+ = -e v- at each bounce
    for i in range(1, len(t)):
        if t[i] == t[i - 1] and v[i] != v[i - 1]:
            assert v[i] == pytest.approx(-0.7 * v[i - 1], rel=1e-12)


def test_pendulum_stays_on_constraint(reference_fmu):
    """Drift control: |x^2 + y^2 - L^2| < 1e-6 over 10 s with CVode (docs/fmi-mapping.md)."""
    r = simulate_fmu(str(reference_fmu("Pendulum")), stop_time=10.0, solver="CVode",
                     relative_tolerance=1e-10, output=["x", "y", "vx", "vy"],
                     output_interval=0.001)
    res = np.abs(r["x"] ** 2 + r["y"] ** 2 - 1.0)
    assert res.max() < 1e-6
    # velocity constraint (hidden, index reduction) as well
    assert np.abs(r["x"] * r["vx"] + r["y"] * r["vy"]).max() < 1e-6


def test_pendulum_initialization_is_consistent(reference_fmu):
    """x and vx fixed, y and vy free: the initial system puts the mass on the circle with a
    velocity tangent to it (theory note 9334 §3.6, initialization row)."""
    r = simulate_fmu(str(reference_fmu("Pendulum")), stop_time=0.01, solver="CVode",
                     output=["x", "y", "vx", "vy"],
                     start_values={"y": -0.5, "vy": 0.3})  # poor guesses, still the same root
    assert r["x"][0] == 0.6 and r["vx"][0] == 0.0
    assert r["y"][0] == pytest.approx(-0.8, abs=1e-12)
    assert r["vy"][0] == pytest.approx(0.0, abs=1e-12)


def test_euler(reference_fmu):
    """Fixed-step Euler (FMPy steps at the output interval): first-order accurate results,
    exact event handling for time events, the pendulum projected back at every step."""
    h = 1e-3
    r = simulate_fmu(str(reference_fmu("Dahlquist")), stop_time=1.0, solver="Euler",
                     output_interval=h, step_size=h, output=["x"])
    assert abs(r["x"][-1] - math.exp(-1.0)) < 1e-3
    r = simulate_fmu(str(reference_fmu("Stair")), stop_time=10.0, solver="Euler",
                     output_interval=0.01, step_size=0.01, output=["x", "n"])
    assert r["x"][-1] == pytest.approx(45.0, rel=1e-9)
    r = simulate_fmu(str(reference_fmu("BouncingBall")), stop_time=1.0, solver="Euler",
                     output_interval=1e-4, step_size=1e-4, output=["h", "v"])
    t, v = r["time"], r["v"]
    first = t[np.argmax(v > 0)]
    assert abs(first - REFS["BouncingBall"]["events"][0]) < 1e-3
    r = simulate_fmu(str(reference_fmu("Pendulum")), stop_time=2.0, solver="Euler",
                     output_interval=h, step_size=h, output=["x", "y"], record_events=True)
    res = np.abs(r["x"] ** 2 + r["y"] ** 2 - 1.0)
    assert res.max() < 1e-4            # one Euler step of drift at most, then projected
    _, data = read_csv("Pendulum")
    k = np.searchsorted(data[:, 0], 2.0)
    assert abs(r["x"][-1] - data[k, 1]) < 0.05
    r = simulate_fmu(str(reference_fmu("VanDerPol")), stop_time=1.0, solver="Euler",
                     output_interval=h, step_size=h, output=["x0"])
    _, data = read_csv("VanDerPol")
    k = np.searchsorted(data[:, 0], 1.0)
    assert abs(r["x0"][-1] - data[k, 1]) < 1e-2
