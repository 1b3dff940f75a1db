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
from ..modes.event_iteration import condition_value, parameter_values
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
    the parameters they read constants (module docstring)."""
    fixed_vars = {v.name: v for v in model.variables
                  if v.variability in ("parameter", "constant")}
    if not fixed_vars:
        return FixedStructure(model)
    values = parameter_values(model)
    try:
        classes = classify_conditionals(model)
    except MdaeError:
        return FixedStructure(model)    # the per-mode stage reports it with its context
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
        return FixedStructure(model)
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
    return FixedStructure(new, fixed)


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
