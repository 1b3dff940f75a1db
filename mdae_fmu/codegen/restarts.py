"""Restart code shared by the exporters: state restarts ``x+ = f(x-)`` of analysed mode changes.

docs/theory.md §11, §9 and docs/theory.md §7.4, §9.4, §9.6: at a mode
change the state is restarted by the *standardized* restart of the change, computed by the
multimode analysis (`mdae_fmu.modes.explore`), not by the literal reinit statements of the
model. A right-hand side is written over the left-limit symbols ``x-``, ``der(x)-`` and the
parameters; in the generated code ``x-`` reads the current value of ``x``, i.e. its left limit
at the instant (docs/multimode-fmu.md, "Restarts").

This module holds the parts both exporters need:

* `slot_names`, `left_printer`: the Real slot of every name a restart formula may use, and a
  printer of such formulas (names never reach C: every symbol is looked up here);
* `transient_restarts`, `with_transient_restarts`: for a single-mode model whose when-clauses
  re-initialize states, the
  standardized restart of the transient mode of each when-branch (the elastic Cup-and-Ball:
  the impact law reinitializes ``vy`` only, the analysed restart reflects both velocity
  components along the rope, docs/theory.md §7.4).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING

import sympy as sp

from .. import expr as E
from ..diagnostics import ModelRejected
from ..ir import Model, Reinit
from .cprinter import SlotPrinter
from .plan import CompiledModel, FmiVariable, der_name, fmi_name
from .slots import TIME, Slot

if TYPE_CHECKING:
    from ..modes.explore import Automaton
    from .cprinter import SlotValue


@dataclass(frozen=True)
class BranchRestart:
    """The standardized restart of the transient mode a when-branch enters: ``(slot, f(x-))``
    for every state it moves (identities dropped), in slot order; ``impulses``: ``(variable,
    num, den)``, the integral ``num/den`` over the instant of each impulsive variable of
    order 1 (over ``x-`` and ``x+``; `mdae_fmu.impulse.integrals`, computed by the analysis:
    `mdae_fmu.modes.explore.RestartInstant.integrals`)."""
    label: str
    targets: tuple[tuple[int, sp.Expr], ...]
    # (variable name, num, den) from `transient_restarts`; the variable's ``impulse(v)`` output
    # Real slot instead of its name after `with_transient_restarts`
    impulses: tuple[tuple[str | int, sp.Expr, sp.Expr], ...] = ()


class SlotNames(dict[str, int]):
    """`slot_names`: name -> Real slot index; ``other``: name -> `Slot` of the Integer and
    Boolean variables and parameters and of the left limits ``pre(n)`` of discrete
    variables, which a restart formula may read (a discrete ``n`` is a constant of the
    instant) but never restarts."""
    other: dict[str, Slot]


def slot_names(cm: CompiledModel) -> SlotNames:
    """Real slot of every name a restart formula may use: variables and parameters by name,
    derivative instances as ``der(x)``, ``der(der(x))`` and ``der(x,2)``; Integer and Boolean
    ones, and the left limits ``pre(n)``, in ``other`` (`SlotNames`)."""
    out = SlotNames()
    out.other = {}
    for sym, c in cm.slots.items():
        if type(c) is Slot and c.pre and c.array in ("i", "b", "r") \
                and cm.table.instance(sym) is None and sym.name.startswith("pre("):
            out.other.setdefault(sym.name, c)
        elif type(c) is Slot and c.array in ("i", "b") and not c.pre:
            inst = cm.table.instance(sym)
            if inst is None or inst[1] == 0:
                out.other.setdefault(sym.name if inst is None else inst[0], c)
    reals = [(sym, c.index) for sym, c in cm.slots.items() if type(c) is Slot and c.real]
    for sym, k in sorted(reals, key=lambda kv: kv[1]):
        inst = cm.table.instance(sym)
        if inst is None:
            out.setdefault(sym.name, k)
            continue
        nm, order = inst
        out.setdefault(der_name(nm, order), k)
        if order >= 2:
            out.setdefault(f"der({nm},{order})", k)
    return out


def base_name(sym: sp.Symbol) -> str:
    """``x`` for the left-limit symbol ``x-``, the right-limit symbol ``x+`` (and for a
    parameter ``x``)."""
    name: str = sym.name
    return name[:-1] if name.endswith(("-", "+")) else name


def check_left(e: sp.Expr, names: dict[str, int], what: str) -> sp.Expr:
    """Every symbol of a restart right-hand side must be a known slot name (``x-`` left
    limits, parameters); anything else is an internal error reported as a rejection."""
    for s in e.free_symbols:
        if base_name(s) not in names and base_name(s) not in getattr(names, "other", ()) \
                and s.name != "time":
            raise ModelRejected(f"{what}: restart formula {e}: unknown symbol {s.name}")
    return e


def is_identity(eq: sp.Basic) -> bool:
    """A restart equation ``x+ = x-``: nothing to assign, the value stays."""
    return bool(eq.rhs.is_Symbol and eq.rhs.name == str(eq.lhs)[:-1] + "-")


def restart_targets(eqs: Iterable[sp.Basic], names: dict[str, int], what: str,
                    only: Collection[int] | None = None) -> tuple[tuple[int, sp.Expr], ...]:
    """``(slot, f(x-))`` of the restart equations ``x+ = f(x-)`` whose target has a Real slot
    (one of ``only``, when given), identities dropped, in slot order; each right-hand side
    checked by `check_left` (``what`` names the restart in the error)."""
    out: list[tuple[int, sp.Expr]] = []
    for eq in eqs:
        lhs = str(eq.lhs)
        if not lhs.endswith("+"):
            continue
        k = names.get(lhs[:-1])
        if k is None or (only is not None and k not in only) or is_identity(eq):
            continue
        out.append((k, check_left(eq.rhs, names, what)))
    return tuple(sorted(out, key=lambda t: t[0]))


class LeftPrinter:
    """``lp(e)``: C text of a restart right-hand side, ``x-`` and parameters as their slot
    ``d->r[k]`` (the current values: the left limits at the instant); ``extra`` maps more
    symbols to their slot or C text. ``lp.real(k)`` is the `Slot` of Real ``k``, ``lp.names``
    the name table (`slot_names`)."""

    def __init__(self, cm: CompiledModel, names: dict[str, int]) -> None:
        self.cm = cm
        self.names = names

    def real(self, k: int) -> Slot:
        return self.cm.slot("r", k)

    def __call__(self, e: sp.Expr, extra: dict[sp.Basic, SlotValue] | None = None) -> str:
        names = self.names
        slots = dict(extra or {})
        for s in e.free_symbols:
            if s not in slots:
                n = base_name(s)
                other = getattr(names, "other", {})
                slots[s] = TIME if n == "time" and n not in names \
                    else other[n] if n not in names and n in other else self.real(names[n])
        return SlotPrinter(slots, {}, {}).doprint(e)


def left_printer(cm: CompiledModel, names: dict[str, int] | None = None) -> LeftPrinter:
    """The `LeftPrinter` of ``cm`` (``names``: by default `slot_names`)."""
    return LeftPrinter(cm, slot_names(cm) if names is None else names)


def print_over_instant(lp: LeftPrinter, e: sp.Expr, right: dict[int, str]) -> str:
    """C text of a formula over both limits of a restart instant (an impulse integral):
    ``x-`` and parameters as ``lp`` prints them (the current values), ``x+`` as the
    instant's new value when it moves ``x`` (``right``: slot -> C text of the value) and
    else as the current value ``d->r[k]``."""
    extra: dict[sp.Basic, SlotValue] = {}
    for sym in e.free_symbols:
        if sym.name.endswith("+"):
            k = lp.names[base_name(sym)]
            extra[sym] = right.get(k, lp.real(k))
    return lp(e, extra)


def has_reinit(model: Model) -> bool:
    return any(isinstance(a, Reinit) for w in model.whens for b in w.branches for a in b.actions)


def transient_restarts(model: Model, cm: CompiledModel, automaton: Automaton | None
                       ) -> dict[tuple[str, int], BranchRestart]:
    """``{(clause id, branch index): BranchRestart}`` for the when-branches of a single-mode
    model that re-initialize states (module docstring).

    The branch's transient guard is found as the normalization names it (the rising edge of its
    condition); the restart is the composed restart of the accepted mode change from the long
    mode into the transient mode where that guard alone is true. A branch keeps its literal
    reinit statements when the analysis rejects the model or the change, or when an instant of
    the change has no closed form (docs/multimode-fmu.md, "When-clauses")."""
    if not has_reinit(model) or automaton is None:
        return {}
    aut = automaton
    system = aut.system
    if system is None:
        return {}
    guards = system.guards
    long_idx = [k for k, g in enumerate(guards) if g.kind == "long"]
    names = slot_names(cm)
    state_slots = {s.slot for s in cm.states}
    out: dict[tuple[str, int], BranchRestart] = {}
    for w in model.whens:
        for bi, br in enumerate(w.branches):
            if not any(isinstance(a, Reinit) for a in br.actions):
                continue
            atom, pos = E.strip_not(br.condition)
            if not pos:
                continue
            atom = E.unedge(atom)
            gi = next((k for k, g in enumerate(guards)
                       if g.kind == "transient" and g.cond == atom), None)
            if gi is None:
                continue
            change = None
            for ch in aut.changes:
                if not ch.accepted or system.is_transient(ch.src):
                    continue
                on = {k for k, v in enumerate(ch.dst) if v and k not in long_idx}
                if on == {gi} and all(ch.src[k] == ch.dst[k] for k in long_idx):
                    change = ch
                    break
            if change is None or not change.restart \
                    or any(i.method == "S3" or not i.method for i in change.instants):
                continue
            targets = restart_targets(change.restart, names, f"when-clause {w.id}",
                                      state_slots)
            # the integrals of the instant that carries the restart, computed by the
            # analysis (`mdae_fmu.modes.explore.with_integrals`): code generation runs no
            # impulse analysis (issue 26 Deliver 1)
            impulses: list[tuple[str | int, sp.Expr, sp.Expr]] = []
            for var, num, den in change.instants[0].integrals:
                what = f"when-clause {w.id}, impulse of {var}"
                impulses.append((var, check_left(num, names, what),
                                 check_left(den, names, what)))
            out[(w.id, bi)] = BranchRestart(label=f"[{change.src_label}] -> [{change.dst_label}]",
                                            targets=targets, impulses=tuple(impulses))
    return out


def with_transient_restarts(model: Model, compiled: CompiledModel,
                            automaton: Automaton | None) -> CompiledModel:
    """``compiled`` with the reinit statements of its when-branches replaced by the analysed
    restarts of `transient_restarts` (``automaton``: the model's `Automaton`, from the one
    analysis of the export), the moved states marked ``reinit`` and one discrete output
    ``impulse(v)`` per impulsive variable (the integral over the last event of its clause)."""
    restarts = transient_restarts(model, compiled, automaton)
    if not restarts:
        return compiled
    moved = {k for r in restarts.values() for k, _ in r.targets}
    variables = [replace(v, reinit=True)
                 if v.type == "Real" and v.kind == 3 and v.vr in moved else v
                 for v in compiled.variables]
    # impulse(v): the integral of each impulsive variable over the last impact
    taken = {v.name for v in variables}
    names = list(compiled.real_names)
    outputs: dict[str | int, int] = {}
    for key in sorted(restarts):
        for var, _, _ in restarts[key].impulses:
            if var in outputs:
                continue
            iname = fmi_name(f"impulse({var})")
            while iname in taken:
                iname += "_"
            taken.add(iname)
            outputs[var] = len(names)
            names.append(iname)
            variables.append(
                FmiVariable(
                    name=iname,
                    type="Real",
                    vr=outputs[var],
                    causality="output",
                    variability="discrete",
                    initial="exact",
                    start=0.0,
                    description=f"integral of {var} over the last event of its when-clause",
                    kind=1,
                )
            )
    restarts = {k: replace(r, impulses=tuple((outputs[v], num, den)
                                             for v, num, den in r.impulses))
                for k, r in restarts.items()}
    compiled = replace(compiled, when_restarts=restarts, variables=tuple(variables),
                       real_names=tuple(names), n_real=len(names),
                       discrete_real_slots=compiled.discrete_real_slots
                       + tuple(sorted(outputs.values())))
    return compiled

