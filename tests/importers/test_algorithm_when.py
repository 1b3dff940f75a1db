"""A when-statement of an algorithm on a Boolean the same algorithm assigns before it
(``b1 := time > 0.5; when b1 then x := pre(x) + 1; end when;``) fires where ``b1`` rises.

The straight-line part of the algorithm is lowered to equations (importers/algorithms.py,
`_straight_line`), so the relation ``time > 0.5`` is an event of the FMU; inside an algorithm
function it was evaluated without event and the when-statement never fired. Oracle: Modelica
semantics, x = 0 before t = 0.5 and 1 from the event on; b1 = (t > 0.5) after the event."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("fmpy")
from fmpy import simulate_fmu  # noqa: E402

from mdae_fmu.fmu.export import export  # noqa: E402
from mdae_fmu.importers.flat_modelica import parse_modelica  # noqa: E402

ALG = """class AlgWhen
  Real x(start = 0);
  Boolean b1;
algorithm
  b1 := time > 0.5;
  when b1 then
    x := pre(x) + 1;
  end when;
end AlgWhen;
"""


def test_algorithm_when_on_boolean_assigned_in_the_algorithm(tmp_path):
    model = parse_modelica(ALG, "AlgWhen.mo")
    fmu = export(model, tmp_path / "AlgWhen.fmu", progress=False)
    res = simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.1, output=["x", "b1"])
    t, x, b1 = res["time"], res["x"], res["b1"]
    at = np.flatnonzero(np.isclose(t, 0.5))
    assert len(at) == 2, t                      # the event row pair at t = 0.5
    before, after = at[0], at[1]
    np.testing.assert_array_equal(x[:before + 1], 0.0)
    np.testing.assert_array_equal(x[after:], 1.0)
    np.testing.assert_array_equal(b1[:before + 1], False)
    np.testing.assert_array_equal(b1[after:], True)


def test_read_before_assignment_keeps_the_algorithm_function():
    """``a := a + 1`` reads the start value of ``a``: not straight-line, lowered as the
    algorithm function (one call per assigned variable)."""
    src = """class Keep
  Real a(start = 1);
  Real c;
algorithm
  c := a;
  a := 3;
end Keep;
"""
    model = parse_modelica(src, "Keep.mo")
    calls = [eq for eq in model.equations if "algorithm" in repr(eq.residual)]
    assert len(calls) == 2
    straight = parse_modelica(src.replace("c := a;\n  a := 3;", "a := 3;\n  c := a;"),
                              "Keep.mo")
    assert not [eq for eq in straight.equations if "algorithm" in repr(eq.residual)]
    assert len(straight.equations) == 2
