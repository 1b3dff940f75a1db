"""Discrete equations outside when-clauses (Modelica 3.6 §8.6; theory note 9334 §1.4, Def 33):
``Integer m = k + 1``, ``Integer e = Integer(level)``, ``Integer n = if x > 1 then 1 else 0``
define discrete variables, recomputed at initialization and at every event instant, held
between events; a relation they read gets its event, so the variable switches exactly."""

import math
from pathlib import Path

import pytest

from mdae_fmu.cli import main

DATA = Path(__file__).resolve().parent / "data" / "discrete"


def test_integer_definitions_simulate_to_closed_forms(tmp_path):
    """tests/data/discrete/Disc.mo: x = t, z = t^2/2; m = k + 1 = 3, e = Integer(Level.high)
    = 3, p = m + 1 = 4 (declared before m), n = 1 from t = 1 (x > 1), q = 10 m = 30 from
    t = sqrt 2 (z > 1, a state relation with an event indicator). y = 3 t and
    w = (e + p) t + (t - 1)^+ + 30 (t - sqrt 2)^+."""
    from fmpy import simulate_fmu

    from mdae_fmu import export_fmu, load
    fmu = export_fmu(load(DATA / "Disc.mo"), tmp_path / "Disc.fmu")
    r = simulate_fmu(str(fmu), stop_time=2.0, relative_tolerance=1e-10, output_interval=0.25,
                     output=["p", "m", "e", "n", "q", "y", "w"])
    t = r["time"]
    assert list(r["m"]) == [3] * len(t) and list(r["e"]) == [3] * len(t)
    assert list(r["p"]) == [4] * len(t)
    assert r["y"] == pytest.approx(3 * t, abs=1e-8)
    w = [7 * s + max(0.0, s - 1) + 30 * max(0.0, s - math.sqrt(2)) for s in t]
    assert r["w"] == pytest.approx(w, abs=1e-6)
    # the switches: the first row with the new value is the event instant itself
    first_n = next(i for i, v in enumerate(r["n"]) if v == 1)
    assert t[first_n] == pytest.approx(1.0, abs=1e-9) and r["n"][first_n - 1] == 0
    assert all(v == (1 if i >= first_n else 0) for i, v in enumerate(r["n"]))
    first_q = next(i for i, v in enumerate(r["q"]) if v == 30)
    assert t[first_q] == pytest.approx(math.sqrt(2), abs=1e-7) and r["q"][first_q - 1] == 0
    assert set(r["q"]) == {0, 30}


def test_integer_defined_twice_is_over_determined(capsys):
    """Over.mo: ``Integer m = k + 1`` and ``m = 3``: the second equation has no unknown."""
    code = main(["analyze", str(DATA / "Over.mo")])
    out = capsys.readouterr().out
    assert code == 1
    assert "E-MODE-SINGULAR: mode [(single mode)] is structurally singular (2 equations, " \
        "1 variables): over-determined equations {e2 (Over.mo:6)}" in out
