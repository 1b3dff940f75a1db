"""The plan stage in bulk (issue 29, export's plan CPU): the slots made by `make_slots`, the
explicit blocks read off the residual ``u - rhs`` / ``c*u - rhs`` in one walk, and a model
without relations planned without event machinery.

Oracles: the `Slot` constructor; `tree_solution` (the recursive coefficient reading of
`linear_coefficients`) on every explicit block; `clock_rates` for a model whose relation
reads a clock state."""

from __future__ import annotations

import pytest

from mdae_fmu.analysis import analyze
from mdae_fmu.codegen.events import clock_rates, plan_events
from mdae_fmu.codegen.plan import compile_model
from mdae_fmu.codegen.slots import Slot, make_slots
from mdae_fmu.codegen.trees import tree_solution
from mdae_fmu.importers.flat_modelica import parse_modelica


def _plan(text: str):
    model = parse_modelica(text, "m.mo")
    result = analyze(model)
    return model, result.modes, compile_model(model, result.modes)


def test_make_slots_are_the_constructor_slots():
    made = make_slots(["r", "i", "b"], [0, 3, 7], ["x", "n", ""], pre=True)
    built = [Slot(array="r", index=0, pre=True, name="x"),
             Slot(array="i", index=3, pre=True, name="n"),
             Slot(array="b", index=7, pre=True, name="")]
    assert made == built
    assert [hash(s) for s in made] == [hash(s) for s in built]
    assert [(s.array, s.index, s.pre, s.name) for s in made] == \
        [(s.array, s.index, s.pre, s.name) for s in built]
    assert made[0].left() == Slot(array="r", index=0, pre=True) and made[0].real is False
    with pytest.raises(ValueError, match=r"no such slot: time\[0\]"):
        make_slots(["time"], [0], ["time"])
    with pytest.raises(ValueError, match=r"no such slot: r\[-1\]"):
        make_slots(["r"], [-1], ["x"])
    with pytest.raises(AttributeError):
        made[0].index = 4       # frozen as the constructor's


FORMS = """
model Forms
  parameter Real c = 2.0;
  Real x(start = 1, fixed = true);
  Real v(start = 0, fixed = true);
  Real a;
  Real b;
  Real e;
  Real f;
  Real g;
  Real h;
  Real k;
  Real m;
equation
  der(x) = v;
  c * der(v) = -x - a + b;
  a = -(-(x + 1));
  -b = x * 3;
  e = 0.5 * e + sin(x);
  f = if x > 0 then 1.0 else 2.0;
  x * g = c - x;
  h = (x + 1) ^ 2 / c + sqrt(abs(x));
  1 * k = -x;
  -1 * m = +(x - 2);
end Forms;
"""


def test_explicit_blocks_are_the_tree_solution():
    _, _, cm = _plan(FORMS)
    explicit = [b for b in cm.blocks if b.tree is not None]
    # every equation but the if-expression (f: the sympy path) is an explicit tree block
    assert sorted(str(b.unknowns[0]) for b in explicit) == \
        ["a", "b", "der(v)", "der(x)", "e", "g", "h", "k", "m"]
    for b in explicit:
        assert b.solution is not None
        inst, solution = b.solution
        assert solution == tree_solution(b.tree, inst), b.label
    assert [b for b in cm.blocks if str(b.unknowns[0]) == "f"][0].tree is None


def test_a_model_without_relations_plans_no_clock():
    text = """
model Clock
  Real t(start = 0, fixed = true);
  Real y(start = 1, fixed = true);
equation
  der(t) = 1;
  der(y) = -y;
end Clock;
"""
    model, report, cm = _plan(text)
    ev = plan_events(model, cm, report=report, steady=cm.state_symbols)
    assert ev.relations == () and ev.clock_rates == {}
    # with a relation on the clock state, the clock is planned as `clock_rates` finds it
    with_relation = text.replace("end Clock;", "  when t > 0.5 then\n    reinit(y, 1);\n"
                                 "  end when;\nend Clock;")
    model, report, cm = _plan(with_relation)
    ev = plan_events(model, cm, report=report, steady=cm.state_symbols)
    assert {str(x): str(c) for x, c in ev.clock_rates.items()} == \
        {str(x): str(c) for x, c in clock_rates(model, cm.table).items()} == {"t": "1"}
    assert [r.kind for r in ev.relations] == ["time"]
