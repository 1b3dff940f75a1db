"""``export(model, path)``: model -> FMI 2.0 Model Exchange FMU.

Pipeline (docs/architecture.md): structural analysis (`mdae_fmu.structure.per_mode`) -> compiled
plan (`mdae_fmu.codegen.plan`) -> events and initial system -> C sources (Jinja2 templates) ->
modelDescription.xml -> gcc -> zip. The GUID is a hash of the generated sources and model
description, so it changes exactly when the FMU's content does, and the same model gives a
byte-identical FMU.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..collector import gc_paused
from ..diagnostics import InputError, ModelRejected
from ..progress import Progress, as_progress  # noqa: F401  (Progress: API)
from ..ir import Model
from ..codegen.emit import TABLE_UNITS, generate_sources
from ..codegen.events import EventPlan, plan_events
from ..codegen.initialization import InitPlan, plan_initialization
from ..codegen.plan import CompiledModel, compile_model, fmi_name
from ..codegen.restarts import with_transient_restarts
from .build import EarlyUnits, compile_shared_library, start_early
from .cosim import (DENSE, check_fmi_type, choose_linear_solver, configure_sources, offers_cs,
                    state_pattern, sundials_compile_flags, sundials_link_args)
from .dependencies import Structure, model_structure
from .model_description import (merge_default_experiment, model_description_pieces,
                                resolve_default_experiment)
from ..output import atomic_output, writing
from ..symbolic import SymbolTable
from ..work_budget import reports_call_sites
from .package import build_description, write_zip
from .strings import check_strings, strings_source

if TYPE_CHECKING:
    from ..codegen.guarded import GuardedPlan

GUID_PLACEHOLDER = "{00000000-0000-0000-0000-000000000000}"
# above this many blocks the straight-line schedule files are compiled with -O1: gcc's -O2
# costs 25-40 % more there and the simulation is no faster, its time being the integrator's
# linear algebra (benchmarks/optlevel_bench.py; table and rule in docs/fmi-mapping.md)
LARGE_SCHEDULE_BLOCKS = 1000
PLATFORM = "linux64"
#: the units of a large model's name tables (`mdae_fmu.codegen.emit.TABLE_UNITS`), compiled
#: while the model description is built
TABLE_UNIT_FILES = tuple(unit for unit, _ in TABLE_UNITS.values())


def content_guid(parts: Iterable[bytes | list[bytes]]) -> str:
    """A GUID-formatted SHA-256 digest of the FMU content (module docstring): of each part its
    length and its bytes, a part given as a list of pieces hashed as their concatenation (the
    pieces are never joined)."""
    h = hashlib.sha256()
    for p in parts:
        pieces = [p] if isinstance(p, bytes) else p
        h.update(sum(len(q) for q in pieces).to_bytes(8, "little"))
        for q in pieces:
            h.update(q)
    x = h.hexdigest()
    return "{" + f"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:32]}" + "}"


@reports_call_sites
def export(model: Model, path: Path, fmi_type: str = "me", *,
           default_experiment: dict | None = None, analysis=None,
           erasure: str = "restricted", lemma22: str = "two-graph", report=None,
           progress: Progress | bool | None = None, backend: str = "c",
           implicit: bool | None = None, strict_units: bool = False,
           on_warning: Callable[[str], None] | None = None) -> Path:
    """Build the FMU of ``model`` at ``path`` and return ``path``.

    ``fmi_type``: ``"me"`` (Model Exchange), ``"cs"`` (Co-Simulation with embedded CVODE,
    docs/cosimulation.md) or ``"both"``. ``default_experiment``:
    ``{"startTime", "stopTime", "tolerance", "stepSize"}``, each optional, overriding the
    model's experiment annotation (defaults:
    `mdae_fmu.fmu.model_description.DEFAULT_EXPERIMENT`); its tolerance is also the CS
    integrator's tolerance when the host gives none.

    ``analysis``: the `mdae_fmu.analysis.Analysis` of ``model`` (per-mode structure, automaton,
    restarts, impulses), else computed here with ``erasure`` and ``lemma22`` exactly as
    ``mdae-fmu analyze`` does (``report``: an already computed per-mode `ModesReport` to
    start from). Code generation consumes this one analysis and never re-runs one; a model the
    analysis rejects raises `ModelRejected` with the diagnostics of ``analyze``'s verdict, so
    the two commands give one verdict. ``progress``: a `Progress`, None for the default
    (stage names on a terminal), or False for silence. ``implicit``: None (default) or True:
    every model is exported on the guarded block schedule of its analysis
    (`Analysis.guarded`, `mdae_fmu.codegen.guarded`, issue 26; a model of one mode on its
    mode's, `plan_code`), the one product path; True (``--implicit``) also refuses a
    given analysis without a schedule (docs/decisions.md §19). False
    (the per-mode FMU) was removed and raises `InputError` naming the guarded default.
    ``strict_units``: unit inconsistencies reject the model (`mdae_fmu.unit_check`); a given
    ``analysis`` keeps the choice it was made with.
    ``on_warning``: called with each warning of the analysis (``W-CODE: message``,
    `mdae_fmu.analysis.Analysis.warnings`), the text ``analyze`` prints, before code generation.

    ``backend``: ``"c"`` (generated C, gcc) or ``"python"``: a pythonfmu Co-Simulation FMU
    that runs the same plan with numpy/scipy, no C compiler needed
    (`mdae_fmu.fmu.python_backend`, docs/python-backend.md; ``fmi_type`` must be ``"cs"``;
    a multimode model runs its guarded schedule, ``implicit`` is not read)."""
    check_fmi_type(fmi_type)
    if implicit is False:
        raise InputError(REMOVED_PER_MODE)
    if backend not in ("c", "python"):
        raise ModelRejected(f"unknown backend {backend!r}: use c or python")
    if backend == "python":
        from .python_backend import check_available
        if fmi_type != "cs":
            raise ModelRejected("the python backend builds Co-Simulation FMUs only: "
                                "use --fmi-type cs")
        check_available()
    default_experiment = resolve_default_experiment(
        merge_default_experiment(model.experiment, default_experiment))
    progress = as_progress(progress, "export")
    path = Path(path)
    if analysis is not None and analysis.model_name != model.name:
        raise ValueError(f"the analysis is of model {analysis.model_name}, not {model.name}")
    # the destination is checked, and a temporary file reserved next to it, before any work;
    # the FMU replaces the destination only once complete (mdae_fmu.output)
    with atomic_output(path, (model.source,), make_parents=True) as partial, \
            gc_paused():
        if analysis is None:
            from ..analysis import analyze
            analysis = analyze(model, erasure=erasure, lemma22=lemma22, modes=report,
                               progress=progress, implicit=True if implicit else None,
                               strict_units=strict_units, full=False)
        analysis.raise_if_rejected()
        if on_warning is not None:
            for warning in analysis.warnings:
                on_warning(warning)
        if backend == "c":
            analysis = scheduled(analysis, bool(implicit))
        if backend == "python":
            from .python_backend import python_fmu_bytes
            progress("code generation: python plan")
            data = python_fmu_bytes(model, analysis, default_experiment)
            writing(partial, path, lambda: partial.write_bytes(data))
        else:
            plan = plan_code(model, analysis, progress)
            # the analysis' parts that the plan does not hold (per-mode structure, automaton)
            # are released before the C is printed (a given analysis stays the caller's)
            del analysis
            entries = code_entries(plan, fmi_type, default_experiment, progress)
            writing(partial, path, lambda: write_zip(partial, entries))
    progress("done")
    return path


#: The message of the removed per-mode option (``export --per-mode``, ``implicit=False``).
REMOVED_PER_MODE = ("the per-mode FMU (--per-mode, implicit=False) was removed (issue 26): a "
                    "multimode model is exported on its guarded block schedule, the default "
                    "(drop the option); `mdae-fmu analyze --list-modes` prints the enumerated "
                    "modes")


#: The one variable of the FMU of a model that has none (FMI 2.0 requires a ScalarVariable).
PLACEHOLDER_NAME = "_empty_model"


def with_placeholder_variable(model: Model) -> Model:
    """``model``, or, when it declares no variable at all (``model M end M;``, or only
    String variables, which do not reach the model), the same model with one local constant
    ``_empty_model = 0``: the FMI 2.0 schema requires at least one ScalarVariable in
    ModelVariables (an empty ModelStructure is valid), and FMI hosts refuse an FMU without.
    Modelica tools export such models too (docs/fmi-mapping.md, "Empty models")."""
    if model.variables or model.strings:
        return model

    from .. import expr as E
    from ..ir import Variable
    placeholder = Variable(PLACEHOLDER_NAME, "Real", "constant", "local", start=E.Const(0.0),
                           binding=E.Const(0.0),
                           description="placeholder: the model has no variable, and an FMI "
                                       "2.0 FMU needs one")
    return dataclasses.replace(model, variables=(placeholder,))


def scheduled(analysis, implicit: bool):
    """``analysis`` with the guarded schedule ``export`` generates: every accepted analysis
    has one (a model of one mode its mode's schedule wrapped,
    `mdae_fmu.analysis.with_single_schedule`), and an analysis of one mode without one
    (made by hand: a saved one of another version is refused on reading) is given it
    here. A multimode analysis without one (the analysis
    rejects such a model, E-NO-SCHEDULE, so only a saved analysis or the enumerated one,
    ``implicit=False``, can be one), or ``implicit`` (``--implicit``) asked of an analysis of
    one mode without one: `ModelRejected` with the reason."""
    if analysis.modes is None or analysis.guarded is not None:
        return analysis
    if not implicit and len(analysis.modes.modes) == 1:
        from ..analysis import with_single_schedule
        return with_single_schedule(analysis)
    why = analysis.guarded_refusal or (
        "the analysis enumerated the modes (implicit=False, `mdae-fmu analyze --list-modes`: "
        "the debugging view, which builds none); export with the default analysis "
        "(`mdae-fmu export MODEL`, or a saved `mdae-fmu analyze --json` without --list-modes)"
        if len(analysis.modes.modes) > 1 else "the analysis built no guarded schedule")
    raise ModelRejected(f"model {analysis.model_name}: no guarded schedule: {why}")


@dataclass
class CodePlan:
    """What code generation reads of an accepted analysis (`plan_code`): the model the code
    is generated from, its compiled plan, event plan, initial system and ModelStructure
    dependencies (`code_structure`, computed once the C is printed), and, for the guarded
    schedule, its `mdae_fmu.codegen.guarded.GuardedPlan`.
    The rest of the analysis (the per-mode structure, the automaton) is not needed once this
    exists, and `export` releases it before the C sources are printed; `code_entries`
    releases the plan's own expressions once they are printed (`emitted`)."""
    model: Model
    compiled: CompiledModel
    events: EventPlan
    init: InitPlan
    structure: Structure | None = None
    guarded: GuardedPlan | None = None
    #: the arguments of `model_structure` besides the compiled model and its schedule, when
    #: ``structure`` is not computed yet (`code_entries` computes it once the C is printed)
    structure_args: dict | None = None


def fmu_entries(model: Model, fmi_type: str, default_experiment: dict, analysis,
                progress: Progress) -> dict[str, bytes | str | list[bytes]]:
    """The files of the FMU of ``model`` (archive name -> bytes, a source as its text, the
    model description as its list of pieces: `mdae_fmu.fmu.package.write_zip`) from its
    accepted ``analysis`` and its guarded schedule (`scheduled`): planning (`plan_code`), C
    sources, model description, gcc (`code_entries`; parameters: `export`)."""
    return code_entries(plan_code(model, analysis, progress), fmi_type, default_experiment,
                        progress)


def plan_code(model: Model, analysis, progress: Progress) -> CodePlan:
    """The `CodePlan` of ``model`` from its accepted ``analysis``'s guarded schedule
    (`Analysis.guarded`, `scheduled`; `fmu_entries`). The schedule of a model of one mode
    (`mdae_fmu.implicit.schedule.GuardedSchedule.single`: every formula true, nothing
    restarts, docs/theory.md §10.14) is planned and printed as that mode's block schedule
    (`compile_model`: no mode logic, no ``model_modes.c``); any other by
    `mdae_fmu.codegen.guarded`."""
    # guards evaluated by event iteration are compiled as the cascade reads them, i.e. on
    # the previous instant's values (Def 33, mdae_fmu.modes.event_iteration): the analysis
    # carries that form of the model (Analysis.code_model)
    model, report = analysis.code_model or model, analysis.guarded.single
    if report is None:
        from ..codegen.guarded import (guarded_initialization, mode_dependent_unknowns,
                                       plan_guarded)
        progress("code generation: plan")
        plan = plan_guarded(model, analysis.guarded)
        cm = plan.compiled
        ev = plan_events(model, cm, extra_exprs=plan.guards + plan.watched,
                         steady=plan.steady_states)
        init = guarded_initialization(model, plan)
        args = {"guards": plan.guards, "extra_symbols": {b[0]: b[1] for b in plan.banded},
                "init": init, "mode_dependent": mode_dependent_unknowns(plan)}
        return CodePlan(model=model, compiled=cm, events=ev, init=init, guarded=plan,
                        structure_args=args)
    model = with_placeholder_variable(model)
    progress("code generation: plan")
    cm = with_transient_restarts(model, compile_model(model, report), analysis.automaton)
    ev = plan_events(model, cm, report=report, steady=cm.state_symbols)
    init = plan_initialization(model, cm)
    return CodePlan(model=model, compiled=cm, events=ev, init=init,
                    structure_args={"init": init})


def code_structure(plan: CodePlan) -> Structure:
    """The ModelStructure dependencies of ``plan`` (`model_structure` of its compiled model
    and schedule), computed once."""
    if plan.structure is None:
        plan.structure = model_structure(plan.compiled, [plan.compiled.blocks],
                                         **(plan.structure_args or {}))
        plan.structure_args = None
    return plan.structure


def code_entries(plan: CodePlan, fmi_type: str, default_experiment: dict,
                 progress: Progress) -> dict[str, bytes | str | list[bytes]]:
    """The files of the FMU (archive name -> bytes, text or pieces, `fmu_entries`) of a
    `CodePlan`: the C sources, the model description, gcc."""
    model, cm, ev = plan.model, plan.compiled, plan.events

    def on_blocks(done, total):
        progress(f"code generation: block {done}/{total}")

    progress("code generation")
    try:
        if plan.guarded is not None:
            from ..codegen.guarded import generate_guarded_sources
            sources = generate_sources(cm, ev, plan.init, GUID_PLACEHOLDER,
                                       modes=generate_guarded_sources(plan.guarded, ev))
        else:
            sources = generate_sources(cm, ev, plan.init, GUID_PLACEHOLDER,
                                       progress=on_blocks)
    except ValueError as err:
        raise ModelRejected(f"model {model.name}: cannot generate code: {err}") from None
    # the dependencies read the plan's symbols and blocks: computed once the C is printed,
    # so that they are not held while it is (at 10^6 equations about 500 MB, beside the
    # printing's own peak), and before the plan is released
    structure = code_structure(plan)
    # printed: the model description and gcc are built without the symbols, expressions and
    # blocks, released here (the plan is the largest part of the export's memory)
    cm = plan.compiled = emitted(cm)
    plan.guarded = None
    return _build_entries(model, fmi_type, default_experiment, cm, ev, structure,
                          sources, progress)


def emitted(cm: CompiledModel) -> CompiledModel:
    """``cm`` once its C is printed: what the model description and the build read of it
    (its names, variables and states, and the number of its blocks: at most
    `LARGE_SCHEDULE_BLOCKS` + 1 of them are kept), without its symbol table, slot maps,
    expressions and blocks, so that these are released before the model description is built
    (at 10^5 equations about a tenth of the export's peak memory, docs/performance.md)."""
    return dataclasses.replace(
        cm, table=SymbolTable(), slots={}, pre_slots={},
        blocks=cm.blocks[:LARGE_SCHEDULE_BLOCKS + 1], consistency=(),
        discrete_assignments=(), calculated_parameters=(), state_symbols=frozenset(),
        continuous_symbols=frozenset(), parameter_symbols=frozenset(),
        event_constant_symbols=frozenset(), start_bindings=(), guesses={}, when_restarts={})


def _build_entries(model: Model, fmi_type: str, default_experiment: dict, cm, ev, structure,
                   sources: dict, progress: Progress) -> dict[str, bytes | str | list[bytes]]:
    """Model description, gcc and the archive's files from the generated ``sources``."""
    with tempfile.TemporaryDirectory(prefix="mdae_fmu_") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        # the name tables of a large model (no header, no GUID) compile meanwhile
        early = start_early(src, {n: sources[n] for n in TABLE_UNIT_FILES if n in sources},
                            sundials_compile_flags(fmi_type))
        try:
            md, binary, sources, c_files = _description_and_binary(
                model, fmi_type, default_experiment, cm, ev, structure, sources, src, early,
                progress)
        finally:
            if early is not None:
                early.close()
    progress("packaging")
    entries: dict[str, bytes | str | list[bytes]] = {
        "modelDescription.xml": md,
        f"binaries/{PLATFORM}/{cm.identifier}.so": binary,
        "sources/buildDescription.xml": build_description(cm.identifier, c_files,
                                                          offers_cs(fmi_type))}
    # the sources as text, each encoded only when zipped (`write_zip`): never all of them
    # twice, as text and as bytes (at 10^6 equations 66 MB)
    for name, text in sources.items():
        entries[f"sources/{name}"] = text
    return entries


def _description_and_binary(model: Model, fmi_type: str, default_experiment: dict, cm, ev,
                            structure, sources: dict, src: Path, early: EarlyUnits | None,
                            progress: Progress) -> tuple[list[bytes], bytes, dict, list[str]]:
    """The model description (its GUID set) as its encoded pieces
    (`mdae_fmu.fmu.model_description.model_description_pieces`), the shared library built in
    the source directory ``src`` (``early``: units already compiling there), the sources as
    configured (config.h with the GUID) and the names of the C units."""
    link_args = sundials_link_args() if offers_cs(fmi_type) else ()
    nz = sum(1 for r in ev.relations if r.kind == "state")
    derivatives = {v.vr: v.name for v in cm.variables if v.type == "Real"}
    state_names = {s.name for s in cm.states}
    index = {v.name: k for k, v in enumerate(cm.variables, start=1) if v.name in state_names}
    pattern = state_pattern([index[s.name] for s in cm.states],
                            [derivatives[s.der_slot] for s in cm.states], structure.continuous)
    sources = configure_sources(sources, fmi_type, default_experiment["tolerance"],
                                choose_linear_solver(pattern) if offers_cs(fmi_type) else DENSE)
    check_strings(model.strings)
    sources["model_strings.c"] = strings_source(model.strings)
    c_files = sorted(n for n in sources if n.endswith(".c"))
    md = model_description_pieces(
        cm, nz, GUID_PLACEHOLDER, c_files, default_experiment, fmi_type=fmi_type,
        structure=structure, enumerations=model.enumerations,
        declared_types={fmi_name(v.name): v.declared_type for v in model.variables
                        if v.declared_type},
        display_units={fmi_name(v.name): v.display_unit for v in model.variables
                       if v.display_unit},
        strings=tuple(dataclasses.replace(p, name=fmi_name(p.name)) for p in model.strings))
    # the GUID hashes the document with its placeholder and the sources, one part at a time,
    # and is set in the pieces where the placeholder occurs (the root element's, never
    # across two pieces): the document is never copied whole (at 10^6 equations 278 MB)
    guid = content_guid(itertools.chain([md], ([n.encode() + b"\0", sources[n].encode()]
                                               for n in sorted(sources))))
    placeholder = GUID_PLACEHOLDER.encode()
    md = [p.replace(placeholder, guid.encode()) if placeholder in p else p for p in md]
    sources["config.h"] = sources["config.h"].replace(GUID_PLACEHOLDER, guid)

    progress(f"gcc: {len(c_files)} units")
    written = early.futures if early is not None else {}
    for name, text in sources.items():
        if name not in written:
            (src / name).write_text(text, encoding="utf-8")
    so = src.parent / f"{cm.identifier}.so"
    flags: dict[str, tuple[str, ...]] = {}
    if len(cm.blocks) > LARGE_SCHEDULE_BLOCKS:
        flags = {n: ("-O1",) for n in c_files if n.startswith("model_schedule_")}
    compile_shared_library(src, c_files, so, link_args=link_args, per_file_flags=flags,
                           extra_flags=sundials_compile_flags(fmi_type),
                           progress=lambda k, n: progress(f"gcc: unit {k}/{n}"), early=early)
    return md, so.read_bytes(), sources, c_files
