"""Structural parameters (issue 26, docs/decisions.md §17): conditions of if-equations and of
structure-changing if-expressions that read only parameters are evaluated at export, the
parameters they read become constants of the FMU, and `analyze` says which and why."""

from __future__ import annotations

import json
import math

import pytest

from mdae_fmu import api
from mdae_fmu import expr as E
from mdae_fmu.cli import main
from mdae_fmu.structure.per_mode import analyze_modes
from mdae_fmu.modes.event_iteration import condition_value
from mdae_fmu.structure.structural_parameters import fix_structural_parameters

from fmu_files import export_text

# the MSL support adapter's pattern: an if-equation on a Boolean parameter whose branches
# leave the support angle with an equation in one case only; the "connected" mode, which
# the parameter's value excludes, is structurally singular (phi_s has no equation)
ADAPTER = """
model Adapter
  parameter Boolean connected = {connected};
  parameter Boolean alias = connected;
  parameter Real J = 2.0;
  parameter Real tau0 = 3.0;
  parameter Real d = 0.25;
  Real phi(start = 0.0, fixed = true);
  Real w(start = 0.0, fixed = true);
  Real phi_s;
  Real tau_s;
equation
  der(phi) = w;
  J * der(w) = tau0 - tau_s;
  if alias then
    tau_s = 0.5 * w;
  else
    phi_s = 0.0;
  end if;
  tau_s = if alias then 0.5 * w else phi_s + d * w;
end Adapter;
"""


def test_unbalanced_parameter_if_equation_is_fixed_and_reported(tmp_path):
    src = tmp_path / "Adapter.mo"
    src.write_text(ADAPTER.format(connected="false"))
    model = api.load(src)
    # as guards, the two values are two modes, the excluded one singular: rejected
    assert analyze_modes(model).exit_code == 1
    fixed = fix_structural_parameters(model)
    assert [(p.name, p.value) for p in fixed.parameters] == [("alias", False),
                                                             ("connected", False)]
    assert "alias is false: it guards which equations exist (if-equation)" \
        in fixed.parameters[0].reason
    assert {v.name: v.variability for v in fixed.model.variables
            if v.name in ("alias", "connected", "J")} == \
        {"alias": "constant", "connected": "constant", "J": "parameter"}
    assert not any(eq.guard for eq in fixed.model.equations)
    a = api.analyze(model)
    assert a.accepted and a.fixed_parameters == fixed.parameters


def test_cli_report_names_the_fixed_parameters(tmp_path, capsys):
    src = tmp_path / "Adapter.mo"
    src.write_text(ADAPTER.format(connected="false"))
    assert main(["analyze", str(src)]) == 0
    text = capsys.readouterr().out
    assert "structural parameters (2), evaluated at export and constants of the FMU" in text
    assert "  connected = false: alias is false: it guards which equations exist" in text
    assert "verdict: accepted" in text
    assert main(["analyze", str(src), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [p["parameter"] for p in doc["fixed_parameters"]] == ["alias", "connected"]


def test_fixed_parameters_are_constants_of_the_fmu_and_the_run_is_exact(tmp_path):
    """J w' = tau0 - d w with the disconnected branch: w = (tau0/d)(1 - exp(-d t/J))."""
    from fmpy import read_model_description, simulate_fmu
    fmu = export_text(tmp_path, ADAPTER.format(connected="false"), "Adapter")
    md = read_model_description(str(fmu))
    kinds = {v.name: (v.causality, v.variability) for v in md.modelVariables}
    assert kinds["connected"] == ("local", "constant")
    assert kinds["J"] == ("parameter", "fixed")
    res = simulate_fmu(str(fmu), stop_time=4.0, output=["w", "phi_s"], relative_tolerance=1e-10)
    for t, w, phi_s in zip(res["time"], res["w"], res["phi_s"]):
        assert w == pytest.approx(12.0 * (1 - math.exp(-0.125 * t)), abs=1e-7)
        assert phi_s == 0.0
    # the FMU refuses to set a constant: the structure compiled in cannot be contradicted
    from fmpy import extract
    from fmpy.fmi1 import FMICallException
    from fmpy.fmi2 import FMU2Model
    vr = {v.name: v.valueReference for v in md.modelVariables}
    inst = FMU2Model(guid=md.guid, unzipDirectory=extract(str(fmu)),
                     modelIdentifier=md.modelExchange.modelIdentifier, instanceName="a")
    inst.instantiate()
    with pytest.raises(FMICallException, match="fmi2SetBoolean failed"):
        inst.setBoolean([vr["connected"]], [True])
    assert inst.getBoolean([vr["connected"]]) == [False]
    inst.freeInstance()


def test_tunable_condition_that_keeps_the_structure_stays_a_parameter():
    """``if p > 0 then 2*x else 3*x`` reads the same unknown in both branches: no structure
    changes, p stays tunable."""
    from mdae_fmu.importers.flat_modelica import parse_modelica
    model = parse_modelica("""
model Tunable
  parameter Real p = 1.0;
  Real x(start = 1.0, fixed = true);
equation
  der(x) = if p > 0 then -2 * x else -3 * x;
end Tunable;
""", "Tunable.mo")
    fixed = fix_structural_parameters(model)
    assert fixed.parameters == () and fixed.model is model


def test_condition_value():
    from mdae_fmu.importers.flat_modelica import parse_expression
    values = {"a": 1.0, "b": 0.0}
    assert condition_value(parse_expression("a > 0.5 and not b"), values) is True
    assert condition_value(parse_expression("b or a < 0"), values) is False
    assert condition_value(parse_expression("a > x"), values) is None
    assert condition_value(parse_expression("time > a"), values) is None


BACKLASH = """
model Backlash
  parameter Real b = 0.1;
  parameter Real c = 100.0;
  {b2_declaration}
  Real x(start = 0.2, fixed = true);
  Real v(start = 0.0, fixed = true);
  Real f;
  Real t0 = time;
  discrete Real hits(start = 0.0, fixed = true);
  Real s(start = 1.0, fixed = true);
equation
  der(x) = v;
  der(v) = -f - 0.1 * v;
  der(s) = -s;
  if b2 > 1e-10 then
    f = if x > b2 then c * (x - b2) else if x < -b2 then c * (x + b2) else 0.0;
  else
    f = c * x;
  end if;
  when x > 0.5 then
    hits = pre(hits) + 1.0;
  end when;
end Backlash;
"""


def test_parameter_bound_variables_are_those_bound_to_parameters_only(tmp_path):
    """A variable an unguarded equation binds to parameters (``Real b2 = 0.5*b``) is one;
    a state, a variable of time, a when-assigned one are not (docs/decisions.md §17)."""
    from mdae_fmu.structure.structural_parameters import parameter_bound_variables
    src = tmp_path / "Backlash.mo"
    src.write_text(BACKLASH.format(b2_declaration="Real b2 = 0.5 * b;"))
    bound = parameter_bound_variables(api.load(src))
    assert sorted(bound) == ["b2"]
    assert bound["b2"][1] == E.BinOp("*", E.Const(0.5), E.Ref("b"))


def test_a_condition_on_a_parameter_bound_variable_is_a_parameter_condition(tmp_path):
    """The analysis of ``Real b2 = 0.5*b`` is the analysis of ``parameter Real b2 = 0.5*b``:
    ``b2 > 1e-10`` is evaluated at export (the MSL Gear's elasto-backlash, issue 26), b2 and b
    become constants, and the same modes remain."""
    results = {}
    for kind, decl in (("variable", "Real b2 = 0.5 * b;"),
                       ("parameter", "parameter Real b2 = 0.5 * b;")):
        src = tmp_path / f"Backlash_{kind}.mo"
        src.write_text(BACKLASH.format(b2_declaration=decl))
        a = api.analyze(api.load(src), implicit=False)     # the enumerated modes, compared
        assert a.accepted
        results[kind] = a
    for a in results.values():
        assert [(p.name, p.value) for p in a.fixed_parameters] == [("b", 0.1), ("b2", 0.05)]
        assert "b2 > 1e-10 is true: it guards which equations exist" \
            in a.fixed_parameters[1].reason
    assert [m.valuation for m in results["variable"].modes.modes] == \
        [m.valuation for m in results["parameter"].modes.modes]
    fixed = fix_structural_parameters(api.load(tmp_path / "Backlash_variable.mo")).model
    kinds = {v.name: v.variability for v in fixed.variables}
    assert kinds["b"] == kinds["b2"] == "constant" and kinds["c"] == "parameter"
    assert not any("b2" in E.refs(eq.residual) and "x" not in E.refs(eq.residual)
                   for eq in fixed.equations)          # b2's own equation is gone
