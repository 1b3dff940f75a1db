"""Functions with array inputs and outputs called from equations and algorithms (issue 13:
importers/array_functions.py specializes a scalar function per call sizes). Oracles: the
closed forms of each function on ``time`` (y_i = i t, 2x, the cross product, sums)."""

from __future__ import annotations

import numpy as np
import pytest

from mdae_fmu.diagnostics import InputError
from mdae_fmu.importers.flat_modelica import parse_modelica

SRC = """function powers
  input Real x;
  input Integer n;
  output Real y[n];
  output Integer m;
algorithm
  for i in 1:n loop
    y[i] := x ^ i;
  end for;
  m := n;
end powers;

function twice
  input Real x[:];
  output Real y[size(x, 1)];
algorithm
  y := x * 2;
end twice;

function crossed
  input Real a[3];
  input Real b[3];
  output Real z[3];
algorithm
  z := cross(a, b);
end crossed;

function total
  input Real x[:];
  output Real s;
algorithm
  s := sum(x);
end total;

model ArrFun
  parameter Integer N = 3;
  Real a[2];
  Real c[3];
  Real q;
  Real p[N];
  Integer m;
  Real p2[N];
  Integer m2;
equation
  a = twice({time, 1.0});
  (p2, m2) = powers(2 * time, N);
  c = crossed({1, 0, 0}, {0, time, 1});
  q = total({time, 2 * time, 3});
algorithm
  (p, m) := powers(time, N);
end ArrFun;
"""


def test_array_functions_specialized_per_call(tmp_path):
    model = parse_modelica(SRC, "ArrFun.mo")
    names = {f.name for f in model.functions}
    assert {"twice$a1", "powers$a2", "crossed$a3"} <= names, names   # total$a4: inlined
    twice = next(f for f in model.functions if f.name == "twice$a1")
    assert [p.name for p in twice.inputs] == ["x[1]", "x[2]"]
    assert [p.name for p in twice.outputs] == ["y[1]", "y[2]"]
    pytest.importorskip("fmpy")
    from fmpy import simulate_fmu

    from mdae_fmu.fmu.export import export
    fmu = export(model, tmp_path / "ArrFun.fmu", progress=False)
    out = ["a[1]", "a[2]", "c[1]", "c[2]", "c[3]", "q", "p[1]", "p[2]", "p[3]", "m",
           "p2[1]", "p2[2]", "p2[3]", "m2"]
    res = simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.1, output=out)
    t = res["time"]
    np.testing.assert_allclose(res["a[1]"], 2 * t, atol=1e-12)
    np.testing.assert_allclose(res["a[2]"], 2.0)
    # {1,0,0} x {0,t,1} = {0*1 - 0*t, 0*0 - 1*1, 1*t - 0*0}
    np.testing.assert_allclose(res["c[1]"], 0.0, atol=1e-12)
    np.testing.assert_allclose(res["c[2]"], -1.0)
    np.testing.assert_allclose(res["c[3]"], t, atol=1e-12)
    np.testing.assert_allclose(res["q"], 3 * t + 3, atol=1e-12)
    for i in (1, 2, 3):
        np.testing.assert_allclose(res[f"p[{i}]"], t ** i, atol=1e-12)
    assert set(res["m"]) == {3} and set(res["m2"]) == {3}
    for i in (1, 2, 3):                 # the same function called from an equation
        np.testing.assert_allclose(res[f"p2[{i}]"], (2 * t) ** i, atol=1e-12)


def test_size_not_known_at_the_call_is_refused_there():
    src = SRC.replace("(p, m) := powers(time, N);", "(p, m) := powers(time, m);")
    with pytest.raises(InputError) as err:
        parse_modelica(src, "ArrFun.mo")
    msg = str(err.value)
    assert "ArrFun.mo:50:3" in msg and "size of 'y' in function 'powers'" in msg


def test_argument_of_the_wrong_size_is_refused():
    src = SRC.replace("crossed({1, 0, 0}, {0, time, 1})", "crossed({1, 0}, {0, time, 1})")
    with pytest.raises(InputError) as err:
        parse_modelica(src, "ArrFun.mo")
    msg = str(err.value)
    assert "ArrFun.mo:47:3" in msg and "argument 1 of 'crossed' has size [2]" in msg


PICK = """function pick
  input Real t[:];
  input Real u;
  output Real y;
protected
  Integer j = 1;
algorithm
  while j < size(t, 1) and t[j] < u loop
    j := j + 1;
  end while;
  y := t[j];
end pick;
model Tbl
  Real y = pick({1, 2, 3}, 3 * time);
end Tbl;
"""


def _run_pick(src, tmp_path):
    pytest.importorskip("fmpy")
    from fmpy import simulate_fmu

    from mdae_fmu.fmu.export import export
    fmu = export(parse_modelica(src, "Tbl.mo"), tmp_path / "Tbl.fmu", progress=False)
    messages: list[str] = []
    try:
        res = simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.05, output=["y"],
                           debug_logging=True,
                           logger=lambda *a: messages.append(a[-1].decode()))
    except Exception as err:        # FMPy raises on the FMU's fmi2Error
        return None, messages, err
    return res, messages, None


def test_subscript_found_at_run_time_in_a_function(tmp_path):
    """``t[j]`` with ``j`` counted by a while-loop (the table look-ups of
    Modelica.Blocks.Sources.BooleanTable): the if-chain over t's elements, the range check
    before each test of the while-condition. Closed form: y = the first t[j] >= 3 time
    (the last one when there is none), min(3, max(1, ceil(3 t)))."""
    res, _messages, err = _run_pick(PICK, tmp_path)
    assert err is None
    t = res["time"]
    off = np.abs(3 * t - np.round(3 * t)) > 1e-6         # away from the steps
    want = np.clip(np.ceil(3 * t - 1e-12), 1, 3)
    np.testing.assert_array_equal(res["y"][off], want[off])


def test_subscript_out_of_range_in_a_function_is_an_error_of_the_fmu(tmp_path):
    """``t[j + 1]`` with j = 3 (once 3 time > 2): the range check fails, the FMU returns
    fmi2Error with the message naming the index and the array (not a crash)."""
    res, messages, err = _run_pick(PICK.replace("y := t[j];", "y := t[j + 1];"), tmp_path)
    assert err is not None or res["time"][-1] < 1.0
    failed = [m for m in messages if "assertion failed" in m]
    assert failed and failed[0].endswith(
        "array index out of range: j + 1 for dimension 1 of 't' (size 3)"), messages[-3:]


SEEDED = """function step
  input Integer seedIn[3];
  output Real x;
  output Integer seedOut[3];
algorithm
  seedOut[1] := rem(171*seedIn[1], 30269);
  seedOut[2] := rem(172*seedIn[2], 30307);
  seedOut[3] := rem(170*seedIn[3], 30323);
  x := rem(seedOut[1]/30269.0 + seedOut[2]/30307.0 + seedOut[3]/30323.0, 1.0);
end step;

function second
  input Integer seedIn[3];
  output Real y;
protected
  Integer seed[3];
  Real x;
algorithm
  seed := seedIn;
  for i in 1:2 loop
    (x, seed) := step(seed);
    y := x;
  end for;
end second;

function third
  input Integer seedIn[3];
  output Real y;
protected
  Integer seed[3];
algorithm
  (y, seed) := step(seedIn);
  (y, seed) := step(seed);
  (y, seed) := step(seed);
end third;

model Seeded
  constant Integer s[3] = {12, 1627, 7218};
  Real y2 = second(s);
  Real y3 = third(s);
  Real z = step(s);
end Seeded;
"""


def test_function_with_arrays_called_from_two_others(tmp_path):
    """A function with array arguments called from the bodies of two other such functions
    (the random-number generator of OpenModelica's linear_system tests): one specialization
    per call sizes for the whole file, not one per caller (was "duplicate definition of
    function 'step$a1'"), and the original, unscalarized body is never called (was "cannot
    assign 'seedOut[1]'"). Oracle: the generator iterated in Python."""
    import math
    from fmpy import simulate_fmu
    from mdae_fmu import api

    def step(s):
        out = [(171 * s[0]) % 30269, (172 * s[1]) % 30307, (170 * s[2]) % 30323]
        return math.fmod(out[0] / 30269 + out[1] / 30307 + out[2] / 30323, 1.0), out

    s, want = [12, 1627, 7218], []
    for _ in range(3):
        x, s = step(s)
        want.append(x)
    fmu = api.export_fmu(parse_modelica(SEEDED), tmp_path / "Seeded.fmu")
    res = simulate_fmu(str(fmu), stop_time=1.0, output=["y2", "y3", "z"])
    assert res["z"][-1] == pytest.approx(want[0], rel=1e-14)
    assert res["y2"][-1] == pytest.approx(want[1], rel=1e-14)
    assert res["y3"][-1] == pytest.approx(want[2], rel=1e-14)
