"""An input with a binding is an equation, not an input the host sets (Modelica 3.6 §4.7,
balanced models: the knowns are the top-level public inputs "that neither are connectors nor
have binding equations"; OpenModelica's flattening test TopLevelInputs2 prints `input Real
x[:] = {1, 2, 3}` as `Real x[3]` with the equation). Read so from flat Modelica, Base Modelica
and rumoca's flat output; a `start` modifier stays the start value. The FMU side (causality in
modelDescription.xml, the trajectory) is in tests/fmu/test_fmu_runtime.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from mdae_fmu import api
from mdae_fmu import expr as E
from mdae_fmu.diagnostics import InputError
from mdae_fmu.importers import frontend
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.importers.xml_eqlist import NAMESPACE, parse_xml

R, C = E.Ref, E.Const

FLAT = """class Bound
  parameter Real k = 3;
  Real x(start = 0, fixed = true);
  input Real u(start = 5) = k*time;
  input Real w;
  output Real y;
equation
  der(x) = u + w;
  y = x;
end Bound;
"""

BASE = """//! base 0.1.0
package 'Bound'
  model 'Bound'
    parameter Real 'k' = 3;
    Real 'x'(start = 0, fixed = true);
    input Real 'u'(start = 5) = 'k' * time;
    input Real 'w';
    output Real 'y';
  equation
    der('x') = 'u' + 'w';
    'y' = 'x';
  end 'Bound';
end 'Bound';
"""


@pytest.mark.parametrize("text, file", [(FLAT, "Bound.mo"), (BASE, "Bound.bmo")])
def test_binding_of_a_top_level_input_is_an_equation(text, file):
    """u is computed by u = k*time (its start 5 stays a start value, no equation); w, an
    input without binding, is the only input the host sets; the model is square and
    accepted (x = 3 t^2 / 2 + integral of w: the FMU test checks it)."""
    m = parse_modelica(text, file)
    causality = {v.name: v.causality for v in m.variables}
    assert causality == {"k": "parameter", "x": "local", "u": "local", "w": "input",
                         "y": "output"}
    assert m.var("u").start == C(5) and m.var("u").binding is None
    assert m.equations[0].residual == E.BinOp("-", R("u"), E.BinOp("*", R("k"), E.Time()))
    assert m.equations[0].loc.line == 4 + (file == "Bound.bmo") * 2
    assert len(m.equations) == 3
    analysis = api.analyze(m)
    assert analysis.exit_code == 0, analysis.messages


def test_binding_may_read_variables_and_arrays_are_bound_per_element():
    """The binding is an equation, so it may read a state (was refused: "the binding of an
    input is its start value ... can only read parameters and constants"); OpenModelica's
    TopLevelInputs2, `input Real x[:] = {1, 2, 3}`, is three computed elements."""
    m = parse_modelica("class M Real x(start = 1, fixed = true); input Real u = -2*x; "
                       "equation der(x) = u; end M;", "m.mo")
    assert m.var("u").causality == "local"
    assert E.refs(m.equations[0].residual) == {"u", "x"} and len(m.equations) == 2
    m = parse_modelica("model TopLevelInputs2\n  input Real x[:] = {1, 2, 3};\n"
                       "end TopLevelInputs2;\n", "TopLevelInputs2.mo")
    assert [(v.name, v.causality) for v in m.variables] == \
        [("x[1]", "local"), ("x[2]", "local"), ("x[3]", "local")]
    assert [q.residual for q in m.equations] == \
        [E.BinOp("-", R(f"x[{i}]"), C(i)) for i in (1, 2, 3)]


def test_input_binding_in_the_xml_equation_list_is_refused():
    """The XML format states causality explicitly: `causality="input"` with a binding says
    two contradictory things, and the message asks which one is meant."""
    xml = (f'<?xml version="1.0" encoding="UTF-8"?>\n<model xmlns="{NAMESPACE}" name="M">\n'
           '  <variable name="x" start="0" fixed="true"/>\n'
           '  <variable name="u" causality="input" binding="2"/>\n'
           '  <equation lhs="der(x)" rhs="u"/>\n</model>\n')
    with pytest.raises(InputError) as info:
        parse_xml(xml.encode(), "m.xml")
    text = str(info.value)
    assert text.startswith("m.xml:4:") and "input 'u' has a binding" in text
    assert 'drop causality="input" or the binding' in text


@pytest.mark.skipif(not frontend.rumoca_available(),
                    reason="rumoca (extra 'frontend') is not installed")
def test_rumoca_start_and_binding_of_a_top_level_input(tmp_path: Path):
    """rumoca prints the source's `input Real q = 77` as `input Real q(start = 0.0) = 77`
    (OpenModelica's Influenza; was "has both a start value and a binding", exit 2): the
    binding is the equation q = 77, the start 0 stays its start value."""
    src = tmp_path / "Feed.mo"
    src.write_text("""connector RealIn = input Real;
model Tank
  RealIn q_in;
  Real h(start = 1, fixed = true);
equation
  der(h) = q_in - h;
end Tank;
model Feed
  input Real q = 77;
  Tank t;
equation
  t.q_in = q;
end Feed;
""")
    m = api.load(src)
    q = m.var("q")
    assert q.causality == "local" and q.start == C(0.0)
    assert not any(v.causality == "input" for v in m.variables)
    assert any(E.refs(eq.residual) == {"q"} for eq in m.equations)
    assert api.analyze(m).exit_code == 0
