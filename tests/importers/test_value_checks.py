"""No silent garbage and no traceback for numbers the FMU cannot hold (issue 15, item 5;
mdae_fmu/importers/values.py), and a distinct exit code for internal errors."""

from __future__ import annotations

import math

import pytest

from mdae_fmu.cli import main
from mdae_fmu.diagnostics import EXIT_INTERNAL, InputError
from mdae_fmu.importers import values
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.importers.xml_eqlist import parse_xml
from mdae_fmu.importers.xml_writer import model_to_xml

TEMPLATE = """class T
  {decl}
  Real x(start = 1.0, fixed = true);
equation
  der(x) = -x;
end T;
"""


@pytest.mark.parametrize("decl, col, message", [
    ("parameter Real p = 1e400;", 22, "the number 1e400 is too large for a double"),
    ("parameter Real p = 1e-400;", 22, "the number 1e-400 is too small for a double: it would "
                                       "become 0"),
    ("parameter Real p = " + "9" * 5000 + ";", 22, "(5000 characters) is too large for a "
                                                   "double"),
    ("parameter Integer n = 2147483648;", 21, "parameter 'n': the value 2147483648 is outside "
                                              "the range of an FMI 2.0 Integer (32 bits: "
                                              "-2147483648 .. 2147483647)"),
    ("parameter Integer n = 99999999999;", 21, "the value 99999999999 is outside the range"),
    ("parameter Integer n = 2147483647 + 1;", 21, "the value 2147483648 is outside the range"),
    ("Integer m(start = -3000000000);", 11, "start of 'm': the start value -3000000000 is "
                                            "outside the range of an FMI 2.0 Integer"),
    ("parameter Real p = sqrt(-1);", 22, "sqrt(-1) is outside the domain of sqrt (its value "
                                         "would not be a real number)"),
    ("parameter Real p = log(0);", 22, "log(0) is outside the domain of log"),
    ("parameter Real p = 1/0;", 23, "division by zero (1 / 0) (in a constant expression)"),
    ("parameter Real p = 0.0/0.0;", 25, "division by zero (0.0 / 0.0)"),
    ("parameter Real p = 10^100000;", 24, "10 ^ 100000 is too large for a double"),
    ("parameter Real p = 2^1000000;", 23, "2 ^ 1000000 is too large for a double"),
    ("parameter Real p = (-8)^(1/3);", 26, "is not a real number (a negative number to a "
                                           "non-integer power)"),
    ("parameter Real p = exp(1000);", 22, "exp(1000) is too large for a double"),
    ("parameter Real p = x/(2-2);", 23, "division by zero (the divisor is the constant 0)"),
    ("parameter Real q = 0; parameter Real p = 1/q;", 40, "parameter 'p': division by zero "
                                                          "(1 / 0)"),
    ("parameter Real q = 1e300; parameter Real p = q*q;", 44, "parameter 'p': "
                                                              "1e+300 * 1e+300 is not a finite"),
    ("Real y(start = 1e308 * 10);", 24, "1e+308 * 10 is not a finite number (inf)"),
])
def test_values_without_a_double_or_int32_are_refused_where_written(decl, col, message):
    with pytest.raises(InputError) as err:
        parse_modelica(TEMPLATE.format(decl=decl), "t.mo")
    text = str(err.value)
    assert text.startswith(f"t.mo:2:{col}: "), text
    assert message in text.split("\n")[0], text


def test_values_that_fit_are_kept_exactly():
    m = parse_modelica(TEMPLATE.format(
        decl="parameter Integer n = 2147483647; parameter Integer k = -2147483647 - 1; "
             "parameter Real big = 1.7976931348623157e308; parameter Real tiny = 4.9e-324; "
             "parameter Real r = sqrt(2) * 10^300;"), "t.mo")
    assert m.var("big").binding.value == 1.7976931348623157e308
    assert m.var("tiny").binding.value == 5e-324
    assert values.evaluate(m.var("r").binding, {}) == pytest.approx(math.sqrt(2) * 1e300)
    assert values.evaluate(m.var("k").binding, {}) == -2 ** 31


def test_xml_attributes_are_checked_too():
    m = parse_modelica(TEMPLATE.format(decl="parameter Real p = 2;"), "t.mo")
    xml = model_to_xml(m).replace(b'binding="2"', b'binding="sqrt(-4)"')
    with pytest.raises(InputError, match=r"sqrt\(-4\) is outside the domain of sqrt"):
        parse_xml(xml, "t.xml")


def test_command_line_exit_codes(tmp_path, capsys):
    """Input problems exit 2 with the located message (never a traceback); an unexpected
    exception exits 3 and says it is an internal error, not a rejection of the model."""
    src = tmp_path / "t.mo"
    src.write_text(TEMPLATE.format(decl="parameter Real p = 0.0/0.0;"))
    assert main(["export", str(src), "-o", str(tmp_path / "t.fmu")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{src}:2:25: division by zero") and "Traceback" not in err
    assert not (tmp_path / "t.fmu").exists()


def test_internal_error_has_its_own_exit_code(tmp_path, capsys, monkeypatch):
    import mdae_fmu.api as api

    def broken(path, model=None, **options):
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(api, "load", broken)
    src = tmp_path / "t.mo"
    src.write_text(TEMPLATE.format(decl=""))
    assert main(["analyze", str(src)]) == EXIT_INTERNAL == 3
    err = capsys.readouterr().err
    assert err.startswith("mdae-fmu: internal error (ZeroDivisionError: float division by "
                          "zero). This is a bug of mdae-fmu, not a problem found in the model")
    assert "Traceback" not in err
    monkeypatch.setenv("MDAE_FMU_TRACEBACK", "1")
    assert main(["analyze", str(src)]) == 3
    assert "Traceback" in capsys.readouterr().err


def test_integer_assignment_beyond_32_bits_refused():
    text = ("class T\n  parameter Integer big = 2000000000;\n"
            "  Integer n(start = 0, fixed = true);\n"
            "equation\n  when time > 0.5 then\n    n = big + big;\n  end when;\nend T;\n")
    with pytest.raises(InputError) as err:
        parse_modelica(text, "t.mo")
    assert str(err.value).startswith("t.mo:6:5: the value assigned to 'n', 4000000000 is "
                                     "outside the range of an FMI 2.0 Integer")
    ok = parse_modelica(text.replace("big + big", "big + 1"), "t.mo")
    assert ok.whens[0].branches[0].actions[0].var == "n"
