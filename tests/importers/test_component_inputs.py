"""Inputs of sub-components in flat models (OpenModelica's flat output keeps the prefix:
``input Real SignalCurrent1.i``). Only the top-level model's inputs are inputs of the
simulated model; a component input that a connection equation determines is an unknown, and
an unconnected one stays an input of the model, as OpenModelica treats it
(importers/flat_modelica.py, _connected_component_inputs)."""

import xml.etree.ElementTree as ET
import zipfile

import pytest

from mdae_fmu.cli import main

# the connection c.y = integ.u determines integ.u; integ.y = integ.u is the component's own
# equation of a pass-through and does not; free.u is connected to nothing
MODEL = """class ConnectedInputs
  parameter Real c.k = 2.0;
  output Real c.y;
  input Real integ.u "connected";
  Real integ.x(start = 1.0, fixed = true);
  input Real free.u(start = 0.5) "unconnected";
  Real free.y;
  input Real u "a top-level input";
  Real z;
equation
  c.y = c.k;
  der(integ.x) = integ.u;
  free.y = 3.0 * free.u;
  z = free.y + u;
  c.y = integ.u;
end ConnectedInputs;
"""


def test_connected_component_input_is_an_unknown_and_the_others_stay_inputs(tmp_path):
    from fmpy import simulate_fmu

    from mdae_fmu import export_fmu, load
    src = tmp_path / "ConnectedInputs.mo"
    src.write_text(MODEL)
    model = load(src)
    causality = {v.name: v.causality for v in model.variables}
    assert causality["integ.u"] == "local"
    assert causality["free.u"] == "input" and causality["u"] == "input"
    fmu = export_fmu(model, tmp_path / "ConnectedInputs.fmu")
    with zipfile.ZipFile(fmu) as z:
        md = ET.fromstring(z.read("modelDescription.xml"))
    inputs = sorted(sv.get("name") for sv in md.iter("ScalarVariable")
                    if sv.get("causality") == "input")
    assert inputs == ["free.u", "u"]
    r = simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.25, relative_tolerance=1e-10,
                     output=["integ.x", "integ.u", "z"],
                     start_values={"free.u": 2.0, "u": 1.0})
    assert r["integ.u"] == pytest.approx([2.0] * len(r), abs=1e-12)
    assert r["integ.x"] == pytest.approx(1.0 + 2.0 * r["time"], abs=1e-8)
    assert r["z"] == pytest.approx([7.0] * len(r), abs=1e-12)


def test_msl_rectifier_pattern_was_over_determined_and_is_accepted(tmp_path, capsys):
    """The MSL 3.1 Rectifier's current source: ``input Real SignalCurrent1.i`` with the
    component's equation ``SignalCurrent1.i = SignalCurrent1.p.i`` and the connection
    ``Constant1.y = SignalCurrent1.i``; read as a model input, the connection had no unknown
    left and the analysis reported it as over-determining Constant1.y."""
    src = tmp_path / "Src.mo"
    src.write_text("""class Src
  parameter Real Constant1.k = 0.5;
  output Real Constant1.y;
  input Real SignalCurrent1.i;
  Real SignalCurrent1.p.i;
  Real R.v(start = 0.0);
equation
  Constant1.y = Constant1.k;
  SignalCurrent1.i = SignalCurrent1.p.i;
  R.v = 10.0 * SignalCurrent1.p.i;
  Constant1.y = SignalCurrent1.i;
end Src;
""")
    assert main(["analyze", str(src)]) == 0
    out = capsys.readouterr().out
    assert "verdict: accepted" in out and "over-determine" not in out
