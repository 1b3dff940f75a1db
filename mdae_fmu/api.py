"""The Python API: the same operations as the command line, on plain data (reading,
analysing and exporting models here; simulating, comparing, sweeping and regression suites in
`mdae_fmu.simulation`, `comparison`, `sweeps` and `regression`, all bound in the package:
``mdae_fmu.simulate/compare/sweep/regress``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .diagnostics import InputError, SourceLoc
from .ir import Model

if TYPE_CHECKING:
    from .progress import Progress


def load(path: str | Path, model: str | None = None, *,
         modelica_path: Sequence[str | Path] = (), keep_flat: str | Path | None = None) -> Model:
    """Read a model from flat Modelica / Base Modelica (``.mo``, ``.bmo``) or an XML equation
    list (``.xml``); a hierarchical ``.mo`` file is flattened by rumoca when it is installed
    (`mdae_fmu.importers.frontend`). ``model``: the class to read from a file that defines
    several (qualified ``P.A`` or, when unique, ``A``; `importers.select`); without it a flat
    file with several models is refused with their names, and a hierarchical file flattens
    `frontend.choose_model`. ``modelica_path``: library directories for a hierarchical model,
    searched before those of the ``MODELICAPATH`` environment variable; ``keep_flat``: a file
    where the flat text of a hierarchical model is written (the locations that are not in
    the user's file refer to it). Raises `InputError` (exit code 2) when the file cannot be
    read or has no class ``model`` (the message lists the file's models)."""
    path = Path(path)
    if path.suffix.lower() == ".xml":
        from .importers.xml_eqlist import load_xml
        model_xml = load_xml(path)
        if model is not None and model != model_xml.name:
            raise InputError(f"no model named '{model}' in this file; its model: "
                             f"{model_xml.name}", SourceLoc(str(path), 1, 1))
        return model_xml
    from .importers.flat_modelica import parse_modelica, read_text
    text = read_text(path)
    flat_text = _one_class(text, path, model)
    try:
        return parse_modelica(flat_text, str(path))
    except InputError as err:
        from .importers import frontend
        # a class chosen among flat ones keeps the flat importer's message
        if not (frontend.uses_hierarchical_keywords(text) if flat_text is not text
                else frontend.is_hierarchical(text)):
            raise
        return frontend.load_hierarchical(text, path, err, model, roots=modelica_path,
                                          keep_flat=keep_flat)


def _one_class(text: str, path: Path, model: str | None) -> str:
    """The text the flat importer reads: ``text`` itself, or with the class ``model`` alone
    when the file defines several (`importers.select`); a flat file with several models and
    no ``model`` is refused with their names. Hierarchical files keep the front end's choice
    (`frontend.choose_model`)."""
    import re

    from .importers import frontend, select
    if model is None and (
            sum(text.count(k) for k in ("model", "block", "class", "package")) <= 1
            or len(re.findall(r"\b(?:model|block|class|package)\s+['A-Za-z_]", text)) <= 1):
        return text                 # cheap tests first: the import of large files stays fast
    spans = select.class_spans(text)
    names = select.model_names(spans)
    if model is None:
        if len(names) > 1 and not frontend.uses_hierarchical_keywords(text):
            select.refuse_several(text, spans, str(path))
        return text
    chosen = select.find_model(spans, model, str(path))
    if len(names) <= 1:             # e.g. Base Modelica's package 'M' around model 'M'
        return text
    return select.select_class(text, spans, chosen)


def analyze(model: Model, erasure: str = "restricted", lemma22: str = "two-graph",
            progress=False, *, strict_units: bool = False):
    """Structural analysis of every mode and every mode change -> `mdae_fmu.analysis.Analysis`,
    an immutable result that `export_fmu` accepts as is. The units are checked too
    (``.units``: ``W-UNIT`` warnings, `mdae_fmu.unit_check`); ``strict_units`` makes them
    reject the model."""
    from .analysis import analyze as _analyze
    from .progress import as_progress
    return _analyze(model, erasure=erasure, lemma22=lemma22,
                    progress=as_progress(progress, "analyze"), strict_units=strict_units)


def save_analysis(model: Model, analysis) -> dict:
    """The JSON value (``"saved_analysis"`` of ``mdae-fmu analyze --json``) of ``analysis``
    and its ``model``, from which `load_analysis` gives them back exactly, so that
    `export_fmu` builds the same FMU without analysing again (`mdae_fmu.saved`)."""
    from .saved import save
    return save(model, analysis)


def load_analysis(path: str | Path):
    """``(model, analysis)`` from a file written by ``mdae-fmu analyze --json``; pass both to
    `export_fmu` (``analysis=``). Raises `InputError` (exit code 2) for a file that is not
    such JSON, was written by another version of mdae-fmu, or was altered."""
    from .saved import load_file
    return load_file(path)


def export_fmu(model: Model, path: str | Path, fmi_type: str = "me",
               default_experiment: dict | None = None, *, analysis=None,
               erasure: str = "restricted", lemma22: str = "two-graph",
               progress: Progress | bool | None = None, backend: str = "c",
               implicit: bool | None = None, strict_units: bool = False, on_warning=None):
    """Build an FMI 2.0 FMU of ``model`` at ``path``. ``default_experiment``: optional
    ``{"startTime", "stopTime", "tolerance", "stepSize"}`` for the FMU's DefaultExperiment
    (missing entries: 0, 1, 1e-6, (stop - start)/500). ``analysis``: the result of `analyze`
    for this model, or the one `load_analysis` read (no analysis runs then: code generation
    consumes it as it is), else the analysis runs here with ``erasure`` and ``lemma22``; a model the
    analysis rejects raises `mdae_fmu.diagnostics.ModelRejected`. ``progress``: None shows the
    stage names on a terminal only, False silences them. ``backend``: ``"c"`` or
    ``"python"`` (a pythonfmu Co-Simulation FMU, ``fmi_type="cs"``; docs/python-backend.md).
    ``implicit``: the guarded schedule from the implicit analysis (True), the per-mode
    schedules (False), or (None) the former for multimode models but those with
    constraints on positions (`mdae_fmu.fmu.export.guarded_by_default`). ``strict_units``:
    unit inconsistencies reject the model (`mdae_fmu.unit_check`). ``on_warning``: called
    with each warning of the analysis (``W-CODE: message``, as ``analyze`` prints it)."""
    from .fmu.export import export
    return export(model, Path(path), fmi_type=fmi_type,
                  default_experiment=default_experiment, analysis=analysis,
                  erasure=erasure, lemma22=lemma22, progress=progress, backend=backend,
                  implicit=implicit, strict_units=strict_units, on_warning=on_warning)


__all__ = ["load", "analyze", "export_fmu", "InputError"]
