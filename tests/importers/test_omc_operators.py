"""Operators as OpenModelica prints them outside Modelica's grammar (issue 13): ``a ^ -b``
(read ``a ^ (-b)``) and the old front end's upper-case ``AND``, ``OR``, ``NOT`` (DAEDump's
dumpOperatorString for DAE.AND/OR/NOT: the logical operators). Oracles: the lower-case
model's expressions, and the closed form x = exp(t / n^2) of der(x) = n^-2 x."""

from __future__ import annotations

import math

import pytest

from mdae_fmu.diagnostics import InputError
from mdae_fmu.importers.flat_modelica import parse_modelica

SRC = """model Ops
  parameter Real n = 2.0;
  Real x(start = 1.0, fixed = true);
  Real y;
  Boolean b;
equation
  der(x) = n ^ -2.0 * x;
  y = x .^ - 1 + 2 ^ +1;
  b = time > 0.5 AND NOT time > 0.7 OR time > 0.9;
end Ops;
"""


def _residuals(src):
    return [e.residual for e in parse_modelica(src, "Ops.mo").equations]


def test_signed_exponent_and_upper_case_logic_read_as_modelica():
    plain = (SRC.replace("n ^ -2.0", "n ^ (-2.0)").replace(".^ - 1", ".^ (-1)")
             .replace("2 ^ +1", "2 ^ (+1)").replace(" AND NOT ", " and not ")
             .replace(" OR ", " or "))
    assert _residuals(SRC) == _residuals(plain)


def test_upper_case_words_stay_names_where_no_operator_can_stand():
    src = """model Names
  Real AND(start = 1, fixed = true);
  Real OR;
equation
  der(AND) = -AND;
  OR = 2 * AND;
end Names;
"""
    model = parse_modelica(src, "Names.mo")
    assert [v.name for v in model.variables] == ["AND", "OR"]


def test_two_signs_after_the_power_are_still_a_syntax_error():
    with pytest.raises(InputError) as err:
        parse_modelica(SRC.replace("n ^ -2.0", "n ^ - -2.0"), "Ops.mo")
    assert "Ops.mo:7:" in str(err.value)


def test_signed_exponent_simulates_to_its_closed_form(tmp_path):
    pytest.importorskip("fmpy")
    from fmpy import simulate_fmu

    from mdae_fmu.fmu.export import export
    fmu = export(parse_modelica(SRC, "Ops.mo"), tmp_path / "Ops.fmu", progress=False)
    res = simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.1, output=["x", "b"],
                       relative_tolerance=1e-8)
    assert res["x"][-1] == pytest.approx(math.exp(0.25), rel=1e-6)
    for t, b in zip(res["time"], res["b"]):
        if abs(t - 0.6) < 1e-9 or abs(t - 0.95) < 1e-9:
            assert b
        if abs(t - 0.3) < 1e-9 or abs(t - 0.8) < 1e-9:
            assert not b


SAMPLE_AND = """model SampleAnd
  Integer n(start = 0, fixed = true);
  Integer m(start = 0, fixed = true);
equation
  when time > 0.3 and sample(0, 0.25) then
    n = pre(n) + 1;
  end when;
  when time < 0.6 or sample(0, 0.25) then
    m = pre(m) + 1;
  end when;
end SampleAnd;
"""


def test_sample_inside_a_compound_when_condition(tmp_path):
    """``when c and sample(0, 0.25)`` fires at the sample instants where c holds: 0.5, 0.75,
    1.0 for c = time > 0.3. ``when c or sample(...)``: the condition rises at t = 0 (c is
    true at the start, as a when-condition true at initialization it does not fire) and
    then at each sample instant once c is false: 0.75, 1.0 (at 0.25, 0.5 it stays true)."""
    pytest.importorskip("fmpy")
    from fmpy import simulate_fmu

    from mdae_fmu.fmu.export import export
    model = parse_modelica(SAMPLE_AND, "SampleAnd.mo")
    assert any(v.name == "$sample1" and v.type == "Boolean" for v in model.variables)
    fmu = export(model, tmp_path / "SampleAnd.fmu", progress=False)
    res = simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.05, output=["n", "m"])

    def at(name, t):
        import numpy as np
        return res[name][np.flatnonzero(np.isclose(res["time"], t))[-1]]
    assert [at("n", t) for t in (0.2, 0.4, 0.6, 0.9, 1.0)] == [0, 0, 1, 2, 3]
    assert [at("m", t) for t in (0.2, 0.7, 0.8, 1.0)] == [0, 0, 1, 2]


def test_sign_after_a_binary_operator():
    """``Celsius - -273.15`` (MSL 3.1 HeatingResistor as omc prints it), ``t + -1``: read
    with the sign applied to the operand; ``2 * -t`` stays a syntax error."""
    src = """model Neg
  Real x;
  Real y;
equation
  x = time - -273.15;
  y = 2 * time + -1;
end Neg;
"""
    plain = src.replace("- -273.15", "- (-273.15)").replace("+ -1", "+ (-1)")
    assert _residuals(src) == _residuals(plain)
    for bad in ("2 * time - - -1", "2 * -time"):
        with pytest.raises(InputError) as err:
            parse_modelica(src.replace("2 * time + -1", bad), "Neg.mo")
        assert "Neg.mo:6:" in str(err.value)
