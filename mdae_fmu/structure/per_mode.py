"""Mode enumeration and per-mode structural analysis (the data contract of the structure stage).

A mode is a valuation of the long guards of the model (RR-9334 Def 31, docs/theory.md §5.3); it
enables
the equations whose guard holds and selects one branch of every if-expression on those guards
(`specialize`). Each mode is then an ordinary DAE, analysed separately with Pryce's Σ-method
(docs/theory.md §4, §8.3): offsets, index (max c, and Pryce's ν_S), states, leading
variables, latent and consistency equations, and the block-triangular form of the
index-reduced system over the leading variables. A structurally singular mode is rejected with
the Dulmage–Mendelsohn culprits (docs/theory.md §10.2, §4 "Failure").

Unknowns of a mode's DAE: Real continuous variables that are not inputs and not assigned in a
when-clause; one that no enabled equation mentions stays an unknown (so the mode is rejected)
and is listed as ``absent``. Discrete variables (Boolean, Integer, Real assigned in when-clauses),
parameters, constants, inputs, ``pre(x)`` and ``time`` are known within a mode. An equation
that defines a discrete variable (a guard definition such as ``g = time >= t1 and time <= t2``)
is not part of any mode's DAE; it is listed separately in the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable, Mapping, Sequence

import numpy as np
import sympy as sp

from .. import expr as E
from ..diagnostics import EXIT_OK, EXIT_REJECTED, InputError
from ..ir import Assign, Equation, Model
from ..functions import call_name, function_table
from ..symbolic import SymbolTable, check_convertible
from .graph import DM, WeightedGraph, iter_block_triangular_graph, no_gc
from .latent import latent_system
from .conditionals import classify_conditionals, drop_zero_terms
from .printing import expr_text
from .sigma import sigma_method, tight_edges

# Explicit enumeration of modes stops beyond 2^12 consistent valuations of the long guards
# (issue 3: "up to 2^12 reachable valuations; beyond that a clear message").
MAX_ENUMERATED_MODES = 2 ** 12
# the stateSelect-guided choice (one matching per candidate, quadratic) is made for modes with
# at most this many states; larger ones report no selection
MAX_STATE_SELECTION = 400


# --- the data contract ----------------------------------------------------------------------

@dataclass(frozen=True)
class Instance:
    """``name^(order)``: the order-th time derivative of a variable."""
    name: str
    order: int

    def __str__(self) -> str:
        if self.order == 0:
            return self.name
        if self.order == 1:
            return f"der({self.name})"
        return f"der({self.name},{self.order})"


class LatentEquation:
    """The k-th time derivative of equation ``eq_id``, in residual form ``0 = expr``.

    ``expr`` is a sympy expression. An equation the Σ-method does not differentiate (k = 0 and
    c = 0) is kept as its expression tree (``residual``, with the mode's ``table``) and
    converted to sympy only when ``expr`` is first read: the analysis itself needs sympy only
    for the differentiated equations (docs/theory.md §4.6, RR-9387 Def 15), and converting every
    equation of a 10^5-equation model cost most of its time."""

    __slots__ = ("eq_id", "k", "_expr", "_residual", "_table")

    def __init__(self, eq_id: str, k: int, expr: sp.Expr | None = None, *,
                 residual: E.Expr | None = None, table: SymbolTable | None = None):
        if expr is None and (residual is None or table is None):
            raise ValueError("LatentEquation needs expr, or residual and table")
        self.eq_id, self.k = eq_id, k
        self._expr, self._residual, self._table = expr, residual, table

    @property
    def expr(self) -> sp.Expr:
        if self._expr is None:
            self._expr = self._table.to_sympy(self._residual)
        return self._expr

    @property
    def tree(self) -> E.Expr | None:
        """The residual's expression tree of an undifferentiated equation (k = 0), else None."""
        return self._residual if self.k == 0 else None

    @property
    def converted(self) -> bool:
        """Whether the sympy form exists already (for tests that count conversions)."""
        return self._expr is not None

    @property
    def parts(self) -> tuple:
        """``(eq_id, k, expr or None, residual, table)``: the constructor's arguments, the
        sympy form only when it was made already (`mdae_fmu.saved` writes them as they are)."""
        return self.eq_id, self.k, self._expr, self._residual, self._table

    def __eq__(self, other) -> bool:
        if not isinstance(other, LatentEquation):
            return NotImplemented
        return (self.eq_id, self.k, self.expr) == (other.eq_id, other.k, other.expr)

    def __hash__(self) -> int:
        return hash((self.eq_id, self.k))

    def __repr__(self) -> str:
        return f"LatentEquation({self.eq_id!r}, {self.k}, {self.expr!r})"

    @property
    def label(self) -> str:
        """``e3``, ``e3'``, ``e3''``, ``e3^(3)``."""
        return eq_label(self.eq_id, self.k)


@dataclass(frozen=True)
class Block:
    """One block of the BTF: the (eq_id, k) equations solved together for ``unknowns``."""
    equations: tuple[tuple[str, int], ...]
    unknowns: tuple[Instance, ...]


@dataclass(frozen=True)
class ModeAnalysis:
    """Structural analysis of one mode (docs/theory.md §4.6).

    Two index conventions, which differ (docs/theory.md §4.6, §4.7): ``index`` is max c, the
    number of differentiations that brings the mode to ODE-like form in its leading
    variables (the seed papers' convention; 1 for the engaged clutch, 2 for the pendulum);
    ``structural_index`` is Pryce's structural index ν_S = max c + (1 if some d_j = 0)
    (2 and 3). The classical differentiation index ν_d (ν_d ≤ ν_S when Pryce's system
    Jacobian is nonsingular) is not computed. Both are −1 when the mode has no offsets
    (structurally singular). ``ok`` is false for a rejected mode, whose ``diagnostic`` says
    why."""
    name: str
    valuation: tuple[tuple[str, bool], ...]
    equations: tuple[str, ...]
    c: dict[str, int]
    d: dict[str, int]
    index: int
    structural_index: int
    states: tuple[Instance, ...]
    leading: tuple[Instance, ...]
    solved: tuple[LatentEquation, ...]
    consistency: tuple[LatentEquation, ...]
    blocks: tuple[Block, ...]
    ok: bool
    diagnostic: str | None
    # additions beyond the minimal contract
    unknowns: tuple[str, ...] = ()            # the mode's DAE unknowns
    absent: tuple[str, ...] = ()              # continuous unknowns no enabled equation mentions
    dof: int | None = None                    # Σd − Σc = Val(Σ)
    over_equations: tuple[str, ...] = ()      # β_O of the DM (rejection culprits)
    over_variables: tuple[str, ...] = ()
    under_equations: tuple[str, ...] = ()     # β_U of the DM
    under_variables: tuple[str, ...] = ()
    status: str = "ok"                        # ok | singular | underdetermined | overdetermined
    sweeps: int = 0                           # sweeps of Pryce's iteration
    # stateSelect-guided choice of the independent states (structure/state_select.py); empty
    # when the mode has no consistency equations (every state is independent)
    selected_states: tuple[Instance, ...] = ()
    computed_states: tuple[Instance, ...] = ()
    state_notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModesReport:
    """Per-mode analysis of a whole model; ``exit_code`` 0 if every mode is accepted."""
    model_name: str
    long_guards: tuple[str, ...]
    guard_exprs: tuple[E.Expr, ...]
    symbols: SymbolTable
    modes: tuple[ModeAnalysis, ...]
    unknowns: tuple[str, ...]
    exit_code: int
    messages: tuple[str, ...]
    # additions beyond the minimal contract
    discrete_equations: tuple[str, ...] = ()   # guard / discrete-variable definitions
    discrete: tuple[str, ...] = ()             # discrete variables (known within a mode)
    inputs: tuple[str, ...] = ()
    fixed_guards: tuple[tuple[str, bool], ...] = ()   # guards with a mode-independent value
    n_valuations: int = 0                      # valuations considered before pruning


def eq_label(eq_id: str, k: int) -> str:
    """Name of the k-th derivative of an equation: ``e3``, ``e3'``, ``e3''``, ``e3^(3)``."""
    return eq_id + ("'" * k if k <= 2 else f"^({k})")


# --- variable classification ----------------------------------------------------------------

@dataclass(frozen=True)
class VariableClasses:
    """Which declared names are unknowns of the per-mode DAEs, which are known."""
    continuous: tuple[str, ...]     # Real, continuous, not input, not assigned in a when
    discrete: tuple[str, ...]       # Boolean / Integer / discrete Real / when-assigned Real
    inputs: tuple[str, ...]
    constants: tuple[str, ...]      # parameters and constants
    types: Mapping[str, str] = field(default_factory=dict)   # declared type of every name

    @cached_property
    def continuous_set(self) -> frozenset[str]:
        return frozenset(self.continuous)

    @cached_property
    def discrete_set(self) -> frozenset[str]:
        return frozenset(self.discrete)


def classify_variables(model: Model) -> VariableClasses:
    """Split the declared variables into continuous unknowns, discrete, inputs, constants
    (rules of the structure brief; RR-9334 Def 33, docs/theory.md §5.4: discrete values are known
    within a mode). Computed once per model object (the model is immutable; every stage asks)."""
    cached = model.__dict__.get("_variable_classes")
    if cached is None:
        cached = _classify_variables(model)
        model.__dict__["_variable_classes"] = cached
    return cached


def discrete_equation_flags(model: Model) -> tuple[bool, ...]:
    """`defines_discrete` of each equation of ``model.equations`` (in order), computed once per
    model object: the per-mode stage, the conditionals' classification, the normalization
    and the implicit-analysis test all split the equations this way."""
    cached = model.__dict__.get("_discrete_flags")
    if cached is None:
        cls = classify_variables(model)
        cached = tuple(defines_discrete(eq, cls) for eq in model.equations)
        model.__dict__["_discrete_flags"] = cached
    return cached


def _classify_variables(model: Model) -> VariableClasses:
    assigned = {a.var for w in model.whens for b in w.branches for a in b.actions
                if isinstance(a, Assign)}
    cont, disc, inp, const = [], [], [], []
    for v in model.variables:
        if v.variability in ("parameter", "constant"):
            const.append(v.name)
        elif v.causality == "input":
            inp.append(v.name)
        elif v.type != "Real" or v.variability == "discrete" or v.name in assigned:
            disc.append(v.name)
        else:
            cont.append(v.name)
    types = {v.name: v.type for v in model.variables}
    for f in model.functions:       # user function calls: "()f#k" -> type of output k
        for k, p in enumerate(f.outputs):
            types["()" + call_name(f.name, k)] = p.type
    return VariableClasses(tuple(cont), tuple(disc), tuple(inp), tuple(const), types)


def defines_discrete(eq: Equation, cls: VariableClasses) -> bool:
    """True for an equation that defines a discrete variable, which is not part of a mode's
    DAE: a Boolean or Integer equation (both sides non-Real, e.g. the guard definition
    ``g = time >= t1`` or ``contact = x^2 + y^2 >= L^2``), or ``v = expr`` with v discrete and
    no continuous unknown in expr (``pre(x)`` does not count). ``der(x) = n`` (n Integer) is a
    Real equation of the DAE.

    Linear in the size of the equation (the variable classes are looked up in sets built
    once per `VariableClasses`, not per call)."""
    lhs, rhs = E.split_residual(eq.residual)
    types = cls.types
    if _expr_type(lhs, types) != "Real" and _expr_type(rhs, types) != "Real":
        return True
    disc = cls.discrete_set
    for side, other in ((lhs, rhs), (rhs, lhs)):
        if isinstance(side, E.Ref) and side.name in disc and \
                cls.continuous_set.isdisjoint(E.derivative_orders(other)):
            return True
    return False


_EVENT_OPS = ("edge", "change", "initial", "terminal", "sample")


def _expr_type(e: E.Expr, types: Mapping[str, str]) -> str:
    """Modelica type of an expression: "Boolean", "Integer" or "Real" (implicit Integer →
    Real promotion in arithmetic with a Real)."""
    if isinstance(e, E.Const):
        v = e.value
        return "Boolean" if isinstance(v, bool) else ("Integer" if isinstance(v, int) else "Real")
    if isinstance(e, E.Ref):
        return types.get(e.name, "Real")
    if isinstance(e, (E.Time, E.Der, E.Str)):
        return "Real"
    if isinstance(e, E.BinOp):
        if e.op in E.REL_OPS or e.op in E.BOOL_OPS:
            return "Boolean"
        if e.op in ("/", "./", "^", ".^"):
            return "Real"
        a, b = _expr_type(e.left, types), _expr_type(e.right, types)
        return "Integer" if a == b == "Integer" else "Real"
    if isinstance(e, E.UnOp):
        return "Boolean" if e.op == "not" else _expr_type(e.arg, types)
    if isinstance(e, E.Call):
        if e.func in _EVENT_OPS:
            return "Boolean"
        if e.func == "pre":
            return _expr_type(e.args[0], types)
        if e.func in ("integer", "div", "mod", "rem", "abs", "min", "max", "sign"):
            ts = {_expr_type(a, types) for a in e.args}
            return "Integer" if e.func in ("integer", "sign") or ts == {"Integer"} else "Real"
        if e.func == "noEvent":
            return _expr_type(e.args[0], types)
        return types.get("()" + e.func, "Real")     # a user function: its output's type
    if isinstance(e, E.If):
        a, b = _expr_type(e.then, types), _expr_type(e.orelse, types)
        if a == b:
            return a
        return "Real" if "Real" in (a, b) else "Integer"
    return "Real"


def is_event_guard(c: E.Expr) -> bool:
    """A condition built with an event operator (``edge``, ``change``, ``initial``...) is
    true for one instant only: a transient guard, false in every long mode (docs/theory.md §5.2,
    RR-9334 Defs 30–31), even when written as an if-condition."""
    return any(isinstance(n, E.Call) and n.func in _EVENT_OPS for n in E.walk(c))


# --- guards: atoms, evaluation, contradictions ----------------------------------------------

def long_guard_atoms(model: Model, equations: Iterable[Equation],
                     conditionals=None) -> list[E.Expr]:
    """The long guards of the DAE equations (Model.guards() kind "long", restricted to the
    conditions that occur in ``equations``), with ``not c`` identified with c; in order of
    appearance. Conditions whose branches all have the same structure define no mode
    (`mdae_fmu.structure.conditionals`): they stay if-expressions of the mode's equations.
    ``conditionals``: the classification to use (default: the model's, with demotion)."""
    present: set[E.Expr] = set()
    # the if-conditions of the model's own equations are walked once per model
    known = {id(eq): conds for eq, conds in zip(model.equations, model.if_conditions)}
    for eq in equations:
        for lit in eq.guard:
            present.add(lit.cond)
        conds = known.get(id(eq))
        if conds is None:
            conds = [n.cond for n in E.walk(eq.residual) if isinstance(n, E.If)]
        present.update(conds)
    atoms: dict[E.Expr, None] = {}
    if conditionals is None:
        conditionals = classify_conditionals(model)
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
    if _composite(c):
        return _parts_value(c, val)
    return None


_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "<>": "<>"}
_NEG = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "<>", "<>": "=="}


def _num(e: E.Expr) -> float | None:
    if isinstance(e, E.Const) and not isinstance(e.value, bool) and \
            isinstance(e.value, (int, float)):
        return float(e.value)
    if isinstance(e, E.UnOp) and e.op == "-":
        v = _num(e.arg)
        return None if v is None else -v
    return None


def _relation(c: E.Expr) -> tuple[E.Expr, str, float] | None:
    """``c`` as ``key op value``: ``x > 0`` → (x, >, 0); ``a < b`` → (a − b, <, 0) with the
    operands in a canonical order, so that ``a < b`` and ``b > a`` share a key."""
    if not (isinstance(c, E.BinOp) and c.op in E.REL_OPS):
        return None
    lv, rv = _num(c.left), _num(c.right)
    if rv is not None and lv is None:
        return c.left, c.op, rv
    if lv is not None and rv is None:
        return c.right, _FLIP[c.op], lv
    if lv is not None and rv is not None:
        return None
    a, b, op = c.left, c.right, c.op
    if repr(b) < repr(a):
        a, b, op = b, a, _FLIP[op]
    return E.BinOp("-", a, b), op, 0.0


def _feasible(constraints: list[tuple[str, float]]) -> bool:
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


def _composite(c: E.Expr) -> bool:
    return isinstance(c, E.BinOp) and c.op in ("and", "or")


def _parts_value(c: E.Expr, val: Mapping[E.Expr, bool]) -> bool | None:
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
    """`guard_definitions`, computed."""
    types = cls.types
    found: dict[E.Expr, E.Expr] = {}
    twice: set[E.Expr] = set()
    for eq in model.equations:
        if eq.guard:
            continue
        lhs, rhs = E.split_residual(eq.residual)
        for side, other in ((lhs, rhs), (rhs, lhs)):
            if isinstance(side, E.Ref) and types.get(side.name) == "Boolean" and \
                    _expr_type(other, types) == "Boolean" and not isinstance(other, E.Const):
                if side in found:
                    twice.add(side)
                found[side] = other
                break
    for k in twice:
        del found[k]

    def expand(e: E.Expr, seen: frozenset) -> E.Expr | None:
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
    the other relations on the same expression (interval feasibility, `_feasible`) and the
    composite guards (and/or) that contain it or that it is. This is the check of
    `consistent_valuation`, done in time proportional to the facts involved instead of the
    whole valuation, so that enumerating 4096 modes of many guards stays cheap."""

    def __init__(self, conds: Iterable[E.Expr], definitions: Mapping[E.Expr, E.Expr]):
        self.defs = dict(definitions)
        self.val: dict[E.Expr, bool] = {}
        self.groups: dict[E.Expr, list[tuple[str, float]]] = {}
        self.trail: list[tuple[E.Expr, E.Expr | None]] = []   # (fact, relation key)
        self.rel: dict[E.Expr, tuple[E.Expr, str, float] | None] = {}
        self.parents: dict[E.Expr, list[E.Expr]] = {}
        universe: dict[E.Expr, None] = {}
        for c in conds:
            for x in (c, self.defs.get(c)):
                if x is not None:
                    universe.setdefault(E.strip_not(x)[0], None)
        for c in universe:
            if _composite(c):
                for node in E.walk(c):
                    if node is not c:
                        self.parents.setdefault(E.strip_not(node)[0], []).append(c)

    def _relation(self, c: E.Expr):
        if c not in self.rel:
            self.rel[c] = _relation(c)
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
        rel = self._relation(c)
        self.val[c] = v
        self.trail.append((c, rel[0] if rel is not None else None))
        if rel is not None:
            key, op, num = rel
            group = self.groups.setdefault(key, [])
            group.append((op if v else _NEG[op], num))
            if not _feasible(group):
                return False
        for comp in ([c] if _composite(c) else []) + self.parents.get(c, []):
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
                         ) -> tuple[list[dict[E.Expr, bool]], dict]:
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
                                   f"{_NODES_PER_MODE * limit + 2 * n} partial valuations")
        marks[i] = len(facts.trail)
        if facts.push(a, v):
            cur[a] = v
            held[i] = True
            i += 1
    return out, fixed


# --- specialization -------------------------------------------------------------------------

def _as_valuation(model: Model, valuation) -> dict[E.Expr, bool]:
    """Accept ``{Expr: bool}``, or pairs keyed by Expr or by guard text (as in
    ModeAnalysis.valuation)."""
    items = valuation.items() if isinstance(valuation, Mapping) else valuation
    out: dict[E.Expr, bool] = {}
    by_text = None
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


def specialize(model: Model, valuation, include_discrete: bool = False, *,
               classes: VariableClasses | None = None,
               discrete_ids: frozenset[str] | None = None) -> list[Equation]:
    """The equations of the mode selected by ``valuation`` (RR-9334 Def 31, docs/theory.md §5.3):
    the equations
    whose guard holds, with every if-expression on a valued guard replaced by the selected
    branch. Each keeps its id and source location and gets an empty guard. Equations that
    define discrete variables (guard definitions) are left out unless ``include_discrete``.

    ``valuation``: ``{guard Expr: bool}`` or pairs ``(guard Expr or guard text, bool)``.
    A literal whose condition the valuation does not decide raises KeyError.
    ``classes`` and ``discrete_ids`` (the ids of the equations that define discrete
    variables) may be passed when already known, e.g. once for all modes.
    """
    val = _as_valuation(model, valuation)
    if not include_discrete and discrete_ids is None:
        if classes is None:
            flags = discrete_equation_flags(model)
        else:
            flags = tuple(defines_discrete(eq, classes) for eq in model.equations)
        discrete_ids = frozenset(eq.id for eq, d in zip(model.equations, flags) if d)
    out = []
    # (one walk per model finds the equations with if-expressions: the others are kept as is)
    for eq, if_conds in zip(model.equations, model.if_conditions):
        if not include_discrete and eq.id in discrete_ids:
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


# --- per-mode analysis ----------------------------------------------------------------------

def mode_name(valuation: Sequence[tuple[str, bool]]) -> str:
    """``{g}``, ``{not g}``, ``{g1, not g2}``; ``{}`` for the single mode of a model without
    long guards."""
    return "{" + ", ".join(t if v else f"not {t}" for t, v in valuation) + "}"


def _where(eq: Equation) -> str:
    return f"{eq.id} ({eq.loc.short()})" if eq.loc is not None else eq.id


def signature_graph(equations: Sequence[Equation], continuous: Sequence[str],
                    absent_are_unknowns: bool = True, model: Model | None = None
                    ) -> tuple[WeightedGraph, list[str], tuple[str, ...]]:
    """Weighted bipartite graph of a mode's equations over the continuous unknowns (docs/theory.md
    §2.1, §4.1): σ(e, x) = highest derivative order of x in e (as `mdae_fmu.expr.derivative_orders`:
    occurrences inside ``pre`` do not count). Returns (graph, unknowns in graph order, absent
    unknowns), the unknowns keeping the order of ``continuous``; unknowns no equation mentions
    are kept (as isolated vertices) only if ``absent_are_unknowns``. Linear in the total size
    of the expressions; the graph is built from COO arrays (no per-edge Python objects).
    ``model``: the model the equations come from, whose residuals' rows are then computed
    once for all the stages (`sigma_row`)."""
    vidx = {n: j for j, n in enumerate(continuous)}
    rows: list[int] = []
    cols: list[int] = []
    wts: list[int] = []
    with no_gc():
        for i, eq in enumerate(equations):
            for name, k in sigma_row(model, eq.residual).items():
                j = vidx.get(name)
                if j is not None:
                    rows.append(i)
                    cols.append(j)
                    wts.append(k)
    cols_a = np.asarray(cols, dtype=np.int64)
    used = np.zeros(len(continuous), dtype=bool)
    used[cols_a] = True
    absent = tuple(n for n, u in zip(continuous, used.tolist()) if not u)
    if absent_are_unknowns or not absent:
        unknowns = list(continuous)
    else:
        keep = np.flatnonzero(used)
        remap = np.full(len(continuous), -1, dtype=np.int64)
        remap[keep] = np.arange(len(keep))
        cols_a = remap[cols_a]
        unknowns = [continuous[j] for j in keep.tolist()]
    g = WeightedGraph.from_arrays(len(equations), len(unknowns), np.asarray(rows, np.int64),
                                  cols_a, np.asarray(wts, np.int64))
    return g, unknowns, absent


def sigma_row(model: Model | None, e: E.Expr) -> dict[str, int]:
    """`_sigma_row` of ``e``, remembered for the residuals of ``model``'s equations (the
    per-mode stage and the normalization of the mode-change stage both read every row). The
    memo is keyed by the residual's identity: the model keeps its residuals alive, so no other
    expression can have the same key. The row returned must not be modified. Once
    `analyze_modes` has run, the next read of a row (the normalization's) takes it out of the
    memo: about 250 MB less during the mode-change stage at 10^6 equations (issue 16); a
    later read computes the row again."""
    if model is None:
        return _sigma_row(e)
    memo = model.__dict__.get("_sigma_rows")
    if memo is None:
        memo = model.__dict__["_sigma_rows"] = {id(eq.residual): None
                                                for eq in model.equations}
    key = id(e)
    if key not in memo:
        return _sigma_row(e)
    if model.__dict__.get("_sigma_rows_last_read"):
        return memo.pop(key) or _sigma_row(e)
    row = memo[key]
    if row is None:
        row = memo[key] = _sigma_row(e)
    return row


def _sigma_row(e: E.Expr) -> dict[str, int]:
    """`mdae_fmu.expr.derivative_orders` specialised for speed (dispatch on the node type,
    no generator per node): the row of the signature matrix for one residual."""
    orders: dict[str, int] = {}
    stack: list[tuple[E.Expr, int]] = [(e, 0)]
    pop, push = stack.pop, stack.append
    BinOp, Ref, Der, UnOp, Call, If = E.BinOp, E.Ref, E.Der, E.UnOp, E.Call, E.If
    while stack:
        node, k = pop()
        t = type(node)
        if t is BinOp:
            push((node.right, k))
            push((node.left, k))
        elif t is Ref:
            if orders.get(node.name, -1) < k:
                orders[node.name] = k
        elif t is Der:
            push((node.arg, k + 1))
        elif t is UnOp:
            push((node.arg, k))
        elif t is Call:
            if node.func != "pre":
                for a in node.args:
                    push((a, k))
        elif t is If:
            push((node.orelse, k))
            push((node.then, k))
            push((node.cond, k))
    return orders


def analyze_mode(model: Model, name: str, valuation: tuple[tuple[str, bool], ...],
                 equations: Sequence[Equation], continuous: Sequence[str],
                 table: SymbolTable, latent: bool = True,
                 absent_are_unknowns: bool = True) -> ModeAnalysis:
    """Σ-method on one mode's DAE (docs/theory.md §4, §4.4 when it has fewer equations than
    unknowns), then the BTF of the index-reduced system over the leading variables, and (if
    ``latent``) its latent and consistency equations.

    ``continuous`` are the unknowns. A continuous unknown that no enabled equation mentions is
    listed in ``absent``; it stays an unknown (so the mode is rejected: nothing determines it)
    unless ``absent_are_unknowns`` is false, in which case it is left out of the mode's DAE
    (the reading of docs/theory.md §13, where such a variable is irrelevant in the mode)."""
    g, unknowns, absent = signature_graph(equations, continuous, absent_are_unknowns,
                                           model)
    res = sigma_method(g)
    eq_ids = [eq.id for eq in equations]
    base = dict(name=name, valuation=valuation, equations=tuple(eq_ids),
                unknowns=tuple(unknowns), absent=absent, sweeps=res.sweeps)
    if res.status == "singular":
        return _singular_mode(base, res.dm, equations, unknowns, name)
    c = {eq_ids[i]: int(v) for i, v in enumerate(res.c)}
    d = {unknowns[j]: int(v) for j, v in enumerate(res.d) if v >= 0}   # d < 0: in no equation
    index = max(c.values(), default=0)
    nu_s = index + (1 if any(v == 0 for v in d.values()) else 0)     # docs/theory.md §4.7
    states = tuple(Instance(n, k) for n in unknowns if n in d for k in range(d[n]))
    # one Instance per leading variable, shared by the blocks (10^6 of them at 10^6 equations)
    lead = {j: Instance(n, d[n]) for j, n in enumerate(unknowns) if n in d}
    leading = tuple(lead.values())
    # BTF of F^c over the leading variables: the tight edges, with a matching inside them
    tight = tight_edges(g, res.c, res.d)
    matching = res.matching.copy()
    diag, ok, status = None, True, "ok"
    under_e: tuple[str, ...] = ()
    under_v: tuple[str, ...] = ()
    if res.status == "underdetermined":
        ok, status = False, "underdetermined"
        dm = res.dm
        well = np.zeros(len(equations), dtype=bool)
        well[list(dm.well_eqs)] = True
        matching[~well] = -1
        under_e = tuple(eq_ids[i] for i in dm.under_eqs)
        under_v = tuple(unknowns[j] for j in dm.under_vars)
        undetermined = ", ".join(str(Instance(unknowns[j], d.get(unknowns[j], 0)))
                                 for j in dm.under_vars)
        diag = (f"mode {name}: {len(equations)} equations for {len(unknowns)} unknowns "
                f"(fewer equations than unknowns): no equation determines "
                f"{{{undetermined}}}"
                f" (equations involved: {', '.join(_where(equations[i]) for i in dm.under_eqs)})")
    blocks = tuple(
        Block(tuple((eq_ids[i], c[eq_ids[i]]) for i in beqs),
              tuple([lead[j] for j in bvars]))
        for beqs, bvars in iter_block_triangular_graph(g, matching, tight))
    solved: tuple[LatentEquation, ...] = ()
    consistency: tuple[LatentEquation, ...] = ()
    if latent:
        # sympy allocates many small acyclic objects: without the cyclic collector's
        # repeated rescans of the growing heap this costs about a third less at 10^4
        # equations (nothing is leaked, the collection is only deferred)
        # only the equations the Σ-method differentiates (c > 0) are converted to sympy now;
        # the others keep their expression tree until a consumer reads their sympy form
        for eq in equations:
            _check_symbolic(eq, table)
        with no_gc():
            diff = [eq for eq in equations if c[eq.id] > 0]
            residuals = {eq.id: _to_sympy(table, eq) for eq in diff}
            s, cons = latent_system(table, residuals, c, [eq.id for eq in diff])
        top = {i: LatentEquation(i, k, x) for i, k, x in s}
        solved = tuple(top[eq.id] if eq.id in top else
                       LatentEquation(eq.id, 0, residual=eq.residual, table=table)
                       for eq in equations)
        consistency = tuple(LatentEquation(i, k, x) for i, k, x in cons)
        if consistency and len(states) <= MAX_STATE_SELECTION:
            base.update(_state_selection(model, states, consistency, table))
    return ModeAnalysis(c=c, d=d, index=index, structural_index=nu_s,
                        states=states, leading=leading, solved=solved,
                        consistency=consistency, blocks=blocks, ok=ok, diagnostic=diag,
                        dof=res.value, under_equations=under_e, under_variables=under_v,
                        status=status, **base)


def _state_selection(model: Model, states: tuple[Instance, ...],
                     consistency: tuple[LatentEquation, ...], table: SymbolTable) -> dict:
    """The ModeAnalysis fields of the stateSelect-guided state choice
    (`structure.state_select`)."""
    from .state_select import select_states
    known = set(states)
    constraints = []
    for e in consistency:
        reads = (table.instance(sym) for sym in e.expr.free_symbols)
        constraints.append(frozenset(x for x in (Instance(*r) for r in reads if r is not None)
                                     if x in known))
    hints = {v.name: v.state_select for v in model.variables if v.state_select}
    sel = select_states(states, constraints, hints)
    return dict(selected_states=sel.selected, computed_states=sel.computed,
                state_notes=sel.notes)


def _check_symbolic(eq: Equation, table: SymbolTable) -> None:
    """`_to_sympy`'s refusal, checked on the expression tree without converting."""
    try:
        check_convertible(eq.residual, table.functions)
    except (ValueError, TypeError) as err:
        raise InputError(f"equation {eq.id}: its residual has no symbolic form: {err}",
                         eq.loc) from None


def _to_sympy(table: SymbolTable, eq: Equation) -> sp.Expr:
    """The residual of ``eq`` in sympy; an expression with no symbolic form (an unsupported
    function) is reported against the equation, not as a traceback."""
    try:
        return table.to_sympy(eq.residual)
    except (ValueError, TypeError) as err:
        raise InputError(f"equation {eq.id}: its residual has no symbolic form: {err}",
                         eq.loc) from None


def _singular_mode(base: dict, dm: DM, equations: Sequence[Equation], unknowns: list[str],
                   name: str) -> ModeAnalysis:
    """A structurally singular mode: name the over-determined equations (with their source
    lines) and the unknowns they fight over, and the unknowns no equation determines
    (DM of the mode's graph; docs/theory.md §10.2 error report)."""
    over_e = tuple(equations[i].id for i in dm.over_eqs)
    over_v = tuple(unknowns[j] for j in dm.over_vars)
    under_e = tuple(equations[i].id for i in dm.under_eqs)
    under_v = tuple(unknowns[j] for j in dm.under_vars)
    n_e, n_v = len(equations), len(unknowns)
    parts = []
    if dm.over_eqs:
        who = ", ".join(_where(equations[i]) for i in dm.over_eqs)
        noun = "equation" if len(dm.over_eqs) == 1 else "equations"
        if dm.over_vars:
            parts.append(f"{noun} {who} over-determine {{{', '.join(over_v)}}}")
        else:
            parts.append(f"{noun} {who} contain no unknown of this mode")
    if dm.under_vars:
        parts.append(f"no equation determines {{{', '.join(under_v)}}}")
    msg = f"mode {name}: " + "; ".join(parts)
    if n_e != n_v:
        more = "more" if n_e > n_v else "fewer"
        msg += f" ({n_e} equations for {n_v} unknowns: {more} equations than unknowns)"
    status = "overdetermined" if n_e > n_v else ("underdetermined" if n_e < n_v else "singular")
    return ModeAnalysis(c={}, d={}, index=-1, structural_index=-1, states=(), leading=(),
                        solved=(), consistency=(), blocks=(), ok=False, diagnostic=msg,
                        over_equations=over_e, over_variables=over_v, under_equations=under_e,
                        under_variables=under_v, status=status, **base)


def symbol_table(model: Model) -> SymbolTable:
    """The SymbolTable of a model: parameters, constants and discrete variables are constants
    (zero time derivative within a mode); continuous unknowns and inputs are instances."""
    cls = classify_variables(model)
    return SymbolTable(constants=frozenset(cls.constants) | frozenset(cls.discrete),
                       functions=function_table(model.functions) if model.functions else None)


def enumeration_limit_message(model_name: str, n_free: int, err: TooManyModes,
                              max_modes: int, stage: str = "per-mode analysis") -> str:
    """The message of the explicit enumeration cut-off (`enumerate_valuations`), shared by the
    per-mode stage and the mode-change exploration (`mdae_fmu.modes`)."""
    return (f"model {model_name}: its {n_free} long guards have {err} "
            f"(explicit enumeration limit: {max_modes} modes); {stage} not "
            f"performed (`mdae-fmu analyze` switches to the implicit structural "
            f"analysis of all modes beyond this limit; mode changes are explored by "
            f"enumeration only)")


def check_declared(model: Model) -> None:
    """`InputError` at the first equation that reads an undeclared name."""
    declared = {v.name for v in model.variables}
    for eq in model.equations:
        for n in E.refs(eq.residual):
            if n not in declared:
                raise InputError(f"equation {eq.id}: unknown variable {n}", eq.loc)


def analyze_modes(model: Model, latent: bool = True,
                  max_guards: int | None = None,
                  absent_are_unknowns: bool = True,
                  max_modes: int = MAX_ENUMERATED_MODES) -> ModesReport:
    """Per-mode structural analysis of every consistent valuation of the long guards (RR-9334
    Def 31, docs/theory.md §4, §5.3, §8.3). Contradictory valuations (``x > 0`` and ``x <= 0``
    both true, ``x > 1`` true with ``x > 0`` false, ``g2`` true with ``g1`` false when
    ``g1 = time >= 5`` and ``g2 = time >= 7``) are not enumerated (`enumerate_valuations`).
    When more than ``max_modes`` (2^12) valuations are consistent, nothing is analysed and
    the report says so; the count stops at the limit, so many correlated guards with few
    consistent valuations (13 thresholds ``x > 0`` … ``x > 12``: 14 modes) are fine.
    ``max_guards`` = k is the older form of ``max_modes`` = 2^k."""
    if max_guards is not None:
        max_modes = 2 ** max_guards
    cls = classify_variables(model)
    check_declared(model)
    disc_eqs = tuple(eq.id for eq, d in zip(model.equations, discrete_equation_flags(model))
                     if d)
    disc_set = frozenset(disc_eqs)
    dae_eqs = [eq for eq in model.equations if eq.id not in disc_set]
    atoms = long_guard_atoms(model, dae_eqs)
    table = symbol_table(model)
    common = dict(model_name=model.name, symbols=table, unknowns=cls.continuous,
                  discrete_equations=disc_eqs, discrete=cls.discrete, inputs=cls.inputs)
    fixed = fixed_guard_values(atoms)
    n_free = len(atoms) - len(fixed)
    texts = tuple(expr_text(a) for a in atoms)
    try:
        valuations, fixed = enumerate_valuations(atoms, guard_definitions(model, cls),
                                                 limit=max_modes)
    except TooManyModes as err:
        msg = enumeration_limit_message(model.name, n_free, err, max_modes)
        return ModesReport(long_guards=texts, guard_exprs=tuple(atoms), modes=(),
                           exit_code=EXIT_REJECTED, messages=(msg,),
                           fixed_guards=tuple((expr_text(a), v) for a, v in fixed.items()),
                           n_valuations=2 ** n_free, **common)
    modes = []
    for val in valuations:
        pairs = tuple((expr_text(a), val[a]) for a in atoms if a not in fixed)
        name = mode_name(pairs)
        eqs = specialize(model, val, classes=cls, discrete_ids=disc_set)
        modes.append(analyze_mode(model, name, pairs, eqs, cls.continuous, table, latent,
                                  absent_are_unknowns))
    messages = tuple(m.diagnostic for m in modes if not m.ok and m.diagnostic)
    exit_code = EXIT_OK if all(m.ok for m in modes) else EXIT_REJECTED
    model.__dict__["_sigma_rows_last_read"] = True      # the normalization's (`sigma_row`)
    return ModesReport(long_guards=texts, guard_exprs=tuple(atoms), modes=tuple(modes),
                       exit_code=exit_code, messages=messages,
                       fixed_guards=tuple((expr_text(a), v) for a, v in fixed.items()),
                       n_valuations=2 ** n_free, **common)


__all__ = ["Instance", "LatentEquation", "Block", "ModeAnalysis", "ModesReport", "specialize",
           "analyze_modes", "analyze_mode", "classify_variables", "defines_discrete",
           "enumerate_valuations", "eval_condition", "consistent_valuation", "mode_name",
           "symbol_table", "eq_label", "long_guard_atoms", "signature_graph", "is_event_guard",
           "fixed_guard_values", "guard_definitions", "TooManyModes", "MAX_ENUMERATED_MODES",
           "enumeration_limit_message", "check_declared"]
