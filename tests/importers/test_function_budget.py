"""The work budget of user functions (issue 25, deliver 2; mdae_fmu/work_budget.py): a call
evaluated at compile time stops with exit 2 naming the function, the statement it was running
and the call site in the model; in the FMU a call that runs out fails with fmi2Error and a
logged message naming the function. Each case well under 30 s: the compile-time cases run
with a small budget (MDAE_FUNCTION_BUDGET), the C case with the default, 10^8."""

from __future__ import annotations

import re
import time

import pytest

from fmu_files import export_text, failed_run_log
from mdae_fmu.cli import main

ENDLESS = """model Endless
  function f
    input Real x;
    output Real y;
  algorithm
    y := x;
    while true loop
      y := y + 1;
    end while;
  end f;
  parameter Real p = f(1.0);
  Real x(start = 1, fixed = true);
equation
  der(x) = -p * x;
end Endless;
"""

# two nested loops of RANGE iterations, each within the budget, RANGE^2 together beyond it,
# called with a constant argument from an equation (so the exporter evaluates it) or with
# the state (so only the FMU does)
NESTED = """model Nested
  function g
    input Real x;
    output Real y;
  algorithm
    y := 0;
    for i in 1:RANGE loop
      for j in 1:RANGE loop
        y := y + x;
      end for;
    end for;
  end g;
  Real x(start = 1, fixed = true);
  Real z;
equation
  der(x) = -x;
  z = g(ARG);
end Nested;
"""

# sum of 1..n by a loop: n iterations, each one unit for the iteration and one for the
# assignment, plus the first assignment and the loop statement itself
SUM = """model Sum
  function s
    input Integer n;
    output Real y;
  algorithm
    y := 0;
    for i in 1:n loop
      y := y + i;
    end for;
  end s;
  parameter Real p = s(1000);
  Real x(start = 1, fixed = true);
equation
  der(x) = -p * x;
end Sum;
"""


def run_cli(tmp_path, capsys, text, name, budget, monkeypatch):
    src = tmp_path / f"{name}.mo"
    src.write_text(text)
    monkeypatch.setenv("MDAE_FUNCTION_BUDGET", str(budget))
    t0 = time.perf_counter()
    code = main(["export", str(src), "-o", str(tmp_path / f"{name}.fmu")])
    seconds = time.perf_counter() - t0
    return code, capsys.readouterr().err, src, seconds


def test_endless_loop_in_a_parameter_binding(tmp_path, capsys, monkeypatch):
    code, err, src, seconds = run_cli(tmp_path, capsys, ENDLESS, "Endless", 100_000,
                                      monkeypatch)
    assert code == 2 and seconds < 30
    first = err.splitlines()[0]
    # the call site: line 11, the column of "f(" in the binding; the loop: line 7
    assert first.startswith(f"{src}:11:22: the call of function f in the binding of "
                            "parameter p was stopped after 100000 statements and loop "
                            f"iterations, its work budget (the statement running was in f "
                            f"at {src}:7:5)")
    assert "MDAE_FUNCTION_BUDGET" in first
    assert err.splitlines()[1:3] == ["    parameter Real p = f(1.0);",
                                     "                       ^"]
    assert not (tmp_path / "Endless.fmu").exists()


def test_nested_loops_in_an_equation_at_compile_time(tmp_path, capsys, monkeypatch):
    text = NESTED.replace("ARG", "2.0").replace("RANGE", "1000")
    code, err, src, seconds = run_cli(tmp_path, capsys, text, "Nested", 200_000, monkeypatch)
    assert code == 2 and seconds < 30
    first = err.splitlines()[0]
    assert first.startswith(f"{src}:17:7: the call of function g in an equation was stopped "
                            "after 200000 statements and loop iterations")
    # it ran out in the inner loop: its header (line 8) or its statement (line 9)
    assert re.search(rf"the statement running was in g at {re.escape(str(src))}:[89]:\d+\)",
                     first), first


def test_budget_counts_statements_and_iterations(tmp_path, capsys, monkeypatch):
    """s(1000) takes 1 + 1 + 1000 * 2 = 2002 units: it runs with 2002, not with 2001; the
    value is the closed form 1000 * 1001 / 2."""
    code, err, _, _ = run_cli(tmp_path, capsys, SUM, "Sum", 2001, monkeypatch)
    assert code == 2 and "stopped after 2001 statements and loop iterations" in err
    code, err, _, _ = run_cli(tmp_path, capsys, SUM, "Sum", 2002, monkeypatch)
    assert code == 0, err
    from fmpy import simulate_fmu
    result = simulate_fmu(str(tmp_path / "Sum.fmu"), stop_time=0.1, output=["p"])
    assert result["p"][0] == 1000 * 1001 / 2


@pytest.mark.parametrize("value", ["abc", "0", "-5", "1e9", str(10 ** 16)])
def test_bad_budget_setting(tmp_path, capsys, monkeypatch, value):
    code, err, _, _ = run_cli(tmp_path, capsys, SUM, "Sum", value, monkeypatch)
    assert code == 2
    assert err.startswith(f"MDAE_FUNCTION_BUDGET={value!r}: the work budget of a user "
                          "function must be a whole number from 1 to")


def test_nested_loops_in_the_fmu(tmp_path, monkeypatch):
    """g(x) of the state: only the FMU evaluates it. Each loop is within the range limit,
    10^16 iterations together; the call stops after the budget (the default, 10^8), and the
    FMI call fails with the message naming g."""
    monkeypatch.delenv("MDAE_FUNCTION_BUDGET", raising=False)
    fmu = export_text(tmp_path, NESTED.replace("ARG", "x").replace("RANGE", "100000000"),
                      "Nested")
    t0 = time.perf_counter()
    log = failed_run_log(fmu, "fmi2ExitInitializationMode failed", stop_time=1.0)
    assert time.perf_counter() - t0 < 30
    assert "function g was stopped after 100000000 loop iterations in one call from the " \
           "model, its work budget: a loop that does not end? (MDAE_FUNCTION_BUDGET at " \
           "export sets the budget)" in log


def test_endless_while_in_the_fmu(tmp_path, monkeypatch):
    """The same for a while-loop, with a budget compiled in from MDAE_FUNCTION_BUDGET."""
    monkeypatch.setenv("MDAE_FUNCTION_BUDGET", "5000")
    text = ENDLESS.replace("parameter Real p = f(1.0);", "Real p;").replace(
        "der(x) = -p * x;", "der(x) = -x;\n  p = f(x);")
    fmu = export_text(tmp_path, text, "EndlessFmu")
    log = failed_run_log(fmu, "fmi2ExitInitializationMode failed", stop_time=1.0)
    assert any(m.startswith("function f was stopped after 5000 loop iterations") for m in log)
