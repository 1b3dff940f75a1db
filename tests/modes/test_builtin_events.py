"""Issue 14, min/max/abs/sign: which built-ins generate events is what the Modelica Language
Specification says (MLS 3.6, docs/decisions.md §4):

* §3.7.1 (Numeric Functions): ``abs(v)`` expands into ``noEvent(if v >= 0 then v else -v)``
  and ``sign(v)`` into ``noEvent(if v > 0 then 1 else if v < 0 then -1 else 0)``;
* §10.3.4 (Reduction Functions and Operators): "none of these operators (particularly min and
  max) generate events themselves (but arguments could generate events)".

So a model written with them has no event indicator and no mode; the integrator steps over the
kink under its error control. Oracle: the closed forms of the integrals of max(sin t, 0) and
|sin t|. The contrast case, the same kink written as an if-expression, is an event (the
crossing found exactly): tests/structure/test_conditionals.py::
test_structural_guard_on_an_algebraic_value_switches_at_its_crossings."""

from __future__ import annotations

import re
import zipfile

import numpy as np
from fmpy import simulate_fmu

from mdae_fmu.analysis import analyze
from mdae_fmu.fmu.export import export
from mdae_fmu.importers.flat_modelica import parse_modelica

KINKS = """class Kinks
  Real w;
  Real y;
  Real a;
  Real x(start = 0, fixed = true);
  Real z(start = 0, fixed = true);
equation
  w = sin(time);
  y = max(w, 0);
  a = abs(w) + sign(w) + min(w, 0);
  der(x) = y;
  der(z) = abs(w);
end Kinks;
"""


def _half_waves(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Closed forms: x = integral of max(sin, 0) (2 per period 2 pi), z = integral of |sin|
    (2 per half period pi)."""
    k = np.floor(t / (2 * np.pi) + 1e-12)
    tau = t - 2 * np.pi * k
    x = 2 * k + np.where(tau <= np.pi, 1 - np.cos(tau), 2.0)
    j = np.floor(t / np.pi + 1e-12)
    z = 2 * j + 1 - np.cos(t - np.pi * j)
    return x, z


def test_min_max_abs_sign_generate_no_event(tmp_path):
    """One mode, zero event indicators, no relation in the generated code; the values follow
    the definitions and the integrals meet their closed forms within the integrator's error
    (measured at rtol 1e-10: 1.6e-8 for x, 3.0e-8 for z)."""
    m = parse_modelica(KINKS, "Kinks.mo")
    a = analyze(m)
    assert a.accepted and len(a.modes.modes) == 1
    path = export(m, tmp_path / "kinks.fmu", analysis=a, progress=False)
    zf = zipfile.ZipFile(path)
    md = zf.read("modelDescription.xml").decode()
    assert re.search(r'numberOfEventIndicators="0"', md)
    sources = "".join(zf.read(n).decode() for n in zf.namelist() if n.endswith(".c"))
    assert "d->rel[" not in sources
    r = simulate_fmu(str(path), stop_time=4 * np.pi, output_interval=np.pi / 8,
                     relative_tolerance=1e-10, output=["x", "z", "y", "a"])
    t = r["time"]
    x, z = _half_waves(t)
    assert np.max(np.abs(r["x"] - x)) < 1e-6
    assert np.max(np.abs(r["z"] - z)) < 1e-6
    w = np.sin(t)
    assert np.max(np.abs(r["y"] - np.maximum(w, 0))) < 1e-8
    assert np.max(np.abs(r["a"] - (np.abs(w) + np.sign(w) + np.minimum(w, 0)))) < 1e-8
