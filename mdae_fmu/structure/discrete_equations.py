"""Discrete equations outside when-clauses: ``Integer m = k + 1``, ``Integer n = if x > 1 then
1 else 0`` (Modelica 3.6 §8.6; RR-9334 Def 33, docs/theory.md §5.4: a discrete
variable is known within a mode and recomputed at initialization and at every event instant).

The generated code evaluates these equations in one pass at the start of every evaluation,
their relations frozen between events (`mdae_fmu.codegen.events`): an equation must come
after those of the discrete variables it reads (`order_discrete`), and its value must not
change between events except through a watched relation (`check_event_free`). A loop through
the continuous equations (``c = if s > 1 then 1 else 0`` with ``s = x + 0.5*c``) is settled by
the event iteration of the generated code (docs/fmi-mapping.md, "Events").
"""

from __future__ import annotations

from .. import expr as E
from ..diagnostics import ModelRejected
from ..ir import Equation


def order_discrete(defs: list[tuple[str, E.Expr, Equation]]) -> list[tuple[str, E.Expr]]:
    """The discrete equations ``(target, value, equation)`` as ``(target, value)``, each after
    the equations of the discrete variables its value reads at the current instant (the
    sorting of Modelica 3.6 §8.6 restricted to the discrete equations outside when-clauses;
    ties keep source order), so that one pass of the generated code computes them all from
    the values of the instant. A cycle is an algebraic loop of discrete equations: rejected,
    naming the equations."""
    if not defs:
        return []
    import networkx as nx   # (imported on use: about 0.1 s)
    targets = {t: k for k, (t, _, _) in enumerate(defs)}
    g = nx.DiGraph()
    g.add_nodes_from(targets)
    for t, v, _ in defs:
        for u in E.current_refs(v):
            if u in targets:
                g.add_edge(u, t)
    try:
        order = list(nx.lexicographical_topological_sort(g, key=lambda n: targets[n]))
    except nx.NetworkXUnfeasible:
        cycle = nx.find_cycle(g)
        where = "; ".join(f"{_equation_at(defs[targets[v]][2])} defines {v} from {u}"
                          for u, v in cycle)
        raise ModelRejected(
            "algebraic loop among discrete equations (E-DISCRETE-LOOP): " + ", ".join(sorted(
                {u for u, _ in cycle})) + f" depend on each other at the same instant: "
            f"{where}; fix: read the previous value where it is meant, e.g. "
            f"pre({cycle[0][0]}) in {defs[targets[cycle[0][1]]][2].id}") from None
    return [(t, defs[targets[t]][1]) for t in order]


#: Integer-valued functions whose value jumps where their argument crosses an integer: in a
#: discrete equation they would change between events (no relation is watched for them).
_STEP_FUNCTIONS = ("integer", "Integer", "floor", "ceil", "div", "mod", "rem")


def _equation_at(eq: Equation) -> str:
    """``e3 (file.mo:12)``, or the id alone without a source location."""
    return eq.id + (f" ({eq.loc.short()})" if eq.loc is not None else "")


def check_event_free(eq: Equation, name: str, value: E.Expr,
                     continuous: frozenset[str] | set[str]) -> None:
    """Reject a discrete equation whose value reads a continuous variable through a step
    function (``Integer c = integer(s)``): only relations (``s > 1``) get event indicators, so
    the jumps of such a value would not be located and the integrator would step over them
    (wrong numbers, which the tool must never give)."""
    for n in E.walk(value):
        if isinstance(n, E.Call) and n.func in _STEP_FUNCTIONS:
            reads = sorted(set().union(*(E.current_refs(a) for a in n.args)) & continuous)
            if reads:
                where = f" ({eq.loc.short()})" if eq.loc else ""
                raise ModelRejected(
                    f"discrete equation not supported (E-DISCRETE-STEP): equation {eq.id}"
                    f"{where} defines the discrete variable {name} with {n.func}() of the "
                    f"continuous {', '.join(reads)}; {n.func}() changes value where its "
                    f"argument crosses an integer, an event this tool does not generate (only "
                    f"relations such as {reads[0]} > c get event indicators), so the "
                    f"integration would step over the jumps of {name}")
