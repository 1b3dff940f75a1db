"""`mdae-fmu analyze`: per-mode report + mode changes, JSON, DOT, exit codes 0/1/2."""

import json
import math
import os
import re
from pathlib import Path

import pytest
import sympy as sp

from mdae_fmu.cli import main
from mdae_fmu.api import load
from mdae_fmu.modes.normalize import normalize
from mdae_fmu.modes.shiftform import parameter_values
from multimode_examples import CLUTCH_MISSING

MODELS = Path(__file__).resolve().parents[2] / "reference_models"
CONDITIONALS = Path(__file__).resolve().parents[1] / "data" / "conditionals"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_clutch_report_shows_modes_erasure_and_momentum_restart(capsys):
    code, out, err = run(capsys, "analyze", "--list-modes", str(MODELS / "ClutchBasic.mo"))
    assert code == 0, err
    assert "mode {g}: ok" in out and "mode {not g}: ok" in out
    assert "e5': der(w1) - der(w2) = 0" in out          # the latent equation of the engaged mode
    assert "not g -> g" in out and "impulsive: f1 (order 1), f2 (order 1)" in out
    assert "w1+ = (j1*w1- + j2*w2-)/(j1 + j2)" in out
    assert out.rstrip().endswith("verdict: accepted")


def test_list_modes_prints_the_enumerated_modes_and_changes(capsys):
    """``analyze --list-modes`` (issue 26, the debugging view of the enumeration): each mode
    of the per-mode stage with its offsets and blocks, each mode of the automaton
    (modes/explore.py) with its states and blocks, each mode change with its instants and
    restart (the clutch's momentum-sharing closed form), then the verdict; the default
    summary holds none of the per-mode detail."""
    code, out, err = run(capsys, "analyze", "--list-modes", str(MODELS / "ClutchBasic.mo"))
    assert code == 0, err
    assert "mode {g}: ok" in out and "mode {not g}: ok" in out
    assert "offsets c: e1=0, e3=0, e4=0, e5=1, e6=0" in out
    assert "modes of the mode-change automaton (2: 2 long, 0 transient):" in out
    assert "  [g] index 1; states {t, w1, w2}; latent {e5|g'}; blocks e1 ; e3+e4+e5|g'+e6" in out
    assert "  not g -> g: 1 instant(s) until steady, impulsive" in out
    assert "    restart: t+ = t-; w1+ = (j1*w1- + j2*w2-)/(j1 + j2); " \
        "w2+ = (j1*w1- + j2*w2-)/(j1 + j2)" in out
    assert out.rstrip().endswith("verdict: accepted")
    code, summary, _ = run(capsys, "analyze", str(MODELS / "ClutchBasic.mo"))
    assert code == 0 and "offsets c:" not in summary and "not g -> g" not in summary


def test_list_modes_refuses_what_it_cannot_list(tmp_path, capsys):
    """``--list-modes`` with ``--implicit`` or ``-v`` (other views) and beyond the
    enumeration (13 input-driven switches, each between ``y = 0`` and the constraint
    ``x = 1`` on a state, so that each changes the offsets and none is demoted: 2^13 > 2^12
    modes, with or without ``--json``)
    exits 2 with the reason, no traceback; the rejection of a model is its verdict (exit 1),
    listed."""
    for other in ("--implicit", "-v"):
        code, out, err = run(capsys, "analyze", "--list-modes", other,
                             str(MODELS / "ClutchBasic.mo"))
        assert code == 2 and out == ""
        assert err.strip() == ("analyze: --list-modes prints the enumerated modes; it does "
                               "not combine with --implicit or -v")
    n = 13
    text = "\n".join(["model Big", *(f"  input Boolean g{k};" for k in range(n)),
                      *(f"  Real x{k}(start = 1, fixed = true);\n  Real y{k};"
                        for k in range(n)), "equation",
                      *(f"  der(x{k}) = y{k};\n  0 = if g{k} then y{k} else x{k} - 1;"
                        for k in range(n)), "end Big;\n"])
    (tmp_path / "Big.mo").write_text(text)
    for json_too in ((), ("--json",)):
        code, out, err = run(capsys, "analyze", "--list-modes", *json_too,
                             str(tmp_path / "Big.mo"))
        assert code == 2 and out == "" and "Traceback" not in err
        assert err.strip() == ("analyze --list-modes: model Big has more than 4096 consistent "
                               "modes, beyond the enumeration; `mdae-fmu analyze -v` states "
                               "them as formulas over the guards")
    code, out, err = run(capsys, "analyze", "--list-modes",
                         str(CONDITIONALS / "Chatter.mo"))
    assert code == 1 and "E-FIXPOINT" in out and "verdict: rejected" in out


def test_json_carries_the_automaton_and_the_restart_value(capsys):
    """``--list-modes --json``: the enumerated JSON report (the default's is the one
    analysis', formulas over the guards)."""
    code, out, _ = run(capsys, "analyze", "--list-modes", "--json",
                       str(MODELS / "ClutchBasic.mo"))
    assert code == 0
    report = json.loads(out)
    assert report["accepted"] is True and report["exit_code"] == 0
    assert {m["name"] for m in report["modes"]} == {"{g}", "{not g}"}
    text = json.dumps(report["mode_changes"])
    assert "(j1*w1- + j2*w2-)/(j1 + j2)" in text
    # the restart the analysis produced, evaluated with the model's parameters at the left
    # limits of t = 5 (w1- = e^-0.05, w2- = 1.5 e^-0.03125), gives the closed-form oracle
    ch = next(c for c in report["mode_changes"]["mode_changes"]
              if (c["from"], c["to"]) == ("not g", "g"))
    restart = {r["lhs"]: parse_formula(r["rhs"]) for r in ch["restart"]}
    assert set(restart) >= {"w1+", "w2+"}
    params = parameter_values(normalize(load(MODELS / "ClutchBasic.mo")))
    left = {"w1-": math.exp(-0.05), "w2-": 1.5 * math.exp(-0.03125)}
    for lhs in ("w1+", "w2+"):
        expr = restart[lhs]
        val = {s: left.get(s.name, params.get(s.name)) for s in expr.free_symbols}
        assert None not in val.values(), (lhs, expr)
        w = float(expr.xreplace(val))
        assert w == pytest.approx(1.286309709, rel=1e-9)
        # the closed form would not match a wrong formula by chance: it depends on both speeds
        assert {"w1-", "w2-"} <= {s.name for s in expr.free_symbols}


def parse_formula(text: str) -> sp.Expr:
    """A restart formula of the JSON report as sympy: left/right limits are printed as
    ``w1-`` / ``der(x)+`` (the sign glued to the name; operators carry spaces)."""
    names = {}

    def sub(m):
        key = f"_v{len(names)}"
        names[key] = m.group(0)
        return key
    code = re.sub(r"(der\([A-Za-z_][\w.]*\)|\b[A-Za-z_][\w.]*)[+-](?![\w(])", sub, text)
    expr = sp.sympify(code, locals={k: sp.Symbol(k) for k in names})
    return expr.xreplace({sp.Symbol(k): sp.Symbol(v, real=True) for k, v in names.items()})


def test_fixpoint_model_is_rejected_with_equation_and_source_line(capsys):
    """An event iteration that provably never settles (each mode's equations select the
    other mode): rejected with the modes, the guard and the equations' source lines."""
    code, out, _ = run(capsys, "analyze", str(CONDITIONALS / "Chatter.mo"))
    assert code == 1
    assert "verdict: rejected" in out
    assert "E-FIXPOINT" in out and "cannot settle" in out
    assert "in mode [g] guard g becomes false (s = -1 (equation e3, Chatter.mo:12))" in out
    assert "in mode [not g] guard g becomes true (s = 1 (equation e4, Chatter.mo:14))" in out


def test_guard_on_same_instant_value_is_accepted_as_event_iteration(capsys):
    """CupAndBallOriginal (taut = s <= 0, s computed under taut): accepted, the guard
    evaluated by event iteration, and the report says so."""
    code, out, _ = run(capsys, "analyze", str(MODELS / "CupAndBallOriginal.mo"))
    assert code == 0 and "verdict: accepted" in out


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
    line = next(row for row in out.splitlines()
                if row.strip().startswith("mode {g}") and "over-determine" in row)
    assert "ClutchBad.mo:13" in line and "ClutchBad.mo:14" in line
    assert "no equation determines" in line and "f2" in line


def test_dot_file_is_written(tmp_path, capsys):
    dot = tmp_path / "clutch.dot"
    code, _, err = run(capsys, "analyze", "--dot", str(dot), str(MODELS / "ClutchBasic.mo"))
    assert code == 0 and not dot.exists()       # the one analysis builds no automaton
    assert err.strip().endswith(f"{dot}: not written, the one analysis builds no mode-change "
                                "automaton (--list-modes enumerates the modes and builds it)")
    code, _, _ = run(capsys, "analyze", "--list-modes", "--dot", str(dot),
                     str(MODELS / "ClutchBasic.mo"))
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


# --- rejections name the mode change, the variables and the equations with their lines -------

def verdict_lines(out: str, code: str) -> list[str]:
    lines = out[out.rindex("verdict: rejected"):].splitlines()
    return [line.strip() for line in lines if line.strip().startswith(code)]


def test_elastic_cup_and_ball_without_impact_law_names_equations_and_lines(capsys):
    """E-TRANSIENT-UNDER (docs/theory.md §7, §13.2; T-CB-6): the transient instant,
    the undetermined values, the equations involved with their source lines, how many
    equations are missing and which velocities an impact law may set."""
    code, out, err = run(capsys, "analyze", str(MODELS / "CupAndBallElasticNoLaw.mo"))
    assert code == 1 and "Traceback" not in err
    [line] = verdict_lines(out, "E-TRANSIENT-UNDER")
    assert "when switching not edge(contact) -> edge(contact)" in line
    assert "{lam, s, vx^o, vy^o}" in line and "1 equation missing" in line
    for ln in (21, 22, 26):        # der(vx) = -lam*x, der(vy) = -lam*y - g, 0 = lam + s
        assert f"CupAndBallElasticNoLaw.mo:{ln}" in line
    assert "impact/restart law for one of {vx, vy}" in line
    code, out, _ = run(capsys, "analyze", "--json", str(MODELS / "CupAndBallElasticNoLaw.mo"))
    [d] = [d for d in json.loads(out)["mode_changes"]["diagnostics"]
           if d["code"] == "E-TRANSIENT-UNDER"]
    assert {(e["equation"], e["k"], e["loc"]) for e in d["equations"]} == {
        ("e1", 0, "CupAndBallElasticNoLaw.mo:21"), ("e2", 0, "CupAndBallElasticNoLaw.mo:22"),
        ("e5", 0, "CupAndBallElasticNoLaw.mo:26")}


TRANSIENT_FUTURE = """class TransientFuture "the transient instant needs values of the \
following mode"
  Real x;
  Real y(start = 0.0, fixed = true);
  Real u;
  Real v;
  Boolean c(start = false, fixed = true);
equation
  c = x >= 1.0;
  der(y) + x = 1.0;
  x + der(y) + v = 1.0;
  if edge(c) then
    u = 1.0;
    u + v + der(x) = 1.0;
  else
    der(y) = 1.0;
    u = 0.0;
  end if;
end TransientFuture;
"""


def test_transient_instant_depending_on_the_future_names_equations_and_lines(tmp_path, capsys):
    """E-TRANSIENT-FUTURE (ExistQuantifEqn condition 3, theory §2.4 and §7.1): the values of the
    transient instant can only be found together with values of the following long mode."""
    src = tmp_path / "TransientFuture.mo"
    src.write_text(TRANSIENT_FUTURE)
    code, out, err = run(capsys, "analyze", str(src))
    assert code == 1 and "Traceback" not in err
    [line] = verdict_lines(out, "E-TRANSIENT-FUTURE")
    assert "when switching not edge(c) -> edge(c)" in line and "future values {y^o2}" in line
    assert "x^o" in line and "y^o" in line
    for ln in (9, 10, 13, 15):
        assert f"TransientFuture.mo:{ln}" in line
    assert "e2' (TransientFuture.mo:9)" in line          # a shifted (latent) row is named too



def test_missing_restart_singles_out_the_state_without_restart(tmp_path, capsys):
    """E-RESTART-MISSING (Algorithm 9, theory §7.1): w2 is a state of the engaged mode that the
    released mode does not determine; its restart is the one missing equation, and f1, f2, w1
    are only coupled to it."""
    src = tmp_path / "ClutchMissing.mo"
    src.write_text(CLUTCH_MISSING)
    code, out, err = run(capsys, "analyze", str(src))
    assert code == 1 and "Traceback" not in err
    [line] = verdict_lines(out, "E-RESTART-MISSING")
    assert ("when switching not engaged -> engaged, instant 0: no equation determines the "
            "restart of {w2} (1 equation missing") in line
    assert "{f1, f2, w1} are coupled to it through" in line
    for ln in (13, 15, 16, 17):
        assert f"ClutchMissing.mo:{ln}" in line
    code, out, _ = run(capsys, "analyze", "--list-modes", "--json", str(src))
    report = json.loads(out)
    [d] = [d for d in report["mode_changes"]["diagnostics"] if d["code"] == "E-RESTART-MISSING"]
    assert d["variables"] == ["w2"]
    assert d["equations"][0] == {"equation": "e3", "k": 0, "label": "e3",
                                 "loc": "ClutchMissing.mo:13"}
    assert all(set(e) == {"equation", "k", "label", "loc"} for e in d["equations"])
    # the same model with the rigid coupling w1 = w2 has the restart: accepted
    src.write_text(CLUTCH_MISSING.replace("f1 = c * (w2 - w1)", "w1 - w2 = 0.0"))
    code, out, _ = run(capsys, "analyze", str(src))
    assert code == 0, out


# --- Lemma 22: two-graph reading (default) and the literal one ------------------------------

RESET_TO_Y = """class ResetToY "at the event x takes the value of y: x^o - y = 0 with y known"
  Real x(start = 0.0, fixed = true);
  Real y(start = 2.0, fixed = true);
equation
  der(x) = 1.0;
  der(y) = -1.0;
  when x >= y then
    reinit(x, y);
  end when;
end ResetToY;
"""


@pytest.mark.parametrize("name", ["ResetToY", "BouncingBall"])
def test_lemma22_option_gives_both_readings(tmp_path, capsys, name):
    """docs/decisions.md §1: the transient equation x^o - y = 0 (X = {x^o}, Y = {y}, theory
    §4.10 T-EQ-1) is accepted in the two-graph reading and rejected by Lemma 22 as printed,
    which treats y as an unknown; the bouncing ball's v^o = -e v is the same shape."""
    if name == "ResetToY":
        path = tmp_path / "ResetToY.mo"
        path.write_text(RESET_TO_Y)
    else:
        path = MODELS / "BouncingBall.mo"
    code, out, _ = run(capsys, "analyze", "-v", str(path))
    assert code == 0 and "Lemma 22: two-graph reading" in out
    code2, out2, _ = run(capsys, "analyze", "-v", "--lemma22", "two-graph", str(path))
    assert code2 == 0 and out2 == out
    code, out, err = run(capsys, "analyze", "-v", "--lemma22", "literal", str(path))
    assert code == 1 and "Traceback" not in err and "Lemma 22: literal reading" in out
    [line] = verdict_lines(out, "E-TRANSIENT-UNDER")
    assert f"{path.name}:" in line
    code, out, _ = run(capsys, "analyze", "--json", "--lemma22", "literal", str(path))
    assert json.loads(out)["mode_changes"]["lemma22"] == "literal"


def test_lemma22_option_rejects_unknown_values(capsys):
    with pytest.raises(SystemExit) as err:
        main(["analyze", "--lemma22", "printed", str(MODELS / "ClutchBasic.mo")])
    assert err.value.code == 2


# --- --dot with Graphviz, the Cup-and-Ball restart from the .mo file ------------------------

def test_dot_png_is_written_when_dot_is_installed(tmp_path, capsys, monkeypatch):
    """The PNG path of `--dot`: a stand-in `dot` first on PATH writes a PNG header to the
    output file given after -o (the arguments Graphviz takes)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "dot"
    fake.write_text('#!/bin/sh\n[ "$1" = "-Tpng" ] && [ "$3" = "-o" ] || exit 3\n'
                    "printf '\\211PNG\\r\\n\\032\\n' > \"$4\"\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    dot = tmp_path / "clutch.dot"
    code, _, err = run(capsys, "analyze", "--list-modes", "--dot", str(dot),
                       str(MODELS / "ClutchBasic.mo"))
    assert code == 0
    png = tmp_path / "clutch.png"
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert dot.read_text().startswith("digraph")
    assert f"wrote {dot} and {png}" in err


def test_cup_and_ball_restart_from_the_reference_model(capsys):
    """T-CB-5 on reference_models/CupAndBall.mo itself (not tests/multimode_examples.py): L = 1,
    p- = (0, -1), v- = (1, -2) give p+ = (0, -1) and v+ = (1, 0)."""
    code, out, _ = run(capsys, "analyze", "--list-modes", "--json",
                       str(MODELS / "CupAndBall.mo"))
    assert code == 0
    ch = next(c for c in json.loads(out)["mode_changes"]["mode_changes"]
              if (c["from"], c["to"]) == ("not taut", "taut"))
    restart = {r["lhs"]: parse_formula(r["rhs"]) for r in ch["restart"]}
    assert set(restart) == {"x+", "y+", "der(x)+", "der(y)+"}
    params = parameter_values(normalize(load(MODELS / "CupAndBall.mo")))
    assert params["L"] == 1.0
    left = {"x-": 0.0, "y-": -1.0, "der(x)-": 1.0, "der(y)-": -2.0}
    got = {}
    for lhs, expr in restart.items():
        val = {s: left.get(s.name, params.get(s.name)) for s in expr.free_symbols}
        got[lhs] = float(expr.xreplace(val))
    assert got == pytest.approx({"x+": 0.0, "y+": -1.0, "der(x)+": 1.0, "der(y)+": 0.0},
                                abs=1e-12)


# --- impulse orders in the text report; exact in the JSON ------------------------------------

def test_order_phrases():
    """Exact orders print as `order q`; a range of solutions that reaches above 0 is
    `possibly impulsive`; a state increment of order 0 is a finite jump, a negative order an
    infinitesimal one, -inf no jump; the bare bound `<= 0` (Assumption 7) is not news."""
    from fractions import Fraction as Fr

    from mdae_fmu.impulse.analysis import OrderInfo
    from mdae_fmu.modes.describe import jump_phrase, order_phrase
    assert order_phrase("1", OrderInfo(lo=Fr(1), hi=Fr(1), may_vanish=False)) == "order 1"
    assert order_phrase("1/3", OrderInfo(lo=Fr(1, 3), hi=Fr(1, 3), may_vanish=False)) == "order 1/3"
    assert order_phrase("[-7, 1] or -inf", OrderInfo(lo=Fr(-7), hi=Fr(1), may_vanish=True)) == \
        "order ≤ 1, possibly impulsive"
    assert (
        order_phrase("<= 1", OrderInfo(lo=Fr(-8), hi=Fr(1), may_vanish=False))
        == "order ≤ 1, possibly impulsive"
    )
    assert (
        order_phrase("[1, 2]", OrderInfo(lo=Fr(1), hi=Fr(2), may_vanish=False))
        == "order between 1 and 2"
    )
    assert order_phrase("undetermined") == "order undetermined"
    assert jump_phrase(OrderInfo(lo=Fr(0), hi=Fr(0), may_vanish=False), "w1") == "order 0: w1 jumps"
    assert jump_phrase(OrderInfo(lo=Fr(-2, 3), hi=Fr(-2, 3), may_vanish=False), "w2") == \
        "order -2/3: infinitesimal, w2 continuous"
    assert jump_phrase(OrderInfo(lo=Fr(-8), hi=Fr(-1), may_vanish=False), "x") == \
        "order ≤ -1: infinitesimal, x continuous"
    assert (
        jump_phrase(OrderInfo(lo=None, hi=None, may_vanish=True), "u1")
        == "order -inf: u1 unchanged"
    )
    assert jump_phrase(OrderInfo(lo=Fr(-8), hi=Fr(0), may_vanish=False), "x") is None


def test_cubic_clutch_report_shows_fractional_orders_and_shaft_jumps():
    """Examples note §2.5 (corrected values): torques of order 1/3, shaft increments of order
    0 (w1 jumps) and -2/3 (w2 does not jump in the limit); the JSON keeps the exact texts."""
    from mdae_fmu.analysis import analyze, render_json, render_text
    model = load(MODELS / "ClutchNonSemilinear.mo")
    a = analyze(model, implicit=False)      # the enumerated report (analyze --list-modes)
    text = render_text(model, a)
    assert "impulsive: f1 (order 1/3), f2 (order 1/3)" in text
    assert ("state increments: w1^o - w1 (order 0: w1 jumps), w2^o - w2 (order -2/3: "
            "infinitesimal, w2 continuous)") in text
    assert " or -inf" not in text and "[-" not in text
    j = render_json(model, a)
    inst = next(c for c in j["mode_changes"]["mode_changes"] if c["impulsive"])["instants"][0]
    assert inst["jumps"] == [{"variable": "w1", "increment": "w1^o - w1", "order": "0"},
                             {"variable": "w2", "increment": "w2^o - w2", "order": "-2/3"}]
    assert {i["order"] for i in inst["impulsive"]} == {"1/3"}


PING_PONG = """class PingPong "each event resets the variable the other one watches"
  Real x(start = 0.0, fixed = true);
  Real y(start = 0.0, fixed = true);
equation
  der(x) = 1.0;
  der(y) = 1.0;
  when y >= 1.0 then
    reinit(x, 2.0);
  end when;
  when x >= 1.0 then
    reinit(y, 2.0);
  end when;
end PingPong;
"""


def test_infinite_cascade_names_the_resets_with_lines(tmp_path, capsys):
    """E-CASCADE-INFINITE (Assumption 4, theory §2.12): the events, the reset variables and
    the reinit equations with their source lines."""
    src = tmp_path / "PingPong.mo"
    src.write_text(PING_PONG)
    code, out, err = run(capsys, "analyze", str(src))
    assert code == 1 and "Traceback" not in err
    lines = verdict_lines(out, "E-CASCADE-INFINITE")
    assert lines and all("PingPong.mo:8" in line and "PingPong.mo:11" in line for line in lines)


@pytest.mark.parametrize("name,code", [("RLDC2Published", "W-INIT-INCONSISTENT"),
                                       ("AirBrake", "W-FAKE-IMPULSE")])
def test_export_prints_the_warnings_analyze_prints(capsys, tmp_path, name, code):
    """export runs the analysis analyze runs and prints its warnings, the same lines, on
    stderr; a warning does not stop the export (exit 0, the FMU is written). Issue 24."""
    rc, out, err = run(capsys, "analyze", str(MODELS / f"{name}.mo"))
    assert rc == 0 and "warning(s) above" in out
    printed = [line.strip() for line in out.splitlines() if line.strip().startswith("W-")]
    assert [w.split(":")[0] for w in printed] == [code]
    fmu = tmp_path / f"{name}.fmu"
    rc, out, err = run(capsys, "export", str(MODELS / f"{name}.mo"), "-o", str(fmu))
    assert rc == 0 and fmu.is_file()
    assert out == f"wrote {fmu}\n"
    assert [line for line in err.splitlines() if line.startswith("W-")] == printed
    # a model without warnings prints none
    rc, out, err = run(capsys, "export", str(MODELS / "Dahlquist.mo"), "-o",
                       str(tmp_path / "Dahlquist.fmu"))
    assert rc == 0 and "W-" not in err
