"""Reference models and their reference results (reference_models/).

The CSV files are checked against invariants that do not depend on how they were produced
(conservation laws, constraints, restart maps of the papers, the numeric oracles of
docs/theory.md §13), and the generator is checked to be
deterministic. When the flat Modelica importer is present, every .mo file must parse and its
XML form (if committed) must give an equal Model.
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REF = Path(__file__).resolve().parents[2] / "reference_models"
INDEX = json.loads((REF / "references.json").read_text())


def load_csv(name: str) -> tuple[list[str], np.ndarray]:
    with open(REF / f"{name}.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    header = rows[0]
    data = np.array([[float(v) for v in r] for r in rows[1:]])
    return header, data


def columns(name: str) -> dict[str, np.ndarray]:
    header, data = load_csv(name)
    assert header[0] == "time"
    return {h: data[:, i] for i, h in enumerate(header)}


def event_pairs(c: dict[str, np.ndarray]) -> list[tuple[int, int]]:
    """Indices (left, right) of the duplicated rows at event times."""
    t = c["time"]
    return [(i, i + 1) for i in range(len(t) - 1) if t[i] == t[i + 1]]


def reference_csvs() -> list[Path]:
    """The reference results; ``NAME.input.csv`` files are input signals for the regression
    suite (reference_models/suite.toml), not results."""
    return [p for p in REF.glob("*.csv") if not p.name.endswith(".input.csv")]


def test_every_csv_is_indexed_well_formed_and_sized():
    csvs = sorted(p.stem for p in reference_csvs())
    assert csvs == sorted(INDEX)
    for name, info in INDEX.items():
        c = columns(name)
        t = c["time"]
        assert 200 <= len(t) <= 1100, name
        assert info["rows"] == len(t)
        assert np.all(np.diff(t) >= 0.0), f"{name}: time must be non-decreasing"
        assert all(np.all(np.isfinite(v)) for v in c.values()), name
        for m in info["models"]:
            assert (REF / f"{m}.mo").exists(), m
        # every duplicated time is a documented event, and every event is duplicated
        dup = sorted({float(t[i]) for i, _ in event_pairs(c)})
        assert dup == sorted(info.get("events", [])), name


@pytest.mark.long
def test_generator_reproduces_the_committed_references(tmp_path):
    """The committed CSVs are what make_references.py computes. Closed forms reproduce to the
    last digit; the DOP853 solutions (rtol 1e-12 or tighter) may differ in the last bits
    between SciPy/NumPy releases (located event times included), so values are compared at
    1e-10 relative. Row counts and headers must be identical."""
    subprocess.run([sys.executable, str(REF / "make_references.py"), str(tmp_path)], check=True,
                   timeout=900)   # ~20 s alone; minutes on a loaded machine
    for p in reference_csvs():
        with open(tmp_path / p.name, newline="") as fh:
            rows = list(csv.reader(fh))
        header, committed = load_csv(p.stem)
        assert rows[0] == header, p.name
        fresh = np.array([[float(v) for v in r] for r in rows[1:]])
        assert fresh.shape == committed.shape, p.name
        np.testing.assert_allclose(fresh, committed, rtol=1e-10, atol=1e-13, err_msg=p.name)
    assert_same_json(json.loads((tmp_path / "references.json").read_text()), INDEX)


def assert_same_json(fresh, committed, where="references.json"):
    """Equal structure and strings; floats equal to 1e-10 relative."""
    assert type(fresh) is type(committed), where
    if isinstance(fresh, dict):
        assert fresh.keys() == committed.keys(), where
        for k in fresh:
            assert_same_json(fresh[k], committed[k], f"{where}/{k}")
    elif isinstance(fresh, list):
        assert len(fresh) == len(committed), where
        for i, (a, b) in enumerate(zip(fresh, committed)):
            assert_same_json(a, b, f"{where}[{i}]")
    elif isinstance(fresh, float):
        assert math.isclose(fresh, committed, rel_tol=1e-10, abs_tol=1e-13), where
    else:
        assert fresh == committed, where


# --- clutches ---------------------------------------------------------------------------------

J1, J2, K1, K2 = 1.0, 2.0, 0.01, 0.0125


def test_clutch_engagement_restart_oracle_rederived():
    # (27) with b_i = 1/j_i: w+ = (j1 w1- + j2 w2-)/(j1 + j2), left limits of the released ODEs
    w1m, w2m = math.exp(-K1 / J1 * 5.0), 1.5 * math.exp(-K2 / J2 * 5.0)
    assert abs(w1m - 0.951229425) < 1e-9 and abs(w2m - 1.453849852) < 1e-9
    wp = (J1 * w1m + J2 * w2m) / (J1 + J2)
    assert abs(wp - 1.286309709) < 1e-9
    b1, b2 = 1 / J1, 1 / J2
    assert abs((b2 * w1m + b1 * w2m) / (b1 + b2) - wp) < 1e-15
    c = columns("ClutchBasic")
    (l5, r5), (l7, r7) = event_pairs(c)
    assert c["time"][l5] == 5.0 and c["time"][l7] == 7.0
    assert abs(c["w1"][l5] - w1m) < 1e-14 and abs(c["w2"][l5] - w2m) < 1e-14
    assert abs(c["w1"][r5] - 1.286309709) < 1e-9 and abs(c["w2"][r5] - 1.286309709) < 1e-9
    # the reset lies between the two left limits (Figure 9, qualitative oracle)
    assert w1m < c["w1"][r5] < w2m


def test_clutch_momentum_continuous_and_engaged_speeds_equal():
    c = columns("ClutchBasic")
    (l5, r5), (l7, r7) = event_pairs(c)
    mom = J1 * c["w1"] + J2 * c["w2"]
    assert abs(mom[r5] - mom[l5]) <= 1e-12 * abs(mom[l5])
    assert abs(mom[l5] - 3.858929128) < 1e-9
    # kinetic energy is lost at the (inelastic) engagement
    ke = 0.5 * (J1 * c["w1"] ** 2 + J2 * c["w2"] ** 2)
    assert ke[r5] < ke[l5]
    engaged = slice(r5, l7 + 1)
    assert np.all(c["w1"][engaged] == c["w2"][engaged])
    assert np.all(c["w1"][:l5] != c["w2"][:l5])
    assert np.all(c["f1"] + c["f2"] == 0.0)
    assert np.all(c["f1"][:l5 + 1] == 0.0) and np.all(c["f1"][r7:] == 0.0)
    # release is continuous; T-CL-5 numbers
    assert c["w1"][l7] == c["w1"][r7] and c["w2"][l7] == c["w2"][r7]
    assert abs(c["w1"][l7] - 1.267159053) < 1e-9
    assert c["time"][-1] == 10.0
    assert abs(c["w1"][-1] - 1.229708843) < 1e-9 and abs(c["w2"][-1] - 1.243621178) < 1e-9


def test_clutch_dynamics_by_finite_differences():
    """j_i w_i' = -k_i w_i + f_i on every smooth stretch (central differences, h = 0.01)."""
    c = columns("ClutchBasic")
    t, w1, w2, f1, f2 = c["time"], c["w1"], c["w2"], c["f1"], c["f2"]
    checked = 0
    for i in range(1, len(t) - 1):
        if any(t[i - 1] <= ev <= t[i + 1] for ev in (5.0, 7.0)):
            continue
        h = t[i + 1] - t[i - 1]
        d1, d2 = (w1[i + 1] - w1[i - 1]) / h, (w2[i + 1] - w2[i - 1]) / h
        assert abs(J1 * d1 - (-K1 * w1[i] + f1[i])) < 1e-9
        assert abs(J2 * d2 - (-K2 * w2[i] + f2[i])) < 1e-9
        checked += 1
    assert checked > 900


def test_nonsemilinear_clutch_restart_and_engaged_mode():
    a1, a2, b1, b2 = -0.01, -0.00625, 1.0, 0.5
    c = columns("ClutchNonSemilinear")
    (l5, r5), (l7, r7) = event_pairs(c)
    # (194): the linear shaft keeps its speed, the cubic shaft jumps to it
    assert c["w2"][r5] == c["w2"][l5] and c["w1"][r5] == c["w2"][l5]
    assert abs(c["w2"][l5] - 1.5 * math.exp(a2 * 5.0)) < 1e-14
    assert c["w1"][l5] != c["w1"][r5]
    eng = slice(r5, l7 + 1)
    w, f1 = c["w1"][eng], c["f1"][eng]
    assert np.all(c["w2"][eng] == w) and np.all(c["f2"][eng] == -f1)
    # e1 - e2 with w1' = w2': b1 f1^3 + b2 f1 + (a1 - a2) w = 0
    assert np.max(np.abs(b1 * f1 ** 3 + b2 * f1 + (a1 - a2) * w)) < 1e-15
    t = c["time"][eng]
    d = (w[2:] - w[:-2]) / (t[2:] - t[:-2])
    assert np.max(np.abs(d - (a2 * w[1:-1] - b2 * f1[1:-1]))) < 1e-10
    assert c["w1"][l7] == c["w1"][r7] and c["f1"][r7] == 0.0


# --- single-mode and classic event models ----------------------------------------------------

def test_dahlquist_matches_exp():
    c = columns("Dahlquist")
    assert np.max(np.abs(c["x"] - np.exp(-c["time"])) / np.exp(-c["time"])) < 1e-14


def test_van_der_pol_against_an_independent_integration():
    from scipy.integrate import solve_ivp
    c = columns("VanDerPol")
    assert c["x0"][0] == 2.0 and c["x1"][0] == 0.0 and c["time"][-1] == 20.0
    ts = c["time"][::50]
    sol = solve_ivp(lambda t, z: [z[1], (1 - z[0] ** 2) * z[1] - z[0]], (0, 20), [2.0, 0.0],
                    method="LSODA", rtol=1e-11, atol=1e-12, t_eval=ts)
    assert np.max(np.abs(sol.y[0] - c["x0"][::50])) < 1e-7
    assert np.max(np.abs(sol.y[1] - c["x1"][::50])) < 1e-7
    # the limit cycle of mu = 1 has amplitude ~2.0086
    assert 2.005 < np.max(np.abs(c["x0"][c["time"] > 10])) < 2.0095


def test_bouncing_ball_energy_shrinks_by_e_squared_at_each_bounce():
    g, e = 9.81, 0.7
    c = columns("BouncingBall")
    pairs = event_pairs(c)
    assert len(pairs) == 4
    energy = g * c["h"] + 0.5 * c["v"] ** 2
    assert abs(c["time"][pairs[0][0]] - math.sqrt(2.0 / g)) < 1e-15
    for left, right in pairs:
        assert c["h"][left] == 0.0 == c["h"][right]
        assert c["v"][left] < 0.0 < c["v"][right]
        assert abs(c["v"][right] + e * c["v"][left]) < 1e-14
        assert abs(energy[right] - e * e * energy[left]) < 1e-12
    bounds = [0] + [r for _, r in pairs] + [len(c["time"])]
    for a, b in zip(bounds[:-1], bounds[1:]):
        seg = energy[a:b if b == len(c["time"]) else b - 1]
        assert np.max(np.abs(seg - seg[0])) < 1e-12
    assert np.min(c["h"]) >= -1e-12


def test_pendulum_constraint_energy_and_quarter_period():
    from scipy.special import ellipk
    g, L = 9.81, 1.0
    c = columns("Pendulum")
    x, y, vx, vy, lam = c["x"], c["y"], c["vx"], c["vy"], c["lambda"]
    assert x[0] == 0.6 and vx[0] == 0.0 and abs(y[0] + 0.8) < 1e-15
    assert np.max(np.abs(x ** 2 + y ** 2 - L ** 2)) < 1e-9
    assert np.max(np.abs(x * vx + y * vy)) < 1e-9            # hidden constraint
    energy = g * y + 0.5 * (vx ** 2 + vy ** 2)
    assert np.max(np.abs(energy - energy[0])) < 1e-9
    assert np.max(np.abs(lam - (vx ** 2 + vy ** 2 - g * y) / L ** 2)) < 1e-9
    # first zero of x at a quarter of the period 4 sqrt(L/g) K(sin^2(theta0/2))
    th0 = math.asin(0.6)
    quarter = math.sqrt(L / g) * ellipk(math.sin(th0 / 2) ** 2)
    i = int(np.argmax(x < 0))
    tz = c["time"][i - 1] + (c["time"][i] - c["time"][i - 1]) * x[i - 1] / (x[i - 1] - x[i])
    assert abs(tz - quarter) < 1e-7


def test_stair_counter_and_integral():
    c = columns("Stair")
    t, n, x = c["time"], c["n"], c["x"]
    pairs = event_pairs(c)
    assert [t[lo] for lo, _ in pairs] == [float(k) for k in range(1, 11)]
    for lo, hi in pairs:
        assert n[hi] == n[lo] + 1 and x[hi] == x[lo]
    dup = {i for p in pairs for i in p}
    for i in range(len(t)):
        if i not in dup:
            assert n[i] == math.floor(t[i])
    assert x[-1] == 45.0
    smooth = [i for i in range(len(t) - 1) if i not in dup and i + 1 not in dup]
    for i in smooth:
        assert abs((x[i + 1] - x[i]) / (t[i + 1] - t[i]) - n[i]) < 1e-9


# --- Cup-and-Ball ----------------------------------------------------------------------------

def _segments(c):
    """Row ranges [a, b] between events (inclusive of the bounding event rows)."""
    pairs = event_pairs(c)
    starts = [0] + [r for _, r in pairs]
    ends = [lo for lo, _ in pairs] + [len(c["time"]) - 1]
    return list(zip(starts, ends)), pairs


def test_cup_and_ball_phases_restarts_and_slack():
    g, L = 9.81, 1.0
    c = columns("CupAndBall")
    x, y, vx, vy, lam, s = (c[k] for k in ("x", "y", "vx", "vy", "lam", "s"))
    assert (x[0], y[0], vx[0], vy[0]) == (0.0, -0.9, 6.0, 0.0)
    segs, pairs = _segments(c)
    kinds = ["taut" if lam[a] > 0 else "free" for a, _ in segs]
    assert kinds == ["free", "taut", "free", "taut"]     # two tightenings, one slack
    r2 = x ** 2 + y ** 2
    energy = g * y + 0.5 * (vx ** 2 + vy ** 2)
    for (a, b), kind in zip(segs, kinds):
        if kind == "free":
            assert np.all(lam[a:b + 1] == 0.0)
            assert np.max(r2[a:b + 1]) <= L ** 2 + 1e-12          # inside the circle
            assert np.max(np.abs(s[a:b + 1] - (L ** 2 - r2[a:b + 1]))) < 1e-15
            assert np.all(vx[a:b + 1] == vx[a])                      # ballistic
        else:
            assert np.max(np.abs(r2[a:b + 1] - L ** 2)) < 1e-9      # rope straight
            assert np.max(np.abs(x[a:b + 1] * vx[a:b + 1] + y[a:b + 1] * vy[a:b + 1])) < 1e-9
            assert np.all(lam[a:b] > 0.0) and np.all(s[a:b + 1] == -lam[a:b + 1])
            assert np.max(np.abs(lam[a:b + 1] - (vx[a:b + 1] ** 2 + vy[a:b + 1] ** 2
                                                  - g * y[a:b + 1]) / L ** 2)) < 1e-9
        assert np.max(np.abs(energy[a:b + 1] - energy[a])) < 1e-9     # no loss within a phase
    for (left, right), kind in zip(pairs, kinds[1:]):
        p = np.array([x[left], y[left]])
        vm = np.array([vx[left], vy[left]])
        if kind == "taut":       # tightening: (38) and (44)
            assert abs(np.linalg.norm(p) - L) < 1e-12
            pp = L * p / np.linalg.norm(p)
            vp = vm - (p @ vm) / (p @ p) * p
            assert abs(x[right] - pp[0]) < 1e-12 and abs(y[right] - pp[1]) < 1e-12
            assert abs(vx[right] - vp[0]) < 1e-12 and abs(vy[right] - vp[1]) < 1e-12
            assert energy[right] < energy[left] - 1.0               # inelastic
            assert s[left] <= 1e-12 and lam[right] > 0.0
        else:                    # slack: tension reaches 0, continuous state
            assert abs(lam[left]) < 1e-9 and lam[right] == 0.0
            for k in ("x", "y", "vx", "vy"):
                assert abs(c[k][right] - c[k][left]) < 1e-12


def test_cup_and_ball_restart_map_test_vectors():
    """T-CB-5 and the hand-computed Cup-and-Ball oracle (docs/theory.md §13.2), on the formula the
    CSV uses."""
    for p, vm, expected in (((0.0, -1.0), (1.0, -2.0), (1.0, 0.0)),
                            ((0.6, -0.8), (1.0, -1.0), (0.16, 0.12))):
        p, vm = np.array(p), np.array(vm)
        vp = vm - (p @ vm) / (p @ p) * p
        assert np.allclose(vp, expected, atol=1e-15) and abs(p @ vp) < 1e-15


def test_cup_and_ball_elastic_radial_restitution():
    g, L, e = 9.81, 1.0, 0.8
    c = columns("CupAndBallElastic")
    x, y, vx, vy = c["x"], c["y"], c["vx"], c["vy"]
    segs, pairs = _segments(c)
    assert len(pairs) == 4
    energy = g * y + 0.5 * (vx ** 2 + vy ** 2)
    for a, b in segs:
        assert np.max(x[a:b + 1] ** 2 + y[a:b + 1] ** 2) <= L ** 2 + 1e-12
        assert np.max(np.abs(energy[a:b + 1] - energy[a])) < 1e-12
    for left, right in pairs:
        p = np.array([x[left], y[left]])
        n = p / np.linalg.norm(p)
        vm, vp = np.array([vx[left], vy[left]]), np.array([vx[right], vy[right]])
        assert abs(np.linalg.norm(p) - L) < 1e-12 and y[left] < -0.5
        assert x[right] == x[left] and y[right] == y[left]
        assert n @ vm > 0.0
        assert abs(n @ vp + e * (n @ vm)) < 1e-12                  # radial restitution
        tang = np.array([-n[1], n[0]])
        assert abs(tang @ vp - tang @ vm) < 1e-12                  # tangential kept
        # the same restart written as in the model: vy law, vx from the radial impulse
        law_vy = vm[1] - (1 + e) * (p @ vm) * p[1] / (p @ p)
        assert abs(vp[1] - law_vy) < 1e-12
        assert abs((vp[0] - vm[0]) * p[1] - (vp[1] - vm[1]) * p[0]) < 1e-12


# --- air brake -------------------------------------------------------------------------------

def test_air_brake_valve_opening_is_continuous_and_equations_hold():
    F1, F2, rho, V, P0, S, L, K, pb = 1.0, 0.05, 1.0, 1.0, 1.0, 1.0, 1.0, 10.0, 1.0
    c = columns("AirBrake")
    t, pr, pt, x, b, fb, fv, fl, s = (c[k] for k in ("time", "pr", "pt", "x", "b", "fb", "fv",
                                                     "fl", "s"))
    (left, right), = event_pairs(c)
    assert abs(b - S * (pt - pr)).max() < 1e-15 and abs(b - K * x).max() < 1e-15   # l1, l2
    assert abs(fb - F1 * (pb - pr)).max() < 1e-15 and abs(fl - F2 * (pt - pr)).max() < 1e-15
    assert np.all(fv[:left + 1] == 0.0) and np.all(s[:left] > 0.0) and s[left] == 0.0   # closed
    assert np.all(s[:left + 1] == pt[:left + 1] - pr[:left + 1])
    assert np.all(pr[right:] == pt[right:]) and np.all(fv[right:] > 0.0)              # open
    assert np.all(s[right:] == -fv[right:])
    assert np.all((x >= 0.0) & (x <= L))      # the model's assertion
    for k in ("pr", "pt", "x", "b"):          # no state jumps at the physical switch
        assert c[k][left] == c[k][right]
    # m1, m2, r, p1, p2 by central differences on the smooth stretches
    checked = 0
    for i in range(1, len(t) - 1):
        if t[i - 1] <= t[left] <= t[i + 1]:
            continue
        h = t[i + 1] - t[i - 1]
        dpr, dpt, dx = ((c[k][i + 1] - c[k][i - 1]) / h for k in ("pr", "pt", "x"))
        ft = rho * V / P0 * dpt
        fcl = fb[i] - fv[i] + fl[i]
        fch = fv[i] - fl[i] - ft
        assert abs(rho * S * (dx * pr[i] + (x[i] - L) * dpr) + P0 * fcl) < 1e-4
        assert abs(rho * S * (dx * S * pt[i] + x[i] * dpt) - P0 * fch) < 1e-4
        checked += 1
    assert checked > 990


# --- RLDC2 -----------------------------------------------------------------------------------

def test_rldc2_rows_satisfy_mode_ff_and_its_guards():
    R1, R2, L1, L2 = 10.0, 15.0, 1.0, 1.5
    c = columns("RLDC2")
    t = c["time"]
    g = {k: c[k] for k in c}
    assert (g["j1"][0], g["j2"][0], g["v1"][0], g["v2"][0]) == (0.2, -0.2, -0.5, -1.0)
    tol = 1e-14
    assert np.max(np.abs(g["j1"] + g["i1"] + g["i2"] + g["j2"])) < tol          # K1
    assert np.max(np.abs(g["x1"] + g["w1"] - g["u1"] - g["v1"])) < tol          # K2
    assert np.max(np.abs(g["u1"] + g["v1"] - g["u2"] - g["v2"])) < tol          # K3
    assert np.max(np.abs(g["u2"] + g["v2"] - g["x2"] - g["w2"])) < tol          # K4
    assert np.max(np.abs(g["x1"] - R1 * g["j1"])) < tol                         # R1
    assert np.max(np.abs(g["x2"] - R2 * g["j2"])) < tol                         # R2
    assert np.all(g["i1"] == 0.0) and np.all(g["i2"] == 0.0)                    # Z1, Z2 (FF)
    assert np.all(np.diff(g["v1"]) == 0.0) and np.all(np.diff(g["v2"]) == 0.0)  # C1, C2
    assert np.all(g["s1"] == -g["u1"]) and np.all(g["s2"] == -g["u2"])          # S1, S2 (FF)
    assert np.all(g["s1"] < 0.0) and np.all(g["s2"] < 0.0)                      # guards stay F
    for j, w, Lk in (("j1", "w1", L1), ("j2", "w2", L2)):                      # L1, L2
        d = (g[j][2:] - g[j][:-2]) / (t[2:] - t[:-2])
        # central differences of exp(-10 t) with h = 2e-3: relative error ~ (10 h)^2 / 6
        assert np.max(np.abs(Lk * d - g[w][1:-1]) / np.abs(g[w][1:-1])) < 1e-3



RL = dict(R1=10.0, R2=15.0, L1=1.0, L2=1.5, C1=0.1, C2=0.15)


def _kirchhoff_and_element_laws(g: dict, tol: float) -> None:
    """K1-K4 and R1, R2 hold on every row of an RLDC2-family CSV."""
    assert np.max(np.abs(g["j1"] + g["i1"] + g["i2"] + g["j2"])) < tol          # K1
    assert np.max(np.abs(g["x1"] + g["w1"] - g["u1"] - g["v1"])) < tol          # K2
    assert np.max(np.abs(g["u1"] + g["v1"] - g["u2"] - g["v2"])) < tol          # K3
    assert np.max(np.abs(g["u2"] + g["v2"] - g["x2"] - g["w2"])) < tol          # K4
    assert np.max(np.abs(g["x1"] - RL["R1"] * g["j1"])) < tol                   # R1
    assert np.max(np.abs(g["x2"] - RL["R2"] * g["j2"])) < tol                   # R2


def _dynamic_laws_between_events(g: dict, events: list[float]) -> None:
    """L1, L2, C1, C2 by central differences on rows away from the switches."""
    t = g["time"]
    ok = np.ones(len(t) - 2, dtype=bool)
    for te in events:
        ok &= np.abs(t[1:-1] - te) > 2.5e-3
    for state, flow, k in (("j1", "w1", RL["L1"]), ("j2", "w2", RL["L2"]),
                           ("v1", "i1", RL["C1"]), ("v2", "i2", RL["C2"])):
        d = (g[state][2:] - g[state][:-2]) / (t[2:] - t[:-2])
        scale = max(1e-3, float(np.max(np.abs(g[flow]))))
        # second-order differences with h = 1e-3..2e-3 on time constants of 0.1 s
        assert np.max(np.abs(k * d - g[flow][1:-1])[ok]) < 2e-3 * scale, state


def _switch_rows(name: str) -> list[tuple[int, int]]:
    return event_pairs(columns(name))


def test_rldc2_switched_modes_restarts_and_laws():
    """Between switches each row satisfies its mode (the input schedule); at a switch into
    TT the capacitors share their charge, into FF the inductors share their flux
    (docs/theory.md §13.4), and every other switch is continuous."""
    g = columns("RLDC2Switched")
    info = INDEX["RLDC2Switched"]
    _kirchhoff_and_element_laws(g, 1e-13)
    _dynamic_laws_between_events(g, info["events"])
    schedule = [(0.0, True, False), (0.1, True, True), (0.2, False, True), (0.3, False, False),
                (0.4, True, True), (0.5, False, False), (0.6, True, False)]
    assert [s[0] for s in schedule[1:]] == info["events"]
    t = g["time"]
    for k, (t0, g1, g2) in enumerate(schedule):
        t1 = schedule[k + 1][0] if k + 1 < len(schedule) else t[-1] + 1
        inside = (t > t0) & (t < t1)
        for closed, u, i in ((g1, "u1", "i1"), (g2, "u2", "i2")):
            assert np.all(np.abs(g[u if closed else i][inside]) < 1e-13), (t0, u, i)
    C1, C2, L1, L2 = RL["C1"], RL["C2"], RL["L1"], RL["L2"]
    for (left, right), (te, g1, g2) in zip(_switch_rows("RLDC2Switched"), schedule[1:]):
        m = {k: (g[k][left], g[k][right]) for k in ("j1", "j2", "v1", "v2")}
        if (g1, g2) == (True, True):
            share = (C1 * m["v1"][0] + C2 * m["v2"][0]) / (C1 + C2)
            assert m["v1"][1] == pytest.approx(share, rel=1e-13)
            assert m["v2"][1] == pytest.approx(share, rel=1e-13)
            assert m["v1"][0] != pytest.approx(m["v2"][0], rel=1e-3)   # a real restart
        elif (g1, g2) == (False, False):
            flux = (L1 * m["j1"][0] - L2 * m["j2"][0]) / (L1 + L2)
            assert m["j1"][1] == pytest.approx(flux, rel=1e-13)
            assert m["j2"][1] == pytest.approx(-flux, rel=1e-13)
            assert m["j1"][0] + m["j2"][0] != pytest.approx(0.0, abs=1e-4)
        for k, (a, b) in m.items():
            moved = ((g1, g2) == (True, True) and k in ("v1", "v2")) or \
                ((g1, g2) == (False, False) and k in ("j1", "j2"))
            if not moved:
                assert a == b, (te, k)
        # charge sharing keeps the charge, flux sharing keeps the flux linkage of the loop
        assert C1 * m["v1"][1] + C2 * m["v2"][1] == pytest.approx(
            C1 * m["v1"][0] + C2 * m["v2"][0], rel=1e-12, abs=1e-15)
        assert L1 * m["j1"][1] - L2 * m["j2"][1] == pytest.approx(
            L1 * m["j1"][0] - L2 * m["j2"][0], rel=1e-12, abs=1e-15)


def test_rldc2_diodes_switch_physically_and_continuously():
    """The physical diode law: a conducting diode has u = 0, i >= 0; a blocking one i = 0,
    u <= 0; the two switches (TF -> TT when v1 reaches v2, TT -> FF when j1 + j2 reaches 0)
    are continuous, and FF persists to the end."""
    g = columns("RLDC2Diodes")
    info = INDEX["RLDC2Diodes"]
    _kirchhoff_and_element_laws(g, 1e-13)
    _dynamic_laws_between_events(g, info["events"])
    t = g["time"]
    t_on, t_off = info["events"]
    assert 0.0 < t_on < t_off < t[-1]
    tol = 1e-12
    for i1, i2, u1, u2, tk in zip(g["i1"], g["i2"], g["u1"], g["u2"], t):
        for i, u in ((i1, u1), (i2, u2)):
            assert i >= -tol and u <= tol and abs(i * u) < tol, tk       # 0 <= i _|_ u <= 0
    tf = t < t_on
    assert np.all(np.abs(g["u1"][tf]) < tol) and np.all(g["i2"][tf] == 0.0)
    tt = (t > t_on) & (t < t_off)
    assert np.all(np.abs(g["u1"][tt]) < tol) and np.all(np.abs(g["u2"][tt]) < tol)
    ff = t > t_off
    assert np.all(g["i1"][ff] == 0.0) and np.all(g["i2"][ff] == 0.0)
    assert np.all(g["u1"][ff] < 0.0) and np.all(g["u2"][ff] < 0.0)
    for left, right in _switch_rows("RLDC2Diodes"):
        for k in ("j1", "j2", "v1", "v2"):   # the sharing restarts move nothing but rounding
            assert g[k][right] == pytest.approx(g[k][left], rel=1e-14, abs=1e-15)
    left_on, _ = _switch_rows("RLDC2Diodes")[0]
    assert g["v1"][left_on] == pytest.approx(g["v2"][left_on], abs=1e-12)   # u2 = v1 - v2 = 0
    left_off, _ = _switch_rows("RLDC2Diodes")[1]
    assert g["j1"][left_off] + g["j2"][left_off] == pytest.approx(0.0, abs=1e-12)


# --- importer round trip (when the importer exists) ----------------------------------------

MO_FILES = sorted(REF.glob("*.mo"))


def test_models_named_in_the_readme_exist():
    readme = (REF / "README.md").read_text()
    for mo in MO_FILES:
        assert f"{mo.stem}.mo" in readme, f"{mo.name} is not documented in README.md"


@pytest.mark.parametrize("mo", MO_FILES, ids=[p.stem for p in MO_FILES])
def test_every_model_parses_and_matches_its_xml_form(mo):
    fm = pytest.importorskip("mdae_fmu.importers.flat_modelica")
    model = fm.load_modelica(mo)
    assert model.name == mo.stem
    names = {v.name for v in model.variables}
    for info in INDEX.values():
        if mo.stem in info["models"]:
            aliases = info.get("aliases", {}).get(mo.stem, {})
            header, _ = load_csv(Path(info["csv"]).stem)
            for col in header[1:]:
                assert col in names or col in aliases, f"{mo.stem}: CSV column {col} unknown"
    xml = mo.with_suffix(".xml")
    if xml.exists():
        xe = pytest.importorskip("mdae_fmu.importers.xml_eqlist")
        assert xe.load_xml(xml) == model


def test_guarded_clutch_ids_match_the_paper_labels():
    fm = pytest.importorskip("mdae_fmu.importers.flat_modelica")
    from mdae_fmu import expr as E
    m = fm.load_modelica(REF / "ClutchGuarded.mo")
    eqs = {e.id: e for e in m.equations}
    g = E.Ref("g")
    assert [e.id for e in m.equations] == ["e1", "e2", "e3", "e4", "e5", "e6"]
    assert eqs["e1"].guard == () and eqs["e2"].guard == ()
    guarded = ("e3", "e4", "e5", "e6")
    assert all(len(eqs[i].guard) == 1 and eqs[i].guard[0].cond == g for i in guarded)
    assert [eqs[i].guard[0].positive for i in guarded] == [True, True, False, False]
    assert m.var("g").causality == "input"


def test_clutch_basic_imports_to_the_paper_equations():
    """The importer's IR of ClutchBasic.mo is Figure 2, term by term (README id mapping)."""
    fm = pytest.importorskip("mdae_fmu.importers.flat_modelica")
    from mdae_fmu import expr as E
    R, C, B = E.Ref, E.Const, E.BinOp
    m = fm.load_modelica(REF / "ClutchBasic.mo")
    expected = [
        ("e1", B("-", E.Der(R("t")), C(1.0))),
        ("e2", B("-", R("g"), B("and", B(">=", R("t"), R("t1")), B("<=", R("t"), R("t2"))))),
        ("e3", B("-", B("*", R("j1"), E.Der(R("w1"))),
                 B("+", B("*", E.UnOp("-", R("k1")), R("w1")), R("f1")))),
        ("e4", B("-", B("*", R("j2"), E.Der(R("w2"))),
                 B("+", B("*", E.UnOp("-", R("k2")), R("w2")), R("f2")))),
        ("e5", E.If(R("g"), B("-", R("w1"), R("w2")), R("f1"))),
        ("e6", B("+", R("f1"), R("f2"))),
    ]
    assert [(e.id, e.residual) for e in m.equations] == expected
    assert all(e.guard == () for e in m.equations)
    assert m.var("w1").start == R("w01") and m.var("w1").fixed is True
    assert m.var("g").type == "Boolean" and m.var("g").variability == "discrete"
