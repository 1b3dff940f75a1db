"""Restart of a when-clause instant on a circuit (issue 13, MSL 3.1 CauerLowPassSC.Rn/Rp and
NandGate): a pulse source's ``when sample(0, period) then T0 = time; end when;`` assigns a
discrete Real, reinits nothing and changes no structure, and the pulse it defines drives the
source and a commuting switch (if-expressions multiplying unknowns, as MSL's
IdealCommutingSwitch) in front of an RC ladder written with pins and connections as omc
flattens it.

The standard restart of such an instant keeps the capacitor voltages (x+ = x-, Theorem 67 of
docs/theory.md §9.4; the algebraic unknowns are those of the
mode, solved again at run time). The analysis must find it without solving the circuit by
sympy.solve (which seeks the switch's if-expressions through a Gröbner basis), on a ladder
small enough to be solved whole (at most `WHOLE_SOLVE_LIMIT` unknowns) and on one larger.

Oracle: the ladder's ODE ``C x' = A(on) x + b(on) V`` is linear with piecewise-constant
coefficients; on each interval where the pulse is constant its exact solution is the matrix
exponential (scipy.linalg.expm) of the augmented system.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

pytest.importorskip("fmpy")
from fmpy import simulate_fmu  # noqa: E402

from mdae_fmu.analysis import analyze  # noqa: E402
from mdae_fmu.fmu.export import export  # noqa: E402
from mdae_fmu.importers.flat_modelica import parse_modelica  # noqa: E402
from mdae_fmu.impulse.problem import presolve  # noqa: E402
from mdae_fmu.impulse.standardize import WHOLE_SOLVE_LIMIT  # noqa: E402
from mdae_fmu.modes import analyze_multimode  # noqa: E402
from mdae_fmu.modes.restart import restart_problem  # noqa: E402
from mdae_fmu.modes.shiftform import ShiftForm  # noqa: E402

V, R, C, RON, GOFF, RB, PERIOD, WIDTH = 1.0, 1.0, 0.1, 0.5, 0.2, 2.0, 0.4, 0.15

# MSL's IdealCommutingSwitch between the source (p), the ground (n1) and the ladder (n2): while
# ``on``, p--n2 closed (Ron) and p--n1 open (conductance Goff); otherwise the reverse. The
# resistor ``byp`` (Rb) bypasses p--n2: the node of n2 closes a loop of the two branches.
SWITCH = ["  0.0 = sw.p.i + sw.n2.i + sw.n1.i;",
          "  sw.p.v - sw.n1.v = sw.s1 * (if on then 1.0 else Ron);",
          "  sw.n1.i = -sw.s1 * (if on then Goff else 1.0);",
          "  sw.p.v - sw.n2.v = sw.s2 * (if on then Ron else 1.0);",
          "  sw.n2.i = -sw.s2 * (if on then 1.0 else Goff);",
          "  byp.v = byp.p.v - byp.n.v;", "  byp.v = Rb * byp.i;",
          "  0.0 = byp.p.i + byp.n.i;", "  byp.i = byp.p.i;",
          "  sw.p.v = src.p.v;", "  byp.p.v = src.p.v;", "  src.p.i + sw.p.i + byp.p.i = 0.0;",
          "  sw.n1.v = G.p.v;", "  sw.n2.v = R1.p.v;", "  byp.n.v = R1.p.v;",
          "  sw.n2.i + byp.n.i + R1.p.i = 0.0;"]


def ladder(n: int) -> str:
    """A pulse source (V while on, 0 otherwise: on for WIDTH at the start of every PERIOD)
    feeding n RC sections through the switch `SWITCH`."""
    var = ["class Ladder",
           f"  parameter Real V = {V}; parameter Real R = {R}; parameter Real C = {C};",
           f"  parameter Real Ron = {RON}; parameter Real Goff = {GOFF}; parameter Real Rb = {RB};",
           f"  parameter Real period = {PERIOD}; parameter Real width = {WIDTH};",
           "  discrete Real T0;", "  Boolean on;", "  Real sw.s1; Real sw.s2;",
           "  Real G.p.v; Real G.p.i;"]
    var += [f"  Real {x}.v; Real {x}.i;" for x in ("src", "R1", "byp")]
    var += [f"  Real {x}.{p}.v; Real {x}.{p}.i;" for x, p in
            [("src", "p"), ("src", "n"), ("sw", "p"), ("sw", "n1"), ("sw", "n2"),
             ("byp", "p"), ("byp", "n")]]
    grounded = " + ".join(["src.n.i", "sw.n1.i"] + [f"C{k}.n.i" for k in range(1, n + 1)])
    eqs = ["initial equation", "  T0 = 0.0;", "equation",
           "  when sample(0.0, period) then", "    T0 = time;", "  end when;",
           "  on = time >= T0 and time < T0 + width;",
           "  src.v = src.p.v - src.n.v;", "  src.v = if on then V else 0.0;",
           "  0.0 = src.p.i + src.n.i;", "  src.i = src.p.i;", "  src.n.v = G.p.v;",
           "  G.p.v = 0.0;", f"  G.p.i + {grounded} = 0.0;"] + SWITCH
    for k in range(1, n + 1):
        r, c = f"R{k}", f"C{k}"
        var += [f"  Real {x}.v; Real {x}.i; Real {x}.p.v; Real {x}.p.i; Real {x}.n.v; "
                f"Real {x}.n.i;" for x in ((r, c) if k > 1 else (c,))]
        var += [f"  Real {r}.{p}.v; Real {r}.{p}.i;" for p in ("p", "n") if k == 1]
        eqs += [f"  {r}.v = {r}.p.v - {r}.n.v;", f"  {r}.v = R * {r}.i;",
                f"  0.0 = {r}.p.i + {r}.n.i;", f"  {r}.i = {r}.p.i;",
                f"  {c}.v = {c}.p.v - {c}.n.v;", f"  {c}.i = C * der({c}.v);",
                f"  0.0 = {c}.p.i + {c}.n.i;", f"  {c}.i = {c}.p.i;",
                f"  {r}.n.v = {c}.p.v;", f"  {c}.n.v = G.p.v;"]
        if k < n:
            eqs += [f"  {r}.n.v = R{k + 1}.p.v;",
                    f"  {r}.n.i + {c}.p.i + R{k + 1}.p.i = 0.0;"]
        else:
            eqs += [f"  {r}.n.i + {c}.p.i = 0.0;"]
    return "\n".join(var + eqs + ["end Ladder;", ""])


def oracle(n: int, times: np.ndarray) -> np.ndarray:
    """Capacitor voltages at ``times`` (rows) by the matrix exponential on each interval of
    constant pulse: nodal analysis C x_k' = (x_{k-1} - x_k)/R_k - (x_k - x_{k+1})/R_{k+1},
    x_0 = V while the pulse is on, 0 otherwise, and R_1 = R in series with Rb parallel to the
    switch (Ron while the pulse is on, 1/Goff otherwise)."""
    from scipy.linalg import expm

    def flow(on: bool) -> np.ndarray:
        g = [1.0 / (R + 1.0 / ((1.0 / RON if on else GOFF) + 1.0 / RB))] + [1.0 / R] * (n - 1)
        m = np.zeros((n + 1, n + 1))            # augmented with the source's constant 1
        for k in range(n):
            m[k, k] -= g[k]
            if k > 0:
                m[k, k - 1] += g[k]
            else:
                m[k, n] += g[0] * (V if on else 0.0)
            if k + 1 < n:
                m[k, k] -= g[k + 1]
                m[k, k + 1] += g[k + 1]
        m[:n] /= C
        return m

    edges = sorted({0.0, *(p + d for p in np.arange(0.0, times[-1] + PERIOD, PERIOD)
                           for d in (0.0, WIDTH))})
    y = np.zeros(n + 1)
    y[n] = 1.0
    out = np.empty((len(times), n))
    t = 0.0
    for i, target in enumerate(times):
        while True:
            nxt = min(e for e in edges if e > t + 1e-12)
            on = (t + 1e-12) % PERIOD < WIDTH
            step = min(nxt, target) - t
            y = expm(flow(on) * step) @ y
            t += step
            if t >= target - 1e-12:
                break
        out[i] = y[:n]
    return out


@pytest.mark.parametrize("n", [1, 20])
def test_pulse_instant_keeps_the_states_and_simulates(tmp_path, monkeypatch, n):
    """n = 1: few enough unknowns at the instant (after `presolve`) to be solved whole before
    (sympy.solve did not come back on MSL's CauerLowPassSC.Rn, 22 unknowns); n = 20: more than
    `WHOLE_SOLVE_LIMIT` unknowns."""
    model = parse_modelica(ladder(n), "Ladder.mo")
    auto = analyze_multimode(model, standardize=False)
    change = [ch for ch in auto.changes if ch.instants][0]
    prob, _ = presolve(restart_problem(ShiftForm(auto.system), change.instants[0].instant))
    assert (len(prob.unknowns) > WHOLE_SOLVE_LIMIT) == (n > 1)
    calls = []
    solve = sp.solve
    monkeypatch.setattr(sp, "solve", lambda *args, **kw: calls.append(args) or solve(*args, **kw))
    a = analyze(model, implicit=False)      # the automaton's restarts
    assert a.accepted, a.messages
    assert not calls                     # every block linear: no sympy.solve of the circuit
    restarts = [ch.restart for ch in a.automaton.changes if ch.restart]
    assert restarts
    for restart in restarts:
        assert {str(e.lhs): e.rhs for e in restart} == \
            {f"C{k}.v+": sp.Symbol(f"C{k}.v-", real=True) for k in range(1, n + 1)}
    fmu = export(model, tmp_path / "Ladder.fmu")
    names = [f"C{k}.v" for k in range(1, n + 1)]
    r = simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.01, output=names,
                     relative_tolerance=1e-10)
    t = np.asarray(r["time"])
    keep = np.concatenate((np.diff(t) > 0, [True]))      # the value after an event
    t = t[keep]
    want = oracle(n, t)
    got = np.column_stack([np.asarray(r[x])[keep] for x in names])
    assert np.max(np.abs(got - want)) < 1e-6
    assert np.ptp(got[t > 0.5, 0]) > 0.05                 # the pulse does drive the ladder


def test_presolve_leaves_if_expression_values_to_their_equations():
    """`presolve` substitutes explicit values, but not one with an if-expression (MSL 3.1
    NandGate: the MOSFETs' ``ud``, ``ugst`` substituted into the conditions of ``id`` nested
    conditions sympy simplified for more than 600 s); the restart is unchanged, x+ = x-."""
    from mdae_fmu.impulse.problem import RestartProblem, StateJet
    from mdae_fmu.impulse.standardize import standardize

    x0, x1, w, ud, ugst, i_d, i = (sp.Symbol(n, real=True) for n in
                                   ("x@0", "x@1", "w@0", "ud@0", "ugst@0", "id@0", "i@0"))
    cap, vs, k, vt, g, d = (sp.Symbol(n, real=True) for n in ("C", "Vs", "K", "Vt", "g", "d"))
    eqs = (("e1", cap * (x1 - x0) / d - i), ("e2", w - vs),
           ("e3", ud - sp.Piecewise((x0, x0 < w), (w, True))), ("e4", ugst - k * (ud - vt)),
           ("e5", i_d - sp.Piecewise((g * ud, ugst <= 0), (g * ud + ugst * ud, True))),
           ("e6", i + i_d))
    prob = RestartProblem(label="instant 0", equations=eqs, unknowns=(x1, w, ud, ugst, i_d, i),
                          jets=(StateJet(name="x", m=1, known=(x0,), top=x1),), d=d)
    reduced, explicit = presolve(prob)
    assert explicit == {w: vs}
    assert [lab for lab, _ in reduced.equations] == ["e1", "e3", "e4", "e5", "e6"]
    st = standardize(reduced)
    assert {str(e.lhs): e.rhs for e in st.restart} == {"x+": sp.Symbol("x-", real=True)}
