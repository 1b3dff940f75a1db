"""The layout pieces of the guarded schedule's exporter (issue 26, Deliver 7): the variables
it adds after the model's in the union layout (`UnionLayout`: the hidden state vector
entries of the states of some modes only), the
left-limit guards kept in a band of the event hysteresis (`band_left_limit_relations`,
`watched_relations`, `band_updates`), the bound on the mode changes of one event iteration
(`max_mode_changes`) and the C files of the mode logic with the sizes ``config.h`` takes from
them (`ModeSources`).

Theory: docs/theory.md §11 (one state vector for all modes, a restart at a mode change, no
logico-numerical fixpoint for guards on left limits). Consumers: `mdae_fmu.codegen.guarded`
(the guarded block schedule) and the python backend (`mdae_fmu.fmu.python_backend`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import sympy as sp

from .cprinter import SlotPrinter
from .events import preorder
from .plan import CompiledModel, FmiVariable
from .slots import Slot, c_slot

if TYPE_CHECKING:
    from ..structure.per_mode import ModesReport
    from .cprinter import SlotValue

#: a left-limit guard kept in the hysteresis band: (its symbol, the relation, its hidden
#: Boolean slot)
Banded = tuple[sp.Symbol, sp.Expr, int]


@dataclass(frozen=True)
class ModeSources:
    """The multimode C files by name, and the sizes ``config.h`` takes from them: the most
    consistency equations of a mode, and the solver scratch sizes they need."""
    files: dict[str, str]
    ncons: int
    work: int
    perm: int


class UnionLayout:
    """The union layout (`compile_model` of the union of the modes) while the multimode
    exporter adds its own variables after the model's: names made unique against every name
    taken, Real slots numbered after the model's (module docstring)."""

    def __init__(self, union: CompiledModel) -> None:
        self.union = union
        self.taken = {v.name for v in union.variables}
        self.variables = list(union.variables)
        self.n_real = union.n_real
        self.real_names = list(union.real_names)
        self.states = list(union.states)
        self.guesses = dict(union.guesses)

    def fresh(self, name: str) -> str:
        """``name``, or ``name`` followed by underscores, not yet taken; now taken."""
        while name in self.taken:
            name += "_"
        self.taken.add(name)
        return name

    def hold_apart(self, positions: Iterable[int]) -> None:
        """Give the union states at ``positions`` (a mode computes them as algebraic
        variables) their hidden state vector entry, exposed as its own FMI state variable
        ``mdae_state(x)`` (`StatePlan.store`; docs/theory.md §11)."""
        variables = self.variables
        var_index = {v.name: k for k, v in enumerate(variables)}
        for k in positions:
            st = self.union.states[k]
            sname = self.fresh(f"mdae_state({st.name})")
            store = self.n_real
            self.n_real += 1
            self.real_names.append(sname)
            orig = variables[var_index[st.name]]
            variables.append(
                FmiVariable(
                    name=sname,
                    type="Real",
                    vr=store,
                    causality="local",
                    variability="continuous",
                    initial="calculated",
                    start=None,
                    description=f"state vector entry of {st.name} "
                    f"(frozen while a mode computes {st.name})",
                    kind=5,
                )
            )
            if isinstance(orig.start, (int, float)) and not isinstance(orig.start, bool):
                self.guesses[store] = float(orig.start)
            elif st.slot in self.guesses:
                self.guesses[store] = self.guesses[st.slot]
            self.states[k] = replace(st, name=sname, store=store, variable=st.name)
            variables = [replace(v, derivative_of=sname) if v.derivative_of == st.name else v
                         for v in variables]
            var_index = {v.name: j for j, v in enumerate(variables)}
        self.variables = variables


def max_mode_changes(n_modes: int) -> int:
    """Bound on the mode changes of one event iteration (`mdae_fmu.modes.event_iteration`):
    a cascade that settles visits a mode at most once, so more changes than modes is a cycle;
    at most a quarter of the wrapper's bound on event iterations (each change takes two
    calls), so that the error names the guards before the generic one fires."""
    from .emit import TOLERANCES
    bound = TOLERANCES["max_event_iterations"]
    assert isinstance(bound, int)       # MDAE_MAX_EVENT_ITERATIONS of templates/config.h.j2
    return max(2, min(n_modes, bound // 4))



def _pre_relations(pres: set[sp.Symbol], e: sp.Basic) -> Iterator[sp.Basic]:
    """The relations of ``e`` that read a left limit of ``pres``."""
    for rel in preorder(e):
        if isinstance(rel, sp.core.relational.Relational) and rel.free_symbols & pres:
            yield rel


def band_left_limit_relations(report: ModesReport, cm: CompiledModel
                              ) -> tuple[CompiledModel, tuple[Banded, ...]]:
    """A left-limit guard ``pre(s) <= 0`` read right after a restart that put ``s`` on its
    threshold (the rope that goes slack lies on the circle: ``s = 0`` up to rounding) must not
    flip back on rounding noise, else the event iteration cycles between the two modes. Such a
    relation keeps its previous value while its signed distance is within half the event
    hysteresis (the band in which the indicator cannot have crossed); the previous value is
    a hidden Boolean slot (docs/multimode-fmu.md, "Left-limit guards"). During initialization
    there is no previous value: pre(s) is s's start (Modelica 3.6 §8.6) and the relation is
    taken exactly (the charged diode bank's conducting diode starts at s = 0, on its
    threshold)."""
    banded: list[Banded] = []
    assigns: list[tuple[Slot, sp.Expr]] = []
    n_bool = cm.n_bool
    pres: set[sp.Symbol] = set()
    if cm.discrete_assignments:
        pres = {report.symbols.pre(n) for n in report.unknowns}
    for target, e in cm.discrete_assignments:
        subs = {}
        for rel in _pre_relations(pres, e):
            found = next((b for b in banded if b[1] == rel), None)
            if found is None:
                found = (sp.Symbol(f"mdae_band_{len(banded)}"), rel, n_bool)
                banded.append(found)
                n_bool += 1
            subs[rel] = found[0]
        assigns.append((target, e.xreplace(subs) if subs else e))
    if not banded:
        return cm, ()
    from .events import signed_distance
    p0 = SlotPrinter(dict(cm.slots), {}, {})
    slots: dict[sp.Basic, SlotValue] = dict(cm.slots)
    for sym, rel, b in banded:
        text = p0.doprint(signed_distance(rel)[0])
        slots[sym] = (f"(d->initial ? (({p0.doprint(rel)}) ? 1 : 0) : ({text}) > 0.5 * "
                      f"MDAE_HYSTERESIS ? 1 : ({text}) < -0.5 * MDAE_HYSTERESIS ? 0 : "
                      f"{c_slot(band_slot(b))})")
    return replace(cm, discrete_assignments=tuple(assigns), n_bool=n_bool,
                   slots=slots), tuple(banded)


def band_slot(b: int) -> Slot:
    """The hidden Boolean slot that keeps the previous value of a banded left-limit guard."""
    return Slot(array="b", index=b, name="band")


def band_updates(p: SlotPrinter, banded: Iterable[Banded]) -> list[str]:
    """C lines keeping each banded guard's value in its hidden Boolean (after the discrete
    equations of the instant)."""
    return [f"    {c_slot(band_slot(b))} = {p.symbol(sym)};" for sym, _, b in banded]


def watched_relations(report: ModesReport, banded: Iterable[Banded]) -> tuple[sp.Basic, ...]:
    """Left-limit guards (``g = pre(s) <= 0``, docs/theory.md §11: no logico-numerical
    fixpoint) only change at an event; the event is the crossing of the same relation on the
    continuous ``s``. The relations of ``banded`` (`band_left_limit_relations`) are returned
    on ``s`` (``s <= 0``) so that the event plan gives them an event indicator."""
    banded = tuple(banded)
    if not banded:
        return ()
    table = report.symbols
    back = {table.pre(n): table.sym(n, 0) for n in report.unknowns}
    return tuple(rel.xreplace(back) for _, rel, _ in banded)
