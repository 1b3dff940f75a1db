"""The value of an expression in the lowering: a scalar expression, an array value
(`arrays.Arr`) or a record value (`lowered.Rec`), built node by node from the values of
names (`lower_names`, `lower_subscripts`), array built-ins (`lower_array_calls`), record
constructors (`lower_records`) and calls of functions with array arguments
(`array_functions`); operators apply element by element (Modelica 3.6 §10.6)."""

from __future__ import annotations

from .. import expr as E
from . import arrays as A
from . import types as T
from .array_functions import array_function_defs, call_value
from .lower_array_calls import call, comprehension, range_value
from .lower_constants import apply_op, fold
from .lower_context import LowerContext, no_string_var
from .lower_names import ref
from .lower_records import late_constructor
from .lower_subscripts import indexed, path, subscript
from .lowered import LowerError, Rec


def value(lw: LowerContext, e, env, where):
    """The value of expression ``e``: a scalar expression, an `arrays.Arr` or a `Rec`; an
    array error is reported at ``where``."""
    try:
        return value_of(lw, e, env)
    except A.ArrayError as err:
        raise LowerError(str(err), where) from None


def scalar(lw: LowerContext, e, env, where, what="expression"):
    """The value of ``e``, which must be a scalar (``what`` names it in the message)."""
    v = value(lw, e, env, where)
    if type(v) is A.Arr:
        lw.fail(f"the {what} is an array of size {list(v.shape)}, a scalar is needed", where)
    if type(v) is Rec:
        lw.fail(f"the {what} is a record ({v.type}), a scalar is needed", where)
    return v


def value_of(lw: LowerContext, e, env):
    """`value` without the location: array errors propagate as `arrays.ArrayError`."""
    t = type(e)
    if t is E.Const or t is E.Str or t is E.Time:
        return e
    if t is E.Ref:
        return ref(lw, e.name, env, None)
    if t is E.BinOp:
        a = value_of(lw, e.left, env)
        b = value_of(lw, e.right, env)
        no_string_var(a)
        no_string_var(b)
        if type(a) is Rec or type(b) is Rec:
            lw.fail("operators on records are not supported (write the fields)")
        if type(a) is E.Const and type(b) is E.Const and e.op in ("+", "-", "*") and \
                type(a.value) is int and type(b.value) is int and \
                (type(e.left) is not E.Const or type(e.right) is not E.Const):
            # (only what lowering substituted is folded: the rest keeps its shape)
            return E.Const(apply_op(e.op, a.value, b.value))
        return A.binop(e.op, a, b)
    if t is E.UnOp:
        a = value_of(lw, e.arg, env)
        no_string_var(a)

        def neg(x, op=e.op):
            if op == "-" and type(x) is E.Const and type(x.value) is not bool:
                return E.Const(-x.value)
            return E.UnOp(op, x)
        return A.elementwise(neg, a)
    if t is E.If:
        c = fold(lw, scalar(lw, e.cond, env, None, "if-condition"), e.cond)
        if type(c) is E.Const and type(e.cond) is not E.Const:
            return value_of(lw, e.then if c.value else e.orelse, env)
        return A.elementwise(lambda x, y: E.If(c, x, y), value_of(lw, e.then, env),
                             value_of(lw, e.orelse, env))
    if t is E.Der:
        a = value_of(lw, e.arg, env)
        for r in E.walk(a) if type(a) is not A.Arr else \
                (n for x in a.items for n in E.walk(x)):
            if type(r) is E.Ref:
                lw.ctx.der_names.add(r.name)
        return A.elementwise(E.Der, a)
    if t is E.Call:
        if lw.ctx.functions and e.func in array_function_defs(lw):
            return call_value(lw, array_function_defs(lw)[e.func], e, env)
        if type(lw.types.get(e.func)) is T.RecordDef:
            return call(lw, late_constructor(lw, e), env)
        args = [value_of(lw, a, env) for a in e.args]
        for a in args:
            no_string_var(a)
        if any(type(a) is A.Arr for a in args):
            known_function(lw, e.func)
        return A.elementwise(lambda *xs: E.Call(e.func, xs), *args)
    if t is A.Subscripted:
        return subscript(lw, e, env)
    if t is A.Path:
        return path(lw, e, env)
    if t is A.Indexed:
        return indexed(lw, e, env)
    if t is A.ArrayCons:
        return A.stack([value_of(lw, x, env) for x in e.items])
    if t is A.MatrixCons:
        return A.matrix_cons([[value_of(lw, x, env) for x in row] for row in e.rows])
    if t is A.Range:
        return range_value(lw, e, env)
    if t is A.Comprehension:
        return comprehension(lw, e, env)
    if t is A.ArrayCall:
        return call(lw, e, env)
    if e is A.END:
        if "end" not in env:
            lw.fail("'end' can only be used in an array subscript")
        return E.Const(env["end"])
    return e


def known_function(lw: LowerContext, name: str) -> None:
    """Refuse a call of ``name`` that is neither a built-in nor a function of the file before
    it is vectorized over an array argument (``Foo.anyTrue({c})`` would otherwise be reported
    as an equation of two sizes), at the call."""
    from .functions import CLOCKED_OPERATORS, OMC_OPERATORS
    if name in E.BUILTIN_FUNCTIONS or name in OMC_OPERATORS or name in CLOCKED_OPERATORS \
            or any(d.name == name for d in lw.ctx.functions):
        return
    where = next((c[1] for c in lw.ctx.calls if c[0] == name), None)
    lw.fail(f"unknown function '{name}' (neither a Modelica built-in nor a function defined "
            "in the file)", where)


__all__ = ["value", "scalar", "value_of", "known_function"]
