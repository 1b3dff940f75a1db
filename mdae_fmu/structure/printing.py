"""Modelica-style text of expression trees, for guard names and reports (never for C code).

Used to name modes (``{time >= 5, not g}``) and to print equations in the analysis report.
"""

from __future__ import annotations

from .. import expr as E

# Binding strength, loosest first (Modelica operator precedence).
_PREC = {"or": 1, "and": 2, "not": 3, "<": 4, "<=": 4, ">": 4, ">=": 4, "==": 4, "<>": 4,
         "+": 5, "-": 5, ".+": 5, ".-": 5, "*": 6, "/": 6, ".*": 6, "./": 6, "^": 8, ".^": 8}
_UNARY_MINUS = 7


def expr_text(e: E.Expr) -> str:
    """Modelica text of ``e`` with the parentheses its structure needs."""
    return _text(e, 0)


def _binding(op: str) -> tuple[int, int, int]:
    """(precedence, left operand's, right operand's) of a binary operator: the left operand
    of ``^`` and of a comparison needs parentheses at the same precedence."""
    p = _PREC.get(op, 5)
    return p, (p if op not in ("^", ".^") and p != 4 else p + 1), p + 1


_BINDING = {op: _binding(op) for op in _PREC}


def _text(e: E.Expr, outer: int) -> str:
    # the commonest nodes first (references, then binary operations)
    if isinstance(e, E.Ref):
        return e.name
    if isinstance(e, E.BinOp):
        op = e.op
        p, left_p, right_p = _BINDING.get(op) or _binding(op)
        s = f"{_text(e.left, left_p)} {op} {_text(e.right, right_p)}"
        return f"({s})" if p < outer else s
    if isinstance(e, E.Const):
        v = e.value
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
            return f"{v:.1f}"
        return repr(v)
    if isinstance(e, E.Der):
        return f"der({_text(e.arg, 0)})"
    if isinstance(e, E.Call):
        return f"{e.func}({', '.join([_text(a, 0) for a in e.args])})"
    if isinstance(e, E.UnOp):
        if e.op == "not":
            s = f"not {_text(e.arg, _PREC['not'])}"
            return f"({s})" if _PREC["not"] < outer else s
        s = f"{e.op}{_text(e.arg, _UNARY_MINUS + 1)}"
        return f"({s})" if _UNARY_MINUS < outer or outer >= 5 else s
    if isinstance(e, E.If):
        s = f"if {_text(e.cond, 0)} then {_text(e.then, 0)} else {_text(e.orelse, 0)}"
        return f"({s})" if outer > 0 else s
    if isinstance(e, E.Str):
        return '"' + e.value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(e, E.Time):
        return "time"
    raise TypeError(f"not an expression: {e!r}")


def equation_text(residual: E.Expr) -> str:
    """``lhs = rhs`` text of a residual (inverse of `mdae_fmu.expr.residual`)."""
    lhs, rhs = E.split_residual(residual)
    return f"{expr_text(lhs)} = {expr_text(rhs)}"
