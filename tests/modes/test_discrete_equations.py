"""Discrete equations outside when-clauses (Modelica 3.6 §8.6; RR-9334 Def 33, docs/theory.md §5.4):
``Integer m = k + 1``, ``Integer e = Integer(level)``, ``Integer n = if x > 1 then 1 else 0``
define discrete variables, recomputed at initialization and at every event instant, held
between events; a relation they read gets its event, so the variable switches exactly."""

import math
from pathlib import Path

import pytest

from mdae_fmu.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "discrete"


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
    """Over.mo: ``Integer m = k + 1`` and ``m = 3``: the second equation has no unknown; the
    message names both equations and the variable (OpenModelica's PublicAccess,
    ProtectedAccess2 have the same defect)."""
    code = main(["analyze", str(DATA / "Over.mo")])
    out = capsys.readouterr().out
    assert code == 1
    assert "over-determined discrete variable (E-MODE-SINGULAR): e2 (Over.mo:6) and e1 " \
        "(Over.mo:3) both define m" in out


def test_discrete_loop_is_rejected_and_the_suggested_pre_works(capsys, tmp_path):
    """Loop.mo: m = n + 1, n = m - 1 at the same instant (E-DISCRETE-LOOP); LoopPre.mo
    follows the suggestion (n = pre(m) - 1): m keeps its start 2, so x = 2 t."""
    code = main(["analyze", str(DATA / "Loop.mo")])
    out = capsys.readouterr().out
    assert code == 1
    assert "algebraic loop among discrete equations (E-DISCRETE-LOOP): m, n depend on each " \
        "other at the same instant: e2 (Loop.mo:3) defines n from m; e1 (Loop.mo:2) defines " \
        "m from n; fix: read the previous value where it is meant, e.g. pre(m) in e2" in out
    from fmpy import simulate_fmu

    from mdae_fmu import export_fmu, load
    fmu = export_fmu(load(DATA / "LoopPre.mo"), tmp_path / "LoopPre.fmu")
    r = simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.25, output=["m", "n", "x"])
    assert list(r["m"]) == [2] * len(r) and list(r["n"]) == [1] * len(r)
    assert r["x"] == pytest.approx(2 * r["time"], abs=1e-8)


def test_step_function_of_a_continuous_variable_is_rejected(capsys):
    """Alg.mo: ``Integer c = integer(s)`` with s continuous would jump without an event."""
    code = main(["analyze", str(DATA / "Alg.mo")])
    out = capsys.readouterr().out
    assert code == 1
    assert "discrete equation not supported (E-DISCRETE-STEP): equation e2 (Alg.mo:5) defines " \
        "the discrete variable c with integer() of the continuous s;" in out


def test_integer_definition_in_a_multimode_model(tmp_path):
    """MM.mo: two modes (x > 1.5); n = 2 from t = 1 (x = t) drives der(y) and, before
    t = 1.5, u = -der(y) = -n, so the mode change at 1.5 restarts u from -n (a restart
    formula reading the Integer n). Boolean b = x > 0.5 (not a guard) switches at 0.5.
    y = 2 (t - 1)^+, w = (t - 0.5)^+, u = -n before 1.5 and 1 after."""
    from fmpy import simulate_fmu

    from mdae_fmu import export_fmu, load
    fmu = export_fmu(load(DATA / "MM.mo"), tmp_path / "MM.fmu")
    r = simulate_fmu(str(fmu), stop_time=2.0, relative_tolerance=1e-10, output_interval=0.25,
                     output=["x", "y", "u", "n", "b", "w"])
    t = r["time"]
    assert r["y"] == pytest.approx([2 * max(0.0, s - 1) for s in t], abs=1e-8)
    assert r["w"] == pytest.approx([max(0.0, s - 0.5) for s in t], abs=1e-8)
    first_n = next(i for i, v in enumerate(r["n"]) if v == 2)
    assert t[first_n] == pytest.approx(1.0, abs=1e-9) and r["n"][first_n - 1] == 0
    first_b = next(i for i, v in enumerate(r["b"]) if v)
    assert t[first_b] == pytest.approx(0.5, abs=1e-9)
    for s, u, n in zip(t, r["u"], r["n"]):
        assert u == pytest.approx(1.0 if s > 1.5 else -n, abs=1e-9) or s == pytest.approx(1.5)
