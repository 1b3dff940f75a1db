"""An initial system whose Jacobian is rank deficient for the parameter values given (not for
all of them: the structural analysis accepts it) is solved on its independent rows when the
dependent ones agree with them, and otherwise fails with a message naming the dependent
equation and the combination of the others it is, never blaming a fixed start value
(templates/mdae_runtime.c, ``mdae_gauss_newton_rows``; issue 26).

``x + b*y = 1`` and ``2*x + 2*y = c`` with b = 1: dependent. With c = 2 they agree, and the
minimum-norm step from the start values (0, 0) gives x = y = 1/2, then x = y = exp(-t)/2;
with c = 3 they contradict each other (residual 3 - 2 = 1 on the second). A conflict of fixed
start values keeps its own message (tests/fmu/test_initial_mode_consistency.py,
``test_host_selected_mode_over_determined_is_an_error``)."""

from __future__ import annotations

import math

import pytest
from fmpy import simulate_fmu

from fmu_files import export_text, failed_run_log

DEPENDENT = """model Dependent
  parameter Real b = 1;
  parameter Real c = 3;
  Real x(start = 0);
  Real y(start = 0);
equation
  der(x) = -x;
  der(y) = -y;
initial equation
  x + b*y = 1;
  2*x + 2*y = c;
end Dependent;
"""


@pytest.fixture(scope="module")
def fmu(tmp_path_factory):
    return export_text(tmp_path_factory.mktemp("dep"), DEPENDENT, "Dependent")


def test_dependent_rows_that_agree_are_solved(fmu):
    """c = 2: the second row is twice the first; the initialization takes the solution
    nearest the start values, x = y = 1/2, and the run follows exp(-t)/2."""
    r = simulate_fmu(str(fmu), start_values={"c": 2.0}, stop_time=1.0, output_interval=0.25,
                     relative_tolerance=1e-10, output=["x", "y"])
    assert r["x"][0] == pytest.approx(0.5, abs=1e-12) and r["y"][0] == pytest.approx(0.5,
                                                                                    abs=1e-12)
    for t, x, y in zip(r["time"], r["x"], r["y"]):
        assert x == pytest.approx(0.5 * math.exp(-t), rel=1e-8)
        assert y == pytest.approx(0.5 * math.exp(-t), rel=1e-8)


def test_dependent_rows_that_contradict_are_named(fmu):
    """c = 3: the message names the dependent equation, where it is, its residual and the
    combination of the other equations it is; nothing blames a start value."""
    log = failed_run_log(fmu, "fmi2ExitInitializationMode", start_values={"c": 3.0},
                         stop_time=1.0)
    dep = [m for m in log if "numerically dependent" in m]
    assert len(dep) == 1, log
    assert "rank 1, 2 rows) and contradict each other" in dep[0]
    assert "equation i2 (" in dep[0] and "Dependent.mo:11:3) does not hold (residual -1)" \
        in dep[0]
    assert "its linear part is 2 * equation i1 (" in dep[0] and "Dependent.mo:10:3)" in dep[0]
    assert not any("start value" in m and "fixed" in m for m in log), log
    assert not any("over-determines" in m for m in log), log
