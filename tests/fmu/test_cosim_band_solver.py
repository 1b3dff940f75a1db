"""The Co-Simulation integrator's linear solver follows the structure (issue 26 Deliver 4,
docs/cosimulation.md "Linear solver", `mdae_fmu.fmu.cosim.choose_linear_solver`).

Oracles: band widths counted by hand on small patterns; a drive line of 40 ideal clutches
(benchmarks/gen_modeller.py, 82 states) whose CS FMU must pick the band solver of the current
mode (its widths follow from which clutches are engaged) and follow an independent scipy
solution of the same piecewise-linear ODE (speeds of the rigidly coupled groups, the
inertia-weighted mean speed when a clutch engages) to 1e-7; and the angular momentum sum
J_k w_k, unchanged across every engagement to 1e-10 relative (the clutch impulses cancel)."""

from __future__ import annotations

import math
import random
import re
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from mdae_fmu.fmu.cosim import (DENSE, LinearSolver, band_widths, choose_linear_solver,
                                configure_sources, linear_solver_defines, state_pattern,
                                widest_band)

ROOT = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------------------------------------
# the choice (no FMU)
# ---------------------------------------------------------------------------------------------


def _chain(n: int) -> list[frozenset[int]]:
    """Pattern of a heat rod: derivative i reads states i - 1, i, i + 1."""
    return [frozenset(j for j in (i - 1, i, i + 1) if 0 <= j < n) for i in range(n)]


def test_band_widths_by_hand():
    # x0' = f(x2), x1' = f(x0), x2' = f(x2): upper 2 (row 0, column 2), lower 1 (row 1, col 0)
    pattern = [frozenset({2}), frozenset({0}), frozenset({2})]
    assert band_widths(pattern, (0, 1, 2)) == (2, 1)
    # reversed: entry k holds state 2 - k; row 0 -> entry 2, column 2 -> entry 0
    assert band_widths(pattern, (2, 1, 0)) == (1, 2)


def test_few_states_stay_dense():
    assert choose_linear_solver(_chain(15)) == DENSE
    assert linear_solver_defines(DENSE) == ""


def test_shuffled_chain_gets_its_band_back():
    n = 60
    perm = list(range(n))
    random.Random(1).shuffle(perm)
    # state perm[i] is the rod's volume i: a wide band in the model's order
    pattern = [frozenset()] * n
    for i, cols in enumerate(_chain(n)):
        pattern[perm[i]] = frozenset(perm[j] for j in cols)
    assert sum(band_widths(pattern, range(n))) > widest_band(n)
    ls = choose_linear_solver(pattern)
    assert (ls.upper, ls.lower, ls.probe) == (1, 1, 0)
    assert sorted(ls.order) == list(range(n))
    assert band_widths(pattern, ls.order) == (1, 1)


def test_wide_union_is_measured_per_mode():
    """Every derivative reads every state in some mode (a drive line with all clutches
    engaged): the model's order, the band measured by the FMU up to a quarter of the states."""
    n = 40
    ls = choose_linear_solver([frozenset(range(n))] * n)
    assert ls == LinearSolver(order=tuple(range(n)), upper=-1, lower=-1, probe=10)
    text = linear_solver_defines(ls)
    assert "#define MDAE_CS_BAND_PROBE 10\n" in text
    assert f"#define MDAE_CS_STATE_ORDER {{{', '.join(map(str, range(n)))}}}\n" in text


def test_state_pattern_reads_the_derivative_dependencies():
    deps = {"der(x)": ("u", "y"), "der(y)": ("x",)}
    # der(z) has no dependencies attribute: it may read every state
    assert state_pattern(["x", "y", "z"], ["der(x)", "der(y)", "der(z)"], deps) == [
        frozenset({1}), frozenset({0}), frozenset({0, 1, 2})]


def test_only_co_simulation_gets_the_defines():
    ls = choose_linear_solver(_chain(20))
    src = {"config.h": "#ifndef C\n#define C\n#endif\n"}
    assert "MDAE_CS_BAND_UPPER 1" in configure_sources(src, "cs", None, ls)["config.h"]
    assert "MDAE_CS_BAND" not in configure_sources(src, "me", None, ls)["config.h"]


# ---------------------------------------------------------------------------------------------
# a drive line of 40 clutches
# ---------------------------------------------------------------------------------------------

N = 40
STEP = 0.05
STOP = 3.0
TINY = 1e-12        # the step that shows the speeds right after an engagement
# CVODE's global error is some 1000 times its relative tolerance here: 1e-12 for 1e-7
TOLERANCE = 1e-12
# (time, clutch, engaged): groups of at most 3 shafts, so every mode keeps a narrow band
SWITCHINGS = [(0.5, 10, True), (1.0, 11, True), (1.5, 30, True), (2.0, 10, False),
              (2.5, 1, True)]


def _parameters(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    def each(pattern: str) -> np.ndarray:
        return np.array([float(re.search(pattern.format(k=k), text).group(1))
                         for k in range(1, N + 2)])
    return (each(r"parameter Real shaft{k}\.J\([^)]*\) = ([-0-9.e]+)"),
            each(r"parameter Real damper{k}\.d\([^)]*\) = ([-0-9.e]+)"),
            each(r"Real shaft{k}\.w\([^)]*start = ([-0-9.e]+)"))


def _groups(engaged: set[int]) -> list[list[int]]:
    """Shafts (0-based) turning together: clutch k couples shafts k and k + 1 (1-based)."""
    out = [[0]]
    for s in range(1, N + 1):
        if s in engaged:        # 0-based shaft s turns with shaft s - 1
            out[-1].append(s)
        else:
            out.append([s])
    return out


def _reference(J, d, w0, times: list[float]) -> np.ndarray:
    """Speeds at ``times`` (rows) of the piecewise-linear ODE, scipy's DOP853 at 1e-13:
    each group g of coupled shafts turns at W_g with sum J * W' = drive torque (shaft 1)
    - sum d * W - load (last shaft), and starts every segment at sum J w / sum J."""
    from scipy.integrate import solve_ivp
    w = w0.copy()
    engaged: set[int] = set()
    out = []
    bounds = [0.0] + [t for t, _, _ in SWITCHINGS] + [STOP + 1.0]
    for a, b, seg in zip(bounds, bounds[1:], range(len(bounds))):
        if seg > 0:
            _, k, on = SWITCHINGS[seg - 1]
            (engaged.add if on else engaged.discard)(k)
        groups = _groups(engaged)
        Jg = np.array([J[g].sum() for g in groups])
        dg = np.array([d[g].sum() + (0.2 if N in g else 0.0) for g in groups])
        W0 = np.array([(J[g] * w[g]).sum() for g in groups]) / Jg

        def f(t, W, dg=dg, Jg=Jg):
            drive = np.zeros_like(W)
            drive[0] = 10.0 * math.sin(math.pi * t)
            return (drive - dg * W) / Jg

        ts = [t for t in times if a < t <= b]     # a switching time's row: the left limit
        sol = solve_ivp(f, (a, b), W0, method="DOP853", rtol=1e-13, atol=1e-13,
                        dense_output=True)
        for t in ts:
            W = sol.sol(t)
            out.append(np.concatenate([np.full(len(g), W[i]) for i, g in enumerate(groups)]))
        W = sol.sol(b)
        w = np.concatenate([np.full(len(g), W[i]) for i, g in enumerate(groups)])
    return np.array(out)


def _run(fmu: Path, J: np.ndarray) -> tuple[list[float], np.ndarray, list, list[str]]:
    """The CS FMU stepped by hand through `SWITCHINGS`: communication times, speeds there,
    (largest speed jump, relative momentum change) at every switching, the logged solver
    choices."""
    from cosim_util import close_slave, open_slave
    speeds = [f"shaft{k}.w" for k in range(1, N + 2)]
    slave = open_slave(fmu, stop_time=STOP, tolerance=TOLERANCE, logging=True)
    try:
        t, times, rows, jumps = 0.0, [], [], []
        pending = list(SWITCHINGS)
        while t < STOP - 1e-9:
            if pending and abs(pending[0][0] - t) < 1e-9:
                _, k, on = pending.pop(0)
                before = np.array(slave.get(speeds))
                slave.fmu.setBoolean([slave.vrs[f"engage[{k}]"]], [on])
                slave.fmu.doStep(t, TINY)
                after = np.array(slave.get(speeds))
                jumps.append((np.max(np.abs(after - before)),
                              abs(J @ after - J @ before) / (J * np.abs(before)).sum()))
                slave.fmu.doStep(t + TINY, STEP - TINY)
            else:
                slave.fmu.doStep(t, STEP)
            t = round(t + STEP, 10)
            times.append(t)
            rows.append(slave.get(speeds))
        assert not slave.errors(), slave.errors()
        return (times, np.array(rows), jumps,
                [m[2] for m in slave.messages if "linear solver" in m[2]])
    finally:
        close_slave(slave)


@pytest.mark.requires_sundials
def test_drive_line_of_40_clutches_runs_on_the_band_solver(tmp_path, monkeypatch):
    pytest.importorskip("dd")
    pytest.importorskip("fmpy")

    from mdae_fmu import api
    from mdae_fmu.fmu import cosim
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gen_modeller

    text = gen_modeller.drive_line(N, "input", seed=3)
    src = tmp_path / "DriveLine40.mo"
    src.write_text(text)
    fmu = tmp_path / "DriveLine40.fmu"
    api.export_fmu(api.load(src), fmu, fmi_type="cs", implicit=True, progress=False)
    with zipfile.ZipFile(fmu) as z:
        config = z.read("sources/config.h").decode()
    # the union over the modes is dense (all clutches engaged): the band is measured
    assert "#define MDAE_CS_BAND_PROBE 20\n" in config, config

    J, d, w0 = _parameters(text)
    times, rows, jumps, solvers = _run(fmu, J)
    # the band of each mode, in the model's order (phi_1, w_1, phi_2, w_2, ...): open
    # clutches, phi_k' = w_k only (1, 0); shafts 10-12 coupled (4, 4)
    assert solvers[0].endswith("band, upper half-width 1, lower 0, 82 states"), solvers
    assert any(s.endswith("band, upper half-width 4, lower 4, 82 states") for s in solvers)
    assert not any("dense" in s for s in solvers), solvers
    # momentum across every engagement and release, while the speeds do jump
    assert sum(j > 1e-3 for j, _ in jumps) >= 3, jumps
    assert max(m for _, m in jumps) < 1e-10, jumps
    ref = _reference(J, d, w0, times)
    err = np.abs(rows - ref) / np.maximum(np.abs(ref), 1.0)
    assert err.max() < 1e-7, (err.max(), times[int(np.argmax(err.max(axis=1)))])

    # the same FMU with the dense solver (as below 16 states): the same trajectory (on this
    # linear model each entry of the band Jacobian has the dense one's operands)
    monkeypatch.setattr(cosim, "BAND_MIN_STATES", 10**9)
    dense = tmp_path / "DriveLine40Dense.fmu"
    api.export_fmu(api.load(src), dense, fmi_type="cs", implicit=True, progress=False)
    times_d, rows_d, _, solvers_d = _run(dense, J)
    assert solvers_d == [] and times_d == times
    assert np.max(np.abs(rows - rows_d) / np.maximum(np.abs(rows_d), 1.0)) < 1e-12
