"""The mDAE model: variables, guarded equations in residual form, when-clauses, initial equations.

This is the one in-memory model that every later stage reads (docs/architecture.md). It is
immutable (frozen dataclasses over tuples), JSON-serializable (`Model.to_json` /
`Model.from_json`) and printable back to flat Modelica (`mdae_fmu.modelica_printer`).

Guards (docs/theory.md §5.1): an equation written inside
``if c1 then ... elseif c2 then ...`` branches carries the conjunction of the literals that
select its branch, e.g. ``(c1, False), (c2, True)`` for the ``elseif`` branch. ``if not c``
is stored as ``(c, False)``, so ``if g ... else ...`` and ``if g ...; if not g ...`` give the same
model. Conditions of if-equations and if-expressions are *long* guards (the mode lasts);
conditions of when-clauses are *transient* guards (true for one instant).

Source locations are kept for diagnostics but do not take part in equality, so the flat
Modelica and XML forms of a model compare equal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, Union

from . import expr as E
from .diagnostics import SourceLoc
from .functions import function_from_json, function_to_json
from .records import quick_init

VarType = Literal["Real", "Integer", "Boolean"]
Variability = Literal["constant", "parameter", "discrete", "continuous"]
Causality = Literal["input", "output", "local", "parameter"]
GuardKind = Literal["long", "transient"]


@quick_init
@dataclass(frozen=True, slots=True)
class Variable:
    """A declared scalar. ``start``/``nominal``/``min``/``max`` and ``binding`` are expressions
    (usually constants, possibly parameter expressions)."""
    name: str
    type: VarType = "Real"
    variability: Variability = "continuous"
    causality: Causality = "local"
    start: E.Expr | None = None
    fixed: bool | None = None
    nominal: E.Expr | None = None
    min: E.Expr | None = None
    max: E.Expr | None = None
    unit: str | None = None
    display_unit: str | None = None
    state_select: str | None = None
    description: str | None = None
    binding: E.Expr | None = None
    loc: SourceLoc | None = field(default=None, compare=False)
    #: the enumeration type of an Integer that holds an enumeration value (its literal's
    #: position, from 1); the type is one of `Model.enumerations`
    declared_type: str | None = None

    @property
    def is_unknown(self) -> bool:
        """Continuous or discrete time-varying variables (not parameters/constants/inputs)."""
        return self.variability in ("continuous", "discrete") and self.causality != "input"


@dataclass(frozen=True, slots=True)
class GuardLiteral:
    """One condition of an enclosing if-branch, taken positively or negatively."""
    cond: E.Expr
    positive: bool = True


Guard = tuple[GuardLiteral, ...]   # conjunction; the empty tuple means "always"


@quick_init
@dataclass(frozen=True, slots=True)
class Equation:
    """``0 = residual``, enabled when every literal of ``guard`` holds."""
    id: str
    residual: E.Expr
    guard: Guard = ()
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Reinit:
    """``reinit(var, value)`` inside a when-branch."""
    var: str
    value: E.Expr
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Assign:
    """A discrete equation ``var = value`` inside a when-branch."""
    var: str
    value: E.Expr
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Terminate:
    """``terminate(message)`` inside a when-branch."""
    message: str
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Assertion:
    """``assert(cond, message[, level])``; ``guard`` as for equations."""
    cond: E.Expr
    message: E.Expr
    level: str = "error"
    guard: Guard = ()
    loc: SourceLoc | None = field(default=None, compare=False)


Action = Union[Reinit, Assign, Terminate, Assertion]


@dataclass(frozen=True, slots=True)
class StringParameter:
    """A String parameter or constant with a literal value (issue 13): no stage but the FMU
    export sees it, which makes it an FMI 2.0 String variable (docs/fmi-mapping.md)."""
    name: str
    value: str
    constant: bool = False
    description: str | None = None
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class WhenBranch:
    """``when condition then actions`` (the first branch) or ``elsewhen condition then ...``."""
    condition: E.Expr
    actions: tuple[Action, ...]
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class WhenClause:
    id: str
    branches: tuple[WhenBranch, ...]
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True)
class GuardInfo:
    """A distinct guard condition of the model and its kind."""
    cond: E.Expr
    kind: GuardKind


#: The arguments of the ``experiment`` annotation the importers keep (Modelica 3.6 §18.4).
EXPERIMENT_KEYS = ("StartTime", "StopTime", "Tolerance", "Interval")


@dataclass(frozen=True)
class Model:
    name: str
    variables: tuple[Variable, ...] = ()
    equations: tuple[Equation, ...] = ()
    initial_equations: tuple[Equation, ...] = ()
    whens: tuple[WhenClause, ...] = ()
    assertions: tuple[Assertion, ...] = ()
    source: str | None = field(default=None, compare=False)
    #: the ``experiment`` annotation: ``(("StartTime", 0.0), ("StopTime", 10.0), ...)``, keys
    #: among EXPERIMENT_KEYS, in that order (docs/importers.md, "Annotations")
    experiment: tuple[tuple[str, float], ...] = ()
    #: user functions the equations call (`mdae_fmu.functions.Function`), in source order
    functions: tuple[Any, ...] = ()
    #: enumeration types: ((name, ((literal, description or None), ...)), ...), exported
    #: as FMI 2.0 <Enumeration> TypeDefinitions
    enumerations: tuple[tuple[str, tuple[tuple[str, str | None], ...]], ...] = ()
    #: String parameters and constants (`StringParameter`), in declaration order
    strings: tuple[StringParameter, ...] = ()

    @cached_property
    def var_index(self) -> dict[str, int]:
        """Position of each variable in ``variables``."""
        return {v.name: i for i, v in enumerate(self.variables)}

    def var(self, name: str) -> Variable:
        return self.variables[self.var_index[name]]

    @cached_property
    def if_conditions(self) -> tuple[tuple[E.Expr, ...], ...]:
        """The conditions of the if-expressions of each equation's residual, in walk
        (pre-)order, one tuple per equation of ``equations``: one walk of the residuals per
        model, shared by the stages that look for if-expressions."""
        out: list[tuple[E.Expr, ...]] = []
        append = out.append
        BinOp, UnOp, Der, Call, If = E.BinOp, E.UnOp, E.Der, E.Call, E.If
        none: tuple[E.Expr, ...] = ()
        for eq in self.equations:
            # `E.walk`'s pre-order, inlined: this runs over every node of every equation
            conds: list[E.Expr] = []
            stack: list[Any] = [eq.residual]
            pop, push = stack.pop, stack.append
            while stack:
                node = pop()
                t = type(node)
                if t is BinOp:
                    push(node.right)
                    push(node.left)
                elif t is UnOp or t is Der:
                    push(node.arg)
                elif t is Call:
                    stack.extend(reversed(node.args))
                elif t is If:
                    conds.append(node.cond)
                    push(node.orelse)
                    push(node.then)
                    push(node.cond)
            append(tuple(conds) if conds else none)
        return tuple(out)

    @cached_property
    def _guard_infos(self) -> tuple[GuardInfo, ...]:
        seen: dict[E.Expr, GuardKind] = {}
        for eq, conds in zip(self.equations, self.if_conditions):
            for lit in eq.guard:
                seen.setdefault(lit.cond, "long")
            for c in conds:
                seen.setdefault(c, "long")
        for w in self.whens:
            for b in w.branches:
                seen.setdefault(b.condition, "transient")
        return tuple(GuardInfo(cond=c, kind=k) for c, k in seen.items())

    def guards(self) -> list[GuardInfo]:
        """Distinct guard conditions in order of appearance: if-equation and if-expression
        conditions are long guards, when-conditions transient ones (ir module docstring)."""
        return list(self._guard_infos)

    # --- JSON ---------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "format": "mdae_fmu.model/1",
            "name": self.name,
            "variables": [_variable_to_json(v) for v in self.variables],
            "equations": [_equation_to_json(e) for e in self.equations],
            "initial_equations": [_equation_to_json(e) for e in self.initial_equations],
            "whens": [{"id": w.id, "loc": _loc_json(w.loc),
                       "branches": [{"condition": E.to_json(b.condition), "loc": _loc_json(b.loc),
                                     "actions": [_action_to_json(a) for a in b.actions]}
                                    for b in w.branches]} for w in self.whens],
            "assertions": [_action_to_json(a) for a in self.assertions],
            "experiment": dict(self.experiment),
            **({"functions": [function_to_json(f) for f in self.functions]}
               if self.functions else {}),
            **({"enumerations": [[n, [list(lit) for lit in lits]] for n, lits in self.enumerations]}
               if self.enumerations else {}),
            **({"strings": [[p.name, p.value, p.constant, p.description, _loc_json(p.loc)]
                            for p in self.strings]} if self.strings else {}),
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1)

    @staticmethod
    def from_json(j: dict[str, Any]) -> "Model":
        return Model(
            name=j["name"],
            variables=tuple(_variable_from_json(v) for v in j["variables"]),
            equations=tuple(_equation_from_json(e) for e in j["equations"]),
            initial_equations=tuple(_equation_from_json(e) for e in j["initial_equations"]),
            whens=tuple(
                WhenClause(
                    id=w["id"],
                    branches=tuple(
                        WhenBranch(
                            condition=E.from_json(b["condition"]),
                            actions=tuple(_action_from_json(a) for a in b["actions"]),
                            loc=_loc(b.get("loc")),
                        )
                        for b in w["branches"]
                    ),
                    loc=_loc(w.get("loc")),
                )
                for w in j["whens"]
            ),
            assertions=tuple(_assertion_from_json(a) for a in j["assertions"]),
            experiment=tuple(
                (k, float(j["experiment"][k]))
                for k in EXPERIMENT_KEYS
                if k in j.get("experiment", {})
            ),
            functions=tuple(function_from_json(f) for f in j.get("functions", ())),
            enumerations=tuple(
                (n, tuple(tuple(lit) for lit in lits)) for n, lits in j.get("enumerations", ())
            ),
            strings=tuple(
                StringParameter(name=n, value=v, constant=c, description=d, loc=_loc(loc))
                for n, v, c, d, loc in j.get("strings", ())
            ),
        )


# --- JSON helpers ---------------------------------------------------------------------------

_EXPR_ATTRS = ("start", "nominal", "min", "max", "binding")
_PLAIN_ATTRS = ("type", "variability", "causality", "fixed", "unit", "display_unit",
                "state_select", "description", "declared_type")


def _loc_json(loc: SourceLoc | None) -> list[Any] | None:
    return None if loc is None else [loc.file, loc.line, loc.col]


def _loc(j: Any) -> SourceLoc | None:
    return None if j is None else SourceLoc(j[0], j[1], j[2])


def _opt_expr(j: Any) -> E.Expr | None:
    return None if j is None else E.from_json(j)


def _variable_to_json(v: Variable) -> dict[str, Any]:
    d: dict[str, object] = {"name": v.name}
    d.update({a: getattr(v, a) for a in _PLAIN_ATTRS})
    d.update({a: None if getattr(v, a) is None else E.to_json(getattr(v, a)) for a in _EXPR_ATTRS})
    d["loc"] = _loc_json(v.loc)
    return d


def _variable_from_json(d: dict[str, Any]) -> Variable:
    # (the keywords are _PLAIN_ATTRS and _EXPR_ATTRS, which `_variable_to_json` writes)
    return Variable(name=d["name"], type=d["type"], variability=d["variability"],
                    causality=d["causality"], fixed=d.get("fixed"), unit=d.get("unit"),
                    display_unit=d.get("display_unit"), state_select=d.get("state_select"),
                    description=d.get("description"), declared_type=d.get("declared_type"),
                    start=_opt_expr(d["start"]), nominal=_opt_expr(d["nominal"]),
                    min=_opt_expr(d["min"]), max=_opt_expr(d["max"]),
                    binding=_opt_expr(d["binding"]), loc=_loc(d.get("loc")))


def _guard_to_json(g: Guard) -> list[Any]:
    return [[E.to_json(lit.cond), lit.positive] for lit in g]


def _guard_from_json(j: Any) -> Guard:
    return tuple(GuardLiteral(cond=E.from_json(c), positive=p) for c, p in j)


def _equation_to_json(e: Equation) -> dict[str, Any]:
    return {"id": e.id, "residual": E.to_json(e.residual), "guard": _guard_to_json(e.guard),
            "loc": _loc_json(e.loc)}


def _equation_from_json(d: dict[str, Any]) -> Equation:
    return Equation(d["id"], E.from_json(d["residual"]), _guard_from_json(d["guard"]),
                    _loc(d.get("loc")))


def _action_to_json(a: Action) -> dict[str, Any]:
    if isinstance(a, Reinit):
        return {"kind": "reinit", "var": a.var, "value": E.to_json(a.value),
                "loc": _loc_json(a.loc)}
    if isinstance(a, Assign):
        return {"kind": "assign", "var": a.var, "value": E.to_json(a.value),
                "loc": _loc_json(a.loc)}
    if isinstance(a, Terminate):
        return {"kind": "terminate", "message": a.message, "loc": _loc_json(a.loc)}
    return {"kind": "assert", "cond": E.to_json(a.cond), "message": E.to_json(a.message),
            "level": a.level, "guard": _guard_to_json(a.guard), "loc": _loc_json(a.loc)}


def _action_from_json(d: dict[str, Any]) -> Action:
    loc = _loc(d.get("loc"))
    kind = d["kind"]
    if kind == "reinit":
        return Reinit(var=d["var"], value=E.from_json(d["value"]), loc=loc)
    if kind == "assign":
        return Assign(var=d["var"], value=E.from_json(d["value"]), loc=loc)
    if kind == "terminate":
        return Terminate(message=d["message"], loc=loc)
    return _assertion_from_json(d)


def _assertion_from_json(d: dict[str, Any]) -> Assertion:
    return Assertion(
        cond=E.from_json(d["cond"]),
        message=E.from_json(d["message"]),
        level=d["level"],
        guard=_guard_from_json(d["guard"]),
        loc=_loc(d.get("loc")),
    )


def unknowns(model: Model) -> list[Variable]:
    """Time-varying variables the equations must determine (continuous and discrete)."""
    return [v for v in model.variables if v.is_unknown]
