"""The initial system solved in fmi2ExitInitializationMode.

Theory note 9334-theory-algorithms §3.6 (row "EnterInitializationMode / ExitInitializationMode":
"solve Gbar_Sig ∪ G_Sig of the initial mode with start values fixing the free states") and §7
item 7 (initialization is left open by the paper). Decision (docs/fmi-mapping.md,
"Initialization"):

* rows: the consistency equations F^{<c} of the mode (f^(k), k < c_f: they involve states
  only), plus the model's initial equations;
* unknowns: the states whose start value is not ``fixed=true``. States with ``fixed=true``
  keep their start value;
* solver (runtime ``mdae_gauss_newton``): damped Gauss-Newton from the start values with the
  minimum-norm step when the rows do not determine every free state, so free states move as
  little as possible from their start values; least squares (and an error unless the
  residual vanishes) when the rows over-determine them;
* the index-reduced system F^c (the schedule) then gives derivatives and algebraic
  variables; when an initial equation reads such a variable, each residual evaluation runs
  the schedule first and every free state is an unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..diagnostics import ModelRejected
from ..ir import Model
from .plan import CompiledModel


@dataclass(frozen=True)
class InitPlan:
    rows: tuple[tuple[str, sp.Expr], ...]
    unknown_slots: tuple[int, ...]
    needs_compute: bool


def plan_initialization(model: Model, cm: CompiledModel) -> InitPlan:
    """Rows and unknowns of the initial system (module docstring)."""
    rows = list(cm.consistency)
    for eq in model.initial_equations:
        if eq.guard:
            raise ModelRejected(f"initial equation {eq.id}: guarded initial equations are not "
                                f"supported")
        try:
            rows.append((eq.id, cm.table.to_sympy(eq.residual)))
        except (ValueError, TypeError) as err:
            raise ModelRejected(f"initial equation {eq.id}: {err}") from None
    fixed = {v.name for v in cm.variables if v.initial == "exact"}
    free_states = [s for s in cm.states if (s.variable or s.name) not in fixed]
    state_syms = {s.symbol: s for s in cm.states}
    computed = cm.continuous_symbols - cm.state_symbols
    needs_compute = False
    used = set()
    for _, e in rows:
        syms = e.free_symbols
        if syms & computed:
            needs_compute = True
        for sym in syms & set(state_syms):
            used.add(state_syms[sym].slot)
    if needs_compute:
        unknowns = [s.slot for s in free_states]
    else:
        unknowns = [s.slot for s in free_states if s.slot in used]
    return InitPlan(tuple(rows), tuple(sorted(unknowns)), needs_compute)
