"""Events: relations -> event indicators and time events, when-clauses, samples.

docs/theory.md §11: the event indicators are the guard predicates turned into zero-crossing
functions; FMI 2.0 Model Exchange semantics (FMI 2.0 §3.1-3.2). Decisions (docs/fmi-mapping.md,
"Events"):

* Every relation ``a op b`` (op in < <= > >=) of the model whose sides change continuously
  (states, algebraic variables, derivatives, non-linear functions of time) is a *state
  relation*: it gets a slot ``d->rel[k]`` holding its frozen value and one event indicator
  with hysteresis ``z = s + delta`` while the relation holds and ``z = s - delta`` while it
  does not, ``s`` being the signed distance (``a - b`` for > >=, ``b - a`` for < <=). At an
  event the relation is re-evaluated exactly, so it always changes at the located crossing,
  and ``z`` is never 0 after the event (pitfall 1 of the FMI note). After the equations of
  an instant are solved, every relation is evaluated again; one that changed makes another
  instant (Modelica 3.6 §8.6: a variable that jumps crosses other relations' thresholds).
* A state relation of when-conditions only whose ``s`` reads only states integrated in every
  mode, time and values constant between events has a *rate* ``ds/dt`` (`relation_rate`).
  On its surface (within the hysteresis band) it takes its right limit, the sign of the
  rate, and its indicator follows the direction of the solution: a restart that leaves the
  state on the surface (the bouncing ball's reinit) is one event, not two
  (docs/fmi-mapping.md, "Events"). A relation also read by equations keeps the exact value
  (its rate could depend on it: a sliding mode).
* A relation of the form ``c1*time + c0 op 0`` whose coefficients are constant between
  events (parameters, discrete variables, ``pre()`` values) is a *time relation*: no
  indicator, the crossing time ``-c0/c1`` is published as ``nextEventTime`` and
  the relation is evaluated at ``time + eps`` (its right limit) at the event.
* A *clock state* is a Real state ``x`` whose only equation is the unguarded ``der(x) = c``
  with ``c`` a parameter expression, and which appears nowhere else except inside relations
  (the ``t`` of ``der(t) = 1; g = t >= t1``). Between events ``x`` is affine in time, so a
  relation ``a*x + b op 0`` (``a``, ``b`` constant between events) is a time relation too: at
  every event its crossing time ``time + (-b/a - x)/c`` is published, and it is evaluated at
  its right limit ``x + c*teps``, widened by ``1e-10*max(1, |x|)`` for the rounding the host's
  integrator accumulates in ``x`` (`clock_rates`; docs/fmi-mapping.md, "Events"). This is what
  a hand-written FMU does with such a clock, and it saves the host an event indicator.
* Relations between discrete quantities (Integers, Booleans, pre() of discrete variables,
  parameters) are not frozen: they only change at events anyway. A relation on the left limit
  ``pre(w)`` of a continuous variable ``w`` is classified as the same relation on ``w``
  (`left_limits_of_continuous`): it is held between events, watched by the indicator of ``w``
  (or published as a time event), and re-evaluated at the event where ``pre(w) = w``.
* ``sample(start, interval)`` is a time event source with its own slot ``d->smp[k]``.
* A when-branch fires at an instant where its condition is true and was false at the previous
  instant (``pre``); ``elsewhen`` branches fire only if no earlier branch of the clause fired.
  The equations of the branches that fire are solved in the topological order of their
  dependencies (`EventPlan.assignment_order`) and iterated with the schedule until no value
  changes (dependencies through continuous equations), the when-conditions re-evaluated after
  each pass (`BranchPlan.recheck`); then assertions and terminate, then
  the reinits (docs/fmi-mapping.md, "Events").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Union

import sympy as sp

from .. import expr as E
from ..diagnostics import ModelRejected
from ..ir import Action as WhenAction
from ..ir import Assertion, Assign, Model, Reinit, Terminate
from ..structure.when_clauses import (coupled_when_variables, when_assignment_order,
                                      when_clause_problems)
from .blocks import linear_split
from .messages import Message, plan_message
from .plan import CompiledModel
from .slots import Slot

if TYPE_CHECKING:
    import networkx as nx

    from ..structure.per_mode import ModesReport
    from ..symbolic import SymbolTable
else:   # loaded on first use (`mdae_fmu.lazy_modules`): only a when-equation cycle needs it
    from ..lazy_modules import networkx as nx

_ORDER_RELS = ("<", "<=", ">", ">=")


@dataclass(frozen=True)
class RelationPlan:
    """A tracked relation: its sympy form, the signed distance ``s`` (true iff ``s >= 0``, or
    ``s > 0`` when strict), and its kind (``state`` or ``time``)."""
    relation: sp.Basic
    s: sp.Expr
    strict: bool
    kind: str
    threshold: sp.Expr | None = None     # time relations: the crossing time
    rising: bool = True                  # time relations: s increases with time
    # state relations of when-conditions only: ds/dt along the solution (`relation_rate`),
    # whose sign gives the relation's right limit on its surface (module docstring)
    rate: sp.Expr | None = None


@dataclass(frozen=True)
class SamplePlan:
    start: sp.Expr
    interval: sp.Expr


#: an action of a when-branch: ``("reinit", state slot, value, "Real")``, ``("assign", slot,
#: value, its type)``, ``("terminate", None, message, None)`` or ``("assert", level,
#: condition, message)`` (`_action`)
Action = Union[tuple[str, Slot, sp.Basic, str], tuple[str, None, str, None],
               tuple[str, str, sp.Basic, Message]]


@dataclass(frozen=True)
class BranchPlan:
    """One when/elsewhen branch: condition and actions (sympy)."""
    clause: str
    condition: sp.Expr
    has_initial: bool
    actions: tuple[Action, ...]
    # the standardized restart that replaces the branch's reinit statements: ``(Real slot,
    # f(x-))`` (`mdae_fmu.codegen.restarts.transient_restarts`), and its mode-change label
    restart: tuple[tuple[int, sp.Expr], ...] = ()
    restart_label: str = ""
    # (Real slot, num, den): integrals over the instant
    impulses: tuple[tuple[int, sp.Expr, sp.Expr], ...] = ()
    # the condition is re-evaluated on the values the equations of the instant assign
    # (`mdae_when_equations`), unless it reads a variable its own when-clause assigns: that
    # clause would switch itself off and on again (it fires on the values before it)
    recheck: bool = True


@dataclass(frozen=True)
class EventPlan:
    relations: tuple[RelationPlan, ...]
    samples: tuple[SamplePlan, ...]
    branches: tuple[BranchPlan, ...]
    clauses: tuple[tuple[int, ...], ...]          # branch indices of each when-clause
    # the equations of the when-bodies, (branch index, action index), in the order they are
    # solved at an instant (`mdae_fmu.structure.when_clauses.when_assignment_order`)
    assignment_order: tuple[tuple[int, int], ...]
    # (condition, message built at run time (`mdae_fmu.codegen.messages`), level)
    assertions: tuple[tuple[sp.Expr, Message, str], ...]
    clock_rates: dict[sp.Basic, sp.Expr]          # clock state -> rate (`clock_rates`)
    # branches of different when-clauses that reinit the same variable (`reinit_conflicts`)
    conflicts: tuple[tuple[int, int, str], ...] = ()
    # slots of the Real when-variables solved with the continuous equations of the instant
    # by Newton (`mdae_fmu.structure.when_clauses.coupled_when_variables`)
    when_loop: tuple[Slot, ...] = ()          # the Real slots of the when-clause loop


def signed_distance(rel: sp.Basic) -> tuple[sp.Expr, bool]:
    """``s`` with ``rel`` true iff ``s >= 0`` (``s > 0`` if strict)."""
    op = rel.rel_op
    if op in (">", ">="):
        return rel.lhs - rel.rhs, op == ">"
    return rel.rhs - rel.lhs, op == "<"


_RELATION_OPS = frozenset(("<", "<=", ">", ">=", "==", "<>"))
_ORDER_OPS = frozenset(("<", "<=", ">", ">="))


def clock_rates(model: Model, table: SymbolTable) -> dict[sp.Basic, sp.Expr]:
    """The clock states of ``model`` (module docstring) and their rates: ``{x: c}`` in sympy.

    A candidate is an unguarded equation whose only unknown is ``der(x)`` of a continuous Real
    ``x`` (parameters and constants aside), linear in ``der(x)``. It is a clock if ``x`` and
    ``der(x)`` appear in no other equation, initial equation, when-clause or assertion except
    inside relations. Theory: the piecewise-affine clock is the time relation of note 9334
    docs/theory.md §11 ("time events") written with a state instead of ``time``."""
    constant = {v.name for v in model.variables if v.variability in ("parameter", "constant")}
    reals = {v.name for v in model.variables
             if v.type == "Real" and v.variability == "continuous"}
    candidates: dict[str, tuple[str, E.Expr]] = {}
    for eq in model.equations:
        if eq.guard:
            continue
        name = _only_first_derivative(eq.residual, constant)
        if name is not None and name in reals and name not in candidates:
            candidates[name] = (eq.id, eq.residual)
    if not candidates:
        return {}
    outside: set[str] = set()
    exprs = [(eq.id, eq.residual) for eq in model.equations]
    exprs += [("", eq.residual) for eq in model.initial_equations]
    exprs += [("", b.condition) for w in model.whens for b in w.branches]
    exprs += [("", a.value) for w in model.whens for b in w.branches for a in b.actions
              if isinstance(a, (Assign, Reinit))]
    exprs += [("", a.cond) for a in model.assertions]
    for w in model.whens:
        for b in w.branches:
            outside.update(a.var for a in b.actions if isinstance(a, (Assign, Reinit)))
    for eq_id, e in exprs:
        stack = [e]
        while stack:
            node = stack.pop()
            if isinstance(node, E.BinOp) and node.op in _RELATION_OPS:
                continue
            if isinstance(node, E.Ref) and node.name in candidates \
                    and candidates[node.name][0] != eq_id:
                outside.add(node.name)
            stack.extend(E.children(node))
    params = {table.sym(n, 0) for n in constant}
    rates: dict[sp.Basic, sp.Expr] = {}
    for name, (_, res) in candidates.items():
        if name in outside:
            continue
        split = linear_split(table.to_sympy(res), table.sym(name, 1))
        if split is None:
            continue
        a, b = split
        if (a.free_symbols | b.free_symbols) - params or a == 0:
            continue
        rates[table.sym(name, 0)] = -b / a
    return rates


def _only_first_derivative(e: E.Expr, constant: set[str]) -> str | None:
    """The variable ``x`` when ``x`` is the only name of ``e`` outside ``constant`` and
    ``pre(...)`` and its highest derivative order is 1 (``E.derivative_orders`` of ``e``,
    without the constants, is ``{x: 1}``), else None. Stops at a second name: most equations
    of a large model read several variables, and this runs over every equation."""
    name: str | None = None
    top = -1
    stack: list[tuple[E.Expr, int]] = [(e, 0)]
    while stack:
        node, k = stack.pop()
        if isinstance(node, E.Ref):
            if node.name in constant:
                continue
            if name is None:
                name = node.name
            elif node.name != name:
                return None
            top = max(top, k)
        elif isinstance(node, E.Der):
            stack.append((node.arg, k + 1))
        elif isinstance(node, E.Call) and node.func == "pre":
            continue
        else:
            stack.extend((c, k) for c in E.children(node))
    return name if top == 1 else None


def left_limits_of_continuous(cm: CompiledModel) -> dict[sp.Basic, sp.Basic]:
    """``{pre(w): w}`` for the variables ``w`` whose value changes continuously in time.

    The left limit of a continuous variable equals its value at every instant of continuous
    time (docs/theory.md §5.1, ``pre`` is the value at the previous instant of the
    nonstandard time line); a relation on ``pre(w)`` is held between events like any other
    and changes where ``w`` crosses its threshold (module docstring)."""
    out: dict[sp.Basic, sp.Basic] = {}
    for sym in cm.continuous_symbols:
        inst = cm.table.instance(sym)
        if inst is not None and inst[1] == 0:
            out[cm.table.pre(inst[0])] = sym
    return out


def classify_relation(rel: sp.Basic, cm: CompiledModel, clocks: Mapping[sp.Basic, sp.Expr],
                      left: dict[sp.Basic, sp.Basic] | None = None) -> RelationPlan | None:
    """State, time or untracked relation (module docstring); ``clocks``: `clock_rates`;
    ``left``: `left_limits_of_continuous` (computed here when not given)."""
    if rel.rel_op not in _ORDER_RELS:
        return None
    s, strict = signed_distance(rel)
    if left is None:
        left = left_limits_of_continuous(cm)
    if s.free_symbols & left.keys():
        # between events the left limit pre(w) of a continuous w is w itself: the relation
        # is watched through w, and re-evaluated at the event where pre(w) = w
        s = s.xreplace(left)
    syms = s.free_symbols
    t = cm.table.time
    known = cm.event_constant_symbols
    used = syms & set(clocks)
    if len(used) == 1 and t not in syms and not (syms & cm.continuous_symbols - used):
        x, = used
        split = linear_split(s, x)
        if split is not None and not ((split[0].free_symbols | split[1].free_symbols)
                                      - known):
            a, b = split
            c = clocks[x]
            rising = bool(a * c > 0) if (a * c).is_number else True
            return RelationPlan(
                relation=rel,
                s=s,
                strict=strict,
                kind="time",
                threshold=t + (-b / a - x) / c,
                rising=rising,
            )
    if syms & cm.continuous_symbols:
        return RelationPlan(relation=rel, s=s, strict=strict, kind="state")
    if t in syms:
        split = linear_split(s, t)
        if split is not None and not (split[0].free_symbols - known) \
                and not (split[1].free_symbols - known):
            a, b = split
            rising = True
            if a.is_number:
                if a == 0:
                    return None
                rising = bool(a > 0)
            return RelationPlan(
                relation=rel, s=s, strict=strict, kind="time", threshold=-b / a, rising=rising
            )
        return RelationPlan(relation=rel, s=s, strict=strict, kind="state")
    return None


def preorder(e: sp.Basic) -> Iterator[sp.Basic]:
    """Pre-order walk over ``e`` through ``.args``, the canonical argument order (sympy's
    ``preorder_traversal`` iterates And/Or through their frozenset, an order that depends on
    the hash seed and made relation numbers, hence the FMU bytes, differ between runs)."""
    stack = [e]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, sp.Basic) and node.args:
            stack.extend(reversed(node.args))


def _relations_and_samples(exprs: Iterable[sp.Basic], conditions: range = range(0)
                           ) -> tuple[list[sp.Basic], list[SamplePlan], set[sp.Basic]]:
    """Order-relations and sample() calls of ``exprs``, in order of first appearance (one
    traversal per expression), and the set of relations that occur in an expression whose
    position is not in ``conditions``."""
    rels: list[sp.Basic] = []
    samples: list[SamplePlan] = []
    seen: set[sp.Basic] = set()
    outside: set[sp.Basic] = set()
    for pos, e in enumerate(exprs):
        if not isinstance(e, sp.Basic) or e.is_Atom:
            continue
        found = [n for n in preorder(e)
                 if isinstance(n, sp.core.relational.Relational)
                 or type(n).__name__ == "sample"]
        if pos not in conditions:
            outside.update(found)
        for n in found:
            if n in seen:
                continue
            seen.add(n)
            if type(n).__name__ == "sample":
                samples.append(SamplePlan(start=n.args[0], interval=n.args[1]))
            else:
                rels.append(n)
    return rels, samples, outside


def plan_events(model: Model, cm: CompiledModel, extra_exprs: Iterable[sp.Basic] = (),
                report: ModesReport | None = None,
                steady: frozenset[sp.Basic] = frozenset()) -> EventPlan:
    """Relations, samples, when-branches and assertions of ``model`` (module docstring).
    ``report``: the per-mode analysis of a single-mode model, whose when-equations coupled
    with the continuous equations are solved by Newton (`EventPlan.when_loop`). ``steady``:
    the state symbols whose derivative slot holds their rate in every mode (every state of
    a single-mode model), from which the relations of when-conditions get their rate
    (`relation_rate`)."""
    table = cm.table
    types = {v.name: v.type for v in model.variables}
    branches: list[BranchPlan] = []
    clauses: list[tuple[int, ...]] = []
    for w in model.whens:
        idx: list[int] = []
        own = {a.var for br in w.branches for a in br.actions if isinstance(a, Assign)}
        for br in w.branches:
            cond = _to_sympy(table, br.condition, f"when-clause {w.id}")
            has_initial = any(isinstance(n, E.Call) and n.func == "initial"
                              for n in E.walk(br.condition))
            actions = []
            for a in br.actions:
                actions.append(_action(cm, a, w.id, types))
            idx.append(len(branches))
            rs = cm.when_restarts.get((w.id, len(idx) - 1))
            branches.append(
                BranchPlan(
                    clause=w.id,
                    condition=cond,
                    has_initial=has_initial,
                    actions=tuple(actions),
                    restart=rs.targets if rs else (),
                    restart_label=rs.label if rs else "",
                    impulses=_slot_impulses(rs.impulses) if rs else (),
                    recheck=not (E.current_refs(br.condition) & own),
                )
            )
        clauses.append(tuple(idx))
    assertions: list[tuple[sp.Expr, Message, str]] = []
    for a in model.assertions:
        assertions.append((_to_sympy(table, guarded_condition(a), "assertion"),
                           _message(table, a.message, types, "assertion"), a.level))
    # blocks kept on the expression tree are plain arithmetic: no relation, no sample()
    exprs = [r for b in cm.blocks if not b.on_tree for r in b.residuals]
    exprs += [e for _, e in cm.consistency]
    exprs += [e for _, e in cm.discrete_assignments]
    # an assertion's relation a >= b is checked with a tolerance (emit.assertion_condition);
    # its event indicator sits at the violation threshold a - b = -tol * max(1, |a|, |b|),
    # so a violation beyond the tolerance is an event where the check fires
    # (docs/multimode-fmu.md, "Assertions")
    conditions = range(len(exprs), len(exprs) + len(branches))
    exprs += [b.condition for b in branches]
    exprs += [assertion_threshold(r) for c, _, _ in assertions
              for r in preorder(c)
              if isinstance(r, sp.core.relational.Relational) and r.rel_op in _ORDER_RELS]
    exprs += [v for b in branches for (_, _, v, _) in b.actions if isinstance(v, sp.Basic)]
    exprs += list(extra_exprs)
    rels, samples, outside = _relations_and_samples(exprs, conditions)
    # a model without relations (most large models: no event at all) plans no event
    # machinery per equation: its clock states would only shift relations, and there is
    # none to keep under noEvent or to watch through a left limit (issue 29, Deliver 2)
    clocks = {x: c for x, c in clock_rates(model, table).items()
              if x in cm.state_symbols} if rels else {}
    quiet = no_event_relations(model, table) if rels else frozenset()
    relations = []
    left = left_limits_of_continuous(cm) if rels else {}
    for r in rels:
        if r.rel_op in _ORDER_RELS and _relation_key(r) in quiet:
            continue            # under noEvent only: evaluated as is, no indicator
        p = classify_relation(r, cm, clocks, left)
        if p is not None and p.kind == "state" and r not in outside:
            p = replace(p, rate=relation_rate(p.s, cm, steady))
        if p is not None:
            relations.append(p)
    try:
        order = tuple((clauses[c][b], a) for c, b, a in when_assignment_order(model))
    except nx.NetworkXUnfeasible:
        raise ModelRejected("\n".join(when_clause_problems(model, None, derivatives=False))) \
            from None
    loop = tuple(cm.variable_slot(v)
                 for v in coupled_when_variables(model, report)) if report is not None else ()
    return EventPlan(
        relations=tuple(relations),
        samples=tuple(samples),
        branches=tuple(branches),
        clauses=tuple(clauses),
        assignment_order=order,
        assertions=tuple(assertions),
        clock_rates=clocks,
        conflicts=reinit_conflicts(model, clauses),
        when_loop=loop,
    )


def relation_rate(s: sp.Expr, cm: CompiledModel, steady: frozenset[sp.Basic]) -> sp.Expr | None:
    """``ds/dt`` along the solution of a signed distance ``s`` that reads only states of
    ``steady``, time and values constant between events: ``ds/dt = ∂s/∂t + Σ ∂s/∂x der(x)``
    with ``der(x)`` the derivative slot the schedule computes; None when ``s`` reads anything
    else or the rate is 0 (the relation is then evaluated exactly at events). Its sign is the
    side of the surface ``s = 0`` the solution goes to: the relation's right limit when the
    event left the solution on the surface (module docstring; docs/theory.md §11, event
    indicators)."""
    table = cm.table
    syms = s.free_symbols
    states = syms & cm.continuous_symbols
    if not states <= steady or syms - states - {table.time} - cm.event_constant_symbols:
        return None
    rate = sp.diff(s, table.time)
    for x in sorted(states, key=str):
        inst = table.instance(x)
        if inst is None:
            return None
        dx = table.sym(inst[0], inst[1] + 1)
        if dx not in cm.slots:
            return None
        rate += sp.diff(s, x) * dx
    if rate == 0 or rate.has(sp.Derivative, sp.Subs, sp.Piecewise, sp.Heaviside,
                             sp.DiracDelta, sp.sign) \
            or rate.atoms(sp.core.relational.Relational):
        return None             # not a plain expression between events (abs, if, ...)
    return rate


def reinit_conflicts(model: Model, clauses: Sequence[Sequence[int]]
                     ) -> tuple[tuple[int, int, str], ...]:
    """``(k1, k2, text)`` for every two branches k1 < k2 of different when-clauses that reinit
    the same variable: the analysis does not combine their edges
    (`mdae_fmu.modes.normalize.MultimodeSystem.non_simultaneous`), so firing both at one
    instant is a run-time error whose message ``text`` names the variable and both lines."""
    by_var: dict[str, list[tuple[int, int, str]]] = {}
    for c, w in enumerate(model.whens):
        for b, br in enumerate(w.branches):
            for act in br.actions:
                if isinstance(act, Reinit):
                    loc = act.loc or br.loc
                    by_var.setdefault(act.var, []).append(
                        (c, clauses[c][b], loc.short() if loc else w.id))
    out: list[tuple[int, int, str]] = []
    for var, found in by_var.items():
        for i, (c1, k1, l1) in enumerate(found):
            for c2, k2, l2 in found[i + 1:]:
                if c1 != c2:
                    out.append((k1, k2, f"reinit({var}, ...) at {l1} and at {l2} at the same "
                                        "instant (two when-clauses re-initialize the same "
                                        "variable only at different instants)"))
    return tuple(sorted(out))


def no_event_relations(model: Model, table: SymbolTable) -> frozenset[tuple[sp.Expr, bool]]:
    """The order relations of ``model`` that occur only under ``noEvent(...)`` (in sympy):
    Modelica evaluates them literally, without event, so they get neither a frozen slot nor
    an event indicator (a non-structural conditional written ``noEvent(if v < 0 then ...)``,
    `mdae_fmu.structure.conditionals`). A relation that also occurs outside noEvent is
    tracked."""
    inside: set[E.Expr] = set()
    outside: set[E.Expr] = set()
    exprs = [eq.residual for eq in model.equations]
    exprs += [b.condition for w in model.whens for b in w.branches]
    exprs += [a.value for w in model.whens for b in w.branches for a in b.actions
              if isinstance(a, (Assign, Reinit))]
    exprs += [a.cond for a in model.assertions]
    quiet_roots: list[E.Expr] = []
    for found, roots in ((outside, exprs), (inside, quiet_roots)):
        # one walk over every node: outside noEvent first, then the arguments of the
        # noEvent calls it met (a noEvent nested in those is walked as any call)
        stack: list[E.Expr] = []
        pop, push = stack.pop, stack.append
        for e in roots:
            push(e)
            while stack:
                node = pop()
                if type(node) is E.BinOp:
                    if node.op in _ORDER_OPS:
                        found.add(node)
                    push(node.right)
                    push(node.left)
                elif type(node) is E.Ref or type(node) is E.Const:
                    continue
                elif type(node) is E.Call and node.func == "noEvent" and found is outside:
                    quiet_roots.extend(node.args)
                else:
                    stack.extend(E.children(node))
    keys: dict[E.Expr, tuple[sp.Expr, bool]] = {}
    for rel in inside | outside:
        try:
            keys[rel] = _relation_key(table.to_sympy(rel))
        except (ValueError, TypeError, AttributeError):
            continue
    loud = {keys[r] for r in outside if r in keys}
    return frozenset(keys[r] for r in inside if r in keys and keys[r] not in loud)


def _relation_key(rel: sp.Basic) -> tuple[sp.Expr, bool]:
    """A relation up to sympy's rewriting (``v < -c`` inside a Piecewise becomes ``c < -v``):
    its expanded signed distance and strictness (`signed_distance`)."""
    s, strict = signed_distance(rel)
    return sp.expand(s), strict


ASSERT_TOL = 1e-8     # relative tolerance of assertion relations (MDAE_ASSERT_TOL)


def assertion_threshold(rel: sp.Basic) -> sp.Basic:
    """The relation ``a - b + ASSERT_TOL * max(1, |a|, |b|) >= 0`` whose crossing is the
    violation of the assertion relation ``a >= b`` beyond its tolerance."""
    a, b = (rel.lhs, rel.rhs) if rel.rel_op in (">", ">=") else (rel.rhs, rel.lhs)
    scale = sp.Max(1, sp.Abs(a), sp.Abs(b), evaluate=False)
    return sp.GreaterThan(a - b + sp.Float(ASSERT_TOL) * scale, 0, evaluate=False)


def guarded_condition(a: Assertion) -> E.Expr:
    """The condition of assertion ``a`` inside an if-equation: ``not guard or cond``, which
    holds wherever the branch is not taken (the assert is not an equation of that branch)."""
    flags: dict[E.Expr, E.Expr] = {E.Call(f, ()): E.BinOp("<>", E.Call(f, ()), E.ZERO)
                                   for f in ("initial", "terminal")}
    cond = a.cond
    for lit in reversed(a.guard):
        g = E.substitute(lit.cond, flags)   # the 0/1 flag initial() as a Boolean
        taken = g if lit.positive else E.UnOp("not", g)
        cond = E.BinOp("or", E.UnOp("not", taken), cond)
    return cond


def _to_sympy(table: SymbolTable, e: E.Expr, where: str) -> sp.Expr:
    try:
        return table.to_sympy(e)
    except (ValueError, TypeError) as err:
        raise ModelRejected(f"{where}: cannot generate code: {err}") from None


def _message(table: SymbolTable, m: E.Expr, types: Mapping[str, str], where: str) -> Message:
    """The message of an assertion, its values converted to sympy (`messages.plan_message`)."""
    return plan_message(lambda e: _to_sympy(table, e, where), m, types)


def _slot_impulses(impulses: Iterable[tuple[str | int, sp.Expr, sp.Expr]]
                   ) -> tuple[tuple[int, sp.Expr, sp.Expr], ...]:
    """The impulses of a restart by output Real slot, as `with_transient_restarts` leaves
    them (`mdae_fmu.codegen.restarts.BranchRestart`)."""
    out = []
    for target, num, den in impulses:
        assert isinstance(target, int)      # an ``impulse(v)`` output slot, no longer a name
        out.append((target, num, den))
    return tuple(out)


def _action(cm: CompiledModel, a: WhenAction, clause: str, types: Mapping[str, str]) -> Action:
    table = cm.table
    if isinstance(a, Reinit):
        target = cm.slots.get(table.sym(a.var, 0))
        if target is None:
            raise ModelRejected(f"when-clause {clause}: reinit of unknown variable {a.var}")
        assert isinstance(target, Slot)     # a variable's slot, never C text
        if table.sym(a.var, 0) not in cm.state_symbols:
            raise ModelRejected(f"when-clause {clause}: reinit({a.var}, ...): {a.var} is not "
                                f"a continuous state of the model")
        return ("reinit", target, _to_sympy(table, a.value, f"when-clause {clause}"), "Real")
    if isinstance(a, Assign):
        target = cm.slots.get(table.sym(a.var, 0))
        if target is None:
            raise ModelRejected(f"when-clause {clause}: assignment to unknown variable {a.var}")
        assert isinstance(target, Slot)     # a variable's slot, never C text
        return ("assign", target, _to_sympy(table, a.value, f"when-clause {clause}"),
                target.type)
    if isinstance(a, Terminate):
        return ("terminate", None, a.message, None)
    if isinstance(a, Assertion):
        return ("assert", a.level, _to_sympy(table, a.cond, f"when-clause {clause}"),
                _message(table, a.message, types, f"when-clause {clause}"))
    raise ModelRejected(f"when-clause {clause}: unsupported action {type(a).__name__}")
