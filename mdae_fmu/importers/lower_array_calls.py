"""Array values the lowering builds from built-in calls and ranges: ``a:b:c``, for-indices and
array comprehensions (Modelica 3.6 §8.3.2.1, §10.4.2), the array functions of §10.3
(``sum``, ``size``, ``fill``, ``cat``, ``transpose``, ``linspace``, ``cross``...), record
constructors and ``Integer()`` of enumerations and Booleans; array sizes checked against
`lower_context.MAX_ELEMENTS`."""

from __future__ import annotations

import math

from .. import expr as E
from . import arrays as A
from . import types as T
from .lower_constants import const
from .lower_context import MAX_ELEMENTS, LowerContext, refs_in
from .lower_records import construct
from .lowered import LowerError


def range_value(lw: LowerContext, e: A.Range, env):
    """``start:step:stop`` of parameter expressions as a vector (Modelica 3.6 §10.4.2.2)."""
    start = const(lw, e.start, env)
    stop = const(lw, e.stop, env)
    step = 1 if e.step is None else const(lw, e.step, env)
    if any(type(x) not in (int, float) for x in (start, stop, step)):
        bad = sorted({r.name for b in (e.start, e.step, e.stop) if b is not None
                      for r in refs_in(b) if r.name not in env and const(lw, r, env) is None})
        why = f" ('{bad[0]}' is not a parameter or constant with a value)" if bad else ""
        lw.fail("the bounds of a range 'a:b' must be parameter expressions" + why,
                e.where)
    if step == 0:
        lw.fail("the step of a range is 0", e.where)
    if all(type(x) is int for x in (start, stop, step)):
        vals = list(range(start, stop + (1 if step > 0 else -1), step))
    else:
        n = math.floor((stop - start) / step + 1e-12) + 1
        vals = [start + k * step for k in range(max(n, 0))]
    if len(vals) > MAX_ELEMENTS:
        lw.fail(f"range too long (more than {MAX_ELEMENTS:,} elements)", e.where)
    return A.Arr((len(vals),), tuple(E.Const(v) for v in vals))


def iterate(lw: LowerContext, indices, env):
    """The environments of for-indices ``((name, range, where), ...)``, the first index
    outermost (Modelica 3.6 §8.3.2.1)."""
    envs = [env]
    for name, rng, where in indices:
        try:
            r = lw.value(rng, env, where)
        except LowerError as err:
            if err.where is None:
                err.where = where
            err.message = f"for-index '{name}': {err.message}"
            raise
        vals = r.items if type(r) is A.Arr and len(r.shape) == 1 else None
        nxt = []
        for en in envs:
            if vals is None:
                lw.fail(f"the range of for-index '{name}' must be a vector", where)
            for x in vals:
                c = const(lw, x, en)
                if c is None:
                    lw.fail(f"the range of for-index '{name}' must be a parameter "
                            "expression (constants, parameters, enclosing for-indices)",
                            where)
                nxt.append({**en, name: c})
        envs = nxt
    return envs


def comprehension(lw: LowerContext, e: A.Comprehension, env):
    """``{body for i in r}`` (``f(body for i in r)`` of a reduction), Modelica 3.6 §10.4.2.1."""
    vals = [lw.value_of(e.body, en) for en in iterate(lw, e.indices, env)]
    arr = A.stack(vals)
    if e.func is None:
        return arr
    return call(lw, A.ArrayCall(e.func, (arr,), e.where), env, evaluated=True)


def call(lw: LowerContext, e: A.ArrayCall, env, evaluated=False):
    """A call of an array built-in or a record constructor (``evaluated``: its arguments are
    values already)."""
    f = e.func
    args = list(e.args) if evaluated else [lw.value_of(a, env) for a in e.args]
    rec = lw.types.get(f)
    if type(rec) is T.RecordDef:
        return construct(lw, rec, e, args, env)
    if f in ("sum", "product", "min", "max"):
        a = args[0]
        items = list(a.items) if type(a) is A.Arr else [a]
        if f == "sum":
            return A.balanced("+", items, E.Const(0))
        if f == "product":
            return A.balanced("*", items, E.Const(1))
        if not items:
            lw.fail(f"{f}() of an empty array", e.where)
        return A.balanced(f, items, None)
    if f in ("size", "ndims"):
        shape = A.shape_of(args[0])
        if f == "ndims":
            return E.Const(len(shape))
        if len(args) == 1:
            return A.Arr((len(shape),), tuple(E.Const(n) for n in shape))
        k = const(lw, args[1], env)
        if type(k) is not int or not 1 <= k <= len(shape):
            lw.fail(f"size(..., {k}): the array has {len(shape)} dimensions", e.where)
        return E.Const(shape[k - 1])
    if f in ("fill", "zeros", "ones"):
        dims_args = args[1:] if f == "fill" else args
        sizes = []
        for x in dims_args:
            n = const(lw, x, env)
            if type(n) is not int or n < 0:
                lw.fail(f"the sizes given to {f}() must be Integer parameter "
                        "expressions", e.where)
            sizes.append(n)
        v = args[0] if f == "fill" else E.Const(0 if f == "zeros" else 1)
        n = math.prod(sizes)
        if n > MAX_ELEMENTS:
            lw.fail(f"array too large (more than {MAX_ELEMENTS:,} elements)", e.where)
        if type(v) is A.Arr:
            return A.Arr(tuple(sizes) + v.shape, tuple(v.items) * n)
        return A.Arr(tuple(sizes), (v,) * n)
    if f == "cat":
        k = const(lw, args[0], env)
        if type(k) is not int:
            lw.fail("the first argument of cat() must be an Integer parameter "
                    "expression", e.where)
        return A.cat(k, args[1:])
    if f == "vector":
        a = args[0]
        if type(a) is not A.Arr:
            return A.Arr((1,), (a,))
        if sum(1 for n in a.shape if n > 1) > 1:
            lw.fail(f"vector() of an array of size {list(a.shape)}", e.where)
        return A.Arr((len(a.items),), a.items)
    if f == "matrix":
        a = args[0]
        if type(a) is not A.Arr:
            return A.Arr((1, 1), (a,))
        if len(a.shape) == 1:
            return A.Arr((a.shape[0], 1), a.items)
        return A.Arr(a.shape[:2], a.items)
    if f == "scalar":
        a = args[0]
        if type(a) is A.Arr:
            if len(a.items) != 1:
                lw.fail(f"scalar() of an array of size {list(a.shape)}", e.where)
            return a.items[0]
        return a
    if f == "transpose":
        return A.transpose(args[0])
    if f == "identity":
        n = const(lw, args[0], env)
        if type(n) is not int or n < 0:
            lw.fail("identity(n) needs an Integer parameter expression", e.where)
        return A.Arr((n, n), tuple(E.Const(int(i == j)) for i in range(n)
                                   for j in range(n)))
    if f == "diagonal":
        v = args[0]
        if type(v) is not A.Arr or len(v.shape) != 1:
            lw.fail("diagonal() needs a vector", e.where)
        n = v.shape[0]
        return A.Arr((n, n), tuple(v.items[i] if i == j else E.Const(0)
                                   for i in range(n) for j in range(n)))
    if f == "linspace":
        a, b, n = (const(lw, x, env) for x in args)
        if type(n) is not int or n < 2 or a is None or b is None:
            lw.fail("linspace(x1, x2, n) needs parameter expressions and n >= 2",
                    e.where)
        return A.Arr((n,), tuple(E.Const(a + (b - a) * k / (n - 1)) for k in range(n)))
    if f == "cross":
        x, y = args
        if A.shape_of(x) != (3,) or A.shape_of(y) != (3,):
            lw.fail("cross() needs two vectors of size 3", e.where)
        (x1, x2, x3), (y1, y2, y3) = x.items, y.items

        def d(a, b, c, d_):
            return E.BinOp("-", E.BinOp("*", a, b), E.BinOp("*", c, d_))
        return A.Arr((3,), (d(x2, y3, x3, y2), d(x3, y1, x1, y3), d(x1, y2, x2, y1)))
    if f == "Integer":
        return A.elementwise(lambda x: integer(lw, x, e.where), args[0])
    if f == "Real":             # OpenModelica's Integer -> Real conversion: the value
        return args[0]
    lw.fail(f"unknown function '{f}'", e.where)


def integer(lw: LowerContext, x, where):
    """``Integer(e)``: the position of an enumeration value, 1/0 of a Boolean."""
    if type(x) is E.Const:
        return E.Const(int(x.value))
    t = lw.base_types.get(x.name) if type(x) is E.Ref else None
    if t == "Boolean":
        return E.If(x, E.Const(1), E.Const(0))
    if t == "Real" or type(x) is E.Time:
        lw.fail("Integer() converts enumerations and Booleans; use integer() or "
                "floor() for a Real", where)
    return x


__all__ = ["range_value", "iterate", "comprehension", "call", "integer"]
