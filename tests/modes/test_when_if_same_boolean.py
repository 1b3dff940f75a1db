"""Issue 14: a Boolean that an algorithm section assigns by a straight-line statement
(``b := w > 0.5``, lowered to the equation ``b = w > 0.5``) drives an if-equation of a
multimode model and a when-clause: ``if b`` reads the value of b (Modelica 3.6 §8.3.4), a long
guard whose relation is an event indicator; ``when b`` reacts to its rising edge (§8.3.5).
It was refused ("a transient guard selects the equations") since the straight-line lowering.

Oracle: w = sin(t) crosses 0.5 upwards at pi/6 + 2 pi k and downwards at 5 pi/6 + 2 pi k;
x = measure of {t : sin t > 0.5} on [0, T]; n = number of upward crossings."""

from __future__ import annotations

import re
import zipfile

import numpy as np
import pytest
from fmpy import simulate_fmu

from mdae_fmu.analysis import analyze
from mdae_fmu.cli import main as cli_main
from mdae_fmu.importers.flat_modelica import parse_modelica

ALG = """class AlgIfWhen
  Real x(start = 0, fixed = true);
  Real w;
  Integer n(start = 0);
  Boolean b;
algorithm
  w := sin(time);
  b := w > 0.5;
equation
  if b then
    der(x) = 1;
  else
    der(x) = 0;
  end if;
  when b then
    n = pre(n) + 1;
  end when;
end AlgIfWhen;
"""

# the same model written with equations: one meaning for both spellings
EQS = ALG.replace("algorithm\n  w := sin(time);\n  b := w > 0.5;\nequation\n",
                  "equation\n  w = sin(time);\n  b = w > 0.5;\n")


@pytest.mark.parametrize("text", [ALG, EQS], ids=["algorithm", "equations"])
def test_if_and_when_on_one_boolean_switch_at_the_crossings(tmp_path, text):
    m = parse_modelica(text, "AlgIfWhen.mo")
    a = analyze(m, implicit=False)          # the enumerated modes and automaton
    assert a.accepted
    kinds = sorted((g.name, g.kind) for g in a.automaton.system.guards)
    assert kinds == [("b", "long"), ("edge(b)", "transient")]
    # no mode where b rises without being true
    assert all(not (mode[1] and not mode[0]) for mode in a.automaton.system.modes())
    src = tmp_path / "AlgIfWhen.mo"
    src.write_text(text)
    fmu = tmp_path / "AlgIfWhen.fmu"
    assert cli_main(["export", str(src), "-o", str(fmu)]) == 0
    md = zipfile.ZipFile(fmu).read("modelDescription.xml").decode()
    assert re.search(r'numberOfEventIndicators="1"', md)
    stop = 10.0
    r = simulate_fmu(str(fmu), stop_time=stop, output_interval=0.5, relative_tolerance=1e-8,
                     output=["x", "n", "b"])
    t = r["time"]
    events = np.array([t[i] for i in range(1, len(t)) if t[i] == t[i - 1]])
    up, down = np.pi / 6, 5 * np.pi / 6
    exact = np.array([up, down, up + 2 * np.pi, down + 2 * np.pi])
    assert events.shape == exact.shape
    assert np.max(np.abs(events - exact)) < 1e-8      # measured 1.2e-10
    x_exact = (down - up) + (min(stop, down + 2 * np.pi) - (up + 2 * np.pi))
    assert abs(r["x"][-1] - x_exact) < 1e-8
    assert r["n"][-1] == 2
    # b and n right after each event row pair
    after = [i for i in range(1, len(t)) if t[i] == t[i - 1]]
    assert [bool(r["b"][i]) for i in after] == [True, False, True, False]
    assert [int(r["n"][i]) for i in after] == [1, 1, 2, 2]
