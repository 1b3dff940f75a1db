"""The mode-change diagnostics of the one analysis (issue 26, docs/multimode.md "One
analysis"): E-RESTART-MISSING, E-RESTART-CONFLICT, E-IMPULSE-INCONSISTENT, W-IMPULSE-ORDER,
W-STANDARDIZE and W-FAKE-IMPULSE, without enumerating the mode changes.

A mode change matters to the guarded block schedule where it enters a block variant: its new
mode satisfies the variant's formula F, its old one does not (docs/decisions.md §9: the
restart of the change is the variants' restart systems, block lower triangular). So the
changes fall into classes, one per variant formula F, "from the regular modes outside F into
the modes of F". Of each class one concrete change is analysed (the new mode picked from F,
the old one from outside F, differing from it in as few guards as the formulas allow) by
the enumerated analysis' own cascade (`mdae_fmu.modes.explore.analyze_changes`:
SolveConflict, docs/theory.md §6.6; impulse analysis and standardization, §9), and each of
its diagnostics is reported with the formulas of the class. Without a schedule (the schedule
refused the model) or for a merged block (one variant for every mode of its component), the
classes are those of the implicit analysis' conditional blocks and offsets and of each guard
literal (docs/theory.md §10.2), which every variant formula is a conjunction of.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..diagnostics import MdaeError
from ..ir import Model
from .analysis import ImplicitAnalysis
from .schedule import FormulaTable, GuardedSchedule


@dataclass(frozen=True)
class ChangeDiagnostics:
    """The diagnostics of the concrete changes analysed, ``CODE: message`` each: ``errors``
    reject the model, ``warnings`` (``W-...``) do not."""
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def table_formula(space: Any, table: FormulaTable, root: int) -> Any:
    """The BDD (over ``space``'s guard variables) of the node ``root`` of a formula table
    (`mdae_fmu.implicit.variants.formula_table` flattens BDDs into it: -1 true, -2 false,
    else a node testing the guard atom ``table.var[root]``)."""
    bdd = space.bdd
    names = [space.var_of[a] for a in space.atoms]
    built: dict[int, Any] = {-1: bdd.true, -2: bdd.false}
    stack = [root]
    while stack:
        k = stack[-1]
        if k in built:
            stack.pop()
            continue
        lo, hi = table.lo[k], table.hi[k]
        todo = [n for n in (lo, hi) if n not in built]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        built[k] = bdd.ite(bdd.var(names[table.var[k]]), built[hi], built[lo])
    return built[root]


def change_classes(ia: ImplicitAnalysis, schedule: GuardedSchedule | None) -> list[Any]:
    """The formulas F whose changes "into F from the regular modes outside F" are the
    classes of the module docstring, without repeats: the variant formulas of ``schedule``;
    without one, or when a variant is merged (`mdae_fmu.implicit.merged`: one block whose
    rows guard bits select, its formula every mode of its component), also the formulas of
    the implicit analysis' conditional blocks, of each value of the offsets c and d, and of
    each guard literal."""
    space = ia.space
    bdd = space.bdd
    regular = space.care & ~ia.singular
    found = []
    if schedule is not None:
        found = [table_formula(space, schedule.table, v.formula) for v in schedule.variants]
    if schedule is None or any(v.merged for v in schedule.variants):
        # a merged block holds every mode's rows under one formula: its changes are
        # told apart by the formulas its rows and offsets are selected by
        found += [b.formula for b in ia.blocks]
        found += [f for case in (*ia.c, *ia.d) for f in case.values()]
        for a in space.atoms:
            lit = bdd.var(space.var_of[a])
            found += [lit, ~lit]
    out: list[Any] = []
    seen: set[Any] = set()
    for f in found:
        f = f & regular
        if f in (bdd.false, regular) or f in seen:
            continue
        seen.add(f)
        out.append(f)
    return out


def concrete_change(space: Any, into: Any, outside: Any) -> tuple[dict, dict] | None:
    """One change of a class: ``(old, new)`` BDD assignments of every guard variable, ``new``
    in ``into`` and ``old`` in ``outside``, differing in one guard when two such modes exist
    (a switch of one component, as a modeller's event is: ``new`` picked from the modes of
    ``into`` whose neighbour across guard g is in ``outside``, the guards tried in order),
    else any two; None when either set is empty."""
    bdd = space.bdd
    names = [space.var_of[a] for a in space.atoms]
    if into == bdd.false or outside == bdd.false:
        return None
    for n in names:
        across = into & bdd.let({n: ~bdd.var(n)}, outside)
        if across != bdd.false:
            new = bdd.pick(across, care_vars=names)
            return {**new, n: not new[n]}, new
    return bdd.pick(outside, care_vars=names), bdd.pick(into, care_vars=names)


def change_diagnostics(model: Model, ia: ImplicitAnalysis,
                       schedule: GuardedSchedule | None) -> ChangeDiagnostics:
    """The mode-change diagnostics of ``model`` (the code form the implicit analysis ``ia``
    analysed) on one concrete change per class (module docstring), each ``CODE: <the
    enumerated analysis' message of that change> (changes from the modes A into the modes
    B)``, A and B the formulas of its class; one message per distinct text."""
    from ..modes.explore import analyze_changes
    from ..modes.normalize import normalize
    from ..modes.shiftform import ShiftForm
    if not ia.ok or not ia.space.atoms:
        return ChangeDiagnostics()
    try:
        system = normalize(model)
    except MdaeError:
        return ChangeDiagnostics()    # an error in the guards: the analysis' stages report it
    space = ia.space
    sf = ShiftForm(system)
    regular = space.care & ~ia.singular
    bit = {a: space.var_of[a] for a in space.atoms}
    pairs: dict[tuple, str] = {}      # concrete change -> the formulas of its class
    for into in change_classes(ia, schedule):
        outside = regular & ~into
        pair = concrete_change(space, into, outside)
        if pair is None:
            continue
        old, new = (_system_mode(system, space.fixed, bit, asg) for asg in pair)
        if old is not None and new is not None and (old, new) not in pairs:
            pairs[(old, new)] = (f" (changes from the modes {space.text(outside)} into the "
                                 f"modes {space.text(into)})")
    affine: dict = {}
    errors: dict[str, None] = {}
    warnings: dict[str, None] = {}
    found = analyze_changes(system, list(pairs),
                            lambda ch: needs_impulse_analysis(system, sf, ch, affine),
                            shift_form=sf)
    for where, (_, diagnostics) in zip(pairs.values(), found):
        for d in diagnostics:
            text = f"{d.code}: {d.message}{where}"
            (warnings if d.code.startswith("W-") else errors).setdefault(text, None)
    return ChangeDiagnostics(errors=tuple(errors), warnings=tuple(warnings))


def needs_impulse_analysis(system: Any, sf: Any, change: Any, cache: dict) -> bool:
    """Whether the impulse analysis and standardization of the accepted ``change`` (a
    `ModeChange` of ``system`` explored without them; ``sf`` its `ShiftForm`) can report
    what its structural cascade does not. W-FAKE-IMPULSE needs an erased equation whose
    residual is the zero-crossing variable of a guard that changed (`fake_impulse_note`,
    cheap); W-IMPULSE-ORDER a non-polynomial entry of an instant's restart problem
    (`mdae_fmu.impulse.analysis`), W-STANDARDIZE a problem Algorithm ST cannot take. A
    change whose instants' restart problems are all affine in their unknowns and that
    erases no such residual gives none of them: the guarded schedule restarts it by the
    h -> 0 limit of its affine block restarts (docs/theory.md §11), and is spared the
    symbolic solve of the whole instant (seconds per change). ``cache``: `_affine`'s."""
    from ..modes.explore import fake_impulse_note
    from ..modes.restart import restart_problem
    failures = (ValueError, TypeError, NotImplementedError, ZeroDivisionError, RuntimeError)
    for k, ri in enumerate(change.instants):
        inst = ri.instant
        if inst is None:
            continue
        if k == 0 and fake_impulse_note(system, sf, change.src, change.dst, inst.erased):
            return True
        try:
            problem = restart_problem(sf, inst, f"instant {k}")
        except failures:
            return True         # the standardization would fail too: W-STANDARDIZE
        unknowns = frozenset(problem.unknowns)
        if not all(_affine(eq, unknowns, cache) for _, eq in problem.equations):
            return True
    return False


def _affine(expr: Any, unknowns: frozenset, cache: dict) -> bool:
    """Whether the sympy ``expr`` is affine in ``unknowns``: no first derivative in one of
    them reads one of them (``cache``: the answer per expression, shared by the changes)."""
    mine = frozenset(expr.free_symbols & unknowns)
    key = (expr, mine)
    if key not in cache:
        cache[key] = all(not (expr.diff(u).free_symbols & mine) for u in mine)
    return bool(cache[key])


def _system_mode(system: Any, fixed: dict, bit: dict, asg: dict) -> tuple[bool, ...] | None:
    """The mode of the normalized ``system`` (a value per guard) of the BDD assignment
    ``asg`` of the guard atoms: a long guard takes its atom's value (or its fixed value), a
    transient guard is false (a long mode); None when a long guard is not a guard atom."""
    out = []
    for g in system.guards:
        if g.kind != "long":
            out.append(False)
        elif g.cond in bit:
            out.append(bool(asg[bit[g.cond]]))
        elif g.cond in fixed:
            out.append(bool(fixed[g.cond]))
        else:
            return None
    return tuple(out)
