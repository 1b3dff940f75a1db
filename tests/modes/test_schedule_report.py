"""The restarts of the guarded schedule as `mdae-fmu analyze` prints them on the one analysis
(mdae_fmu.schedule_report, docs/multimode.md "One analysis"): the composition of the block
variants' restarts into a mode, solved with sympy, against the enumerated analysis' restart of
every accepted mode change into that mode (the test oracle: mode changes explored one by one,
mdae_fmu.modes.explore, an independent implementation), and the summary line by line."""

from __future__ import annotations

from pathlib import Path

import pytest
import sympy as sp

from mdae_fmu.analysis import analyze
from mdae_fmu.api import load
from mdae_fmu.cli import main
from mdae_fmu.schedule_report import listed_modes, mode_text, restart_into

MODELS = Path(__file__).resolve().parents[2] / "reference_models"


def _plain(e: sp.Expr) -> sp.Expr:
    """``e`` over symbols without assumptions (the two analyses name the same quantities)."""
    return e.xreplace({s: sp.Symbol(s.name) for s in e.free_symbols})


def _compared(name: str) -> tuple[int, list[str]]:
    """How many restarted values of the enumerated changes the schedule's restart reproduces,
    and the differences."""
    model = load(MODELS / f"{name}.mo")
    one = analyze(model, implicit=True)
    sched = one.guarded
    assert sched is not None and one.modes is None, name       # the one analysis
    enum = analyze(model, implicit=False)
    assert enum.automaton is not None and enum.accepted
    names = list(sched.guard_names)
    into: dict = {}
    same, diffs = 0, []
    for ch in enum.automaton.changes:
        assert ch.accepted
        lits = [p.strip() for p in ch.dst_label.split(",")]
        value = {p.removeprefix("not "): not p.startswith("not ") for p in lits}
        bits = tuple(value[n] for n in names)
        r = into.get(bits) or into.setdefault(bits, restart_into(sched, bits))
        assert not r.numerical, (name, r)
        jumps = dict(r.jumps)
        for eq in ch.restart:
            x = eq.lhs.name[:-1]
            if r.projected:          # positions moved by least change: compared elsewhere
                continue
            mine = jumps.get(x, sp.Symbol(f"{x}-"))
            if sp.simplify(_plain(mine) - _plain(eq.rhs)) == 0:
                same += 1
            else:
                diffs.append(f"{ch.src_label} -> {ch.dst_label}: {x} = {mine}, not {eq.rhs}")
    return same, diffs


@pytest.mark.parametrize("name, expected", [
    ("ClutchBasic", 6), ("ClutchNonSemilinear", 6), ("CupAndBallFirstOrder", 2),
    pytest.param("RLDC2Diodes", 60, marks=pytest.mark.long),
    pytest.param("RLDC2Switched", 60, marks=pytest.mark.long)])
def test_restart_into_a_mode_is_every_enumerated_change_into_it(name, expected):
    """Every state of every accepted change: the same value after the event, whatever mode
    the change leaves (RLDC2Diodes: 12 changes of 4 modes, the charge and flux
    conservation of docs/theory.md §13)."""
    same, diffs = _compared(name)
    assert diffs == [] and same == expected


def test_the_clutch_restart_conserves_momentum():
    """ClutchBasic into (g): w1 = w2 = (j1 w1- + j2 w2-)/(j1 + j2), impulses on f1 and f2;
    into (not g) nothing moves."""
    sched = analyze(load(MODELS / "ClutchBasic.mo"), implicit=True).guarded
    assert listed_modes(sched) == [(True,), (False,)]
    engaged = restart_into(sched, (True,))
    j1, j2, w1, w2 = sp.symbols("j1 j2 w1- w2-")
    value = dict(engaged.jumps)
    assert set(value) == {"w1", "w2"} and engaged.impulsive == ("f1", "f2")
    for x in ("w1", "w2"):
        assert sp.simplify(_plain(value[x]) - (j1 * w1 + j2 * w2) / (j1 + j2)) == 0
    assert not restart_into(sched, (False,)).moves
    assert mode_text((True, False), ["g1", "a.b > 0"]) == "(g1 and not (a.b > 0))"


def test_summary_of_the_one_analysis_line_by_line(capsys):
    """`analyze --implicit` prints what the default prints for a multimode model (the one
    analysis is the default; the lines themselves: tests/workflows/test_analyze_summary.py):
    the enumerated summary's items as formulas, the restart into the engaged mode among them."""
    assert main(["analyze", "--implicit", str(MODELS / "ClutchBasic.mo")]) == 0
    implicit = capsys.readouterr().out.splitlines()
    assert main(["analyze", str(MODELS / "ClutchBasic.mo")]) == 0
    assert implicit == capsys.readouterr().out.splitlines()
    assert "  into (g): w1 = w2 = (j1*pre(w1) + j2*pre(w2))/(j1 + j2); impulsive: f1, f2" \
        in implicit


def test_verbose_lists_each_variant_restart(capsys):
    """`analyze --implicit -v`: every block variant that restarts something, its modes and its
    restart rows in Modelica syntax (the clutch's engaged block: the momentum balance of each
    shaft over the instant and the closed clutch). A steady variant (the same rows in every
    mode, reading no jump or impulse a change can give: ``e1``, the clock) has no restart
    system and is not listed (docs/theory.md §10.6)."""
    assert main(["analyze", "--implicit", "-v", str(MODELS / "ClutchBasic.mo")]) == 0
    out = capsys.readouterr().out
    at = out.index("restarts of the block variants")
    rows = out[at:].splitlines()
    assert "  e3+e4+e5'+e6 in (g): restarts w1, w2" in rows
    assert "    0 = -impulse(f1) + j1*w1 - j1*pre(w1)" in rows
    assert "    0 = impulse(f1) + impulse(f2)" in rows
    assert not any(r.startswith("  e1 ") for r in rows)
