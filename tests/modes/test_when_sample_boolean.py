"""``y = sample(0.5, 1)`` as a Boolean: true in the first instant of the event iteration at
each sample time, false again in the next instant of the same time. So ``when y`` fires at
every sample (not only the first) and ``elsewhen not y`` fires where y falls back, at the same
time (Modelica 3.6 §3.7.5 sample, §8.3.5 elsewhen). Oracle: both counters step by one at
t = 0.5, 1.5, 2.5 and y is false between samples."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("fmpy")
from fmpy import simulate_fmu  # noqa: E402

from mdae_fmu.fmu.export import export  # noqa: E402
from mdae_fmu.importers.flat_modelica import parse_modelica  # noqa: E402

SAMPLED = """class Sampled
  Boolean y;
  Integer n(start = 0);
  Integer m(start = 0);
equation
  y = sample(0.5, 1);
  when y then
    n = pre(n) + 1;
  elsewhen not y then
    m = pre(m) + 1;
  end when;
end Sampled;
"""


def test_sampled_boolean_rises_and_falls_at_each_sample(tmp_path):
    fmu = export(parse_modelica(SAMPLED, "Sampled.mo"), tmp_path / "Sampled.fmu",
                 progress=False)
    res = simulate_fmu(str(fmu), stop_time=3.0, output_interval=0.25, output=["y", "n", "m"])
    t, y, n, m = res["time"], res["y"], res["n"], res["m"]
    # the value after each output row: samples passed, counting a sample time's last row
    expected = np.zeros(len(t), dtype=int)
    for i, ti in enumerate(t):
        passed = int(np.floor(ti - 0.5 + 1e-9)) + 1 if ti >= 0.5 - 1e-9 else 0
        last_row_at = i + 1 == len(t) or not np.isclose(t[i + 1], ti)
        expected[i] = passed if last_row_at or not np.isclose((ti - 0.5) % 1.0, 0.0) \
            else passed - 1
    np.testing.assert_array_equal(n, expected)
    np.testing.assert_array_equal(m, expected)
    assert n[-1] == 3
    np.testing.assert_array_equal(y, False)    # false in continuous time, rows included
