"""Tearing of Newton blocks (mdae_fmu.codegen.tearing).

* `select_tearing` on known incidence structures: a 3-equation loop that one tearing
  variable opens, preference for unknowns with a start value, a block with no explicit
  assignment (every unknown a tearing variable: the full Newton).
* The HeatingRectifier pattern of the Modelica Standard Library 3.1 (tests/data/
  heating_diode.mo: a diode whose saturation current depends on its temperature heats a
  thermal capacitor through a conductor; sine source, capacitor and load resistor): its
  12-equation thermal loop failed at initialization without tearing (``vt_t`` started at 0,
  ``v/vt_t`` infinite). It holds a user function, so it is torn on the sympy path; the
  variant heating_diode_tree.mo (plain ``exp``, 7 equations) is torn on the expression tree
  (`tear_tree_block`). Oracle: scipy's solve_ivp on the same equations reduced by hand to
  two states (capacitor voltage, heat capacitor temperature) with the loop solved for the
  diode temperature by brentq at each right-hand side evaluation; and the energy balance of
  the heat capacitor (its energy change = the integral of the diode's loss power, which all
  flows out through the conductor).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from mdae_fmu.codegen.blocks import BlockPlan
from mdae_fmu.codegen.tearing import select_tearing, tear_block

DATA = Path(__file__).resolve().parents[1] / "data"


def test_one_tearing_variable_opens_a_three_equation_loop():
    # e0: x = f(z); e1: y = g(x); e2: z = h(y) (each solvable for its left side only)
    inc = [{0, 2}, {0, 1}, {1, 2}]
    solv = [{0}, {1}, {2}]
    tr = select_tearing(inc, solv)
    assert len(tr.tearing) == 1 and len(tr.residuals) == 1
    assert len(tr.assignments) == 2
    # causal order: each assignment reads only the tearing variable and earlier assignments
    known = set(tr.tearing)
    for i, j in tr.assignments:
        assert inc[i] - known == {j}
        known.add(j)
    assert known == {0, 1, 2}


def test_preferred_unknown_becomes_the_tearing_variable():
    inc = [{0, 2}, {0, 1}, {1, 2}]
    solv = [{0, 2}, {0, 1}, {1, 2}]
    for p in range(3):
        tr = select_tearing(inc, solv, {p})
        assert tr.tearing == (p,)


def test_no_explicit_assignment_keeps_the_full_newton():
    inc = [{0, 1}, {0, 1}]
    tr = select_tearing(inc, [set(), set()])
    assert tr.assignments == () and sorted(tr.tearing) == [0, 1]
    x, y = sp.symbols("x y")
    blk = BlockPlan(
        label="e0+e1", unknowns=(x, y), _residuals=(sp.exp(x) + y**3 - 1, sp.sin(x * y) + x**3)
    )
    assert tear_block(blk) is None


def test_tear_block_substitutes_the_causal_chain():
    T, vt, P = sp.symbols("T vt P")
    k, Tb = sp.Rational(1, 40), sp.Integer(300)
    blk = BlockPlan(label="a+b+c", unknowns=(vt, P, T),
                    _residuals=(vt - k * T, P - sp.exp(1 / vt), 10 * (T - Tb) - P))
    out = tear_block(blk, frozenset({T}))
    assert out[0].unknowns == (T,) and [b.unknowns for b in out[1:]] == [(vt,), (P,)]
    (r,) = out[0].residuals
    assert r.free_symbols == {T}
    assert sp.simplify(r - (10 * (T - Tb) - sp.exp(1 / (k * T)))) == 0
    assert [b.label for b in out] == ["a+b+c", "a", "b"]


def _oracle(t_eval, A=1.0, Maxexp=15.0):
    from scipy.integrate import solve_ivp
    from scipy.optimize import brentq
    Ids, Rp, EG, N, TNOM, XTI = 1e-6, 1e8, 1.11, 1.0, 300.15, 3.0
    k, q, Gth, Cth, Rl, C = 1.380662e-23, 1.6021892e-19, 10.0, 0.1, 1.0, 1.0

    def exlin(x):
        return math.exp(Maxexp) * (1.0 + x - Maxexp) if x > Maxexp else math.exp(x)

    def current(v, T):
        vt = k * T / q
        aux = (T / TNOM - 1.0) * (EG / vt / N)
        return Ids * ((exlin(v / (vt * N)) - 1.0) * ((T / TNOM) ** (XTI / N) * math.exp(aux))) \
            + v / Rp

    def diode(t, vc, Th):
        v = A * math.sin(2 * math.pi * t) - vc
        def f(T):
            return Gth * (T - Th) - current(v, T) * v
        # the physical root: the first sign change above Th (far above, thermal runaway)
        b = Th + 1e-3
        while f(b) <= 0.0:
            b = Th + 2.0 * (b - Th)
        Ta = brentq(f, Th - 1e-9, b, xtol=1e-13, rtol=4 * np.finfo(float).eps)
        return v, current(v, Ta)

    def rhs(t, y):
        v, i = diode(t, y[0], y[1])
        return [(i - y[0] / Rl) / C, i * v / Cth]

    sol = solve_ivp(rhs, (0.0, t_eval[-1]), [0.0, 293.15], t_eval=t_eval, method="LSODA",
                    rtol=1e-11, atol=1e-12)
    return sol.y


@pytest.mark.long      # builds an FMU: out of -m quick
def test_heating_diode_initializes_and_matches_the_hand_reduced_oracle(tmp_path):
    pytest.importorskip("scipy")
    from fmpy import simulate_fmu

    import mdae_fmu
    fmu = tmp_path / "HeatDiode.fmu"
    mdae_fmu.export_fmu(mdae_fmu.load(DATA / "heating_diode.mo", model="HeatDiode"), fmu)
    r = simulate_fmu(str(fmu), stop_time=1.0, relative_tolerance=1e-10, output_interval=1e-3,
                     output=["vc", "Th", "LossPower", "portT", "vt_t", "Qflow"],
                     fmi_type="ModelExchange")
    t = r["time"]
    keep = np.concatenate(([True], np.diff(t) > 0))    # drop duplicated event rows
    t = t[keep]
    vc, Th = _oracle(t)
    assert np.max(np.abs(r["vc"][keep] - vc)) < 1e-6
    assert np.max(np.abs(r["Th"][keep] - Th)) < 1e-6
    assert Th[-1] - 293.15 > 1.0          # the diode does heat the capacitor noticeably
    # loop consistency: vt_t = k T/q at the diode temperature, loss power leaves through Gth
    assert np.allclose(r["vt_t"], 1.380662e-23 * r["portT"] / 1.6021892e-19, rtol=1e-12)
    assert np.allclose(r["Qflow"], r["LossPower"], rtol=0, atol=1e-9)
    # energy balance: Cth (Th(1) - Th(0)) = integral of the loss power (trapezoid on 1 ms)
    p = r["LossPower"][keep]
    energy = float(np.sum(np.diff(t) * (p[1:] + p[:-1]) / 2))
    assert abs(0.1 * (r["Th"][-1] - 293.15) - energy) < 1e-4 * max(1.0, abs(energy))


@pytest.mark.long      # builds an FMU: out of -m quick
def test_heating_diode_tree_block_is_torn_on_the_tree(tmp_path):
    pytest.importorskip("scipy")
    from fmpy import simulate_fmu

    import mdae_fmu
    from mdae_fmu.codegen.plan import compile_model
    model = mdae_fmu.load(DATA / "heating_diode_tree.mo")
    a = mdae_fmu.analyze(model)
    cm = compile_model(a.code_model or model, a.code_modes or a.modes)
    loop = [b for b in cm.blocks if "+" in b.label]
    assert len(loop) == 1 and loop[0].trees is not None      # still on the tree, no sympy
    assert [str(u) for u in loop[0].unknowns] == ["T"]        # the variable with a start
    fmu = tmp_path / "HeatDiodeTree.fmu"
    mdae_fmu.export_fmu(model, fmu)
    r = simulate_fmu(str(fmu), stop_time=1.0, relative_tolerance=1e-10, output_interval=1e-3,
                     output=["vc", "Th"], fmi_type="ModelExchange")
    vc, Th = _oracle(r["time"], A=0.5, Maxexp=math.inf)
    assert np.max(np.abs(r["vc"] - vc)) < 1e-6
    assert np.max(np.abs(r["Th"] - Th)) < 1e-6
    assert Th[-1] - 293.15 > 0.3


def test_torn_unknowns_are_divided_by_parameters_only():
    # 0 = w*x + y - 1 (w a variable outside the block, maybe 0 at run time), 0 = x - sin(y);
    # y (with a start value) is the tearing variable
    x, y, w = sp.symbols("x y w")
    blk = BlockPlan(label="e0+e1", unknowns=(x, y), _residuals=(w * x + y - 1, x - sp.sin(y)))
    out = tear_block(blk, frozenset({y}))
    assert out[0].unknowns == (y,) and out[1].label == "e1" and out[1].unknowns == (x,)
    assert sp.simplify(out[0].residuals[0] - (w * sp.sin(y) + y - 1)) == 0
    # w a parameter: x = (1 - y)/w from e0 (the first equation), residual e1
    out = tear_block(blk, frozenset({y}), params=frozenset({w}))
    assert out[0].unknowns == (y,) and out[1].label == "e0"
    assert sp.simplify(out[0].residuals[0] - ((1 - y) / w - sp.sin(y))) == 0
