"""Tearing of the Newton blocks of the schedule.

Where it comes from: the theory the project implements stops at the block-triangular form
(docs/theory.md §2.3, §11: a Newton solve of the block); they do not cover
tearing. The method here is the standard one of the Modelica tools: H. Elmqvist and M. Otter,
"Methods for tearing systems of equations in object-oriented modeling", ESM 1994, and the
greedy heuristic of F. E. Cellier and E. Kofman, *Continuous System Simulation* (Springer 2006),
ch. 7 (the "tearing algorithm" that repeatedly makes an equation causal and, when none can be,
picks a tearing variable). OpenModelica's default ``omcTearing`` is of the same family.

A block ``F(u) = 0`` of ``n`` equations is split into

* tearing variables ``t`` (few), iterated by Newton;
* torn unknowns ``v_1 .. v_m``, each computed causally, in order, from one equation that is
  linear in it with a coefficient of parameters and constants only (OpenModelica's default
  "strict" tearing: never divide by a variable, which may vanish; ``a v + b = 0`` ->
  ``v = -b/a``: the same explicit solution a scalar block gets, `blocks.linear_split`), from
  ``t`` and the torn unknowns before it;
* residual equations (as many as tearing variables), the rest, evaluated at ``t`` and the
  torn unknowns computed from ``t``.

Newton then iterates on ``t`` only; the torn unknowns never start from an arbitrary guess
(``vt = k*T/q`` computed from ``T`` instead of a 0 that makes ``v/vt`` infinite). The solution
is the block's: every equation holds at it (the torn ones exactly, the residual ones to the
Newton tolerance).

`select_tearing` is the graph algorithm (plain data, unit-tested); `tear_block` applies it to
a sympy `BlockPlan` and returns the replacement blocks: one Newton block in ``t`` whose
residuals are the residual equations with the torn solutions substituted, then one explicit
block per torn unknown (its original equation). A block without any explicit assignment is
left to the full Newton. `tear_tree_block` does the same on the expression tree for the
small plain-arithmetic blocks of `mdae_fmu.codegen.treeblock` (no sympy), for blocks of at
least `MIN_TREE_TEARING` equations: the two-equation loops of the benchmark chain keep
their code.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import sympy as sp

from .. import expr as E
from . import trees as T
from .blocks import BlockPlan, linear_split_any, tree_size
from .treeblock import substitute_instances, tree_block_parts

#: a torn block whose substituted residuals grow beyond this many tree nodes (counted up to
#: the limit) stays a full Newton block: substitution must not swell the C text
MAX_TORN_SIZE = 20000
#: tree blocks (mdae_fmu.codegen.treeblock) are torn from this many equations on
MIN_TREE_TEARING = 3


@dataclass(frozen=True)
class Tearing:
    """The result of `select_tearing` on a block of ``n`` equations and ``n`` unknowns
    (indices): ``tearing`` unknowns, ``assignments`` ``(equation, unknown)`` in causal order,
    ``residuals`` the equations left (``len(residuals) == len(tearing)``)."""
    tearing: tuple[int, ...]
    assignments: tuple[tuple[int, int], ...]
    residuals: tuple[int, ...]


def select_tearing(incidence: list[set[int]], solvable: list[set[int]],
                   preferred: AbstractSet[int] = frozenset()) -> Tearing:
    """Greedy tearing (Cellier & Kofman 2006, ch. 7; module docstring) of a square block:
    ``incidence[i]`` the unknowns equation ``i`` reads, ``solvable[i]`` (a subset) those it
    can be solved for explicitly. Repeat: while some equation not yet used has exactly one
    unknown not yet known and is solvable for it, make it the assignment of that unknown
    (lowest equation index first: deterministic); when none has, make one unknown known as a
    tearing variable: first one in ``preferred`` (unknowns with a start value), then the one
    read by the most unused equations, then the one that would make the most unused equations
    causal next, then the lowest index. Ends when every unknown is known; the unused
    equations are the residual equations."""
    n = len(incidence)
    known: set[int] = set()
    used: set[int] = set()
    tearing: list[int] = []
    assignments: list[tuple[int, int]] = []
    while len(known) < n:
        progress = True
        while progress:
            progress = False
            for i in range(n):
                if i in used:
                    continue
                left = incidence[i] - known
                if len(left) == 1:
                    (j,) = left
                    if j in solvable[i]:
                        used.add(i)
                        known.add(j)
                        assignments.append((i, j))
                        progress = True
        if len(known) == n:
            break
        candidates = [j for j in range(n) if j not in known]

        def score(j: int) -> tuple[bool, int, int, int]:
            reads = sum(1 for i in range(n) if i not in used and j in incidence[i])
            enables = sum(1 for i in range(n) if i not in used and j not in solvable[i]
                          and len(incidence[i] - known - {j}) == 1
                          and (incidence[i] - known - {j}) <= solvable[i])
            return (j in preferred, reads, enables, -j)

        best = max(candidates, key=score)
        known.add(best)
        tearing.append(best)
    residuals = tuple(i for i in range(n) if i not in used)
    return Tearing(tearing=tuple(tearing), assignments=tuple(assignments), residuals=residuals)


def _solution(r: sp.Expr, u: sp.Symbol, params: AbstractSet[sp.Basic]) -> sp.Expr | None:
    """``-b/a`` when ``r = a*u + b`` with ``a`` reading parameters and constants only (the
    "strict" rule of OpenModelica's tearing: no division by a variable, which may be 0 at
    run time) and not a zero constant; else None."""
    split = linear_split_any(r, u)
    if split is None:
        return None
    a, b = split
    if a == 0 or not a.free_symbols <= params:
        return None
    return -b if a == 1 else (b if a == -1 else -b / a)


def tear_block(block: BlockPlan, preferred: frozenset[sp.Basic] = frozenset(),
               params: AbstractSet[sp.Basic] = frozenset()) -> list[BlockPlan] | None:
    """The blocks that replace a Newton `BlockPlan` (module docstring): a Newton block in the
    tearing variables (label of the whole block, so failures name its equations), then the
    explicit blocks of the torn unknowns in causal order; None when tearing finds no explicit
    assignment or the substituted residuals exceed `MAX_TORN_SIZE`. ``preferred``: symbols
    with a start value (tearing variables by preference, `select_tearing`); ``params``: the
    symbols of parameters and constants (the coefficients a torn unknown may be divided by)."""
    us = block.unknowns
    res = block.residuals
    incidence = [{j for j, u in enumerate(us) if u in r.free_symbols} for r in res]
    sols: dict[tuple[int, int], sp.Expr] = {}
    solvable = []
    for i, r in enumerate(res):
        ok = set()
        for j in incidence[i]:
            s = _solution(r, us[j], params)
            if s is not None:
                sols[(i, j)] = s
                ok.add(j)
        solvable.append(ok)
    tr = select_tearing(incidence, solvable, {j for j, u in enumerate(us) if u in preferred})
    if not tr.assignments:
        return None
    subs: dict[sp.Basic, sp.Expr] = {}
    for i, j in tr.assignments:
        subs[us[j]] = sols[(i, j)].xreplace(subs)
    reduced = tuple(res[i].xreplace(subs) for i in tr.residuals)
    if sum(tree_size(r, MAX_TORN_SIZE) for r in reduced) >= MAX_TORN_SIZE:
        return None
    labels = block.label.split("+")
    if len(labels) != len(res):        # a label not one name per equation: keep it whole
        labels = [block.label] * len(res)
    out = (
        [
            BlockPlan(
                label=block.label, unknowns=tuple(us[j] for j in tr.tearing), _residuals=reduced
            )
        ]
        if tr.tearing
        else []
    )
    for i, j in tr.assignments:
        out.append(BlockPlan(label=labels[i], unknowns=(us[j],), _residuals=(res[i],)))
    return out


def _instances(e: E.Expr) -> set[tuple[str, int]]:
    out = set()
    stack = [e]
    while stack:
        n = stack.pop()
        inst = T.tree_instance(n)
        if inst is not None:
            out.add(inst)
        else:
            stack.extend(E.children(n))
    return out




def _size(e: E.Expr, limit: int) -> int:
    n, stack = 0, [e]
    while stack and n < limit:
        node = stack.pop()
        n += 1
        stack.extend(E.children(node))
    return n


def tear_tree_block(block: BlockPlan, preferred: frozenset[sp.Basic] = frozenset(),
                    params: AbstractSet[sp.Basic] = frozenset()) -> list[BlockPlan] | None:
    """`tear_block` for a block of plain residual trees (``block.trees``): solvability read
    off the tree (`trees.linear_coefficients`, coefficient of parameters and constants), the torn
    solutions substituted on the tree; the Newton block keeps ``trees`` (printed by
    `treeblock.emit_tree_block`), the torn ones are explicit tree blocks. None as in
    `tear_block`, or when an unknown is not an instance."""
    parts = tree_block_parts(block)
    if parts is None:
        return None
    table, res, us = parts
    incidence: list[set[int]] = []
    solvable: list[set[int]] = []
    sols: dict[tuple[int, int], E.Expr] = {}
    for i, r in enumerate(res):
        reads = _instances(r)
        inc = {j for j, u in enumerate(us) if u in reads}
        ok = set()
        for j in inc:
            try:
                a, _ = T.linear_coefficients(r, us[j])
            except T.NotLinear:
                continue
            if a is None or (isinstance(a, E.Const) and a.value == 0) \
                    or not {table.sym(*x) for x in _instances(a)} <= params:
                continue
            sol = T.tree_solution(r, us[j])
            if sol is not None:
                sols[(i, j)] = sol
                ok.add(j)
        incidence.append(inc)
        solvable.append(ok)
    tr = select_tearing(incidence, solvable,
                        {j for j, s in enumerate(block.unknowns) if s in preferred})
    if not tr.assignments:
        return None
    mapping: dict[tuple[str, int], E.Expr] = {}
    for i, j in tr.assignments:
        mapping[us[j]] = substitute_instances(sols[(i, j)], mapping)
    reduced = tuple(substitute_instances(res[i], mapping) for i in tr.residuals)
    if sum(_size(r, MAX_TORN_SIZE) for r in reduced) >= MAX_TORN_SIZE // 10:
        return None
    labels = block.label.split("+")
    if len(labels) != len(res):
        labels = [block.label] * len(res)
    out = (
        [
            BlockPlan(
                label=block.label,
                unknowns=tuple(block.unknowns[j] for j in tr.tearing),
                _residuals=None,
                tree=None,
                table=table,
                trees=reduced,
            )
        ]
        if tr.tearing
        else []
    )
    for i, j in tr.assignments:
        out.append(
            BlockPlan(
                label=labels[i],
                unknowns=(block.unknowns[j],),
                _residuals=None,
                tree=res[i],
                table=table,
            )
        )
    return out
