"""The signature matrix of a system of equations: σ(e, x), the highest derivative order of
the unknown x in the equation e (docs/theory.md §2.1, §4.1), as a weighted bipartite graph for
Pryce's Σ-method (`mdae_fmu.structure.sigma`)."""

from __future__ import annotations

from array import array
from itertools import accumulate, chain, repeat
from operator import is_
from typing import Any, Iterator, Sequence

import numpy as np

from .. import expr as E
from ..collector import gc_paused
from ..ir import Equation, Model
from .graph import WeightedGraph


def signature_graph(equations: Sequence[Equation], continuous: Sequence[str],
                    absent_are_unknowns: bool = True, model: Model | None = None
                    ) -> tuple[WeightedGraph, list[str], tuple[str, ...]]:
    """Weighted bipartite graph of a mode's equations over the continuous unknowns (docs/theory.md
    §2.1, §4.1): σ(e, x) = highest derivative order of x in e (as `mdae_fmu.expr.derivative_orders`:
    occurrences inside ``pre`` do not count). Returns (graph, unknowns in graph order, absent
    unknowns), the unknowns keeping the order of ``continuous``; unknowns no equation mentions
    are kept (as isolated vertices) only if ``absent_are_unknowns``. Linear in the total size
    of the expressions; the graph is built from COO arrays (no per-edge Python objects).
    ``model``: the model the equations come from, whose residuals' rows are then computed
    once for all the stages (`sigma_row`); when the equations are the model's own, in order,
    the rows are read from the model's flat rows (`SignatureRows`) without a dict per row."""
    flat = _flat_rows(model, equations)
    if flat is not None:
        names, orders_buf, ends = flat
        cols_all = name_columns(names, continuous)
        orders = np.frombuffer(orders_buf, dtype=np.int32)
        sizes: np.ndarray = np.diff(np.frombuffer(ends, dtype=np.int64))
    else:
        # the rows' entries in order, then their columns in one pass; the names that are not
        # unknowns (parameters, discrete variables) are dropped by one mask
        with gc_paused():
            rows_of = _rows(model, equations)
        sizes = np.fromiter(map(len, rows_of), dtype=np.int64, count=len(rows_of))
        total = int(sizes.sum())
        vidx = dict(zip(continuous, range(len(continuous))))
        # (`chain` over the rows: no Python frame per edge)
        cols_all = np.fromiter(map(vidx.get, chain.from_iterable(rows_of), repeat(-1)),
                               dtype=np.int32, count=total)
        del vidx
        orders = np.fromiter(chain.from_iterable(map(dict.values, rows_of)), dtype=np.int32,
                             count=total)
        del rows_of
    keep_edge = cols_all >= 0
    # (int32 positions while the edges are gathered: half the transient memory at 10^6)
    rows = np.repeat(np.arange(len(equations), dtype=np.int32), sizes)[keep_edge]
    wts = orders[keep_edge]
    cols_a = cols_all[keep_edge]
    del cols_all, keep_edge, orders, sizes
    used = np.zeros(len(continuous), dtype=bool)
    used[cols_a] = True
    absent = tuple(continuous[j] for j in np.flatnonzero(~used).tolist())
    if absent_are_unknowns or not absent:
        unknowns = list(continuous)
    else:
        keep = np.flatnonzero(used)
        remap = np.full(len(continuous), -1, dtype=np.int32)
        remap[keep] = np.arange(len(keep))
        cols_a = remap[cols_a]
        unknowns = [continuous[j] for j in keep.tolist()]
    g = WeightedGraph.from_arrays(len(equations), len(unknowns), rows, cols_a, wts)
    return g, unknowns, absent


#: From this many names on, `name_columns` matches them by identity first.
IDENTITY_MIN = 1 << 12


def name_columns(names: Sequence[str], continuous: Sequence[str]) -> np.ndarray:
    """The position of each of ``names`` in ``continuous`` (distinct names: the unknowns, the
    columns of σ), -1 for a name that is not there: ``dict(zip(continuous, ...)).get`` of
    each name (docs/theory.md §2.1's σ(e, x) by column). The names of a model's rows are the very
    string objects of its declarations (the importers share one string per name), so from
    `IDENTITY_MIN` names on they are matched by the address of their string first, sorted
    and searched in arrays: no hash look-up per name, whose table at 10^6 names misses the
    caches (docs/performance.md, stop 44); the few names that do not match so (parameters,
    and equal strings that are other objects) are then matched by value, each distinct one
    once, against one pass over ``continuous``."""
    total = len(names)
    if total < IDENTITY_MIN:
        vidx = dict(zip(continuous, range(len(continuous))))
        return np.fromiter(map(vidx.get, names, repeat(-1)), dtype=np.int32, count=total)
    own = np.fromiter(map(id, continuous), dtype=np.int64, count=len(continuous))
    order = np.argsort(own, kind="stable")
    own = own[order]
    seen = np.fromiter(map(id, names), dtype=np.int64, count=total)
    if len(own):
        # (the last of equal addresses: one string given twice in ``continuous`` has its
        # last column, as in the dict)
        at = np.searchsorted(own, seen, side="right")
        at -= 1
        np.maximum(at, 0, out=at)
        hit = own[at] == seen
        del own
        cols = order[at].astype(np.int32)
        del at, order
        cols[~hit] = -1
    else:
        hit = np.zeros(total, dtype=bool)
        cols = np.full(total, -1, dtype=np.int32)
    missed = np.flatnonzero(~hit)
    del hit
    if len(missed):
        distinct, first, where = np.unique(seen[missed], return_index=True,
                                           return_inverse=True)
        others = [names[i] for i in missed[first].tolist()]
        wanted = {name: k for k, name in enumerate(others)}
        found = np.fromiter(map(wanted.get, continuous, repeat(-1)), dtype=np.int64,
                            count=len(continuous))
        column: dict[str, int] = {}
        for j in np.flatnonzero(found >= 0).tolist():
            column[continuous[j]] = j
        cols[missed] = np.array([column.get(name, -1) for name in others],
                                dtype=np.int32)[where.reshape(-1)]
    return cols


class SignatureRows:
    """The signature rows (`signature_row`) of the residuals of a model's equations, in their
    order, as three flat arrays: the names of all rows one after the other (``names``, the
    residuals' own name strings), their orders (``orders``, int32) and the end of each row in
    them (``ends``, int64, from a leading 0). About 35 B per row against 250 B for a dict per
    row and its memo entry (10^6 equations: 35 MB against 250 MB, docs/performance.md "stop 41,
    memory").

    It stands for the memo of `sigma_row`, ``{id(residual): row}``: ``get``, ``[]``, ``in``,
    ``pop``, ``values`` and ``len`` read it by the identity of a residual of
    ``equations`` (a dict of their positions is built at the first such read), and return a
    new dict per read; a row taken out by ``pop`` is gone. `signature_graph` reads the arrays
    directly when its equations are the model's, in order."""

    __slots__ = ("names", "orders", "ends", "_equations", "_where", "_gone", "_count")

    def __init__(self, equations: Sequence[Equation]) -> None:
        self.names: list[str] = []
        self.orders = array("i")
        self.ends = array("q", (0,))
        self._equations = equations
        self._where: dict[int, int] | None = None
        self._gone: bytearray | None = None      # 1 for a row taken out (`pop`)
        self._count = 0                          # rows present

    def append(self, row: dict[str, int]) -> None:
        """Add the next equation's row (`scan_residuals`' sink)."""
        self.names.extend(row)
        self.orders.extend(row.values())
        self.ends.append(len(self.names))
        self._count += 1

    def extend(self, rows: list[dict[str, int]]) -> None:
        """Add the next equations' rows, in order (`scan_residuals`' sink, a batch at a time:
        the three arrays grow in C, no Python call per row)."""
        names = self.names
        names.extend(chain.from_iterable(rows))
        self.orders.extend(chain.from_iterable(map(dict.values, rows)))
        ends = accumulate(map(len, rows), initial=self.ends[-1])
        next(ends)                  # (the end of the rows before them, there already)
        self.ends.extend(ends)
        self._count += len(rows)

    def flat(self, equations: Sequence[Equation]) -> tuple[list[str], array[int], array[int]] \
            | None:
        """(names, orders, ends) when ``equations`` are those of the rows, in order, and none
        was taken out; else None."""
        mine = self._equations
        if self._gone is not None or len(equations) != len(mine) \
                or len(self.ends) != len(mine) + 1 or not all(map(is_, equations, mine)):
            return None
        return self.names, self.orders, self.ends

    def _position(self, key: int) -> int | None:
        where = self._where
        if where is None:
            where = self._where = {id(eq.residual): i for i, eq in enumerate(self._equations)}
        i = where.get(key)
        if i is None or i + 1 >= len(self.ends) or (self._gone is not None and self._gone[i]):
            return None
        return i

    def _row(self, i: int) -> dict[str, int]:
        a, b = self.ends[i], self.ends[i + 1]
        return dict(zip(self.names[a:b], self.orders[a:b]))

    def get(self, key: int, default: dict[str, int] | None = None) -> dict[str, int] | None:
        i = self._position(key)
        return default if i is None else self._row(i)

    def __getitem__(self, key: int) -> dict[str, int]:
        i = self._position(key)
        if i is None:
            raise KeyError(key)
        return self._row(i)

    def __contains__(self, key: object) -> bool:
        return type(key) is int and self._position(key) is not None

    def pop(self, key: int, default: dict[str, int] | None = None) -> dict[str, int] | None:
        i = self._position(key)
        if i is None:
            return default
        row = self._row(i)
        if self._gone is None:
            self._gone = bytearray(len(self.ends) - 1)
        self._gone[i] = 1
        self._count -= 1
        return row

    def values(self) -> Iterator[dict[str, int]]:
        gone = self._gone
        for i in range(len(self.ends) - 1):
            if gone is None or not gone[i]:
                yield self._row(i)

    def __len__(self) -> int:
        return self._count


def _flat_rows(model: Model | None, equations: Sequence[Equation]
               ) -> tuple[list[str], array[int], array[int]] | None:
    """The model's flat rows (`SignatureRows.flat`) for ``equations``, or None."""
    if model is None or model.__dict__.get("_sigma_rows_last_read"):
        return None
    memo = model.__dict__.get("_sigma_rows")
    return memo.flat(equations) if type(memo) is SignatureRows else None


def _rows(model: Model | None, equations: Sequence[Equation]) -> list[dict[str, int]]:
    """`sigma_row` of each equation's residual, in order: the memo's rows read in one pass
    (`sigma_row` for those it does not hold, and for every row once the memo gives each
    out on its read)."""
    memo = model.__dict__.get("_sigma_rows") if model is not None else None
    if memo is None or model is None or model.__dict__.get("_sigma_rows_last_read"):
        return [sigma_row(model, eq.residual) for eq in equations]
    get = memo.get
    rows: list[Any] = [get(id(eq.residual)) for eq in equations]
    if None in rows:
        for i, row in enumerate(rows):
            if row is None:
                rows[i] = sigma_row(model, equations[i].residual)
    return rows


def sigma_row(model: Model | None, e: E.Expr) -> dict[str, int]:
    """`signature_row` of ``e``, remembered for the residuals of ``model``'s equations (the
    per-mode stage and the normalization of the mode-change stage both read every row). The
    memo is keyed by the residual's identity: the model keeps its residuals alive, so no other
    expression can have the same key. The row returned must not be modified. Once
    `analyze_modes` has run, the next read of a row (the normalization's) takes it out of the
    memo: about 250 MB less during the mode-change stage at 10^6 equations (issue 16); a
    later read computes the row again."""
    if model is None:
        return signature_row(e)
    memo = model.__dict__.get("_sigma_rows")
    if memo is None:
        memo = model.__dict__["_sigma_rows"] = {id(eq.residual): None
                                                for eq in model.equations}
    key = id(e)
    if key not in memo:
        return signature_row(e)
    if model.__dict__.get("_sigma_rows_last_read"):
        return memo.pop(key) or signature_row(e)
    row: dict[str, int] | None = memo[key]
    if row is None:
        row = memo[key] = signature_row(e)
    return row


def release_rows(model: Model) -> None:
    """Empty the signature rows' memo of ``model`` (`sigma_row`) when no stage will read the
    rows again: the verdict of a model without guards, which does not normalize it
    (`mdae_fmu.modes.explore`), leaves no reader (a later read computes its row again)."""
    if model.__dict__.get("_sigma_rows"):
        model.__dict__["_sigma_rows"] = {}


def signature_row(e: E.Expr) -> dict[str, int]:
    """`mdae_fmu.expr.derivative_orders` specialised for speed (dispatch on the node type,
    no generator per node): the row of the signature matrix for one residual."""
    orders: dict[str, int] = {}
    stack: list[tuple[E.Expr, int]] = [(e, 0)]
    pop, push = stack.pop, stack.append
    BinOp, Ref, Der, UnOp, Call, If = E.BinOp, E.Ref, E.Der, E.UnOp, E.Call, E.If
    while stack:
        node, k = pop()
        t = type(node)
        if t is BinOp:
            assert isinstance(node, BinOp)
            push((node.right, k))
            push((node.left, k))
        elif t is Ref:
            assert isinstance(node, Ref)
            if orders.get(node.name, -1) < k:
                orders[node.name] = k
        elif t is Der:
            assert isinstance(node, Der)
            push((node.arg, k + 1))
        elif t is UnOp:
            assert isinstance(node, UnOp)
            push((node.arg, k))
        elif t is Call:
            assert isinstance(node, Call)
            if node.func != "pre":
                for a in node.args:
                    push((a, k))
        elif t is If:
            assert isinstance(node, If)
            push((node.orelse, k))
            push((node.then, k))
            push((node.cond, k))
    return orders
