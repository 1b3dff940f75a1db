"""Guarded FMUs of the model families written the way a modeller writes them
(benchmarks/gen_modeller.py, issue 26 acceptance): RLC ladders with ideal switches driven by
the host and with ideal diodes, at n = 10 and 20 cells (their inductor currents are states in
some modes only), against exact piecewise solutions; a drive line of 8 clutches under 30
random host switchings, whose total angular momentum sum J_k w_k is continuous across every
event (the dampers, the drive and the load torques are bounded: only the clutch impulses act
over an instant, and they cancel in the sum)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("dd")
from fmpy import simulate_fmu  # noqa: E402
from scipy.linalg import expm  # noqa: E402
from scipy.optimize import brentq  # noqa: E402

from mdae_fmu import api  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import gen_modeller  # noqa: E402
from piecewise_exact import piecewise  # noqa: E402

STOP = 10.0


def _export(tmp_path_factory, text: str) -> tuple[Path, dict]:
    """The guarded FMU of a generated model and its parameter values (read back from the
    text, so the oracle does not depend on the generator's random draws)."""
    d = tmp_path_factory.mktemp("modeller")
    name = re.search(r"^class (\w+)", text, re.M).group(1)
    src = d / f"{name}.mo"
    src.write_text(text)
    fmu = d / f"{name}.fmu"
    api.export_fmu(api.load(src), fmu, implicit=True, progress=False)
    params = {m.group(1): float(m.group(2)) for m in
              re.finditer(r"parameter Real ([\w.]+)(?:\([^)]*\))? = ([-0-9.e]+)", text)}
    return fmu, params


@pytest.fixture(scope="module")
def rlc_fmus(tmp_path_factory):
    cache: dict = {}

    def get(n: int, element: str):
        if (n, element) not in cache:
            cache[n, element] = _export(tmp_path_factory, gen_modeller.rlc_cells(n, element))
        return cache[n, element]
    return get


def _ladder_matrix(n: int, p: dict, on) -> np.ndarray:
    """The ladder in the modes ``on`` (branch k conducts) as x' = M x, x = (i_1..i_n,
    v_1..v_n, S, C) with the source V sin(2 pi f t) = V S, S' = w C, C' = -w S. A branch that
    does not conduct has i_k = 0 (i_k' = 0)."""
    w = 2 * np.pi * p["source.f"]
    M = np.zeros((2 * n + 2, 2 * n + 2))
    s, c = 2 * n, 2 * n + 1
    M[s, c], M[c, s] = w, -w
    for k in range(n):
        L, R = p[f"L{k + 1}.L"], p[f"R{k + 1}.R"]
        C, Rl = p[f"C{k + 1}.C"], p[f"Rload{k + 1}.R"]
        if on[k]:
            if k == 0:
                M[0, s] = p["source.V"] / L
            else:
                M[k, n + k - 1] = 1.0 / L
            M[k, n + k] = -1.0 / L
            M[k, k] = -R / L
        M[n + k, k] = 1.0 / C
        if k + 1 < n:
            M[n + k, k + 1] = -1.0 / C
        M[n + k, n + k] = -1.0 / (C * Rl)
    return M


def _x0(n: int) -> np.ndarray:
    x = np.zeros(2 * n + 2)
    x[-1] = 1.0                     # cos(0)
    return x


@pytest.mark.parametrize("n", [10, pytest.param(20, marks=pytest.mark.slow)])
def test_rlc_switches_follow_the_exact_solution(rlc_fmus, n):
    """Closing and opening ideal switches from the host: between switchings a linear ODE
    (exact by the matrix exponential); opening a branch restarts its inductor current at 0
    (the flux jumps, the switch voltage is impulsive), every other state continuous. Every
    output row, before and after each event, to 1e-7."""
    fmu, p = rlc_fmus(n, "switch")
    names = [f"close[{k + 1}]" for k in range(n)]
    table = gen_modeller.random_switchings(names, 30, STOP, seed=3, start=True)
    outputs = [f"L{k + 1}.i" for k in range(n)] + [f"C{k + 1}.v" for k in range(n)]
    r = simulate_fmu(str(fmu), stop_time=STOP, relative_tolerance=1e-11, output_interval=0.05,
                     input=table, output=outputs, record_events=True)
    t = r["time"]
    left = [k + 1 < len(t) and t[k + 1] == t[k] for k in range(len(t))]

    def advance(x, on, dt):
        return expm(_ladder_matrix(n, p, on) * dt) @ x

    def restart(x, on):
        x = x.copy()
        x[:n][~np.array(on)] = 0.0
        return x

    want, _ = piecewise(table, names, _x0(n), advance, restart, list(zip(t, left)))
    got = np.column_stack([r[x] for x in outputs])
    events = np.flatnonzero(np.diff(t) == 0)
    assert len(events) >= 25                               # the switchings are events
    assert sum(np.max(np.abs(want[k + 1, :n] - want[k, :n])) > 1e-3 for k in events) >= 5
    assert np.max(np.abs(got - want[:, :2 * n])) < 1e-7, np.max(np.abs(got - want[:, :2 * n]))


def _diode_ladder_exact(n: int, p: dict, times, h: float = 2e-3):
    """The diode ladder's exact trajectory: diode k conducts (i_k a state) until i_k reaches
    0, then blocks (i_k = 0) until its voltage s_k = u_{k-1} - v_k (u_0 the source) reaches 0
    from below; no state jumps. Within a conduction pattern the ladder is linear
    (`_ladder_matrix`); the instants are found by bracketing on a grid of ``h`` and brentq.
    Every diode conducts at t = 0 (s = 0, its start, is not s < 0). Returns the states at
    ``times`` and the switching instants."""
    V = p["source.V"]

    def indicator(x, on):
        u = np.concatenate(([V * x[2 * n]], x[n:2 * n - 1]))
        s = u - x[n:2 * n]
        return np.where(on, x[:n], s)

    on = np.ones(n, dtype=bool)
    x, t0 = _x0(n), 0.0
    segments, instants = [(0.0, x, on.copy())], []
    # the matrix of a conduction pattern and its exponential over one grid step, computed once
    # per pattern (a pattern lasts hundreds of steps; expm was 97 % of the oracle's time)
    steps: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
    while t0 < STOP:
        if tuple(on) not in steps:
            M = _ladder_matrix(n, p, on)
            steps[tuple(on)] = M, expm(M * h)
        M, step = steps[tuple(on)]
        g0 = indicator(x, on)
        x1 = step @ x
        g1 = indicator(x1, on)
        # a conducting diode turns off when i_k goes negative, a blocked one on when s_k
        # goes positive (a zero at the grid point from the right side does not count)
        cross = np.flatnonzero((on & (g0 >= 0) & (g1 < 0)) | (~on & (g0 <= 0) & (g1 > 0)))
        if len(cross) == 0:
            x, t0 = x1, t0 + h
            continue
        first = min(brentq(lambda dt, M=M, x=x, on=on, k=k: indicator(expm(M * dt) @ x, on)[k],
                           0.0, h, xtol=1e-15) for k in cross)
        x = expm(M * first) @ x
        t0 += first
        g = indicator(x, on)
        k = int(cross[np.argmin(np.abs(g[cross]))])
        on[k] = not on[k]
        if not on[k]:
            x[k] = 0.0
        instants.append(t0)
        segments.append((t0, x.copy(), on.copy()))
    out = []
    for t in times:
        i = max(j for j, seg in enumerate(segments) if seg[0] <= t)
        ts, xs, ons = segments[i]
        out.append(expm(_ladder_matrix(n, p, ons) * (t - ts)) @ xs)
    return np.array(out), instants


@pytest.mark.parametrize("n", [10, pytest.param(20, marks=pytest.mark.slow)])
def test_rlc_diodes_follow_the_exact_solution(rlc_fmus, n):
    """Ideal diodes (RLDC2's s-parameterization): the FMU's state events against the exact
    turn-off (i_k = 0) and turn-on (s_k = 0) instants of the piecewise linear solution, and
    every output row away from the instants to 1e-7."""
    fmu, p = rlc_fmus(n, "diode")
    outputs = [f"L{k + 1}.i" for k in range(n)] + [f"C{k + 1}.v" for k in range(n)]
    r = simulate_fmu(str(fmu), stop_time=STOP, relative_tolerance=1e-11, output_interval=0.05,
                     output=outputs, record_events=True)
    t = r["time"]
    events = t[np.flatnonzero(np.diff(t) == 0)]
    want, instants = _diode_ladder_exact(n, p, t)
    assert len(instants) >= 4
    assert len(events) == len(instants)
    assert np.max(np.abs(events - np.array(instants))) < 1e-7
    got = np.column_stack([r[x] for x in outputs])
    far = np.array([np.min(np.abs(np.array(instants) - tk)) > 1e-6 for tk in t])
    err = np.max(np.abs(got[far] - want[far, :2 * n]))
    assert err < 1e-7, err


def test_drive_line_conserves_angular_momentum_across_events(tmp_path_factory):
    """30 random host switchings of the drive line's 8 clutches: sum J_k w_k is continuous
    across every event to 1e-10 relative, while the speeds themselves jump (the engaged
    shafts take their inertia-weighted mean)."""
    n = 8
    fmu, p = _export(tmp_path_factory, gen_modeller.drive_line(n, "input"))
    names = [f"engage[{k + 1}]" for k in range(n)]
    table = gen_modeller.random_switchings(names, 30, STOP, seed=7)
    outputs = [f"shaft{k + 1}.w" for k in range(n + 1)]
    r = simulate_fmu(str(fmu), stop_time=STOP, relative_tolerance=1e-10, output_interval=0.05,
                     input=table, output=outputs, record_events=True)
    t = r["time"]
    J = np.array([p[f"shaft{k + 1}.J"] for k in range(n + 1)])
    w = np.column_stack([r[x] for x in outputs])
    momentum = w @ J
    events = np.flatnonzero(np.diff(t) == 0)
    assert len(events) >= 25
    jumps = [np.max(np.abs(w[k + 1] - w[k])) for k in events]
    assert sum(j > 1e-3 for j in jumps) >= 5              # engagements at unequal speeds
    rel = [abs(momentum[k + 1] - momentum[k]) / max(abs(momentum[k]), np.abs(J * w[k]).sum())
           for k in events]
    assert max(rel) < 1e-10, max(rel)
