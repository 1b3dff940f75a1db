"""A model with modes and no state (OpenModelica's flattening tests IfEquation1, 2, 7 and
IfEquationEval3, NBackend's eventSystem and for_if_if: an if-equation on ``time > ...``): its
mode changes restart the blocks the guards select, whose restart systems solve for the
integrals ζ over the instant, so the layout needs their slots although there is no state and
no left limit. Stop 40 gave the ζ slots only when some left-limit slot existed, and code
generation stopped on ``UnknownSymbol: 'mdae_zeta_0'`` (6 corpus models that exported before,
found by benchmarks/corpus.py in the audit of issue 26)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("dd")
from fmpy import simulate_fmu  # noqa: E402

from mdae_fmu import api  # noqa: E402

STATELESS = """class StatelessModes
  Real x;
  Real y;
equation
  if time > 0.5 then
    x = 1.0;
  elseif time > 0.2 then
    x = 2.0;
  else
    x = 3.0;
  end if;
  y = x*x + time;
end StatelessModes;
"""


@pytest.mark.parametrize("fmi_type", ["ModelExchange", "CoSimulation"])
def test_modes_without_states_export_and_follow_the_closed_form(tmp_path, fmi_type):
    src = tmp_path / "StatelessModes.mo"
    src.write_text(STATELESS)
    fmu = tmp_path / "StatelessModes.fmu"
    api.export_fmu(api.load(src), fmu, fmi_type="both", progress=False)
    r = simulate_fmu(str(fmu), fmi_type=fmi_type, stop_time=1.0, output_interval=0.01,
                     output=["x", "y"])
    t = r["time"]
    far = (np.abs(t - 0.2) > 1e-6) & (np.abs(t - 0.5) > 1e-6)
    x = np.where(t > 0.5, 1.0, np.where(t > 0.2, 2.0, 3.0))
    assert np.max(np.abs(r["x"][far] - x[far])) < 1e-12
    assert np.max(np.abs(r["y"][far] - (x[far] ** 2 + t[far]))) < 1e-12
    assert {1.0, 2.0, 3.0} <= set(np.round(r["x"], 12))
