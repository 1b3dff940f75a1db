"""One verdict for equations selected by a transient guard in a multimode model (issue 14,
issue 16 item 1): ``analyze`` and ``export`` reject ``if edge(c) then ... end if`` with the same
message naming the equations and lines, and the when-clause the message suggests exports and
holds the value from the event on."""

from __future__ import annotations

import numpy as np
from fmpy import simulate_fmu

from mdae_fmu.cli import main as cli_main

HEAD = """class Edge
  Real x(start = 0, fixed = true);
  Real y(start = 0, fixed = true);
  Boolean c = time > 0.5;
"""
MODES = """equation
  if y > 1 then
    der(x) = 1;
  else
    der(x) = 2;
  end if;
  der(y) = 1;
"""
EDGE = HEAD + "  Real z;\n" + MODES + """  if edge(c) then
    z = 1;
  else
    z = 0;
  end if;
end Edge;
"""
WHEN = HEAD + "  Real z(start = 0, fixed = true);\n" + MODES + """  when c then
    z = 1;
  end when;
end Edge;
"""


def test_edge_guarded_equations_one_verdict_and_the_suggested_fix(tmp_path, capsys):
    src = tmp_path / "Edge.mo"
    src.write_text(EDGE)
    assert cli_main(["analyze", str(src)]) == 1
    out = capsys.readouterr().out
    msg = ("a transient guard (edge(c), initial()) selects the equations e5 (Edge.mo:14), "
           "e6 (Edge.mo:16), which the exporter of multimode models does not support")
    assert msg in out
    fmu = tmp_path / "Edge.fmu"
    assert cli_main(["export", str(src), "-o", str(fmu)]) == 1
    assert msg in capsys.readouterr().err and not fmu.exists()
    # the suggested form: a when-clause, value held from the event on
    src.write_text(WHEN)
    assert cli_main(["analyze", str(src)]) == 0
    assert cli_main(["export", str(src), "-o", str(fmu)]) == 0
    r = simulate_fmu(str(fmu), stop_time=2.0, output_interval=0.01, output=["z", "x"])
    t, z, x = r["time"], r["z"], r["x"]
    assert np.all(z[t < 0.5 - 1e-9] == 0) and np.all(z[t > 0.5 + 1e-9] == 1)
    # the modes: der(x) = 2 until y = t passes 1, then 1
    np.testing.assert_allclose(x, np.where(t <= 1, 2 * t, 2 + (t - 1)), atol=1e-6)
