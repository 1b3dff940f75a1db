"""Variable classification of a model: which declared names are the continuous unknowns of the
modes' DAEs and which are known within a mode (discrete, inputs, parameters and constants), and
which equations define discrete variables (RR-9334 Def 33, docs/theory.md §5.4: discrete values
are known within a mode)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from collections.abc import Iterator, Mapping, ValuesView
from typing import Any

from .. import expr as E
from ..functions import call_name
from ..ir import Assign, Equation, Model


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
        if cls.discrete:
            cached = tuple(defines_discrete(eq, cls) for eq in model.equations)
        else:
            cached = tuple(_both_sides_discrete(model, cls.types))
        model.__dict__["_discrete_flags"] = cached
    return cached


#: The binary operators whose result `expr_type` types "Real" when their left operand is not
#: "Integer" (the arithmetic ones that keep an Integer pair Integer).
_REAL_IF_LEFT_IS = frozenset(("+", "-", "*", ".+", ".-", ".*"))


def _both_sides_discrete(model: Model, types: Mapping[str, str]) -> list[bool]:
    """`defines_discrete` of each equation of a model without discrete variables: its first
    test alone (both sides non-Real), the second needing a discrete variable; the residual
    split as `mdae_fmu.expr.split_residual` does, inlined (10^6 equations), and a left side
    that is a derivative or a Real name (`expr_type` of it is "Real") answered without
    typing the rest, as is one that is such a left side times (plus, minus) anything."""
    BinOp, Ref, Der, zero = E.BinOp, E.Ref, E.Der, E.ZERO
    out: list[bool] = []
    # (a `DeclaredTypes` answers "Real" for every name outside its other types: that dict's
    # own ``get`` in C, no Python call per equation)
    typed = types._other.get if type(types) is DeclaredTypes else types.get
    append = out.append
    for eq in model.equations:
        r = eq.residual
        if type(r) is BinOp and r.op == "-":
            left: Any = r.left      # (narrowed by the exact type below)
            t = type(left)
            if t is BinOp and left.op in _REAL_IF_LEFT_IS:
                # (`expr_type`: Real when its left operand is not Integer, ``C*der(T)``)
                left = left.left
                t = type(left)
            if t is Der or (t is Ref and typed(left.name, "Real") == "Real"):
                append(False)
            else:
                append(expr_type(r.left, types) != "Real"
                       and expr_type(r.right, types) != "Real")
        else:
            append(expr_type(zero, types) != "Real" and expr_type(r, types) != "Real")
    return out


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
    other: dict[str, str] = {v.name: v.type for v in model.variables if v.type != "Real"}
    for f in model.functions:       # user function calls: "()f#k" -> type of output k
        for k, p in enumerate(f.outputs):
            other["()" + call_name(f.name, k)] = p.type
    return VariableClasses(
        continuous=tuple(cont),
        discrete=tuple(disc),
        inputs=tuple(inp),
        constants=tuple(const),
        types=DeclaredTypes(model, other),
    )


class DeclaredTypes(Mapping[str, str]):
    """The declared type of every variable of ``model`` and, under ``()f#k``, of output k of
    each user function: the mapping the dict of every name was, in its order, keeping only
    the names whose type is not "Real" (and the functions' outputs). A variable outside them is
    a Real one, found by the model's `Model.var_index`, which ``get(name, "Real")`` (every
    look-up of a type) never needs. The dict cost about 40 MB at 10^6 variables, kept with the
    model (docs/performance.md, "stop 41, memory")."""

    __slots__ = ("_model", "_other", "_functions")

    def __init__(self, model: Model, other: dict[str, str]):
        self._model = model
        self._other = other
        self._functions = [k for k in other if k.startswith("()")]

    def __getitem__(self, name: str) -> str:
        t = self._other.get(name)
        if t is not None:
            return t
        if name in self._model.var_index:
            return "Real"
        raise KeyError(name)

    def get(self, name: str, default: Any = None) -> Any:
        t = self._other.get(name)
        if t is not None:
            return t
        # (a name that is no variable gets ``default``: "Real" too when it is "Real")
        return "Real" if default == "Real" or name in self._model.var_index else default

    def __contains__(self, name: object) -> bool:
        return name in self._other or name in self._model.var_index

    def __iter__(self) -> Iterator[str]:
        for v in self._model.variables:
            yield v.name
        yield from self._functions

    def __len__(self) -> int:
        return len(self._model.var_index) + len(self._functions)

    def values(self) -> ValuesView[str]:
        return _TypeValues(self)


class _TypeValues(ValuesView[str]):
    """`DeclaredTypes.values`, whose ``in`` does not walk the Real variables."""

    def __init__(self, types: DeclaredTypes):
        super().__init__(types)
        self._types = types

    def __contains__(self, value: object) -> bool:
        t = self._types
        if value in t._other.values():
            return True
        return value == "Real" and len(t._other) - len(t._functions) < len(t._model.variables)


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
    if expr_type(lhs, types) != "Real" and expr_type(rhs, types) != "Real":
        return True
    disc = cls.discrete_set
    for side, other in ((lhs, rhs), (rhs, lhs)):
        if isinstance(side, E.Ref) and side.name in disc and \
                cls.continuous_set.isdisjoint(E.derivative_orders(other)):
            return True
    return False


_EVENT_OPS = ("edge", "change", "initial", "terminal", "sample")


def expr_type(node: E.Expr, types: Mapping[str, str]) -> str:
    """Modelica type of an expression: "Boolean", "Integer" or "Real" (implicit Integer →
    Real promotion in arithmetic with a Real)."""
    e: Any = node       # (narrowed by the exact type below, which mypy does not follow)
    t = type(e)         # the node classes are final: exact-type dispatch, commonest first
    if t is E.Ref:
        return types.get(e.name, "Real")
    if t is E.Der:
        return "Real"
    if t is E.Const:
        v = e.value
        return "Boolean" if isinstance(v, bool) else ("Integer" if isinstance(v, int) else "Real")
    if t is E.Time or t is E.Str:
        return "Real"
    if t is E.BinOp:
        if e.op in E.REL_OPS or e.op in E.BOOL_OPS:
            return "Boolean"
        if e.op in ("/", "./", "^", ".^"):
            return "Real"
        # Integer only when both operands are: the right one is typed after an Integer left
        if expr_type(e.left, types) != "Integer":
            return "Real"
        return "Integer" if expr_type(e.right, types) == "Integer" else "Real"
    if t is E.UnOp:
        return "Boolean" if e.op == "not" else expr_type(e.arg, types)
    if t is E.Call:
        if e.func in _EVENT_OPS:
            return "Boolean"
        if e.func == "pre":
            return expr_type(e.args[0], types)
        if e.func in ("integer", "div", "mod", "rem", "abs", "min", "max", "sign"):
            ts = {expr_type(a, types) for a in e.args}
            return "Integer" if e.func in ("integer", "sign") or ts == {"Integer"} else "Real"
        if e.func == "noEvent":
            return expr_type(e.args[0], types)
        return types.get("()" + e.func, "Real")     # a user function: its output's type
    if t is E.If:
        a = expr_type(e.then, types)
        if a == "Real":
            return a            # (Real whatever the other branch)
        b = expr_type(e.orelse, types)
        if a == b:
            return a
        return "Real" if "Real" in (a, b) else "Integer"
    return "Real"


def is_event_guard(c: E.Expr) -> bool:
    """A condition built with an event operator (``edge``, ``change``, ``initial``...) is
    true for one instant only: a transient guard, false in every long mode (docs/theory.md §5.2,
    RR-9334 Defs 30–31), even when written as an if-condition."""
    return any(isinstance(n, E.Call) and n.func in _EVENT_OPS for n in E.walk(c))
