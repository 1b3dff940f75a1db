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
  labelled with the modes where the block computes that instance, those of a coarse block
  from its per-mode blocks (docs/theory.md §10.11); the modes with a cycle through a
  when-variable are found by labelled reachability.
* E-CASCADE-INFINITE (docs/theory.md §7.4, Assumption 4; `mdae_fmu.modes.continuations`):
  checked once per set of transient guards that can hold together, for every long mode
  where it can (the chain reads the set alone, docs/theory.md §10.10); none is needed when
  the guards' triggering graph (`may_trigger`) has no cycle.
* The sets of events of both checks are those within one connected part of the model
  (`event_components`: a set across parts has its parts' outcome, docs/theory.md §10.12);
  a part whose sets are more than the enumerated path's bound on transient modes has its
  single events run and is named by W-TRANSIENT-UNCHECKED.
* E-TRANSIENT-UNDER / -OVER / -FUTURE (docs/theory.md §7.3, §8.2): the first instant of the
  change into the transient mode of each set of transient guards that select equations and
  can hold at one instant (simultaneous events included, as the enumerated path), from every
  long mode where those events can occur, by classes of long modes with one outcome: the
  instant is run on its region (`instant_region`: the equations the events enable or
  disable and what they couple to, settled variables cut, docs/theory.md §10.7), and the
  long modes with the same region, offsets on it and index, and the same parts outside it
  that DiffArray sees, are one class (`transient_instants`), with no bound on their number.
  The change may also come from another long mode A switching at that instant, which
  DiffArray reads only through what A's steady configuration knows (its offsets d): when
  those differ between long modes, one source per class of the same offsets d into one
  long mode per class of the events' long modes with the same structure
  (`structure_classes`). Beyond `MAX_TRANSIENT_CLASSES` such classes (or
  `MAX_SWITCHING_RUNS` changes from sources) the long modes left are named by
  W-TRANSIENT-UNCHECKED, not refused.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator  # Any: BDD nodes of the untyped dd

from ..diagnostics import MdaeError
from ..ir import Equation, Model
from ..structure.per_mode import ModeAnalysis
from ..structure.printing import expr_text
from ..structure.when_clauses import (computed_derivatives, event_derivative_message,
                                      event_derivative_reads, instance_node, instant_reads,
                                      through_continuous_message, when_instant_graph,
                                      when_loop_message)
from .analysis import ImplicitAnalysis, concrete_mode, pick_mode
from .blocks import ConditionalBlock
from .changes import (EnabledIn, differentiated_unknowns, grow_region, guarded_by,
                      occurrences, settler)

if TYPE_CHECKING:
    from ..modes.normalize import Mode, MultimodeSystem

#: Concrete modes of a cycle's formula that may fail to confirm it before the rest is named by
#: W-WHEN-LOOP-UNCHECKED (`_coupled_loop`: the labelled graph is each mode's own, so the first
#: mode confirms it unless the two disagree)
MAX_LOOP_PICKS = 16

#: For the changes into a transient mode from another long mode (`_switching_problems`):
#: classes of sources (the same offsets d) and of the events' long modes (the same
#: structure); the long modes beyond them are not checked for that set, which
#: W-TRANSIENT-UNCHECKED says (a work budget: each is a run on the whole model). The first
#: instants from the events' own long modes (`transient_instants`) and the cascades
#: (`_cascade_problems`) have no bound.
MAX_TRANSIENT_CLASSES = 64
#: Runs of changes into transient modes from another long mode (`_transient_problems`),
#: over all sets of events; the pairs beyond are not run, which W-TRANSIENT-UNCHECKED says
#: (each run costs as one of the classes above).
MAX_SWITCHING_RUNS = 64


def event_problems(model: Model, ia: ImplicitAnalysis) -> list[str]:
    """The rejections of the checks of the module docstring for ``model`` (the form the
    implicit analysis ``ia`` analysed, accepted), each with the formula of the modes
    concerned and one concrete mode; empty when there is none (`event_diagnostics`
    without its warnings)."""
    return event_diagnostics(model, ia)[0]


def event_diagnostics(model: Model, ia: ImplicitAnalysis) -> tuple[list[str], list[str]]:
    """``(errors, warnings)`` of the checks of the module docstring: the rejections
    (`event_problems`), and the warnings, which reject nothing: W-WHEN-LOOP-UNCHECKED
    (`_coupled_loop`), W-TRANSIENT-UNCHECKED for the events of one part whose simultaneous
    sets were not run (`_event_sets`) and for the long modes from which a change from another
    long mode was not run (beyond `MAX_TRANSIENT_CLASSES` classes)."""
    out = []
    loop_warnings: list[str] = []
    if when_loop_message(model) is None:      # (reported without a mode otherwise)
        loop, unconfirmed = _coupled_loop(model, ia)
        if loop:
            out.append(loop)
        if unconfirmed:
            loop_warnings.append(unconfirmed)
    out.extend(_derivative_problems(model, ia))
    from ..modes.normalize import normalize
    try:
        system = normalize(model)
    except MdaeError:
        return out, loop_warnings   # (an error in the guards: the other stages report it)
    cascade, cascade_warnings = _cascade_problems(system, ia)
    errors, warnings = _transient_problems(system, ia)
    return out + cascade + errors, loop_warnings + cascade_warnings + warnings


def _unchecked_warning(system: MultimodeSystem, ia: ImplicitAnalysis,
                       on: tuple[int, ...] | None, what: str, formula: Any) -> str:
    """W-TRANSIENT-UNCHECKED: ``what`` (the checks of the events ``on``; of every event when
    None) not run from the long modes of ``formula``, beyond `MAX_TRANSIENT_CLASSES` classes
    of long modes with the same structure (the same offsets d for the sources of changes)."""
    events = ("every event" if on is None else
              "the events {" + ", ".join(system.guards[j].name for j in on) + "}")
    return (f"W-TRANSIENT-UNCHECKED: {what} of {events} was run from "
            f"{MAX_TRANSIENT_CLASSES} classes of long modes and not from the "
            f"{ia.space.count(formula)} of {ia.n_modes} long modes {ia.space.text(formula)}, "
            f"where it is not checked (a failure there would be an error; the model is not "
            f"refused for it)")


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


def _block_nodes(ia: ImplicitAnalysis, blk: ConditionalBlock, by_id: dict[str, Equation],
                 col: dict[str, int]) -> tuple[list[str], set[str]]:
    """The instance nodes a conditional block may compute (its unknowns at each of their
    offsets) and the nodes its equations read at the instant (`instant_reads`); ``by_id``
    the model's equations by id, ``col`` the column of each unknown."""
    outs = [instance_node(u, o) for u in blk.unknowns for o in sorted(ia.d[col[u]])]
    reads: set[str] = set()
    for eq_id in blk.equations:
        eq = by_id.get(eq_id)
        if eq is not None:
            reads |= instant_reads(eq.residual)
    return outs, reads


def _loop_nodes(model: Model, ia: ImplicitAnalysis, assigned: set[str]) -> set[str]:
    """The nodes on a cycle through a when-variable in the union of every mode's instant
    graph (no formula: each block linked from all it reads to all it may compute); the
    labelled graph (`_instant_edges`) is built on these alone."""
    import networkx as nx
    g = when_instant_graph(model)
    by_id = {eq.id: eq for eq in model.equations}
    col = {n: j for j, n in enumerate(ia.graph.cols)}
    for blk in ia.blocks:
        outs, reads = _block_nodes(ia, blk, by_id, col)
        g.add_edges_from((r, v) for r in reads for v in outs if r != v)
    return {v for scc in nx.strongly_connected_components(g)
            if len(scc) > 1 and scc & assigned for v in scc}


def _instant_edges(model: Model, ia: ImplicitAnalysis, nodes: set[str]
                   ) -> dict[tuple[str, str], Any]:
    """The edges between ``nodes`` of the instant graph of every mode
    (`when_clauses._mode_graphs` per mode), each with the formula of the modes that have it:
    ``u -> v`` when the equation of ``v`` in a when-body reads ``u`` (every mode), or when a
    conditional block computes ``v`` (the instance of its unknown at the mode's offset,
    where one of its equations is assigned to that unknown) and one of its equations reads
    ``u``, which the block does not compute."""
    bdd = ia.space.bdd
    F = bdd.false
    regular = _regular(ia)
    edges: dict[tuple[str, str], Any] = {
        (u, v): regular for u, v in when_instant_graph(model).edges if u in nodes and v in nodes}
    by_id = {eq.id: eq for eq in model.equations}
    col = {n: j for j, n in enumerate(ia.graph.cols)}
    row = {r: i for i, r in enumerate(ia.graph.rows)}
    for blk in ia.blocks:
        may, reads = _block_nodes(ia, blk, by_id, col)
        reads &= nodes
        f = blk.formula & regular
        if not reads or not set(may) & nodes or f == F:
            continue
        if blk.coarse:
            _coarse_edges(ia, blk, by_id, row, nodes, edges)
            continue
        outs: dict[str, Any] = {}
        for u in blk.unknowns:
            j = col[u]
            assigned = F
            for eq_id in blk.equations:
                assigned |= ia.match[row[eq_id]].get(j, F)
            for o, fo in ia.d[j].items():
                node = instance_node(u, o)
                m = f & fo & assigned
                if node in nodes and m != F:
                    outs[node] = outs.get(node, F) | m
        for r in sorted(reads):
            not_out = ~outs.get(r, F)
            for v, fv in outs.items():
                e = fv & not_out
                if v != r and e != F:
                    edges[(r, v)] = edges.get((r, v), F) | e
    return edges


def _coarse_edges(ia: ImplicitAnalysis, blk: ConditionalBlock, by_id: dict[str, Equation],
                  row: dict[str, int], nodes: set[str],
                  edges: dict[tuple[str, str], Any]) -> None:
    """The part of the instant graph that the coarse block ``blk`` gives in each mode
    (docs/theory.md §10.11), added to ``edges`` through a node per equation of the component
    (`_equation_node`): ``r -> i`` where the equation i reads ``r``, ``i -> v`` in the modes
    where i is assigned the unknown of ``v`` at that offset, and ``i2 -> i`` in the modes where
    i reads tightly the unknown assigned to i2 (`blocks.tight_dependencies`: the data flow
    that makes the per-mode blocks, its strongly connected components). A path from a node
    outside the component to ``v`` through these is one of the mode's own graph, and back."""
    from .blocks import tight_dependencies
    F = ia.space.bdd.false
    regular = _regular(ia)
    g = ia.graph
    members = [row[e] for e in blk.equations]
    T, dep = tight_dependencies(ia, members)
    for i in members:
        here = _equation_node(g.rows[i])
        eq = by_id.get(g.rows[i])
        present = g.present[i] & regular & blk.formula
        if eq is not None and present != F:
            for r in sorted(instant_reads(eq.residual) & nodes):
                edges[(r, here)] = edges.get((r, here), F) | present
        for j, fj in T[i].items():
            for o, fo in ia.d[j].items():
                v = instance_node(g.cols[j], o)
                m = fj & fo & blk.formula
                if v in nodes and m != F:
                    edges[(here, v)] = edges.get((here, v), F) | m
        for i2, e in dep[i].items():
            key = (_equation_node(g.rows[i2]), here)
            edges[key] = edges.get(key, F) | e


def _equation_node(eq_id: str) -> str:
    """The node of an equation of a coarse block in the instant graph (`_coarse_edges`),
    apart from every variable's."""
    return f"~equation {eq_id}"


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


def _coupled_loop(model: Model, ia: ImplicitAnalysis) -> tuple[str | None, str | None]:
    """E-WHEN-LOOP through the continuous equations (module docstring): the formula of the
    modes with a cycle through a when-variable, and the enumerated path's message
    (`through_continuous_message`) on one concrete mode of it; ``(message, None)``, or
    ``(None, None)`` when no mode has such a cycle. A coarse block (a union component solved
    as one system, `mdae_fmu.implicit.blocks`) gives the paths of its per-mode blocks
    (`_coarse_edges`, docs/theory.md §10.11), so the formula is each mode's own. Should a
    concrete mode of it not confirm the cycle (an inconsistency of the labelled graph), that
    mode is left out and another is tried; after `MAX_LOOP_PICKS` such modes the rest is
    named by the warning W-WHEN-LOOP-UNCHECKED ``(None, warning)``, never taken as free of
    cycles silently."""
    if not model.whens:     # (no when-variable: no loop, and no networkx import)
        return None, None
    assigned = {v for _, v in when_instant_graph(model).edges}
    nodes = _loop_nodes(model, ia, assigned) if assigned else set()
    if not nodes:
        return None, None
    f = _cycle_formula(ia, _instant_edges(model, ia, nodes), assigned & nodes)
    bdd = ia.space.bdd
    several = ia.n_modes > 1
    for _ in range(MAX_LOOP_PICKS):
        if f == bdd.false:
            return None, None
        pairs, mode = concrete_mode(ia, f)
        msg = through_continuous_message(model, [mode], several)
        if msg is not None:
            return msg + _modes_line(ia, f), None
        f &= ~bdd.cube(ia.space.assignment(pairs))
    if f == bdd.false:
        return None, None
    return None, ("W-WHEN-LOOP-UNCHECKED: the instant graph (when-equations and the blocks "
                  "of the continuous equations) has a cycle through a when-variable in "
                  f"{ia.space.count(f)} of {ia.n_modes} modes {ia.space.text(f)}, which "
                  f"{MAX_LOOP_PICKS} of its modes analysed one by one did not confirm (an "
                  "algebraic loop there would be E-WHEN-LOOP; the model is not refused for "
                  "it)")


def _event_sets(system: MultimodeSystem, ia: ImplicitAnalysis, guards: list[int],
                singletons: bool, links: dict[int, frozenset[int]] | None = None,
                unchecked: list[tuple[int, ...]] | None = None
                ) -> Iterator[tuple[tuple[int, ...], Any]]:
    """The sets of the transient guards ``guards`` that can hold at one instant (no two apart,
    `MultimodeSystem.non_simultaneous`; a Boolean's edge with the Boolean true) and lie in one
    component (`event_components`, with the guard-to-guard ``links``: a set across components
    has the outcome of its parts, docs/theory.md §10.12), by size as the enumerated path
    (`MultimodeSystem.modes`), or the single ones only (``singletons``): ``(set, formula of
    the regular long modes where it can occur)``, the formula not false. A component whose
    sets are more than the enumerated path's bound on transient modes gives its single
    events only, and its guards to ``unchecked``."""
    from ..modes.normalize import MAX_TRANSIENT_MODES
    space = ia.space
    bdd = space.bdd
    regular = _regular(ia)
    apart = system.non_simultaneous()
    long_of = {j: i for i, gd in enumerate(system.guards) if gd.kind == "long"
               for j in guards if gd.cond == system.guards[j].cond}
    sets: list[tuple[int, ...]] = []
    for comp in event_components(system, guards, links or {}):
        top = len(comp)
        if singletons or 2 ** len(comp) > MAX_TRANSIENT_MODES:
            top = 1
            if not singletons and unchecked is not None:
                unchecked.append(tuple(comp))
        sets.extend(itertools.chain.from_iterable(itertools.combinations(comp, r)
                                                  for r in range(1, top + 1)))
    for on in sorted(sets, key=lambda t: (len(t), t)):
        if any(pair in apart for pair in itertools.combinations(on, 2)):
            continue
        f = regular
        for j in on:
            lf = space.cond(system.guards[long_of[j]].cond) if j in long_of else None
            f &= bdd.true if lf is None else lf
        if f != bdd.false:
            yield on, f


def event_components(system: MultimodeSystem, guards: list[int],
                     links: dict[int, frozenset[int]]) -> list[list[int]]:
    """The transient guards ``guards`` grouped by the connected components of the model's
    equations (of every mode, linked through the unknowns they share) that the equations they
    select (`guarded_by`) lie in, two guards also joined when ``links`` links them; each
    component in the guards' order, the components by their first guard."""
    eqs = system.equations
    parent = list(range(len(eqs)))

    def find(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    first: dict[str, int] = {}
    for k, e in enumerate(eqs):
        for v in e.order_map:
            union(first.setdefault(v, k), k)
    selected = guarded_by(system)
    # a guard stands for its first equation (or itself, past the equations, if it has none)
    node = {i: selected[i][0] if selected.get(i) else len(parent) + n
            for n, i in enumerate(guards)}
    parent.extend(range(len(parent), len(parent) + len(guards)))
    for i in guards:
        for k in selected.get(i, ()):
            union(node[i], k)
        for j in links.get(i, ()):
            if j in node:
                union(node[i], node[j])
    comps: dict[int, list[int]] = {}
    for i in guards:
        comps.setdefault(find(node[i]), []).append(i)
    return sorted(comps.values(), key=lambda c: c[0])


def _sets_warning(system: MultimodeSystem, comp: tuple[int, ...], what: str) -> str:
    """W-TRANSIENT-UNCHECKED: ``what`` of two or more of the events ``comp`` (one component,
    `event_components`) at one instant not run, beyond the enumerated path's bound on
    transient modes."""
    from ..modes.normalize import MAX_TRANSIENT_MODES
    names = [system.guards[j].name for j in comp]
    shown = ", ".join(names[:6]) + (f", ... ({len(names)} in all)" if len(names) > 6 else "")
    return (f"W-TRANSIENT-UNCHECKED: {what} was run for each of the events {{{shown}}} alone "
            f"and not for two or more of them at one instant: they act on one connected part "
            f"of the model, and their 2^{len(names)} - 1 combinations are more than "
            f"{MAX_TRANSIENT_MODES} transient modes (a failure of simultaneous events would "
            f"be an error; the model is not refused for it)")


def _system_mode(system: MultimodeSystem, value: dict[str, bool], on: tuple[int, ...]
                 ) -> Mode:
    """The mode of ``system`` whose long guards take ``value`` (by the text of their
    condition, false when absent) and whose transient guards are those of ``on``."""
    return tuple(bool(value.get(expr_text(gd.cond), False)) if gd.kind == "long" else i in on
                 for i, gd in enumerate(system.guards))


def _transient_sets(system: MultimodeSystem, ia: ImplicitAnalysis, guards: list[int],
                    singletons: bool, classes: bool = False,
                    unchecked: list[tuple[tuple[int, ...], Any]] | None = None
                    ) -> Iterator[tuple[tuple[int, ...], Any, Mode]]:
    """The sets of `_event_sets`: ``(set, formula of the long modes where it can occur, the
    transient mode of that set over one of them)``; with ``classes``, one such triple per
    class of those long modes (`structure_classes`), the formula the class's, and ``(set,
    formula)`` appended to ``unchecked`` for the long modes beyond `MAX_TRANSIENT_CLASSES`
    classes."""
    space = ia.space
    fixed = {expr_text(a): v for a, v in space.fixed.items()}
    formulas = _structure_formulas(ia) if classes else []
    for on, f in _event_sets(system, ia, guards, singletons):
        found = [(pick_mode(ia, f), f)]
        if classes:
            found, rest = mode_classes(ia, f, MAX_TRANSIENT_CLASSES, formulas)
            if rest != space.bdd.false and unchecked is not None:
                unchecked.append((on, rest))
        for pairs, fc in found:
            yield on, fc, _system_mode(system, {**fixed, **dict(pairs)}, on)


def structure_classes(ia: ImplicitAnalysis, scope: Any, limit: int
                      ) -> list[tuple[tuple[tuple[str, bool], ...], Any]]:
    """Up to ``limit`` classes of the modes of ``scope`` in which the structure of the model
    is the same (docs/theory.md §10.2): which equations exist (``present``), their offsets c,
    the unknowns' offsets d and the signature entries; each as ``(one mode, formula)``, the
    mode first in the enumerated path's order. A class is ``scope`` with the guards that
    those formulas read fixed to the mode's values (the formulas that do not change inside
    ``scope`` read none), so its modes have every structural formula's value at the mode."""
    return mode_classes(ia, scope, limit, _structure_formulas(ia))[0]


def _structure_formulas(ia: ImplicitAnalysis) -> list[Any]:
    """The formulas of the structure (`structure_classes`), without repeats. The rows that
    differ only in which one is present count as one (`_interchangeable`): the branches of
    ``if f then der(z) = 2; else der(z) = 1; end if;`` read the same instances with the same
    offset, so that the structure is the same whichever holds, and only their union, here
    every mode, is a formula of the structure."""
    g = ia.graph
    groups = _interchangeable(ia)
    grouped = {i for rows in groups for i in rows}
    union = []
    for rows in groups:
        f = ia.space.bdd.false
        for i in rows:
            f |= g.present[i]
        union.append(f)
    keep = [i for i in range(len(g.rows)) if i not in grouped]
    return list(dict.fromkeys(
        [*union, *(g.present[i] for i in keep), *(f for i in keep for f in ia.c[i].values()),
         *(f for case in ia.d for f in case.values()),
         *(f for i in keep for cell in g.sig[i].values() for f in cell.values())]))


#: Largest set of rows `_interchangeable` checks for disjointness (pairs of rows)
MAX_INTERCHANGEABLE = 16


def _interchangeable(ia: ImplicitAnalysis) -> list[list[int]]:
    """Sets of two or more rows of ``ia.graph`` that are never present together and each,
    where present, reads the same instances (the same unknowns at the same orders) with the
    same offset c in all its modes: in any mode at most one of them is there and the
    structural runs (`mdae_fmu.modes.runs`, which read incidences and offsets) see the same
    system whichever it is."""
    g = ia.graph
    bdd = ia.space.bdd
    by_shape: dict[tuple, list[int]] = {}
    for i, present in enumerate(g.present):
        if present == bdd.false or len(ia.c[i]) != 1:
            continue
        (c, fc), = ia.c[i].items()
        if fc != present & ia.space.care & ~ia.singular and fc != present:
            continue
        if any(f != present for cell in g.sig[i].values() for f in cell.values()):
            continue            # an entry that holds in some of the row's modes only
        shape = (c, frozenset((j, k) for j, cell in g.sig[i].items() for k in cell))
        by_shape.setdefault(shape, []).append(i)
    out = []
    for rows in by_shape.values():
        if 1 < len(rows) <= MAX_INTERCHANGEABLE and all(
                g.present[a] & g.present[b] == bdd.false
                for a, b in itertools.combinations(rows, 2)):
            out.append(rows)
    return out


def _known_formulas(ia: ImplicitAnalysis) -> list[Any]:
    """The formulas of the positive offsets d: what a long mode's steady configuration knows
    (`mdae_fmu.modes.runs.steady_config`: the instances x^k, k < d_x; an offset 0 knows
    nothing), all that DiffArray reads of the source of a change (`_transient_problems`),
    without repeats."""
    return list(dict.fromkeys(f for case in ia.d for v, f in case.items() if v > 0))


def mode_classes(ia: ImplicitAnalysis, scope: Any, limit: int, formulas: list[Any]
                 ) -> tuple[list[tuple[tuple[tuple[str, bool], ...], Any]], Any]:
    """Up to ``limit`` classes of the modes of ``scope`` on which each of ``formulas`` is
    constant (`structure_classes`), and the formula of the modes of ``scope`` left out
    (false when the classes cover it)."""
    from .conversion import first_mode
    space = ia.space
    bdd = space.bdd
    order = {space.var_of[a]: k for k, a in enumerate(space.atoms)}
    support: set[str] = set()
    for f in formulas:
        part = f & scope
        if part != bdd.false and part != scope:
            support |= bdd.support(f)
    out: list[tuple[tuple[tuple[str, bool], ...], Any]] = []
    remaining = scope
    while remaining != bdd.false and len(out) < limit:
        asg = first_mode(bdd, remaining, order)
        cls = remaining & bdd.cube({v: asg[v] for v in support})
        out.append((space.mode_pairs(asg), cls))
        remaining &= ~cls
    return out, remaining


def _cascade_problems(system: MultimodeSystem, ia: ImplicitAnalysis
                      ) -> tuple[list[str], list[str]]:
    """E-CASCADE-INFINITE (module docstring): per set of transient guards that can hold at
    one instant (`_event_sets`), the enumerated path's diagnostic (`cascade_diagnostic`) on
    the transient mode of that set over the first of the long modes where it can occur, with
    the formula of them all: the chain of continuations reads the set alone, not the long
    mode (docs/theory.md §10.10), so one run per set decides every long mode, with no bound
    on their number. Skipped when the triggering graph has no cycle (`may_trigger`)."""
    from ..modes.continuations import may_trigger
    from ..modes.explore import cascade_diagnostic
    from .conversion import first_mode
    trig = may_trigger(system)
    if not any(trig.values()):      # (no edge: no cycle, and no networkx import)
        return [], []
    import networkx as nx
    g = nx.DiGraph()
    g.add_edges_from((i, j) for i, js in trig.items() for j in js)
    if nx.is_directed_acyclic_graph(g):
        return [], []
    space = ia.space
    order = {space.var_of[a]: k for k, a in enumerate(space.atoms)}
    fixed = {expr_text(a): v for a, v in space.fixed.items()}
    found: dict[tuple[Any, ...], tuple[str, Any]] = {}
    unchecked: list[tuple[int, ...]] = []
    for on, f in _event_sets(system, ia, sorted(trig), singletons=False, links=trig,
                             unchecked=unchecked):
        pairs = space.mode_pairs(first_mode(space.bdd, f, order))
        dg = cascade_diagnostic(system, _system_mode(system, {**fixed, **dict(pairs)}, on))
        if dg is not None:
            _merge(found, (on, dg.code, dg.variables, dg.equations),
                   f"{dg.code}: {dg.message}", f)
    return (_failure_messages(system, ia, found),
            [_sets_warning(system, comp, "the cascade (E-CASCADE-INFINITE)")
             for comp in unchecked])


#: Messages of one code for one set of events (failures with other equations or variables,
#: from other classes of long modes); the others are counted in one more message
MAX_FAILURES_LISTED = 4


def _failure_messages(system: MultimodeSystem, ia: ImplicitAnalysis,
                      found: dict[tuple[Any, ...], tuple[str, Any]]) -> list[str]:
    """The messages of the failures ``found`` (`_merge`, keyed ``(events, code, ...)``),
    each with its long modes; beyond `MAX_FAILURES_LISTED` per events and code, one message
    counts the others with the union of their long modes."""
    out: list[str] = []
    shown: dict[tuple[Any, ...], int] = {}
    rest: dict[tuple[Any, ...], tuple[int, Any]] = {}
    for key, (text, modes) in found.items():
        group = key[:2]
        if shown.get(group, 0) < MAX_FAILURES_LISTED:
            shown[group] = shown.get(group, 0) + 1
            out.append(text + _modes_line(ia, modes, "long modes"))
        else:
            n, f = rest.get(group, (0, ia.space.bdd.false))
            rest[group] = (n + 1, f | modes)
    for (on, code), (n, f) in rest.items():
        events = ", ".join(system.guards[j].name for j in on)
        out.append(f"{code}: and {n} more such failures of the events {{{events}}} (other "
                   f"equations or variables, the messages above show the kind)"
                   + _modes_line(ia, f, "long modes"))
    return out


def _merge(found: dict[tuple[Any, ...], tuple[str, Any]], key: tuple[Any, ...], text: str,
           formula: Any) -> None:
    """Record a failure: the first ``text`` of its ``key``, the union of its formulas."""
    first, modes = found.get(key, (text, formula))
    found[key] = (first, modes | formula)


#: Ids of the two equations and two unknowns `_phantom` adds to a region
PHANTOM_EQS = ("~phantom.a", "~phantom.b")
PHANTOM_VARS = ("~phantom.p", "~phantom.q")


@dataclass
class _InstantFormulas:
    """What the region classes of the transient instants (`_instant_classes`) read of the
    implicit analysis, computed once per model: per unknown (by name) its column, the
    formula ``R0`` of the modes where a row of offset c = 0 reads its leading instance
    (docs/theory.md §10.7: the instance is then one the instant determines at shift 0), the
    unknowns with a mode where that fails (``nr0``, with the formula of those modes) and
    those with a mode where it holds but the transversal assigns the unknown to a row of
    offset c >= 1 (``u0``: the system at shift 0 of a part holding it is under-determined)."""
    col: dict[str, int]
    nr0: list[tuple[str, Any]]
    u0: list[tuple[str, Any]]
    guard_var: dict[int, str]          # long guard index -> its BDD variable


def _instant_formulas(system: MultimodeSystem, ia: ImplicitAnalysis) -> _InstantFormulas:
    """The formulas of `_InstantFormulas`, from the offsets, the signature and the
    transversal of ``ia`` (one pass over the signature's entries)."""
    g = ia.graph
    bdd = ia.space.bdd
    F = bdd.false
    regular = _regular(ia)
    r0 = [F] * len(g.cols)
    m1 = [F] * len(g.cols)
    for i, row in enumerate(g.sig):
        c0 = ia.c[i].get(0, F) & g.present[i]
        for j, cell in row.items():
            for k, fk in cell.items():
                tight = fk & c0 & ia.d[j].get(k, F)
                if tight != F:
                    r0[j] |= tight
        for j, fm in ia.match[i].items():
            m = fm & ~c0
            if m != F:
                m1[j] |= m
    u0 = [(name, r0[j] & m1[j] & regular) for j, name in enumerate(g.cols)]
    nr0 = [(name, regular & ~r0[j]) for j, name in enumerate(g.cols)]
    atoms = {a: ia.space.var_of[a] for a in ia.space.atoms}
    return _InstantFormulas(
        col={n: j for j, n in enumerate(g.cols)},
        nr0=[(n, f) for n, f in nr0 if f != F], u0=[(n, f) for n, f in u0 if f != F],
        guard_var={i: atoms[gd.cond] for i, gd in enumerate(system.guards)
                   if gd.kind == "long" and gd.cond in atoms})


def instant_region(system: MultimodeSystem, dst: Mode, seeds: set[str],
                   occurs: dict[str, list[int]], unsettled: frozenset[str] = frozenset()
                   ) -> tuple[list[int], set[int]]:
    """The region of the first instant of the transient mode ``dst`` of the normalized
    ``system`` (docs/theory.md §10.7): the indices of its equations, and the indices of the
    equations whose guards the walk read (the region is the same in every long mode that
    enables or disables each of them alike).

    Its continuation B (`continuation_mode`) and ``dst`` enable the same equations but those
    of the events (`guarded_by` the transient guards of ``dst``). A variable is *settled*
    when an equation enabled in both, of order 0 in all its variables, reads it and otherwise
    only settled variables, no equation differentiates it and it is not in ``unsettled``
    (`changes.change_region`'s rule). The region starts from the variables of the equations
    of the events and ``seeds``, and grows through every equation enabled in ``dst`` or B
    that reads one of its unsettled variables; a settled variable brings the equation that
    settles it."""
    from ..modes.runs import continuation_mode
    eqs = system.equations
    state = EnabledIn(eqs, dst, continuation_mode(system, dst))
    settle = settler(eqs, occurs, differentiated_unknowns(system), state, unsettled)

    events = sorted({k for i, v in enumerate(dst) if v and system.guards[i].kind != "long"
                     for k in guarded_by(system).get(i, ()) if state(k)[0] != state(k)[1]})
    seeds_in_order = [v for k in events for v in eqs[k].order_map] + sorted(seeds)
    region, _ = grow_region(eqs, occurs, seeds_in_order, set(), settle, state, None)
    region.update(events)
    return sorted(region), set(state.seen)


def _phantom(system: MultimodeSystem, link: str) -> tuple[Any, ...]:
    """Two equations over two unknowns of their own that stand for a part of the model
    outside a region whose system at shift 0 is under-determined and which reads the region
    (docs/theory.md §10.7): ``a`` (offset c = 0) reads ``der(p)``, ``q`` and the region's
    variable ``link`` that the part reads (so that the phantom is in the region's component
    of the difference array, `runs.array_components`), ``b`` (offset c = 1) reads ``p``, as
    an engaged clutch's two shafts; at shift 0 ``a`` alone has two unknowns of its own, with
    the continuation's rows every instance is determined."""
    from .. import expr as E
    from ..modes.normalize import MEquation
    a, b = PHANTOM_EQS
    p, q = PHANTOM_VARS
    zero = E.Const(0.0)
    return (MEquation(id=a, residual=zero, guard=(), orders=((p, 1), (q, 0), (link, 0)),
                      origin="phantom"),
            MEquation(id=b, residual=zero, guard=(), orders=((p, 0),), origin="phantom"))


def _linked(system: MultimodeSystem, names: set[str], occurs: dict[str, list[int]],
            modes: tuple[Mode, ...]) -> tuple[set[str], str | None, set[int]]:
    """The unknowns of the equations enabled in one of ``modes`` (the transient mode and its
    continuation) connected to the region's unknowns ``names`` through shared unknowns
    (docs/theory.md §10.7 (b)), one unknown of ``names`` that such an equation outside the
    region reads (None when the rest of the model is apart from the region: its difference
    array is then decided on its own, `runs.diff_array`), and the indices of the guarded
    equations whose guards the walk read. A guarded equation is read only when it would
    bring an unknown not yet connected (after every equation without a guard), so that a
    drive line's clutches, whose shafts are connected in every mode, are not read."""
    eqs = system.equations
    linked = set(names)
    link: str | None = None
    queried: set[int] = set()
    deferred: set[int] = set()
    todo = sorted(names)

    def add(k: int) -> None:
        nonlocal link
        order = eqs[k].order_map
        mine = [u for u in order if u in names]
        if mine and (link is None or min(mine) < link):
            link = min(mine)
        new = [u for u in order if u not in linked]
        linked.update(new)
        todo.extend(new)
    while True:
        while todo:
            v = todo.pop()
            for k in occurs.get(v, ()):
                if k in queried or all(u in linked for u in eqs[k].order_map):
                    continue
                if eqs[k].guard:
                    deferred.add(k)
                else:
                    add(k)
        read = sorted(k for k in deferred
                      if any(u not in linked for u in eqs[k].order_map))
        deferred.clear()
        if not read:
            return linked, link, queried
        for k in read:
            queried.add(k)
            if any(all(m[i] == p for i, p in eqs[k].guard) for m in modes):
                add(k)


def _instant_classes(system: MultimodeSystem, ia: ImplicitAnalysis, on: tuple[int, ...],
                     scope: Any, forms: _InstantFormulas, occurs: dict[str, list[int]],
                     sigmas: dict[Mode, Any]
                     ) -> Iterator[tuple[Any, Mode, Any, Any, Callable[[], Any] | None]]:
    """The first instant of the change into the transient mode of the events ``on`` from
    each long mode of ``scope`` (regular, where the events can occur), by classes of long
    modes with the same outcome (docs/theory.md §10.7): ``(class formula, transient mode of
    one of them, that mode's steady configuration, the run, None or the run on the whole
    system when called)``, the classes covering ``scope``, each mode first in the
    enumerated path's order.

    The run is the enumerated path's `exec_transient` on the region of the instant
    (`instant_region`, seeded with the unknowns whose leading instance no row of offset 0
    reads), with the whole long mode's offsets (and so the same number of copies of its
    continuation), and with `_phantom` when the part outside the region linked to it
    (`_linked`) is under-determined at shift 0 (``u0``). Its class is the long modes of
    ``scope`` that enable the equations the walk read as the mode does, give the region's
    unknowns and the whole mode the same offsets and index, agree on ``u0`` and have no such
    unknown outside the region. With ``u0``, a failure whose message names a phantom
    equation (the rows of the part outside that read only known instances are named with it)
    or under-determined at shift 0 (the instances of the whole mode) has the same code on
    the whole system, and its message there is given by the last item. When the analysis'
    formulas and the mode's own Σ-method disagree (an internal inconsistency), the class is
    the mode's structure class and the run the whole system's."""
    from ..modes.runs import continuation_mode, exec_transient, sigma_of_mode, steady_config
    from .conversion import first_mode
    space = ia.space
    bdd = space.bdd
    order = {space.var_of[a]: k for k, a in enumerate(space.atoms)}
    fixed = {expr_text(a): v for a, v in space.fixed.items()}
    remaining = scope
    while remaining != bdd.false:
        asg = first_mode(bdd, remaining, order)
        cube = bdd.cube(asg)
        dst = _system_mode(system, {**fixed, **dict(space.mode_pairs(asg))}, on)
        src = continuation_mode(system, dst)
        sig = sigmas.get(src)
        if sig is None:
            sig = sigmas[src] = sigma_of_mode(system, src)
        if not sig.ok:        # (not in a regular mode's formula: `analyze_implicit` says)
            cls = mode_classes(ia, remaining, 1, _structure_formulas(ia))[0][0][1]
            remaining &= ~cls
            continue
        own = steady_config(system, src, sig)
        pair = f"when switching {system.mode_label(src)} -> {system.mode_label(dst)}"
        cls, run, whole = _region_run(system, ia, forms, occurs, remaining, asg, cube, dst,
                                      sig, own, pair)
        if cls is None:
            cls = mode_classes(ia, remaining, 1, _structure_formulas(ia))[0][0][1]
            run, whole = exec_transient(system, own, dst, sig, pair=pair), False
        remaining &= ~cls
        yield cls, dst, own, run, _whole_run(system, own, dst, sig, pair) if whole else None


def _whole_run(system: MultimodeSystem, own: Any, dst: Mode, sig: Any, pair: str
               ) -> Callable[[], Any]:
    """The run of the instant on the whole system, when called (`_instant_classes`)."""
    from ..modes.runs import exec_transient
    return lambda: exec_transient(system, own, dst, sig, pair=pair)


def _region_run(system: MultimodeSystem, ia: ImplicitAnalysis, forms: _InstantFormulas,
                occurs: dict[str, list[int]], scope: Any, asg: dict[str, bool], cube: Any,
                dst: Mode, sig: Any, own: Any, pair: str) -> tuple[Any, Any, bool]:
    """The class and the run of `_instant_classes` for the mode ``asg`` of ``scope``
    (``cube`` its BDD, ``dst`` its transient mode, ``sig`` the Σ-method of its long mode,
    ``own`` its steady configuration), and whether its message needs the run on the whole
    system (a failure that names a phantom equation, or under-determined at shift 0);
    ``(None, None, False)`` when the analysis' formulas and ``sig`` disagree."""
    from dataclasses import replace
    from ..modes.runs import Config, SigmaInfo, exec_transient
    bdd = ia.space.bdd
    F = bdd.false

    def holds(f: Any) -> bool:
        return (f & cube) != F
    # the unknowns whose leading instance no row of offset 0 reads, by the Σ-method
    long_mode = tuple(v if gd.kind == "long" else False
                      for v, gd in zip(dst, system.guards))
    rows0 = [e for e in system.enabled(long_mode) if sig.c[e.id] == 0]
    read0 = {v for e in rows0 for v, k in e.orders if k == sig.d[v]}
    nr0 = set(sig.d) - read0
    if {n for n, f in forms.nr0 if holds(f)} != nr0 & set(forms.col):
        return None, None, False
    kept, queried = instant_region(system, dst, nr0, occurs,
                                   frozenset(v for v, dv in sig.d.items() if dv > 0))
    names = {v for k in kept for v in system.equations[k].order_map}
    ids = {system.equations[k].id for k in kept}
    # the part outside the region connected to it, under-determined at shift 0 (concretely,
    # and by formula); a part apart from the region is decided on its own
    linked, link, bridges = _linked(system, names, occurs, (dst, long_mode))
    queried |= bridges
    outside0 = [e for e in rows0 if e.id not in ids and set(e.order_map) <= linked]
    u0 = len((read0 & linked) - names) > len(outside0)
    fu = F
    for n, f in forms.u0:
        if n not in names and n in linked:
            fu |= f
    if u0 != holds(fu):
        return None, None, False
    cls = scope
    for i in sorted({i for k in queried for i, _ in system.equations[k].guard}):
        var = forms.guard_var.get(i)
        if var is not None:
            cls &= bdd.var(var) if asg[var] else ~bdd.var(var)
    for v in sorted(names):
        j = forms.col.get(v)
        if j is None:
            continue
        fd = ia.d[j].get(sig.d.get(v, 0))
        if fd is None or not holds(fd):
            return None, None, False
        cls &= fd
    fi = ia.index.get(sig.index)
    if fi is None or not holds(fi):
        return None, None, False
    cls &= fi
    cls &= fu if u0 else ~fu
    for n, f in forms.nr0:
        if n not in names:
            cls &= ~f
    if not holds(cls):
        return None, None, False
    eqs = tuple(system.equations[k] for k in kept)
    cfg, sig_r = own, sig
    if u0:
        a, b = PHANTOM_EQS
        p, q = PHANTOM_VARS
        assert link is not None
        eqs += _phantom(system, link)
        names |= {p, q}
        cfg = Config(known=own.known | {(p, 0)}, context=own.context | {(b, 0)})
        sig_r = SigmaInfo(ok=True, c={**sig.c, a: 0, b: 1}, d={**sig.d, p: 1, q: 0})
    sub = replace(system, equations=eqs,
                  unknowns=tuple(v for v in (*system.unknowns, *PHANTOM_VARS) if v in names))
    run = exec_transient(sub, cfg, dst, sig_r, pair=pair)
    dg = run.diagnostic
    return cls, run, u0 and dg is not None and dg.code.startswith("E-TRANSIENT-") and (
        dg.code == "E-TRANSIENT-UNDER" or "~phantom" in dg.message)


def transient_instants(system: MultimodeSystem, ia: ImplicitAnalysis,
                       sigmas: dict[Mode, Any] | None = None,
                       unchecked: list[tuple[int, ...]] | None = None
                       ) -> Iterator[tuple[tuple[int, ...], Any, Mode, Any, Any,
                                           Callable[[], Any] | None]]:
    """The first instants of the changes into transient modes that `_transient_problems`
    checks, from the events' own long modes: per set of transient guards that select
    equations and can hold at one instant (`_event_sets`), per class of the long modes where
    they can occur (`_instant_classes`, covering them all), ``(set, class formula, the
    transient mode of the class's first mode, that mode's steady configuration, the run of
    the instant, None or the run on the whole system (when called) that gives its message,
    `_instant_classes`)``. ``sigmas``: the Σ-method of each long mode run, filled as they
    are; ``unchecked``: gets the components of events whose simultaneous sets are not run
    (`_event_sets`)."""
    selecting = sorted({i for e in system.equations for i, p in e.guard
                        if p and system.guards[i].kind == "transient"})
    if not selecting:
        return
    forms = _instant_formulas(system, ia)
    occurs = occurrences(system)
    sigmas = {} if sigmas is None else sigmas
    for on, scope in _event_sets(system, ia, selecting, singletons=False,
                                 unchecked=unchecked):
        for f, dst, own, run, exact in _instant_classes(system, ia, on, scope, forms, occurs,
                                                        sigmas):
            yield on, f, dst, own, run, exact


def _transient_problems(system: MultimodeSystem, ia: ImplicitAnalysis
                        ) -> tuple[list[str], list[str]]:
    """E-TRANSIENT-UNDER / -OVER / -FUTURE (docs/theory.md §7.3, §8.2): for each set of
    transient guards that select equations (a reinit, a when-equation of a continuous
    variable, an equation under ``edge(c)``) and can hold at one instant (`_event_sets`), the
    first instant of the change from a long mode B into their transient mode, run by the
    enumerated path's `exec_transient` (DiffArray, SolveConflict) from B's steady
    configuration; its failure with the formula of the long modes where it occurs. Every
    long mode is covered, by classes with one outcome (`transient_instants`: the instant on
    its region, docs/theory.md §10.7), with no bound on their number. The same failure
    (code, variables, equations) of one set of events from several classes is one message,
    the first class's, with the formula of them all. A failure whose message is that of the
    whole system is run there only while its code has fewer than `MAX_FAILURES_LISTED`
    messages; beyond, it is counted in the last one.

    The change may also come from another long mode A, a long guard switching at the same
    instant as the events (as the enumerated path explores every pair): DiffArray reads A
    only through the instances its steady configuration knows (`steady_config`: the offsets
    d), so a source that knows what B knows gives B's own run. When the long modes differ in
    their offsets d (`_source_modes`: more than one class), the changes from one mode of each
    such class are run on the whole system into the transient mode over one long mode of each
    class of the events' long modes with the same structure (`structure_classes`, whose
    modes give the same run from one source). A failure of such a change that the changes
    from B do not show is reported with the source's and the events' long modes.

    Returns ``(errors, warnings)``: W-TRANSIENT-UNCHECKED (`_unchecked_warning`) names the
    long modes beyond `MAX_TRANSIENT_CLASSES` classes (of sources, or of the events' long
    modes with the same structure, when the sources differ), or `MAX_SWITCHING_RUNS` changes
    from sources, from which no change from another long mode was run; they are not
    refused."""
    found: dict[tuple[Any, ...], tuple[str, Any]] = {}
    sigmas: dict[Mode, Any] = {}
    too_many: list[tuple[int, ...]] = []
    for on, f, _, _, run, exact in transient_instants(system, ia, sigmas, too_many):
        dg = run.diagnostic
        if not run.ok and dg is not None and dg.code.startswith("E-TRANSIENT-"):
            group = (on, dg.code)
            if exact is not None and sum(k[:2] == group for k in found) >= MAX_FAILURES_LISTED:
                # (counted in the last message: its text on the whole system is not needed)
                _merge(found, (*group, "class", len(found)), "", f)
            else:
                dg = dg if exact is None else exact().diagnostic
                _merge(found, (on, dg.code, dg.variables, dg.equations),
                       f"{dg.code}: {dg.message}", f)
    errors = _failure_messages(system, ia, found)
    switching, warnings = _switching_problems(system, ia, sigmas)
    warnings = [_sets_warning(system, comp, "the first instant (E-TRANSIENT-UNDER/-OVER/"
                              "-FUTURE)") for comp in too_many] + warnings
    return errors + [text for key, text in switching.items() if key not in found], warnings


def _switching_problems(system: MultimodeSystem, ia: ImplicitAnalysis,
                        sigmas: dict[Mode, Any]) -> tuple[dict[tuple[Any, ...], str], list[str]]:
    """The failures of the changes into a transient mode from another long mode
    (`_transient_problems`), keyed ``(events, code, variables, equations)``, and the
    warnings W-TRANSIENT-UNCHECKED of the long modes not run from; none when every long
    mode knows the same instances."""
    from ..modes.runs import exec_transient, sigma_of_mode, steady_config
    sources, rest = _source_modes(system, ia)
    switching: dict[tuple[Any, ...], str] = {}
    if len(sources) < 2 and rest == ia.space.bdd.false:
        return switching, []
    warnings: list[str] = []
    if rest != ia.space.bdd.false:
        warnings.append(_unchecked_warning(
            system, ia, None, "the first instant (E-TRANSIENT-UNDER/-OVER/-FUTURE) of a "
            "change from another long mode (a long guard switching at the instant)", rest))
    selecting = sorted({i for e in system.equations for i, p in e.guard
                        if p and system.guards[i].kind == "transient"})
    unchecked: list[tuple[tuple[int, ...], Any]] = []
    skipped: dict[tuple[int, ...], Any] = {}     # events -> their modes not run from others
    runs = 0
    for on, f, dst in _transient_sets(system, ia, selecting, singletons=False, classes=True,
                                      unchecked=unchecked):
        src = tuple(v if gd.kind == "long" else False for v, gd in zip(dst, system.guards))
        sig = sigmas.get(src)
        if sig is None:
            sig = sigmas[src] = sigma_of_mode(system, src)
        if not sig.ok:
            continue
        known = steady_config(system, src, sig).known
        for a, fa in sources:
            sig_a = sigmas.get(a)
            if sig_a is None:
                sig_a = sigmas[a] = sigma_of_mode(system, a)
            cfg = steady_config(system, a, sig_a) if sig_a.ok else None
            if cfg is None or cfg.known == known:
                continue        # (DiffArray reads the source's known instances only)
            if runs == MAX_SWITCHING_RUNS:
                skipped[on] = skipped.get(on, ia.space.bdd.false) | f
                break
            runs += 1
            pair = f"when switching {system.mode_label(a)} -> {system.mode_label(dst)}"
            run = exec_transient(system, cfg, dst, sig, pair=pair)
            dg = run.diagnostic
            if not run.ok and dg is not None and dg.code.startswith("E-TRANSIENT-"):
                key = (on, dg.code, dg.variables, dg.equations)
                switching.setdefault(key, f"{dg.code}: {dg.message}" + _pair_line(ia, fa, f))
    warnings += [_unchecked_warning(system, ia, on, "the first instant (E-TRANSIENT-UNDER/"
                                    "-OVER/-FUTURE) of a change from another long mode", rest)
                 for on, rest in unchecked]
    warnings += [f"W-TRANSIENT-UNCHECKED: the first instant (E-TRANSIENT-UNDER/-OVER/-FUTURE) "
                 f"of the changes from another long mode (a long guard switching at the "
                 f"instant) into the events "
                 f"{{{', '.join(system.guards[j].name for j in on)}}} was not run beyond "
                 f"{MAX_SWITCHING_RUNS} such changes, for the events in "
                 f"{ia.space.count(f)} of {ia.n_modes} long modes {ia.space.text(f)} (a "
                 f"failure there would be an error; the model is not refused for it)"
                 for on, f in skipped.items()]
    return switching, warnings


def _source_modes(system: MultimodeSystem, ia: ImplicitAnalysis
                  ) -> tuple[list[tuple[Mode, Any]], Any]:
    """One long mode (of ``system``: transient guards false) of each class of the regular
    modes with the same offsets d (`_known_formulas`), with its class's formula, up to
    `MAX_TRANSIENT_CLASSES`, and the formula of the modes beyond."""
    space = ia.space
    fixed = {expr_text(a): v for a, v in space.fixed.items()}
    classes, rest = mode_classes(ia, _regular(ia), MAX_TRANSIENT_CLASSES, _known_formulas(ia))
    out = []
    for pairs, fc in classes:
        value = {**fixed, **dict(pairs)}
        out.append((tuple(bool(value.get(expr_text(gd.cond), False)) if gd.kind == "long"
                          else False for gd in system.guards), fc))
    return out, rest


def _pair_line(ia: ImplicitAnalysis, source: Any, events: Any) -> str:
    """Where a failure of a change from another long mode holds: the source's class and the
    long modes of the events (the form of `_modes_line`)."""
    space = ia.space
    return (f"\n  from {space.count(source)} of {ia.n_modes} long modes: {space.text(source)}"
            f", the events in {space.count(events)} of {ia.n_modes} long modes: "
            f"{space.text(events)}")


def event_automaton_of(model: Model, per_mode: Any = None, erasure: str = "restricted",
                       literal_lemma22: bool = False) -> Any:
    """The mode-change automaton of ``model``, a model of one long mode with when-clauses, by
    the one analysis (issue 26 Deliver 1, docs/multimode.md "Single-mode models with
    when-clauses"): the checks of the module docstring on its implicit analysis decide the
    events, their simultaneous sets and cascades (`event_diagnostics`), and the change into
    each single event is cascaded and standardized on its instant's region
    (`mdae_fmu.modes.explore.event_automaton`, `instant_region`; the whole system when the
    part outside the region that it is linked to is under-determined at shift 0, as
    `_region_run` would add a phantom). No transient mode is enumerated: the cost is the
    events' regions, not 2^events. ``per_mode``: the per-mode report of ``model``."""
    from dataclasses import replace
    from ..modes.explore import event_automaton
    from ..modes.normalize import normalize
    from ..modes.runs import Diagnostic
    from .analysis import analyze_implicit
    ia = analyze_implicit(model)
    found: list[str] = []
    if ia.ok:
        errors, warnings = event_diagnostics(model, ia)
        found = errors + warnings
    system = normalize(model)
    occurs = occurrences(system)

    by_guard = guarded_by(system)
    empty = replace(system, equations=(), unknowns=())

    def region(dst: Mode, sig: Any) -> MultimodeSystem | None:
        if not any(by_guard.get(i) for i, v in enumerate(dst)
                   if v and system.guards[i].kind != "long"):
            return empty        # (the instant is its continuation's: nothing changes)
        long_mode = tuple(v if gd.kind == "long" else False
                          for v, gd in zip(dst, system.guards))
        rows0 = [e for e in system.enabled(long_mode) if sig.c[e.id] == 0]
        read0 = {v for e in rows0 for v, k in e.orders if k == sig.d[v]}
        nr0 = set(sig.d) - read0
        kept, _ = instant_region(system, dst, nr0, occurs,
                                 frozenset(v for v, dv in sig.d.items() if dv > 0))
        names = {v for k in kept for v in system.equations[k].order_map}
        ids = {system.equations[k].id for k in kept}
        linked, _, _ = _linked(system, names, occurs, (dst, long_mode))
        outside0 = [e for e in rows0 if e.id not in ids and set(e.order_map) <= linked]
        if len((read0 & linked) - names) > len(outside0):
            return None         # (the run needs the part outside: the whole system)
        return replace(system, equations=tuple(system.equations[k] for k in kept),
                       unknowns=tuple(v for v in system.unknowns if v in names))
    # (the formula of the modes concerned is that one mode: the message is the enumerated one)
    one = f"\n  in every one of the {ia.n_modes} long modes"
    checks = [Diagnostic(code=text.split(":", 1)[0],
                         message=text.split(":", 1)[1].strip().removesuffix(one))
              for text in found]
    return event_automaton(system, checks, region, erasure,  # type: ignore[arg-type]
                           literal_lemma22, per_mode)
