"""``--model NAME`` (issue 13): one class of a file that defines several (importers/select.py).

Oracles: the refusal lists exactly the file's non-partial models, the chosen class's
diagnostics keep the line:col of the user's file, and the chosen model simulates to its closed
form (x' = -3x: x(1) = exp(-3)).
"""

import math

import pytest

from mdae_fmu import api
from mdae_fmu.cli import main
from mdae_fmu.diagnostics import InputError
from mdae_fmu.importers import select

PACKAGE = """\
package P "two flat models and a function"
  function f
    input Real u;
    output Real y;
  algorithm
    y := 3*u;
  end f;
  partial model Base
    Real z;
  end Base;
  model A
    Real x(start = 1, fixed = true);
  equation
    der(x) = -f(x);
  end A;
  model B "with a defect"
    Real y;
  equation
    y = f(time) + undefinedthing;
  end B;
end P;
"""

# two OpenModelica flat outputs (instantiateModel) in one file: dotted class names
OM_FLAT = """\
function P.g
  input Real u;
  output Real y;
algorithm
  y := u + 1;
end P.g;

class P.M1
  Real x(start = 2, fixed = true);
equation
  der(x) = -x;
end P.M1;

class P.M2
  Real v;
equation
  v = P.g(time);
end P.M2;
"""


@pytest.fixture
def package(tmp_path):
    p = tmp_path / "Pkg.mo"
    p.write_text(PACKAGE)
    return p


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_several_models_without_model_are_refused_with_their_names(package, capsys):
    code, out, err = run(capsys, "analyze", str(package))
    assert code == 2
    assert err.startswith(f"{package}:16:3: this file defines 2 models (P.A, P.B)")
    assert "--model NAME" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["analyze", "export", "simulate"])
def test_unknown_model_name_lists_the_available_ones(package, capsys, tmp_path, command):
    extra = ["-o", str(tmp_path / "x.fmu")] if command == "export" else []
    code, _, err = run(capsys, command, str(package), "--model", "Q", *extra)
    assert code == 2
    assert f"{package}:1:1: no model, block or class named 'Q' in this file; its models: " \
           "P.A, P.B" in err


def test_partial_class_is_not_a_model(package):
    with pytest.raises(InputError, match="'P.Base' is a partial class"):
        api.load(package, model="Base")


def test_chosen_class_keeps_the_file_positions(package, capsys):
    code, _, err = run(capsys, "analyze", str(package), "--model", "P.B")
    assert code == 2
    assert err.startswith(f"{package}:19:19: undefined name 'undefinedthing'")


@pytest.mark.long      # builds an FMU: out of -m quick
def test_chosen_model_simulates_to_its_closed_form(package, capsys):
    code, out, err = run(capsys, "simulate", str(package), "--model", "A")
    assert code == 0, err
    x1 = float(out.split("x = ")[1].split()[0])
    assert abs(x1 - math.exp(-3.0)) < 1e-4 * math.exp(-3.0)


def test_openmodelica_flat_outputs_with_dotted_names(tmp_path):
    p = tmp_path / "flat.mo"
    p.write_text(OM_FLAT)
    with pytest.raises(InputError, match=r"defines 2 models \(P\.M1, P\.M2\)"):
        api.load(p)
    m1 = api.load(p, model="P.M1")
    assert [v.name for v in m1.variables] == ["x"]
    assert m1.equations[0].loc.line == 11
    m2 = api.load(p, model="M2")
    assert m2.name == "P.M2" and m2.equations[0].loc.line == 17


def test_function_after_the_chosen_class_is_refused_at_its_line(tmp_path):
    p = tmp_path / "after.mo"
    p.write_text("model A\n  Real x = time;\nend A;\nmodel B\n  Real y;\nequation\n"
                 "  y = h(time);\nend B;\nfunction h\n  input Real u;\n  output Real y;\n"
                 "algorithm\n  y := u;\nend h;\n")
    assert api.load(p, model="A").variables[0].name == "x"      # h is not named by A: blanked
    with pytest.raises(InputError) as err:
        api.load(p, model="B")
    assert err.value.loc.line == 9 and "before the model class" in err.value.message


def test_single_class_file_checks_the_name(tmp_path):
    p = tmp_path / "one.mo"
    p.write_text("model One\n  Real x = time;\nend One;\n")
    assert api.load(p, model="One").name == "One"
    with pytest.raises(InputError, match="its models: One"):
        api.load(p, model="Two")


def test_class_spans_skip_comments_strings_and_nested_ends():
    text = ('model A "model B"\n  // model C\n  Real x;\nequation\n  if time > 1 then\n'
            '    x = 1;\n  else\n    x = 2;\n  end if;\nend A;\nblock D\nend D;\n')
    spans = select.class_spans(text)
    assert [(c.kind, c.name) for c in spans] == [("model", "A"), ("block", "D")]
    assert text[spans[0].start:spans[0].end].endswith("end A;")
    chosen = select.select_class(text, spans, spans[1])
    assert len(chosen) == len(text) and chosen.count("\n") == text.count("\n")
    assert chosen.strip() == "block D\nend D;"


def test_base_modelica_package_keeps_its_constants(tmp_path):
    p = tmp_path / "M.bmo"
    p.write_text("//! base 0.1.0\npackage 'M'\n  constant Real c = 2;\n  model 'M'\n"
                 "    Real x(start = 1, fixed = true);\n  equation\n    der(x) = -c * x;\n"
                 "  end 'M';\nend 'M';\n")
    assert api.load(p, model="M") == api.load(p)
    assert [v.name for v in api.load(p, model="M").variables] == ["c", "x"]
