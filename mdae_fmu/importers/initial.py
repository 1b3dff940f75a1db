"""Parameters with ``fixed = false`` computed by an initial equation (issue 13).

Modelica 3.6 §8.6: a parameter declared ``fixed = false`` is an unknown of the initialization
problem, constant afterwards. The form flat files use (OpenModelica's test
``IfEquation8``: ``parameter Boolean b(fixed = false); initial equation b = true;``) gives it an
explicit initial equation ``p = e`` (or ``e = p``) whose right side reads parameters and
constants only. Such an equation is the parameter's binding: the parameter becomes a
calculated parameter ``p = e`` (FMI 2.0 ``calculatedParameter``, computed in
``fmi2ExitInitializationMode``, not settable by the host) and the initial equation is removed,
so that every stage sees a parameter with a value: the analysis can evaluate a guard on it
(``if b then``) and a Boolean or Integer parameter needs no Newton iteration (which cannot solve
for a Boolean). The remaining initial equations are numbered again ``i1, i2, ...`` in source
order, as if the parameter had been declared with its binding.

A ``fixed = false`` parameter without such an equation (an implicit one, ``k * k = a``, or one
reading a variable) stays as it is: an unknown of the initial system, solved together with the
free states (`mdae_fmu.codegen.initialization`).
"""

from __future__ import annotations

import dataclasses

from .. import expr as E
from ..ir import Model, Variable


def _explicit(residual: E.Expr, free: set[str]) -> tuple[str, E.Expr] | None:
    """``(p, e)`` when ``residual`` is ``p - e`` or ``e - p`` with ``p`` in ``free``."""
    if type(residual) is not E.BinOp or residual.op != "-":
        return None
    for side, other in ((residual.left, residual.right), (residual.right, residual.left)):
        if type(side) is E.Ref and side.name in free:
            return side.name, other
    return None


def bind_free_parameters(model: Model) -> Model:
    """``model`` with each ``fixed = false`` parameter that an unguarded initial equation
    ``p = e`` defines from parameters and constants turned into the binding ``p = e``
    (module docstring). Parameters defined this way may read each other (in any order); a
    cycle keeps its equations."""
    free = {v.name for v in model.variables
            if v.variability == "parameter" and v.fixed is False and v.binding is None}
    if not free or not model.initial_equations:
        return model
    known = {v.name for v in model.variables
             if v.variability in ("parameter", "constant") and v.name not in free}
    found: dict[str, tuple[int, E.Expr]] = {}
    for k, eq in enumerate(model.initial_equations):
        hit = None if eq.guard else _explicit(eq.residual, free)
        if hit is not None and hit[0] not in found:
            found[hit[0]] = (k, hit[1])
    bound: dict[str, E.Expr] = {}
    changed = True
    while changed:                  # parameters bound in terms of other bound ones
        changed = False
        for name, (_, e) in found.items():
            if name not in bound and _reads_only(e, known | set(bound)):
                bound[name] = e
                changed = True
    if not bound:
        return model
    drop = {found[name][0] for name in bound}
    variables = tuple(dataclasses.replace(v, binding=bound[v.name], fixed=None)
                      if v.name in bound else v for v in model.variables)
    initial = tuple(dataclasses.replace(eq, id=f"i{n}") for n, eq in enumerate(
        (eq for k, eq in enumerate(model.initial_equations) if k not in drop), start=1))
    return dataclasses.replace(model, variables=variables, initial_equations=initial)


def _reads_only(e: E.Expr, names: set[str]) -> bool:
    """True when every name ``e`` reads is in ``names`` (no ``time``, ``der``, ``pre``)."""
    for node in E.walk(e):
        if isinstance(node, E.Ref) and node.name not in names:
            return False
        if isinstance(node, (E.Time, E.Der)) or (
                isinstance(node, E.Call) and node.func in ("pre", "edge", "change", "initial",
                                                           "sample")):
            return False
    return True


def is_free_parameter(v: Variable) -> bool:
    """True for a ``fixed = false`` parameter without a binding: an unknown of the initial
    system (`mdae_fmu.codegen.initialization`), constant afterwards."""
    return v.variability == "parameter" and v.fixed is False and v.binding is None


def unbound_free_parameters(model: Model) -> list[str]:
    """Names of the ``fixed = false`` parameters left without a binding (`is_free_parameter`),
    in declaration order."""
    return [v.name for v in model.variables if is_free_parameter(v)]
