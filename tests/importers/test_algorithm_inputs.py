"""The inputs of the function an algorithm section becomes (importers/algorithms.py): every
value the block reads, and the start value of each variable it assigns, typed from what they
read. A start value that is a call of an expression (``start = sin(2*p)``) is a Real input:
reading a variable name out of the call's argument used to fail with an internal error."""

from __future__ import annotations

from mdae_fmu import expr as E
from mdae_fmu.importers.flat_modelica import parse_modelica

MODEL = """
model A
  parameter Real p = 0.5;
  parameter Integer n = 2;
  Real x(start = sin(2*p));
  Real z(start = abs(n));
  Real y(start = 1, fixed = true);
algorithm
  x := y + 1;
  z := y;
  if y > 0.5 then
    x := x + 1;
  end if;
equation
  der(y) = -x - z;
end A;
"""


def test_start_value_call_of_an_expression_is_a_real_input():
    model = parse_modelica(MODEL, "A.mo")
    (fn,) = model.functions
    types = {p.name: p.type for p in fn.inputs}
    assert types == {"y": "Real", "start(x)": "Real", "start(z)": "Integer"}
    # the call passes the start expressions themselves, in the order of the inputs
    (call,) = [e.residual.right for e in model.equations
               if type(e.residual.right) is E.Call and e.residual.right.func == fn.name]
    args = dict(zip((p.name for p in fn.inputs), call.args))
    assert args["start(x)"] == E.Call("sin", (E.BinOp("*", E.Const(2), E.Ref("p")),))
    assert args["start(z)"] == E.Call("abs", (E.Ref("n"),))
