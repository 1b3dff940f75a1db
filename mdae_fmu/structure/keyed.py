"""Keyed access to the structural primitives (DM, BTF, Sigma-method) for the mode-change and
impulse stages (in `structure`, which both import, so that `impulse` needs nothing of `modes`).

The exploration works on hashable keys: equation instances ``(eq_id, shift)`` and variable
instances ``(name, shift)``. The graph algorithms themselves belong to `mdae_fmu.structure`
(``graph.dulmage_mendelsohn``, ``graph.block_triangular``, ``graph.maximum_matching`` on integer
adjacency lists; ``sigma`` for Pryce's method). This module only translates keys to indices and
back, with a deterministic order (equations and variables sorted), so that every result here is
independent of the caller's iteration order (theory note 9334-theory-algorithms §2.2-§2.3,
"determinism").

"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Iterable, Mapping, TypeVar

from .graph import (WeightedGraph, block_triangular, dulmage_mendelsohn,
                               maximum_matching)
from .sigma import sigma_method

# equation and variable keys: any hashables, each kind of one type per call
EqKey = TypeVar("EqKey", bound=Hashable)
VarKey = TypeVar("VarKey", bound=Hashable)


@dataclass(frozen=True)
class DMResult:
    """The coarse Dulmage-Mendelsohn decomposition over keys (theory §1.1, Def 15)."""
    over_eqs: frozenset
    over_vars: frozenset
    well_eqs: frozenset
    well_vars: frozenset
    under_eqs: frozenset
    under_vars: frozenset


@dataclass(frozen=True)
class KBlock:
    """One indecomposable block of a block-triangular form: its equations and unknowns."""
    equations: tuple
    unknowns: tuple


def _index(eqs: Iterable[EqKey], occ: Mapping[EqKey, Iterable[VarKey]],
           unknowns: Iterable[VarKey]):
    """Equations and graph variables sorted by ``repr`` (the deterministic order of the module
    docstring) and the integer adjacency lists. One pass over the occurrences; the variables
    are collected by C-level set operations (10^5-instance systems at every mode change)."""
    eq_list = sorted(set(eqs), key=repr)
    unk = unknowns if isinstance(unknowns, (set, frozenset)) else set(unknowns)
    rows = [occ[e] for e in eq_list]
    occurring = set().union(*rows)
    var_list = sorted(occurring & unk, key=repr)
    vidx = dict(zip(var_list, range(len(var_list))))
    if len(var_list) == len(occurring):         # every occurrence is an unknown
        get = vidx.__getitem__
        adj = [sorted(set(map(get, r))) for r in rows]
    else:
        adj = [sorted({vidx[v] for v in r if v in vidx}) for r in rows]
    return eq_list, var_list, adj


def dm(eqs: Iterable[EqKey], occ: Mapping[EqKey, Iterable[VarKey]],
       unknowns: Iterable[VarKey]) -> DMResult:
    """DM(E, U) of theory §2.2: ``occ[e]`` lists the variables of equation e; only those in
    ``unknowns`` are graph vertices (the others are known parameters)."""
    eq_list, var_list, adj = _index(eqs, occ, unknowns)
    o_e, o_v, w_e, w_v, u_e, u_v = _dm_indices(adj, len(var_list))
    E, V = eq_list, var_list
    return DMResult(frozenset(E[i] for i in o_e), frozenset(V[j] for j in o_v),
                    frozenset(E[i] for i in w_e), frozenset(V[j] for j in w_v),
                    frozenset(E[i] for i in u_e), frozenset(V[j] for j in u_v))


def btf(eqs: Iterable[EqKey], occ: Mapping[EqKey, Iterable[VarKey]],
        unknowns: Iterable[VarKey]) -> list[KBlock]:
    """Block triangular form of a square, structurally nonsingular system (theory §2.3), blocks in
    a topological order with a stable tie-break (sorted equation keys)."""
    eq_list, var_list, adj = _index(eqs, occ, unknowns)
    if not eq_list:
        return []
    blocks = _btf_indices(adj, len(var_list))
    return [KBlock(tuple(eq_list[i] for i in be), tuple(var_list[j] for j in bv))
            for be, bv in blocks]


def sigma_offsets(rows: Mapping[EqKey, Mapping[VarKey, int]]):
    """Pryce's smallest offsets (theory §2.5) of a square system given its signature rows
    ``rows[eq] = {var: highest order}``. Returns ``(c, d)`` dicts, or None when no complete
    matching exists (structurally singular)."""
    eq_list = sorted(rows, key=repr)
    var_list = sorted({v for e in eq_list for v in rows[e]}, key=repr)
    if len(eq_list) != len(var_list):
        return None
    vidx = {v: i for i, v in enumerate(var_list)}
    sig = [{vidx[v]: k for v, k in rows[e].items()} for e in eq_list]
    res = _sigma_indices(sig, len(var_list))
    if res is None:
        return None
    c, d = res
    return ({e: c[i] for i, e in enumerate(eq_list)}, {v: d[j] for j, v in enumerate(var_list)})


# --- index-level primitives of mdae_fmu.structure ----------------------------------------------

def _dm_indices(adj, n_vars):
    r = dulmage_mendelsohn(adj, n_vars)
    return (r.over_eqs, r.over_vars, r.well_eqs, r.well_vars, r.under_eqs, r.under_vars)


def _btf_indices(adj, n_vars):
    m = maximum_matching(adj, n_vars)
    return [(list(be), list(bv)) for be, bv in block_triangular(adj, n_vars, m)]


def _sigma_indices(sig, n):
    if n == 0:
        return [], []
    res = sigma_method(WeightedGraph.from_rows(sig, n))
    if not res.ok:
        return None
    return [int(x) for x in res.c], [int(x) for x in res.d]
