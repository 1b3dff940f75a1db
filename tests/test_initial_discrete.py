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
