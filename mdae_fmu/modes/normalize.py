"""Normalization of a model's guards into the multimode system of the theory (Defs 30 and 33).

docs/theory.md §5.1–§5.4 (RR-9334 Defs 27–34):

* the condition of an if-equation or if-expression is a **long** guard, the condition of a
  when-clause a **transient** guard (its rising edge, true for one nonstandard instant);
* an equation with if-expressions is split into one guarded equation per branch (``Z1|g1`` and
  ``Z1|!g1``), so that a branch is enabled exactly in the modes that select it;
* ``reinit(x, v)`` in a when-branch becomes the transient equation ``x^o = v`` (the reading of
  the impact law (46) in docs/theory.md §7.4);
* every guard is computed for the *next* instant from the current values (Def 33,
  ``gamma^o = b``): a guard that reads a state reads its left limit, known at the start of the
  instant. A guard whose definition reads, at the same instant, a variable determined by
  equations that the guard itself (directly or through other guards) enables or disables is
  evaluated by event iteration, each instant of the cascade reading the previous instant's
  value (`mdae_fmu.modes.event_iteration`); only an iteration that provably never settles is
  rejected (E-FIXPOINT, docs/theory.md §8.2);
* only structural conditionals become guards (`mdae_fmu.structure.conditionals`): an
  if-expression whose branches have the same structure stays in its equation.

Boolean variables defined by an equation ``g = <condition>`` (as in the Modelica ClutchBasic) are
guard names: ``if g then ...`` uses the guard ``g`` whose definition is the condition.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Literal, cast

from .. import expr as E
from ..diagnostics import ModelRejected, SourceLoc
from ..ir import Assign, Equation, Model, Reinit
from ..records import quick_init
from ..structure.conditionals import classify_conditionals, drop_zero_terms
from ..structure.per_mode import TooManyModes
from ..structure.signature import sigma_row
from ..structure.sample_clocks import constant_bindings, never_coincide

#: Most transient modes (sets of when-conditions true at one instant, per long mode) that
#: `MultimodeSystem.modes` enumerates: each extra when-clause doubles them (16 when-clauses:
#: 65535 transient modes, about 20 s of mode-change analysis and 150 MB; 20: 90 s and 1.7 GB).
MAX_TRANSIENT_MODES = 2 ** 16


class TooManyTransientModes(TooManyModes):
    """More transient modes than `MAX_TRANSIENT_MODES`: the when-clauses, not the long guards,
    are too many (the message says so and how many)."""

    def __init__(self, model_name: str, n_when: int, n_long: int):
        self.n_when = n_when
        super().__init__(
            f"model {model_name}: {n_when} when-conditions (transient guards) can become true "
            f"at the same instant in 2^{n_when} - 1 combinations"
            + (f" in each of {n_long} long modes" if n_long > 1 else "")
            + f", more than the enumeration limit of {MAX_TRANSIENT_MODES} transient modes; "
            "mode-change analysis not performed (every combination of simultaneous events is "
            f"enumerated, so the limit allows at most {MAX_TRANSIENT_MODES.bit_length() - 1} "
            "when-clauses in a single-mode model)")


GuardKind = Literal["long", "transient"]


@dataclass(frozen=True)
class Guard:
    """A guard of the normalized system (Def 33): ``gamma^o = definition`` typed long/transient."""
    name: str
    cond: E.Expr
    definition: E.Expr
    kind: GuardKind
    init: bool | None = None
    reads: frozenset = frozenset()
    loc: SourceLoc | None = field(default=None, compare=False)


@quick_init
@dataclass(frozen=True, slots=True)
class MEquation:
    """A guarded equation ``if guard then 0 = residual`` over the model's unknowns.

    ``guard`` is a conjunction of ``(guard index, positive)`` literals. ``orders`` is the
    equation's row of the signature matrix. For a reinit, ``reinit`` names the variable x and
    the equation is ``x^o - residual(current values) = 0``.
    """
    id: str
    residual: E.Expr
    guard: tuple[tuple[int, bool], ...]
    orders: tuple[tuple[str, int], ...]
    origin: str
    loc: SourceLoc | None = field(default=None, compare=False)
    reinit: str | None = None

    @property
    def order_map(self) -> dict[str, int]:
        return dict(self.orders)


Mode = tuple[bool, ...]


def memo_table(obj, name: str) -> dict:
    """The dict memo ``name`` of the frozen object ``obj`` (created empty on first use): the
    per-system caches of the analysis (enabled equations per mode, equation instances)."""
    table = obj.__dict__.get(name)
    if table is None:
        table = {}
        object.__setattr__(obj, name, table)
    return table


@dataclass(frozen=True)
class MultimodeSystem:
    """The normalized multimode system: guards, guarded equations, unknowns and constants."""
    name: str
    guards: tuple[Guard, ...]
    equations: tuple[MEquation, ...]
    unknowns: tuple[str, ...]
    constants: frozenset
    model: Model | None = field(default=None, compare=False)
    notes: tuple[str, ...] = ()

    def modes(self, limit: int | None = None) -> list[Mode]:
        """The modes (Def 31) that survive the mode pruning of docs/theory.md §8.1, long modes
        first, each group in valuation order.

        The long modes are the consistent valuations of the long guards, enumerated lazily by
        the per-mode stage's `mdae_fmu.structure.per_mode.enumerate_valuations` (same pruning:
        ordered thresholds, and/or guards against their parts, Boolean guards against their
        definitions `guard_definitions`; constants and event guards fixed), every transient
        guard false: the cost follows the number of consistent modes, not 2^|Gamma|. Each long
        mode then gives one transient mode per nonempty set of true transient guards (their
        edges are valued separately, Def 30). More than ``limit`` consistent long valuations
        (default `MAX_ENUMERATED_MODES`, 2^12, the per-mode stage's) raise `TooManyModes`."""
        from ..structure.per_mode import MAX_ENUMERATED_MODES
        limit = MAX_ENUMERATED_MODES if limit is None else limit
        cache = self.__dict__.setdefault("_modes", {})
        if limit not in cache:
            cache[limit] = self._enumerate_modes(limit)
        return list(cache[limit])

    def long_valuations(self, limit: int) -> list[Mode]:
        """The consistent long modes (`modes`' first group, every transient guard false), in
        valuation order, without the transient modes; more than ``limit`` raise
        `TooManyModes`."""
        from ..structure.per_mode import enumerate_valuations
        long_idx = [i for i, g in enumerate(self.guards) if g.kind == "long"]
        atoms = [self.guards[i].cond for i in long_idx]
        valuations, _ = enumerate_valuations(atoms, self.guard_definitions(), limit=limit)
        base = []
        for val in valuations:
            m = [False] * len(self.guards)
            for i in long_idx:
                m[i] = bool(val[self.guards[i].cond])
            base.append(tuple(m))
        base.sort()
        return base

    def single_events(self, mode: Mode) -> list[Mode]:
        """The transient modes over the long ``mode`` where one transient guard alone is
        true, in guard order (those `modes` has: a rising edge implies its Boolean's value)."""
        long_of = {j: i for i, gl in enumerate(self.guards) if gl.kind == "long"
                   for j, gt in enumerate(self.guards)
                   if gt.kind == "transient" and gt.cond == gl.cond}
        return [tuple(v or k == j for k, v in enumerate(mode))
                for j, g in enumerate(self.guards)
                if g.kind == "transient" and not (j in long_of and not mode[long_of[j]])]

    def _enumerate_modes(self, limit: int) -> tuple[Mode, ...]:
        long_idx = [i for i, g in enumerate(self.guards) if g.kind == "long"]
        trans_idx = [i for i, g in enumerate(self.guards) if g.kind == "transient"]
        base = self.long_valuations(limit)
        n_transient = len(base) * (2 ** len(trans_idx) - 1)
        if n_transient > MAX_TRANSIENT_MODES:
            raise TooManyTransientModes(self.name, len(trans_idx), len(base))
        transient = []
        apart = self.non_simultaneous()
        # the rising edge of a Boolean implies its value: `when b` next to `if b`, b defined by
        # an equation, has no mode with edge(b) and not b
        long_of = {j: i for i in long_idx for j in trans_idx
                   if self.guards[i].cond == self.guards[j].cond}
        for r in range(1, len(trans_idx) + 1):
            for on in itertools.combinations(trans_idx, r):
                if any(pair in apart for pair in itertools.combinations(on, 2)):
                    continue
                for b in base:
                    if any(j in long_of and not b[long_of[j]] for j in on):
                        continue
                    m = list(b)
                    for i in on:
                        m[i] = True
                    transient.append(tuple(m))
        transient.sort()
        return tuple(base + transient)

    def non_simultaneous(self) -> frozenset:
        """Pairs ``(i, j)``, i < j, of transient guards whose edges are not combined into one
        transient mode (issue 14, Modelica's when-clauses):

        * they cannot rise at the same instant: ``time > c1`` and ``time >= c2`` with numeric
          constants c1 != c2 rise at t = c1 and t = c2 only; two ``sample`` clocks known at
          compile time that never coincide (`mdae_fmu.structure.sample_clocks`);
        * different when-clauses reinit the same variable on them: Modelica lets such clauses
          coexist as long as they do not fire together, which is not decidable in general
          (``h <= 0`` against ``time > 1``); the generated code checks it at run time and
          stops with fmi2Error naming both reinits when they do
          (`mdae_fmu.codegen.events.reinit_conflicts`)."""
        d = self.__dict__.get("_apart")
        if d is not None:
            return d
        out = set()
        trans = [i for i, g in enumerate(self.guards) if g.kind == "transient"]
        rise = {i: _rise_time(self.guards[i].cond) for i in trans}
        constants = constant_bindings(self.model) if self.model is not None else {}
        for i, j in itertools.combinations(trans, 2):
            if rise[i] is not None and rise[j] is not None and rise[i] != rise[j]:
                out.add((i, j))
            elif never_coincide(self.guards[i].cond, self.guards[j].cond, constants):
                out.add((i, j))
        reinits = [e for e in self.equations if e.reinit]
        for a, b in itertools.combinations(reinits, 2):
            if a.reinit != b.reinit or a.origin == b.origin:
                continue
            for i, pi in a.guard:
                for j, pj in b.guard:
                    if pi and pj and i != j and self.guards[i].kind == "transient" \
                            and self.guards[j].kind == "transient":
                        out.add((min(i, j), max(i, j)))
        d = frozenset(out)
        object.__setattr__(self, "_apart", d)
        return d

    def guard_definitions(self) -> dict[E.Expr, E.Expr]:
        """Definitions of the guard atoms used to prune contradictory valuations: the Boolean
        definitions ``g = b`` of the model (`mdae_fmu.structure.per_mode.guard_definitions`,
        expanded), completed with the normalization's own (`Guard.definition`)."""
        d = self.__dict__.get("_guard_defs")
        if d is None:
            d = _pruning_definitions(self.model, self.guards)
            object.__setattr__(self, "_guard_defs", d)
        return d

    def is_transient(self, mode: Mode) -> bool:
        return any(v and g.kind == "transient" for v, g in zip(mode, self.guards))

    def long_modes(self, limit: int | None = None) -> list[Mode]:
        """The consistent long modes (`modes`)."""
        return [m for m in self.modes(limit) if not self.is_transient(m)]

    def enabled(self, mode: Mode) -> list[MEquation]:
        """The equations whose guard holds in ``mode`` (computed once per mode)."""
        cache = memo_table(self, "_enabled")
        eqs = cache.get(mode)
        if eqs is None:
            eqs = cache[mode] = tuple(e for e in self.equations
                                      if not e.guard or all(mode[i] == p for i, p in e.guard))
        return list(eqs)

    def mode_label(self, mode: Mode) -> str:
        if not self.guards:
            return "(single mode)"
        return ",".join(g.name if v else f"not {g.name}" for g, v in zip(self.guards, mode))

    def equation(self, eq_id: str) -> MEquation:
        return self._by_id[eq_id]

    @property
    def _by_id(self) -> dict[str, MEquation]:
        d = self.__dict__.get("_eq_index")
        if d is None:
            d = {e.id: e for e in self.equations}
            object.__setattr__(self, "_eq_index", d)
        return d

    def initial_mode(self) -> Mode | None:
        """The mode selected by the guards' initial values, when they are all known."""
        if any(g.init is None for g in self.guards):
            return None
        return tuple(bool(g.init) for g in self.guards)


# --- helpers over expressions ------------------------------------------------------------------

def _rise_time(cond: E.Expr) -> float | None:
    """The only instant where ``cond`` can become true when it is ``time > c``, ``time >= c``,
    ``c < time`` or ``c <= time`` with a numeric constant ``c``; None otherwise."""
    if not isinstance(cond, E.BinOp):
        return None
    def num(e):
        if isinstance(e, E.Const) and isinstance(e.value, (int, float)) \
                and not isinstance(e.value, bool):
            return float(e.value)
        if isinstance(e, E.UnOp) and e.op == "-":
            v = num(e.arg)
            return None if v is None else -v
        return None
    if cond.op in (">", ">=") and isinstance(cond.left, E.Time):
        return num(cond.right)
    if cond.op in ("<", "<=") and isinstance(cond.right, E.Time):
        return num(cond.left)
    return None


current_refs = E.current_refs     # names read at the current instant (not under pre)


def guard_label(e: E.Expr) -> str:
    """A compact human label of a condition."""
    if isinstance(e, E.Ref):
        return e.name
    if isinstance(e, E.Const):
        return str(e.value).lower() if isinstance(e.value, bool) else repr(e.value)
    if isinstance(e, E.Time):
        return "time"
    if isinstance(e, E.BinOp):
        return f"({guard_label(e.left)} {e.op} {guard_label(e.right)})" if e.op in ("and", "or") \
            else f"{guard_label(e.left)} {e.op} {guard_label(e.right)}"
    if isinstance(e, E.UnOp):
        return f"not {guard_label(e.arg)}" if e.op == "not" else f"{e.op}{guard_label(e.arg)}"
    if isinstance(e, E.Call):
        return f"{e.func}({', '.join(guard_label(a) for a in e.args)})"
    if isinstance(e, E.Der):
        return f"der({guard_label(e.arg)})"
    return "?"


def bool_definitions(model: Model) -> tuple[dict[str, E.Expr], set[str]]:
    """Boolean variables defined by an equation ``b = expr``: name -> expr, and the ids of the
    defining equations (removed from the continuous system)."""
    booleans = {v.name for v in model.variables if v.type == "Boolean"}
    defs: dict[str, E.Expr] = {}
    used: set[str] = set()
    if not booleans:
        return defs, used
    for eq in model.equations:
        r = eq.residual
        if eq.guard or not isinstance(r, E.BinOp) or r.op not in ("-", "=="):
            continue
        if isinstance(r.left, E.Ref) and r.left.name in booleans and r.left.name not in defs:
            defs[r.left.name] = r.right
            used.add(eq.id)
        elif isinstance(r.right, E.Ref) and r.right.name in booleans and r.right.name not in defs:
            defs[r.right.name] = r.left
            used.add(eq.id)
    return defs, used


def _discrete_definitions(model: Model, bool_defs: dict[str, E.Expr]) -> set[str]:
    """Ids of the unguarded equations outside when-clauses that define a discrete non-Boolean
    variable (``Integer m = Integer(mode)``, ``Integer n = if x > 1 then 1 else 0``; the
    test is `mdae_fmu.structure.per_mode.defines_discrete`). Such an equation is a discrete
    equation of Def 33 (docs/theory.md §5.1): its variable is known within a mode, recomputed at
    initialization and at every event instant (the generated code's discrete assignments,
    iterated with the event iteration), so it is not an equation of the modes' DAEs. Only the
    first equation of each variable is taken: a second one whose discrete variables are all
    defined already is rejected naming both (`_refuse_redefinition`); one for a variable a
    when-clause assigns stays in the continuous system, where it is reported over-determined
    (E-MODE-SINGULAR)."""
    from ..structure.discrete_equations import check_event_free, order_discrete
    from ..structure.per_mode import classify_variables
    from ..structure.variables import discrete_equation_flags
    cls = classify_variables(model)
    when_assigned = {a.var for w in model.whens for b in w.branches for a in b.actions
                     if isinstance(a, Assign)}
    targets = {n for n in cls.discrete if n not in bool_defs and n not in when_assigned
               and cls.types.get(n) != "Boolean"}
    out: set[str] = set()
    if not targets:
        return out
    seen: dict[str, Equation] = {}
    defs: list = []
    for eq, discrete in zip(model.equations, discrete_equation_flags(model)):
        if eq.guard or not discrete:
            continue
        lhs, rhs = E.split_residual(eq.residual)
        for side, other in ((lhs, rhs), (rhs, lhs)):
            if isinstance(side, E.Ref) and side.name in targets and side.name not in seen:
                check_event_free(eq, side.name, other, cls.continuous_set)
                defs.append((side.name, other, eq))
                seen[side.name] = eq
                out.add(eq.id)
                break
        else:
            _refuse_redefinition(eq, seen, targets)
    order_discrete(defs)        # rejects an algebraic loop among them (E-DISCRETE-LOOP)
    return out


def _refuse_redefinition(eq: Equation, seen: dict, targets: set) -> None:
    """Reject ``eq``, an equation of discrete variables only, when every discrete variable it
    reads is already defined by an earlier discrete equation (``Integer x = 2;`` and ``x =
    3;``: OpenModelica's flattening tests PublicAccess, ProtectedAccess2), naming both
    equations: it determines nothing, so the model is over-determined."""
    reads = E.current_refs(eq.residual) & targets
    if not reads or not reads <= set(seen):
        return
    name = sorted(reads)[0]
    first = seen[name]

    def where(e):
        return f"{e.id} ({e.loc.short()})" if e.loc else e.id
    raise ModelRejected(
        f"over-determined discrete variable (E-MODE-SINGULAR): {where(eq)} and {where(first)} "
        f"both define {name} (the binding of a declaration, '{name} = <value>', is an "
        f"equation too); fix: remove one of them")


def _first_if(e: E.Expr, structural=None) -> E.If | None:
    """The first if-expression of ``e`` whose condition is structural (``structural(cond)``,
    `mdae_fmu.structure.conditionals`; every condition when None)."""
    for n in E.walk(e):
        if isinstance(n, E.If) and (structural is None or structural(n.cond)):
            return n
    return None


def _replace_if(e: E.Expr, target: E.If, branch: E.Expr) -> E.Expr:
    return E.substitute(e, {target: branch})


def _start_bool(model: Model, name: str) -> bool | None:
    try:
        v = model.var(name)
    except KeyError:
        return None
    if isinstance(v.start, E.Const) and isinstance(v.start.value, (bool, int)):
        return bool(v.start.value)
    return None


def _pruning_definitions(model: Model | None, guards) -> dict[E.Expr, E.Expr]:
    """`MultimodeSystem.guard_definitions` for ``guards`` (possibly still growing)."""
    from ..structure.per_mode import guard_definitions
    defs = dict(guard_definitions(model)) if model is not None else {}
    for g in guards:
        if g.kind == "long" and g.definition != g.cond:
            defs.setdefault(g.cond, g.definition)
    return defs


def consistent_literals(guards, lits, definitions) -> bool:
    """Whether the conjunction ``lits`` (``(guard index, positive)``) of long-guard literals can
    hold in some mode: no guard with both values, and `consistent_valuation` (the pruning of
    docs/theory.md §8.1, as for the modes) on the long guards. Transient literals are not
    checked (a transient guard is valued apart from the long ones)."""
    from ..structure.per_mode import consistent_valuation
    val: dict[E.Expr, bool] = {}
    seen: dict[int, bool] = {}
    for i, p in lits:
        if seen.setdefault(i, p) != p:
            return False
        if guards[i].kind == "long":
            val[guards[i].cond] = p
    return consistent_valuation(val, definitions)


# --- the normalization -------------------------------------------------------------------------

def normalize(model: Model) -> MultimodeSystem:
    """Normalize ``model`` into a `MultimodeSystem` (RR-9334 Defs 30 and 33, docs/theory.md §5.2,
    §5.4).

    Raises `ModelRejected` (E-FIXPOINT) when guards that depend on same-instant values through
    a cycle of guards (Comment 32; docs/theory.md §13.2, §13.3) provably never settle
    (`settling.check_settling`); other such cycles are evaluated by event iteration.
    """
    bool_defs, def_eqs = bool_definitions(model)
    def_eqs = def_eqs | _discrete_definitions(model, bool_defs)
    # discrete variables (Integer, Boolean, `discrete Real`) only change in when-clauses: within
    # an instant they are known values, like parameters
    is_continuous = [v.is_unknown and v.type == "Real" and v.variability == "continuous"
                     for v in model.variables]
    constants = frozenset(v.name for v, c in zip(model.variables, is_continuous) if not c)
    unknown_names = tuple(v.name for v, c in zip(model.variables, is_continuous) if c)
    unknown_set = set(unknown_names)

    guards: list[Guard] = []
    gindex: dict[tuple, int] = {}
    defs = _pruning_definitions(model, ())      # completed as the guards are created
    # a condition used by a when-clause is transient everywhere it appears: `if not g` next to
    # `when g` speaks of the transient mode (docs/theory.md §7.4, Figure 10; docs/decisions.md)
    when_atoms = {E.unedge(E.strip_not(b.condition)[0]) for w in model.whens for b in w.branches}

    def guard_key(cond: E.Expr, kind: str) -> tuple[tuple, E.Expr, bool, str]:
        atom, pos = E.strip_not(cond)
        if isinstance(atom, E.Call) and atom.func == "edge" and len(atom.args) == 1:
            atom, kind = atom.args[0], "transient"      # `if edge(c)`: the rising edge of c
        if atom in when_atoms and not (isinstance(atom, E.Ref) and atom.name in bool_defs):
            kind = "transient"
        return (kind, atom), atom, pos, kind

    def guard_of(cond: E.Expr, kind: str, loc) -> tuple[int, bool]:
        key, atom, pos, kind = guard_key(cond, kind)
        if key not in gindex:
            if isinstance(atom, E.Ref) and atom.name in bool_defs:
                definition, init = bool_defs[atom.name], _start_bool(model, atom.name)
                name = atom.name
            else:
                definition, init, name = atom, None, guard_label(atom)
                if isinstance(atom, E.Ref):
                    init = _start_bool(model, atom.name)
            if kind == "transient":
                name = f"edge({name})"
                init = False
            gindex[key] = len(guards)
            guards.append(
                Guard(
                    name=name,
                    cond=atom,
                    definition=definition,
                    kind=cast(GuardKind, kind),
                    init=init,
                    reads=frozenset(_expand_reads(definition, bool_defs)),
                    loc=loc,
                )
            )
            if kind == "long" and definition != atom:
                defs.setdefault(atom, definition)
        return gindex[key], pos

    def possible(lits) -> bool:
        return consistent_literals(guards, lits, defs)

    def registered(cond: E.Expr) -> bool:
        return guard_key(cond, "long")[0] in gindex

    conditionals = classify_conditionals(model)
    expand = _BranchExpansion(guard_of, possible, registered, lambda i: guards[i].name,
                              conditionals.is_structural)
    equations: list[MEquation] = []

    def orders_of(res: E.Expr) -> tuple[tuple[str, int], ...]:
        # the row of the signature matrix over the unknowns (`sigma_row` is
        # `E.derivative_orders`, faster), sorted
        return tuple(sorted([(n, k) for n, k in sigma_row(model, res).items()
                             if n in unknown_set]))

    for eq, if_conds in zip(model.equations, model.if_conditions):
        if eq.id in def_eqs:
            continue
        if not eq.guard and not if_conds:  # the commonest: one branch, no guard
            equations.append(
                MEquation(
                    id=eq.id,
                    residual=eq.residual,
                    guard=(),
                    orders=orders_of(eq.residual),
                    origin=eq.id,
                    loc=eq.loc,
                )
            )
            continue
        lits = tuple(guard_of(g.cond if g.positive else E.UnOp("not", g.cond), "long", eq.loc)
                     for g in eq.guard)
        # (a residual without if-expressions is its own single branch)
        branches = expand(eq.residual, lits, eq.loc) if if_conds else [("", lits, eq.residual)]
        for suffix, lits2, res in branches:
            if suffix:      # a branch's literal-zero coefficients read nothing (conditionals)
                res = drop_zero_terms(res)
            equations.append(
                MEquation(
                    id=eq.id + suffix,
                    residual=res,
                    guard=_dedupe(lits2),
                    orders=orders_of(res),
                    origin=eq.id,
                    loc=eq.loc,
                )
            )
    for w in model.whens:
        earlier: list[tuple[int, bool]] = []
        for bi, br in enumerate(w.branches):
            g0 = guard_of(br.condition, "transient", br.loc)
            # elsewhen priority (Modelica 3.6 §8.3.5): branch bi acts only when no earlier
            # branch of its clause fires at the same instant
            gi = _dedupe((g0,) + tuple(earlier))
            earlier.append((g0[0], not g0[1]))
            for ai, act in enumerate(br.actions):
                if isinstance(act, Reinit):
                    if act.var not in unknown_set:
                        continue
                    orders = {n: 0 for n in current_refs(act.value) if n in unknown_set}
                    orders.update({n: k for n, k in E.derivative_orders(act.value).items()
                                   if n in unknown_set})
                    orders[act.var] = max(orders.get(act.var, 0), 1)
                    equations.append(
                        MEquation(
                            id=f"{w.id}.reinit({act.var})" + (f"#{bi}" if bi else ""),
                            residual=act.value,
                            guard=gi,
                            orders=tuple(sorted(orders.items())),
                            origin=w.id,
                            loc=act.loc or br.loc,
                            reinit=act.var,
                        )
                    )
                elif isinstance(act, Assign) and act.var in unknown_set:
                    res = E.residual(E.Ref(act.var), act.value)
                    orders = {n: k for n, k in E.derivative_orders(res).items() if n in unknown_set}
                    equations.append(
                        MEquation(
                            id=f"{w.id}.{act.var}#{bi}.{ai}",
                            residual=res,
                            guard=gi,
                            orders=tuple(sorted(orders.items())),
                            origin=w.id,
                            loc=act.loc or br.loc,
                        )
                    )
    system = MultimodeSystem(
        name=model.name,
        guards=tuple(guards),
        equations=tuple(equations),
        unknowns=unknown_names,
        constants=constants,
        model=model,
    )
    notes = check_guard_fixpoints(system, model)
    from .event_iteration import initial_guard_values
    for gi, value in initial_guard_values(system).items():
        guards[gi] = dataclasses.replace(guards[gi], init=value)
    return MultimodeSystem(
        name=model.name,
        guards=tuple(guards),
        equations=tuple(equations),
        unknowns=unknown_names,
        constants=constants,
        model=model,
        notes=tuple(notes),
    )


def _dedupe(lits):
    if not lits:
        return ()
    out: dict[int, bool] = {}
    for i, p in lits:
        out.setdefault(i, p)
    return tuple(sorted(out.items()))


def _expand_reads(definition: E.Expr, bool_defs: dict[str, E.Expr], depth: int = 0) -> set[str]:
    reads = set()
    for n in current_refs(definition):
        if n in bool_defs and depth < 20:
            reads |= _expand_reads(bool_defs[n], bool_defs, depth + 1)
        else:
            reads.add(n)
    return reads


class _BranchExpansion:
    """Split the if-expressions of a residual into guarded branch equations (Defs 30/33: a
    branch is enabled exactly in the modes that select it).

    A branch whose guard literals cannot hold together (`consistent_literals`: ``x > 1`` with
    ``not x > 0``; the pruning of docs/theory.md §8.1 applied to the modes) is enabled in no
    explored mode and is not generated: an equation with n ordered thresholds gives n + 1
    branches instead of 2^n. The guards of a dropped branch are still registered, in the order
    the full expansion meets them, so the guards and their indices do not depend on the
    pruning."""

    def __init__(self, guard_of, possible, registered, name_of, structural=None):
        self.guard_of, self.possible = guard_of, possible
        self.registered, self.name_of = registered, name_of
        self.structural = structural

    def __call__(self, res: E.Expr, lits, loc) -> list:
        node = _first_if(res, self.structural)
        if node is None:
            return [("", lits, res)]
        gi, pos = self.guard_of(node.cond, "long", loc)
        name = self.name_of(gi)
        out = []
        for positive, branch in ((pos, node.then), (not pos, node.orelse)):
            sub = _replace_if(res, node, branch)
            tag = "" if positive else "!"
            lits2 = lits + ((gi, positive),)
            if not self.possible(lits2):
                self._register(sub, loc)
                continue
            for suffix, l2, r2 in self(sub, lits2, loc):
                out.append((f"|{tag}{name}" + suffix, l2, r2))
        return out

    def _register(self, res: E.Expr, loc) -> None:
        """Create the guards the full expansion of ``res`` would create, in its order; a subtree
        whose conditions are all known already is skipped (so this is polynomial)."""
        st = self.structural
        if all(self.registered(n.cond) for n in E.walk(res)
               if isinstance(n, E.If) and (st is None or st(n.cond))):
            return
        node = _first_if(res, st)
        assert node is not None     # some if-expression's condition is not registered yet
        self.guard_of(node.cond, "long", loc)
        for branch in (node.then, node.orelse):
            self._register(_replace_if(res, node, branch), loc)


def check_guard_fixpoints(system: MultimodeSystem, model: Model) -> list[str]:
    """The check of Def 33 / RR-9334 §7.3.4 on guards that read same-instant values. A guard that
    reads an algebraic value is evaluated for the next instant (Def 33); when that value
    depends on the guard itself (a cycle of `event_iteration.guard_dependencies`, the former
    E-FIXPOINT rejection) the guard is evaluated by event iteration, each instant of the
    cascade reading the previous instant's value (`mdae_fmu.modes.event_iteration`). Returns
    informational notes; raises `ModelRejected` (E-FIXPOINT) only for an iteration that
    provably never settles (`mdae_fmu.modes.settling.check_settling`, over all long modes at
    once: no bound on their number)."""
    if not system.guards:
        return []
    from .event_iteration import delayed_guards, guard_dependencies
    from .settling import check_settling
    _, _, reads = guard_dependencies(system)
    delayed = delayed_guards(system)
    notes = []
    for gi, names in reads.items():
        guard = system.guards[gi]
        for v in names:
            if gi in delayed:
                notes.append(f"guard {guard.name} reads {v}, which the equations it selects "
                             f"compute: evaluated by event iteration, each instant reading "
                             f"the previous instant's {v} (RR-9334 Def 33, docs/theory.md §5.4; "
                             f"pre({v}) in the cascade)")
            else:
                notes.append(f"guard {guard.name} reads {v} at the current instant; it is "
                             f"evaluated for the next instant (RR-9334 Def 33, "
                             f"docs/theory.md §5.4)")
    check_settling(system)
    return notes
