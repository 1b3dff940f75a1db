"""User functions and algorithm sections (issue 13 items 1 and 5): import, Python evaluation,
forward-mode derivatives, C functions in the FMU, index reduction through a call, refusals.
Oracles: closed forms and scipy at tight tolerance."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from fmpy import simulate_fmu
from fmpy.fmi1 import FMICallException
from scipy.integrate import solve_ivp

from mdae_fmu import expr as E
from mdae_fmu.diagnostics import InputError
from mdae_fmu.fmu.export import export
from mdae_fmu.functions import FunctionError, function_table, tangent
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.work_budget import BudgetExceeded

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FUNCS = """
function Modelica.Math.sin
  input Real u;
  output Real y;
external "C" y = sin(u);
end Modelica.Math.sin;

function Modelica.Math.Special.erf "MSL body elided: the C library's erf is used"
  input Real u;
  output Real y;
algorithm
  y := u;
end Modelica.Math.Special.erf;

function poly "not inlined: stays a C function"
  input Real x;
  input Real a = 2.0;
  output Real y;
protected
  Real t;
algorithm
  t := x * x;
  y := a * t - x + 1;
  annotation(Inline = false);
end poly;

function series "partial sum of exp(x)"
  input Real x;
  input Integer n;
  output Real s;
protected
  Real term;
algorithm
  s := 0;
  term := 1;
  for k in 1:n loop
    s := s + term;
    term := term * x / k;
  end for;
end series;

function two
  input Real x;
  output Real a;
  output Real b;
algorithm
  a := 2 * x;
  b := x * x;
  assert(x < 100, "x too large");
end two;

function useTwo "calls other functions, one of them with several outputs"
  input Real x;
  output Real y;
protected
  Real p, q;
algorithm
  (p, q) := two(x);
  y := p + q + series(x, 3);
end useTwo;

function firstAbove "while, break and return"
  input Real limit;
  output Integer n;
protected
  Real s;
algorithm
  n := 0;
  s := 0;
  while true loop
    n := n + 1;
    s := s + n;
    if s > limit then
      return;
    end if;
  end while;
end firstAbove;
"""

MODEL = FUNCS + """
class M
  Real x(start = 0.5, fixed = true);
  Real z(start = 0, fixed = true);
  Real a, b;
  Real w;
  Real ef, u;
equation
  u = useTwo(x);
  der(x) = -poly(x) + Modelica.Math.sin(time);
  ef = Modelica.Math.Special.erf(x);
  der(z) = series(-1.0, 10) * z + 1;
  (a, b) = two(x);
algorithm
  w := a + b + firstAbove(10);
  if w > 6 then
    w := 6;
  end if;
end M;
"""


def _line(fragment, last=False):
    lines = [i for i, t in enumerate(MODEL.split("\n"), 1) if t.strip() == fragment or
             fragment in t and fragment.startswith("(")]
    return lines[-1] if last else lines[0]


def _model(text=MODEL, name="M.mo"):
    return parse_modelica(text, name)


def test_import_calls_aliases_defaults_and_tuple_outputs():
    m = _model()
    algorithm = f"algorithm at M.mo:{_line('algorithm', last=True)}:1"
    assert [f.name for f in m.functions] == ["poly", "series", "two", "useTwo", "firstAbove",
                                               algorithm]
    res = {e.id: e.residual for e in m.equations}
    # Modelica.Math.sin declared external "C" is the built-in; poly's default a = 2 filled in
    calls = {n for e in m.equations for n in E.walk(e.residual) if isinstance(n, E.Call)}
    assert E.Call("sin", (E.TIME,)) in calls
    assert E.Call("erf", (E.Ref("x"),)) in calls
    assert E.Call("poly", (E.Ref("x"), E.Const(2.0))) in calls
    # (a, b) = two(x): one equation per output, at the same line
    assert res["e5"] == E.BinOp("-", E.Ref("a"), E.Call("two", (E.Ref("x"),)))
    assert res["e6"] == E.BinOp("-", E.Ref("b"), E.Call("two#2", (E.Ref("x"),)))
    assert m.equations[4].loc.line == m.equations[5].loc.line == _line("(a, b) = two(x)")
    # the algorithm: one equation for w, over every value the block reads
    alg = m.equations[6].residual
    assert alg.left == E.Ref("w") and set(alg.right.args) == {E.Ref("a"), E.Ref("b")}


def test_python_evaluator_against_closed_forms():
    t = function_table(_model().functions)
    assert t.evaluate("poly", [3.0, 2.0]) == (2 * 9 - 3 + 1,)
    assert t.evaluate("series", [-1.0, 10])[0] == pytest.approx(
        sum((-1) ** k / math.factorial(k) for k in range(10)), abs=1e-15)
    assert t.evaluate("two", [3.0]) == (6.0, 9.0)
    assert t.evaluate("firstAbove", [10.0]) == (5,)     # 1+2+3+4+5 = 15 > 10
    assert t.evaluate("useTwo", [2.0]) == (4 + 4 + 1 + 2 + 2,)
    with pytest.raises(FunctionError, match="x too large"):
        t.evaluate("two", [200.0])


def test_straight_line_function_is_inlined():
    m = _model("""
function sq
  input Real u;
  output Real y;
protected
  Real t;
algorithm
  t := u + 1;
  y := t * t;
end sq;
class I
  Real x(start = 1, fixed = true);
equation
  der(x) = -sq(x);
end I;""")
    assert m.functions == ()
    one = E.BinOp("+", E.Ref("x"), E.Const(1))
    assert m.equations[0].residual == E.BinOp("-", E.Der(E.Ref("x")),
                                              E.UnOp("-", E.BinOp("*", one, one)))


def test_forward_mode_derivative_matches_finite_differences():
    t = function_table(_model().functions)
    dfn, with_t = t.derivative("series")
    assert with_t == {"x"}
    for x in (-1.3, 0.2, 2.0):
        d = t.evaluate(dfn.name, [x, 12, 1.0])[0]
        # d/dx sum_{k<12} x^k/k! = sum_{k<11} x^k/k!
        assert d == pytest.approx(t.evaluate("series", [x, 11])[0], rel=1e-13)
    dpoly, _ = t.derivative("poly")
    assert t.evaluate(dpoly.name, [3.0, 2.0, 1.0, 0.0]) == (pytest.approx(2 * 2 * 3 - 1),)
    assert t.evaluate(dpoly.name, [3.0, 2.0, 0.0, 1.0]) == (pytest.approx(9.0),)
    # tangent of an expression calling a user function: the chain rule through der(f)
    e = tangent(E.Call("two#2", (E.BinOp("*", E.Ref("u"), E.Ref("u")),)), {"u": "du"}, t)
    dtwo, _ = t.derivative("two")
    assert e.func == dtwo.name + "#2"


def test_fmu_simulation_against_scipy(tmp_path):
    m = _model()
    fmu = export(m, tmp_path / "M.fmu", progress=False)
    r = simulate_fmu(str(fmu), stop_time=2.0, output=["x", "z", "a", "b", "w", "ef", "u"],
                     output_interval=0.1, relative_tolerance=1e-9)
    S = sum((-1) ** k / math.factorial(k) for k in range(10))
    sol = solve_ivp(lambda t, y: [-(2 * y[0] ** 2 - y[0] + 1) + math.sin(t)], (0, 2), [0.5],
                    rtol=1e-12, atol=1e-12, t_eval=r["time"])
    assert np.max(np.abs(r["x"] - sol.y[0])) < 1e-6
    assert np.max(np.abs(r["z"] - (np.exp(S * r["time"]) - 1) / S)) < 1e-6
    assert np.allclose(r["a"], 2 * r["x"]) and np.allclose(r["b"], r["x"] ** 2)
    assert np.allclose(r["w"], np.minimum(2 * r["x"] + r["x"] ** 2 + 5, 6))
    assert np.allclose(r["ef"], [math.erf(v) for v in r["x"]], rtol=1e-14, atol=0)
    x = r["x"]
    assert np.allclose(r["u"], 2 * x + x ** 2 + 1 + x + x ** 2 / 2, rtol=1e-14, atol=0)


PENDULUM = """
function constraint "x^2 + y^2 - L^2, with its derivative given"
  input Real x;
  input Real y;
  input Real L;
  output Real c;
algorithm
  c := x * x + y * y - L * L;
  annotation(derivative(zeroDerivative = L) = constraintDer, Inline = false);
end constraint;

function constraintDer
  input Real x;
  input Real y;
  input Real L;
  input Real dx;
  input Real dy;
  output Real dc;
algorithm
  dc := 2 * x * dx + 2 * y * dy;
end constraintDer;

class P
  parameter Real L = 1;
  parameter Real g = 9.81;
  Real x(start = 1, fixed = true);
  Real y(start = 0);
  Real vx(start = 0, fixed = true);
  Real vy;
  Real lam;
equation
  der(x) = vx;
  der(y) = vy;
  der(vx) = -lam * x;
  der(vy) = -lam * y - g;
  0 = constraint(x, y, L);
end P;
"""


def test_pendulum_constraint_through_a_function_with_derivative_annotation(tmp_path):
    m = parse_modelica(PENDULUM, "P.mo")
    fmu = export(m, tmp_path / "P.fmu", progress=False)
    r = simulate_fmu(str(fmu), stop_time=2.0, output=["x", "y", "vx", "vy"],
                     output_interval=0.05, relative_tolerance=1e-8)
    drift = np.max(np.abs(r["x"] ** 2 + r["y"] ** 2 - 1))
    assert drift < 1e-6
    # energy conservation: v^2/2 + g y constant (= 0 from the start)
    energy = 0.5 * (r["vx"] ** 2 + r["vy"] ** 2) + 9.81 * r["y"]
    assert np.max(np.abs(energy)) < 1e-4
    # against the pendulum angle ODE theta'' = -g sin(theta), theta(0) = pi/2 (x = sin theta)
    sol = solve_ivp(lambda t, s: [s[1], -9.81 * math.sin(s[0])], (0, 2), [math.pi / 2, 0],
                    rtol=1e-12, atol=1e-12, dense_output=True)
    assert np.max(np.abs(r["x"] - np.sin(sol.sol(r["time"])[0]))) < 1e-4


def test_assert_in_a_function_is_an_fmi_error_with_its_message(tmp_path):
    text = FUNCS + r"""
function 'evil */ int bad; /* \\'
  input Real x;
  output Real y;
algorithm
  y := x;
  assert(x < 95, "quote \" close */ backslash \\ trigraph ??= end");
end 'evil */ int bad; /* \\';
class A
  Real x(start = 90, fixed = true);
  Real a, b, c;
equation
  der(x) = 10;
  (a, b) = two(x);
  c = 'evil */ int bad; /* \\'(x);
end A;"""
    fmu = export(parse_modelica(text, "A.mo"), tmp_path / "A.fmu", progress=False)
    messages = []

    def logger(*args):
        messages.append(args[-1].decode() if isinstance(args[-1], bytes) else str(args[-1]))
    with pytest.raises(FMICallException):
        simulate_fmu(str(fmu), stop_time=2.0, output=["x", "a"], logger=logger, solver="Euler",
                     step_size=0.01,
                     debug_logging=True)
    # the first failure (x = 95 at t = 0.5): the quoted name and the message reach C only
    # inside a comment and a string literal, and come back verbatim
    assert any('assertion failed in function evil */ int bad; /* \\: quote " close */ '
               'backslash \\ trigraph ??= end' in m for m in messages), messages


def _error(text):
    with pytest.raises(InputError) as err:
        parse_modelica(text, "E.mo")
    return str(err.value)


def test_recursion_is_refused():
    msg = _error("""
function fact
  input Integer n;
  output Integer f;
algorithm
  f := if n <= 1 then 1 else n * fact(n - 1);
end fact;
class R
  Real x;
equation
  x = fact(3);
end R;""")
    assert msg.startswith("E.mo:2:10: recursive function 'fact' (call cycle fact -> fact)")


def test_user_external_function_is_refused_with_its_name():
    msg = _error("""
function myLib
  input Real u;
  output Real y;
external "C" y = my_c_function(u);
end myLib;
class X
  Real x;
equation
  x = myLib(time);
end X;""")
    assert msg.startswith("E.mo:10:7: external function 'myLib' calls the C function "
                          "'my_c_function' of a library the FMU cannot link")


def test_call_errors():
    assert "unknown function 'nope'" in _error("class U Real x; equation x = nope(1); end U;")
    assert "'two' expects 1 argument, got 2" in _error(
        FUNCS + "class U Real x, y; equation (x, y) = two(1, 2); end U;")
    assert "'two' has 2 outputs, 3 are assigned" in _error(
        FUNCS + "class U Real x, y, z; equation (x, y, z) = two(1); end U;")


def test_when_statement_in_an_algorithm_is_a_when_clause():
    m = parse_modelica("""
class W
  Real x(start = 0, fixed = true);
  discrete Real n(start = 0, fixed = true);
  discrete Real m(start = 0, fixed = true);
equation
  der(x) = 1;
algorithm
  when x > 0.5 then
    n := pre(n) + 1;
    m := n * 10;
  end when;
end W;""", "W.mo")
    (w,) = m.whens
    (br,) = w.branches
    one = E.BinOp("+", E.Call("pre", (E.Ref("n"),)), E.Const(1))
    assert [(a.var, a.value) for a in br.actions] == [
        ("n", one), ("m", E.BinOp("*", one, E.Const(10)))]


BASE = """//! base 0.1.0
package 'B'
  function 'sq'
    input Real 'u';
    output Real 'y';
  algorithm
    'y' := 'u' * 'u' + 1;
    annotation(Inline = false);
  end 'sq';
  model 'B'
    Real 'x'(start = 1, fixed = true);
  equation
    der('x') = -'sq'('x') + 1;
  end 'B';
end 'B';
"""


@pytest.mark.parametrize("text", [MODEL, PENDULUM, BASE], ids=["flat", "pendulum", "base"])
def test_driver_parses_functions_as_lark(text):
    from test_lalr_driver import _outcome_driver, _outcome_lark
    for t in (text, text.replace("class M", "function g input Real u; output Real y; "
                                            "algorithm y := u; end g;\nclass M")):
        assert _outcome_driver(t)[0] == "ok"
        assert _outcome_driver(t) == _outcome_lark(t)


def test_base_modelica_package_function():
    m = parse_modelica(BASE, "B.bmo")
    assert [f.name for f in m.functions] == ["sq"]
    assert m.equations[0].residual.right.left.arg == E.Call("sq", (E.Ref("x"),))


INIT = FUNCS + """
class C
  parameter Real k = series(1.0, 20);
  Real x;
  Real w;
  discrete Real n(start = 0, fixed = true);
  discrete Real m(start = 0, fixed = true);
initial algorithm
  x := k * Modelica.Constants.pi;
equation
  der(x) = -x;
algorithm
  w := 0;
  for i in 1:3 loop
    w := w + i * x;
  end for;
algorithm
  when x < 4 then
    n := pre(n) + 1;
    m := n * 10;
  end when;
end C;
"""


def test_initial_algorithm_constants_and_a_parameter_bound_by_a_function(tmp_path):
    m = parse_modelica(INIT, "C.mo")
    assert len(m.initial_equations) == 1 and len(m.equations) == 2 and len(m.whens) == 1
    fmu = export(m, tmp_path / "C.fmu", progress=False)
    r = simulate_fmu(str(fmu), stop_time=1.0, output=["x", "w", "k", "n", "m"],
                     output_interval=0.1, relative_tolerance=1e-10)
    x0 = sum(1 / math.factorial(j) for j in range(20)) * math.pi
    assert r["k"][0] == pytest.approx(x0 / math.pi, rel=1e-15)
    assert np.max(np.abs(r["x"] - x0 * np.exp(-r["time"]))) < 1e-7
    assert np.allclose(r["w"], 6 * r["x"], rtol=1e-12)
    # the when-statement fires once, when x crosses 4 (t = ln(x0 / 4)); m sees the new n
    te = math.log(x0 / 4)
    away = np.abs(r["time"] - te) > 1e-6          # (the event's own rows: before and after)
    assert list(r["n"][away]) == [1.0 if t > te else 0.0 for t in r["time"][away]]
    assert list(r["m"][away]) == [10.0 if t > te else 0.0 for t in r["time"][away]]
    assert np.sum(~away) == 2 and list(r["n"][~away]) == [0.0, 1.0]


def test_boolean_and_integer_arguments_in_c(tmp_path):
    text = """
function sat
  input Real x;
  input Boolean on;
  input Integer n = 2;
  output Real y;
  output Boolean neg;
algorithm
  y := if on then x * n else 0;
  neg := x < 0;
  annotation(Inline = false);
end sat;
function cube "a loop: stays a call; solved for its argument by Newton"
  input Real u;
  output Real c = 1;
algorithm
  for i in 1:3 loop
    c := c * u;
  end for;
end cube;
class S
  Real x(start = 1, fixed = true);
  Real y, y2;
  Real yc(start = 1.5);
  Boolean on = time < 0.5;
  Boolean neg;
equation
  der(x) = -1;
  (y, neg) = sat(x, on);
  y2 = sat(x, true, 3);
  0 = cube(yc) - x - 2;
end S;"""
    fmu = export(parse_modelica(text, "S.mo"), tmp_path / "S.fmu", progress=False)
    r = simulate_fmu(str(fmu), stop_time=2.0, output=["x", "y", "y2", "neg", "yc"],
                     output_interval=0.05)
    t = r["time"]
    assert np.allclose(r["x"], 1 - t, atol=1e-9)
    late = t > 0.5 + 1e-9
    assert np.allclose(r["y"][late], 0) and np.allclose(r["y"][t < 0.5], 2 * r["x"][t < 0.5])
    assert np.allclose(r["y2"], 3 * r["x"])
    assert np.allclose(r["yc"], np.cbrt(3 - t), rtol=1e-9, atol=0)
    assert list(r["neg"][t > 1.01]) == [True] * int(np.sum(t > 1.01))
    assert not any(r["neg"][t < 0.99])


def test_unused_functions_are_not_checked_used_ones_are():
    unused = """
function Modelica.Math.Vectors.norm "array input: outside the subset, but never called"
  input Real v[:];
  input Real p = 2;
  output Real result;
algorithm
  result := (abs(v[1]) ^ p + abs(v[2]) ^ p) ^ (1 / p);
end Modelica.Math.Vectors.norm;
function ext
  input Real u;
  output Real y;
external "C" y = my_c_function(u);
end ext;
function rec
  input Real u;
  output Real y;
algorithm
  y := rec(u);
end rec;
"""
    m = parse_modelica(unused + "class K Real x; equation x = time; end K;", "K.mo")
    assert m.functions == ()
    msg = _error(unused + "class K Real x; equation x = Modelica.Math.Vectors.norm(time); "
                          "end K;")
    # array inputs are specialized per call (importers/array_functions.py): a scalar given
    # for the vector input is refused at the call
    assert msg.startswith("E.mo:20:26: argument 1 of 'Modelica.Math.Vectors.norm' has 0 "
                          "dimensions, its input 'v' is declared with 1"), msg


def test_impulsive_restart_through_a_function_is_computed_numerically(tmp_path):
    """The clutch of RR-9334 Fig. 2 with its damping and its engagement constraint written
    through a function with a loop (not inlined): sympy cannot invert the call, so the restart
    at engagement is the delta-scheme's, which evaluates the function; against the closed
    form (momentum conservation at t1, exponential decays between the events)."""
    base = (Path(__file__).resolve().parents[2] / "reference_models" / "ClutchBasic.mo").read_text()
    text = base.replace("class ClutchBasic", """function damp
  input Real k;
  input Real w;
  output Real f;
algorithm
  f := 0;
  for i in 1:2 loop
    f := f - k * w / 2;
  end for;
end damp;
class ClutchBasic""", 1)
    text = text.replace("j1 * der(w1) = (-k1) * w1 + f1;", "j1 * der(w1) = damp(k1, w1) + f1;")
    text = text.replace("0.0 = if g then w1 - w2 else f1;",
                        "0.0 = if g then damp(1, w1) - damp(1, w2) else f1;")
    m = parse_modelica(text, "ClutchF.mo")
    assert [f.name for f in m.functions] == ["damp"]
    fmu = export(m, tmp_path / "C.fmu", progress=False)
    r = simulate_fmu(str(fmu), stop_time=10.0, output=["w1", "w2"], output_interval=0.5)
    w1, w2 = 1.0 * math.exp(-0.01 * 5), 1.5 * math.exp(-0.0125 / 2 * 5)
    w = (1.0 * w1 + 2.0 * w2) / 3.0 * math.exp(-(0.01 + 0.0125) / 3.0 * 2)
    assert r["w1"][-1] == pytest.approx(w * math.exp(-0.01 * 3), abs=1e-5)
    assert r["w2"][-1] == pytest.approx(w * math.exp(-0.0125 / 2 * 3), abs=1e-5)


def test_pendulum_constraint_through_a_function_differentiated_forward_mode(tmp_path):
    """The same index-3 pendulum without a derivative annotation: the constraint function (a
    loop, so not inlined) is differentiated twice by the generated forward-mode derivative
    functions, which are compiled into the FMU."""
    text = PENDULUM.replace("""  c := x * x + y * y - L * L;
  annotation(derivative(zeroDerivative = L) = constraintDer, Inline = false);""", """  c := -L * L;
  for i in 1:2 loop
    c := c + (if i == 1 then x * x else y * y);
  end for;""")
    m = parse_modelica(text, "P2.mo")
    assert [f.name for f in m.functions] == ["constraint"]
    fmu = export(m, tmp_path / "P2.fmu", progress=False)
    r = simulate_fmu(str(fmu), stop_time=2.0, output=["x", "y", "vx", "vy"],
                     output_interval=0.05, relative_tolerance=1e-8)
    assert np.max(np.abs(r["x"] ** 2 + r["y"] ** 2 - 1)) < 1e-6
    sol = solve_ivp(lambda t, s: [s[1], -9.81 * math.sin(s[0])], (0, 2), [math.pi / 2, 0],
                    rtol=1e-12, atol=1e-12, dense_output=True)
    assert np.max(np.abs(r["x"] - np.sin(sol.sol(r["time"])[0]))) < 1e-4


def test_loops_are_bounded_in_python():
    m = _model(FUNCS + """
function spin
  input Real x;
  output Real y;
algorithm
  y := 0;
  for i in 1:1e12 loop
    y := y + x;
  end for;
end spin;
class L
  Real x;
equation
  x = spin(time);
end L;""")
    t = function_table(m.functions)
    # a range beyond the work budget of a call (mdae_fmu.work_budget) does not start
    with pytest.raises(BudgetExceeded, match=r"the call of function spin from the model "
                       r"would run a for-loop of 1000000000000 iterations \(in spin at .*\), "
                       "more than its work budget of 100000000 statements and loop "
                       "iterations"):
        t.evaluate("spin", [1.0])


def test_json_round_trip_keeps_the_functions():
    import json
    from mdae_fmu.ir import Model
    m = _model()
    back = Model.from_json(json.loads(m.dumps()))
    assert back == m and back.functions == m.functions
    t = function_table(back.functions)
    assert t.evaluate("useTwo", [2.0]) == (13.0,)


@pytest.mark.parametrize("text, message", [
    ("function f input Real x; output Real y; algorithm y := z; end f; "
     "class U Real x; equation x = f(1); end U;", "1:56: undefined name 'z' in function 'f'"),
    ("function f input Real x; output Real y; algorithm x := 1; y := x; end f; "
     "class U Real x; equation x = f(1); end U;",
     "1:51: cannot assign the input 'x' of function 'f'"),
    ("function f input Real x; output Real y; algorithm y := x; break; end f; "
     "class U Real x; equation x = f(1); end U;", "1:59: break outside a loop"),
    ("function f input Real x; output Real y; algorithm y := der(x); end f; "
     "class U Real x; equation x = f(1); end U;", "1:10: 'der' is not allowed in function 'f'"),
    ("function f input Real x; output Real y; algorithm y := x; end f; "
     "class U Real x; equation x = f(u = 1); end U;",
     "1:97: named arguments are not supported in 'f(...)'"),
    ("function f input Real x; output Real y; algorithm y := x; end g; "
     "class U Real x; equation x = f(1); end U;", "1:63: 'end g;' does not match 'function f'"),
    ("class U parameter Real p = 1; Real x; equation x = p; algorithm p := 2; end U;",
     "1:55: cannot assign 'p' in an algorithm: it is a parameter"),
    ("class U Real x; discrete Real n; equation der(x) = 1; algorithm n := 1; "
     "when x > 1 then n := 2; end when; end U;",
     "1:55: 'n' is assigned both inside and outside a when-statement of this algorithm"),
    ("class U Real x; algorithm x := 1; external \"C\"; end U;",
     "1:35: an external clause is only allowed in a function"),
])
def test_function_and_algorithm_errors(text, message):
    msg = _error(text)
    assert msg.startswith("E.mo:" + message), msg


def test_printed_model_with_functions_reads_back_equal():
    from mdae_fmu.modelica_printer import print_model
    for text, name in ((MODEL, "M.mo"), (PENDULUM, "P.mo"), (INIT, "C.mo")):
        m = parse_modelica(text, name)
        printed = print_model(m)
        back = parse_modelica(printed, name)
        assert back == m, printed
        assert print_model(back) == printed


def test_xml_writer_refuses_a_model_with_functions(tmp_path, capsys):
    from mdae_fmu.importers.xml_writer import main
    src = tmp_path / "M.mo"
    src.write_text(MODEL)
    assert main([str(src), str(tmp_path / "M.xml")]) == 2
    assert "calls user functions (poly, series, two, useTwo, firstAbove, algorithm at " \
           "M.mo:" in capsys.readouterr().err
    assert not (tmp_path / "M.xml").exists()


def test_second_order_derivative_annotation_is_not_mistaken_for_a_directional_one():
    text = PENDULUM.replace("""  dc := 2 * x * dx + 2 * y * dy;
end constraintDer;""", """  dc := 2 * x * dx + 2 * y * dy;
  annotation(derivative(order = 2) = constraintDer2);
end constraintDer;

function constraintDer2
  input Real x;
  input Real y;
  input Real L;
  input Real dx;
  input Real dy;
  input Real ddx;
  input Real ddy;
  output Real ddc;
algorithm
  ddc := 2 * (dx * dx + x * ddx + dy * dy + y * ddy);
end constraintDer2;""")
    m = parse_modelica(text, "P3.mo")
    t = function_table(m.functions)
    dfn, with_t = t.derivative("constraint")
    assert dfn.name == "constraintDer" and with_t == {"x", "y"}
    ddfn, _ = t.derivative("constraintDer")
    assert ddfn.name == "der(constraintDer)"        # forward mode, not constraintDer2
    # d/dx of 2 x dx + 2 y dy in direction (1, 0, 0, 0, 0): 2 dx
    assert t.evaluate(ddfn.name, [0.3, 0.4, 1.0, 5.0, 7.0, 1.0, 0.0, 0.0, 0.0, 0.0]) == (10.0,)


def test_mode_guard_through_a_function(tmp_path):
    """A multimode model whose guard and both modes call a function with a loop (its
    restarts are continuous: x+ = x-, v+ = v-): against the piecewise closed form."""
    text = """
function f
  input Real x;
  input Integer n;
  output Real y;
algorithm
  y := 0;
  for k in 1:n loop
    y := y + x / k;
  end for;
end f;
class MM
  Real x(start = 1, fixed = true);
  Real v(start = 0, fixed = true);
equation
  der(x) = v;
  if f(x, 1) > 0 then
    der(v) = -f(x, 3);
  else
    der(v) = -2 * f(x, 2);
  end if;
end MM;"""
    fmu = export(parse_modelica(text, "MM.mo"), tmp_path / "MM.fmu", progress=False)
    r = simulate_fmu(str(fmu), stop_time=2.0, output=["x"], output_interval=0.1,
                     relative_tolerance=1e-10)
    w1, w2 = math.sqrt(11 / 6), math.sqrt(3)
    t1 = math.pi / (2 * w1)                       # x reaches 0, v = -w1

    def exact(t):
        return math.cos(w1 * t) if t <= t1 else -(w1 / w2) * math.sin(w2 * (t - t1))
    assert max(abs(x - exact(t)) for t, x in zip(r["time"], r["x"])) < 1e-6


def test_openmodelica_stream_operators_and_an_inlined_regularization():
    """OpenModelica's flat output of stream connectors calls $OMC$PositiveMax and
    $OMC$inStreamDiv; the SiemensPower-style sqrtReg is a one-line function (inlined)."""
    m = parse_modelica("""
function Lib.sqrtReg "Symmetric square root approximation with finite derivative in zero"
  input Real x;
  input Real delta = 0.01 "Range of significant deviation from sqrt(x)";
  output Real y;
algorithm
  y := x / (x ^ 2.0 + delta ^ 2.0) ^ 0.25;
end Lib.sqrtReg;
class V
  Real m(start = 1, fixed = true);
  Real h;
equation
  der(m) = -Lib.sqrtReg(m);
  h = $OMC$inStreamDiv(($OMC$PositiveMax(-m, 1e-07) * 2.0 + $OMC$PositiveMax(m, 1e-07) * 3.0)
      / ($OMC$PositiveMax(-m, 1e-07) + $OMC$PositiveMax(m, 1e-07)), 5.0);
end V;""", "V.mo")
    assert m.functions == ()
    names = {n.func for e in m.equations for n in E.walk(e.residual) if isinstance(n, E.Call)}
    assert names == {"max"}
    from mdae_fmu.functions import eval_expr
    rhs = m.equations[1].residual.right
    assert eval_expr(rhs, {"m": 0.5}, None) == pytest.approx(3.0)
    assert eval_expr(rhs, {"m": -0.5}, None) == pytest.approx(2.0)
    d = m.equations[0].residual.right.arg
    assert eval_expr(d, {"m": 0.5}, None) == pytest.approx(0.5 / (0.25 + 1e-4) ** 0.25)
