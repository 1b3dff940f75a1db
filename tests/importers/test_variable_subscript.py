"""Array subscripts that are variable expressions (issue 13; docs/importers.md, "Types,
records and arrays"): ``u[i]`` with a discrete ``i`` is the if-chain over the dimension's
indices with a range check (`importers.lower_subscripts.variable_subscript`); a Boolean
subscript picks element 1 (false) or 2 (true); in an algorithm a loop over a variable range
reads ``u[k]`` the same way inside the algorithm function.

Oracles: closed forms. ``i`` steps 1, 2, 3, 4 at t = 0.25, 0.5, 0.75, so on [0, 0.7]
x = int u[i] dt = 0.25 * 1 + 0.25 * 2 + 0.2 * 3 = 1.35; y = int w[b] dt with b = time > 0.5
is 0.5 * 10 + 0.2 * 20 = 9; s = u[1] + ... + u[i]; at t = 0.75 i = 4 is out of range and the
range check stops the simulation with its message."""

from __future__ import annotations

import numpy as np
import pytest

from mdae_fmu.diagnostics import InputError
from mdae_fmu.importers.flat_modelica import parse_modelica

MODEL = """model VarIdx
  Real u[3] = {1, 2, 3};
  Real w[2] = {10, 20};
  Integer i(start = 1, fixed = true);
  Boolean b = time > 0.5;
  Real x(start = 0, fixed = true);
  Real y(start = 0, fixed = true);
  Real s;
equation
  when sample(0.25, 0.25) then
    i = pre(i) + 1;
  end when;
  der(x) = u[i];
  der(y) = w[b];
algorithm
  s := 0;
  for k in 1:i loop
    s := s + u[k];
  end for;
end VarIdx;
"""


def _sim(tmp_path, stop, src=MODEL):
    fmpy = pytest.importorskip("fmpy")
    from mdae_fmu.fmu.export import export
    fmu = export(parse_modelica(src, "VarIdx.mo"), tmp_path / "VarIdx.fmu", progress=False)
    messages: list[str] = []
    try:
        res = fmpy.simulate_fmu(str(fmu), stop_time=stop, output_interval=0.05,
                                relative_tolerance=1e-10, output=["x", "y", "s"],
                                debug_logging=True,
                                logger=lambda *a: messages.append(a[-1].decode()))
    except Exception as err:         # FMPy raises on the FMU's fmi2Error
        return None, messages, err
    return res, messages, None


def _at(res, name, t):
    rows = np.flatnonzero(np.isclose(res["time"], t))
    return res[name][rows[-1]]


def test_variable_subscripts_in_equations_and_algorithms(tmp_path):
    res, _messages, err = _sim(tmp_path, 0.7)
    assert err is None
    assert _at(res, "x", 0.7) == pytest.approx(1.35, abs=1e-6)
    assert _at(res, "y", 0.7) == pytest.approx(9.0, abs=1e-6)
    assert (_at(res, "s", 0.2), _at(res, "s", 0.3), _at(res, "s", 0.6)) == (1, 3, 6)


@pytest.mark.parametrize("where", ["equation", "algorithm"])
def test_out_of_range_subscript_stops_with_the_range_check(tmp_path, where):
    """At t = 0.75 (i = 4): the range check of ``der(x) = u[i]`` (the model without its
    algorithm) or, first, the one inside the algorithm function (``u[k]``, k = 4)."""
    src = MODEL if where == "algorithm" else MODEL.replace(
        "s := 0;", "").replace("for k in 1:i loop\n    s := s + u[k];\n  end for;", "s := 1;")
    res, messages, err = _sim(tmp_path, 1.0, src)
    assert err is not None or res["time"][-1] < 0.8
    failed = [m for m in messages if "assertion failed" in m]
    assert failed, messages[-5:]
    if where == "equation":
        head, text = failed[0].split(": assertion failed: ")
        assert text == "array index out of range: i for dimension 1 of 'u' (size 3)"
        assert float(head.split("t = ")[1]) == pytest.approx(0.75, abs=1e-7)
    else:
        assert failed[0].endswith("algorithm at VarIdx.mo:15:1: array index out of range: "
                                  "k for dimension 1 of 'u' (size 3)")


def test_boolean_subscript_needs_a_dimension_of_size_two():
    src = MODEL.replace("der(y) = w[b];", "der(y) = u[b];")
    with pytest.raises(InputError) as err:
        parse_modelica(src, "VarIdx.mo")
    assert "VarIdx.mo:14:" in str(err.value) and \
        "a Boolean subscript of 'u' needs a dimension of size 2" in str(err.value)


def test_variable_subscript_as_assignment_target_is_refused():
    src = MODEL.replace("s := s + u[k];", "s := s + u[k];\n    u[k] := 1;")
    with pytest.raises(InputError) as err:
        parse_modelica(src, "VarIdx.mo")
    assert "VarIdx.mo:19:5: array subscript of 'u' must be an Integer parameter" in \
        str(err.value)


def test_real_subscript_is_refused():
    src = MODEL.replace("Real x(start = 0, fixed = true);",
                        "Real x(start = 0, fixed = true);\n  Real r = time;").replace(
        "der(x) = u[i];", "der(x) = u[r];")
    with pytest.raises(InputError) as err:
        parse_modelica(src, "VarIdx.mo")
    assert "VarIdx.mo:14:12: array subscript of 'u' must be an Integer, Boolean or " \
        "enumeration expression (r is Real)" in str(err.value)


def test_range_check_in_an_if_equation_holds_only_where_its_branch_is_taken(tmp_path):
    """``if i <= 3 then z = u[i]; else z = -1;``: the range check of u[i] is moved out of the
    branch as ``assert(if i <= 3 then 1 <= i and i <= 3 else true)`` (an assertion inside a
    branch would be guarded, which the single-mode export refuses), so i = 4 after t = 0.75
    is no failure. Closed form: z = u[i] = i before 0.75, -1 after."""
    src = MODEL.replace("  Real s;\n", "  Real s;\n  Real z;\n").replace(
        "  der(y) = w[b];\n", "  der(y) = w[b];\n  if i <= 3 then\n    z = u[i];\n  else\n"
        "    z = -1;\n  end if;\n").replace("der(x) = u[i];", "der(x) = 1;").replace(
        "s := 0;", "").replace("for k in 1:i loop\n    s := s + u[k];\n  end for;", "s := 1;")
    fmpy = pytest.importorskip("fmpy")
    from mdae_fmu.fmu.export import export
    fmu = export(parse_modelica(src, "VarIdx.mo"), tmp_path / "VarIdx.fmu", progress=False)
    res = fmpy.simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.05, output=["z"])
    assert res["time"][-1] == pytest.approx(1.0)
    assert [_at(res, "z", t) for t in (0.1, 0.3, 0.6, 0.9)] == [1, 2, 3, -1]
