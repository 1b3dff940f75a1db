"""Guarded initial equations and ``fixed = false`` parameters set by an initial equation
(issue 13; codegen/initialization.py, importers/initial.py).

Oracles: closed forms of x' = -x / x' = -k x from the initial value each branch gives, for
the parameter values the FMU is given (so the guard is evaluated at run time, not at export).
"""

import math

import pytest

fmpy = pytest.importorskip("fmpy")

from fmpy.validation import validate_fmu  # noqa: E402

from fmu_files import export_text, failed_run_log  # noqa: E402
from mdae_fmu.diagnostics import ModelRejected  # noqa: E402
from mdae_fmu.importers.flat_modelica import parse_modelica  # noqa: E402

GUARDED = """\
model GuardedInit
  parameter Boolean p = true;
  parameter Real q = 0.5;
  Real x;
  Real y;
initial equation
  if p then
    x = 1;
  elseif q > 1 then
    x = 3;
  else
    x = 2;
  end if;
  y = 4;
equation
  der(x) = -x;
  der(y) = -y;
end GuardedInit;
"""

FREE_PARAMETERS = """\
model FreeParameters
  parameter Real a = 3;
  parameter Boolean b(fixed = false);
  parameter Real k(fixed = false);
  parameter Integer n(fixed = false);
  Real x(start = 1, fixed = true);
initial equation
  k = 2 * m;
  b = a > 2;
  n = if b then 2 else 5;
equation
  der(x) = if b then -k * x else k * x;
end FreeParameters;
"""


def _fmu(tmp_path, text, name):
    fmu = export_text(tmp_path, text, name)
    assert validate_fmu(str(fmu)) == []
    return fmu


@pytest.mark.parametrize("p, q, x0", [(True, 0.5, 1.0), (False, 2.0, 3.0), (False, 0.5, 2.0)])
def test_guarded_initial_equation_takes_the_branch_of_the_parameters(tmp_path, p, q, x0):
    fmu = _fmu(tmp_path, GUARDED, "GuardedInit")
    res = fmpy.simulate_fmu(str(fmu), start_values={"p": p, "q": q}, output=["x", "y"],
                            relative_tolerance=1e-8)
    assert res["x"][0] == pytest.approx(x0, abs=1e-9)
    assert res["y"][0] == pytest.approx(4.0, abs=1e-9)
    assert res["x"][-1] == pytest.approx(x0 * math.exp(-1.0), rel=1e-6)


def test_free_parameters_become_calculated_parameters():
    text = FREE_PARAMETERS.replace("2 * m", "2 * a")
    model = parse_modelica(text, "FreeParameters.mo")
    assert model.initial_equations == ()
    assert {v.name: v.fixed for v in model.variables if v.name in "bkn"} == \
           {"b": None, "k": None, "n": None}


@pytest.mark.parametrize("a", [3.0, 1.0])
def test_boolean_parameter_with_fixed_false_is_initialised(tmp_path, a):
    fmu = _fmu(tmp_path, FREE_PARAMETERS.replace("2 * m", "2 * a"), "FreeParameters")
    md = fmpy.read_model_description(str(fmu))
    causality = {v.name: v.causality for v in md.modelVariables}
    assert causality["b"] == causality["k"] == causality["n"] == "calculatedParameter"
    res = fmpy.simulate_fmu(str(fmu), start_values={"a": a}, output=["x", "b", "k", "n"],
                            relative_tolerance=1e-8)
    b = a > 2
    assert bool(res["b"][-1]) is b and res["k"][-1] == 2 * a and res["n"][-1] == (2 if b else 5)
    rate = -2 * a if b else 2 * a
    assert res["x"][-1] == pytest.approx(math.exp(rate), rel=1e-4)   # CVode, rtol 1e-8


IMPLICIT = """\
model ImplicitFree
  parameter Real a = 3;
  parameter Real k(fixed = false, start = 1);
  Real x(start = 1, fixed = true);
initial equation
  k * k = 4 * a;
equation
  der(x) = -k * x;
end ImplicitFree;
"""


@pytest.mark.parametrize("a", [3.0, 0.25])
def test_free_parameter_of_an_implicit_initial_equation_is_solved(tmp_path, a):
    """A Real ``fixed = false`` parameter that only an implicit initial equation determines
    is an unknown of the initial system, started from its start value (Newton from k = 1
    reaches the positive root k = 2 sqrt(a)); x' = -k x then gives x(1) = exp(-k)."""
    fmu = _fmu(tmp_path, IMPLICIT, "ImplicitFree")
    md = fmpy.read_model_description(str(fmu))
    k = next(v for v in md.modelVariables if v.name == "k")
    assert (k.causality, k.variability, k.initial, k.start) == (
        "calculatedParameter", "fixed", "approx", "1.0")
    res = fmpy.simulate_fmu(str(fmu), start_values={"a": a}, output=["x", "k"],
                            relative_tolerance=1e-8)
    assert res["k"][0] == res["k"][-1] == pytest.approx(2 * math.sqrt(a), rel=1e-9)
    assert res["x"][-1] == pytest.approx(math.exp(-2 * math.sqrt(a)), rel=1e-4)


@pytest.mark.parametrize("old, new, reason", [
    ("parameter Real k(fixed = false, start = 1)", "parameter Integer k(fixed = false)",
     "an Integer"),
    ("parameter Real a = 3;", "parameter Real a = 3;\n  parameter Real c = 2 * k;",
     "a parameter binding or a start value reads it"),
])
def test_free_parameter_the_initial_system_cannot_compute_is_refused(tmp_path, old, new,
                                                                    reason):
    text = IMPLICIT.replace(old, new)
    with pytest.raises(ModelRejected, match=r"ImplicitFree\.mo:\d+:\d+: parameter 'k' has "
                                            r"fixed = false.*" + reason):
        _fmu(tmp_path, text, "ImplicitFree")


def test_initial_system_flat_in_a_free_parameter_names_it(tmp_path):
    """At the start value p = -1 the only initial equation, max(p, 0) = 1, is flat in p (the
    Jacobian's column of p is zero): exit initialization fails and the message names p (the
    start value decides: from p = 0.5 Newton reaches p = 1)."""
    text = IMPLICIT.replace("k * k = 4 * a", "max(k, 0) = 1").replace("start = 1)",
                                                                      "start = -1)", 1)
    fmu = _fmu(tmp_path, text, "ImplicitFree")
    log = failed_run_log(fmu, "fmi2ExitInitializationMode")
    assert any("no equation depends on k at its current value" in m for m in log), log
    res = fmpy.simulate_fmu(str(fmu), start_values={"k": 0.5}, output=["k"])
    assert res["k"][-1] == pytest.approx(1.0, rel=1e-9)
