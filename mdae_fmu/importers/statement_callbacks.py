"""Grammar callbacks of algorithm sections and their statements (issue 27): assignments,
statements called like functions, if, when, for and while, return and break. if- and
when-statements and their branches are read by the callbacks of the if- and when-equations
(`equation_callbacks`); module `algorithms` and `functions` interpret the result.
"""

from __future__ import annotations

from .callback_common import CallbackPart, depth_limited, equation_start, left_list, scoped
from .equation_callbacks import EquationCallbacks
from .functions import Range, Tuple
from .syntax import Stmt, normalize_name


class StatementCallbacks(CallbackPart):
    """Callbacks of algorithm sections and statements."""

    statements = stmt_for_indices = staticmethod(left_list)

    def __init__(self, equations: EquationCallbacks) -> None:
        # an if- or when-statement and its branches are read as the equation's
        self.if_stmt = equations.if_item
        self.when_stmt = equations.when_eq
        self.stmt_elseif = equations.elseif_branch
        self.stmt_else = equations.else_branch
        self.stmt_elsewhen = equations.elsewhen_branch

    def algorithm_section(self, c):
        return ("algorithm", c[1] if len(c) > 1 and type(c[1]) is list else [],
                self.ctx.tok_loc(c[0]))

    def initial_algorithm_section(self, c):
        return ("initial_algorithm", c[1] if len(c) > 1 and type(c[1]) is list else [],
                self.ctx.tok_loc(c[0]))

    def assign_stmt(self, c):
        lhs, tok, rhs = c[0], c[1], c[2]
        ctx = self.ctx
        if type(lhs) is Tuple:
            ctx.withdraw(lhs.error)
        return ("assign", lhs, depth_limited(ctx, rhs, tok[2]), equation_start(ctx, tok))

    def call_stmt(self, c):
        e = c[0]
        if type(e) is Stmt:
            del self.ctx.stmts[id(e)]
            return ("stmt", e)
        self.ctx.error(equation_start(self.ctx, c[-1]),
                       "expected a statement ('v := expression;', '(a, b) := f(x);', "
                       "assert(...), if, for, while, when, return or break)")
        return ("stmt", None)

    def for_stmt(self, c):
        items = c[3] if type(c[3]) is list and len(c) > 5 else []
        scoped(self.ctx, c[0][2], c[-1][2], {name for name, _r, _l in c[1]})
        return ("for", c[1], items, self.ctx.tok_loc(c[0]))

    def while_stmt(self, c):
        items = c[3] if len(c) > 5 and type(c[3]) is list else []
        return ("while", c[1], items, self.ctx.tok_loc(c[0]))

    def return_stmt(self, c):
        return ("return", self.ctx.tok_loc(c[0]))

    def break_stmt(self, c):
        return ("break", self.ctx.tok_loc(c[0]))

    def stmt_for_index(self, c):
        rng = c[2]
        if type(rng) is Range:
            self.ctx.withdraw(rng.error)
        # (another range, `for v in x`, is a vector the lowering reads, `algorithm_lowering`;
        # the function reader refuses it where it is not lowered)
        return (normalize_name(c[0][1]), rng, self.ctx.tok_loc(c[0]))


__all__ = ["StatementCallbacks"]
