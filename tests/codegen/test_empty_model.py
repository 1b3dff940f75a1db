"""A model without equations (``model M end M;``, only parameters, only constants) exports a
schema-valid FMU that FMI hosts simulate (issue 13; OpenModelica exports such models too).

Oracles: fmpy.validate_fmu (the FMI 2.0 XSD and FMPy's rules) finds no problem, FMPy simulates
the FMU as Model Exchange and Co-Simulation, and the parameter's value read back is its binding.
"""

import pytest

fmpy = pytest.importorskip("fmpy")

from fmpy.validation import validate_fmu  # noqa: E402

from mdae_fmu import api  # noqa: E402
from mdae_fmu.fmu.export import PLACEHOLDER_NAME  # noqa: E402

MODELS = {
    "Empty": "model Empty\nend Empty;\n",
    "OnlyParameter": "model OnlyParameter\n  parameter Real p = 2.5;\nend OnlyParameter;\n",
    "Described": 'model Described "nothing to compute"\n  annotation(experiment(StopTime = 2));\n'
                 "end Described;\n",
}


@pytest.mark.requires_sundials
@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_without_equations_exports_a_valid_fmu(tmp_path, name):
    src = tmp_path / f"{name}.mo"
    src.write_text(MODELS[name])
    fmu = tmp_path / f"{name}.fmu"
    api.export_fmu(api.load(src), fmu, fmi_type="both", progress=False)
    assert validate_fmu(str(fmu)) == []
    md = fmpy.read_model_description(str(fmu))
    names = [v.name for v in md.modelVariables]
    assert names == ([PLACEHOLDER_NAME] if name != "OnlyParameter" else ["p"])
    for kind in ("ModelExchange", "CoSimulation"):
        res = fmpy.simulate_fmu(str(fmu), fmi_type=kind, output=names)
        assert res["time"][-1] == pytest.approx(2.0 if name == "Described" else 1.0)
        expected = 2.5 if name == "OnlyParameter" else 0.0
        assert (res[names[0]] == expected).all()


def test_parameter_of_an_empty_model_can_be_set(tmp_path):
    src = tmp_path / "OnlyParameter.mo"
    src.write_text(MODELS["OnlyParameter"])
    fmu = tmp_path / "p.fmu"
    api.export_fmu(api.load(src), fmu, progress=False)
    res = fmpy.simulate_fmu(str(fmu), start_values={"p": -4.0}, output=["p"])
    assert (res["p"] == -4.0).all()
