"""Literal zeros folded out of an expression: a coefficient written ``0`` in a branch removes
the unknown it multiplies from that branch's incidence (docs/theory.md §2.2: a parameter is
generically nonzero, a literal zero is not), used by the classification of conditionals and by
the specialization of a model to one mode."""

from __future__ import annotations

from .. import expr as E


def drop_zero_terms(e: E.Expr) -> E.Expr:
    """``e`` with the literal zeros folded: ``x*0`` and ``0/x`` are 0, ``x + 0``, ``x - 0``,
    ``0 + x`` are x, ``0 - x`` is ``-x``. Only literals are folded (parameters are generically
    nonzero). Used for the incidence of a branch (module docstring)."""
    if isinstance(e, E.BinOp):
        a, b = drop_zero_terms(e.left), drop_zero_terms(e.right)
        za, zb = _is_zero(a), _is_zero(b)
        if e.op in ("*", ".*") and (za or zb):
            return E.ZERO
        if e.op in ("/", "./") and za:
            return E.ZERO
        if e.op in ("+", ".+"):
            if za:
                return b
            if zb:
                return a
        if e.op in ("-", ".-"):
            if zb:
                return a
            if za:
                return E.UnOp("-", b)
        return e if (a is e.left and b is e.right) else E.BinOp(e.op, a, b)
    if isinstance(e, E.UnOp):
        a = drop_zero_terms(e.arg)
        if e.op in ("-", "+") and _is_zero(a):
            return E.ZERO
        return e if a is e.arg else E.UnOp(e.op, a)
    if isinstance(e, E.If):
        c, a, b = (drop_zero_terms(x) for x in (e.cond, e.then, e.orelse))
        return E.If(c, a, b)
    if isinstance(e, E.Call) and e.func not in ("pre",):
        return E.Call(e.func, tuple(drop_zero_terms(x) for x in e.args))
    if isinstance(e, E.Der):
        return E.Der(drop_zero_terms(e.arg))
    return e


def _is_zero(e: E.Expr) -> bool:
    return isinstance(e, E.Const) and not isinstance(e.value, bool) and e.value == 0
