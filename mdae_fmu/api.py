"""The Python API: the same operations as the command line, on plain data."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .diagnostics import InputError, SourceLoc
from .ir import Model

if TYPE_CHECKING:
    from .progress import Progress


def load(path: str | Path, model: str | None = None) -> Model:
    """Read a model from flat Modelica / Base Modelica (``.mo``, ``.bmo``) or an XML equation
    list (``.xml``); a hierarchical ``.mo`` file is flattened by rumoca when it is installed
    (`mdae_fmu.importers.frontend`). ``model``: the class to read from a file that defines
    several (qualified ``P.A`` or, when unique, ``A``; `importers.select`); without it a flat
    file with several models is refused with their names, and a hierarchical file flattens
    `frontend.choose_model`. Raises `InputError` (exit code 2) when the file cannot be read or
    has no class ``model`` (the message lists the file's models)."""
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
        return frontend.load_hierarchical(text, path, err, model)


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
            progress=False):
    """Structural analysis of every mode and every mode change -> `mdae_fmu.analysis.Analysis`,
    an immutable result that `export_fmu` accepts as is."""
    from .analysis import analyze as _analyze
    from .progress import as_progress
    return _analyze(model, erasure=erasure, lemma22=lemma22,
                    progress=as_progress(progress, "analyze"))


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
               implicit: bool | None = None):
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
    constraints on positions (`mdae_fmu.fmu.export.guarded_by_default`)."""
    from .fmu.export import export
    return export(model, Path(path), fmi_type=fmi_type,
                  default_experiment=default_experiment, analysis=analysis,
                  erasure=erasure, lemma22=lemma22, progress=progress, backend=backend,
                  implicit=implicit)


def compare(test: str | Path, reference: str | Path, **options):
    """Compare TEST against REFERENCE (each a model file, an FMU or a result CSV) in a tube
    -> `mdae_fmu.comparison.Comparison` (``.passed``, ``.signals``, ``.render_text()``).
    Options: ``variables``, ``rtol``, ``atol``, ``time_tolerance``, ``stop_time``,
    ``method`` ("tube" or "fmpy"), ``start_values``, ``input``, ``solver_tolerance``
    (docs/regression.md)."""
    from .comparison import compare as _compare
    return _compare(test, reference, **options)


def sweep(model_or_fmu: str | Path, params, **options):
    """Simulate one FMU over many parameter sets on Dask -> `mdae_fmu.sweeps.SweepResult`
    (``.rows``, ``.column(name)``, ``.to_pandas()``). ``params``: ``["j1=0.5:2.0:10", ...]``
    or ``{"j1": [1.0, 2.0]}``. Options: ``outputs``, ``samples``, ``seed``, ``stop_time``,
    ``output`` (.csv/.parquet, streamed), ``resume``, ``scheduler``, ``n_workers``,
    ``client``, ``event_values``, ``serial`` (docs/regression.md)."""
    from .sweeps import sweep as _sweep
    return _sweep(model_or_fmu, params, **options)


def regress(suite_file: str | Path, **options) -> dict:
    """Run a regression suite (TOML) on Dask and write its HTML index and JUnit XML ->
    ``{"suite", "entries", "passed", "index", "junit"}`` (docs/regression.md)."""
    from .regression import regress as _regress
    return _regress(suite_file, **options)


__all__ = ["load", "analyze", "export_fmu", "compare", "sweep", "regress", "InputError"]
