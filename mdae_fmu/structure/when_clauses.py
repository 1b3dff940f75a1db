"""What the equations of when-clauses read: their order within an instant, and derivatives.

At an event instant, the equations of the when-branches that fire are part of the system of
the instant like any other equation (Modelica 3.6 §8.3.5, §8.6; RR-9334 Def 33, docs/theory.md §5.4:
the discrete values of an instant are computed from the
left limits ``pre(...)`` and from the values of the same instant). An equation ``y = gain*count``
next to ``count = pre(count) + 1`` reads the *new* ``count``: the equations of the when-bodies
are solved in the topological order of their dependencies (`when_assignment_order`), and a
cycle among them (an algebraic loop of discrete equations) is rejected at analysis
(`when_clause_problems`). Dependencies that pass through the continuous equations (``z =
2*count`` computed by the mode's schedule, ``y = z`` in a when-body) are resolved at run time
by the event iteration of the generated code (docs/fmi-mapping.md, "Events", event iteration).
A cycle through the continuous equations (``when sample(0, 0.2) then y = 7 - 2*x + time; end
when; x + y = 5;``, OpenModelica's bug1228) is one simultaneous system at the instant: in a
single-mode model with Real when-variables the generated code solves it by Newton on those
variables (`coupled_when_variables`), otherwise it is rejected (E-WHEN-LOOP).

A when-condition, when-equation or assertion may read ``der(v)`` only where the analysis
computes it: in every mode, ``der(v)`` must be a derivative the mode's schedule solves for (a
state's derivative, or a leading variable of an index-reduced mode).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Sequence

from .. import expr as E
from ..ir import Assertion, Assign, Model, Reinit
from ..diagnostics import SourceLoc
from .per_mode import ModeAnalysis, ModesReport
from .sample_clocks import simultaneous_reinit_problems

if TYPE_CHECKING:
    import networkx as nx


def _assignments(model: Model) -> list[tuple[int, int, int, Assign]]:
    """Every ``Assign`` of the model: (clause index, branch index, action index, action)."""
    return [(c, b, a, act) for c, w in enumerate(model.whens)
            for b, br in enumerate(w.branches)
            for a, act in enumerate(br.actions) if isinstance(act, Assign)]


def _dependency_graph(model: Model) -> nx.DiGraph:
    """Variables assigned in when-clauses, with an edge ``u -> v`` when an equation of a
    when-body assigning ``v`` reads the current value of ``u`` (also assigned in one)."""
    import networkx as nx   # (imported on use, as in the functions below: about 0.1 s)
    assigns = _assignments(model)
    assigned = {act.var for _, _, _, act in assigns}
    g = nx.DiGraph()
    g.add_nodes_from(sorted(assigned))
    for _, _, _, act in assigns:
        for u in sorted(E.current_refs(act.value) & assigned):
            g.add_edge(u, act.var, loc=act.loc)
    return g


def when_assignment_order(model: Model) -> list[tuple[int, int, int]]:
    """The equations of all when-bodies as (clause, branch, action) indices, in an order where
    each comes after the equations assigning the variables it reads at the current instant
    (module docstring; Modelica 3.6 §8.6 sorting, here restricted to the when-equations).
    Ties keep source order. Raises ``networkx.NetworkXUnfeasible`` on a cycle
    (`when_clause_problems` reports it at analysis)."""
    if not model.whens:
        return []           # (without importing networkx: about 0.5 s CPU of an export)
    import networkx as nx
    g = _dependency_graph(model)
    assigns = _assignments(model)
    first: dict[str, tuple[int, int, int]] = {}
    for c, b, a, act in assigns:
        first.setdefault(act.var, (c, b, a))
    rank = {v: k for k, v in enumerate(nx.lexicographical_topological_sort(
        g, key=lambda v: first[v]))}
    assigns.sort(key=lambda t: (rank[t[3].var], t[0], t[1], t[2]))
    return [(c, b, a) for c, b, a, _ in assigns]


def _cycle_message(model: Model, g: nx.DiGraph) -> str | None:
    """The E-WHEN-LOOP rejection of a cycle among the when-equations, or None."""
    import networkx as nx
    try:
        cycle = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        return None
    lines = []
    for u, v in cycle:
        loc = g.edges[u, v].get("loc")
        where = f" ({loc.short()})" if loc else ""
        lines.append(f"  the equation of {v} in a when-clause{where} reads {u}")
    names = sorted({u for u, _ in cycle})
    return ("algebraic loop among the equations of when-clauses (E-WHEN-LOOP): "
            + ", ".join(names) + " depend on each other at the same instant:\n"
            + "\n".join(lines)
            + f"\n  fix: read the previous value where it is meant, e.g. pre({names[0]})")


def instance_node(name: str, order: int) -> str:
    """The graph node of ``name`` differentiated ``order`` times: ``x``, ``der(x)``..."""
    return "der(" * order + name + ")" * order


def instant_reads(e: E.Expr) -> set[str]:
    """`expr.current_refs` with derivatives apart: ``der(x)`` is the node ``der(x)``, which
    the schedule computes at an instant, not the state ``x``, which it does not."""
    out: set[str] = set()
    stack: list[tuple[E.Expr, int]] = [(e, 0)]
    while stack:
        n, order = stack.pop()
        if isinstance(n, E.Ref):
            out.add(instance_node(n.name, order))
        elif isinstance(n, E.Call) and n.func == "pre":
            continue
        elif isinstance(n, E.Der):
            stack.append((n.arg, order + 1))
        else:
            stack.extend((c, order) for c in E.children(n))
    return out


def when_instant_graph(model: Model) -> nx.DiGraph:
    """The part of every mode's instant graph (`_mode_graphs`) that reads no mode: ``u -> v``
    when the equation of ``v`` in a when-body reads ``u`` at the current instant (edge
    attribute ``loc``)."""
    import networkx as nx
    g = nx.DiGraph()
    for _, _, _, act in _assignments(model):
        for u in sorted(instant_reads(act.value)):
            g.add_edge(u, act.var, loc=act.loc)
    return g


def _mode_graphs(model: Model, modes: Sequence[ModeAnalysis]
                 ) -> Iterator[tuple[ModeAnalysis, nx.DiGraph]]:
    """Per mode of ``modes``: the graph of what is computed from what at an event instant,
    ``u -> v`` when the equation of ``v`` in a when-body reads ``u`` (edge attribute ``loc``)
    or when the mode's schedule computes the algebraic ``v`` from ``u`` (attribute ``eq``, the
    block's equation ids)."""
    import networkx as nx
    by_id = {eq.id: eq for eq in model.equations}
    when_g = when_instant_graph(model)
    for mode in modes:
        g = nx.DiGraph(when_g)
        for blk in mode.blocks:
            # the leading instances the block computes: algebraic values and derivatives
            # (der(x) = f(z)); the states themselves are not computed at the instant
            outs = sorted({instance_node(u.name, u.order) for u in blk.unknowns})
            if not outs:
                continue
            reads = set()
            for eq_id, _k in blk.equations:
                eq = by_id.get(eq_id)
                if eq is not None:
                    reads |= instant_reads(eq.residual)
            for u in sorted(reads - set(outs)):
                for v in outs:
                    if not g.has_edge(u, v):
                        g.add_edge(u, v, eq=",".join(e for e, _ in blk.equations))
        yield mode, g


def coupled_when_variables(model: Model, report: ModesReport) -> tuple[str, ...]:
    """The variables assigned in when-bodies that lie on a cycle through the continuous
    equations (`through_continuous_message`), in model order; empty when there is none.
    The generated code solves them with the continuous equations of the instant by Newton
    (templates/mdae_runtime.c, ``when_loop_newton``; docs/fmi-mapping.md, "Events")."""
    assigned = {act.var for _, _, _, act in _assignments(model)}
    if not assigned or report is None:
        return ()
    import networkx as nx
    on_cycle: set[str] = set()
    for _, g in _mode_graphs(model, report.modes):
        for scc in nx.strongly_connected_components(g):
            if len(scc) > 1:
                on_cycle |= scc & assigned
    return tuple(v.name for v in model.variables if v.name in on_cycle)


def through_continuous_message(model: Model, modes: Sequence[ModeAnalysis],
                               several_modes: bool | None = None) -> str | None:
    """E-WHEN-LOOP across the continuous equations, when it cannot be solved: in some mode, an
    equation of a when-body reads (at the current instant) a variable the mode's schedule
    computes from a variable assigned in a when-body, and back (module docstring). At the
    event instant these equations form one simultaneous system with the continuous equations
    (Modelica 3.6 §8.6). In a single-mode model whose when-variables on such cycles are all
    Real, the generated code solves that system by Newton on those variables
    (`coupled_when_variables`), the continuous equations re-solved by the schedule at each
    evaluation: accepted. Rejected (the message says which case): a cycle through an Integer
    or Boolean (no Newton step on a discrete value), or a model with several modes (the
    multimode exporter solves when-equations by ordering only). ``modes``: the per-mode
    analyses to check; ``several_modes``: whether the model has several modes (by default,
    whether ``modes`` has several: the one analysis checks one concrete mode of a multimode
    model, `mdae_fmu.implicit.when_checks`). None when nothing is rejected."""
    assigned = {act.var for _, _, _, act in _assignments(model)}
    if not assigned:
        return None
    several = len(modes) > 1 if several_modes is None else several_modes
    import networkx as nx
    types = {v.name: v.type for v in model.variables}
    by_id = {eq.id: eq for eq in model.equations}
    for mode, g in _mode_graphs(model, modes):
        try:
            cycle = nx.find_cycle(g)
        except nx.NetworkXNoCycle:
            continue
        discrete = sorted(v for scc in nx.strongly_connected_components(g) if len(scc) > 1
                          for v in scc & assigned if types.get(v, "Real") != "Real")
        if not several and not discrete:
            continue
        if discrete:
            cycle = _cycle_through(g, discrete[0]) or cycle
        lines = []
        for u, v in cycle:
            data = g.edges[u, v]
            if "eq" in data:
                eqs = [by_id[e] for e in data["eq"].split(",") if e in by_id]
                where = "".join(f" ({eq.loc.short()})" for eq in eqs if eq.loc)
                lines.append(f"  the continuous equation{where} computes {v} from {u}")
            else:
                loc = data.get("loc")
                where = f" ({loc.short()})" if loc else ""
                lines.append(f"  the equation of {v} in a when-clause{where} reads {u}")
        when_vars = [u for u, _ in cycle if u in assigned]
        mode_txt = f" in mode {mode.name}" if several else ""
        why = (f"the loop passes through the {types[discrete[0]]} {discrete[0]}, and only "
               "Real when-variables are solved with the continuous equations (by Newton)"
               if discrete else
               "the model has several modes, and only single-mode models solve a when-"
               "equation together with the continuous equations (by Newton)")
        return ("algebraic loop between equations of when-clauses and continuous equations "
                f"(E-WHEN-LOOP){mode_txt}: at the event instant they form one simultaneous "
                f"system, which is not supported here: {why}:\n" + "\n".join(lines)
                + f"\n  fix: read the previous value where it is meant, e.g. replace the "
                f"current values read in the when-equation of {when_vars[0]} by pre(...) of "
                f"them, or solve the coupled system by hand in the when-equation")
    return None


def _cycle_through(g: nx.DiGraph, v: str) -> list[Any] | None:
    """A cycle of ``g`` through the node ``v`` as a list of edges, or None."""
    import networkx as nx
    for u in g.predecessors(v):
        try:
            path = nx.shortest_path(g, v, u)
        except nx.NetworkXNoPath:
            continue
        return list(zip(path, path[1:])) + [(u, v)]
    return None


def _derivative_reads(e: E.Expr) -> set[tuple[str, int]]:
    """``(v, k)`` for every ``der(v)`` (k = 1), ``der(der(v))`` (k = 2)... read by ``e`` at the
    current instant."""
    out = set()
    stack = [e]
    while stack:
        n = stack.pop()
        if isinstance(n, E.Call) and n.func == "pre":
            continue
        if isinstance(n, E.Der):
            k, arg = 1, n.arg
            while isinstance(arg, E.Der):
                k, arg = k + 1, arg.arg
            if isinstance(arg, E.Ref):
                out.add((arg.name, k))
                continue
        stack.extend(E.children(n))
    return out


def _event_reads(model: Model) -> Iterator[tuple[str, SourceLoc | None, E.Expr]]:
    """(what, location, expression) for the expressions evaluated by event code: conditions
    and equations of when-clauses, assertions."""
    for w in model.whens:
        for br in w.branches:
            yield f"the condition of when-clause {w.id}", br.loc or w.loc, br.condition
            for act in br.actions:
                if isinstance(act, (Assign, Reinit)):
                    yield (f"the equation of {act.var} in when-clause {w.id}"
                           if isinstance(act, Assign) else
                           f"reinit({act.var}, ...) in when-clause {w.id}"), \
                        act.loc or br.loc, act.value
                elif isinstance(act, Assertion):
                    yield f"an assertion in when-clause {w.id}", act.loc or br.loc, act.cond
    for a in model.assertions:
        yield "an assertion", a.loc, a.cond


def computed_derivatives(mode: ModeAnalysis) -> set[tuple[str, int]]:
    """Derivative instances ``(v, k)``, k >= 1, whose value the schedule of ``mode`` holds."""
    out = {(s.name, s.order + 1) for s in mode.states}
    out |= {(i.name, i.order) for i in mode.leading}
    out |= {(u.name, u.order) for b in mode.blocks for u in b.unknowns}
    return {x for x in out if x[1] >= 1}


def event_derivative_reads(model: Model) -> list[tuple[str, SourceLoc | None, str, int]]:
    """``(what, location, v, k)`` for every ``der(v)`` (k = 1), ``der(der(v))`` (k = 2)...
    that an expression evaluated by event code reads at the current instant (`_event_reads`)."""
    return [(what, loc, v, k) for what, loc, e in _event_reads(model)
            for v, k in sorted(_derivative_reads(e))]


def event_derivative_message(what: str, loc: SourceLoc | None, v: str, k: int,
                             missing: Sequence[str], several_modes: bool) -> str:
    """The E-EVENT-DER rejection of ``der(v)`` (order ``k``) read by ``what`` at ``loc``,
    which the modes named ``missing`` do not compute (named when the model has
    ``several_modes``), with the fix."""
    text = "der(" * k + v + ")" * k
    where = f" ({loc.short()})" if loc else ""
    modes = f" in mode{'s' * (len(missing) > 1)} {', '.join(missing)}" if several_modes else ""
    return (f"derivative not computed (E-EVENT-DER): {what}{where} reads {text}, which the "
            f"analysis does not compute{modes}: {v} is not differentiated by any equation "
            f"(only the derivatives the equations determine are available at events)\n"
            f"  fix: name the derivative in an equation, e.g. declare Real d_{v}; add the "
            f"equation d_{v} = {text}; and read d_{v}")


def _derivative_messages(model: Model, report: ModesReport) -> list[str]:
    """E-EVENT-DER: an event expression reads a derivative some mode does not compute."""
    out: list[str] = []
    reads = event_derivative_reads(model)
    if not reads:
        return out
    computed = [(m.name, computed_derivatives(m)) for m in report.modes]
    for what, loc, v, k in reads:
        missing = [name for name, ders in computed if (v, k) not in ders]
        if missing:
            out.append(event_derivative_message(what, loc, v, k, missing,
                                                len(report.modes) > 1))
    return out


def when_loop_message(model: Model) -> str | None:
    """E-WHEN-LOOP for a cycle among the equations of when-bodies alone (no mode read), or
    None."""
    return _cycle_message(model, _dependency_graph(model)) if _assignments(model) else None


def when_clause_problems(model: Model, report: ModesReport | None, derivatives: bool = True
                         ) -> list[str]:
    """Rejection messages for the when-clauses of ``model`` given its per-mode analysis
    ``report`` (`mdae_fmu.structure.per_mode.ModesReport`; None: the checks that need it are
    skipped): a cycle among the equations of
    when-bodies (E-WHEN-LOOP), a derivative read at events that some mode does not compute
    (E-EVENT-DER), two when-clauses that reinit one variable on sample clocks that fire
    together (E-REINIT-SAME-INSTANT, `mdae_fmu.structure.sample_clocks`). Empty when the model
    has none of these (module docstring)."""
    out = simultaneous_reinit_problems(model)
    loop = when_loop_message(model)
    if loop:
        out.append(loop)
    elif report is not None:
        coupled = through_continuous_message(model, report.modes)
        if coupled:
            out.append(coupled)
    if derivatives and report is not None:
        out.extend(_derivative_messages(model, report))
    return out
