"""If-equations under noEvent are if-expressions (mdae_fmu/importers/quiet_if.py; MLS 3.6
§8.3.4: the k-th equation of a non-parameter if-equation is the k-th equation of the branch
its condition selects). Oracle: the closed form of an integral of a piecewise right side."""

from __future__ import annotations

import re
import zipfile

import numpy as np
import pytest
from fmpy import simulate_fmu

from mdae_fmu import expr as E
from mdae_fmu.analysis import analyze
from mdae_fmu.diagnostics import ModelRejected
from mdae_fmu.fmu.export import export
from mdae_fmu.importers.flat_modelica import parse_modelica

RAMP = """model QuietRamp
  Real x(start = 0, fixed = true);
  Real y;
  Real z;
equation
  der(x) = y;
  if noEvent(time > 1.0) then
    y = time;
    z = 1;
  elseif noEvent(time > 0.5) then
    y = 2*time;
    z = 2;
  else
    y = 3*time;
    z = 3;
  end if;
end QuietRamp;
"""


def _x(t: np.ndarray) -> np.ndarray:
    """Integral of 3t on [0, 0.5], 2t on [0.5, 1], t after."""
    a = 1.5 * np.minimum(t, 0.5) ** 2
    b = np.clip(t, 0.5, 1.0) ** 2 - 0.25
    c = 0.5 * (np.maximum(t, 1.0) ** 2 - 1.0)
    return a + b + c


def test_an_elseif_chain_under_noevent_is_one_piecewise_equation_per_position(tmp_path):
    m = parse_modelica(RAMP, "QuietRamp.mo")
    assert len(m.equations) == 3 and all(not eq.guard for eq in m.equations)
    y_eq = m.equations[1]
    assert isinstance(y_eq.residual, E.If) and y_eq.loc.line == 8   # the then-equation's place
    a = analyze(m)
    assert a.accepted and len(a.modes.modes) == 1
    path = export(m, tmp_path / "ramp.fmu", analysis=a, progress=False)
    md = zipfile.ZipFile(path).read("modelDescription.xml").decode()
    assert re.search(r'numberOfEventIndicators="0"', md)
    r = simulate_fmu(str(path), stop_time=2.0, output_interval=0.125,
                     relative_tolerance=1e-10, output=["x", "y", "z"])
    t = r["time"]
    assert np.max(np.abs(r["x"] - _x(t))) < 1e-6
    z = np.where(t > 1.0, 1.0, np.where(t > 0.5, 2.0, 3.0))
    inside = np.abs(t - 0.5) > 1e-9
    inside &= np.abs(t - 1.0) > 1e-9
    assert np.array_equal(r["z"][inside], z[inside])


def test_branches_of_another_structure_stay_refused_with_the_condition():
    """Branches whose structure differs (an ODE for x against the constraint x = 1, which
    makes the mode index 2) keep the condition structural, and noEvent forbids the mode
    change it defines: the diagnosis names it."""
    text = """model Q
  Real x(start = 1, fixed = true);
  Real y;
equation
  der(x) = -y;
  if noEvent(x > 0.5) then
    y = x;
  else
    x = 1;
  end if;
end Q;
"""
    m = parse_modelica(text, "Q.mo")
    assert len(m.equations) == 2
    with pytest.raises(ModelRejected, match=r"Q.mo:7:5: .*noEvent\(x > 0.5\) is under noEvent"):
        analyze(m)
