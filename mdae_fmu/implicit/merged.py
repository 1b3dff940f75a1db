"""One block for a whole coupled component of the guarded schedule (issue 17): its equations,
their differentiation orders and its unknowns selected by the guard bits at run time, instead
of one block per mode-dependent variant (`mdae_fmu.implicit.schedule`).

Theory: docs/theory.md §10.2 (the "mDAE interpreter": one dependency graph whose equations and
unknowns carry the formula of the modes where they hold, IsamDAE's conditional dependency graph);
docs/theory.md §11 (per mode, the index-reduced system F^(c) = 0 in the leading instances x^(d))
and docs/theory.md §8.3, §9 (the restart). The rule is in docs/decisions.md §9 ("Merged
components").

In the modes of the component every equation e has an offset c_e and every unknown x an
offset d_x, both functions of the mode (`ImplicitAnalysis.c`, `.d`). The merged block has
one row per equation and one unknown per variable:

* row e is F_e^(c_e) for the current mode's c_e and branch of its if-expressions, a
  `sympy.Piecewise` whose conditions are *selection flags* (Integer slots set from BDD walks
  at each mode change, like the activity flags); the branches of an if-equation, each an
  equation of its own that exists in some modes, share one row (`row_groups`);
* the unknown of a variable whose offset changes with the mode is a proxy ``w_x`` standing
  for its leading instance x^(d_x) of the current mode: row pieces are split by the offsets
  of the variables they read and, in each piece, x^(d_x) is replaced by ``w_x``; the C copies
  the leading instance's slot into ``w_x`` before the solve (the Newton guess) and ``w_x``
  back into that slot after it. Lower instances x^(k), k < d_x, are the states they are in
  that mode. The Jacobian in the proxies is therefore, in every mode, the Jacobian of that
  mode's index-reduced system in its leading unknowns, solved as one system (from 12
  unknowns by the runtime's sparse LU kept while the mode does not change,
  templates/mdae_sparse.c, docs/decisions.md §16);
* the restart row of a piece is the local restart of `mdae_fmu.implicit.schedule` with the
  piece's offsets, its unknown the proxy ``r_x`` of X+ = x^(d_x - 1) (d_x >= 1) or the
  impulse ζ_x (d_x = 0), scattered likewise;
* the consistency equations F_e^(k), k < c_e, are rows of the drift and of the projection in
  the modes where c_e > k only (a flag per row).
"""

from __future__ import annotations

from collections import ChainMap
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from ..diagnostics import ModelRejected
from ..structure.latent import latent_system
from .analysis import branch_residuals
from .formulas import conj
from .schedule import BlockRows, Selection


@dataclass
class MergeContext:
    """What the merged blocks of one schedule share: the analysis, the sympy cache of
    `mdae_fmu.implicit.schedule`, the union offsets ``dmax`` and mode-dependent variables
    ``multi``, the restart symbols, and the selection flags (BDD node id -> (symbol, BDD))."""
    ia: Any
    cache: dict
    dmax: dict
    multi: set
    table: object
    xleft: dict
    zeta: dict
    h: sp.Symbol
    var_id: dict
    flags: dict = field(default_factory=dict)
    proxies: list = field(default_factory=list)     # top proxies, in creation order
    rproxies: list = field(default_factory=list)    # restart proxies

    def flag(self, f) -> sp.Symbol:
        """The selection flag of the modes of the BDD ``f``."""
        key = int(f)
        if key not in self.flags:
            self.flags[key] = (sp.Symbol(f"mdae_sel_{len(self.flags)}"), f)
        return self.flags[key][0]


def piecewise(pieces):
    """One expression from ``[(expr, condition)]`` with disjoint conditions covering the
    block's modes (the last one taken as the default)."""
    if len(pieces) == 1 or all(p[0] == pieces[0][0] for p in pieces):
        return pieces[0][0]
    return sp.Piecewise(*pieces[:-1], (pieces[-1][0], True))


def case_split(parts, key, case: dict):
    """Refine ``[(formula, {key: value})]`` by the case function ``{value: formula}``."""
    out = []
    for f, vals in parts:
        for v, fv in case.items():
            m = conj(f, fv)
            if m != m.bdd.false:
                out.append((m, {**vals, key: v}))
    return out


def limit0(g: sp.Expr, h: sp.Symbol):
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


def restart_row(r, dval, table, xleft, zeta, h):
    """The restart row of an offset-0 equation ``r`` (`mdae_fmu.implicit.schedule` module
    docstring): leading derivatives as (X+ − X−)/h, algebraic unknowns as ζ/h, times h, at
    h = 0; None when the limit does not exist."""
    subs = {}
    for (n, k) in table.instances(r):
        if n not in dval:
            continue
        d = dval[n]
        if d >= 1 and k == d:
            Y = table.sym(n, d - 1)
            subs[table.sym(n, k)] = (Y - xleft[Y]) / h
        elif d == 0 and k == 0:
            subs[table.sym(n, 0)] = zeta[n] / h
    return limit0(sp.expand(h * r.xreplace(subs)), h)


def merged_block(ctx: MergeContext, eqs, unk, formula):
    """The variant tuple of `mdae_fmu.implicit.schedule.guarded_schedule` for ONE block solving
    ``unk`` from ``eqs`` in the modes of ``formula`` (module docstring), with its `Selection`
    as a ninth entry; None when the component cannot be one block: its equations do not fall
    into as many rows as it has unknowns (`row_groups`), or it reads a variable whose offset
    changes with the mode that it does not solve."""
    ia = ctx.ia
    row_of = {e: i for i, e in enumerate(ia.graph.rows)}
    col_of = {n: j for j, n in enumerate(ia.graph.cols)}
    read = {ia.graph.cols[j] for e in eqs for j in ia.graph.sig[row_of[e]]}
    if (read & ctx.multi) - set(unk):
        return None
    groups = row_groups(ia, eqs, formula)
    if groups is None or len(groups) != len(unk):
        return None
    dcase = {u: {v: f & formula for v, f in ia.d[col_of[u]].items()
                 if f & formula != ia.space.bdd.false} for u in unk}
    proxy = {u: sp.Symbol(f"mdae_w_{ctx.var_id[u]}") for u in unk if len(dcase[u]) > 1}
    rproxy = {u: sp.Symbol(f"mdae_rw_{ctx.var_id[u]}") for u in proxy}
    top_rows, restart_rows, cons, when = [], [], [], []
    reads: set[int] = set()
    for group in groups:
        pieces, rpieces = [], []
        for e in group:
            top, rst, low = _equation_rows(ctx, e, formula, proxy, rproxy, set(unk), reads)
            pieces += top
            rpieces += rst
            for fk, row in low:
                cons.append(row)
                when.append(None if fk == formula else ctx.flag(fk))
        top_rows.append(piecewise(pieces))
        restart_rows.append(piecewise(rpieces))
    return _assemble(ctx, [e for g in groups for e in g], unk, formula, proxy, rproxy, dcase,
                     top_rows, restart_rows, cons, when, reads)


def row_groups(ia, eqs, formula) -> list[tuple[str, ...]] | None:
    """The rows of a merged block: each equation that exists in every mode of ``formula`` is
    a row; the others are grouped so that the equations of a group exist in disjoint sets of
    modes that together cover ``formula`` (the branches of an if-equation: a clutch's
    ``w_a = w_b`` where it is engaged and ``tau = 0`` where it is not), a row being the one
    member that exists in the current mode. When every mode's system is square (the
    analysis's perfect matching), a grouping into as many rows as unknowns makes the merged
    block square in every mode, its Jacobian that mode's up to the order of the rows. First
    fit, the equations in the model's order; None when a group does not cover ``formula``."""
    bdd = ia.space.bdd
    F = bdd.false
    row_of = {e: i for i, e in enumerate(ia.graph.rows)}
    groups: list[list] = []              # [members, the union of their modes]
    out: list[tuple[str, ...]] = []
    for e in eqs:
        p = F
        for f in ia.c[row_of[e]].values():
            p |= f
        p &= formula
        if p == formula:
            out.append((e,))
            continue
        for g in groups:
            if g[1] & p == F:
                g[0].append(e)
                g[1] |= p
                break
        else:
            groups.append([[e], p])
    for members, union in groups:
        if union != formula:
            return None
        out.append(tuple(members))
    return out


def _assemble(ctx, eqs, unk, formula, proxy, rproxy, dcase, top_rows, restart_rows, cons,
              when, reads):
    """The variant tuple of `merged_block` from its rows."""
    table, zeta = ctx.table, ctx.zeta
    dm = {u: next(iter(dcase[u])) for u in unk}
    unknowns = tuple(proxy.get(u, table.sym(u, dm[u])) for u in unk)
    r_unknowns = tuple(rproxy.get(u) or (table.sym(u, dm[u] - 1) if dm[u] >= 1 else zeta[u])
                       for u in unk)
    top_sel, rst_sel = [], []
    for u in proxy:
        for v, fv in sorted(dcase[u].items()):
            flag = ctx.flag(fv)
            top_sel.append((flag, proxy[u], table.sym(u, v)))
            rst_sel.append((flag, rproxy[u], table.sym(u, v - 1) if v >= 1 else zeta[u]))
    ctx.proxies.extend(proxy.values())
    ctx.rproxies.extend(rproxy.values())
    label = "+".join(eqs[:3]) + (f"+...({len(eqs)} equations)" if len(eqs) > 3 else "")
    plan = BlockRows(label=label, unknowns=unknowns, rows=tuple(top_rows))
    restart = BlockRows(label=f"restart {label}", unknowns=r_unknowns, rows=tuple(restart_rows))
    sel = Selection(top=tuple(top_sel), restart=tuple(rst_sel), cons_when=tuple(when))
    return (formula, plan, restart, tuple(ctx.var_id[u] for u in unk), tuple(sorted(reads)),
            (tuple(eqs), tuple(unk)), True, tuple(cons), sel)


def _pieces(ctx, e, formula):
    """``[(BDD, c, offsets, residual branch)]``: the modes of ``formula`` split by the offset
    c of ``e``, the offsets of the mode-dependent variables it reads and its branches."""
    ia = ctx.ia
    row = {x: i for i, x in enumerate(ia.graph.rows)}[e]
    col_of = {n: j for j, n in enumerate(ia.graph.cols)}
    eq = next(q for q in ia.model.equations if q.id == e)
    reads = sorted({ia.graph.cols[j] for j in ia.graph.sig[row]} & ctx.multi)
    parts = case_split([(formula, {})], "c", ia.c[row])
    for u in reads:
        parts = case_split(parts, ("d", u), ia.d[col_of[u]])
    out = []
    for f, vals in parts:
        dval = ChainMap({k[1]: v for k, v in vals.items() if isinstance(k, tuple)}, ctx.dmax)
        for bf, res in branch_residuals(ia.space, eq.residual, f):
            out.append((bf, vals["c"], dval, res, tuple((u, dval[u]) for u in reads)))
    return out


def _equation_rows(ctx, e, formula, proxy, rproxy, mine, reads):
    """The pieces ``[(expression, flag)]`` of the row and of the restart row of equation
    ``e`` in the modes of ``formula`` where it exists, and its consistency rows ``[(BDD,
    row)]`` (module docstring); adds to ``reads`` the variables outside the block whose jump
    or impulse its restart reads."""
    table, cache = ctx.table, ctx.cache
    pieces, rpieces, lows = [], [], {}
    for bf, c, dval, res, dkey in _pieces(ctx, e, formula):
        key = (e, res, c)
        if key not in cache:
            r = table.to_sympy(res)
            t, cons = latent_system(table, {e: r}, {e: c}, [e])
            cache[key] = (r, t[0][2], {k: x for _, k, x in cons})
        r, top, low = cache[key]
        if c >= 1:
            row = low[c - 1]
        else:
            rkey = ("restart", e, res, dkey)
            if rkey not in cache:
                cache[rkey] = restart_row(r, dval, table, ctx.xleft, ctx.zeta, ctx.h)
            row = cache[rkey]
            if row is None:
                raise ModelRejected(
                    f"equation {e}: its restart has no limit as the instant's length goes to "
                    f"0 (not affine in the impulsive unknowns)")
        sel = {u: d for u, d in dkey if u in proxy}
        top = top.xreplace({table.sym(u, d): proxy[u] for u, d in sel.items()})
        row = row.xreplace({(table.sym(u, d - 1) if d >= 1 else ctx.zeta[u]): rproxy[u]
                            for u, d in sel.items()})
        flag = ctx.flag(bf)
        pieces.append((top, flag))
        rpieces.append((row, flag))
        for k in range(c):
            lows.setdefault(k, []).append((low[k], bf))
        for (n, k) in table.instances(r):
            if n not in mine and n in dval and (k == dval[n] or dval[n] == 0):
                reads.add(ctx.var_id[n])
    cons = []
    for k in sorted(lows):
        fk = lows[k][0][1].bdd.false
        for _, bf in lows[k]:
            fk |= bf
        cons.append((fk, piecewise([(x, ctx.flag(bf)) for x, bf in lows[k]])))
    return pieces, rpieces, cons
