"""The settling proof of event iteration over all long modes at once, with binary decision
diagrams (docs/theory.md §5.6; the forced map of `mdae_fmu.modes.event_iteration`).

A delayed guard (`event_iteration.delayed_guards`: it reads a same-instant value that the
equations it selects compute) is evaluated by event iteration. In a long mode m the equations
``s = c`` enabled there (`event_iteration.forced_constants`, the first enabled one per
variable) give some of the values the delayed guards read; the guards whose definition is
then decided and differs from m's bit select the mode F(m) (`event_iteration.forced_change`).
The iteration provably never settles when following F from some consistent long mode never
leaves the modes F changes: E-FIXPOINT, with the cycle it reaches.

The enumeration of the long modes (the tests' oracle: `enumerated_settling` in
tests/modes/test_settling.py) is replaced by formulas over the guard bits, with no bound on
the number of modes:

* the care set C, the consistent long modes, is the pruning of the enumerated modes
  (`mdae_fmu.structure.valuations.enumerate_valuations`: Boolean definitions, composite
  guards against their parts, relations on one expression), each rule a constraint
  (`consistent_modes`);
* each delayed guard's definition is evaluated in Kleene's three values on every choice of
  the constants its leaves read, a choice being a formula over the guard bits (the first
  enabled equation): the formulas T_g and F_g of "g's definition is true / false"
  (`forced_map`), F_g(m) = T_g or (m_g and not F_g);
* with D the modes F changes and E those F sends out of the long modes (a transient or fixed
  guard changed), W = gfp X. (C and D and not E) and X∘F, computed from X_0 = C and D and not E
  by X_{k+1} = X_k and X_k∘F (composition: the formula of X at F's bits), holds exactly the
  modes whose F-orbit stays in C and D forever, i.e. reaches a cycle of F of length >= 2
  (docs/theory.md §5.6). W empty: the iteration settles from every mode the proof decides.
  Otherwise its least mode in the enumeration's order (guard 0 first, false before true) is the
  start the enumerated check reports from; F is followed concretely from it to the cycle, so
  the message and its data are those of the enumeration.

A model whose delayed guards cannot be decided by any choice of constants (the ideal diode's
``off = s < 0`` when no equation fixes ``s``) needs no formula: `may_force` says so from the
constants alone, and ``dd`` is not used.
"""

from __future__ import annotations

import itertools
from typing import Any

from .. import expr as E
from ..implicit.formulas import bdd_manager
from ..structure.valuations import (NEGATED, feasible, fixed_guard_values, is_composite,
                                    relation_of)
from .event_iteration import (condition_value, cycle_rejection, delayed_guards, forced_change,
                              forced_constants, parameter_values)


def forcing_inputs(system) -> tuple[dict, dict, dict[str, float]] | None:
    """What the settling check reads of ``system``: its delayed guards
    (`event_iteration.delayed_guards`), the constants their variables can be forced to
    (`event_iteration.forced_constants`) and the parameters' values; None without delayed
    guards (nothing to prove)."""
    delayed = delayed_guards(system)
    if not delayed:
        return None
    params = parameter_values(system.model) if system.model is not None else {}
    constants = forced_constants(system, {v for names in delayed.values() for v in names},
                                 params)
    return delayed, constants, params


def check_settling(system) -> None:
    """Reject (E-FIXPOINT, `event_iteration.cycle_rejection`) an event iteration that provably
    never settles: from some consistent long mode, the delayed guards evaluated on the values
    the mode forces select another mode, and following these forced changes returns to a mode
    already visited (module docstring). The cycle reported is the one the enumeration of the
    long modes in order finds first (tests/modes/test_settling.py, `enumerated_settling`)."""
    inputs = forcing_inputs(system)
    if inputs is None:
        return
    delayed, constants, params = inputs
    if not may_force(system, delayed, constants, params):
        return
    start = first_unsettled(system, delayed, constants, params)
    if start is None:
        return
    path = [start]
    reasons: dict = {}
    m = start
    while True:
        nxt, why = forced_change(system, delayed, constants, params, m)
        assert why, "a mode of the unsettled set that the forced map does not change"
        reasons[m] = why
        if nxt in path:
            raise cycle_rejection(system, path[path.index(nxt):], reasons)
        path.append(nxt)
        m = nxt


def may_force(system, delayed, constants, params) -> bool:
    """Whether some delayed guard's definition can be decided (true or false) by some choice
    of the constants it reads (`forced_constants`, each variable's value or none): the
    three-valued outcomes of each leaf over all its choices, combined as `condition_value`
    combines them (a superset of the outcomes in the modes). False: no mode is changed."""
    for gi, names in delayed.items():
        def leaf(c: E.Expr, names=names) -> set:
            return _leaf_outcomes(c, names, constants, params)
        if _outcomes(system.guards[gi].definition, leaf) - {None}:
            return True
    return False


def _outcomes(c: E.Expr, leaf) -> set:
    """The set of `condition_value` results of ``c`` when each leaf (relation, name or
    literal) may take any of ``leaf(c)``."""
    if isinstance(c, E.UnOp) and c.op == "not":
        return {None if v is None else not v for v in _outcomes(c.arg, leaf)}
    if isinstance(c, E.BinOp) and c.op in ("and", "or"):
        a, b = _outcomes(c.left, leaf), _outcomes(c.right, leaf)
        return {_kleene(c.op, x, y) for x in a for y in b}
    if isinstance(c, E.BinOp) and c.op in E.REL_OPS or isinstance(c, (E.Ref, E.Const)):
        return leaf(c)
    return {None}


def _kleene(op: str, a: bool | None, b: bool | None) -> bool | None:
    """``a and b`` / ``a or b`` in three values, as `condition_value`."""
    if op == "and":
        return False if (a is False or b is False) else (None if None in (a, b) else True)
    return True if (a is True or b is True) else (None if None in (a, b) else False)


#: most choices of constants `may_force` tries for one leaf; beyond, the leaf is taken as
#: possibly decided either way (sound: the formulas of `SettlingSpace.forced_map` decide)
MAX_LEAF_CHOICES = 4096


def _leaf_outcomes(c: E.Expr, names, constants, params) -> set:
    """The values of the leaf c (`condition_value` with the parameters) over every choice of
    the variables of ``names`` it reads, each one of its constants' distinct values or none
    (for `may_force`); all three values when there are more than `MAX_LEAF_CHOICES`."""
    read = sorted(E.refs(c) & set(names))
    options = []
    count = 1
    for v in read:
        values = list({repr(x): x for x, _ in constants[v]}.values()) + [None]
        options.append([(v, x) for x in values])
        count *= len(values)
    if count > MAX_LEAF_CHOICES:
        return {True, False, None}
    out = set()
    for combo in itertools.product(*options):
        known = dict(params)
        known.update((v, x) for v, x in combo if x is not None)
        out.add(condition_value(c, known))
    return out


def _leaf_choices(bdd, c: E.Expr, names, params, selectors):
    """``(value of the leaf c, formula)`` for each choice of the variables of ``names`` that
    c reads that some long mode makes (``selectors``: ``{variable: [(value or None, formula),
    ...]}``, the formula of the modes where the variable takes the value or none): the
    choices are extended one variable at a time and those of no mode dropped, so only the
    combinations that occur are evaluated (`condition_value` with the parameters and the
    chosen values)."""
    partial: list[tuple[dict, Any]] = [({}, bdd.true)]
    for v in sorted(E.refs(c) & set(names)):
        longer = []
        for chosen, formula in partial:
            for x, f in selectors[v]:
                both = formula & f
                if both != bdd.false:
                    longer.append(({**chosen, v: x} if x is not None else chosen, both))
        partial = longer
    for chosen, formula in partial:
        yield condition_value(c, {**params, **chosen}), formula


class SettlingSpace:
    """The long modes of a normalized system as a BDD over its free long guards (one
    variable ``m<i>`` per guard index i, in index order): the bit of each guard, the care set
    (`consistent_modes`) and the forced map's formulas (`forced_map`)."""

    def __init__(self, system):
        self.system = system
        guards = system.guards
        self.long = [i for i, g in enumerate(guards) if g.kind == "long"]
        self.fixed = fixed_guard_values([guards[i].cond for i in self.long])
        self.free = [i for i in self.long if guards[i].cond not in self.fixed]
        self.bdd: Any = bdd_manager()
        self.names = {i: f"m{i}" for i in self.free}
        if self.free:
            self.bdd.declare(*self.names.values())

    def bit(self, i: int):
        """The formula of guard i's value in a long mode: its variable, the fixed value of a
        constant or event guard, false for a transient guard."""
        if i in self.names:
            return self.bdd.var(self.names[i])
        g = self.system.guards[i]
        if g.kind == "long":
            return self.bdd.true if self.fixed[g.cond] else self.bdd.false
        return self.bdd.false

    def literal(self, i: int, positive: bool):
        b = self.bit(i)
        return b if positive else ~b

    def enabled(self, eq):
        """The formula of the long modes that enable ``eq`` (its guard's literals)."""
        f = self.bdd.true
        for i, p in eq.guard:
            f &= self.literal(i, p)
        return f

    def consistent_modes(self):
        """The care set: the long modes `MultimodeSystem.long_valuations` enumerates. Facts
        are the long guards' conditions and their Boolean definitions (`guard_definitions`),
        each condition stripped of ``not`` with one value; a valuation is consistent when no
        fact has two values, the relations on one expression have a common real point
        (`feasible`; a set without one has a subset of at most three without one: two bounds,
        two equalities, or a point pinched between two bounds and excluded by ``<>``), and
        every composite fact (and/or) agrees with its parts where they decide it
        (`valuations.eval_condition`, Kleene's three values). These are the checks of the
        enumeration's incremental `_GuardFacts`, whose outcome on a full valuation does not
        depend on their order."""
        b = self.bdd
        guards = self.system.guards
        definitions = self.system.guard_definitions()
        facts: dict[E.Expr, Any] = {}
        constraints: list = []

        def add(c: E.Expr, value) -> None:
            c, positive = E.strip_not(c)
            value = value if positive else ~value
            if c in facts:
                constraints.append(b.apply("<=>", facts[c], value))
            else:
                facts[c] = value
        for i in self.long:
            cond = guards[i].cond
            add(cond, self.bit(i))
            if cond in definitions:
                add(definitions[cond], self.bit(i))
        groups: dict[E.Expr, list] = {}
        for c, value in facts.items():
            rel = relation_of(c)
            if rel is not None:
                groups.setdefault(rel[0], []).append((value, rel[1], rel[2]))
        for rels in groups.values():
            constraints.append(self._relation_constraint(rels))

        def three(c: E.Expr) -> tuple[Any, Any]:
            if c in facts:
                return facts[c], ~facts[c]
            if isinstance(c, E.Const) and isinstance(c.value, bool):
                return (b.true, b.false) if c.value else (b.false, b.true)
            if isinstance(c, E.UnOp) and c.op == "not":
                t, f = three(c.arg)
                return f, t
            if is_composite(c):
                return parts(c)
            return b.false, b.false

        def parts(c: E.BinOp) -> tuple[Any, Any]:
            (ta, fa), (tb, fb) = three(c.left), three(c.right)
            return (ta & tb, fa | fb) if c.op == "and" else (ta | tb, fa & fb)
        for c, value in facts.items():
            if is_composite(c):
                t, f = parts(c)
                constraints.append(~(t & ~value) & ~(f & value))
        return conjunction(b, constraints)

    def _relation_constraint(self, rels):
        """The value combinations of the relations ``rels`` (``(formula, op, number)`` on one
        expression) that some real number satisfies: each infeasible combination of one,
        two, or three relations at one number excluded (`consistent_modes`)."""
        b = self.bdd
        out = b.true
        subsets: list = [(r,) for r in rels] + list(itertools.combinations(rels, 2))
        by_number: dict[float, list] = {}
        for r in rels:
            by_number.setdefault(r[2], []).append(r)
        for same in by_number.values():
            subsets.extend(itertools.combinations(same, 3))
        for group in subsets:
            for values in itertools.product((True, False), repeat=len(group)):
                cons = [(op if v else NEGATED[op], num)
                        for (_, op, num), v in zip(group, values)]
                if not feasible(cons):
                    clause = b.false
                    for (f, _, _), v in zip(group, values):
                        clause |= ~f if v else f
                    out &= clause
        return out

    def forced_map(self, delayed, constants, params) -> tuple[dict, Any, Any]:
        """``(next, changed, leaves)``: the formula of each free long delayed guard's bit in
        F(m) (`event_iteration.forced_change`), of the modes F changes, and of those F sends
        out of the long modes (a transient guard made true, a fixed guard changed)."""
        b = self.bdd
        selectors = {}
        for v in {v for names in delayed.values() for v in names}:
            choices: dict[str, list] = {}
            before = b.true                 # no earlier candidate enabled
            for value, eq in constants[v]:
                en = self.enabled(eq)
                pick = before & en
                if pick != b.false:
                    entry = choices.setdefault(repr(value), [value, b.false])
                    entry[1] |= pick
                before &= ~en
            selectors[v] = [(x, f) for x, f in choices.values()]
            if before != b.false:
                selectors[v].append((None, before))
        nxt, changed, leaves = {}, b.false, b.false
        for gi, names in delayed.items():
            def leaf(c: E.Expr, names=names) -> tuple[Any, Any]:
                t, f = b.false, b.false
                for value, formula in _leaf_choices(b, c, names, params, selectors):
                    if value is True:
                        t |= formula
                    elif value is False:
                        f |= formula
                return t, f
            t, f = self._three_valued(self.system.guards[gi].definition, leaf)
            bit = self.bit(gi)
            change = (t & ~bit) | (f & bit)
            changed |= change
            if gi in self.names:
                nxt[self.names[gi]] = t | (bit & ~f)
            else:
                leaves |= change
        return nxt, changed, leaves

    def _three_valued(self, c: E.Expr, leaf) -> tuple[Any, Any]:
        """``(true, false)`` formulas of `condition_value` of ``c``, ``leaf`` giving those of
        its relations, names and literals (`_outcomes` with formulas)."""
        b = self.bdd
        if isinstance(c, E.UnOp) and c.op == "not":
            t, f = self._three_valued(c.arg, leaf)
            return f, t
        if isinstance(c, E.BinOp) and c.op in ("and", "or"):
            ta, fa = self._three_valued(c.left, leaf)
            tb, fb = self._three_valued(c.right, leaf)
            return (ta & tb, fa | fb) if c.op == "and" else (ta | tb, fa & fb)
        if isinstance(c, E.BinOp) and c.op in E.REL_OPS or isinstance(c, (E.Ref, E.Const)):
            return leaf(c)
        return b.false, b.false

    def least(self, u) -> tuple[bool, ...]:
        """The least mode of the nonempty formula ``u`` in the enumeration's order (guard 0
        first, false before true; `MultimodeSystem.long_valuations` sorts so)."""
        b = self.bdd
        mode = [bool(self.bit(i) == b.true) for i in range(len(self.system.guards))]
        for i in self.free:
            low = b.let({self.names[i]: False}, u)
            if low != b.false:
                u = low
            else:
                u = b.let({self.names[i]: True}, u)
                mode[i] = True
        return tuple(mode)


def conjunction(bdd, formulas: list):
    """The conjunction of ``formulas``, conjoined in pairs (a balanced tree): each conjunction
    joins formulas of similar size, where a running conjunction would carry the growing
    result through every step."""
    formulas = [f for f in formulas if f != bdd.true]
    if not formulas:
        return bdd.true
    while len(formulas) > 1:
        formulas = [formulas[k] & formulas[k + 1] if k + 1 < len(formulas) else formulas[k]
                    for k in range(0, len(formulas), 2)]
    return formulas[0]


def first_unsettled(system, delayed, constants, params) -> tuple[bool, ...] | None:
    """The least consistent long mode (enumeration order) whose forced changes never stop
    (module docstring: the greatest fixpoint W), or None when every chain of forced changes
    ends."""
    space = SettlingSpace(system)
    nxt, changed, leaves = space.forced_map(delayed, constants, params)
    b = space.bdd
    x = changed & ~leaves
    if x == b.false:                # no mode is changed inside the long modes
        return None
    x &= space.consistent_modes()
    while x != b.false:
        y = x & b.let(nxt, x) if nxt else x
        if y == x:
            return space.least(x)
        x = y
    return None


__all__ = ["check_settling", "forcing_inputs", "may_force", "first_unsettled", "SettlingSpace",
           "conjunction"]
