"""The initial system solved in fmi2ExitInitializationMode.

docs/theory.md §8.5, §11: solve the consistency and solved parts of the initial mode with the
start values fixing the free states (initialization is left open by the papers). Decision
(docs/fmi-mapping.md, "Initialization"):

* rows: the consistency equations F^{<c} of the mode (f^(k), k < c_f: they involve states
  only), plus the model's initial equations. A multimode model (the guarded schedule) has
  the rows of every block variant, each selected by its activity flag
  (`mdae_fmu.codegen.guarded.guarded_initialization`): the mode the FMU starts in is the one
  its guards select at run time (an
  input or a parameter the host sets, a start value), not the one the start values select at
  export, and its consistency equations are the initial system's (a fixed state is never
  moved afterwards by the projection onto a constraint the initial system did not solve);
  an initial equation inside an if-equation
  (``initial equation if p then x = 1; else x = 2; end if;``) is the row
  ``if guard then residual else 0`` (`guarded_residual`): in the branch taken its rows are
  those of the branch, the others' rows vanish identically (zero rows, which the
  least-squares step ignores);
* unknowns: the states whose start value is not ``fixed=true``, and the Real parameters with
  ``fixed = false`` and no binding (Modelica 3.6 §8.6: unknowns of the initialization
  problem, constant afterwards; FMI ``calculatedParameter`` with ``initial="approx"``), each
  started from its start value, which the host may set (MSL 3.1 ``SaturatingInductor.Ipar``,
  determined by an implicit initial equation), and the discrete Reals (assigned in
  when-clauses) that an initial equation reads (`_free_discrete_slots`; ``pre`` reads the
  solved value afterwards). States with ``fixed=true`` keep their start value;
* solver (runtime ``mdae_gauss_newton``): damped Gauss-Newton from the start values with the
  minimum-norm step when the rows do not determine every free state, so free states move as
  little as possible from their start values; least squares (and an error unless the
  residual vanishes) when the rows over-determine them; when its normal matrix is singular
  (zero rows of the modes the FMU is not in, unknowns only those modes read, redundant
  rows), the minimum-norm step of the Jacobian's independent rows, and an error naming each
  dependent row that does not hold and the combination of the others it is (``labels``,
  `row_labels`). When it fails, the FMU logs each row that does not hold with its
  equation, source location, mode and the fixed start values it reads (`_descriptions`):
  fixed start values that violate a constraint of the initial mode over-determine the
  initialization (Modelica 3.6 §8.6), an error, never a move;
* the index-reduced system F^c (the schedule) then gives derivatives and algebraic
  variables; when an initial equation reads such a variable, each residual evaluation runs
  the schedule first and every free state is an unknown. The multimode rows run it too (the
  discrete equations select the mode, `InitPlan.mode_dependent`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sympy as sp

from .. import expr as E
from ..diagnostics import ModelRejected
from ..ir import Equation, Model
from .slots import Slot
from .plan import CompiledModel, fmi_name


@dataclass(frozen=True)
class InitPlan:
    rows: tuple[tuple[str, sp.Expr], ...]
    unknown_slots: tuple[int, ...]
    needs_compute: bool
    # (target slot, sympy value): `_initial_assignments`
    assignments: tuple[tuple[Slot, sp.Basic], ...] = ()
    # the rows read the mode (`mdae_fmu.codegen.guarded.guarded_initialization`): the
    # discrete equations and the mode's schedule run before each residual evaluation
    mode_dependent: bool = False
    # per row, what it is in words (the FMU's message when the row does not hold)
    descriptions: tuple[str, ...] = ()
    # per row, its equation and mode in short (`row_labels`: the message of dependent rows)
    labels: tuple[str, ...] = ()
    # the leading blocks solved before the whole system (`parameter_blocks`): per block,
    # its row indices and the Real slots of its unknowns
    blocks: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = ()


def plan_initialization(model: Model, cm: CompiledModel) -> InitPlan:
    """Rows and unknowns of the initial system (module docstring)."""
    rows = list(cm.consistency)
    residuals = [e for _, e in cm.consistency]
    params = _free_parameter_slots(model, cm)
    discrete = _free_discrete_slots(model, cm)
    assignments, equations = _initial_assignments(model, cm)
    for eq in equations:
        try:
            rows.append((eq.id, cm.table.to_sympy(guarded_residual(eq))))
        except (ValueError, TypeError) as err:
            raise ModelRejected(f"{_where(eq)}initial equation {eq.id}: {err}") from None
        residuals.append(rows[-1][1])
    needs_compute = False
    used = set()
    if residuals:       # (no row: no unknown, and nothing per variable to look at)
        fixed = {v.name for v in cm.variables if v.initial == "exact"}
        free_states = [s for s in cm.states if (s.variable or s.name) not in fixed]
        slot_of = {s.symbol: s.slot for s in cm.states} | params | discrete
        keys = set(slot_of)
        for e in residuals:
            syms = e.free_symbols
            if (syms & cm.continuous_symbols) - cm.state_symbols:    # a computed value
                needs_compute = True
            used |= {slot_of[sym] for sym in syms & keys}
        candidates = [s.slot for s in free_states] + list(params.values())
    else:
        slot_of, candidates = params | discrete, list(params.values())
    unknowns = candidates if needs_compute else [k for k in candidates if k in used]
    unknowns += [k for k in discrete.values() if k in used]
    return InitPlan(
        rows=tuple(rows),
        unknown_slots=tuple(sorted(unknowns)),
        needs_compute=needs_compute,
        assignments=assignments,
        descriptions=_descriptions(
            model, cm, rows, {s for s, k in slot_of.items() if k in unknowns}
        ),
        labels=row_labels(model, rows),
        blocks=parameter_blocks([e for _, e in rows], {
            sym: k for sym, k in params.items() if k in unknowns}),
    )


def parameter_blocks(residuals: Sequence[sp.Basic], params: dict[sp.Basic, int]
                     ) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
    """The leading blocks of the initial system's block-triangular form that hold only
    ``fixed = false`` parameters (``params``: symbol -> Real slot): the connected groups of
    rows that read no other unknown, computed value or state, with as many rows as
    parameters (a square block). No other row takes part in determining them (docs/theory.md
    §2.3: a block of the block-triangular order is solved before the blocks that read its
    unknowns), so the runtime solves each one first, alone, by a Newton iteration that scales
    its rows and columns (`init_block_newton` in templates/mdae_runtime.c; a block that is
    structurally or numerically singular fails there and is left to the whole system), then
    the whole system from there. MSL's lightning sources (DemonstrateLightning) compute
    five parameters of a double exponential from its rise and decay times: rows of size 1e5
    next to rows of size 1, which the whole system's unweighted Gauss-Newton does not solve.
    Returns ((row indices, slots), ...)."""
    groups: list[tuple[set[int], set[sp.Basic]]] = []     # (rows, parameter symbols)
    for i, e in enumerate(residuals):
        syms = e.free_symbols
        if not syms or not syms <= set(params):
            continue
        joined = [g for g in groups if g[1] & syms]
        rows, found = {i}, set(syms)
        for g in joined:
            rows |= g[0]
            found |= g[1]
            groups.remove(g)
        groups.append((rows, found))
    blocks = []
    for rows, found in groups:
        if len(rows) != len(found):
            continue
        blocks.append((tuple(sorted(rows)), tuple(sorted(params[s] for s in found))))
    return tuple(sorted(blocks))


def row_labels(model: Model, rows: Sequence[tuple[str, sp.Basic]]) -> tuple[str, ...]:
    """Per row of the initial system, ``equation e3 (file:line:col) of mode [g]``: how the
    FMU names the rows of a numerically dependent system that do not hold (runtime
    ``mdae_gauss_newton_rows``, the combination of the other rows each is)."""
    if not rows:
        return ()
    where = {eq.id: eq.loc for eq in tuple(model.equations) + tuple(model.initial_equations)}
    out = []
    for label, _ in rows:
        eq_label, _, mode = label.partition("@")
        loc = where.get(eq_label.rstrip("'").split("^", 1)[0])
        out.append(f"equation {eq_label}" + (f" ({loc})" if loc is not None else "")
                   + (f" of mode {mode}" if mode else ""))
    return tuple(out)


def _descriptions(model: Model, cm: CompiledModel, rows: Sequence[tuple[str, sp.Basic]],
                  unknown_symbols: set[sp.Basic]) -> tuple[str, ...]:
    """Per row of the initial system, its equation, where it is, the mode whose
    consistency equation it is and the ``fixed = true`` start values it reads: the FMU's
    message when the row does not hold at the end of the iteration (a fixed start value is an
    initial equation, Modelica 3.6 §8.6: fixed start values that violate a constraint of the
    initial mode over-determine the initialization)."""
    if not rows:
        return ()
    where = {eq.id: eq.loc for eq in tuple(model.equations) + tuple(model.initial_equations)}
    fixed = {v.name for v in cm.variables if v.initial == "exact"}
    state_name = {s.symbol: (s.variable or s.name) for s in cm.states}
    out = []
    for label, e in rows:
        eq_label, _, mode = label.partition("@")
        eq_id = eq_label.rstrip("'").split("^", 1)[0]
        loc = where.get(eq_id)
        text = f"equation {eq_label}" + (f" ({loc})" if loc is not None else "")
        if mode:
            text += f", a consistency equation of mode {mode}"
        elif any(eq_label == lab for lab, _ in cm.consistency):
            text += ", a consistency equation of the initial mode"
        text += " does not hold"
        starts = sorted({state_name[s] for s in e.free_symbols
                         if s in state_name and state_name[s] in fixed})
        if starts and not e.free_symbols & unknown_symbols:
            text += (f": with the fixed start values of {', '.join(starts)} (fixed = true: "
                     "initial equations) it over-determines the initialization; fix fewer "
                     "start values or give consistent ones")
        elif starts:
            text += f" (it reads the fixed start values of {', '.join(starts)})"
        out.append(text)
    return tuple(out)


def _initial_assignments(model: Model, cm: CompiledModel
                         ) -> tuple[tuple[tuple[Slot, sp.Basic], ...], list[Equation]]:
    """(assignments, the other initial equations): an unguarded initial equation
    ``v = expr`` of a discrete Integer or Boolean variable ``v`` that ``expr`` does not read
    (``pre(v)`` aside, the start value during initialization; an initial algorithm's
    ``(index, nextTime, y) := f(table, time, start)`` gives two) is an assignment made
    before the initial system is solved, in source order: Gauss-Newton moves Reals only, and
    such an equation determines its variable explicitly (Modelica 3.6 §8.6; the Modelica
    Standard Library's BooleanTable and IntegerTable start this way)."""
    assignments: list[tuple[Slot, sp.Basic]] = []
    rest: list[Equation] = []
    if not model.initial_equations:
        return (), rest
    kinds = {v.name: v for v in model.variables}
    for eq in model.initial_equations:
        lhs, rhs = E.split_residual(eq.residual)
        if not isinstance(lhs, E.Ref):
            rest.append(eq)
            continue
        v = kinds.get(lhs.name)
        if eq.guard or v is None or v.type not in ("Integer", "Boolean") \
                or v.variability != "discrete" \
                or lhs.name in E.refs(E.substitute(rhs, {E.Call("pre", (lhs,)): E.ZERO})):
            rest.append(eq)
            continue
        try:
            value = cm.table.to_sympy(rhs)
        except (ValueError, TypeError) as err:
            raise ModelRejected(f"{_where(eq)}initial equation {eq.id}: {err}") from None
        assignments.append((cm.variable_slot(lhs.name), value))
    return tuple(assignments), rest


def guarded_residual(eq: Equation) -> E.Expr:
    """The row of initial equation ``eq``: its residual, or for a guarded one
    ``if guard then residual else 0`` (module docstring)."""
    if not eq.guard:
        return eq.residual
    terms = [lit.cond if lit.positive else E.UnOp("not", lit.cond) for lit in eq.guard]
    cond = terms[0]
    for term in terms[1:]:
        cond = E.BinOp("and", cond, term)
    return E.If(cond, eq.residual, E.Const(0.0))


def _where(eq: Equation) -> str:
    return f"{eq.loc}: " if eq.loc is not None else ""


def _free_discrete_slots(model: Model, cm: CompiledModel) -> dict[sp.Basic, int]:
    """Symbol -> Real slot of each discrete Real variable (assigned in when-clauses) without
    ``fixed = true``: an unknown of the initial system where an initial equation reads it
    (Modelica 3.6 §8.6: ``initial equation nextTime = t0;`` sets the value that ``pre``
    reads after initialization; the when-equations are inactive then). The other discrete
    variables keep their start values."""
    slots = set(cm.discrete_real_slots)
    out: dict[sp.Basic, int] = {}
    if not slots:
        return out
    by_name = {fv.name: fv.vr for fv in cm.variables if fv.type == "Real"}
    for v in model.variables:
        if v.type != "Real" or v.variability != "discrete" or v.fixed:
            continue
        vr = by_name.get(fmi_name(v.name))
        if vr is not None and vr in slots:
            out[cm.table.sym(v.name, 0)] = vr
    return out


def _free_parameter_slots(model: Model, cm: CompiledModel) -> dict[sp.Basic, int]:
    """Symbol -> Real slot of each ``fixed = false`` parameter without a binding
    (`mdae_fmu.importers.initial.is_free_parameter`): an unknown of the initial system.
    Refused: such a parameter of type Integer or Boolean (Gauss-Newton moves Reals only),
    and one that the binding of a calculated parameter or a start value reads (those are
    computed once, before the initial system is solved)."""
    from ..importers.initial import unbound_free_parameters
    names = unbound_free_parameters(model)
    before = set()
    for _, e in tuple(cm.calculated_parameters) + tuple(cm.start_bindings):
        before |= e.free_symbols
    slots = {}
    for name in names:
        v = model.var(name)
        sym = cm.table.sym(name, 0)
        if v.type != "Real":
            reason = (f"it is {'an' if v.type == 'Integer' else 'a'} {v.type} and the "
                      "initial system is solved by Newton iteration over Reals")
        elif sym in before:
            reason = ("a parameter binding or a start value reads it, and those are "
                      "computed before the initial system")
        else:
            slots[sym] = next(fv.vr for fv in cm.variables
                              if fv.type == "Real" and fv.name == fmi_name(name))
            continue
        where = f"{v.loc}: " if v.loc is not None else ""
        raise ModelRejected(
            f"{where}parameter '{name}' has fixed = false and no initial equation "
            f"'{name} = <expression of parameters>', so the initial system must compute "
            f"it, which is not supported here: {reason}; give it a binding or such an "
            "equation")
    return slots
