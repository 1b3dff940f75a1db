"""When-equations coupled with the continuous equations at the event instant (issue 14: values
that differed from OpenModelica without an error, then a rejection).

``when sample(0, 0.2) then y = 7 - 2*x + time; end when; x + y = 5;`` (OpenModelica's
bug1228): at a sample instant the when-equation and ``x + y = 5`` are one simultaneous system
(Modelica 3.6 §8.6; RR-9334 Def 33, docs/theory.md §5.4). In a single-mode model with Real
when-variables the generated code solves it by Newton on the when-variables, the continuous
equations re-solved by the schedule (mdae_fmu.structure.when_clauses.coupled_when_variables,
templates/mdae_runtime.c when_loop_newton). Hand-solved: y = 7 - 2(5 - y) + t gives
y = 3 - t_k, x = 2 + t_k at each sample t_k (OpenModelica's reference values: x = 2, 2.4, 3
and y = 3, 2.6, 2 at t = 0, 0.5, 1). A loop through an Integer, or in a multimode model, is
still rejected (E-WHEN-LOOP) with the reason; the fix the message suggests (read ``pre(x)``)
is checked on FMPy output against its closed recurrence."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("fmpy")
from fmpy import simulate_fmu  # noqa: E402

from mdae_fmu.cli import main  # noqa: E402

COUPLED = """class Coupled
  Real x;
  discrete Real y(start = 0);
equation
  when sample(0, 0.2) then
    y = 7 - 2*x + time;
  end when;
  x + y = 5;
end Coupled;
"""


BUG1228 = """class Bug1228
  Real x, y;
  Real a, b;
  Real p, q;
equation
  when sample(0, 0.2) then
    y = 7 - 2*x + time;
  end when;
  x + y = 5;
  a + b = 5;
  when sample(0, 0.2) then
    b = 7 - 2*a + time;
  end when;
  when sample(0.1, 0.2) then
    q = exp(-p);
  end when;
  p = q + time;
end Bug1228;
"""


def _after_events(res, names):
    """The value of each variable after the last event at each output time (the last row)."""
    out = {}
    for i, ti in enumerate(res["time"]):
        out[round(float(ti), 9)] = {n: float(res[n][i]) for n in names}
    return out


def test_when_equation_in_a_loop_with_continuous_equations_is_solved(tmp_path, capsys):
    """Three loops (x-y, a-b linear with gain 2, where a fixed-point iteration diverges; p-q
    nonlinear): each solved at its samples. Oracles: the hand solution above, and for
    q = exp(-p), p = q + t the root of q - exp(-(q + t)) by brentq."""
    from scipy.optimize import brentq
    src = tmp_path / "Bug1228.mo"
    src.write_text(BUG1228)
    fmu = tmp_path / "Bug1228.fmu"
    assert main(["analyze", str(src)]) == 0, capsys.readouterr().out
    assert main(["export", str(src), "-o", str(fmu)]) == 0, capsys.readouterr().err
    res = simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.05,
                       output=["x", "y", "a", "b", "p", "q"])
    after = _after_events(res, ["x", "y", "a", "b", "p", "q"])
    for k in range(6):
        tk = round(0.2 * k, 9)
        assert after[tk]["y"] == pytest.approx(3 - tk, abs=1e-12), tk
        assert after[tk]["x"] == pytest.approx(2 + tk, abs=1e-12), tk
        assert after[tk]["b"] == pytest.approx(3 - tk, abs=1e-12), tk
        assert after[tk]["a"] == pytest.approx(2 + tk, abs=1e-12), tk
    for k in range(5):
        tk = round(0.1 + 0.2 * k, 9)
        q = brentq(lambda v, tk=tk: v - np.exp(-(v + tk)), 0.0, 1.0, xtol=1e-15)
        assert after[tk]["q"] == pytest.approx(q, abs=1e-12), tk
        assert after[tk]["p"] == pytest.approx(q + tk, abs=1e-12), tk
    # OpenModelica's reference values (testsuite/simulation/modelica/events/bug1228.mos)
    for t, x, y in ((0.0, 2.0, 3.0), (0.5, 2.4, 2.6), (1.0, 3.0, 2.0)):
        assert after[t]["x"] == pytest.approx(x, abs=1e-12)
        assert after[t]["y"] == pytest.approx(y, abs=1e-12)
    # between samples, y holds and x = 5 - y
    t = res["time"]
    np.testing.assert_allclose(res["x"] + res["y"], 5.0, atol=1e-12)
    inside = (t > 0.2 + 1e-9) & (t < 0.4 - 1e-9)
    np.testing.assert_allclose(res["y"][inside], 2.8, atol=1e-12)


LOOP_INTEGER = """class LoopInteger
  Real x;
  Integer n(start = 0);
equation
  when sample(0, 0.2) then
    n = integer(7 - 2*x + time);
  end when;
  x + n = 5;
end LoopInteger;
"""

LOOP_MODES = """class LoopModes
  Real x;
  discrete Real y(start = 0);
  Real z(start = 0, fixed = true);
equation
  when sample(0, 0.2) then
    y = 7 - 2*x + time;
  end when;
  x + y = 5;
  if z > 0.5 then
    der(z) = 1;
  else
    der(z) = 2;
  end if;
end LoopModes;
"""


@pytest.mark.parametrize("text, name, lines, why", [
    (LOOP_INTEGER, "LoopInteger", ("n", 6, 8),
     "the loop passes through the Integer n, and only Real when-variables are solved with "
     "the continuous equations (by Newton)"),
    (LOOP_MODES, "LoopModes", ("y", 7, 9),
     "the model has several modes, and only single-mode models solve a when-equation "
     "together with the continuous equations (by Newton)")])
def test_loops_that_are_not_solved_are_rejected(tmp_path, capsys, text, name, lines, why):
    var, when_line, eq_line = lines
    src = tmp_path / f"{name}.mo"
    src.write_text(text)
    for args in (["analyze", str(src)], ["export", str(src), "-o", str(tmp_path / "C.fmu")]):
        code = main(args)
        out = capsys.readouterr()
        text_out = out.out + out.err
        assert code == 1, text_out
        assert ("algebraic loop between equations of when-clauses and continuous equations "
                "(E-WHEN-LOOP)") in text_out
        assert why in text_out
        assert f"the equation of {var} in a when-clause ({name}.mo:{when_line}) reads x" \
            in text_out
        assert f"the continuous equation ({name}.mo:{eq_line}) computes x from" in text_out
        assert "fix: read the previous value where it is meant" in text_out
        assert "Traceback" not in text_out
    assert not (tmp_path / "C.fmu").exists()


def test_suggested_fix_pre_reads_the_left_limit(tmp_path, capsys):
    """With ``pre(x)`` the when-equation is explicit: at the sample t_k (k >= 1),
    y_k = 7 - 2*x_{k-1} + t_k and x_k = 5 - y_k, x constant between samples."""
    src = tmp_path / "Fixed.mo"
    src.write_text(COUPLED.replace("2*x", "2*pre(x)").replace("Coupled", "Fixed"))
    assert main(["export", str(src), "-o", str(tmp_path / "Fixed.fmu")]) == 0, \
        capsys.readouterr()
    res = simulate_fmu(str(tmp_path / "Fixed.fmu"), stop_time=1.0, output_interval=0.1,
                       output=["x", "y"])
    t, x, y = res["time"], res["x"], res["y"]
    np.testing.assert_allclose(x + y, 5.0, atol=1e-12)
    # value after the instant t_k: the last row with time == t_k
    after = {}
    for i, ti in enumerate(t):
        after[round(ti, 9)] = x[i]
    xs = [after[0.0]]
    for k in range(1, 6):
        tk = round(0.2 * k, 9)
        expected = 5.0 - (7.0 - 2.0 * xs[-1] + tk)
        assert after[tk] == pytest.approx(expected, abs=1e-9), (tk, after[tk], expected)
        xs.append(after[tk])
        # between samples x keeps the value of the last sample
        between = (t > tk - 0.2 + 1e-9) & (t < tk - 1e-9)
        np.testing.assert_allclose(x[between], xs[-2], atol=1e-12)
    assert xs[-1] != xs[1]          # the recurrence moved x: the check is not vacuous


THROUGH_DERIVATIVE = """class ThroughDer
  Real x(start = 1, fixed = true);
  discrete Real z(start = 0);
equation
  der(x) = -x + z;
  when sample(0.05, 0.1) then
    z = 0.5*der(x) + 1;
  end when;
end ThroughDer;
"""


def test_a_loop_through_a_derivative_is_solved(tmp_path, capsys):
    """The when-equation reads der(x), which the schedule computes from z (OpenModelica's
    nonlinear_system.problem9 has this shape): at a sample t_k, z = 0.5(-x + z) + 1, so
    z_k = 2 - x(t_k); in between x relaxes to z_k. Closed recurrence on the samples."""
    path = tmp_path / "ThroughDer.mo"
    path.write_text(THROUGH_DERIVATIVE)
    fmu = tmp_path / "ThroughDer.fmu"
    assert main(["export", str(path), "-o", str(fmu)]) == 0
    r = simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.025, relative_tolerance=1e-10,
                     output=["x", "z"])
    samples = 0.05 + 0.1 * np.arange(10)
    x, z, t0 = 1.0, 0.0, 0.0
    want = {}
    for tk in samples:
        x = z + (x - z) * np.exp(-(tk - t0))
        z, t0 = 2.0 - x, tk
        want[round(tk + 0.05, 6)] = (z + (x - z) * np.exp(-0.05), z)   # mid-interval values
    for t, xv, zv in zip(r["time"], r["x"], r["z"]):
        if round(t, 6) in want:
            assert xv == pytest.approx(want[round(t, 6)][0], abs=1e-7)
            assert zv == pytest.approx(want[round(t, 6)][1], abs=1e-9)
    assert len([t for t in r["time"] if round(t, 6) in want]) >= 9
