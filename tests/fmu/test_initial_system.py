"""The initial system's Gauss-Newton when its residual runs the schedule (an initial equation
reads an algebraic variable: `InitPlan.needs_compute`): the schedule's block solvers use the
instance scratch too, so they take it after the Gauss-Newton's own (templates/model.c.j2,
`mdae_init_residual`); sharing it, they overwrote its Jacobian and iterate and
initialization failed. Oracle: the closed form of the initial system."""

from __future__ import annotations

from fmpy import simulate_fmu

from mdae_fmu import load
from mdae_fmu.fmu.export import export

# y, z from the linear block {y + z = x^2, y - 2 z = 2 x}: y = 2 (x^2 + x)/3; y = 0.5 at
# t = 0 gives x = 0.5 (the root near the start value 1), z = x^2 - y = -0.25
INIT_THROUGH_A_LINEAR_BLOCK = """model InitLin
  Real x(start = 1);
  Real y;
  Real z;
equation
  der(x) = -x + y;
  y + z = x*x;
  y - 2*z = 2*x;
initial equation
  y = 0.5;
end InitLin;
"""


def test_initial_equation_on_a_variable_of_a_linear_block(tmp_path):
    src = tmp_path / "InitLin.mo"
    src.write_text(INIT_THROUGH_A_LINEAR_BLOCK)
    path = export(load(src), tmp_path / "InitLin.fmu", progress=False)
    r = simulate_fmu(str(path), stop_time=0.1, output=["x", "y", "z"],
                     fmi_type="ModelExchange")
    x, y, z = r["x"][0], r["y"][0], r["z"][0]
    assert abs(x - 0.5) < 1e-9 and abs(y - 0.5) < 1e-10 and abs(z + 0.25) < 1e-9
