"""Structural parameters: conditions of the structure evaluated at export (issue 26).

Modelica lets an if-equation whose conditions are parameter expressions have branches with
different numbers of equations (MLS 3.6 §8.3.4); a tool can only translate it by evaluating
the condition at translation time, which OpenModelica and Dymola do (the parameter becomes
an evaluated, structural parameter). The MSL's support adapter is the typical case:
``if bearingConnected then 0 = flange_a.tau + flange_b.tau else 0 = flange_a.phi``. Kept as a
guard, such a condition doubles the modes, and a combination that the parameter's value
excludes can be singular (the MSL Gear with a backlash gap and a connected bearing leaves a
massless gear's angle without equation), which rejects a model the modeller wrote correctly.

The rule (docs/decisions.md §17): a condition atom that the pipeline's classification keeps
structural (`mdae_fmu.structure.conditionals.classify_conditionals`: it guards equations of
an if-equation, or selects if-expression branches of different incidence or orders) and
whose value follows from the parameters' and constants' values alone is replaced by that
value: equations guarded by a false literal are removed, true literals dropped, and the
if-expressions on it reduced to the selected branch. Every parameter the condition reads,
with those its value is computed from (bindings, transitively), becomes a constant of the
model, hence of the FMU (FMI 2.0 variability ``constant``: a host cannot set it, so the
structure compiled into the FMU cannot disagree with the value). A parameter computed at
initialization (``fixed = false``) or whose value cannot be evaluated leaves the condition
as it is (a guard). Conditions that do not change the structure keep their parameters
tunable.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import expr as E
from ..diagnostics import MdaeError
from ..ir import Equation, GuardLiteral, Model, Variable
from .conditionals import classify_conditionals, with_children
from .printing import expr_text


@dataclass(frozen=True)
class FixedParameter:
    """A parameter made a constant because a structural condition reads it: its value and
    the condition (``reason``: the condition, its value and the equation it came from)."""
    name: str
    value: float | bool
    reason: str

    @property
    def value_text(self) -> str:
        """The value as Modelica writes it (``false``, ``0.5``)."""
        return str(self.value).lower() if isinstance(self.value, bool) else repr(self.value)


@dataclass(frozen=True)
class FixedStructure:
    """``model`` with its parameter conditions evaluated (module docstring); ``parameters``
    the parameters made constants, empty (and ``model`` the input) when there was none."""
    model: Model
    parameters: tuple[FixedParameter, ...] = ()


def fix_structural_parameters(model: Model) -> FixedStructure:
    """Evaluate the structural conditions that read only parameters and constants, and make
    the parameters they read constants (module docstring). A variable bound to parameters by
    an equation (`parameter_bound_variables`: ``Real b2 = 0.5*b``) counts as a parameter
    when such a condition reads it: it becomes a constant too and its equation goes."""
    plain = _fix_parameters(model)
    read = set().union(*(E.refs(g.cond) for g in model.guards()))
    # (no condition reads anything, e.g. no guard at all: no bound variable can matter)
    bound = parameter_bound_variables(model) if read else {}
    if not read & bound.keys():
        return plain            # no condition reads one: the common case, analysed once
    trial = _fix_parameters(_promoted(model, bound))
    used = {p.name for p in trial.parameters} & bound.keys()
    if not used:
        return plain
    return _fix_parameters(_promoted(model, {n: bound[n] for n in used}))


#: calls whose value depends on the instant, not only on their arguments
_INSTANT_CALLS = frozenset({"pre", "edge", "change", "sample", "initial", "terminal",
                            "noEvent", "smooth", "delay", "random"})


def parameter_bound_variables(model: Model) -> dict[str, tuple[str, E.Expr]]:
    """The time-varying variables that an unguarded equation ``v = f(...)`` binds to
    parameters and constants only (directly or through other such variables), as
    ``name -> (equation id, f)``: their value cannot change in time, so a condition on them
    is a condition on parameters (docs/decisions.md §17). Excluded: inputs, states (``der(v)``
    occurs), variables a when-clause assigns or reinits, equations reading ``time``, a
    derivative or an operator of the instant (`_INSTANT_CALLS`)."""
    fixed = {v.name for v in model.variables if v.variability in ("parameter", "constant")}
    candidates = {v.name for v in model.variables if v.is_unknown}
    if not candidates:
        return {}
    for eq in model.equations:
        for node in E.walk(eq.residual):
            if isinstance(node, E.Der):
                candidates -= E.refs(node)
    for w in model.whens:
        for br in w.branches:
            for act in br.actions:
                target = getattr(act, "var", None)
                if target is not None:
                    candidates.discard(target)
    defs: dict[str, list[tuple[str, E.Expr]]] = {}
    for eq in model.equations:
        if eq.guard:
            continue
        split = _defined_by(eq.residual, candidates)
        if split is not None:
            defs.setdefault(split[0], []).append((eq.id, split[1]))
    single = {n: d[0] for n, d in defs.items() if len(d) == 1}
    bound: dict[str, tuple[str, E.Expr]] = {}
    changed = True
    while changed:              # at most len(single) rounds: each adds a variable or stops
        changed = False
        for name, (eq_id, rhs) in single.items():
            if name not in bound and E.refs(rhs) <= fixed | bound.keys():
                bound[name] = (eq_id, rhs)
                changed = True
    return bound


def _defined_by(residual: E.Expr, candidates: set[str]) -> tuple[str, E.Expr] | None:
    """``(v, f)`` when ``residual`` is ``v - f`` or ``f - v`` (or ``v`` alone: f = 0) with v a
    candidate that f does not read, and f free of time, derivatives and instant operators."""
    if isinstance(residual, E.Ref):
        return (residual.name, E.Const(0.0)) if residual.name in candidates else None
    if not (isinstance(residual, E.BinOp) and residual.op == "-"):
        return None
    for v, f in ((residual.left, residual.right), (residual.right, residual.left)):
        if isinstance(v, E.Ref) and v.name in candidates and v.name not in E.refs(f):
            if not any(isinstance(n, (E.Der, E.Time)) or
                       (isinstance(n, E.Call) and n.func in _INSTANT_CALLS)
                       for n in E.walk(f)):
                return v.name, f
    return None


def _promoted(model: Model, bound: dict[str, tuple[str, E.Expr]]) -> Model:
    """``model`` with the ``bound`` variables made parameters bound to their value and their
    equations removed."""
    gone = {eq_id for eq_id, _ in bound.values()}
    variables = tuple(replace(v, variability="parameter", causality="local", fixed=None,
                              binding=bound[v.name][1]) if v.name in bound else v
                      for v in model.variables)
    return replace(model, variables=variables,
                   equations=tuple(eq for eq in model.equations if eq.id not in gone))


def _fix_parameters(model: Model) -> FixedStructure:
    """`fix_structural_parameters` on the declared parameters and constants."""
    fixed_vars = {v.name: v for v in model.variables
                  if v.variability in ("parameter", "constant")}
    if not fixed_vars:
        return FixedStructure(model=model)
    # (imported here: a model without parameters never loads `mdae_fmu.modes`, issue 29)
    from ..modes.event_iteration import condition_value, parameter_values
    values = parameter_values(model)
    try:
        classes = classify_conditionals(model)
    except MdaeError:
        return FixedStructure(model=model)    # the per-mode stage reports it with its context
    chosen: dict[E.Expr, bool] = {}
    closure: dict[E.Expr, set[str]] = {}
    for atom in classes.structural:
        names = _parameter_closure(atom, fixed_vars)
        if names is None:
            continue
        value = condition_value(atom, values)
        if value is not None:
            chosen[atom] = value
            closure[atom] = names
    if not chosen:
        return FixedStructure(model=model)
    reasons: dict[str, str] = {}
    for atom in sorted(chosen, key=expr_text):
        eq_id, why = classes.why.get(atom, ("", "structural"))
        text = (f"{expr_text(atom)} is {str(chosen[atom]).lower()}: it {why}"
                + (f" (equation {eq_id})" if eq_id else ""))
        for name in sorted(closure[atom]):
            reasons.setdefault(name, text)
    fixed = tuple(FixedParameter(name=n, value=(bool(values[n]) if fixed_vars[n].type ==
                                                "Boolean" else values[n]), reason=reasons[n])
                  for n in reasons if fixed_vars[n].variability == "parameter")
    made_constant = {p.name for p in fixed}
    variables = tuple(replace(v, variability="constant") if v.name in made_constant else v
                      for v in model.variables)
    equations = []
    for eq, conds in zip(model.equations, model.if_conditions):
        kept = _evaluated_guard(eq.guard, chosen)
        if kept is None:
            continue
        residual = eq.residual
        if any(E.strip_not(c)[0] in chosen for c in conds):
            residual = _selected(residual, chosen)
        if kept != eq.guard or residual is not eq.residual:
            eq = Equation(id=eq.id, residual=residual, guard=kept, loc=eq.loc)
        equations.append(eq)
    new = replace(model, variables=variables, equations=tuple(equations))
    return FixedStructure(model=new, parameters=fixed)


def _parameter_closure(atom: E.Expr, fixed_vars: dict[str, Variable]) -> set[str] | None:
    """The parameters and constants ``atom`` reads, with those their bindings read
    (transitively); None when it reads anything else (an unknown, an input, ``time``
    through a call the evaluation refuses anyway) or a parameter computed at
    initialization (``fixed = false``)."""
    todo = list(E.refs(atom))
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        v = fixed_vars.get(name)
        if v is None or (v.variability == "parameter" and v.fixed is False):
            return None
        seen.add(name)
        value = v.binding if v.binding is not None else v.start
        if value is not None:
            todo.extend(E.refs(value))
    return seen


def _evaluated_guard(guard: tuple[GuardLiteral, ...], chosen: dict[E.Expr, bool]
                     ) -> tuple[GuardLiteral, ...] | None:
    """``guard`` without its literals on evaluated atoms; None when one of them is false
    (the equation does not exist)."""
    kept = []
    for lit in guard:
        atom, pos = E.strip_not(lit.cond)
        if atom in chosen:
            if chosen[atom] != (pos == lit.positive):
                return None
            continue
        kept.append(lit)
    return tuple(kept) if len(kept) != len(guard) else guard


def _selected(e: E.Expr, chosen: dict[E.Expr, bool]) -> E.Expr:
    """``e`` with the if-expressions on evaluated atoms replaced by their selected branch."""
    if isinstance(e, E.If):
        atom, pos = E.strip_not(e.cond)
        if atom in chosen:
            return _selected(e.then if chosen[atom] == pos else e.orelse, chosen)
    kids = E.children(e)
    return with_children(e, tuple(_selected(k, chosen) for k in kids)) if kids else e
