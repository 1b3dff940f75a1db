"""Steady block variants (docs/theory.md §10.6, `mdae_fmu.implicit.variants`): a variant whose
rows are the same in every mode and that reads no jump or impulse a mode change can give has
no restart system. The oracle is the enumerated analysis (`analyze(implicit=False)`: every
mode change explored one by one, its standardized restart, mdae_fmu.modes.explore): no state
that an enumerated change moves is written by a steady variant, and the restart into each
mode composed from the schedule equals the enumerated one."""

from __future__ import annotations

import sys
from pathlib import Path

import sympy as sp

from mdae_fmu.analysis import analyze, guarded_analysis
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.schedule_report import restart_into

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from gen_modeller import drive_line  # noqa: E402
from guarded_stages import chain  # noqa: E402  (the single-mode chain of docs/multimode.md)


def test_a_model_without_guards_has_no_restart_system():
    """No mode change can happen: every variant of the implicit analysis' schedule (the one
    analysis, asked for by name: ``implicit=True`` is the default) is steady, nothing is
    impulsive."""
    a = guarded_analysis(parse_modelica(chain(6), "Chain6.mo"), None)
    s = a.guarded
    assert s is not None and len(s.variants) == 12
    assert all(v.restart is None and v.delta is None for v in s.variants)
    assert s.impulse_outputs == ()


def _plain(e: sp.Expr) -> sp.Expr:
    return e.xreplace({x: sp.Symbol(x.name) for x in e.free_symbols})


def test_the_unswitched_tail_of_a_drive_line_is_steady():
    """Two clutches, then three shafts on elastic couplings: the tail's variants have no
    restart; every state an enumerated mode change moves is restarted by the schedule, with
    the enumerated value (the clutched shafts' weighted mean speed), the tail's speeds stay."""
    model = parse_modelica(drive_line(2, tail=3), "DriveLine2Tail3.mo")
    one = analyze(model)
    s = one.guarded
    assert s is not None and one.modes is None
    restarted = {s.variables[j] for v in s.variants if v.restart is not None for j in v.writes}
    steady = {s.variables[j] for v in s.variants if v.restart is None for j in v.writes}
    assert {f"shaft{k}.w" for k in (4, 5, 6)} <= steady
    assert {f"shaft{k}.w" for k in (1, 2, 3)} <= restarted
    enum = analyze(model, implicit=False)
    assert enum.automaton is not None and enum.accepted
    names = list(s.guard_names)
    moved, compared = set(), 0
    for ch in enum.automaton.changes:
        lits = [p.strip() for p in ch.dst_label.split(",")]
        value = {p.removeprefix("not "): not p.startswith("not ") for p in lits}
        r = restart_into(s, tuple(value[n] for n in names))
        jumps = dict(r.jumps)
        assert set(r.numerical) <= restarted
        for eq in ch.restart:
            x = eq.lhs.name[:-1]
            if not (eq.rhs.is_Symbol and eq.rhs.name == f"{x}-"):
                moved.add(x)
            if x in r.numerical:
                continue
            # the value compared from the mode with every clutch released (restart_into is
            # the restart "from any other mode": from a mode where two shafts turn together
            # already, the enumerated w2+ = w2- is the same mean at w2- = w3-)
            if any(not p.strip().startswith("not ") for p in ch.src_label.split(",")):
                continue
            mine = jumps.get(x, sp.Symbol(f"{x}-"))
            assert sp.simplify(_plain(mine) - _plain(eq.rhs)) == 0, (ch.dst_label, x, mine)
            compared += 1
    assert moved and not moved & steady, moved & steady
    # no steady variant reads a jump or an impulse that the restart into some mode gives
    steady_reads = {s.variables[j] for v in s.variants if v.restart is None for j in v.reads}
    impulsive = set()
    for bits in [(a, b) for a in (False, True) for b in (False, True)]:
        r = restart_into(s, bits)
        impulsive.update(r.impulsive)
        assert not set(r.impulsive) & steady_reads, (bits, set(r.impulsive) & steady_reads)
        assert not {x for x, _ in r.jumps} & steady_reads
    assert {"clutch1.tau", "clutch2.tau"} <= impulsive
    assert {"shaft2.w", "shaft3.w"} <= moved
    assert compared >= 6


CLUTCH_READERS = """class ClutchReaders "ClutchBasic with two readers of its shafts"
  parameter Real j1 = 1.0;
  parameter Real j2 = 2.0;
  Real t(start = 0.0, fixed = true);
  Boolean g(start = false);
  Real w1(start = 1.0, fixed = true);
  Real w2(start = 1.5, fixed = true);
  Real f1;
  Real f2;
  Real fsum "reads the torques: impulsive where they are";
  Real p2 "reads a speed at order 0: bounded";
equation
  der(t) = 1.0;
  g = t >= 5.0 and t <= 7.0;
  j1 * der(w1) = -0.01 * w1 + f1;
  j2 * der(w2) = -0.0125 * w2 + f2;
  0.0 = if g then w1 - w2 else f1;
  f1 + f2 = 0.0;
  fsum = f1 - 2.0 * f2;
  p2 = 3.0 * w2;
end ClutchReaders;
"""


def test_a_block_in_every_mode_reading_an_impulse_is_restarted():
    """``fsum`` is computed the same way in every mode, but from the clutch torques, which
    are impulsive when it engages: its variant keeps its restart and ``fsum`` is an impulse
    output, as the enumerated analysis finds it impulsive; ``p2`` reads a speed, which jumps
    but stays bounded, so it is steady and never impulsive."""
    model = parse_modelica(CLUTCH_READERS, "ClutchReaders.mo")
    s = analyze(model).guarded
    assert s is not None
    writes = {s.variables[j]: v for v in s.variants for j in v.writes}
    assert writes["fsum"].restart is not None and writes["p2"].restart is None
    assert "fsum" in s.impulse_outputs and "p2" not in s.impulse_outputs
    enum = analyze(model, implicit=False)
    found = {label for ch in enum.automaton.changes for inst in ch.instants
             for label, _ in inst.impulsive}
    assert any(label.startswith("fsum") for label in found), found
    assert not any(label.startswith("p2") for label in found), found
