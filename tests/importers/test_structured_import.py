"""Records, enumerations, type aliases, arrays, for-equations and the rest of the flat output
of Modelica tools (issue 13 items 2, 3, 4, 6): what the importer builds from them, the
locations it keeps, the errors it reports, and one FMU checked against closed forms."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mdae_fmu import expr as E
from mdae_fmu.diagnostics import InputError
from mdae_fmu.importers.flat_modelica import parse_modelica

DATA = Path(__file__).resolve().parents[1] / "data" / "structured"


def imp(text: str):
    return parse_modelica(text, "t.mo")


def err(text: str) -> str:
    with pytest.raises(InputError) as info:
        imp(text)
    return str(info.value)


def eqs(model) -> list[str]:
    """The equations as printed ``lhs = rhs`` lines (the printer's own form)."""
    from mdae_fmu.modelica_printer import print_model
    text = print_model(model)
    body = text.split("equation\n", 1)[1] if "equation\n" in text else ""
    return [ln.strip().rstrip(";") for ln in body.splitlines()
            if ln.startswith("  ") and not ln.startswith("  end")]


# --- item 6: the rest of the flat output --------------------------------------------------

def test_within_annotations_descriptions_and_initial_sections_anywhere():
    m = imp("""within Some.Package;
model M "d" annotation(Icon(graphics = {Line(points = {{0, 0}, {1, 1}})}));
  Real x(start = 1) "x" annotation(Dialog(group = "a"));
  annotation(Documentation(info = "<html>doc</html>"));
  Real y;
initial equation
  x = 1 "first";
equation
  der(x) = -x "decay" annotation(__v = 1);
  if x > 0.5 then
    y = 1;
  else
    y = 0;
  end if "described if" annotation(foo = true);
  annotation(experiment(StopTime = 1));
initial equation
  /* a second section, after the equations */
  y = 1 annotation(bar = 1);
end M;""")
    assert [v.name for v in m.variables] == ["x", "y"]
    assert len(m.equations) == 3
    assert len(m.initial_equations) == 2
    assert m.initial_equations[1].loc.line == 18


def test_within_alone_and_base_modelica_types_in_the_package():
    m = imp("""//! base 0.1.0
within;
package 'P'
  type 'Voltage' = Real(unit = "V", quantity = "ElectricPotential");
  type 'E' = enumeration('a', 'b' "second", 'c');
  record 'R'
    Real 'u';
    'Voltage' 'v';
  end 'R';
  model 'P'
    'R' 'r';
    'E' 'e' = 'E'.'c';
  equation
    'r'.'u' = 1;
    'r'.'v' = 2 * 'r'.'u';
  end 'P';
end 'P';""")
    assert m.var("r.v").unit == "V"
    assert m.var("e").type == "Integer"
    assert E.Const(3) in [e.residual for e in m.equations] or \
        any(isinstance(e.residual, E.BinOp) and e.residual.right == E.Const(3)
            for e in m.equations)


def test_string_parameters_reach_assert_messages_and_are_otherwise_ignored():
    m = imp("""model M
  parameter String name = "tank";
  constant String unused = "ignored";
  String label;
  Real h(start = 1, fixed = true);
equation
  label = "not a number";
  der(h) = -1;
  assert(h > 0, name + " is empty");
end M;""")
    assert [v.name for v in m.variables] == ["h"]
    assert len(m.equations) == 1
    assert m.assertions[0].message == E.Str("tank is empty")


def test_casts_der_of_expression_homotopy_semilinear():
    m = imp("""model M
  type E = enumeration(x, y, z);
  E e = E.z;
  Boolean b = time > 1;
  Integer i = Integer(e) + Integer(b);
  Real v(start = 0, fixed = true);
  Real w;
equation
  der(2 * v + 1) = homotopy(w, 0);
  w = semiLinear(time - 1, 1, 2);
end M;""")
    lines = eqs(m)
    assert "e = 3" in lines
    assert "i = e + (if b then 1 else 0)" in lines
    assert "der(2 * v + 1) = homotopy(w, 0)" in lines
    m = imp("class M Integer i = 2; Real y; equation Real(y) = Real(i) * 2.5; end M;")
    assert eqs(m) == ["i = 2", "y = i * 2.5"]      # OpenModelica's Real() conversion


def test_delay_is_refused_by_name():
    msg = err("model M Real x, y; equation x = time; y = delay(x, 1); end M;")
    assert msg.startswith("t.mo:1:43: delay(...) is not supported")
    assert "Pade" in msg


# --- item 3: enumerations and type aliases ---------------------------------------------------

def test_type_alias_attributes_propagate_and_declarations_override():
    m = imp("""model M
  type Length = Real(unit = "m", quantity = "Length", displayUnit = "mm", min = 0,
                     max = 10, nominal = 2, start = 1);
  type Height = Length(max = 5);
  Height h(start = 3, fixed = true);
  Length l;
equation
  der(h) = -1;
  l = 2 * h;
end M;""")
    h, l_ = m.var("h"), m.var("l")
    assert (h.unit, h.display_unit, h.min, h.max, h.nominal, h.start) == \
        ("m", "mm", E.Const(0), E.Const(5), E.Const(2), E.Const(3))
    assert (l_.max, l_.start) == (E.Const(10), E.Const(1))


def test_enumeration_types_reach_the_model_and_print_back():
    from mdae_fmu.modelica_printer import print_model
    m = imp("""model M
  type Color = enumeration(red "warm", green, blue) "colours";
  Color c(start = Color.green) = if time > 1 then Color.blue else Color.red;
  Integer k = Integer(c);
end M;""")
    assert m.enumerations == (("Color", (("red", "warm"), ("green", None), ("blue", None))),)
    assert (m.var("c").type, m.var("c").declared_type, m.var("k").declared_type) == \
        ("Integer", "Color", None)
    assert m.var("c").start == E.Const(2)
    assert eqs(m)[0] == "c = if time > 1 then 3 else 1"
    assert parse_modelica(print_model(m), "p.mo") == m


def test_openmodelica_inline_enumerations_and_state_select_literals():
    m = imp("""class M
  parameter enumeration(DynamicFreeInitial, FixedInitial, SteadyState) system.energyDynamics =
    Modelica.Fluid.Types.Dynamics.SteadyState;
  enumeration(one, two, three) e(start = M.E.two, fixed = true);
  Real x(stateSelect = StateSelect.prefer, start = 0, fixed = true);
equation
  der(x) = if system.energyDynamics == Modelica.Fluid.Types.Dynamics.FixedInitial then 1 else 2;
  when time > 0.5 then
    e = M.E.three;
  end when;
end M;""")
    assert m.var("system.energyDynamics").binding == E.Const(3)
    assert m.var("e").start == E.Const(2)
    assert m.var("x").state_select == "prefer"
    assert m.whens[0].branches[0].actions[0].value == E.Const(3)


def test_enumeration_errors():
    assert "'d' is not a literal of the enumeration 'E' (a, b)" in err(
        "model M type E = enumeration(a, b); E e = E.d; end M;")
    assert "unknown type 'Volt'" in err("model M Volt v; end M;")


# --- item 2: records -----------------------------------------------------------------------

RECORDS = """model M
  record Point "a point"
    Real x = 0;
    Real y = 0;
  end Point;
  record Segment
    Point a;
    Point b(x = 1);
  end Segment;
  parameter Point p0 = Point(1, 2);
  parameter Point p1 = Point(y = 5);
  parameter Segment s(a(y = 3));
  Point q(x(start = 4, fixed = true));
  Point r[2];
equation
  der(q.x) = -q.x;
  q.y = p0.y;
  r[1] = q;
  r[2] = Point(p1.y, s.b.x);
end M;"""


def test_records_scalarized_with_dotted_names():
    m = imp(RECORDS)
    names = [v.name for v in m.variables]
    assert names == ["p0.x", "p0.y", "p1.x", "p1.y", "s.a.x", "s.a.y", "s.b.x", "s.b.y",
                     "q.x", "q.y", "r[1].x", "r[1].y", "r[2].x", "r[2].y"]
    b = {v.name: v.binding for v in m.variables}
    assert (b["p0.x"], b["p0.y"], b["p1.x"], b["p1.y"]) == \
        (E.Const(1), E.Const(2), E.Const(0), E.Const(5))
    assert (b["s.a.y"], b["s.b.x"]) == (E.Const(3), E.Const(1))
    assert m.var("q.x").start == E.Const(4) and m.var("q.x").fixed is True
    assert all(v.variability == "parameter" for v in m.variables[:8])
    lines = eqs(m)
    # field bindings of non-parameter records are equations (Modelica 3.6 §7.2.3)
    assert "0 = q.x" in lines and "0 = r[1].x" in lines
    assert "r[1].x = q.x" in lines and "r[1].y = q.y" in lines
    assert "r[2].x = p1.y" in lines and "r[2].y = s.b.x" in lines


@pytest.mark.parametrize("body, message", [
    ("record R R r; end R; R q;", "t.mo:1:18: record 'R' contains itself"),
    ("record R Real a; end R; R r = 3;", "the value of record 'r' is not a record (write R(...))"),
    ("record R Real a; end R; R r; equation r = R(1, 2);",
     "record constructor R() takes 1 arguments, got 2"),
    ("record R Real a; end R; R r; equation r = R();",
     "record constructor R(): no value for field 'a'"),
    ("record R Real a; end R; R r(b = 1);", "record 'R' has no field 'b'"),
    ("record R Real a; end R; R r; Real y; equation y = r;", "a record equated to a scalar"),
    ("String s; Real x; equation x = s;", "a String is equated to a number"),
    ("String s; Real x; equation x = s + 1;", "the String variable 's' can only be used"),
    ("Real x; equation x = Integer(time);", "Integer() converts enumerations and Booleans"),
    ("type A = B; type B = A; A a;", "type 'A' is defined through itself"),
])
def test_record_type_and_string_errors(body, message):
    assert message in err(f"model M {body} end M;")


def test_record_errors_name_the_field():
    assert "record 'q' (of type Point) has no field 'z'" in err(
        RECORDS.replace("q.y = p0.y;", "q.y = q.z;"))
    assert "t.mo:11:30: record 'Point' has no field 'w'" in err(
        RECORDS.replace("Point p1 = Point(y = 5)", "Point p1 = Point(w = 5)"))
    assert "records of different types" not in err(
        RECORDS.replace("r[1] = q;", "r[1] = p0.x;"))


# --- item 4: arrays ------------------------------------------------------------------------

ARRAYS = """model A
  parameter Integer n = 3;
  parameter Real c[n] = {1, 2, 3};
  parameter Real K[2, 2] = [1, 2; 3, 4];
  Real x[n];
  Real y[2];
  Real z[2, n];
  Real s, p, mx, mn, d;
  Real v[4];
  Real t[2];
  Real u[n];
equation
  x = c .* {time, 2 * time, 3 * time};
  y = K * x[1:2];
  for i in 1:2, j in 1:n loop
    z[i, j] = if i == 1 then x[j] else -x[n - j + 1];
  end for;
  s = sum(x);
  p = product(c);
  mx = max(c);
  mn = min({x[i] for i in 1:n});
  d = c * x;
  v = cat(1, fill(1, 2), zeros(1), ones(1));
  t = vector(transpose(K) * {1, 0});
  u = x[end:-1:1] + c[:] - 2 * fill(size(c, 1), n);
end A;"""


def test_arrays_are_scalarized_with_source_lines():
    m = imp(ARRAYS)
    assert [v.name for v in m.variables][:8] == [
        "n", "c[1]", "c[2]", "c[3]", "K[1,1]", "K[1,2]", "K[2,1]", "K[2,2]"]
    assert m.var("K[2,1]").binding == E.Const(3)
    lines = eqs(m)
    expected = [
        "x[1] = c[1] .* time", "x[3] = c[3] .* (3 * time)",
        "y[1] = K[1,1] * x[1] + K[1,2] * x[2]",
        "z[1,3] = x[3]", "z[2,1] = -x[3]", "z[2,3] = -x[1]",
        "s = x[1] + x[2] + x[3]", "p = c[1] * c[2] * c[3]", "mx = max(max(c[1], c[2]), c[3])",
        "mn = min(min(x[1], x[2]), x[3])", "d = c[1] * x[1] + c[2] * x[2] + c[3] * x[3]",
        "v[1] = 1", "0 = v[3]", "v[4] = 1", "t[1] = K[1,1] * 1 + K[2,1] * 0",
        "u[1] = x[3] + c[1] - 2 * 3",
    ]
    for line in expected:
        assert line in lines, line
    assert len(m.equations) == 3 + 2 + 6 + 5 + 4 + 2 + 3
    # every scalar equation points to the line of its source equation
    src = ARRAYS.splitlines()
    for e in m.equations:
        text = src[e.loc.line - 1]
        assert "=" in text and not text.lstrip().startswith(("for", "parameter", "Real"))
    z_lines = {e.loc.line for e in m.equations if "z[" in str(e.residual)}
    assert z_lines == {16}


def test_parameter_sized_arrays_and_nested_for_ranges_from_parameters():
    m = imp("""model M
  parameter Integer n = 2;
  parameter Integer m = n + 1;
  Real a[n, m](each start = 0);
equation
  for i in 1:n loop
    for j in i:m loop
      a[i, j] = i * 10 + j;
    end for;
    for j in 1:i - 1 loop
      a[i, j] = 0;
    end for;
  end for;
end M;""")
    assert len(m.variables) == 2 + 6
    assert eqs(m) == ["a[1,1] = 11", "a[1,2] = 12", "a[1,3] = 13", "a[2,2] = 22",
                      "a[2,3] = 23", "0 = a[2,1]"]


def test_unsized_dimensions_take_the_size_of_the_binding():
    m = imp("""model M
  parameter Real table[:, 2] = [0, 1; 1, 3; 2, 4];
  parameter Integer n = size(table, 1);
  Real y;
equation
  y = table[n, 2];
end M;""")
    assert [v.name for v in m.variables][4:] == ["table[3,1]", "table[3,2]", "n", "y"]
    assert m.var("table[3,2]").binding == E.Const(4)
    assert eqs(m) == ["y = table[3,2]"]


def test_openmodelica_scalarized_arrays_used_whole():
    m = imp("""class M
  Real x[1];
  Real x[2];
  Real y[1,1];
  Real y[1,2];
equation
  x = {1.0, 2.0};
  y = {x};
end M;""")
    assert eqs(m) == ["x[1] = 1.0", "x[2] = 2.0", "y[1,1] = x[1]", "y[1,2] = x[2]"]


@pytest.mark.parametrize("body, message", [
    ("Real x[3]; equation for i in 1:3 loop x[i + 1] = i; end for;",
     "t.mo:1:47: array index 4 out of range for dimension 1 of 'x' (size 3)"),
    ("Real x[2]; Integer k; equation k = 2; for i in 1:k loop x[i] = 1; end for;",
     "for-index 'i': the bounds of a range 'a:b' must be parameter expressions ('k' is not "
     "a parameter or constant with a value)"),
    ("Real x[2]; equation x = {1, 2, 3};", "different sizes: [2] and [3]"),
    ("Real x[2]; equation x = foo(x);", "unknown function 'foo'"),
    ("Real x[2], s; equation x = {1, 2}; s = sum(x, 1);", "'sum' expects 1 argument, got 2"),
    ("Real x[2], s; equation x = {1, 2}; s = x;", "different sizes: [] and [2]"),
    ("Real x[2, 2]; equation x = {1, 2} * {{1, 2}};", "'*' of arrays of sizes [2] and [1, 2]"),
    ("Real x; equation x = x[1];", "'x' is not an array"),
    ("type E = enumeration(a, b); Real x[E];", "t.mo:1:42: arrays indexed by the type 'E' are "
     "not supported (use an Integer dimension and Integer(e) as the index)"),
    ("parameter Integer n = m; parameter Integer m = n + 1; Real x[n];",
     "array dimension must be a non-negative Integer parameter expression ('n' has no "
     "parameter value)"),
    ("Real x[:];", "t.mo:1:14: array dimension ':' needs a binding of that many dimensions "
     "(give the size)"),
    ("Real x[2]; Real y; equation x = {1, 2}; y = x[1, 1];",
     "'x' has 1 dimension, 2 subscripts given"),
])
def test_array_errors(body, message):
    assert message in err(f"model M {body} end M;")


def test_bad_input_exit_code_and_no_traceback(tmp_path, capsys):
    from mdae_fmu.cli import main
    p = tmp_path / "bad.mo"
    p.write_text("model M\n  Real x[2];\nequation\n  x[3] = 1;\nend M;\n")
    assert main(["analyze", str(p)]) == 2
    out = capsys.readouterr()
    assert "bad.mo:4:3: array index 3 out of range for dimension 1 of 'x' (size 2)" in out.err
    assert "Traceback" not in out.err + out.out


# --- simulation against closed forms -------------------------------------------------------

@pytest.mark.long      # builds an FMU: out of -m quick
def test_structured_model_simulates_to_closed_forms(tmp_path):
    """tests/data/structured/Structured.mo: a chain of first-order lags written with an array,
    a for-equation, a record of gains (one field typed with an alias), an enumeration and
    Integer(), der of an expression, semiLinear, homotopy, a String in an assert message.
    x_i(t) = (k t)^(i-1)/(i-1)! e^(-k t) (k = 2), y = 2 t (Integer(Mode.on) = 2),
    z = sin t before pi/2 and 1 + 3 (sin t - 1) after, w = e^(-t)."""
    from fmpy import read_model_description, simulate_fmu

    from mdae_fmu import export_fmu, load
    model = load(DATA / "Structured.mo")
    fmu = export_fmu(model, tmp_path / "Structured.fmu")
    md = read_model_description(str(fmu))
    units = {v.name: v.unit for v in md.modelVariables}
    assert units["g.k"] == "1/s"
    (per_second,) = [u for u in md.unitDefinitions if u.name == "1/s"]
    assert (per_second.baseUnit.s, per_second.baseUnit.m, per_second.baseUnit.factor) == \
        (-1, 0, 1.0)
    (per_minute,) = per_second.displayUnits
    assert (per_minute.name, per_minute.factor, per_minute.offset) == ("1/min", 60.0, 0.0)
    gk = next(v for v in md.modelVariables if v.name == "g.k")
    assert gk.displayUnit == "1/min"
    (mode_type,) = md.typeDefinitions
    assert (mode_type.name, mode_type.type) == ("Mode", "Enumeration")
    assert [(i.name, i.value, i.description) for i in mode_type.items] == \
        [("off", "1", "no input"), ("on", "2", "input on")]
    mode = next(v for v in md.modelVariables if v.name == "mode")
    assert (mode.type, mode.declaredType.name, mode.start) == ("Enumeration", "Mode", "2")
    from fmpy.validation import validate_fmu
    assert validate_fmu(str(fmu)) == []
    r = simulate_fmu(str(fmu), stop_time=2.0, relative_tolerance=1e-10, output_interval=0.01,
                     output=["x[1]", "x[2]", "x[3]", "x[4]", "total", "y", "z", "w"])
    k = 2.0
    for t, *row in zip(r["time"], *(r[f"x[{i}]"] for i in range(1, 5))):
        for i, xi in enumerate(row, start=1):
            assert xi == pytest.approx((k * t) ** (i - 1) / math.factorial(i - 1)
                                       * math.exp(-k * t), abs=1e-7)
    t = r["time"]
    assert r["y"] == pytest.approx(2 * t, abs=1e-7)
    z = [math.sin(s) if s <= math.pi / 2 else 1 + 3 * (math.sin(s) - 1) for s in t]
    assert r["z"] == pytest.approx(z, abs=1e-6)
    assert r["w"] == pytest.approx([math.exp(-s) for s in t], abs=1e-7)
    total = [sum((k * s) ** j / math.factorial(j) for j in range(4)) * math.exp(-k * s)
             for s in t]
    assert r["total"] == pytest.approx(total, abs=1e-7)


def test_xml_equation_list_array_expressions_over_scalarized_elements(tmp_path):
    from mdae_fmu.importers.xml_eqlist import parse_xml
    doc = """<model xmlns="urn:mdae-fmu:eqlist:1" name="Arr">
  <variable name="n" type="Integer" variability="parameter" binding="2"/>
  <variable name="x[1]"/>
  <variable name="x[2]"/>
  <variable name="s"/>
  <equation lhs="x" rhs="{time, 2 * time}"/>
  <equation lhs="s" rhs="sum(x[i] for i in 1:n) + x[end]"/>
</model>"""
    m = parse_xml(doc.encode(), "a.xml")
    assert eqs(m) == ["x[1] = time", "x[2] = 2 * time", "s = x[1] + x[2] + x[2]"]
    with pytest.raises(InputError) as info:
        parse_xml(doc.replace("x[end]", "x[3]").encode(), "a.xml")
    assert str(info.value).startswith(
        "a.xml:7:26: array index 3 out of range for dimension 1 of 'x' (size 2)")


@pytest.mark.parametrize("unit, exponents, factor, offset", [
    ("N.m", {"kg": 1, "m": 2, "s": -2}, 1.0, 0.0),
    ("W/(m2.K)", {"kg": 1, "s": -3, "K": -1}, 1.0, 0.0),
    ("1/s", {"s": -1}, 1.0, 0.0),
    ("rev/min", {"rad": 1, "s": -1}, 2 * math.pi / 60, 0.0),
    ("degC", {"K": 1}, 1.0, 273.15),
    ("kPa", {"kg": 1, "m": -1, "s": -2}, 1e3, 0.0),
    ("mm", {"m": 1}, 1e-3, 0.0),
    ("Ohm", {"kg": 1, "m": 2, "s": -3, "A": -2}, 1.0, 0.0),
])
def test_units_as_fmi_base_units(unit, exponents, factor, offset):
    from mdae_fmu.units import BASE, base_unit
    b = base_unit(unit)
    assert dict(zip(BASE, b.exponents)) == {k: exponents.get(k, 0) for k in BASE}
    assert b.factor == pytest.approx(factor, rel=1e-15) and b.offset == offset


@pytest.mark.parametrize("unit", ["foo", "m/s/s", "m..s", "", "kgg"])
def test_unknown_units_have_no_base_unit(unit):
    from mdae_fmu.units import base_unit
    assert base_unit(unit) is None


def test_openmodelica_record_constructor_functions_declare_records():
    m = imp("""function Gains "Automatically generated record constructor for Gains"
  input Real k = 2.0;
  input Real c;
  output Gains res;
end Gains;

class UsesGains
  parameter Real g.k = 3.0;
  parameter Real g.c = 1.0;
  Real h.k;
  Real h.c;
equation
  h = Gains(g.c, 2.0 * g.k);
end UsesGains;""")
    assert eqs(m) == ["h.k = g.c", "h.c = 2.0 * g.k"]
    assert not m.functions
    m = imp("""function R "Automatically generated record constructor for R"
  input Real a;
  input Real z[2];
  output R res;
end R;
class M
  Real r.a;
  Real r.z[1];
  Real r.z[2];
equation
  r = R(time, {1, 2});
end M;""")
    assert eqs(m) == ["r.a = time", "r.z[1] = 1", "r.z[2] = 2"]
    # a function whose output is not of its own type stays a function (i13b's reader)
    m = imp("function f input Real x; output Real y = 2 * x; end f; class M Real z; "
            "equation z = f(time); end M;")
    assert [f.name for f in m.functions] == ["f"]


def test_base_modelica_records_with_arrays_and_arrays_of_records():
    """Base Modelica as OpenModelica prints it with records kept (`Real[3] 'z'` in a record,
    `'R1'[2] 'ra'`, record constants, quoted names holding quotes)."""
    from mdae_fmu import load
    m = load(DATA / "RecArr.bmo")
    names = [v.name for v in m.variables]
    assert names[:7] == ["cr1.x", "cr1.y", "cr1.z[1]", "cr1.z[2]", "cr1.z[3]", "r1.x", "r1.y"]
    assert "r2.ra[2].z[3]" in names and "map['Color'.'Red']" in names
    assert m.var("cr1.z[2]").variability == "constant"
    lines = eqs(m)
    assert len(m.equations) == 5 * 7 + 4
    for line in ("ra1[2].y = 2 * time", "ra1[2].z[3] = 3.0", "ra1[3].z[1] = r1.z[1]",
                 "r2.ra[2].x = cr1.x", "c = 2", "der(X[2]) = -2 * X[2]"):
        assert line in lines, line
    src = (DATA / "RecArr.bmo").read_text().splitlines()
    assert all("=" in src[e.loc.line - 1] for e in m.equations)


def test_openmodelica_enumerations_of_undeclared_types_resolved_by_context():
    """OpenModelica's flat output names literals by a type path it does not declare; two
    inline enumerations with the literal at different positions are told apart by the
    declaration that uses them (`M.Enum.e1` is the 'e1' of `em`'s type, so 1, while 'e1' is
    the third literal of `en`'s type). Elements indexed by literals stay scalars."""
    m = imp("""class M
  parameter enumeration(e3, e2, e1) en = N.Enum.e3;
  parameter enumeration(e1, e2, e3) em = M.Enum.e1;
  parameter enumeration(e1, e2, e3) em2 = M.Enum.e3;
  Real x[M.Color.green];
  Real x[M.Color.blue];
equation
  x[M.Color.green] = 1.0;
  x[M.Color.blue] = 2.0;
end M;""")
    b = {v.name: v.binding for v in m.variables}
    assert (b["en"], b["em"], b["em2"]) == (E.Const(1), E.Const(1), E.Const(3))
    assert [v.name for v in m.variables][3:] == ["x[M.Color.green]", "x[M.Color.blue]"]
    assert eqs(m) == ["'x[M.Color.green]' = 1.0", "'x[M.Color.blue]' = 2.0"]


def test_display_units_convert_within_one_dimension():
    from mdae_fmu.units import display_unit
    assert display_unit("K", "degC") == (1.0, -273.15)
    assert display_unit("rad/s", "rev/min") == pytest.approx((60 / (2 * math.pi), 0.0))
    assert display_unit("Pa", "bar") == (1e-5, 0.0)
    assert display_unit("m", "s") is None and display_unit("m", "foo") is None


def test_enumerations_round_trip_through_the_xml_equation_list():
    from mdae_fmu.importers.xml_eqlist import parse_xml
    from mdae_fmu.importers.xml_writer import model_to_xml
    m = imp("""class M
  type Color = enumeration(red "warm", green, blue);
  Color c(start = Color.green) = if time > 1 then Color.blue else Color.red;
  parameter enumeration(one, two) e = M.E.two;
end M;""")
    x = model_to_xml(m)
    assert b'<literal name="red" description="warm"/>' in x
    assert b'declaredType="Color"' in x
    assert parse_xml(x, "m.xml") == m
    with pytest.raises(InputError) as info:
        parse_xml(x.replace(b'type="Integer" variability="discrete" causality="local" '
                            b'start="2" declaredType', b'type="Real" variability="discrete" '
                            b'causality="local" start="2" declaredType'), "m.xml")
    assert "variable 'c' has a declaredType: its type must be Integer" in str(info.value)


ARRAYS_OF_RECORDS = """model M
  record P Real x; Real y[2]; end P;
  record S P a; P b[2]; end S;
  parameter Integer n = 3;
  P p[n];
  S s[2];
  Real t[n];
  Real total;
equation
  for i in 1:n loop
    p[i].x = i * time;
    p[i].y = {1, 2} * p[i].x;
    t[i] = p[i].y[2] + p[i].x;
  end for;
  for i in 1:2 loop
    s[i].a = p[i];
    for j in 1:2 loop
      s[i].b[j].x = j;
      s[i].b[j].y[1] = s[i].b[j].x;
      s[i].b[j].y[2] = 0;
    end for;
  end for;
  total = sum(p.x);
end M;"""


def test_arrays_of_records_with_for_indices_and_vectorized_fields():
    m = imp(ARRAYS_OF_RECORDS)
    assert len(m.variables) == 1 + 3 * 3 + 2 * 9 + 3 + 1
    lines = eqs(m)
    for line in ("p[3].x = 3 * time", "p[2].y[2] = 2 * p[2].x", "t[3] = p[3].y[2] + p[3].x",
                 "s[2].a.y[1] = p[2].y[1]", "s[2].b[1].y[1] = s[2].b[1].x",
                 "total = p[1].x + p[2].x + p[3].x"):
        assert line in lines, line
    assert len(m.equations) == 12 + 2 * 9 + 1
    assert "t.mo:20:7: record 's[...].b' (of type P) has no field 'w'" in err(
        ARRAYS_OF_RECORDS.replace("s[i].b[j].y[2] = 0", "s[i].b[j].w = 0"))
    assert "array index 3 out of range for dimension 1 of 's[...].b' (size 2)" in err(
        ARRAYS_OF_RECORDS.replace("s[i].b[j].x = j", "s[i].b[j + 1].x = j"))


NON_SCALARIZED = """class V
  parameter Real[2] k = array(1.0 + i for i in 1:2);
  parameter Real[2] k2 = array(2.0, 3.0);
  Real[2, 3] m.c.x(start = fill(1.0, 2, 3), fixed = fill(true, 2, 3));
equation
  for i in 1:2 loop
    for j in 1:3 loop
      der(m[i].c[j].x) = -k[i] * m[i].c[j].x;
    end for;
  end for;
end V;
"""


@pytest.mark.long      # builds an FMU: out of -m quick
def test_openmodelica_non_scalarized_output_and_array_constructor(tmp_path):
    """OpenModelica's non-scalarized flat output (``-d=-nfScalarize``, its VectorizeBindings
    and MergeComponents tests): ``Real[2, 3] m.c.x`` declares the elements of the component
    arrays ``m[i].c[j]``, which ``m[i].c[j].x`` names (the element ``m.c.x[i, j]``);
    ``array(e for i in r)`` and ``array(a, b)`` are array constructors (Modelica 3.6
    §10.4.1). Closed form: x_ij = exp(-k_i t), k = {2, 3}."""
    from fmpy import simulate_fmu

    from mdae_fmu.fmu.export import export
    model = imp(NON_SCALARIZED)
    assert {v.name for v in model.variables} >= {f"m.c.x[{i},{j}]" for i in (1, 2)
                                                  for j in (1, 2, 3)}
    assert [model.var(f"k2[{i}]").binding for i in (1, 2)] == [E.Const(2.0), E.Const(3.0)]
    fmu = export(model, tmp_path / "V.fmu", progress=False)
    names = [f"m.c.x[{i},{j}]" for i in (1, 2) for j in (1, 2, 3)]
    r = simulate_fmu(str(fmu), stop_time=1.0, relative_tolerance=1e-10, output_interval=0.1,
                     output=names)
    for name in names:
        k = 2.0 if name.startswith("m.c.x[1,") else 3.0
        assert r[name] == pytest.approx([math.exp(-k * s) for s in r["time"]], abs=1e-7)


def test_openmodelica_non_scalarized_path_of_the_wrong_rank_is_refused():
    assert "t.mo:8:11: 'm' is not declared and 'm.c.x', the array its path names, has 2 " \
        "dimensions: 1 subscripts given along the path" in err(
        NON_SCALARIZED.replace("der(m[i].c[j].x)", "der(m[i].c.x)"))
