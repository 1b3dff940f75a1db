"""If-equations under ``noEvent``: the same equations, written as if-expressions.

An if-equation whose condition is not a parameter expression has the same number of
equations in every branch (Modelica 3.6 §8.3.4), and its k-th equation is, by the language's
definition, the k-th equation of whichever branch the condition selects: one equation
``0 = if c then r_then_k else r_else_k``. The importers keep an if-equation as guarded
equations, which makes its condition structural (it decides which equations exist) and hence
a mode (`mdae_fmu.structure.conditionals`); a mode change needs an event, which ``noEvent``
forbids. Written as if-expressions, the branches are compared by their incidence instead:
a condition whose branches read the same unknowns is then an ordinary piecewise expression,
as the modeller asked with ``noEvent``, and one whose branches differ stays structural and
is refused with the diagnosis of `conditionals._refuse_no_event`.
"""

from __future__ import annotations

from .. import expr as E
from ..ir import Equation


def _quiet(atom: E.Expr) -> bool:
    return any(type(n) is E.Call and n.func == "noEvent" for n in E.walk(atom))


def merge_quiet_if_equations(equations: tuple) -> tuple:
    """``equations`` with every balanced if-equation under ``noEvent`` merged into
    if-expressions (module docstring). Conditions are taken innermost first (in reverse order
    of first appearance), so ``elseif`` chains and nested if-equations merge from the inside
    out. Unbalanced branches are left as they are (the analysis then names the condition)."""
    atoms: dict[E.Expr, None] = {}
    for eq in equations:
        for lit in eq.guard:
            atom = E.strip_not(lit.cond)[0]
            if _quiet(atom):
                atoms.setdefault(atom, None)
    for atom in reversed(list(atoms)):
        equations = _merge_atom(equations, atom)
    return equations


def _merge_atom(equations: tuple, atom: E.Expr) -> tuple:
    """Pair the k-th equation guarded by ``atom`` with the k-th guarded by ``not atom`` (same
    remaining guard), for every remaining guard; the merged equation takes the place and the
    id of its then-equation."""
    groups: dict[tuple, tuple[list, list]] = {}
    for i, eq in enumerate(equations):
        lit = _literal_of(eq, atom)
        if lit is not None:
            rest = tuple(x for x in eq.guard if x is not lit)
            groups.setdefault(rest, ([], []))[0 if _positive(lit) else 1].append(i)
    merged: dict[int, Equation] = {}
    dropped: set[int] = set()
    for rest, (then, orelse) in groups.items():
        if len(then) != len(orelse):
            continue
        for i, j in zip(then, orelse):
            a, b = equations[i], equations[j]
            merged[i] = Equation(a.id, E.If(atom, a.residual, b.residual), rest, a.loc)
            dropped.add(j)
    if not merged:
        return equations
    return tuple(merged.get(i, eq) for i, eq in enumerate(equations) if i not in dropped)


def _literal_of(eq: Equation, atom: E.Expr):
    for lit in eq.guard:
        if E.strip_not(lit.cond)[0] == atom:
            return lit
    return None


def _positive(lit) -> bool:
    return lit.positive == E.strip_not(lit.cond)[1]


__all__ = ["merge_quiet_if_equations"]
