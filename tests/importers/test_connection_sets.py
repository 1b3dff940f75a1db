"""Connection sets of a flat model and the rejection that names their defects
(`mdae_fmu/importers/connection_sets.py`; Modelica 3.6 §9.3): two component outputs in one
connection set, and a component input that no connection reaches (OpenModelica's Influenza
has both, docs/corpus.md). The models are written here in the form front ends print
(OpenModelica's flat output: each connect an equation ``a.u = b.y``; rumoca chains them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mdae_fmu import api
from mdae_fmu.cli import main
from mdae_fmu.importers import frontend
from mdae_fmu.importers.connection_sets import connection_defects, connection_sets
from mdae_fmu.importers.flat_modelica import parse_modelica

# a stock s fed by two gains a and b of its level; `s.inflow = b.y` should have been
# `s.outflow = b.y`: b.y and a.y are two sources in one set, s.outflow is connected to nothing
NET = """class Net
  input Real s.inflow;
  input Real s.outflow;
  output Real s.level;
  Real s.p(start = 1, fixed = true);
  input Real a.u;
  output Real a.y;
  parameter Real a.k = 0.5;
  input Real b.u;
  output Real b.y;
  parameter Real b.k = 0.2;
equation
  der(s.p) = s.inflow - s.outflow;
  s.level = s.p;
  a.y = a.k * a.u;
  b.y = b.k * b.u;
  a.u = s.level;
  b.u = s.level;
  s.inflow = a.y;
  s.inflow = b.y;
end Net;
"""

TWO_SOURCES = ("the connection set {s.inflow, a.y, b.y} (equations e7 (Net.mo:19), e8 "
               "(Net.mo:20)) joins 2 component outputs, a.y and b.y: a connection set holds "
               "at most one source of a signal (Modelica 3.6 §9.3), so these equations "
               "over-determine the model")
UNCONNECTED = ("s.outflow: an input of component s that no equation connects, taken as an "
               "input of the model (Modelica 3.6 §9.3: an unconnected component input needs "
               "a connection or an equation of its own)")


def test_connection_sets_are_the_classes_of_equations_between_components():
    """`s.level = s.p` is the stock's own equation, not a connection; a chain of equations
    (rumoca's form) is one set."""
    m = parse_modelica(NET, "Net.mo")
    sets = [(names, [eq.id for eq in eqs]) for names, eqs in connection_sets(m)]
    assert sets == [(("a.u", "s.level", "b.u"), ["e5", "e6"]),
                    (("s.inflow", "a.y", "b.y"), ["e7", "e8"])]
    chained = NET.replace("s.inflow = b.y;", "a.y = b.y;")
    sets = [names for names, _ in connection_sets(parse_modelica(chained, "Net.mo"))]
    assert sets[1] == ("s.inflow", "a.y", "b.y")


@pytest.mark.parametrize("command", ["analyze", "export"])
def test_rejection_names_two_sources_and_the_unconnected_input(tmp_path, capsys, command):
    """Both commands give the verdict with the over-determined equations of the analysis and,
    after them, the two defects in the model's terms; `export` writes no FMU."""
    path = tmp_path / "Net.mo"
    path.write_text(NET)
    out = tmp_path / "Net.fmu"
    args = [command, str(path)] + (["-o", str(out)] if command == "export" else [])
    assert main(args) == 1
    captured = capsys.readouterr()
    text = captured.out + captured.err
    lines = [ln.strip() for ln in text.splitlines()]
    assert "over-determine {s.inflow, s.level, s.p, a.u, a.y, b.u, b.y} (8 equations for 7 " \
        "unknowns: more equations than unknowns)" in text
    k = lines.index(TWO_SOURCES)
    assert lines[k + 1] == UNCONNECTED
    assert "Traceback" not in text and not out.exists()


def test_the_repaired_model_is_accepted_without_the_messages():
    """With `s.outflow = b.y`, each set has one source and every component input is
    connected: 8 equations, 8 unknowns, accepted, and no connection message."""
    m = parse_modelica(NET.replace("s.inflow = b.y;", "s.outflow = b.y;"), "Net.mo")
    a = api.analyze(m)
    assert a.exit_code == 0 and not a.errors
    assert connection_defects(m, {eq.id for eq in m.equations}) == ()


def test_nested_outputs_and_unrelated_rejections_give_no_message():
    """An outside output of a component equated to the inside output of its subcomponent
    (`c.y = c.g.y`) is one source (§9.3); a model over-determined elsewhere, whose
    over-determined equations are not in a set with two sources, gets no set message."""
    text = """class N
  output Real c.y;
  output Real c.g.y;
  Real x(start = 0, fixed = true);
equation
  c.g.y = time;
  c.y = c.g.y;
  der(x) = c.y;
  x = 2;
end N;
"""
    m = parse_modelica(text, "N.mo")
    assert [names for names, _ in connection_sets(m)] == [("c.y", "c.g.y")]
    a = api.analyze(m)
    assert a.exit_code == 1
    assert not any("connection set" in msg for msg in a.messages)
    assert connection_defects(m, {eq.id for eq in m.equations}) == ()


@pytest.mark.skipif(not frontend.rumoca_available(),
                    reason="rumoca (extra 'frontend') is not installed")
def test_hierarchical_model_through_rumoca(tmp_path: Path):
    """The same defect written with blocks and connect (Influenza's form: `connector Port =
    Real`, two connects on one input, a top-level input with a binding fed to a block):
    rumoca flattens it, the binding is an equation, and the rejection names the set and
    the unconnected input."""
    src = tmp_path / "Stocks.mo"
    src.write_text("""connector Port = Real;
model Stock
  input Port inflow;
  input Port outflow;
  output Port level;
  Real p(start = 1, fixed = true);
equation
  der(p) = inflow - outflow;
  level = p;
end Stock;
model Gain
  input Port u;
  output Port y;
  parameter Real k = 1;
equation
  y = k*u;
end Gain;
model Stocks
  input Real k0 = 0.5;
  Stock s;
  Gain a;
  Gain b(k = 0.2);
equation
  a.u = k0*s.level;
  connect(b.u, s.level);
  connect(s.inflow, a.y);
  connect(s.inflow, b.y);
end Stocks;
""")
    m = api.load(src)
    assert m.var("k0").causality == "local"
    msgs = api.analyze(m).messages
    sets = [msg for msg in msgs if msg.startswith("the connection set {")]
    assert len(sets) == 1 and "joins 2 component outputs, a.y and b.y: " in sets[0], msgs
    assert any(msg.startswith("s.outflow: an input of component s that no equation "
                              "connects") for msg in msgs), msgs


# NET with b switched off by a Boolean input: two modes, both structurally singular
SWITCHED = (NET.replace("  Real s.p(", "  input Boolean on;\n  Real s.p(")
            .replace("b.y = b.k * b.u;", "b.y = if on then b.k * b.u else 0;"))


def test_one_analysis_of_a_multimode_model_names_the_defects():
    """The one analysis of a multimode model (`analysis.guarded_analysis`, ``--implicit``:
    no mode enumerated) names the connection defects that the over-determined equations of
    the concrete mode it diagnoses show, after the formula of the singular modes and that
    mode's diagnostic; the enumerated oracle names the same defects (issue 26)."""
    from mdae_fmu.analysis import analyze
    m = parse_modelica(SWITCHED, "Net.mo")
    one = analyze(m, implicit=True)
    assert one.modes is None and one.automaton is None and not one.accepted
    errors = one.errors
    assert "structurally singular in 2 of 2 modes: " in "\n".join(errors), errors
    shifted = TWO_SOURCES.replace("(Net.mo:20)", "(Net.mo:21)").replace("(Net.mo:19)",
                                                                          "(Net.mo:20)")
    assert errors[-2:] == (shifted, UNCONNECTED), errors
    assert analyze(m).errors == errors          # the default is the one analysis
    enumerated = analyze(m, implicit=False)
    assert enumerated.modes is not None and not enumerated.accepted
    assert enumerated.errors[-2:] == (shifted, UNCONNECTED), enumerated.errors
