"""Algorithm sections with what OpenModelica's flat output puts in them (issue 13): enumeration
literals, assignments to array elements inside for-loops, whole-array assignments and Boolean
arrays as when-conditions (importers/algorithm_lowering.py). Oracles: the closed forms of each
model under Modelica 3.6 semantics (§11.1 an algorithm runs in order, §11.2.7 ``when`` on a
vector fires when any element becomes true)."""

from __future__ import annotations

import numpy as np
import pytest

from mdae_fmu.diagnostics import InputError
from mdae_fmu.importers.flat_modelica import parse_modelica

ENUM = """model EnumAlg
  type T = enumeration(off, on);
  T t(start = T.off, fixed = true);
algorithm
  when t == T.off and time > 0.4 and time < 0.6 then
    t := T.on;
  elsewhen t == T.on and time > 0.8 then
    t := T.off;
  end when;
end EnumAlg;
"""

ARRAYS = """model ArrAlg
  parameter Integer n = 3;
  Real y[n];
  Real z[2];
  Real s;
  Integer k[3];
algorithm
  for i in 1:n loop
    if i == 2 then
      y[i] := -time;
    else
      y[i] := i * time;
    end if;
  end for;
  z := {time, 2 * time};
  s := 0;
  for i in 1:n loop
    s := s + y[i];
  end for;
equation
  k = {1, 2, 3};
end ArrAlg;
"""

WHEN_VEC = """model WhenVec
  Boolean b[2] = {time > 0.5, time > 0.75};
  Real i;
  Real j;
algorithm
  when b then
    i := time;
  end when;
  when {time > 0.25, time > 0.6} then
    j := time;
  end when;
end WhenVec;
"""


def _sim(src, name, tmp_path, outputs, stop=1.0):
    pytest.importorskip("fmpy")
    from fmpy import simulate_fmu

    from mdae_fmu.fmu.export import export
    model = parse_modelica(src, f"{name}.mo")
    fmu = export(model, tmp_path / f"{name}.fmu", progress=False)
    return simulate_fmu(str(fmu), stop_time=stop, output_interval=0.01, output=outputs)


def _at(res, name, t):
    """The value of ``name`` at the last output row of time ``t`` (after any event)."""
    rows = np.flatnonzero(np.isclose(res["time"], t))
    return res[name][rows[-1]]


def test_enumeration_literals_in_an_algorithm(tmp_path):
    model = parse_modelica(ENUM, "EnumAlg.mo")
    assert [v.name for v in model.variables] == ["t"]
    res = _sim(ENUM, "EnumAlg", tmp_path, ["t"])
    # off (1) until time > 0.4, on (2) until time > 0.8, then off again
    assert _at(res, "t", 0.2) == 1 and _at(res, "t", 0.6) == 2 and _at(res, "t", 0.9) == 1


def test_array_elements_assigned_in_for_loops(tmp_path):
    model = parse_modelica(ARRAYS, "ArrAlg.mo")
    names = {v.name for v in model.variables}
    assert {"y[1]", "y[2]", "y[3]", "z[1]", "z[2]", "s"} <= names
    res = _sim(ARRAYS, "ArrAlg", tmp_path, ["y[1]", "y[2]", "y[3]", "z[1]", "z[2]", "s"])
    t = res["time"]
    np.testing.assert_allclose(res["y[1]"], t, atol=1e-12)
    np.testing.assert_allclose(res["y[2]"], -t, atol=1e-12)
    np.testing.assert_allclose(res["y[3]"], 3 * t, atol=1e-12)
    np.testing.assert_allclose(res["z[2]"], 2 * t, atol=1e-12)
    np.testing.assert_allclose(res["s"], 3 * t, atol=1e-12)     # t - t + 3t


def test_boolean_vector_as_when_condition(tmp_path):
    res = _sim(WHEN_VEC, "WhenVec", tmp_path, ["i", "j"])
    # i: set at 0.5 (b[1] rises) and again at 0.75 (b[2] rises)
    assert _at(res, "i", 0.4) == 0.0
    assert _at(res, "i", 0.6) == pytest.approx(0.5, abs=1e-6)
    assert _at(res, "i", 0.9) == pytest.approx(0.75, abs=1e-6)
    assert _at(res, "j", 0.3) == pytest.approx(0.25, abs=1e-6)
    assert _at(res, "j", 0.9) == pytest.approx(0.6, abs=1e-6)


def test_array_assignment_of_wrong_size_is_refused():
    src = ARRAYS.replace("z := {time, 2 * time};", "z := {time, 2 * time, 3};")
    with pytest.raises(InputError) as err:
        parse_modelica(src, "ArrAlg.mo")
    assert "ArrAlg.mo:15:3" in str(err.value) and "different sizes" in str(err.value)


def test_variable_subscript_in_a_kept_loop_is_refused():
    """A loop with ``break`` is not unrolled: an element subscript by its index is refused
    at the statement, naming the array."""
    src = """model Brk
  Real y[2];
algorithm
  for i in 1:2 loop
    y[i] := time;
    break;
  end for;
end Brk;
"""
    with pytest.raises(InputError) as err:
        parse_modelica(src, "Brk.mo")
    assert "Brk.mo:5:" in str(err.value) and "'y'" in str(err.value)


EVENTS = """model AlgEvents
  Boolean b = time >= 0.5;
  Integer ci(start = 0, fixed = true);
  Integer ce(start = 0, fixed = true);
  Integer cs(start = 0, fixed = true);
algorithm
  if initial() then
    ci := pre(ci) + 1;
  else
    ci := pre(ci);
  end if;
  if edge(b) then
    ce := pre(ce) + 1;
  else
    ce := pre(ce);
  end if;
  if sample(0, 0.25) then
    cs := pre(cs) + 1;
  else
    cs := pre(cs);
  end if;
end AlgEvents;
"""


def test_initial_edge_and_sample_inside_algorithm_statements(tmp_path):
    """Counters of the instants where each operator is true: initial() once (at the
    initialization), edge(b) once (b rises at 0.5), sample(0, 0.25) at 0, 0.25, 0.5, 0.75."""
    res = _sim(EVENTS, "AlgEvents", tmp_path, ["ci", "ce", "cs"])
    assert set(res["ci"]) == {1}
    assert _at(res, "ce", 0.4) == 0 and _at(res, "ce", 0.6) == 1 and _at(res, "ce", 1.0) == 1
    assert _at(res, "cs", 0.1) == 1 and _at(res, "cs", 0.3) == 2
    assert _at(res, "cs", 0.9) == 4


WHEN_FOR = """model WhenFor
  discrete Real d[3];
  Integer n = 2;
  Real p;
algorithm
  when sample(0, 0.1) then
    for i in 1:n loop
      d[i] := d[i] + i;
    end for;
    p := pre(d[1]);
  end when;
  d[3] := d[1] + d[2];
end WhenFor;
"""


def test_for_loop_inside_a_when_statement(tmp_path):
    """``for i in 1:n`` inside a when-statement, ``n`` an Integer bound to a constant (its
    binding holds at every instant): unrolled, so ``d[i] := d[i] + i`` assigns d[1], d[2]
    from their pre values (Modelica 3.6 §11.1.2). Closed form: k = floor(t / 0.1) + 1
    samples by time t (the first at t = 0), d[i] = i * k, d[3] = 3 * k after the when;
    p = pre(d[1]) = k - 1 (a ``pre`` is not replaced by the value assigned before it)."""
    res = _sim(WHEN_FOR, "WhenFor", tmp_path, ["d[1]", "d[2]", "d[3]", "p"])
    for t in (0.05, 0.25, 0.55, 0.95):
        k = int(t / 0.1) + 1
        assert (_at(res, "d[1]", t), _at(res, "d[2]", t), _at(res, "d[3]", t)) == \
            (k, 2 * k, 3 * k), t
        assert _at(res, "p", t) == k - 1, t


def test_for_loop_over_a_variable_range_inside_a_when_is_refused():
    """``n`` computed from ``time`` is no constant: the loop stays a loop, refused at it."""
    src = WHEN_FOR.replace("Integer n = 2;", "Integer n = integer(time);")
    with pytest.raises(InputError) as err:
        parse_modelica(src, "WhenFor.mo")
    assert "WhenFor.mo:8:7: array subscript of 'd' must be an Integer parameter" in \
        str(err.value), err.value


WHEN_IF_INDEX = """model WhenIfIndex
  Integer k(start = 0, fixed = true);
  Real u[3] = {10, 20, 30};
  discrete Real v(start = 0, fixed = true);
algorithm
  when sample(0, 0.25) then
    if k < 3 then
      k := k + 1;
      v := u[k];
    end if;
  end when;
end WhenIfIndex;
"""


def test_range_check_inside_an_if_inside_a_when_is_checked_where_the_branch_runs(tmp_path):
    """``v := u[k]`` in the branch ``if k < 3``: its range check (k = pre(k) + 1 <= 3) is an
    assertion of the when-statement guarded by the branch condition (at t = 0.75 the branch
    is not taken and k + 1 = 4 must not be checked). Closed form: k counts the samples at
    0, 0.25, 0.5 up to 3, v = 10 k."""
    res = _sim(WHEN_IF_INDEX, "WhenIfIndex", tmp_path, ["k", "v"])
    assert res["time"][-1] == pytest.approx(1.0)
    for t, k in ((0.1, 1), (0.3, 2), (0.6, 3), (0.9, 3)):
        assert (_at(res, "k", t), _at(res, "v", t)) == (k, 10 * k), t
