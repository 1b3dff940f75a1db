"""Array expressions of flat Modelica (issue 13): the parse nodes the grammar callbacks build for
them, and array values with the operations `lowering` scalarizes them with.

An array value (`Arr`) is a shape and its scalar elements (expressions) in row-major order;
arithmetic follows Modelica 3.6 §10.6 (element-wise ``+ - .* ./ .^``, scalar times array,
vector/matrix products), functions of §10.3 (``size sum product min max fill zeros ones cat
vector matrix transpose identity diagonal linspace ndims scalar``) and the vectorization of
scalar functions (§12.4.6). Sums and products of many elements are built as balanced trees so
that expression depth stays logarithmic (`depth.MAX_DEPTH`).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product as _cartesian
from math import prod

from .. import expr as E


# --- parse nodes (kept inside expressions until `lowering` replaces them) ---------------------

@dataclass(frozen=True, slots=True)
class Subscripted:
    """``name[s1, s2, ...]`` with subscripts that are not integer literals."""
    name: str
    subs: tuple
    where: int


@dataclass(frozen=True, slots=True)
class Path:
    """``name[subs].field[subs].field...``: subscripts followed by field access."""
    name: str
    subs: tuple
    steps: tuple            # ((field, subscripts or ()), ...)
    where: int


@dataclass(frozen=True, slots=True)
class Indexed:
    """``(e)[s1, ...]`` or ``f(x)[s1, ...]``: subscripts of the value of an expression."""
    value: object
    subs: tuple
    where: int


@dataclass(frozen=True, slots=True)
class ArrayCons:
    """``{a, b, ...}``."""
    items: tuple
    where: int


@dataclass(frozen=True, slots=True)
class MatrixCons:
    """``[a, b; c, d]``: rows of items concatenated along dimension 2, then 1."""
    rows: tuple
    where: int


@dataclass(frozen=True, slots=True)
class Range:
    """``start:stop`` or ``start:step:stop``."""
    start: object
    step: object
    stop: object
    where: int


@dataclass(frozen=True, slots=True)
class Comprehension:
    """``{e for i in r}`` (func None) or ``f(e for i in r)``."""
    func: str | None
    body: object
    indices: tuple          # ((name, range expression, where), ...)
    where: int


@dataclass(frozen=True, slots=True)
class ArrayCall:
    """A call of one of `ARRAY_FUNCTIONS`, a cast or a record constructor."""
    func: str
    args: tuple
    where: int | None


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


COLON = _Marker(":")       # the subscript ``:``
END = _Marker("end")       # the subscript ``end``

#: Array functions and casts evaluated at import: name -> allowed argument counts (99: any
#: number), None for functions refused with `REFUSED_FUNCTIONS`' message.
ARRAY_FUNCTIONS = {
    "size": (1, 2), "ndims": (1,), "sum": (1,), "product": (1,), "min": (1,), "max": (1,),
    "fill": tuple(range(2, 99)), "zeros": tuple(range(1, 99)), "ones": tuple(range(1, 99)),
    "cat": tuple(range(2, 99)), "vector": (1,), "matrix": (1,), "scalar": (1,),
    "transpose": (1,), "identity": (1,), "diagonal": (1,), "linspace": (3,), "cross": (2,),
    "Integer": (1,), "Real": (1,), "delay": None,
}
REFUSED_FUNCTIONS = {
    "delay": "delay(...) is not supported: the generated FMU keeps no history buffer (model "
             "the transport delay with states instead, e.g. a Pade approximation written as "
             "equations)",
}


# --- array values ---------------------------------------------------------------------------

class ArrayError(Exception):
    """An array operation that is not defined (shape mismatch...); `lowering` reports it at
    the location of the equation."""


@dataclass(frozen=True, slots=True)
class Arr:
    """An array value: ``shape`` and its elements in row-major order."""
    shape: tuple
    items: tuple

    def rows(self) -> list:
        """The sub-arrays (or scalars) along the first dimension."""
        n = self.shape[0]
        if len(self.shape) == 1:
            return list(self.items)
        step = len(self.items) // n if n else 0
        return [
            Arr(shape=self.shape[1:], items=self.items[k * step : (k + 1) * step]) for k in range(n)
        ]


def shape_of(v) -> tuple:
    return v.shape if type(v) is Arr else ()


def stack(values: list):
    """``{v1, v2, ...}``: the values (all of one shape) along a new first dimension."""
    if not values:
        return Arr(shape=(0,), items=())
    shapes = {shape_of(v) for v in values}
    if len(shapes) != 1:
        raise ArrayError("the elements of an array constructor have different sizes: " +
                         ", ".join(str(list(s)) for s in sorted(shapes)))
    inner = shapes.pop()
    if not inner:
        return Arr(shape=(len(values),), items=tuple(values))
    return Arr(shape=(len(values),) + inner, items=tuple(x for v in values for x in v.items))


def stack_shaped(shape: tuple, values: list):
    """Values (all of one shape) arranged in ``shape``: an array of shape ``shape`` followed
    by theirs."""
    inner = stack(values) if values else Arr(shape=(0,), items=())
    return Arr(shape=tuple(shape) + inner.shape[1:], items=inner.items)


def promote(v, n: int) -> Arr:
    """``v`` with trailing singleton dimensions up to ``n`` dimensions (§10.4.2)."""
    if type(v) is not Arr:
        return Arr(shape=(1,) * n, items=(v,))
    if len(v.shape) > n:
        raise ArrayError(f"an array of {len(v.shape)} dimensions cannot be used here")
    return Arr(shape=v.shape + (1,) * (n - len(v.shape)), items=v.items)


def cat(k: int, values: list) -> Arr:
    """``cat(k, A, B, ...)``: concatenation along dimension ``k`` (from 1)."""
    arrs = [v if type(v) is Arr else Arr(shape=(1,), items=(v,)) for v in values]
    nd = len(arrs[0].shape)
    if not 1 <= k <= nd or any(len(a.shape) != nd for a in arrs):
        raise ArrayError(f"cat({k}, ...): the arrays must all have at least {k} dimensions "
                         "and the same number of dimensions")
    others = {a.shape[:k - 1] + a.shape[k:] for a in arrs}
    if len(others) != 1:
        raise ArrayError(f"cat({k}, ...): the sizes differ outside dimension {k}")
    outer = prod(arrs[0].shape[:k - 1])
    items: list = []
    for o in range(outer):
        for a in arrs:
            block = prod(a.shape[k - 1:])
            items.extend(a.items[o * block:(o + 1) * block])
    shape = list(arrs[0].shape)
    shape[k - 1] = sum(a.shape[k - 1] for a in arrs)
    return Arr(shape=tuple(shape), items=tuple(items))


def matrix_cons(rows: list) -> Arr:
    """``[a, b; c, d]`` (§10.4.1.2): each row is ``cat(2, ...)`` of its items promoted to at
    least 2 dimensions, the result is ``cat(1, rows...)``."""
    built = []
    for row in rows:
        nd = max(2, max(len(shape_of(x)) for x in row))
        built.append(cat(2, [promote(x, nd) for x in row]))
    nd = max(len(r.shape) for r in built)
    return cat(1, [promote(r, nd) for r in built])


def transpose(a) -> Arr:
    if type(a) is not Arr or len(a.shape) < 2:
        raise ArrayError("transpose needs a matrix")
    n, m = a.shape[0], a.shape[1]
    rest = prod(a.shape[2:])
    items: list = []
    for j in range(m):
        for i in range(n):
            base = (i * m + j) * rest
            items.extend(a.items[base:base + rest])
    return Arr(shape=(m, n) + a.shape[2:], items=tuple(items))


def balanced(op: str, items: list, empty):
    """``items[0] op items[1] op ...`` as a balanced tree (depth log2(n)); ``empty`` for no
    items. ``op`` is a binary operator or ``min``/``max``."""
    if not items:
        return empty
    items = list(items)
    while len(items) > 1:
        nxt = []
        for k in range(0, len(items) - 1, 2):
            a, b = items[k], items[k + 1]
            nxt.append(E.Call(op, (a, b)) if op in ("min", "max") else E.BinOp(op, a, b))
        if len(items) % 2:
            nxt.append(items[-1])
        items = nxt
    return items[0]


def elementwise(f, *values):
    """``f`` applied element by element; scalars are broadcast (§10.6.1 for ``.op``)."""
    shapes = {shape_of(v) for v in values if type(v) is Arr}
    if not shapes:
        return f(*values)
    if len(shapes) != 1:
        raise ArrayError("the arrays have different sizes: " +
                         " and ".join(str(list(s)) for s in sorted(shapes)))
    shape = shapes.pop()
    n = prod(shape)
    cols = [v.items if type(v) is Arr else (v,) * n for v in values]
    return Arr(shape=shape, items=tuple(f(*args) for args in zip(*cols)))


def binop(op: str, a, b):
    """``a op b`` for scalars and arrays (§10.6)."""
    sa, sb = shape_of(a), shape_of(b)
    if not sa and not sb:
        return E.BinOp(op, a, b)
    if op in ("+", "-"):
        if sa and sb and sa != sb:
            raise ArrayError(f"'{op}' of arrays of different sizes {list(sa)} and {list(sb)}")
        return elementwise(lambda x, y: E.BinOp(op, x, y), a, b)
    if op == "*":
        if not sa or not sb:
            return elementwise(lambda x, y: E.BinOp("*", x, y), a, b)
        return matmul(a, b)
    if op == "/":
        if sb:
            raise ArrayError("division by an array (use './' for element-wise division)")
        return elementwise(lambda x, y: E.BinOp("/", x, y), a, b)
    if op == "^":
        raise ArrayError("'^' of an array (matrix power) is not supported; use '.^' for "
                         "element-wise powers")
    if op.startswith("."):
        return elementwise(lambda x, y: E.BinOp(op, x, y), a, b)
    if op in ("and", "or") or op in ("<", "<=", ">", ">=", "==", "<>"):
        return elementwise(lambda x, y: E.BinOp(op, x, y), a, b)
    raise ArrayError(f"operator '{op}' is not defined for arrays")


def matmul(a: Arr, b: Arr):
    """Vector·vector (a scalar), matrix·vector, vector·matrix, matrix·matrix (§10.6.4)."""
    sa, sb = a.shape, b.shape
    if len(sa) > 2 or len(sb) > 2 or sa[-1] != sb[0]:
        raise ArrayError(f"'*' of arrays of sizes {list(sa)} and {list(sb)} is not defined")
    n = sa[-1]

    def dot(row, col):
        return balanced("+", [E.BinOp("*", x, y) for x, y in zip(row, col)], E.Const(0))
    a_rows = [a.items[i * n:(i + 1) * n] for i in range(sa[0])] if len(sa) == 2 else [a.items]
    m = sb[1] if len(sb) == 2 else None
    b_cols = [b.items[j::m] for j in range(m)] if m is not None else [b.items]
    out = [dot(r, c) for r in a_rows for c in b_cols]
    shape = (sa[0],) * (len(sa) == 2) + (m,) * (m is not None)
    return Arr(shape=shape, items=tuple(out)) if shape else out[0]


def indices(shape: tuple):
    """All index tuples (from 1) of ``shape`` in row-major order."""
    return _cartesian(*(range(1, n + 1) for n in shape))


def element_name(base: str, idx) -> str:
    """The scalarized name ``base[i,j]`` (OpenModelica's flat output)."""
    return f"{base}[{','.join(str(i) for i in idx)}]"


__all__ = ["Subscripted", "Path", "stack_shaped", "ArrayCons", "MatrixCons", "Range",
           "Comprehension", "ArrayCall",
           "COLON", "END", "ARRAY_FUNCTIONS", "REFUSED_FUNCTIONS", "ArrayError", "Arr",
           "shape_of", "stack", "cat", "matrix_cons", "transpose", "balanced", "elementwise",
           "binop", "matmul", "indices", "element_name"]
