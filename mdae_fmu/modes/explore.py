"""Compile-time exploration of all runs: the mode-change automaton (RR-9334 §7.3.4, Figure 20).

docs/theory.md §8.1: guards are oracles, so from every reachable
configuration every mode is tried; each (configuration, mode) pair is one ExecRun (Algorithm 13,
`mdae_fmu.modes.runs`). Self-loops are the continuous (long) modes, the other edges the steps of
mode-change cascades. The model is accepted iff no explored pair fails; all failures are
collected. Per mode change (a long mode left from its steady configuration for another mode,
kept until the steady configuration of the new mode), the automaton records, for each
nonstandard instant, the erased equations, the restart blocks as formulas, the impulsive
variables with their orders (Algorithm IA) and the standardized restart (Algorithm ST).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Iterator, Set as AbstractSet
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, cast

from .. import expr as E
from ..ir import Model
from ..structure.graph import classes_sharing_keys
from ..structure.per_mode import MAX_ENUMERATED_MODES, TooManyModes, enumeration_limit_message
from .continuations import continuations
from .normalize import Mode, MultimodeSystem, TooManyTransientModes, normalize
from .runs import (Config, Diagnostic, Erasure, Instant, SigmaInfo, continuation_mode,
                   eq_label, equation_list, exec_long, exec_transient, inst_label,
                   same_as_continuation, sigma_from_report, sigma_of_mode, steady_run, var_label)

if TYPE_CHECKING:
    import sympy as sp
else:   # loaded on first use (`mdae_fmu.lazy_modules`)
    from ..lazy_modules import sympy as sp

MAX_CONFIGS = 20000
MAX_CASCADE = 32
AUTO_SIMULTANEOUS = 6
MAX_COUPLED = 10        # all subsets of a class of coupled guards up to this size
#: `event_automaton`: the events that select no equation (nothing to restart, no run) are
#: listed as changes up to this many events (beyond, each label's O(events) would add up)
MAX_LISTED_EVENTS = 64
#: An equation's id (`_verdict_from_report`'s comparison, in C).
_EQ_ID = operator.attrgetter("id")


@dataclass(frozen=True)
class RestartBlock:
    """One block of a restart instant: equations (labels and shift-form formulas) and unknowns."""
    equations: tuple
    unknowns: tuple
    formulas: tuple


@dataclass(frozen=True)
class RestartInstant:
    """One nonstandard instant of a mode change."""
    index: int
    mode: str
    facts: tuple
    erased: tuple
    blocks: tuple
    impulsive: tuple = ()          # (variable instance label, order text)
    method: str = ""               # standardization route S0/S1/S2/S3 ("" if not standardized)
    level: str = ""
    restart: tuple = ()            # sympy Eq(x+, f(x-))
    notes: tuple = ()
    # no closed form (S3, or W-STANDARDIZE): the delta-scheme of RR-9334 §11.3 computes the
    # right limits of ``variables`` (the states whose new top instance the instant solves for)
    numerical: bool = False
    variables: tuple = ()
    instant: Instant | None = field(default=None, compare=False, repr=False)
    # the exact orders behind ``impulsive`` (label -> impulse.analysis.OrderInfo or None), and
    # the orders of the state increments x^om - x^o(m-1) (variable, increment text, OrderInfo)
    orders: tuple = field(default=(), compare=False, repr=False)
    jumps: tuple = field(default=(), compare=False, repr=False)
    # the integrals over the instant of its impulsive variables of order 1, ``(variable,
    # num, den)`` sympy expressions over ``x-``, ``x+`` and the parameters (`with_integrals`):
    # the ``impulse(v)`` outputs code generation prints (`mdae_fmu.codegen.restarts`)
    integrals: tuple = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class RestartStep:
    """One step of the composed restart of a mode change (`compose_restart`): consecutive
    closed-form ``instants`` composed into ``restart`` (``x+ = f(x-)``, ``x-`` being the values
    before the first of them), or one ``numerical`` instant without closed form, whose right
    limits of ``variables`` only the delta-scheme of RR-9334 §11.3 computes."""
    instants: tuple
    numerical: bool
    variables: tuple
    restart: tuple = ()


@dataclass(frozen=True)
class ModeChange:
    """Leaving ``src`` (steady) for ``dst``; for a transient ``dst`` the cascade continues in its
    continuation long mode. ``n_instants`` counts the instants until the steady configuration."""
    src: Mode
    dst: Mode
    src_label: str
    dst_label: str
    instants: tuple
    n_instants: int
    accepted: bool
    diagnostic: Diagnostic | None = None
    # the state restart x+ = f(x-) composed over the cascade; empty when some instant has no
    # closed form (``steps`` then says which instants are numerical and what they restart)
    restart: tuple = ()
    steps: tuple = ()              # RestartStep, in order (empty when not standardized)

    @property
    def impulsive(self) -> bool:
        return any(i.impulsive for i in self.instants)

    @property
    def closed_form(self) -> bool:
        """Whether the composed ``restart`` covers the whole cascade (standardized, and no
        instant restarted numerically)."""
        return bool(self.steps) and not any(st.numerical for st in self.steps)


@dataclass(frozen=True)
class ModeInfo:
    """Per-mode summary from the Sigma-method and the steady instant."""
    mode: Mode
    label: str
    kind: str
    ok: bool
    index: int = 0
    states: tuple = ()
    latent: tuple = ()
    blocks: tuple = ()
    diagnostic: Diagnostic | None = None


@dataclass(frozen=True)
class Automaton:
    """The mode-change automaton of a model (docs/theory.md §8.1)."""
    name: str
    guards: tuple
    modes: tuple
    changes: tuple
    configs: tuple
    edges: tuple                    # (src config index, mode, dst config index or -1, Instant)
    accepted: bool
    diagnostics: tuple
    erasure: str
    initial_mode: Mode | None = None
    system: MultimodeSystem | None = field(default=None, compare=False, repr=False)
    lemma22: str = "two-graph"      # reading of Lemma 22 in DiffArray (docs/decisions.md §1)
    # False for the automaton of a model without guards built for the verdict only
    # (`analyze_multimode` with ``full=False``): the steady instant's blocks, the configurations
    # and the runs, which only the full report prints, are left out; ``system`` is then None
    # when the verdict was read off the per-mode report (`_verdict_from_report`)
    complete: bool = True

    def change(self, src_label: str, dst_label: str) -> ModeChange:
        for c in self.changes:
            if c.src_label == src_label and c.dst_label == dst_label:
                return c
        raise KeyError((src_label, dst_label))

    @property
    def messages(self) -> list[str]:
        """The diagnostics as ``CODE: message`` lines."""
        return [f"{d.code}: {d.message}" for d in self.diagnostics]

    def raise_if_rejected(self) -> None:
        """Raise `ModelRejected` (exit code 1) listing every error diagnostic, if any."""
        from ..diagnostics import ModelRejected
        errors = [d for d in self.diagnostics if not d.code.startswith("W")]
        if errors:
            raise ModelRejected(
                f"model {self.name} rejected by the multimode analysis:\n"
                + "\n".join(f"  {d.code}: {d.message}" for d in errors),
                {"codes": [d.code for d in errors],
                 "variables": sorted({v for d in errors for v in d.variables})})

    def mode(self, label: str) -> ModeInfo:
        for m in self.modes:
            if m.label == label:
                return m
        raise KeyError(label)


class _Explorer:
    def __init__(self, system: MultimodeSystem, erasure: Erasure, literal: bool,
                 per_mode=None):
        self.s = system
        self.erasure = erasure
        self.literal = literal
        self.per_mode = per_mode        # the per-mode stage's ModesReport, if given
        self._sig: dict[Mode, SigmaInfo] = {}
        self._runs: dict[tuple, Instant] = {}
        self._sf: Any = None            # the system's ShiftForm, made at its first use
        self._described: dict[tuple, RestartInstant] = {}      # `_described`

    def sig(self, mode: Mode) -> SigmaInfo:
        r = self._sig.get(mode)
        if r is None:
            r = sigma_from_report(self.s, mode, self.per_mode) or sigma_of_mode(self.s, mode)
            self._sig[mode] = r
        return r

    def steady(self, mode: Mode) -> Instant:
        """The run of the regular long ``mode`` from its steady configuration (`steady_run`),
        remembered as the run of that (configuration, mode) pair."""
        r = steady_run(self.s, mode, self.sig(mode))
        assert r.next is not None
        self._runs[(r.next, mode)] = r
        return r

    def run(self, cfg: Config, mode: Mode, pair: str = "", k: int = 0) -> Instant:
        key = (cfg, mode)
        r = self._runs.get(key)
        if r is None or (not r.ok and pair):
            if self.s.is_transient(mode):
                r = exec_transient(self.s, cfg, mode, self.sig(continuation_mode(self.s, mode)),
                                   self.erasure, pair, k, self.literal)
            else:
                r = exec_long(self.s, cfg, mode, self.sig(mode), self.erasure, pair, k)
            self._runs[key] = r
        return r

    def candidate_modes(self, cfg: Config, modes: list[Mode]) -> list[Mode]:
        out = []
        for m in modes:
            if any(m[i] for i in cfg.last_transient):
                # a rising edge is not true at two consecutive instants (docs/theory.md §7.4)
                continue
            out.append(m)
        return out


def analyze_multimode(model: Model | MultimodeSystem, erasure: Erasure = "restricted",
                      standardize: bool = True, simultaneous: bool | None = None,
                      literal_lemma22: bool = False, max_configs: int = MAX_CONFIGS,
                      max_modes: int = MAX_ENUMERATED_MODES, per_mode=None,
                      full: bool = True) -> Automaton:
    """Explore every run of the model and build its mode-change automaton (docs/theory.md §8.1).

    * ``erasure``: conflict-erasure rule, "restricted" (default) or "canonical"
      (docs/decisions.md);
    * ``standardize``: run the impulse analysis and standardization of every mode-change instant
      (`mdae_fmu.impulse`);
    * ``simultaneous``: ``True`` explores every (configuration, mode) pair; ``False`` restricts
      mode changes to the guards that can switch at one instant: one guard, or any subset of
      a class of coupled guards (`coupled_guard_classes`; Assumption 3, for large families),
      and skips the runs from the intermediate configurations of the cascades; ``None``
      (default) is ``True`` up to 6 guards and ``False`` above (W-SINGLE-CHANGES says what
      was not explored);
    * ``literal_lemma22``: Lemma 22 as printed in DiffArray (comparison only);
    * ``max_modes``: the explicit enumeration limit on the consistent long modes (2^12, as the
      per-mode stage); above it nothing is explored and the automaton is rejected with
      E-EXPLORE-BOUND and the per-mode stage's message;
    * ``per_mode``: the per-mode stage's `ModesReport` of ``model``, whose Σ offsets are
      reused where they provably are those of a mode (`sigma_from_report`);
    * ``full``: False for a model without guards builds the verdict only
      (`_without_guards`: no steady run, no configuration, no mode change); the automaton
      is then marked incomplete and the full report refuses it.

    Only the consistent modes are explored (`MultimodeSystem.modes`: the valuations the
    per-mode stage enumerates, docs/theory.md §8.1).

    Steps: the steady configuration of every long mode (`_steady_modes`), the finiteness of
    the transient cascades and the initial mode (`_cascade_and_initial_diagnostics`), the
    (configuration, mode) pairs (`_explore_pairs`), the mode changes from every steady mode
    (`_mode_changes`), then one list of diagnostics (`_collect_diagnostics`).

    Raises `ModelRejected` only for guard fixpoints (E-FIXPOINT, at normalization); structural
    failures are reported in ``Automaton.diagnostics`` with ``accepted = False``.
    """
    if not full and isinstance(model, Model):
        quick = _verdict_from_report(model, per_mode, erasure, literal_lemma22)
        if quick is not None:
            return quick
    system = model if isinstance(model, MultimodeSystem) else normalize(model)
    ex = _Explorer(system, erasure, literal_lemma22, per_mode)
    if not full and not system.guards:
        return _without_guards(ex, erasure, literal_lemma22)
    auto = simultaneous is None
    if simultaneous is None:
        simultaneous = len(system.guards) <= AUTO_SIMULTANEOUS
    try:
        # the consistent valuations only, enumerated as the per-mode stage does (docs/theory.md
        # §8.1): the cost follows the modes, not 2^|Gamma|
        all_modes = system.modes(max_modes)
    except TooManyModes as err:
        return _too_many_modes(system, err, max_modes, erasure, literal_lemma22)
    classes = coupled_guard_classes(system) if not simultaneous else []
    diagnostics: list[Diagnostic] = []
    infos, steady = _steady_modes(ex, all_modes, diagnostics)
    diagnostics.extend(_cascade_and_initial_diagnostics(ex, all_modes, steady))
    configs: list[Config] = []
    edges: list = []
    failures: dict[tuple, Diagnostic | None] = {}
    if simultaneous:
        _explore_pairs(ex, all_modes, steady, max_configs, configs, edges, failures,
                       diagnostics)
    else:
        # the steady configurations only: the cascades' intermediate ones are not explored
        configs.extend(dict.fromkeys(cfg for _, cfg in sorted(steady.items())))
    changes, skipped = _mode_changes(ex, all_modes, steady, simultaneous, classes,
                                     standardize)
    if standardize and sum(not system.is_transient(m) for m in all_modes) == 1:
        # one long mode: its when-branches' restarts and impulse outputs, as `event_automaton`
        sf_of = _shift_form_of(ex)
        changes = [with_integrals(sf_of, ch) if not system.is_transient(ch.src) else ch
                   for ch in changes]
    if auto and not simultaneous and not _restriction_loses_nothing(changes, steady, skipped):
        diagnostics.insert(0, single_changes_warning(system, classes, skipped))
    diags = _collect_diagnostics(diagnostics, changes,
                                 failures.values() if simultaneous else ())
    accepted = not diags or all(d.code.startswith("W") for d in diags)
    return Automaton(
        name=system.name,
        guards=tuple((g.name, g.kind) for g in system.guards),
        modes=tuple(infos),
        changes=tuple(changes),
        configs=tuple(configs),
        edges=tuple(edges),
        accepted=accepted,
        diagnostics=tuple(diags),
        erasure=erasure,
        initial_mode=system.initial_mode(),
        system=system,
        lemma22="literal" if literal_lemma22 else "two-graph",
    )


def standardize_changes(automaton: Automaton, changes: Iterable[ModeChange],
                        per_mode: Any = None) -> tuple[ModeChange, ...]:
    """The mode changes ``changes`` of ``automaton`` with their restarts standardized (the
    impulse analysis and Algorithm ST of every instant, docs/theory.md §9.3, §9.9), equal to
    those `analyze_multimode` builds with ``standardize=True``.

    For an automaton explored with ``standardize=False``: its verdict, modes, configurations
    and the cascade of every change are those of the standardized exploration (standardizing
    an instant reads the cascade, it never changes it), and the standardization is most of
    the cost (2^6 modes of the diode bank: 384 changes); a caller that reads the restarts of
    a few changes standardizes those only. A change that failed is returned unchanged.
    ``per_mode``: the per-mode stage's `ModesReport`, as for `analyze_multimode`."""
    system = automaton.system
    if system is None:
        raise ValueError(f"automaton of {automaton.name}: built without its system")
    ex = _Explorer(system, cast(Erasure, automaton.erasure), automaton.lemma22 == "literal",
                   per_mode)
    _, steady = _steady_modes(ex, [info.mode for info in automaton.modes], [])
    return tuple(_cascade(ex, ch.src, ch.dst, steady[ch.src], steady, True) if ch.accepted
                 else ch for ch in changes)


def analyze_changes(system: MultimodeSystem, pairs: Iterable[tuple[Mode, Mode]],
                    standardize: Callable[[ModeChange], bool],
                    erasure: Erasure = "restricted", shift_form: Any = None
                    ) -> Iterator[tuple[ModeChange | None, tuple[Diagnostic, ...]]]:
    """The mode changes ``src -> dst`` of ``pairs`` (``src`` a regular long mode of ``system``,
    ``dst`` a regular long or a transient mode) as `analyze_multimode` analyses them, each
    with its diagnostics in the words of the whole exploration: the cascade from the steady
    configuration of ``src`` (`_cascade`, docs/theory.md §6.6, §8.1; E-RESTART-MISSING,
    E-RESTART-CONFLICT, E-CASCADE-INFINITE), then, for an accepted change for which
    ``standardize(change)`` holds, the same cascade with the impulse analysis and Algorithm
    ST of its instants (docs/theory.md §9: E-IMPULSE-INCONSISTENT, W-IMPULSE-ORDER,
    W-STANDARDIZE, W-FAKE-IMPULSE), collected as `_collect_diagnostics` does. One explorer
    serves every pair (each mode's Σ-method and steady run computed once). The one
    analysis (`mdae_fmu.implicit.changes`) runs it on one concrete change per class;
    ``shift_form``: the `ShiftForm` of ``system`` when the caller has it. A pair whose modes
    are not regular here (no steady configuration) gives ``(None, ())``."""
    ex = _Explorer(system, erasure, False)
    ex._sf = shift_form
    steady: dict[Mode, Config] = {}
    for src, dst in pairs:
        longs = [src, continuation_mode(system, dst) if system.is_transient(dst) else dst]
        todo = [m for m in dict.fromkeys(longs) if m not in steady]
        steady.update(_steady_modes(ex, todo, [])[1])
        if any(m not in steady for m in longs):
            yield None, ()
            continue
        change = _cascade(ex, src, dst, steady[src], steady, False)
        if change.accepted and standardize(change):
            change = _cascade(ex, src, dst, steady[src], steady, True)
        yield change, tuple(_collect_diagnostics([], [change], ()))


def event_automaton(system: MultimodeSystem, checks: list[Diagnostic],
                    region: Callable[[Mode, SigmaInfo], MultimodeSystem | None],
                    erasure: Erasure = "restricted", literal_lemma22: bool = False,
                    per_mode: Any = None) -> Automaton:
    """The mode-change automaton of a model of one long mode as the one analysis builds it
    (issue 26 Deliver 1, docs/multimode.md "Single-mode models with when-clauses"), with no
    transient mode enumerated: the long mode's Σ-method and steady configuration, and the
    change into each transient mode where one event alone happens (`MultimodeSystem.
    single_events`), cascaded and standardized as `analyze_multimode` does (`_cascade`,
    docs/theory.md §6.6, §8.1, §9): those are the restarts code generation gives the
    when-branches (`mdae_fmu.codegen.restarts.transient_restarts`). The sets of simultaneous
    events and the cascades' termination are decided by the one analysis' event checks
    (`mdae_fmu.implicit.when_checks`), whose diagnostics are ``checks``.

    ``region(dst, sig)``: the part of ``system`` the first instant of ``dst`` acts on
    (docs/theory.md §10.7; None for the whole system), where the change is run with the
    whole long mode's offsets (``sig``). An event whose region is empty selects no equation
    and restarts nothing: its change has no instant, and is not listed beyond
    `MAX_LISTED_EVENTS` events (a counter's when-clause; its label alone costs O(events)).
    A change that fails on its region is run on the whole system,
    whose failure is the verdict's. The automaton holds the long mode's steady
    configuration only (no pair is explored)."""
    ex = _Explorer(system, erasure, literal_lemma22, per_mode)
    long_modes = system.long_valuations(2)
    diagnostics: list[Diagnostic] = []
    infos, steady = _steady_modes(ex, long_modes, diagnostics)
    init = system.initial_mode()
    if init is not None and init in steady:
        dg = initialization_check(system, init, ex.sig(init))
        if dg is not None:
            diagnostics.append(dg)
    diagnostics.extend(checks)
    changes: list[ModeChange] = []
    sf_of = _shift_form_of(ex)
    for src in steady:
        events = system.single_events(src)
        for dst in events:
            sub = region(dst, ex.sig(src))
            if sub is not None and not sub.equations and len(events) > MAX_LISTED_EVENTS:
                continue        # (an event that selects no equation: nothing to restart)
            infos.append(ModeInfo(mode=dst, label=system.mode_label(dst), kind="transient",
                                  ok=True))
            if sub is not None and not sub.equations:
                changes.append(ModeChange(src=src, dst=dst, src_label=system.mode_label(src),
                                          dst_label=system.mode_label(dst), instants=(),
                                          n_instants=0, accepted=True))
                continue
            change = None
            if sub is not None:
                rx = _Explorer(sub, erasure, literal_lemma22)
                rx._sig[src] = ex.sig(src)      # the whole long mode's offsets
                _, own = _steady_modes(rx, [src], [])
                if src in own:
                    change = _cascade(rx, src, dst, own[src], own, True)
            if change is None or not change.accepted:
                change = _cascade(ex, src, dst, steady[src], steady, True)
            dg = change.diagnostic
            if dg is not None and any(c.code == dg.code and c.message.startswith(dg.message)
                                      for c in checks):
                change = replace(change, diagnostic=None)   # (the checks' message says it)
            changes.append(with_integrals(sf_of, change))
    diags = _collect_diagnostics(diagnostics, changes, ())
    return Automaton(
        name=system.name,
        guards=tuple((g.name, g.kind) for g in system.guards),
        modes=tuple(infos),
        changes=tuple(changes),
        configs=tuple(dict.fromkeys(cfg for _, cfg in sorted(steady.items()))),
        edges=(),
        accepted=not diags or all(d.code.startswith("W") for d in diags),
        diagnostics=tuple(diags),
        erasure=erasure,
        initial_mode=init,
        system=system,
        lemma22="literal" if literal_lemma22 else "two-graph",
    )


def _without_guards(ex: _Explorer, erasure: Erasure, literal_lemma22: bool) -> Automaton:
    """The verdict of `analyze_multimode` for a system without guards, in time linear in the
    model with a small constant: its one long mode has no mode change and no transient
    cascade (docs/theory.md §8.1: the automaton is the mode's self-loop), and the steady run
    of a mode whose Σ-method succeeds always comes back to it (`steady_run`), so what can
    fail is the Σ-method and the initialization check (docs/theory.md §8.5), both run here
    as in the full exploration. The steady instant's blocks, the configuration and the run
    are not built (``complete=False``)."""
    system = ex.s
    mode: Mode = ()
    sg = ex.sig(mode)
    diagnostics: list[Diagnostic] = []
    if sg.ok:
        states = tuple(var_label((n, k)) for n, d in sorted(sg.d.items()) for k in range(d))
        latent = tuple(eq_label((e, k)) for e, c in sorted(sg.c.items())
                       for k in range(1, c + 1))
        info = ModeInfo(
            mode=mode,
            label=system.mode_label(mode),
            kind="long",
            ok=True,
            index=sg.index,
            states=states,
            latent=latent,
        )
        dg = initialization_check(system, mode, sg)
        if dg is not None:
            diagnostics.append(dg)
    else:
        assert sg.diagnostic is not None  # a failed Σ-method says why
        info = ModeInfo(
            mode=mode,
            label=system.mode_label(mode),
            kind="long",
            ok=False,
            diagnostic=sg.diagnostic,
        )
        diagnostics.append(sg.diagnostic)
    diags = _collect_diagnostics(diagnostics, [], ())
    accepted = not diags or all(d.code.startswith("W") for d in diags)
    return Automaton(
        name=system.name,
        guards=(),
        modes=(info,),
        changes=(),
        configs=(),
        edges=(),
        accepted=accepted,
        diagnostics=tuple(diags),
        erasure=erasure,
        initial_mode=system.initial_mode(),
        system=system,
        lemma22="literal" if literal_lemma22 else "two-graph",
        complete=False,
    )


def _verdict_from_report(model: Model, report, erasure: Erasure,
                         literal_lemma22: bool) -> Automaton | None:
    """`_without_guards` of a model whose normalization is provably the per-mode stage's one
    mode, read off the per-mode report ``report`` without normalizing (docs/theory.md §8.6):
    constant work per equation, plus the consistency equations and the fixed start values
    for the initialization check. None when that is not provable, or when the
    initialization check finds over-determined start values, whose message and numerical
    check read the normalized system: the caller then normalizes and runs `_without_guards`.

    Provable when the model has no guard (no if-equation, no if-expression, no when-clause:
    the normalization makes no guard and splits no equation), no discrete variable and no
    Boolean name (no equation is taken out as a discrete or Boolean definition), and the
    report's one accepted mode analyses every equation of the model, in order, over the
    model's continuous unknowns (without discrete variables and when-clauses the per-mode
    stage's unknowns, `classify_variables`, are the Real continuous variables that are not
    inputs, those the normalization takes): the normalized system is then those equations
    unguarded, and `sigma_from_report` gives that mode's offsets. The automaton has no
    system (``system=None``; without guards `delay_same_instant_guards` and the restarts of
    when-branches read none), and is incomplete as `_without_guards`'s is."""
    from ..structure.signature import release_rows
    from ..structure.variables import classify_variables
    if report is None or len(report.modes) != 1 or model.whens or model.guards() \
            or report.discrete or report.discrete_equations:
        return None
    ma = report.modes[0]
    cls = classify_variables(model)
    equations = model.equations
    # (the ids compared in C, pairwise: no tuple of the model's ids)
    if not ma.ok or cls.discrete or report.unknowns != cls.continuous \
            or "Boolean" in cls.types.values() or len(ma.equations) != len(equations) \
            or any(map(operator.ne, ma.equations, map(_EQ_ID, equations))):
        return None
    sg = SigmaInfo(ok=True, c=ma.c, d=ma.d)
    # (an accepted mode has an offset for every unknown: its keys are the continuous
    # unknowns, without a set of them, 32 MB at 10^6 equations)
    unknowns = ma.d.keys() if len(ma.d) == len(cls.continuous) else cls.continuous_set
    if _starts_over_determined(model, unknowns, sg):
        return None         # the warning's text and its numerical check: the normalized path
    # the normalization was the rows' last reader and took each out (issue 16's memory)
    release_rows(model)
    # (`_without_guards`'s states and latent equations; d = 0 and c = 0 add none)
    # (`var_label` of an instance of order 0 is its name: tens of thousands of states; the
    # names, unique, sorted as strings and picked by `compress` in C, issue 29)
    d, c = sg.d, sg.c
    named = sorted(itertools.compress(d, d.values()))
    states = _state_labels(named, d)
    latent = tuple(eq_label((e, k)) for e in sorted(itertools.compress(c, c.values()))
                   for k in range(1, c[e] + 1))
    info = ModeInfo(mode=(), label="(single mode)", kind="long", ok=True, index=sg.index,
                    states=states, latent=latent)
    return Automaton(
        name=model.name,
        guards=(),
        modes=(info,),
        changes=(),
        configs=(),
        edges=(),
        accepted=True,
        diagnostics=(),
        erasure=erasure,
        initial_mode=(),
        system=None,
        lemma22="literal" if literal_lemma22 else "two-graph",
        complete=False,
    )


def _state_labels(named: list[str], d: dict[str, int]) -> tuple[str, ...]:
    """The labels of the states of the sorted unknowns ``named`` (offsets ``d`` > 0): ``x``,
    then ``der(x)``, ... up to order ``d[x] - 1`` for each, in order. A name of order 1 (the
    usual case) is its own only label: the names of higher order are found by `compress`
    and the runs between them copied as slices, in C (issue 29: 4·10^5 states at 10^6
    equations, one Python step each before, docs/performance.md "stop 44")."""
    higher = list(itertools.compress(range(len(named)),
                                     map((1).__lt__, map(d.__getitem__, named))))
    if not higher:
        return tuple(named)
    out: list[str] = []
    start = 0
    for i in higher:
        n = named[i]
        out += named[start:i]
        out += [n] + [var_label((n, k)) for k in range(1, d[n])]
        start = i + 1
    out += named[start:]
    return tuple(out)


def _steady_modes(ex: _Explorer, all_modes: list[Mode],
                  diagnostics: list[Diagnostic]) -> tuple[list[ModeInfo], dict[Mode, Config]]:
    """Per mode its `ModeInfo` and, for a regular long mode, its steady configuration: the
    Σ-method of the mode (docs/theory.md §2.2, §4) and its run from the configuration it implies,
    which comes back to it without erasing anything (`steady_run`, docs/theory.md §8.1). The
    failures are appended to ``diagnostics``."""
    system = ex.s
    infos = []
    steady: dict[Mode, Config] = {}
    for m in all_modes:
        kind = "transient" if system.is_transient(m) else "long"
        if kind == "transient":
            infos.append(ModeInfo(mode=m, label=system.mode_label(m), kind=kind, ok=True))
            continue
        sg = ex.sig(m)
        if not sg.ok:
            assert sg.diagnostic is not None        # a failed Σ-method says why
            infos.append(ModeInfo(mode=m, label=system.mode_label(m), kind=kind, ok=False,
                                  diagnostic=sg.diagnostic))
            diagnostics.append(sg.diagnostic)
            continue
        r = ex.steady(m)
        assert r.next is not None
        steady[m] = r.next
        states = tuple(var_label((n, k)) for n, d in sorted(sg.d.items()) for k in range(d))
        latent = tuple(eq_label((e, k)) for e, c in sorted(sg.c.items()) for k in range(1, c + 1))
        blocks = tuple(tuple(map(eq_label, b.equations)) for b in r.blocks)
        infos.append(
            ModeInfo(
                mode=m,
                label=system.mode_label(m),
                kind=kind,
                ok=True,
                index=sg.index,
                states=states,
                latent=latent,
                blocks=blocks,
            )
        )
    return infos, steady


def cascade_diagnostic(system: MultimodeSystem, mode: Mode) -> Diagnostic | None:
    """E-CASCADE-INFINITE for the transient ``mode`` when its continuations do not terminate
    (Assumption 4, docs/theory.md §7.4; `mdae_fmu.modes.continuations`): the events, the
    variables they reset and the equations that reset them; None when they terminate."""
    chain = continuations(system, mode)
    if chain.finite:
        return None
    keys = tuple((e, 0) for e in chain.equations)
    return Diagnostic(
        code="E-CASCADE-INFINITE",
        message=f"transient mode [{system.mode_label(mode)}]: the events "
        + " -> ".join("{" + ", ".join(g) + "}" for g, _ in chain.steps)
        + " can re-trigger each other forever (Assumption 4 fails): each resets "
        "variables the next one reads"
        + (f" (resets {equation_list(system, keys)})" if keys else ""),
        variables=tuple(sorted({v for _, xs in chain.steps for v in xs})),
        equations=keys,
    )


def _cascade_and_initial_diagnostics(ex: _Explorer, all_modes: list[Mode],
                                     steady: dict[Mode, Config]) -> list[Diagnostic]:
    """E-CASCADE-INFINITE for a transient mode whose events can re-trigger each other forever
    (Assumption 4, docs/theory.md §7.4; `mdae_fmu.modes.continuations`), then the initialization
    check of the initial mode (`initialization_check`)."""
    system = ex.s
    out = []
    for m in all_modes:
        if system.is_transient(m):
            dg = cascade_diagnostic(system, m)
            if dg is not None:
                out.append(dg)
    init = system.initial_mode()
    if init is not None and init in steady:
        dg = initialization_check(system, init, ex.sig(init))
        if dg is not None:
            out.append(dg)
    return out


def _explore_pairs(ex: _Explorer, all_modes: list[Mode], steady: dict[Mode, Config],
                   max_configs: int, configs: list[Config], edges: list,
                   failures: dict[tuple, Diagnostic | None], diagnostics: list[Diagnostic]) -> None:
    """Breadth-first exploration of the (configuration, mode) pairs reachable from the steady
    configurations (docs/theory.md §8.1: guards are oracles, every mode is tried from every
    reachable
    configuration, each pair one ExecRun). Fills ``configs`` (the configurations, in discovery
    order), ``edges`` (``(src index, mode, dst index or -1, Instant)``) and ``failures`` (the
    first diagnostic per failed pair); E-EXPLORE-BOUND past ``max_configs`` configurations."""
    system = ex.s
    cindex: dict[Config, int] = {}

    def cid(c: Config) -> int:
        if c not in cindex:
            cindex[c] = len(configs)
            configs.append(c)
        return cindex[c]

    work = [cfg for m, cfg in sorted(steady.items())]
    for c in work:
        cid(c)
    while work:
        c = work.pop(0)
        for m in ex.candidate_modes(c, all_modes):
            if not system.is_transient(m) and not ex.sig(m).ok:
                continue
            r = ex.run(c, m, f"in mode [{system.mode_label(m)}] from configuration "
                             f"C{cindex[c]}")
            if not r.ok:
                edges.append((cindex[c], m, -1, r))
                failures.setdefault((c, m), r.diagnostic)
                continue
            assert r.next is not None               # a run that succeeds ends somewhere
            new = r.next not in cindex
            edges.append((cindex[c], m, cid(r.next), r))
            if new:
                if len(configs) > max_configs:
                    diagnostics.append(
                        Diagnostic(
                            code="E-EXPLORE-BOUND",
                            message=f"more than {max_configs} configurations: the "
                            "reconciliation after some mode change does not terminate",
                        )
                    )
                    return
                work.append(r.next)


def _mode_changes(ex: _Explorer, all_modes: list[Mode], steady: dict[Mode, Config],
                  simultaneous: bool, classes: list, standardize: bool
                  ) -> tuple[list[ModeChange], int]:
    """The cascade of every mode change from a steady long mode (`_cascade`; docs/theory.md §6.4,
    §8.1), to every other mode, or with ``simultaneous`` false only to the modes its coupled guard
    classes can switch to (`switchable_modes`); also the number of changes so skipped that
    are not the same structural problem as an explored one (`structural_key`)."""
    system = ex.s
    changes = []
    feasible = set(all_modes)
    skipped = 0
    for src, c0 in sorted(steady.items()):
        if simultaneous:
            dsts = [m for m in all_modes if m != src]
        else:
            dsts = [m for m in switchable_modes(src, classes) if m in feasible]
            done = set(dsts) | {src}
            explored = {structural_key(system, m) for m in done}
            skipped += sum(1 for m in all_modes
                           if m not in done and structural_key(system, m) not in explored)
        for dst in dsts:
            if system.is_transient(dst) or ex.sig(dst).ok:
                changes.append(_cascade(ex, src, dst, c0, steady, standardize))
    return changes, skipped


def _collect_diagnostics(diagnostics: list[Diagnostic], changes: list[ModeChange],
                         failures) -> list[Diagnostic]:
    """One list of diagnostics: those found so far, each rejected mode change's, the W-/E-
    notes of the instants (impulse analysis, standardization), the failures reached only in
    the middle of a cascade, without repeating a message (first occurrence kept)."""
    diagnostics = list(diagnostics)
    for ch in changes:
        if not ch.accepted and ch.diagnostic is not None:
            diagnostics.append(ch.diagnostic)
        for ri in ch.instants:
            for note in ri.notes:
                code = note.split(":", 1)[0]
                if code.startswith(("W-", "E-")):
                    diagnostics.append(Diagnostic(
                        code=code, message=f"{ch.src_label} -> {ch.dst_label}, instant {ri.index}: "
                        + note.split(":", 1)[1].strip()))
    reported = {(d.code, d.variables, d.equations) for d in diagnostics}
    for dg in failures:
        if dg is None:
            continue
        key = (dg.code, dg.variables, dg.equations)
        if key not in reported:
            # a failure reached only through a guard change in the middle of a cascade
            diagnostics.append(dg)
            reported.add(key)
    seen, diags = set(), []
    for dg in diagnostics:
        if dg.message not in seen:
            seen.add(dg.message)
            diags.append(dg)
    return diags


def _too_many_modes(system: MultimodeSystem, err, max_modes: int, erasure: str,
                    literal: bool) -> Automaton:
    """The rejected automaton of a model with more than ``max_modes`` consistent long modes
    (the cut-off of `enumerate_valuations`, with the per-mode stage's message)."""
    n_free = sum(1 for g in system.guards if g.kind == "long")
    if isinstance(err, TooManyTransientModes):
        msg = str(err)
    else:
        msg = enumeration_limit_message(system.name, n_free, err, max_modes,
                                        "mode-change analysis")
    return Automaton(
        name=system.name,
        guards=tuple((g.name, g.kind) for g in system.guards),
        modes=(),
        changes=(),
        configs=(),
        edges=(),
        accepted=False,
        diagnostics=(Diagnostic(code="E-EXPLORE-BOUND", message=msg),),
        erasure=erasure,
        initial_mode=system.initial_mode(),
        system=system,
        lemma22="literal" if literal else "two-graph",
    )


def coupled_guard_classes(system: MultimodeSystem) -> list[tuple[int, ...]]:
    """The guards that can change value at the same instant, as classes of guard indices
    (docs/decisions.md §7). Under Assumption 3 (docs/theory.md §7.4) the zero-crossings of distinct
    predicates do not coincide, but two guards still switch together when

    * their definitions contain a relation with the same zero-crossing function (``x > 0``
      and ``x <= 0``; ``t >= t1`` in two guards), compared syntactically, operands in either
      order, as the theory does; or
    * they read the same discrete variable or input (``m == 1`` and ``m == 2``; a Boolean
      assigned in a when-clause), which changes at an event, not by crossing zero.

    The classes are the connected components of that relation (singletons included)."""
    model = system.model
    discrete = set()
    if model is not None:
        discrete = {v.name for v in model.variables
                    if v.variability == "discrete" or v.causality == "input"}
    keys = []
    for g in system.guards:
        ks = {("zc",) + zc for n in E.walk(g.definition)
              if (zc := _zero_crossing(n)) is not None}
        keys.append(ks | {("var", v) for v in g.reads if v in discrete})
    return classes_sharing_keys(keys)


def _zero_crossing(n) -> tuple | None:
    """``(repr a, repr b)`` in a canonical order for a relation ``a op b`` (its zero-crossing
    function is ``a - b`` up to the sign), None for anything else."""
    if isinstance(n, E.BinOp) and n.op in ("<", "<=", ">", ">="):
        return tuple(sorted((repr(n.left), repr(n.right))))
    return None


def switchable_modes(src: Mode, classes) -> list[Mode]:
    """The valuations reachable from ``src`` at one instant when only coupled guards switch
    together: flip any nonempty subset of one class (single flips for a class larger than
    MAX_COUPLED guards)."""
    out = []
    for cls in classes:
        subsets = ([c for r in range(1, len(cls) + 1)
                    for c in itertools.combinations(cls, r)]
                   if len(cls) <= MAX_COUPLED else [(i,) for i in cls])
        for sub in subsets:
            m = list(src)
            for i in sub:
                m[i] = not m[i]
            out.append(tuple(m))
    return out


def structural_key(system: MultimodeSystem, mode: Mode) -> tuple:
    """What a run in ``mode`` depends on besides its configuration (`mdae_fmu.modes.runs`):
    the kind of the mode, its enabled equations and, for a transient mode, those of its
    continuation. Two modes with the same key give the same instants from the same
    configuration, so a change into one of them analyses the change into the other: the
    simultaneous edges of pulse sources on one clock (MSL 3.1 CauerLowPassSC, 11 guards)
    that only update discrete variables all enable the equations of the long mode."""
    if not system.is_transient(mode):
        return ("long", frozenset(e.id for e in system.enabled(mode)))
    cont = continuation_mode(system, mode)
    return ("transient", frozenset(e.id for e in system.enabled(mode)),
            frozenset(e.id for e in system.enabled(cont)))


def _restriction_loses_nothing(changes: list[ModeChange], steady: dict[Mode, Config],
                               skipped: int) -> bool:
    """Whether the restricted exploration (``simultaneous=False``) analysed everything the
    exhaustive one would: no change skipped (`_mode_changes` counts the changes whose
    `structural_key` no explored change has), every change accepted, and every
    intermediate configuration of their cascades a steady configuration (up to the rising
    edges just taken, which only exclude modes): the runs from it are those of the mode
    changes already analysed from that steady configuration."""
    if skipped or not all(ch.accepted for ch in changes):
        return False
    plain = {(c.known, c.context) for c in steady.values()}
    return all(ri.instant is not None and ri.instant.next is not None
               and (ri.instant.next.known, ri.instant.next.context) in plain
               for ch in changes for ri in ch.instants)


def single_changes_warning(system: MultimodeSystem, classes, skipped: int) -> Diagnostic:
    """W-SINGLE-CHANGES: what the restricted exploration of a model with more than
    AUTO_SIMULTANEOUS guards did not analyse (docs/decisions.md §7)."""
    coupled = [c for c in classes if len(c) > 1]
    together = ""
    if coupled:
        names = "; ".join("{" + ", ".join(system.guards[i].name for i in c) + "}"
                          for c in coupled)
        big = [c for c in coupled if len(c) > MAX_COUPLED]
        together = (f", and together for the guards that can switch at the same instant "
                    f"(same zero-crossing function or discrete variable: {names})"
                    + (f" except classes of more than {MAX_COUPLED} guards, explored one guard "
                       "at a time" if big else ""))
    return Diagnostic(
        code="W-SINGLE-CHANGES",
        message=f"{len(system.guards)} guards: mode changes explored one guard at a "
        f"time{together}. "
        f"Not analysed: {skipped} mode change(s) that switch independent guards at the same "
        "instant (Assumption 3: distinct events do not coincide), and guard changes during a "
        "reconciliation cascade (runs from its intermediate configurations); a rejection "
        "there would go unnoticed. analyze_multimode(model, simultaneous=True) explores them "
        "all",
    )


def initialization_check(system: MultimodeSystem, mode: Mode, sig: SigmaInfo):
    """Initialization diagnostic (docs/theory.md §8.5, §13.4): the initial mode's
    index-reduced system with the ``fixed`` start values as equations must not be
    over-determined; otherwise the published start values are inconsistent with the mode.

    When every fixed variable is a state (``d_x > 0``) the DM is taken on the consistency
    instances ``(e, k < c_e)`` and the start equations of the variables they read only
    (`_initialization_graph`): same over-determined part, a graph whose size follows the
    consistency equations, not the model."""
    from ..structure.keyed import dm
    model = system.model
    if model is None:
        return None
    fixed = _fixed_starts(model, set(system.unknowns))
    occ = _initialization_graph(system, mode, sig, fixed)
    r = dm(occ, occ, set().union(*occ.values()))
    if not r.over_eqs:
        return None
    starts = sorted(k[0][6:-1] for k in r.over_eqs if k[0].startswith("start("))
    keys = tuple(sorted(k for k in r.over_eqs if not k[0].startswith("start(")))
    if not starts or _consistent_starts(system, model, r.over_eqs, fixed):
        return None
    return Diagnostic(
        code="W-INIT-INCONSISTENT",
        message=f"initialization: the start values fixed for {{{', '.join(starts)}}} "
        f"over-determine the initial mode [{system.mode_label(mode)}] together with its "
        f"consistency equations {equation_list(system, keys)}; fix fewer start values or choose "
        "consistent ones", variables=tuple(starts), equations=keys)


def _initialization_graph(system: MultimodeSystem, mode: Mode, sig: SigmaInfo,
                          fixed: list[str]) -> dict:
    """The equations of `initialization_check`'s DM: ``(e, k)`` -> its variable instances,
    with ``("start(x)", 0)`` -> ``{(x, 0)}`` for a fixed start value.

    The index-reduced system splits into the top instances ``(e, c_e)``, which alone read the
    leading instances ``(x, d_x)`` and have a complete matching onto them (the transversal of
    the Σ-method, tight edges), and the consistency instances ``(e, k < c_e)``, which read
    state-level instances ``(x, j < d_x)`` only. When every fixed ``x`` is a state
    (``d_x > 0``), the start equations read state-level instances too: a maximum matching of
    the whole graph is that transversal plus a maximum matching of the consistency and start
    equations, its unmatched equations are all there, and every alternating path from them
    stays there (a state-level instance is matched to a consistency or start equation, or
    the matching would not be maximum). So the over-determined part of the DM (docs/theory.md §2.4,
    RR-9334 Def 15) is that of the consistency and start equations; a start equation whose variable
    no consistency instance reads is matched alone and never over-determined, so it is left
    out too. Otherwise (an algebraic variable fixed) the whole system is returned."""
    from .runs import instance_vars
    ids = [e.id for e in system.enabled(mode)]
    return _start_graph(ids, sig, fixed, lambda key: instance_vars(system, key))


def _fixed_starts(model: Model, unknown_names: AbstractSet[str]) -> list[str]:
    """The unknowns of ``model`` whose start value is fixed, sorted (`initialization_check`)."""
    names = [v.name for v in model.variables
             if v.fixed and v.start is not None and v.name in unknown_names]
    names.sort()
    return names


def _all_states(d: dict[str, int], names: list[str]) -> bool:
    """Whether every one of ``names`` has an offset d > 0 (a state; d ≥ 0 and a name
    without one counts as 0): the values read by ``map`` in C (issue 29: tens of thousands
    of fixed start values at 10^5 equations)."""
    return min(map(d.get, names, itertools.repeat(0)), default=1) > 0


def _start_graph(ids: list[str], sig: SigmaInfo, fixed: list[str],
                 vars_of: Callable[[tuple[str, int]], frozenset]) -> dict:
    """`_initialization_graph` over the equations ``ids`` of the mode (in order), the
    variable instances of ``(e, k)`` being ``vars_of((e, k))``."""
    reduced = _all_states(sig.d, fixed)
    c = sig.c
    occ = {}
    for eid in ids:
        for k in range(c[eid] + (0 if reduced else 1)):
            occ[(eid, k)] = vars_of((eid, k))
    if reduced:
        # the fixed variables some instance reads at order 0, in the order of ``fixed``
        read = {n for n, k in set().union(*occ.values()) if k == 0}
        fixed = [n for n in fixed if n in read]
    for n in fixed:
        occ[("start(" + n + ")", 0)] = frozenset({(n, 0)})
    return occ


def _starts_over_determined(model: Model, unknowns: AbstractSet[str], sig: SigmaInfo) -> bool:
    """Whether `initialization_check` of the single mode of ``model`` (its equations
    unguarded, in order, over ``unknowns``, with the offsets ``sig``) needs the normalized
    system: an algebraic variable is fixed (`_initialization_graph` is then the whole
    system), or some fixed start value is over-determined in its DM. Otherwise the check
    gives no warning. Only the equations with c > 0 are read (their signature rows,
    `sigma_row`, restricted to ``unknowns`` as the normalization's `MEquation.orders` are):
    no work for the others beyond reading their offset."""
    from ..structure.keyed import dm
    from ..structure.signature import sigma_row
    from .runs import orders_vars
    fixed = _fixed_starts(model, unknowns)
    if not _all_states(sig.d, fixed):
        return True
    # every fixed variable a state: the graph's equations are the (e, k < c_e), and an
    # equation with c_e = 0 has none
    # (the offsets are in the order of the model's equations: their positions find them;
    # the few with c > 0 picked by `compress` in C)
    at = list(itertools.compress(zip(sig.c, itertools.count()), sig.c.values()))
    ids = [e for e, _ in at]
    equations = model.equations
    by_id = {e: equations[i] for e, i in at if i < len(equations) and equations[i].id == e}
    if len(by_id) < len(ids):
        wanted = set(ids)
        by_id = {eq.id: eq for eq in equations if eq.id in wanted}

    def vars_of(key: tuple[str, int]) -> frozenset:
        row = sigma_row(model, by_id[key[0]].residual)
        return orders_vars([(n, k) for n, k in row.items() if n in unknowns], key[1])

    occ = _start_graph(ids, sig, fixed, vars_of)
    r = dm(occ, occ, set().union(*occ.values()))
    return any(k[0].startswith("start(") for k in r.over_eqs)


def _as_expr(e) -> sp.Expr:
    """A residual as a sympy expression (a residual that is one symbol replaced by a value is
    a Python number)."""
    return e if isinstance(e, sp.Basic) else sp.Float(e)


def _consistent_starts(system, model, over_eqs, fixed) -> bool:
    """Numerical check of the over-determined initialization equations that involve no
    derivative: with the fixed start values and the parameters, do they have a solution?"""
    import numpy as np
    from scipy.optimize import least_squares

    from .shiftform import ShiftForm, parameter_values
    sf = ShiftForm(system)
    eqs = [k for k in over_eqs if not k[0].startswith("start(") and k[1] == 0
           and all(o == 0 for _, o in system.equation(k[0]).orders)]
    if not eqs:
        return False
    vals = {sp.Symbol(n, real=True): v for n, v in parameter_values(system).items()}
    for n in fixed:
        st = model.var(n).start
        if not isinstance(st, E.Const):
            return False
        vals[sf.X(n, 0)] = float(st.value)
    exprs = [_as_expr(_as_expr(sf.equation(k)).xreplace(vals)) for k in eqs]
    free = sorted(set().union(*(e.free_symbols for e in exprs)), key=str)
    if not free:
        return all(abs(float(e)) < 1e-9 for e in exprs)
    f = sp.lambdify([free], exprs, "numpy")
    res = least_squares(lambda x: np.asarray(f(x), dtype=float).ravel(), np.zeros(len(free)))
    return float(np.max(np.abs(res.fun))) < 1e-8


def _cascade(ex: _Explorer, src: Mode, dst: Mode, c0: Config, steady, standardize) -> ModeChange:
    """Run ``dst`` from the steady configuration of ``src`` until a steady configuration
    (docs/theory.md §6.6, §8.1); a transient ``dst`` lasts one instant, then its continuation."""
    s = ex.s
    pair = f"when switching {s.mode_label(src)} -> {s.mode_label(dst)}"
    cfg, mode = c0, dst
    instants: list[Instant] = []
    runs: list[Instant] = []
    for k in range(MAX_CASCADE):
        r = ex.run(cfg, mode, pair, k)
        if not r.ok:
            return ModeChange(src=src, dst=dst, src_label=s.mode_label(src),
                              dst_label=s.mode_label(dst), instants=tuple(instants),
                              n_instants=len(instants), accepted=False,
                              diagnostic=r.diagnostic)
        if k > 0 and not s.is_transient(mode) and r.next == cfg and not r.erased:
            break           # steady configuration of the (new) long mode
        runs.append(r)
        instants.append(r)
        assert r.next is not None
        cfg = r.next
        if s.is_transient(mode):
            mode = continuation_mode(s, mode)
    else:
        return ModeChange(src=src, dst=dst, src_label=s.mode_label(src),
                          dst_label=s.mode_label(dst), instants=(), n_instants=0,
                          accepted=False, diagnostic=Diagnostic(
                              code="E-CASCADE-INFINITE",
                              message=f"{pair}: no steady configuration after {MAX_CASCADE} "
                                      "instants"))
    out = [_continuity(ex, k, r) if standardize and _steady_run(ex, r, steady)
           else _described(ex, k, r, standardize) for k, r in enumerate(runs)]
    if standardize and out and out[0].impulsive and not any(i.impulsive for i in out[1:]):
        note = fake_impulse_note(s, ex._sf, src, dst, runs[0].erased)
        if note:
            fields: dict[str, Any] = {**out[0].__dict__, "notes": out[0].notes + (note,)}
            out[0] = RestartInstant(**fields)
    steps = compose_restart(out) if standardize else ()
    restart = steps[0].restart if len(steps) == 1 and not steps[0].numerical else ()
    return ModeChange(src=src, dst=dst, src_label=s.mode_label(src),
                      dst_label=s.mode_label(dst), instants=tuple(out), n_instants=len(out),
                      accepted=True, diagnostic=None, restart=restart, steps=steps)


def instant_integrals(sf: Any, ri: RestartInstant) -> tuple:
    """``((variable, num, den), ...)``: the integrals ``num/den`` over the restart instant
    ``ri`` of its impulsive variables of order 1 (docs/theory.md §9.2, §9.3;
    `mdae_fmu.impulse.integrals.impulse_integrals` on the whole restart problem of the
    instant, at its standardization level), over ``x-``, ``x+`` and the parameters; empty
    when the instant is not impulsive or its problem cannot be formed. ``sf``: the
    `ShiftForm` of the whole system."""
    if not ri.impulsive or ri.instant is None:
        return ()
    from ..impulse.analysis import impulse_analysis
    from ..impulse.integrals import impulse_integrals
    from .restart import restart_problem
    try:
        prob = restart_problem(sf, ri.instant, f"instant {ri.index}")
        ia = impulse_analysis(prob)
        level = ri.level or ("jet" if ia.jet_level else "shift")
        integrals = impulse_integrals(prob, ia, level)
    except (ValueError, TypeError, NotImplementedError, ZeroDivisionError, RuntimeError):
        return ()
    return tuple((var, num, den) for var, (num, den) in integrals.items())


def with_integrals(sf_of: Callable[[], Any], change: ModeChange) -> ModeChange:
    """``change`` with the impulse integrals (`instant_integrals`) on its first instant, when
    that instant carries the whole restart: the change is accepted with a closed-form
    restart (every instant standardized by S0-S2) and no later instant moves a state. Those
    are the ``impulse(v)`` outputs of a when-branch's restart in a model of one long mode
    (`mdae_fmu.codegen.restarts.transient_restarts`), computed here so that code generation
    runs no impulse analysis (issue 26 Deliver 1). ``sf_of()``: the `ShiftForm` of the whole
    system, made on first use."""
    if not change.accepted or not change.restart or not change.instants \
            or any(i.method == "S3" or not i.method for i in change.instants) \
            or not change.instants[0].impulsive or change.instants[0].instant is None \
            or any(_moves(i) for i in change.instants[1:]):
        return change
    integrals = instant_integrals(sf_of(), change.instants[0])
    if not integrals:
        return change
    first = replace(change.instants[0], integrals=integrals)
    return replace(change, instants=(first,) + change.instants[1:])


def _moves(ri: RestartInstant) -> bool:
    """Whether a restart instant moves a state (a restart other than ``x+ = x-``)."""
    return any(not (eq.rhs.is_Symbol and eq.rhs.name == str(eq.lhs)[:-1] + "-")
               for eq in ri.restart)


def _shift_form_of(ex: _Explorer) -> Callable[[], Any]:
    """``sf_of`` of `with_integrals`: the explorer's `ShiftForm`, made on first use."""
    def sf_of() -> Any:
        sf = getattr(ex, "_sf", None)
        if sf is None:
            from .shiftform import ShiftForm
            sf = ex._sf = ShiftForm(ex.s)
        return sf
    return sf_of


def _steady_run(ex: _Explorer, r: Instant, steady: dict[Mode, Config]) -> bool:
    """Whether ``r`` is the steady run of a long mode M: r is in M, or in a transient mode run
    as its continuation M (`runs.same_as_continuation`), from M's steady configuration (its
    known instances and facts), erasing nothing and ending there again (up to the edges just
    taken). The cascade of docs/theory.md §6.6 stops at such a run; it is listed only as the instant
    0 of a change (a pulse source's event) or after a transient instant."""
    s, m = ex.s, r.mode
    if s.is_transient(m):
        if not same_as_continuation(s, m):
            return False
        m = continuation_mode(s, m)
    c = steady.get(m)
    if c is None or r.erased or r.next is None or r.known != c.known:
        return False
    ids = {e.id for e in s.enabled(m)}
    return (r.next.known, r.next.context) == (c.known, c.context) and \
        r.facts == frozenset(q for q in c.context if q[0] in ids)


def _continuity(ex: _Explorer, k: int, r: Instant) -> RestartInstant:
    """The restart instant of a steady run (`_steady_run`): the long mode's own instant, every
    state-level instance known and kept, so the restart is continuity ``x+ = x-`` of the
    states it computes the next instance of (route S0), without the impulse analysis and
    symbolic solve of the whole circuit that `_describe_instant` would run."""
    from ..impulse.problem import left, right
    base = _described(ex, k, r, False)
    tops = sorted({(n, j) for n, j in r.unknowns if j >= 1 and (n, j - 1) in r.known})
    restart = tuple(sp.Eq(right(n, i), left(n, i)) for n, j in tops for i in range(j))
    return replace(base, method="S0", level="jet", restart=restart,
                   variables=tuple(sorted({_jet_variable(e.lhs) for e in restart})))


def _described(ex: _Explorer, k: int, r: Instant, standardize: bool) -> RestartInstant:
    """`_describe_instant`, computed once per restart problem: what it reads of an instant
    (known instances, facts, erasures, blocks; `restart.restart_problem`) depends neither on
    the mode nor on the instant's rank, so the instants of the simultaneous edges of pulse
    sources on one clock, which all enable the long mode's equations (`structural_key`), and
    the long mode's instant after them, are standardized once."""
    key = (standardize, r.known, r.facts, r.erased, r.unknowns, r.blocks)
    done = ex._described.get(key)
    if done is None:
        done = ex._described[key] = _describe_instant(ex, k, r, standardize)
        return done
    return replace(done, index=k, mode=ex.s.mode_label(r.mode), instant=r)


def _describe_instant(ex: _Explorer, k: int, r: Instant, standardize: bool) -> RestartInstant:
    from .restart import restart_problem
    from .shiftform import ShiftForm
    s = ex.s
    sf = getattr(ex, "_sf", None)
    if sf is None:
        sf = ex._sf = ShiftForm(s)
    blocks = tuple(RestartBlock(equations=tuple(eq_label(q) for q in b.equations),
                                unknowns=tuple(inst_label(v) for v in b.unknowns),
                                formulas=tuple(sf.formula(q) for q in b.equations))
                   for b in r.blocks)
    base: dict[str, Any] = dict(index=k, mode=s.mode_label(r.mode), facts=tuple(eq_label(q) for q in
                                                                  sorted(r.facts)),
                erased=tuple(eq_label(q) for q in sorted(r.erased)), blocks=blocks, instant=r)
    if not standardize:
        return RestartInstant(**base)
    from ..impulse.standardize import standardize as st
    from ..impulse.problem import presolve, right, split_problem
    try:
        prob = restart_problem(sf, r, f"instant {k}")
        reduced, explicit = presolve(prob)
        subs = split_problem(reduced) if reduced.equations else []
        parts = [st(p) for p in subs]
    except (ValueError, TypeError, NotImplementedError, ZeroDivisionError, RuntimeError) as exc:
        return RestartInstant(**base, notes=(
            f"W-STANDARDIZE: the restart of this instant was not standardized ({exc}); the "
            "numerical delta-scheme applies",), numerical=True,
            variables=restarted_variables(r))
    imp = tuple((_inst_label(sf, sym), txt) for res in parts for sym, txt in res.impulsive)
    orders = tuple((_inst_label(sf, sym), res.impulse.orders.get(sym) if res.impulse else None)
                   for res in parts for sym, _ in res.impulsive)
    jumps = _jump_orders(subs, parts)
    rank = {"S0": 0, "S1": 1, "S2": 2, "S3": 3}
    method = max((res.method for res in parts), key=cast(Callable[[str], int], rank.get),
                 default="S0")
    level = "shift" if any(res.level == "shift" and res.method != "S0" for res in parts) \
        else "jet"
    extra = []
    if explicit:
        # an explicitly given next instance x@1 of a variable not known before is its value
        # after the Tick (e.g. the diode currents that become states of the new mode)
        have = {j.name for j in prob.jets}
        std = prob.jet_substitution()
        for sym, val in explicit.items():
            name, _, kk = sym.name.rpartition("@")
            if name and name not in have and kk == "1":
                v = sp.expand(val.xreplace(std)).xreplace({prob.d: 0})
                extra.append(sp.Eq(right(name, 0), v, evaluate=False))  # as in _restart_eqs
    restart = tuple(sorted([e for res in parts for e in res.restart] + extra,
                           key=lambda e: str(e.lhs)))
    notes = tuple(n for res in parts for n in res.notes)
    numerical = method == "S3"
    if numerical:
        variables = restarted_variables(r)
    else:
        variables = tuple(sorted({_jet_variable(e.lhs) for e in restart}))
    return RestartInstant(**base, impulsive=imp, method=method, level=level, restart=restart,
                          notes=notes, orders=orders, jumps=jumps, numerical=numerical,
                          variables=variables)


def _jump_orders(problems, results) -> tuple:
    """The orders Algorithm IA computes for the state increments ``U = x@m - x@(m-1)`` of the
    restart (docs/theory.md §9.3: ``[[U]] <= 0``, Assumption 7): ``(variable,
    increment text, OrderInfo)`` per state jet of every standardized part that went through
    the impulse analysis."""
    out = []
    for prob, res in zip(problems, results):
        if res.impulse is None:
            continue
        for j in prob.jets:
            if j.top is None:
                continue
            info = res.impulse.orders.get(sp.Symbol(f"U_{j.name}", real=True))
            if info is None:
                continue
            inc = f"{inst_label((j.name, j.m))} - {inst_label((j.name, j.m - 1))}"
            out.append((j.name, inc, info))
    return tuple(sorted(out, key=lambda t: t[0]))


def fake_impulse_note(system: MultimodeSystem, sf, src: Mode, dst: Mode, erased) -> str | None:
    """W-FAKE-IMPULSE (docs/theory.md §13.3, RR-9334 Comment 8): the residual of an erased equation
    is, in the source mode, proportional to the zero-crossing variable of the guard that changed
    (the brake's ``pr - pt = s``): for a physical switch the guard crosses 0 continuously, the
    residual vanishes and the inferred impulses are fake."""
    src_eqs = system.enabled(src)
    for gi, (a, b) in enumerate(zip(src, dst)):
        if a == b:
            continue
        reads = E.refs(system.guards[gi].definition)
        for v in sorted(reads):
            xv = sf.X(v, 0)
            for f in src_eqs:
                if v not in f.order_map or f.order_map[v] != 0:
                    continue
                fe = sf.equation((f.id, 0))
                if any(sf.instance(s) is not None and sf.instance(s)[1] > 0
                       for s in fe.free_symbols):
                    continue
                coef = sp.expand(fe).coeff(xv)
                if coef == 0 or xv in coef.free_symbols:
                    continue
                vexpr = -(fe - coef * xv) / coef
                for key in sorted(erased):
                    if key[1] != 0:
                        continue
                    r = sf.equation(key)
                    if not r.free_symbols or xv in r.free_symbols:
                        continue
                    ratio = _simplified(vexpr / r)
                    from ..sympy_modelica import print_sympy
                    if ratio != 0 and not ratio.free_symbols:
                        rt = _mode_values(sf, r)    # (x@0: x in the source mode)
                        times = {1: f"{rt}", -1: f"-({rt})"}.get(
                            ratio, f"{print_sympy(ratio)}*({rt})")
                        return (f"W-FAKE-IMPULSE: the impulses are inferred from the residual "
                                f"{rt} of the erased {eq_label(key)}, and {v} = {times} "
                                f"in [{system.mode_label(src)}] ({f.id}); {v} is the zero-crossing "
                                f"variable of guard {system.guards[gi].name}, so a physical "
                                f"switch makes it 0 and the restart continuous; an assertion "
                                f"`{v} = 0` at the switch removes the impulse")
    return None


def _mode_values(sf, expr: sp.Expr) -> str:
    """``expr`` over the instances ``x@0`` (the values in the source mode) in Modelica syntax,
    each instance written as its variable (`mdae_fmu.sympy_modelica`)."""
    from ..sympy_modelica import print_sympy
    sub = {s: sp.Symbol(sf.instance(s)[0]) for s in expr.free_symbols
           if sf.instance(s) is not None and sf.instance(s)[1] == 0}
    return print_sympy(expr.xreplace(sub))


def _inst_label(sf, sym) -> str:
    inst = sf.instance(sym)
    return inst_label(inst) if inst else str(sym)


def restarted_variables(inst: Instant) -> tuple[str, ...]:
    """The variables whose right limits an instant computes: those with known lower instances
    ``x@0 .. x@(m-1)`` whose next instance ``x@m`` is an unknown of the instant (the state jets
    with a new top instance of `mdae_fmu.modes.restart.restart_problem`, the targets of the
    delta-scheme, `mdae_fmu.impulse.numeric.delta_form`)."""
    by_var: dict[str, set[int]] = {}
    for n, j in inst.known:
        by_var.setdefault(n, set()).add(j)
    out = []
    for n, js in by_var.items():
        m = 0
        while m in js:
            m += 1
        if m > 0 and (n, m) in inst.unknowns:
            out.append(n)
    return tuple(sorted(out))


def _jet_variable(lhs) -> str:
    """``x`` for the right-limit symbols ``x+``, ``der(x)+``, ``der(x,2)+``."""
    name = str(lhs)
    name = name[:-1] if name.endswith("+") else name
    if name.startswith("der(") and name.endswith(")"):
        name = name[4:-1].rsplit(",", 1)[0] if "," in name else name[4:-1]
    return name


def compose_restart(instants) -> tuple:
    """The restart of a whole mode change as `RestartStep`s (docs/theory.md §9, §11): the
    closed-form
    restarts ``x+ = f(x-)`` of consecutive instants are composed (`_compose`: the right limits of
    an instant are the left limits of the next, the standard reading of Tick); an instant
    without closed form (S3: RR-9334 §11.3, the numerical delta-scheme) cannot be composed
    symbolically and is a step of its own, and the closed forms after it read the values it
    computes as their left limits. A single closed step is the composed restart of the whole
    cascade."""
    steps: list[RestartStep] = []
    run: list = []

    def flush():
        if run:
            comp = _compose([ri.restart for ri in run])
            names = {v for ri in run for v in ri.variables} | {_jet_variable(e.lhs)
                                                                for e in comp}
            steps.append(RestartStep(instants=tuple(ri.index for ri in run), numerical=False,
                                     variables=tuple(sorted(names)), restart=comp))
            run.clear()

    for ri in instants:
        if ri.numerical:
            flush()
            steps.append(
                RestartStep(instants=(ri.index,), numerical=True, variables=tuple(ri.variables))
            )
        else:
            run.append(ri)
    flush()
    return tuple(steps)


#: `sp.simplify` of the expressions met in this process by `_simplified` (at most
#: `SIMPLIFIED_SIZE`, the oldest dropped first).
_SIMPLIFIED: dict = {}
SIMPLIFIED_SIZE = 4096


def _simplified(e):
    """``sp.simplify(e)``, computed once per process for equal expressions: the composed
    restarts and impulse ratios of a model's changes recur from change to change (the diode
    bank of benchmarks/gen_multimode.py, 2^3 modes: 25 distinct among 102)."""
    if e not in _SIMPLIFIED:
        if len(_SIMPLIFIED) >= SIMPLIFIED_SIZE:
            del _SIMPLIFIED[next(iter(_SIMPLIFIED))]
        _SIMPLIFIED[e] = sp.simplify(e)
    return _SIMPLIFIED[e]


def _compose(maps: list[tuple]) -> tuple:
    """Compose per-instant state restarts ``x+ = f(x-)`` over consecutive closed-form instants:
    the right limits of an instant are the left limits of the next (the standard reading of
    Tick). Every map must be a closed form (`compose_restart` splits at numerical instants)."""
    total: dict = {}
    for eqs in maps:
        step = {e.lhs: e.rhs for e in eqs}
        if not total:
            total = dict(step)
            continue
        back = {sp.Symbol(str(lhs)[:-1] + "-", real=True): v for lhs, v in total.items()}
        new = dict(total)
        for lhs, v in step.items():
            new[lhs] = _simplified(v.xreplace(back))
        total = new
    # unevaluated: a right limit against left limits is never decided (`_restart_eqs`)
    return tuple(sp.Eq(lhs, v, evaluate=False) for lhs, v in total.items())
