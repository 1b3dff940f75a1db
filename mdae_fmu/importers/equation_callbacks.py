"""Grammar callbacks of equations (issue 27): ``lhs = rhs``, the statements called as equations
(reinit, assert, terminate, print), if-, when- and for-equations with their branches, and the
equation sections. Their values are the tagged tuples of module `syntax` that
`flat_modelica.build_model` reads.
Each callback is a function ``rule(cb, c)`` of the callbacks object and the rule's children,
listed in ``RULES`` (`callback_common`).
"""

from __future__ import annotations

from .. import expr as E
from . import arrays as A
from .annotation_callbacks import class_annotation
from .call_callbacks import string_values
from .callback_common import rule_table, depth_limited, equation_start, left_list, start_before
from .parse_traces import is_name
from .depth import MAX_DEPTH
from .functions import Tuple
from .syntax import Named, Stmt
from ..ir import GuardLiteral


def literal_branches(branches: list, orelse: list | None) -> tuple[list, list | None]:
    """The branches of an if-equation without those whose condition is a Boolean literal
    (Modelica 3.6 §8.3.4): a ``false`` branch is never taken; a ``true`` branch is taken
    whenever the branches before it are not, so it is the else-branch, and the branches after
    it are never taken (OpenModelica prints ``elseif true then`` for the last branch). No guard
    is ever the constant ``true`` or ``false``; an if-equation whose first branch is ``true``
    is its body (no branch left, its body the else-branch)."""
    kept: list = []
    for branch in branches:
        cond = branch[0]
        if type(cond) is E.Const and type(cond.value) is bool:
            if cond.value:
                return kept, branch[2]
            continue
        kept.append(branch)
    return kept, orelse


def guard_literal(cond: E.Expr, positive: bool = True) -> GuardLiteral:
    """Guard literal of an if-condition, ``not`` stripped into the sign (ir module docstring)."""
    while type(cond) is E.UnOp and cond.op == "not":
        cond = cond.arg
        positive = not positive
    return GuardLiteral(cond=cond, positive=positive)


def eq(cb, c):
    return eq_at(cb, c[0], c[2], c[1][2], c[-1][2])


def eq_at(cb, lhs, rhs, pos: int, end: int) -> tuple:
    """`eq` of ``lhs = rhs`` whose ``=`` is at offset ``pos`` and whose last token (the
    ``;``) at ``end``."""
    ctx = cb.ctx
    if type(lhs) is Tuple:
        ctx.withdraw(lhs.error)
    start = start_before(ctx, pos)
    if end + 1 - start > 2 * MAX_DEPTH:    # shorter text cannot nest that deep
        lhs = depth_limited(ctx, lhs, start)
        rhs = depth_limited(ctx, rhs, start)
    if ctx.string_calls and ctx.string_names and any(
            type(x) is E.Ref and x.name in ctx.string_names for x in (lhs, rhs)):
        string_values(ctx, [lhs, rhs])      # `s = String(x)` of a String variable s
    return ("eq", lhs, rhs, start)


def call_eq(cb, c):
    e = c[0]
    ctx = cb.ctx
    if type(e) is Stmt:
        del ctx.stmts[id(e)]
        named = {k: Named(name=a.name, value=depth_limited(ctx, a.value, e.loc))
                 for k, a in e.named.items()}
        return ("stmt", Stmt(func=e.func, args=[depth_limited(ctx, a, e.loc) for a in e.args],
                             named=named, loc=e.loc))
    ctx.error(equation_start(ctx, c[-1]), "expected an equation 'lhs = rhs' (only reinit, "
                                          "assert, terminate and print can be called as "
                                          "statements)")
    return ("stmt", None)


def _branches(cb, c, branch_tag):
    """[KW, cond, items..., (tag, tok, cond, items)..., ...] -> [(cond, loc, items)], else."""
    ctx = cb.ctx
    branches = [(c[1], ctx.tok_loc(c[0]), [])]
    orelse = None
    for x in c[2:]:
        if type(x) is list:
            branches[-1][2].extend(x)
        elif type(x) is tuple:
            if x[0] == branch_tag:
                branches.append((x[2], ctx.tok_loc(x[1]), x[3]))
            elif x[0] == "else":
                orelse = x[1]
            else:
                branches[-1][2].append(x)
    return [(depth_limited(ctx, cond, loc), loc, items)
            for cond, loc, items in branches], orelse


def if_eq(cb, c):
    branches, orelse = literal_branches(*_branches(cb, c, "elseif"))
    return ("if", branches, orelse, cb.ctx.tok_loc(c[0]))


def if_item(cb, c):
    """An if-statement: its branches as written."""
    branches, orelse = _branches(cb, c, "elseif")
    return ("if", branches, orelse, cb.ctx.tok_loc(c[0]))


def when_eq(cb, c):
    branches, _ = _branches(cb, c, "elsewhen")
    out = []
    for cond, loc, items in branches:
        if type(cond) is A.ArrayCons and cond.items:
            # ``when {c1, c2} then A`` fires when any ci becomes true (Modelica 3.6
            # §8.3.5.1), which is not ``when c1 or c2`` (that one does not fire when c2
            # becomes true while c1 is true). It is ``when c1 then A elsewhen c2 then A``:
            # the first branch whose condition becomes true runs, once, ahead of the
            # elsewhen branches that follow.
            out.extend((depth_limited(cb.ctx, item, loc), loc, items)
                       for item in cond.items)
        else:
            out.append((cond, loc, items))
    return ("when", out, cb.ctx.tok_loc(c[0]))


def for_eq(cb, c):
    # [FOR, indices, LOOP, equations?, FOR, description?, annotation?, SEMI]
    cb.ctx.extended = True
    items = c[3] if type(c[3]) is list else []
    return ("for", c[1], items, cb.ctx.tok_loc(c[0]))


def annotation_eq(cb, c):
    class_annotation(cb.ctx, c)
    return ("stmt", None)


def elseif_branch(cb, c):
    return ("elseif", c[0], c[1], c[2] if len(c) > 2 else [])


def elsewhen_branch(cb, c):
    return ("elsewhen", c[0], c[1], c[2] if len(c) > 2 else [])


def else_branch(cb, c):
    return ("else", c[1] if len(c) > 1 else [])


def equation_section(cb, c):
    return ("equations", c[1] if len(c) > 1 else [])


def initial_equation_section(cb, c):
    return ("initial", c[1] if len(c) > 1 else [])


def parameter_equation(cb, c):
    cb.ctx.error(cb.ctx.tok_loc(c[0]),
                 "'parameter equation' (Base Modelica) is not supported: give the "
                 "parameter a binding instead")
    return []


def eq_form(c: list) -> str | None:
    """`eq` as an expression over its children's sources (`parse_traces`): the call of
    `eq_at` with the offsets of its ``=`` and ``;`` (``t<k>[2]``, read from the line's match
    without the token's tuple)."""
    if len(c) != 4 or not all(is_name(x) for x in c):
        return None
    lhs, eq_tok, rhs, semi = c
    return f"N_eq_at(cb, {lhs}, {rhs}, {eq_tok}[2], {semi}[2])"


#: Forms of the callbacks whose replay calls another function of this module
#: (`parse_traces.compile_trace`), and the names those forms use.
INLINE_RULES = {"eq": eq_form}
INLINE_NAMES = {"N_eq_at": eq_at}

#: The callbacks of this module, by grammar rule (`flat_modelica` assembles them).
RULES = rule_table(eq, call_eq, if_eq, if_item, when_eq, for_eq, annotation_eq, elseif_branch,
                   elsewhen_branch, else_branch, equation_section, initial_equation_section,
                   parameter_equation, equations=left_list)


__all__ = ["INLINE_NAMES", "INLINE_RULES", "RULES", "eq_at", "guard_literal",
           "literal_branches"]
