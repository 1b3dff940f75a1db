"""The mode-change diagnostics of the one analysis (issue 26, docs/multimode.md "One
analysis"): E-RESTART-MISSING, E-RESTART-CONFLICT, E-IMPULSE-INCONSISTENT, W-IMPULSE-ORDER,
W-STANDARDIZE and W-FAKE-IMPULSE, without enumerating the mode changes.

A mode change matters to the guarded block schedule where it enters a block variant: its new
mode satisfies the variant's formula F, its old one does not (docs/decisions.md §9: the
restart of the change is the variants' restart systems, block lower triangular). So the
changes fall into classes, one per variant formula F, "from the regular modes outside F into
the modes of F". Of each class one concrete change is analysed (the new mode picked from F,
the old one from outside F, differing from it in as few guards as the formulas allow) by the
enumerated analysis' own cascade (`mdae_fmu.modes.explore.analyze_changes`: SolveConflict,
docs/theory.md §6.6; impulse analysis and standardization, §9), and each of its diagnostics
is reported with the formulas of the class. Each concrete change is analysed on its region
(`change_region`: the equations that differ between its two modes and what they couple to,
without the blocks both modes compute alike from values the change does not touch, nor the
rows past a state the change leaves continuous, docs/theory.md §10.9), so a drive line's
clutch is decided with its two shafts, even next to a long unswitched tail, and the
diagnostics' cost follows the number of classes, not classes times model size. Without a
schedule (the schedule refused the model) or for a merged block (one variant for every mode
of its component), the classes are those of the implicit analysis' conditional blocks and
offsets and of each guard literal (docs/theory.md §10.2), which every variant formula is a
conjunction of.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from collections.abc import Callable
from typing import Any

from ..diagnostics import MdaeError
from .. import expr as E
from ..ir import Model
from .analysis import ImplicitAnalysis
from .schedule import FormulaTable, GuardedSchedule


#: how deep `change_region` follows a chain of settled variables (Python's recursion limit)
SETTLE_DEPTH = 200


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
    # flipping a guard ``into`` does not read keeps the mode in ``into``: only the guards of
    # its support can cross (the same first guard as trying them all, in their order)
    support = bdd.support(into)
    for n in (n for n in names if n in support):
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
    B)``, A and B the formulas of its class; one message per distinct text. Each change is
    analysed on its `change_region`, with the shift form of the whole system (its instances
    and formulas shared by the changes)."""
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
    occurs = occurrences(system)
    quiet: set[tuple] = set()         # regions (up to renaming) that gave no diagnostic
    constants = _constant_bindings(model)
    for (old, new), where in pairs.items():
        sub = change_region(system, old, new, occurs)
        key = None if sub is system else region_key(system, sub, old, new, constants)
        if key is not None and key in quiet:
            continue        # a twin up to renaming was analysed and said nothing

        def standardize(change: Any, sub: Any = sub) -> bool:
            return needs_impulse_analysis(sub, sf, change, affine)
        found = analyze_changes(sub, [(old, new)], standardize, shift_form=sf)
        said = False
        for _, diagnostics in found:
            for d in diagnostics:
                said = True
                text = f"{d.code}: {d.message}{where}"
                (warnings if d.code.startswith("W-") else errors).setdefault(text, None)
        if key is not None and not said:
            quiet.add(key)
    return ChangeDiagnostics(errors=tuple(errors), warnings=tuple(warnings))


_REF = re.compile(r"Ref\(name='((?:[^'\\]|\\.)*)'\)")


def _constant_bindings(model: Model) -> dict[str, str]:
    """The constants of ``model`` with the text of their value (binding, else start): a
    value, unlike a parameter's symbol, can decide a term of the analysis (`region_key`)."""
    return {v.name: repr(v.binding if v.binding is not None else v.start)
            for v in model.variables if v.variability == "constant"}


def _natural(name: str) -> tuple:
    """``shaft10.w`` after ``shaft9.w``: the digits of a name compared as numbers."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", name))


def region_key(system: Any, sub: Any, old: tuple[bool, ...], new: tuple[bool, ...],
               constants: dict[str, str]) -> tuple:
    """The change ``old -> new`` on its region ``sub`` (`change_region`) up to a renaming of
    its names, equations and guards (docs/theory.md §10.5): every name a residual or the
    definition of a guard that differs reads (unknowns and parameters) becomes its rank
    among them (digits compared as numbers, `_natural`), the equations are taken in the
    system's order and the guard indices by rank, and the key holds the renamed residuals,
    guards, signature rows and reinits, the two modes on those guards, the definitions of
    the guards that differ and the values of the constants read. Two changes with one key
    are the same problem for `change_diagnostics` (the Σ-method, the cascade, the impulse
    analysis and the affinity test read the structure and the expressions, not the names),
    their diagnostics differing only in the names: a drive line's clutches, each on its two
    shafts, are one key."""
    eqs = list(sub.equations)          # (in the system's order, which the analysis follows)
    flipped = [i for i, (a, b) in enumerate(zip(old, new)) if a != b]
    guards = sorted({i for e in eqs for i, _ in e.guard} | set(flipped))
    g_rank = {i: k for k, i in enumerate(guards)}
    texts = [repr(e.residual) for e in eqs] + [repr(system.guards[i].definition)
                                                for i in flipped]
    names = sorted({n for t in texts for n in _REF.findall(t)}
                   | {v for e in eqs for v, _ in e.orders} | set(sub.unknowns)
                   | {e.reinit for e in eqs if e.reinit}, key=_natural)
    rank = {n: f"v{k}" for k, n in enumerate(names)}

    def renamed(text: str) -> str:
        return _REF.sub(lambda m: f"Ref({rank[m.group(1)]})", text)
    rows = tuple((renamed(repr(e.residual)),
                  tuple((g_rank[i], p) for i, p in e.guard),
                  frozenset((rank[v], o) for v, o in e.orders),
                  rank.get(e.reinit) if e.reinit else None) for e in eqs)
    return (rows, frozenset(rank[v] for v in sub.unknowns),
            tuple((system.guards[i].kind, old[i], new[i]) for i in guards),
            tuple(renamed(repr(system.guards[i].definition)) for i in flipped),
            tuple(sorted((rank[n], c) for n, c in constants.items() if n in rank)))


def occurrences(system: Any) -> dict[str, list[int]]:
    """Per unknown of the normalized ``system``, the indices of the equations it occurs in
    (any derivative order, any guard): the adjacency `change_region` walks."""
    out: dict[str, list[int]] = {}
    for k, e in enumerate(system.equations):
        for v in e.order_map:
            out.setdefault(v, []).append(k)
    return out


class EnabledIn:
    """Whether equation k of ``eqs`` is enabled in each of two modes ``a`` and ``b``
    (``state(k) -> (in a, in b)``), computed when a region's walk first reaches it; ``seen``
    holds the equations asked about (whose guards the walk read)."""

    def __init__(self, eqs: Any, a: tuple[bool, ...], b: tuple[bool, ...]):
        self.eqs, self.a, self.b = eqs, a, b
        self.seen: dict[int, tuple[bool, bool]] = {}

    def __call__(self, k: int) -> tuple[bool, bool]:
        got = self.seen.get(k)
        if got is None:
            guard = self.eqs[k].guard
            got = self.seen[k] = (all(self.a[i] == p for i, p in guard),
                                  all(self.b[i] == p for i, p in guard))
        return got


def settler(eqs: Any, occurs: dict[str, list[int]], differentiated: frozenset[str],
            state: EnabledIn, unsettled: frozenset[str] = frozenset()
            ) -> Callable[[str], int | None]:
    """``settle(v)``: the equation settling the variable ``v`` in both modes of ``state``, or
    None (`change_region`'s rule, docs/theory.md §10.5): an equation enabled in both, of
    order 0 in all its variables, that reads ``v`` and otherwise only settled variables, when
    no equation differentiates ``v`` and ``v`` is not in ``unsettled``. A cycle of
    candidates, or a chain deeper than `SETTLE_DEPTH`, settles none of its variables (a
    smaller region is all that would be lost)."""
    settled: dict[str, int | None] = {}

    def settle(v: str, depth: int = 0) -> int | None:
        if v in settled:
            return settled[v]
        settled[v] = None
        if v in differentiated or v in unsettled or depth > SETTLE_DEPTH:
            return None
        for k in occurs.get(v, ()):
            e = eqs[k]
            if state(k) != (True, True) or any(o for _, o in e.orders):
                continue
            if all(u == v or settle(u, depth + 1) is not None for u in e.order_map):
                settled[v] = k
                return k
        return None
    return settle


def change_region(system: Any, old: tuple[bool, ...], new: tuple[bool, ...],
                  occurs: dict[str, list[int]]) -> Any:
    """The part of the normalized ``system`` that decides the change ``old -> new`` (two long
    modes): ``system`` with only the equations of the region below, its unknowns those they
    read; ``system`` itself when it has transient guards or reinit equations (their cascades
    read the whole instant).

    A variable is *settled* when an equation enabled in both modes, of order 0 in all its
    variables, reads it and otherwise only settled variables, and no equation of the system
    differentiates it: in every perfect matching of either mode that equation is matched to it
    (its only unsettled variable), so the variable is computed alone, from values the change
    does not touch, in both modes and at the instant of the change (no state, no impulse
    reaches it; docs/theory.md §2.2: its block is a 1x1 block of the BTF before the others).
    The region starts from the variables of the equations enabled in one mode only and the
    variables the definitions of the guards that differ read (`fake_impulse_note`'s zero
    crossings), and grows through every equation enabled in either mode that reads one of
    its unsettled variables; the settled variables it reads come with the equations that
    settle them. The other equations of both modes form blocks of the BTF that neither read
    an unsettled variable of the region nor are read by it, identical in both modes: the
    change leaves them steady (continuity, nothing erased), so the Σ-method, the cascade and
    the impulse analysis of the region (docs/theory.md §6.6, §9) give the change's verdict
    and diagnostics, in time that follows the region instead of the model (issue 26: a
    clutch of a drive line decides its changes with its two shafts).

    The walk also stops at the states the change leaves continuous (`SteadyTail`,
    docs/theory.md §10.9): such a state is a known value of the region (out of its unknowns
    and signature rows), and the equations that differentiate it stay out, so the region of
    a clutch next to an unswitched tail of elastically coupled shafts ends at the first
    coupling. When an equation of the region that reads such a state has an offset c > 0 in
    either mode (its instance at the change would read the state's new value), the region is
    grown again without stopping there."""
    if any(g.kind != "long" for g in system.guards) or any(e.reinit for e in system.equations):
        return system
    eqs = system.equations
    state = EnabledIn(eqs, old, new)
    differentiated = differentiated_unknowns(system)
    settle = settler(eqs, occurs, differentiated, state)

    flipped = [i for i, (a, b) in enumerate(zip(old, new)) if a != b]
    guarded = guarded_by(system)
    changed = sorted({k for i in flipped for k in guarded.get(i, ())
                      if state(k)[0] != state(k)[1]})
    seeds = [v for k in changed for v in eqs[k].order_map]
    seeds += sorted(v for i in flipped for v in E.refs(system.guards[i].definition)
                    if v in occurs)
    guard_reads = {v for i in flipped for v in E.refs(system.guards[i].definition)}
    tail = SteadyTail(eqs, occurs, differentiated, guard_reads, state)
    region, cut = grow_region(eqs, occurs, seeds, guard_reads, settle, state, tail)
    region.update(changed)
    if len(region) == len(eqs):
        return system
    sub = _subsystem(system, region, cut)
    if cut and not _reads_cut_at_offset_zero(sub, old, new, cut):
        region, cut = grow_region(eqs, occurs, seeds, guard_reads, settle, state, None)
        region.update(changed)
        if len(region) == len(eqs):
            return system
        sub = _subsystem(system, region, cut)
    return sub


def grow_region(eqs: Any, occurs: dict[str, list[int]], seeds: list[str], guard_reads: set[str],
          settle: Any, state: Any, tail: SteadyTail | None) -> tuple[set[int], set[str]]:
    """The walk of `change_region` (and `when_checks.instant_region`) from ``seeds``: the
    equations of the region and the continuous states it stops at (none without ``tail``)."""
    region: set[int] = set()
    seen: set[str] = set()
    cut: set[str] = set()
    todo = list(dict.fromkeys(seeds))
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if tail is not None and v not in guard_reads and tail.continuous(v):
            cut.add(v)      # a state the change leaves continuous: a known value here
            continue
        k_set = settle(v) if v not in guard_reads else None
        if k_set is not None:
            region.add(k_set)
            todo.extend(u for u in eqs[k_set].order_map if u not in seen)
            continue
        for k in occurs.get(v, ()):
            if k in region or not any(state(k)):
                continue
            if tail is not None and tail.steady_derivative(k):
                continue    # it gives a continuous state no jump: outside the region
            region.add(k)
            todo.extend(u for u in eqs[k].order_map if u not in seen)
    return region, cut


def _subsystem(system: Any, region: set[int], cut: set[str]) -> Any:
    """``system`` with the equations ``region`` only, the states ``cut`` read as known values
    (out of the equations' signature rows and of the unknowns)."""
    kept = tuple(e if not cut.intersection(e.order_map) else
                 replace(e, orders=tuple((v, o) for v, o in e.orders if v not in cut))
                 for k, e in enumerate(system.equations) if k in region)
    names = {v for e in kept for v in e.order_map}
    return replace(system, equations=kept,
                   unknowns=tuple(v for v in system.unknowns if v in names))


def _reads_cut_at_offset_zero(sub: Any, old: tuple[bool, ...], new: tuple[bool, ...],
                              cut: set[str]) -> bool:
    """Whether the equations of the region ``sub`` that read a continuous state of ``cut``
    have offset c = 0 in the Σ-method of both modes (docs/theory.md §10.9: their instance at
    the change then reads the state's old value, a known of the instant); False when a mode
    of the region is singular."""
    from ..modes.runs import sigma_of_mode
    readers = [e.id for e in sub.equations if cut.intersection(E.refs(e.residual))]
    for mode in (old, new):
        sig = sigma_of_mode(sub, mode)
        if not sig.ok or any(sig.c.get(i, 0) for i in readers):
            return False
    return True


class SteadyTail:
    """Which variables a change ``old -> new`` leaves without impulse or jump, for
    `change_region` (docs/theory.md §10.9): the *bounded* algebraic variables and the
    *continuous* states, each decided on the equations around it (memoized, a chain deeper
    than `SETTLE_DEPTH` or a cycle decides nothing). ``state(k)``: whether equation k is
    enabled in (old, new)."""

    def __init__(self, eqs: Any, occurs: dict[str, list[int]], differentiated: frozenset,
                 guard_reads: set[str], state: Any) -> None:
        self.eqs, self.occurs, self.diff = eqs, occurs, differentiated
        self.guard_reads, self.state = guard_reads, state
        self.unknowns = frozenset(occurs)
        self._bounded: dict[str, int | None] = {}
        self._continuous: dict[str, bool] = {}
        self._bounding: set[int] = set()

    def _both(self, k: int) -> bool:
        return bool(self.state(k) == (True, True)) and not self.eqs[k].reinit

    def _finite(self, u: str, depth: int) -> bool:
        """``u`` is a state in both modes (read at order 0: a finite value, docs/theory.md
        §10.6) or bounded."""
        if u in self.diff:
            return any(self._both(k) and self.eqs[k].order_map.get(u, 0) > 0
                       for k in self.occurs.get(u, ()))
        return self.bounded(u, depth + 1) is not None

    def bounded(self, v: str, depth: int = 0) -> int | None:
        """The equation that bounds the algebraic variable ``v`` (no impulse: its
        restart row, h times the residual, leaves h times ``v`` alone), or None: an
        equation enabled in both modes, of order 0 in every variable, affine in ``v`` with
        a coefficient that reads no unknown, its other variables finite (`_finite`)."""
        if v in self._bounded:
            return self._bounded[v]
        self._bounded[v] = None
        if v in self.diff or v in self.guard_reads or depth > SETTLE_DEPTH:
            return None
        for k in self.occurs.get(v, ()):
            e = self.eqs[k]
            if not self._both(k) or any(o for _, o in e.orders):
                continue
            if _linear(e.residual, lambda n, v=v: type(n) is E.Ref and n.name == v,
                       self.unknowns) != "ok":
                continue
            if all(u == v or self._finite(u, depth) for u in e.order_map):
                self._bounded[v] = k
                self._bounding.add(k)
                return k
        return None

    def continuous(self, x: str) -> bool:
        """Whether the state ``x`` keeps its value across the change: differentiated (at
        order 1 at most) only by equations enabled in both modes, affine in ``der(x)``
        with a coefficient that reads no unknown, whose other variables are read at order
        0 and finite; read at order 0 only by those, by the derivative equations of other
        states of both modes, and by the bounding equations of bounded variables."""
        got = self._continuous.get(x)
        if got is not None:
            return got
        self._continuous[x] = False
        if x not in self.diff or x in self.guard_reads:
            return False
        derivative = [k for k in self.occurs.get(x, ())
                      if self.eqs[k].order_map[x] > 0]
        if not derivative or not all(self._steady_derivative_of(k, x) for k in derivative):
            return False
        for k in self.occurs.get(x, ()):
            e = self.eqs[k]
            if k in derivative or not any(self.state(k)):
                continue
            if not self._both(k):
                return False
            if any(o > 0 and u in self.diff for u, o in e.orders):
                continue        # x is read at order 0 by another state's derivative row
            if not any(u not in self.diff and self.bounded(u) == k for u in e.order_map):
                return False
        self._continuous[x] = True
        return True

    def _steady_derivative_of(self, k: int, x: str) -> bool:
        e = self.eqs[k]
        if not self._both(k) or e.order_map[x] != 1:
            return False
        if _linear(e.residual, lambda n: type(n) is E.Der and n.arg == E.Ref(x),
                   self.unknowns) != "ok":
            return False
        return all(u == x or (o == 0 and self._finite(u, 0)) for u, o in e.orders)

    def steady_derivative(self, k: int) -> bool:
        """Whether equation k differentiates a continuous state (it stays out of the region:
        its restart row gives that state no jump)."""
        return any(o > 0 and self.continuous(u) for u, o in self.eqs[k].orders)


def _linear(e: Any, target: Any, unknowns: frozenset) -> str | None:
    """How the expression ``e`` reads the nodes ``target`` holds for: ``"zero"`` not at all,
    ``"ok"`` affinely with a coefficient that reads no name of ``unknowns``, None otherwise
    (a product or quotient of two terms that read it, a function of it)."""
    from .. import expr as E
    if target(e):
        return "ok"
    t = type(e)
    if t is E.BinOp and e.op in ("+", "-"):
        a, b = _linear(e.left, target, unknowns), _linear(e.right, target, unknowns)
        if a is None or b is None:
            return None
        return "ok" if "ok" in (a, b) else "zero"
    if t is E.BinOp and e.op in ("*", "/"):
        a, b = _linear(e.left, target, unknowns), _linear(e.right, target, unknowns)
        if a is None or b is None or (a == b == "ok"):
            return None
        if a == b == "zero":
            return "zero"
        if e.op == "/" and b == "ok":
            return None
        factor = e.right if a == "ok" else e.left
        return "ok" if not (E.refs(factor) & unknowns) else None
    if t is E.UnOp and e.op == "-":
        return _linear(e.arg, target, unknowns)
    return None if any(target(n) for n in E.walk(e)) else "zero"


def guarded_by(system: Any) -> dict[int, list[int]]:
    """Per guard index of ``system``, the indices of the equations whose guard reads it (the
    only ones a change of that guard enables or disables; computed once per system)."""
    from ..modes.normalize import memo_table
    memo = memo_table(system, "_guarded_by")
    if "all" not in memo:
        out: dict[int, list[int]] = {}
        for k, e in enumerate(system.equations):
            for i in dict.fromkeys(i for i, _ in e.guard):
                out.setdefault(i, []).append(k)
        memo["all"] = out
    return memo["all"]


def differentiated_unknowns(system: Any) -> frozenset[str]:
    """The unknowns some equation of ``system`` reads differentiated (computed once per
    system)."""
    from ..modes.normalize import memo_table
    memo = memo_table(system, "_differentiated")
    if "all" not in memo:
        memo["all"] = frozenset(v for e in system.equations for v, o in e.orders if o > 0)
    return memo["all"]


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
