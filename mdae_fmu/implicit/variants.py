"""Building the guarded block schedule (`mdae_fmu.implicit.schedule`) from the implicit
analysis: block variants, merged components, the order valid in every mode, the formula table
(docs/theory.md §10.2; docs/decisions.md §9).
"""

from __future__ import annotations

import heapq

import sympy as sp

from .. import expr as E
from ..diagnostics import ModelRejected
from ..ir import Model
from ..structure.latent import latent_system
from ..structure.per_mode import Instance, symbol_table
from .analysis import ImplicitAnalysis, branch_residuals
from .merged import MergeContext, case_split, limit0, merged_block
from .schedule import (STEP, BlockRows, FormulaTable, GuardedSchedule, GuardedVariant,
                       impulse_symbol, left_symbol)

MAX_VARIANTS = 200


def check_long_modes_only(model: Model, switching: bool) -> None:
    """The guarded schedule has long modes only: a transient guard (``if edge(c) then``) in an
    equation, or a reinit statement in a model with mode changes (``switching``), needs the
    mode-change automaton's transient modes and analysed reinits
    (`mdae_fmu.codegen.multimode`), so the model is refused naming it."""
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


def formula_table(bdd, space, roots) -> tuple[FormulaTable, list[int]]:
    """Flatten the BDD nodes of ``roots`` (`FormulaTable`); the node of each root."""
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


def _conditional_states(ia: ImplicitAnalysis, regular, instances) -> list:
    """The union states that are states in some modes only (a variable whose offset d
    changes with the mode: the diode bank's currents, differentiated while every diode
    blocks): ``[(k, formula)]`` with k the position in ``instances`` and the formula of the
    modes where it is a state. Where it is not a state, a block computes the variable as an
    algebraic unknown (or nothing reads it), so code generation holds its state vector entry
    apart (docs/theory.md §11: one state vector for all modes)."""
    bdd = ia.space.bdd
    col_of = {n: j for j, n in enumerate(ia.graph.cols)}
    cond = []
    for k, inst in enumerate(instances):
        f = bdd.false
        for v, fv in ia.d[col_of[inst.name]].items():
            if v > inst.order:
                f |= fv
        f &= regular
        if f != regular:
            cond.append((k, f))
    return cond


def guarded_schedule(model: Model, ia: ImplicitAnalysis,
                     max_variants: int | None = None) -> GuardedSchedule:
    """The guarded block schedule of ``model`` from its accepted implicit analysis ``ia``
    (module docstring). A set of blocks coupled through their equations with more than
    ``max_variants`` variants is one block (`_merge_components`). `ModelRejected` for what
    the schedule cannot hold, naming it."""
    if not ia.ok:
        raise ModelRejected(ia.diagnostic or f"model {model.name}: rejected")
    check_long_modes_only(model, bool(ia.space.atoms))
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
    cond_states = _conditional_states(ia, regular, states)
    impulsive = [n for n in cols if dvals[n][0] == 0]
    var_id = {n: k for k, n in enumerate(cols)}
    zeta = {n: impulse_symbol(var_id[n]) for n in impulsive}
    xleft = {table.sym(s.name, s.order): left_symbol(k) for k, s in enumerate(states)}
    h = STEP

    eq_by_id = {eq.id: eq for eq in model.equations}
    row_of = {e: i for i, e in enumerate(rows)}
    col_of = {n: j for j, n in enumerate(cols)}

    variants = []        # (formula BDD, BlockRows, restart, writes, reads, origin, ...)
    cache: dict = {}
    coarse, absorbed = _coarse_components(ia, regular)
    for cb in ia.blocks:
        if cb.coarse or id(cb) in absorbed:
            continue
        parts: list = [(cb.formula & regular, {})]
        for e in cb.equations:
            parts = case_split(parts, e, ia.c[row_of[e]])
        # the offsets of every unknown of the block, and of the mode-dependent variables
        # its equations read (their jumps or impulses enter its restart)
        read = {cols[j] for e in cb.equations for j in ia.graph.sig[row_of[e]]}
        for u in [*cb.unknowns, *sorted((read & multi) - set(cb.unknowns))]:
            parts = case_split(parts, ("d", u), ia.d[col_of[u]])
        for f, vals in parts:
            c = {e: vals[e] for e in cb.equations}
            dval = {**dmax, **{k[1]: v for k, v in vals.items() if isinstance(k, tuple)}}
            dkey = tuple(sorted((u, dval[u]) for u in read & multi))
            sub: list = [(f, {})]
            for e in cb.equations:
                nxt = []
                for g, res in sub:
                    for bf, r in branch_residuals(space, eq_by_id[e].residual, g):
                        nxt.append((bf, {**res, e: r}))
                sub = nxt
            for g, res in sub:
                plan, restart, writes, reads, cons = _variant(
                    cb, c, res, dval, table, xleft, zeta, h, var_id, cache, dkey)
                variants.append((g, plan, restart, writes, reads,
                                 (cb.equations, cb.unknowns), False, cons, None))

    if max_variants is None:
        max_variants = MAX_VARIANTS
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
    ft, roots = formula_table(bdd, space, [v[0] for v in variants]
                              + [f for _, f in cond_states] + [f for _, f in flags])
    state_roots = roots[len(variants):len(variants) + len(cond_states)]
    flag_roots = roots[len(variants) + len(cond_states):]
    out = tuple(GuardedVariant(formula=r, block=p, restart=rs, writes=w, reads=rd, origin=o,
                               merged=mg, cons=cons, sel=sel)
                for (_, p, rs, w, rd, o, mg, cons, sel), r in zip(variants, roots))
    return GuardedSchedule(
        model_name=model.name, guards=tuple(space.atoms), guard_names=tuple(space.names),
        variables=tuple(cols), states=tuple(states), leading=tuple(leading),
        impulsive=tuple(impulsive), variants=out, table=ft,
        cond_states=tuple((k, r) for (k, _), r in zip(cond_states, state_roots)),
        flags=tuple((sym, r) for (sym, _), r in zip(flags, flag_roots)),
        proxies=tuple(ctx.proxies), rproxies=tuple(ctx.rproxies), n_modes=ia.n_modes)


def _written(plan: BlockRows, sel) -> tuple:
    """`GuardedVariant.written` of a variant tuple under construction."""
    return GuardedVariant(0, plan, None, (), (), sel=sel).written()


def _schedule_order(variants):
    """The variants in an order valid in every mode: a variant after every variant that
    writes an instance it reads in a mode of both formulas. Inside one union component the
    analysis lists its per-mode blocks by member, not in each mode's dependency order (the
    diode bank: ``kvl0`` solves ``u0`` from the ``V`` that ``kvl1`` solves when diode 1
    alone conducts, and ``kvl1`` solves ``u1`` from the ``V`` of ``kvl0`` when diode 0
    alone conducts). Kahn's algorithm, taking the earliest ready variant first, so an order
    that is already valid is kept; on a cycle of pairwise-compatible formulas (no mode has
    it whole) the rest keeps the analysis order."""
    writers: dict = {}
    for k, v in enumerate(variants):
        for x in _written(v[1], v[8]):
            writers.setdefault(x, []).append(k)
    after: list[set] = [set() for _ in variants]
    for k, v in enumerate(variants):
        own = set(_written(v[1], v[8])) | set(v[1].unknowns)
        for x in v[1].symbols() - own:
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
    """The rows of one block variant and its restart system (module docstring). ``dval``:
    the offsets d of the variables in the variant's modes; ``dkey`` those of them that change
    with the mode. ``cache``: the sympy forms, derivatives and restart rows of each (equation,
    branch, offset, ``dkey``), which do not depend on the block (the substitutions of the
    restart are the same inside and outside it)."""
    eqs = list(cb.equations)
    unknowns = tuple(table.sym(u, dval[u]) for u in cb.unknowns)
    label = "+".join(f"{e}" + "'" * c[e] for e in eqs)
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
    tree = res[eqs[0]] if len(eqs) == 1 and c[eqs[0]] == 0 else None
    plan = BlockRows(label, unknowns, tuple(top), tree)
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
            cache[key] = limit0(sp.expand(h * residuals[e].xreplace({**subs, **outside})), h)
        g0 = cache[key]
        if g0 is None:
            raise ModelRejected(
                f"equation {e}: its restart (block {label}) has no limit as the instant's "
                f"length goes to 0 (not affine in the impulsive unknowns); the guarded "
                f"exporter needs affine impulsive terms")
        rows.append(g0)
    restart = BlockRows(f"restart {label}", tuple(r_unknowns), tuple(rows))
    return plan, restart, tuple(writes), tuple(sorted(reads)), cons


def _merge_components(variants, ctx: MergeContext, max_variants: int):
    """Blocks coupled through their equations or unknowns (one union component of the
    analysis) with more than ``max_variants`` variants become ONE block over the union of
    their unknowns, valid in every mode (`mdae_fmu.implicit.merged`: equations, their orders
    and the unknowns' leading instances selected by the guard bits; docs/decisions.md §9).
    Code then grows with the equations, not with the runs of engaged clutches or the subsets
    of conducting diodes. A component that cannot be one block keeps its variants."""
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
            eqs = sorted({e for v in vs for e in v[5][0]}, key=lambda e: row_of[e])
            unk = sorted({u for v in vs for u in v[5][1]}, key=lambda u: col_of[u])
            formula = vs[0][0]
            for v in vs[1:]:
                formula |= v[0]
            merged = merged_block(ctx, eqs, unk, formula)
        if merged is None:
            out.extend(vs)
        else:
            out.append(merged)
    return out


def _coarse_components(ia: ImplicitAnalysis, regular) -> tuple[list, set[int]]:
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

