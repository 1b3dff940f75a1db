"""What the guarded block schedule does at a mode change, in terms a modeller reads (the
summary and the report of `mdae-fmu analyze`, `mdae_fmu.summary`, `mdae_fmu.analysis`).

The schedule (`mdae_fmu.implicit.schedule.GuardedSchedule`) holds one restart system per block
variant (docs/theory.md §9, the local rule of docs/decisions.md §9): the right limits of the
block's states and the impulses of its algebraic unknowns, from the left limits and the jumps
and impulses of the blocks before it. The restart into a mode is the composition, in
schedule order, of the restarts of the variants whose formula holds in that mode; solved here
with sympy when each system is linear and small, it gives ``x+ = f(x-)`` for the states that
jump and the variables whose impulse is not zero. Nothing here feeds code generation.

Formulas are nodes of the schedule's `FormulaTable`; a concrete mode is the tuple of its guard
values (bit k: guard k).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import product

import sympy as sp

from .implicit.schedule import GuardedSchedule, GuardedVariant, impulse_symbol, left_symbol

#: Most guards whose combinations are listed one by one (2^4 = 16 modes).
MAX_LISTED_GUARDS = 4
#: Largest restart system solved symbolically for the report (unknowns).
MAX_SOLVED = 8


@dataclass(frozen=True)
class ModeRestart:
    """The restart into one mode: ``jumps`` ``(state, value after the event)`` for the states
    whose value changes (sympy, left limits as ``Symbol("x-")``), ``impulsive`` the variables
    whose integral over the instant is not zero, ``numerical`` the states restarted by a
    system the report does not solve (nonlinear, large, or the delta-scheme), ``projected``
    the positions moved onto a constraint by least change (the lower levels of a restart,
    `mdae_fmu.implicit.schedule.BlockRows.levels`)."""
    mode: tuple[bool, ...]
    jumps: tuple[tuple[str, sp.Expr], ...]
    impulsive: tuple[str, ...]
    numerical: tuple[str, ...]
    projected: tuple[str, ...] = ()

    @property
    def moves(self) -> bool:
        return bool(self.jumps or self.impulsive or self.numerical)


def mode_text(bits: Sequence[bool], names: Sequence[str]) -> str:
    """A concrete mode as a conjunction: ``(g1 and not g2)``; ``(always)`` without guards."""
    lits = [n if b else (f"not {n}" if _plain(n) else f"not ({n})")
            for n, b in zip(names, bits)]
    return f"({' and '.join(lits)})" if lits else "(always)"


def listed_modes(s: GuardedSchedule) -> list[tuple[bool, ...]] | None:
    """The consistent modes of the schedule, guard true before false, when there are at most
    2^`MAX_LISTED_GUARDS` combinations of its guards; None beyond."""
    if len(s.guards) > MAX_LISTED_GUARDS:
        return None
    combos = product((True, False), repeat=len(s.guards))
    return [bits for bits in combos if s.modes == -1 or s.table.holds(s.modes, bits)]


def restart_into(s: GuardedSchedule, bits: tuple[bool, ...]) -> ModeRestart:
    """The restart into the mode ``bits`` (module docstring): the restart systems of the
    variants that hold there, solved in schedule order, each with the values the earlier
    ones gave substituted."""
    known: dict[sp.Symbol, sp.Expr] = {}
    numerical: list[str] = []
    projected: list[str] = []
    for v in s.variants:
        if v.formula != -1 and not s.table.holds(v.formula, bits):
            continue
        if v.restart is not None and v.restart.levels:
            # positions moved onto a constraint by minimum norm (docs/theory.md §9.6): the
            # rows then read the new positions, named as the states themselves
            projected.extend(str(u) for lv in v.restart.levels for u in lv.unknowns)
        if v.restart is None and v.delta is None and not v.merged:
            known.update(_at_rest(s, v))      # steady, or a restart that moves nothing
            continue
        solved = _solved(v, known)
        if solved is None:
            numerical.extend(str(u) for u in _restarted(v))
            continue
        known.update(solved)
    by_name = {str(k): value for k, value in known.items()}
    pre = {left_symbol(k): sp.Symbol(f"{inst}-") for k, inst in enumerate(s.states)}
    jumps = []
    for k, inst in enumerate(s.states):
        value = by_name.get(str(inst))
        if value is None:
            continue
        value = sp.simplify(value.xreplace(pre))
        if value != pre[left_symbol(k)]:
            jumps.append((str(inst), value))
    impulsive = tuple(name for j, name in enumerate(s.variables)
                      if sp.simplify(by_name.get(str(impulse_symbol(j)), 0)) != 0)
    return ModeRestart(mode=bits, jumps=tuple(jumps), impulsive=impulsive,
                       numerical=tuple(dict.fromkeys(numerical)),
                       projected=tuple(dict.fromkeys(projected)))


def _at_rest(s: GuardedSchedule, v: GuardedVariant) -> dict:
    """The values a variant without restart system gives its unknowns at a change (a steady
    variant, docs/theory.md §10.6, or a restart that moves nothing): each state it writes at
    its left limit, each impulse 0."""
    out: dict = {}
    for j in v.writes:
        name = s.variables[j]
        if name in s.impulsive:
            out[impulse_symbol(j)] = sp.Integer(0)
        top = [k for k, inst in enumerate(s.states) if inst.name == name]
        if top:
            out[sp.Symbol(str(s.states[top[-1]]), real=True)] = left_symbol(top[-1])
    return out


def _restarted(v: GuardedVariant) -> tuple:
    """The unknowns a variant's restart computes (its states' right limits among them)."""
    if v.restart is not None:
        return tuple(u for u in v.restart.unknowns if not str(u).startswith("mdae_zeta_"))
    if v.delta is not None:
        return tuple(x for x, _ in v.delta.targets)
    return ()


def _solved(v: GuardedVariant, known: dict) -> dict | None:
    """The solution of the variant's restart system with ``known`` substituted, or None when
    it is not one the report solves (delta-scheme, position levels, nonlinear, too large)."""
    r = v.restart
    if r is None or len(r.unknowns) > MAX_SOLVED:
        return None
    rows = [row.xreplace(known) for row in r.rows]
    try:
        a, b = sp.linear_eq_to_matrix(rows, list(r.unknowns))
    except (sp.PolynomialError, ValueError):
        return None
    try:
        x = a.LUsolve(b)
    except (ValueError, ZeroDivisionError):       # singular: left to the run time
        return None
    return {u: sp.cancel(x[i]) for i, u in enumerate(r.unknowns)}


def restart_lines(s: GuardedSchedule, limit: int) -> Iterator[str]:
    """The summary's lines on the mode changes: their number (`changes_text`), then one line
    per mode whose restart moves something (``into (g): w1 = w2 = ...; impulsive: f1, f2``),
    at most ``limit``; beyond `MAX_LISTED_GUARDS` guards, the number of block variants that
    restart states."""
    from .sympy_modelica import print_sympy
    head = f"mode changes: {changes_text(s.n_modes)}"
    modes = listed_modes(s)
    if modes is None:
        moving = sum(1 for v in s.variants if _restarted(v) and (v.merged or v.formula != -1))
        yield (f"{head}; {moving} block variant(s) whose restart can move states (--verbose "
               "lists them)")
        return
    restarts = [r for r in (restart_into(s, bits) for bits in modes) if r.moves]
    if not restarts:
        yield f"{head}: every state continuous"
        return
    yield (f"{head}; restarts (the value after the event, pre(x) the value before; "
           "into the mode, from any other):")
    for r in restarts[:limit]:
        parts = []
        groups: dict[str, list[str]] = {}
        for name, value in r.jumps:
            groups.setdefault(print_sympy(value), []).append(name)
        if groups:
            parts.append("; ".join(" = ".join([*names, rhs]) for rhs, names in groups.items()))
        if r.projected:
            parts.append(", ".join(r.projected) + " moved onto the constraints by least change")
        if r.numerical:
            parts.append("computed numerically at the event: " + ", ".join(r.numerical))
        if r.impulsive:
            parts.append("impulsive: " + ", ".join(r.impulsive))
        yield f"  into {mode_text(r.mode, s.guard_names)}: " + "; ".join(parts)
    if len(restarts) > limit:
        yield f"  ... and {len(restarts) - limit} more (--verbose lists them)"


def changes_text(n_modes: int) -> str:
    """The number of possible mode changes, every ordered pair of distinct consistent modes
    (the guards are oracles, docs/theory.md §8.1; a count, no mode listed):
    ``12 between the 4 consistent modes``."""
    return f"{n_modes * (n_modes - 1)} between the {n_modes} consistent modes"


def variant_lines(s: GuardedSchedule, formula_text) -> Iterator[str]:
    """The report's section on the schedule's restarts: every block variant whose restart
    computes something, with its modes (``formula_text(node)``), what it restarts and its
    restart rows in Modelica syntax (left limits as pre(x), impulses as impulse(z), the
    instant's length as h)."""
    from .sympy_modelica import print_sympy
    names = {left_symbol(k): sp.Symbol(f"{inst}-") for k, inst in enumerate(s.states)}
    names.update({impulse_symbol(j): sp.Symbol(f"impulse({v})")
                  for j, v in enumerate(s.variables)})
    for v in s.variants:
        restarted = _restarted(v)
        if not restarted:
            continue
        where = "every mode" if v.formula == -1 else formula_text(v.formula)
        yield (f"  {v.block.label} in {where}: restarts "
               + ", ".join(str(u) for u in restarted))
        if v.restart is not None:
            for row in v.restart.rows:
                yield f"    0 = {_unquoted(print_sympy(row.xreplace(names)))}"
        else:
            yield "    (no closed form: the delta-scheme at the event)"


def _unquoted(text: str) -> str:
    """``'impulse(f1)'`` (a quoted identifier, as the printer writes the impulse symbols) as
    ``impulse(f1)``."""
    return re.sub(r"'(impulse\([^']*\))'", r"\1", text)


def _plain(name: str) -> bool:
    return name.replace(".", "").replace("_", "").isalnum()


__all__ = ["MAX_LISTED_GUARDS", "ModeRestart", "changes_text", "listed_modes", "mode_text",
           "restart_into", "restart_lines", "variant_lines"]
