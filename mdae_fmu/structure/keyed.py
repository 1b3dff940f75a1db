"""Keyed access to the structural primitives (DM, BTF, Sigma-method) for the mode-change and
impulse stages (in `structure`, which both import, so that `impulse` needs nothing of `modes`).

The exploration works on hashable keys: equation instances ``(eq_id, shift)`` and variable
instances ``(name, shift)``. The graph algorithms themselves belong to `mdae_fmu.structure`
(``graph.dulmage_mendelsohn``, ``graph.block_triangular``, ``graph.maximum_matching`` on integer
adjacency lists; ``sigma`` for Pryce's method). This module only translates keys to indices and
back, so that every result here is independent of the caller's iteration order (docs/theory.md
§2.4, §2.3; RR-9334 Comment 18: a canonical result keeps the compilation deterministic): the BTF
numbers the keys in ``repr`` order, which its tie-breaks follow; the coarse DM and the smallest Σ
offsets are unique, so they number the keys as they come (no sort: 10^5-instance systems).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any, Collection, Hashable, Iterable, Mapping, Sequence, TypeVar

import numpy as np

from .graph import (SMALL_EDGES, WeightedGraph, block_triangular, iter_block_triangular_graph,
                    dulmage_mendelsohn, dulmage_mendelsohn_graph, matching_csr,
                    maximum_matching)
from .sigma import sigma_method

# equation and variable keys: any hashables, each kind of one type per call
EqKey = TypeVar("EqKey", bound=Hashable)
VarKey = TypeVar("VarKey", bound=Hashable)


@dataclass(frozen=True)
class DMResult:
    """The coarse Dulmage-Mendelsohn decomposition over keys (docs/theory.md §2.4,
    RR-9334 Def 15)."""
    over_eqs: frozenset[Any]
    over_vars: frozenset[Any]
    well_eqs: frozenset[Any]
    well_vars: frozenset[Any]
    under_eqs: frozenset[Any]
    under_vars: frozenset[Any]


@dataclass(frozen=True)
class KBlock:
    """One indecomposable block of a block-triangular form: its equations and unknowns."""
    equations: tuple[Any, ...]
    unknowns: tuple[Any, ...]


def _numbering(eq_list: list[EqKey], occ: Mapping[EqKey, Collection[VarKey]],
               unknowns: Iterable[VarKey], order: bool
               ) -> tuple[list[VarKey], list[Collection[VarKey]]]:
    """The graph variables of the equations ``eq_list`` (the unknowns that occur in them) and
    the rows ``occ[e]``; sorted by ``repr`` (the deterministic order of the module docstring)
    when ``order``, else in set order. The variables are collected by C-level set operations
    (10^5-instance systems at every mode change)."""
    unk = unknowns if isinstance(unknowns, (set, frozenset)) else set(unknowns)
    rows = [occ[e] for e in eq_list]
    occurring = set().union(*rows)
    graph_vars = occurring & unk
    return (sorted(graph_vars, key=repr) if order else list(graph_vars)), rows


def _adjacency(rows: Sequence[Iterable[Any]], vidx: dict[Any, int]) -> list[list[int]]:
    """Integer adjacency lists (for small graphs, `SMALL_EDGES`); the variables not in
    ``vidx`` (known ones) are left out."""
    get = vidx.get
    return [[j for j in map(get, r) if j is not None] for r in rows]


def _graph(rows: Sequence[Collection[Any]], vidx: dict[Any, int]) -> WeightedGraph:
    """The incidence graph of ``rows`` over ``vidx`` built from COO arrays, without a Python
    list per row (large graphs); the variables not in ``vidx`` are left out."""
    lens = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    cols = np.fromiter(map(vidx.get, chain.from_iterable(rows), repeat(-1)), dtype=np.int64,
                       count=int(lens.sum()))
    eq_of = np.repeat(np.arange(len(rows), dtype=np.int64), lens)
    known = cols < 0
    if known.any():
        eq_of, cols = eq_of[~known], cols[~known]
    return WeightedGraph.from_arrays(len(rows), len(vidx), eq_of, cols,
                                     np.zeros(len(cols), dtype=np.int64))


def _small(rows: Sequence[Collection[Any]]) -> bool:
    return sum(map(len, rows)) <= SMALL_EDGES


def dm(eqs: Iterable[EqKey], occ: Mapping[EqKey, Collection[VarKey]],
       unknowns: Iterable[VarKey]) -> DMResult:
    """DM(E, U) of docs/theory.md §2.4: ``occ[e]`` lists the variables of equation e; only those in
    ``unknowns`` are graph vertices (the others are known parameters).

    The coarse decomposition is unique (independent of the maximum matching, docs/theory.md
    §2.4, RR-9387 Lemma 8), hence of the numbering of the vertices: the keys are numbered in the
    caller's iteration order, without the ``repr`` sort (the order only matters to `btf`,
    whose tie-breaks follow it)."""
    eq_list = list(eqs) if isinstance(eqs, (set, frozenset, dict)) else list(dict.fromkeys(eqs))
    var_list, rows = _numbering(eq_list, occ, unknowns, order=False)
    vidx = dict(zip(var_list, range(len(var_list))))
    if _small(rows):
        r = dulmage_mendelsohn(_adjacency(rows, vidx), len(var_list))
    else:
        r = dulmage_mendelsohn_graph(_graph(rows, vidx))
    e, v = eq_list.__getitem__, var_list.__getitem__
    return DMResult(
        over_eqs=frozenset(map(e, r.over_eqs)),
        over_vars=frozenset(map(v, r.over_vars)),
        well_eqs=frozenset(map(e, r.well_eqs)),
        well_vars=frozenset(map(v, r.well_vars)),
        under_eqs=frozenset(map(e, r.under_eqs)),
        under_vars=frozenset(map(v, r.under_vars)),
    )


def btf(eqs: Iterable[EqKey], occ: Mapping[EqKey, Collection[VarKey]],
        unknowns: Iterable[VarKey]) -> list[KBlock]:
    """Block triangular form of a square, structurally nonsingular system (docs/theory.md §2.3),
    blocks in a topological order with a stable tie-break (sorted equation keys)."""
    eq_list = sorted(set(eqs), key=repr)
    if not eq_list:
        return []
    var_list, rows = _numbering(eq_list, occ, unknowns, order=True)
    vidx = dict(zip(var_list, range(len(var_list))))
    blocks: Iterable[tuple[tuple[int, ...], tuple[int, ...]]]
    if _small(rows):
        adj = _adjacency(rows, vidx)
        blocks = block_triangular(adj, len(var_list), maximum_matching(adj, len(var_list)))
    else:
        g = _graph(rows, vidx)
        blocks = iter_block_triangular_graph(g, matching_csr(g.csr()))
    e, v = eq_list.__getitem__, var_list.__getitem__
    return [KBlock(equations=tuple(map(e, be)), unknowns=tuple(map(v, bv))) for be, bv in blocks]


def sigma_offsets(rows: Mapping[EqKey, Mapping[VarKey, int]]
                  ) -> tuple[dict[EqKey, int], dict[VarKey, int]] | None:
    """Pryce's smallest offsets (docs/theory.md §4) of a square system given its signature rows
    ``rows[eq] = {var: highest order}``. Returns ``(c, d)`` dicts, or None when no complete
    matching exists (structurally singular). The smallest offsets are unique (docs/theory.md
    §4.3), whatever the transversal, so the keys are numbered in iteration order,
    without sorting; the graph is built from COO arrays."""
    eq_list = list(rows)
    signature = list(rows.values())
    var_list = list(set().union(*signature))
    n = len(var_list)
    if len(eq_list) != n:
        return None
    if n == 0:
        return {}, {}
    vidx = dict(zip(var_list, range(n)))
    lens = np.fromiter(map(len, signature), dtype=np.int64, count=n)
    total = int(lens.sum())
    cols = np.fromiter(map(vidx.__getitem__, chain.from_iterable(signature)), dtype=np.int64,
                       count=total)
    wts = np.fromiter(chain.from_iterable(r.values() for r in signature), dtype=np.int64,
                      count=total)
    eq_of = np.repeat(np.arange(n, dtype=np.int64), lens)
    res = sigma_method(WeightedGraph.from_arrays(n, n, eq_of, cols, wts))
    if not res.ok or res.c is None or res.d is None:
        return None
    return (dict(zip(eq_list, res.c.tolist())), dict(zip(var_list, res.d.tolist())))
