"""Connection sets of a flattened model, and the two defects of causal connections that make it
structurally singular (Modelica 3.6 §9.3, "Restrictions of Connections and Connectors").

A front end turns ``connect(a.y, b.u)`` between causal connectors (``input``/``output``
signals) into the equation ``b.u = a.y``: in the flat text a connection set is a class of
variables equated two by two by unguarded equations ``v = w`` (rumoca chains them,
``b.u = a.y; a.y = c.u``). §9.3 allows in such a set variables from at most one inside
``output`` connector (one source of the signal), and an input of a component that no
connection reaches needs an equation of its own. The flat importer keeps such an input as an
input of the model (`flat_modelica`'s ``_connected_component_inputs``: a component class
simulated on its own), so a model that leaves one unconnected gains a known and, when one of
its sets joins two outputs, has one equation too many.

The structural analysis sees only the consequence: a large over-determined part (its
Dulmage–Mendelsohn block, docs/theory.md §2.4) that spans every equation coupled to the
defect. `connection_defects` names the cause in the model's own terms, for the rejection
message of a structurally singular model (`mdae_fmu.analysis`): each set whose equations are
in the over-determined part and that holds outputs of two components, and each component
input taken as an input of the model."""

from __future__ import annotations

from collections.abc import Collection

from .. import expr as E
from ..ir import Equation, Model


def connection_sets(model: Model) -> list[tuple[tuple[str, ...], tuple[Equation, ...]]]:
    """The classes of variables that unguarded equations ``v = w`` between two components
    equate (variables, not parameters or constants; ``v`` and ``w`` of one component is that
    component's own equation), each with its members in order of first appearance and its
    equations, in the order of their first equation."""
    fixed = {v.name for v in model.variables if v.variability in ("parameter", "constant")}
    parent: dict[str, str] = {}

    def find(n: str) -> str:
        root = n
        while parent[root] != root:
            root = parent[root]
        while parent[n] != root:          # path compression
            parent[n], n = root, parent[n]
        return root

    links: list[tuple[str, str, Equation]] = []
    for eq in model.equations:
        r = eq.residual
        if eq.guard or type(r) is not E.BinOp or r.op != "-" or type(r.left) is not E.Ref \
                or type(r.right) is not E.Ref:
            continue
        a, b = r.left.name, r.right.name
        if a in fixed or b in fixed or _component(a) == _component(b):
            continue        # a component's own equation (`out = p`), not a connection
        for n in (a, b):
            parent.setdefault(n, n)
        parent[find(a)] = find(b)
        links.append((a, b, eq))
    members: dict[str, list[str]] = {}
    equations: dict[str, list[Equation]] = {}
    for a, b, eq in links:
        root = find(a)
        names = members.setdefault(root, [])
        for n in (a, b):
            if n not in names:
                names.append(n)
        equations.setdefault(root, []).append(eq)
    return [(tuple(members[r]), tuple(equations[r])) for r in members]


def _component(name: str) -> str:
    """The component path of a flat name (``a.b`` of ``a.b.y``; ``""`` at the top level)."""
    return name[:max(name.rfind("."), 0)]


def _sources(names: tuple[str, ...], outputs: Collection[str]) -> list[str]:
    """The outputs of components among ``names`` that are two sources of one signal: the
    inside outputs (the innermost, when one component contains another's)."""
    outs = [n for n in names if n in outputs and "." in n]
    inner = [n for n in outs if not any(_component(m).startswith(_component(n) + ".")
                                        for m in outs)]
    return inner if len(inner) > 1 else []


def connection_defects(model: Model, over_equations: Collection[str]) -> tuple[str, ...]:
    """The messages (module docstring) for a model whose analysis found ``over_equations``
    (ids) over-determined: each connection set among them that holds outputs of two
    components, then each input of a component that the import kept as an input of the
    model; empty when the over-determined part holds neither."""
    if not over_equations:
        return ()
    over = set(over_equations)
    outputs = {v.name for v in model.variables if v.causality == "output"}
    out = []
    for names, eqs in connection_sets(model):
        if not any(eq.id in over for eq in eqs):
            continue
        sources = _sources(names, outputs)
        if not sources:
            continue
        where = ", ".join(f"{eq.id} ({eq.loc.short()})" if eq.loc is not None else eq.id
                          for eq in eqs)
        joined = ", ".join(sources[:-1]) + " and " + sources[-1]
        out.append(f"the connection set {{{', '.join(names)}}} (equations {where}) joins "
                   f"{len(sources)} component outputs, {joined}: a connection set holds at "
                   "most one source of a signal (Modelica 3.6 §9.3), so these equations "
                   "over-determine the model")
    for v in model.variables:
        if v.causality == "input" and "." in v.name:
            out.append(f"{v.name}: an input of component {_component(v.name)} that no "
                       "equation connects, taken as an input of the model (Modelica 3.6 §9.3: "
                       "an unconnected component input needs a connection or an equation of "
                       "its own)")
    return tuple(out)
