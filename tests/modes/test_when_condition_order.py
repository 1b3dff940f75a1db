"""A when-condition reads the values of its instant: ``when y > 2 and z`` is evaluated after
the equation ``z = false`` another when-clause solves at the same instant (Modelica 3.6 §8.6
sorting; RR-9334 Def 33, docs/theory.md §5.4), so it does not fire; the same condition on the left
limit ``pre(z)`` does. A branch deactivated by the re-evaluation keeps ``pre`` of what it
assigns. Oracle: Modelica semantics, z falls at t = 2, n stays 0, n2 steps to 1 at t = 2;
``when time > 0.5 and not b then b = true; ...`` fires once at 0.5."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("fmpy")
from fmpy import simulate_fmu  # noqa: E402

from mdae_fmu.fmu.export import export  # noqa: E402
from mdae_fmu.importers.flat_modelica import parse_modelica  # noqa: E402

ORDER = """class Order
  Real y;
  Boolean z(start = true);
  Integer n(start = 0);
  Integer n2(start = 0);
  Boolean b(start = false);
  Integer k(start = 0);
equation
  y = time;
  when y > 2 and z then
    n = pre(n) + 1;
  end when;
  when y > 2 then
    z = false;
  end when;
  when y > 2 and pre(z) then
    n2 = pre(n2) + 1;
  end when;
  when time > 0.5 and not b then
    b = true;
    k = pre(k) + 1;
  end when;
end Order;
"""


def test_when_condition_reads_the_value_assigned_at_the_instant(tmp_path):
    fmu = export(parse_modelica(ORDER, "Order.mo"), tmp_path / "Order.fmu", progress=False)
    res = simulate_fmu(str(fmu), stop_time=3.0, output_interval=0.25,
                       output=["z", "n", "n2", "b", "k"])
    t, z, n, n2 = res["time"], res["z"], res["n"], res["n2"]
    at = np.flatnonzero(np.isclose(t, 2.0))
    assert len(at) >= 2, t                      # rows before and after the event
    after = np.arange(len(t)) >= at[-1]
    np.testing.assert_array_equal(z, ~after)
    np.testing.assert_array_equal(n, 0)
    np.testing.assert_array_equal(n2, after.astype(int))
    # a condition reading what its own clause assigns fires on the values before it (once):
    # re-evaluating it would switch the clause off and on again
    on = np.arange(len(t)) >= np.flatnonzero(np.isclose(t, 0.5))[-1]
    np.testing.assert_array_equal(res["b"], on)
    np.testing.assert_array_equal(res["k"], on.astype(int))
