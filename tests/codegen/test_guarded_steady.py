"""Blocks of every mode on the guarded schedule planned by the per-mode planner (issue 26,
Deliver 6-7; `mdae_fmu.codegen.guarded.steady_blocks`): in a model whose clutches switch, the
resistive network that drives the shafts is solved as the per-mode planner solves it in the
model with the clutches taken out (the nonlinear loop torn to one Newton unknown on its
trees, the linear pair on its trees), and the FMU follows an independent scipy solution
across host switchings of the clutches (restarts: the J-weighted means of docs/theory.md
§13.1)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("dd")
from fmpy import simulate_fmu  # noqa: E402
from scipy.integrate import solve_ivp  # noqa: E402
from scipy.optimize import brentq  # noqa: E402

from mdae_fmu import api  # noqa: E402
from mdae_fmu.codegen.blocks import classify  # noqa: E402
from mdae_fmu.codegen.guarded import plan_guarded  # noqa: E402
from mdae_fmu.codegen.plan import compile_model  # noqa: E402
from mdae_fmu.codegen.runs import affine, run_code, shape  # noqa: E402
from mdae_fmu.codegen.blocks import BlockPlan, emit_block  # noqa: E402
from mdae_fmu.codegen.cprinter import SlotPrinter  # noqa: E402
from mdae_fmu.codegen.slots import Slot  # noqa: E402

J = (1.0, 2.0, 1.5)
D, R1, R2, A, K = 0.1, 2.0, 1.0, 0.5, 3.0

CLUTCHES = """  if engage1 then
    w1 = w2;
  else
    tau1 = 0.0;
  end if;
  if engage2 then
    w2 = w3;
  else
    tau2 = 0.0;
  end if;
"""


def model_text(clutches: bool = True) -> str:
    """Three shafts, the first driven by a resistive network with a nonlinear element (a
    4-equation loop in i1, i2, i3, v1) and coupled to the second through a linear pair
    (p, q); two clutches engaged by Boolean inputs, or (``clutches`` False) always open."""
    ends = CLUTCHES if clutches else "  tau1 = 0.0;\n  tau2 = 0.0;\n"
    inputs = ("  input Boolean engage1(start = false);\n  input Boolean engage2(start = false);\n"
              if clutches else "")
    return f"""model SteadyLoops
  parameter Real J1 = {J[0]};
  parameter Real J2 = {J[1]};
  parameter Real J3 = {J[2]};
  parameter Real d = {D};
  parameter Real R1 = {R1};
  parameter Real R2 = {R2};
  parameter Real a = {A};
  parameter Real k = {K};
{inputs}  Real w1(start = 1.0, fixed = true);
  Real w2(start = 0.0, fixed = true);
  Real w3(start = -1.0, fixed = true);
  Real tau1;
  Real tau2;
  Real u;
  Real i1;
  Real i2;
  Real i3;
  Real v1;
  Real v2;
  Real p;
  Real q;
equation
  u = sin(time);
  R1 * i1 = u - v1;
  v1 = R2 * i2 + a * i2 ^ 3;
  v1 = R1 * i3 + v2;
  i1 = i2 + i3;
  v2 = 0.5 * w3;
  p + q = w1;
  p - 2.0 * q = w2;
  J1 * der(w1) = k * i2 - d * w1 - tau1 + 0.1 * q;
  J2 * der(w2) = tau1 - tau2 - d * w2 - 0.1 * q;
  J3 * der(w3) = tau2 - d * w3;
{ends}end SteadyLoops;
"""


def _load(tmp_path, text: str, name: str):
    path = tmp_path / f"{name}.mo"
    path.write_text(text)
    return api.load(path)


def _kinds(plans) -> set[tuple[frozenset[str], str]]:
    return {(frozenset(str(u) for u in b.unknowns),
             "tree" if b.tree is not None else "trees" if b.trees is not None else classify(b))
            for b in plans}


def test_blocks_of_every_mode_are_planned_as_in_one_mode(tmp_path):
    model = _load(tmp_path, model_text(), "SteadyLoops")
    a = api.analyze(model, implicit=True)
    assert a.accepted and a.guarded is not None and a.guarded.single is None
    plan = plan_guarded(a.code_model or model, a.guarded)
    steady = [gb for gb in plan.blocks if gb.formula == -1 and not gb.merged]
    assert steady and all(gb.pieces for gb in steady)
    # each steady block's pieces solve exactly its unknowns
    for gb in steady:
        assert sorted(str(u) for b in gb.pieces for u in b.unknowns) == \
            sorted(str(u) for u in gb.plan.unknowns)
    loop = next(gb for gb in steady if len(gb.plan.unknowns) == 4)
    assert classify(loop.plan) == "newton"          # the variant's own rows: 4 unknowns
    # the oracle: the per-mode planner on the model without the clutches (one mode)
    one = _load(tmp_path, model_text(clutches=False), "SteadyLoopsOneMode")
    report = api.analyze(one).guarded.single
    assert report is not None
    cm = compile_model(one, report)
    got = _kinds(b for gb in steady for b in gb.pieces)
    want = _kinds(cm.blocks)
    assert got <= want
    # the loop torn to one Newton unknown on its trees, three explicit assignments; the
    # linear pair on its trees
    pieces = _kinds(loop.pieces)
    assert sum(kind == "trees" for _, kind in pieces) == 1
    assert sum(kind == "tree" for _, kind in pieces) == 3
    assert (frozenset({"p", "q"}), "trees") in got
    # the blocks whose formula is not true keep the guarded schedule's own plan
    assert all(not gb.pieces for gb in plan.blocks if gb.formula != -1 or gb.merged)


def _network(t: float, w3: float) -> float:
    """i2 of the resistive network at time t (v2 = w3 / 2): the scalar monotone equation
    (u - v1)/R1 - (v1 - v2)/R1 = i2, v1 = R2 i2 + a i2^3."""
    u, v2 = np.sin(t), 0.5 * w3

    def f(i2):
        v1 = R2 * i2 + A * i2 ** 3
        return (u - v1) / R1 - (v1 - v2) / R1 - i2
    return brentq(f, -10.0, 10.0, xtol=1e-15, rtol=1e-15)


def _groups(e1: bool, e2: bool) -> list[list[int]]:
    out = [[0]]
    for j, e in ((1, e1), (2, e2)):
        if e:
            out[-1].append(j)
        else:
            out.append([j])
    return out


def _scipy(switches, stop: float, times):
    """The independent solution: between switchings each group of shafts joined by engaged
    clutches turns at one speed, (sum J) w' = sum of the torques on its shafts (q = (w1 -
    w2)/3 from the linear pair); at a switching each new group starts from the J-weighted
    mean of its shafts' speeds."""
    Jv = np.array(J)
    w = np.array([1.0, 0.0, -1.0])
    flags = (False, False)
    edges = [0.0] + [t for t, _ in switches] + [stop]
    modes = [flags]
    for _, f in switches:
        modes.append(f)
    sols = []
    for (t0, t1), (e1, e2) in zip(zip(edges, edges[1:]), modes):
        groups = _groups(e1, e2)
        for g in groups:
            w[g] = (Jv[g] * w[g]).sum() / Jv[g].sum()

        def rhs(t, x, groups=groups):
            q = (x[0] - x[1]) / 3.0
            tq = np.array([K * _network(t, x[2]) - D * x[0] + 0.1 * q,
                           -D * x[1] - 0.1 * q, -D * x[2]])
            out = np.empty(3)
            for g in groups:
                out[g] = tq[g].sum() / Jv[g].sum()
            return out
        s = solve_ivp(rhs, (t0, t1), w, rtol=1e-12, atol=1e-12, dense_output=True,
                      method="DOP853")
        sols.append((t0, t1, s))
        w = s.y[:, -1].copy()
    out = []
    for t in times:
        for t0, t1, s in sols:
            if t0 <= t <= t1:
                out.append(s.sol(t))
                break
        else:
            out.append(np.full(3, np.nan))
    return np.array(out)


@pytest.mark.long
def test_steady_loops_follow_an_independent_solution(tmp_path):
    model = _load(tmp_path, model_text(), "SteadyLoops")
    fmu = tmp_path / "SteadyLoops.fmu"
    api.export_fmu(model, fmu, progress=False)
    switches = [(1.0, (True, False)), (2.5, (True, True)), (4.0, (False, True)),
                (5.5, (False, False))]
    rows = [(0.0, False, False)]
    state = (False, False)
    for t, f in switches:
        rows += [(t, *state), (t, *f)]
        state = f
    rows.append((7.0, *state))
    table = np.array(rows, dtype=[("time", float), ("engage1", np.bool_),
                                  ("engage2", np.bool_)])
    r = simulate_fmu(str(fmu), stop_time=7.0, relative_tolerance=1e-11, output_interval=0.05,
                     input=table, output=["w1", "w2", "w3", "i2"])
    t = r["time"]
    away = np.array([min(abs(x - s) for s, _ in switches) > 1e-6 for x in t])
    want = _scipy(switches, 7.0, t[away])
    got = np.column_stack([r["w1"], r["w2"], r["w3"]])[away]
    assert np.all(np.isfinite(want))
    assert np.max(np.abs(got - want)) < 1e-7, np.max(np.abs(got - want))
    i2 = np.array([_network(x, w3) for x, w3 in zip(t[away], want[:, 2])])
    assert np.max(np.abs(r["i2"][away] - i2)) < 1e-7


def test_run_numbers_its_blocks_as_given():
    """A run of pieces numbered as the blocks they solve (`runs.affine`): the solver call
    names block ``first + step * q``; numbers that do not step evenly are no run."""
    assert affine([4, 4, 5, 5, 6, 6], 2)
    assert affine([4, 5, 6, 7], 1)
    assert not affine([4, 4, 5, 6, 6, 7], 2)
    import sympy as sp
    xs = [sp.Symbol(f"x{i}") for i in range(8)]
    slots = {x: Slot(array="r", index=i, name=str(x)) for i, x in enumerate(xs)}
    printer = SlotPrinter(slots, {}, {})
    shapes = []
    for q in range(4):
        a, b = xs[2 * q], xs[2 * q + 1]
        blk = BlockPlan(label=f"e{q}", unknowns=(a, b),
                        _residuals=(a + sp.sin(b) - 1, b - a ** 3))
        shapes.append([shape(emit_block(blk, 0, printer))])
    body, _ = run_code("run_t", shapes, 7, {}, "e", index=[7, 9, 11, 13])
    assert "7 + 2 * q" in body and "blocks 7..13" in body
    body, _ = run_code("run_t", shapes, 7, {}, "e")
    assert "7 + 1 * q" in body and "blocks 7..10" in body
