"""An initial equation for a discrete Real (assigned in a when-clause) makes it an unknown of
the initial system (Modelica 3.6 §8.6; mdae_fmu/codegen/initialization.py
`_free_discrete_slots`): the pattern of the Modelica Standard Library's tables and samplers,
``initial equation nextTime = t0; equation when time >= pre(nextTime) then ...``.
Oracle: the event instants t0, t0 + 1, ... and the counts they imply."""

from __future__ import annotations

import numpy as np
from fmpy import simulate_fmu

from mdae_fmu.fmu.export import export
from mdae_fmu.importers.flat_modelica import parse_modelica

NEXT_TIME = """model NextTime
  discrete Real nextTime;
  Integer n(start = 0, fixed = true);
  parameter Real t0 = 0.5;
initial equation
  nextTime = t0;
equation
  when time >= pre(nextTime) then
    nextTime = pre(nextTime) + 1;
    n = pre(n) + 1;
  end when;
end NextTime;
"""


def test_an_initial_equation_sets_a_when_assigned_real(tmp_path):
    m = parse_modelica(NEXT_TIME, "NextTime.mo")
    path = export(m, tmp_path / "next.fmu", progress=False)
    for t0 in (0.5, 0.25):
        r = simulate_fmu(str(path), stop_time=3.0, output_interval=0.125,
                         start_values={"t0": t0}, output=["nextTime", "n"])
        t = r["time"]
        away = np.abs((t - t0) - np.round(t - t0)) > 1e-6   # FMPy logs both sides of events
        fired = np.where(t >= t0, np.floor(t - t0) + 1, 0)[away]
        assert np.array_equal(r["n"][away], fired) and fired[-1] == 3
        assert np.allclose(r["nextTime"][away], t0 + fired, rtol=0, atol=1e-12)


TABLE = """function firstIndex
  input Real t1;
  input Real t2;
  input Real t0;
  input Boolean start;
  output Integer index;
  output Real nextTime;
  output Boolean y;
algorithm
  index := 1;
  y := start;
  nextTime := t1;
  if t1 <= t0 then
    index := 2;
    y := not start;
    nextTime := t2;
  end if;
end firstIndex;

model Table
  parameter Real t1 = 0.5;
  parameter Real t2 = 1.5;
  parameter Boolean start = false;
  Integer index;
  Real nextTime;
  Boolean y;
  Integer count(start = 0, fixed = true);
initial algorithm
  (index, nextTime, y) := firstIndex(t1, t2, time, start);
algorithm
  when time >= pre(nextTime) and pre(index) <= 2 then
    y := not y;
    count := count + 1;
    index := index + 1;
    nextTime := if index == 2 then t2 else 1e60;
  end when;
end Table;
"""


def test_an_initial_algorithm_assigns_integer_and_boolean_variables(tmp_path):
    """The pattern of the MSL's BooleanTable: an initial algorithm computes the table's index
    (Integer), first event time (Real) and output (Boolean); the when-clause then toggles y
    at t1 and t2. Started at t0 = 1 > t1, the first entry is already behind: one toggle,
    at t2."""
    m = parse_modelica(TABLE, "Table.mo")
    path = export(m, tmp_path / "table.fmu", progress=False)
    for t0, toggles in ((0.0, (0.5, 1.5)), (1.0, (1.5,))):
        r = simulate_fmu(str(path), start_time=t0, stop_time=3.0, output_interval=0.125,
                         output=["y", "index", "count"])
        t = r["time"]
        away = np.all([np.abs(t - s) > 1e-6 for s in toggles], axis=0)
        n = sum((t >= s).astype(int) for s in toggles)[away]
        start = 0 if t0 < 0.5 else 1                      # y at t0: toggled once before
        assert np.array_equal(r["count"][away], n)
        assert np.array_equal(r["y"][away].astype(int), (start + n) % 2)
        assert np.array_equal(r["index"][away], (1 if t0 < 0.5 else 2) + n)
