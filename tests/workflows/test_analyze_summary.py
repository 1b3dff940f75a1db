"""`mdae-fmu analyze` prints a summary by default, the full report with --verbose (issue 28
Deliver 3): the summary of reference models checked line by line against what the models are
(the clutch: 2 modes, index 1 engaged, states t w1 w2, the momentum-conserving restart), math in
Modelica syntax, no citation of notes the user does not have, cheap for a model without modes."""

from __future__ import annotations

from pathlib import Path

import pytest
import sympy as sp

from mdae_fmu import analysis, report
from mdae_fmu.cli import main
from mdae_fmu.sympy_modelica import print_sympy

MODELS = Path(__file__).resolve().parents[2] / "reference_models"


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
        "mode changes: restarts (the value after the event, pre(x) the value before; into "
        "the mode, from any other):",
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
    # the restart into each mode (the same from every other mode)
    restarts = [ln for ln in lines if ln.startswith("  into (")]
    assert len(restarts) == 2 and lines[-2:] == [
        "(the full report: mdae-fmu analyze --verbose)", "verdict: accepted"]
    [into_both_on] = [ln for ln in restarts if ln.startswith("  into (g1 and g2): ")]
    assert "u1 = u2 = 0; v1 = v2 = (C1*pre(v1) + C2*pre(v2))/(C1 + C2)" in into_both_on
    [into_both_off] = [ln for ln in restarts if ln.startswith("  into (not g1 and not g2): ")]
    assert "j1 = (L1*pre(j1) - L2*pre(j2))/(L1 + L2)" in into_both_off


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
