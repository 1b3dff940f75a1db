"""The Python API: the same operations as the command line, on plain data."""

from __future__ import annotations

from pathlib import Path

from .diagnostics import InputError
from .ir import Model


def load(path: str | Path, model: str | None = None) -> Model:
    """Read a model from flat Modelica / Base Modelica (``.mo``, ``.bmo``) or an XML equation
    list (``.xml``); a hierarchical ``.mo`` file is flattened by rumoca when it is installed
    (`mdae_fmu.importers.frontend`; ``model``: the qualified name of the class to flatten,
    default `frontend.choose_model`). Raises `InputError` (exit code 2) when the file cannot be
    read."""
    path = Path(path)
    if path.suffix.lower() == ".xml":
        from .importers.xml_eqlist import load_xml
        return load_xml(path)
    from .importers.flat_modelica import parse_modelica, read_text
    text = read_text(path)
    try:
        return parse_modelica(text, str(path))
    except InputError as err:
        from .importers import frontend
        if not frontend.is_hierarchical(text):
            raise
        return frontend.load_hierarchical(text, path, err, model)


def analyze(model: Model, erasure: str = "restricted"):
    """Structural analysis of every mode and every mode change -> `mdae_fmu.analysis.Analysis`."""
    from .analysis import analyze as _analyze
    return _analyze(model, erasure=erasure)


def export_fmu(model: Model, path: str | Path, fmi_type: str = "me",
               default_experiment: dict | None = None):
    """Build an FMI 2.0 FMU of ``model`` at ``path``. ``default_experiment``: optional
    ``{"startTime", "stopTime", "tolerance", "stepSize"}`` for the FMU's DefaultExperiment
    (missing entries: 0, 1, 1e-6, (stop - start)/500)."""
    from .fmu.export import export
    return export(model, Path(path), fmi_type=fmi_type,
                  default_experiment=default_experiment)


__all__ = ["load", "analyze", "export_fmu", "InputError"]
