"""Guarded block schedule of a multimode model from the implicit analysis (issue 17 Deliver
2-3): one schedule for all modes, each block guarded by the formula of the modes in which it
is a block, and local restarts, without enumerating the modes.

Theory: 003 §5.3.3 and §5.7 (the "mDAE interpreter": blocks labelled by guard formulas),
9334-theory-algorithms §3.5 (per-mode index-reduced system solved by blocks; restart at a
mode change), §2.15 and §3.1 stages 5-7 (impulse analysis and standardization of the restart);
the rule for local restarts and its argument are in docs/decisions.md §9.

Plain-data stages:

* `plan_guarded(model, ia)` -> `GuardedPlan` from an accepted `ImplicitAnalysis`: the union
  layout (the states must be the same in every mode), every (block, formula) of
  ``ia.blocks`` split by the if-branches and offsets of its equations into *variants* whose
  code is fixed (`GuardedBlock`: its `BlockPlan`, its formula and its restart system), and
  the formula table (`FormulaTable`: the BDD nodes of all formulas, which the C code walks).
* `generate_guarded_sources(plan, ev)` -> `ModeSources`: ``model_guarded_<k>.c`` (the guarded
  schedule), ``model_restarts.c`` (one restart function per block variant) and
  ``model_modes.c`` (guard bits, activity flags, the mode step), with the contract of
  `mdae_fmu.codegen.multimode.generate_mode_sources`.

Restart of one block variant (the local rule, docs/decisions.md §9). In the block's new-mode
equations the leading unknowns are replaced by what the instant determines: a leading
derivative ``x^(d)`` (d >= 1) by ``(X+ - X-)/h`` with X = x^(d-1) the state it integrates, an
algebraic unknown ``z`` by ``ζ_z/h`` (ζ_z: its integral over the instant, the impulse). An
equation of offset c = 0 is multiplied by h and h -> 0 taken (its bounded terms integrate to
nothing over the instant); an equation of offset c >= 1 is taken at order c - 1 (the
consistency equation, which the right limits satisfy). Outside the block, the jump of a state
``Y+ - Y-`` already restarted and the impulse ζ_y of an algebraic variable enter the same way.
The result is square, with the block's Jacobian, so it is solvable exactly when the block is;
a block whose equations are not affine in the 1/h terms (the limit does not exist) is rejected.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from typing import Any

import sympy as sp

from ..diagnostics import ModelRejected
from ..ir import Model
from ..structure.latent import latent_system
from ..structure.per_mode import (Instance, ModesReport, classify_variables,
                                  defines_discrete, symbol_table)
from .blocks import BlockPlan, emit_block, gauss_newton_work, newton_work, tree_solution
from .cprinter import SlotPrinter, c_comment, c_string
from .emit import discrete_code, make_printers, template_environment
from .multimode import ModeSources, band_updates
from .plan import CompiledModel, FmiVariable, compile_model
from .slots import Slot, c_slot

MODE_VARIABLE = "mdae_mode"
BLOCKS_PER_FUNCTION = 200
BLOCKS_PER_FILE = 1000
MAX_VARIANTS = 200


@dataclass(frozen=True)
class GuardedBlock:
    """One block variant: ``plan`` solved in the modes of ``formula`` (a BDD node id of the
    `FormulaTable`); ``restart`` its restart system (a `BlockPlan` over the restart
    unknowns), ``writes`` the variables it moves, ``reads`` the variables whose jump or
    impulse enters its restart."""
    plan: BlockPlan
    formula: int
    restart: BlockPlan | None
    writes: tuple[int, ...]
    reads: tuple[int, ...]
    origin: tuple = ()       # (equations, unknowns) of the `ConditionalBlock` it refines
    merged: bool = False     # one block for a whole component (`_merge_components`): its
    #                          equations change with the mode, so it restarts at every change
    cons: tuple = ()         # its consistency equations F^{<c} (sympy), which hold in its
    #                          modes: the rows of the drift and of the projection
    sel: Any = None          # a merged block's mode-selected unknowns and rows
    #                          (`mdae_fmu.codegen.merged.Selection`)


@dataclass(frozen=True)
class FormulaTable:
    """The BDD nodes of all formulas: node k tests guard ``var[k]`` and continues at
    ``hi[k]`` (true) or ``lo[k]``; -1 is true and -2 false."""
    var: tuple[int, ...]
    lo: tuple[int, ...]
    hi: tuple[int, ...]


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
    left: dict                           # state slot -> slot of its left limit
    impulse: dict                        # variable name -> slot of its integral ζ
    extra_slots: dict                    # restart symbols (X-, ζ) -> Real slot
    var_slots: tuple                     # per variable id: (state slot, left slot, ζ slot), -1
    n_modes: int
    watched: tuple = ()                  # relations on x whose guards read pre(x)
    banded: tuple = ()                   # (symbol, relation on pre(x), Boolean slot)
    # the states of some modes only (`_conditional_states`): (formula node, slot, store
    # slot or -1, derivative slot); activity flag k at d->i[active_slot + len(blocks) + k]
    cond_states: tuple = ()
    # the selection flags of merged blocks (`mdae_fmu.codegen.merged`): their formulas (nodes
    # of ``table``); flag k at d->i[active_slot + len(blocks) + len(cond_states) + k]
    flag_roots: tuple = ()

    @property
    def steady_states(self) -> frozenset:
        """The symbols of the states of every mode (not `cond_states`): their derivative slot
        is their rate at every instant (`mdae_fmu.codegen.events.relation_rate`)."""
        conditional = {c[1] for c in self.cond_states}
        return frozenset(st.symbol for st in self.compiled.states
                         if st.slot not in conditional)


def _check_long_modes_only(model: Model, switching: bool) -> None:
    """The guarded path has long modes only: a transient guard (``if edge(c) then``) in an
    equation, or a reinit statement in a model with mode changes (``switching``), needs the
    mode-change automaton's transient modes and analysed reinits
    (`mdae_fmu.codegen.multimode`), so the model is refused naming it."""
    from .. import expr as E
    from ..ir import Reinit
    from ..structure.per_mode import is_event_guard
    for eq in model.equations:
        conds = [lit.cond for lit in eq.guard]
        conds += [n.cond for n in E.walk(eq.residual) if isinstance(n, E.If)]
        if any(is_event_guard(c) for c in conds):
            where = f" ({eq.loc.short()})" if eq.loc else ""
            raise ModelRejected(
                f"model {model.name}: equation {eq.id}{where} is selected by a transient guard "
                f"(edge, change, initial); the guarded exporter (--implicit) has long modes "
                f"only: export without --implicit")
    for w in model.whens if switching else ():
        for br in w.branches:
            if any(isinstance(a, Reinit) for a in br.actions):
                raise ModelRejected(
                    f"model {model.name}: when-clause {w.id} reinitializes a state; the guarded "
                    f"exporter (--implicit) does not compose reinits with its restarts: export "
                    f"without --implicit")


def _formula_table(bdd, space, roots) -> tuple[FormulaTable, list[int]]:
    """Flatten the BDD nodes of ``roots`` (module docstring of `FormulaTable`)."""
    var_index = {space.var_of[a]: k for k, a in enumerate(space.atoms)}
    ids: dict = {}
    var: list[int] = []
    lo: list[int] = []
    hi: list[int] = []

    def node(u) -> int:
        if u == bdd.true:
            return -1
        if u == bdd.false:
            return -2
        key = int(u)
        if key in ids:
            return ids[key]
        low, high = node(bdd.let({u.var: False}, u)), node(bdd.let({u.var: True}, u))
        ids[key] = len(var)
        var.append(var_index[u.var])
        lo.append(low)
        hi.append(high)
        return ids[key]

    out = [node(r) for r in roots]
    return FormulaTable(tuple(var), tuple(lo), tuple(hi)), out


def _case_split(parts, key, case: dict):
    """Refine ``[(formula, {key: value})]`` by the case function ``{value: formula}``."""
    out = []
    for f, vals in parts:
        for v, fv in case.items():
            m = f & fv
            if m != m.bdd.false:
                out.append((m, {**vals, key: v}))
    return out


def _conditional_states(union: CompiledModel, ia, regular, instances):
    """The union states that are states in some modes only (a variable whose offset d
    changes with the mode: the diode bank's currents, differentiated while every diode
    blocks), each with the formula of the modes where it is a state (``instances``: the
    union states as `Instance` s): ``(union with the
    hidden state vector entries, [(formula, slot)])``. Where it is not a state, a block
    computes the variable as an algebraic unknown (or nothing reads it), so its state vector
    entry is held apart (`_UnionLayout.hold_apart`, as the enumerating exporter does) and
    its derivative is 0; where it is one, the variable takes the entry's value. Theory:
    9334-theory-algorithms §3.6 (one state vector for all modes)."""
    from .multimode import _UnionLayout
    bdd = ia.space.bdd
    col_of = {n: j for j, n in enumerate(ia.graph.cols)}
    cond = []
    for k, inst in enumerate(instances):       # the order of ``union.states``
        f = bdd.false
        for v, fv in ia.d[col_of[inst.name]].items():
            if v > inst.order:
                f |= fv
        f &= regular
        if f != regular:
            cond.append((k, f))
    if not cond:
        return union, []
    layout = _UnionLayout(union)
    layout.hold_apart([k for k, _ in cond])
    union = replace(union, variables=tuple(layout.variables), n_real=layout.n_real,
                    real_names=tuple(layout.real_names), states=tuple(layout.states),
                    guesses=layout.guesses)
    return union, [(f, union.states[k].slot) for k, f in cond]


def _union_report(model: Model, ia, states, leading):
    """A `ModesReport` of one synthetic mode holding the union layout (no blocks: the block
    variants are compiled here, not by `compile_model`)."""
    from types import SimpleNamespace
    cls = classify_variables(model)
    table = symbol_table(model)
    mode = SimpleNamespace(name="union", states=tuple(states), leading=tuple(leading),
                           blocks=(), solved=(), consistency=())
    disc = tuple(eq.id for eq in model.equations if defines_discrete(eq, cls))
    modes: Any = (mode,)        # the fields of `ModeAnalysis` that `compile_model` reads
    return ModesReport(model.name, tuple(ia.space.names), tuple(ia.space.atoms), table,
                       modes, tuple(cls.continuous), 0, (), discrete_equations=disc,
                       discrete=tuple(cls.discrete), inputs=tuple(cls.inputs))


def plan_guarded(model: Model, ia, max_variants: int | None = None) -> GuardedPlan:
    """Union layout, guarded block variants and their restarts (module docstring). A set of
    blocks coupled through their equations with more than ``max_variants`` variants is
    generated as one block (`_merge_components`)."""
    if not ia.ok:
        raise ModelRejected(ia.diagnostic or f"model {model.name}: rejected")
    _check_long_modes_only(model, bool(ia.space.atoms))
    space = ia.space
    bdd = space.bdd
    F = bdd.false
    regular = space.care & ~ia.singular
    cols, rows = ia.graph.cols, ia.graph.rows
    dvals = {name: tuple(sorted(v for v, f in ia.d[j].items() if f & regular != F)) or (0,)
             for j, name in enumerate(cols)}
    dmax = {n: v[-1] for n, v in dvals.items()}
    multi = {n for n, v in dvals.items() if len(v) > 1}
    table = symbol_table(model)
    states = [Instance(n, k) for n in cols for k in range(dmax[n])]
    leading = [Instance(n, dmax[n]) for n in cols if dmax[n] > 0]
    report = _union_report(model, ia, states, leading)
    union = compile_model(model, report)
    union, cond_states = _conditional_states(union, ia, regular, states)
    state_slot = {s.symbol: s.slot for s in union.states}

    # --- hidden slots: left limits, impulses, mode, guard bits, activity flags
    n_real = union.n_real
    real_names = list(union.real_names)
    left = {}
    for s in union.states:
        left[s.slot] = n_real
        real_names.append(f"mdae_left({s.name})")
        n_real += 1
    impulse = {}
    for n in cols:
        if dvals[n][0] == 0:
            impulse[n] = n_real
            real_names.append(f"mdae_impulse({n})")
            n_real += 1
    var_id = {n: k for k, n in enumerate(cols)}
    zeta = {n: sp.Symbol(f"mdae_zeta_{k}") for k, n in enumerate(cols) if n in impulse}
    xleft = {s.symbol: sp.Symbol(f"mdae_left_{k}") for k, s in enumerate(union.states)}
    h = sp.Symbol("mdae_h", positive=True)

    eq_by_id = {eq.id: eq for eq in model.equations}
    row_of = {e: i for i, e in enumerate(rows)}
    col_of = {n: j for j, n in enumerate(cols)}
    from ..implicit.analysis import _branches

    variants = []        # (formula BDD, BlockPlan, restart, writes, reads, origin, ...)
    cache: dict = {}
    coarse, absorbed = _coarse_components(model, ia, regular)
    for cb in ia.blocks:
        if cb.coarse or id(cb) in absorbed:
            continue
        parts: list = [(cb.formula & regular, {})]
        for e in cb.equations:
            parts = _case_split(parts, e, ia.c[row_of[e]])
        # the offsets of every unknown of the block, and of the mode-dependent variables
        # its equations read (their jumps or impulses enter its restart)
        read = {cols[j] for e in cb.equations for j in ia.graph.sig[row_of[e]]}
        for u in [*cb.unknowns, *sorted((read & multi) - set(cb.unknowns))]:
            parts = _case_split(parts, ("d", u), ia.d[col_of[u]])
        for f, vals in parts:
            c = {e: vals[e] for e in cb.equations}
            dval = {**dmax, **{k[1]: v for k, v in vals.items() if isinstance(k, tuple)}}
            dkey = tuple(sorted((u, dval[u]) for u in read & multi))
            sub: list = [(f, {})]
            for e in cb.equations:
                nxt = []
                for g, res in sub:
                    for bf, r in _branches(space, eq_by_id[e].residual, g):
                        nxt.append((bf, {**res, e: r}))
                sub = nxt
            for g, res in sub:
                plan, restart, writes, reads, cons = _variant(
                    cb, c, res, dval, table, xleft, zeta, h, var_id, cache, dkey)
                variants.append((g, plan, restart, writes, reads,
                                 (cb.equations, cb.unknowns), False, cons, None))

    mode_slot = union.n_int
    bits_slot = mode_slot + 1
    bits = [sp.Symbol(f"mdae_bit_{k}") for k in range(len(space.atoms))]
    if max_variants is None:
        max_variants = MAX_VARIANTS
    from .merged import MergeContext, merged_block
    ctx = MergeContext(ia, cache, dmax, multi, table, xleft, zeta, h, var_id)
    variants = _merge_components(variants, ctx, max_variants)
    for eqs, unk, formula in coarse:
        merged = merged_block(ctx, eqs, unk, formula)
        if merged is None:
            raise ModelRejected(
                f"model {model.name}: the equations {', '.join(eqs[:6])} form a union "
                f"component the implicit analysis does not split per mode, and it cannot be "
                f"solved as one block (its equations and unknowns do not match in every mode, "
                f"or it reads a mode-dependent variable it does not solve)")
        variants.append(merged)
    variants = _schedule_order(variants)
    flags = list(ctx.flags.values())
    ft, roots = _formula_table(bdd, space, [v[0] for v in variants]
                               + [f for f, _ in cond_states] + [f for _, f in flags])
    state_roots = roots[len(variants):len(variants) + len(cond_states)]
    flag_roots = roots[len(variants) + len(cond_states):]
    blocks = tuple(GuardedBlock(p, r, rs, w, rd, o, mg, cons, sel)
                   for (_, p, rs, w, rd, o, mg, cons, sel), r in zip(variants, roots))
    proxy_slots = {}
    for sym in ctx.proxies + ctx.rproxies:
        proxy_slots[sym] = n_real
        real_names.append(f"mdae_proxy({sym})")
        n_real += 1

    # --- FMI variables and slots
    taken = {v.name for v in union.variables}
    name = MODE_VARIABLE
    while name in taken:
        name += "_"
    active_slot = bits_slot + len(space.atoms)
    flag_slot = active_slot + len(blocks) + len(cond_states)
    n_int = flag_slot + len(flags)
    variables = list(union.variables)
    variables.append(FmiVariable(name, "Integer", mode_slot, "output", "discrete", "exact", 0,
                                 "current mode: the guard bits as a number (bit k = guard k) "
                                 "when there are at most 30 guards, else the count of mode "
                                 "changes", kind=1))
    consistency = ()
    slots = dict(union.slots)
    slots.update({b: Slot("i", bits_slot + k, name=f"guard {k}") for k, b in enumerate(bits)})
    slots.update({sym: Slot("i", flag_slot + k, name=f"selection {k}")
                  for k, (sym, _) in enumerate(flags)})
    slots.update({sym: Slot("r", proxy_slots[sym], name=str(sym)) for sym in ctx.proxies})
    compiled = replace(union, blocks=tuple(_structural(b) for b in blocks),
                       consistency=consistency,
                       variables=tuple(variables), n_int=n_int, n_real=n_real,
                       real_names=tuple(real_names), dependencies={}, slots=slots)
    guards = tuple(table.to_sympy(a) for a in space.atoms)
    # guards on left limits (pre(s) <= 0): banded and watched as in the per-mode exporter
    from .multimode import _band_left_limit_relations, _watched
    compiled, banded = _band_left_limit_relations(report, compiled)
    extra = {xleft[s.symbol]: left[s.slot] for s in union.states}
    extra.update({zeta[n]: impulse[n] for n in zeta})
    extra.update({sym: proxy_slots[sym] for sym in ctx.rproxies})
    var_slots = []
    for n in cols:
        slot = state_slot[table.sym(n, dmax[n] - 1)] if dmax[n] >= 1 else -1
        var_slots.append((slot, left.get(slot, -1), impulse.get(n, -1)))
    by_slot = {s.slot: s for s in compiled.states}
    activity = tuple((r, s, -1 if by_slot[s].store is None else by_slot[s].store,
                      by_slot[s].der_slot)
                     for r, (_, s) in zip(state_roots, cond_states))
    return GuardedPlan(compiled, guards, tuple(space.names), blocks, ft, mode_slot, bits_slot,
                       active_slot, left, impulse, extra, tuple(var_slots), ia.n_modes,
                       _watched(report, banded), banded, activity, tuple(flag_roots))


def _written(plan: BlockPlan, sel) -> tuple:
    """The instances a block computes: its unknowns, for a merged block with mode-selected
    unknowns the leading instances its proxies stand for (`mdae_fmu.codegen.merged`)."""
    if sel is None:
        return plan.unknowns
    proxies = {p for _, p, _ in sel.top}
    return tuple(u for u in plan.unknowns if u not in proxies) + tuple(
        dict.fromkeys(t for _, _, t in sel.top))


def _structural(gb: GuardedBlock) -> BlockPlan:
    """The block as `compile_model`'s consumers (dependencies, scratch sizes) read it: its
    unknowns the instances it computes (`_written`)."""
    if gb.sel is None:
        return gb.plan
    return replace(gb.plan, unknowns=_written(gb.plan, gb.sel))


def _schedule_order(variants):
    """The variants in an order valid in every mode: a variant after every variant that
    writes an instance it reads in a mode of both formulas. Inside one union component the
    analysis lists its per-mode blocks by member, not in each mode's dependency order (the
    diode bank: ``kvl0`` solves ``u0`` from the ``V`` that ``kvl1`` solves when diode 1
    alone conducts, and ``kvl1`` solves ``u1`` from the ``V`` of ``kvl0`` when diode 0
    alone conducts). Kahn's algorithm, taking the earliest ready variant first, so an order
    that is already valid is kept; on a cycle of pairwise-compatible formulas (no mode has
    it whole) the rest keeps the analysis order."""
    import heapq
    writers: dict = {}
    for k, v in enumerate(variants):
        for x in _written(v[1], v[8]):
            writers.setdefault(x, []).append(k)
    after: list[set] = [set() for _ in variants]
    for k, v in enumerate(variants):
        own = set(_written(v[1], v[8])) | set(v[1].unknowns)
        for x in v[1].symbols - own:
            for w in writers.get(x, ()):
                if w != k and (variants[w][0] & v[0]) != v[0].bdd.false:
                    after[k].add(w)
    readers: list[list] = [[] for _ in variants]
    for k, ws in enumerate(after):
        for w in ws:
            readers[w].append(k)
    waiting = [len(a) for a in after]
    ready = [k for k, n in enumerate(waiting) if n == 0]
    heapq.heapify(ready)
    order, placed = [], set()
    while ready:
        k = heapq.heappop(ready)
        order.append(k)
        placed.add(k)
        for r in readers[k]:
            waiting[r] -= 1
            if waiting[r] == 0:
                heapq.heappush(ready, r)
    order += [k for k in range(len(variants)) if k not in placed]
    return [variants[k] for k in order]


def _variant(cb, c, res, dval, table, xleft, zeta, h, var_id, cache, dkey=()):
    """The `BlockPlan` of one block variant and its restart system (module docstring).
    ``dval``: the offsets d of the variables in the variant's modes; ``dkey`` those of them
    that change with the mode. ``cache``: the sympy forms, derivatives and restart rows of
    each (equation, branch, offset, ``dkey``), which do not depend on the block (the
    substitutions of the restart are the same inside and outside it)."""
    eqs = list(cb.equations)
    unknowns = tuple(table.sym(u, dval[u]) for u in cb.unknowns)
    label = "+".join(f"{e}" + "'" * c[e] for e in eqs)
    if len(eqs) == 1 and c[eqs[0]] == 0 and \
            tree_solution(res[eqs[0]], (cb.unknowns[0], dval[cb.unknowns[0]])) is not None:
        plan = BlockPlan(label, unknowns, None, res[eqs[0]], table)
    else:
        plan = None
    residuals, top, lower = {}, [], {}
    for e in eqs:
        key = (e, res[e], c[e])
        if key not in cache:
            r = table.to_sympy(res[e])
            t, cons = latent_system(table, {e: r}, {e: c[e]}, [e])
            cache[key] = (r, t[0][2], {k: x for _, k, x in cons})
        residuals[e], x, low = cache[key]
        top.append(x)
        lower.update({(e, k): y for k, y in low.items()})
    if plan is None:
        plan = BlockPlan(label, unknowns, tuple(top))
    # --- restart system
    mine = set(cb.unknowns)
    subs = {}
    r_unknowns = []
    writes = []
    for u in cb.unknowns:
        d = dval[u]
        if d >= 1:
            X = table.sym(u, d - 1)
            subs[table.sym(u, d)] = (X - xleft[X]) / h
            r_unknowns.append(X)
        else:
            subs[table.sym(u, 0)] = zeta[u] / h
            r_unknowns.append(zeta[u])
        writes.append(var_id[u])
    reads = set()
    outside = {}
    for (n, k) in set().union(*(table.instances(x) for x in residuals.values())):
        if n in mine or n not in dval:
            continue
        d = dval[n]
        if d >= 1 and k == d:
            Y = table.sym(n, d - 1)
            outside[table.sym(n, k)] = (Y - xleft[Y]) / h
            reads.add(var_id[n])
        elif d == 0 and k == 0:
            outside[table.sym(n, 0)] = zeta[n] / h
            reads.add(var_id[n])
    rows = []
    cons = tuple(lower[(e, k)] for e in eqs for k in range(c[e]))
    for e in eqs:
        if c[e] >= 1:
            rows.append(lower[(e, c[e] - 1)])
            continue
        key = ("restart", e, res[e], dkey)
        if key not in cache:
            cache[key] = _limit0(sp.expand(h * residuals[e].xreplace({**subs, **outside})), h)
        g0 = cache[key]
        if g0 is None:
            raise ModelRejected(
                f"equation {e}: its restart (block {label}) has no limit as the instant's "
                f"length goes to 0 (not affine in the impulsive unknowns); the guarded "
                f"exporter needs affine impulsive terms")
        rows.append(g0)
    restart = BlockPlan(f"restart {label}", tuple(r_unknowns), tuple(rows))
    return plan, restart, tuple(writes), tuple(sorted(reads)), cons


def _merge_components(variants, ctx, max_variants):
    """Blocks coupled through their equations or unknowns (one union component of the
    analysis) with more than ``max_variants`` variants become ONE block over the union of
    their unknowns, valid in every mode (`mdae_fmu.codegen.merged`: equations, their orders
    and the unknowns' leading instances selected by the guard bits; docs/decisions.md §9).
    Code then grows with the equations, not with the runs of engaged clutches or the subsets
    of conducting diodes. A component that cannot be one block keeps its variants."""
    from .merged import merged_block
    parent: dict = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for v in variants:
        keys = [("e", e) for e in v[5][0]] + [("u", u) for u in v[5][1]]
        for k in keys[1:]:
            parent[find(k)] = find(keys[0])
    groups: dict = {}
    for v in variants:
        groups.setdefault(find(("e", v[5][0][0])), []).append(v)
    row_of: dict = {e: i for i, e in enumerate(ctx.ia.graph.rows)}
    col_of: dict = {n: j for j, n in enumerate(ctx.ia.graph.cols)}
    out = []
    for vs in groups.values():
        merged = None
        if len(vs) > max_variants:
            eqs = sorted({e for v in vs for e in v[5][0]}, key=row_of.get)
            unk = sorted({u for v in vs for u in v[5][1]}, key=col_of.get)
            formula = vs[0][0]
            for v in vs[1:]:
                formula |= v[0]
            merged = merged_block(ctx, eqs, unk, formula)
        if merged is None:
            out.extend(vs)
        else:
            out.append(merged)
    return out


def _coarse_components(model: Model, ia, regular):
    """The components the analysis leaves coarse (one block for all modes, not split per
    mode), each with the single-equation blocks that solve its unknowns in some modes (the
    diode bank's ``Z_k``: ``u_k`` where diode k conducts, ``i_k`` where it blocks):
    ``([(equations, unknowns, formula)], absorbed blocks)``."""
    out: list = []
    absorbed: set[int] = set()
    row_of: dict = {e: i for i, e in enumerate(ia.graph.rows)}
    col_of: dict = {n: j for j, n in enumerate(ia.graph.cols)}
    for cb in ia.blocks:
        if not cb.coarse:
            continue
        U, Eq = set(cb.unknowns), set(cb.equations)
        extra = [b for b in ia.blocks if not b.coarse and set(b.unknowns) <= U
                 and not set(b.equations) & Eq]
        absorbed.update(id(b) for b in extra)
        eqs = sorted(Eq | {e for b in extra for e in b.equations}, key=lambda e: row_of[e])
        out.append((eqs, sorted(U, key=lambda u: col_of[u]), cb.formula & regular))
    return out, absorbed


def _limit0(g: sp.Expr, h: sp.Symbol):
    """The value at h = 0 of the expanded ``g``, None if a term has a negative power of h or
    h inside a function."""
    out = []
    for t in sp.Add.make_args(g):
        if h not in t.free_symbols:
            out.append(t)
            continue
        power = t.as_powers_dict().get(h, 0)
        rest = t / h ** power
        if h in rest.free_symbols or not power.is_number:
            return None
        if power < 0:
            return None
        if power == 0:
            out.append(t)
    return sp.Add(*out)


# --- C text ---------------------------------------------------------------------------------

def generate_guarded_sources(plan: GuardedPlan, ev) -> ModeSources:
    """C files of the guarded schedule, the restarts and the mode logic (module docstring)."""
    cm = plan.compiled
    pr = make_printers(cm, ev)
    p = pr.main
    env = template_environment()
    files = {}
    work, perm = 1, 1
    # --- guarded schedule
    n_files = 0
    for first in range(0, max(len(plan.blocks), 1), BLOCKS_PER_FILE):
        chunk = plan.blocks[first:first + BLOCKS_PER_FILE]
        helpers, functions, stmts = [], [], []
        for k, gb in enumerate(chunk, first):
            code = emit_block(gb.plan, k, pr.schedule)
            work = max(work, newton_work(len(gb.plan.unknowns)))
            perm = max(perm, len(gb.plan.unknowns))
            stmts.append(f"    if ({c_slot(Slot('i', plan.active_slot + k))}) {{ /* block {k}: "
                         f"{c_comment(gb.plan.label, 60)} */")
            stmts.extend(_copies(gb.sel.top if gb.sel else (), cm.slots, True))
            stmts.append(code.body)
            stmts.extend(_copies(gb.sel.top if gb.sel else (), cm.slots, False))
            stmts.append("    }")
            if code.helpers:
                helpers.append(code.helpers)
            if len(stmts) >= 3 * BLOCKS_PER_FUNCTION:
                functions.append("\n".join(stmts))
                stmts = []
        if stmts:
            functions.append("\n".join(stmts))
        files[f"model_guarded_{n_files}.c"] = env.get_template("model_schedule.c.j2").render(
            part=f"g{n_files}", comment_name=c_comment(cm.name), helpers="\n".join(helpers),
            functions=functions)
        n_files += 1
    # --- restarts: X+ in the state slots, X- in the left slots, ζ in the impulse slots
    rslots = dict(pr.schedule.slots)
    for sym, slot in plan.extra_slots.items():
        rslots[sym] = Slot("r", slot, name=str(sym))
    rp = SlotPrinter(rslots, pr.schedule.relations, pr.schedule.functions, local=True)
    restarts = []
    for k, gb in enumerate(plan.blocks):
        if gb.restart is None:
            continue
        code = emit_block(gb.restart, k, rp)
        work = max(work, newton_work(len(gb.restart.unknowns)))
        perm = max(perm, len(gb.restart.unknowns))
        sel = gb.sel.restart if gb.sel else ()
        restarts.append((k, code, _copies(sel, rslots, True), _copies(sel, rslots, False)))
    files["model_restarts.c"] = _restarts_file(cm, restarts)
    cons, n_rows = _consistency_context(plan, p)
    if n_rows:
        work = max(work, gauss_newton_work(n_rows, len(cm.states)))
        perm = max(perm, n_rows, len(cm.states))
    ft = plan.table
    files["model_modes.c"] = env.get_template("model_guarded.c.j2").render(
        comment_name=c_comment(cm.name), guards=[p.doprint(g) for g in plan.guards],
        guard_names=[c_string(g) for g in plan.guard_names], ng=len(plan.guards),
        nblocks=len(plan.blocks), parts=[f"g{k}" for k in range(n_files)],
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
        left_pairs=[(c_slot(cm.slot("r", a)), c_slot(cm.slot("r", b)))
                    for a, b in sorted(plan.left.items())],
        impulse_slots=[c_slot(cm.slot("r", k)) for k in sorted(plan.impulse.values())],
        discrete_assignments="\n".join(discrete_code(p, cm.discrete_assignments)
                                       + band_updates(p, plan.banded)),
        max_mode_changes=2 * len(plan.guards) + 8, nmodes=plan.n_modes,
        cons=cons, nst=len(cm.states), cons_block=_ints([c["k"] for c in cons]),
        cons_m=_ints([len(c["rows"]) for c in cons]),
        cons_soff=_ints(_offsets([c["states"] for c in cons])),
        cons_sidx=_ints([j for c in cons for j in c["states"]]),
        state_slots=_ints([s.slot for s in cm.states]))
    return ModeSources(files, n_rows, work, perm)


def _consistency_context(plan: GuardedPlan, printer):
    """Per block variant with consistency equations: its index, its rows as C and the
    states (indices into ``compiled.states``) they read; and the number of rows of all of
    them (a bound on the rows of one mode). The rows of a mode are those of its active
    variants: the drift (largest residual) and the projection of the states onto them
    (minimum-norm Gauss-Newton, as the enumerating exporter's per-mode projection; theory
    note 9334 §3.6: the consistency equations F^{<c} of the current mode)."""
    index = {s.slot: j for j, s in enumerate(plan.compiled.states)}
    state_slot = {s.symbol: s.slot for s in plan.compiled.states}
    out: list[dict] = []
    n_rows = 0
    for k, gb in enumerate(plan.blocks):
        if not gb.cons:
            continue
        read = sorted({index[state_slot[x]] for e in gb.cons for x in e.free_symbols
                       if x in state_slot})
        when = gb.sel.cons_when if gb.sel else (None,) * len(gb.cons)
        out.append(dict(k=k, states=read, rows=[
            ("1" if w is None else printer.doprint(w), printer.doprint(e))
            for w, e in zip(when, gb.cons)]))
        n_rows += len(gb.cons)
    return out, n_rows


def _copies(sel, slots: dict, gather: bool) -> list[str]:
    """C statements of a merged block's mode-selected unknowns (`mdae_fmu.codegen.merged`):
    where a flag is set, the instance into its proxy (``gather``: the solver's guess) or the
    proxy into the instance (after the solve)."""
    out = []
    for flag, proxy, target in sel:
        a, b = c_slot(slots[proxy], local=True), c_slot(slots[target], local=True)
        dst, src = (a, b) if gather else (b, a)
        out.append(f"    if ({c_slot(slots[flag])}) {dst} = {src};")
    return out


def _ints(values) -> str:
    return ", ".join(str(int(v)) for v in values) or "0"


def _offsets(lists) -> list[int]:
    out = [0]
    for x in lists:
        out.append(out[-1] + len(x))
    return out


def _restarts_file(cm: CompiledModel, restarts) -> str:
    """One function per block variant's restart and the dispatcher
    ``mdae_restart_block(inst, k)`` (0: done; 1: failed)."""
    parts = [f"/* mdae_fmu generated restarts of the block variants of model "
             f"{c_comment(cm.name)} (do not edit; mdae_fmu.codegen.guarded). */",
             "#include <math.h>", "#include <string.h>", "", '#include "mdae_model.h"', ""]
    for k, code, before, after in restarts:
        if code.helpers:
            parts.append(code.helpers)
        body = "\n".join([*before, code.body, *after])
        parts.append(f"static int restart{k}(ModelInstance *inst)\n{{\n"
                     "    ModelData *d = &inst->d;\n    double *r = d->r;\n"
                     f"    (void)d; (void)r;\n{body}\n    return 0;\n}}\n")
    parts.append("int mdae_restart_block(ModelInstance *inst, int k)\n{\n    switch (k) {")
    for k, *_ in restarts:
        parts.append(f"    case {k}: return restart{k}(inst);")
    parts.append("    default: (void)inst; return 0;\n    }\n}\n")
    return "\n".join(parts)
