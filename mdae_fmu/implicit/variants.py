"""Building the guarded block schedule (`mdae_fmu.implicit.schedule`) from the implicit
analysis: block variants, merged components, the order valid in every mode, the formula table
(docs/theory.md §10.2; docs/decisions.md §9).
"""

from __future__ import annotations

import heapq
from collections import ChainMap
from dataclasses import dataclass

import sympy as sp

from ..diagnostics import ModelRejected
from ..ir import Model
from ..modes.shiftform import constant_values
from ..structure.latent import latent_system
from ..structure.per_mode import Instance, symbol_table
from .analysis import ImplicitAnalysis, branch_residuals
from .formulas import conj
from .merged import MergeContext, case_split, limit0, merged_block
from .schedule import (STEP, BlockRows, DeltaRestart, FormulaTable, GuardedSchedule,
                       GuardedVariant, impulse_symbol, left_symbol)

MAX_VARIANTS = 200


def check_transient_equations(model: Model, switching: bool) -> None:
    """Whether a transient guard (``if edge(c) then``, ``change``, ``initial()``) selects an
    ordinary equation of ``model``. Such a guard is true at one instant only (docs/theory.md
    §5.2): it selects no long mode, and the implicit analysis holds it false
    (`mdae_fmu.structure.valuations.fixed_guard_values`), so the schedule's blocks are those of
    the long modes; the equations it selects are rows of the restart of the change into its
    transient mode (docs/theory.md §7, the impact law of the elastic Cup-and-Ball), which
    the mode-change analysis standardizes and the when-branch that reinits states runs at
    the event (`mdae_fmu.codegen.restarts.with_transient_restarts`) of the per-mode schedule
    (`mdae_fmu.analysis.with_single_schedule`): the guarded schedule runs no such instant.
    `ModelRejected` naming the equations and their lines; in a model with mode changes
    (``switching``) the change into a transient mode depends on the long mode it leaves (the
    one refusal of such a model: the enumerated analysis exports nothing)."""
    from ..structure.per_mode import is_event_guard
    bad = []
    for eq, ifs in zip(model.equations, model.if_conditions):
        conds = [lit.cond for lit in eq.guard]
        conds += ifs
        if any(is_event_guard(c) for c in conds):
            bad.append(f"{eq.id} ({eq.loc.short()})" if eq.loc else eq.id)
    if bad and switching:
        raise ModelRejected(
            f"model {model.name}: a transient guard (edge(c), initial()) selects the "
            f"equations {', '.join(bad)}, which the exporter of multimode models does not "
            f"support; a value that changes at the event belongs in a when-clause "
            f"(`when c then v = ...; end when;`, held until the next event)")
    if bad:
        raise ModelRejected(
            f"model {model.name}: equation {bad[0]} is selected by a transient guard (edge, "
            f"change, initial), whose instant the guarded schedule does not run; a model of "
            f"one long mode runs it on its per-mode schedule, what `mdae-fmu export` builds "
            f"for it")


#: Largest restart (unknowns) whose solution the reinit refusal states (`_moved_text`)
MAX_REPORTED_RESTART = 8


def _in_modes(space, formula) -> str:
    """"in the modes <formula over the guards>", or "in every mode" (a refusal's place)."""
    text = space.text(formula)
    return "in every mode" if text == "true" else f"in the modes {text}"


def check_literal_reinits(model: Model, variants, variables: tuple[str, ...], xleft: dict,
                          zeta: dict, space) -> None:
    """Refuse the reinits the guarded schedule cannot run as written (RR-9334 §3.5(b): at
    the event the fired branch assigns its states, then a mode change, if any, applies its
    own restart). That is the instant's restart only when the reinitialized states move no
    other state (docs/multimode-fmu.md, "When-clauses"): in every block variant that
    restarts a reinitialized state X, with X given (the row that determines its jump, its
    dynamics, gives way to the reinit for that instant, theory.md §6.6, RR-9334 (87)), and
    in every variant that reads X's jump, the other states must stay at rest (`_moving_unknowns`; a
    constraint that couples X to another state, such as two masses stuck together, moves
    that state too). `ModelRejected` naming the when-clause, its line, the modes and the
    moved state otherwise."""
    from ..ir import Reinit
    for w in model.whens:
        for br in w.branches:
            targets = {a.var for a in br.actions if isinstance(a, Reinit)}
            if not targets:
                continue
            line = next((a.loc.short() for a in br.actions
                         if isinstance(a, Reinit) and a.loc), model.name)
            for v in variants:
                moved = _moved_by_reinit(v, targets, variables, xleft, zeta)
                if moved:
                    # named again with the values the reinits give (only for the refusal)
                    moved = _moved_by_reinit(v, targets, variables, xleft, zeta,
                                             _reinit_values(model, br.actions)) or moved
                    raise ModelRejected(
                        f"model {model.name}: when-clause {w.id} ({line}): in the modes "
                        f"{space.text(v[0])} the restart of block {v[1].label} also moves "
                        f"{moved}, which the branch does not reinit; the exporter runs "
                        f"reinit statements as written and supports only restarts that move "
                        f"the reinitialized states alone")


def _reinit_values(model: Model, actions) -> dict:
    """``{Symbol("x+"): value}`` for each ``reinit(x, value)`` of ``actions``, the value in
    sympy with ``pre(y)`` as ``Symbol("y-")`` (the names of `_restart_values`); the reinits
    whose value has no symbolic form are left out."""
    from ..ir import Reinit
    table = symbol_table(model)
    out = {}
    for a in actions:
        if isinstance(a, Reinit):
            try:
                value = table.to_sympy(a.value)
            except (ValueError, TypeError, KeyError):
                continue
            pre = {table.pre(str(s)[4:-1]): sp.Symbol(f"{str(s)[4:-1]}-")
                   for s in value.free_symbols if str(s).startswith("pre(")}
            out[sp.Symbol(f"{a.var}+")] = value.xreplace(pre)
    return out


def _moved_by_reinit(v, targets: set, variables, xleft: dict, zeta: dict,
                     given: dict | None = None) -> str | None:
    """The states other than ``targets`` that the restart of the variant tuple ``v``
    moves when the states ``targets`` jump (`check_literal_reinits`), or None; with
    ``given`` (`_reinit_values`), each with its new value (`_moved_text`)."""
    _, _, restart, writes, reads, _, merged, _, _ = v
    if restart is None or not any(variables[j] in targets for j in (*writes, *reads)):
        return None
    if merged or isinstance(restart, DeltaRestart):
        return ", ".join(variables[j] for j in writes if variables[j] not in targets) or None
    own = [u for u in restart.unknowns if u in xleft and _variable_of(u, {}) in targets]
    rows = list(restart.rows)
    for x in own:                    # the reinit gives x's jump; its dynamics gives way
        k = next((i for i, r in enumerate(rows) if xleft[x] in r.free_symbols), None)
        if k is not None:
            del rows[k]
    rest = [u for u in restart.unknowns if u not in own]
    if len(rows) != len(rest):
        return ", ".join(str(u) for u in rest if u in xleft) or None
    moved = _moving_unknowns(BlockRows(label=restart.label, unknowns=tuple(rest), rows=tuple(rows)),
                             set(targets), xleft, zeta)
    return _moved_text(moved, rows, rest, targets, xleft, given or {})


def _moved_text(moved: set, rows: list, rest: list, targets: set, xleft: dict,
                given: dict) -> str | None:
    """The states other than ``targets`` whose value a restart changes (`_moved_by_reinit`:
    ``moved`` among the unknowns ``rest`` of ``rows``), each with its new value when the
    rows are linear and small (``v2 (v2+ = -v1-)``: ``x+`` the value after the event, ``x-``
    before; a reinitialized state's ``x+`` replaced by its value in ``given``). The variables
    themselves are named; the derivatives der(x) of a variable x that stays continuous are
    named only when no variable moves (they follow the variables they are tied to)."""
    others = sorted((u for u in moved if u in xleft and _variable_of(u, {}) not in targets),
                    key=str)
    plain = [u for u in others if str(u) == _variable_of(u, {})]
    named = plain or others
    if not named:
        return None
    values = _restart_values(rows, rest, xleft) if len(rest) <= MAX_REPORTED_RESTART else None
    parts = []
    for u in named:
        value = None if values is None else values.get(u)
        if value is not None:
            value = sp.simplify(value.xreplace(given))
        parts.append(f"{u} ({u}+ = {value})" if value is not None else str(u))
    return ", ".join(parts)


def _restart_values(rows: list, unknowns: list, xleft: dict) -> dict | None:
    """The solution of the linear restart ``rows`` for ``unknowns`` with the left limits
    named ``x-`` and the other instances (the reinitialized states) ``x+``; None when the
    rows are not linear or the system is singular."""
    try:
        a, b = sp.linear_eq_to_matrix(list(rows), list(unknowns))
        x = a.LUsolve(b)
    except (sp.PolynomialError, ValueError, ZeroDivisionError):
        return None
    names = {left: sp.Symbol(f"{inst}-") for inst, left in xleft.items()}
    names.update({inst: sp.Symbol(f"{inst}+") for inst in xleft})
    return {u: sp.simplify(x[i].xreplace(names)) for i, u in enumerate(unknowns)}


def formula_table(bdd, space, roots) -> tuple[FormulaTable, list[int]]:
    """Flatten the BDD nodes of ``roots`` (`FormulaTable`); the node of each root. Each node
    gets its index after its low then its high child (depth first, by an explicit stack: a
    recursive closure would be a reference cycle holding BDD nodes, which the garbage
    collector may finalize after their manager, `dd`'s "nodes still referenced")."""
    var_index = {space.var_of[a]: k for k, a in enumerate(space.atoms)}
    ids: dict = {}
    var: list[int] = []
    lo: list[int] = []
    hi: list[int] = []

    def index(u) -> int:
        """The index of ``u`` (-1 true, -2 false), -3 while it has none."""
        return -1 if u == bdd.true else -2 if u == bdd.false else ids.get(int(u), -3)

    out = []
    for root in roots:
        stack = [root]
        while stack:
            u = stack[-1]
            if index(u) != -3:
                stack.pop()
                continue
            low, high = bdd.let({u.var: False}, u), bdd.let({u.var: True}, u)
            todo = [c for c in (high, low) if index(c) == -3]
            if todo:
                stack.extend(todo)       # (the low child on top: indexed first)
                continue
            stack.pop()
            ids[int(u)] = len(var)
            var.append(var_index[u.var])
            lo.append(index(low))
            hi.append(index(high))
        out.append(index(root))
    return FormulaTable(var=tuple(var), lo=tuple(lo), hi=tuple(hi)), out


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
        f = conj(f, regular)
        if f != regular:
            cond.append((k, f))
    return cond


def guarded_schedule(model: Model, ia: ImplicitAnalysis,
                     max_variants: int | None = None,
                     initial: dict | None = None) -> GuardedSchedule:
    """The guarded block schedule of ``model`` from its accepted implicit analysis ``ia``
    (module docstring). A set of blocks coupled through their equations with more than
    ``max_variants`` variants is one block (`_merge_components`). ``initial``: the initial
    value of each guard condition (`GuardedSchedule.initial`). `ModelRejected` for what the
    schedule cannot hold (an equation selected by a transient guard,
    `check_transient_equations`), naming it."""
    if not ia.ok:
        raise ModelRejected(ia.diagnostic or f"model {model.name}: rejected")
    switching = bool(ia.space.atoms)
    check_transient_equations(model, switching)
    space = ia.space
    bdd = space.bdd
    F = bdd.false
    regular = space.care & ~ia.singular
    cols, rows = ia.graph.cols, ia.graph.rows
    dvals = {name: tuple(sorted(v for v, f in ia.d[j].items() if conj(f, regular) != F))
             or (0,)
             for j, name in enumerate(cols)}
    dmax = {n: v[-1] for n, v in dvals.items()}
    multi = {n for n, v in dvals.items() if len(v) > 1}
    table = symbol_table(model)
    states = [Instance(name=n, order=k) for n in cols for k in range(dmax[n])]
    leading = [Instance(name=n, order=dmax[n]) for n in cols if dmax[n] > 0]
    cond_states = _conditional_states(ia, regular, states)
    impulsive = [n for n in cols if dvals[n][0] == 0]
    var_id = {n: k for k, n in enumerate(cols)}
    zeta = {n: impulse_symbol(var_id[n]) for n in impulsive}
    xleft = {table.sym(s.name, s.order): left_symbol(k) for k, s in enumerate(states)}
    h = STEP

    eq_by_id = {eq.id: eq for eq in model.equations}
    params = constant_values(model, table.constants)
    row_of = {e: i for i, e in enumerate(rows)}
    col_of = {n: j for j, n in enumerate(cols)}

    variants = []        # (formula BDD, BlockRows, restart, writes, reads, origin, ...)
    cache: dict = {}
    # an equation without if-expressions is its one residual branch (`branch_residuals`)
    has_if = {eq.id: bool(ifs) for eq, ifs in zip(model.equations, model.if_conditions)}
    coarse, absorbed = _coarse_components(ia, regular)
    pending: list = []   # (formula, block, c, residual branches, dval, dkey) of each variant
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
            # the variant's own offsets over the union's (a view: a copy of the union's
            # per variant made the schedule quadratic in the variables)
            dval = ChainMap({k[1]: v for k, v in vals.items() if isinstance(k, tuple)},
                            dmax)
            dkey = tuple(sorted((u, dval[u]) for u in read & multi))
            sub: list = [(f, {})]
            for e in cb.equations:
                nxt = []
                residual = eq_by_id[e].residual
                for g, res in sub:
                    for bf, r in (branch_residuals(space, residual, g) if has_if[e]
                                  else ((g, residual),)):
                        nxt.append((bf, {**res, e: r}))
                sub = nxt
            pending.extend((g, cb, c, res, dval, dkey) for g, res in sub)
    # the rows of every variant, then the restart systems of those a change can restart
    built: list = []
    for again in (False, True):
        if again:
            moved = _restarted_variants(
                model, [(g, cb, c, b[2], b[3]) for (g, cb, c, *_), b in zip(pending, built)],
                regular if switching else None, var_id, [u for _, unk, _ in coarse for u in unk])
        for k, (g, cb, c, res, dval, dkey) in enumerate(pending):
            if again and k not in moved:
                continue
            try:
                if again:     # the rows built in the first pass, their restart now
                    restart = _variant_restart(cb, c, res, dval, table, xleft, h, cache,
                                               dkey, params, built[k][5])
                    built[k] = (built[k][0], restart, *built[k][2:])
                else:
                    built.append(_variant(cb, c, res, dval, table, xleft, zeta, h, var_id,
                                          cache, dkey, params, with_restart=False))
            except ModelRejected as err:        # named with the modes concerned
                raise ModelRejected(f"model {model.name}: {_in_modes(space, g)}: "
                                    f"{err.message}") from None
    for (g, cb, *_), (plan, restart, writes, reads, cons, _b) in zip(pending, built):
        variants.append((g, plan, restart, writes, reads,
                         (cb.equations, cb.unknowns), False, cons, None))

    if max_variants is None:
        max_variants = MAX_VARIANTS
    ctx = MergeContext(
        ia=ia,
        cache=cache,
        dmax=dmax,
        multi=multi,
        table=table,
        xleft=xleft,
        zeta=zeta,
        h=h,
        var_id=var_id,
    )
    variants = _merge_components(variants, ctx, max_variants)
    for eqs, unk, formula in coarse:
        merged = merged_block(ctx, eqs, unk, formula)
        if merged is None:
            raise ModelRejected(
                f"model {model.name}: {_in_modes(space, formula)}: the equations "
                f"{', '.join(eqs[:6])} form a union "
                f"component the implicit analysis does not split per mode, and it cannot be "
                f"solved as one block (its equations and unknowns do not match in every mode, "
                f"or it reads a mode-dependent variable it does not solve)")
        variants.append(merged)
    variants = _schedule_order(variants, table)
    check_literal_reinits(model, variants, tuple(cols), xleft, zeta, space)
    flags = list(ctx.flags.values())
    ft, roots = formula_table(bdd, space, [v[0] for v in variants]
                              + [f for _, f in cond_states] + [f for _, f in flags]
                              + [regular])
    state_roots = roots[len(variants):len(variants) + len(cond_states)]
    flag_roots = roots[len(variants) + len(cond_states):-1]
    out = tuple(GuardedVariant(formula=r, block=p, writes=w, reads=rd, origin=o, merged=mg,
                               cons=cons, sel=sel,
                               restart=None if isinstance(rs, DeltaRestart) else rs,
                               delta=rs if isinstance(rs, DeltaRestart) else None)
                for (_, p, rs, w, rd, o, mg, cons, sel), r in zip(variants, roots))
    return GuardedSchedule(
        model_name=model.name, guards=tuple(space.atoms), guard_names=tuple(space.names),
        variables=tuple(cols), states=tuple(states), leading=tuple(leading),
        impulsive=tuple(impulsive), variants=out, table=ft,
        cond_states=tuple((k, r) for (k, _), r in zip(cond_states, state_roots)),
        flags=tuple((sym, r) for (sym, _), r in zip(flags, flag_roots)),
        proxies=tuple(ctx.proxies), rproxies=tuple(ctx.rproxies), n_modes=ia.n_modes,
        impulse_outputs=impulse_outputs(out, tuple(cols), xleft, zeta),
        initial=_initial_bits(space, initial), modes=roots[-1],
        max_offset=max((v for case in ia.c for v, f in case.items() if conj(f, regular) != F),
                       default=0))


def _initial_bits(space, initial: dict | None) -> tuple[bool, ...] | None:
    """The initial value of each guard atom (bit order), None when one is not known."""
    if initial is None or any(a not in initial for a in space.atoms):
        return None
    return tuple(bool(initial[a]) for a in space.atoms)


def impulse_outputs(variants, variables: tuple[str, ...], xleft: dict,
                    zeta: dict) -> tuple[str, ...]:
    """The variables whose integral over a mode change, ζ, can be nonzero: the impulsive
    variables of order 1 (theory.md §9.2: ``v = ν/d``, ν the Dirac weight), the
    ``impulse(v)`` outputs of the FMU (docs/multimode-fmu.md, "Impulses").

    In schedule order, the restart unknowns of each variant that can be nonzero
    (`_moving_unknowns`: a ζ, or the jump X+ − X− of a state), given the variables that the
    earlier variants can move (their jumps and impulses are the sources of a later restart).
    A merged block, whose rows change with the mode, may move every unknown. The outputs are
    the variables with a ζ that can be nonzero, in the order of ``variables``."""
    back = {z: n for n, z in zeta.items()}
    state_var = {x: str(x) for x in xleft}
    moving: set[str] = set()
    for v in variants:
        if v.merged or v.delta is not None:
            moving.update(variables[j] for j in v.writes)
            continue
        if v.restart is None:
            continue
        for u in _moving_unknowns(v.restart, moving, xleft, zeta, back):
            moving.add(back[u] if u in back else _variable_of(u, state_var))
    return tuple(n for n in variables if n in moving and n in zeta)


def _variable_of(sym, names: dict) -> str:
    """The variable of an instance symbol (``x``, ``der(x)`` -> ``x``)."""
    text = names.get(sym, str(sym))
    while text.startswith("der(") and text.endswith(")"):
        text = text[4:-1].split(",")[0]
    return text


def _moving_unknowns(restart: BlockRows, moving: set[str], xleft: dict, zeta: dict,
                     back: dict | None = None) -> set:
    """The restart unknowns that can be nonzero: ζ for an algebraic unknown, the jump
    X+ − X− for a state (the unknown X itself is returned). ``moving``: the variables outside
    whose jump or ζ can be nonzero; the others keep their left limits (X = X−, ζ = 0).

    The restart system, with every state written X− + ΔX, is split into its block-triangular
    form (theory.md §2.3); in solve order a block is at rest when its rows vanish identically with
    its own unknowns and every unknown found at rest set to zero, and read nothing that can
    move (``back``: ``zeta`` inverted, when the caller has it). A block of a generically
    nonsingular system that has a zero right-hand side has
    the zero solution: its unknowns are then zero for every value of the model's parameters
    (a released clutch's ``J1 ΔW1 = ζ_f1``, ``ζ_f1 = 0``), the others generically not."""
    from ..structure.keyed import btf
    unknowns = list(restart.unknowns)
    jump = {u: sp.Dummy(f"jump_{u}") for u in unknowns if u in xleft}
    zeta_of = back if back is not None else {z: n for n, z in zeta.items()}
    # only the symbols the rows read (not every state and ζ of the model: that made the
    # planning of a drive line grow like n^2)
    read = set().union(*(r.free_symbols for r in restart.rows))
    outside = {}
    for x in read:
        if x in zeta_of and x not in unknowns and zeta_of[x] not in moving:
            outside[x] = sp.Integer(0)
        elif x in xleft and x not in jump and _variable_of(x, {}) not in moving:
            outside[x] = xleft[x]
    sub = {**outside, **{u: xleft[u] + d for u, d in jump.items()}}
    rows = [r.xreplace(sub) for r in restart.rows]
    var = {u: jump.get(u, u) for u in unknowns}
    sym_of = {s: u for u, s in var.items()}
    occ = {(str(i), 0): {sym_of[s] for s in r.free_symbols if s in sym_of}
           for i, r in enumerate(rows)}
    blocks = btf(list(occ), occ, unknowns)
    if sum(len(b.equations) for b in blocks) != len(rows):
        return set(unknowns)           # not structurally square: no claim that any rests
    rest = {var[u]: sp.Integer(0) for u in unknowns}
    at_rest: set = set()
    out: set = set()
    for blk in blocks:
        mine = {var[u]: sp.Integer(0) for u in blk.unknowns}
        live = {var[u] for u in unknowns if u not in at_rest and u not in blk.unknowns}
        still = True
        for key in blk.equations:
            r = rows[int(key[0])]
            if r.free_symbols & live or sp.expand(r.xreplace({**rest, **mine})) != 0:
                still = False
                break
        if still:
            at_rest.update(blk.unknowns)
        else:
            out.update(blk.unknowns)
    return out


def _written(plan: BlockRows, sel) -> tuple:
    """`GuardedVariant.written` of a variant tuple under construction."""
    return GuardedVariant(
        formula=0, block=plan, restart=None, writes=(), reads=(), sel=sel
    ).written()


def _schedule_order(variants, table=None):
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
        for x in v[1].symbols(table) - own:
            for w in writers.get(x, ()):
                if w != k and conj(variants[w][0], v[0]) != v[0].bdd.false:
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


def _restarted_variants(model: Model, variants: list, regular, var_id: dict,
                        coarse_unknowns: list) -> set[int]:
    """The positions of the block variants that a mode change can restart, each given as
    ``(formula, block, offsets c, writes, reads)`` (variable numbers, as `_variant` gives
    them); the others are *steady* and get no restart system (docs/theory.md §10.6).
    ``regular``: the formula of the regular modes, None for a model without guards (no mode
    change: every variant is steady).

    A variant restarts when it is new in the mode (its formula is not every regular mode:
    its rows change with the mode), reads the jump or impulse of a variable an earlier
    restart can move (``reads``, as the generated C's ``touched`` test), or restarts through
    consistency rows (an offset c >= 1: the rows hold at the state, not at its jump). Kept
    with a restart as well, so that the reinit and impulse-output checks see what they saw
    before: the variants that write or read a state a when-clause reinits. A breadth-first
    closure over the variables, linear in the variants and their reads."""
    targets = {var_id[v] for v in _reinit_targets(model) if v in var_id}
    readers: dict[int, list[int]] = {}
    for k, (_, _, _, _, reads) in enumerate(variants):
        for j in reads:
            readers.setdefault(j, []).append(k)
    out: set[int] = set()
    for k, (g, cb, c, writes, reads) in enumerate(variants):
        if (targets & {*writes, *reads}) or (regular is not None and (
                g != regular or any(c[e] >= 1 for e in cb.equations))):
            out.add(k)
    moving = set(targets)
    if regular is not None:
        moving.update(var_id[u] for u in coarse_unknowns)
        moving.update(j for k in out for j in variants[k][3])
    todo = list(moving)
    while todo:
        j = todo.pop()
        for k in readers.get(j, ()):
            if k in out:
                continue
            out.add(k)
            for w in variants[k][3]:
                if w not in moving:
                    moving.add(w)
                    todo.append(w)
    return out


@dataclass(frozen=True)
class _Rows:
    """What `_variant` built for a variant's rows that its restart system reuses
    (`_variant_restart`): the sympy residuals, the consistency rows ``{(equation, k): row}``,
    the substitutions of the block's own leading unknowns and of the jumps and impulses it
    reads, the restart's unknowns and the block's label."""
    residuals: dict
    lower: dict
    subs: dict
    outside: dict
    r_unknowns: tuple
    label: str


def _reinit_targets(model: Model) -> set[str]:
    """The variables a when-clause of ``model`` reinitializes."""
    from ..ir import Reinit
    return {a.var for w in model.whens for br in w.branches for a in br.actions
            if isinstance(a, Reinit)}


def _variant(cb, c, res, dval, table, xleft, zeta, h, var_id, cache, dkey=(),
             params=None, with_restart=True):
    """The rows of one block variant and its restart system (module docstring):
    ``(rows, restart, writes, reads, consistency rows, built)``, ``built`` the pieces the
    restart system reuses (`_variant_restart`). ``dval``: the offsets d of the variables in
    the variant's modes; ``dkey`` those of them that change with the mode. ``cache``: the
    sympy forms, derivatives and restart rows of each (equation, branch, offset, ``dkey``),
    which do not depend on the block (the substitutions of the restart are the same inside
    and outside it). ``with_restart``: False for a steady variant (`_restarted_variants`) or
    when the restart is built later from ``built``: its restart is None, the rest as with
    it."""
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
    plan = BlockRows(label=label, unknowns=unknowns, rows=tuple(top), tree=tree)
    # --- what the restart system substitutes
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
    cons = tuple(lower[(e, k)] for e in eqs for k in range(c[e]))
    built = _Rows(residuals=residuals, lower=lower, subs=subs, outside=outside,
                  r_unknowns=tuple(r_unknowns), label=label)
    restart = _variant_restart(cb, c, res, dval, table, xleft, h, cache, dkey, params,
                               built) if with_restart else None
    return plan, restart, tuple(writes), tuple(sorted(reads)), cons, built


def _variant_restart(cb, c, res, dval, table, xleft, h, cache, dkey, params, built: _Rows):
    """The restart system of a variant whose rows `_variant` built (``built``): per
    equation of offset c >= 1 its consistency row of order c - 1, per equation of offset 0
    the h -> 0 limit of h times its residual with the leading unknowns written as jumps and
    impulses (docs/theory.md §10.6), or the instant's own standard restart when an impulsive
    unknown enters non-affinely."""
    eqs = list(cb.equations)
    rows = []
    for e in eqs:
        if c[e] >= 1:
            rows.append(built.lower[(e, c[e] - 1)])
            continue
        key = ("restart", e, res[e], dkey)
        if key not in cache:
            cache[key] = limit0(sp.expand(h * built.residuals[e].xreplace(
                {**built.subs, **built.outside})), h)
        g0 = cache[key]
        if g0 is None:
            # an impulsive unknown enters non-affinely: the instant's own standard restart
            return _standard_restart(cb, c, built.residuals, dval, table, xleft, built.label,
                                     params)
        rows.append(g0)
    return BlockRows(label=f"restart {built.label}", unknowns=built.r_unknowns,
                     rows=tuple(rows), singular=restart_singularities(rows, built.r_unknowns),
                     levels=restart_levels(eqs, c, built.lower, table, cb.unknowns, dval,
                                           built.label))


def restart_levels(eqs, c: dict, lower: dict, table, unknowns, dval: dict,
                   label: str) -> tuple[BlockRows, ...]:
    """The lower levels of the standardized restart of a block with equations of offset
    c >= 2 (docs/theory.md §9.6; docs/decisions.md §8, "Levels"): level j (0 <= j <= c - 2)
    holds the consistency equations of order j of those equations, solved for the instances
    of the block's variables they read at the highest order, the others kept. For
    Cup-and-Ball's rope (c = 2) level 0 is ``L^2 - x^2 - y^2 = 0`` in ``x, y``: the position
    moves first (at shift level, the velocities carried over; its minimum-norm solution is
    the radial projection, the root nearest the left limits), then the restart rows give the
    velocities at the new position (jet level), as the enumerated analysis composes its two
    instants. Empty when every offset is at most 1."""
    top = max((c[e] for e in eqs), default=0)
    out = []
    for j in range(top - 1):
        rows = tuple(lower[(e, j)] for e in eqs if c[e] >= j + 2)
        high: dict[str, int] = {}
        for r in rows:
            for n, k in table.instances(r):
                if n in unknowns and k < dval[n]:
                    high[n] = max(high.get(n, -1), k)
        xs = tuple(table.sym(n, high[n]) for n in unknowns if n in high)
        if xs:
            out.append(BlockRows(label=f"level {j} of restart {label}", unknowns=xs, rows=rows))
    return tuple(out)


#: restarts with more unknowns than this are not given a determinant (its symbolic size)
MAX_DETERMINANT = 8


def restart_singularities(rows, unknowns) -> tuple:
    """The factors of the determinant of a restart system linear in its unknowns, each with
    the sum of the magnitudes of its terms (`BlockRows.singular`): two shafts whose inertias
    cancel give ``j1 + j2``, a rope restarted at the origin ``x**2 + y**2``. The check at run
    time names the vanishing factor, as the enumerated FMU's closed forms name their
    denominators; a constant determinant needs no check."""
    if not rows or len(unknowns) > MAX_DETERMINANT:
        return ()
    u = list(unknowns)
    m = sp.Matrix(list(rows)).jacobian(u)
    if any(e.free_symbols & set(u) for e in m):
        return ()                       # not linear in its unknowns
    det = sp.factor(m.det(method="berkowitz"))
    if det == 0:
        return ()
    out: dict[str, tuple] = {}
    for f in sp.Mul.make_args(det):
        base = f.base if f.is_Pow else f
        if base.is_number:
            continue
        terms = sp.Add.make_args(sp.expand(base))
        out.setdefault(str(base), (str(base), base, sp.Add(*[sp.Abs(t) for t in terms])))
    return tuple(out[k] for k in sorted(out))


def _standard_restart(cb, c, residuals, dval, table, xleft, label, params: dict):
    """The restart of a block whose local h -> 0 limit does not exist (an impulsive unknown
    enters non-affinely: the non-semilinear clutch's ``b1*f1^3``, RR-9334 (188)): the
    standard restart ``x+ = f(x-)`` of the instant that enters the block, by impulse analysis
    and standardization (`mdae_fmu.modes.block_restart`), as rows ``X - f = 0`` over the
    state instances it moves (a `BlockRows`), or without closed form its delta-scheme (a
    `DeltaRestart`); the block's own left limits are read from their hidden slots, every
    other variable at its current value. Its impulsive unknowns have an order other than 1
    (a zero integral), so no ζ is written. None when the standard restart moves none of the
    block's instances (every one keeps its left limit): a restart system of no unknown
    would be an empty linear block in the generated C."""
    from ..impulse.problem import left
    from ..modes.block_restart import block_restart_problem, standard_block_restart
    eqs = [(e, residuals[e], c[e]) for e in cb.equations]
    unknowns = {u: dval[u] for u in cb.unknowns}
    problem = block_restart_problem(table, eqs, unknowns, params, label)
    try:
        _, restart, delta = standard_block_restart(problem)
    except ModelRejected as err:
        raise ModelRejected(f"equations {', '.join(cb.equations)}: {err.message}") from None
    mine = {(u, k) for u, du in unknowns.items() for k in range(du)}

    def lefts(e: sp.Expr) -> dict:
        sub = {}
        for sym in e.free_symbols:
            if sym.name.endswith("-"):
                inst = _jet(sym.name[:-1])
                x = table.sym(*inst)
                sub[sym] = xleft[x] if inst in mine else x
        return sub

    if delta is not None:
        z = tuple(delta.z)
        eq = tuple(e.xreplace(lefts(e)) for e in delta.equations)
        jac = tuple((i, j, sp.diff(e, zj)) for i, e in enumerate(eq)
                    for j, zj in enumerate(z) if zj in e.free_symbols)
        targets = tuple((table.sym(*_jet(r.name[:-1])), t.xreplace(lefts(t)))
                        for r, t in sorted(delta.targets.items(), key=lambda kv: str(kv[0])))
        return DeltaRestart(z=z, h=delta.d, equations=eq, jacobian=jac, targets=targets)
    xs: list = []
    rows: list = []
    for eq in restart:
        inst = _jet(eq.lhs.name[:-1])
        if inst not in mine and eq.rhs == left(*inst):
            continue                    # a variable the block reads, unchanged
        x = table.sym(*inst)
        xs.append(x)
        rows.append(x - eq.rhs.xreplace(lefts(eq.rhs)))
    if not xs:
        return None         # the instant moves nothing: no restart system (of no unknown)
    return BlockRows(label=f"restart {label}", unknowns=tuple(xs), rows=tuple(rows))


def _jet(text: str) -> tuple[str, int]:
    """``(name, k)`` of a jet's text: ``x`` (0), ``der(x)`` (1), ``der(x,k)``."""
    if text.startswith("der(") and text.endswith(")"):
        inner = text[4:-1]
        name, _, k = inner.rpartition(",")
        return (name, int(k)) if name else (inner, 1)
    return text, 0



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

