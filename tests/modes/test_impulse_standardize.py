"""Impulse analysis (Algorithm IA), standardization (Algorithm ST) and the delta-scheme
(Algorithm 14) on the worked examples of docs/theory.md §9, §13."""

import math

import numpy as np
import pytest
import sympy as sp

from mdae_fmu.impulse.analysis import impulse_analysis
from delta_oracle import delta_scheme, solve_at
from mdae_fmu.impulse.standardize import leading_order, standardize
from mdae_fmu.modes import analyze_multimode
import multimode_examples as X
from mdae_fmu.modes.restart import restart_problem
from mdae_fmu.modes.shiftform import ShiftForm

S = lambda n: sp.Symbol(n, real=True)   # noqa: E731


def problem(model, src, dst, k=0):
    a = analyze_multimode(model, standardize=False)
    inst = a.change(src, dst).instants[k].instant
    return restart_problem(ShiftForm(a.system), inst)


def orders(ia):
    return {str(v): o.text() for v, o in ia.orders.items()}


@pytest.fixture(scope="module")
def clutch_ft():
    return problem(X.clutch_paper(), "not g", "g")


def test_clutch_impulse_orders(clutch_ft):
    """T-CL-3: engagement: torques impulsive of order 1, shaft jumps finite; release: torques
    vanish, velocities continuous (jump of order -1)."""
    ia = impulse_analysis(clutch_ft)
    o = orders(ia)
    assert o["t1@0"] == o["t2@0"] == "1" and o["U_w1"] == o["U_w2"] == "0"
    assert {str(v) for v in ia.forced} == {"t1@0", "t2@0"} and not ia.possible
    rel = impulse_analysis(problem(X.clutch_paper(), "g", "not g"))
    o = orders(rel)
    assert o["t1@0"] == o["t2@0"] == "-inf" and o["U_w1"] == o["U_w2"] == "-1"
    assert not rel.impulsive


def test_clutch_standardization_needs_elimination(clutch_ft):
    """T-CL-4: d := 0 in the raw engagement system is structurally singular (the torques only
    remain in e4), so ST eliminates them (S1); the result is the weighted mean (27)."""
    st = standardize(clutch_ft)
    assert st.method == "S1"
    w = {str(e.lhs): e.rhs for e in st.restart}
    j1, j2, w1, w2 = S("j1"), S("j2"), S("w1-"), S("w2-")
    b1, b2 = 1 / j1, 1 / j2
    assert sp.simplify(w["w1+"] - (b2 * w1 + b1 * w2) / (b1 + b2)) == 0
    assert sp.simplify(w["w2+"] - w["w1+"]) == 0
    rel = standardize(problem(X.clutch_paper(), "g", "not g"))
    assert rel.method == "S0" and {str(e.lhs): str(e.rhs) for e in rel.restart} == \
        {"w1+": "w1-", "w2+": "w2-"}


def test_clutch_brute_force_error_is_order_delta(clutch_ft):
    """T-CL-7: delta-scheme error of the restart (a1 b2 + a2 b1)/(b1 + b2) * delta."""
    w1, w2 = math.exp(-0.05), 1.5 * math.exp(-0.03125)
    exact = (w1 + 2 * w2) / 3
    for delta, err in [(1e-2, -9.23e-5), (1e-4, -9.23e-7)]:
        v = solve_at(clutch_ft, None, {("w1", 0): w1, ("w2", 0): w2}, delta)
        assert v[S("w1+")] - exact == pytest.approx(err, rel=2e-2)


@pytest.fixture(scope="module")
def cubic():
    return problem(X.clutch_cubic(), "not g", "g")


def test_cubic_clutch_fractional_orders(cubic):
    """T-NL-1 (corrected orders, docs/theory.md §14.1)."""
    o = orders(impulse_analysis(cubic))
    assert o["t1@0"] == o["t2@0"] == "1/3"
    assert o["U_w1"] == "0" and o["U_w2"] == "-2/3"


def test_cubic_clutch_rescaling(cubic):
    """T-NL-2 / T-GEN-3: the torque enters cubically, so ST rescales (S2): w1+ = w2+ = w2-,
    rescaled torque cbrt((w2- - w1-)/b1) = 4^(1/3) for b1 = 1, w1- = 1, w2- = 5."""
    st = standardize(cubic)
    assert st.method == "S2"
    w = {str(e.lhs): e.rhs for e in st.restart}
    assert w["w1+"] == S("w2-") and w["w2+"] == S("w2-")
    that = st.solution[S("t1@0_hat")]
    val = complex(that.xreplace({S("w1-"): 1, S("w2-"): 5, S("b1"): 1}).evalf())
    assert val.real == pytest.approx(4 ** (1 / 3), rel=1e-12) and abs(val.imag) < 1e-12


@pytest.mark.parametrize("eps", [1e-4, 1e-6, 1e-8])
def test_cubic_clutch_delta_scheme_converges(cubic, eps):
    """T-NL-3: Algorithm 14 (theta = 0.5, h0 = 1e-2, rescaled torques) reaches the closed form
    (w2-, w2-) with error below 2 eps in at most ~40 iterations."""
    ia = impulse_analysis(cubic)
    r = delta_scheme(cubic, ia, {("w1", 0): 1.0, ("w2", 0): 5.0}, eps=eps)
    assert r.converged and r.iterations <= 45
    eta = max(abs(v - 5.0) for v in r.values.values())
    assert eta < 2 * eps


def test_delta_scheme_detects_non_convergence(cubic):
    r = delta_scheme(cubic, impulse_analysis(cubic), {("w1", 0): 1.0, ("w2", 0): 5.0},
                     eps=1e-30, max_iter=8)
    assert not r.converged and r.message


def test_cup_and_ball_restart_maps():
    """T-CB-5: positions projected radially (instant 1, shift level), radial velocity removed
    (instant 2, jet level); test vectors of the notes."""
    a = analyze_multimode(X.cup_and_ball())
    ch = a.change("not g", "g")
    assert [i.level for i in ch.instants] == ["shift", "jet"]
    assert [i.method for i in ch.instants] == ["S1", "S1"]
    assert {v for v, _ in ch.instants[0].impulsive} == {"lam", "s"}
    m = {str(e.lhs): e.rhs for e in ch.restart}
    f = sp.lambdify([S("x-"), S("y-"), S("der(x)-"), S("der(y)-"), S("L")],
                    [m["x+"], m["y+"], m["der(x)+"], m["der(y)+"]])
    assert np.allclose(f(0, -1, 1, -2, 1), [0, -1, 1, 0])
    assert np.allclose(f(0.6, -0.8, 1, -1, 1), [0.6, -0.8, 0.16, 0.12])
    x, y, vx, vy = f(0.0, -1.1, 1, -2, 1)           # overshoot: radial projection
    assert np.allclose([x, y], [0, -1]) and abs(x * vx + y * vy) < 1e-12


def test_elastic_impact_restart():
    """T-CB-7: with the impact law vy+ = -(1 - alpha) vy-, lam is impulsive and
    vx+ = vx- - (2 - alpha) vy- x / y, positions continuous."""
    a = analyze_multimode(X.cup_and_ball_elastic(alpha=0.2))
    m = {str(e.lhs): e.rhs for e in a.changes[0].restart}
    x, y, vx, vy = S("x-"), S("y-"), S("vx-"), S("vy-")
    assert sp.simplify(m["vy+"] + sp.Float(0.8) * vy) == 0
    assert sp.simplify(m["vx+"] - (vx - sp.Float(1.8) * vy * x / y)) == 0
    assert m["x+"] == x and m["y+"] == y


@pytest.mark.long      # 3.3 s of CPU
def test_rldc2_charge_and_flux_sharing():
    """T-RL-4 restarts: TF -> TT charge sharing (0.8 from v = 0.5, 1.0), TF -> FF flux
    sharing (0.2 from j = 2, 1)."""
    a = analyze_multimode(X.rldc2(j1=0.2, j2=-0.2))
    vals = {S("C1"): 0.1, S("C2"): 0.15, S("L1"): 1.0, S("L2"): 1.5, S("v1-"): 0.5,
            S("v2-"): 1.0, S("j1-"): 2.0, S("j2-"): 1.0}
    tt = {str(e.lhs): e.rhs for e in a.change("g1,not g2", "g1,g2").restart}
    assert float(tt["v1+"].xreplace(vals)) == pytest.approx(0.8)
    assert float(tt["v2+"].xreplace(vals)) == pytest.approx(0.8)
    ff = {str(e.lhs): e.rhs for e in a.change("g1,not g2", "not g1,not g2").restart}
    assert float(ff["j1+"].xreplace(vals)) == pytest.approx(0.2)
    assert float(ff["j2+"].xreplace(vals)) == pytest.approx(-0.2)
    dbl = {str(e.lhs): e.rhs for e in a.change("g1,g2", "not g1,not g2").restart}
    assert float(dbl["j1+"].xreplace(vals)) == pytest.approx(0.2)   # i1- = i2- = 0 composed


def test_air_brake_restarts():
    """T-WB-4: the f -> t candidates are {ft, fcl, fch, fv, s}; for a pre-state of the closed
    mode (facts l1, l2) x+ = b+ = 0 and pr+ = pt+ = the closed form of §2.3.6; t -> f is
    continuous."""
    a = analyze_multimode(X.air_brake())
    ch = a.change("not g", "g")
    assert {v for v, _ in ch.instants[0].impulsive} == {"ft", "fcl", "fch", "fv", "s"}
    m = {str(e.lhs): e.rhs for e in ch.restart}
    P = {S("S"): 0.5, S("L"): 1.0, S("V"): 2.0, S("K"): 3.0}
    pr, pt = 0.7, 0.4
    b = 0.5 * (pt - pr)
    x = b / 3.0
    pre = {S("pr-"): pr, S("pt-"): pt, S("b-"): b, S("x-"): x, **P}
    ev = {k: float(v.xreplace(pre)) for k, v in m.items()}
    assert ev["x+"] == pytest.approx(0, abs=1e-14) and ev["b+"] == pytest.approx(0, abs=1e-14)
    Sv, Lv, Vv = 0.5, 1.0, 2.0
    p = (Lv * Sv * pr + (Sv ** 2 * x + Sv * x + Vv) * pt - 2 * Sv * x * pr) / (Lv * Sv + Vv)
    assert ev["pr+"] == pytest.approx(p) and ev["pt+"] == pytest.approx(p)
    rel = {str(e.lhs): str(e.rhs) for e in a.change("g", "not g").restart}
    assert rel == {"b+": "b-", "pr+": "pr-", "pt+": "pt-", "x+": "x-"}
    # the residual pr - pt of the erased v1 is the guard's zero-crossing variable s (v4)
    assert [d.code for d in a.diagnostics] == ["W-FAKE-IMPULSE"] and a.accepted
    assert "v1" in a.diagnostics[0].message and "s = 0" in a.diagnostics[0].message


def test_leading_order():
    d, x = sp.Symbol("d", positive=True), S("x")
    assert leading_order((x - 1) / d + 3, d) == x - 1
    assert leading_order(d ** 2 * x + d ** 3, d) == x


def test_non_power_impulse_falls_back_to_the_delta_scheme():
    """T-NL-4: w1' = a1 w1 + b1 sinh(t1): no power order balances the residual (rule (127)),
    IA reports W-IMPULSE-ORDER, ST uses S3, and the delta-scheme converges to w2- with the
    errors of the note (a = -1, b = 1, w1- = 1, w2- = 5)."""
    from mdae_fmu.ir import Model
    m = X.clutch_cubic()
    eqs = tuple(X.eq("e1", "der(w1) = a1*w1 + b1*sinh(t1)") if e.id == "e1" else e
                for e in m.equations)
    model = Model(name="ClutchSinh", variables=m.variables, equations=eqs)
    a = analyze_multimode(model)
    assert a.accepted and [d.code for d in a.diagnostics] == ["W-IMPULSE-ORDER"]
    inst = a.change("not g", "g").instants[0]
    assert inst.method == "S3" and ("t1", "undetermined") in inst.impulsive
    p = problem(model, "not g", "g")
    for delta, err in [(1e-4, -1.6e-3), (1e-6, -2.1e-5)]:
        v = solve_at(p, None, {("w1", 0): 1.0, ("w2", 0): 5.0}, delta)
        assert v[S("w1+")] - 5.0 == pytest.approx(err, rel=0.1)


@pytest.mark.long      # 1.7 s of CPU
def test_large_instants_solve_only_what_the_restart_reads():
    """A clutch with a 40-equation nonlinear algebraic chain fed by w1 (more unknowns than
    `WHOLE_SOLVE_LIMIT`): the restart is the clutch's weighted mean (T-CL-4) and the
    standardization never solves the chain, which no restart reads (MSL 3.1
    ThyristorBehaviourTest: sympy.solve of a whole circuit did not come back in 600 s)."""
    from dataclasses import replace

    from mdae_fmu.impulse.standardize import WHOLE_SOLVE_LIMIT
    base = X.clutch_paper()
    n = 40
    assert n > WHOLE_SOLVE_LIMIT
    chain = tuple(X.eq(f"c{k}", f"y{k} = exp(-y{k - 1}**2) + sin(y{k - 1})" if k > 1
                       else "y1 = exp(-w1**2)") for k in range(1, n + 1))
    model = replace(base, variables=base.variables + tuple(X.real(f"y{k}")
                                                           for k in range(1, n + 1)),
                    equations=base.equations + chain)
    for src, dst in (("not g", "g"), ("g", "not g")):
        st = standardize(problem(model, src, dst))
        assert not any(str(u).startswith("y") for u in st.solution)
        w = {str(e.lhs): e.rhs for e in st.restart}
        j1, j2, w1, w2 = S("j1"), S("j2"), S("w1-"), S("w2-")
        if dst == "g":
            b1, b2 = 1 / j1, 1 / j2
            assert sp.simplify(w["w1+"] - (b2 * w1 + b1 * w2) / (b1 + b2)) == 0
        else:
            assert w == {"w1+": w1, "w2+": w2}
