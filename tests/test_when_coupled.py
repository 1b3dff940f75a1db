"""When-equations coupled with the continuous equations at the event instant (issue: values
that differed from OpenModelica without an error).

``when sample(0, 0.2) then y = 7 - 2*x + time; end when; x + y = 5;``: at a sample instant
the when-equation and ``x + y = 5`` are one simultaneous system (Modelica 3.6 §8.6; theory note
9334 §1.4 Def 33). The generated code solves when-equations by ordering only, so such a model
must be rejected at analysis (E-WHEN-LOOP), never simulated to wrong numbers. The fix the
message suggests (read ``pre(x)``) is checked on FMPy output against its closed recurrence."""

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


def test_when_equation_in_a_loop_with_continuous_equations_is_rejected(tmp_path, capsys):
    src = tmp_path / "Coupled.mo"
    src.write_text(COUPLED)
    for args in (["analyze", str(src)], ["export", str(src), "-o", str(tmp_path / "C.fmu")]):
        code = main(args)
        out = capsys.readouterr()
        text = out.out + out.err
        assert code == 1, text
        assert ("algebraic loop between equations of when-clauses and continuous equations "
                "(E-WHEN-LOOP)") in text
        assert "the equation of y in a when-clause (Coupled.mo:6) reads x" in text
        assert "the continuous equation (Coupled.mo:8) computes x from y" in text
        assert "fix: read the previous value where it is meant" in text
        assert "Traceback" not in text
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
