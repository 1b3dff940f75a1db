"""Guard valuations: the long guard atoms of a model, the evaluation of conditions under a
valuation and the contradictions between relations, the enumeration of the consistent
valuations (the modes), and the specialization of a model to the mode a valuation selects
(RR-9334 Defs 30–31, docs/theory.md §5.2, §5.3)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Protocol, Sequence, TypeGuard, Union

import numpy as np

from .. import expr as E
from ..ir import Equation, Model
from .printing import expr_text
from .variables import (VariableClasses, classify_variables, defines_discrete,
                        discrete_equation_flags, expr_type, is_event_guard)
from .zero_terms import drop_zero_terms


# Explicit enumeration of modes stops beyond 2^12 consistent valuations of the long guards
# (issue 3: "up to 2^12 reachable valuations; beyond that a clear message").
MAX_ENUMERATED_MODES = 2 ** 12


#: A mode valuation as callers give it: ``{Expr: bool}``, or pairs keyed by Expr or by guard
#: text (`_as_valuation`).
Valuation = Union[Mapping[Any, bool], Iterable[tuple[Any, bool]]]


class StructuralConditions(Protocol):
    """What `long_guard_atoms_under` asks of a classification of the conditionals
    (`mdae_fmu.structure.conditionals.ConditionalClasses`, which imports this module)."""

    def is_structural(self, cond: E.Expr) -> bool: ...


def has_long_guards(model: Model) -> bool:
    """Whether ``model`` has a long guard (an if-equation or an if-expression, Model.guards()
    kind "long"): without one it has a single mode and no condition to classify, known
    without looking at its equations again (the guards are gathered once per model)."""
    return any(g.kind == "long" for g in model.guards())


def long_guard_atoms_under(model: Model, equations: Iterable[Equation],
                           conditionals: StructuralConditions) -> list[E.Expr]:
    """The long guards of the DAE equations (Model.guards() kind "long", restricted to the
    conditions that occur in ``equations``), with ``not c`` identified with c; in order of
    appearance. Conditions whose branches all have the same structure define no mode
    (`mdae_fmu.structure.conditionals`): they stay if-expressions of the mode's equations.
    ``conditionals``: the classification to use (`per_mode.long_guard_atoms` takes the
    pipeline's, `conditionals.classify_conditionals` with demotion)."""
    if not has_long_guards(model):
        return []
    present: set[E.Expr] = set()
    # the if-conditions of the model's own equations are walked once per model
    known = {id(eq): conds for eq, conds in zip(model.equations, model.if_conditions)}
    for eq in equations:
        for lit in eq.guard:
            present.add(lit.cond)
        conds = known.get(id(eq))
        if conds is None:
            conds = tuple(n.cond for n in E.walk(eq.residual) if isinstance(n, E.If))
        present.update(conds)
    atoms: dict[E.Expr, None] = {}
    for g in model.guards():
        if g.kind == "long" and g.cond in present and conditionals.is_structural(g.cond):
            atoms.setdefault(E.strip_not(g.cond)[0], None)
    return list(atoms)


def eval_condition(c: E.Expr, val: Mapping[E.Expr, bool]) -> bool | None:
    """Truth value of a condition under a guard valuation, None if it is not determined."""
    if c in val:
        return val[c]
    if isinstance(c, E.Const) and isinstance(c.value, bool):
        return c.value
    if isinstance(c, E.UnOp) and c.op == "not":
        v = eval_condition(c.arg, val)
        return None if v is None else not v
    if is_composite(c):
        return _parts_value(c, val)
    return None


FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "<>": "<>"}


NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "<>", "<>": "=="}


def number_value(e: E.Expr) -> float | None:
    if isinstance(e, E.Const) and not isinstance(e.value, bool) and \
            isinstance(e.value, (int, float)):
        return float(e.value)
    if isinstance(e, E.UnOp) and e.op == "-":
        v = number_value(e.arg)
        return None if v is None else -v
    return None


def relation_of(c: E.Expr) -> tuple[E.Expr, str, float] | None:
    """``c`` as ``key op value``: ``x > 0`` → (x, >, 0); ``a < b`` → (a − b, <, 0) with the
    operands in a canonical order, so that ``a < b`` and ``b > a`` share a key."""
    if not (isinstance(c, E.BinOp) and c.op in E.REL_OPS):
        return None
    lv, rv = number_value(c.left), number_value(c.right)
    if rv is not None and lv is None:
        return c.left, c.op, rv
    if lv is not None and rv is None:
        return c.right, FLIPPED[c.op], lv
    if lv is not None and rv is not None:
        return None
    a, b, op = c.left, c.right, c.op
    if repr(b) < repr(a):
        a, b, op = b, a, FLIPPED[op]
    return E.BinOp("-", a, b), op, 0.0


def feasible(constraints: list[tuple[str, float]]) -> bool:
    """Is there a real number satisfying every ``(op, value)`` constraint?"""
    lo, lo_strict, hi, hi_strict = -np.inf, False, np.inf, False
    eqs, neqs = set(), set()
    for op, v in constraints:
        if op in (">", ">="):
            s = op == ">"
            if v > lo or (v == lo and s):
                lo, lo_strict = v, s
        elif op in ("<", "<="):
            s = op == "<"
            if v < hi or (v == hi and s):
                hi, hi_strict = v, s
        elif op == "==":
            eqs.add(v)
        else:
            neqs.add(v)
    if lo > hi or (lo == hi and (lo_strict or hi_strict)):
        return False
    if len(eqs) > 1:
        return False
    if eqs:
        v = next(iter(eqs))
        inside = (v > lo or (v == lo and not lo_strict)) and (v < hi or (v == hi and not hi_strict))
        return inside and v not in neqs
    if lo == hi:
        return lo not in neqs
    return True


def fixed_guard_values(atoms: Sequence[E.Expr]) -> dict[E.Expr, bool]:
    """Guards whose value is the same in every long mode: constants, and event guards
    (``edge(c)``, ``initial()``...), which are false in long modes (`is_event_guard`)."""
    fixed: dict[E.Expr, bool] = {}
    for a in atoms:
        if isinstance(a, E.Const) and isinstance(a.value, bool):
            fixed[a] = a.value
        elif is_event_guard(a):
            fixed[a] = False
    return fixed


def is_composite(c: E.Expr) -> TypeGuard[E.BinOp]:
    return isinstance(c, E.BinOp) and c.op in ("and", "or")


def _parts_value(c: E.BinOp, val: Mapping[E.Expr, bool]) -> bool | None:
    """Value of the composite guard ``c`` (and/or) computed from its parts under ``val``,
    ignoring any value ``val`` gives ``c`` itself."""
    a, b = eval_condition(c.left, val), eval_condition(c.right, val)
    if c.op == "and":
        if a is False or b is False:
            return False
        return True if (a and b) else None
    if a is True or b is True:
        return True
    return False if (a is False and b is False) else None


def guard_definitions(model: Model, cls: VariableClasses | None = None
                      ) -> dict[E.Expr, E.Expr]:
    """Boolean variables defined by an unguarded discrete equation ``g = b`` (the form of
    RR-9334 Def 33, docs/theory.md §5.4, ``gamma = b``): ``{Ref(g): b}``, with definitions of
    definitions
    expanded (``g3 = g1 and g2``). The equation holds in every mode, so a mode giving g a value
    must give b the same value: `consistent_valuation` uses this to drop valuations such as
    ``{not g1, g2}`` for ``g1 = time >= 5, g2 = time >= 7``. A variable defined twice, or a
    cyclic definition, is left undefined (no pruning: the check only has to be sound).

    Computed once per model object (every stage asks); each call returns its own copy."""
    if cls is None or cls is model.__dict__.get("_variable_classes"):
        cached = model.__dict__.get("_guard_definitions")
        if cached is None:
            cached = model.__dict__["_guard_definitions"] = _guard_definitions(
                model, classify_variables(model))
        return dict(cached)
    return _guard_definitions(model, cls)


def _guard_definitions(model: Model, cls: VariableClasses) -> dict[E.Expr, E.Expr]:
    """`guard_definitions`, computed: ``{}`` at once for a model that declares no Boolean
    variable (no side can then be a Boolean reference)."""
    types = cls.types
    if "Boolean" not in types.values():
        return {}
    found: dict[E.Expr, E.Expr] = {}
    twice: set[E.Expr] = set()
    for eq in model.equations:
        if eq.guard:
            continue
        lhs, rhs = E.split_residual(eq.residual)
        for side, other in ((lhs, rhs), (rhs, lhs)):
            if isinstance(side, E.Ref) and types.get(side.name) == "Boolean" and \
                    expr_type(other, types) == "Boolean" and not isinstance(other, E.Const):
                if side in found:
                    twice.add(side)
                found[side] = other
                break
    for k in twice:
        del found[k]

    def expand(e: E.Expr, seen: frozenset[E.Expr]) -> E.Expr | None:
        if e in found:
            if e in seen:
                return None
            return expand(found[e], seen | {e})
        if isinstance(e, E.BinOp) and e.op in ("and", "or"):
            a, b = expand(e.left, seen), expand(e.right, seen)
            return None if a is None or b is None else E.BinOp(e.op, a, b)
        if isinstance(e, E.UnOp) and e.op == "not":
            a = expand(e.arg, seen)
            return None if a is None else E.UnOp("not", a)
        return e

    out = {}
    for k in found:
        v = expand(k, frozenset())
        if v is not None and v != k:
            out[k] = v
    return out


class _GuardFacts:
    """A partial guard valuation with incremental consistency checks (docs/theory.md §8.1:
    guard-definition feasibility). Assigning a guard records it and, when
    it has a definition b (`guard_definitions`), b with the same value; ``not c`` is stored as
    c with the opposite value. A new fact is checked only against what it can contradict:
    the other relations on the same expression (interval feasibility, `feasible`) and the
    composite guards (and/or) that contain it or that it is. This is the check of
    `consistent_valuation`, done in time proportional to the facts involved instead of the
    whole valuation, so that enumerating 4096 modes of many guards stays cheap."""

    def __init__(self, conds: Iterable[E.Expr], definitions: Mapping[E.Expr, E.Expr]):
        self.defs = dict(definitions)
        self.val: dict[E.Expr, bool] = {}
        self.groups: dict[E.Expr, list[tuple[str, float]]] = {}
        self.trail: list[tuple[E.Expr, E.Expr | None]] = []   # (fact, relation key)
        self.rel: dict[E.Expr, tuple[E.Expr, str, float] | None] = {}
        self.parents: dict[E.Expr, list[E.BinOp]] = {}
        universe: dict[E.Expr, None] = {}
        for c in conds:
            for x in (c, self.defs.get(c)):
                if x is not None:
                    universe.setdefault(E.strip_not(x)[0], None)
        for c in universe:
            if is_composite(c):
                for node in E.walk(c):
                    if node is not c:
                        self.parents.setdefault(E.strip_not(node)[0], []).append(c)

    def relation_of(self, c: E.Expr) -> tuple[E.Expr, str, float] | None:
        if c not in self.rel:
            self.rel[c] = relation_of(c)
        return self.rel[c]

    def push(self, cond: E.Expr, value: bool) -> bool:
        """Add ``cond = value`` (and its definition); False (and nothing kept) if this
        contradicts the facts already there."""
        mark = len(self.trail)
        facts = [(cond, value)]
        if cond in self.defs:
            facts.append((self.defs[cond], value))
        for c, v in facts:
            c, pos = E.strip_not(c)
            if not self._add(c, v if pos else not v):
                self.pop_to(mark)
                return False
        return True

    def _add(self, c: E.Expr, v: bool) -> bool:
        old = self.val.get(c)
        if old is not None:
            return old == v
        rel = self.relation_of(c)
        self.val[c] = v
        self.trail.append((c, rel[0] if rel is not None else None))
        if rel is not None:
            key, op, num = rel
            group = self.groups.setdefault(key, [])
            group.append((op if v else NEGATED[op], num))
            if not feasible(group):
                return False
        for comp in ([c] if is_composite(c) else []) + self.parents.get(c, []):
            if comp in self.val:
                inner = _parts_value(comp, self.val)
                if inner is not None and inner != self.val[comp]:
                    return False
        return True

    def pop_to(self, mark: int) -> None:
        """Forget the facts recorded after ``mark`` (a length of the trail)."""
        while len(self.trail) > mark:
            c, key = self.trail.pop()
            del self.val[c]
            if key is not None:
                self.groups[key].pop()


def consistent_valuation(val: Mapping[E.Expr, bool],
                         definitions: Mapping[E.Expr, E.Expr] | None = None) -> bool:
    """False when a (partial) guard valuation is contradictory (docs/theory.md §8.1; the modes
    (RR-9334 Def 31, docs/theory.md §5.3) whose guards can never hold together):
    relations on the same expression with incompatible intervals (``x > 0`` true and
    ``x <= 0`` true; ``x > 1`` true and ``x > 0`` false, i.e. ordered thresholds on one
    expression), a composite guard (and/or of other guards) whose value disagrees with its
    parts, or, with ``definitions`` (`guard_definitions`), a Boolean variable whose value
    disagrees with the guard defining it (``g1 = time >= 5``, ``g2 = time >= 7``: g2 true
    and g1 false is contradictory). Sound, not complete: a valuation it accepts may still be
    impossible for reasons outside these rules."""
    facts = _GuardFacts(val, definitions or {})
    return all(facts.push(c, v) for c, v in val.items())


class TooManyModes(Exception):
    """More consistent valuations than the explicit enumeration limit."""


# DFS nodes (partial valuations) visited per enumerated mode before enumeration gives up:
# consistent partial valuations normally extend to a full one, so dead ends are rare.
_NODES_PER_MODE = 64


def enumerate_valuations(atoms: Sequence[E.Expr],
                         definitions: Mapping[E.Expr, E.Expr] | None = None,
                         limit: int | None = None
                         ) -> tuple[list[dict[E.Expr, bool]], dict[E.Expr, bool]]:
    """All consistent valuations of the guard atoms, i.e. the long modes of docs/theory.md §5.3
    (RR-9334 Def 31) that survive the pruning of docs/theory.md §8.1 (`consistent_valuation`,
    with the Boolean ``definitions`` of `guard_definitions`): depth-first, each partial valuation
    checked incrementally when a guard is added, in the order true before false. Fixed facts
    (`fixed_guard_values`) are not enumerated. Lazy, with an early cut-off: when more than
    ``limit`` valuations are consistent (or the search visits more than
    ``_NODES_PER_MODE · limit + 2 · len(atoms)`` partial valuations), `TooManyModes` is raised
    after at most
    that much work, whatever the number of guards. Returns (valuations, fixed facts)."""
    fixed = fixed_guard_values(atoms)
    free = [a for a in atoms if a not in fixed]
    facts = _GuardFacts(atoms, definitions or {})
    for a, v in fixed.items():
        if not facts.push(a, v):
            return [], fixed
    out: list[dict[E.Expr, bool]] = []
    cur: dict[E.Expr, bool] = dict(fixed)
    n = len(free)
    budget = None if limit is None else _NODES_PER_MODE * max(limit, 1) + 2 * n
    tried = [0] * n           # values tried at each depth: 0, 1 (True), 2 (True and False)
    marks = [0] * n           # trail length before the fact of each depth
    held = [False] * n        # whether depth i currently holds a value
    i = 0
    while i >= 0:             # iterative depth-first search (no recursion limit on guards)
        if i == n:
            if limit is not None and len(out) >= limit:
                raise TooManyModes(f"more than {limit} consistent valuations")
            out.append(dict(cur))
            i -= 1
            continue
        a = free[i]
        if held[i]:
            facts.pop_to(marks[i])
            del cur[a]
            held[i] = False
        if tried[i] == 2:
            tried[i] = 0
            i -= 1
            continue
        v = tried[i] == 0
        tried[i] += 1
        if budget is not None:
            budget -= 1
            if budget < 0:
                raise TooManyModes("the search for consistent valuations was stopped after "
                                   f"{_NODES_PER_MODE * (limit or 0) + 2 * n} partial valuations")
        marks[i] = len(facts.trail)
        if facts.push(a, v):
            cur[a] = v
            held[i] = True
            i += 1
    return out, fixed


def _as_valuation(model: Model, valuation: Valuation) -> dict[E.Expr, bool]:
    """Accept ``{Expr: bool}``, or pairs keyed by Expr or by guard text (as in
    ModeAnalysis.valuation)."""
    items = valuation.items() if isinstance(valuation, Mapping) else valuation
    out: dict[E.Expr, bool] = {}
    by_text: dict[str, E.Expr] | None = None
    for k, v in items:
        if isinstance(k, str):
            if by_text is None:
                by_text = {}
                for g in model.guards():
                    base = E.strip_not(g.cond)[0]
                    by_text.setdefault(expr_text(base), base)
                    by_text.setdefault(expr_text(g.cond), g.cond)
            if k not in by_text:
                raise KeyError(f"no guard {k!r} in model {model.name}")
            k = by_text[k]
        base, pos = E.strip_not(k)
        out[base] = bool(v) if pos else not bool(v)
    return out


def _select(e: E.Expr, val: Mapping[E.Expr, bool]) -> E.Expr:
    """Replace every if-expression whose condition is decided by ``val`` by its branch.
    A sub-tree without such an if-expression is returned as is (the same object), so that
    equations untouched by the guards are shared between modes (and their symbolic form,
    memoized by `SymbolTable.to_sympy`, is computed once)."""
    if isinstance(e, E.If):
        v = eval_condition(e.cond, val)
        if v is True:
            return _select(e.then, val)
        if v is False:
            return _select(e.orelse, val)
        c, a, b = _select(e.cond, val), _select(e.then, val), _select(e.orelse, val)
        return e if (c is e.cond and a is e.then and b is e.orelse) else E.If(c, a, b)
    if isinstance(e, E.BinOp):
        a, b = _select(e.left, val), _select(e.right, val)
        return e if (a is e.left and b is e.right) else E.BinOp(e.op, a, b)
    if isinstance(e, E.UnOp):
        a = _select(e.arg, val)
        return e if a is e.arg else E.UnOp(e.op, a)
    if isinstance(e, E.Der):
        a = _select(e.arg, val)
        return e if a is e.arg else E.Der(a)
    if isinstance(e, E.Call):
        args = tuple(_select(a, val) for a in e.args)
        return e if all(x is y for x, y in zip(args, e.args)) else E.Call(e.func, args)
    return e


def specialize(model: Model, valuation: Valuation, include_discrete: bool = False, *,
               classes: VariableClasses | None = None,
               discrete_ids: frozenset[str] | None = None,
               only: Sequence[int] | None = None) -> list[Equation]:
    """The equations of the mode selected by ``valuation`` (RR-9334 Def 31, docs/theory.md §5.3):
    the equations
    whose guard holds, with every if-expression on a valued guard replaced by the selected
    branch. Each keeps its id and source location and gets an empty guard. Equations that
    define discrete variables (guard definitions) are left out unless ``include_discrete``.

    ``valuation``: ``{guard Expr: bool}`` or pairs ``(guard Expr or guard text, bool)``.
    A literal whose condition the valuation does not decide raises KeyError.
    ``classes`` and ``discrete_ids`` (the ids of the equations that define discrete
    variables) may be passed when already known, e.g. once for all modes.
    ``only``: the positions (in ``model.equations``, increasing) of the equations to look at,
    the others left out (the equations of one connected component, `demotion`).
    """
    val = _as_valuation(model, valuation)
    skip: frozenset[str] = frozenset()
    if not include_discrete:
        if discrete_ids is None:
            if classes is None:
                flags = discrete_equation_flags(model)
            else:
                flags = tuple(defines_discrete(eq, classes) for eq in model.equations)
            discrete_ids = frozenset(eq.id for eq, d in zip(model.equations, flags) if d)
        skip = discrete_ids
    out = []
    pairs: Iterable[tuple[Equation, tuple[E.Expr, ...]]] = \
        zip(model.equations, model.if_conditions)
    if only is not None:
        pairs = [(model.equations[i], model.if_conditions[i]) for i in only]
    # (one walk per model finds the equations with if-expressions: the others are kept as is)
    for eq, if_conds in pairs:
        if eq.id in skip:
            continue
        enabled = True
        for lit in eq.guard:
            v = eval_condition(lit.cond, val)
            if v is None:
                raise KeyError(f"equation {eq.id}: guard {expr_text(lit.cond)} has no value")
            if v != lit.positive:
                enabled = False
                break
        if enabled:
            res = _select(eq.residual, val) if if_conds else eq.residual
            if res is not eq.residual:
                # a branch's literal-zero coefficients read nothing (`conditionals`)
                res = drop_zero_terms(res)
            out.append(Equation(eq.id, res, (), eq.loc))
    return out
