"""Equations in the lowering (Modelica 3.6 §8.3): ``a = b`` split element by element and field
by field into scalar equations, for-equations unrolled, if-equations whose condition is a
constant after the unrolling reduced to the branch taken, when-equations and the statements
of equation sections (``assert``, ``reinit``) with their arguments lowered; the range checks
of variable subscripts go next to their equation."""

from __future__ import annotations

from .. import expr as E
from . import arrays as A
from .array_functions import tuple_equation
from .lower_array_calls import iterate
from .lower_constants import fold
from .lower_context import LowerContext, StringVar, is_builtin_literal
from .lower_expressions import scalar, value
from .lower_records import fields_of
from .lowered import LowerError, Rec
from .syntax import Named, Stmt


def string_expr(v) -> bool:
    """``v`` is a String built by ``String(...)`` or ``+`` of strings (the value of a String
    variable, which the model ignores)."""
    t = type(v)
    if t is E.Call:
        return v.func == "String"
    if t is E.BinOp and v.op == "+":
        return any(type(x) in (E.Str, StringVar) or string_expr(x) for x in (v.left, v.right))
    return False


def equate(lw: LowerContext, a, b, where, out: list):
    """``a = b`` element by element (arrays) and field by field (records)."""
    strings = (StringVar, E.Str)
    a, b = (StringVar("String(...)") if string_expr(x) else x for x in (a, b))
    if type(a) in strings or type(b) in strings:
        if type(a) in strings and type(b) in strings:
            return                      # an equation on Strings: ignored (docstring)
        lw.fail("a String is equated to a number", where)
    if type(a) is A.Arr or type(b) is A.Arr:
        if A.shape_of(a) != A.shape_of(b):
            for x in (a, b):        # the real cause: a name the file does not declare
                if type(x) is E.Ref and x.name in lw.unresolved:
                    lw.fail(f"undefined name '{x.name}'",
                            lw.use_where(x.name) or where)
            lw.fail(f"the two sides of the equation have different sizes: "
                    f"{list(A.shape_of(a))} and {list(A.shape_of(b))}", where)
        for x, y in zip(a.items, b.items):
            equate(lw, x, y, where, out)
        return
    if type(a) is Rec or type(b) is Rec:
        if type(a) is not Rec:
            a = fields_of(lw, a, b)
        if type(b) is not Rec:
            b = fields_of(lw, b, a)
        if type(a) is not Rec or type(b) is not Rec:
            lw.fail("a record equated to a scalar", where)
        fa, fb = dict(a.fields), dict(b.fields)
        if set(fa) != set(fb):
            lw.fail(f"records of different types {a.type} and {b.type} are equated",
                    where)
        for k, x in a.fields:
            equate(lw, x, fb[k], where, out)
        return
    out.append(("eq", a, b, where))


def items(lw: LowerContext, equations, env, out):
    """The equation items ``equations`` lowered into ``out``, each followed by the range checks
    of its variable subscripts."""
    for it in equations:
        if it is None:
            continue
        saved, lw.range_checks = lw.range_checks, []
        try:
            item(lw, it, env, out)
        finally:
            checks, lw.range_checks = lw.range_checks, saved
        out.extend(("stmt", c) for c in checks)


def item(lw: LowerContext, it, env, out):
    """One equation item ``it`` lowered into ``out``."""
    tag = it[0]
    where = it[3] if tag in ("eq", "for") else \
        (it[1].loc if tag == "stmt" and it[1] is not None else it[-1])
    try:
        if tag == "eq":
            if type(it[2]) is E.Call and lw.ctx.functions and \
                    tuple_equation(lw, it, env, out):
                return              # (a, b) = f(x) of a function with arrays
            equate(lw, value(lw, it[1], env, it[3]), value(lw, it[2], env, it[3]),
                   it[3], out)
        elif tag == "stmt":
            stmt(lw, it[1], env, out)
        elif tag == "if":
            if_eq(lw, it, env, out)
        elif tag == "when":
            branches: list = []
            for cond, loc, body in it[1]:
                c = value(lw, cond, env, loc)
                sub: list = []
                items(lw, body, env, sub)
                conds = c.items if type(c) is A.Arr else (c,)
                branches.extend((x, loc, sub) for x in conds)
            out.append(("when", branches, it[2]))
        elif tag == "for":
            for en in iterate(lw, it[1], env):
                items(lw, it[2], en, out)
        else:                       # items of other blocks (i13b): as they are
            out.append(it)
    except LowerError as err:
        lw.report(err, where)


def stmt(lw: LowerContext, s, env, out):
    """A statement of an equation section (``assert``, ``terminate``, ``reinit``) with scalar
    arguments; ``reinit`` of an array is one ``reinit`` per element."""
    if s is None:
        return
    if s.func == "reinit" and len(s.args) == 2:
        t = value(lw, s.args[0], env, s.loc)
        v = value(lw, s.args[1], env, s.loc)
        if type(t) is A.Arr:
            if A.shape_of(v) not in ((), t.shape):
                lw.fail("reinit of arrays of different sizes", s.loc)
            vs = v.items if type(v) is A.Arr else (v,) * len(t.items)
            for x, y in zip(t.items, vs):
                out.append(("stmt", Stmt(func="reinit", args=[x, y], named={}, loc=s.loc)))
            return
        out.append(("stmt", Stmt(func="reinit", args=[t, v], named={}, loc=s.loc)))
        return
    def arg(a, k):
        if s.func == "assert" and k == 2 and is_builtin_literal(a):
            return a            # AssertionLevel.warning: read by the model builder
        return scalar(lw, a, env, s.loc, f"argument of {s.func}")
    args = [arg(a, k) for k, a in enumerate(s.args)]
    named = {k: Named(name=a.name, value=arg(a.value, 2 if k == "level" else -1))
             for k, a in s.named.items()}
    out.append(("stmt", Stmt(func=s.func, args=args, named=named, loc=s.loc)))


def if_eq(lw: LowerContext, it, env, out):
    """An if-equation: the branches whose condition is a constant after the unrolling are
    dropped (never taken) or kept alone (always taken); the others stay guarded."""
    _, branches, orelse, loc = it
    kept: list = []
    for cond, bloc, body in branches:
        c = fold(lw, scalar(lw, cond, env, bloc, "if-condition"), cond)
        if type(c) is E.Const and type(c.value) is bool and type(cond) is not E.Const:
            if not c.value:
                continue                # a branch never taken
            if not kept:                # the first branch that can be taken: always
                items(lw, body, env, out)
                return
            orelse = body
            break
        sub: list = []
        items(lw, body, env, sub)
        kept.append((c, bloc, sub))
    if not kept:
        items(lw, orelse or [], env, out)
        return
    els: list | None = None
    if orelse is not None:
        els = []
        items(lw, orelse, env, els)
    hoist_checks(lw, kept, els, out)
    out.append(("if", kept, els, loc))


def hoist_checks(lw: LowerContext, kept, els, out):
    """The range checks of the branches of an if-equation moved out of them, each
    ``assert(if taken then check else true, ...)`` with ``taken`` its branch's condition
    (and not the earlier ones'): an assertion inside a branch would be guarded, which
    the single-mode export does not support."""
    earlier: list = []
    for c, sub in [(c, sub) for c, _l, sub in kept] + [(None, els or [])]:
        taken = E.Const(True) if c is None else c
        for p in reversed(earlier):
            taken = E.BinOp("and", E.UnOp("not", p), taken)
        stay = []
        for x in sub:
            if x[0] == "stmt" and id(x[1]) in lw.check_ids:
                s = x[1]
                moved = Stmt(func="assert", named={}, loc=s.loc,
                             args=[E.If(taken, s.args[0], E.Const(True)), s.args[1]])
                lw.check_ids.add(id(moved))
                out.append(("stmt", moved))
            else:
                stay.append(x)
        sub[:] = stay
        if c is not None:
            earlier.append(c)


__all__ = ["equate", "items", "item", "stmt", "if_eq", "hoist_checks", "string_expr"]
