"""`mdae-fmu analyze` prints a summary by default, the full report with --verbose (issue 28
Deliver 3): the summary of reference models checked line by line against what the models are
(the clutch: 2 modes, index 1 engaged, states t w1 w2, the momentum-conserving restart), math in
Modelica syntax, no citation of notes the user does not have, cheap for a model without modes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import sympy as sp

from mdae_fmu import analysis, api, report
from mdae_fmu.cli import main
from mdae_fmu.implicit.analysis import analyze_implicit, degrees_of_freedom, render_json
from mdae_fmu.structure.per_mode import analyze_modes, mode_name
from mdae_fmu.sympy_modelica import print_sympy

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "reference_models"
sys.path.insert(0, str(ROOT / "benchmarks"))
from gen_modeller import drive_line  # noqa: E402


def _summary(capsys, path, *options) -> tuple[int, list[str]]:
    code = main(["analyze", *options, str(path)])
    return code, capsys.readouterr().out.splitlines()


def test_clutch_summary_line_by_line(capsys):
    code, lines = _summary(capsys, MODELS / "ClutchBasic.mo")
    assert code == 0
    assert lines == [
        "model ClutchBasic: 6 equations, 5 continuous unknowns, 1 discrete variable, 0 inputs",
        "guards (1, each a condition that changes the equations):",
        "  g = t >= t1 and t <= t2 (ClutchBasic.mo:21)",
        "structural modes: 2: (g), (not g)",
        "index: 1 in (g); 0 in (not g) (the most times an equation is differentiated; "
        "Pryce's structural index: 2, 1)",
        "  in (g): differentiated: w1 = w2 (ClutchBasic.mo:24)",
        "states (3): t, w1, w2",
        "degrees of freedom: 2 in (g); 3 in (not g) (the states less the consistency "
        "equations, the differentiated ones)",
        "mode changes: 2 between the 2 consistent modes; restarts (the value after the event, "
        "pre(x) the value before; into the mode, from any other):",
        "  into (g): w1 = w2 = (j1*pre(w1) + j2*pre(w2))/(j1 + j2); impulsive: f1, f2",
        "(the full report: mdae-fmu analyze --verbose)",
        "verdict: accepted",
    ]


@pytest.mark.long      # 3.7 s of CPU
def test_diode_circuit_summary_names_modes_states_and_both_restarts(capsys):
    """RLDC2Diodes: two ideal diodes, 4 modes; both conducting ties the capacitor voltages
    (charge conserved: v1 = v2 = (C1 v1- + C2 v2-)/(C1 + C2)), both blocking ties the inductor
    currents (flux conserved)."""
    code, lines = _summary(capsys, MODELS / "RLDC2Diodes.mo")
    assert code == 0
    assert lines[1:5] == [
        "guards (2, each a condition that changes the equations):",
        "  g1 = pre(s1) >= 0.0 (RLDC2Diodes.mo:50)",
        "  g2 = pre(s2) >= 0.0 (RLDC2Diodes.mo:51)",
        "structural modes: 4: (g1 and g2), (g1 and not g2), (not g1 and g2), "
        "(not g1 and not g2)"]
    assert lines[5].startswith("index: 1 in (g1 and g2) or (not g1 and not g2); "
                               "0 in (g1 and not g2) or (not g1 and g2)")
    # 4 states in every mode, 6 where both diodes conduct or both block
    at = lines.index("states (4 in every mode): j1, j2, v1, v2")
    assert set(lines[at + 1:at + 3]) == {"  also in (not g1 and not g2): i1, i2",
                                         "  also in (g1 and g2): u1, u2"}
    assert lines[at + 3] == ("degrees of freedom: 3 in (g1 and g2) or (not g1 and not g2); "
                             "4 in (g1 and not g2) or (not g1 and g2) (the states less the "
                             "consistency equations, the differentiated ones)")
    assert lines[at + 4].startswith("mode changes: 12 between the 4 consistent modes; ")
    # the restart into each mode (the same from every other mode)
    restarts = [ln for ln in lines if ln.startswith("  into (")]
    assert len(restarts) == 2 and lines[-2:] == [
        "(the full report: mdae-fmu analyze --verbose)", "verdict: accepted"]
    [into_both_on] = [ln for ln in restarts if ln.startswith("  into (g1 and g2): ")]
    assert "u1 = u2 = 0; v1 = v2 = (C1*pre(v1) + C2*pre(v2))/(C1 + C2)" in into_both_on
    [into_both_off] = [ln for ln in restarts if ln.startswith("  into (not g1 and not g2): ")]
    assert "j1 = (L1*pre(j1) - L2*pre(j2))/(L1 + L2)" in into_both_off


def _dof_by_mode(model):
    """The one analysis' degrees of freedom (`degrees_of_freedom`) evaluated at each mode of
    the per-mode (enumerated) stage, with that stage's own Val(Σ)."""
    ia = analyze_implicit(model)
    dof, bdd = degrees_of_freedom(ia), ia.space.bdd
    out = []
    for m in analyze_modes(model).modes:
        asg = ia.space.assignment(m.valuation)
        out.append((m.valuation, dof.at(lambda f, a=asg: bdd.let(a, f) == bdd.true), m.dof))
    return ia, out


@pytest.mark.long      # enumerated automata of ClutchBasic and RLDC2Diodes: 6 s of CPU
@pytest.mark.parametrize("name, modes", [("ClutchBasic", 2), ("RLDC2Diodes", 4)])
def test_counts_of_the_one_analysis_agree_with_the_enumerated_analysis(name, modes):
    """The summary's counts of the one analysis (issue 26): the degrees of freedom of every
    mode (its linear form and its case split) and the number of mode changes equal the
    enumerated analysis' (per-mode Val(Σ), the automaton's changes)."""
    model = api.load(MODELS / f"{name}.mo")
    one = analysis.analyze(model)
    enumerated = analysis.analyze(model, implicit=False)
    assert one.modes is None and enumerated.automaton is not None
    js = one.implicit_json
    assert js["modes"] == len(enumerated.modes.modes) == modes
    assert js["mode_changes"] == len(enumerated.automaton.changes) == modes * (modes - 1)
    by_mode = {m.name: m.dof for m in enumerated.modes.modes}
    _, pairs = _dof_by_mode(model)
    assert [(mode_name(v), got) for v, got, _ in pairs] == list(by_mode.items())
    cases = {c["value"]: c["modes"] for c in js["degrees_of_freedom"]["cases"]}
    assert cases == {v: sum(d == v for d in by_mode.values()) for v in set(by_mode.values())}


@pytest.mark.long      # the one analysis and the per-mode stage of 16 modes: about 2 s of CPU
def test_drive_line_degrees_of_freedom_one_less_per_engaged_clutch(capsys, tmp_path):
    """A drive line of 4 clutches (benchmarks/gen_modeller.py, 16 modes): 10 states in every
    mode, each engaged clutch ties two shaft speeds (one consistency equation), so the
    linear form is 10 - [clutch1.engaged] - ... - [clutch4.engaged], which the per-mode
    stage's Val(Σ) confirms in each of the 16 modes; 240 changes (16 * 15)."""
    src = tmp_path / "DriveLine4.mo"
    src.write_text(drive_line(4, engage="input"))
    ia, pairs = _dof_by_mode(api.load(src))
    assert len(pairs) == 16 and all(got == want for _, got, want in pairs)
    assert sorted({want for *_, want in pairs}) == [6, 7, 8, 9, 10]
    js = render_json(ia)["degrees_of_freedom"]
    assert js["constant"] == 10
    assert sorted((t["value"], t["formula"]) for t in js["terms"]) == [
        (-1, f"clutch{k}.engaged") for k in range(1, 5)]
    code, lines = _summary(capsys, src)
    assert code == 0
    assert ("degrees of freedom: 10, 1 less in each of (clutch1.engaged), (clutch2.engaged), "
            "(clutch3.engaged), (clutch4.engaged) that holds (the states less the consistency "
            "equations, the differentiated ones)") in lines
    assert any(ln.startswith("mode changes: 240 between the 16 consistent modes; ")
               for ln in lines)


@pytest.mark.long      # the enumerated --list-modes of RLDC2IdealDiodes: 3 s of CPU
def test_guards_evaluated_by_event_iteration_are_named_as_the_enumerated_report_does(capsys):
    """RLDC2IdealDiodes (``off = s < 0`` on the same-instant s): the summary of the one
    analysis names both guards evaluated by event iteration, with the note the enumerated
    report (--list-modes) prints, and --json lists them."""
    path = Path(__file__).resolve().parents[1] / "data" / "conditionals" / "RLDC2IdealDiodes.mo"
    code, lines = _summary(capsys, path)
    assert code == 0
    notes = [ln.strip() for ln in lines if "event iteration" in ln]
    assert notes == [f"guard off{k} reads s{k}, which the equations it selects compute: "
                     f"evaluated by event iteration, each instant reading the previous "
                     f"instant's s{k}" for k in (1, 2)]
    assert lines.index("  " + notes[0]) == 4          # under the guards
    _, listed = _summary(capsys, path, "--list-modes")
    enumerated = [ln.strip() for ln in listed if "event iteration" in ln]
    assert [n.split(" (RR-9334")[0] for n in enumerated] == notes
    main(["analyze", "--json", str(path)])
    js = json.loads(capsys.readouterr().out)
    assert js["event_iteration"] == [{"guard": "off1", "reads": ["s1"]},
                                     {"guard": "off2", "reads": ["s2"]}]


def test_pendulum_index_and_constraint_with_its_line(capsys):
    code, lines = _summary(capsys, MODELS / "Pendulum.mo")
    assert code == 0
    assert lines[1] == "structural modes: 1"
    assert lines[2].startswith("index: 2 (") and "structural index: 3)" in lines[2]
    assert lines[3].startswith("  differentiated: x^2 + y^2 = L^2 (twice) (Pendulum.mo:20)")
    assert lines[5].startswith("  2 degrees of freedom; ")


def test_summary_of_a_rejected_model_keeps_the_diagnostics(capsys):
    code, lines = _summary(capsys, Path(__file__).resolve().parents[1] / "data" / "conditionals"
                           / "Chatter.mo")
    assert code == 1
    at = lines.index("verdict: rejected")
    assert "E-FIXPOINT" in lines[at + 1]
    assert any("Chatter.mo:12" in ln for ln in lines[at:])


@pytest.mark.long      # 1.7 s of CPU
def test_summary_lists_warnings_with_their_lines(capsys):
    code, lines = _summary(capsys, MODELS / "AirBrake.mo")
    assert code == 0
    at = lines.index("warnings (1):")
    assert lines[at + 1].startswith("  W-FAKE-IMPULSE: not g -> g")
    assert lines[at + 2] == "verdict: accepted, 1 warning(s) above"


@pytest.mark.long      # ten analyses (five models, with and without --implicit): 11 s of CPU
def test_no_citation_of_notes_and_no_sympy_syntax_in_the_summary(capsys):
    for name in ("ClutchBasic", "CupAndBall", "RLDC2Diodes", "BouncingBall", "AirBrake"):
        for options in ((), ("--implicit",)):
            _, lines = _summary(capsys, MODELS / f"{name}.mo", *options)
            text = "\n".join(lines)
            for bad in ("theory", "§", "**", "Piecewise", "@0", "w1-", "x-"):
                assert bad not in text, (name, options, bad)


def test_summary_does_not_build_the_full_report(capsys, monkeypatch, tmp_path):
    """Issue 29: a large model without modes gets its summary without the per-mode report's
    lines (offsets of every equation, every block) being built."""
    n = 2000
    src = tmp_path / "Chain.mo"
    body = "\n".join(f"  Real x{i}(start = 1, fixed = true);" for i in range(n))
    eqs = "\n".join(f"  der(x{i}) = x{i + 1} - x{i};" for i in range(n - 1))
    src.write_text(f"model Chain\n{body}\nequation\n{eqs}\n  der(x{n - 1}) = -x{n - 1};\n"
                   "end Chain;\n")

    def refuse(*args, **kwargs):
        raise AssertionError("the full report was built")

    monkeypatch.setattr(analysis, "iter_report_lines", refuse)
    monkeypatch.setattr(report, "report_lines", refuse)
    code, lines = _summary(capsys, src)
    assert code == 0
    assert lines[2].startswith("index: 0 (")
    assert lines[3] == f"states ({n}): x0, x1, x2, x3, x4, x5, x6, x7, ... ({n} in all)"
    assert len(lines) == 7


def test_list_modes_keeps_the_full_enumerated_report(capsys):
    """--list-modes prints what docs/analyze-json.md lists per mode and per mode change (the
    enumerated report, which --verbose printed before the one analysis became the default of
    a multimode model; its -v report: tests/modes/test_schedule_report.py)."""
    code, lines = _summary(capsys, MODELS / "ClutchBasic.mo", "--list-modes")
    text = "\n".join(lines)
    assert code == 0
    for part in ("equations (6;", "modes (2):", "mode {g}: ok", "offsets c: e1=0, e3=0",
                 "offsets d: t=1, w1=1", "degrees of freedom: 2", "states (3): t, w1, w2",
                 "latent equations (differentiated):", "e5': der(w1) - der(w2) = 0",
                 "consistency equations:", "blocks (2, in solve order):",
                 "not g -> g: 1 instant(s) until steady, impulsive",
                 "impulsive: f1 (order 1), f2 (order 1)",
                 "restart: t+ = t-; w1+ = (j1*w1- + j2*w2-)/(j1 + j2)"):
        assert part in text, part
    assert lines[-1] == "verdict: accepted"


def test_the_infinitesimal_step_is_not_a_model_name(capsys, tmp_path):
    """A damping parameter named d: the shift-form formulas of the enumerated mode changes
    (--list-modes) print the step as δ."""
    src = tmp_path / "ClutchD.mo"
    text = (MODELS / "ClutchBasic.mo").read_text().replace("k1", "d")
    assert "parameter Real d" in text
    src.write_text(text)
    code, lines = _summary(capsys, src, "--list-modes")
    assert code == 0
    e3 = next(ln for ln in lines if ln.strip().startswith("e3: 0 = "))
    assert "/δ" in e3 and "d*w1@0" in e3


def test_sympy_expressions_print_as_modelica():
    x, y, lam = sp.Symbol("x-"), sp.Symbol("y+"), sp.Symbol("der(lam)")
    assert print_sympy(x ** 2 / sp.sqrt(x ** 2 + y ** 2)) == "pre(x)^2/sqrt(pre(x)^2 + y^2)"
    assert print_sympy(sp.Piecewise((x, sp.Gt(lam, 0)), (-x, True))) == \
        "(if der(lam) > 0 then pre(x) else -pre(x))"
    assert print_sympy(sp.Abs(y) + x ** -2) == "abs(y) + pre(x)^(-2)" or \
        print_sympy(sp.Abs(y) + x ** -2) == "abs(y) + 1/pre(x)^2"
    assert print_sympy(sp.Symbol("a b-")) == "pre('a b')"
    assert print_sympy(sp.And(sp.Eq(x, 1), sp.Not(sp.Symbol("g")))) in (
        "pre(x) == 1 and not g", "not g and pre(x) == 1")
