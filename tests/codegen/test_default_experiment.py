"""The model's ``experiment`` annotation becomes the FMU's DefaultExperiment (issue 15, item 3):
read from flat Modelica, Base Modelica and the XML equation list, checked with file:line:col
messages, written to modelDescription.xml and the CS integrator's default tolerance, overridden
by the command line, and used by FMPy and ``mdae-fmu simulate`` by default."""

from __future__ import annotations

import math
import zipfile

import pytest
from lxml import etree

from mdae_fmu.cli import main
from mdae_fmu.diagnostics import InputError
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.importers.xml_eqlist import parse_xml
from mdae_fmu.importers.xml_writer import model_to_xml
from mdae_fmu.modelica_printer import print_model

DECAY = """class Decay "exponential decay"
  parameter Real k = 2.0;
  Real x(start = 1.0, fixed = true);
equation
  der(x) = -k * x;
  annotation(Documentation(info = "experiment(StopTime = 99)"),
             experiment(StartTime = 0, StopTime = 3, Tolerance = 1e-08, Interval = 0.01,
                        __Dymola_Algorithm = "Dassl"));
end Decay;
"""
EXPECTED = (("StartTime", 0.0), ("StopTime", 3.0), ("Tolerance", 1e-8), ("Interval", 0.01))

DECAY_BMO = """//! base 0.1.0
package 'Decay'
  model 'Decay'
    parameter Real 'k' = 2.0;
    Real 'x'(start = 1.0, fixed = true);
  equation
    der('x') = -'k' * 'x';
    annotation(experiment(StartTime = 0, StopTime = 3, Tolerance = 1e-8, Interval = 0.01));
  end 'Decay';
end 'Decay';
"""


def test_annotation_read_from_every_input_form():
    m = parse_modelica(DECAY, "Decay.mo")
    assert m.experiment == EXPECTED
    assert parse_modelica(DECAY_BMO, "Decay.bmo").experiment == EXPECTED
    xml = model_to_xml(m)
    assert b'<experiment startTime="0.0" stopTime="3.0" tolerance="1e-08" interval="0.01"/>' \
        in xml
    assert parse_xml(xml, "Decay.xml") == m              # the experiment compares too
    assert parse_modelica(print_model(m), "p.mo") == m
    assert parse_modelica(DECAY.replace("Tolerance = 1e-08", "Tolerance = 1e-07"),
                          "d.mo") != m
    # no annotation, or an annotation without experiment: nothing
    assert parse_modelica(DECAY.replace("experiment(", "other("), "d.mo").experiment == ()


@pytest.mark.parametrize("args, message, col", [
    ("StopTime = 2 * 3", "experiment annotation: StopTime must be a number literal", 25),
    ("StartTime = 1, StopTime = 0.5", "StopTime = 0.5 must be after StartTime = 1.0", 40),
    ("Tolerance = 0", "Tolerance = 0.0 must be in (0, 1)", 25),
    ("Interval = -1", "Interval = -1.0 must be positive", 25),
    ("StopTime = 1e400", "StopTime: the number 1e400 is too large for a double", 36),
    ("StopTime = 1, StopTime = 2", "StopTime is given twice", 39),
])
def test_bad_annotation_values_are_refused_where_written(args, message, col):
    text = ("class T\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = -x;\n"
            f"  annotation(experiment({args}));\nend T;\n")
    with pytest.raises(InputError) as err:
        parse_modelica(text, "t.mo")
    assert str(err.value).startswith(f"t.mo:5:{col}: ")
    assert message in str(err.value)


def test_bad_xml_experiment_refused():
    xml = model_to_xml(parse_modelica(DECAY, "Decay.mo")).replace(
        b'stopTime="3.0"', b'stopTime="INF"')
    with pytest.raises(InputError, match=r"<experiment>: StopTime = inf must be a finite"):
        parse_xml(xml, "d.xml")


def _default_experiment(fmu) -> dict:
    with zipfile.ZipFile(fmu) as zf:
        root = etree.fromstring(zf.read("modelDescription.xml"))
        config = zf.read("sources/config.h").decode()
    de = {k: float(v) for k, v in root.find("DefaultExperiment").attrib.items()}
    return de, config


@pytest.fixture(scope="module")
def decay_fmu(tmp_path_factory):
    d = tmp_path_factory.mktemp("de")
    src = d / "Decay.mo"
    src.write_text(DECAY)
    fmu = d / "Decay.fmu"
    assert main(["export", str(src), "-o", str(fmu)]) == 0
    return src, fmu


def test_annotation_in_model_description_and_fmpy_default_run(decay_fmu):
    """DefaultExperiment = the annotation; FMPy without arguments simulates 0 .. 3 s with
    tolerance 1e-8, and the result is the closed form x = exp(-2 t)."""
    from fmpy import simulate_fmu
    _, fmu = decay_fmu
    de, config = _default_experiment(fmu)
    assert de == {"startTime": 0.0, "stopTime": 3.0, "tolerance": 1e-8, "stepSize": 0.01}
    assert "#define MDAE_DEFAULT_TOLERANCE 1e-08" in config       # the CS integrator's default
    r = simulate_fmu(str(fmu))
    assert r["time"][0] == 0.0 and r["time"][-1] == pytest.approx(3.0, abs=1e-12)
    exact = [math.exp(-2 * t) for t in r["time"]]
    assert max(abs(a - b) for a, b in zip(r["x"], exact)) < 1e-5


def test_command_line_overrides_one_value(decay_fmu, tmp_path):
    src, _ = decay_fmu
    fmu = tmp_path / "o.fmu"
    assert main(["export", str(src), "-o", str(fmu), "--stop-time", "5",
                 "--tolerance", "1e-5"]) == 0
    de, config = _default_experiment(fmu)
    assert de == {"startTime": 0.0, "stopTime": 5.0, "tolerance": 1e-5, "stepSize": 0.01}
    assert "#define MDAE_DEFAULT_TOLERANCE 1e-05" in config


def test_simulate_command_uses_the_default_experiment(decay_fmu, tmp_path, capsys):
    """``mdae-fmu simulate`` of the FMU: 0 .. 3 s at the annotated output interval 0.01."""
    _, fmu = decay_fmu
    csv = tmp_path / "d.csv"
    assert main(["simulate", str(fmu), "--output-file", str(csv)]) == 0
    rows = [list(map(float, r.split(","))) for r in csv.read_text().splitlines()[1:]]
    assert len(rows) == 301
    assert rows[1][0] == pytest.approx(0.01) and rows[-1][0] == pytest.approx(3.0)
    assert rows[-1][1] == pytest.approx(math.exp(-6), rel=1e-4)
    assert "simulated 0 .. 3 s" in capsys.readouterr().out


def test_simulate_shorter_than_the_default_experiment_keeps_its_intervals(decay_fmu, tmp_path):
    """``--stop-time 0.3`` on the FMU made for 0 .. 3 s at 0.01: 300 output intervals of 0.001
    (not 30 of 0.01; FMPy's CVode takes at most 500 steps per output interval)."""
    _, fmu = decay_fmu
    csv = tmp_path / "short.csv"
    assert main(["simulate", str(fmu), "--stop-time", "0.3", "--output-file", str(csv)]) == 0
    rows = [list(map(float, r.split(","))) for r in csv.read_text().splitlines()[1:]]
    assert len(rows) == 301
    assert rows[1][0] == pytest.approx(0.001) and rows[-1][0] == pytest.approx(0.3)
    assert rows[-1][1] == pytest.approx(math.exp(-0.6), rel=1e-4)
