"""Issue 14 items 1 and 2: guards on values computed in the same instant (event iteration, the
transient-mode cascade of RR-9334 Def 33, docs/theory.md §5.4, §7) and
structural versus non-structural conditionals (mdae_fmu.structure.conditionals).

Oracles: reference_models/RLDC2Diodes.csv (matrix exponential per mode, brentq switching
times), scipy solve_ivp with events at rtol 1e-10 (Chua's circuit, a diode rectifier)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from fmpy import simulate_fmu
from scipy.integrate import solve_ivp

from mdae_fmu import load
from mdae_fmu.analysis import analyze, render_json, render_text
from mdae_fmu.fmu.export import export
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu import expr as E
from mdae_fmu.structure.conditionals import classify_conditionals, structural_atoms_of
from mdae_fmu.structure.per_mode import analyze_modes

ROOT = Path(__file__).resolve().parents[2]
REF = ROOT / "reference_models"
DATA = Path(__file__).resolve().parents[1] / "data" / "conditionals"


def _model(text: str, name: str = "M.mo"):
    return parse_modelica(text, name)


def _conditions(text: str):
    c = classify_conditionals(_model(text))
    from mdae_fmu.structure.printing import expr_text
    return sorted(expr_text(a) for a in c.structural), [expr_text(a) for a in c.event_only]


# --- which conditionals are structural -------------------------------------------------------

DIODE = """class D
  parameter Real Ron = 1e-5;
  parameter Real Goff = 1e-5;
  Real v(start = 0, fixed = true);
  Real u;
  Real i;
  Real s;
  Boolean off;
equation
  u + v = sin(time);
  i = der(v) + v;
  off = s < 0;
  u = s * (if off then 1 else Ron);
  i = s * (if off then Goff else 1);
end D;"""


def test_same_incidence_is_not_structural_literal_zero_is():
    """The MSL diode with parameters Ron, Goff: both branches read s, an event only. With the
    literal 0 (the ideal diode) a branch reads no s: structural. An if-equation changes which
    equations exist: structural. Different unknowns in the branches: structural by incidence,
    but here both modes have the same offsets and the equation is never differentiated, so
    the condition is demoted to an event (mdae_fmu.structure.demotion,
    tests/structure/test_demotion.py)."""
    assert _conditions(DIODE) == ([], ["off"])
    ideal = DIODE.replace("else Ron", "else 0").replace("then Goff", "then 0")
    assert _conditions(ideal) == (["off"], [])
    assert _conditions(DIODE.replace("else Ron", "else 0 * Ron")) == (["off"], [])
    branches = DIODE.replace("u = s * (if off then 1 else Ron);",
                             "u = if off then s else i;")
    assert _conditions(branches) == ([], ["off"])
    assert [a.name for a in classify_conditionals(_model(branches)).demoted] == ["off"]
    if_eq = DIODE.replace("  u = s * (if off then 1 else Ron);\n",
                          "  if off then\n    u = s;\n  else\n    u = Ron * s;\n  end if;\n")
    assert _conditions(if_eq) == (["off"], [])


def test_derivative_orders_count():
    """Same variables, another differentiation order: structural by incidence; both modes
    solve the loop {der(x) = y, y = ...} in (der(x), y) with the same offsets, so the
    condition is demoted (mdae_fmu.structure.demotion)."""
    text = """class O
  Real x(start = 0, fixed = true);
  Real y;
  Boolean b;
equation
  b = time > 1;
  der(x) = y;
  y = if b then der(x) * 0.5 + x else x;
end O;"""
    m = _model(text)
    eq = m.equations[-1]
    assert structural_atoms_of(eq.residual, frozenset({"x", "y"}))[0] == [E.Ref("b")]
    assert _conditions(text) == ([], ["b"])


@pytest.mark.parametrize("name", sorted(p.name for p in REF.glob("*.mo")))
def test_reference_models_keep_their_modes(name):
    """The clutch, Cup-and-Ball, RLDC2 and air-brake encodings switch structure: every
    condition stays structural and the modes are those of reference_models/README.md."""
    m = load(REF / name)
    assert classify_conditionals(m).event_only == ()
    expected = {"ClutchBasic": 2, "ClutchGuarded": 2, "ClutchGuardedTime": 2,
                "ClutchNonSemilinear": 2, "CupAndBall": 2, "CupAndBallFirstOrder": 2,
                "CupAndBallOriginal": 2, "AirBrake": 2, "AirBrakeOriginal": 2, "RLDC2": 4,
                "RLDC2Diodes": 4, "RLDC2Original": 4, "RLDC2Published": 4,
                "RLDC2Switched": 4}
    if m.name in expected:
        assert len(analyze_modes(m, latent=False).modes) == expected[m.name]


def _bank(n: int, inline: tuple = ()) -> str:
    """A bank of n library-style ideal diodes (MSL IdealDiode, Ron = Goff = 1e-5, Vknee = 0),
    diode k feeding an RC load from the source (k/n) sin(2 pi t): a half-wave rectifier.
    Diodes in ``inline`` test the relation directly (``if s < 0``), the others through the
    Boolean ``off = s < 0`` as the library writes it."""
    decl = ["  parameter Real Ron = 1e-5;", "  parameter Real Goff = 1e-5;",
            "  parameter Real Vknee = 0;", "  parameter Real R = 1.0;",
            "  parameter Real C = 1.0;", "  Real vs;"]
    eqs = ["  vs = sin(2 * 3.141592653589793 * time);"]
    for k in range(1, n + 1):
        off = f"s{k} < 0" if k in inline else f"off{k}"
        decl += [f"  Real v{k}(start = 0, fixed = true);", f"  Real u{k};", f"  Real i{k};",
                 f"  Real s{k}(start = 0);"]
        eqs += [f"  u{k} + v{k} = {k / n} * vs;", f"  i{k} = C * der(v{k}) + v{k} / R;",
                f"  u{k} = s{k} * (if {off} then 1 else Ron) + Vknee;",
                f"  i{k} = s{k} * (if {off} then Goff else 1) + Goff * Vknee;"]
        if k not in inline:
            decl.append(f"  Boolean off{k};")
            eqs.append(f"  off{k} = s{k} < 0;")
    return (f"class Bank{n}\n" + "\n".join(decl) + "\nequation\n" + "\n".join(eqs)
            + f"\nend Bank{n};\n")


def test_bank_of_twenty_ideal_diodes_is_one_mode_plus_events():
    """20 library-style diodes: one structural mode and 20 event conditions, analysed in
    under 5 s (2^20 modes before: refused beyond the enumeration limit)."""
    import sympy  # noqa: F401  (the package imports it on first use: not in the timed part)
    m = _model(_bank(20), "Bank20.mo")
    t0 = time.process_time()
    a = analyze(m)
    spent = time.process_time() - t0
    assert spent < 5.0, f"{spent:.1f} s"
    assert a.accepted and len(a.modes.modes) == 1 and len(a.automaton.modes) == 1
    text = render_text(m, a)
    assert "structural modes: 1; conditions that are only events (same structure in every " \
        "branch, no mode): 20" in text
    assert "    event      off20" in text
    j = render_json(m, a)
    assert j["counts"]["structural_modes"] == 1 and j["counts"]["event_conditions"] == 20
    assert j["event_conditions"][:2] == ["off1", "off2"]


def _rectifier_reference(a: float, t_out: np.ndarray, ron=1e-5, goff=1e-5) -> np.ndarray:
    """C v' = i - v/R (R = C = 1), i = u/Ron while conducting (s >= 0), Goff u while blocking,
    u = a sin(2 pi t) - v; the diode switches where u = 0 (the sign of s is that of u in
    both branches). solve_ivp (Radau, rtol 1e-10) from event to event."""
    def rhs(t, v, on):
        u = a * np.sin(2 * np.pi * t) - v[0]
        return [(u / ron if on else goff * u) - v[0]]

    segs, t, v, on = [], 0.0, [0.0], True       # s(0) = 0: conducting (off = s < 0 false)
    while t < t_out[-1]:

        def ev(t, v, on):
            return a * np.sin(2 * np.pi * t) - v[0]

        ev.terminal, ev.direction = True, (-1 if on else 1)
        sol = solve_ivp(rhs, (t, t_out[-1]), v, args=(on,), method="Radau", rtol=1e-10,
                        atol=1e-12, events=[ev], dense_output=True)
        segs.append((sol.t[0], sol.t[-1], sol.sol))
        if sol.status != 1:
            break
        t, v, on = sol.t_events[0][0], sol.y_events[0][0], not on
    return np.array([next(f(x)[0] for a0, b0, f in segs if a0 <= x <= b0) for x in t_out])


def test_rectifier_with_library_diodes_matches_scipy(tmp_path):
    """Two library-style diodes, one through the Boolean off = s < 0, one with the relation
    inline: one mode, the FMU switches exactly where u = 0 (event indicators on the algebraic
    s), the capacitor voltages match scipy to 1e-6."""
    m = _model(_bank(2, inline=(2,)), "Bank2.mo")
    assert len(analyze_modes(m, latent=False).modes) == 1
    path = export(m, tmp_path / "bank.fmu", progress=False)
    r = simulate_fmu(str(path), stop_time=2.0, output_interval=0.01, relative_tolerance=1e-10,
                     output=["v1", "v2"])
    for k, a in ((1, 0.5), (2, 1.0)):
        ref = _rectifier_reference(a, r["time"])
        assert np.max(np.abs(r[f"v{k}"] - ref)) < 1e-6, k


# --- Chua's circuit: one mode, two indicators, scipy with events -----------------------------

def _chua_reference(t_out: np.ndarray) -> np.ndarray:
    """Chua's circuit (tests/data/conditionals/Chua.mo) integrated region by region with
    terminal events at v1 = +-Ve (DOP853, rtol 1e-10, atol 1e-12)."""
    L, G, C1, C2, Ga, Gb, Ve = 1 / 28.0, 1.0, 1 / 15.6, 1.0, -8 / 7.0, -5 / 7.0, 1.0

    def rhs(t, z, region):
        iL, v1, v2 = z
        iN = (Gb * (v1 + Ve) - Ga * Ve if region < 0 else
              Gb * (v1 - Ve) + Ga * Ve if region > 0 else Ga * v1)
        return [-v2 / L, (G * (v2 - v1) - iN) / C1, (iL - G * (v2 - v1)) / C2]

    def crossing(level, direction):

        def f(t, z, r):
            return z[1] - level

        f.terminal, f.direction = True, direction
        return f

    leave = {1: [(crossing(Ve, -1), 0)], 0: [(crossing(Ve, 1), 1), (crossing(-Ve, -1), -1)],
             -1: [(crossing(-Ve, 1), 0)]}
    t, z, region, segs, stop = 0.0, [0.0, 0.7, 0.0], 0, [], t_out[-1]
    while t < stop:
        evs = leave[region]
        sol = solve_ivp(rhs, (t, stop), z, args=(region,), method="DOP853", rtol=1e-10,
                        atol=1e-12, events=[f for f, _ in evs], dense_output=True)
        segs.append((sol.t[0], sol.t[-1], sol.sol))
        if sol.status != 1:
            break
        k = next(i for i, te in enumerate(sol.t_events) if len(te))
        t, z, region = sol.t_events[k][0], sol.y_events[k][0], evs[k][1]
    assert len(segs) > 10           # the trajectory crosses the breakpoints many times
    return np.array([next(f(x) for a, b, f in segs if a <= x <= b) for x in t_out])


def test_chua_circuit_one_mode_two_indicators_matches_scipy(tmp_path):
    m = load(DATA / "Chua.mo")
    a = analyze(m)
    assert a.accepted and len(a.modes.modes) == 1
    assert "conditions that are only events (same structure in every branch, no mode): 2" \
        in render_text(m, a)
    path = export(m, tmp_path / "chua.fmu", progress=False)
    import zipfile
    md = zipfile.ZipFile(path).read("modelDescription.xml").decode()
    assert 'numberOfEventIndicators="2"' in md
    r = simulate_fmu(str(path), stop_time=100.0, output_interval=0.01,
                     relative_tolerance=1e-10, output=["iL", "v1", "v2"])
    assert r["time"][-1] == pytest.approx(100.0)
    first = r[r["time"] <= 20.0]
    ref = _chua_reference(first["time"])
    got = np.column_stack([first["iL"], first["v1"], first["v2"]])
    assert np.max(np.abs(got - ref)) < 1e-4


# --- guards on same-instant values: RLDC2 with library diodes ------------------------------

def test_rldc2_with_library_ideal_diodes_matches_rldc2diodes(tmp_path):
    """off = s < 0 without pre(), literal coefficients 1 and 0 (structural: the four modes of
    RLDC2Diodes): the guards are evaluated by event iteration and the trajectory is
    RLDC2Diodes.csv to 1e-6 (both switching instants, TF -> TT and TT -> FF), by the default
    FMU, the guarded schedule (whose analysis once read ``s*0`` as reading ``s``)."""
    m = load(DATA / "RLDC2IdealDiodes.mo")
    a = analyze(m)          # the one analysis, of the form with the guards delayed
    assert a.accepted and a.implicit_json["modes"] == 4 and a.code_model is not None
    enumerated = analyze(m, implicit=False)
    assert len(enumerated.modes.modes) == 4
    assert "evaluated by event iteration" in render_text(m, enumerated)
    path = export(m, tmp_path / "rl.fmu", analysis=a, progress=False)
    ref = np.genfromtxt(REF / "RLDC2Diodes.csv", delimiter=",", names=True)
    r = simulate_fmu(str(path), stop_time=1.0, output_interval=0.001,
                     relative_tolerance=1e-10, output=["v1", "v2", "j1", "j2"])
    assert np.count_nonzero(np.diff(ref["time"]) == 0) == 2     # the two switching instants
    for v in ("v1", "v2", "j1", "j2"):      # continuous restarts: event rows included
        got = np.interp(ref["time"], r["time"], r[v])
        assert np.max(np.abs(got - ref[v])) < 1e-6, v


def test_event_iteration_that_never_settles_is_a_runtime_error(tmp_path):
    """Not decidable at compile time (s = -x in mode g, s = x in mode not g): accepted, and the
    FMU returns fmi2Error at the first event iteration naming the guard."""
    m = load(DATA / "ChatterRuntime.mo")
    assert analyze(m).accepted
    path = export(m, tmp_path / "c.fmu", progress=False)
    messages = []
    with pytest.raises(Exception, match="fmi2NewDiscreteStates"):
        simulate_fmu(str(path), stop_time=1.0, output_interval=0.01,
                     logger=lambda *a: messages.append(a[-1].decode()))
    text = "\n".join(messages)
    assert "t = 0: the event iteration does not settle: 3 mode changes at this instant, " \
        "the last [not g] -> [g]; guards that keep changing: g" in text


def test_original_cup_and_ball_runs_as_the_pre_encoding(tmp_path):
    """CupAndBallOriginal (taut = s <= 0 on the same-instant s) and CupAndBall (pre(s)) give
    the same run: the same event times and the same trajectory (event iteration is the
    cascade of the delayed guard)."""
    runs = {}
    for name in ("CupAndBall", "CupAndBallOriginal"):
        path = export(load(REF / f"{name}.mo"), tmp_path / f"{name}.fmu", progress=False)
        runs[name] = simulate_fmu(str(path), stop_time=1.0, relative_tolerance=1e-10,
                                  output_interval=0.001, output=["x", "y", "taut", "lam"])
    a, b = runs["CupAndBall"], runs["CupAndBallOriginal"]
    assert a["taut"].any() and not a["taut"].all()
    assert np.array_equal(a["time"], b["time"]) and np.array_equal(a["taut"], b["taut"])
    for v in ("x", "y", "lam"):
        assert np.max(np.abs(a[v] - b[v])) < 1e-12, v


def test_piecewise_under_no_event_has_no_indicator(tmp_path):
    """noEvent(if vN < -Ve then ... ) (Chua's resistor): still no mode, and neither event
    indicator nor frozen relation: Modelica evaluates it as it is."""
    text = (DATA / "Chua.mo").read_text().replace("iN = if vN", "iN = noEvent(if vN") \
        .replace("else Ga * vN;", "else Ga * vN);")
    m = _model(text, "ChuaNoEvent.mo")
    a = analyze(m)
    out = render_text(m, a)
    assert a.accepted and len(a.modes.modes) == 1
    assert "conditions that are only events (same structure in every branch, no mode): 0" \
        in out and "    noEvent    vN > Ve (same structure, no mode, no event)" in out
    assert render_json(m, a)["noevent_conditions"] == ["vN < (-Ve)", "vN > Ve"]
    path = export(m, tmp_path / "chua_ne.fmu", progress=False)
    import zipfile
    md = zipfile.ZipFile(path).read("modelDescription.xml").decode()
    assert 'numberOfEventIndicators="0"' in md
    source = zipfile.ZipFile(path).read("sources/model_schedule_0.c").decode()
    assert "d->rel[" not in source


# --- a structural conditional under noEvent (item 4) -----------------------------------------

NOEVENT_IF = """model NE
  Real x(start = 1, fixed = true);
  Real y(start = 0, fixed = true);
equation
  der(x) = -x;
  if noEvent(x > 0.5) then
    der(y) = 1;
  else
    der(y) = 2;
  end if;
end NE;
"""

# branches of different sizes (not legal Modelica for a condition that is not a parameter
# expression, MLS 3.6 §8.3.4): the if-equation stays guarded equations
NOEVENT_IF_UNBALANCED = NOEVENT_IF.replace("der(y) = 2;", "der(y) = 2;\n    der(y) = 3;")

# der(x) against x changes the offsets: the demotion (structure/demotion.py) cannot take it,
# so the refusal under noEvent stays
NOEVENT_IFEXPR = """model NE2
  Real x(start = 1, fixed = true);
  Real y;
  Real v;
equation
  v = 1 - time;
  y = if noEvent(v > 0) then der(x) else x;
  y = 1;
end NE2;
"""


@pytest.mark.parametrize("text, loc, cond, reason, fix", [
    (NOEVENT_IF_UNBALANCED, "NE.mo:7:5", "noEvent(x > 0.5)",
     "it guards which equations exist (an if-equation)",
     "write it as one equation whose if-expression has branches with the same variables"),
    (NOEVENT_IFEXPR, "NE2.mo:7:3", "noEvent(v > 0)",
     "its branches differ in incidence or differentiation orders",
     "write both branches with the same variables and derivative orders"),
])
def test_structural_conditional_under_no_event_is_refused(tmp_path, capsys, text, loc, cond,
                                                          reason, fix):
    """A structural condition needs an event (its mode change has a restart): under noEvent it
    is refused, exit 1, with the position, the condition, why, and both ways out."""
    from mdae_fmu.cli import main
    path = tmp_path / loc.split(":")[0]
    path.write_text(text)
    for command in (["analyze", str(path)], ["export", str(path), "-o",
                                             str(tmp_path / "ne.fmu")]):
        assert main(command) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"{path.parent}/{loc}: equation e2: the condition {cond} is under "
                              f"noEvent but is structural ({reason})"), err
        assert "either remove noEvent" in err and fix in err and "Traceback" not in err
    assert not (tmp_path / "ne.fmu").exists()


def test_the_fixes_suggested_for_a_structural_no_event_work():
    """Both suggestions of the refusal above are accepted: without noEvent the if-equation
    defines two modes with restarts; as one if-expression it is piecewise, one mode, no event."""
    a = analyze(_model(NOEVENT_IF.replace("noEvent(x > 0.5)", "x > 0.5"), "NE.mo"))
    assert a.accepted and a.modes is None and a.implicit_json["modes"] == 2
    # a balanced if-equation under noEvent is already the piecewise expression below
    # (MLS 3.6 §8.3.4; importers/quiet_if.py)
    m = _model(NOEVENT_IF, "NE.mo")
    assert analyze(m).accepted and len(analyze(m).modes.modes) == 1
    text = NOEVENT_IF.replace("""  if noEvent(x > 0.5) then
    der(y) = 1;
  else
    der(y) = 2;
  end if;""", "  der(y) = if noEvent(x > 0.5) then 1 else 2;")
    m = _model(text, "NE.mo")
    a = analyze(m)
    assert a.accepted and len(a.modes.modes) == 1
    assert classify_conditionals(m).no_event
