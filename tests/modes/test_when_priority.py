"""elsewhen priority in the structural analysis (modes/normalize.py): an action of an elsewhen
branch is guarded by the negation of the earlier branches' conditions (Modelica 3.6 §8.3.5.1),
so two branches reinitializing the same state are not taken as firing together. Shape of
OpenModelica's simulation test events/Reinit.mos (found by benchmarks/corpus.py)."""

from __future__ import annotations

from fmpy import simulate_fmu

from mdae_fmu import api
from mdae_fmu.importers.flat_modelica import parse_modelica

VECTOR = """class W
  Real x(start = 0, fixed = true);
equation
  der(x) = 0;
  when {time > 0.1, time > 0.2} then
    reinit(x, x + 1);
  end when;
end W;
"""

ELSEWHEN = """class W2
  Real x(start = 0, fixed = true);
  Real y(start = 0, fixed = true);
equation
  der(x) = 0;
  der(y) = 1;
  when y > 0.5 then
    reinit(x, x + 1);
  elsewhen time > 0.5 then
    reinit(x, x + 10);
  end when;
end W2;
"""


def test_elsewhen_reinits_of_one_state_are_accepted_and_fire_in_order(tmp_path):
    model = parse_modelica(VECTOR, "W.mo")
    assert api.analyze(model).accepted
    api.export_fmu(model, tmp_path / "w.fmu")
    r = simulate_fmu(str(tmp_path / "w.fmu"), stop_time=1.0, output=["x"])
    t, x = r["time"], r["x"]
    assert all(x[t < 0.0999] == 0) and all(x[(t > 0.1001) & (t < 0.1999)] == 1)
    assert x[-1] == 2          # OpenModelica's val(x, 1.0) in events/Reinit.mos


def test_simultaneous_edges_run_only_the_first_branch():
    """y = time, so y > 0.5 and time > 0.5 become true at the same instant: only the first
    branch runs (x = 1); the analysis sees one reinit of x at that instant."""
    model = parse_modelica(ELSEWHEN, "W2.mo")
    a = api.analyze(model)
    assert a.accepted, a.messages
