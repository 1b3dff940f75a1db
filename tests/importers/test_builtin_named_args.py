"""Built-in operators called with their formal parameter names, as OpenModelica prints them
(``homotopy(actual = a, simplified = s)``; OpenModelica's simulation test
equations/ticket-5206, found by benchmarks/corpus.py): read as the positional call."""

from __future__ import annotations

import pytest

from mdae_fmu.diagnostics import InputError
from mdae_fmu.importers.flat_modelica import parse_modelica

MODEL = """class H
  Real x(start = 1, fixed = true);
  Real u;
equation
  u = {call};
  der(x) = u;
  when {sample_call} then
    reinit(x, 2 * pre(x));
  end when;
end H;
"""


def _model(call: str, sample_call: str = "sample(0.5, 1.0)"):
    return parse_modelica(MODEL.format(call=call, sample_call=sample_call), "H.mo")


@pytest.mark.parametrize("call", ["homotopy(actual = -x, simplified = -2 * x)",
                                  "homotopy(simplified = -2 * x, actual = -x)",
                                  "homotopy(-x, simplified = -2 * x)"])
def test_named_arguments_equal_the_positional_call(call):
    ref = _model("homotopy(-x, -2 * x)")
    got = _model(call, "sample(start = 0.5, interval = 1.0)")
    assert got.equations == ref.equations
    assert got.whens == ref.whens


@pytest.mark.parametrize("call, col, what", [
    ("homotopy(actual = -x, simple = -2 * x)", 29, "'homotopy' has no parameter 'simple'"),
    ("homotopy(-x, actual = -2 * x)", 20, "'homotopy' has no parameter 'actual' here"),
    ("homotopy(actual = -x, actual = -2 * x)", 29, "'homotopy' has no parameter 'actual'"),
])
def test_wrong_names_are_errors_at_their_column(call, col, what):
    with pytest.raises(InputError) as err:
        _model(call)
    assert str(err.value).startswith(f"H.mo:5:{col}: {what}"), str(err.value)
    assert "actual, simplified" in str(err.value)
