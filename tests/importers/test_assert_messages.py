"""Assertion messages built with String(...) (issue 13; docs/importers.md, "String in
messages"): the importer accepts String(x, ...) in the message of assert, refuses it
elsewhere at file:line:col, and the FMU logs the value at the time the assertion fails.

Oracles: x(t) = t crosses the assertion threshold at t = 0.5 (+ the assertion tolerance
1e-8, docs/multimode-fmu.md "Assertions"), so the logged value is 0.5 to 3 significant
digits; the formatting of C's printf ``%-*.*g`` written out by hand; the MSL 3.1 Limiter's
parameters (uMax = -1 < uMin = 1) as OpenModelica's flat output prints its assert."""

from __future__ import annotations

import json

import pytest
from fmpy import simulate_fmu

from mdae_fmu import expr as E
from mdae_fmu.codegen.messages import format_value
from mdae_fmu.diagnostics import InputError
from mdae_fmu.fmu.export import export
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.importers.xml_eqlist import parse_xml
from mdae_fmu.importers.xml_writer import model_to_xml
from mdae_fmu.ir import Model
from mdae_fmu.modelica_printer import print_model

ERROR_MODEL = """model A
  Real x(start = 0, fixed = true);
equation
  der(x) = 1;
  assert(x < 0.5, "x (=" + String(x, significantDigits = 3) + ") too large");
end A;
"""

WARNING_MODEL = """model W
  Real x(start = 0, fixed = true);
  parameter Integer n = 42;
  parameter Boolean on = true;
equation
  der(x) = 1;
  assert(x < 0.3, "x (=" + String(x, minimumLength = 8, leftJustified = false) +
    ") 100% above 0.3, n = " + String(n) + ", on = " + String(on, minimumLength = 6) + "|",
    AssertionLevel.warning);
end W;
"""

# the MSL 3.1 Blocks.Nonlinear.Limiter's assert as OpenModelica 1.x prints it
LIMITER = """model L
  parameter Real uMax = {umax};
  parameter Real uMin = {umin};
  Real y(start = 0, fixed = true);
equation
  der(y) = uMax - y;
  assert(uMax >= uMin,"Limiter: Limits must be consistent. However, uMax (=" +
    String(uMax,0,true,6) + ") < uMin (=" + String(uMin,0,true,6) + ")");
end L;
"""


def _run(path, stop):
    messages: list[str] = []
    try:
        r = simulate_fmu(str(path), stop_time=stop, relative_tolerance=1e-10,
                         output_interval=0.01, debug_logging=True,
                         logger=lambda *a: messages.append(a[-1].decode()))
    except Exception as err:       # FMPy raises on fmi2Error
        return None, messages, err
    return r, messages, None


@pytest.mark.parametrize("backend", ["c", "python", "guarded"])
def test_error_assertion_logs_the_value_when_it_fails(tmp_path, backend):
    """C per-mode schedule, python backend, and the guarded schedule (issue 17; its model.c
    checks the assertions with the same code)."""
    path = export(parse_modelica(ERROR_MODEL, "A.mo"), tmp_path / "A.fmu", progress=False,
                  backend="python" if backend == "python" else "c",
                  fmi_type="cs" if backend == "python" else "me",
                  implicit=True if backend == "guarded" else None)
    r, messages, err = _run(path, 2.0)
    # the simulation stops there (FMPy raises on the C FMU's fmi2Error; the Co-Simulation
    # FMU of the python backend refuses the step and FMPy ends the run)
    assert err is not None or r["time"][-1] < 0.6
    line = next(m for m in messages if "assertion failed" in m)
    head, text = line.split(": assertion failed: ")
    assert text == "x (=0.5) too large"
    assert float(head.split("t = ")[1]) == pytest.approx(0.5, abs=1e-7)


@pytest.mark.parametrize("backend", ["c", "python"])
def test_warning_assertion_logs_the_value_and_continues(tmp_path, backend):
    path = export(parse_modelica(WARNING_MODEL, "W.mo"), tmp_path / "W.fmu", progress=False,
                  backend=backend, fmi_type="cs" if backend == "python" else "me")
    r, messages, err = _run(path, 1.0)
    assert err is None and r["time"][-1] == pytest.approx(1.0)
    warnings = [m for m in messages if ": assertion: " in m]
    assert warnings
    head, text = warnings[0].split(": assertion: ")
    # right-justified to 8 characters, '%' printed as written, Integer and Boolean values
    assert text == "x (=     0.3) 100% above 0.3, n = 42, on = true  |"
    assert float(head.split("t = ")[1]) == pytest.approx(0.3, abs=1e-7)


def test_msl_limiter_pattern(tmp_path):
    """Consistent limits: imports, exports, simulates, no assertion; inconsistent ones: the
    message shows both values."""
    ok = parse_modelica(LIMITER.format(umax=1, umin=-1), "L.mo")
    r, messages, err = _run(export(ok, tmp_path / "ok.fmu", progress=False), 1.0)
    assert err is None and r["time"][-1] == pytest.approx(1.0)
    assert not [m for m in messages if "assertion" in m]
    bad = parse_modelica(LIMITER.format(umax=-1, umin=1), "L.mo")
    r, messages, err = _run(export(bad, tmp_path / "bad.fmu", progress=False), 1.0)
    assert err is not None
    assert any(m.endswith("assertion failed: Limiter: Limits must be consistent. However, "
                          "uMax (=-1) < uMin (=1)") for m in messages), messages


def test_assertion_in_a_when_branch(tmp_path):
    """Checked when its branch fires (k = 1, 2, 3, 4 at t = 0.25, 0.5, 0.75, 1): k < 3 holds
    up to the assertion tolerance at k = 3 (docs/multimode-fmu.md, "Assertions") and fails
    at t = 1, where k = 4 and x = 1."""
    model = parse_modelica("""model WA
  Real x(start = 0, fixed = true);
  discrete Integer k(start = 0, fixed = true);
equation
  der(x) = 1;
  when sample(0.25, 0.25) then
    k = pre(k) + 1;
    assert(k < 3, "sample " + String(k, minimumLength = 3, leftJustified = false) +
      " at x = " + String(x, significantDigits = 2));
  end when;
end WA;
""", "WA.mo")
    r, messages, err = _run(export(model, tmp_path / "WA.fmu", progress=False), 2.0)
    assert err is not None
    assert "t = 1: assertion failed: sample   4 at x = 1" in messages


def _string_call(src: str) -> E.Call:
    m = parse_modelica(f'model S\n  Real x = time;\nequation\n  assert(x < 2, "v " + {src});\n'
                       'end S;\n', "S.mo")
    call = m.assertions[0].message.right
    assert type(call) is E.Call and call.func == "String"
    return call


def test_positional_and_named_forms_are_one_call():
    """OpenModelica 1.x order (significantDigits last), the specification's order and named
    options give the same canonical call; defaults fill what is not given."""
    x = E.Ref("x")
    full = E.Call("String", (x, E.Const(5), E.Const(False), E.Const(3)))
    assert _string_call("String(x, 5, false, 3)") == full
    assert _string_call("String(x, 3, 5, false)") == full
    assert _string_call("String(x, significantDigits = 3, minimumLength = 5, "
                        "leftJustified = false)") == full
    assert _string_call("String(x)") == E.Call("String", (x, E.Const(0), E.Const(True),
                                                          E.Const(6)))
    assert _string_call("String(x, 5, true)") == E.Call("String", (x, E.Const(5), E.Const(True),
                                                                   E.Const(6)))


@pytest.mark.parametrize("src, message, col", [
    ("  y = String(x);\n", "String(...) is only supported in the message", 7),
    ('  assert(String(x) == "1", "m");\n', "String(...) is only supported in the message", 10),
    ('  assert(x < 2, "v " + String(x, 3));\n', "cannot tell which options of String", 24),
    ('  assert(x < 2, "v " + String(x, format = "8.3f"));\n',
     "String(r, format = ...) is not supported", 34),
    ('  assert(x < 2, "v " + String(x, digits = 3));\n', "'String' has no parameter 'digits'",
     34),
    ('  when x > 1 then\n    terminate("at " + String(x));\n  end when;\n',
     "a terminate message built with String", 5),
])
def test_string_elsewhere_is_refused_at_its_position(src, message, col):
    text = f"model S\n  Real x = time;\n  Real y;\nequation\n{src}end S;\n"
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace(".", r"\.")) as err:
        parse_modelica(text, "S.mo")
    assert str(err.value).startswith(f"S.mo:{5 + src.startswith('  when')}:{col}:")


FUNCTION_ASSERT = """function f
  input Real u;
  input Integer k;
  output Real y;
algorithm
  assert(u < 1.5, "f: u (=" + String(u, significantDigits = 3) + ") too large at k = " +
    String(k) + ", " + String(u > 1, minimumLength = 6) + "|");
  y := u;
end f;
model S
  parameter Integer k = 7;
  Real x = f(time + 1, k);
end S;
"""


def test_function_assert_logs_its_formatted_values(tmp_path):
    """String(...) in the assert of a function (the MSL 3.1 BooleanTable.getFirstIndex
    pattern): the C function prints the message when the assertion fails; u = time + 1
    crosses 1.5 at t = 0.5, so the first failing evaluation has u in [1.5, 1.5 + step)."""
    m = parse_modelica(FUNCTION_ASSERT, "S.mo")
    path = export(m, tmp_path / "S.fmu", progress=False)
    r, messages, err = _run(path, 1.0)
    assert err is not None or r["time"][-1] < 0.6
    line = next(m for m in messages if "assertion failed in function f" in m)
    text = line.split("assertion failed in function f: ")[1]
    assert text.startswith("f: u (=1.5) too large at k = 7, true  |"), text


def test_function_assert_message_in_the_analysis_evaluation():
    """The Python evaluation of the function (parameters, analysis) formats the same text."""
    from mdae_fmu import functions as F
    m = parse_modelica(FUNCTION_ASSERT, "S.mo")
    table = F.FunctionTable(m.functions)
    assert tuple(table.evaluate("f", (1.0, 7))) == (1.0,)
    with pytest.raises(F.FunctionError, match=r"u \(=2\) too large at k = 3, true  \|"):
        table.evaluate("f", (2.0, 3))
    assert Model.from_json(json.loads(json.dumps(m.to_json()))) == m
    assert parse_modelica(print_model(m), "P.mo") == m


@pytest.mark.parametrize("source", [ERROR_MODEL, WARNING_MODEL])
def test_messages_round_trip(source):
    """The saved analysis (JSON), the Modelica printer and the XML form give the model back."""
    m = parse_modelica(source, "M.mo")
    assert Model.from_json(json.loads(json.dumps(m.to_json()))) == m
    assert parse_modelica(print_model(m), "P.mo") == m
    assert parse_xml(model_to_xml(m), "M.xml").assertions == m.assertions


def test_export_from_saved_analysis(tmp_path):
    """``analyze --json`` then ``export --from-json``: the FMU of the direct export, byte for
    byte (the message's String calls survive the saved model)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root))

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "mdae_fmu.cli", *args], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=600)
    (tmp_path / "W.mo").write_text(WARNING_MODEL)
    saved = cli("analyze", "--json", "W.mo")
    assert saved.returncode == 0 and '"String"' in saved.stdout, saved.stderr
    (tmp_path / "W.json").write_text(saved.stdout)
    r1 = cli("export", "W.mo", "-o", "direct.fmu")
    r2 = cli("export", "--from-json", "W.json", "-o", "saved.fmu")
    assert r1.returncode == 0 and r2.returncode == 0, r1.stderr + r2.stderr
    assert (tmp_path / "direct.fmu").read_bytes() == (tmp_path / "saved.fmu").read_bytes()


def test_format_value_like_printf():
    """The reference formatter (the python backend's copy is the same text): %-*.*g."""
    assert format_value("Real", -1.0, 0, True, 6) == "-1"
    assert format_value("Real", 1234567.0, 0, True, 6) == "1.23457e+06"
    assert format_value("Real", 0.000123456789, 10, False, 3) == "  0.000123"
    assert format_value("Real", 2.5, 5, True, 6) == "2.5  "
    assert format_value("Integer", 7, 3, False, 6) == "  7"
    assert format_value("Boolean", 0.0, 0, True, 6) == "false"


PRINT_MODEL = """model Pr
  Real x(start = 0, fixed = true);
equation
  der(x) = 2;
  when sample(0, 0.25) then
    print("x : " + String(x) + "\\n");
  end when;
end Pr;
"""


def test_print_in_a_when_clause_logs_its_message_each_time_it_fires(tmp_path):
    """``print(str)`` (OpenModelica's built-in, whenTest2 of its test suite) in a when-clause:
    the FMU logs the message with the value of x = 2 t at each sample instant 0, 0.25, ...;
    the simulation goes on (a warning)."""
    path = export(parse_modelica(PRINT_MODEL, "Pr.mo"), tmp_path / "Pr.fmu", progress=False)
    r, messages, err = _run(path, 1.0)
    assert err is None and r["time"][-1] == pytest.approx(1.0)
    printed = [m.split(": assertion: ") for m in messages if ": assertion: " in m]
    times = [float(head.split("t = ")[1]) for head, _ in printed]
    assert times == pytest.approx([0.0, 0.25, 0.5, 0.75, 1.0], abs=1e-9)
    assert [text for _, text in printed] == [f"x : {2 * t:g}\n" for t in times]


def test_print_outside_a_when_clause_is_refused():
    src = PRINT_MODEL.replace("  when sample(0, 0.25) then\n", "").replace("  end when;\n", "")
    with pytest.raises(InputError) as err:
        parse_modelica(src, "Pr.mo")
    assert "Pr.mo:5:5: print(...) can only be used inside a when-clause" in str(err.value)


GUARDED = """model GA
  parameter Boolean check = true;
  Real x(start = 0, fixed = true);
equation
  der(x) = 1;
  if check and time > 0.2 then
    assert(x < 0.5, "x (=" + String(x, significantDigits = 3) + ") too large");
  end if;
end GA;
"""


def test_an_assert_inside_an_if_equation_holds_where_its_branch_is_not_taken(tmp_path):
    """The MSL 3.1 PID_Controller's limiter asserts inside ``if initial() and not
    limitsAtInit``: checked only while its branch is taken (`events.guarded_condition`);
    x = t crosses 0.5 at t = 0.5."""
    path = export(parse_modelica(GUARDED, "GA.mo"), tmp_path / "GA.fmu", progress=False)
    r, messages, err = _run(path, 1.0)
    assert err is not None or r["time"][-1] < 0.6
    line = next(m for m in messages if "assertion failed" in m)
    assert line.endswith("assertion failed: x (=0.5) too large")
    messages.clear()
    r = simulate_fmu(str(path), stop_time=1.0, start_values={"check": False},
                     logger=lambda *a: messages.append(a[-1].decode()), debug_logging=True)
    assert r["time"][-1] == pytest.approx(1.0)
    assert not any("assertion" in m for m in messages)


def test_an_assert_under_initial_is_checked_during_initialization(tmp_path):
    """``if initial() and not limitsAtInit then assert(...)`` (the MSL limiters): checked
    while initial() holds, so inconsistent limits fail fmi2ExitInitializationMode; with the
    branch not taken the model runs."""
    text = """model GI
  parameter Real uMax = -1;
  parameter Real uMin = 1;
  parameter Boolean limitsAtInit = false;
  Real x(start = 0, fixed = true);
equation
  der(x) = 1;
  if initial() and not limitsAtInit then
    assert(uMax >= uMin, "limits: uMax (=" + String(uMax) + ") < uMin");
  end if;
end GI;
"""
    path = export(parse_modelica(text, "GI.mo"), tmp_path / "GI.fmu", progress=False)
    r, messages, err = _run(path, 1.0)
    assert err is not None and "ExitInitializationMode" in str(err)
    assert any(m.endswith("assertion failed: limits: uMax (=-1) < uMin") for m in messages)
    r = simulate_fmu(str(path), stop_time=1.0, start_values={"limitsAtInit": True})
    assert r["time"][-1] == pytest.approx(1.0) and r["x"][-1] == pytest.approx(1.0)
