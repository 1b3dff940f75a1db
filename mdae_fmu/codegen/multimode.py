"""Multimode Model Exchange code: one schedule per reachable long mode, one restart per edge.

docs/theory.md §11 (execution scheme: per-mode index-reduced system F^c
solved by blocks, restart at a mode change, one nonstandard instant per event iteration) and
with its FMI 2.0 mapping; docs/theory.md §13 for the models. Decisions: docs/multimode-fmu.md.

Plain-data stages:

* `plan_multimode(model, report, automaton)` -> `MultimodePlan`: the union layout (one value
  slot per variable instance used by any mode, one state vector = the union of the modes'
  states; a union state that some mode computes as an algebraic variable keeps its state
  vector entry in a hidden slot, `StatePlan.store`), then per long mode its blocks and
  consistency equations (`ModeCode`) and per edge of the mode-change automaton its instants
  (`EdgeCode`, `InstantCode`): each instant's standardized restart ``x+ = f(x-)``, or for an
  instant without closed form its delta-system (`DeltaCode`), and the integrals of its
  impulsive variables (`ImpulseOutput`).
* `generate_mode_sources(plan, ev)` -> `ModeSources`: the C files ``model_mode_<m>.c`` (the
  block schedule of mode m, reusing the exporter's block code) and ``model_modes.c`` (the mode
  selection from the guard valuation, the instants of the changes, the per-mode
  ``mdae_compute``, ``mdae_drift`` and ``mdae_project``), plus the sizes the exporter's
  ``config.h`` needs.

Run-time contract (``model_modes.c``): ``mdae_compute`` evaluates the discrete equations and
runs the schedule of the current mode; ``mdae_mode_step``, called by the generic event update
once per instant of the event iteration (which ``fmi2NewDiscreteStates`` runs whole,
docs/fmi-mapping.md "Events in third-party hosts"), performs ONE nonstandard instant: when the
long guards
name another mode it projects the left limits onto the old mode's consistency equations and
applies the first instant of the change, while a change is in progress its next instant (all
right-hand sides evaluated before any assignment; numerically singular or non-finite restarts
are run-time errors naming the mode change, the instant and the time), and after the last one
projects onto the new mode's consistency equations and requests one more instant to
re-evaluate the guards. ``valuesOfContinuousStatesChanged`` is set when an instant moved a
state or changed the mode (the equations of the derivatives).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import sympy as sp

from ..diagnostics import ModelRejected
from ..ir import Model
from .blocks import BlockPlan, gauss_newton_work, newton_work
from .cprinter import c_comment, c_string
from .emit import discrete_code, make_printers, schedule_file, template_environment
from .events import preorder
from .initialization import ModeRows
from .plan import CompiledModel, compile_model
from .restarts import check_left, instant_integrals, left_printer, print_over_instant, \
    restart_targets, slot_names
from .layout import ImpulseOutput, ModeSources, UnionLayout, band_left_limit_relations, \
    band_updates, max_mode_changes, watched_relations
from .slots import c_slot



@dataclass(frozen=True)
class ModeCode:
    """One long mode: its automaton label, guard valuation, blocks (global indices start at
    ``offset``), consistency equations F^{<c} and the union-state positions it integrates."""
    index: int
    label: str
    valuation: tuple[bool, ...]
    blocks: tuple[BlockPlan, ...]
    offset: int
    consistency: tuple[tuple[str, sp.Expr], ...]
    integrated: tuple[int, ...]          # positions in the union state vector


@dataclass(frozen=True)
class DeltaCode:
    """An instant without closed form (S3), restarted by the delta-scheme of RR-9334 §11.3
    (`mdae_fmu.impulse.numeric.delta_form`): ``equations`` F(z, h) = 0 and the nonzero
    ``jacobian`` entries ``(i, j, dF_i/dz_j)`` in the solver variables ``z`` and ``h``
    (delta); ``targets`` ``(slot, T(z, h))``, the right limits it writes; ``metric`` the right
    limits at the end of the cascade as functions of the targets (symbols ``tsyms``): the
    following closed-form instants composed, whose convergence as h -> 0 decides."""
    z: tuple
    h: sp.Symbol
    equations: tuple
    jacobian: tuple
    targets: tuple
    tsyms: tuple
    metric: tuple


@dataclass(frozen=True)
class InstantCode:
    """One nonstandard instant of a mode change: its standardized restart ``(slot, f(x-))``
    (``x-`` = the values after the previous instant), the denominators whose numerical
    cancellation makes it singular (``(text, denominator, scale)``), the impulse outputs it
    moves; ``delta`` for an instant without closed form."""
    index: int
    method: str
    restart: tuple[tuple[int, sp.Expr], ...]
    singular: tuple = ()
    impulses: tuple = ()
    delta: DeltaCode | None = None


@dataclass(frozen=True)
class EdgeCode:
    """One mode change ``src -> dst`` (automaton edge): its instants, applied one per
    ``fmi2NewDiscreteStates`` call, and (for inspection) the composed restart of the cascade
    as ``(slot, f(x-))`` pairs."""
    src: int
    dst: int
    label: str
    restart: tuple[tuple[int, sp.Expr], ...]
    impulses: tuple[ImpulseOutput, ...]
    closed_form: bool
    instants: tuple[InstantCode, ...] = ()


@dataclass(frozen=True)
class MultimodePlan:
    compiled: CompiledModel               # union layout; blocks = all modes' blocks
    guards: tuple[sp.Expr, ...]           # the long guards, in valuation order
    modes: tuple[ModeCode, ...]
    edges: tuple[EdgeCode, ...]
    initial: int
    mode_slot: int                        # Integer slot of mdae_mode
    impulses: tuple[ImpulseOutput, ...]
    watched: tuple[sp.Expr, ...] = ()     # relations on x whose guards read pre(x)
    banded: tuple = ()                    # (symbol, relation on pre(x), Boolean slot)
    guard_names: tuple[str, ...] = ()     # the long guards' names, in valuation order

    def initial_rows(self) -> tuple[ModeRows, ...]:
        """Every mode's consistency equations with the guard valuation that selects it: the
        initial system's rows (`mdae_fmu.codegen.initialization.mode_rows`)."""
        return tuple(ModeRows(label=m.label, guards=self.guards, valuation=m.valuation,
                              rows=m.consistency) for m in self.modes)

    @property
    def steady_states(self) -> frozenset:
        """The symbols of the states every mode integrates: their derivative slot is their
        rate at every instant (`mdae_fmu.codegen.events.relation_rate`)."""
        states = self.compiled.states
        return frozenset(states[k].symbol for k in range(len(states))
                         if all(k in m.integrated for m in self.modes))


def _only(report, mode):
    return replace(report, modes=(mode,), exit_code=0, messages=())


def _union_mode(modes):
    """A synthetic ModeAnalysis whose instances are the union over ``modes`` (slot layout)."""
    states, leading, blocks, solved, seen = [], [], [], {}, set()
    for m in modes:
        for s in m.states:
            if s not in seen:
                seen.add(s)
                states.append(s)
    lead_seen = set()
    for m in modes:
        for s in m.leading:
            if s not in lead_seen and s not in seen:
                lead_seen.add(s)
                leading.append(s)
        blocks.extend(m.blocks)
        for le in m.solved:
            solved.setdefault((le.eq_id, le.k), le)
    return replace(modes[0], states=tuple(states), leading=tuple(leading), blocks=tuple(blocks),
                   solved=tuple(solved.values()), consistency=())


def check_exportable(model: Model, automaton) -> None:
    """Refuse what the multimode exporter cannot run, as part of the analysis' verdict
    (`mdae_fmu.analysis.analyze` calls it, so that ``analyze`` and ``export`` agree).

    When-clauses that assign discrete variables run through the event plan as in a
    single-mode model, and their reinits as `check_literal_reinits` allows; a transient guard
    (``edge(c)``, ``initial()``) selecting an ordinary equation (``if edge(c) then ...``) has
    no schedule here: `ModelRejected` naming the equations and their lines."""
    clause_ids = {w.id for w in model.whens}
    transient = {k for k, (_, kind) in enumerate(automaton.guards) if kind != "long"}
    system = automaton.system
    if transient and system is None:
        raise ModelRejected(f"model {model.name}: transient guards without a normalized "
                            f"system cannot be exported")
    if transient and system is not None:
        bad = [eq for eq in system.equations if eq.origin not in clause_ids
               and any(i in transient for i, _ in eq.guard)]
        if bad:
            where = ", ".join(f"{eq.origin} ({eq.loc.short()})" if eq.loc else eq.origin
                              for eq in bad)
            raise ModelRejected(
                f"model {model.name}: a transient guard (edge(c), initial()) selects the "
                f"equations {where}, which the exporter of multimode models does not "
                f"support; a value that changes at the event belongs in a when-clause "
                f"(`when c then v = ...; end when;`, held until the next event)")
    check_literal_reinits(model, automaton)


def check_literal_reinits(model: Model, automaton) -> None:
    """Refuse the reinits the multimode exporter cannot run as written.

    In a multimode FMU the when-branches, reinits included, run through the event plan as in a
    single-mode model (docs/multimode-fmu.md, "When-clauses"): at the event the branch's
    reinit statements assign their states, then the long guards are re-evaluated and a mode
    change, if any, applies its own analysed restart (docs/theory.md §11, one instant per
    event iteration). That is the analysed cascade only when the first instant of every
    accepted change into the branch's transient mode (edge of its condition) has a closed
    form that moves no state but the ones the fired branches reinit: a restart that also moves
    another state (an impact law whose constraint couples velocities) would need the analysed
    restart per long mode, which this exporter does not apply to when-branches.
    `ModelRejected` naming the when-clause, its line and the moved state otherwise."""
    from .. import expr as E
    from ..ir import Reinit
    from .restarts import is_identity
    system = automaton.system
    if system is None:
        return
    # transient guard index -> [(clause id, line, reinit targets)]
    by_guard: dict[int, list[tuple[str, str, set[str]]]] = {}
    for w in model.whens:
        for br in w.branches:
            targets = {a.var for a in br.actions if isinstance(a, Reinit)}
            if not targets:
                continue
            atom = E.unedge(E.strip_not(br.condition)[0])
            line = next((a.loc.short() for a in br.actions
                         if isinstance(a, Reinit) and a.loc), model.name)
            for k, g in enumerate(system.guards):
                if g.kind == "transient" and g.cond == atom:
                    by_guard.setdefault(k, []).append((w.id, line, targets))
    if not by_guard:
        return
    for ch in automaton.changes:
        if not ch.accepted or system.is_transient(ch.src) or not ch.instants:
            continue
        fired = [c for k, cs in by_guard.items() if ch.dst[k] for c in cs]
        if not fired:
            continue
        reinit = set().union(*(t for _, _, t in fired))
        where = ", ".join(f"when-clause {c} ({line})" for c, line, _ in fired)
        first = ch.instants[0]
        if first.method == "S3" or not first.method:
            raise ModelRejected(
                f"model {model.name}: {where}: the restart of [{ch.src_label}] -> "
                f"[{ch.dst_label}] has no closed form; the multimode exporter runs reinit "
                f"statements as written and supports only restarts that move the reinitialized "
                f"states alone")
        for eq in first.restart:
            var = str(eq.lhs)[:-1]
            if not is_identity(eq) and var not in reinit:
                raise ModelRejected(
                    f"model {model.name}: {where}: at [{ch.src_label}] -> [{ch.dst_label}] "
                    f"the analysed restart also moves {var} ({eq.lhs} = {eq.rhs}), which the "
                    f"branch does not reinit; the multimode exporter runs reinit statements "
                    f"as written and supports only restarts that move the reinitialized "
                    f"states alone")


def plan_multimode(model: Model, report, automaton) -> MultimodePlan:
    """Union layout, per-mode schedules and per-edge restarts (module docstring; docs/theory.md §11:
    per-mode schedules, restarts, one state vector). ``report`` and
    ``automaton`` are the one analysis of the model (`mdae_fmu.analysis.Analysis`); nothing
    is re-analysed here.

    Steps: pair each accepted long mode of the automaton with its per-mode analysis
    (`_mode_analyses`), compile the union layout and each mode's schedule (`_mode_codes`),
    add the exporter's own variables to the layout (`UnionLayout`: ``mdae_mode``, the hidden
    state stores, the impulse outputs), plan every mode change (`_edge_codes`)."""
    automaton.raise_if_rejected()
    if report.exit_code != 0:
        raise ModelRejected("; ".join(report.messages) or
                            f"model {model.name}: the structural analysis rejects it")
    long_idx = [k for k, (_, kind) in enumerate(automaton.guards) if kind == "long"]
    check_exportable(model, automaton)
    guard_names, analyses = _mode_analyses(model, report, automaton, long_idx)
    union = compile_model(model, _only(report, _union_mode([a for _, a in analyses])))
    modes, all_blocks = _mode_codes(model, report, analyses, union, long_idx)
    initial = _initial_mode(automaton, modes, long_idx)
    layout = UnionLayout(union)
    mode_slot = layout.add_mode_variable(modes, initial)
    layout.add_state_stores(modes)
    edges = _edge_codes(automaton, modes, layout, slot_names(union))
    impulses = tuple(layout.impulses.values())
    compiled = replace(union, blocks=tuple(all_blocks), consistency=modes[initial].consistency,
                       variables=tuple(layout.variables), n_int=union.n_int + 1,
                       n_real=layout.n_real, real_names=tuple(layout.real_names),
                       states=tuple(layout.states),
                       discrete_real_slots=union.discrete_real_slots
                       + tuple(i.slot for i in impulses),
                       dependencies={}, guesses=layout.guesses)
    table = report.symbols
    guards = tuple(table.to_sympy(report.guard_exprs[[*report.long_guards].index(g)])
                   for g in guard_names)
    compiled, banded = band_left_limit_relations(report, compiled)
    return MultimodePlan(compiled, guards, tuple(modes), tuple(edges), initial, mode_slot,
                         impulses, watched_relations(report, banded), banded, tuple(guard_names))


def _mode_analyses(model: Model, report, automaton, long_idx: list[int]):
    """The long guards' names as the per-mode report writes them, and each accepted long mode
    of the automaton (`ModeInfo`) with the per-mode analysis of the same guard valuation
    (docs/theory.md §11: one index-reduced system per long mode). `ModelRejected`
    when the two stages disagree on the guards or a mode has no per-mode analysis."""
    # the automaton labels its guards with modes.normalize's labels, the per-mode report with
    # Modelica text (`v < -Ve` and `v < (-Ve)`): name each guard as the report does
    from ..modes.normalize import guard_label
    report_text = {guard_label(a): t for a, t in zip(report.guard_exprs, report.long_guards)}
    guard_names = [report_text.get(automaton.guards[k][0], automaton.guards[k][0])
                   for k in long_idx]
    by_valuation = {}
    for ma in report.modes:
        val = dict(ma.valuation)
        if set(val) != set(guard_names):
            raise ModelRejected(f"model {model.name}: internal: guards of mode {ma.name} "
                                f"({sorted(val)}) differ from the automaton's {guard_names}")
        by_valuation[tuple(bool(val[g]) for g in guard_names)] = ma
    analyses = []
    for mi in automaton.modes:
        if mi.kind != "long" or not mi.ok:
            continue
        key = tuple(bool(mi.mode[k]) for k in long_idx)
        if key not in by_valuation:
            raise ModelRejected(f"model {model.name}: mode [{mi.label}] has no per-mode "
                                f"analysis")
        analyses.append((mi, by_valuation[key]))
    return guard_names, analyses


def _mode_codes(model: Model, report, analyses, union: CompiledModel, long_idx: list[int]):
    """`ModeCode` of every long mode: its block schedule compiled alone (`compile_model`),
    its blocks labelled with the mode and numbered after the previous modes' (docs/theory.md §11),
    its consistency equations and the union-state positions it integrates
    (docs/theory.md §11: one state vector). Also the concatenation of all the modes' blocks."""
    state_pos = {s.symbol: k for k, s in enumerate(union.states)}
    modes: list[ModeCode] = []
    all_blocks: list = []
    for m, (mi, ma) in enumerate(analyses):
        one = compile_model(model, _only(report, ma))
        blocks = tuple(replace(b, label=f"[{mi.label}] {b.label}") for b in one.blocks)
        integrated = tuple(sorted(state_pos[s.symbol] for s in one.states))
        modes.append(ModeCode(m, mi.label, tuple(bool(mi.mode[k]) for k in long_idx), blocks,
                              len(all_blocks), one.consistency, integrated))
        all_blocks.extend(blocks)
    return modes, all_blocks


def _initial_mode(automaton, modes, long_idx: list[int]) -> int:
    """The index of the automaton's initial mode among ``modes`` (0 when it has none)."""
    initial = 0
    if automaton.initial_mode is not None:
        key = tuple(bool(automaton.initial_mode[k]) for k in long_idx)
        for mc in modes:
            if mc.valuation == key:
                initial = mc.index
    return initial


def _edge_codes(automaton, modes, layout: UnionLayout, slot_of_name: dict) -> list[EdgeCode]:
    """`EdgeCode` of every accepted mode change between two planned long modes: its composed
    restart and, per instant, `_instant_code` (docs/theory.md §11: one nonstandard
    instant per event iteration)."""
    edges = []
    sf = None                      # the ShiftForm of the system, built at its first use
    idx_of = {mc.label: mc.index for mc in modes}
    for ch in automaton.changes:
        if not ch.accepted or ch.src_label not in idx_of or ch.dst_label not in idx_of:
            continue
        label = f"[{ch.src_label}] -> [{ch.dst_label}]"
        restart = restart_targets(ch.restart, slot_of_name, f"mode change {label}")
        edge_imp: list[ImpulseOutput] = []
        instants = []
        for k, ri in enumerate(ch.instants):
            if (_numeric(ri) or ri.impulsive) and sf is None:
                from ..modes.shiftform import ShiftForm
                sf = ShiftForm(automaton.system)
            instants.append(_instant_code(sf, ri, ch.instants[k + 1:], layout,
                                          slot_of_name, label, edge_imp))
        edges.append(EdgeCode(idx_of[ch.src_label], idx_of[ch.dst_label], label, restart,
                              tuple(edge_imp), bool(ch.restart), tuple(instants)))
    return edges


def _instant_code(sf, ri, later, layout: UnionLayout, slot_of_name: dict, label: str,
                  edge_imp: list) -> InstantCode:
    """`InstantCode` of one instant of a mode change: the integrals of its impulsive variables
    (docs/theory.md §9, `instant_integrals`; their outputs appended to ``edge_imp``), then its
    standardized restart (RR-9334 §11, Algorithm ST) or, without closed form, its delta-system
    (`_delta_code`, RR-9334 §11.3)."""
    laws = []
    for var, (num, den) in instant_integrals(sf, ri).items():
        out = layout.impulse_output(var)
        if out not in edge_imp:
            edge_imp.append(out)
        what = f"mode change {label}, impulse of {var}"
        laws.append((out, check_left(num, slot_of_name, what),
                     check_left(den, slot_of_name, what)))
    if _numeric(ri):
        delta = _delta_code(sf, ri, later, slot_of_name, label)
        return InstantCode(ri.index, "S3", (), (), tuple(laws), delta)
    pairs = restart_targets(ri.restart, slot_of_name, f"mode change {label}")
    return InstantCode(ri.index, ri.method or "S0", pairs, _singularities(pairs), tuple(laws))


def _numeric(ri) -> bool:
    """An instant restarted numerically: no closed form (S3, or a standardization that failed:
    W-STANDARDIZE) although it has a restart system."""
    return ri.instant is not None and (ri.method == "S3" or (not ri.method and not ri.restart
                                                            and bool(ri.instant.blocks)))


def _delta_code(sf, ri, later, slot_of_name: dict, label: str) -> DeltaCode:
    """`DeltaCode` of the instant ``ri`` (module docstring of `mdae_fmu.impulse.numeric`);
    ``later``: the following instants of the cascade, composed into the metric up to the next
    instant without closed form."""
    from ..impulse.analysis import impulse_analysis
    from ..impulse.numeric import delta_form
    from ..modes.restart import restart_problem
    prob = restart_problem(sf, ri.instant, f"instant {ri.index}")
    try:
        ia = impulse_analysis(prob)
    except (ValueError, TypeError, NotImplementedError, ZeroDivisionError, RuntimeError):
        ia = None
    form = delta_form(prob, ia)
    what = f"mode change {label}, instant {ri.index}"
    solver = set(form.z) | {form.d}
    for e in form.equations:
        check_left(sp.Add(*sorted(e.free_symbols - solver, key=str)), slot_of_name, what)
    jac = []
    for i, e in enumerate(form.equations):
        for j, z in enumerate(form.z):
            if z in e.free_symbols:
                jac.append((i, j, sp.diff(e, z)))
    targets: list[tuple[int, sp.Expr]] = []
    tsyms: list[sp.Symbol] = []
    value: dict[str, sp.Symbol] = {}
    for rsym in sorted(form.targets, key=str):
        name = rsym.name[:-1]
        k = slot_of_name.get(name)
        if k is None:
            continue
        t = sp.Symbol(f"mdae_T{len(targets)}")
        targets.append((k, form.targets[rsym]))
        tsyms.append(t)
        value[name] = t
    assigned = set(value)
    for nxt in later:
        if _numeric(nxt):
            break
        new = dict(value)
        for eq in nxt.restart:
            lhs = str(eq.lhs)
            if not lhs.endswith("+"):
                continue
            name = lhs[:-1]
            if name not in slot_of_name:
                continue
            sub = {s: value[s.name[:-1]] for s in eq.rhs.free_symbols
                   if s.name.endswith("-") and s.name[:-1] in value}
            new[name] = eq.rhs.xreplace(sub)
            assigned.add(name)
        value = new
    metric = tuple(value[n] if n in value else sp.Symbol(n + "-")
                   for n in sorted(assigned))
    for e in metric:
        check_left(sp.Add(*sorted(e.free_symbols - set(tsyms), key=str)), slot_of_name, what)
    return DeltaCode(form.z, form.d, form.equations, tuple(jac), tuple(targets), tuple(tsyms),
                     metric)


def _singularities(pairs) -> tuple:
    """The denominators of a closed-form restart with the sum of the magnitudes of their
    terms: ``|D| <= 1e-13 * scale`` means the restart system is numerically singular
    (docs/multimode-fmu.md, "Failures"); ``(text, D, scale)`` sorted by text."""
    dens: dict[str, sp.Expr] = {}
    for _, e in pairs:
        for node in preorder(e):
            if node.is_Pow and node.exp.is_number and node.exp.is_negative:
                base = node.base
                if base.is_number:
                    continue
                dens.setdefault(str(base), base)
    out = []
    for text in sorted(dens):
        base = dens[text]
        terms = sp.Add.make_args(sp.expand(base))
        scale = sp.Add(*[sp.Abs(t) for t in terms])
        out.append((text, base, scale))
    return tuple(out)


# --- C text ---------------------------------------------------------------------------------

def generate_mode_sources(plan: MultimodePlan, ev) -> ModeSources:
    """C files of the per-mode schedules and of the mode logic (module docstring)."""
    cm = plan.compiled
    pr = make_printers(cm, ev)
    p = pr.main
    lp = left_printer(cm)
    env = template_environment()
    files = {}
    state_slot = {s.symbol: s.slot for s in cm.states}
    work, perm, ncons = 1, 1, 0
    modes_ctx = []
    for mc in plan.modes:
        for blk in mc.blocks:
            work = max(work, newton_work(len(blk.unknowns)))
            perm = max(perm, len(blk.unknowns))
        files[f"model_mode_{mc.index}.c"] = schedule_file(
            env, mc.blocks, mc.offset, pr.schedule, f"m{mc.index}",
            c_comment(f"{cm.name} mode [{mc.label}]"))
        proj = sorted({state_slot[s] for _, e in mc.consistency for s in e.free_symbols
                       if s in state_slot})
        ncons = max(ncons, len(mc.consistency))
        work = max(work, gauss_newton_work(len(mc.consistency), len(proj)))
        perm = max(perm, len(mc.consistency), len(proj))
        integrated = set(mc.integrated)
        zero = [cm.states[k].der_slot for k in range(len(cm.states)) if k not in integrated]
        stores = [(c_slot(cm.slot("r", cm.states[k].slot)), c_slot(cm.slot("r", store)))
                  for k in sorted(integrated) if (store := cm.states[k].store) is not None]
        modes_ctx.append(dict(
            index=mc.index, label=c_string(mc.label), comment=c_comment(mc.label, 60),
            key=sum(1 << g for g, v in enumerate(mc.valuation) if v),
            zero_ders=[c_slot(cm.slot("r", k)) for k in zero], stores=stores,
            cons=[p.doprint(e) for _, e in mc.consistency],
            project=proj))
    edges_ctx = []
    for e, ed in enumerate(plan.edges):
        instants = []
        for ic in ed.instants:
            lines = [(c_slot(cm.slot("r", slot)), lp(x), c_string(cm.real_names[slot]))
                     for slot, x in ic.restart]
            if ic.delta is not None:
                right = {k: f"T[{j}]" for j, (k, _) in enumerate(ic.delta.targets)}
            else:
                right = {slot: f"v{j}" for j, (slot, _) in enumerate(ic.restart)}
            imps = [(c_slot(cm.slot("r", out.slot)), print_over_instant(lp, num, right),
                     print_over_instant(lp, den, right))
                    for out, num, den in ic.impulses]
            sing = [(c_string(text), lp(den), lp(scale)) for text, den, scale in ic.singular]
            delta = None
            if ic.delta is not None:
                dc = ic.delta
                zmap = {z: f"z[{i}]" for i, z in enumerate(dc.z)}
                zmap[dc.h] = "h"
                tmap = {t: f"T[{j}]" for j, t in enumerate(dc.tsyms)}
                n = len(dc.z)
                delta = dict(
                    n=n, nt=max(len(dc.targets), 1), nm=max(len(dc.metric), 1),
                    F=[lp(e, zmap) for e in dc.equations],
                    J=[(i * n + j, lp(e, zmap)) for i, j, e in dc.jacobian],
                    T=[lp(e, zmap) for _, e in dc.targets],
                    slots=[c_slot(cm.slot("r", k)) for k, _ in dc.targets],
                    names=[c_string(cm.real_names[k]) for k, _ in dc.targets],
                    M=[lp(e, tmap) for e in dc.metric])
                work = max(work, n * n + 6 * n)
                perm = max(perm, n)
            instants.append(dict(index=ic.index, method=ic.method, restart=lines,
                                 impulses=imps, singular=sing, delta=delta))
        edges_ctx.append(dict(index=e, src=ed.src, dst=ed.dst, label=c_string(ed.label),
                              comment=c_comment(ed.label, 60), instants=instants))
    guards = [p.doprint(g) for g in plan.guards]
    disc = discrete_code(p, cm.discrete_assignments) + band_updates(p, plan.banded)
    all_imp = [c_slot(cm.slot("r", i.slot)) for i in plan.impulses]
    files["model_modes.c"] = env.get_template("model_modes.c.j2").render(
        comment_name=c_comment(cm.name), modes=modes_ctx, edges=edges_ctx, guards=guards,
        discrete_assignments="\n".join(disc), mode_slot=c_slot(cm.slot("i", plan.mode_slot)),
        impulse_slots=all_imp, nmodes=len(plan.modes),
        guard_names=[c_string(g) for g in plan.guard_names],
        max_mode_changes=max_mode_changes(len(plan.modes)))
    return ModeSources(files, ncons, work, perm)

