"""Grammar callbacks of algorithm sections and their statements (issue 27): assignments,
statements called like functions, if, when, for and while, return and break. if- and
when-statements and their branches are read by the callbacks of the if- and when-equations
(`equation_callbacks`); module `algorithms` and `functions` interpret the result.
Each callback is a function ``rule(cb, c)`` of the callbacks object and the rule's children,
listed in ``RULES`` (`callback_common`).
"""

from __future__ import annotations

from .callback_common import depth_limited, equation_start, left_list, rule_table, scoped
from .equation_callbacks import else_branch, elseif_branch, elsewhen_branch, if_item, when_eq
from .functions import Range, Tuple
from .syntax import Stmt, normalize_name


def algorithm_section(cb, c):
    return ("algorithm", c[1] if len(c) > 1 and type(c[1]) is list else [],
            cb.ctx.tok_loc(c[0]))


def initial_algorithm_section(cb, c):
    return ("initial_algorithm", c[1] if len(c) > 1 and type(c[1]) is list else [],
            cb.ctx.tok_loc(c[0]))


def assign_stmt(cb, c):
    lhs, tok, rhs = c[0], c[1], c[2]
    ctx = cb.ctx
    if type(lhs) is Tuple:
        ctx.withdraw(lhs.error)
    return ("assign", lhs, depth_limited(ctx, rhs, tok[2]), equation_start(ctx, tok))


def call_stmt(cb, c):
    e = c[0]
    if type(e) is Stmt:
        del cb.ctx.stmts[id(e)]
        return ("stmt", e)
    cb.ctx.error(equation_start(cb.ctx, c[-1]),
                 "expected a statement ('v := expression;', '(a, b) := f(x);', "
                 "assert(...), if, for, while, when, return or break)")
    return ("stmt", None)


def for_stmt(cb, c):
    items = c[3] if type(c[3]) is list and len(c) > 5 else []
    scoped(cb.ctx, c[0][2], c[-1][2], {name for name, _r, _l in c[1]})
    return ("for", c[1], items, cb.ctx.tok_loc(c[0]))


def while_stmt(cb, c):
    items = c[3] if len(c) > 5 and type(c[3]) is list else []
    return ("while", c[1], items, cb.ctx.tok_loc(c[0]))


def return_stmt(cb, c):
    return ("return", cb.ctx.tok_loc(c[0]))


def break_stmt(cb, c):
    return ("break", cb.ctx.tok_loc(c[0]))


def stmt_for_index(cb, c):
    rng = c[2]
    if type(rng) is Range:
        cb.ctx.withdraw(rng.error)
    # (another range, `for v in x`, is a vector the lowering reads, `algorithm_lowering`;
    # the function reader refuses it where it is not lowered)
    return (normalize_name(c[0][1]), rng, cb.ctx.tok_loc(c[0]))


#: The callbacks of this module, by grammar rule (`flat_modelica` assembles them). An if- or
#: when-statement and its branches are read by the callbacks of the equation.
RULES = rule_table(algorithm_section, initial_algorithm_section, assign_stmt, call_stmt, for_stmt,
                   while_stmt, return_stmt, break_stmt, stmt_for_index, statements=left_list,
                   stmt_for_indices=left_list, if_stmt=if_item, when_stmt=when_eq,
                   stmt_elseif=elseif_branch, stmt_else=else_branch, stmt_elsewhen=elsewhen_branch)


__all__ = ["RULES"]
