"""C code of the guarded block schedule of a multimode model (issue 17 Deliver 2-3): one
schedule for all modes, each block guarded by the formula of the modes in which it is a block,
and local restarts, without enumerating the modes. The schedule itself (block variants, their
formulas and restart systems) is part of the analysis (`mdae_fmu.implicit.schedule`); this
module lays it out and prints it.

Theory: docs/theory.md §10.2 (the "mDAE interpreter": blocks labelled by guard formulas),
docs/theory.md §11 (per-mode index-reduced system solved by blocks; restart at a
mode change); the rule for local restarts and its argument are in docs/decisions.md §9.

Plain-data stages:

* `plan_guarded(model, schedule)` -> `GuardedPlan`: the union layout (one slot per instance
  any mode uses, the states of some modes only held apart), the hidden slots of left limits,
  impulses, guard bits, activity and selection flags, and a `BlockPlan` per variant and per
  restart system; a variant of every mode is also planned as the per-mode planner plans the
  same block of a model of one mode (`steady_blocks`: tree solutions, tree blocks, tearing),
  and printed so.
* `generate_guarded_sources(plan, ev)` -> `ModeSources`: ``model_guarded_<k>.c`` (the guarded
  schedule), ``model_restarts.c`` (one restart function per block variant) and
  ``model_modes.c`` (guard bits, activity flags, the mode step: ``mdae_compute``,
  ``mdae_mode_step``, ``mdae_drift``, ``mdae_project``, called by the generic runtime).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypedDict

import sympy as sp

from ..implicit.schedule import (BlockRows, DeltaRestart, FormulaTable, GuardedSchedule,
                                 GuardedVariant, Selection, impulse_symbol, left_symbol)
from ..ir import Model
from ..structure.per_mode import (Block, Instance, LatentEquation, ModesReport,
                                  classify_variables, defines_discrete, symbol_table)
from ..symbolic import SymbolTable
from .block_code import BlockCode
from .blocks import BlockPlan, emit_block, gauss_newton_work, newton_work
from .cprinter import SlotPrinter, SlotValue, c_comment, c_string
from .events import EventPlan
from .initialization import InitPlan, plan_initialization
from .emit import UNIT_BYTES, discrete_code, make_printers, template_environment
from .layout import Banded, ModeSources, UnionLayout, band_left_limit_relations, band_updates, \
    max_mode_changes, watched_relations
from .plan import CompiledModel, FmiVariable, compile_model
from .runs import ShapeKey, affine, find_runs, run_code, shape
from .slots import Slot, c_slot, solved_tag

MODE_VARIABLE = "mdae_mode"
BLOCKS_PER_FUNCTION = 200
BLOCKS_PER_FILE = 1000


@dataclass(frozen=True)
class GuardedBlock:
    """One block variant of the schedule (`mdae_fmu.implicit.schedule.GuardedVariant`) as code
    generation compiles it: ``plan`` solved in the modes of ``formula`` (a node of the
    schedule's `FormulaTable`); ``restart`` its restart system (a `BlockPlan` over the restart
    unknowns), ``writes`` the variables it moves, ``reads`` the variables whose jump or
    impulse enters its restart."""
    plan: BlockPlan
    formula: int
    restart: BlockPlan | None
    writes: tuple[int, ...]
    reads: tuple[int, ...]
    origin: tuple[Any, ...] = ()   # (equations, unknowns) of the `ConditionalBlock` it refines
    merged: bool = False     # one block for a whole component (`mdae_fmu.implicit.merged`):
    #                          its equations change with the mode, so it restarts at every change
    cons: tuple[sp.Expr, ...] = ()   # its consistency equations F^{<c}, which hold in its
    #                          modes: the rows of the drift and of the projection
    sel: Selection | None = None     # a merged block's mode-selected unknowns and rows
    delta: DeltaRestart | None = None    # the restart without closed form, by the delta-scheme
    # factors of the restart's determinant, (text, D, scale) (`BlockRows.singular`)
    singular: tuple[tuple[str, sp.Expr, sp.Expr], ...] = ()
    levels: tuple[BlockRows, ...] = ()   # the lower levels of its restart, solved first
    #                          (`BlockRows.levels`: constraints on positions)
    # a block of every mode (`steady_blocks`): the blocks the per-mode planner solves it by
    # (`compile_model`: on the tree, torn, ...), printed in its place; empty: ``plan`` itself
    pieces: tuple[BlockPlan, ...] = ()


@dataclass(frozen=True)
class GuardedPlan:
    compiled: CompiledModel
    guards: tuple[sp.Expr, ...]          # the guard atoms (bit k = guard k)
    guard_names: tuple[str, ...]
    blocks: tuple[GuardedBlock, ...]
    table: FormulaTable
    mode_slot: int                       # Integer slot of mdae_mode
    bits_slot: int                       # first Integer slot of the guard bits
    active_slot: int                     # first Integer slot of the block activity flags
    left: dict[int, int]                 # state slot -> slot of its left limit
    impulse: dict[str, int]              # variable name -> slot of its integral ζ
    extra_slots: dict[sp.Symbol, int]    # restart symbols (X-, ζ) -> Real slot
    # per variable id: (state slot, left slot, ζ slot), -1 where it has none
    var_slots: tuple[tuple[int, int, int], ...]
    n_modes: int
    watched: tuple[sp.Basic, ...] = ()   # relations on x whose guards read pre(x)
    banded: tuple[Banded, ...] = ()      # (symbol, relation on pre(x), Boolean slot)
    # the states of some modes only: (formula node, slot, store slot or -1, derivative
    # slot); activity flag k at d->i[active_slot + len(blocks) + k]
    cond_states: tuple[tuple[int, int, int, int], ...] = ()
    # the selection flags of merged blocks (`mdae_fmu.implicit.merged`): their formulas (nodes
    # of ``table``); flag k at d->i[active_slot + len(blocks) + len(cond_states) + k]
    flag_roots: tuple[int, ...] = ()

    @property
    def steady_states(self) -> frozenset[sp.Basic]:
        """The symbols of the states of every mode (not `cond_states`): their derivative slot
        is their rate at every instant (`mdae_fmu.codegen.events.relation_rate`)."""
        conditional = {c[1] for c in self.cond_states}
        return frozenset(st.symbol for st in self.compiled.states
                         if st.slot not in conditional)


def _hold_apart(union: CompiledModel, positions: Sequence[int]) -> CompiledModel:
    """The union layout with the state vector entries of the states at ``positions`` (in
    ``union.states``) held apart from their variables: the states of some modes only
    (`GuardedSchedule.cond_states`). Where such a state is not one, a block computes the
    variable as an algebraic unknown, so its entry is frozen (derivative 0) in a hidden slot
    (`UnionLayout.hold_apart`, as the enumerating exporter does); where it is one, the
    variable takes the entry's value. Theory: docs/theory.md §11 (one state vector
    for all modes)."""
    if not positions:
        return union
    layout = UnionLayout(union)
    layout.hold_apart(list(positions))
    return replace(union, variables=tuple(layout.variables), n_real=layout.n_real,
                   real_names=tuple(layout.real_names), states=tuple(layout.states),
                   guesses=layout.guesses)


def _union_report(model: Model, sched: GuardedSchedule, table: SymbolTable,
                  steady: Sequence[tuple[Block, list[LatentEquation]]] = ()) -> ModesReport:
    """A `ModesReport` of one synthetic mode holding the union layout and, as its blocks,
    the ``steady`` blocks (`steady_blocks`: those of every mode, which `compile_model` plans
    as a single-mode model's; the other block variants are compiled here)."""
    from types import SimpleNamespace
    cls = classify_variables(model)
    mode = SimpleNamespace(name="union", states=sched.states, leading=sched.leading,
                           blocks=tuple(b for b, _ in steady),
                           solved=tuple(le for _, les in steady for le in les),
                           consistency=())
    disc = tuple(eq.id for eq in model.equations if defines_discrete(eq, cls))
    modes: Any = (mode,)  # the fields of `ModeAnalysis` that `compile_model` reads
    return ModesReport(
        model_name=model.name,
        long_guards=sched.guard_names,
        guard_exprs=sched.guards,
        symbols=table,
        modes=modes,
        unknowns=tuple(cls.continuous),
        exit_code=0,
        messages=(),
        discrete_equations=disc,
        discrete=tuple(cls.discrete),
        inputs=tuple(cls.inputs),
    )


def _offsets_of(label: str, equations: Sequence[str]) -> list[int] | None:
    """The offset c of each of ``equations`` in a variant's label, which writes each with c
    primes (``e3+e4'``, `mdae_fmu.implicit.variants`), or None when the label is not that."""
    parts = label.split("+")
    if len(parts) != len(equations):
        return None
    out = []
    for e, part in zip(equations, parts):
        rest = part[len(e):]
        if not part.startswith(e) or rest != "'" * len(rest):
            return None
        out.append(len(rest))
    return out


def _instance_of(u: sp.Basic, name: str, table: SymbolTable) -> tuple[str, int] | None:
    """The instance ``(name, order)`` that the analysis' symbol ``u`` of variable ``name``
    stands for (named ``x``, ``der(x)``, ``der(x,k)`` as `SymbolTable.sym` names them), when
    ``table`` gives it the same symbol; else None."""
    text = getattr(u, "name", None)     # (a symbol's name: no printer)
    if not isinstance(text, str):
        return None
    if text == name:
        order = 0
    elif text == f"der({name})":
        order = 1
    elif text.startswith(f"der({name},") and text.endswith(")") \
            and text[len(name) + 5:-1].isdigit():
        order = int(text[len(name) + 5:-1])
    else:
        return None
    return (name, order) if table.sym(name, order) == u else None


def steady_blocks(model: Model, sched: GuardedSchedule, table: SymbolTable
                  ) -> dict[int, tuple[Block, list[LatentEquation]]]:
    """The block variants of ``sched`` that run in every mode as they are (formula true, not
    merged, no mode-selected unknown), by index, each as a block of the BTF of one mode
    with its latent equations (issue 26, Deliver 6-7): code generation plans them with the
    per-mode planner (`compile_model`: an undifferentiated equation solved on its tree,
    small blocks of plain equations on their trees, Newton blocks torn), as it plans the
    same block of a model of one mode; one planner then decides how a block is solved.
    Theory: docs/theory.md §11 (the per-mode schedule), §10.2 (a block of every mode is a
    block of each mode). An equation without if-expressions and not differentiated keeps its
    expression tree (the model's residual, the analysis' row when they agree); a variant
    whose unknowns are not all instances of the union layout is left to `_block_plan`."""
    layout = {(i.name, i.order) for i in (*sched.states, *sched.leading)}
    by_id = {eq.id: (eq, bool(ifs)) for eq, ifs in zip(model.equations, model.if_conditions)}
    out: dict[int, tuple[Block, list[LatentEquation]]] = {}
    seen: set[str] = set()
    for k, v in enumerate(sched.variants):
        if v.formula != -1 or v.merged or v.sel is not None or len(v.origin) != 2:
            continue
        rows, ids = v.block, tuple(v.origin[0])
        offsets = _offsets_of(rows.label, ids)
        insts = [_instance_of(u, n, table) for u, n in zip(rows.unknowns, v.origin[1])]
        if offsets is None or seen.intersection(ids) or any(
                i is None or (i[1] > 0 and i not in layout) for i in insts):
            continue
        if rows.tree is not None and len(ids) == 1 and offsets == [0]:
            solved = [LatentEquation(ids[0], 0, residual=rows.tree, table=table)]
        elif len(rows.rows) == len(ids):
            solved = []
            for e, c, row in zip(ids, offsets, rows.rows):
                eq, has_if = by_id.get(e, (None, True))
                tree = eq.residual if eq is not None and c == 0 and not has_if else None
                if tree is not None and table.to_sympy(tree) == row:
                    solved.append(LatentEquation(e, 0, row, residual=tree, table=table))
                else:
                    solved.append(LatentEquation(e, c, row))
        else:
            continue
        seen.update(ids)
        out[k] = (Block(equations=list(zip(ids, offsets)),
                        unknowns=[Instance(name=i[0], order=i[1]) for i in insts if i]),
                  solved)
    return out


def _pieces(planned: Sequence[BlockPlan], steady: Iterable[int],
            variants: Sequence[GuardedVariant]) -> dict[int, tuple[BlockPlan, ...]]:
    """The blocks `compile_model` planned for each of the ``steady`` variants (in their
    order; a torn variant is several, whose unknowns are the variant's)."""
    out = {}
    at = 0
    for k in steady:
        want = set(variants[k].block.unknowns)
        got: list[BlockPlan] = []
        n = 0
        while n < len(want) and at < len(planned):
            got.append(planned[at])
            n += len(planned[at].unknowns)
            at += 1
        if {u for b in got for u in b.unknowns} != want:
            raise ValueError(f"internal: the per-mode plan of block {variants[k].block.label} "
                             f"does not solve its unknowns")
        out[k] = tuple(got)
    return out


def _singular_checks(gb: GuardedBlock, printer: SlotPrinter) -> list[str]:
    """C statements returning 1 with a logged message when a factor of the restart system's
    determinant vanishes numerically (`BlockRows.singular`); `mdae_mode_step` then names the
    mode change, as guard valuations before and after, and the block's equations."""
    out = []
    for text, den, scale in gb.singular:
        out.append(f"    {{\n        const double den = {printer.doprint(den)}, scale = "
                   f"{printer.doprint(scale)};\n"
                   f"        if (!(fabs(den) > 1e-13 * scale)) {{\n"
                   f"            mdae_log(inst, LOG_ERROR, fmi2Error, \"t = %.17g: restart of "
                   f"the block of equations %s: the restart system is numerically singular "
                   f"(%s)\", "
                   f"d->time, {c_string(gb.plan.label)}, "
                   f"{c_string(text)});\n            return 1;\n        }}\n    }}")
    return out


def _block_plan(rows: BlockRows, table: SymbolTable) -> BlockPlan:
    """The `BlockPlan` of a block of the schedule: on the expression tree when it is one
    undifferentiated equation (`mdae_fmu.codegen.blocks.emit_block` solves it there when it
    can), else its sympy rows."""
    if rows.tree is not None:
        # the unknowns as the layout's own symbols (equal to the analysis' ones): the slot
        # and instance tables then find them by identity, without sympy's comparison
        own = tuple(table.sym(*inst) if inst is not None else u
                    for u, inst in ((u, table.instance(u)) for u in rows.unknowns))
        return BlockPlan(label=rows.label, unknowns=own, _residuals=None, tree=rows.tree,
                         table=table)
    return BlockPlan(label=rows.label, unknowns=rows.unknowns, _residuals=rows.rows)


def _restarts(model: Model, sched: GuardedSchedule) -> bool:
    """Whether something in ``sched`` can restart: a guard (a mode change), a reinit, a
    variant with a restart system. Otherwise (a model without guards or reinits, its blocks
    steady, docs/theory.md §10.8) no left limit or impulse is ever read and the layout has
    no slot for them."""
    from ..ir import Reinit
    return bool(sched.guards or sched.cond_states
                or sched.impulse_outputs
                or any(v.restart is not None or v.delta is not None or v.merged
                       for v in sched.variants)
                or any(isinstance(a, Reinit) for w in model.whens for br in w.branches
                       for a in br.actions))


def plan_guarded(model: Model, sched: GuardedSchedule) -> GuardedPlan:
    """Union layout, slots and block plans of the guarded schedule ``sched`` (module
    docstring): the analysis made the schedule, this only lays it out (a transient guard
    selects no equation of it, `mdae_fmu.implicit.variants.check_transient_equations`)."""
    table = symbol_table(model)
    steady = steady_blocks(model, sched, table)
    report = _union_report(model, sched, table, list(steady.values()))
    union = compile_model(model, report)
    pieces = _pieces(union.blocks, steady, sched.variants)
    union = replace(union, blocks=())
    union = _hold_apart(union, [k for k, _ in sched.cond_states])
    state_slot = {s.symbol: s.slot for s in union.states}
    slot_of_state = [state_slot[table.sym(i.name, i.order)] for i in sched.states]

    # --- hidden slots: left limits, impulses, mode, guard bits, activity flags
    n_real = union.n_real
    real_names = list(union.real_names)
    left = {}
    restarts = _restarts(model, sched)
    for s in union.states if restarts else ():
        left[s.slot] = n_real
        real_names.append(f"mdae_left({s.name})")
        n_real += 1
    # ζ, the integral over the instant of a variable that some mode computes algebraically;
    # those that can be nonzero are the outputs impulse(v) (docs/multimode-fmu.md, "Impulses")
    taken = {v.name for v in union.variables}
    outputs = []
    impulse = {}
    for n in sched.impulsive if restarts else ():     # (a model without states restarts too)
        impulse[n] = n_real
        if n in sched.impulse_outputs:
            oname = _fresh(f"impulse({n})", taken)
            outputs.append(FmiVariable(
                name=oname, type="Real", vr=n_real, causality="output", variability="discrete",
                initial="exact", start=0.0, description=f"integral of {n} over the last mode "
                "change", kind=1))
            real_names.append(oname)
        else:
            real_names.append(f"mdae_impulse({n})")
        n_real += 1
    var_id = {n: k for k, n in enumerate(sched.variables)}
    blocks = tuple(
        GuardedBlock(
            plan=_block_plan(v.block, table),
            formula=v.formula,
            restart=None if v.restart is None else _block_plan(v.restart, table),
            writes=v.writes,
            reads=v.reads,
            origin=v.origin,
            merged=v.merged,
            cons=v.cons,
            sel=v.sel,
            delta=v.delta,
            singular=() if v.restart is None else v.restart.singular,
            levels=() if v.restart is None else v.restart.levels,
            pieces=pieces.get(k, ()),
        )
        for k, v in enumerate(sched.variants)
    )
    proxy_slots = {}
    for sym in sched.proxies + sched.rproxies:
        proxy_slots[sym] = n_real
        real_names.append(f"mdae_proxy({sym})")
        n_real += 1

    # --- FMI variables and slots
    mode_slot = union.n_int
    bits_slot = mode_slot + 1
    bits = [sp.Symbol(f"mdae_bit_{k}") for k in range(len(sched.guards))]
    name = _fresh(MODE_VARIABLE, taken)
    active_slot = bits_slot + len(sched.guards)
    flag_slot = active_slot + len(blocks) + len(sched.cond_states)
    n_int = flag_slot + len(sched.flags)
    variables = list(union.variables)
    variables.append(FmiVariable(
        name=name, type="Integer", vr=mode_slot, causality="output", variability="discrete",
        initial="exact", start=0, description=mode_description(sched), kind=1))
    variables.extend(outputs)
    slots = dict(union.slots)
    slots.update(
        {b: Slot(array="i", index=bits_slot + k, name=f"guard {k}") for k, b in enumerate(bits)}
    )
    slots.update({sym: Slot(array="i", index=flag_slot + k, name=f"selection {k}")
                  for k, (sym, _) in enumerate(sched.flags)})
    slots.update(
        {sym: Slot(array="r", index=proxy_slots[sym], name=str(sym)) for sym in sched.proxies}
    )
    # the activity flags that consistency rows read (`_initial_consistency`)
    active = {k: sp.Symbol(f"mdae_active_{k}") for k, v in enumerate(sched.variants) if v.cons}
    slots.update({a: Slot(array="i", index=active_slot + k, name=f"block {k} active")
                  for k, a in active.items()})
    compiled = replace(union, blocks=tuple(_structural(b) for b in blocks),
                       consistency=_initial_consistency(sched, active),
                       variables=tuple(variables), n_int=n_int, n_real=n_real,
                       real_names=tuple(real_names), dependencies={}, slots=slots,
                       discrete_real_slots=union.discrete_real_slots
                       + tuple(v.vr for v in outputs))
    guards = tuple(table.to_sympy(a) for a in sched.guards)
    # guards on left limits (pre(s) <= 0): banded and watched as in the per-mode exporter
    compiled, banded = band_left_limit_relations(report, compiled)
    extra = {left_symbol(k): left[s] for k, s in enumerate(slot_of_state) if s in left}
    extra.update({impulse_symbol(var_id[n]): impulse[n] for n in impulse})
    extra.update({sym: proxy_slots[sym] for sym in sched.rproxies})
    dmax = {n: 0 for n in sched.variables}
    for i in sched.states:
        dmax[i.name] = max(dmax[i.name], i.order + 1)
    var_slots = []
    for n in sched.variables:
        slot = state_slot[table.sym(n, dmax[n] - 1)] if dmax[n] >= 1 else -1
        var_slots.append((slot, left.get(slot, -1), impulse.get(n, -1)))
    by_slot = {s.slot: s for s in compiled.states}
    activity = []
    for k, r in sched.cond_states:
        st = by_slot[union.states[k].slot]
        activity.append((r, st.slot, -1 if st.store is None else st.store, st.der_slot))
    return GuardedPlan(
        compiled=compiled,
        guards=guards,
        guard_names=sched.guard_names,
        blocks=blocks,
        table=sched.table,
        mode_slot=mode_slot,
        bits_slot=bits_slot,
        active_slot=active_slot,
        left=left,
        impulse=impulse,
        extra_slots=extra,
        var_slots=tuple(var_slots),
        n_modes=sched.n_modes,
        watched=watched_relations(report, banded),
        banded=banded,
        cond_states=tuple(activity),
        flag_roots=tuple(r for _, r in sched.flags),
    )


#: guards up to which the description of the mode variable lists the modes (2^12 valuations
#: tested, as many modes as the explicit enumeration lists)
MAX_LISTED_GUARDS = 12

#: the restart of block variant k as `_restarts_file` prints it: ``(k, code, statements
#: before, statements after, what it solves)``; the code is the solve of its restart system
#: or, for a restart without closed form, the whole C text of its delta-scheme (`_delta_code`)
Restart = tuple[int, BlockCode | str, list[str], list[str], str]


class ConsistencyRows(TypedDict):
    """The consistency rows of block variant ``k`` as ``model_guarded.c.j2`` prints them
    (`_consistency_context`): ``(condition, residual)`` C text and the states they read."""
    k: int
    states: list[int]
    rows: list[tuple[str, str]]


def mode_description(sched: GuardedSchedule) -> str:
    """The description of the FMU's mode variable: what its value means and, with at most
    `MAX_LISTED_GUARDS` guards, its consistent modes as the per-mode FMU lists its own,
    ``N = [g1,not g2]`` with N the guard bits as a number (the modes of
    `GuardedSchedule.modes`), after the one colon that ``mdae-fmu info`` reads
    (`mdae_fmu.info.modes`); beyond, their number."""
    ng = len(sched.guards)
    if ng > 30:
        return (f"current mode, the count of mode changes ({sched.n_modes} modes over {ng} "
                f"guards, too many to number by their guard bits)")
    head = "current mode, the guard bits as a number (bit k = guard k)"
    if ng > MAX_LISTED_GUARDS:
        return f"{head}, {sched.n_modes} modes"
    legend = []
    for number in range(1 << ng):
        bits = [bool(number >> k & 1) for k in range(ng)]
        if sched.table.holds(sched.modes, bits):
            label = ",".join(n if b else f"not {n}" for n, b in zip(sched.guard_names, bits))
            legend.append(f"{number} = [{label}]")
    return f"{head}: " + ", ".join(legend)


def _initial_consistency(sched: GuardedSchedule, active: Mapping[int, sp.Symbol]
                         ) -> tuple[tuple[str, sp.Expr], ...]:
    """The consistency equations F^{<c} of the initial mode, rows of the initial system with
    the fixed start values (docs/theory.md §11; docs/decisions.md §3: start values that
    contradict them over-determine the initial system, an error naming the rows, as in the
    enumerated FMU). The initial mode is the one the FMU starts in, which the host chooses
    with inputs and start values: so every variant's rows, each selected by its activity flag
    ``active[k]`` (of each variant with such rows; and a merged block's by its selection
    flag), set by `mdae_compute` before
    each evaluation (`guarded_initialization`); the rows of the other modes are 0. Labels
    ``e3@[g]``: the equation and the modes of the variant (`mdae_fmu.codegen.initialization`
    describes them by these labels)."""
    out = []
    for k, v in enumerate(sched.variants):
        when = v.sel.cons_when if v.sel is not None else (None,) * len(v.cons)
        if not v.cons:
            continue
        labels = _cons_labels(v)
        modes = _formula_text(sched.table, v.formula, sched.guard_names)
        for j, (w, e) in enumerate(zip(when, v.cons)):
            cond = active[k] if w is None else sp.And(active[k], w)
            label = labels[j] if j < len(labels) else f"{v.block.label} ({j})"
            out.append((f"{label}@{modes}", sp.Piecewise((e, cond), (0, True))))
    return tuple(out)


def _cons_labels(v: GuardedVariant) -> list[str]:
    """The equation of each consistency row of a variant that is not merged: its rows are
    f^(k), k < c_f, for f in the block's order, and the block's label writes each equation
    with c_f primes (`mdae_fmu.implicit.variants`)."""
    if v.merged:
        return []
    out: list[str] = []
    for part in v.block.label.split("+"):
        eq = part.rstrip("'")
        out.extend(eq + "'" * k if k <= 2 else f"{eq}^({k})"
                   for k in range(len(part) - len(eq)))
    return out if len(out) == len(v.cons) else []


def _formula_text(table: FormulaTable, u: int, names: Sequence[str], limit: int = 4) -> str:
    """The modes of formula ``u`` as guard valuations, ``[g1, not g2] or [g3]`` (its paths to
    true in the BDD, at most ``limit`` of them, found within 64 ``limit`` steps; else
    a phrase saying there are more)."""
    if u == -1:
        return "(every mode)"
    paths = table.paths(u, names, limit)
    if paths is None:
        return f"(more than {limit} guard combinations)"
    return " or ".join("[" + ", ".join(p) + "]" for p in paths)


def guarded_initialization(model: Model, plan: GuardedPlan) -> InitPlan:
    """The initial system of the guarded FMU (`mdae_fmu.codegen.initialization`), its rows
    selected by the mode `mdae_compute` computes from the start values and inputs: the
    schedule (which sets the mode) runs before each evaluation of the rows when some of them
    depend on the mode (`_initial_consistency`)."""
    init = plan_initialization(model, plan.compiled)
    if plan.compiled.consistency:
        init = replace(init, mode_dependent=True)
    return init


def mode_dependent_unknowns(plan: GuardedPlan) -> frozenset[sp.Symbol]:
    """The unknowns that the mode decides (FMI dependencies on the guards,
    `mdae_fmu.fmu.dependencies.model_structure`): those of the block variants that do not
    run in every mode (formula other than true) and of merged blocks, whose equations the
    mode selects."""
    return frozenset(u for gb, blk in zip(plan.blocks, plan.compiled.blocks)
                     if gb.merged or gb.formula != -1 for u in blk.unknowns)


def _fresh(name: str, taken: set[str]) -> str:
    """``name``, or ``name`` followed by underscores, not in ``taken``; now taken."""
    while name in taken:
        name += "_"
    taken.add(name)
    return name


def _structural(gb: GuardedBlock) -> BlockPlan:
    """The block as `compile_model`'s consumers (dependencies, scratch sizes) read it: its
    unknowns the instances it computes (for a merged block with mode-selected unknowns the
    leading instances its proxies stand for)."""
    if gb.sel is None:
        return gb.plan
    proxies = {p for _, p, _ in gb.sel.top}
    written = tuple(u for u in gb.plan.unknowns if u not in proxies) + tuple(
        dict.fromkeys(t for _, _, t in gb.sel.top))
    return replace(gb.plan, unknowns=written)


# --- C text ---------------------------------------------------------------------------------

class _ScheduleUnit:
    """One file of the guarded schedule while it is printed: its file-level text
    (``helpers``), its statements, the blocks printed in it (a loop counts its period) and
    its size in characters; ``templates`` the shared callbacks of its loops
    (`mdae_fmu.codegen.runs.run_code`), static in the file."""

    def __init__(self) -> None:
        self.helpers: list[str] = []
        self.stmts: list[str] = []
        self.done: list[str] = []
        self.templates: dict[ShapeKey | str, str | bool] = {}
        self.printed = 0
        self.size = 0

    def add(self, stmts: list[str], helpers: str, printed: int) -> None:
        """The statements and file-level text of one block or loop of ``printed`` blocks."""
        if helpers:
            self.helpers.append(helpers)
        self.stmts.extend(stmts)
        self.printed += printed
        self.size += len(helpers) + sum(len(x) for x in stmts)
        if len(self.stmts) >= 3 * BLOCKS_PER_FUNCTION:
            self.done.append("\n".join(self.stmts))
            self.stmts = []

    def functions(self) -> list[str]:
        """The bodies of the file's schedule functions."""
        return self.done + (["\n".join(self.stmts)] if self.stmts else [])


def generate_guarded_sources(plan: GuardedPlan, ev: EventPlan) -> ModeSources:
    """C files of the guarded schedule, the restarts and the mode logic (module docstring)."""
    cm = plan.compiled
    pr = make_printers(cm, ev)
    p = pr.main
    env = template_environment()
    files = {}
    work, perm = 1, 1
    # --- guarded schedule: the repeated blocks of every mode found over the whole schedule,
    # files cut at `BLOCKS_PER_FILE` blocks printed or about `UNIT_BYTES` characters
    blocks = plan.blocks
    for gb in blocks:
        work = max(work, newton_work(len(gb.plan.unknowns)))
        perm = max(perm, len(gb.plan.unknowns))
    # the blocks printed: a block of every mode as the per-mode planner solves it (its
    # pieces), each numbered as its variant (the labels of the runtime's messages)
    items = [(k, pl) for k, gb in enumerate(blocks) for pl in (gb.pieces or (gb.plan,))]
    codes = [emit_block(pl, k, pr.schedule, sparse=2 * k) for k, pl in items]
    shapes = [shape(code) if _unguarded(blocks[k], code) else None
              for (k, _), code in zip(items, codes)]
    number = [k for k, _ in items]
    runs = {i: (p_, m) for i, p_, m in find_runs([sh.key if sh else None for sh in shapes])
            if affine(number[i:i + p_ * m], p_)}
    n_files = 0
    unit = _ScheduleUnit()
    j = 0
    while j < len(items) or n_files == 0:
        if j < len(items):
            (k, pl), code = items[j], codes[j]
            gb = blocks[k]
            if j in runs:
                # blocks of every mode repeated: one loop over a slot table (codegen.runs)
                p_, m = runs[j]
                copies = [[sh for sh in shapes[j + q * p_:j + (q + 1) * p_] if sh is not None]
                          for q in range(m)]
                body, text = run_code(
                    f"run_g{n_files}_{j}", copies, k, unit.templates,
                    "; ".join(c_comment(b.label, 60) for _, b in items[j:j + p_]),
                    index=number[j:j + p_ * m])
                unit.add([body], text, p_)
                j += p_ * m
            else:
                sel = gb.sel.top if gb.sel else ()
                unit.add([f"    if ({c_slot(Slot(array='i', index=plan.active_slot + k))}) {{ "
                          f"/* block {k}: {c_comment(pl.label, 60)} */",
                          *_copies(sel, cm.slots, True), code.body,
                          *_copies(sel, cm.slots, False), "    }"], code.helpers, 1)
                j += 1
        if j >= len(items) or unit.printed >= BLOCKS_PER_FILE or unit.size >= UNIT_BYTES:
            files[f"model_guarded_{n_files}.c"] = env.get_template(
                "model_schedule.c.j2").render(
                part=f"g{n_files}", comment_name=c_comment(cm.name),
                helpers="\n".join(unit.helpers), functions=unit.functions())
            n_files += 1
            unit = _ScheduleUnit()
    # --- restarts: X+ in the state slots, X- in the left slots, ζ in the impulse slots
    rslots = dict(pr.schedule.slots)
    for sym, slot in plan.extra_slots.items():
        # named as the layout names the slot (``impulse(f1)``, ``mdae_left(w1)``)
        name = cm.real_names[slot] if slot < len(cm.real_names) else str(sym)
        rslots[sym] = Slot(array="r", index=slot, name=name)
    rp = SlotPrinter(rslots, pr.schedule.relations, pr.schedule.functions, local=True)
    restarts: list[Restart] = []
    level_helpers: list[str] = []
    for k, gb in enumerate(plan.blocks):
        if gb.delta is not None:
            restarts.append((k, _delta_code(k, gb.delta, gb.plan.label, rslots, pr.schedule),
                             [], [], ""))
            work = max(work, len(gb.delta.z) ** 2 + 6 * len(gb.delta.z))
            perm = max(perm, len(gb.delta.z))
            continue
        if gb.restart is None:
            continue
        code = emit_block(gb.restart, k, rp, sparse=2 * k + 1)
        work = max(work, newton_work(len(gb.restart.unknowns)))
        perm = max(perm, len(gb.restart.unknowns))
        sel = gb.sel.restart if gb.sel else ()
        checks = _singular_checks(gb, rp)
        helpers, steps = _level_code(k, gb.levels, rslots, rp)
        for lv in gb.levels:
            work = max(work, gauss_newton_work(len(lv.rows), len(lv.unknowns)))
            perm = max(perm, len(lv.rows), len(lv.unknowns))
        level_helpers.extend(helpers)
        what = solved_tag([_slot_of(rslots, u) for u in gb.restart.unknowns if u in rslots])
        restarts.append((k, code, steps + checks + _copies(sel, rslots, True),
                         _copies(sel, rslots, False), what))
    files["model_restarts.c"] = _restarts_file(cm, restarts, level_helpers)
    cons, n_rows = _consistency_context(plan, p)
    if n_rows:
        work = max(work, gauss_newton_work(n_rows, len(cm.states)))
        perm = max(perm, n_rows, len(cm.states))
    ft = plan.table
    files["model_modes.c"] = env.get_template("model_guarded.c.j2").render(
        comment_name=c_comment(cm.name), guards=[p.doprint(g) for g in plan.guards],
        guard_names=[c_string(g) for g in plan.guard_names], ng=len(plan.guards),
        nblocks=len(plan.blocks), parts=[f"g{k}" for k in range(n_files)],
        block_labels=[c_string(b.plan.label) for b in plan.blocks],
        nflags=len(plan.flag_roots), flag_roots=_ints(plan.flag_roots),
        bdd_var=_ints(ft.var), bdd_lo=_ints(ft.lo), bdd_hi=_ints(ft.hi), nnodes=len(ft.var),
        roots=_ints([b.formula for b in plan.blocks]),
        ncs=len(plan.cond_states), cs_roots=_ints([c[0] for c in plan.cond_states]),
        cs_slot=_ints([c[1] for c in plan.cond_states]),
        cs_store=_ints([c[2] for c in plan.cond_states]),
        cs_der=_ints([c[3] for c in plan.cond_states]),
        merged=_ints([int(b.merged) for b in plan.blocks]),
        reads_off=_ints(_offsets([b.reads for b in plan.blocks])),
        reads=_ints([v for b in plan.blocks for v in b.reads]),
        writes_off=_ints(_offsets([b.writes for b in plan.blocks])),
        writes=_ints([v for b in plan.blocks for v in b.writes]),
        var_state=_ints([v[0] for v in plan.var_slots]),
        var_left=_ints([v[1] for v in plan.var_slots]),
        var_impulse=_ints([v[2] for v in plan.var_slots]), nvars=len(plan.var_slots),
        mode_slot=c_slot(cm.slot("i", plan.mode_slot)), bits_slot=plan.bits_slot,
        active_slot=plan.active_slot,
        nleft=len(plan.left), left_from=_ints(sorted(plan.left)),
        left_to=_ints(plan.left[a] for a in sorted(plan.left)),
        nimpulse=len(plan.impulse), impulse_slot=_ints(sorted(plan.impulse.values())),
        discrete_assignments="\n".join(discrete_code(p, cm.discrete_assignments)
                                       + band_updates(p, plan.banded)),
        settled_assignments="\n".join(discrete_code(p, settled_assignments(plan))),
        held_assignments="\n".join(_held_code(p, plan)),
        held_thresholds="\n".join(held_threshold_code(p, plan, ev)),
        held_check=" && ".join(f"{p.value(t)} == {p.value(replace(t, pre=True))}"
                               for t in held_discrete(plan)) or "1",
        max_mode_changes=_max_mode_changes(plan), nmodes=plan.n_modes,
        cons=cons, nst=len(cm.states), cons_block=_ints([c["k"] for c in cons]),
        cons_m=_ints([len(c["rows"]) for c in cons]),
        cons_soff=_ints(_offsets([c["states"] for c in cons])),
        cons_sidx=_ints([j for c in cons for j in c["states"]]),
        state_slots=_ints([s.slot for s in cm.states]))
    return ModeSources(files=files, ncons=n_rows, work=work, perm=perm)


def _unguarded(gb: GuardedBlock, code: BlockCode) -> bool:
    """Whether block ``gb`` runs in every mode as it is (its formula is every regular mode,
    the constant true of the formula table, it selects no unknown by a flag and its solver
    keeps no sparse factorization): its C may then share a loop with its repetitions
    (`mdae_fmu.codegen.runs`), with no activity test, as the per-mode schedule prints it."""
    return (gb.formula == -1 and not gb.merged and not (gb.sel and gb.sel.top)
            and code.sparse is None)


def settled_assignments(plan: GuardedPlan) -> tuple[tuple[Slot, sp.Expr], ...]:
    """The discrete equations that nothing a restart solves reads at its instant, in
    evaluation order: their targets are read by no guard, no block or restart of the schedule,
    no consistency equation and no other discrete equation read so (only through ``pre()``,
    or not at all). After a mode change's restart the runtime re-evaluates them from the
    relations at the restarted values (``mdae_settle_discrete``, docs/multimode-fmu.md "Event
    iteration"): the instant's discrete values are then those of its solution, as Modelica's
    event iteration solves them (Modelica 3.6 §8.6), while the discrete values the restart
    was computed with stay as they are (re-evaluating those would contradict the restart)."""
    cm = plan.compiled
    if not cm.discrete_assignments:
        return ()
    read: set[sp.Basic] = set().union(*(g.free_symbols for g in plan.guards))
    for gb in plan.blocks:
        read |= gb.plan.symbols
        if gb.restart is not None:
            read |= gb.restart.symbols
        for c in gb.cons:
            read |= c.free_symbols
    for _, e in cm.consistency:
        read |= e.free_symbols
    read |= {sym for sym, _, _ in plan.banded}
    symbol_of = {slot: sym for sym, slot in cm.slots.items() if isinstance(slot, Slot)}
    held = set()
    for k in reversed(range(len(cm.discrete_assignments))):     # readers after what they read
        target, e = cm.discrete_assignments[k]
        if target not in symbol_of or symbol_of[target] in read:
            held.add(k)
            read |= e.free_symbols
    return tuple(a for k, a in enumerate(cm.discrete_assignments) if k not in held)


def held_discrete(plan: GuardedPlan) -> tuple[Slot, ...]:
    """The discrete variables whose equations read a relation on a value the mode decides at
    the same instant (`mode_dependent_unknowns`, not a state of every mode: the MSL
    friction's ``startBackward = pre(mode) == 0 and sa < -tau0_max`` on the path parameter
    ``sa``), in evaluation order. The instant's mixed system (these variables, the guards
    and the blocks) is first solved from their previous values (``mdae_mode_step``'s
    trial, docs/multimode-fmu.md "Event iteration"; docs/theory.md §11): the mode the guards
    select with them held is kept when its solution gives them back."""
    if not plan.compiled.discrete_assignments:
        return ()
    decided = mode_dependent_unknowns(plan) - plan.steady_states
    out = []
    for target, e in plan.compiled.discrete_assignments:
        if target.array not in ("b", "i") or target.pre:
            continue
        if any(r.free_symbols & decided for r in e.atoms(sp.core.relational.Relational)):
            out.append(target)
    return tuple(out)


def held_relations(plan: GuardedPlan, ev: EventPlan) -> tuple[int, ...]:
    """The relations (indices into ``ev.relations``) on a value the mode decides that a
    `held_discrete` variable's equation reads (the MSL friction's four relations on ``sa``),
    taken at their threshold within the projection tolerance (`held_threshold_code`)."""
    held = set(held_discrete(plan))
    if not held:
        return ()
    decided = mode_dependent_unknowns(plan) - plan.steady_states
    read: set[sp.Basic] = set()
    for target, e in plan.compiled.discrete_assignments:
        if target in held:
            read |= e.atoms(sp.core.relational.Relational)
    return tuple(k for k, r in enumerate(ev.relations)
                 if r.kind == "state" and r.rate is None and r.relation in read
                 and r.relation.free_symbols & decided)


def held_threshold_code(p: SlotPrinter, plan: GuardedPlan, ev: EventPlan) -> list[str]:
    """C lines putting each of the `held_relations` at its value on its threshold when its
    signed distance is within the projection tolerance (``MDAE_PROJECT_TOL``, the accuracy
    of the consistency equations at an instant): false for a strict relation, true
    otherwise. The MSL friction at peak = 1: the locked torque ``sa = tau_c`` equals the
    static limit ``tau0_max = tau0`` exactly, the sliding mode's equation ``tau_c = -tau0``
    holding only to that accuracy (docs/multimode-fmu.md, "Event iteration"; docs/theory.md
    §11). The band is a hundredth of the event hysteresis: it never moves a located
    crossing."""
    out = []
    for k in held_relations(plan, ev):
        r = ev.relations[k]
        out.append(f"    s = {p.doprint(r.s)};\n"
                   f"    if (fabs(s) <= MDAE_PROJECT_TOL) d->rel[{k}] = {int(not r.strict)};")
    return out


def _held_code(p: SlotPrinter, plan: GuardedPlan) -> list[str]:
    """C lines of the discrete equations with the `held_discrete` variables at their previous
    values (``pre()``), the others evaluated as ``discrete_equations`` does."""
    held = set(held_discrete(plan))
    if not held:
        return []
    assignments = plan.compiled.discrete_assignments
    return ([f"    {p.value(t)} = {p.value(replace(t, pre=True))};" if t in held else line
             for (t, _), line in zip(assignments, discrete_code(p, assignments))]
            + band_updates(p, plan.banded))


def _max_mode_changes(plan: GuardedPlan) -> int:
    """Bound on the mode changes of one event iteration of the guarded FMU: the per-mode
    FMU's (`max_mode_changes`: a cascade that settles visits each consistent mode at most
    once), raised to 2 per guard + 8 when there are that many modes, so that a long legitimate
    cascade through many guards (a chain of diodes switching in turn) still settles."""
    return max(max_mode_changes(plan.n_modes), min(plan.n_modes, 2 * len(plan.guards) + 8))


def _consistency_context(plan: GuardedPlan, printer: SlotPrinter
                         ) -> tuple[list[ConsistencyRows], int]:
    """Per block variant with consistency equations: its index, its rows as C and the
    states (indices into ``compiled.states``) they read; and the number of rows of all of
    them (a bound on the rows of one mode). The rows of a mode are those of its active
    variants: the drift (largest residual) and the projection of the states onto them
    (minimum-norm Gauss-Newton, as the enumerating exporter's per-mode projection; docs/theory.md
    §11: the consistency equations F^{<c} of the current mode)."""
    index = {s.slot: j for j, s in enumerate(plan.compiled.states)}
    state_slot = {s.symbol: s.slot for s in plan.compiled.states}
    out: list[ConsistencyRows] = []
    n_rows = 0
    for k, gb in enumerate(plan.blocks):
        if not gb.cons:
            continue
        read = sorted({index[state_slot[x]] for e in gb.cons for x in e.free_symbols
                       if x in state_slot})
        when = gb.sel.cons_when if gb.sel else (None,) * len(gb.cons)
        out.append(ConsistencyRows(k=k, states=read, rows=[
            ("1" if w is None else printer.doprint(w), printer.doprint(e))
            for w, e in zip(when, gb.cons)]))
        n_rows += len(gb.cons)
    return out, n_rows


def _copies(sel: Iterable[tuple[sp.Symbol, sp.Symbol, sp.Symbol]],
            slots: Mapping[sp.Basic, SlotValue], gather: bool) -> list[str]:
    """C statements of a merged block's mode-selected unknowns (`mdae_fmu.codegen.merged`):
    where a flag is set, the instance into its proxy (``gather``: the solver's guess) or the
    proxy into the instance (after the solve)."""
    out = []
    for flag, proxy, target in sel:
        a = c_slot(_slot_of(slots, proxy), local=True)
        b = c_slot(_slot_of(slots, target), local=True)
        dst, src = (a, b) if gather else (b, a)
        out.append(f"    if ({c_slot(_slot_of(slots, flag))}) {dst} = {src};")
    return out


def _slot_of(slots: Mapping[sp.Basic, SlotValue], sym: sp.Basic) -> Slot:
    """The slot of ``sym`` in ``slots``: what a block writes or a flag selects is stored in
    a slot, never a derived value printed as C text (`mdae_fmu.codegen.cprinter.SlotValue`)."""
    slot = slots[sym]
    if not isinstance(slot, Slot):
        raise ValueError(f"{sym} is the derived value {slot}, not a slot a restart can move")
    return slot


def _ints(values: Iterable[int]) -> str:
    return ", ".join(str(int(v)) for v in values) or "0"


def _offsets(lists: Iterable[Sequence[object]]) -> list[int]:
    out = [0]
    for x in lists:
        out.append(out[-1] + len(x))
    return out


def _delta_code(k: int, dl: DeltaRestart, label: str, rslots: dict[sp.Basic, SlotValue],
                schedule_printer: SlotPrinter) -> str:
    """C text of ``restart<k>``, the restart of block variant k that has no closed form: the
    delta-scheme of RR-9334 §11.3 (Algorithm 14, `mdae_delta_scheme` in mdae_runtime.c:
    h = 1e-2, 5e-3, ..., damped Newton with the analytic Jacobian, converged when two
    consecutive changes of the right limits are below 1e-8), then the right limits into the
    state slots. ``label``: the label of the block (`BlockPlan.label`)."""
    n, nt = len(dl.z), max(len(dl.targets), 1)
    local = {**rslots, **{z: f"z[{i}]" for i, z in enumerate(dl.z)}, dl.h: "h"}
    lp = SlotPrinter(local, schedule_printer.relations, schedule_printer.functions, local=True)
    tp = SlotPrinter(rslots, schedule_printer.relations, schedule_printer.functions,
                     local=True)
    p = f"d{k}"
    head = "    const double *r = d->r;\n    (void)r; (void)z; (void)h;\n"
    what = c_string(f"into block {label}")
    lines = [f"/* block {k} ({c_comment(label, 60)}): restart without closed form, "
             f"the delta-scheme */",
             f"static void {p}_guess(const ModelData *d, double *z)\n{{\n    (void)d;\n"
             f"    memset(z, 0, sizeof(double) * {n});\n}}\n",
             f"static void {p}_F(const ModelData *d, const double *z, double h, double *F)\n"
             f"{{\n{head}" + "".join(f"    F[{i}] = {lp.doprint(e)};\n"
                                      for i, e in enumerate(dl.equations)) + "}\n",
             f"static void {p}_J(const ModelData *d, const double *z, double h, double *J)\n"
             f"{{\n{head}    memset(J, 0, sizeof(double) * {n * n});\n"
             + "".join(f"    J[{i * n + j}] = {lp.doprint(e)};\n" for i, j, e in dl.jacobian)
             + "}\n",
             f"static void {p}_T(const ModelData *d, const double *z, double h, double *T)\n"
             f"{{\n{head}" + "".join(f"    T[{j}] = {lp.doprint(e)};\n"
                                      for j, (_, e) in enumerate(dl.targets)) + "}\n",
             f"static void {p}_M(const ModelData *d, const double *T, double *M)\n{{\n"
             f"    (void)d;\n    memcpy(M, T, sizeof(double) * {nt});\n}}\n",
             f"static int restart{k}(ModelInstance *inst)\n{{\n"
             f"    static const MdaeDeltaSystem sys = {{ {n}, {nt}, {nt}, {p}_guess, {p}_F, "
             f"{p}_J, {p}_T, {p}_M }};\n"
             f"    ModelData *d = &inst->d;\n    double *r = d->r;\n"
             f"    double z[{n}], T[{nt}], Tprev[{nt}], M[{nt}], Mprev[{nt}];\n"
             f"    (void)d; (void)r;\n"
             f"    if (mdae_delta_scheme(inst, &sys, z, T, Tprev, M, Mprev, {what}, 0))\n"
             f"        return 1;\n"
             + "".join(f"    if (!isfinite(T[{j}])) return 1;\n" for j in range(len(dl.targets)))
             + "".join(f"    {tp.doprint(t)} = T[{j}];\n" for j, (t, _) in enumerate(dl.targets))
             + "    return 0;\n}\n"]
    return "\n".join(lines)


def _level_code(k: int, levels: Sequence[BlockRows], rslots: Mapping[sp.Basic, SlotValue],
                printer: SlotPrinter) -> tuple[list[str], list[str]]:
    """C of the lower ``levels`` of the restart of block variant k (`BlockRows.levels`,
    `mdae_fmu.implicit.variants.restart_levels`): per level a residual function, and the
    statements that solve it first in ``restart<k>``, by minimum-norm Gauss-Newton over the
    level's unknowns (`mdae_gauss_newton`, as the projection onto consistency equations), to
    rounding (1e-3 MDAE_PROJECT_TOL; a residual within MDAE_DRIFT_TOL is accepted) so that
    the positions equal the standardized restart's closed form (Cup-and-Ball's radial
    projection) to the last digits. ``(helper functions, statements)``."""
    helpers, steps = [], []
    for j, lv in enumerate(levels):
        name = f"level{k}_{j}"
        rows = "".join(f"    F[{i}] = {printer.doprint(e)};\n" for i, e in enumerate(lv.rows))
        helpers.append(f"static int {name}(ModelInstance *inst, double *F)\n{{\n"
                       f"    ModelData *d = &inst->d;\n    double *r = d->r;\n"
                       f"    (void)d; (void)r;\n{rows}    return 0;\n}}\n")
        slots = ", ".join(str(_slot_of(rslots, x).index) for x in lv.unknowns)
        steps.append(f"    {{\n        static const int u[] = {{ {slots} }};\n"
                     f"        if (mdae_gauss_newton(inst, {len(lv.rows)}, {len(lv.unknowns)}, "
                     f"u, {name}, 1e-3 * MDAE_PROJECT_TOL, MDAE_DRIFT_TOL, 20, "
                     f"{c_string(lv.label)})) return 1;\n    }}")
    return helpers, steps


def _restarts_file(cm: CompiledModel, restarts: Sequence[Restart], helpers: list[str]) -> str:
    """One function per block variant's restart, named after its number and the variables it
    restarts (``restart2_w1``), and the dispatcher ``mdae_restart_block(inst, k)`` (0: done;
    1: failed); ``helpers``: functions the restarts call (the residuals of their levels,
    `_level_code`)."""
    parts = [f"/* mdae_fmu generated restarts of the block variants of model "
             f"{c_comment(cm.name)} (do not edit; mdae_fmu.codegen.guarded). */",
             "#include <math.h>", "#include <string.h>", "", '#include "mdae_model.h"', "",
             *helpers]
    names = {}
    for k, code, before, after, what in restarts:
        names[k] = f"restart{k}_{what}" if what else f"restart{k}"
        if isinstance(code, str):       # a delta-scheme restart (`_delta_code`), whole
            parts.append(code)
            continue
        if code.helpers:
            parts.append(code.helpers)
        body = "\n".join([*before, code.body, *after])
        parts.append(f"static int {names[k]}(ModelInstance *inst)\n{{\n"
                     "    ModelData *d = &inst->d;\n    double *r = d->r;\n"
                     f"    (void)d; (void)r;\n{body}\n    return 0;\n}}\n")
    parts.append("int mdae_restart_block(ModelInstance *inst, int k)\n{\n    switch (k) {")
    for k, *_ in restarts:
        parts.append(f"    case {k}: return {names[k]}(inst);")
    parts.append("    default: (void)inst; return 0;\n    }\n}\n")
    return "\n".join(parts)
