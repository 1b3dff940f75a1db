"""The whole compile-time analysis of a model.

A multimode model (more than one consistent mode) has one analysis (`guarded_analysis`, issue
26): the implicit analysis (all modes at once as formulas over the guards, `mdae_fmu.implicit`,
docs/theory.md §10.2) and the guarded block schedule built from it
(`mdae_fmu.implicit.schedule`); no mode is enumerated. The enumerated analysis, the per-mode
structural analysis (`mdae_fmu.structure.per_mode`, docs/theory.md §4) and the exploration of
mode changes into the mode-change automaton (`mdae_fmu.modes`, docs/theory.md §8.1), runs for
a single-mode model, and for a multimode one only when asked for (``implicit=False``: the
tests' oracle and `mdae-fmu analyze --list-modes`, the debugging view; no guarded schedule, so
no FMU). A single-mode model has the per-mode analysis of its one mode, which is what the
implicit analysis computes there (docs/theory.md §10.14), and carries that mode's block
schedule as its guarded schedule (`with_single_schedule`: every accepted analysis has one);
``implicit=True`` is the default (docs/decisions.md §19). The mode changes of a single-mode
model with when-clauses come from the one analysis' event checks and the changes into its
single events on their regions (`mdae_fmu.implicit.when_checks.event_automaton_of`), no
transient mode enumerated. Code generation consumes the `Analysis` and runs none.
`render_text` / `render_json` give the report of `mdae-fmu analyze`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import replace as _copy_with
from typing import TYPE_CHECKING, Any

from .diagnostics import EXIT_OK, EXIT_REJECTED, ModelRejected
from .importers.connection_sets import connection_defects
from .ir import Model
from .report import iter_report_lines
from .report import render_json as _modes_json
from .structure.conversion import Conversion, convert_singular
from .structure.per_mode import ModesReport, analyze_modes
from .structure.structural_parameters import fix_structural_parameters
from .structure.residual_scan import residual_scan
from .structure.when_clauses import when_clause_problems
from .work_budget import reports_call_sites

if TYPE_CHECKING:     # sympy is loaded only by the analyses that need it (docs/performance.md)
    from .implicit.schedule import GuardedSchedule
    # (`mdae_fmu.modes` and the full report's modules are imported by the functions that run
    # them: the analysis of a model without guards loads none of `mdae_fmu.implicit`, issue 29)
    from .modes import Automaton


class ImplicitReport:
    """The implicit analysis' report of an `Analysis` (`mdae_fmu.implicit.analysis.render_text`
    and ``render_json`` of ``ia``, the JSON with ``extra``), each built when first read: only
    ``analyze`` prints it or a save holds it, while it costs about a third of the analysis of
    a model of thousands of equations (docs/performance.md). Every copy of the analysis
    (`dataclasses.replace`) shares it, so it is built at most once."""

    def __init__(self, ia: Any, extra: dict | None = None):
        self.ia, self.extra = ia, dict(extra or {})
        self.built: dict[str, Any] = {}

    def part(self, name: str) -> Any:
        """``implicit_text`` or ``implicit_json``, built on the first call."""
        if name not in self.built:
            from .implicit.analysis import render_json as ia_json, render_text as ia_text
            self.built[name] = (ia_text(self.ia) if name == "implicit_text"
                                else {**ia_json(self.ia), **self.extra})
        return self.built[name]


def deferred_report(ia: Any, extra: dict | None = None) -> dict[str, Any]:
    """The fields ``implicit_text`` and ``implicit_json`` of an `Analysis` whose implicit
    analysis is ``ia``: one `ImplicitReport`, built when first read."""
    report = ImplicitReport(ia, extra)
    return {"implicit_text": report, "implicit_json": report}


class _OnFirstRead:
    """A field of `Analysis` whose value may be an `ImplicitReport`: reading the field gives
    the report's part of that name, built then (a data descriptor; its default is None)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return None
        value = obj.__dict__.get(self.name)
        return value.part(self.name) if isinstance(value, ImplicitReport) else value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.name] = value


class SingleSchedule:
    """The guarded schedule of an accepted model of one mode (`with_single_schedule`), built
    from its per-mode report ``report`` when the field ``guarded`` is first read: an export
    and a saved analysis read it; the verdict, the summary and the full report of a model
    of one mode do not (issue 29: a pass over the unknowns, 0.2 s at 4·10^5 equations, and
    the import of `mdae_fmu.implicit`, docs/performance.md "stop 44")."""

    __slots__ = ("report",)

    def __init__(self, report: ModesReport):
        self.report = report

    def build(self) -> GuardedSchedule:
        from .implicit.schedule import single_mode_schedule
        return single_mode_schedule(self.report)


class _BuiltOnRead:
    """The field ``guarded`` of `Analysis`, whose value may be a `SingleSchedule`: the first
    read builds the schedule and keeps it in its place (a data descriptor; its default is
    None)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return None
        value = obj.__dict__.get(self.name)
        if isinstance(value, SingleSchedule):
            value = obj.__dict__[self.name] = value.build()
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.name] = value


def replace(a: Analysis, **changes: Any) -> Analysis:
    """`dataclasses.replace` of an `Analysis` that passes an unbuilt `ImplicitReport` and
    `SingleSchedule` on as they are (`dataclasses.replace` reads every field, which would
    build them)."""
    for name in ("implicit_text", "implicit_json", "guarded"):
        if name not in changes and name in vars(a):
            changes[name] = vars(a)[name]
    return _copy_with(a, **changes)


@dataclass(frozen=True)
class Analysis:
    """Per-mode report, and the automaton when the modes were regular enough to explore.

    ``rejection`` holds the message of a model rejected before exploration (for instance a
    logico-numerical fixpoint between a guard and the equations it enables).

    ``code_model`` / ``code_modes``: when guards read values computed at the same instant
    (``off = s < 0``), the form of the model code generation compiles, those guards reading
    the previous instant's values (`mdae_fmu.modes.event_iteration.delay_same_instant_guards`,
    same guards, modes and automaton), and its per-mode report; None when the model is
    compiled as it is.

    ``guarded``: the guarded block schedule (the implicit analysis' blocks with their
    formulas and restart systems, `mdae_fmu.implicit.schedule`; for a model of one mode its
    mode's block schedule, `with_single_schedule`), None for a rejected model or when
    ``guarded_refusal`` says why it could not be built;
    ``implicit_text`` / ``implicit_json``: the implicit analysis' report
    (`mdae_fmu.implicit.analysis.render_text`), built when first read (`ImplicitReport`:
    ``analyze`` prints it, a save holds it, an export reads neither); ``init_warnings``: the
    analysis' warnings that no other part carries (``W-...`` lines: W-INIT-INCONSISTENT
    beyond the enumeration).
    ``modes`` and ``automaton`` are None for a multimode model analysed by the one
    analysis (the default), where the implicit analysis is the analysis.

    ``model``: the model analysed when it is not the input: structural conditions on
    parameters evaluated (``fixed_parameters``), and/or numerically singular blocks converted
    (`mdae_fmu.structure.conversion`: the equations rewritten are in ``conversions``);
    ``modes``, the automaton and the report are those of this model."""
    model_name: str
    modes: ModesReport | None
    automaton: Automaton | None
    rejection: str | None = None
    code_model: Model | None = None
    code_modes: ModesReport | None = None
    guarded: GuardedSchedule | None = _BuiltOnRead()  # type: ignore[assignment]
    guarded_refusal: str | None = None
    implicit_text: str | None = _OnFirstRead()    # type: ignore[assignment]
    implicit_json: dict | None = _OnFirstRead()   # type: ignore[assignment]
    #: parameters made constants because a structural condition reads them
    #: (`mdae_fmu.structure.structural_parameters`)
    fixed_parameters: tuple = ()
    model: Model | None = None
    conversions: tuple[Conversion, ...] = ()
    init_warnings: tuple[str, ...] = ()
    #: unit inconsistencies (`mdae_fmu.unit_check.UnitWarning`), warnings unless
    #: ``strict_units`` makes them errors that reject the model
    units: tuple = ()
    strict_units: bool = False

    @property
    def accepted(self) -> bool:
        if self.strict_units and self.units:
            return False
        if self.modes is None:
            return self.rejection is None and self.guarded is not None
        return (self.modes.exit_code == EXIT_OK and self.rejection is None
                and self.automaton is not None and self.automaton.accepted)

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.accepted else EXIT_REJECTED

    @property
    def errors(self) -> tuple[str, ...]:
        """The rejection diagnostics alone (no ``W-...`` warnings)."""
        return tuple(m for m in self.messages if not m.startswith("W-"))

    def raise_if_rejected(self) -> None:
        """`ModelRejected` (exit code 1) with the diagnostics `render_text` prints under
        "verdict: rejected", so that ``export`` and ``analyze`` give one verdict."""
        if not self.accepted:
            why = (f"no guarded schedule: {self.guarded_refusal}" if self.guarded_refusal
                   else "rejected by the analysis")
            errors = self.errors or (f"model {self.model_name}: {why}",)
            raise ModelRejected(f"model {self.model_name}: rejected by the analysis "
                                "(mdae-fmu analyze gives the full report):\n"
                                + "\n".join(f"  {m}" for m in errors))

    @property
    def warnings(self) -> tuple[str, ...]:
        """The warnings (``W-CODE: message``) that ``analyze`` prints under "diagnostics:"."""
        return tuple(m for m in self.messages if m.startswith("W-"))

    @property
    def messages(self) -> tuple[str, ...]:
        """Rejection diagnostics followed by warnings (``W-...``), one string each."""
        out = list(self.modes.messages) if self.modes is not None else []
        if self.rejection:
            out.extend(self.rejection.split("\n"))     # one diagnostic a line
        if self.automaton is not None:
            out.extend(self.automaton.messages)
        out.extend(self.init_warnings)
        out.extend(w.text(self.strict_units) for w in self.units)
        return tuple(out)


@reports_call_sites
def analyze(model: Model, erasure: str = "restricted", lemma22: str = "two-graph", *,
            modes: ModesReport | None = None, progress=None,
            implicit: bool | None = None, strict_units: bool = False,
            full: bool = True) -> Analysis:
    """Analyse every mode; if all are regular, explore every mode change; for a multimode
    model, the implicit analysis and the guarded schedule (module docstring).

    ``erasure``: "restricted" or "canonical" conflict erasure (docs/decisions.md §2);
    ``lemma22``: "two-graph" or "literal" reading of Lemma 22 in the DiffArray of transient
    modes (docs/theory.md §3.3, docs/decisions.md §1). ``modes``: the per-mode report when
    already computed (read by the enumerated analysis only: a multimode model's report is
    ignored unless ``implicit`` is False); ``progress``: called with the name of each stage.
    ``implicit``: None (default) or True analyses a multimode model by the one analysis
    (`guarded_analysis`, no mode enumerated) and a single-mode model by its per-mode
    analysis with that mode's schedule (`with_single_schedule`, which is what the implicit
    analysis computes there, docs/theory.md §10.14; True is kept for scripts and means the
    default, docs/decisions.md §19); False enumerates the
    modes of a multimode model (the per-mode report and the automaton, up to 2^12
    consistent modes: the oracle and the debugging view, with no guarded schedule, so no
    FMU). A single-mode model with when-clauses has, unless ``implicit`` is False, the
    automaton of the one analysis' event checks
    (`mdae_fmu.implicit.when_checks.event_automaton_of`, no transient mode enumerated, so no
    bound on their number).
    ``strict_units``: the unit inconsistencies (`mdae_fmu.unit_check`, always checked)
    reject the model instead of being warnings. ``full``: False when only the verdict, the
    summary or the FMU is wanted: a model without guards then skips the mode-change
    exploration (its automaton is built for the verdict only, `analyze_multimode`), and the
    full report refuses the result.
    Structural conditions that read only parameters are evaluated first
    (`fix_structural_parameters`), and the model so obtained is analysed."""
    from .unit_check import check_units
    units = check_units(model)
    a = _structure(model, erasure, lemma22, modes, progress, implicit, full)
    if units or strict_units:
        return replace(a, units=units, strict_units=strict_units)
    return a


def _structure(model: Model, erasure: str, lemma22: str, modes: ModesReport | None,
               progress, implicit: bool | None, full: bool = True) -> Analysis:
    """`analyze` without the unit check: the modes, the mode changes, the guarded schedule."""
    if lemma22 not in ("two-graph", "literal"):
        raise ValueError(f"lemma22 must be 'two-graph' or 'literal', not {lemma22!r}")
    if erasure not in ("restricted", "canonical"):
        raise ValueError(f"erasure must be 'restricted' or 'canonical', not {erasure!r}")
    if modes is not None and len(modes.modes) > 1 and implicit is not False:
        # a multimode model has the one analysis, which reads no per-mode report: a report
        # given for it is not a second way to a schedule (docs/decisions.md §18)
        modes = None
    if modes is None:
        # the one walk of every residual (`residual_scan`: the per-mode and the implicit
        # stages' checks and signature rows) first, so that it also gives the if-conditions
        # that the structural parameters' and the guards' questions ask next
        residual_scan(model)
        fixed = fix_structural_parameters(model)
        if fixed.parameters:
            a = _structure(fixed.model, erasure, lemma22, None, progress, implicit, full)
            return replace(a, code_model=a.code_model or fixed.model,
                           fixed_parameters=fixed.parameters, model=a.model or fixed.model)
        if progress is not None:
            progress("structure")
        if implicit is not False and more_modes_than(model, 1):
            # a multimode model: the one analysis, no mode enumerated (issue 26); the
            # enumerated analysis only when asked for (implicit=False: the test oracle and
            # `analyze --list-modes`)
            return guarded_analysis(model, progress)
        # (without the full report, the latent equations are made when read: issue 29)
        modes = analyze_modes(model, deferred_latent=not full)
    # a model of one long mode with when-clauses: its mode changes from the one analysis'
    # event checks and restarts, no transient mode enumerated (issue 26 Deliver 1)
    events = (implicit is not False and len(modes.modes) == 1
              and any(g.kind == "transient" for g in model.guards()))
    a = _enumerated(model, modes, erasure, lemma22, progress, full, events)
    if a.accepted and len(modes.modes) == 1:
        return with_single_schedule(a)
    return a


def with_single_schedule(a: Analysis) -> Analysis:
    """``a``, the accepted analysis of a model of one mode, with its guarded schedule: that
    mode's per-mode analysis wrapped (`mdae_fmu.implicit.schedule.single_mode_schedule`,
    docs/theory.md §10.14; the report of the code form, ``code_modes``, when there is one),
    so that every accepted model has a guarded schedule and code generation one entry. The
    schedule is built when first read (`SingleSchedule`)."""
    report = a.code_modes or a.modes
    assert report is not None and len(report.modes) == 1
    return replace(a, guarded=SingleSchedule(report))


def _enumerated(model: Model, modes: ModesReport, erasure: str, lemma22: str,
                progress, full: bool = True, events: bool = False) -> Analysis:
    """The per-mode report's verdict, then the mode-change automaton (module docstring).
    ``events``: the automaton of a model of one long mode with when-clauses built by the one
    analysis (`mdae_fmu.implicit.when_checks.event_automaton_of`: its event checks, the
    changes into single events on their regions) instead of enumerated."""
    if progress is not None:
        progress("modes")
    if modes.exit_code != EXIT_OK:
        # a defect of the model's connections named in its terms (Modelica 3.6 §9.3)
        over = {e for m in modes.modes if not m.ok for e in m.over_equations}
        defects = connection_defects(model, over)
        return Analysis(
            model_name=model.name, modes=modes, automaton=None, rejection="\n".join(defects) or None
        )
    # blocks singular for all values: converted (the analysis is then the converted model's)
    # or rejected, naming the dependency (mdae_fmu.structure.conversion)
    repair = convert_singular(model, modes)
    converted: dict = {}
    if repair.rejections:
        return Analysis(
            model_name=model.name,
            modes=modes,
            automaton=None,
            rejection="\n".join(repair.rejections),
            conversions=repair.conversions,
        )
    if repair.changed:
        name = model.name
        model = repair.model
        if progress is not None:
            progress("structure (converted)")
        modes = analyze_modes(model)
        converted = dict(model=model, conversions=repair.conversions)
        if modes.exit_code != EXIT_OK:
            return Analysis(model_name=name, modes=modes, automaton=None, **converted)
    problems = when_clause_problems(model, modes)
    if problems:
        return Analysis(
            model_name=model.name,
            modes=modes,
            automaton=None,
            rejection="\n".join(problems),
            **converted,
        )
    from .modes import analyze_multimode
    try:
        if events:
            from .implicit.when_checks import event_automaton_of
            automaton = event_automaton_of(model, modes, erasure, lemma22 == "literal")
        else:
            automaton = analyze_multimode(model, erasure=erasure,  # type: ignore[arg-type]
                                          literal_lemma22=(lemma22 == "literal"),
                                          per_mode=modes, full=full)
    except ModelRejected as err:
        return Analysis(
            model_name=model.name, modes=modes, automaton=None, rejection=str(err), **converted
        )
    if not automaton.accepted:
        return Analysis(model_name=model.name, modes=modes, automaton=automaton, **converted)
    # (what the exporter of a multimode model cannot run, reinits it cannot run as written
    # and transient guards on equations, is the guarded schedule's verdict,
    # `mdae_fmu.implicit.variants.guarded_schedule`: the enumerated analysis exports nothing)
    delayed = model
    if any(g.kind == "long" for g in model.guards()):  # (else nothing to delay: no import)
        from .modes.delay import delay_same_instant_guards
        delayed = delay_same_instant_guards(model, automaton.system)
    if delayed is model:
        if converted:  # code generation compiles the converted equations
            return Analysis(
                model_name=model.name,
                modes=modes,
                automaton=automaton,
                code_model=model,
                code_modes=modes,
                **converted,
            )
        return Analysis(model_name=model.name, modes=modes, automaton=automaton)
    return Analysis(model_name=model.name, modes=modes, automaton=automaton, code_model=delayed,
                    code_modes=analyze_modes(delayed), **converted)


def more_modes_than(model: Model, max_modes: int | None = None) -> bool:
    """Whether the model has more consistent modes than ``max_modes``, by default than the
    explicit enumeration handles (`mdae_fmu.implicit.analysis.needs_implicit`, which stops
    at the first mode beyond); an error in the guards is left to the per-mode stage, which
    reports it with its context (False)."""
    from .diagnostics import MdaeError
    from .structure.valuations import has_long_guards
    try:
        if (max_modes is None or max_modes >= 1) and not has_long_guards(model):
            return False        # one mode (`needs_implicit`'s own first test, no import)
        from .implicit.analysis import needs_implicit
        return needs_implicit(model) if max_modes is None else needs_implicit(model, max_modes)
    except MdaeError:
        return False


def guarded_analysis(model: Model, progress) -> Analysis:
    """The one analysis of a multimode model (issue 26, docs/multimode.md "One analysis"):
    the implicit analysis of its code form (guards read at the same instant delayed,
    `delay_same_instant_guards`; docs/theory.md §10.2) and the guarded block schedule, with no
    mode enumerated. The verdict holds what reads no mode (the when-clause checks of
    `when_clause_problems` without a per-mode report) and, for a structurally singular mode
    set, its formula over the guards, the Dulmage-Mendelsohn diagnostic of one concrete mode
    of it and the connection defects (`connection_defects`) that mode's over-determined
    equations show; a schedule that cannot be built is the rejection, with the modes
    concerned. W-INIT-INCONSISTENT comes from the initial mode alone (`initial_mode`).
    Blocks singular for all values are converted first, per block variant
    (`mdae_fmu.implicit.conversion`, docs/theory.md §4.9): the analysis is then the converted
    code form's (``model``, ``conversions``), or the model is rejected with the formula of
    the modes of the block."""
    from .implicit.analysis import analyze_implicit
    from .implicit.conversion import convert_guarded
    from .implicit.variants import guarded_schedule
    from .implicit.when_checks import event_diagnostics
    if progress is not None:
        progress("implicit analysis")
    try:
        code, iterated = _delayed_code(model)
    except ModelRejected as err:
        # E-FIXPOINT: the verdict, after the structure of the model as written (as on the
        # enumerated path, whose per-mode report precedes it)
        return Analysis(model_name=model.name, modes=None, automaton=None, rejection=str(err),
                        **deferred_report(analyze_implicit(model)))
    # blocks singular for all values: converted or rejected (mdae_fmu.implicit.conversion)
    repair = convert_guarded(code, analyze_implicit(code))
    code, ia = repair.model, repair.analysis
    initial, warning = initial_mode(code)
    base = Analysis(
        model_name=model.name,
        modes=None,
        automaton=None,
        code_model=None if code is model else code,
        **deferred_report(ia, {"event_iteration": iterated}),
        init_warnings=((warning,) if warning else ()) + repair.warnings,
        model=code if repair.conversions else None,
        conversions=repair.conversions,
        rejection="\n".join(repair.rejections) or None,
    )
    if base.rejection:
        return base
    if not ia.ok:
        defects = connection_defects(model, ia.failing_over)
        return replace(base, rejection="\n".join(m for m in (ia.diagnostic, *defects) if m))
    found, unchecked = event_diagnostics(code, ia)
    problems = when_clause_problems(model, None) + found
    if problems and all(p.startswith(("E-TRANSIENT-", "E-CASCADE-")) for p in problems):
        # failures of the mode-change automaton (transient instants, cascades): the
        # enumerated path reports them with those of the other changes, so does this one
        from .implicit.changes import change_diagnostics
        changes = change_diagnostics(code, ia, None)
        return replace(base, rejection="\n".join([*changes.errors, *problems]),
                       init_warnings=base.init_warnings + changes.warnings)
    if problems:
        return replace(base, rejection="\n".join(problems))
    base = replace(base, init_warnings=base.init_warnings + tuple(unchecked))
    if progress is not None:
        progress("guarded schedule")
    try:
        done = replace(base, guarded=guarded_schedule(code, ia, initial=initial))
    except ModelRejected as err:
        done = no_schedule(base, err.message)
    return with_change_diagnostics(done, code, ia)


def _delayed_code(model: Model) -> tuple[Model, list[dict]]:
    """The code form of ``model`` (`delay_same_instant_guards`) and its guards evaluated by
    event iteration (`mdae_fmu.modes.event_iteration.delayed_guards`: each reads, at the same
    instant, values the equations it selects compute), ``{"guard", "reads"}`` each, from one
    normalization."""
    if not any(g.kind == "long" for g in model.guards()):
        return model, []
    from .modes.delay import delay_same_instant_guards
    from .modes.event_iteration import delayed_guards
    from .modes.normalize import normalize
    system = normalize(model)
    iterated = [{"guard": system.guards[gi].name, "reads": list(names)}
                for gi, names in delayed_guards(system).items()]
    return delay_same_instant_guards(model, system), iterated


def with_change_diagnostics(a: Analysis, code: Model, ia) -> Analysis:
    """``a`` (the one analysis of ``code``, whose implicit analysis is ``ia``) with the
    diagnostics of its mode changes (`mdae_fmu.implicit.changes`): the errors reject the
    model and name what a refused schedule (``a.rejection``) could not build, the warnings
    join ``init_warnings``."""
    from .implicit.changes import change_diagnostics
    found = change_diagnostics(code, ia, a.guarded)
    out = replace(a, init_warnings=a.init_warnings + found.warnings)
    if found.errors:
        out = replace(out, guarded=None, guarded_refusal=a.guarded_refusal or a.rejection,
                      rejection="\n".join(found.errors))
    return out


def initial_mode(model: Model) -> tuple[dict | None, str | None]:
    """The initial mode of a multimode model: ``({guard condition: value}, warning)``, the
    values of its long guards at the start values (`MultimodeSystem.initial_mode`; None
    when some are not known), and W-INIT-INCONSISTENT when the start values fixed by the
    model over-determine that mode with its consistency equations
    (`mdae_fmu.modes.explore.initialization_check`, docs/decisions.md §3)."""
    from .modes.explore import initialization_check
    from .modes.normalize import normalize
    from .diagnostics import MdaeError
    from .modes.runs import sigma_of_mode
    try:
        system = normalize(model)
        mode = system.initial_mode()
    except MdaeError:
        return None, None        # an error in the guards: the analysis' stages report it
    if mode is None:
        return None, None
    values = {g.cond: v for g, v in zip(system.guards, mode) if g.kind == "long"}
    sig = sigma_of_mode(system, mode)
    diag = initialization_check(system, mode, sig) if sig.ok else None
    return values, None if diag is None else f"{diag.code}: {diag.message}"


def no_schedule(a: Analysis, reason: str) -> Analysis:
    """``a`` rejected because its guarded schedule cannot be built (`guarded_analysis`):
    ``E-NO-SCHEDULE: the guarded block schedule cannot be built: <reason>``, the reason naming
    the modes concerned as a formula over the guards when it is about some modes only."""
    message = f"E-NO-SCHEDULE: the guarded block schedule cannot be built: {reason}"
    return replace(a, guarded_refusal=reason, rejection="\n".join(
        m for m in (a.rejection, message) if m))


def render_text(model: Model, a: Analysis) -> str:
    """The per-mode report (`report.report_lines`), the mode changes, then one verdict for
    the whole model; the implicit analysis' report instead (`implicit_pieces`) for the one
    analysis (no enumerated modes: a multimode model, or one past the enumeration)."""
    return "".join(text_pieces(model, a))


def text_pieces(model: Model, a: Analysis) -> Iterator[str]:
    """`render_text` in pieces of at most `_LINES_PER_PIECE` lines, so that ``mdae-fmu
    analyze`` writes a report of millions of lines without holding it whole (issue 16)."""
    if a.fixed_parameters:
        yield fixed_parameters_text(a.fixed_parameters) + "\n"
    if a.modes is None:
        yield from implicit_pieces(a)
        return
    from .modes import describe_automaton
    model = a.model or model
    batch: list[str] = []
    for line in iter_report_lines(model, a.modes):
        batch.append(line)
        if len(batch) == _LINES_PER_PIECE:
            yield "\n".join(batch) + "\n"
            batch = []
    if batch:                           # (the report has at least its "model ..." line)
        yield "\n".join(batch) + "\n"
    yield from _conversions_section(a, "\n\n")
    if a.automaton is not None:
        yield "\n\n" + describe_automaton(a.automaton)
    yield from _units_section(a)
    yield "\n\n" + verdict_text(a)


def fixed_parameters_text(fixed: tuple) -> str:
    """The report's lines on the parameters made constants (`Analysis.fixed_parameters`)."""
    lines = [f"structural parameters ({len(fixed)}), evaluated at export and constants of the "
             "FMU (they decide the structure of the model; docs/decisions.md §17):"]
    lines += [f"  {p.name} = {p.value_text}: {p.reason}" for p in fixed]
    return "\n".join(lines)


def implicit_pieces(a: Analysis) -> Iterator[str]:
    """The implicit analysis' report (`mdae_fmu.implicit.analysis.render_text`: formulas over
    the guards, whose size grows with the guards and equations, not with the modes), the
    guarded schedule's size, then the verdict of the whole analysis."""
    text = a.implicit_text or f"model {a.model_name}: no implicit analysis"
    yield text.split("\nverdict: ")[0]
    iterated = (a.implicit_json or {}).get("event_iteration", [])
    if iterated:
        yield "\nguards evaluated by event iteration (docs/theory.md §5.4):\n" + "\n".join(
            event_iteration_lines(iterated, len(iterated)))
    yield from _conversions_section(a, "\n")
    if a.guarded is not None:
        from .schedule_report import variant_lines
        sched = a.guarded
        yield "\nguarded schedule: " + _schedule_summary(sched)
        lines = list(variant_lines(sched, lambda u: sched.table.text(u, sched.guard_names)))
        if lines:
            yield ("\nrestarts of the block variants (run at a mode change; pre(x) the value "
                   "before, impulse(z) the integral of z over the instant):\n"
                   + "\n".join(lines))
    elif a.guarded_refusal and a.modes is not None:
        yield f"\nguarded schedule: not built: {a.guarded_refusal}"
    yield from _units_section(a)
    yield "\n" + verdict_text(a)


def event_iteration_lines(iterated: list[dict], limit: int) -> Iterator[str]:
    """The guards evaluated by event iteration (``event_iteration`` of the one analysis'
    JSON, `guarded_analysis`), one line each, at most ``limit``: the
    enumerated report's note (`mdae_fmu.modes.normalize.check_guard_fixpoints`)."""
    for it in iterated[:limit]:
        for v in it["reads"]:
            yield (f"  guard {it['guard']} reads {v}, which the equations it selects compute: "
                   f"evaluated by event iteration, each instant reading the previous "
                   f"instant's {v}")
    if len(iterated) > limit:
        yield f"  ... and {len(iterated) - limit} more guards evaluated by event iteration"


def _conversions_section(a: Analysis, before: str) -> Iterator[str]:
    """The numerically singular blocks converted (`Analysis.conversions`), one line each."""
    if a.conversions:
        yield (f"{before}numerically singular blocks converted (Tan-Nedialkov-Pryce, "
               "docs/structure.md):\n" + "\n".join(f"  {c.text()}" for c in a.conversions))


def _units_section(a: Analysis) -> Iterator[str]:
    """The unit warnings (`mdae_fmu.unit_check`); with ``strict_units`` they are among the
    verdict's errors instead."""
    if a.units and not a.strict_units:
        yield (f"\n\nunits: {len(a.units)} inconsistent equation(s)\n"
               + "\n".join(f"  {w}" for w in a.units))


def verdict_text(a: Analysis) -> str:
    """"verdict: accepted" (with the count of warnings) or "verdict: rejected" and every
    diagnostic, one per line: the last lines of every form of the report."""
    if a.accepted:
        n_warn = len(a.warnings)
        return "verdict: accepted" + (f", {n_warn} warning(s) above" if n_warn else "")
    return "\n".join(["verdict: rejected"] + [f"  {m}" for m in a.messages])


def _schedule_summary(s: GuardedSchedule) -> str:
    merged = sum(v.merged for v in s.variants)
    # (the schedule of one mode holds its blocks, one variant each, in its report)
    n = len(s.variants) if s.single is None else len(s.single.modes[0].blocks)
    return (f"{n} block variants ({merged} merged), {len(s.table.var)} formula "
            f"nodes, {len(s.states)} states ({len(s.cond_states)} in some modes only)")


_LINES_PER_PIECE = 4096


def render_json(model: Model, a: Analysis) -> dict:
    """`render_text`'s content as JSON: the per-mode report (docs/analyze-json.md) with the
    automaton under ``mode_changes`` and the overall verdict; for the one analysis (no
    enumerated modes), the implicit analysis' report (docs/analyze-json.md, "implicit")."""
    fixed = [{"parameter": p.name, "value": p.value_text, "reason": p.reason}
             for p in a.fixed_parameters]
    if a.modes is None:
        out = dict(a.implicit_json or {"model": model.name})
        out["fixed_parameters"] = fixed
        out["conversions"] = [c.text() for c in a.conversions]
        out["exit_code"] = a.exit_code
        out["accepted"] = a.accepted
        out["messages"] = list(a.messages)
        out["units"] = [w.to_json() for w in a.units]
        return out
    from .modes import automaton_to_json
    out = _modes_json(a.model or model, a.modes)
    out["fixed_parameters"] = fixed
    out["conversions"] = [c.text() for c in a.conversions]
    out["mode_changes"] = None if a.automaton is None else automaton_to_json(a.automaton)
    out["exit_code"] = a.exit_code
    out["accepted"] = a.accepted
    out["messages"] = list(a.messages)
    out["units"] = [w.to_json() for w in a.units]
    return out
