"""Guards as Boolean variables of a binary decision diagram (BDD), and the formula of the
consistent modes (docs/theory.md §10.2: the mode-dependent structure represented implicitly by
propositional formulas over the guards, as in IsamDAE; RR-9334 Def 31, docs/theory.md §5.3).

Each free long-guard atom of the model (`mdae_fmu.structure.per_mode.long_guard_atoms`, fixed
guards removed) is a BDD variable ``g0, g1, ...``. Conditions that only appear in the
definitions of guards (``g = pre(s) >= 0``) get auxiliary variables, quantified away. The
*care set* is the formula of the modes that survive the pruning of docs/theory.md §8.1, the
rules of `mdae_fmu.structure.per_mode.consistent_valuation` written as constraints: a Boolean
guard equals its definition, a composite guard (and/or) equals the formula of its parts, and
relations on one expression (``x > 0``, ``x > 1``) take only value combinations that some real
number satisfies.

``dd`` (pure-Python ``dd.autoref``) is a dependency of the package (docs/decisions.md §9). A
space without atoms (a model without long guards) has only the formulas true and false: it
uses `ConstantBDD` and does not import ``dd`` (docs/theory.md §10.8).
"""

from __future__ import annotations

import functools
import itertools
from typing import Any, Mapping, Sequence

from .. import expr as E
from ..diagnostics import InputError
from ..structure.valuations import NEGATED, feasible, is_composite, number_value, relation_of
from ..structure.printing import expr_text

MISSING_DD = ("the implicit multimode analysis needs the 'dd' package (binary decision "
              "diagrams): pip install dd")

# relations on one expression with at most this many distinct atoms get their exact
# feasibility table; larger groups only exclude infeasible pairs (sound, 1-D Helly for the
# interval constraints; <> constraints may then leave a contradictory valuation in)
_EXACT_GROUP = 10
# relations combined three at a time (`GuardSpace._plane_constraint`): at most this many
# inside the variables of one relation, of at most _PLANE_VARS variables
_PLANE_GROUP = 12
_PLANE_VARS = 4
_FLIP_OP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "<>": "<>"}


class ConstantFormula:
    """The formula true or false of a `ConstantBDD`, with the operations the analysis uses on
    ``dd.autoref`` functions (``&``, ``|``, ``~``, ``==``, the node of a manager whose
    terminal nodes are ``1`` and ``-1``, as `conversion.value_at` reads them)."""

    __slots__ = ("value", "bdd")

    def __init__(self, value: bool, bdd: ConstantBDD):
        self.value, self.bdd = value, bdd

    @property
    def node(self) -> int:
        return 1 if self.value else -1

    @property
    def manager(self) -> _Terminals:
        return _TERMINALS

    def __and__(self, other: ConstantFormula) -> ConstantFormula:
        return other if self.value else self

    def __or__(self, other: ConstantFormula) -> ConstantFormula:
        return self if self.value else other

    def __xor__(self, other: ConstantFormula) -> ConstantFormula:
        return self.bdd.constant(self.value != other.value)

    def __invert__(self) -> ConstantFormula:
        return self.bdd.constant(not self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConstantFormula) and other.value == self.value

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return self.node

    def __int__(self) -> int:
        return self.node

    def __repr__(self) -> str:
        return "TRUE" if self.value else "FALSE"


class _Terminals:
    """The terminal nodes of a `ConstantFormula`'s manager (as ``dd.bdd.BDD``'s)."""
    true, false = 1, -1


_TERMINALS = _Terminals()


class ConstantBDD:
    """The BDD manager of a guard space without atoms (a model without long guards): no
    variable, every formula true or false, so no ``dd`` manager is needed (importing ``dd``
    costs about a quarter of a second). It offers what the analysis and the schedule call on
    such a space; declaring a variable is an error (a space with atoms uses ``dd``)."""

    def __init__(self) -> None:
        self.true = ConstantFormula(True, self)
        self.false = ConstantFormula(False, self)
        self.vars: dict[str, int] = {}

    def __len__(self) -> int:
        """The number of nodes (as ``dd``'s managers count them): the terminal one."""
        return 1

    def constant(self, value: bool) -> ConstantFormula:
        return self.true if value else self.false

    def declare(self, *names: str) -> None:
        if names:
            raise ValueError(f"a constant BDD has no variables ({', '.join(names)})")

    def support(self, u: ConstantFormula) -> set[str]:
        return set()

    def let(self, values: Mapping[str, bool], u: ConstantFormula) -> ConstantFormula:
        return u

    def exist(self, names, u: ConstantFormula) -> ConstantFormula:
        return u

    def count(self, u: ConstantFormula, nvars: int = 0) -> int:
        return int(u.value)

    def cube(self, values: Mapping[str, bool]) -> ConstantFormula:
        self.declare(*values)
        return self.true

    def pick(self, u: ConstantFormula, care_vars=None) -> dict[str, bool] | None:
        return {} if u.value else None

    def ite(self, c: ConstantFormula, a: ConstantFormula, b: ConstantFormula
            ) -> ConstantFormula:
        return a if c.value else b

    def apply(self, op: str, a: ConstantFormula, b: ConstantFormula) -> ConstantFormula:
        ops = {"and": a.value and b.value, "&": a.value and b.value, "or": a.value or b.value,
               "|": a.value or b.value, "<=>": a.value == b.value, "->": not a.value or b.value}
        return self.constant(ops[op])


def bdd_manager():
    """A fresh ``dd.autoref.BDD`` whose node table is finalized without dd's check (`quiet`),
    or `InputError` naming the extra to install."""
    try:
        from dd import autoref
    except ImportError:
        raise InputError(MISSING_DD) from None
    manager = autoref.BDD()
    manager._bdd.__class__ = quiet(type(manager._bdd))
    return manager


@functools.cache
def quiet(nodes: type) -> type:
    """dd's node table ``nodes`` (``dd.bdd.BDD``) without the check of its ``__del__``, which
    raises "There are nodes still referenced upon shutdown" when a node is referenced. A
    manager and its ``Function``s are freed together when a reference cycle holds them (a
    rejected export's exception kept by its catcher: the exception's traceback holds the
    frame that holds the exception, and the frames below hold the analysis); the garbage
    collector then runs their finalizers in any order (PEP 442), and the table's, run first,
    found the nodes its ``Function``s still referenced. Its table is plain Python objects,
    freed with it: nothing to check or release at that point."""
    return type("QuietNodes", (nodes,), {"__del__": lambda self: None,
                                         "__doc__": quiet.__doc__})


def conj(f, g):
    """``f & g`` with no BDD operation when one of them is true: in a model without guards
    every formula is true (docs/theory.md §10.8), and a BDD conjunction costs tens of
    microseconds against one comparison."""
    if f == f.bdd.true:
        return g
    if g == g.bdd.true:
        return f
    return f & g


class GuardSpace:
    """The BDD variables of the guard atoms, conditions as BDDs, and the care set."""

    def __init__(self, atoms: Sequence[E.Expr], fixed: Mapping[E.Expr, bool],
                 definitions: Mapping[E.Expr, E.Expr]):
        self.fixed = dict(fixed)
        self.atoms = [a for a in atoms if a not in self.fixed]
        self.bdd: Any = bdd_manager() if self.atoms else ConstantBDD()
        self.names = [expr_text(a) for a in self.atoms]
        self.var_of: dict[E.Expr, str] = {}
        for k, a in enumerate(self.atoms):
            self.var_of[a] = f"g{k}"
        self.bdd.declare(*self.var_of.values())
        self.aux: list[str] = []
        self.definitions = dict(definitions)
        self.care = self._care_set()

    # --- conditions --------------------------------------------------------------------------
    def _leaf(self, c: E.Expr, allow_aux: bool):
        if c in self.fixed:
            return self.bdd.true if self.fixed[c] else self.bdd.false
        name = self.var_of.get(c)
        if name is not None and (allow_aux or name not in self.aux):
            return self.bdd.var(name)
        if not allow_aux:
            # an auxiliary variable (a condition inside a guard's definition, quantified
            # away in the care set) decides no mode: a formula over it is no mode formula
            return None
        name = f"a{len(self.aux)}"
        self.aux.append(name)
        self.var_of[c] = name
        self.bdd.declare(name)
        return self.bdd.var(name)

    def cond(self, c: E.Expr, allow_aux: bool = False):
        """The BDD of a condition over the guard atoms, or None when the condition is not
        decided by the guards (as `mdae_fmu.structure.per_mode.eval_condition`)."""
        if isinstance(c, E.Const) and isinstance(c.value, bool):
            return self.bdd.true if c.value else self.bdd.false
        if c in self.fixed or c in self.var_of:
            return self._leaf(c, allow_aux)
        if isinstance(c, E.UnOp) and c.op == "not":
            a = self.cond(c.arg, allow_aux)
            return None if a is None else ~a
        if is_composite(c):
            a, b = self.cond(c.left, allow_aux), self.cond(c.right, allow_aux)
            if a is None or b is None:
                return None
            return (a & b) if c.op == "and" else (a | b)
        return self._leaf(c, allow_aux)

    # --- the care set ------------------------------------------------------------------------
    def _care_set(self):
        """Formula of the consistent valuations (module docstring), auxiliary variables
        quantified away. Each auxiliary variable is quantified as soon as the constraints
        that mention it are conjoined (early quantification): with the guards ordered before
        the auxiliary variables, conjoining ``g_k <=> a_k`` for all k first would build a BDD
        exponential in the number of guards."""
        b = self.bdd
        constraints = []
        for a in list(self.atoms):
            d = self.definitions.get(a)
            if d is not None:
                constraints.append(b.apply("<=>", b.var(self.var_of[a]),
                                           self.cond(d, allow_aux=True)))
            if is_composite(a):
                # the formula of its parts (``cond(a)`` would be a's own variable)
                left = self.cond(a.left, allow_aux=True)
                right = self.cond(a.right, allow_aux=True)
                parts = (left & right) if a.op == "and" else (left | right)
                constraints.append(b.apply("<=>", b.var(self.var_of[a]), parts))
        groups: dict = {}
        linear = []
        for c in list(self.var_of):
            rel = relation_of(c)
            if rel is None:
                continue
            form = linear_form(rel[0])
            if form is None:
                groups.setdefault(rel[0], []).append((c, rel[1], rel[2]))
                continue
            # a·x op v over the normalized direction a (first coefficient ±1), so that
            # x > 0, -x < 0 and 2*x >= 1 share a group
            const = form.pop(None, 0.0)
            key = tuple(sorted(form.items(), key=lambda kv: repr(kv[0])))
            if not key:
                continue
            scale = key[0][1]
            op = rel[1] if scale > 0 else _FLIP_OP[rel[1]]
            direction = tuple((x, a / scale) for x, a in key)
            groups.setdefault(direction, []).append((c, op, (rel[2] - const) / scale))
            linear.append((c, dict(direction), op, (rel[2] - const) / scale))
        for rels in groups.values():
            constraints.append(self._relation_constraint(rels))
        constraints.append(self._plane_constraint(linear))
        for x in self.aux:
            mine = [u for u in constraints if x in b.support(u)]
            if not mine:
                continue
            rest = [u for u in constraints if x not in b.support(u)]
            merged = b.true
            for u in mine:
                merged &= u
            constraints = rest + [b.exist([x], merged)]
        care = b.true
        for u in constraints:
            care &= u
        return care

    def _relation_constraint(self, rels):
        b = self.bdd
        out = b.true
        if len(rels) <= _EXACT_GROUP:
            combos = [rels]
        else:
            combos = [list(p) for p in itertools.combinations(rels, 2)]
        for group in combos:
            for values in itertools.product((True, False), repeat=len(group)):
                cons = [(op if v else NEGATED[op], num) for (_, op, num), v in zip(group, values)]
                if not feasible(cons):
                    clause = b.false
                    for (c, _, _), v in zip(group, values):
                        x = b.var(self.var_of[c])
                        clause |= ~x if v else x
                    out &= clause
        return out

    def _plane_constraint(self, linear):
        """Exclude the value combinations of three relations on different directions that no
        point satisfies (`_relation_constraint` takes those on one direction): OpenModelica's
        flattening of the MSL elasto-backlash, ``b2 > 1e-10``, ``phi_rel > b2`` and
        ``phi_rel < -b2``, cannot all hold (b2 < phi_rel < -b2 needs b2 < 0). Two relations
        on different directions always have a common point; three are infeasible together
        only when their directions are linearly dependent (Farkas' lemma), so the third's
        direction is in the span of the two others. The triples tried are those where the
        variables of two relations are among the variables of the third (``x > 0``,
        ``y > 0``, ``x + y < 0``; the backlash), at most ``_PLANE_GROUP`` relations inside
        one relation's variables, of at most ``_PLANE_VARS`` variables. Sound, not
        complete: a combination excluded by other arithmetic stays a mode (and is
        analysed as one)."""
        b = self.bdd
        out = b.true
        by_support: dict = {}
        for rel in linear:
            by_support.setdefault(frozenset(rel[1]), []).append(rel)
        seen = set()
        for big in linear:
            support = sorted(big[1], key=repr)
            if len(support) > _PLANE_VARS:
                continue
            inside = [r for k in range(1, len(support) + 1)
                      for sub in itertools.combinations(support, k)
                      for r in by_support.get(frozenset(sub), ()) if r[0] is not big[0]]
            if len(inside) > _PLANE_GROUP:
                continue
            for pair in itertools.combinations(inside, 2):
                trio = (big, *pair)
                ids = frozenset(r[0] for r in trio)
                if ids in seen or len({tuple(sorted(r[1].items(), key=repr))
                                       for r in trio}) < 3:
                    continue
                seen.add(ids)
                for values in itertools.product((True, False), repeat=3):
                    cons = [(r[1], r[2] if v else NEGATED[r[2]], r[3])
                            for r, v in zip(trio, values)]
                    if not _plane_feasible(cons):
                        clause = b.false
                        for r, v in zip(trio, values):
                            x = b.var(self.var_of[r[0]])
                            clause |= ~x if v else x
                        out &= clause
        return out

    # --- modes -------------------------------------------------------------------------------
    def assignment(self, pairs) -> dict[str, bool]:
        """``{bdd variable: value}`` of a mode given as ``(guard text, value)`` pairs."""
        by_name = dict(pairs)
        return {self.var_of[a]: bool(by_name[n]) for a, n in zip(self.atoms, self.names)}

    def mode_pairs(self, assignment: Mapping[str, bool]) -> tuple[tuple[str, bool], ...]:
        """The mode of a (partial) BDD assignment, unassigned guards taken false."""
        return tuple((n, bool(assignment.get(self.var_of[a], False)))
                     for a, n in zip(self.atoms, self.names))

    def count(self, u) -> int:
        """Number of modes (valuations of the guard atoms) in the formula ``u``."""
        return int(self.bdd.count(u, nvars=len(self.atoms))) if len(self.atoms) else \
            (1 if u == self.bdd.true else 0)

    def text(self, u, limit: int = 160) -> str:
        """A readable formula: ``true``, ``false``, or a sum of products over guard names
        (shortened to ``limit`` characters with the number of modes). The products are the
        BDD's paths to true, each widened to an implicant (literals u does not need dropped,
        `_widen`) and skipped when the previous ones cover it: ``open0 or open1 or ...``
        rather than the disjoint ``open0 or (not open0 and open1) or ...``."""
        b = self.bdd
        if u == b.true:
            return "true"
        if u == b.false:
            return "false"
        names = {self.var_of[a]: n for a, n in zip(self.atoms, self.names)}
        order = {self.var_of[a]: k for k, a in enumerate(self.atoms)}
        terms, total, covered = [], 0, b.false
        for cube in _cubes(b, u):
            if _implied(covered, cube):
                continue
            cube = _widen(u, cube)
            covered |= b.cube(cube)
            lits = [names[v] if val else f"not {names[v]}"
                    for v, val in sorted(cube.items(), key=lambda kv: order[kv[0]])]
            term = " and ".join(lits) if lits else "true"
            if len(term) > limit:
                keep = term[:limit].rsplit(" and ", 1)[0]
                term = f"{keep} and ... ({len(lits)} literals)"
            terms.append(f"({term})" if len(lits) > 1 else term)
            total += len(term) + 4
            if covered == u:
                break
            if total > limit:
                return " or ".join(terms) + f" or ... ({self.count(u)} modes)"
        return " or ".join(terms)


def linear_form(e: E.Expr) -> dict | None:
    """``e`` as ``{atom: coefficient}`` plus a constant under the key None, when it is a sum
    of numbers times atoms; an atom is any sub-expression that is not a sum, difference,
    negation, number, or product with a number (a variable, ``time``, ``sin(x)``, ``x*y``),
    each taken as an independent real (sound for the pruning: more points, fewer
    exclusions). None when no atom occurs with a nonzero coefficient."""
    out: dict = {}

    def add(x: E.Expr, k: float) -> None:
        n = number_value(x)
        if n is not None:
            out[None] = out.get(None, 0.0) + k * n
        elif isinstance(x, E.UnOp) and x.op == "-":
            add(x.arg, -k)
        elif isinstance(x, E.BinOp) and x.op in ("+", "-"):
            add(x.left, k)
            add(x.right, k if x.op == "+" else -k)
        elif isinstance(x, E.BinOp) and x.op == "*" and \
                (left := number_value(x.left)) is not None:
            add(x.right, k * left)
        elif isinstance(x, E.BinOp) and x.op == "*" and \
                (right := number_value(x.right)) is not None:
            add(x.left, k * right)
        elif isinstance(x, E.BinOp) and x.op == "/" and (divisor := number_value(x.right)):
            add(x.left, k / divisor)
        else:
            out[x] = out.get(x, 0.0) + k

    add(e, 1.0)
    form = {x: a for x, a in out.items() if x is None or a != 0.0}
    return form if any(x is not None for x in form) else None


def _plane_feasible(cons) -> bool:
    """Is there a point satisfying every ``({atom: coefficient}, op, value)`` (``a·x op
    v``)? Fourier-Motzkin elimination in exact rational arithmetic (the floats' own values:
    no tolerance decides that ``b2 > 1e-10`` excludes a point), fine for the few relations
    `GuardSpace._plane_constraint` combines. ``<>`` constraints are dropped (sound:
    feasibility can only grow)."""
    from fractions import Fraction
    rows = []                             # (coefficients, bound, strict): a·x < or <= b
    for a, op, v in cons:
        coef = {x: Fraction(k) for x, k in a.items()}
        bound = Fraction(v)
        if op in ("<", "<=", "=="):
            rows.append((coef, bound, op == "<"))
        if op in (">", ">=", "=="):
            rows.append(({x: -k for x, k in coef.items()}, -bound, op == ">"))
    for x in sorted({x for a, _, _ in cons for x in a}, key=repr):
        keep = [r for r in rows if r[0].get(x, 0) == 0]
        pos = [r for r in rows if r[0].get(x, 0) > 0]
        neg = [r for r in rows if r[0].get(x, 0) < 0]
        for cp, bp, sp_ in pos:
            for cn, bn, sn in neg:
                kp, kn = cp[x], -cn[x]
                coef = {y: cp.get(y, 0) * kn + cn.get(y, 0) * kp for y in {*cp, *cn}
                        if y != x}
                keep.append((coef, bp * kn + bn * kp, sp_ or sn))
        rows = keep
    return all(b > 0 or (b == 0 and not strict) for c, b, strict in rows
               if all(k == 0 for k in c.values()))


def _cubes(bdd, u):
    """The paths of ``u`` to true, as partial assignments (disjoint products)."""
    stack = [(u, {})]
    while stack:
        node, path = stack.pop()
        if node == bdd.false:
            continue
        if node == bdd.true:
            yield path
            continue
        var = node.var
        low, high = node.low, node.high
        if node.negated:
            low, high = ~low, ~high
        stack.append((low, {**path, var: False}))
        stack.append((high, {**path, var: True}))


def _children(manager, r: int) -> tuple[int, int, int]:
    """``(level, low, high)`` of the node reference ``r`` of a ``dd.bdd`` manager, the
    children complemented when ``r`` is (complement edges)."""
    level, low, high = manager.succ(r)
    return (level, -low, -high) if r < 0 else (level, low, high)


def _implied(u, cube: Mapping[str, bool]) -> bool:
    """Whether the product of the literals ``cube`` implies the formula ``u``: every node
    of u reached under the assignment (both children where a variable is free) leads to
    true. A walk of u's nodes, where ``bdd.cube(cube) & ~u == false`` builds two BDDs."""
    m = u.manager
    at = {m.level_of_var(v): x for v, x in cube.items()}
    stack, seen = [u.node], set()
    while stack:
        r = stack.pop()
        if r == m.true or r in seen:
            continue
        if r == m.false:
            return False
        seen.add(r)
        level, low, high = _children(m, r)
        x = at.get(level)
        if x is None:
            stack += (low, high)
        else:
            stack.append(high if x else low)
    return True


def _widen(u, path: Mapping[str, bool]) -> dict[str, bool]:
    """A path of ``u`` to true widened to an implicant of u: its literals tried from the
    top variable down, each dropped when the product of the others still implies u (greedy,
    so the result is a prime implicant contained in the path's cube's widening order).

    Linear in the nodes of u for one path, where testing each literal on its own costs a
    walk of u per literal (O(n^2) for a path of n literals, O(n^3) for a disjunction of n
    guards): the walk is shared. ``frontier`` holds the nodes reached from the root under
    the decisions taken above the current literal's level (all at that level or below);
    ``holds(r)`` (memoized) says whether node r, below the current level, is true under
    the path's literals below it, which no decision has changed yet."""
    m = u.manager
    levels = sorted((m.level_of_var(v), v) for v in path)
    at = {lv: path[v] for lv, v in levels}
    memo: dict[int, bool] = {}

    def holds(r: int) -> bool:
        stack = [r]
        while stack:
            x = stack[-1]
            if x in memo:
                stack.pop()
                continue
            if x in (m.true, m.false):
                memo[x] = x == m.true
                stack.pop()
                continue
            level, low, high = _children(m, x)
            val = at.get(level)
            kids = (low, high) if val is None else ((high,) if val else (low,))
            todo = [k for k in kids if k not in memo]
            if todo:
                stack += todo
                continue
            memo[x] = all(memo[k] for k in kids)
            stack.pop()
        return memo[r]

    out = dict(path)
    frontier = {u.node}
    for lv, v in levels:
        # the nodes above this level, reached through free variables: both children
        while True:
            above = [r for r in frontier if abs(r) != 1 and m.succ(r)[0] < lv]
            if not above:
                break
            for r in above:
                frontier.discard(r)
                _, low, high = _children(m, r)
                frontier.update((low, high))
        here = [r for r in frontier if abs(r) != 1 and m.succ(r)[0] == lv]
        free = all(holds(k) for r in here for k in _children(m, r)[1:]) and \
            all(holds(r) for r in frontier if r not in here)
        if free:
            del out[v]
        for r in here:
            frontier.discard(r)
            _, low, high = _children(m, r)
            frontier.update((low, high) if free else ((high,) if path[v] else (low,)))
        frontier.discard(m.true)
    return out
