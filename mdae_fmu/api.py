"""The Python API: the same operations as the command line, on plain data."""

from __future__ import annotations

from pathlib import Path

from .diagnostics import InputError
from .ir import Model


def load(path: str | Path) -> Model:
    """Read a model from flat Modelica / Base Modelica (``.mo``, ``.bmo``) or an XML equation
    list (``.xml``). Raises `InputError` (exit code 2) when the file cannot be read."""
    path = Path(path)
    if path.suffix.lower() == ".xml":
        from .importers.xml_eqlist import load_xml
        return load_xml(path)
    from .importers.flat_modelica import load_modelica
    return load_modelica(path)


def analyze(model: Model, erasure: str = "restricted", lemma22: str = "two-graph",
            progress=False):
    """Structural analysis of every mode and every mode change -> `mdae_fmu.analysis.Analysis`,
    an immutable result that `export_fmu` accepts as is."""
    from .analysis import analyze as _analyze
    from .progress import as_progress
    return _analyze(model, erasure=erasure, lemma22=lemma22,
                    progress=as_progress(progress, "analyze"))


def export_fmu(model: Model, path: str | Path, fmi_type: str = "me",
               default_experiment: dict | None = None, *, analysis=None,
               erasure: str = "restricted", lemma22: str = "two-graph", progress=False):
    """Build an FMI 2.0 FMU of ``model`` at ``path``. ``default_experiment``: optional
    ``{"startTime", "stopTime", "tolerance", "stepSize"}`` for the FMU's DefaultExperiment
    (missing entries: 0, 1, 1e-6, (stop - start)/500). ``analysis``: the result of `analyze`
    for this model (else the analysis runs here with ``erasure`` and ``lemma22``); a model the
    analysis rejects raises `mdae_fmu.diagnostics.ModelRejected`."""
    from .fmu.export import export
    return export(model, Path(path), fmi_type=fmi_type,
                  default_experiment=default_experiment, analysis=analysis,
                  erasure=erasure, lemma22=lemma22, progress=progress)


__all__ = ["load", "analyze", "export_fmu", "InputError"]
