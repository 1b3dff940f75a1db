"""The when-clause and transient-mode checks of the one analysis (issue 26, docs/multimode.md
"One analysis"): what the enumerated path checks mode by mode, decided for every mode at once
from the implicit analysis, and reported as the formula of the modes concerned with one
concrete mode of it, analysed and worded by the enumerated path's own functions.

* E-EVENT-DER (`mdae_fmu.structure.when_clauses`): a when-condition, when-equation or
  assertion reads ``der^k(v)``, which a mode computes only when ``k <= d_v`` in it; the modes
  that do not are those where the offset ``d_v < k`` (docs/theory.md §4.6, §10.2).
* E-WHEN-LOOP through the continuous equations: at an event instant the equation of a
  when-variable reads a value that a block of the mode's schedule computes from a
  when-variable, and back (Modelica 3.6 §8.6; docs/theory.md §5.4). The instant graph of
  every mode at once has the edges of the conditional blocks (docs/theory.md §10.2), each
  labelled with the modes where the block computes that instance; the modes with a cycle
  through a when-variable are found by labelled reachability.
* E-CASCADE-INFINITE (docs/theory.md §7.4, Assumption 4; `mdae_fmu.modes.continuations`):
  the continuations of a transient mode read its transient guards alone, so they are
  checked per set of transient guards that can hold together, not per long mode; none is
  needed when the guards' triggering graph (`may_trigger`) has no cycle.
"""

from __future__ import annotations

import itertools
from typing import Any  # BDD nodes of the optional, untyped dd package

from ..diagnostics import MdaeError
from ..ir import Model
from ..structure.per_mode import ModeAnalysis
from ..structure.printing import expr_text
from ..structure.when_clauses import (computed_derivatives, event_derivative_message,
                                      event_derivative_reads, instance_node, instant_reads,
                                      through_continuous_message, when_instant_graph,
                                      when_loop_message)
from .analysis import ImplicitAnalysis, concrete_mode, pick_mode

#: Concrete modes of a cycle's formula tried before its rejection is dropped (a coarse block,
#: solved as one system, over-approximates the instant graph: `_coupled_loop`)
MAX_LOOP_PICKS = 16


def event_problems(model: Model, ia: ImplicitAnalysis) -> list[str]:
    """The rejections of the checks of the module docstring for ``model`` (the form the
    implicit analysis ``ia`` analysed, accepted), each with the formula of the modes
    concerned and one concrete mode; empty when there is none."""
    out = []
    if when_loop_message(model) is None:      # (reported without a mode otherwise)
        loop = _coupled_loop(model, ia)
        if loop:
            out.append(loop)
    out.extend(_derivative_problems(model, ia))
    out.extend(_cascade_problems(model, ia))
    return out


def _modes_line(ia: ImplicitAnalysis, formula, what: str = "modes") -> str:
    """``  in N of M modes: <formula>`` (the form of `analyze_implicit`'s singular modes)."""
    space = ia.space
    if formula == space.care:
        return f"\n  in every one of the {ia.n_modes} {what}"
    return f"\n  in {space.count(formula)} of {ia.n_modes} {what}: {space.text(formula)}"


def _regular(ia: ImplicitAnalysis):
    return ia.space.care & ~ia.singular & ~ia.undecided


def _derivative_problems(model: Model, ia: ImplicitAnalysis) -> list[str]:
    """E-EVENT-DER: per derivative ``der^k(v)`` read at events, the modes where ``d_v < k``
    (all of them when v is no continuous unknown), and the message of the enumerated path
    on one of them, which its per-mode analysis confirms (`computed_derivatives`)."""
    reads = event_derivative_reads(model)
    if not reads:
        return []
    bdd = ia.space.bdd
    regular = _regular(ia)
    col = {n: j for j, n in enumerate(ia.graph.cols)}
    several = ia.n_modes > 1
    picked: dict[Any, ModeAnalysis] = {}
    out = []
    for what, loc, v, k in reads:
        j = col.get(v)
        f = regular
        if j is not None:
            f = bdd.false
            for o, fo in ia.d[j].items():
                if o < k:
                    f |= fo
            f &= regular
        if f == bdd.false:
            continue
        if f not in picked:
            picked[f] = concrete_mode(ia, f)[1]
        mode = picked[f]
        if (v, k) in computed_derivatives(mode):     # (the offsets say otherwise: a bug)
            raise AssertionError(f"E-EVENT-DER: mode {mode.name} computes der^{k}({v}), "
                                 f"which the implicit offsets say it does not")
        out.append(event_derivative_message(what, loc, v, k, [mode.name], several)
                   + _modes_line(ia, f))
    return out


def _instant_edges(model: Model, ia: ImplicitAnalysis) -> dict[tuple[str, str], Any]:
    """The edges of the instant graph of every mode (`when_clauses._mode_graphs` per mode),
    each with the formula of the modes that have it: ``u -> v`` when the equation of ``v`` in
    a when-body reads ``u`` (every mode), or when a conditional block computes ``v`` (the
    instance of its unknown at the mode's offset, where one of its equations is assigned to
    that unknown) and one of its equations reads ``u``, which the block does not compute."""
    bdd = ia.space.bdd
    F = bdd.false
    regular = _regular(ia)
    edges: dict[tuple[str, str], Any] = {e: regular for e in when_instant_graph(model).edges}
    by_id = {eq.id: eq for eq in model.equations}
    col = {n: j for j, n in enumerate(ia.graph.cols)}
    row = {r: i for i, r in enumerate(ia.graph.rows)}
    for blk in ia.blocks:
        f = blk.formula & regular
        if f == F:
            continue
        outs: dict[str, Any] = {}
        for u in blk.unknowns:
            j = col[u]
            assigned = F
            for eq_id in blk.equations:
                assigned |= ia.match[row[eq_id]].get(j, F)
            for o, fo in ia.d[j].items():
                m = f & fo & assigned
                if m != F:
                    node = instance_node(u, o)
                    outs[node] = outs.get(node, F) | m
        reads: set[str] = set()
        for eq_id in blk.equations:
            eq = by_id.get(eq_id)
            if eq is not None:
                reads |= instant_reads(eq.residual)
        for r in sorted(reads):
            not_out = ~outs.get(r, F)
            for v, fv in outs.items():
                e = fv & not_out
                if v != r and e != F:
                    edges[(r, v)] = edges.get((r, v), F) | e
    return edges


def _cycle_formula(ia: ImplicitAnalysis, edges: dict[tuple[str, str], Any],
                   starts: set[str]):
    """The modes in which a cycle of the labelled graph ``edges`` passes through a node of
    ``starts``: labelled forward reachability from each (a node's formula only grows, so the
    propagation ends)."""
    bdd = ia.space.bdd
    F = bdd.false
    succ: dict[str, list[tuple[str, Any]]] = {}
    for (u, v), f in edges.items():
        succ.setdefault(u, []).append((v, f))
    regular = _regular(ia)
    found = F
    for s in sorted(starts):
        reach = {s: regular}
        frontier = {s: regular}
        while frontier:
            nxt: dict[str, Any] = {}
            for u, modes in frontier.items():
                for v, e in succ.get(u, ()):
                    m = modes & e
                    if v == s:
                        found |= m
                        continue
                    m &= ~reach.get(v, F)
                    if m != F:
                        reach[v] = reach.get(v, F) | m
                        nxt[v] = nxt.get(v, F) | m
            frontier = nxt
    return found


def _coupled_loop(model: Model, ia: ImplicitAnalysis) -> str | None:
    """E-WHEN-LOOP through the continuous equations (module docstring): the formula of the
    modes with a cycle through a when-variable, and the enumerated path's message
    (`through_continuous_message`) on one concrete mode of it. A coarse block (a union
    component solved as one system, `mdae_fmu.implicit.blocks`) links every read of its
    equations to every unknown it computes, more than the mode's own blocks do: a mode of
    the formula whose own analysis has no such cycle is left out, and after
    `MAX_LOOP_PICKS` such modes the remaining formula is taken as free of cycles."""
    edges = _instant_edges(model, ia)
    f = _cycle_formula(ia, edges, {v for _, v in when_instant_graph(model).edges})
    bdd = ia.space.bdd
    several = ia.n_modes > 1
    for _ in range(MAX_LOOP_PICKS):
        if f == bdd.false:
            return None
        pairs, mode = concrete_mode(ia, f)
        msg = through_continuous_message(model, [mode], several)
        if msg is not None:
            return msg + _modes_line(ia, f)
        f &= ~bdd.cube(ia.space.assignment(pairs))
    return None


def _cascade_problems(model: Model, ia: ImplicitAnalysis) -> list[str]:
    """E-CASCADE-INFINITE (module docstring): per set of transient guards that can hold at
    one instant (no two apart, `MultimodeSystem.non_simultaneous`; a Boolean's edge with the
    Boolean true), the enumerated path's diagnostic (`cascade_diagnostic`) on the transient
    mode of that set over one long mode where it can occur, with the formula of those long
    modes. Skipped when the triggering graph has no cycle (`may_trigger`)."""
    import networkx as nx
    from ..modes.continuations import may_trigger
    from ..modes.explore import cascade_diagnostic
    from ..modes.normalize import MAX_TRANSIENT_MODES, normalize
    try:
        system = normalize(model)
    except MdaeError:
        return []           # (an error in the guards: the other stages report it)
    trig = may_trigger(system)
    g = nx.DiGraph()
    g.add_edges_from((i, j) for i, js in trig.items() for j in js)
    if nx.is_directed_acyclic_graph(g):
        return []
    space = ia.space
    bdd = space.bdd
    regular = _regular(ia)
    trans = sorted(trig)
    apart = system.non_simultaneous()
    long_of = {j: i for i, gd in enumerate(system.guards) if gd.kind == "long"
               for j in trans if gd.cond == system.guards[j].cond}
    # every set of transient guards, by size, as the enumerated path; beyond its own bound
    # on transient modes, the single events only
    sizes = range(1, len(trans) + 1) if 2 ** len(trans) <= MAX_TRANSIENT_MODES else (1,)
    out = []
    for on in itertools.chain.from_iterable(itertools.combinations(trans, r) for r in sizes):
        if any(pair in apart for pair in itertools.combinations(on, 2)):
            continue
        f = regular
        for j in on:
            if j in long_of:
                lf = space.cond(system.guards[long_of[j]].cond)
                f &= bdd.true if lf is None else lf
        if f == bdd.false:
            continue
        pairs = pick_mode(ia, f)
        value = {**{expr_text(a): v for a, v in space.fixed.items()}, **dict(pairs)}
        mode = tuple(bool(value.get(expr_text(gd.cond), False)) if gd.kind == "long"
                     else i in on for i, gd in enumerate(system.guards))
        dg = cascade_diagnostic(system, mode)
        if dg is not None:
            out.append(f"{dg.code}: {dg.message}" + _modes_line(ia, f, "long modes"))
    return out

