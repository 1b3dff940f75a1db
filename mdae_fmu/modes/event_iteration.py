"""Guards on values computed in the same instant: event iteration as a cascade of instants.

RR-9334 Def 33, docs/theory.md §5.4 (``gamma^o = b``: a guard is computed for the
*next* instant from the current values), docs/theory.md §5.5 (nonstandard instants) and
docs/theory.md §7 (transient modes
and cascades). A guard whose definition reads, at the current instant, a variable that the
equations it selects compute (the Modelica Standard Library's ideal diode ``off = s < 0`` with
``u = s*(if off then 1 else Ron)``, the rope's ``taut = s <= 0`` with ``s`` defined under
``taut``) is a logico-numerical fixpoint if read literally. Modelica resolves it by event
iteration: the relation is held during integration and watched by an event indicator, and at
an event it is re-evaluated from the solution of the mode it selected, the mode switched, the
system restarted, until no relation changes. In the nonstandard semantics this is the cascade
of Def 33: instant n+1's guard reads instant n's value, i.e. the guard reads ``pre(s)`` at each
instant of the cascade (the left limit at its first instant). So such a guard is accepted and
*delayed* (`delayed_guards`; the model rewritten by `mdae_fmu.modes.delay`), which is exactly
the meaning a ``pre(s)`` guard already has in this project; a guard written with ``pre`` keeps
its meaning.

What can go wrong is an iteration that never settles (the selected mode computes values that
select another mode, which selects the first again). `mdae_fmu.modes.settling` finds the
cycles that are decidable at compile time: in each long mode, the delayed guards whose
variables the mode gives a constant value (an equation ``s = c`` in that mode, parameters
replaced by their values) are evaluated (`forced_change`, the forced map of docs/theory.md
§5.6); a chain of forced mode changes that returns to a mode is rejected (E-FIXPOINT,
`cycle_rejection`) with the modes, guards, values and equations; all long modes are decided at
once, over the guard bits, with no bound on their number. Other cycles are found at run time:
the generated code bounds the number of mode changes at one event and returns fmi2Error naming
the guards that keep changing (docs/multimode-fmu.md, "Event iteration").
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any, Protocol

from .. import expr as E
from ..diagnostics import ModelRejected
from ..ir import Model

class NormalizedSystem(Protocol):
    """What `state_names` reads of a `mdae_fmu.modes.normalize.MultimodeSystem` (a protocol:
    normalize calls this module, which therefore does not import it back)."""

    @property
    def equations(self) -> tuple[Any, ...]: ...


def state_names(system: NormalizedSystem) -> set[str]:
    """Variables that appear differentiated in some equation (their left limit is known at the
    start of every instant)."""
    names = system.__dict__.get("_state_names")
    if names is None:
        names = frozenset(n for e in system.equations for n, k in e.orders if k >= 1)
        object.__setattr__(system, "_state_names", names)
    return set(names)


def guard_dependencies(system):
    """The graph "guard a reads a same-instant variable v that an equation enabled or disabled
    by guard b determines" over the guard indices of a normalized system, with one witness
    ``(v, equation)`` per edge; variables that are states (their left limit is known at the
    start of every instant) do not count. Returns ``(graph, via, reads)`` with ``reads`` the
    same-instant algebraic variables each guard reads."""
    import networkx as nx
    g = nx.DiGraph()
    g.add_nodes_from(range(len(system.guards)))
    via: dict[tuple[int, int], tuple[str, object]] = {}
    reads: dict[int, list[str]] = {}
    if not system.guards:
        return g, via, reads
    states = state_names(system)
    unknown = set(system.unknowns)
    for gi, guard in enumerate(system.guards):
        for v in sorted(guard.reads):
            if v not in unknown or v in states:
                continue
            reads.setdefault(gi, []).append(v)
            for eq in system.equations:
                if v in eq.order_map or (eq.reinit == v):
                    for gj, _ in eq.guard:
                        g.add_edge(gi, gj)
                        via.setdefault((gi, gj), (v, eq))
    return g, via, reads


def delayed_guards(system) -> dict[int, tuple[str, ...]]:
    """Guards on a cycle of `guard_dependencies` (they read, at the same instant, values that
    depend on their own value): ``{guard index: same-instant variables it reads}``. These are
    evaluated by event iteration (module docstring)."""
    if not system.guards:
        return {}
    import networkx as nx
    g, _, reads = guard_dependencies(system)
    out: dict[int, tuple[str, ...]] = {}
    for comp in nx.strongly_connected_components(g):
        cyclic = len(comp) > 1 or any(g.has_edge(n, n) for n in comp)
        if cyclic:
            for gi in comp:
                if reads.get(gi):
                    out[gi] = tuple(reads[gi])
    return dict(sorted(out.items()))


# --- compile-time detection of iterations that never settle --------------------------------

def parameter_values(model: Model) -> dict[str, float]:
    """Numeric values of the parameters and constants whose binding (or start) is a constant
    expression of other such values."""
    exprs = {}
    for v in model.variables:
        if v.variability in ("parameter", "constant"):
            e = v.binding if v.binding is not None else v.start
            if e is not None:
                exprs[v.name] = e
    values: dict[str, float] = {}
    for _ in range(len(exprs) + 1):
        changed = False
        for n, e in exprs.items():
            if n not in values:
                x = numeric_value(e, values)
                if x is not None:
                    values[n] = x
                    changed = True
        if not changed:
            break
    return values


_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
          "^": operator.pow}
_FUNCS: dict[str, Callable[[float], float]] = {
    "sin": math.sin, "cos": math.cos, "exp": math.exp, "sqrt": math.sqrt, "abs": abs,
    "log": math.log}


def numeric_value(e: E.Expr, values: dict[str, float]) -> float | None:
    """The value of an arithmetic expression of constants and known names, None if it reads
    anything else (or fails: division by zero, domain errors)."""
    try:
        if isinstance(e, E.Const):
            return float(e.value)
        if isinstance(e, E.Ref):
            return values.get(e.name)
        if isinstance(e, E.UnOp):
            a = numeric_value(e.arg, values)
            if a is None:
                return None
            return -a if e.op == "-" else (a if e.op == "+" else None)
        if isinstance(e, E.BinOp):
            a, b = numeric_value(e.left, values), numeric_value(e.right, values)
            f = _ARITH.get(e.op.lstrip("."))
            return None if a is None or b is None or f is None else float(f(a, b))
        if isinstance(e, E.Call) and e.func in _FUNCS and len(e.args) == 1:
            a = numeric_value(e.args[0], values)
            return None if a is None else float(_FUNCS[e.func](a))
    except (ArithmeticError, ValueError, TypeError):
        return None
    return None


def condition_value(c: E.Expr, values: dict[str, float]) -> bool | None:
    """Truth value of a relation / and / or / not of known values, of a Boolean name or
    literal; None when it reads anything else."""
    if isinstance(c, E.UnOp) and c.op == "not":
        v = condition_value(c.arg, values)
        return None if v is None else not v
    if isinstance(c, E.BinOp) and c.op in ("and", "or"):
        a, b = condition_value(c.left, values), condition_value(c.right, values)
        if c.op == "and":
            return False if (a is False or b is False) else (None if None in (a, b) else True)
        return True if (a is True or b is True) else (None if None in (a, b) else False)
    if isinstance(c, E.BinOp) and c.op in E.REL_OPS:
        x, y = numeric_value(c.left, values), numeric_value(c.right, values)
        if x is None or y is None:
            return None
        return {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y, "==": x == y,
                "<>": x != y}[c.op]
    if isinstance(c, (E.Ref, E.Const)):
        n = numeric_value(c, values)
        return None if n is None else n != 0
    return None


def initial_guard_values(system) -> dict[int, bool]:
    """Initial values of the delayed guards that have no start value of their own: their
    definition evaluated on the start values of the variables they read (at initialization the
    left limit ``pre(s)`` of a continuous ``s`` is its start value, as the generated code
    evaluates it) and the parameters' values. ``{guard index: value}``."""
    model = system.model
    if model is None or all(g.init is not None or g.kind != "long" for g in system.guards):
        return {}
    params = parameter_values(model)
    starts = {}
    for v in model.variables:
        if v.start is not None and v.variability not in ("parameter", "constant"):
            x = numeric_value(v.start, params)
            if x is not None:
                starts[v.name] = x
    delayed = delayed_guards(system)
    unknown = set(system.unknowns)
    out = {}
    for gi, guard in enumerate(system.guards):
        if guard.init is not None or guard.kind != "long":
            continue
        left = {n.args[0].name for n in E.walk(guard.definition)
                if isinstance(n, E.Call) and n.func == "pre" and n.args
                and isinstance(n.args[0], E.Ref) and n.args[0].name in unknown}
        names = set(delayed.get(gi, ())) | left
        if not names:
            continue
        values = {**params, **{n: starts[n] for n in names if n in starts}}
        value = condition_value(_strip_pre(guard.definition, names), values)
        if value is not None:
            out[gi] = value
    return out


def _strip_pre(e: E.Expr, names) -> E.Expr:
    """``e`` with ``pre(v)`` replaced by ``v`` for v in ``names``."""
    return E.substitute(e, {E.Call("pre", (E.Ref(n),)): E.Ref(n) for n in names})


def forced_constants(system, names, params: dict[str, float]) -> dict[str, list]:
    """``{var: [(value, equation), ...]}`` for each of ``names``: the equations (in the
    system's order) that have ``var`` as their only unknown and are affine in it with numeric
    coefficients, each with the value it gives ``var``. Whether an equation is one does not
    depend on the mode, so it is decided once, not once per mode (`mdae_fmu.modes.settling`)."""
    out: dict[str, list] = {v: [] for v in names}
    for eq in system.equations:
        if eq.reinit is not None or len(eq.order_map) != 1:
            continue
        (var, order), = eq.order_map.items()
        if var not in out or order != 0:
            continue
        known = dict(params)
        known[var] = 0.0
        r0 = numeric_value(eq.residual, known)
        known[var] = 1.0
        r1 = numeric_value(eq.residual, known)
        known[var] = 2.0
        r2 = numeric_value(eq.residual, known)
        if r0 is None or r1 is None or r2 is None:
            continue
        slope = r1 - r0
        if slope == 0 or abs((r2 - r1) - slope) > 1e-12 * max(1.0, abs(slope)):
            continue
        out[var].append((-r0 / slope, eq))
    return out


def constant_in_mode(candidates: list, mode):
    """``(value, equation)`` of the first of ``candidates`` (`forced_constants` of a variable)
    enabled in ``mode``: an equation enabled there that has the variable as its only unknown
    and is affine in it with numeric coefficients; else None."""
    for value, eq in candidates:
        if not eq.guard or all(mode[i] == p for i, p in eq.guard):
            return value, eq
    return None


def forced_change(system, delayed: dict[int, tuple[str, ...]], constants: dict[str, list],
                  params: dict[str, float], mode) -> tuple[tuple[bool, ...], list]:
    """The forced map of the settling check at one mode (docs/theory.md §5.6): ``(next, why)``
    with ``next`` the mode whose delayed guards (``delayed``, `delayed_guards`) take the value
    of their definition on the constants ``mode`` forces (the first enabled equation of
    ``constants``, `constant_in_mode`, and the parameters ``params``) where that value is
    known and differs, and ``why`` one ``(guard name, new value, [(variable, value,
    equation), ...])`` per guard that changes (empty: the mode is settled)."""
    nxt = list(mode)
    why = []
    for gi, names in delayed.items():
        guard = system.guards[gi]
        known = dict(params)
        used = []
        for v in names:
            found = constant_in_mode(constants[v], mode)
            if found is not None:
                known[v] = found[0]
                used.append((v, found[0], found[1]))
        value = condition_value(guard.definition, known)
        if value is not None and value != mode[gi]:
            nxt[gi] = value
            why.append((guard.name, value, used))
    return tuple(nxt), why


def cycle_rejection(system, cyc: list, reasons: dict) -> ModelRejected:
    """The E-FIXPOINT rejection of the cycle ``cyc`` of forced changes (modes in their order,
    ``reasons`` the ``why`` of `forced_change` of each): the message names each mode, guard,
    value and equation; the details carry the code, the modes and the guards."""
    return ModelRejected(cycle_message(system, cyc, reasons),
                         {"code": "E-FIXPOINT",
                          "modes": [system.mode_label(x) for x in cyc],
                          "guards": sorted({w[0] for x in cyc for w in reasons[x]})})


def cycle_message(system, cyc, reasons) -> str:
    """The text of `cycle_rejection`: one line per guard that changes in each mode of the
    cycle, with the values and equations that force it and the next mode."""
    lines = []
    for k, m in enumerate(cyc):
        nxt = cyc[(k + 1) % len(cyc)]
        for name, value, used in reasons[m]:
            vals = ", ".join(
                f"{v} = {x:.6g} (equation {eq.origin}"
                + (f", {eq.loc.short()}" if eq.loc else "") + ")" for v, x, eq in used)
            lines.append(f"  in mode [{system.mode_label(m)}] guard {name} becomes "
                         f"{str(value).lower()} ({vals}): -> [{system.mode_label(nxt)}]")
    return ("logico-numerical fixpoint (E-FIXPOINT): the event iteration cannot settle, each "
            "mode selects the next one:\n" + "\n".join(lines))


__all__ = ["state_names", "guard_dependencies", "delayed_guards", "numeric_value",
           "condition_value", "initial_guard_values", "parameter_values", "forced_constants",
           "constant_in_mode", "forced_change", "cycle_rejection", "cycle_message"]
