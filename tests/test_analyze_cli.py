"""`mdae-fmu analyze`: per-mode report + mode changes, JSON, DOT, exit codes 0/1/2."""

import json
import math
from pathlib import Path

import pytest

from mdae_fmu.cli import main

MODELS = Path(__file__).resolve().parent.parent / "reference_models"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_clutch_report_shows_modes_erasure_and_momentum_restart(capsys):
    code, out, err = run(capsys, "analyze", str(MODELS / "ClutchBasic.mo"))
    assert code == 0, err
    assert "mode {g}: ok" in out and "mode {not g}: ok" in out
    assert "e5': der(w1) - der(w2) = 0" in out          # the latent equation of the engaged mode
    assert "not g -> g" in out and "impulsive: f1 (order 1), f2 (order 1)" in out
    assert "w1+ = (j1*w1- + j2*w2-)/(j1 + j2)" in out
    assert out.rstrip().endswith("verdict: accepted")


def test_json_carries_the_automaton_and_the_restart_value(capsys):
    code, out, _ = run(capsys, "analyze", "--json", str(MODELS / "ClutchBasic.mo"))
    assert code == 0
    report = json.loads(out)
    assert report["accepted"] is True and report["exit_code"] == 0
    assert {m["name"] for m in report["modes"]} == {"{g}", "{not g}"}
    text = json.dumps(report["mode_changes"])
    assert "(j1*w1- + j2*w2-)/(j1 + j2)" in text
    # the restart formula with Figure 2's parameters gives the oracle of the theory note
    w = (1 * math.exp(-0.05) + 2 * 1.5 * math.exp(-0.03125)) / 3
    assert abs(w - 1.286309709) < 1e-9


def test_fixpoint_model_is_rejected_with_equation_and_source_line(capsys):
    code, out, _ = run(capsys, "analyze", str(MODELS / "CupAndBallOriginal.mo"))
    assert code == 1
    assert "verdict: rejected" in out
    assert "E-FIXPOINT" in out and "CupAndBallOriginal.mo:" in out and "pre(" in out


def test_structurally_singular_mode_names_equations_and_variables(tmp_path, capsys):
    src = tmp_path / "ClutchBad.mo"
    src.write_text("""class ClutchBad
  parameter Real j1 = 1;
  parameter Real j2 = 2;
  input Boolean g(start = false);
  Real w1(start = 1, fixed = true);
  Real w2(start = 1.5, fixed = true);
  Real f1;
  Real f2;
equation
  j1*der(w1) = f1;
  j2*der(w2) = f2;
  if g then
    f1 = 0;
    2*f1 = 1;
  else
    f1 = 0;
    f2 = 0;
  end if;
end ClutchBad;
""")
    code, out, _ = run(capsys, "analyze", str(src))
    assert code == 1
    line = next(l for l in out.splitlines() if l.strip().startswith("mode {g}") and "over-determine" in l)
    assert "ClutchBad.mo:13" in line and "ClutchBad.mo:14" in line
    assert "no equation determines" in line and "f2" in line


def test_dot_file_is_written(tmp_path, capsys):
    dot = tmp_path / "clutch.dot"
    code, _, _ = run(capsys, "analyze", "--dot", str(dot), str(MODELS / "ClutchBasic.mo"))
    assert code == 0
    text = dot.read_text()
    assert text.startswith("digraph") and "not g" in text


def test_unreadable_input_exits_2_without_traceback(tmp_path, capsys):
    bad = tmp_path / "Bad.mo"
    bad.write_text("class Bad\n  Real x;\nequation\n  der(x) = (1 + );\nend Bad;\n")
    code, out, err = run(capsys, "analyze", str(bad))
    assert code == 2
    assert err.startswith(f"{bad}:4:") and "Traceback" not in err
    code, _, err = run(capsys, "analyze", str(tmp_path / "missing.mo"))
    assert code == 2 and "Traceback" not in err
