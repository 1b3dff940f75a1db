"""String parameters and constants as FMI 2.0 String variables (issue 13; fmu/strings.py,
templates/fmi2Functions.c fmi2GetString/fmi2SetString).

Oracles: the start value FMPy reads from modelDescription.xml and the value fmi2GetString
returns are byte for byte the Modelica literal's decoded value (quotes, backslash, newline,
XML metacharacters, non-ASCII); a value set before initialization is read back; setting after
initialization or setting a constant is an error (FMI 2.0 fixed parameters, constants).
"""

import shutil

import pytest

fmpy = pytest.importorskip("fmpy")

from fmpy import extract, read_model_description  # noqa: E402
from fmpy.fmi1 import FMICallException  # noqa: E402
from fmpy.fmi2 import FMU2Model  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402

from mdae_fmu import api  # noqa: E402
from mdae_fmu.diagnostics import InputError  # noqa: E402
from mdae_fmu.importers.flat_modelica import parse_modelica  # noqa: E402
from mdae_fmu.modelica_printer import print_model  # noqa: E402

MODEL = r'''model Strs
  parameter String label = "a \"quoted\" label\\ with\nnewline & <xml> é" "the label";
  constant String unit_name = "kg";
  parameter String empty;
  parameter Real k = 2;
  Real x(start = 1, fixed = true);
equation
  der(x) = -k * x;
  assert(x > -1, "x of " + label + " is too small");
end Strs;
'''
LABEL = 'a "quoted" label\\ with\nnewline & <xml> é'


@pytest.fixture(scope="module")
def fmu(tmp_path_factory):
    d = tmp_path_factory.mktemp("strings")
    src = d / "Strs.mo"
    src.write_text(MODEL, encoding="utf-8")
    out = d / "Strs.fmu"
    api.export_fmu(api.load(src), out, fmi_type="both", progress=False)
    return out


def test_strings_reach_the_model_and_print_back():
    model = parse_modelica(MODEL, "Strs.mo")
    assert [(p.name, p.value, p.constant) for p in model.strings] == \
        [("label", LABEL, False), ("unit_name", "kg", True), ("empty", "", False)]
    assert model.strings[0].loc.line == 2
    assert parse_modelica(print_model(model), "printed.mo") == model


@pytest.mark.requires_sundials    # the fixture builds a Co-Simulation FMU too
def test_model_description_holds_string_variables(fmu):
    assert validate_fmu(str(fmu)) == []
    md = read_model_description(str(fmu))
    strings = {v.name: v for v in md.modelVariables if v.type == "String"}
    assert [(n, v.valueReference, v.causality, v.variability, v.start)
            for n, v in strings.items()] == [
        ("label", 0, "parameter", "fixed", LABEL),
        ("unit_name", 1, "local", "constant", "kg"),
        ("empty", 2, "parameter", "fixed", "")]
    assert strings["label"].description == "the label"


def _instance(fmu, tmp_path):
    md = read_model_description(str(fmu))
    unzipdir = extract(str(fmu), str(tmp_path / "x"))
    inst = FMU2Model(guid=md.guid, unzipDirectory=unzipdir,
                     modelIdentifier=md.modelExchange.modelIdentifier, instanceName="s")
    inst.instantiate()
    return inst, unzipdir


@pytest.mark.requires_sundials    # the fixture builds a Co-Simulation FMU too
def test_get_and_set_strings_before_initialization(fmu, tmp_path):
    inst, unzipdir = _instance(fmu, tmp_path)
    try:
        inst.setString([0, 2], ["new 'value' \"q\"", "ü"])
        inst.setupExperiment(startTime=0.0)
        inst.enterInitializationMode()
        assert inst.getString([0, 1, 2]) == [b"new 'value' \"q\"", b"kg", "ü".encode()]
        inst.setString([2], ["again"])
        inst.exitInitializationMode()
        assert inst.getString([0, 1, 2]) == [b"new 'value' \"q\"", b"kg", b"again"]
        with pytest.raises(FMICallException):
            inst.setString([0], ["too late"])          # a fixed parameter after initialization
        inst.reset()
        inst.setupExperiment(startTime=0.0)
        inst.enterInitializationMode()
        assert inst.getString([0, 1, 2]) == [LABEL.encode(), b"kg", b""]
        with pytest.raises(FMICallException):
            inst.setString([1], ["g"])                  # a constant
        with pytest.raises(FMICallException):
            inst.getString([3])                         # no such String
    finally:
        inst.freeInstance()
        shutil.rmtree(unzipdir, ignore_errors=True)


@pytest.mark.requires_sundials    # the fixture builds a Co-Simulation FMU too
def test_simulation_is_unchanged_by_strings(fmu):
    res = fmpy.simulate_fmu(str(fmu), output=["x"], relative_tolerance=1e-8)
    assert res["x"][-1] == pytest.approx(2.718281828459045 ** -2, rel=1e-5)


def test_control_character_in_a_string_is_refused(tmp_path):
    src = tmp_path / "Bad.mo"
    src.write_text('model Bad\n  parameter String s = "a\\bc";\n  Real x = time;\nend Bad;\n')
    with pytest.raises(InputError, match=r"Bad\.mo:2:20: String parameter 's'.*control"):
        api.export_fmu(api.load(src), tmp_path / "b.fmu", progress=False)
