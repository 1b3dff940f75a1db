"""The Python API: the same operations as the command line, on plain data (reading,
analysing and exporting models here; simulating, comparing, sweeping and regression suites in
`mdae_fmu.simulation`, `comparison`, `sweeps` and `regression`, all bound in the package:
``mdae_fmu.simulate/compare/sweep/regress``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .diagnostics import InputError
from .importers.reading import load
from .ir import Model

if TYPE_CHECKING:
    from .progress import Progress


def analyze(model: Model, erasure: str = "restricted", lemma22: str = "two-graph",
            progress=False, *, strict_units: bool = False, implicit: bool | None = None):
    """Structural analysis of every mode and every mode change -> `mdae_fmu.analysis.Analysis`,
    an immutable result that `export_fmu` accepts as is. The units are checked too
    (``.units``: ``W-UNIT`` warnings, `mdae_fmu.unit_check`); ``strict_units`` makes them
    reject the model. ``implicit``: None (default) analyses a multimode model by the one
    analysis (modes as formulas over the guards, the guarded block schedule; ``.modes`` and
    ``.automaton`` are None); False enumerates its modes and explores the mode changes
    (``.modes``, ``.automaton``: the view of ``mdae-fmu analyze --list-modes``, up to 2^12
    consistent modes), the debugging view, with no guarded schedule (`export_fmu` refuses it
    for a multimode model); True is the default (kept for scripts: docs/decisions.md §19)."""
    from .analysis import analyze as _analyze
    from .progress import as_progress
    return _analyze(model, erasure=erasure, lemma22=lemma22,
                    progress=as_progress(progress, "analyze"), strict_units=strict_units,
                    implicit=implicit)


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
    ``implicit``: a multimode model is exported on the guarded block schedule of its analysis
    (None, the default; True refuses a model whose analysis built none); False, the removed
    per-mode FMU, raises `InputError` (`mdae-fmu analyze --list-modes` lists the enumerated
    modes). ``strict_units``:
    unit inconsistencies reject the model (`mdae_fmu.unit_check`). ``on_warning``: called
    with each warning of the analysis (``W-CODE: message``, as ``analyze`` prints it)."""
    from .fmu.export import export
    return export(model, Path(path), fmi_type=fmi_type,
                  default_experiment=default_experiment, analysis=analysis,
                  erasure=erasure, lemma22=lemma22, progress=progress, backend=backend,
                  implicit=implicit, strict_units=strict_units, on_warning=on_warning)


__all__ = ["load", "analyze", "export_fmu", "InputError"]
