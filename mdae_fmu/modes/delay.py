"""Delayed guards written into the model: the code form of the event iteration.

A guard that reads, at the same instant, a value the equations it selects compute is
evaluated by event iteration (docs/theory.md §5.4, RR-9334 Def 33; `mdae_fmu.modes.event_iteration`
finds these guards on the normalized system). `delay_same_instant_guards` rewrites their
Boolean definitions so that each such read is ``pre(s)``, the value of the previous instant of
the cascade, which is what the code generator compiles."""

from __future__ import annotations

from dataclasses import replace

from .. import expr as E
from ..ir import Equation, Model
from ..structure.conditionals import with_children
from .event_iteration import delayed_guards
from .normalize import MultimodeSystem, bool_definitions, normalize


def _pre_of(e: E.Expr, names: frozenset) -> E.Expr:
    """``e`` with every same-instant reference to one of ``names`` replaced by ``pre(name)``
    (references already under ``pre`` are left alone)."""
    if isinstance(e, E.Ref):
        return E.Call("pre", (e,)) if e.name in names else e
    if isinstance(e, E.Call) and e.func == "pre":
        return e
    kids = E.children(e)
    return with_children(e, tuple(_pre_of(k, names) for k in kids)) if kids else e


def delay_same_instant_guards(model: Model, system: MultimodeSystem | None = None) -> Model:
    """``model`` with its delayed Boolean guards (`delayed_guards`) written as the cascade
    reads them: in the definition ``off = s < 0`` each same-instant read ``s`` becomes
    ``pre(s)`` (Def 33; module docstring), the meaning a ``pre(s)`` guard already has. The
    result has the same guards (names, modes, automaton) and is what the code generator
    compiles: the relation on ``pre(s)`` is re-evaluated at each instant of the event
    iteration from the previous instant's values, within a band against rounding, and its
    event indicator watches ``s`` (`mdae_fmu.codegen.guarded`).

    A condition written inline (``y = if w > 0 then w else 0``) is left as it is: it is a
    relation of the event plan, held during integration, watched by its indicator and
    re-evaluated at each call of the event iteration from the values of the previous instant
    (`mdae_update_relations` runs before the mode step), which is the same cascade without the
    band. The same model object is returned when nothing is rewritten. ``system``: the
    model's normalized system when already built (`Automaton.system`)."""
    if not any(g.kind == "long" for g in model.guards()):
        return model                # no guard: nothing to delay (and no normalization)
    if system is None:
        system = normalize(model)
    by_def: dict[str, frozenset] = {}
    for gi, names in delayed_guards(system).items():
        guard = system.guards[gi]
        if isinstance(guard.cond, E.Ref) and guard.definition != guard.cond:
            by_def[guard.cond.name] = frozenset(names)
    if not by_def:
        return model
    _, def_eqs = bool_definitions(model)
    equations = []
    for eq in model.equations:
        res = eq.residual
        if eq.id in def_eqs:
            lhs, rhs = E.split_residual(res)
            for side, other in ((lhs, rhs), (rhs, lhs)):
                if isinstance(side, E.Ref) and side.name in by_def:
                    res = E.residual(side, _pre_of(other, by_def[side.name]))
                    break
        equations.append(eq if res is eq.residual else Equation(eq.id, res, eq.guard, eq.loc))
    return replace(model, equations=tuple(equations))


__all__ = ["delay_same_instant_guards"]
